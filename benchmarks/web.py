"""Web: requests per second and latency percentiles of the search page and POST /api/analyze under
wrk (Debian's package) against `perfkb serve` (one uvicorn process on 127.0.0.1, the packaged
entries loaded by `perfkb init`), 30 s per endpoint in full mode, 5 s in quick mode.

Reference in the same run: a static file from the same server (/static/perfkb.css), the
ceiling of this uvicorn process on this machine. Each figure also carries the server's CPU time
per request (user + system of the server and its worker processes, from /proc, over the wrk run):
on a shared machine it moves less than requests/s. The search page is run a second time against
`perfkb serve --workers 2` (PERFKB_WORKERS=2) with its own static reference. When wrk is missing
the benchmark tries `apt-get install -y wrk`, then falls back to an asyncio/httpx load generator
in this file and says so in the figures' notes.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

import httpx

from benchmarks.latency import SEEDS
from benchmarks.report import Figure, pct, ratio
from benchmarks.streaming import VENV_BIN, init_data_dir, perfkb_env

BENCH = "web"
TARGET_RPS = 300.0
TARGET_P99_MS = 200.0
CONNECTIONS = 16
SEARCH_PATH = "/search?q=log+file+sync"
ANALYZE_SNIPPET = "001_truss_shmdt.txt"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def ensure_wrk() -> str | None:
    found = shutil.which("wrk")
    if found:
        return found
    if os.geteuid() == 0 and shutil.which("apt-get"):
        subprocess.run(["apt-get", "install", "-y", "-qq", "wrk"], capture_output=True, timeout=300)
    return shutil.which("wrk")


def _tree_cpu(pid: int) -> dict[int, float]:
    """User + system CPU seconds so far of `pid` and of each live descendant: uvicorn's worker
    processes and the analysis processes of `perfkb serve` (kb/web/pool.py; a worker's own
    pool is its children)."""
    stats: dict[int, tuple[int, int]] = {}  # pid -> (parent, ticks)
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:  # exited meanwhile
            continue
        stats[int(entry.name)] = (int(fields[1]), int(fields[11]) + int(fields[12]))
    tree, grew = {pid}, True
    while grew:
        more = {p for p, (parent, _) in stats.items() if parent in tree} - tree
        tree |= more
        grew = bool(more)
    tick = os.sysconf("SC_CLK_TCK")
    return {p: stats[p][1] / tick for p in tree if p in stats}


def _cpu_seconds(pid: int) -> float:
    """User + system CPU so far of `pid` and its live descendants."""
    return sum(_tree_cpu(pid).values())


class Server:
    """`perfkb serve` in a child process, stopped on exit; ready once it serves its stylesheet.
    benchmarks/scale.py's Serve runs `python -m kb serve` from the tree the same way."""

    start_timeout = 60.0  # seconds
    cwd: Path | None = None
    stderr = subprocess.PIPE  # read for the reason when the server exits at start

    def __init__(self, data_dir: Path, workers: int = 1) -> None:
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.data_dir, self.workers = data_dir, workers
        self.proc = subprocess.Popen(
            self.command(),
            env=self.environment(),
            cwd=self.cwd,
            stdout=subprocess.DEVNULL,
            stderr=self.stderr,
        )

    def command(self) -> list[str]:
        return [str(VENV_BIN / "perfkb"), "serve", "--port", str(self.port)]

    def environment(self) -> dict[str, str]:
        env = perfkb_env(self.data_dir)
        env["PERFKB_WORKERS"] = str(self.workers)
        return env

    def __enter__(self) -> Server:
        deadline = time.monotonic() + self.start_timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                err = (self.proc.stderr.read() if self.proc.stderr else b"") or b""
                last = err.decode(errors="replace").strip().splitlines()[-1:]
                raise RuntimeError(f"perfkb serve exited: {last}")
            try:
                if httpx.get(self.url + "/static/perfkb.css", timeout=2).status_code == 200:
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
        raise RuntimeError(f"perfkb serve did not answer within {self.start_timeout:g} s")

    def __exit__(self, *exc: object) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def _ms(value: str, unit: str) -> float:
    return float(value) * {"us": 0.001, "ms": 1.0, "s": 1000.0, "m": 60000.0}[unit]


def parse_wrk(out: str) -> dict:
    """Requests/sec, latency percentiles (ms), request count and errors from `wrk --latency`."""
    res: dict = {"rps": float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))}
    for q in ("50", "90", "99"):
        m = re.search(rf"^\s+{q}%\s+([\d.]+)(us|ms|s|m)\s*$", out, re.M)
        res[f"p{q}_ms"] = _ms(*m.groups()) if m else None
    m = re.search(r"(\d+) requests in", out)
    res["requests"] = int(m.group(1)) if m else 0
    m = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    res["non_2xx"] = int(m.group(1)) if m else 0
    m = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", out)
    res["socket_errors"] = sum(int(x) for x in m.groups()) if m else 0
    return res


def run_wrk(wrk: str, url: str, seconds: int, body: str | None = None) -> dict:
    with tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False) as script:
        if body is not None:
            script.write(
                'wrk.method = "POST"\n'
                'wrk.headers["Content-Type"] = "application/json"\n'
                f"wrk.body = {json.dumps(body)}\n"
            )
    try:
        cmd = [wrk, "-t1", f"-c{CONNECTIONS}", f"-d{seconds}s", "--latency", "-s", script.name, url]
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=seconds + 60).stdout
    finally:
        os.unlink(script.name)
    return parse_wrk(out)


async def _load(url: str, seconds: float, body: str | None) -> dict:
    """The fallback load generator: CONNECTIONS clients in a loop, one request at a time each."""
    lat: list[float] = []
    errors = 0
    deadline = time.perf_counter() + seconds
    limits = httpx.Limits(max_connections=CONNECTIONS)
    async with httpx.AsyncClient(limits=limits, timeout=30) as client:

        async def worker() -> None:
            nonlocal errors
            while time.perf_counter() < deadline:
                t = time.perf_counter()
                if body is None:
                    r = await client.get(url)
                else:
                    r = await client.post(
                        url, content=body, headers={"content-type": "application/json"}
                    )
                lat.append((time.perf_counter() - t) * 1000)
                errors += r.status_code >= 400

        started = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(CONNECTIONS)))
        elapsed = time.perf_counter() - started
    return {
        "rps": len(lat) / elapsed,
        "p50_ms": pct(lat, 50),
        "p90_ms": pct(lat, 90),
        "p99_ms": pct(lat, 99),
        "requests": len(lat),
        "non_2xx": errors,
        "socket_errors": 0,
    }


def run(full: bool) -> list[Figure]:
    seconds = 30 if full else 5
    wrk = ensure_wrk()
    tool = "wrk" if wrk else "httpx fallback (wrk not installed)"
    body = json.dumps({"text": (SEEDS / ANALYZE_SNIPPET).read_text(encoding="utf-8")})

    def load(server: Server, path: str, payload: str | None = None) -> dict:
        before = _cpu_seconds(server.proc.pid)
        if wrk:
            res = run_wrk(wrk, server.url + path, seconds, payload)
        else:
            res = asyncio.run(_load(server.url + path, seconds, payload))
        used = _cpu_seconds(server.proc.pid) - before
        res["cpu_ms_per_request"] = (
            round(used * 1000 / res["requests"], 2) if res["requests"] else None
        )
        return res

    with tempfile.TemporaryDirectory(prefix="perfkb-bench-web-") as tmp:
        data_dir = Path(tmp) / "data"
        init_data_dir(data_dir)
        with Server(data_dir) as server:
            check = httpx.post(server.url + "/api/analyze", content=body, timeout=30,
                               headers={"content-type": "application/json"})  # fmt: skip
            if check.status_code != 200:
                raise RuntimeError(f"/api/analyze answered {check.status_code}: {check.text[:200]}")
            static1 = load(server, "/static/perfkb.css")
            search = load(server, SEARCH_PATH)
            analyze = load(server, "/api/analyze", body)
        with Server(data_dir, workers=2) as server:
            static2 = load(server, "/static/perfkb.css")
            search2 = load(server, SEARCH_PATH)
    figures: list[Figure] = []
    for name, res, target, static in (
        (f"search page {SEARCH_PATH}", search, True, static1),
        (f"POST /api/analyze ({ANALYZE_SNIPPET})", analyze, False, static1),
        (f"search page {SEARCH_PATH}, 2 workers", search2, False, static2),
    ):
        errors = res["non_2xx"] + res["socket_errors"]
        note = f"{tool}, {CONNECTIONS} connections, {seconds} s, {res['requests']} requests"
        note += f", {errors} errors" if errors else ""
        note += f"; server CPU {res['cpu_ms_per_request']} ms/request"
        note += f" (static file {static['cpu_ms_per_request']})"
        figures += [
            Figure(
                bench=BENCH,
                case=name,
                metric="requests/s",
                value=round(res["rps"], 1),
                unit="req/s",
                reference="static file",
                ref_value=round(static["rps"], 1),
                ratio=ratio(res["rps"], static["rps"]),
                target=f"≥ {TARGET_RPS:g} req/s" if target else "",
                met=(res["rps"] >= TARGET_RPS and not errors) if target else None,
                note=note,
                extra={**res, "static_cpu_ms_per_request": static["cpu_ms_per_request"]},
            ),
            Figure(
                bench=BENCH,
                case=name,
                metric="latency p99",
                value=round(res["p99_ms"], 1) if res["p99_ms"] is not None else None,
                unit="ms",
                reference="static file p99",
                ref_value=round(static["p99_ms"], 1) if static["p99_ms"] is not None else None,
                ratio=ratio(res["p99_ms"], static["p99_ms"]),
                target=f"≤ {TARGET_P99_MS:g} ms" if target else "",
                met=(res["p99_ms"] is not None and res["p99_ms"] <= TARGET_P99_MS)
                if target
                else None,
                extra={"p50_ms": res["p50_ms"], "p90_ms": res["p90_ms"]},
            ),
        ]
    return figures
