"""benchmarks/search_edit.py, as the search benchmark runs it: the one-entry edits really edit
the index (added, retitled and deleted entries are searchable as such afterwards) and the
figure carries the edit's CPU time against the rebuild's. Times nothing."""

from __future__ import annotations

from benchmarks.search_edit import EDITS, edit_figures, one_entry_edits
from benchmarks.synth_kb import synthetic_docs
from kb.index import SearchIndex
from kb.index_docs import Stamp
from kb.search_query import parse_query


def _index(tmp_path, docs) -> SearchIndex:
    ix = SearchIndex(tmp_path / "index", tmp_path / "index.lock")
    ix.rebuild(docs, Stamp(store_id="bench", rev=len(docs)))
    return ix


def test_the_edits_add_retitle_and_delete_entries(tmp_path):
    docs = synthetic_docs(60)
    ix = _index(tmp_path, docs)
    ids = set(ix.digests())
    cpu, wall = one_entry_edits(ix, docs, len(docs))
    assert len(cpu) == len(wall) == EDITS
    after = ix.digests()
    added = set(after) - ids
    deleted = ids - set(after)
    assert len(added) == EDITS // 3 and all("-edit-" in i for i in added)
    assert len(deleted) == EDITS // 3
    assert ix.stamp() is not None and ix.stamp().rev == len(docs) + EDITS
    # a retitled entry is found by its new title word, through the search file
    page = ix.search(parse_query("edit"), per_page=50)
    assert docs[37 % len(docs)].id in [h.id for h in page.results]
    ix.close()


def test_the_figure_is_a_ratio_to_the_rebuild(tmp_path):
    docs = synthetic_docs(40)
    ix = _index(tmp_path, docs)
    (fig,) = edit_figures("search", "0k entries", ix, docs, build_cpu=2.0)
    ix.close()
    assert fig.metric == "one-entry edit, CPU time" and fig.unit == "ms"
    assert fig.ref_value == 2000.0
    assert fig.value > 0 and fig.ratio is not None
    assert abs(fig.ratio - fig.value / fig.ref_value) < 0.01
    assert fig.extra["segments"] >= 1 and fig.extra["cpu_max_ms"] >= fig.value
    assert edit_figures("search", "0k entries", ix, [], build_cpu=1.0) == []
