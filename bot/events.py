"""Remember which Slack events were handled, so a retry or a twin event is never answered twice.

Slack redelivers an event (X-Slack-Retry-Num) when the first ack was slow or lost, and one user
action can arrive as two events (a file upload is a `message` with files *and* a `file_shared`;
a mention is a `message` *and* an `app_mention`). The web server and the Socket Mode process may
both run, so the record lives in a small SQLite file in the data dir, not in memory.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from pathlib import Path

KEEP_S = 3 * 24 * 3600  # Slack retries within minutes; three days is plenty
PRUNE_EVERY = 500


class EventLog:
    """`first_time(key)` is True exactly once per key, across threads and processes."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._inserts = 0
        with self._connect() as db:
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("CREATE TABLE IF NOT EXISTS seen (key TEXT PRIMARY KEY, at REAL NOT NULL)")

    def _connect(self) -> sqlite3.Connection:
        return sqlite3.connect(self.path, timeout=10, isolation_level=None)

    def first_time(self, key: str) -> bool:
        now = time.time()
        db = self._connect()
        try:
            cur = db.execute("INSERT OR IGNORE INTO seen (key, at) VALUES (?, ?)", (key, now))
            fresh = cur.rowcount == 1
            with self._lock:
                self._inserts += 1
                prune = self._inserts % PRUNE_EVERY == 0
            if prune:
                db.execute("DELETE FROM seen WHERE at < ?", (now - KEEP_S,))
            return fresh
        finally:
            db.close()

    def seen(self, key: str) -> bool:
        db = self._connect()
        try:
            return db.execute("SELECT 1 FROM seen WHERE key = ?", (key,)).fetchone() is not None
        finally:
            db.close()
