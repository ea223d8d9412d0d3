"""One-entry edits of a SearchIndex (what Store.upsert / perfkb edit do to the index): CPU and
wall of SearchIndex.apply, after a fresh rebuild, at the sizes given.

Not one of `python -m benchmarks`'s benchmarks (it has no reference of its own): the figure is
a pair against another tree measured in the same minutes. Run it from each tree's root with
`PYTHONPATH=. python path/to/benchmarks/search_edit.py 1000 10000`, so that tree's kb is the
one measured (docs/benchmarks.md, "Scores at query time")."""

import statistics
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.synth_kb import synthetic_docs
from kb.index import SearchIndex
from kb.index_docs import Stamp
from kb.search_query import parse_query

for n in map(int, sys.argv[1:] or ["1000", "10000"]):
    docs = synthetic_docs(n + 20)
    with tempfile.TemporaryDirectory(dir="/tmp") as tmp:
        ix = SearchIndex(Path(tmp) / "index", Path(tmp) / "index.lock")
        c0, w0 = time.process_time(), time.perf_counter()
        ix.rebuild(docs[:n], Stamp(store_id="t", rev=n))
        build = (time.process_time() - c0, time.perf_counter() - w0)
        cpu, wall = [], []
        rev = n
        for i in range(12):
            rev += 1
            kind = i % 3
            if kind == 0:
                up, dels = [docs[n + i]], []
            elif kind == 1:
                d = docs[i * 37 % n]
                up, dels = [d.model_copy(update={"title": d.title + f" edit {i}"})], []
            else:
                up, dels = [], [docs[(i * 53 + 1) % n].id]
            c0, w0 = time.process_time(), time.perf_counter()
            ix.apply(up, dels, Stamp(store_id="t", rev=rev))
            cpu.append(time.process_time() - c0)
            wall.append(time.perf_counter() - w0)
        page = ix.search(parse_query("shmdt"))
        segs = len(ix._current_searcher().leaf_searchers())
        ix.close()
    print(
        f"n={n} build cpu {build[0]:.2f}s wall {build[1]:.2f}s | 12 one-entry applies: "
        f"cpu median {statistics.median(cpu) * 1000:.0f} ms max {max(cpu) * 1000:.0f} ms, "
        f"wall median {statistics.median(wall) * 1000:.0f} ms max {max(wall) * 1000:.0f} ms "
        f"| segments {segs}, shmdt total {page.total}",
        flush=True,
    )
