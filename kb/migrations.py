"""Numbered schema migrations for the SQLite store.

Each step runs once, inside the same BEGIN IMMEDIATE transaction that records it in
`schema_version`, so two processes opening a fresh data dir at once cannot both apply it.
Append new steps; never edit a step that has shipped.
"""

from __future__ import annotations

import hashlib
import sqlite3
import uuid
from datetime import UTC, datetime

from kb.errors import MigrationError

MIGRATIONS: list[tuple[int, str, str]] = [
    (
        1,
        "entries, revisions, feedback, analyses",
        """
        CREATE TABLE meta (
            key   TEXT PRIMARY KEY,
            value TEXT NOT NULL
        );
        CREATE TABLE entries (
            id         TEXT PRIMARY KEY,
            title      TEXT NOT NULL,
            data       TEXT NOT NULL,             -- the entry as JSON (kb.models.Entry)
            deleted    INTEGER NOT NULL DEFAULT 0,
            deleted_at TEXT,
            created    TEXT NOT NULL,
            updated    TEXT NOT NULL,
            rev        INTEGER NOT NULL           -- number of the entry's latest revision
        );
        CREATE INDEX entries_live ON entries (deleted, id);
        CREATE TABLE revisions (
            id             INTEGER PRIMARY KEY AUTOINCREMENT,  -- global order: the index stamp
            entry_id       TEXT NOT NULL,
            rev            INTEGER NOT NULL,
            author         TEXT NOT NULL,
            at             TEXT NOT NULL,
            action         TEXT NOT NULL,
            changed_fields TEXT NOT NULL,                      -- JSON list
            snapshot       TEXT,                               -- entry JSON; NULL for delete
            UNIQUE (entry_id, rev)
        );
        CREATE TABLE feedback (
            entry_id    TEXT NOT NULL,
            fingerprint TEXT NOT NULL,
            user        TEXT NOT NULL,
            verdict     TEXT NOT NULL CHECK (verdict IN ('right', 'wrong')),
            at          TEXT NOT NULL,
            PRIMARY KEY (user, entry_id, fingerprint)
        );
        CREATE INDEX feedback_entry ON feedback (entry_id);
        CREATE INDEX feedback_fingerprint ON feedback (fingerprint);
        CREATE TABLE analyses (
            id          TEXT PRIMARY KEY,
            created     TEXT NOT NULL,
            text        TEXT NOT NULL,
            result_json TEXT NOT NULL
        );
        """,
    ),
    (
        2,
        "entries.checksum: validated on write, trusted on load",
        """
        ALTER TABLE entries ADD COLUMN checksum TEXT;  -- data_checksum(data) when perfkb wrote it
        CREATE INDEX entries_state ON entries (deleted, id, rev, checksum);
        """,
    ),
    (
        3,
        "meta.entries_stamp: a new random stamp with every change to entries",
        """
        INSERT INTO meta (key, value) VALUES ('entries_stamp', lower(hex(randomblob(16))));
        """,
    ),
]

# A write that changes `data` without a new checksum (sqlite3 by hand, another tool) marks the
# row unverified, so the next load validates it again instead of trusting it. Kept apart from
# the step's script: its body holds a semicolon, which _statements would split on.
_UNVERIFY_TRIGGER = (
    "CREATE TRIGGER entries_unverified AFTER UPDATE OF data ON entries"
    " WHEN NEW.checksum IS OLD.checksum AND NEW.data IS NOT OLD.data"
    " BEGIN UPDATE entries SET checksum = NULL WHERE id = NEW.id; END"
)


# Step 3: every statement that inserts, changes or removes a row of `entries`, perfkb's or
# anyone's (sqlite3 by hand, another tool: the triggers are the database's), gives the KB a new
# random stamp in the same transaction. Kb.store.Store.state_key reads that one row instead of
# digesting every entry's (id, rev, checksum): 36 ms CPU at 50,000 entries, paid by every
# `perfkb analyze`. Random, not a counter: a restored backup carries the stamp of the state it
# copied, and a counter would give the same number to two states that diverged from it.
_STAMP_TRIGGERS = [
    f"CREATE TRIGGER entries_stamp_{event.lower()} AFTER {event} ON entries"
    " BEGIN UPDATE meta SET value = lower(hex(randomblob(16))) WHERE key = 'entries_stamp'; END"
    for event in ("INSERT", "UPDATE", "DELETE")
]


def data_checksum(data: str) -> str:
    """The checksum of an entry's stored JSON (kb.store writes it beside the row; loading
    trusts a row whose checksum still matches). Not a secret: it catches edits made behind
    perfkb's back, not an attacker who can write the database (they could write anything)."""
    return hashlib.blake2b(data.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()


def _backfill_checksums(conn: sqlite3.Connection) -> None:
    """Step 2 on an existing KB: rows that validate now get their checksum (once, here); a row
    that does not stays unverified (NULL) and is validated and reported on every load."""
    from pydantic import ValidationError

    from kb.models import Entry

    rows = conn.execute("SELECT id, data FROM entries").fetchall()
    for entry_id, data in rows:
        try:
            Entry.model_validate_json(data)
        except (ValidationError, ValueError, RecursionError):
            continue
        conn.execute(
            "UPDATE entries SET checksum = ? WHERE id = ?", (data_checksum(data), entry_id)
        )


LATEST = MIGRATIONS[-1][0]


def current_version(conn: sqlite3.Connection) -> int:
    row = conn.execute(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name = 'schema_version'"
    ).fetchone()
    if row is None:
        return 0
    (version,) = conn.execute("SELECT COALESCE(MAX(version), 0) FROM schema_version").fetchone()
    return int(version)


def migrate(conn: sqlite3.Connection) -> int:
    """Bring the database up to LATEST; returns the version it is at. `conn` must be in
    autocommit mode (isolation_level=None) so the explicit transaction below is the only one."""
    if current_version(conn) == LATEST:
        return LATEST
    conn.execute("BEGIN IMMEDIATE")
    try:
        conn.execute(
            "CREATE TABLE IF NOT EXISTS schema_version ("
            " version INTEGER PRIMARY KEY, description TEXT NOT NULL, applied_at TEXT NOT NULL)"
        )
        version = current_version(conn)
        if version > LATEST:
            raise MigrationError(
                f"the database is at schema version {version}, newer than this perfkb "
                f"understands ({LATEST}): upgrade perfkb"
            )
        for number, description, sql in MIGRATIONS:
            if number <= version:
                continue
            for statement in _statements(sql):
                conn.execute(statement)
            if number == 1:
                conn.execute(
                    "INSERT INTO meta (key, value) VALUES ('store_id', ?)", (uuid.uuid4().hex,)
                )
            if number == 2:
                conn.execute(_UNVERIFY_TRIGGER)
                _backfill_checksums(conn)
            if number == 3:
                for trigger in _STAMP_TRIGGERS:
                    conn.execute(trigger)
            conn.execute(
                "INSERT INTO schema_version (version, description, applied_at) VALUES (?, ?, ?)",
                (number, description, datetime.now(UTC).isoformat(timespec="seconds")),
            )
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    return LATEST


def _statements(sql: str) -> list[str]:
    """Split a migration script on semicolons after dropping -- comments (our scripts hold no
    semicolons or dashes in literals);
    executescript() would commit our transaction, so we run statements one by one."""
    code = "\n".join(ln.split("--", 1)[0].rstrip() for ln in sql.splitlines())
    return [stmt.strip() for stmt in code.split(";") if stmt.strip()]
