"""Backups of the SQLite store: written online with SQLite's backup API, checked before use.

A backup is one self-contained SQLite file (rollback journal, no -wal beside it) holding the
same tables as the live store. `write_backup` copies a consistent snapshot while other
processes keep writing (WAL readers never block writers), checks the copy and renames it into
place, so a crash leaves either the old file or the whole new one. `inspect_backup` is what
restore trusts: the file must be an SQLite database that passes integrity_check, carries a
schema this perfkb understands and holds only entries that validate. `prepare_restore` turns a
checked backup into a working copy the store then copies over its live database.
"""

from __future__ import annotations

import os
import secrets
import sqlite3
from pathlib import Path
from urllib.parse import quote

from pydantic import BaseModel, ValidationError

from kb.errors import BackupError
from kb.migrations import LATEST, MigrationError, current_version, migrate
from kb.models import Entry

SQLITE_HEADER = b"SQLite format 3\x00"
TABLES = ("meta", "entries", "revisions", "feedback", "analyses", "schema_version")


class BackupInfo(BaseModel):
    path: str
    size_bytes: int
    schema_version: int
    entries: int  # live entries
    deleted: int
    revisions: int
    analyses: int
    latest_revision: int
    # live entries that do not validate (only a backup being written may hold them: restore
    # refuses such a file); `perfkb check --repair` quarantines them in the live KB
    unreadable: list[str] = []


def _tmp_beside(path: Path, tag: str) -> Path:
    return path.with_name(f".{path.name}.{tag}-{os.getpid()}-{secrets.token_hex(4)}")


def _fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _remove(path: Path) -> None:
    for p in (path, Path(f"{path}-journal"), Path(f"{path}-wal"), Path(f"{path}-shm")):
        p.unlink(missing_ok=True)


def _open_readonly(path: Path) -> sqlite3.Connection:
    return sqlite3.connect(f"file:{quote(str(path.resolve()))}?mode=ro", uri=True)


def _integrity(conn: sqlite3.Connection) -> str:
    rows = [r[0] for r in conn.execute("PRAGMA integrity_check(5)").fetchall()]
    return "ok" if rows == ["ok"] else "; ".join(str(r) for r in rows)


def _objects(conn: sqlite3.Connection) -> set[tuple[str, str, str, str]]:
    rows = conn.execute("SELECT type, name, tbl_name, sql FROM sqlite_master").fetchall()
    return {(kind, name, table, sql or "") for kind, name, table, sql in rows}


def _reference_objects() -> set[tuple[str, str, str, str]]:
    """The schema objects a fresh perfkb database has: what migrations create, nothing else."""
    conn = sqlite3.connect(":memory:", isolation_level=None)
    try:
        migrate(conn)
        return _objects(conn)
    finally:
        conn.close()


def _schema_problem(conn: sqlite3.Connection, version: int) -> str | None:
    """A restored file becomes the live database, so it may hold only what perfkb itself
    creates: a trigger or a changed table would run or constrain every future write."""
    found = _objects(conn)
    reference = _reference_objects()
    # besides tables and indexes, only perfkb's own trigger (migration 2), compared below
    own = {(kind, name) for kind, name, _, _ in reference}
    kinds = sorted(
        {
            kind
            for kind, name, _, _ in found
            if kind not in ("table", "index") and (kind, name) not in own
        }
    )
    if kinds:
        return f"it holds {' and '.join(k + 's' for k in kinds)}, which perfkb never creates"
    unknown = sorted({name for _, name, _, _ in found} - {name for _, name, _, _ in reference})
    if unknown:
        return f"it holds objects perfkb does not create ({', '.join(unknown[:5])})"
    if version == LATEST and found != reference:
        changed = sorted({name for _, name, _, _ in found ^ reference})
        return f"its schema differs from perfkb's ({', '.join(changed[:5])})"
    return None


def _summary(conn: sqlite3.Connection, path: Path, version: int) -> BackupInfo:
    def one(sql: str) -> int:
        return int(conn.execute(sql).fetchone()[0])

    return BackupInfo(
        path=str(path),
        size_bytes=path.stat().st_size,
        schema_version=version,
        entries=one("SELECT COUNT(*) FROM entries WHERE deleted = 0"),
        deleted=one("SELECT COUNT(*) FROM entries WHERE deleted = 1"),
        revisions=one("SELECT COUNT(*) FROM revisions"),
        analyses=one("SELECT COUNT(*) FROM analyses"),
        latest_revision=one("SELECT COALESCE(MAX(id), 0) FROM revisions"),
    )


def write_backup(source: sqlite3.Connection, dest: Path, *, overwrite: bool = False) -> BackupInfo:
    """Copy the database behind `source` to `dest` as one consistent snapshot.

    The caller serialises use of `source` (the store's lock). Other processes may write
    meanwhile: the copy is taken in one backup step, inside one read snapshot.
    """
    dest = Path(dest)
    if dest.is_dir():
        raise BackupError(f"{dest}: is a directory; give a file name for the backup")
    if dest.exists() and not overwrite:
        raise BackupError(f"{dest}: already exists (pass --force to replace it)")
    if not dest.parent.is_dir():
        raise BackupError(f"{dest.parent}: no such directory")
    tmp = _tmp_beside(dest, "backup")
    try:
        target = sqlite3.connect(tmp, isolation_level=None)
        try:
            source.backup(target)
            # the copy inherits WAL mode from the live file: make it one self-contained file
            target.execute("PRAGMA journal_mode = DELETE")
            problem = _integrity(target)
            if problem != "ok":
                raise BackupError(f"the copy failed its integrity check: {problem}")
        finally:
            target.close()
        _fsync(tmp)
        os.replace(tmp, dest)
        _fsync(dest.parent)
    except sqlite3.Error as exc:
        raise BackupError(f"cannot write the backup to {dest}: {exc}") from None
    except OSError as exc:
        raise BackupError(f"cannot write the backup to {dest}: {exc.strerror or exc}") from None
    finally:
        _remove(tmp)
    return inspect_backup(dest, allow_unreadable=True)


def inspect_backup(path: Path, *, allow_unreadable: bool = False) -> BackupInfo:
    """Check that `path` is a perfkb backup fit to restore, and say what it holds.

    A live entry that does not validate makes the file unfit to restore; a backup just written
    of a KB that holds one (`allow_unreadable`) is still a faithful copy, and lists it.
    Soft-deleted rows are not checked: that is where `perfkb check --repair` quarantines
    unreadable entries."""
    path = Path(path)
    if not path.exists():
        raise BackupError(f"{path}: no such file")
    if path.is_dir():
        raise BackupError(f"{path}: is a directory, not a backup file")
    try:
        with path.open("rb") as fh:
            header = fh.read(len(SQLITE_HEADER))
    except OSError as exc:
        raise BackupError(f"{path}: cannot read it ({exc.strerror or exc})") from None
    if header != SQLITE_HEADER:
        raise BackupError(f"{path}: not a perfkb backup (not an SQLite database file)")
    try:
        conn = _open_readonly(path)
    except sqlite3.Error as exc:
        raise BackupError(f"{path}: cannot open it: {exc}") from None
    try:
        problem = _integrity(conn)
        if problem != "ok":
            raise BackupError(f"{path}: damaged (integrity check: {problem})")
        names = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        missing = [t for t in TABLES if t not in names]
        if missing:
            raise BackupError(
                f"{path}: not a perfkb backup (no {', '.join(missing)} table"
                f"{'s' if len(missing) > 1 else ''})"
            )
        version = current_version(conn)
        if version > LATEST:
            raise BackupError(
                f"{path}: made by a newer perfkb (schema version {version}; this perfkb "
                f"understands up to {LATEST}): upgrade perfkb to restore it"
            )
        if version < 1:
            raise BackupError(f"{path}: not a perfkb backup (no schema version recorded)")
        problem = _schema_problem(conn, version)
        if problem:
            raise BackupError(f"{path}: not restorable: {problem}")
        if conn.execute("SELECT 1 FROM meta WHERE key = 'store_id'").fetchone() is None:
            raise BackupError(f"{path}: not a perfkb backup (no store id)")
        unreadable = []
        for entry_id, data in conn.execute("SELECT id, data FROM entries WHERE deleted = 0"):
            try:
                Entry.model_validate_json(data)
            except (ValidationError, ValueError, RecursionError) as exc:
                if allow_unreadable:
                    unreadable.append(str(entry_id))
                    continue
                first = exc.errors()[0] if isinstance(exc, ValidationError) else {}
                where = ".".join(str(p) for p in first.get("loc", ()))
                raise BackupError(
                    f"{path}: entry '{str(entry_id)[:100]}' is not valid "
                    f"({where}: {first.get('msg', str(exc))})"
                    "; `perfkb check --repair` in the KB it came from quarantines such entries"
                ) from None
        return _summary(conn, path, version).model_copy(update={"unreadable": unreadable})
    except sqlite3.DatabaseError as exc:
        raise BackupError(f"{path}: not a usable perfkb backup: {exc}") from None
    finally:
        conn.close()


def prepare_restore(
    backup: Path, work_dir: Path, *, store_id: str, page_size: int, after_revision: int
) -> tuple[Path, BackupInfo]:
    """A checked working copy of `backup` in `work_dir`, migrated to this perfkb's schema,
    carrying the live store's id (the search index's stamp names it) and page size (SQLite
    copies a database onto a WAL-mode one only when the page sizes agree). Its revision ids
    are moved past `after_revision`, so the store's data version only ever grows and no
    process mistakes the restored KB for a state it has cached.
    The caller removes the copy with `discard`."""
    info = inspect_backup(backup)
    work = _tmp_beside(Path(work_dir) / "perfkb.sqlite3", "restore")
    try:
        src = _open_readonly(Path(backup))
        dst = sqlite3.connect(work, isolation_level=None)
        try:
            src.backup(dst)
            dst.execute("PRAGMA journal_mode = DELETE")
            migrate(dst)
            if _objects(dst) != _reference_objects():  # an older schema, migrated: same check
                raise BackupError(f"{backup}: not restorable: its schema differs from perfkb's")
            dst.execute("BEGIN IMMEDIATE")
            dst.execute("UPDATE meta SET value = ? WHERE key = 'store_id'", (store_id,))
            _renumber_revisions(dst, after_revision)
            dst.execute("COMMIT")
            if dst.execute("PRAGMA page_size").fetchone()[0] != page_size:
                dst.execute(f"PRAGMA page_size = {int(page_size)}")
                dst.execute("VACUUM")
        finally:
            src.close()
            dst.close()
    except (sqlite3.Error, MigrationError) as exc:
        discard(work)
        raise BackupError(f"{backup}: cannot prepare it for restore: {exc}") from None
    except BaseException:
        discard(work)
        raise
    return work, info


def _renumber_revisions(conn: sqlite3.Connection, after: int) -> None:
    """Shift revision ids up by `after`, keeping their order (via negatives: an id is unique
    at every step)."""
    if after <= 0:
        return
    conn.execute("UPDATE revisions SET id = -id")
    conn.execute("UPDATE revisions SET id = ? - id", (after,))
    (top,) = conn.execute("SELECT COALESCE(MAX(id), 0) FROM revisions").fetchone()
    conn.execute(
        "UPDATE sqlite_sequence SET seq = MAX(seq + ?, ?) WHERE name = 'revisions'", (after, top)
    )


def discard(path: Path) -> None:
    _remove(path)
