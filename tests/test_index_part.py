"""A rebuild split between two processes (kb/index_part.py) writes two segments, each the one
whoosh's own writer makes of its half, and answers every search as the one-segment rebuild does;
a second process that fails or cannot start costs time, never the rebuild. Documents are the
benchmark's synthetic entries (benchmarks/synth_kb.py); `part_min_docs` is lowered so a few
hundred of them are split."""

from __future__ import annotations

import logging
import sys
from pathlib import Path

import pytest
from whoosh import index

import kb.index_part as index_part
from benchmarks.synth_kb import synthetic_docs
from kb.index import SearchIndex, _whoosh_fields
from kb.index_docs import IndexDoc, Stamp
from kb.search_query import parse_query

STAMP = Stamp(store_id="test", rev=1, build="test")
QUERIES = (
    "shmdt",
    '"log file sync"',
    "oraus.msb",
    "kgiPinObject",
    "fork1 cladm",
    "row lock contention",
    "library cache lock",
    "fork*",
    "disconnect storm numa platform:solaris",
    "direct path read temp product:oracle",
    "commit per row tag:lob",
    "zebrafish",
)


def _index(tmp: Path, name: str, **kw) -> SearchIndex:
    where = tmp / name
    where.mkdir(parents=True, exist_ok=True)
    return SearchIndex(where / "index", where / "index.lock", **kw)


def _build(tmp: Path, name: str, docs: list[IndexDoc], **kw) -> SearchIndex:
    ix = _index(tmp, name, **kw)
    assert ix.rebuild(docs, STAMP) == len(docs)
    return ix


def _segment_files(ix: index.Index) -> list[dict[str, bytes]]:
    """Per segment of a whoosh index, in docnum order: name -> bytes of each file in its
    compound file, the segment's random id taken out of the names."""
    out = []
    for segment in ix._segments():
        storage = segment.open_compound_file(ix.storage)
        files = {}
        for name in storage.list():
            f = storage.open_file(name)
            files[name.replace(segment.segid, "SEG")] = f.read()
            f.close()
        storage.close()
        out.append(files)
    return out


def _answers(ix: SearchIndex) -> dict[str, object]:
    """Every query's page of up to 100 results, exactly as shown."""
    out: dict[str, object] = {
        q: ix.search(parse_query(q), per_page=100).model_dump() for q in QUERIES
    }
    out["page 2"] = ix.search(parse_query("lock"), page=2, per_page=7).model_dump()
    out["similar"] = ix.similar(["shmdt", "kgiPinObject", "oraus.msb", "enq: CF - contention"])
    return out


def _up_to_ties(answers: dict[str, object]) -> dict[str, object]:
    """The answers with each run of results of one shown score as a set, and similar()'s
    scores to 9 places: a document's score is a sum whose order whoosh picks per segment from
    the posting counts, so two documents that tie exactly in one segment may differ in the last
    bits when they are in two, and swap places (as after any edit that adds a segment)."""
    out: dict[str, object] = {}
    for key, page in answers.items():
        if key == "similar":
            out[key] = {k: round(v, 9) for k, v in page.items()}
            continue
        if key == "page 2":  # a run of ties may cross the page's edge: only its size is kept
            out[key] = (page["total"], len(page["results"]))
            continue
        runs: list[tuple[float, set[str]]] = []
        for hit in page["results"]:
            if runs and runs[-1][0] == hit["score"]:
                runs[-1][1].add(hit["id"])
            else:
                runs.append((hit["score"], {hit["id"]}))
        assert page["total"] <= 100, key  # every result is on the page
        out[key] = (page["total"], runs)
    return out


def test_each_half_is_the_segment_whooshs_own_writer_makes_of_it(tmp_path):
    docs = synthetic_docs(401)
    ix_split = _build(tmp_path, "split", docs, part_min_docs=100)
    try:
        split = _segment_files(ix_split._ix)
        assert len(split) == 2
        # the reference: whoosh's add_document for each half, committed as two segments
        ref = index.create_in(str(tmp_path), ix_split._schema)
        half = index_part.split_at(len(docs), 100)
        assert half == 200
        for part in (docs[:half], docs[half:]):
            w = ref.writer()
            for doc in part:
                w.add_document(**_whoosh_fields(doc))
            w.commit(merge=False)
        want = _segment_files(ref)
        assert [sorted(f) for f in split] == [sorted(f) for f in want]
        for got, ref_files in zip(split, want, strict=True):
            for name, data in ref_files.items():
                assert got[name] == data, f"{name} differs"
    finally:
        ix_split.close()


def test_the_search_file_of_a_split_rebuild_answers_exactly_as_whoosh(tmp_path):
    docs = synthetic_docs(300)
    split = _build(tmp_path, "split", docs, part_min_docs=100)
    oracle = _index(tmp_path, "split", fast=False)  # the same directory, searched by whoosh
    try:
        assert oracle.open() is None
        assert _answers(split) == _answers(oracle)
    finally:
        split.close()
        oracle.close()


@pytest.mark.parametrize("fast", [True, False], ids=["search file", "whoosh"])
def test_a_split_rebuild_answers_as_the_one_segment_rebuild(tmp_path, fast):
    docs = synthetic_docs(300)
    one = _build(tmp_path, "one", docs, fast=fast)
    split = _build(tmp_path, "split", docs, fast=fast, part_min_docs=100)
    try:
        assert len(one._ix._segments()) == 1
        assert len(split._ix._segments()) == 2
        if fast:  # the search file is this commit's: it answers, not whoosh
            assert split._search_file(split._current_searcher()) is not None
        want = _answers(one)
        assert want["shmdt"]["total"] > 3
        assert sum(bool(want[q]["total"]) for q in QUERIES) >= len(QUERIES) - 3
        assert _up_to_ties(_answers(split)) == _up_to_ties(want)
        # edits after the rebuild: the same answers again
        extra = synthetic_docs(12, seed=7)
        extra = [d.model_copy(update={"id": f"extra-{i}"}) for i, d in enumerate(extra)]
        gone = [docs[5].id, docs[250].id]
        for ix in (one, split):
            ix.apply(extra, gone, Stamp(store_id="test", rev=2, build="test"))
        assert _up_to_ties(_answers(split)) == _up_to_ties(_answers(one))
        assert split.doc_count() == one.doc_count() == 300 + 12 - 2
    finally:
        one.close()
        split.close()


def test_the_index_directory_keeps_nothing_of_the_second_process(tmp_path):
    ix = _build(tmp_path, "split", synthetic_docs(250), part_min_docs=100)
    try:
        names = sorted(p.name for p in ix.dir.iterdir())
        assert not [n for n in names if n.startswith(".")], names
        assert len([n for n in names if n.endswith(".seg")]) == 2
        assert sorted(p.name for p in ix.dir.parent.iterdir()) == ["index", "index.lock"]
    finally:
        ix.close()


@pytest.mark.parametrize(
    "command",
    [
        [sys.executable, "-c", "raise SystemExit(3)"],  # starts, fails
        [sys.executable, "-c", "import os; os.kill(os.getpid(), 9)"],  # killed
        ["/nonexistent/perfkb-python"],  # cannot start
    ],
    ids=["fails", "killed", "cannot start"],
)
def test_a_second_process_that_fails_costs_time_not_the_rebuild(
    tmp_path, monkeypatch, caplog, command
):
    docs = synthetic_docs(250)
    one = _build(tmp_path, "one", docs)
    monkeypatch.setattr(index_part, "child_command", lambda where: command)
    with caplog.at_level(logging.WARNING, logger="perfkb.index"):
        split = _build(tmp_path, "split", docs, part_min_docs=100)
    try:
        assert "index rebuild:" in caplog.text
        assert "writing" in caplog.text
        assert len(split._ix._segments()) == 2
        assert _up_to_ties(_answers(split)) == _up_to_ties(_answers(one))
    finally:
        one.close()
        split.close()


def test_a_document_that_fails_in_the_first_half_keeps_the_old_index(tmp_path):
    ix = _build(tmp_path, "x", synthetic_docs(30), part_min_docs=100)
    before = ix.search(parse_query("shmdt")).model_dump()
    bad: list = synthetic_docs(300)
    bad[10] = None  # not a document: the parent's half stops on it
    with pytest.raises(AttributeError):
        ix.rebuild(bad, Stamp(store_id="test", rev=2, build="other"))
    try:
        assert ix.search(parse_query("shmdt")).model_dump() == before
        assert sorted(p.name for p in ix.dir.parent.iterdir()) == ["index", "index.lock"]
    finally:
        ix.close()


def test_a_document_the_second_half_cannot_write_fails_the_rebuild_here(tmp_path, caplog):
    ix = _build(tmp_path, "x", synthetic_docs(30), part_min_docs=100)
    before = ix.search(parse_query("shmdt")).model_dump()
    docs = synthetic_docs(300)
    # a title that is not text (model_copy does not validate): whoosh refuses it in the child,
    # and again when the parent writes that half itself
    docs[280] = docs[280].model_copy(update={"title": 12345})
    with caplog.at_level(logging.WARNING, logger="perfkb.index"), pytest.raises(ValueError):
        ix.rebuild(docs, Stamp(store_id="test", rev=2, build="other"))
    try:
        assert "second process ended with 1" in caplog.text
        assert "12345" in caplog.text  # the child's last line of error output
        assert ix.search(parse_query("shmdt")).model_dump() == before
        assert sorted(p.name for p in ix.dir.parent.iterdir()) == ["index", "index.lock"]
    finally:
        ix.close()


def test_small_rebuilds_generators_and_one_core_are_not_split(tmp_path, monkeypatch):
    assert index_part.split_at(1_999) == 1_999
    assert index_part.split_at(2_000) == 1_000
    assert index_part.split_at(1, 0) == 1
    gen = _build(tmp_path, "gen", [])  # an empty list: nothing to split
    gen.close()
    ix = _index(tmp_path, "g", part_min_docs=10)
    assert ix.rebuild((d for d in synthetic_docs(50)), STAMP) == 50
    assert len(ix._ix._segments()) == 1  # a generator has no length: written here, whole
    ix.close()
    monkeypatch.setattr(index_part, "cores", lambda: 1)
    assert index_part.split_at(10_000) == 10_000
