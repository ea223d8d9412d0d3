"""SearchIndex's fast search path (the search file, kb/search_file.py) gives exactly the page
whoosh's own scoring of every match gives (fast=False): same hits in the same order with the same
scores and snippets, same totals, same facet counts, on the real KB and a synthetic 1k KB, on
single- and multi-segment indexes with deletions, and after writes. Also: the direct query
builder matches whoosh's parser, and the snippet span finder matches the token-by-token one it
replaced. (Every score of every match, not only a page's, is compared with whoosh's in
tests/test_search_file.py; SearchIndex.similar is whoosh's own search, the oracle
tests/test_bm25.py compares the analysis's Matcher.similar with.)"""

from __future__ import annotations

import random
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from whoosh.query import Term

from benchmarks.search import QUERIES
from benchmarks.synth_kb import real_entries, synthetic_docs
from kb.index import FACETS, SearchIndex
from kb.index_docs import Stamp, doc_from_entry
from kb.index_fast import term_docs
from kb.index_snippets import SNIPPET_FIELDS, Marker, _stem
from kb.search_query import parse_query

# the benchmark's queries plus filters, version ranges, no text, the OR fallback, phrases,
# wildcards, operators, stop words only, words nothing has
EXTRA_QUERIES = (
    "",
    "shmdt platform:solaris",
    "log file sync source:waits",
    "tag:numa",
    "platform:linux tag:shm,numa",
    "read version:12.2",
    "log file sync version:19.3 product:oracle",
    "cladm",
    "control file parallel write",
    "fork1 cladm zzzzunknownword",
    "zzzzunknownword",
    "read OR write",
    "shmdt NOT numa",
    '"log file" sync',
    "'control file parallel write'",
    "log*",
    "the of a",
    "oraus.msb kgiPinObject",
    "x$ksmsp v$session",
    "enq: CF - contention",
    "redo-log 12.2 buffer_busy",
)


def _index(tmp_path: Path, docs, name: str = "ix") -> SearchIndex:
    ix = SearchIndex(tmp_path / name, tmp_path / f"{name}.lock")
    ix.rebuild(docs, Stamp(store_id="t", rev=len(docs)))
    return ix


def _reference(ix: SearchIndex) -> SearchIndex:
    ref = SearchIndex(ix.dir, ix._lock.path, fast=False)
    assert ref.open() is None
    return ref


def _same_pages(fast: SearchIndex, ref: SearchIndex, queries, pages=(1,)) -> int:
    checked = 0
    for q in queries:
        for page in pages:
            parsed = parse_query(q)
            a = fast.search(parsed, page=page)
            b = ref.search(parsed, page=page)
            assert a.model_dump() == b.model_dump(), (q, page, a.total, b.total)
            checked += bool(a.results)
    return checked


@pytest.fixture(scope="module")
def synth_1k(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("synth1k")
    ix = _index(tmp, synthetic_docs(1000))
    yield ix
    ix.close()


def test_fast_path_matches_whoosh_on_the_real_kb(tmp_path):
    ix = _index(tmp_path, [doc_from_entry(e) for e in real_entries()])
    ref = _reference(ix)
    assert _same_pages(ix, ref, QUERIES + EXTRA_QUERIES) >= len(QUERIES)
    ix.close(), ref.close()


def test_fast_path_matches_whoosh_on_an_empty_index(tmp_path):
    ix = _index(tmp_path, [])
    ref = _reference(ix)
    _same_pages(ix, ref, QUERIES[:3] + EXTRA_QUERIES)
    ix.close(), ref.close()


def test_fast_path_matches_whoosh_on_a_synthetic_1k_kb(synth_1k):
    ref = _reference(synth_1k)
    _same_pages(synth_1k, ref, QUERIES + EXTRA_QUERIES, pages=(1, 2, 7))
    # and again with the tables cached
    _same_pages(synth_1k, ref, QUERIES)
    ref.close()


def test_fast_path_matches_whoosh_with_many_segments_and_deletions(tmp_path):
    docs = synthetic_docs(400)
    ix = _index(tmp_path, docs[:200])
    rng = random.Random(3)
    # several commits: new documents, replaced ones, deleted ones -> several segments
    for start in range(200, 400, 50):
        batch = docs[start : start + 50]
        replaced = [
            d.model_copy(update={"title": d.title + " revised"})
            for d in rng.sample(docs[:start], 5)
        ]
        deleted = [d.id for d in rng.sample(docs[:start], 4)]
        ix.apply(batch + replaced, deleted, None)
        ref = _reference(ix)
        searcher = ix._current_searcher()
        assert not searcher.is_atomic() or start == 200
        _same_pages(ix, ref, QUERIES + EXTRA_QUERIES[:8])
        ref.close()
    searcher = ix._current_searcher()
    assert len(searcher.leaf_searchers()) > 1
    assert searcher.reader().has_deletions()
    # facet tables read posting blocks directly: the same documents whoosh's query finds
    for field in FACETS:
        for term in searcher.reader().lexicon(field):
            want = frozenset(searcher.docs_for_query(Term(field, term.decode())))
            assert term_docs(searcher, field, term) == want, (field, term)
    ix.close()


def test_tables_are_dropped_when_the_index_changes(tmp_path):
    docs = synthetic_docs(120)
    ix = _index(tmp_path, docs[:100])
    assert ix.search(parse_query("zebrafish")).total == 0
    # the search's word tables are the search file's (kb/search_file.py), one per commit
    assert ix._file is not None and ix._file.cached_postings > 0
    first_file = ix._file
    extra = docs[100].model_copy(update={"id": "zebra-entry", "title": "zebrafish shmdt storm"})
    before = ix._current_searcher()
    ix.apply([extra], [], None)
    after = ix._current_searcher()
    assert after is not before
    # a search still running on the old searcher gets caches of its own, not the new ones
    assert ix._state_for(before) is not ix._state_for(after)
    assert ix._state_for(after) is ix._state_for(after)
    page = ix.search(parse_query("zebrafish"))
    assert [h.id for h in page.results] == ["zebra-entry"]
    assert ix._file is not None and ix._file is not first_file
    ix.apply([], ["zebra-entry"], None)
    assert ix.search(parse_query("zebrafish")).total == 0
    ix.close()


def test_a_small_table_budget_changes_nothing_but_memory(tmp_path, synth_1k):
    small = SearchIndex(synth_1k.dir, synth_1k._lock.path, postings_budget=500)
    assert small.open() is None
    ref = _reference(synth_1k)
    _same_pages(small, ref, QUERIES[:8])
    assert small._file is not None
    assert small._file.cached_postings <= 500 or len(small._file._cache) == 1
    small.close(), ref.close()


# -- the query builder --------------------------------------------------------------------------


def _kb_words() -> list[str]:
    words: set[str] = set()
    for q in QUERIES + EXTRA_QUERIES:
        words |= set(q.split())
    for e in real_entries():
        d = doc_from_entry(e)
        for text in (d.title, d.symptom, d.root_cause, " ".join(d.identifiers)):
            words |= set(text.split())
    words |= {"AND", "and", "OR", "not", "NOT", "the", "a", "x$ksmsp", "a.b.c", "a..b", "-x"}
    words |= {"log-file", "12.2", "19c", "_", "a_b", "#", "$", ".", "ab.", ".ab", "it's", "é"}
    return sorted(words)


def test_plain_queries_are_built_as_the_parser_builds_them(synth_1k):
    words = _kb_words()
    rng = random.Random(7)
    texts = words + [" ".join(rng.sample(words, rng.randint(2, 5))) for _ in range(1500)]
    plain = 0
    for text in texts:
        text = " ".join(text.split())
        built = synth_1k._plain_query(text)
        if built is None:
            continue
        plain += 1
        parsed = synth_1k._parser.parse(text)
        assert built == parsed and repr(built) == repr(parsed), text
    assert plain > len(texts) // 3


def test_operators_and_quotes_go_to_the_parser(synth_1k):
    for text in ("read OR write", "shmdt NOT numa", '"log file"', "log*", "(a b)", "é"):
        assert synth_1k._plain_query(text) is None, text


# -- snippets -----------------------------------------------------------------------------------

_WORD = re.compile(r"\w+(?:[.$#]\w+)*")


def _reference_spans(marker: Marker, text: str) -> list[tuple[int, int]]:
    """The token-by-token span finder the split-based one replaced."""
    out = []
    for m in _WORD.finditer(text):
        word = m.group().lower()
        if word in marker.words or _stem(word) in marker.stems:
            out.append(m.span())
    return out


def test_snippet_spans_match_the_token_by_token_finder(synth_1k):
    searcher = synth_1k._current_searcher()
    for text in QUERIES:
        q = synth_1k._text_query(synth_1k._parser, text)
        marker = Marker(q)
        for docnum in list(searcher.reader().all_doc_ids())[:60]:
            stored = searcher.stored_fields(docnum)
            for field in SNIPPET_FIELDS:
                value = stored.get(field, "")
                assert marker.spans(value) == _reference_spans(marker, value), (text, field)


_ALPHABET = "abcdeflogsyncxé.$#_- \n\tİK"


@settings(max_examples=300, deadline=None)
@given(st.lists(st.text(_ALPHABET, max_size=30), max_size=12))
def test_snippet_spans_on_odd_text(pieces):
    unopened = SearchIndex(Path("unused"), Path("unused.lock"))  # only its parser is used
    marker = Marker(unopened._text_query(unopened._parser, "log file sync x.y a$b"))
    for text in [*pieces, " ".join(pieces)]:
        assert marker.spans(text) == _reference_spans(marker, text), text
