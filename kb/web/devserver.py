"""Run the real app under uvicorn in a background thread on a free port: for the test suite
and scripts/screenshots.py, which need a server a browser or an HTTP client can reach."""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import uvicorn

from kb.entry_yaml import read_entries
from kb.settings import Settings
from kb.web.app import create_app
from kb.web.server import HTTP_PROTOCOL

ENTRIES_DIR = Path(__file__).resolve().parent.parent / "entries"


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]


@contextmanager
def running_server(
    settings: Settings, *, host: str = "127.0.0.1", http: type[asyncio.Protocol] = HTTP_PROTOCOL
) -> Iterator[str]:
    """Yield the base URL ('http://127.0.0.1:PORT') while the server runs. `http` picks the
    protocol class (tests run the h11 fallback with it too)."""
    port = free_port(host)
    config = uvicorn.Config(
        create_app(settings),
        host=host,
        port=port,
        log_level="warning",
        lifespan="on",
        http=http,  # as `perfkb serve`: request heads capped (431)
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, name=f"perfkb-web-{port}", daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError(f"perfkb web server did not start on {host}:{port}")
        time.sleep(0.02)
    try:
        yield f"http://{host}:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)


def seed_entries(settings: Settings, directory: Path = ENTRIES_DIR) -> list[str]:
    """Put the packaged example entries into the store at settings.data_dir; their ids."""
    from kb.store import Store

    store = Store(settings)
    try:
        ids = []
        for path in sorted(directory.glob("*.yaml")):
            for entry in read_entries(path):
                store.upsert(entry, author="seed")
                ids.append(entry.id)
        return ids
    finally:
        store.close()
