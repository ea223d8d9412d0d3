"""`perfkb serve` with several worker processes (PERFKB_WORKERS / --workers): two workers start
on the same data dir, and searches over new connections (which the kernel spreads over the
workers) all see a change another process made just before."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
from conftest import entry_data

from kb.models import validate_entry
from kb.settings import Settings
from kb.store import Store

PERFKB = Path(sys.executable).with_name("perfkb")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _children(pid: int) -> list[int]:
    out = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True).stdout
    return [int(p) for p in out.split()]


def test_two_workers_serve_the_same_store_and_see_each_others_writes(tmp_path):
    data = tmp_path / "kb"
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PERFKB_", "SLACK_"))}
    env |= {"PERFKB_WORKERS": "2", "PERFKB_DATA_DIR": str(data), "PERFKB_LOG_LEVEL": "WARNING"}
    proc = subprocess.Popen(
        [str(PERFKB), "serve", "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=env,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            assert proc.poll() is None, proc.stderr.read().decode()
            try:
                if httpx.get(url + "/", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            time.sleep(0.2)
        workers = [p for p in _children(proc.pid) if b"spawn_main" in _cmdline(p)]
        assert len(workers) == 2, _children(proc.pid)
        with Store(Settings(data_dir=data)) as store:  # a third process writes
            for i in range(3):
                store.add(
                    validate_entry(entry_data(f"w-{i}", symptom=f"workermarker{i} seen")),
                    author="test",
                )
                with httpx.Client(base_url=url, timeout=10) as client:
                    for _ in range(8):  # new connections: the kernel spreads them over workers
                        page = client.get(
                            f"/search?q=workermarker{i}", headers={"connection": "close"}
                        )
                        assert page.status_code == 200 and f"/entries/w-{i}" in page.text
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""
