"""The KB at scale (issue #19): `perfkb analyze` of a seed snippet with 10,000 (and, in --full,
50,000) synthetic entries against the starter KB, measured in the same run; and `perfkb serve`
with the large KB: the first analysis after start and after an edit, and the latency of
POST /api/analyze under 8 concurrent clients, against the same server holding the starter KB.

Each KB is built first (synthetic entries from benchmarks/synth_kb.py, added through Store as
`perfkb import` would), then every `perfkb analyze` runs once to save its compiled KB (reported
as "first run after a change": it validates, compiles and saves), and then the sizes are timed
round-robin, so a burst of load on this shared box reaches each alike. CPU time (the child's
user + system from wait4) is the steadier figure here; peak RSS is ru_maxrss of the child, what
`/usr/bin/time -f %M` prints.
"""

from __future__ import annotations

import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx

from benchmarks.report import REPO, Figure, pct, ratio
from benchmarks.synth_kb import synthetic_entries

BENCH = "scale"
SEEDS = REPO.parent / "shared" / "seeds"
TARGET_10K, TARGET_50K = 1.5, 2.0  # x the starter KB's analyze time
TARGET_RSS_MB = 300
TARGET_FIRST_S = 0.3
TARGET_P99_MS = 100.0
CLIENTS = 8


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


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Serve:
    """`python -m kb serve` (warm start, as `perfkb serve`) in a child process."""

    def __init__(self, data: Path) -> None:
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "kb", "serve", "--port", str(self.port)],
            env=_env(data),
            cwd=REPO,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )

    def __enter__(self) -> Serve:
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError("perfkb serve exited")
            try:
                if httpx.get(self.url + "/static/perfkb.css", timeout=2).status_code == 200:
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
        raise RuntimeError("perfkb serve did not answer within 300 s")

    def __exit__(self, *exc: object) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()

    def analyze(self, client: httpx.Client, text: str) -> float:
        started = time.perf_counter()
        resp = client.post(self.url + "/api/analyze", json={"text": text}, timeout=120)
        resp.raise_for_status()
        return time.perf_counter() - started


def _concurrent(server: Serve, texts: list[str], per_client: int) -> list[float]:
    """Latencies (s) of CLIENTS threads each POSTing the seeds in turn, per_client times."""
    out: list[float] = []
    lock = threading.Lock()

    def client(k: int) -> None:
        with httpx.Client() as c:
            mine = [server.analyze(c, texts[(k + j) % len(texts)]) for j in range(per_client)]
        with lock:
            out.extend(mine)

    threads = [threading.Thread(target=client, args=(k,)) for k in range(CLIENTS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return out


def _serve_figures(data: Path, ref_data: Path, n: int, per_client: int) -> list[Figure]:
    """First analysis after start and after an edit, and p99 under CLIENTS, for n entries,
    beside the same on the starter KB."""
    texts = [p.read_text(errors="replace") for p in sorted(SEEDS.glob("*.txt"))]
    figures: list[Figure] = []
    lat: dict[str, list[float]] = {}
    first: dict[str, float] = {}
    for name, d in (("starter", ref_data), ("large", data)):
        started = time.perf_counter()
        with Serve(d) as server, httpx.Client() as c:
            first[f"{name}_start"] = time.perf_counter() - started
            first[name] = server.analyze(c, texts[0])
            for text in texts:  # warm-up
                server.analyze(c, text)
            lat[name] = _concurrent(server, texts, per_client)
            if name == "large":
                from kb.settings import Settings
                from kb.store import Store

                store = Store(Settings(data_dir=d))  # an edit by another process
                try:
                    entry = store.get(max(store.live_state()))
                    edited = entry.model_copy(update={"title": entry.title + " (edited)"})
                    store.update(edited, author="bench")
                finally:
                    store.close()
                first["edit"] = server.analyze(c, texts[0])
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
    p99 = pct(lat["large"], 99) * 1000
    ref99 = pct(lat["starter"], 99) * 1000
    figures.append(
        Figure(
            bench=BENCH,
            case=case,
            metric=f"POST /api/analyze p99, {CLIENTS} clients",
            value=round(p99, 1),
            unit="ms",
            reference="starter KB",
            ref_value=round(ref99, 1),
            ratio=ratio(p99, ref99),
            target=f"≤ {TARGET_P99_MS:g} ms",
            met=p99 <= TARGET_P99_MS,
            extra={
                "requests": len(lat["large"]),
                "p50_ms": round(pct(lat["large"], 50) * 1000, 1),
                "starter_p50_ms": round(pct(lat["starter"], 50) * 1000, 1),
            },
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
        figures += _serve_figures(dirs[sizes[0]], dirs[0], sizes[0], 10 if full else 4)
    return figures
