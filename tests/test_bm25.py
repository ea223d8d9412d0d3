"""The compiled KB's BM25 similarity (kb.bm25, Matcher.similar) against its oracle, whoosh's
search over the index's `identifiers` field (SearchIndex.similar with whoosh's own matchers):
the same entries in the same order, scores equal to 1e-9 relative, on the starter KB and a
synthetic 2k KB, built, saved and loaded, and updated after edits. And an analysis opens no
index and imports no whoosh."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest
from whoosh import scoring
from whoosh.util.numeric import _length_byte_cache, byte_to_length, length_to_byte

from benchmarks.synth_kb import real_entries, synthetic_entries
from ingest.detect import parse_text
from kb import bm25
from kb.analysis import analyze_text, matcher_for
from kb.index import SearchIndex, _schema
from kb.index_docs import Stamp, doc_from_entry, entry_keys
from kb.matcher import Matcher, evidence_terms
from kb.settings import Settings
from kb.store import Store

ROOT = Path(__file__).resolve().parents[1]
SEEDS = sorted((ROOT / "tests" / "fixtures" / "seeds").glob("0*.txt"))
REL = 1e-9


def _oracle(tmp: Path, entries) -> SearchIndex:
    """whoosh's answer: an index rebuilt as the store rebuilds it (entries in id order),
    searched through whoosh's own matchers (not the per-word tables)."""
    tmp.mkdir(parents=True, exist_ok=True)
    built = SearchIndex(tmp / "ix", tmp / "ix.lock")
    docs = [doc_from_entry(e) for e in sorted(entries, key=lambda e: e.id)]
    built.rebuild(docs, Stamp(store_id="t", rev=len(docs)))
    built.close()
    ref = SearchIndex(tmp / "ix", tmp / "ix.lock", fast=False)
    assert ref.open() is None
    return ref


def _queries(entries) -> list[list[str]]:
    """Each seed snippet's evidence terms, and made-up ones: every key of the KB (past the
    500-key cap), random handfuls (ties at the cut), keys in other case and spacing."""
    out = [sorted(evidence_terms(parse_text(p.read_text()))) for p in SEEDS]
    keys = sorted({k for e in entries for k in entry_keys(e)})
    rng = random.Random(19)
    out.append(keys)
    out += [rng.sample(keys, min(len(keys), n)) for n in (1, 2, 3, 8, 40, 200)]
    out.append([f"  {k.upper()} " for k in rng.sample(keys, min(len(keys), 10))])
    out.append(["nothing-like-it", "", " , "])
    return out


def _same(got: dict[str, float], want: dict[str, float], what: str) -> None:
    assert list(got) == list(want), what
    for entry_id, score in want.items():
        assert got[entry_id] == pytest.approx(score, rel=REL, abs=0), (what, entry_id)


def _compare(matcher: Matcher, ref: SearchIndex, entries) -> int:
    answered = 0
    for n, terms in enumerate(_queries(entries)):
        for limit in (50, 5, 1, 5000):
            want = ref.similar(terms, limit=limit)
            _same(matcher.similar(terms, limit=limit), want, f"query {n} limit {limit}")
            answered += bool(want)
    return answered


def test_the_constants_are_whooshs():
    """B, K1, the field's boost and the one-byte length table are whoosh's own."""
    model = scoring.BM25F()
    assert (bm25.B, bm25.K1) == (model.B, model.K1)
    field = _schema()["identifiers"]
    assert field.scorable and field.format.field_boost == bm25.FIELD_BOOST
    assert list(_length_byte_cache) == bm25._LENGTHS
    for n in [*range(0, 3000), 65000, 106373, 106374, 106375, 10**7]:
        assert bm25.stored_length(n) == byte_to_length(length_to_byte(n)), n


def test_starter_kb_scores_are_whooshs(tmp_path):
    entries = list(real_entries())
    ref = _oracle(tmp_path, entries)
    try:
        assert _compare(Matcher(entries), ref, entries) > 60
    finally:
        ref.close()


@pytest.fixture(scope="module")
def synth_2k(tmp_path_factory):
    entries = synthetic_entries(2000)
    tmp = tmp_path_factory.mktemp("synth2k")
    ref = _oracle(tmp, entries)
    yield entries, ref, tmp
    ref.close()


def test_synthetic_2k_scores_are_whooshs_built_and_saved(synth_2k):
    entries, ref, tmp = synth_2k
    built = Matcher(entries)
    assert _compare(built, ref, entries) > 60
    path = tmp / "compiled-kb.arrays"
    built.save(path, "k", [1] * len(entries))
    loaded = Matcher.load(path, "k", lambda i, r: pytest.fail("similarity read an entry"))
    assert loaded is not None
    assert _compare(loaded, ref, entries) > 60


def test_an_updated_kb_scores_as_a_rebuilt_index(synth_2k, tmp_path):
    """Edits layered on a saved KB (Matcher.updated): entries changed, removed and added give
    the scores of an index rebuilt from the resulting entries."""
    entries, _, tmp = synth_2k
    saved = Matcher.load(tmp / "compiled-kb.arrays", None, lambda i, r: entries[0])
    if saved is None:  # the test above saves it; on its own, save it here
        Matcher(entries).save(tmp / "compiled-kb.arrays", "k", [1] * len(entries))
        saved = Matcher.load(tmp / "compiled-kb.arrays", None, lambda i, r: entries[0])
    by_id = {e.id: e for e in entries}
    changed = []
    for e in entries[100:160]:  # new identifiers: another entry's signatures
        donor = entries[(entries.index(e) * 7) % len(entries)]
        changed.append(e.model_copy(update={"signatures": donor.signatures}))
    added = [e.model_copy(update={"id": f"{e.id}-added"}) for e in entries[10:30]]
    removed = [e.id for e in entries[500:540]]
    m = saved.updated(changed + added, removed)
    for e in changed + added:
        by_id[e.id] = e
    for entry_id in removed:
        del by_id[entry_id]
    now = list(by_id.values())
    ref = _oracle(tmp_path, now)
    try:
        assert _compare(m, ref, now) > 60
        # and a second update on top of the first
        m2 = m.updated([], [e.id for e in added[:5]])
        for e in added[:5]:
            del by_id[e.id]
        now = list(by_id.values())
    finally:
        ref.close()
    ref2 = _oracle(tmp_path / "second", now)
    try:
        assert _compare(m2, ref2, now) > 60
    finally:
        ref2.close()


def test_an_analysis_opens_no_index_and_answers_as_the_index(tmp_path):
    """Store-backed analysis takes its BM25 term from the compiled KB: the index is not
    opened, and the similarity is what the store's (rebuilt) index says."""
    settings = Settings(data_dir=tmp_path / "kb")
    with Store(settings) as store:
        with store.bulk():
            for e in real_entries():
                store.add(e, author="t")
        store.reindex()
    with Store(settings) as store:
        text = SEEDS[1].read_text()
        result = analyze_text(text, store)
        assert result.matches
        assert not store.index_opened
        terms = sorted(evidence_terms(parse_text(text)))
        got = matcher_for(store).similar(terms)
        assert not store.index_opened
        assert got
        _same(got, store.similar(terms), "store")
        assert store.index_opened  # a search (here: the oracle) opens it


def test_a_cli_analysis_imports_no_whoosh(tmp_path):
    data = tmp_path / "data"
    capture = tmp_path / "one.txt"
    capture.write_text(SEEDS[1].read_text().splitlines()[0] + "\n")
    env = {**os.environ, "PERFKB_DATA_DIR": str(data), "PYTHONPATH": str(ROOT)}
    # the first run loads the starter KB (a write: that one opens the index)
    run = [sys.executable, "-m", "kb", "analyze", "--json", str(capture)]
    subprocess.run(run, env=env, cwd=ROOT, check=True, capture_output=True)
    probe = (
        "import runpy, sys, json\n"
        f"sys.argv = {run[2:]!r}\n"
        "try:\n"
        "    runpy.run_module('kb', run_name='__main__')\n"
        "except SystemExit as exc:\n"
        "    assert not exc.code, exc.code\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] == 'whoosh'"
        " or m == 'kb.index')), file=sys.stderr)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], env=env, cwd=ROOT, check=True, capture_output=True, text=True
    )
    assert json.loads(done.stdout)["matches"] is not None
    assert json.loads(done.stderr.strip().splitlines()[-1]) == []
