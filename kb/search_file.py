"""The search file: what a search reads, written beside the whoosh index, read with the standard
library only.

`perfkb search` used to import whoosh (index, query parser, matchers) and pydantic before it
scored anything, ~5x the cost of `import typer, rich` (issue #19). Every index write now also
writes `perfkb-search.sqlite3` into the index directory (kb/index_fast.py `write_search_file`,
under the index lock, from the segment it just committed): per word of every scored field the
live documents holding it with the score whoosh's BM25F scorer gives that posting, the facet
values' documents, each live document's stored fields, the analyzers' settings, and the stamp and
whoosh generation it was made from. This module answers a search from that file: the query words
analysed as the index analysed them, combined as whoosh's parser would combine them, scored by
summing the stored posting scores along the same And/Or tree. The web app (through
`SearchIndex.search`) and the CLI (directly, without opening the store) both search through it.

What it does not answer, the caller sends to whoosh (kb/index.py `_search_whoosh`, also the
oracle the tests compare this with): text that is not plain words (phrases, quotes, wildcards,
operators such as OR/NOT, parentheses, fields), the OR fallback of a multi-word search no entry
has all the words of (whoosh's coordination-scaled Or), and version: filters (they read the
entries' ranges through kb.models). A missing, damaged or stale file (its stamp or generation is
not the index's, or not the database's newest revision) is never read; the next index write, or
the next `SearchIndex.open`, writes it again.

This module imports no pydantic, no whoosh and no numpy (tests/test_startup.py holds it so);
the one piece of whoosh it runs is its Porter stemmer (kb/index_snippets.py `porter_stem`), a
pure-Python module read from whoosh's own file without importing the whoosh package.
"""

from __future__ import annotations

import heapq
import json
import os
import re
import sqlite3
import threading
from array import array
from bisect import bisect_right, insort
from collections import OrderedDict
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from kb import bm25
from kb.index_snippets import Marker, hit, porter_stem
from kb.search_query import (
    FACETS,
    Budget,
    Page,
    ParsedQuery,
    SearchLimits,
    empty_page,
    search_cancelled,
)

FILE_NAME = "perfkb-search.sqlite3"
FORMAT = 2  # bump when the file's layout changes: another number is never read
# Bump when the schema or what goes into a document changes: a different number forces a rebuild.
INDEX_SCHEMA_VERSION = 3

# Field boosts: identifiers and titles say more about an entry than its prose.
# How much a query word counts in each field (benchmarks/search.py mirrors these for FTS5).
FIELD_BOOSTS = {
    "identifiers_text": 4.0,
    "title": 3.0,
    "keywords": 2.0,
    "symptom": 1.5,
    "root_cause": 1.0,
    "fix": 1.0,
    "commands": 0.6,
}
EXACT_IDENTIFIER_BOOST = 8.0
EXACT_FIELD = "identifiers"
SCORED_FIELDS = (*FIELD_BOOSTS, EXACT_FIELD)
# plain text: words of these characters separated by single spaces, none an operator word
PLAIN_QUERY = re.compile(r"[\w.$#-]+(?: [\w.$#-]+)*", re.ASCII)
OPERATOR_WORDS = frozenset({"AND", "OR", "NOT", "ANDNOT", "ANDMAYBE", "REQUIRE"})
# what SearchFile.search answers for plain words no entry has all of (whoosh's OR answers)
OR_FALLBACK = "or-fallback"
# postings the per-word cache of an open file may hold (each a docnum and a float)
CACHE_POSTINGS = 300_000


# --------------------------------------------------------------------------------------------
# the query: whoosh's query tree for plain words, as tuples
#
#   ("t", field, text, boost)             a Term
#   ("and" | "or", (children...), boost)  an And / Or
#   None                                  whoosh's NullQuery (matches nothing)


class _Analyzer:
    """One field's analysis as the writer recorded it (RegexTokenizer, StripFilter?,
    LowercaseFilter, StopFilter?, Porter StemFilter?), in query mode: stop words removed."""

    def __init__(self, spec: dict[str, Any]) -> None:
        self.finditer = re.compile(spec["pattern"], spec["flags"]).finditer
        self.strip = bool(spec.get("strip"))
        stops = spec.get("stops")
        self.stops = frozenset(stops) if stops is not None else None
        self.minsize = int(spec.get("min") or 0)
        self.maxsize = spec.get("max")
        self.stem = bool(spec.get("stem"))
        self.ignore = frozenset(spec.get("ignore") or ())

    def __call__(self, text: str) -> list[str]:
        out = []
        for m in self.finditer(text):
            token = m.group(0)
            if self.strip:
                token = token.strip()
            token = token.lower()
            if self.stops is not None:
                n = len(token)
                if (
                    n < self.minsize
                    or (self.maxsize is not None and n > self.maxsize)
                    or token in self.stops
                ):
                    continue
            if self.stem and token not in self.ignore:
                token = porter_stem(token)
            out.append(token)
        return out


def ident_key(text: str) -> str:
    """How an identifier is stored in the exact field: lowercase, single spaces, no commas."""
    return " ".join(text.replace(",", " ").lower().split())


def _with_boost(q: Any, boost: float) -> Any:
    return (q[0], q[1], q[2], boost) if q[0] == "t" else (q[0], q[1], boost)


def _normalize(q: Any) -> Any:
    """whoosh's CompoundQuery.normalize for And/Or trees of Terms: children normalized, nested
    nodes of the same kind merged (boosts multiplied), duplicates and NullQuerys dropped, a
    single child standing for its parent."""
    if q is None or q[0] == "t":
        return q
    kind, children, boost = q
    subs: list[Any] = []
    for child in children:
        child = _normalize(child)
        if child is not None and child[0] == kind:
            subs += [_with_boost(c, c[-1] * child[2]) for c in child[1]]
        else:
            subs.append(child)
    if all(s is None for s in subs):
        return None
    seen: set[Any] = set()
    kept = []
    for s in subs:
        if s in seen:
            continue
        seen.add(s)
        kept.append(s)
    kept = [s for s in kept if s is not None]
    if not kept:
        return None
    if len(kept) == 1:
        sub = kept[0]
        if not (boost == 1.0 and sub[-1] == 1.0):
            sub = _with_boost(sub, sub[-1] * boost)
        return sub
    return (kind, tuple(kept), boost)


def _leaves(q: Any) -> list[tuple[str, str]]:
    if q is None:
        return []
    if q[0] == "t":
        return [(q[1], q[2])]
    return [leaf for child in q[1] for leaf in _leaves(child)]


# --------------------------------------------------------------------------------------------
# the file


class SearchFile:
    """An open search file (read-only). Used by one thread at a time (each SearchIndex has its
    own, and SearchIndex objects are lent to one thread at a time)."""

    def __init__(self, path: Path, cache_postings: int = CACHE_POSTINGS) -> None:
        self.path = Path(path)
        self.cache_postings = cache_postings
        # autocommit: each search reads inside its own transaction (see search), so a writer
        # updating the file in place is seen whole or not at all
        self._conn = sqlite3.connect(
            f"{self.path.resolve().as_uri()}?mode=ro",
            uri=True,
            check_same_thread=False,
            isolation_level=None,
            timeout=10.0,
        )
        try:
            self._conn.execute("BEGIN")
            meta = dict(self._conn.execute("SELECT key, value FROM meta").fetchall())
            if int(meta.get("format", -1)) != FORMAT:
                raise ValueError("another format")
            self.stamp: dict[str, Any] = json.loads(meta["stamp"])
            self.index_key: str = meta["index_key"]
            # per whoosh segment, in docnum order: its id (the file's rows are by segment),
            # (first docnum, documents incl. deleted, live documents, has deletions), and its
            # deleted docnums (within the segment)
            self.segment_ids: list[str] = []
            self.segments: list[tuple[int, int, int, bool]] = []
            self._deleted: list[frozenset[int]] = []
            deleted = {
                seg: frozenset(_ids(blob))
                for seg, blob in self._conn.execute("SELECT seg, docs FROM deleted")
            }
            offset = 0
            for seg, count in json.loads(meta["segments"]):
                gone = deleted.get(seg, frozenset())
                self.segment_ids.append(seg)
                self._deleted.append(gone)
                self.segments.append((offset, count, count - len(gone), bool(gone)))
                offset += count
            self.nbits = offset
            self._starts = [seg[0] for seg in self.segments]
            # whoosh's global statistics: documents incl. deleted, each field's summed length
            self.doc_count_all = offset
            self.field_lengths: dict[str, int] = json.loads(meta["field_lengths"])
            specs = json.loads(meta["analyzers"])
            self._analyzers = {name: _Analyzer(specs[name]) for name in FIELD_BOOSTS}
            self._conn.execute("COMMIT")
        except Exception:
            self._conn.close()
            raise
        # (segment, query node) -> (scores, estimate, kind), and ("answer", query, filters) ->
        # (scores, mask): least recently used dropped past cache_postings postings in all
        self._cache: OrderedDict[Any, tuple[Any, ...]] = OrderedDict()
        self._cached = 0
        self._facets: dict[str, dict[str, frozenset[int]]] | None = None
        self._masks: dict[str, dict[str, int]] | None = None
        self._ids: list[int] | None = None
        self._lock = threading.Lock()
        self._reading = threading.Lock()
        self._length_bytes: dict[
            tuple[int, str], bytes
        ] = {}  # one search's read transaction at a time

    @classmethod
    def open(cls, path: Path, cache_postings: int = CACHE_POSTINGS) -> SearchFile | None:
        """The file at `path`, or None when there is none or it is not one this reads."""
        if not os.path.isfile(path):
            return None
        try:
            return cls(path, cache_postings)
        except Exception:  # damaged, half-written by a crash, another format: not read
            return None

    def close(self) -> None:
        self._conn.close()

    @property
    def cached_postings(self) -> int:
        """How many postings the per-word cache holds (memory; the benchmark's cold figure)."""
        return self._cached

    def drop_cache(self) -> None:
        with self._lock:
            self._cache.clear()
            self._cached = 0

    def usable_for(self, store_id: str, rev: int) -> bool:
        """Is this the index of every revision up to `rev` of store `store_id`?"""
        s = self.stamp
        return (
            s.get("store_id") == store_id
            and s.get("schema_version") == INDEX_SCHEMA_VERSION
            and s.get("rev") == rev
        )

    # -- reading ------------------------------------------------------------------------------

    def _cached_get(self, key: Any) -> tuple[Any, ...] | None:
        with self._lock:
            found = self._cache.get(key)
            if found is not None:
                self._cache.move_to_end(key)
            return found

    def _cached_put(self, key: Any, value: tuple[Any, ...]) -> None:
        """value[0] is a dict: its length is what the entry counts against cache_postings.

        Past the budget the least recently used word tables go first and whole answers
        ("answer" keys: a query's matches, a few hundred postings each) only when no other
        word table is left: a query's word tables, 10-50x the size of its answer, would
        otherwise push the answers of recent queries out (at 10k entries the benchmark's 16
        queries fill 300k postings with word tables, and 5 of the 16 answers were dropped each
        round, so a repeated query was scored again)."""
        with self._lock:
            cache = self._cache
            old = cache.pop(key, None)
            if old is not None:
                self._cached -= len(old[0]) + 1
            cache[key] = value
            self._cached += len(value[0]) + 1
            if self._cached <= self.cache_postings:
                return
            words = [k for k in cache if k[0] != "answer" and k is not key]
            words.reverse()  # popped from the end: least recently used first
            while self._cached > self.cache_postings and len(cache) > 1:
                if words:
                    dropped = cache.pop(words.pop())
                else:  # only answers (and this entry) left: the oldest answer
                    dropped = cache.pop(next(k for k in cache if k is not key))
                self._cached -= len(dropped[0]) + 1

    def _term(
        self, seg: int, fieldname: str, text: str, boost: float = 1.0
    ) -> tuple[dict[int, float], int]:
        """(docnum -> whoosh's score of the posting times `boost`; the word's document
        frequency in segment `seg`, deleted documents included: whoosh's size estimate).

        The boost multiplies each distinct (weight, length byte) score once, before the
        postings are spread: the same multiplication of the same two floats whoosh's
        WrappingMatcher makes per posting, so the same result, without a second pass over
        every posting.

        The score is computed here from what it is made of, as whoosh's BM25F scorer does
        (kb.bm25: the same operations on the same floats): the word's idf over every segment's
        postings (deleted documents count until a merge, as in whoosh), the field's average
        length over every document, the posting's weight and its document's length byte."""
        mine: tuple[bytes, bytes] | None = None
        df = 0
        fetch = self._conn.execute
        for n, sid in enumerate(self.segment_ids):
            row = fetch(
                "SELECT docs, weights FROM postings WHERE seg = ? AND field = ? AND term = ?",
                (sid, fieldname, text),
            ).fetchone()
            if row is not None:
                df += len(row[0]) >> 2
                if n == seg:
                    mine = row
        if mine is None or not mine[0]:
            return {}, 0
        docs = _ids(mine[0])
        weights = array("f")
        weights.frombytes(mine[1])
        lengths = self._lengths(seg, fieldname)
        term_idf = bm25.idf(self.doc_count_all, df)
        avgfl = self.field_lengths[fieldname] / (self.doc_count_all or 1) or 1
        offset, deleted = self.segments[seg][0], self._deleted[seg]
        if docs and docs[-1] >= len(lengths):  # past the column's end whoosh reads 0
            lengths = lengths + bytes(docs[-1] + 1 - len(lengths))
        # a score depends only on (weight, length byte): each distinct pair scored once, the
        # per-posting work left to C (zip, map, dict)
        lbs = bytes(map(lengths.__getitem__, docs))
        w0 = weights[0]
        scores: Any
        if weights.count(w0) == len(weights):  # the usual case: one weight, scored per byte
            by_lb = [0.0] * 256
            for lb in set(lbs):
                by_lb[lb] = bm25.bm25(term_idf, w0, _LENGTH_OF_BYTE[lb], avgfl)
                if boost != 1.0:
                    by_lb[lb] = by_lb[lb] * boost
            scores = map(by_lb.__getitem__, lbs)
        else:
            keys = list(zip(weights, lbs, strict=True))
            memo: dict[tuple[float, int], float] = {}
            for key in set(keys):
                memo[key] = bm25.bm25(term_idf, key[0], _LENGTH_OF_BYTE[key[1]], avgfl)
                if boost != 1.0:
                    memo[key] = memo[key] * boost
            scores = map(memo.__getitem__, keys)
        pairs = zip(map(offset.__add__, docs) if offset else docs, scores, strict=True)
        table = dict(pairs)
        for d in deleted.intersection(docs) if deleted else ():
            del table[offset + d]
        return table, len(docs)

    def _lengths(self, seg: int, fieldname: str) -> bytes:
        """Segment `seg`'s field-length bytes of `fieldname`, one per docnum in the segment."""
        key = (seg, fieldname)
        found = self._length_bytes.get(key)
        if found is None:
            row = self._conn.execute(
                "SELECT bytes FROM lengths WHERE seg = ? AND field = ?",
                (self.segment_ids[seg], fieldname),
            ).fetchone()
            found = self._length_bytes[key] = row[0] if row is not None else b""
        return found

    def _global(self, seg_ids: Iterable[tuple[str, int]]) -> list[int]:
        """(segment id, docnum in it) pairs as whoosh's docnums, deleted ones left out."""
        where = {sid: n for n, sid in enumerate(self.segment_ids)}
        out = []
        for sid, local in seg_ids:
            n = where.get(sid)
            if n is not None and local not in self._deleted[n]:
                out.append(self.segments[n][0] + local)
        return out

    def _local(self, docnum: int) -> tuple[str, int]:
        n = bisect_right(self._starts, docnum) - 1
        return self.segment_ids[n], docnum - self.segments[n][0]

    def facet_docs(self) -> dict[str, dict[str, frozenset[int]]]:
        """facet field -> value -> the live documents with it."""
        if self._facets is None:
            facets: dict[str, dict[str, frozenset[int]]] = {f: {} for f in FACETS}
            marks = ",".join("?" * len(FACETS))
            found: dict[tuple[str, str], list[int]] = {}
            for sid, fieldname, term, blob in self._conn.execute(
                f"SELECT seg, field, term, docs FROM postings WHERE field IN ({marks})", FACETS
            ):
                found.setdefault((fieldname, term), []).extend(
                    self._global((sid, d) for d in _ids(blob))
                )
            for (fieldname, term), docs in found.items():
                if docs:
                    facets[fieldname][term] = frozenset(docs)
            self._facets = facets
        return self._facets

    def facet_masks(self) -> dict[str, dict[str, int]]:
        """facet_docs as bit masks (bit n: docnum n), to count a page's facets with & and
        bit_count."""
        if self._masks is None:
            self._masks = {
                fieldname: {value: mask_of(docs, self.nbits) for value, docs in table.items()}
                for fieldname, table in self.facet_docs().items()
            }
        return self._masks

    @staticmethod
    def _filter_key(parsed: ParsedQuery) -> tuple[tuple[str, tuple[str, ...]], ...]:
        return tuple((f.key, tuple(f.values)) for f in parsed.filters if f.key != "version")

    def ids_in_order(self) -> list[int]:
        """Every live document, ordered by entry id (the listing order of an empty query)."""
        if self._ids is None:
            rows = self._conn.execute("SELECT seg, local FROM docs ORDER BY id, seg, local")
            self._ids = self._global(rows)
        return self._ids

    def _docs_column(self, docnums: list[int], column: str) -> dict[int, Any]:
        by_seg: dict[str, dict[int, int]] = {}
        for d in docnums:
            sid, local = self._local(d)
            by_seg.setdefault(sid, {})[local] = d
        out = {}
        for sid, locals_ in by_seg.items():
            marks = ",".join("?" * len(locals_))
            for local, value in self._conn.execute(
                f"SELECT local, {column} FROM docs WHERE seg = ? AND local IN ({marks})",
                (sid, *locals_),
            ):
                out[locals_[local]] = value
        return out

    def stored(self, docnums: list[int]) -> dict[int, dict[str, Any]]:
        return {d: json.loads(s) for d, s in self._docs_column(docnums, "stored").items()}

    def stored_ids(self, docnums: list[int]) -> dict[int, str]:
        return self._docs_column(docnums, "id")

    # -- the query ----------------------------------------------------------------------------

    def plain_query(self, text: str) -> Any:
        """What SearchIndex._plain_query (whoosh's AND parser on plain words) makes of `text`,
        with the exact-identifier term SearchIndex._text_query adds; False when the text is not
        plain words (whoosh answers it)."""
        if not PLAIN_QUERY.fullmatch(text):
            return False
        words = []
        for word in text.split(" "):
            if word.upper() in OPERATOR_WORDS:
                return False
            fields_ = []
            for fieldname, boost in FIELD_BOOSTS.items():
                texts = self._analyzers[fieldname](word)
                if len(texts) == 1:
                    fields_.append(("t", fieldname, texts[0], boost))
                elif texts:  # the field's multitoken_query "default": the parser's group, And
                    fields_.append(("and", tuple(("t", fieldname, t, boost) for t in texts), 1.0))
            words.append(("or", tuple(fields_), 1.0))
        parsed = _normalize(("and", tuple(words), 1.0))
        key = ident_key(text)
        if not key:
            return parsed
        return ("or", (parsed, ("t", EXACT_FIELD, key, EXACT_IDENTIFIER_BOOST)), 1.0)

    def _scores(self, q: Any, budget: Budget) -> dict[int, float]:
        """docnum -> score of every document matching q: in each whoosh segment, the sum of
        the matching postings' scores (times their boosts) in the order whoosh's matcher tree
        for that segment adds them (see _node), so the floats are whoosh's own."""
        if len(self.segments) == 1:
            return self._node(0, q, budget)[0]
        out: dict[int, float] = {}
        for seg in range(len(self.segments)):
            out.update(self._node(seg, q, budget)[0])
        return out

    def _node(self, seg: int, q: Any, budget: Budget) -> tuple[dict[int, float], int, int]:
        """(docnum -> score, whoosh's size estimate, the kind of matcher whoosh makes) of q in
        segment `seg`, as whoosh's own matchers compute them.

        whoosh joins an Or's (And's) children two at a time, smallest size estimate (largest)
        first, by make_weighted_tree: a sort and insort of (estimate, matcher) pairs, in which
        matchers compare equal unless one's class is a subclass of the other's: then a
        WrappingMatcher (a boosted posting list) sorts before a FilterMatcher (an unboosted one
        in a segment with deletions). _Item replays those comparisons."""
        if q is None:
            return {}, 0, _NULL
        found = self._cached_get((seg, q))
        if found is not None:
            return found  # type: ignore[return-value]
        found = self._make_node(seg, q, budget)
        self._cached_put((seg, q), found)
        return found

    def _make_node(self, seg: int, q: Any, budget: Budget) -> tuple[dict[int, float], int, int]:
        if q[0] == "t":
            budget.check()
            _, fieldname, text, boost = q
            table, est = self._term(seg, fieldname, text, boost)
            if est == 0:
                return {}, 0, _NULL
            kind = _FILTER if self.segments[seg][3] else _LEAF
            if boost != 1.0:
                kind = _WRAP
            return table, est, kind
        kind_, children, boost = q
        nodes = [self._node(seg, c, budget) for c in children]
        if kind_ == "or":
            est = min(sum(n[1] for n in nodes), self.segments[seg][2])
            scores = _weighted_tree([_Item(n[1], n[2], n[0]) for n in nodes], _UNION, _union)
            kind = _UNION
        else:
            est = min(n[1] for n in nodes)
            keys = set(min((n[0] for n in nodes), key=len))
            for n in nodes:
                keys &= n[0].keys()

            def both(a: dict[int, float], b: dict[int, float]) -> dict[int, float]:
                return {d: a[d] + b[d] for d in keys}

            scores = _weighted_tree([_Item(0 - n[1], n[2], n[0]) for n in nodes], _INTER, both)
            kind = _INTER
        if boost != 1.0:
            scores = {d: sc * boost for d, sc in scores.items()}
            kind = _WRAP
        return scores, est, kind

    # -- searching ----------------------------------------------------------------------------

    def search(
        self,
        parsed: ParsedQuery,
        *,
        page: int = 1,
        per_page: int = 20,
        limits: SearchLimits | None = None,
    ) -> Page | str | None:
        """One page of results, the same page SearchIndex._search_whoosh gives; None for a
        query this does not answer (see the module's docstring) or when the file has moved on
        to another commit since it was opened (a writer updates it in place), OR_FALLBACK when
        the words are plain but no entry has them all (whoosh's OR of them answers)."""
        with self._reading:
            conn = self._conn
            try:
                conn.execute("BEGIN")  # one snapshot for the whole search
                try:
                    row = conn.execute("SELECT value FROM meta WHERE key = 'index_key'").fetchone()
                    if row is None or row[0] != self.index_key:
                        return None
                    return self._search(parsed, page=page, per_page=per_page, limits=limits)
                finally:
                    if conn.in_transaction:
                        conn.execute("COMMIT")
            except sqlite3.Error:
                # a writer holding the file past the busy timeout, a crashed writer's journal
                # this read-only connection cannot roll back: whoosh answers this one
                return None

    def _search(
        self,
        parsed: ParsedQuery,
        *,
        page: int,
        per_page: int,
        limits: SearchLimits | None,
    ) -> Page | str | None:
        limits = limits or SearchLimits()
        budget = Budget(limits.time_budget, search_cancelled.get())
        budget.check()
        text = parsed.text.strip()
        limits.check_words(text)
        if parsed.values("version"):
            return None
        allowed = self._allowed(parsed)
        if allowed is not None and not allowed:
            return empty_page(parsed, page, per_page)
        first = (page - 1) * per_page
        nbits = self.nbits
        if text:
            q = self.plain_query(text)
            if q is False:
                return None
            key = ("answer", q, self._filter_key(parsed))
            found = self._cached_get(key)
            if found is None:
                scores = self._scores(q, budget)
                if allowed is not None:
                    scores = {d: sc for d, sc in scores.items() if d in allowed}
                found = (scores, mask_of(scores, nbits))
                self._cached_put(key, found)
            scores, mask = found
            if not scores and len(text.split()) > 1:
                return OR_FALLBACK  # whoosh's scaled Or; the AND is known to match nothing
            top = top_k(scores, first + per_page)[first:]
            total = len(scores)
        else:
            q = None
            docs = self.ids_in_order()
            if allowed is not None:
                docs = [d for d in docs if d in allowed]
            top = [(d, 0.0) for d in docs[first : first + per_page]]
            mask = mask_of(docs, nbits)
            total = len(docs)
        facets = {
            fieldname: {
                value: n
                for value, vmask in sorted(table.items())
                if (n := (vmask & mask).bit_count())
            }
            for fieldname, table in self.facet_masks().items()
        }
        marker = Marker(_leaves(q)) if text else None
        stored = self.stored([d for d, _ in top]) if top else {}
        hits = [hit(stored[d], sc, marker) for d, sc in top]
        return Page(
            query=parsed.raw, total=total, page=page, per_page=per_page, results=hits, facets=facets
        )

    def _allowed(self, parsed: ParsedQuery) -> set[int] | None:
        """Documents that pass every facet filter (None: no facet filter given); a platform
        filter also keeps entries for any platform."""
        facets = self.facet_docs()
        allowed: set[int] | None = None
        for flt in parsed.filters:
            if flt.key == "version":
                continue
            values = list(flt.values)
            if flt.key == "platform":
                values.append("any")
            docs: set[int] = set()
            for value in values:
                docs |= facets[flt.key].get(value, frozenset())
            allowed = docs if allowed is None else allowed & docs
        return allowed


# the matcher classes whoosh makes for our trees (whoosh.matching): a posting list, the same in a
# segment with deletions (FilterMatcher), a boosted one (WrappingMatcher, FilterMatcher's base
# class), a word the segment lacks, a union, an intersection
_LEAF, _FILTER, _WRAP, _NULL, _UNION, _INTER = range(6)


class _Item:
    """An (estimate, matcher) pair of make_weighted_tree, compared as whoosh's are."""

    __slots__ = ("weight", "kind", "scores")

    def __init__(self, weight: int, kind: int, scores: dict[int, float]) -> None:
        self.weight, self.kind, self.scores = weight, kind, scores

    def __lt__(self, other: _Item) -> bool:
        if self.weight != other.weight:
            return self.weight < other.weight
        # Matcher.__lt__ is "same class" (never true for two classes), except that Python asks
        # a right operand whose class subclasses the left's first: FilterMatcher.__gt__
        return self.kind == _WRAP and other.kind == _FILTER


def _weighted_tree(items: list[_Item], kind: int, join: Any) -> dict[int, float]:
    """whoosh.util.make_weighted_tree over the children, joining their scores with `join`."""
    items.sort()
    while len(items) > 1:
        a = items.pop(0)
        b = items.pop(0)
        insort(items, _Item(a.weight + b.weight, kind, join(a.scores, b.scores)))
    return items[0].scores


def _union(a: dict[int, float], b: dict[int, float]) -> dict[int, float]:
    if not b or not a:
        return a or b
    out = a | b
    for d in a.keys() & b.keys():
        out[d] = a[d] + b[d]
    return out


def _rank_key(item: tuple[int, float]) -> tuple[float, int]:
    """Best first, ties by docnum: whoosh's result order."""
    return (-item[1], item[0])


def top_k(scores: dict[int, float], k: int) -> list[tuple[int, float]]:
    """The k best (docnum, score) pairs, best first, ties by docnum: whoosh's result order."""
    if k <= 0:
        return []
    if len(scores) > 4 * k:
        kth = heapq.nlargest(k, scores.values())[-1]
        items = [(d, sc) for d, sc in scores.items() if sc >= kth]
    else:
        items = list(scores.items())
    items.sort(key=_rank_key)
    return items[:k]


_BIT = tuple(1 << i for i in range(8))
# whoosh's field-length byte -> the length its scorer reads (kb.bm25's copy of the table)
_LENGTH_OF_BYTE = bm25._LENGTHS


def _ids(blob: bytes) -> array:
    out = array("I")
    out.frombytes(blob)
    return out


def mask_of(docs: Iterable[int], size: int) -> int:
    """A set of docnums as an int with bit n set for docnum n (counting is then & and
    bit_count, both in C)."""
    buf = bytearray((size >> 3) + 1)
    for d in docs:
        buf[d >> 3] |= _BIT[d & 7]
    return int.from_bytes(buf, "little")


# --------------------------------------------------------------------------------------------
# the CLI's way in: no store, no settings object


def search_data_dir(
    data_dir: Path,
    parsed: ParsedQuery,
    *,
    page: int = 1,
    per_page: int = 20,
    limits: SearchLimits | None = None,
) -> Page | None:
    """The page Store(data_dir).search would give, read from the search file alone, or None
    when that cannot be trusted or the query is one the file does not answer: no database or
    file yet, the file older than the database's newest revision (another process wrote and the
    index has not caught up), another store's or format's file. The caller then opens the
    store, which catches the index up (and writes the file again)."""
    db = Path(data_dir) / "perfkb.sqlite3"
    if not db.is_file():
        return None
    try:
        conn = sqlite3.connect(f"{db.resolve().as_uri()}?mode=ro", uri=True)
        try:
            conn.execute("BEGIN")
            (store_id,) = conn.execute("SELECT value FROM meta WHERE key = 'store_id'").fetchone()
            (rev,) = conn.execute("SELECT COALESCE(MAX(id), 0) FROM revisions").fetchone()
        finally:
            conn.close()
    except (sqlite3.Error, TypeError):
        return None
    sf = SearchFile.open(Path(data_dir) / "index" / FILE_NAME)
    if sf is None:
        return None
    try:
        if not sf.usable_for(store_id, int(rev)):
            return None
        page = max(1, int(page))
        per_page = max(1, min(100, int(per_page)))
        found = sf.search(parsed, page=page, per_page=per_page, limits=limits)
        return found if isinstance(found, Page) else None
    finally:
        sf.close()
