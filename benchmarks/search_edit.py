"""One-entry edits of a SearchIndex (what Store.upsert / perfkb edit do to the index): CPU and
wall of SearchIndex.apply on an index that was just rebuilt.

Measured by the search benchmark (benchmarks/search.py calls `edit_figures` on the index it has
built at each size): the reference is that rebuild's CPU time in the same run, so the figure
says what share of a rebuild an edit costs. Still runnable alone from a tree's root, to compare
two trees in the same minutes: `PYTHONPATH=. python path/to/benchmarks/search_edit.py 1000
10000` (docs/benchmarks.md, "Scores at query time")."""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.report import Figure, ratio
from kb.index import SearchIndex
from kb.index_docs import IndexDoc, Stamp
from kb.search_query import parse_query

EDITS = 12  # a third new entries, a third changed titles, a third deletes


def one_entry_edits(
    ix: SearchIndex, docs: list[IndexDoc], rev: int, edits: int = EDITS
) -> tuple[list[float], list[float]]:
    """(CPU seconds, wall seconds) of each of `edits` one-entry SearchIndex.apply calls on
    `ix`, which holds `docs`: in turn a new entry (a copy of one under a new id), an entry with
    a changed title, a deleted entry; each with a new stamp, as the store writes them."""
    n = len(docs)
    cpu: list[float] = []
    wall: list[float] = []
    for i in range(edits):
        rev += 1
        kind = i % 3
        if kind == 0:
            d = docs[(i * 31 + 7) % n]
            up, dels = [d.model_copy(update={"id": f"{d.id}-edit-{i}"})], []
        elif kind == 1:
            d = docs[i * 37 % n]
            up, dels = [d.model_copy(update={"title": d.title + f" edit {i}"})], []
        else:
            up, dels = [], [docs[(i * 53 + 1) % n].id]
        c0, w0 = time.process_time(), time.perf_counter()
        ix.apply(up, dels, Stamp(store_id="bench", rev=rev))
        cpu.append(time.process_time() - c0)
        wall.append(time.perf_counter() - w0)
    return cpu, wall


def edit_figures(
    bench: str, case: str, ix: SearchIndex, docs: list[IndexDoc], build_cpu: float
) -> list[Figure]:
    """The search benchmark's edit figure for an index of `docs` just rebuilt in `build_cpu`
    seconds of CPU (the reference: an edit should cost a small share of a rebuild)."""
    if not docs:
        return []
    cpu, wall = one_entry_edits(ix, docs, len(docs))
    med = statistics.median(cpu)
    return [
        Figure(
            bench=bench,
            case=case,
            metric="one-entry edit, CPU time",
            value=round(med * 1000, 1),
            unit="ms",
            reference="the rebuild, CPU time",
            ref_value=round(build_cpu * 1000, 1),
            ratio=ratio(med, build_cpu),
            note=(
                f"SearchIndex.apply of one entry (added, retitled, deleted in turn), median of "
                f"{len(cpu)}, search file updated in place"
            ),
            extra={
                "cpu_max_ms": round(max(cpu) * 1000, 1),
                "wall_median_ms": round(statistics.median(wall) * 1000, 1),
                "wall_max_ms": round(max(wall) * 1000, 1),
                "segments": len(ix._current_searcher().leaf_searchers()),
            },
        )
    ]


def main(sizes: list[int]) -> None:
    from benchmarks.synth_kb import synthetic_docs

    for n in sizes:
        docs = synthetic_docs(n)
        with tempfile.TemporaryDirectory(dir="/tmp") as tmp:
            ix = SearchIndex(Path(tmp) / "index", Path(tmp) / "index.lock")
            c0, w0 = time.process_time(), time.perf_counter()
            ix.rebuild(docs, Stamp(store_id="bench", rev=n))
            build = (time.process_time() - c0, time.perf_counter() - w0)
            cpu, wall = one_entry_edits(ix, docs, n)
            page = ix.search(parse_query("shmdt"))
            segs = len(ix._current_searcher().leaf_searchers())
            ix.close()
        print(
            f"n={n} build cpu {build[0]:.2f}s wall {build[1]:.2f}s | {len(cpu)} one-entry "
            f"applies: cpu median {statistics.median(cpu) * 1000:.0f} ms max "
            f"{max(cpu) * 1000:.0f} ms, wall median {statistics.median(wall) * 1000:.0f} ms "
            f"max {max(wall) * 1000:.0f} ms | segments {segs}, shmdt total {page.total}",
            flush=True,
        )


if __name__ == "__main__":
    main([int(a) for a in sys.argv[1:]] or [1000, 10000])
