"""Search: perfkb's whoosh index (kb.index.SearchIndex, exactly as the store uses it) beside an
SQLite FTS5 index over the same documents, built here, at 1k, 10k and 100k entries.

Both answer the same page for a fixed query set: the 20 best hits with a highlighted snippet, the
total count and facet counts (platform, source, product, tag). Terms are ANDed across all fields
and fall back to OR when nothing matches, as SearchIndex does; FTS5 ranks with bm25 using the
same field weights as kb.index.FIELD_BOOSTS and the porter stemmer (whoosh: StemmingAnalyzer).
whoosh also adds an exact-identifier term; FTS5 gets no such extra.
"""

from __future__ import annotations

import re
import resource
import shutil
import sqlite3
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from whoosh.analysis import STOP_WORDS

from benchmarks.report import Figure, pct, ratio
from benchmarks.search_edit import edit_figures
from benchmarks.synth_kb import synthetic_docs
from kb.index import FACETS, FIELD_BOOSTS, SearchIndex, _ident_words
from kb.index_docs import IndexDoc, Stamp
from kb.index_part import PART_MIN_DOCS, cores
from kb.search_query import parse_query

BENCH = "search"
TARGET_P95_MS_AT_10K = 10.0
TARGET_BUILD_S_AT_10K = 10.0
PER_PAGE = 20
QUERIES = (
    "shmdt",
    "log file sync",
    "oraus.msb",
    "kgiPinObject",
    "fork1 cladm",
    "control file parallel write",
    "row lock contention",
    "library cache lock",
    "disconnect storm numa",
    "slow listener connections",
    "direct path read temp",
    "hard parse literals",
    "gc buffer busy",
    "sequence cache",
    "commit per row",
    "run queue cpu saturation",
)
_COLUMNS = ("title", "symptom", "root_cause", "fix", "commands", "keywords", "identifiers")
_WEIGHTS = ", ".join(
    str(FIELD_BOOSTS["identifiers_text" if c == "identifiers" else c]) for c in _COLUMNS
)
_TOKEN = re.compile(r"\w+")


# ---- whoosh --------------------------------------------------------------------------------


def build_whoosh(
    docs: list[IndexDoc],
    where: Path,
    *,
    bulk: bool = True,
    split: bool = True,
    cpu: list[float] | None = None,
) -> tuple[SearchIndex, float]:
    """SearchIndex.rebuild of `docs` under `where`: the index and the wall seconds it took
    (with `cpu`, the CPU seconds of this process and of the rebuild's second process are
    appended to it). bulk=False builds with whoosh's own add_document and commit, the writer
    SearchIndex used before kb.index_fast.BulkWriter; split=False in one process, as before
    kb/index_part.py."""
    where.mkdir(parents=True, exist_ok=True)
    ix = SearchIndex(
        where / "index",
        where / "index.lock",
        bulk=bulk,
        part_min_docs=PART_MIN_DOCS if split else len(docs) + 1,
    )
    c = time.process_time() + _children_cpu()
    t = time.perf_counter()
    ix.rebuild(docs, Stamp(store_id="bench", rev=len(docs), build="bench"))
    seconds = time.perf_counter() - t
    if cpu is not None:
        cpu.append(time.process_time() + _children_cpu() - c)
    return ix, seconds


def _children_cpu() -> float:
    """CPU seconds of this process's children that have ended (the rebuild waits for its)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def whoosh_page(ix: SearchIndex, query: str) -> list[str]:
    page = ix.search(parse_query(query), per_page=PER_PAGE)
    return [h.id for h in page.results]


# ---- FTS5 ----------------------------------------------------------------------------------


def build_fts5(docs: list[IndexDoc], path: Path) -> tuple[sqlite3.Connection, float]:
    t = time.perf_counter()
    conn = sqlite3.connect(path)
    conn.executescript(
        f"""
        CREATE VIRTUAL TABLE docs USING fts5(
            id UNINDEXED, {", ".join(_COLUMNS)}, tokenize='porter unicode61 remove_diacritics 2');
        CREATE TABLE facet(doc INTEGER NOT NULL, key TEXT NOT NULL, value TEXT NOT NULL);
        """
    )
    rows, facets = [], []
    for n, d in enumerate(docs, start=1):
        keywords = " ".join([d.id.replace("-", " "), *d.tags])
        rows.append(
            (n, d.id, d.title, d.symptom, d.root_cause, d.fix, d.commands, keywords,
             _ident_words(d.identifiers))
        )  # fmt: skip
        for key, values in zip(FACETS, (d.platforms, d.sources, d.products, d.tags), strict=True):
            facets += [(n, key, v.lower()) for v in values]
    with conn:
        conn.executemany(
            f"INSERT INTO docs(rowid, id, {', '.join(_COLUMNS)}) VALUES ({', '.join('?' * 9)})",
            rows,
        )
        conn.executemany("INSERT INTO facet VALUES (?, ?, ?)", facets)
        conn.execute("CREATE INDEX facet_doc ON facet(doc)")
        conn.execute("INSERT INTO docs(docs) VALUES ('optimize')")
    return conn, time.perf_counter() - t


def fts_match(query: str, op: str = " ") -> str:
    """Free text -> an FTS5 expression: each word quoted (no operator injection), stop words
    and 1-letter words dropped as whoosh's analyzer drops them."""
    words = [w for w in _TOKEN.findall(query.lower()) if len(w) > 1 and w not in STOP_WORDS]
    return op.join(f'"{w}"' for w in dict.fromkeys(words))


def fts_page(conn: sqlite3.Connection, query: str) -> list[str]:
    expr = fts_match(query)
    if not expr:
        return []
    total = conn.execute("SELECT count(*) FROM docs WHERE docs MATCH ?", (expr,)).fetchone()[0]
    if total == 0 and len(expr.split()) > 1:
        expr = fts_match(query, " OR ")
        total = conn.execute("SELECT count(*) FROM docs WHERE docs MATCH ?", (expr,)).fetchone()[0]
    hits = conn.execute(
        f"SELECT id, snippet(docs, 3, '<mark>', '</mark>', ' … ', 24) FROM docs "
        f"WHERE docs MATCH ? ORDER BY bm25(docs, 0, {_WEIGHTS}), id LIMIT {PER_PAGE}",
        (expr,),
    ).fetchall()
    conn.execute(
        "SELECT key, value, count(*) FROM facet WHERE doc IN "
        "(SELECT rowid FROM docs WHERE docs MATCH ?) GROUP BY key, value",
        (expr,),
    ).fetchall()
    return [h[0] for h in hits]


# ---- measuring -----------------------------------------------------------------------------


def _latencies(
    fn: Callable[[str], list[str]],
    reps: int,
    before: Callable[[], object] | None = None,
    cpu: list[float] | None = None,
) -> list[float]:
    """Wall-clock ms of each query; with `cpu`, also this process's CPU ms of each (the fairer
    reading on a machine other work is loading: both engines run in this process)."""
    for q in QUERIES:
        fn(q)  # warm caches (facet tables, searcher, page cache)
    out = []
    for _ in range(reps):
        for q in QUERIES:
            if before is not None:
                before()
            c = time.process_time()
            t = time.perf_counter()
            fn(q)
            out.append((time.perf_counter() - t) * 1000)
            if cpu is not None:
                cpu.append((time.process_time() - c) * 1000)
    return out


def profile_top(fn: Callable[[], object], n: int = 8) -> list[str]:
    """Where the time goes: the functions with the most self time while fn runs (pyinstrument)."""
    try:
        from pyinstrument import Profiler
    except ImportError:
        return ["pyinstrument not installed (pip install -e '.[dev]')"]
    prof = Profiler(interval=0.0005)
    prof.start()
    fn()
    prof.stop()
    selfs: dict[str, float] = {}

    def walk(frame, owner: str) -> None:
        # pyinstrument gives a function's own time as an unnamed child: charge it to the parent
        key = f"{frame.function} ({frame.file_path_short}:{frame.line_no})"
        key = key if frame.function else owner
        selfs[key] = selfs.get(key, 0.0) + frame.total_self_time
        for child in frame.children:
            walk(child, key)

    root = prof.last_session.root_frame() if prof.last_session else None
    if root is None:
        return []
    walk(root, "?")
    total = sum(selfs.values()) or 1.0
    top = sorted(selfs.items(), key=lambda kv: -kv[1])[:n]
    return [f"{100 * s / total:.0f}% {k}" for k, s in top]


def run(full: bool) -> list[Figure]:
    sizes = [1000, 10000, 100000] if full else [1000, 10000]
    figures: list[Figure] = []
    for n in sizes:
        reps = 3 if n < 10000 else 2 if n == 10000 else 1
        docs = synthetic_docs(n)
        with tempfile.TemporaryDirectory(prefix="perfkb-bench-search-") as tmp:
            where = Path(tmp)
            own: list[float] = []  # whoosh's own writer: wall, CPU (1k; 10k in full mode)
            if n <= (10000 if full else 1000):
                own_cpu: list[float] = []
                ref_ix, own_wall = build_whoosh(docs, where / "own", bulk=False, cpu=own_cpu)
                ref_ix.close()
                shutil.rmtree(where / "own")
                own = [own_wall, own_cpu[0]]
            one: list[float] = []  # the same rebuild in one process: wall, CPU (10k)
            if n == 10000:
                one_cpu: list[float] = []
                one_ix, one_wall = build_whoosh(docs, where / "one", split=False, cpu=one_cpu)
                one_ix.close()
                shutil.rmtree(where / "one")
                one = [one_wall, one_cpu[0]]
            build_cpu: list[float] = []
            ix, w_build = build_whoosh(docs, where / "bulk", cpu=build_cpu)
            c = time.process_time()
            conn, f_build = build_fts5(docs, where / "fts.sqlite3")
            f_build_cpu = time.process_time() - c
            try:
                w_cpu: list[float] = []
                f_cpu: list[float] = []
                w = _latencies(lambda q, ix=ix: whoosh_page(ix, q), reps, cpu=w_cpu)
                # the same with the per-word posting tables dropped before every query: what a
                # query whose words no recent query used costs (and the first ones after a write)
                w_cold = _latencies(
                    lambda q, ix=ix: whoosh_page(ix, q), reps, before=ix.drop_word_tables
                )
                f = _latencies(lambda q, c=conn: fts_page(c, q), reps, cpu=f_cpu)
                same_top = sum(whoosh_page(ix, q)[:1] == fts_page(conn, q)[:1] for q in QUERIES)
                w95, f95 = pct(w, 95), pct(f, 95)
                where_time: list[str] = []
                if w95 > 2 * f95:
                    where_time = profile_top(lambda ix=ix: [whoosh_page(ix, q) for q in QUERIES])
                # last: the edits change the index the figures above were measured on
                edits = edit_figures(BENCH, f"{n // 1000}k entries", ix, docs, build_cpu[0])
            finally:
                ix.close()
                conn.close()
        case = f"{n // 1000}k entries"
        figures += [
            Figure(
                bench=BENCH,
                case=case,
                metric="whoosh p50",
                value=round(pct(w, 50), 2),
                unit="ms",
                reference="FTS5 p50",
                ref_value=round(pct(f, 50), 2),
                ratio=ratio(pct(w, 50), pct(f, 50)),
                extra={"queries": len(QUERIES), "reps": reps, "same_top_hit": same_top},
            ),
            Figure(
                bench=BENCH,
                case=case,
                metric="whoosh p95",
                value=round(w95, 2),
                unit="ms",
                reference="FTS5 p95",
                ref_value=round(f95, 2),
                ratio=ratio(w95, f95),
                target=f"≤ {TARGET_P95_MS_AT_10K:g} ms" if n == 10000 else "",
                met=(w95 <= TARGET_P95_MS_AT_10K) if n == 10000 else None,
                note=("whoosh > 2× FTS5; self time: " + "; ".join(where_time[:5]))
                if where_time
                else "",
                extra={"profile": where_time},
            ),
            Figure(
                bench=BENCH,
                case=case,
                metric="whoosh p95, CPU time",
                value=round(pct(w_cpu, 95), 2),
                unit="ms",
                reference="FTS5 p95, CPU time",
                ref_value=round(pct(f_cpu, 95), 2),
                ratio=ratio(pct(w_cpu, 95), pct(f_cpu, 95)),
                note="process CPU time of each query (both engines run in this process)",
                extra={"p50_ms": round(pct(w_cpu, 50), 2), "fts5_p50_ms": round(pct(f_cpu, 50), 2)},
            ),
            Figure(
                bench=BENCH,
                case=case,
                metric="whoosh p95, word tables cold",
                value=round(pct(w_cold, 95), 2),
                unit="ms",
                reference="FTS5 p95",
                ref_value=round(f95, 2),
                ratio=ratio(pct(w_cold, 95), f95),
                note="SearchIndex's per-word posting tables dropped before each query",
                extra={"p50_ms": round(pct(w_cold, 50), 2)},
            ),
            Figure(
                bench=BENCH,
                case=case,
                metric="whoosh build",
                value=round(w_build, 2),
                unit="s",
                reference="FTS5 build",
                ref_value=round(f_build, 2),
                ratio=ratio(w_build, f_build),
                target=f"≤ {TARGET_BUILD_S_AT_10K:g} s" if n == 10000 else "",
                met=(w_build <= TARGET_BUILD_S_AT_10K) if n == 10000 else None,
                note="SearchIndex.rebuild (kb.index_fast.BulkWriter, kb/index_part.py), wall clock",
                extra={"cpu_s": round(build_cpu[0], 2), "fts5_cpu_s": round(f_build_cpu, 2)},
            ),
            Figure(
                bench=BENCH,
                case=case,
                metric="whoosh build, CPU time",
                value=round(build_cpu[0], 2),
                unit="s",
                reference="FTS5 build, CPU time",
                ref_value=round(f_build_cpu, 2),
                ratio=ratio(build_cpu[0], f_build_cpu),
                note="CPU time of both processes (the fairer reading on a loaded machine)",
            ),
        ]
        if one:
            figures.append(
                Figure(
                    bench=BENCH,
                    case=case,
                    metric="whoosh build, vs one process",
                    value=round(w_build, 2),
                    unit="s",
                    reference="the same rebuild in one process",
                    ref_value=round(one[0], 2),
                    ratio=ratio(w_build, one[0]),
                    note=(
                        f"wall clock; kb/index_part.py writes the second half in a second "
                        f"process ({cores()} cores here)"
                    ),
                    extra={"cpu_s": round(build_cpu[0], 2), "one_process_cpu_s": round(one[1], 2)},
                )
            )
        if own:
            figures.append(
                Figure(
                    bench=BENCH,
                    case=case,
                    metric="whoosh build, CPU time, vs whoosh's own writer",
                    value=round(build_cpu[0], 2),
                    unit="s",
                    reference="add_document + commit, CPU time",
                    ref_value=round(own[1], 2),
                    ratio=ratio(build_cpu[0], own[1]),
                    note="the same segment, byte for byte (tests/test_index_build.py)",
                    extra={"own_wall_s": round(own[0], 2), "wall_s": round(w_build, 2)},
                )
            )
        figures += edits
    return figures
