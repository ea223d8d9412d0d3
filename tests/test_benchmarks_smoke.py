"""The benchmarks' correctness parts (nothing timed runs in CI): generated captures parse to exactly
what the generator wrote, synthetic KBs are valid and keep the real entries, the FTS5 reference
answers the search query set like the whoosh index does, and the report and wrk parsing hold.

The captures are made by benchmarks/gen_traces.py (made-up timings shaped like the seed truss
lines in tests/fixtures/seeds/004_*); nothing here reads a fixture file of its own.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks import gen_os_tables, gen_stacks, gen_trace10046, gen_traces
from benchmarks.report import Figure, Run, machine, now, write_json
from benchmarks.search import QUERIES, build_fts5, build_whoosh, fts_match, fts_page, whoosh_page
from benchmarks.synth_kb import real_entries, synthetic_docs, synthetic_entries
from benchmarks.web import parse_wrk
from ingest.detect import parse_lines

REPO = Path(__file__).resolve().parent.parent

SIZE = 300 * 1024

MODES = [("truss", m) for m in gen_traces.TRUSS_MODES] + [
    ("strace", m) for m in gen_traces.STRACE_MODES
]


def _parse(path: Path):
    with path.open(encoding="utf-8") as fh:
        return parse_lines(fh)


@pytest.mark.parametrize(("kind", "mode"), MODES)
def test_generated_capture_parses_to_exactly_what_was_written(tmp_path, kind, mode):
    path = tmp_path / f"{kind}.txt"
    exp = gen_traces.generate(kind, SIZE, path, mode=mode)
    assert exp.bytes == path.stat().st_size >= SIZE
    assert exp.lines == len(path.read_text().splitlines())
    evidence = _parse(path)
    assert [(b.format, b.start_line, b.end_line) for b in evidence.blocks] == [(kind, 1, exp.lines)]
    block = evidence.blocks[0]
    assert block.malformed_lines == 0
    facts = block.facts
    assert facts["trace.calls"] == exp.calls
    assert facts["trace.errors"] == exp.errors
    assert facts["trace.signals"] == exp.signals
    assert facts["trace.processes"] == exp.processes
    assert facts["syscall.count"] == {k: float(v) for k, v in exp.syscalls.items()}
    assert facts["errno.count"] == {k: float(v) for k, v in exp.errnos.items()}
    # what makes the capture realistic is really there
    assert exp.processes > 40 and exp.signals > 0 and exp.errors > 0
    assert len(exp.syscalls) >= 20
    if kind == "truss":
        assert exp.continuation_lines > 0
    else:
        assert exp.unfinished > 0


def test_generated_10046_trace_parses_to_exactly_what_was_written(tmp_path):
    import re

    from ingest.detect import parse_text

    path = tmp_path / "bench.trc"
    exp = gen_trace10046.generate(SIZE, path)
    assert exp.bytes == path.stat().st_size >= SIZE
    text = path.read_text()
    # the file as a stream (the fast path) and line by line give one block with the tallies
    for evidence in (parse_text(text), _parse(path)):
        assert [(b.format, b.end_line) for b in evidence.blocks] == [("trace10046", exp.lines)]
        facts = evidence.blocks[0].facts
        assert facts["trace10046.db_calls"] == exp.calls
        assert facts["trace10046.fetch_count"] == exp.fetches
        assert sum(facts["event.count"].values()) == exp.waits
    grep = re.compile(gen_trace10046.GREP_RE)
    assert sum(1 for line in text.splitlines() if grep.match(line)) == exp.calls + exp.waits
    assert gen_trace10046.generate(SIZE, tmp_path / "again.trc").model_dump() == exp.model_dump()


@pytest.mark.parametrize("kind", gen_os_tables.KINDS)
def test_generated_os_table_parses_to_exactly_what_was_written(tmp_path, kind):
    from benchmarks.streaming import _check_os_table

    path = tmp_path / f"{kind}.txt"
    exp = gen_os_tables.generate(kind, SIZE, path)
    assert exp.bytes == path.stat().st_size >= SIZE
    evidence = _parse(path)
    lines = path.read_text().splitlines()
    assert exp.lines == len(lines)
    last = max(n for n, line in enumerate(lines, 1) if line.strip())
    assert [(b.format, b.start_line, b.end_line) for b in evidence.blocks] == [(kind, 1, last)]
    assert evidence.blocks[0].malformed_lines == 0
    assert _check_os_table(exp, evidence.blocks[0].facts) == ""
    assert exp.samples > 100
    again = gen_os_tables.generate(kind, SIZE, tmp_path / "again.txt")
    assert (tmp_path / "again.txt").read_bytes() == path.read_bytes() and again == exp


@pytest.mark.parametrize("release", sorted(gen_os_tables.MPSTAT_RELEASES))
def test_generated_mpstat_of_each_sysstat_release_counts_every_interval(tmp_path, release):
    from benchmarks.streaming import _check_os_table

    path = tmp_path / f"mpstat-{release}.txt"
    exp = gen_os_tables.generate("mpstat", SIZE, path, release=release)
    evidence = _parse(path)
    assert [b.format for b in evidence.blocks] == ["mpstat"]
    assert evidence.blocks[0].malformed_lines == 0
    assert _check_os_table(exp, evidence.blocks[0].facts) == ""
    grep = re.compile(gen_os_tables.GREP_RE["mpstat"])
    rows = sum(1 for line in path.read_text().splitlines() if grep.match(line))
    assert rows == exp.samples * (gen_os_tables.MPSTAT_CPUS + 1)


def test_generator_is_deterministic_and_seeded(tmp_path):
    a, b, c = tmp_path / "a", tmp_path / "b", tmp_path / "c"
    gen_traces.generate("strace", 64 * 1024, a, seed=3)
    gen_traces.generate("strace", 64 * 1024, b, seed=3)
    gen_traces.generate("strace", 64 * 1024, c, seed=4)
    assert a.read_bytes() == b.read_bytes()
    assert a.read_bytes() != c.read_bytes()


def test_generator_rejects_an_unknown_mode(tmp_path):
    with pytest.raises(ValueError, match="truss mode must be one of dDE, d, dD"):
        gen_traces.generate("truss", 1024, tmp_path / "x", mode="ttT")


def test_generated_strace_c_tables_parse_to_exactly_what_was_written(tmp_path):
    import re

    from benchmarks.streaming import _check_summary

    path = tmp_path / "strace-c.txt"
    exp = gen_traces.generate_summary(SIZE, path)
    assert exp.bytes == path.stat().st_size >= SIZE
    evidence = _parse(path)
    assert [(b.format, b.start_line, b.end_line) for b in evidence.blocks] == [
        ("strace", 1, exp.lines)
    ]
    assert evidence.blocks[0].malformed_lines == 0
    assert _check_summary(exp, evidence.blocks[0].facts) == ""
    assert evidence.blocks[0].facts["trace.errors"] == exp.errors
    rx = re.compile(gen_traces.SUMMARY_GREP_RE)
    rows = sum(1 for line in path.read_text().splitlines() if rx.search(line))
    assert rows == exp.rows + exp.tables  # each table's rows and its total row
    again = gen_traces.generate_summary(SIZE, tmp_path / "again.txt")
    assert (tmp_path / "again.txt").read_bytes() == path.read_bytes() and again == exp


def test_grep_reference_regex_counts_every_completed_call_line(tmp_path):
    import re

    for kind in ("truss", "strace"):
        path = tmp_path / f"{kind}.txt"
        exp = gen_traces.generate(kind, 128 * 1024, path)
        rx = re.compile(gen_traces.GREP_RE[kind])
        hits = sum(1 for line in path.read_text().splitlines() if rx.search(line))
        # every call line that printed its return, but no continuation or signal line
        assert exp.calls * 0.8 < hits <= exp.lines - exp.continuation_lines - exp.signals


def test_synthetic_kb_keeps_the_real_entries_first_and_validates():
    real = real_entries()
    entries = synthetic_entries(len(real) + 60)
    assert [e.id for e in entries[: len(real)]] == [e.id for e in real]
    assert len({e.id for e in entries}) == len(entries)
    extra = entries[len(real) :]
    assert all(e.signatures for e in extra if real[0].signatures)
    # same shapes as their templates: same number of signatures and sources
    for i, e in enumerate(extra, start=len(real)):
        template = real[i % len(real)]
        assert [s.sources for s in e.signatures] == [s.sources for s in template.signatures]
    docs = synthetic_docs(len(real) + 60)
    assert [d.id for d in docs] == [e.id for e in entries]


def test_fts5_reference_finds_the_same_top_entry_as_whoosh(tmp_path):
    docs = synthetic_docs(len(real_entries()))
    ix, _ = build_whoosh(docs, tmp_path)
    conn, _ = build_fts5(docs, tmp_path / "fts.sqlite3")
    try:
        for q in QUERIES:
            w, f = whoosh_page(ix, q), fts_page(conn, q)
            assert w, q
            assert w[:1] == f[:1], q
    finally:
        ix.close()
        conn.close()


def test_fts_match_quotes_words_and_drops_stop_words():
    assert fts_match('enq: TX - "row" lock OR the') == '"enq" "tx" "row" "lock"'
    assert fts_match("log file sync", " OR ") == '"log" OR "file" OR "sync"'
    assert fts_match("a the") == ""


def test_parse_wrk_reads_rate_percentiles_and_errors():
    out = """Running 1s test @ http://127.0.0.1:8765/
  1 threads and 4 connections
  Thread Stats   Avg      Stdev     Max   +/- Stdev
    Latency     3.63ms    2.76ms  16.67ms   81.90%
    Req/Sec     1.19k   159.70     1.48k    70.00%
  Latency Distribution
     50%    2.51ms
     75%    5.03ms
     90%    7.88ms
     99%   1.24s
  1189 requests in 1.00s, 1.37MB read
  Non-2xx or 3xx responses: 7
Requests/sec:   1186.86
Transfer/sec:      1.37MB
"""
    res = parse_wrk(out)
    assert res == {
        "rps": 1186.86,
        "p50_ms": 2.51,
        "p90_ms": 7.88,
        "p99_ms": 1240.0,
        "requests": 1189,
        "non_2xx": 7,
        "socket_errors": 0,
    }


def test_report_writes_timestamped_and_latest_json(tmp_path):
    run = Run(mode="quick", started=now(), machine=machine())
    run.figures.append(
        Figure(bench="b", case="c", metric="m", value=2.0, unit="s", ref_value=1.0, ratio=2.0)
    )
    path = write_json(run, tmp_path)
    assert path.parent == tmp_path and path.name.endswith(".json")
    again = Run.model_validate_json((tmp_path / "latest.json").read_text())
    assert again.figures[0].ratio == 2.0
    assert again.machine.nproc >= 1 and again.machine.python.startswith("3.")


def test_entry_point_rejects_an_unknown_benchmark_in_one_line():
    proc = subprocess.run(
        [sys.executable, "-m", "benchmarks", "--only", "nosuch", "--no-write"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2
    assert "unknown benchmark nosuch" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_serve_load_splits_latency_into_queue_and_analysis():
    """benchmarks/scale.py's summary of a load: percentiles of the request, of the slot wait
    and of the slot held (made-up latencies), and the queueing floor per interpreter."""
    from benchmarks.scale import CLIENTS, TIMING, _load_extra, _load_note

    runs = [(0.100 + i / 1000, 0.060 + i / 1000, 0.030) for i in range(100)]
    one = _load_extra(runs, 0.020)
    assert one["requests"] == 100
    assert one["p50_ms"] == pytest.approx(149.5) and one["p99_ms"] == pytest.approx(198.0, abs=0.1)
    assert one["queue_p50_ms"] == pytest.approx(109.5) and one["analyze_p99_ms"] == 30.0
    assert one["server_cpu_ms_per_request"] == 20.0 and one["floor_ms"] == 20.0 * CLIENTS
    assert _load_extra(runs, 0.020, workers=2)["floor_ms"] == 10.0 * CLIENTS
    nan = float("nan")
    bare = _load_extra([(0.005, nan, nan)] * 3, 0.0004)  # GET /healthz: no Server-Timing
    assert "queue_p50_ms" not in bare and bare["p99_ms"] == 5.0
    note = _load_note(one, bare)
    assert "p50/p95/p99 149.5/" in note and f"floor {20.0 * CLIENTS} ms" in note
    assert "slot wait p50 109.5 ms" in note and "p50/p99 5.0/5.0 ms" in note
    assert one["max_ms"] == 199.0 and "198.0 ms, max 199.0 ms" in note
    assert "client_cpu_ms_per_request" not in one  # no client figure given, none made up
    # the clients' own CPU (they share the box's cores with the server): 2 ms against 20 ms
    timed = _load_extra(runs, 0.020, 2, wall=2.0, client_cpu=0.002)
    assert timed["client_cpu_ms_per_request"] == 2.0 and timed["clients_cpu_share"] == 0.091
    assert timed["client_cores_used"] == 0.1 and timed["server_cores_used"] == 1.0
    assert "clients 2.0 ms CPU/request, 9% of the load's CPU" in _load_note(timed, bare)
    header = "queue;dur=12.5, analyze;dur=20.1"
    assert dict(TIMING.findall(header)) == {"queue": "12.5", "analyze": "20.1"}


def test_serve_load_client_reads_server_timing_and_refuses_errors():
    """benchmarks/scale.py's light load client (http.client, one keep-alive connection): the
    POST's latency and its Server-Timing split, several requests on one connection, and an
    error status raised rather than timed as an answer."""
    import http.client
    import json as jsonlib
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    from benchmarks.scale import _get, _post

    seen: list[tuple[str, str, dict]] = []

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive, as uvicorn

        def log_message(self, *args) -> None:
            return None

        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers["Content-Length"]))
            seen.append(("POST", self.headers["Content-Type"], jsonlib.loads(body)))
            status = 503 if seen[-1][2]["text"] == "busy" else 200
            self.send_response(status)
            self.send_header("Server-Timing", "queue;dur=12.5, analyze;dur=20.1")
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"{}")

        def do_GET(self) -> None:
            self.send_response(200 if self.path == "/healthz" else 404)
            self.send_header("Content-Length", "0")
            self.end_headers()

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    conn = http.client.HTTPConnection("127.0.0.1", server.server_address[1], timeout=10)
    try:
        for _ in range(2):  # the same connection twice
            took, queued, held = _post(conn, jsonlib.dumps({"text": "a paste"}).encode())
            assert took > 0 and queued == pytest.approx(0.0125) and held == pytest.approx(0.0201)
        assert seen == [("POST", "application/json", {"text": "a paste"})] * 2
        took, queued, held = _get(conn, "/healthz")
        assert took > 0 and queued != queued and held != held  # NaN: no Server-Timing
        with pytest.raises(RuntimeError, match="503"):
            _post(conn, jsonlib.dumps({"text": "busy"}).encode())
        with pytest.raises(RuntimeError, match="404"):
            _get(conn, "/nowhere")
    finally:
        conn.close()
        server.shutdown()
        server.server_close()


# ---- issue 19's summary (benchmarks/issue19.py): the rows, the figures they read, met or not ----


def _issue19_doc_rows() -> list[str]:
    """The first cells of docs/benchmarks.md's "Issue 19: where each row stands" table."""
    lines = (REPO / "docs" / "benchmarks.md").read_text(encoding="utf-8").splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("## Issue 19: where each"))
    table: list[str] = []
    for line in lines[start + 1 :]:
        if line.startswith("|"):
            table.append(line)
        elif table:
            break
    return [row.split("|")[1].strip() for row in table[2:]]


def test_issue19_summary_has_one_row_per_row_of_the_docs_table():
    from benchmarks.issue19 import ROWS

    doc = _issue19_doc_rows()
    assert len(doc) >= 10
    assert sorted(r.row for r in ROWS) == sorted(doc)


def _tokens(pattern: str) -> list[str]:
    """A glob as tokens: '*', '?' (one character; a [...] class counts as one) or a character."""
    out, i = [], 0
    while i < len(pattern):
        if pattern[i] == "[" and "]" in pattern[i + 2 :]:
            i = pattern.index("]", i + 2) + 1
            out.append("?")
        else:
            out.append(pattern[i])
            i += 1
    return out


def _overlap(a: str, b: str) -> bool:
    """Whether some string matches both globs (`*` and one-character wildcards only)."""
    from functools import cache

    ta, tb = _tokens(a), _tokens(b)

    @cache
    def go(i: int, j: int) -> bool:
        if i == len(ta) and j == len(tb):
            return True
        if i < len(ta) and ta[i] == "*" and (go(i + 1, j) or (j < len(tb) and go(i, j + 1))):
            return True
        if j < len(tb) and tb[j] == "*" and (go(i, j + 1) or (i < len(ta) and go(i + 1, j))):
            return True
        if i < len(ta) and j < len(tb) and "*" not in (ta[i], tb[j]):
            return (ta[i] == tb[j] or "?" in (ta[i], tb[j])) and go(i + 1, j + 1)
        return False

    return go(0, 0)


def test_glob_overlap_helper():
    assert _overlap("CPU, median", "*, median")
    assert _overlap("strace -[!c]* 1GB", "* 1GB") and _overlap("x*", "*y")
    assert not _overlap("CPU, median", "peak RSS") and not _overlap("a*b", "c*")


def _figure_templates(module) -> list[dict[str, list[str]]]:
    """Every `Figure(...)` a bench module writes, as glob templates of its case, metric and
    reference: a literal as itself, an f-string with `*` for each placeholder, a name by the
    strings assigned to it (and `*` when it is also a loop variable or a parameter), anything
    else `*`."""
    import ast
    import inspect

    tree = ast.parse(inspect.getsource(module))
    assigned: dict[str, list[ast.expr]] = {}
    free: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    assigned.setdefault(target.id, []).append(node.value)
        elif isinstance(node, ast.For | ast.comprehension):
            free |= {n.id for n in ast.walk(node.target) if isinstance(n, ast.Name)}
        elif isinstance(node, ast.arg):
            free.add(node.arg)

    def glob(expr: ast.expr | None, depth: int = 0) -> list[str]:
        if expr is None:
            return [""]
        if isinstance(expr, ast.Constant) and isinstance(expr.value, str):
            return [expr.value]
        if isinstance(expr, ast.JoinedStr):
            return ["".join(v.value if isinstance(v, ast.Constant) else "*" for v in expr.values)]
        if isinstance(expr, ast.Name) and depth < 3:
            out = [g for v in assigned.get(expr.id, []) for g in glob(v, depth + 1)]
            return out + ["*"] if expr.id in free or not out else out
        return ["*"]

    calls = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "Figure":
            kw = {k.arg: k.value for k in node.keywords}
            calls.append({k: glob(kw.get(k)) for k in ("case", "metric", "reference")})
    return calls


def test_every_issue19_check_reads_a_figure_some_bench_writes():
    """Each check's bench is one `python -m benchmarks` runs, and that bench's source writes a
    Figure whose case, metric and reference can be what the check looks for: a renamed metric
    or case fails here, not as a silent 'not measured' in the --full run."""
    import importlib

    from benchmarks.__main__ import BENCHES
    from benchmarks.issue19 import ROWS

    assert "prefilter" in BENCHES
    for row in ROWS:
        for check in row.checks:
            pick = check.pick
            assert pick.bench in BENCHES, (row.row, pick.bench)
            module = importlib.import_module(f"benchmarks.{pick.bench}")
            assert pick.bench == module.BENCH and callable(module.run)
            found = [
                t
                for t in _figure_templates(module)
                if any(_overlap(pick.case, c) for c in t["case"])
                and any(_overlap(pick.metric, m) for m in t["metric"])
                and any(_overlap(pick.reference, r) for r in t["reference"])
            ]
            assert found, f"{row.row}: no Figure in benchmarks/{pick.bench}.py matches {pick}"


def _concrete(pattern: str) -> str:
    """A string the glob matches: '*' as 'x', a [!c] class as 't'."""
    return re.sub(r"\[[^]]+\]", "t", pattern).replace("*", "x")


def _figures_for(rows, inside: bool = True) -> list[Figure]:
    """One made-up figure per check of `rows`, inside its bound (or just outside it)."""
    figures = []
    for row in rows:
        for check in row.checks:
            b = check.bound
            if inside:  # at the limit for ≤ (it holds there), else 10 % inside
                x = b.limit * {"<=": 1.0, "<": 0.9, ">=": 1.1}[b.op]
            else:
                x = b.limit * (0.9 if b.op == ">=" else 1.1)
            figures.append(
                Figure(
                    bench=check.pick.bench,
                    case=_concrete(check.pick.case),
                    metric=_concrete(check.pick.metric),
                    reference=_concrete(check.pick.reference),
                    value=x,
                    unit=b.unit,
                    ref_value=1.0,
                    ratio=x,
                )
            )
    return figures


def test_issue19_met_is_computed_from_each_figure_against_the_rows_target():
    from benchmarks.issue19 import ROWS, summarise

    good = _figures_for(ROWS)
    rows = summarise(good, "full")
    assert [r.row for r in rows] == [r.row for r in ROWS]
    assert all(r.met is True for r in rows), [r.row for r in rows if not r.met]
    # a bound of ≤ holds at its limit; < and ≥ are tested just inside
    assert rows[0].checks[0].value == rows[0].checks[0].ratio == 1.5
    for i, row in enumerate(ROWS):
        bad = _figures_for([row], inside=False)[:1]  # its first check just outside its bound
        others = [f for f in good if not row.checks[0].pick.matches(f)]
        got = summarise(others + bad, "full")
        assert got[i].met is False, row.row
        assert got[i].checks[0].missed and got[i].checks[0].met is False
        assert all(r.met is True for j, r in enumerate(got) if j != i), row.row
        # without its figures the row is not measured, and says why in a quick run
        absent = summarise([f for f in good if not any(c.pick.matches(f) for c in row.checks)])
        assert absent[i].met is None and absent[i].note == ""
        quick = summarise([], "quick")[i]
        assert quick.met is None and quick.note == ("full mode only" if row.full_only else "")


def test_issue19_reads_the_ratio_or_the_value_as_the_bound_says():
    from benchmarks.issue19 import ROWS, summarise

    help_row = ROWS[0]
    assert all(c.bound.on == "ratio" for c in help_row.checks)
    figures = _figures_for([help_row])
    for f in figures:  # a large value does not matter when the ratio holds
        f.value = 9999.0
    assert summarise(figures)[0].met is True
    figures[0].ratio = None  # a figure without its number is no pass
    got = summarise(figures)[0]
    assert got.met is False and "without a number" in got.checks[0].missed[-1]


def test_issue19_other_formats_row_shows_the_slowest_and_leaves_out_the_syscall_traces():
    from benchmarks.issue19 import ROWS, summarise

    i = next(k for k, r in enumerate(ROWS) if r.row.startswith("other formats"))
    tp = "throughput (wall)"

    def fig(case: str, mbps: float) -> Figure:
        return Figure(bench="streaming", case=case, metric=tp, value=mbps, unit="MB/s")

    figures = [fig("truss -dDE 1GB", 10.0), fig("strace -ttT 1GB", 12.0), fig("awr 10MB", 1.0)]
    figures += [fig("tkprof 1GB", 80.0), fig("awr 1GB", 51.0), fig("strace -c 1GB", 60.0)]
    got = summarise(figures)
    assert got[i].met is True and got[i].checks[0].figures == 3
    assert got[i].checks[0].case == "awr 1GB"  # the closest to its bound
    trace_row = next(r for r in got if r.row.startswith("truss / strace"))
    assert trace_row.met is False and trace_row.checks[1].case == "strace -ttT 1GB"
    figures.append(fig("vmstat 1GB", 6.0))
    got = summarise(figures)[i]
    assert got.met is False and got.checks[0].missed == ["vmstat 1GB 6 MB/s"]


def test_report_prints_the_issue19_summary_as_markdown(tmp_path, capsys):
    from benchmarks.issue19 import ROWS, summarise
    from benchmarks.report import BenchRun, main

    run = Run(mode="full", started=now(), machine=machine())
    run.figures = _figures_for(ROWS)
    run.figures[0].ratio = 1.6  # `perfkb --help`, CPU: over its 1.5×
    run.benches = [BenchRun(name="startup", started=now(), load_before=[0.5, 0.4, 0.3])]
    run.issue19 = summarise(run.figures, run.mode)
    path = write_json(run, tmp_path)
    assert main(["--summary", str(path)]) == 0
    out = capsys.readouterr().out
    assert f"Issue 19, full mode, {run.started:%Y-%m-%d %H:%M} UTC: 13 of 14 rows met." in out
    lines = [line for line in out.splitlines() if line.startswith("| `perfkb --help`")]
    assert (
        len(lines) == 1 and "| **no** (CPU 1.60×) |" in lines[0] and "| 1.60×; 1.50× |" in lines[0]
    )
    for row in ROWS:
        assert f"| {row.row} |" in out
    assert main([str(path)]) == 0
    whole = capsys.readouterr().out
    assert "| startup |" in whole and "0.50 0.40 0.30" in whole  # the bench and its load


def test_streaming_leaves_out_of_1gb_only_a_format_its_10mb_run_says_is_3x_too_slow(monkeypatch):
    """too_slow reads the 10 MB throughput figure's CPU time (made-up numbers here): 6.4 s for
    10 MB after 0.3 s of start-up is ~1.6 MB/s, so 1 GB would take ~630 s; 0.5 s is fine."""
    from benchmarks.issue19 import summarise
    from benchmarks.streaming import ONE_GB_CAP_S, not_measured, too_slow

    def small(case: str, cpu: float) -> Figure:
        extra = {"perfkb_cpu_s": cpu, "bytes": 10 * gen_traces.MB}
        return Figure(
            bench="streaming", case=case, metric="throughput (wall)", value=1.0, extra=extra
        )

    figures = [small("awr 10MB", 6.4), small("tkprof 10MB", 0.5)]
    monkeypatch.delenv("PERFKB_BENCH_ALL", raising=False)
    reason = too_slow(figures, "awr", "1GB", 0.3)
    assert "at 10 MB it parsed 1.6 MB/s" in reason and "~625 s" in reason
    assert pytest.approx(61.44) == ONE_GB_CAP_S
    assert too_slow(figures, "tkprof", "1GB", 0.3) == ""
    assert too_slow(figures, "awr", "10MB", 0.3) == ""  # only 1 GB is ever left out
    assert too_slow(figures, "vmstat", "1GB", 0.3) == ""  # no 10 MB figure: measure it
    monkeypatch.setenv("PERFKB_BENCH_ALL", "1")
    assert too_slow(figures, "awr", "1GB", 0.3) == ""
    row = next(r for r in summarise([not_measured("awr 1GB", reason)]) if r.row.startswith("other"))
    assert row.met is False and row.checks[0].missed == ["awr 1GB without a number"]


def test_streaming_full_run_order_and_what_it_leaves_out(monkeypatch, tmp_path):
    """streaming.run(full=True) with every measurement replaced by made-up figures (nothing runs
    or is timed): 10 MB before 1 GB, every format at 10 MB, the OS tables at both sizes, and at
    1 GB the formats whose 10 MB CPU time says they are 3x too slow (AWR, vmstat, sar here) run
    until the cap only: stopped there (AWR, vmstat) they get a figure saying so, finished in
    time (sar) they are measured as usual; every step's figures reach the run as they finish."""
    from benchmarks import report, streaming

    calls: list[str] = []
    cpu = {"awr": 6.4, "vmstat": 2.0, "sar": 2.0}
    probed: list[str] = []

    def capped(path, data_dir, limit):
        probed.append(path.name)
        return None if "sar" not in path.name else 30.0

    def figs(size: str, *cases: str) -> list[Figure]:
        calls.extend(f"{c} {size}" for c in cases)
        extra = lambda c: {"perfkb_cpu_s": cpu.get(c, 0.4), "bytes": 10 * gen_traces.MB}  # noqa: E731
        return [
            Figure(bench="streaming", case=f"{c} {size}", metric="throughput (wall)", value=1.0,
                   extra=extra(c))
            for c in cases
        ]  # fmt: skip

    monkeypatch.delenv("PERFKB_BENCH_ALL", raising=False)
    monkeypatch.delenv("PERFKB_BENCH_SIZES", raising=False)
    monkeypatch.setattr(streaming, "init_data_dir", lambda d: None)
    monkeypatch.setattr(
        streaming, "timed_run", lambda argv, env=None: streaming.Timed(0.3, 0.3, 60.0, "", 0)
    )
    monkeypatch.setattr(streaming, "_trace_figures", lambda k, size, *a: figs(size, k))
    monkeypatch.setattr(streaming, "trace10046_figures", lambda size, *a: figs(size, "trace10046"))
    monkeypatch.setattr(
        streaming,
        "stack_figures",
        lambda size, *a: figs(size, *(f"stack {k}" for k in gen_stacks.KINDS)),
    )
    monkeypatch.setattr(streaming, "summary_figures", lambda size, *a: figs(size, "strace -c"))
    monkeypatch.setattr(streaming, "oracle_figures", lambda size, *a: figs(size, "tkprof"))
    monkeypatch.setattr(streaming, "os_table_figures", lambda size, d, r, kinds: figs(size, *kinds))
    monkeypatch.setattr(streaming, "awr_figures", lambda size, *a: figs(size, "awr"))
    monkeypatch.setattr(streaming, "capped", capped)
    monkeypatch.setattr(
        streaming, "capture", lambda case, size, root=None: tmp_path / f"{case}-{size}"
    )
    for case in ("awr", "vmstat", "sar"):
        (tmp_path / f"{case}-1GB").write_bytes(b"x" * 1024)
    handed: list[str] = []
    report.on_figures(lambda fs: handed.extend(f.case for f in fs))
    try:
        figures = streaming.run(True)
    finally:
        report.on_figures(None)
    ten = [c for c in calls if c.endswith(" 10MB")]
    assert calls[: len(ten)] == ten and len(ten) == 3 + 4 + 2 + len(gen_os_tables.KINDS) + 1
    gb = calls[len(ten) :]
    assert gb[:2] == ["truss 1GB", "strace 1GB"] and "awr 1GB" not in gb and "vmstat 1GB" not in gb
    assert {f"{k} 1GB" for k in gen_os_tables.KINDS if k != "vmstat"} <= set(gb)
    assert sorted(probed) == ["awr-1GB", "sar-1GB", "vmstat-1GB"]
    left_out = [f for f in figures if f.extra.get("skipped")]
    assert sorted(f.case for f in left_out) == ["awr 1GB", "vmstat 1GB"]
    assert all(f.value is None and f.met is False for f in left_out)
    assert all(f.note.startswith("stopped after 61 s: under 0.0 MB/s (at 10 MB") for f in left_out)
    assert handed == [f.case for f in figures if f.case != "startup"]


def test_prepare_writes_every_capture_a_full_streaming_run_reads(monkeypatch, tmp_path):
    """--prepare and streaming.run read the same list: each generator's ensure is replaced by
    one that records (what, size), and a full run with every measurement stubbed records the
    cases it measures; the two sets are the same, so the timed run generates nothing."""
    from benchmarks import gen_awr, gen_oracle, streaming

    made: set[str] = set()

    class Exp:
        bytes = 1024

    def rec(label: str):
        def ensure(*args, **kw):
            *kind, size = args
            made.add(f"{label or kind[0]} {size}")
            return tmp_path / "x", Exp()

        return ensure

    monkeypatch.setattr(streaming, "ensure", rec(""))
    monkeypatch.setattr(gen_trace10046, "ensure", rec("trace10046"))
    monkeypatch.setattr(gen_oracle, "ensure", rec(""))
    monkeypatch.setattr(gen_stacks, "ensure", lambda k, size, **kw: rec(f"stack {k}")(size))
    monkeypatch.setattr(gen_traces, "ensure_summary", rec("strace -c"))
    monkeypatch.setattr(gen_awr, "ensure", rec("awr"))
    monkeypatch.setattr(gen_os_tables, "ensure", rec(""))
    monkeypatch.delenv("PERFKB_BENCH_SIZES", raising=False)
    assert len(streaming.prepare(True)) == len(made) == 2 * 17

    measured: set[str] = set()

    def figs(size: str, *cases: str) -> list[Figure]:
        measured.update(f"{c} {size}" for c in cases)
        return []

    monkeypatch.setattr(streaming, "init_data_dir", lambda d: None)
    monkeypatch.setattr(
        streaming, "timed_run", lambda argv, env=None: streaming.Timed(0.3, 0.3, 60.0, "", 0)
    )
    monkeypatch.setattr(streaming, "_trace_figures", lambda k, size, *a: figs(size, k))
    monkeypatch.setattr(streaming, "trace10046_figures", lambda size, *a: figs(size, "trace10046"))
    monkeypatch.setattr(
        streaming,
        "stack_figures",
        lambda size, *a: figs(size, *(f"stack {k}" for k in gen_stacks.KINDS)),
    )
    monkeypatch.setattr(streaming, "summary_figures", lambda size, *a: figs(size, "strace -c"))
    monkeypatch.setattr(
        streaming, "oracle_figures", lambda size, *a: figs(size, *gen_oracle.GENERATORS)
    )
    monkeypatch.setattr(streaming, "os_table_figures", lambda size, d, r, kinds: figs(size, *kinds))
    monkeypatch.setattr(streaming, "awr_figures", lambda size, *a: figs(size, "awr"))
    streaming.run(True)
    assert measured == made


def test_the_html_page_bench_swaps_the_reader_and_puts_it_back():
    """benchmarks/html_page.py times parse_stream with each HTML reader in turn: each gives
    the twin fixture's evidence, and the detector's reader is libxml2's again afterwards."""
    from benchmarks.html_page import _parse
    from ingest import html_report

    raw = (Path(__file__).parent / "fixtures/oracle/awr_23ai_twin.html").read_bytes()
    fast = _parse(raw, html_report.html_lines)
    assert _parse(raw, html_report.reference_html_lines) == fast
    assert any(b["format"] == "waits" for b in fast["blocks"])

    def broken(chunks):
        raise RuntimeError("reader failed")
        yield ""

    with pytest.raises(RuntimeError):
        _parse(raw, broken)
    assert html_report.html_lines.__module__ == "ingest.html_report"
    assert html_report.html_lines.__name__ == "html_lines"
