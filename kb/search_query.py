"""Search query syntax: free text plus field filters.

    shmdt platform:solaris            free text 'shmdt', entries for Solaris (or any platform)
    'control file parallel write' source:waits,tkprof version:12.2
    tag:numa tag:shm                   both tags (repeating a key ANDs, a comma ORs)
    product:glibc version:"2.30"       version: means Oracle's version unless product: names
                                       another; entries without a range for it are kept

Only the known keys below followed directly by a value are filters, so text such as
`enq: CF - contention` stays free text.
"""

from __future__ import annotations

import re
import threading
import time
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import get_args

from kb.errors import QueryError
from kb.versions import InvalidVersion, Version

# Plain dataclasses, no pydantic: `perfkb search` parses its query with this module and starts
# without pydantic (issue #19; tests/test_startup.py). The values a source: filter may take are
# the signature language's (kb.signatures, a pydantic module), imported only when a query has
# such a filter; the platforms are defined here, and kb.models (an entry's platforms) uses them.

FILTER_KEYS: tuple[str, ...] = ("platform", "source", "version", "tag", "product")
PLATFORMS: tuple[str, ...] = ("solaris", "linux", "aix", "hpux", "windows", "any")


def _sources() -> tuple[str, ...]:
    from kb.signatures import Source

    return get_args(Source)


_FILTER_RE = re.compile(
    r"(?<!\S)(?P<key>" + "|".join(FILTER_KEYS) + r"):(?:\"(?P<quoted>[^\"]*)\"|(?P<bare>\S+))",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class SearchLimits:
    """What one search may cost, whoever asks (web page, API, CLI, Slack: they all reach
    `SearchIndex.search`). Searches are anonymous, and whoosh scores every posting of every word
    a wildcard expands to in Python: on a 10,000-entry KB `*` alone cost ~3 s and ten one-letter
    prefixes over 100 s of one core. Values come from Settings (PERFKB_SEARCH_*)."""

    min_wildcard_prefix: int = 2  # letters a word needs before * or ?
    max_expansions: int = 1000  # index words all the wildcards of one query may stand for
    max_words: int = 64  # words of free text in one query
    time_budget: float = 2.0  # seconds one search may run

    def __post_init__(self) -> None:
        # Settings validates the PERFKB_SEARCH_* values (pydantic); this catches a caller's slip
        for name in ("min_wildcard_prefix", "max_expansions", "max_words"):
            if int(getattr(self, name)) < 1:
                raise ValueError(f"SearchLimits.{name} must be at least 1")
        if not self.time_budget > 0:
            raise ValueError("SearchLimits.time_budget must be more than 0")

    def check_words(self, text: str) -> None:
        """QueryError when the free text has more words than one search may use."""
        n = len(text.split())
        if n > self.max_words:
            raise QueryError(
                f"the search has {n} words; at most {self.max_words} are searched at "
                "once: keep the distinctive ones (an event, a function, an error code)"
            )


# Set by a caller that can tell when nobody waits for the answer any more (the web app, when the
# client disconnects): SearchIndex.search checks it before it starts and between matches, so a
# request whose client left costs nothing more, even one that queued behind others. A context
# variable rather than a parameter: it reaches the search through Store.search and the worker
# thread the web app runs it in (anyio copies the context) without every layer passing it on.
search_cancelled: ContextVar[threading.Event | None] = ContextVar(
    "perfkb_search_cancelled", default=None
)


class SearchCancelled(QueryError):
    """Nobody waits for this search's answer any more (see search_cancelled)."""


# --------------------------------------------------------------------------------------------
# what a search returns (kb.index_docs.SearchPage & co. are the pydantic twins the web API and
# the store's callers get; these are what the search makes, and what `perfkb search` prints)

FACETS = ("platform", "source", "product", "tag")


@dataclass
class Part:
    """A piece of a hit's fragment as plain text; `hit` marks the query's words."""

    text: str
    hit: bool = False


@dataclass
class Hit:
    id: str
    title: str
    score: float
    snippet: list[Part] = field(default_factory=list)
    platforms: list[str] = field(default_factory=list)
    sources: list[str] = field(default_factory=list)
    tags: list[str] = field(default_factory=list)
    products: list[str] = field(default_factory=list)


@dataclass
class Page:
    query: str
    total: int
    page: int
    per_page: int
    results: list[Hit] = field(default_factory=list)
    facets: dict[str, dict[str, int]] = field(default_factory=dict)


def empty_page(parsed: ParsedQuery, page: int, per_page: int) -> Page:
    return Page(
        query=parsed.raw, total=0, page=page, per_page=per_page, facets={f: {} for f in FACETS}
    )


class Budget:
    """What one search may still spend: until a monotonic deadline, and only while whoever
    asked still waits (the event search_cancelled carries, when set)."""

    __slots__ = ("seconds", "deadline", "cancel")

    def __init__(self, seconds: float, cancel: threading.Event | None) -> None:
        self.seconds = seconds
        self.deadline = time.monotonic() + seconds
        self.cancel = cancel

    def over(self) -> bool:
        return time.monotonic() > self.deadline or (
            self.cancel is not None and self.cancel.is_set()
        )

    def check(self) -> None:
        if self.over():
            raise self.error()

    def error(self) -> QueryError:
        if self.cancel is not None and self.cancel.is_set():
            return SearchCancelled("the search was cancelled: nobody waits for it any more")
        return QueryError(
            f"the search took longer than {self.seconds:g} s and was stopped: use longer "
            "prefixes before * or ?, fewer words, or a filter such as platform: or tag:"
        )


@dataclass
class Filter:
    key: str
    values: list[str]  # any of these (parse_query never makes an empty list)


@dataclass
class ParsedQuery:
    raw: str = ""
    text: str = ""  # free text for full-text search
    filters: list[Filter] = field(default_factory=list)  # all of these

    def values(self, key: str) -> list[list[str]]:
        return [f.values for f in self.filters if f.key == key]


def _clean_values(key: str, raw: str) -> list[str]:
    values = [v.strip() for v in raw.split(",") if v.strip()]
    if not values:
        raise QueryError(f"filter '{key}:' needs a value")
    out: list[str] = []
    for value in values:
        if key == "version":
            try:
                Version(value)
            except InvalidVersion as exc:
                raise QueryError(f"version filter: {exc}") from None
        else:
            value = value.lower()
        if key == "platform" and value not in PLATFORMS:
            raise QueryError(f"unknown platform '{value}' (use one of: {', '.join(PLATFORMS)})")
        if key == "source" and value not in (sources := _sources()):
            raise QueryError(
                f"unknown evidence source '{value}' (use one of: {', '.join(sources)})"
            )
        if value not in out:
            out.append(value)
    return out


def parse_query(query: str, extra: dict[str, str] | None = None) -> ParsedQuery:
    """Split `query` into free text and filters; `extra` adds filters given separately
    (a web form's facet links, an API parameter)."""
    query = query or ""
    filters: list[Filter] = []

    def take(match: re.Match[str]) -> str:
        key = match.group("key").lower()
        raw = match.group("quoted") if match.group("quoted") is not None else match.group("bare")
        filters.append(Filter(key=key, values=_clean_values(key, raw)))
        return " "

    text = _FILTER_RE.sub(take, query)
    for key, raw in (extra or {}).items():
        key = key.lower()
        if key not in FILTER_KEYS:
            raise QueryError(f"unknown filter '{key}' (use one of: {', '.join(FILTER_KEYS)})")
        if raw is None or not str(raw).strip():
            continue
        filters.append(Filter(key=key, values=_clean_values(key, str(raw))))
    return ParsedQuery(raw=query, text=" ".join(text.split()), filters=filters)
