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
from contextvars import ContextVar
from typing import get_args

from pydantic import BaseModel, ConfigDict, Field

from kb.errors import QueryError
from kb.models import PLATFORMS
from kb.signatures import Source
from kb.versions import InvalidVersion, Version

FILTER_KEYS: tuple[str, ...] = ("platform", "source", "version", "tag", "product")
SOURCES: tuple[str, ...] = get_args(Source)

_FILTER_RE = re.compile(
    r"(?<!\S)(?P<key>" + "|".join(FILTER_KEYS) + r"):(?:\"(?P<quoted>[^\"]*)\"|(?P<bare>\S+))",
    re.IGNORECASE,
)


class SearchLimits(BaseModel):
    """What one search may cost, whoever asks (web page, API, CLI, Slack: they all reach
    `SearchIndex.search`). Searches are anonymous, and whoosh scores every posting of every word
    a wildcard expands to in Python: on a 10,000-entry KB `*` alone cost ~3 s and ten one-letter
    prefixes over 100 s of one core. Values come from Settings (PERFKB_SEARCH_*)."""

    min_wildcard_prefix: int = Field(2, ge=1, description="letters a word needs before * or ?")
    max_expansions: int = Field(
        1000, ge=1, description="index words all the wildcards of one query may stand for"
    )
    max_words: int = Field(64, ge=1, description="words of free text in one query")
    time_budget: float = Field(2.0, gt=0, description="seconds one search may run")


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


class Filter(BaseModel):
    # built on first use: `perfkb analyze` never validates one (issue #19)
    model_config = ConfigDict(defer_build=True)

    key: str
    values: list[str] = Field(min_length=1)  # any of these


class ParsedQuery(BaseModel):
    # built on first use: `perfkb analyze` never validates one (issue #19)
    model_config = ConfigDict(defer_build=True)

    raw: str = ""
    text: str = ""  # free text for full-text search
    filters: list[Filter] = Field(default_factory=list)  # all of these

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
        if key == "source" and value not in SOURCES:
            raise QueryError(
                f"unknown evidence source '{value}' (use one of: {', '.join(SOURCES)})"
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
