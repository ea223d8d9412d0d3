"""The bulk rebuild (kb.index_fast.BulkWriter) writes the very segment whoosh's own add_document
and commit write: every file inside the compound segment is compared byte for byte (postings,
term table, length columns, stored fields, the id column), over the real entries, synthetic
entries, and documents made to hit the analysis chain's corners."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from benchmarks.synth_kb import synthetic_docs
from kb.index import SearchIndex
from kb.index_docs import IndexDoc, Stamp
from kb.index_fast import _doc_field_lengths, _findall
from kb.search_query import parse_query

STAMP = Stamp(store_id="test", rev=1, build="test")


def _segment_files(ix: SearchIndex) -> dict[str, bytes]:
    """name -> bytes of each file in the index's single compound segment, with the segment's
    random id taken out of the names (whoosh names a segment at random; nothing else differs)."""
    reader = ix._searcher.reader()
    segment = reader.segment()
    storage = segment.open_compound_file(ix._ix.storage)
    out = {}
    for name in storage.list():
        f = storage.open_file(name)
        out[name.replace(segment.segid, "SEG")] = f.read()
        f.close()
    storage.close()
    return out


def _build(tmp: Path, docs: list[IndexDoc], *, bulk: bool, **kw) -> SearchIndex:
    where = tmp / ("bulk" if bulk else "whoosh")
    where.mkdir(parents=True, exist_ok=True)
    ix = SearchIndex(where / "index", where / "index.lock", bulk=bulk, **kw)
    assert ix.rebuild(docs, STAMP) == len(docs)
    return ix


def _assert_same_segment(tmp: Path, docs: list[IndexDoc], **kw) -> dict[str, bytes]:
    ref = _build(tmp, docs, bulk=False)
    fast = _build(tmp, docs, bulk=True, **kw)
    try:
        want, got = _segment_files(ref), _segment_files(fast)
        assert sorted(got) == sorted(want)
        for name, data in want.items():
            assert got[name] == data, f"{name} differs"
        return want
    finally:
        ref.close()
        fast.close()


def test_real_and_synthetic_entries_give_the_same_segment(tmp_path):
    files = _assert_same_segment(tmp_path, synthetic_docs(400))
    # 400 documents share many words: posting lists span several 128-posting blocks
    assert len(files[next(n for n in files if n.endswith(".pst"))]) > 1_000_000


def _odd_docs() -> list[IndexDoc]:
    prose = [
        "",  # an empty field: no postings, no length
        "the and of a to",  # only stop words: a field with a length of 0
        "I/O waits: log file sync log file sync LOG FILE SYNC, logging logged logs",
        "İstanbul ÇAĞRI straße Ωmega café naïve — non-ASCII words lowercase differently",
        "3.141 v$session x$ksmsp oraus.msb 10.2.0.4 a.b.c. ..dots.. __under_score__",
        "repeated " * 300,  # one word 300 times: a long position list
        "a b c d e f g h i j k l m n o p q r s t u v w x y z",  # one-letter words are dropped
        "Tab\tseparated\nand\r\nwrapped lines   with  runs of   spaces",
    ]
    docs = []
    for i, text in enumerate(prose):
        docs.append(
            IndexDoc(
                id=f"odd-{i}",
                title=text[:40] or "untitled",
                symptom=text,
                root_cause=prose[(i + 1) % len(prose)],
                fix="" if i % 2 else text.upper(),
                commands=f"truss -p {i}\nwhy {text[:20]}",
                identifiers=["v$session", "enq: CF - contention", f"k{i}"] if i % 3 else [],
                # KEYWORD fields: tokens stripped (" " becomes an empty word), then lowercased
                platforms=["solaris"] if i % 2 else [" Linux ", " ", "AIX", "aix"],
                products=["oracle"] if i % 3 == 1 else [],
                tags=["odd", f"t{i % 3}"],
            )
        )
    return docs


def test_corner_cases_of_the_analysis_give_the_same_segment(tmp_path):
    _assert_same_segment(tmp_path, _odd_docs())


def test_past_the_memory_bound_the_pool_takes_over_with_the_same_result(tmp_path):
    # 5,000 postings held at most: most of the 400 documents' postings go through whoosh's pool
    _assert_same_segment(tmp_path, synthetic_docs(400), bulk_postings=5_000)


def test_an_empty_rebuild_gives_an_empty_index(tmp_path):
    ix = _build(tmp_path, [], bulk=True)
    try:
        assert ix.doc_count() == 0
        assert ix.search(parse_query("shmdt")).total == 0
    finally:
        ix.close()


def test_bulk_and_whoosh_builds_answer_searches_alike(tmp_path):
    docs = synthetic_docs(300)
    ref = _build(tmp_path, docs, bulk=False)
    fast = _build(tmp_path, docs, bulk=True)
    try:
        for q in ('"log file sync"', "shmdt", "oraus.msb", "row lock contention", "fork*"):
            want = ref.search(parse_query(q), per_page=50)
            got = fast.search(parse_query(q), per_page=50)
            assert want.total > 0, q
            assert got.model_dump() == want.model_dump(), q
    finally:
        ref.close()
        fast.close()


def _failing(n: int):
    yield from synthetic_docs(n)
    raise RuntimeError("the source broke")


def test_a_failed_first_rebuild_leaves_no_index(tmp_path):
    where = tmp_path / "x"
    where.mkdir()
    ix = SearchIndex(where / "index", where / "index.lock")
    with pytest.raises(RuntimeError):
        ix.rebuild(_failing(5), STAMP)
    assert ix.open() == "missing"  # so the store rebuilds it at the next open
    assert ix.stamp() is None
    assert sorted(p.name for p in where.iterdir()) == ["index.lock"]  # nothing left behind


def test_a_failed_rebuild_keeps_the_old_index_whole_but_unstamped(tmp_path):
    where = tmp_path / "x"
    where.mkdir()
    ix = SearchIndex(where / "index", where / "index.lock")
    ix.rebuild(synthetic_docs(30), STAMP)
    before = ix.search(parse_query("shmdt")).model_dump()
    with pytest.raises(RuntimeError):
        ix.rebuild(_failing(40), Stamp(store_id="test", rev=2, build="other"))
    assert ix.stamp() is None  # so the store rebuilds it at the next open
    assert ix.search(parse_query("shmdt")).model_dump() == before  # still open, still the old
    assert ix.open() is None
    assert ix.doc_count() == 30
    assert sorted(p.name for p in where.iterdir()) == ["index", "index.lock"]


def test_a_rebuild_replaces_the_index_and_clears_a_dead_build(tmp_path):
    where = tmp_path / "x"
    where.mkdir()
    (where / ".index.abc123-build").mkdir()  # what a rebuild killed mid-way leaves
    ix = SearchIndex(where / "index", where / "index.lock")
    ix.rebuild(synthetic_docs(30), STAMP)
    new_stamp = Stamp(store_id="test", rev=2, build="second")
    assert ix.rebuild(synthetic_docs(50), new_stamp) == 50
    assert ix.doc_count() == 50
    assert ix.stamp() == new_stamp
    assert sorted(p.name for p in where.iterdir()) == ["index", "index.lock"]
    ix.close()


def test_field_lengths_read_in_one_go_equal_whooshs_per_document_answer(tmp_path):
    docs = _odd_docs()
    ix = _build(tmp_path, docs, bulk=True)
    try:
        perdoc = ix._searcher.reader()._perdoc
        for name in ix._schema.names():
            want = [perdoc.doc_field_length(d, name) for d in range(len(docs))]
            assert _doc_field_lengths(perdoc, name, len(docs)) == want, name
        assert any(_doc_field_lengths(perdoc, "symptom", len(docs)))
    finally:
        ix.close()


@pytest.mark.parametrize(
    "pattern",
    [
        r"[\w\*]+(\.?[\w\*]+)*",  # whoosh's StemmingAnalyzer default
        r"\w+(?:[.$#]\w+)*",  # perfkb's identifier words: no group
        r"[^,]+",  # KEYWORD with commas
        r"a(b|c)[(]\((d)\)",  # escaped parens and a paren in a class stay literal
        r"[]()](x(y))",  # ']' first in a class is a literal
        r"[^]](z)+",
    ],
)
def test_the_tokenizer_pattern_without_groups_finds_the_same_tokens(pattern):
    text = "ab(d) ac((d)) x]xy ]xy zz z] a.b.c v$session 3.14 *wild* o,ne, two ,(xy)"
    findall = _findall(re.compile(pattern))
    assert findall is not None
    assert findall(text) == [m.group(0) for m in re.finditer(pattern, text)]


def test_a_named_group_is_left_to_the_match_objects():
    assert _findall(re.compile(r"(?P<w>\w+)")) is None


@pytest.mark.parametrize("renumber", [True, False])
def test_held_tokens_carry_the_positions_whooshs_analyzer_gives(renumber):
    # StopFilter(renumber=False) leaves gaps where stop words were: those values' positions are
    # kept as lists; renumbered ones as a first position
    from whoosh.analysis import LowercaseFilter, RegexTokenizer, StemFilter, StopFilter
    from whoosh.fields import TEXT

    from kb.index_fast import _chain_spec, _HeldTokens

    analyzer = RegexTokenizer() | LowercaseFilter() | StopFilter(renumber=renumber) | StemFilter()
    field = TEXT(analyzer=analyzer)
    spec = _chain_spec(field)
    values = ["the log file sync and the log", "a an the", "", "waits on log file sync waits"]
    held = _HeldTokens(spec)
    want = []
    for docnum, value in enumerate(values):
        held.add(spec, value, docnum)
        want += [(t.text, docnum, t.pos) for t in analyzer(value, positions=True)]
    words, docs, positions = held.columns()
    got = [(held.ids.vocab[w], d, p) for w, d, p in zip(words, docs, positions, strict=True)]
    assert got == want
    assert (len(held.gaps) > 0) is not renumber
