"""The KB at scale (issue #19): `perfkb analyze` of a seed snippet with 10,000 (and, in --full,
50,000) synthetic entries against the starter KB, measured in the same run; and `perfkb serve`
with the large KB: the first analysis after start and after an edit, and the latency of
POST /api/analyze under 8 concurrent clients, against the same server holding the starter KB,
with each server's GET /healthz under the same 8 clients as the reference (the HTTP floor, which
a loaded box moves alike). `perfkb serve` runs as it starts by default: its analyses in one
process per usable CPU (kb/web/pool.py); the large KB is then served as before that pool, by one
process analysing in its threads and by `--workers N` (uvicorn's processes, each analysing in
its threads), and the pool's requests/s are given as a ratio to the one process's. Each load
reports p50/p95/p99, requests/s and the cores the server used, the wait for an analysis slot
and the time holding it (the response's Server-Timing), the server's CPU per request, and the
queueing floor: 8 x that CPU / the processes analysing, what the last of 8 requests that arrive
together waits while the interpreters run them.

Each KB is built first (synthetic entries from benchmarks/synth_kb.py, added through Store as
`perfkb import` would), then every `perfkb analyze` runs once to save its compiled KB (reported
as "first run after a change": it validates, compiles and saves), and then the sizes are timed
round-robin, so a burst of load on this shared box reaches each alike. CPU time (the child's
user + system from wait4) is the steadier figure here; peak RSS is ru_maxrss of the child, what
`/usr/bin/time -f %M` prints.
"""

from __future__ import annotations

import http.client
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import NamedTuple

import httpx

from benchmarks.report import REPO, Figure, pct, ratio
from benchmarks.synth_kb import synthetic_entries
from benchmarks.web import Server, _cpu_seconds, _tree_cpu
from kb.settings import usable_cpus

BENCH = "scale"
SEEDS = REPO.parent / "shared" / "seeds"
TARGET_10K, TARGET_50K = 1.5, 2.0  # x the starter KB's analyze time
TARGET_RSS_MB = 300
TARGET_FIRST_S = 0.3
TARGET_P99_MS = 100.0
CLIENTS = 8
SERVE_PROCESSES = usable_cpus()  # what `perfkb serve` sizes its analysis processes to


def _env(data: Path) -> dict[str, str]:
    env = dict(os.environ, PERFKB_DATA_DIR=str(data), PERFKB_LOG_LEVEL="WARNING")
    env.pop("PERFKB_WORKERS", None)
    return env


def _seed() -> Path:
    seeds = sorted(SEEDS.glob("*.txt"))
    if not seeds:
        raise RuntimeError(f"no seed snippets in {SEEDS}")
    return seeds[0]


def build_kb(data: Path, n: int) -> float:
    """A data dir holding the starter KB (n = 0) or n synthetic entries; seconds it took."""
    started = time.perf_counter()
    if n == 0:
        subprocess.run(
            [sys.executable, "-m", "kb", "init"],
            env=_env(data),
            cwd=REPO,
            check=True,
            capture_output=True,
        )
    else:
        from kb.settings import Settings
        from kb.store import Store

        store = Store(Settings(data_dir=data))
        try:
            with store.bulk():
                for entry in synthetic_entries(n):
                    store.add(entry, author="bench")
        finally:
            store.close()
    return time.perf_counter() - started


TIME = Path("/usr/bin/time")


def analyze_once(data: Path, path: Path) -> tuple[float, float, float]:
    """(wall s, CPU s, peak RSS MB) of `perfkb analyze --json path` on this data dir. The
    RSS is GNU time's %M when it is installed: a child forked straight from this process
    starts from this process's own high-water mark (the synthetic KB it built), which
    ru_maxrss would report instead."""
    started = time.perf_counter()
    argv = [sys.executable, "-m", "kb", "analyze", "--json", str(path)]
    if TIME.exists():
        argv = [str(TIME), "-f", "%M", *argv]
    proc = subprocess.Popen(
        argv,
        env=_env(data),
        cwd=REPO,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - started
    err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
    if proc.stderr:
        proc.stderr.close()
    if os.waitstatus_to_exitcode(status) != 0:
        raise RuntimeError(f"perfkb analyze failed: {err.strip().splitlines()[-1:]}")
    rss_kb = float(usage.ru_maxrss)
    if TIME.exists():
        rss_kb = float(err.strip().splitlines()[-1])
    return wall, usage.ru_utime + usage.ru_stime, rss_kb / 1024


class Serve(Server):
    """`python -m kb serve` (warm start, as `perfkb serve`) from this tree, in a child process:
    up to 300 s to start (a 10k KB is loaded and compiled first); its log is not kept (8
    clients for minutes would fill a pipe nobody reads). `env` adds to its environment
    (PERFKB_ANALYSIS_PROCESSES=0: analyses in the HTTP process's threads, as before the pool)."""

    start_timeout = 300.0
    cwd = REPO
    stderr = subprocess.DEVNULL

    def __init__(self, data_dir: Path, workers: int = 1, env: dict[str, str] | None = None):
        self.extra_env = env or {}
        super().__init__(data_dir, workers)

    def command(self) -> list[str]:
        workers = ["--workers", str(self.workers)] if self.workers > 1 else []
        return [sys.executable, "-m", "kb", "serve", "--port", str(self.port), *workers]

    def environment(self) -> dict[str, str]:
        return _env(self.data_dir) | self.extra_env

    def analyze(self, client: httpx.Client, text: str) -> float:
        return self.post(client, text)[0]

    def post(self, client: httpx.Client, text: str) -> tuple[float, float, float]:
        """(latency, slot wait, slot held) in seconds of one POST /api/analyze; the last two
        from the response's Server-Timing header (kb/web/limits.py SlotTiming)."""
        started = time.perf_counter()
        resp = client.post(self.url + "/api/analyze", json={"text": text}, timeout=120)
        resp.raise_for_status()
        took = time.perf_counter() - started
        timing = dict(TIMING.findall(resp.headers.get("server-timing", "")))
        return (
            took,
            float(timing.get("queue", "nan")) / 1000,
            float(timing.get("analyze", "nan")) / 1000,
        )


TIMING = re.compile(r"(\w+);dur=([\d.]+)")
REF_PATH = "/healthz"  # no store, no analysis: the HTTP floor of the same process
# requests per client: CLIENTS x 125 = 1,000 POSTs a server in quick mode, so its p99 is the
# 10th slowest request, not the slowest (80 requests made the p99 the maximum); GET /healthz alike
POST_PER_CLIENT = {False: 125, True: 250}  # full mode?
REF_PER_CLIENT = 126  # 3 rounds of 42
IN_PROCESS = {"PERFKB_ANALYSIS_PROCESSES": "0"}  # the server before kb/web/pool.py


def _settle(pid: int, limit: float = 120.0) -> None:
    """Wait until the server's processes are idle (under 50 ms of CPU in half a second): with
    several processes the first answers while the others still load and freeze the KB."""
    deadline = time.monotonic() + limit
    before = _cpu_seconds(pid)
    while time.monotonic() < deadline:
        time.sleep(0.5)
        now = _cpu_seconds(pid)
        if now - before < 0.05:
            return
        before = now


class Load(NamedTuple):
    """One burst of CLIENTS clients against one server (_concurrent)."""

    runs: list[tuple[float, float, float]]  # each request's (latency, slot wait, slot held) s
    cpu: float  # the server's CPU seconds per request (its processes and their children)
    wall: float  # the burst's wall seconds
    busiest: float  # CPU seconds of the server's busiest process over the burst
    client_cpu: float  # the clients' own CPU seconds per request (this process)


def _post(conn: http.client.HTTPConnection, body: bytes) -> tuple[float, float, float]:
    """Serve.post on the load's light client: (latency, slot wait, slot held) in seconds.

    Why not httpx here: the clients run on the server's two cores, and httpx cost 1.7-1.9 ms of
    CPU a request (8-10 % of all the CPU a load took), which the server did not get; the
    standard library's keep-alive connection sends the same request for a fraction of that."""
    started = time.perf_counter()
    conn.request("POST", "/api/analyze", body, {"Content-Type": "application/json"})
    resp = conn.getresponse()
    resp.read()
    took = time.perf_counter() - started
    if resp.status != 200:
        raise RuntimeError(f"POST /api/analyze answered {resp.status}")
    timing = dict(TIMING.findall(resp.getheader("server-timing", "")))
    return (
        took,
        float(timing.get("queue", "nan")) / 1000,
        float(timing.get("analyze", "nan")) / 1000,
    )


def _get(conn: http.client.HTTPConnection, path: str) -> tuple[float, float, float]:
    started = time.perf_counter()
    conn.request("GET", path)
    resp = conn.getresponse()
    resp.read()
    took = time.perf_counter() - started
    if resp.status != 200:
        raise RuntimeError(f"GET {path} answered {resp.status}")
    return took, float("nan"), float("nan")


def _concurrent(server: Serve, texts: list[str], per_client: int, path: str | None = None) -> Load:
    """CLIENTS threads, each on its own keep-alive connection, sending per_client requests back
    to back (a POST of the seed snippets in turn, client k starting at seed k, so the requests
    in flight carry different pastes; or a GET of `path`): every request's (latency, slot
    wait, slot held) in seconds, the server's CPU seconds per request over the run (its
    processes and their children), the run's wall seconds, the CPU seconds of the server's
    busiest process over the run (how evenly its processes shared the work), and the clients'
    own CPU seconds per request: they run in this process on the same cores as the server, so
    what they take is CPU the server did not get, and their threads share one interpreter
    lock, so a response can sit unread while another client thread holds it (hence the
    standard library's client, _post: 0.4 ms of CPU a request where httpx took 1.7-1.9 ms)."""
    out: list[tuple[float, float, float]] = []
    lock = threading.Lock()
    bodies = [json.dumps({"text": t}).encode() for t in texts]  # encoded once, sent many times

    def client(k: int) -> None:
        conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=120)
        try:
            if path is None:
                mine = [_post(conn, bodies[(k + j) % len(bodies)]) for j in range(per_client)]
            else:
                mine = [_get(conn, path) for _ in range(per_client)]
        finally:
            conn.close()
        with lock:
            out.extend(mine)

    before = _tree_cpu(server.proc.pid)
    clients_before = time.process_time()
    started = time.perf_counter()
    threads = [threading.Thread(target=client, args=(k,)) for k in range(CLIENTS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - started
    clients = time.process_time() - clients_before
    after = _tree_cpu(server.proc.pid)
    used = {p: after[p] - before.get(p, 0.0) for p in after}
    n = max(1, len(out))
    return Load(out, sum(used.values()) / n, wall, max(used.values(), default=0.0), clients / n)


def _ms(samples: list[float], q: float) -> float:
    return round(pct(samples, q) * 1000, 1)


def _load_extra(
    runs: list[tuple[float, float, float]],
    cpu: float,
    workers: int = 1,
    wall: float | None = None,
    client_cpu: float | None = None,
) -> dict[str, float | int]:
    """Where a load's latency went: percentiles of the whole request, of the wait for an
    analysis slot and of the analysis holding it (Server-Timing), the server's CPU per request,
    and the queueing floor: CLIENTS x CPU per request / workers, what the last of CLIENTS
    requests that arrive together waits when `workers` interpreters run them (analysis threads
    in one process share its one interpreter lock); with the run's wall time, requests/s and
    the cores the server used (its CPU seconds per second); with the clients' CPU per request,
    their share of all the CPU the load took (theirs and the server's: both run on this box's
    cores, so a client's share is CPU the server did not get)."""
    lat, queued, held = ([r[k] for r in runs] for k in range(3))
    extra: dict[str, float | int] = {"requests": len(runs)}
    for q in (50, 95, 99):
        extra[f"p{q}_ms"] = _ms(lat, q)
    extra["max_ms"] = round(max(lat, default=0.0) * 1000, 1)
    if all(q == q for q in queued):  # NaN when the header is missing (an older server)
        extra |= {"queue_p50_ms": _ms(queued, 50), "queue_p99_ms": _ms(queued, 99)}
        extra |= {"analyze_p50_ms": _ms(held, 50), "analyze_p99_ms": _ms(held, 99)}
    extra["server_cpu_ms_per_request"] = round(cpu * 1000, 1)
    extra["floor_ms"] = round(cpu * 1000 * CLIENTS / workers, 1)
    if wall:
        extra["requests_per_s"] = round(len(runs) / wall, 1)
        extra["server_cores_used"] = round(cpu * len(runs) / wall, 2)
    if client_cpu is not None:
        extra["client_cpu_ms_per_request"] = round(client_cpu * 1000, 2)
        extra["clients_cpu_share"] = round(client_cpu / (client_cpu + cpu), 3) if cpu else 0.0
        if wall:
            extra["client_cores_used"] = round(client_cpu * len(runs) / wall, 2)
    return extra


def _load_note(load: dict[str, float | int], ref: dict[str, float | int]) -> str:
    """One line of where the latency went, for the printed report."""
    note = f"{load['requests']} requests, p50/p95/p99 {load['p50_ms']}/{load['p95_ms']}/"
    note += f"{load['p99_ms']} ms, max {load.get('max_ms', load['p99_ms'])} ms"
    if "requests_per_s" in load:
        note += f", {load['requests_per_s']}/s on {load['server_cores_used']} cores"
    if "busiest_process_share" in load:
        note += f", busiest process {load['busiest_process_share']:.0%} of the CPU"
    if "queue_p50_ms" in load:
        note += f"; slot wait p50 {load['queue_p50_ms']} ms, held p50 {load['analyze_p50_ms']} ms"
    note += f"; server CPU {load['server_cpu_ms_per_request']} ms/request, queueing floor "
    note += f"{load['floor_ms']} ms"
    if "client_cpu_ms_per_request" in load:
        note += f"; clients {load['client_cpu_ms_per_request']} ms CPU/request, "
        note += f"{load['clients_cpu_share']:.0%} of the load's CPU"
    note += f"; GET {REF_PATH} p50/p99 {ref['p50_ms']}/{ref['p99_ms']} ms"
    return note


def _rounds(
    servers: dict[str, tuple[Serve, int]], texts: list[str], per_client: int, rounds: int
) -> tuple[dict[str, dict[str, float | int]], dict[str, dict[str, float | int]]]:
    """Each server's POST load and GET /healthz reference, measured in `rounds` rounds that visit
    the servers in turn (per_client requests per client split over the rounds), so a burst of
    other work on this shared box reaches every server alike; all warmed and idle first.
    `servers`: name -> (server, processes analysing in it)."""
    with httpx.Client() as c:
        for server, processes in servers.values():
            for text in texts * processes:  # warm-up, reaching every process
                server.analyze(c, text)
    for server, _ in servers.values():
        _settle(server.proc.pid)
    got: dict[str, dict[str, list[Load]]] = {name: {"post": [], "get": []} for name in servers}
    for k in range(rounds):
        share = per_client // rounds + (k < per_client % rounds)
        for name, (server, _) in servers.items():
            got[name]["get"].append(_concurrent(server, texts, REF_PER_CLIENT // rounds, REF_PATH))
            got[name]["post"].append(_concurrent(server, texts, share, None))
    load, ref = {}, {}
    for name, (_, processes) in servers.items():
        for kind, out, workers in (("post", load, processes), ("get", ref, 1)):
            parts: list[Load] = got[name][kind]
            runs = [r for p in parts for r in p.runs]
            n = max(1, len(runs))
            total = sum(p.cpu * len(p.runs) for p in parts)
            clients = sum(p.client_cpu * len(p.runs) for p in parts)
            wall = sum(p.wall for p in parts)
            out[name] = _load_extra(runs, total / n, workers, wall, clients / n)
            # how evenly the processes shared the work: 1/processes when even, 1 when one
            # process did all (a pool's HTTP process keeps a small share of its own)
            busiest = sum(p.busiest for p in parts) / total if total else 0.0
            out[name]["busiest_process_share"] = round(busiest, 2)
    return load, ref


def _serve_figures(
    data: Path, ref_data: Path, n: int, per_client: int, rounds: int = 3
) -> list[Figure]:
    """First analysis after start and after an edit, and latency percentiles under CLIENTS, for
    n entries, beside the same on the starter KB; each server's GET /healthz under the same
    CLIENTS is the reference a loaded box moves alike. `perfkb serve` as it starts by default
    (analyses in SERVE_PROCESSES processes, kb/web/pool.py), and the server before that pool,
    with one worker and with `--workers SERVE_PROCESSES` (uvicorn's processes, each analysing
    in its own threads), whose requests/s the pool's are compared with; all four servers run
    at once and are loaded in turn (_rounds)."""
    from contextlib import ExitStack

    texts = [p.read_text(errors="replace") for p in sorted(SEEDS.glob("*.txt"))]
    figures: list[Figure] = []
    first: dict[str, float] = {}
    with ExitStack() as stack, httpx.Client() as c:
        servers: dict[str, tuple[Serve, int]] = {}
        for name, d in (("starter", ref_data), ("large", data)):
            started = time.perf_counter()
            server = stack.enter_context(Serve(d))
            first[f"{name}_start"] = time.perf_counter() - started
            first[name] = server.analyze(c, texts[0])
            servers[name] = (server, SERVE_PROCESSES)
        servers["one"] = (stack.enter_context(Serve(data, env=IN_PROCESS)), 1)
        servers["workers"] = (
            stack.enter_context(Serve(data, workers=SERVE_PROCESSES, env=IN_PROCESS)),
            SERVE_PROCESSES,
        )
        load, ref = _rounds(servers, texts, per_client, rounds)
        from kb.settings import Settings
        from kb.store import Store

        store = Store(Settings(data_dir=data))  # an edit by another process
        try:
            entry = store.get(max(store.live_state()))
            edited = entry.model_copy(update={"title": entry.title + " (edited)"})
            store.update(edited, author="bench")
        finally:
            store.close()
        first["edit"] = servers["large"][0].analyze(c, texts[0])
    case = f"{n:,} entries, perfkb serve"
    figures.append(
        Figure(
            bench=BENCH,
            case=case,
            metric="first analysis after start",
            value=round(first["large"] * 1000, 1),
            unit="ms",
            reference="starter KB",
            ref_value=round(first["starter"] * 1000, 1),
            ratio=ratio(first["large"], first["starter"]),
            target=f"≤ {TARGET_FIRST_S * 1000:g} ms",
            met=first["large"] <= TARGET_FIRST_S,
            extra={
                "start_s": round(first["large_start"], 2),
                "starter_start_s": round(first["starter_start"], 2),
            },
        )
    )
    figures.append(
        Figure(
            bench=BENCH,
            case=case,
            metric="first analysis after an edit",
            value=round(first["edit"] * 1000, 1),
            unit="ms",
            reference="starter KB, first after start",
            ref_value=round(first["starter"] * 1000, 1),
            ratio=ratio(first["edit"], first["starter"]),
            target=f"≤ {TARGET_FIRST_S * 1000:g} ms",
            met=first["edit"] <= TARGET_FIRST_S,
        )
    )
    metric = f"POST /api/analyze p99, {CLIENTS} clients"
    pool = f"{SERVE_PROCESSES} analysis processes"
    before = "analyses in the HTTP process"
    for kb_case, name, reference, ref_value, target in (
        (f"{case} ({pool})", "large", "starter KB", load["starter"]["p99_ms"], True),
        (
            f"starter KB, perfkb serve ({pool})",
            "starter",
            f"GET {REF_PATH} p99",
            ref["starter"]["p99_ms"],
            True,
        ),
        (f"{case}, {before}", "one", pool, load["large"]["p99_ms"], False),
        (
            f"{case} --workers {SERVE_PROCESSES}, {before}",
            "workers",
            pool,
            load["large"]["p99_ms"],
            False,
        ),
    ):
        p99 = float(load[name]["p99_ms"])
        figures.append(
            Figure(
                bench=BENCH,
                case=kb_case,
                metric=metric,
                value=p99,
                unit="ms",
                reference=reference,
                ref_value=float(ref_value),
                ratio=ratio(p99, float(ref_value)),
                target=f"≤ {TARGET_P99_MS:g} ms" if target else "",
                met=p99 <= TARGET_P99_MS if target else None,
                note=_load_note(load[name], ref[name]),
                extra={**load[name], **{f"{REF_PATH}_{k}": v for k, v in ref[name].items()}},
            )
        )
    one = float(load["one"]["requests_per_s"])
    for name, label in (("large", pool), ("workers", f"--workers {SERVE_PROCESSES}, {before}")):
        rps = float(load[name]["requests_per_s"])
        r = ratio(rps, one)
        figures.append(
            Figure(
                bench=BENCH,
                case=f"{case} ({label})",
                metric=f"POST /api/analyze requests/s, {CLIENTS} clients",
                value=rps,
                unit="req/s",
                reference=f"one process, {before}",
                ref_value=one,
                ratio=r,
                target=f"≈ {SERVE_PROCESSES}× (one per core)" if name == "large" else "",
                met=(r is not None and r >= 0.9 * SERVE_PROCESSES) if name == "large" else None,
                note=f"the server used {load[name]['server_cores_used']} cores, its busiest "
                f"process did {load[name]['busiest_process_share']:.0%} of its work; the one "
                f"process used {load['one']['server_cores_used']} cores; load average "
                f"{os.getloadavg()[0]:.1f}",
            )
        )
    figures.append(
        Figure(
            bench=BENCH,
            case=case,
            metric=f"GET {REF_PATH} p99, {CLIENTS} clients (the reference)",
            value=float(ref["large"]["p99_ms"]),
            unit="ms",
            reference="starter KB",
            ref_value=float(ref["starter"]["p99_ms"]),
            ratio=ratio(float(ref["large"]["p99_ms"]), float(ref["starter"]["p99_ms"])),
            extra=ref["large"],
        )
    )
    return figures


def run(full: bool) -> list[Figure]:
    sizes = [10_000, 50_000] if full else [10_000]
    reps = 7 if full else 3
    seed = _seed()
    figures: list[Figure] = []
    with tempfile.TemporaryDirectory(prefix="perfkb-bench-scale-") as tmp:
        dirs = {n: Path(tmp) / f"kb-{n}" for n in [0, *sizes]}
        built = {n: build_kb(d, n) for n, d in dirs.items()}
        first = {n: analyze_once(d, seed) for n, d in dirs.items()}  # validates, compiles, saves
        samples: dict[int, list[tuple[float, float, float]]] = {n: [] for n in dirs}
        for _ in range(reps):
            for n, d in dirs.items():
                samples[n].append(analyze_once(d, seed))
        med = {
            n: (
                statistics.median(s[0] for s in v),
                statistics.median(s[1] for s in v),
                max(s[2] for s in v),
            )
            for n, v in samples.items()
        }
        for n in sizes:
            target = TARGET_10K if n <= 10_000 else TARGET_50K
            case = f"perfkb analyze {seed.name}, {n:,} entries"
            extra = {
                "runs": reps,
                "kb_build_s": round(built[n], 1),
                "first_run_after_change_s": round(first[n][0], 2),
                "first_run_cpu_s": round(first[n][1], 2),
                "first_run_rss_mb": round(first[n][2]),
            }
            for metric, k in (("CPU, median", 1), ("wall, median", 0)):
                r = ratio(med[n][k], med[0][k])
                figures.append(
                    Figure(
                        bench=BENCH,
                        case=case,
                        metric=metric,
                        value=round(med[n][k] * 1000, 1),
                        unit="ms",
                        reference="starter KB",
                        ref_value=round(med[0][k] * 1000, 1),
                        ratio=r,
                        target=f"≤ {target:g}×",
                        met=r is not None and r <= target,
                        extra=extra,
                    )
                )
            figures.append(
                Figure(
                    bench=BENCH,
                    case=case,
                    metric="peak RSS",
                    value=round(med[n][2], 1),
                    unit="MB",
                    reference="starter KB",
                    ref_value=round(med[0][2], 1),
                    ratio=ratio(med[n][2], med[0][2]),
                    target=f"≤ {TARGET_RSS_MB} MB" if n >= 50_000 else "",
                    met=(med[n][2] <= TARGET_RSS_MB) if n >= 50_000 else None,
                    extra=extra,
                )
            )
        figures += _serve_figures(dirs[sizes[0]], dirs[0], sizes[0], POST_PER_CLIENT[full])
    return figures
