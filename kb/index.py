"""The full-text index: whoosh behind a small interface so the engine could be swapped.

The index is derived data. SQLite is the source of truth and `kb.store.Store` decides what goes
in here; this module only knows documents, a stamp (which SQLite revision the index reflects)
and how to search. whoosh allows one writer at a time, so every write happens under an
inter-process `fcntl.flock` on a lock file next to the index (IndexLock) and also asks whoosh
for its writer with a timeout; nothing is written asynchronously, so no write is lost.

Split by job: the documents and results in kb/index_docs.py, the lock in kb/index_lock.py, the
search file every write leaves beside the index and the one fast search that reads it in
kb/search_file.py (its writer, and the rest of the code that reads whoosh internals, in
kb/index_fast.py), the highlighted fragments in kb/index_snippets.py; this module is the facade
and whoosh's public API. whoosh answers what the search file does not (see kb/search_file.py)
and is the oracle the tests compare the file's answers with (`fast=False`).
"""

from __future__ import annotations

import json
import math
import os
import shutil
import sqlite3
from collections.abc import Iterable, Sequence
from contextlib import suppress
from functools import lru_cache
from itertools import islice
from pathlib import Path
from typing import Any

from whoosh import fields, index, qparser, query
from whoosh.analysis import LowercaseFilter, RegexTokenizer, StemmingAnalyzer
from whoosh.collectors import FilterCollector, TimeLimit
from whoosh.reading import SegmentReader

from kb.errors import IndexUnavailable
from kb.index_docs import IndexDoc, SearchPage, Stamp, query_keys
from kb.index_fast import (
    OPERATOR_WORDS,
    PLAIN_QUERY,
    Budget,
    BudgetCollector,
    BulkWriter,
    SearchState,
    binary_unions,
    budgeted,
    collector_off,
    index_key,
    literal_prefix,
    term_docs,
    write_search_file,
)
from kb.index_lock import IndexLock
from kb.index_part import KEEP_FIELDS, PART_MIN_DOCS, Part, split_at
from kb.index_snippets import Marker, hit
from kb.models import VersionRange
from kb.search_file import (
    EXACT_IDENTIFIER_BOOST,
    FIELD_BOOSTS,
    FILE_NAME,
    OR_FALLBACK,
    SearchFile,
)
from kb.search_file import ident_key as _ident_key
from kb.search_query import (
    FACETS,
    Page,
    ParsedQuery,
    QueryError,
    SearchLimits,
    empty_page,
    search_cancelled,
)

STAMP_FILE = "perfkb-stamp.json"
__all__ = ["EXACT_IDENTIFIER_BOOST", "FACETS", "FIELD_BOOSTS", "SearchIndex"]
# Search time grows with the number of segments, so keep it small: merge everything while the
# index is small (cheap), and merge segments of similar size in groups once it is large.
SMALL_INDEX_DOCS = 100
MERGE_FANOUT = 4
# How many postings the search file's per-word tables (kb/search_file.py) may hold in all before
# the least recently used are dropped; the benchmark's 16 queries use ~113k postings at 10k
# entries.
POSTINGS_BUDGET = 300_000
# How many tokens (and postings of fields held as postings) a rebuild holds in memory before
# handing them to whoosh's pool (which spills sorted runs to disk, at its old speed): 12 bytes a
# token in kb.index_fast._HeldTokens's arrays, ~145 MB at most, plus the commit's grouping of the
# largest field. The 10k benchmark's build holds ~3.4M tokens.
BULK_POSTINGS = 12_000_000


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
        bulk: bool = True,
        bulk_postings: int = BULK_POSTINGS,
        part_min_docs: int = PART_MIN_DOCS,
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
        # the tests compare the search file's answers with)
        self.fast = fast
        self._postings_budget = postings_budget
        # bulk=False rebuilds with whoosh's own add_document and commit (the reference the
        # tests compare kb.index_fast.BulkWriter's segment with)
        self.bulk = bulk
        self._bulk_postings = bulk_postings
        # a rebuild of this many documents or more is split between two processes
        # (kb/index_part.py)
        self.part_min_docs = part_min_docs
        self._state: SearchState | None = None  # what is derived from the current searcher
        # the search file of the current searcher's commit (None: none that matches it)
        self._file: SearchFile | None = None
        self._file_key: str | None = None
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
        self._refresh_search_file(searcher)
        return None

    def close(self) -> None:
        if self._searcher is not None:
            with suppress(Exception):
                self._searcher.close()
        self._searcher = None
        self._ix = None
        self._state = None
        self._drop_file()

    # -- the search file ----------------------------------------------------------------------

    def _drop_file(self) -> None:
        if self._file is not None:
            with suppress(Exception):
                self._file.close()
        self._file = None
        self._file_key = None

    def _search_file(self, searcher: Any) -> SearchFile | None:
        """The search file of `searcher`'s commit, or None when the file on disk is another
        commit's (a write since, or one that failed to write it): whoosh answers then."""
        key = index_key(searcher)
        if self._file_key != key:
            self._drop_file()
            found = SearchFile.open(self.dir / FILE_NAME, self._postings_budget)
            if found is not None and found.index_key != key:
                found.close()
                found = None
            self._file, self._file_key = found, key
        return self._file

    def _refresh_search_file(self, searcher: Any) -> None:
        """At open: write the search file if it is not this commit's (an index written before
        there were search files, or a write that stopped between its commit and the file).
        Under the index lock; nothing is lost if it cannot be written (whoosh answers)."""
        if self._search_file(searcher) is not None:
            return
        try:
            with self.lock():
                if self._ix.latest_generation() != searcher.reader().generation():
                    return  # another writer moved on: its own write leaves a file
                stamp = self.stamp()
                write_search_file(searcher, self.dir, stamp.model_dump_json() if stamp else "{}")
        except Exception:  # a read-only directory, the lock held for long: whoosh answers
            return
        self._file_key = None  # read it on the next search

    def _write_search_file(
        self,
        ix: Any,
        where: Path,
        stamp: Stamp | None,
        held: Any = None,
        stored: Any = None,
        held_segment: str | None = None,
        base: Path | None = None,
    ) -> None:
        searcher = ix.searcher()
        try:
            stamp_json = stamp.model_dump_json() if stamp else "{}"
            write_search_file(searcher, where, stamp_json, held, stored, held_segment, base)
        except (OSError, sqlite3.Error):
            # the index is written; a file that could not be (a full disk) is another commit's
            # and never read: whoosh answers until a later write or open makes it
            return
        finally:
            searcher.close()

    def stamp(self) -> Stamp | None:
        try:
            return Stamp.model_validate_json((self.dir / STAMP_FILE).read_text())
        except (OSError, ValueError):
            return None

    def _write_stamp(self, stamp: Stamp) -> None:
        _write_stamp(self.dir, stamp)

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
                writer = self._writer(self._ix)
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
                # the search file of the new commit, before the stamp (a crash in between
                # leaves a file whose stamp is older than the database: not read by the CLI)
                self._write_search_file(self._ix, self.dir, stamp)
            elif stamp is not None:
                self._write_search_file(self._ix, self.dir, stamp)
            if stamp is not None:
                self._write_stamp(stamp)

    def _writer(self, ix: index.Index) -> Any:
        """whoosh's writer; its lock timing out is whoosh's LockError, which callers outside
        this package should not have to know: it becomes IndexUnavailable (the write is in
        SQLite already; the next open or search catches the index up)."""
        try:
            return ix.writer(timeout=self._write_timeout)
        except index.LockError as exc:
            raise IndexUnavailable(
                f"the search index is locked by another writer ({exc})"
            ) from None

    def rebuild(self, docs: Iterable[IndexDoc], stamp: Stamp) -> int:
        """Recreate the index from scratch with `docs`; returns how many were written.

        The new index is written in a directory beside this one and renamed into place when
        complete, so a rebuild that fails (a bad document, a full disk, an interrupt) leaves
        the old index's files whole, and this process keeps searching the old index while the
        new one is written. The stamp goes first all the same (and comes back last, with the
        new index): an index whose rebuild did not finish is rebuilt at the next open."""
        import tempfile  # here: `perfkb search` starts without it (see the start-up benchmark)

        with self.lock():
            (self.dir / STAMP_FILE).unlink(missing_ok=True)
            parent = self.dir.parent
            parent.mkdir(parents=True, exist_ok=True)
            # under the lock, a leftover from an earlier rebuild is from one that died
            for stale in parent.glob(f".{self.dir.name}.*-build"):
                shutil.rmtree(stale, ignore_errors=True)
            new = Path(tempfile.mkdtemp(prefix=f".{self.dir.name}.", suffix="-build", dir=parent))
            try:
                count = self._write_new(new, docs, stamp)
                self.close()
                if self.dir.exists():
                    old = Path(
                        tempfile.mkdtemp(prefix=f".{self.dir.name}.", suffix="-build", dir=parent)
                    )
                    os.replace(self.dir, old / "index")
                    os.replace(new, self.dir)
                    shutil.rmtree(old, ignore_errors=True)
                else:
                    os.replace(new, self.dir)
            except BaseException:
                shutil.rmtree(new, ignore_errors=True)
                raise
            problem = self.open()
            if problem:
                raise IndexUnavailable(f"the rebuilt index does not open: {problem}")
            return count

    def _write_new(self, where: Path, docs: Iterable[IndexDoc], stamp: Stamp) -> int:
        """A complete index of `docs` in the empty directory `where`, stamped.

        A list of at least `part_min_docs` documents is written by two processes, half each,
        as two segments (kb/index_part.py: 0.59x the time at 10k on 2 cores, the same scores;
        exact ties may change places, as after any edit)."""
        ix = index.create_in(str(where), self._schema)
        writer = self._writer(ix)
        # BulkWriter writes the segment whoosh's add_document + commit would, in half (1k) to a
        # quarter (10k) of the CPU time
        bulk = BulkWriter(writer, self._bulk_postings) if self.bulk else None
        if bulk is not None:  # what the search file is made of, kept from the commit
            bulk.keep_fields = KEEP_FIELDS
        part: Part | None = None
        count = 0
        try:
            with collector_off():
                try:
                    if bulk is not None and isinstance(docs, Sequence):
                        split = split_at(len(docs), self.part_min_docs)
                        if split < len(docs):  # the second half to another process, first
                            rest = [_whoosh_fields(doc) for doc in docs[split:]]
                            part = Part(where / ".part", self._schema, rest, self._bulk_postings)
                            docs = docs[:split]
                    for doc in docs:
                        if bulk is not None:
                            bulk.add(_whoosh_fields(doc))
                        else:
                            writer.add_document(**_whoosh_fields(doc))
                        count += 1
                except BaseException:
                    (bulk or writer).cancel()
                    raise
                if part is not None:
                    count += len(part)
                    bulk.commit(lambda: part.finish(where))
                else:
                    (bulk or writer).commit()
        finally:
            if part is not None:
                part.close()
        if bulk is not None:
            base = part.rows if part is not None else None
            self._write_search_file(
                ix, where, stamp, bulk.kept, bulk.kept_stored, bulk.segment_id, base
            )
        else:
            self._write_search_file(ix, where, stamp)
        if part is not None:
            shutil.rmtree(part.where, ignore_errors=True)
        _write_stamp(where, stamp)
        return count

    def digests(self) -> dict[str, str]:
        """id -> digest of every document (for consistency checks)."""
        reader = self._current_searcher().reader()
        return {stored["id"]: stored.get("digest", "") for _, stored in reader.iter_docs()}

    # -- searching ----------------------------------------------------------------------------

    def similar(self, identifiers: Iterable[str], *, limit: int = 50) -> dict[str, float]:
        """Entries whose signature identifiers overlap the evidence's, as whoosh BM25 scores
        scaled to 0..1 by the best hit: the oracle of the compiled KB's `Matcher.similar`
        (kb.bm25), which an analysis uses instead."""
        terms = query_keys(identifiers)
        if not terms:
            return {}
        searcher = self._current_searcher()
        q = query.Or([query.Term("identifiers", t) for t in terms])
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

    def _state_for(self, searcher: Any) -> SearchState:
        """The caches derived from `searcher`: kept while it is the current searcher, a
        throwaway set for an older one (a search that was already running when another thread
        reopened the index must neither use nor fill the new generation's caches)."""
        state = self._state
        if state is None or state.searcher is not searcher:
            state = SearchState(searcher)
            if searcher is self._searcher:
                self._state = state
        return state

    def drop_word_tables(self) -> None:
        """Forget the search file's per-word tables (the benchmark's cold figure; memory)."""
        if self._file is not None:
            self._file.drop_cache()

    def _facet_docs(self, searcher: Any, field: str) -> dict[str, frozenset[int]]:
        """value -> documents with it, per facet field, cached until the index changes."""
        facet_sets = self._state_for(searcher).facet_sets
        if field not in facet_sets:
            table: dict[str, frozenset[int]] = {}
            for term in searcher.reader().lexicon(field):
                value = term.decode("utf-8") if isinstance(term, bytes) else term
                table[value] = term_docs(searcher, field, term) or frozenset(
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
        if not PLAIN_QUERY.fullmatch(text):
            return None
        parser = self._parser
        words = []
        for word in text.split(" "):
            if word.upper() in OPERATOR_WORDS:
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
        binary_unions(parsed)
        exact = [_ident_key(text)]
        exact += [_ident_key(p) for p in _quoted(text)]
        extra = [
            query.Term("identifiers", k, boost=EXACT_IDENTIFIER_BOOST) for k in dict.fromkeys(exact)
        ]
        extra = [t for t in extra if t.text]
        if not extra:
            return parsed
        return binary_unions(query.Or([parsed, *extra]))

    def search(self, parsed: ParsedQuery, *, page: int = 1, per_page: int = 20) -> SearchPage:
        """One page of results. Every query is bounded by `self.limits` (see SearchLimits):
        QueryError, which every surface shows as a message (400 on the API), when a query would
        cost more than they allow, so no anonymous request can hold a core for long.

        Answered from the search file of the current commit (kb/search_file.py, the same
        search `perfkb search` runs without opening the store); by whoosh when there is no such
        file or the query is one the file does not answer, and always with fast=False."""
        return SearchPage.of(self.search_page(parsed, page=page, per_page=per_page))

    def search_page(self, parsed: ParsedQuery, *, page: int = 1, per_page: int = 20) -> Page:
        """search, as the search's own dataclasses (kb.search_file.Page)."""
        self._budget().check()
        searcher = self._current_searcher()
        self._check_words(parsed.text.strip())
        if self.fast:
            found = self._search_file(searcher)
            if found is not None:
                answer = found.search(parsed, page=page, per_page=per_page, limits=self.limits)
                if isinstance(answer, Page):
                    return answer
                if answer == OR_FALLBACK:  # the file knows the AND matches nothing
                    return self._search_whoosh(
                        searcher, parsed, page=page, per_page=per_page, or_only=True
                    )
        return self._search_whoosh(searcher, parsed, page=page, per_page=per_page)

    def _check_words(self, text: str) -> None:
        self.limits.check_words(text)

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
                literal = len(text) if isinstance(leaf, query.Prefix) else literal_prefix(text)
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

    def _budget(self) -> Budget:
        return Budget(self.limits.time_budget, search_cancelled.get())

    def _timed_search(self, searcher: Any, q: Any, budget: Budget | None, **kw: Any) -> Any:
        """searcher.search(q, **kw), stopped with QueryError once over `budget`: checked before
        each leaf's matcher is built (where wildcards spend most of their time) and between
        matches."""
        allow = kw.pop("filter", None)
        collector = searcher.collector(**kw)
        if budget is not None:
            collector = BudgetCollector(collector, budget)
            q = budgeted(q, budget)
        if allow:  # as searcher.collector() does: filtering wraps last, so it sees docs first
            collector = FilterCollector(collector, allow)
        try:
            searcher.search_with_collector(q, collector)
        except TimeLimit:
            raise budget.error() from None  # type: ignore[union-attr]
        return collector.results()

    def _search_whoosh(
        self, searcher: Any, parsed: ParsedQuery, *, page: int, per_page: int, or_only: bool = False
    ) -> Page:
        """The straightforward path: whoosh scores every match (the reference for the tests,
        and the answer to what the search file does not answer). or_only: the caller knows no
        entry passing the filters has all the words, so only the OR of them is searched."""
        budget = self._budget()
        allowed = self._allowed(searcher, parsed)
        text = parsed.text.strip()
        if allowed is not None and not allowed:  # whoosh reads an empty filter as no filter
            return empty_page(parsed, page, per_page)
        if text:
            if not or_only:
                q = self._bounded(searcher, self._text_query(self._parser, text))
                results = self._timed_search(searcher, q, budget, filter=allowed, limit=None)
            if or_only or (results.is_empty() and len(text.split()) > 1):  # not all the words
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
        marker = Marker(q) if text else None
        hits = [
            hit(searcher.stored_fields(docnum), score, marker)
            for score, docnum in ranked[first : first + per_page]
        ]
        return Page(
            query=parsed.raw,
            total=len(matched),
            page=page,
            per_page=per_page,
            results=hits,
            facets=facets,
        )


def _write_stamp(index_dir: Path, stamp: Stamp) -> None:
    path = index_dir / STAMP_FILE
    tmp = path.with_name(f"{STAMP_FILE}.{os.getpid()}.tmp")
    tmp.write_text(stamp.model_dump_json())
    os.replace(tmp, path)


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
