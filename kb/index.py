"""The full-text index: whoosh behind a small interface so the engine could be swapped.

The index is derived data. SQLite is the source of truth and `kb.store.Store` decides what goes
in here; this module only knows documents, a stamp (which SQLite revision the index reflects)
and how to search. whoosh allows one writer at a time, so every write happens under an
inter-process `fcntl.flock` on a lock file next to the index (IndexLock) and also asks whoosh
for its writer with a timeout; nothing is written asynchronously, so no write is lost.
"""

from __future__ import annotations

import bisect
import errno
import fcntl
import hashlib
import heapq
import html
import json
import math
import os
import re
import shutil
import threading
import time
import uuid
from collections import OrderedDict
from collections.abc import Iterable, Iterator
from contextlib import contextmanager, suppress
from functools import lru_cache
from itertools import accumulate, islice
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field
from whoosh import fields, index, qparser, query
from whoosh.analysis import LowercaseFilter, RegexTokenizer, StemmingAnalyzer
from whoosh.codec.whoosh3 import LENGTHS_COLUMN, W3LeafMatcher, _lenfield
from whoosh.collectors import FilterCollector, TimeLimit, WrappingCollector
from whoosh.lang.porter import stem as porter_stem
from whoosh.matching import (
    FilterMatcher,
    IntersectionMatcher,
    NullMatcherClass,
    UnionMatcher,
    WrappingMatcher,
)
from whoosh.reading import SegmentReader
from whoosh.scoring import WeightLengthScorer
from whoosh.util import make_weighted_tree

from kb.errors import IndexUnavailable
from kb.models import Entry, VersionRange
from kb.search_query import (
    ParsedQuery,
    QueryError,
    SearchCancelled,
    SearchLimits,
    search_cancelled,
)
from kb.signatures import TextCondition, walk

# Bump when the schema or what goes into a document changes: a different number forces a rebuild.
INDEX_SCHEMA_VERSION = 3
STAMP_FILE = "perfkb-stamp.json"
FACETS = ("platform", "source", "product", "tag")

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
# Search time grows with the number of segments, so keep it small: merge everything while the
# index is small (cheap), and merge segments of similar size in groups once it is large.
SMALL_INDEX_DOCS = 100
MERGE_FANOUT = 4
SNIPPET_FIELDS = ("symptom", "root_cause", "fix", "commands", "title")
# How many postings the per-word tables may hold in all before the least recently used are
# dropped. Measured ~180 bytes a posting (score dict, docnum frozenset, bit mask), so ~55 MB; the
# benchmark's 16 queries use ~113k postings at 10k entries.
POSTINGS_BUDGET = 300_000


# --------------------------------------------------------------------------------------------
# documents and stamps


class IndexDoc(BaseModel):
    """What the index holds for one entry."""

    id: str
    title: str
    symptom: str = ""
    root_cause: str = ""
    fix: str = ""
    commands: str = ""
    identifiers: list[str] = Field(default_factory=list)
    platforms: list[str] = Field(default_factory=list)
    sources: list[str] = Field(default_factory=list)
    products: list[str] = Field(default_factory=list)
    tags: list[str] = Field(default_factory=list)
    versions: str = "[]"  # JSON list of VersionRange, for version: filtering
    digest: str = ""  # of the entry JSON, so `check` can tell a stale document


def entry_digest(entry: Entry) -> str:
    return hashlib.sha256(entry.model_dump_json(by_alias=True).encode()).hexdigest()[:32]


def entry_identifiers(entry: Entry) -> list[str]:
    """Signature keys (syscalls, functions, events) plus the literal texts signatures look for."""
    out = list(entry.searchable_identifiers())
    for sig in entry.signatures:
        for leaf in walk(sig.when):
            if isinstance(leaf, TextCondition) and leaf.text and leaf.text not in out:
                out.append(leaf.text)
    return out


def doc_from_entry(entry: Entry) -> IndexDoc:
    commands = "\n".join(f"{c.command}\n{c.why}" for c in entry.next_commands)
    products: list[str] = []
    for r in entry.affected_versions:
        if r.product.lower() not in products:
            products.append(r.product.lower())
    return IndexDoc(
        id=entry.id,
        title=entry.title,
        symptom=entry.symptom,
        root_cause=entry.root_cause,
        fix=entry.fix,
        commands=commands,
        identifiers=entry_identifiers(entry),
        platforms=list(entry.platforms),
        sources=entry.sources(),
        products=products,
        tags=list(entry.tags),
        versions=json.dumps([r.model_dump(mode="json") for r in entry.affected_versions]),
        digest=entry_digest(entry),
    )


class Stamp(BaseModel):
    """Which SQLite state the index reflects: every revision up to `rev` of store `store_id`."""

    store_id: str
    rev: int
    schema_version: int = INDEX_SCHEMA_VERSION
    build: str = Field(default_factory=lambda: uuid.uuid4().hex[:12])


# --------------------------------------------------------------------------------------------
# search results (kb.store re-exports these: they are part of the Store interface)


class SearchHit(BaseModel):
    id: str
    title: str
    score: float
    snippet_html: str  # highlighted fragment, already HTML-escaped except <mark>
    platforms: list[str] = Field(default_factory=list)
    sources: list[str] = Field(default_factory=list)
    tags: list[str] = Field(default_factory=list)
    products: list[str] = Field(default_factory=list)


class SearchPage(BaseModel):
    query: str
    total: int
    page: int
    per_page: int
    results: list[SearchHit] = Field(default_factory=list)
    facets: dict[str, dict[str, int]] = Field(default_factory=dict)


# --------------------------------------------------------------------------------------------
# locking


class IndexLock:
    """An exclusive inter-process lock (flock) on a file, re-entrant within one object."""

    def __init__(self, path: Path, timeout: float = 60.0) -> None:
        self.path = path
        self.timeout = timeout
        self._thread_lock = threading.RLock()
        self._depth = 0
        self._fd: int | None = None

    @contextmanager
    def hold(self) -> Iterator[None]:
        with self._thread_lock:
            if self._depth == 0:
                self._acquire()
            self._depth += 1
            try:
                yield
            finally:
                self._depth -= 1
                if self._depth == 0:
                    self._release()

    def _acquire(self) -> None:
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        deadline = time.monotonic() + self.timeout
        delay = 0.002
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except OSError as exc:
                if exc.errno not in (errno.EAGAIN, errno.EACCES, errno.EWOULDBLOCK):
                    os.close(fd)
                    raise
                if time.monotonic() > deadline:
                    os.close(fd)
                    raise IndexUnavailable(
                        f"the search index is locked by another process for more than "
                        f"{self.timeout:g} s ({self.path})"
                    ) from None
                time.sleep(delay)
                delay = min(delay * 2, 0.05)
        self._fd = fd

    def _release(self) -> None:
        if self._fd is not None:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None


# --------------------------------------------------------------------------------------------
# the whoosh implementation


def _schema() -> fields.Schema:
    prose = StemmingAnalyzer()
    # identifiers keep dots, $ and # inside a word: oraus.msb, x$ksmsp, v$session
    ident = RegexTokenizer(r"\w+(?:[.$#]\w+)*") | LowercaseFilter()
    return fields.Schema(
        id=fields.ID(stored=True, unique=True, sortable=True),
        title=fields.TEXT(analyzer=prose, stored=True),
        symptom=fields.TEXT(analyzer=prose, stored=True),
        root_cause=fields.TEXT(analyzer=prose, stored=True),
        fix=fields.TEXT(analyzer=prose, stored=True),
        commands=fields.TEXT(analyzer=prose, stored=True),
        keywords=fields.TEXT(analyzer=prose),  # id words and tags
        identifiers=fields.KEYWORD(lowercase=True, commas=True, scorable=True),  # exact names
        identifiers_text=fields.TEXT(analyzer=ident),  # the same names, word by word
        platform=fields.KEYWORD(lowercase=True, commas=True, stored=True),
        source=fields.KEYWORD(lowercase=True, commas=True, stored=True),
        product=fields.KEYWORD(lowercase=True, commas=True, stored=True),
        tag=fields.KEYWORD(lowercase=True, commas=True, stored=True),
        versions=fields.STORED(),
        digest=fields.STORED(),
    )


def _merge_policy(writer: Any, segments: list[Any]) -> list[Any]:
    """A whoosh merge policy: returns the segments to keep as they are, after adding the ones
    to merge to the writer (which writes them into its new segment)."""
    if len(segments) < 2 and not any(s.has_deletions() for s in segments):
        return segments
    total = sum(s.doc_count_all() for s in segments)
    if total <= SMALL_INDEX_DOCS:
        to_merge = list(segments)
    else:
        tiers: dict[int, list[Any]] = {}
        for seg in segments:
            tier = int(math.log(max(1, seg.doc_count_all()), MERGE_FANOUT))
            tiers.setdefault(tier, []).append(seg)
        full = [segs for _, segs in sorted(tiers.items()) if len(segs) >= MERGE_FANOUT]
        if not full:
            return segments
        to_merge = full[0]
    for seg in to_merge:
        reader = SegmentReader(writer.storage, writer.schema, seg)
        writer.add_reader(reader)
        reader.close()
    return [s for s in segments if s not in to_merge]


def _ident_key(text: str) -> str:
    """How an identifier is stored in the exact field: lowercase, single spaces, no commas."""
    return " ".join(text.replace(",", " ").lower().split())


def _ident_words(identifiers: list[str]) -> str:
    lines = []
    for ident in identifiers:
        lines.append(ident)
        split = ident.replace(".", " ").replace("$", " ").replace("#", " ").replace("_", " ")
        if split != ident:
            lines.append(split)
    return "\n".join(lines)


def _whoosh_fields(doc: IndexDoc) -> dict[str, Any]:
    return {
        "id": doc.id,
        "title": doc.title,
        "symptom": doc.symptom,
        "root_cause": doc.root_cause,
        "fix": doc.fix,
        "commands": doc.commands,
        "keywords": " ".join([doc.id.replace("-", " "), *doc.tags]),
        "identifiers": ",".join(k for k in (_ident_key(i) for i in doc.identifiers) if k),
        "identifiers_text": _ident_words(doc.identifiers),
        "platform": ",".join(doc.platforms),
        "source": ",".join(doc.sources),
        "product": ",".join(doc.products),
        "tag": ",".join(doc.tags),
        "versions": doc.versions,
        "digest": doc.digest,
    }


class SearchIndex:
    """add / update / delete / search / rebuild / doc_count / stamp over one index directory.

    Writes must happen inside `with index.lock():` (the methods take it themselves, and the lock
    is re-entrant, so a caller can hold it across reading SQLite and writing here).
    """

    def __init__(
        self,
        index_dir: Path,
        lock_path: Path,
        *,
        write_timeout: float = 60.0,
        fast: bool = True,
        postings_budget: int = POSTINGS_BUDGET,
        limits: SearchLimits | None = None,
    ) -> None:
        self.dir = Path(index_dir)
        self.limits = limits or SearchLimits()
        self._lock = IndexLock(Path(lock_path), timeout=write_timeout)
        self._write_timeout = write_timeout
        self._schema = _schema()
        self._ix: Any = None
        self._searcher: Any = None
        # fast=False answers every search with whoosh's own scoring of every match (the reference
        # the tests compare the in-memory evaluator with)
        self.fast = fast
        self._postings_budget = postings_budget
        self._state: _SearchState | None = None  # what is derived from the current searcher
        self._parser = self._make_parser(qparser.AndGroup)
        self._or_parser = self._make_parser(qparser.OrGroup.factory(0.9))

    # -- lifecycle ----------------------------------------------------------------------------

    def lock(self):
        return self._lock.hold()

    def open(self) -> str | None:
        """Open the index and probe it. Returns None when usable, else why not."""
        self.close()
        if not self.dir.is_dir():
            return "missing"
        try:
            ix = index.open_dir(str(self.dir))
            if set(ix.schema.names()) != set(self._schema.names()):
                return "built with a different schema"
            searcher = ix.searcher()
            searcher.doc_count()
            for _docnum, stored in searcher.reader().iter_docs():
                if "id" not in stored:
                    return "corrupt: a document without id"
                break
            searcher.search(query.Every(), limit=1)
        except index.EmptyIndexError:
            return "missing"
        except Exception as exc:  # whoosh raises many types on damaged files
            return f"corrupt: {type(exc).__name__}: {exc}"
        self._ix = ix
        self._searcher = searcher
        return None

    def close(self) -> None:
        if self._searcher is not None:
            with suppress(Exception):
                self._searcher.close()
        self._searcher = None
        self._ix = None
        self._state = None

    def stamp(self) -> Stamp | None:
        try:
            return Stamp.model_validate_json((self.dir / STAMP_FILE).read_text())
        except (OSError, ValueError):
            return None

    def _write_stamp(self, stamp: Stamp) -> None:
        path = self.dir / STAMP_FILE
        tmp = path.with_name(f"{STAMP_FILE}.{os.getpid()}.tmp")
        tmp.write_text(stamp.model_dump_json())
        os.replace(tmp, path)

    def doc_count(self) -> int:
        return self._current_searcher().doc_count()

    # -- writing ------------------------------------------------------------------------------

    def add(self, docs: Iterable[IndexDoc], stamp: Stamp | None = None) -> None:
        self.apply(docs, (), stamp)

    def update(self, docs: Iterable[IndexDoc], stamp: Stamp | None = None) -> None:
        self.apply(docs, (), stamp)

    def delete(self, ids: Iterable[str], stamp: Stamp | None = None) -> None:
        self.apply((), ids, stamp)

    def apply(
        self, upserts: Iterable[IndexDoc], deletes: Iterable[str], stamp: Stamp | None
    ) -> None:
        """One whoosh commit: add or replace `upserts`, remove `deletes`, then record `stamp`
        (after the commit, so a crash in between only makes the stamp older than the data)."""
        upserts, deletes = list(upserts), list(deletes)
        with self.lock():
            if self._ix is None:
                raise IndexUnavailable("the search index is not open")
            if upserts or deletes:
                writer = self._ix.writer(timeout=self._write_timeout)
                try:
                    for doc_id in deletes:
                        writer.delete_by_term("id", doc_id)
                    for doc in upserts:
                        writer.update_document(**_whoosh_fields(doc))
                except BaseException:
                    writer.cancel()
                    raise
                # Merging on every commit rewrites all small segments each time (quadratic over
                # many single-entry writes); merge only once enough segments have piled up.
                writer.commit(mergetype=_merge_policy)
            if stamp is not None:
                self._write_stamp(stamp)

    def rebuild(self, docs: Iterable[IndexDoc], stamp: Stamp) -> int:
        """Recreate the index from scratch with `docs`; returns how many were written."""
        with self.lock():
            self.close()
            (self.dir / STAMP_FILE).unlink(missing_ok=True)
            if self.dir.exists():
                shutil.rmtree(self.dir)
            self.dir.mkdir(parents=True)
            ix = index.create_in(str(self.dir), self._schema)
            writer = ix.writer(timeout=self._write_timeout)
            count = 0
            try:
                for doc in docs:
                    writer.add_document(**_whoosh_fields(doc))
                    count += 1
            except BaseException:
                writer.cancel()
                raise
            writer.commit()
            self._write_stamp(stamp)
            problem = self.open()
            if problem:
                raise IndexUnavailable(f"the rebuilt index does not open: {problem}")
            return count

    def digests(self) -> dict[str, str]:
        """id -> digest of every document (for consistency checks)."""
        reader = self._current_searcher().reader()
        return {stored["id"]: stored.get("digest", "") for _, stored in reader.iter_docs()}

    # -- searching ----------------------------------------------------------------------------

    def similar(self, identifiers: Iterable[str], *, limit: int = 50) -> dict[str, float]:
        """Entries whose signature identifiers overlap the evidence's, as whoosh BM25 scores
        scaled to 0..1 by the best hit: the matcher's free-text similarity term."""
        terms = sorted({k for k in (_ident_key(i) for i in identifiers) if k})[:500]
        if not terms:
            return {}
        searcher = self._current_searcher()
        q = query.Or([query.Term("identifiers", t) for t in terms])
        if self.fast:  # the per-word tables: the same scores as whoosh's, without its matchers
            scores, _ = self._match(searcher, q, None, None)
            top = [(searcher.stored_fields(d)["id"], sc) for d, sc in _top(scores, limit)]
        else:
            top = [(h["id"], h.score) for h in searcher.search(q, limit=limit)]
        best = max((sc for _, sc in top), default=0.0)
        if best <= 0:
            return {}
        return {entry_id: sc / best for entry_id, sc in top}

    def _make_parser(self, group: Any) -> qparser.MultifieldParser:
        parser = qparser.MultifieldParser(
            list(FIELD_BOOSTS), self._schema, fieldboosts=FIELD_BOOSTS, group=group
        )
        # Field names are ours, not the user's: 'enq: CF - contention' is text, and filters are
        # parsed by kb.search_query before we get here.
        for plugin in (qparser.FieldsPlugin, qparser.RangePlugin, qparser.BoostPlugin):
            parser.remove_plugin_class(plugin)
        return parser

    def _current_searcher(self) -> Any:
        if self._searcher is None:
            raise IndexUnavailable("the search index is not open")
        if self._ix.latest_generation() != self._searcher.reader().generation():
            # a new commit (ours or another process's); whoosh's own refresh() trips over
            # single-segment readers in this release, so open a fresh searcher
            old, self._searcher = self._searcher, self._ix.searcher()
            with suppress(Exception):
                old.close()
        return self._searcher

    def _state_for(self, searcher: Any) -> _SearchState:
        """The caches derived from `searcher`: kept while it is the current searcher, a
        throwaway set for an older one (a search that was already running when another thread
        reopened the index must neither use nor fill the new generation's caches)."""
        state = self._state
        if state is None or state.searcher is not searcher:
            state = _SearchState(searcher, self._postings_budget)
            if searcher is self._searcher:
                self._state = state
        return state

    def drop_word_tables(self) -> None:
        """Forget the per-word posting tables (the benchmark's cold figure; memory)."""
        if self._state is not None:
            self._state.postings.clear()

    def _facet_docs(self, searcher: Any, field: str) -> dict[str, frozenset[int]]:
        """value -> documents with it, per facet field, cached until the index changes."""
        facet_sets = self._state_for(searcher).facet_sets
        if field not in facet_sets:
            table: dict[str, frozenset[int]] = {}
            for term in searcher.reader().lexicon(field):
                value = term.decode("utf-8") if isinstance(term, bytes) else term
                table[value] = _term_docs(searcher, field, term) or frozenset(
                    searcher.docs_for_query(query.Term(field, value))
                )
            facet_sets[field] = {k: v for k, v in table.items() if v}
        return facet_sets[field]

    def _versions(self, searcher: Any) -> dict[int, str]:
        """docnum -> its affected ranges as stored (JSON), read once per index version."""
        state = self._state_for(searcher)
        if state.version_map is None:
            state.version_map = {
                docnum: stored.get("versions") or "[]"
                for docnum, stored in searcher.reader().iter_docs()
            }
        return state.version_map

    def _version_ok(self, searcher: Any, parsed: ParsedQuery) -> Any:
        """A predicate on docnums for the query's version: filters (None when there are none)."""
        version_filters = parsed.values("version")
        if not version_filters:
            return None
        # a bare version means the default product's (Oracle's); product: says otherwise
        products = frozenset(p for vals in parsed.values("product") for p in vals) or frozenset(
            {"oracle"}
        )
        wanted = tuple(tuple(vals) for vals in version_filters)
        vmap = self._versions(searcher)
        return lambda docnum: _affected_json(vmap.get(docnum, "[]"), wanted, products)

    @staticmethod
    def _facet_filters(parsed: ParsedQuery) -> list[tuple[str, list[str]]]:
        """(facet field, accepted values) per filter. The version filter is left out: it is
        applied to the matches afterwards (see _version_ok), since it must read each document's
        ranges and so runs on as few documents as possible."""
        out = []
        for flt in parsed.filters:
            if flt.key == "version":
                continue
            values = list(flt.values)
            if flt.key == "platform":
                values.append("any")  # an entry for any platform applies to this one too
            out.append((flt.key, values))
        return out

    def _allowed(self, searcher: Any, parsed: ParsedQuery) -> set[int] | None:
        """Documents that pass every facet filter (None: no facet filter given)."""
        allowed: set[int] | None = None
        for field, values in self._facet_filters(parsed):
            table = self._facet_docs(searcher, field)
            docs: set[int] = set()
            for value in values:
                docs |= table.get(value, frozenset())
            allowed = docs if allowed is None else allowed & docs
        return allowed

    def _plain_query(self, text: str) -> Any:
        """What the AND parser makes of plain words (letters, digits, _ . $ # -, no operator
        words), built directly: each word through each field's analyzer as the parser does,
        OR over the fields with their boosts, AND over the words, normalized. whoosh's
        tokenizing and plugin passes cost ~1 ms a query; tests check the two agree. None when
        the text is not plain: the parser handles it."""
        if not _PLAIN.fullmatch(text):
            return None
        parser = self._parser
        words = []
        for word in text.split(" "):
            if word.upper() in _OPERATOR_WORDS:
                return None
            fields_ = []
            for fieldname, boost in FIELD_BOOSTS.items():
                q = parser.term_query(
                    fieldname, word, parser.termclass, boost=boost, tokenize=True, removestops=True
                )
                if q is not None:
                    fields_.append(q)
            words.append(query.Or(fields_))
        return query.And(words).normalize()

    def _text_query(self, parser: Any, text: str) -> Any:
        parsed = self._plain_query(text) if parser is self._parser else None
        try:
            if parsed is None:
                parsed = parser.parse(text)
        except Exception as exc:  # whoosh's parser is forgiving; this is a last resort
            raise QueryError(f"cannot parse the query: {exc}") from None
        _binary_unions(parsed)
        exact = [_ident_key(text)]
        exact += [_ident_key(p) for p in _quoted(text)]
        extra = [
            query.Term("identifiers", k, boost=EXACT_IDENTIFIER_BOOST) for k in dict.fromkeys(exact)
        ]
        extra = [t for t in extra if t.text]
        if not extra:
            return parsed
        return _binary_unions(query.Or([parsed, *extra]))

    def search(self, parsed: ParsedQuery, *, page: int = 1, per_page: int = 20) -> SearchPage:
        """One page of results. Every query is bounded by `self.limits` (see SearchLimits):
        QueryError, which every surface shows as a message (400 on the API), when a query would
        cost more than they allow, so no anonymous request can hold a core for long."""
        budget = self._budget()
        budget.check()
        searcher = self._current_searcher()
        text = parsed.text.strip()
        self._check_words(text)
        if not self.fast:
            return self._search_whoosh(searcher, parsed, page=page, per_page=per_page)
        allowed = self._allowed(searcher, parsed)
        if allowed is not None and not allowed:
            return _empty_page(parsed, page, per_page)
        # The ranking, the total and the facets all come from the same matches: docnum -> whoosh's
        # score, and the same docnums as a bit mask, built from per-word posting tables kept in
        # memory for this index generation (see _Evaluator), so no posting is decoded per query.
        nbits = searcher.reader().doc_count_all()
        allowed_mask = self._allowed_mask(searcher, parsed)
        version_ok = self._version_ok(searcher, parsed)
        q: Any = None
        first = (page - 1) * per_page
        if text:
            q = self._bounded(searcher, self._text_query(self._parser, text))
            scores, mask = self._match(searcher, q, allowed, allowed_mask, budget)
            if not scores and len(text.split()) > 1:  # no entry has all the words
                q = self._bounded(searcher, self._text_query(self._or_parser, text))
                scores, mask = self._match(searcher, q, allowed, allowed_mask, budget)
            if version_ok is not None:
                scores = {d: sc for d, sc in scores.items() if version_ok(d)}
                mask = _mask(scores, nbits)
            top = _top(scores, first + per_page)[first:]
            total = len(scores)
        else:
            docs = self._ids_in_order(searcher)
            mask = self._live_mask(searcher)
            if allowed is not None and allowed_mask is not None:
                docs = [d for d in docs if d in allowed]
                mask &= allowed_mask
            if version_ok is not None:
                docs = [d for d in docs if version_ok(d)]
                mask = _mask(docs, nbits)
            top = [(d, 0.0) for d in docs[first : first + per_page]]
            total = len(docs)
        facets = {
            field: {
                value: n
                for value, vmask in sorted(self._facet_mask(searcher, field).items())
                if (n := (vmask & mask).bit_count())
            }
            for field in FACETS
        }
        marker = _Marker(q) if text else None
        hits = [_hit(searcher.stored_fields(docnum), score, marker) for docnum, score in top]
        return SearchPage(
            query=parsed.raw, total=total, page=page, per_page=per_page, results=hits, facets=facets
        )

    def _match(
        self,
        searcher: Any,
        q: Any,
        allowed: set[int] | None,
        allowed_mask: int | None,
        budget: _Budget | None = None,
    ) -> tuple[dict[int, float], int]:
        """(docnum -> score, bit mask of those docnums) of every document matching q and passing
        `allowed`: exactly the documents and scores whoosh's own search(q, limit=None) gives,
        computed from cached per-word tables; query shapes the evaluator does not mirror go to
        whoosh itself. Over `budget` it stops with QueryError."""
        try:
            scores, mask = _Evaluator(self, searcher, budget).run(q)
        except _Unsupported:
            results = self._timed_search(searcher, q, budget, filter=allowed, limit=None)
            scores = {docnum: score for score, docnum in results.top_n}
            return scores, _mask(scores, searcher.reader().doc_count_all())
        if allowed is not None and allowed_mask is not None:
            scores = {d: sc for d, sc in scores.items() if d in allowed}
            mask &= allowed_mask
        return scores, mask

    def _check_words(self, text: str) -> None:
        limit = self.limits.max_words
        if len(text.split()) > limit:
            raise QueryError(
                f"the search has {len(text.split())} words; at most {limit} are searched at "
                "once: keep the distinctive ones (an event, a function, an error code)"
            )

    def _bounded(self, searcher: Any, q: Any) -> Any:
        """q, after checking what its wildcards cost: whoosh scores every posting of every
        index word a wildcard stands for, in Python, so `*` or a one-letter prefix touches every
        entry. A bare `*` (whoosh's Every), a word with fewer than min_wildcard_prefix letters
        before its first * or ?, and wildcards standing for more than max_expansions index
        words in all are refused with a message saying what to change."""
        limits = self.limits
        reader = searcher.reader()
        expansions = 0
        for leaf in q.leaves():
            if isinstance(leaf, query.Every):
                raise QueryError(
                    "'*' alone matches every entry: leave the search empty to list them all, "
                    f"or put at least {limits.min_wildcard_prefix} letters before the *"
                )
            if not isinstance(leaf, query.MultiTerm):
                continue
            if isinstance(leaf, query.Prefix | query.Wildcard):
                text = leaf.text
                literal = len(text) if isinstance(leaf, query.Prefix) else _literal_prefix(text)
                if literal < limits.min_wildcard_prefix:
                    shown = text + "*" if isinstance(leaf, query.Prefix) else text
                    raise QueryError(
                        f"'{shown[:60]}': a wildcard needs at least "
                        f"{limits.min_wildcard_prefix} letters before the first * or ?"
                    )
            left = limits.max_expansions - expansions
            expansions += sum(1 for _ in islice(leaf._btexts(reader), left + 1))
            if expansions > limits.max_expansions:
                raise QueryError(
                    f"the wildcards in this search stand for more than {limits.max_expansions} "
                    "indexed words: use longer prefixes before * or ?, or fewer wildcards"
                )
        return q

    def _budget(self) -> _Budget:
        return _Budget(self.limits.time_budget, search_cancelled.get())

    def _timed_search(self, searcher: Any, q: Any, budget: _Budget | None, **kw: Any) -> Any:
        """searcher.search(q, **kw), stopped with QueryError once over `budget` (whoosh spends
        its time collecting matches: the check is per match)."""
        allow = kw.pop("filter", None)
        collector = searcher.collector(**kw)
        if budget is not None:
            collector = _BudgetCollector(collector, budget)
        if allow:  # as searcher.collector() does: filtering wraps last, so it sees docs first
            collector = FilterCollector(collector, allow)
        try:
            searcher.search_with_collector(q, collector)
        except TimeLimit:
            raise budget.error() from None  # type: ignore[union-attr]
        return collector.results()

    def _allowed_mask(self, searcher: Any, parsed: ParsedQuery) -> int | None:
        """_allowed as a bit mask."""
        allowed: int | None = None
        for field, values in self._facet_filters(parsed):
            table = self._facet_mask(searcher, field)
            docs = 0
            for value in values:
                docs |= table.get(value, 0)
            allowed = docs if allowed is None else allowed & docs
        return allowed

    def _live_mask(self, searcher: Any) -> int:
        state = self._state_for(searcher)
        if state.all_mask is None:
            reader = searcher.reader()
            state.all_mask = _mask(reader.all_doc_ids(), reader.doc_count_all())
        return state.all_mask

    def _ids_in_order(self, searcher: Any) -> list[int]:
        """Every live document, ordered by entry id (the listing order of an empty query)."""
        state = self._state_for(searcher)
        if state.id_order is None:
            reader = searcher.reader()
            try:
                ids = reader.column_reader("id")
                state.id_order = sorted(reader.all_doc_ids(), key=lambda d: ids[d])
            except NotImplementedError:  # an empty index's reader has no columns
                results = searcher.search(query.Every(), limit=None, sortedby="id")
                state.id_order = [docnum for _, docnum in results.top_n]
        return state.id_order

    def _facet_mask(self, searcher: Any, field: str) -> dict[str, int]:
        """value -> bit mask of the documents with it (bit n = docnum n), per index version."""
        facet_masks = self._state_for(searcher).facet_masks
        masks = facet_masks.get(field)
        if masks is None:
            size = searcher.reader().doc_count_all()
            masks = {
                value: _mask(docs, size)
                for value, docs in self._facet_docs(searcher, field).items()
            }
            facet_masks[field] = masks
        return masks

    def _search_whoosh(
        self, searcher: Any, parsed: ParsedQuery, *, page: int, per_page: int
    ) -> SearchPage:
        """The straightforward path: whoosh scores every match (the reference for the tests)."""
        budget = self._budget()
        allowed = self._allowed(searcher, parsed)
        text = parsed.text.strip()
        if allowed is not None and not allowed:  # whoosh reads an empty filter as no filter
            return _empty_page(parsed, page, per_page)
        if text:
            q = self._bounded(searcher, self._text_query(self._parser, text))
            results = self._timed_search(searcher, q, budget, filter=allowed, limit=None)
            if results.is_empty() and len(text.split()) > 1:  # no entry has all the words
                q = self._bounded(searcher, self._text_query(self._or_parser, text))
                results = self._timed_search(searcher, q, budget, filter=allowed, limit=None)
        else:
            q = query.Every()
            results = searcher.search(q, filter=allowed, limit=None, sortedby="id")
        ranked = [(score if text else 0.0, docnum) for score, docnum in results.top_n]
        version_ok = self._version_ok(searcher, parsed)
        if version_ok is not None:
            ranked = [(score, docnum) for score, docnum in ranked if version_ok(docnum)]
        matched = {docnum for _, docnum in ranked}
        facets = {
            field: {
                value: n
                for value, docs in sorted(self._facet_docs(searcher, field).items())
                if (n := len(docs & matched))
            }
            for field in FACETS
        }
        first = (page - 1) * per_page
        marker = _Marker(q) if text else None
        hits = [
            _hit(searcher.stored_fields(docnum), score, marker)
            for score, docnum in ranked[first : first + per_page]
        ]
        return SearchPage(
            query=parsed.raw,
            total=len(matched),
            page=page,
            per_page=per_page,
            results=hits,
            facets=facets,
        )


def _empty_page(parsed: ParsedQuery, page: int, per_page: int) -> SearchPage:
    return SearchPage(
        query=parsed.raw, total=0, page=page, per_page=per_page, facets={f: {} for f in FACETS}
    )


def _top(scores: dict[int, float], k: int) -> list[tuple[int, float]]:
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


def _rank_key(item: tuple[int, float]) -> tuple[float, int]:
    return (-item[1], item[0])


_BIT = tuple(1 << i for i in range(8))


def _mask(docs: Iterable[int], size: int) -> int:
    """A set of docnums as an int with bit n set for docnum n (counting is then & and
    bit_count, both in C)."""
    buf = bytearray((size >> 3) + 1)
    for d in docs:
        buf[d >> 3] |= _BIT[d & 7]
    return int.from_bytes(buf, "little")


# --------------------------------------------------------------------------------------------
# the in-memory evaluator


class _Unsupported(Exception):
    """A query shape the evaluator does not mirror exactly; whoosh answers it instead."""


class _SearchState:
    """Everything derived from one searcher (one index generation), dropped with it."""

    def __init__(self, searcher: Any, budget: int) -> None:
        self.searcher = searcher
        self.postings = _PostingsCache(budget)  # per-word tables
        self.lengths: dict[Any, bytes | None] = {}  # (segment, field) -> field-length bytes
        self.facet_sets: dict[str, dict[str, frozenset[int]]] = {}
        self.facet_masks: dict[str, dict[str, int]] = {}
        self.version_map: dict[int, str] | None = None
        self.id_order: list[int] | None = None
        self.all_mask: int | None = None


class _Table:
    """The matches of a (sub)query in one segment: segment docnum -> whoosh's score, whoosh's size
    estimate for it, the class of the matcher whoosh would build for it (see _tree), and (made
    when first needed) the docnums as a frozenset and as a bit mask."""

    __slots__ = ("scores", "est", "nbits", "kind", "_keys", "_mask")

    def __init__(
        self,
        scores: dict[int, float],
        est: int,
        nbits: int,
        kind: type,
        keys: frozenset[int] | None = None,
        mask: int | None = None,
    ) -> None:
        self.scores, self.est, self.nbits, self.kind = scores, est, nbits, kind
        self._keys, self._mask = keys, mask

    @property
    def keys(self) -> frozenset[int]:
        if self._keys is None:
            self._keys = frozenset(self.scores)
        return self._keys

    @property
    def mask(self) -> int:
        if self._mask is None:
            self._mask = _mask(self.scores, self.nbits)
        return self._mask

    def complete(self) -> _Table:
        """Make keys and mask now (before the table is shared through the cache)."""
        _ = self.keys, self.mask
        return self


class _PostingsCache:
    """(segment, term or per-word group) -> _Table, for one index generation; the least recently
    used are dropped first once the tables hold more than `budget` postings in all."""

    def __init__(self, budget: int) -> None:
        self.budget = budget
        self._items: OrderedDict[Any, _Table] = OrderedDict()
        self._size = 0
        self._lock = threading.Lock()

    def get(self, key: Any) -> _Table | None:
        with self._lock:
            item = self._items.get(key)
            if item is not None:
                self._items.move_to_end(key)
            return item

    def put(self, key: Any, item: _Table) -> None:
        with self._lock:
            old = self._items.pop(key, None)
            if old is not None:
                self._size -= len(old.scores)
            self._items[key] = item
            self._size += len(item.scores)
            while self._size > self.budget and len(self._items) > 1:
                _, dropped = self._items.popitem(last=False)
                self._size -= len(dropped.scores)

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
            self._size = 0

    @property
    def postings(self) -> int:
        return self._size

    def __len__(self) -> int:
        return len(self._items)


class _Evaluator:
    """Evaluates the And/Or/Term trees our parsers produce the way whoosh's matchers do, over
    posting tables in memory instead of decoding postings in Python for every query.

    For each segment whoosh builds the same huffman-like tree of Union/Intersection matchers
    (weighted by its size estimates), a union scores a document with the sum of its children
    that contain it, an intersection with the sum of both, a boost multiplies; float addition is
    commutative, so following the same tree gives bit-identical scores. A term's table is
    (segment docnum -> the score whoosh's scorer gives that posting); the OR of one word over the
    fields (what MultifieldParser makes of each word: Terms on distinct fields) is kept as one
    table. An AND first intersects its children's docnum sets (in C), then sums scores along the
    tree for those documents only. Anything else (phrases, wildcards, NOT, an Or with a
    coordination scale, a custom weighting) raises _Unsupported: whoosh answers those."""

    def __init__(self, owner: SearchIndex, searcher: Any, budget: _Budget | None = None) -> None:
        self.budget = budget
        state = owner._state_for(searcher)
        self.cache = state.postings
        self.schema = searcher.schema
        self.weighting = searcher.weighting
        if self.weighting.use_final:
            raise _Unsupported
        self.segments = searcher.leaf_searchers()
        self.lengths = state.lengths

    def run(self, q: Any) -> tuple[dict[int, float], int]:
        """(top-level docnum -> score, bit mask of those docnums) of every match of q."""
        if len(self.segments) == 1 and self.segments[0][1] == 0:
            table = self._node(0, self.segments[0][0], q)
            return table.scores, table.mask
        scores: dict[int, float] = {}
        mask = 0
        for n, (sub, offset) in enumerate(self.segments):
            table = self._node(n, sub, q)
            scores.update((d + offset, sc) for d, sc in table.scores.items())
            mask |= table.mask << offset
        return scores, mask

    def _node(self, seg: int, sub: Any, q: Any) -> _Table:
        cls = type(q)
        if cls is query.Term:
            key = (seg, q.fieldname, q.text, q.boost)
            item = self.cache.get(key)
            if item is None:
                if self.budget is not None:
                    self.budget.check()
                item = self._term(sub, q).complete()
                self.cache.put(key, item)
            return item
        if cls is not query.Or and cls is not query.And:
            raise _Unsupported
        subs = q.subqueries
        if not subs:
            raise _Unsupported
        if cls is query.Or and (
            q.minmatch or q.scale or q.matcher_type != query.Or.DEFAULT_MATCHER
        ):
            raise _Unsupported
        if len(subs) == 1:  # whoosh uses the child's matcher as it is (no boost)
            return self._node(seg, sub, subs[0])
        group = None
        # one word over several fields (its text may differ per field: stemmed or not)
        one_word = all(type(c) is query.Term for c in subs) and len(
            {c.fieldname for c in subs}
        ) == len(subs)
        if cls is query.Or and one_word:
            group = (seg, tuple((c.fieldname, c.text, c.boost) for c in subs), q.boost)
            item = self.cache.get(group)
            if item is not None:
                return item
        if group is not None:
            children = [self._term(sub, c) for c in subs]  # not cached one by one
        else:
            children = [self._node(seg, sub, c) for c in subs]
        nbits = children[0].nbits
        if cls is query.Or:
            est = min(sum(c.est for c in children), sub.reader().doc_count())
            scores = _tree(UnionMatcher, _union, [(c.est, c) for c in children])
            mask: int | None = None  # made from the scores when needed, unless it is cheap now
            if all(c._mask is not None for c in children):
                mask = 0
                for c in children:
                    mask |= c.mask
            keys = None
            kind: type = UnionMatcher
        else:
            est = min(c.est for c in children)
            ordered = sorted(children, key=lambda c: len(c.scores))
            keys = ordered[0].keys
            mask = ordered[0].mask
            for c in ordered[1:]:
                keys &= c.keys
                mask &= c.mask

            def both(a: dict[int, float], b: dict[int, float]) -> dict[int, float]:
                return {d: a[d] + b[d] for d in keys}

            scores = _tree(IntersectionMatcher, both, [(0 - c.est, c) for c in children])
            kind = IntersectionMatcher
        if q.boost != 1.0:
            boost = q.boost
            scores = {d: sc * boost for d, sc in scores.items()}
            kind = WrappingMatcher
        item = _Table(scores, est, nbits, kind, keys, mask)
        if group is not None:
            self.cache.put(group, item.complete())
        return item

    def _lengths(self, sub: Any, fieldname: str) -> bytes | None:
        """The segment's field-length bytes (one per docnum), read in one go, or None."""
        key = (id(sub), fieldname)
        if key not in self.lengths:
            try:
                col = sub.reader()._perdoc._cached_reader(_lenfield(fieldname), LENGTHS_COLUMN)
                data = bytes(col._dbfile.get(col._basepos, col._count)) if col else None
                ok = data is not None and col._fixedlen == 1 and len(data) == col._count
                # docnums past the column's end read as its default, 0
                pad = bytes(max(0, sub.reader().doc_count_all() - len(data or b"")))
                self.lengths[key] = data + pad if ok and data is not None else None
            except Exception:  # another codec or whoosh version: drain posting by posting
                self.lengths[key] = None
        return self.lengths[key]

    def _term(self, sub: Any, q: Any) -> _Table:
        """One term's postings in one segment as docnum -> score (boost applied), and whoosh's
        size estimate (its document frequency)."""
        if q.minquality:
            raise _Unsupported
        reader = sub.reader()
        nbits = reader.doc_count_all()
        fieldname = q.fieldname
        if fieldname not in self.schema:
            return _Table({}, 0, nbits, NullMatcherClass)
        try:
            text = self.schema[fieldname].to_bytes(q.text)
        except ValueError:
            return _Table({}, 0, nbits, NullMatcherClass)
        est = reader.doc_frequency(fieldname, text)
        if (fieldname, text) not in reader:
            return _Table({}, est, nbits, NullMatcherClass)
        m = sub.postings(fieldname, text, weighting=self.weighting)
        kind: type = type(m)
        boost = q.boost
        if boost != 1.0:
            kind = WrappingMatcher  # whoosh wraps the posting list to multiply its scores
        scores = _drain_blocks(m, self._lengths(sub, fieldname), boost)
        if scores is None:
            scores = _drain(m)
            if boost != 1.0:
                scores = {d: sc * boost for d, sc in scores.items()}
        return _Table(scores, est, nbits, kind)


class _Budget:
    """What one search may still spend: until a monotonic deadline, and only while whoever
    asked still waits (the event kb.search_query.search_cancelled carries, when set)."""

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


class _BudgetCollector(WrappingCollector):
    """Raises whoosh's TimeLimit once the budget is spent, checked between matches (inside
    any FilterCollector, which iterates its child's matches itself). whoosh's
    own TimeLimitCollector starts a timer thread per search (and SIGALRM, which only the main
    thread may use); a clock read per match costs nothing by comparison."""

    def __init__(self, child: Any, budget: _Budget) -> None:
        super().__init__(child)
        self.budget = budget

    def matches(self) -> Iterator[int]:
        over = self.budget.over
        for sub_docnum in self.child.matches():
            if over():
                raise TimeLimit
            yield sub_docnum


def _literal_prefix(text: str) -> int:
    """How many characters of a whoosh wildcard pattern come before its first * or ?."""
    cut = [i for i in (text.find("*"), text.find("?")) if i >= 0]
    return min(cut) if cut else len(text)


def _drain_blocks(m: Any, lengths: bytes | None, boost: float) -> dict[int, float] | None:
    """_drain for whoosh's own on-disk posting lists, a block at a time: a BM25F score depends
    only on the posting's weight and the document's field-length byte, so each distinct pair is
    scored once, by whoosh's scorer (times the term's boost), and reused. A segment with
    deletions wraps the list in a FilterMatcher that skips deleted documents: those are dropped
    afterwards. None (nothing read) when the matcher or scorer is not the kind this knows."""
    deleted: Any = ()
    if type(m) is FilterMatcher and m._exclude and m.boost == 1.0:
        m, deleted = m.child, m._ids
    scorer = getattr(m, "scorer", None)
    if (
        lengths is None
        or type(m) is not W3LeafMatcher
        or not isinstance(scorer, WeightLengthScorer)
        or type(scorer).score is not WeightLengthScorer.score
    ):
        return None
    score, dfl = scorer._score, scorer.dfl
    memo: dict[tuple[float, int], float] = {}
    get, length = memo.get, lengths.__getitem__
    out: dict[int, float] = {}
    while m.is_active():
        if m._ids is None:  # what _read_ids does, with the delta decoding in C
            if m._data is None:
                m._read_data()
            m._ids = m._data[0] if m._byteids else tuple(accumulate(m._data[0]))
        if m._weights is None:
            m._read_weights()
        start = m._i
        ids, weights = (m._ids[start:], m._weights[start:]) if start else (m._ids, m._weights)
        keys = list(zip(weights, map(length, ids), strict=True))
        scores = list(map(get, keys))
        if None in scores:
            for i, sc in enumerate(scores):
                if sc is None:
                    key = keys[i]
                    sc = get(key)
                    if sc is None:
                        sc = score(key[0], dfl(ids[i]))
                        if boost != 1.0:
                            sc = sc * boost  # as whoosh's WrappingMatcher does, per posting
                        memo[key] = sc
                    scores[i] = sc
        out.update(zip(ids, scores, strict=True))
        m._i = m._blocklength
        m._next_block()
    for d in deleted:
        out.pop(d, None)
    return out


def _term_docs(searcher: Any, field: str, term: bytes) -> frozenset[int] | None:
    """The live documents with `term` in `field`, read a block at a time (no scoring), or None
    when a posting list is not whoosh's own on-disk kind (the caller asks whoosh instead)."""
    out: set[int] = set()
    for sub, offset in searcher.leaf_searchers():
        reader = sub.reader()
        if (field, term) not in reader:
            continue
        m = reader.postings(field, term)
        deleted: Any = ()
        if type(m) is FilterMatcher and m._exclude:
            m, deleted = m.child, m._ids
        if type(m) is not W3LeafMatcher:
            return None
        docs: set[int] = set()
        while m.is_active():
            if m._ids is None:
                if m._data is None:
                    m._read_data()
                m._ids = m._data[0] if m._byteids else tuple(accumulate(m._data[0]))
            docs.update(m._ids[m._i :])
            m._i = m._blocklength
            m._next_block()
        docs.difference_update(deleted)
        out.update((d + offset for d in docs) if offset else docs)
    return frozenset(out)


def _drain(m: Any) -> dict[int, float]:
    out: dict[int, float] = {}
    while m.is_active():
        out[m.id()] = m.score()
        m.next()
    return out


def _tree(joined: type, fn: Any, items: list[tuple[int, _Table]]) -> dict[int, float]:
    """Combine the children's scores along the tree whoosh.util.make_weighted_tree builds for
    their matchers. Its order depends on comparing (weight, matcher) tuples, and at equal weights
    on the matchers' own comparisons, which depend on their classes (a WrappingMatcher sorts
    before a FilterMatcher, its subclass, and never-less otherwise), so stand-ins of the same
    classes go through whoosh's own function."""

    def join(a: Any, b: Any) -> Any:
        return _stand_in(joined, fn(a.perfkb_scores, b.perfkb_scores))

    root = make_weighted_tree(join, [(w, _stand_in(t.kind, t.scores)) for w, t in items])
    return root.perfkb_scores


def _stand_in(kind: type, scores: dict[int, float]) -> Any:
    obj = kind.__new__(kind)  # never initialised or used as a matcher: compared, and carries scores
    obj.perfkb_scores = scores
    return obj


def _union(a: dict[int, float], b: dict[int, float]) -> dict[int, float]:
    if not b or not a:  # tables are never changed in place, so one can stand for the union
        return a or b
    out = a | b
    for d in a.keys() & b.keys():  # only documents in both need a Python step
        out[d] = a[d] + b[d]
    return out


# plain text for SearchIndex._plain_query: words of these characters separated by single spaces
_PLAIN = re.compile(r"[\w.$#-]+(?: [\w.$#-]+)*", re.ASCII)
_OPERATOR_WORDS = frozenset({"AND", "OR", "NOT", "ANDNOT", "ANDMAYBE", "REQUIRE"})


def _binary_unions(q: Any) -> Any:
    """On indexes under 5,000 documents whoosh answers an OR of 3+ terms with an array matcher
    that zeroes a 2,048-slot array in Python for every segment, which made each search cost
    about 1 ms per segment; the plain union matcher is cheaper at our sizes."""
    if isinstance(q, query.Or):
        q.matcher_type = query.Or.DEFAULT_MATCHER
    for child in q.children():
        _binary_unions(child)
    return q


@lru_cache(maxsize=65536)
def _affected_json(
    versions_json: str, wanted: tuple[tuple[str, ...], ...], products: frozenset[str]
) -> bool:
    """Does an entry with these stored ranges pass every version filter (each a tuple of
    alternatives)? Cached: entries often share ranges and queries repeat."""
    ranges = [
        r
        for r in (VersionRange.model_validate(d) for d in json.loads(versions_json))
        if r.product.lower() in products
    ]
    return all(_affected(ranges, list(alternatives)) for alternatives in wanted)


def _affected(ranges: list[VersionRange], versions: list[str]) -> bool:
    """Entries without version ranges are not version-specific, so every version keeps them."""
    if not ranges:
        return True
    return any(r.verdict(v)[0] for r in ranges for v in versions)


def _quoted(text: str) -> list[str]:
    out = []
    for quote in ('"', "'"):
        parts = text.split(quote)
        out += [p for p in parts[1:-1:2] if p.strip()]
    return out


def _split(value: str | None) -> list[str]:
    return [v for v in (value or "").split(",") if v]


class _Marker:
    """Builds the highlighted fragment of a hit: the ~240-character window of a stored field
    holding most of the query's words, HTML-escaped, hits in <mark>. whoosh's highlighter
    re-analyses every field of every hit and cost more than the search itself."""

    WIDTH = 240
    BEFORE = 50

    def __init__(self, q: Any) -> None:
        self.stems: set[str] = set()
        self.words: set[str] = set()
        for field, term in q.iter_all_terms():
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

    def fragment(self, text: str) -> str | None:
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
        pieces = ["… " if lo else ""]
        pos = lo
        for s, e in spans:
            if s < lo or e > hi:
                continue
            pieces.append(html.escape(text[pos:s], quote=False))
            pieces.append("<mark>" + html.escape(text[s:e], quote=False) + "</mark>")
            pos = e
        pieces.append(html.escape(text[pos:hi], quote=False))
        pieces.append(" …" if hi < len(text) else "")
        return "".join(pieces).replace("\n", " ")


_WORD = re.compile(r"\w+(?:[.$#]\w+)*")
_WORD_SPLIT = re.compile(rf"({_WORD.pattern})")


@lru_cache(maxsize=50_000)
def _stem(word: str) -> str:
    return porter_stem(word)


def _hit(stored: dict[str, Any], score: float, marker: _Marker | None) -> SearchHit:
    snippet = None
    if marker is not None:
        for field in SNIPPET_FIELDS:
            snippet = marker.fragment(stored.get(field, ""))
            if snippet:
                break
    if not snippet:
        symptom = " ".join(stored.get("symptom", "").split())
        cut = symptom[:240].rsplit(" ", 1)[0] + " …" if len(symptom) > 240 else symptom
        snippet = html.escape(cut, quote=False)
    return SearchHit(
        id=stored["id"],
        title=stored.get("title", stored["id"]),
        score=round(float(score), 4),
        snippet_html=snippet,
        platforms=_split(stored.get("platform")),
        sources=_split(stored.get("source")),
        tags=_split(stored.get("tag")),
        products=_split(stored.get("product")),
    )
