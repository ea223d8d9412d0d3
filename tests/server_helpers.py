"""Start the real web server (`python -m kb serve`, so the checkout under test is what runs)
on a free port, wait until it answers, stop it afterwards; and read a process's CPU time and
memory from /proc, for tests that measure what a request costs the server; and read the
Server-Timing header an analysis answers with."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parents[1]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclass
class Server:
    url: str
    port: int
    proc: subprocess.Popen


@contextmanager
def serve(data_dir: Path, env: dict[str, str] | None = None) -> Iterator[Server]:
    port = free_port()
    base = {k: v for k, v in os.environ.items() if not k.startswith(("PERFKB_", "SLACK_"))}
    base |= {"PERFKB_DATA_DIR": str(data_dir), "PERFKB_LOG_LEVEL": "WARNING"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "kb", "serve", "--port", str(port)],
        cwd=REPO,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=base | (env or {}),
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 90
        while True:
            assert proc.poll() is None, proc.stderr.read().decode()
            try:
                if httpx.get(url + "/", timeout=5).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert time.monotonic() < deadline, "the server did not start within 90 s"
            time.sleep(0.2)
        yield Server(url, port, proc)
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def cpu_seconds(pid: int) -> float:
    """User + system CPU time so far of a process and its live descendants (`perfkb serve`
    analyses in a pool of child processes, kb/web/pool.py; uvicorn's workers are children)."""
    stats: dict[int, tuple[int, int]] = {}  # pid -> (parent, ticks)
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
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
    return sum(stats[p][1] for p in tree if p in stats) / os.sysconf("SC_CLK_TCK")


def rss_kb(pid: int, key: str = "VmRSS") -> int:
    """A memory figure of /proc/PID/status in kB: VmRSS now, VmHWM the peak so far."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1])
    raise AssertionError(f"no {key} in /proc/{pid}/status")


def server_timing(response: httpx.Response) -> dict[str, float]:
    """An analysis's Server-Timing header (kb/web/limits.py SlotTiming: the wait for a slot and
    the time holding it) as name -> milliseconds; each part must be `name;dur=N.N`."""
    parts = {}
    for part in response.headers["server-timing"].split(","):
        m = re.fullmatch(r"(\w+);dur=(\d+\.\d)", part.strip())
        assert m is not None, response.headers["server-timing"]
        parts[m[1]] = float(m[2])
    return parts
