"""The highlighted fragment of a search hit: the window of a stored field that holds most of the
query's words, as plain-text parts with the words marked (kb.search_file.Part).

No whoosh and no pydantic here: `perfkb search` makes its hits with this module (issue #19)."""

from __future__ import annotations

import bisect
import importlib.util
import re
from collections.abc import Iterable
from functools import lru_cache
from itertools import accumulate
from pathlib import Path
from typing import Any

from kb.search_query import Hit, Part

# --------------------------------------------------------------------------------------------
# whoosh's Porter stemmer, without the whoosh package (the query words are stemmed with it too:
# kb/search_file.py)


@lru_cache(maxsize=1)
def _porter() -> Any:
    """whoosh.lang.porter's `stem`, executed from whoosh's own file under another name: the
    index was stemmed with it, so the query must be too, and importing it the usual way runs
    whoosh/__init__ and whoosh/lang/__init__ first. The module imports only `re`."""
    spec = importlib.util.find_spec("whoosh")  # a top-level package: found, not imported
    if spec is None or not spec.submodule_search_locations:
        raise ImportError("whoosh is not installed")
    path = Path(next(iter(spec.submodule_search_locations))) / "lang" / "porter.py"
    loaded = importlib.util.spec_from_file_location("kb._whoosh_porter", path)
    if loaded is None or loaded.loader is None:
        raise ImportError(f"cannot load {path}")
    module = importlib.util.module_from_spec(loaded)
    loaded.loader.exec_module(module)
    return module.stem


@lru_cache(maxsize=50_000)
def porter_stem(word: str) -> str:
    return _porter()(word)


SNIPPET_FIELDS = ("symptom", "root_cause", "fix", "commands", "title")


def split_values(value: str | None) -> list[str]:
    return [v for v in (value or "").split(",") if v]


class Marker:
    """Builds the highlighted fragment of a hit: the ~240-character window of a stored field
    holding most of the query's words, the hits marked. whoosh's highlighter
    re-analyses every field of every hit and cost more than the search itself."""

    WIDTH = 240
    BEFORE = 50

    def __init__(self, terms: Iterable[tuple[str, Any]] | Any) -> None:
        """`terms`: (field, word) of every term of the query, or a whoosh query (its
        iter_all_terms())."""
        self.stems: set[str] = set()
        self.words: set[str] = set()
        if hasattr(terms, "iter_all_terms"):
            terms = terms.iter_all_terms()
        for field, term in terms:
            term = term.decode("utf-8", "replace") if isinstance(term, bytes) else str(term)
            if field in SNIPPET_FIELDS or field == "keywords":
                self.stems.add(term)
            elif field in ("identifiers_text", "identifiers"):
                self.words.add(term)
        # tokens as written, already judged for this query: a query word or not
        self._hits: set[str] = set()
        self._judged: set[str] = set()

    def spans(self, text: str) -> list[tuple[int, int]]:
        # One split (in C) gives the tokens and, through the lengths of the pieces, where they
        # are; set operations find the distinct tokens not judged yet for this query, and only
        # those are lowercased and stemmed.
        parts = _WORD_SPLIT.split(text)  # [gap, token, gap, token, ..., gap]
        tokens = set(parts[1::2])
        new = tokens - self._judged
        if new:
            self._judged |= new
            for token in new:
                word = token.lower()
                if word in self.words or _stem(word) in self.stems:
                    self._hits.add(token)
        hits = tokens & self._hits
        if not hits:
            return []
        ends = list(accumulate(map(len, parts)))
        return [(ends[i - 1], ends[i]) for i in range(1, len(parts), 2) if parts[i] in hits]

    def fragment(self, text: str) -> list[Part] | None:
        spans = self.spans(text)
        if not spans:
            return None
        best, best_count = 0, 0
        ends = [e for _, e in spans]  # ascending: spans do not overlap
        for i, (start, _) in enumerate(spans):
            count = bisect.bisect_right(ends, start + self.WIDTH, lo=i) - i
            if count > best_count:
                best, best_count = i, count
        lo = max(0, spans[best][0] - self.BEFORE)
        if lo:
            lo = text.find(" ", lo, spans[best][0]) + 1 or spans[best][0]
        hi = min(len(text), lo + self.WIDTH)
        if hi < len(text):
            cut = text.rfind(" ", max(spans[best][1], hi - 40), hi)
            hi = cut if cut > 0 else hi
        parts = [Part(text="… ")] if lo else []
        pos = lo
        for s, e in spans:
            if s < lo or e > hi:
                continue
            parts.append(Part(text=text[pos:s].replace("\n", " ")))
            parts.append(Part(text=text[s:e].replace("\n", " "), hit=True))
            pos = e
        parts.append(Part(text=text[pos:hi].replace("\n", " ") + (" …" if hi < len(text) else "")))
        return [p for p in parts if p.text]


_WORD = re.compile(r"\w+(?:[.$#]\w+)*")
_WORD_SPLIT = re.compile(rf"({_WORD.pattern})")


_stem = porter_stem  # the name the tests know


def hit(stored: dict[str, Any], score: float, marker: Marker | None) -> Hit:
    snippet = None
    if marker is not None:
        for field in SNIPPET_FIELDS:
            snippet = marker.fragment(stored.get(field, ""))
            if snippet:
                break
    if not snippet:
        symptom = " ".join(stored.get("symptom", "").split())
        cut = symptom[:240].rsplit(" ", 1)[0] + " …" if len(symptom) > 240 else symptom
        snippet = [Part(text=cut)] if cut else []
    return Hit(
        id=stored["id"],
        title=stored.get("title", stored["id"]),
        score=round(float(score), 4),
        snippet=snippet,
        platforms=split_values(stored.get("platform")),
        sources=split_values(stored.get("source")),
        tags=split_values(stored.get("tag")),
        products=split_values(stored.get("product")),
    )
