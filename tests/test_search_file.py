"""The search file (kb/search_file.py): written by every index write, read with the standard
library, and answering exactly as whoosh does. Compared with SearchIndex._search_whoosh (whoosh
scoring every match: the oracle) on the starter KB and a synthetic 1k KB, for the search
benchmark's 16 queries and the web tests' queries: same ids in the same order, the same score
for every match (not only the page's, to 1e-9), totals, facets and snippets. A missing, damaged
or stale file is never read: whoosh answers, and the next write makes the file again."""

from __future__ import annotations

import dataclasses
import random
from pathlib import Path

import pytest

from benchmarks.search import QUERIES
from benchmarks.synth_kb import real_entries, synthetic_docs
from kb.index import SearchIndex
from kb.index_docs import Stamp, doc_from_entry
from kb.search_file import FILE_NAME, OR_FALLBACK, SearchFile, search_data_dir
from kb.search_query import Budget, parse_query
from kb.settings import Settings
from kb.store import Store

# what tests/test_web_*.py and tests/test_store*.py search for, with filters and paging
WEB_QUERIES = (
    "shmdt",
    "shmdt platform:solaris",
    "platform:solaris",
    "revised semop",
    "pagination",
    "storm",
    "locked",
    "hostile",
    "zzqqxxnothing",
    "nothing-matches-this-at-all",
    "xss-entry alert",
    "tag:numa",
    "",
    "log file sync source:waits",
    "platform:linux tag:shm,numa",
    "x$ksmsp v$session",
    "redo-log 12.2 buffer_busy",
    "the of a",
)


# words whose analysis differs by field: stop words, one-letter words, dotted and $/# names,
# underscores, hyphens, digits, capitals, repeated words, operator words
ODD_WORDS = (
    "The shmdt",
    "a",
    "of the",
    "V$SESSION x$ksmsp",
    "oraus.msb.x",
    "buffer_busy waits",
    "shmdt-numa",
    "-numa",
    "12.2.0.1",
    "ORA-01403",
    "x#y kcbgtcr",
    "shmdt shmdt",
    "SHMDT Storm",
    "log AND file",
    "storms stormed storming",
    "_underscore_",
)


def _index(tmp: Path, docs) -> SearchIndex:
    ix = SearchIndex(tmp / "index", tmp / "index.lock")
    ix.rebuild(docs, Stamp(store_id="t", rev=len(docs)))
    return ix


def _file(ix: SearchIndex) -> SearchFile:
    found = ix._search_file(ix._current_searcher())
    assert found is not None, "the index write left no search file"
    return found


def _same_as_whoosh(ix: SearchIndex, queries, pages=(1, 2)) -> int:
    """Every query: the file's page (when it answers) is whoosh's, and every score of every
    match is whoosh's; returns how many queries the file answered."""
    found = _file(ix)
    searcher = ix._current_searcher()
    answered = 0
    for q in queries:
        parsed = parse_query(q)
        for page in pages:
            mine = found.search(parsed, page=page, per_page=10, limits=ix.limits)
            oracle = ix._search_whoosh(searcher, parsed, page=page, per_page=10)
            if mine == OR_FALLBACK:
                shortcut = ix._search_whoosh(searcher, parsed, page=page, per_page=10, or_only=True)
                assert shortcut == oracle, (q, page)
                continue
            if mine is None:
                continue
            answered += page == 1
            assert dataclasses.asdict(mine) == dataclasses.asdict(oracle), (q, page)
        text = parsed.text
        plain = found.plain_query(text) if text else False
        if plain is not False:
            scores = found._scores(plain, Budget(30, None))
            whoosh_q = ix._text_query(ix._parser, text)
            theirs = {d: s for s, d in searcher.search(whoosh_q, limit=None).top_n}
            assert scores.keys() == theirs.keys(), q
            assert all(abs(scores[d] - theirs[d]) <= 1e-9 for d in theirs), q
    return answered


@pytest.fixture(scope="module")
def starter(tmp_path_factory):
    ix = _index(tmp_path_factory.mktemp("starter"), [doc_from_entry(e) for e in real_entries()])
    yield ix
    ix.close()


@pytest.fixture(scope="module")
def synth_1k(tmp_path_factory):
    ix = _index(tmp_path_factory.mktemp("synth1k"), synthetic_docs(1000))
    yield ix
    ix.close()


def test_the_starter_kb_answers_as_whoosh_does(starter):
    answered = _same_as_whoosh(starter, QUERIES + WEB_QUERIES + ODD_WORDS)
    # the file answers the plain ones (the OR fallback of words no entry has together is
    # whoosh's): most of them
    assert answered >= len(QUERIES + WEB_QUERIES) // 2


def test_a_synthetic_1k_kb_answers_as_whoosh_does(synth_1k):
    answered = _same_as_whoosh(synth_1k, QUERIES + WEB_QUERIES + ODD_WORDS, pages=(1, 2, 7))
    assert answered >= len(QUERIES + WEB_QUERIES) // 2


def test_the_search_index_answers_from_the_file(synth_1k):
    """SearchIndex.search (the web app's and the store's) goes through the file for a plain
    query: it is opened, and its word cache fills."""
    synth_1k.drop_word_tables()
    synth_1k.search(parse_query("shmdt"))
    assert synth_1k._file is not None and synth_1k._file.cached_postings > 0


def test_several_segments_with_deletions_score_as_whoosh_does(tmp_path):
    """Each whoosh segment adds a document's postings in the order of its own matcher tree: a
    file that summed in one fixed order ranked ties differently (one ulp apart)."""
    docs = synthetic_docs(300)
    ix = _index(tmp_path, docs[:150])
    rng = random.Random(5)
    for start in range(150, 300, 50):
        replaced = [
            d.model_copy(update={"title": d.title + " v2"}) for d in rng.sample(docs[:start], 4)
        ]
        ix.apply(
            docs[start : start + 50] + replaced, [d.id for d in rng.sample(docs[:start], 3)], None
        )
        assert _same_as_whoosh(ix, QUERIES, pages=(1,)) > 0
    searcher = ix._current_searcher()
    assert len(searcher.leaf_searchers()) > 1 and searcher.reader().has_deletions()
    ix.close()


def test_a_file_of_another_commit_is_not_read(tmp_path):
    docs = synthetic_docs(120)
    ix = _index(tmp_path, docs[:100])
    path = ix.dir / FILE_NAME
    old = path.read_bytes()
    ix.apply(docs[100:], [], None)
    path.write_bytes(old)  # as if the write had stopped between its commit and the file
    ix.close()
    ix2 = SearchIndex(ix.dir, tmp_path / "index.lock")
    ix2._refresh_search_file = lambda searcher: None  # type: ignore[method-assign]
    assert ix2.open() is None
    assert ix2._search_file(ix2._current_searcher()) is None  # another commit's: not read
    ref = SearchIndex(ix.dir, tmp_path / "index.lock", fast=False)
    assert ref.open() is None
    for q in QUERIES[:6]:
        assert ix2.search(parse_query(q)) == ref.search(parse_query(q))
    # the next open writes it again
    ix3 = SearchIndex(ix.dir, tmp_path / "index.lock")
    assert ix3.open() is None
    assert ix3._search_file(ix3._current_searcher()) is not None
    for closing in (ix2, ix3, ref):
        closing.close()


def test_a_damaged_file_is_not_read(tmp_path):
    ix = _index(tmp_path, synthetic_docs(60))
    path = ix.dir / FILE_NAME
    ix.close()
    path.write_bytes(b"not an sqlite file at all" * 100)
    assert SearchFile.open(path) is None
    path.write_bytes(b"")
    assert SearchFile.open(path) is None
    assert SearchFile.open(tmp_path / "missing" / FILE_NAME) is None


def test_the_cli_reader_trusts_the_file_only_at_the_databases_newest_revision(tmp_path):
    """search_data_dir (what `perfkb search` reads without opening the store) answers what the
    store answers, and nothing once another process wrote to the database behind the index."""
    data = tmp_path / "kb"
    entries = list(real_entries())
    with Store(Settings(data_dir=data)) as store, store.bulk():
        for entry in entries[:20]:
            store.add(entry, author="t")
    with Store(Settings(data_dir=data)) as store:
        for q in ("shmdt", "sync", "platform:solaris", "", "zzqqxxnothing", "shmdt tag:numa"):
            mine = search_data_dir(data, parse_query(q), page=1, per_page=10)
            assert mine is not None, q
            assert dataclasses.asdict(mine) == store.search(q, per_page=10).model_dump(), q
        # whoosh's: a version filter, a phrase, words no entry has together (the OR fallback)
        for q in ("read version:12.2", '"log file" sync', "shmdt zzqqxxnothing"):
            assert search_data_dir(data, parse_query(q)) is None, q
    # a revision the index has not seen (another writer, the index not caught up yet)
    import sqlite3

    conn = sqlite3.connect(data / "perfkb.sqlite3")
    conn.execute(
        "INSERT INTO revisions (entry_id, rev, author, at, action, changed_fields, snapshot)"
        " SELECT entry_id, rev + 1000, author, at, action, changed_fields, snapshot"
        " FROM revisions LIMIT 1"
    )
    conn.commit()
    conn.close()
    assert search_data_dir(data, parse_query("shmdt")) is None
    # the store catches up (and writes the file again): trusted again
    with Store(Settings(data_dir=data)) as store:
        answer = store.search("storm", per_page=10).model_dump()
    again = search_data_dir(data, parse_query("storm"), per_page=10)
    assert again is not None and dataclasses.asdict(again) == answer
    assert answer["total"] >= 1
    (data / "index" / FILE_NAME).unlink()
    assert search_data_dir(data, parse_query("shmdt")) is None
    assert search_data_dir(tmp_path / "nothing-here", parse_query("shmdt")) is None


def test_an_edit_sequence_updates_the_file_in_place_and_scores_as_whoosh_does(tmp_path):
    """The file keeps what scores are made of (weights, length bytes, per-segment postings),
    so an edit updates it in place (the same file, not a rewrite) and every score is computed
    at query time: after single-entry adds, changes and deletes over several commits (new
    segments, deletions in old ones, whoosh's merges of the small ones) every answer and every
    score is still whoosh's."""
    docs = synthetic_docs(260)
    ix = _index(tmp_path, docs[:200])
    path = ix.dir / FILE_NAME
    inode = path.stat().st_ino
    rng = random.Random(11)
    live = {d.id: d for d in docs[:200]}
    steps = []
    for n, doc in enumerate(docs[200:212]):
        steps.append(("add", doc))
        if n % 2 == 0:
            steps.append(("change", live[rng.choice(sorted(live))]))
        if n % 3 == 0:
            steps.append(("delete", live[rng.choice(sorted(live))]))
    segment_counts = set()
    for rev, (what, doc) in enumerate(steps, start=1):
        stamp = Stamp(store_id="t", rev=200 + rev)
        if what == "add":
            ix.apply([doc], [], stamp)
            live[doc.id] = doc
        elif what == "change":
            changed = doc.model_copy(update={"title": doc.title + " storm shmdt", "keywords": []})
            ix.apply([changed], [], stamp)
            live[doc.id] = changed
        else:
            ix.apply([], [doc.id], stamp)
            del live[doc.id]
        assert path.stat().st_ino == inode, "an edit rewrote the whole file"
        segment_counts.add(len(ix._current_searcher().leaf_searchers()))
        if rev % 4 == 0 or rev == len(steps):
            assert _same_as_whoosh(ix, QUERIES + WEB_QUERIES[:6], pages=(1,)) > 0
    found = _file(ix)
    assert found.stamp["rev"] == 200 + len(steps)
    assert sorted(found.stored_ids(found.ids_in_order()).values()) == sorted(live)
    # several segments came and went (a merge happened: fewer segments than commits)
    assert max(segment_counts) > 1 and max(segment_counts) < len(steps)
    ix.close()


def test_a_file_opened_before_an_edit_answers_nothing_after_it(tmp_path):
    """A writer updates the file in place: an already open reader of the old commit sees that
    the file moved on and answers None (its caller asks whoosh), never a mix of the two."""
    docs = synthetic_docs(130)
    ix = _index(tmp_path, docs[:120])
    old = SearchFile.open(ix.dir / FILE_NAME)
    assert old is not None and old.search(parse_query("shmdt")) is not None
    ix.apply(docs[120:], [docs[0].id], Stamp(store_id="t", rev=130))
    assert old.search(parse_query("shmdt")) is None
    old.close()
    assert _same_as_whoosh(ix, QUERIES[:8], pages=(1,)) > 0
    ix.close()


def test_a_rebuilds_documents_are_the_ones_whoosh_stored(starter, synth_1k):
    """A rebuild writes the file's documents from what the bulk writer kept, not from the
    stored column read back: they must be whoosh's stored fields exactly (less the digest)."""
    for ix in (starter, synth_1k):
        found = _file(ix)
        reader = ix._current_searcher().reader()
        theirs = {
            d: {k: v for k, v in stored.items() if k != "digest"}
            for d, stored in reader.iter_docs()
        }
        assert found.stored(sorted(theirs)) == theirs
        assert found.stored_ids(sorted(theirs)) == {d: s["id"] for d, s in theirs.items()}


def test_an_edit_whose_segment_lacks_a_field_keeps_the_file(tmp_path):
    """A one-entry commit whose entry names no identifiers makes a whoosh segment with no
    length column for the identifier fields (whoosh reads every length there as 0): the file
    is still updated in place, and still answers as whoosh does."""
    docs = synthetic_docs(140)
    ix = _index(tmp_path, docs[:130])
    path = ix.dir / FILE_NAME
    inode = path.stat().st_ino
    bare = docs[130].model_copy(update={"identifiers": [], "title": "shmdt storm without names"})
    ix.apply([bare], [], Stamp(store_id="t", rev=131))
    ix.apply(docs[131:133], [], Stamp(store_id="t", rev=133))
    assert path.stat().st_ino == inode
    assert _file(ix).stamp["rev"] == 133
    assert _same_as_whoosh(ix, QUERIES + ("shmdt storm", "names"), pages=(1,)) > 0
    ix.close()


def test_a_file_a_writer_holds_answers_nothing_rather_than_failing(tmp_path):
    """A writer holding the file (another process's edit, longer than the reader's busy
    timeout) makes a search answer None, so whoosh answers it: never an error."""
    import sqlite3

    ix = _index(tmp_path, synthetic_docs(40))
    found = SearchFile.open(ix.dir / FILE_NAME)
    assert found is not None and found.search(parse_query("shmdt")) is not None
    found._conn.execute("PRAGMA busy_timeout = 50")
    writer = sqlite3.connect(ix.dir / FILE_NAME, isolation_level=None)
    writer.execute("BEGIN EXCLUSIVE")
    try:
        assert found.search(parse_query("shmdt")) is None
    finally:
        writer.execute("ROLLBACK")
        writer.close()
    assert found.search(parse_query("shmdt")) is not None
    found.close()
    ix.close()


def test_a_full_word_cache_drops_word_tables_before_answers(synth_1k):
    """With a budget the benchmark's queries overfill, every query's answer is still cached
    after they all ran (the word tables went first), and the pages stay whoosh's."""
    small = SearchIndex(synth_1k.dir, synth_1k._lock.path, postings_budget=3000)
    assert small.open() is None
    ref = SearchIndex(synth_1k.dir, synth_1k._lock.path, fast=False)
    assert ref.open() is None
    pages = {q: small.search(parse_query(q)).model_dump() for q in QUERIES}
    found = small._file
    assert found is not None
    answers = [k for k in found._cache if k[0] == "answer"]
    words = [k for k in found._cache if k[0] != "answer"]
    assert len(answers) == len(QUERIES)  # none dropped although the tables did not fit
    assert sum(len(found._cache[k][0]) + 1 for k in answers) < 3000
    assert found.cached_postings <= 3000 or not words
    for q in QUERIES:  # answered again from the cached answers: the same pages as whoosh's
        assert small.search(parse_query(q)).model_dump() == pages[q]
        assert pages[q] == ref.search(parse_query(q)).model_dump(), q
    small.close(), ref.close()


def test_a_page_becomes_the_api_model_field_for_field(synth_1k):
    """SearchPage.of reads the search's dataclasses by attribute: the same model the
    dataclasses.asdict route made, hits, snippet parts and facets included."""
    from kb.index_docs import SearchPage

    checked = 0
    for q in (*QUERIES, "", "shmdt platform:solaris", "zzqqxxnothing"):
        page = synth_1k.search_page(parse_query(q), per_page=7)
        got = SearchPage.of(page)
        assert got == SearchPage.model_validate(dataclasses.asdict(page)), q
        assert got.model_dump() == dataclasses.asdict(page), q
        checked += sum(1 for h in got.results if h.snippet)
    assert checked > 50


def test_a_rebuilds_file_holds_the_rows_the_segment_gives(tmp_path):
    """The rebuild writes the search file from the postings it still holds (scored fields and
    facets); written from whoosh's segment instead, the file has the very same rows."""
    import sqlite3

    from kb.index_fast import write_search_file

    ix = _index(tmp_path, synthetic_docs(300))
    searcher = ix._current_searcher()
    other = tmp_path / "from-segment"
    other.mkdir()
    assert write_search_file(searcher, other, "{}")

    def rows(path: Path) -> dict[str, list[tuple]]:
        conn = sqlite3.connect(path)
        try:
            return {
                t: conn.execute(f"SELECT * FROM {t} ORDER BY 1, 2, 3").fetchall()
                for t in ("postings", "lengths", "docs")
            }
        finally:
            conn.close()

    held, read = rows(ix.dir / FILE_NAME), rows(other / FILE_NAME)
    facets = [r for r in held["postings"] if r[1] in ("platform", "source", "product", "tag")]
    assert len(facets) > 10
    assert held == read
    ix.close()
