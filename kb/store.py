"""The knowledge base store: SQLite is the source of truth, the whoosh index is derived.

Every change to an entry is one short BEGIN IMMEDIATE transaction that writes the entry's
current state and a revision (who, when, what changed, full snapshot). After it commits, the
index catches up with SQLite: under the index lock it applies every revision newer than the
index's stamp, so a write another process committed but never indexed (it crashed, or it is
still waiting for the lock) is applied too, and nothing is lost. Searches do the same cheap
check first, which is how two processes see each other's entries at once.
"""

from __future__ import annotations

import base64
import json
import logging
import secrets
import sqlite3
import threading
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Generic, Literal, TypeVar, cast

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from pydantic_core import PydanticSerializationError

from ingest.model import new_dict, new_list
from kb.errors import (
    BadQuery,
    EntryExists,
    EntryNotFound,
    IndexUnavailable,
    StoreError,
    UnreadableEntry,
)
from kb.index_docs import (
    INDEX_SCHEMA_VERSION,
    SearchHit,
    SearchPage,
    Stamp,
    doc_from_entry,
    entry_digest,
)
from kb.migrations import MigrationError, data_checksum, migrate
from kb.models import Entry
from kb.search_query import QueryError, parse_query
from kb.settings import Settings, get_settings
from kb.signatures import reject_controls

if TYPE_CHECKING:
    from kb.backup import BackupInfo
    from kb.index import SearchIndex

__all__ = [
    "BadQuery",
    "CheckReport",
    "EntryExists",
    "EntryNotFound",
    "Revision",
    "SearchHit",
    "SearchPage",
    "Store",
    "StoreError",
    "UnreadableEntry",
]

log = logging.getLogger("perfkb.store")


def __getattr__(name: str) -> object:
    """`kb.store.SearchIndex` still names the index class, imported (with whoosh) only when
    asked for: importing kb.store no longer imports whoosh (an analysis never uses it)."""
    if name == "SearchIndex":
        from kb.index import SearchIndex

        return SearchIndex
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


T = TypeVar("T")
R = TypeVar("R")
Action = Literal["create", "update", "delete", "restore", "import"]
UpsertStatus = Literal["created", "updated", "unchanged", "kept-newer", "conflict"]

# SQLite reads in flight at once per Store (short, and they release the GIL). Searches are
# pure-Python CPU work: under the GIL two at once in one process cost more CPU per search than
# one after the other (measured), so they take turns on one searcher under a plain lock (which
# lets a thread that holds the GIL go first: a strict hand-off to a sleeping waiter idled the
# searcher until that thread got the GIL back) and parallelism comes from worker processes.
READ_CONNECTIONS = 4
ANALYSIS_RESULT_CAP = 32 * 1024 * 1024
BUSY_TIMEOUT_MS = 30_000


class Revision(BaseModel):
    # built on first use (`perfkb history`, an edit): `perfkb analyze` never makes one (#19)
    model_config = ConfigDict(defer_build=True)

    rev: int
    entry_id: str
    author: str
    at: datetime
    action: Action
    changed_fields: list[str] = Field(default_factory=new_list)
    entry: Entry | None = None


class CheckReport(BaseModel):
    model_config = ConfigDict(defer_build=True)  # as Revision: only `perfkb check` makes one

    entries: int
    indexed: int
    missing: list[str] = Field(default_factory=new_list)  # in SQLite, not in the index
    extra: list[str] = Field(default_factory=new_list)  # in the index, not live in SQLite
    stale: list[str] = Field(default_factory=new_list)  # indexed from an older revision
    database: str = "ok"  # SQLite's integrity_check verdict
    index_problem: str | None = None  # the index could not be read at all
    # live entries stored but no longer valid: id -> why (check --repair quarantines them)
    unreadable: dict[str, str] = Field(default_factory=new_dict)
    quarantined: list[str] = Field(default_factory=new_list)
    repaired: bool = False

    @property
    def ok(self) -> bool:
        return self.database == "ok" and not (
            self.missing or self.extra or self.stale or self.index_problem or self.unreadable
        )


def _utc(dt: datetime) -> datetime:
    return dt.replace(tzinfo=UTC) if dt.tzinfo is None else dt.astimezone(UTC)


def _now() -> datetime:
    return datetime.now(UTC).replace(microsecond=0)


def _iso(dt: datetime) -> str:
    return _utc(dt).isoformat()


def normalize(entry: Entry) -> Entry:
    """Timestamps in UTC, so entries compare and serialise the same way everywhere."""
    if entry.created.tzinfo is UTC and entry.updated.tzinfo is UTC:
        return entry
    return entry.model_copy(update={"created": _utc(entry.created), "updated": _utc(entry.updated)})


def _dump(entry: Entry) -> dict:
    return entry.model_dump(mode="json", by_alias=True)


def _problem(exc: ValidationError) -> str:
    first = exc.errors()[0] if exc.errors() else {"loc": (), "msg": str(exc)}
    where = ".".join(str(p) for p in first.get("loc", ()))[:200]
    text = " ".join(f"{where + ': ' if where else ''}{first.get('msg', '')}".split())[:300]
    return "".join(c if c.isprintable() else "?" for c in text)  # it reaches terminals and logs


def _to_json(entry: Entry) -> str:
    """The entry as stored, proven to read back equal first: an entry that validates but does
    not survive JSON (a non-finite number, a tree too deep for the JSON reader) would commit
    and then break every later read of the KB. The one gate for every surface that writes."""
    try:
        data = entry.model_dump_json(by_alias=True)
        back = Entry.model_validate_json(data)
    except (ValidationError, PydanticSerializationError, ValueError, RecursionError) as exc:
        why = _problem(exc) if isinstance(exc, ValidationError) else str(exc)
        raise StoreError(
            f"entry '{entry.id}' cannot be stored: it does not read back ({why[:300]})"
        ) from None
    if _dump(back) != _dump(entry):
        changed = [k for k, v in _dump(back).items() if _dump(entry).get(k) != v]
        raise StoreError(
            f"entry '{entry.id}' cannot be stored: {', '.join(changed) or 'it'} would not read "
            "back as written"
        )
    return data


def _from_json(text: str, entry_id: str = "?") -> Entry:
    """A stored entry; UnreadableEntry (an EntryNotFound) if it no longer validates."""
    try:
        return Entry.model_validate_json(text)
    except ValidationError as exc:
        raise UnreadableEntry(entry_id, _problem(exc)) from None
    except (ValueError, RecursionError) as exc:
        raise UnreadableEntry(entry_id, " ".join(str(exc).split())[:300]) from None


def _readable(rows: list[tuple[str, str]]) -> tuple[list[Entry], dict[str, str]]:
    """(entries, {id: problem}) from (id, data) rows: one bad row never hides the others."""
    good: list[Entry] = []
    bad: dict[str, str] = {}
    for entry_id, data in rows:
        try:
            good.append(_from_json(data, entry_id))
        except UnreadableEntry as exc:
            bad[entry_id] = exc.problem
    return good, bad


def _dated_from(entry: Entry, old: Entry, given: set[str]) -> Entry:
    """A file's entry compared with the stored one: `created` is never reset (the earlier of
    the two; the stored one if the file gives none), and a file without `updated` counts as
    the stored version's age, so it neither looks newer nor differs in that alone."""
    created = min(old.created, entry.created) if "created" in given else old.created
    update: dict[str, datetime] = {"created": created}
    if "updated" not in given:
        update["updated"] = old.updated
    return entry.model_copy(update=update)


def changed_fields(old: Entry | None, new: Entry) -> list[str]:
    """Top-level fields that differ (`updated` moves on every change, so it is left out)."""
    new_d = _dump(new)
    if old is None:
        return [k for k, v in new_d.items() if v not in (None, "", [], {}) and k != "updated"]
    old_d = _dump(old)
    return [k for k in new_d if k != "updated" and new_d[k] != old_d.get(k)]


class _Slot:
    """A borrower waiting in line: `lock` is released when `item` has been handed to it."""

    __slots__ = ("item", "lock")

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.lock.acquire()
        self.item: object = None


_MAKE = object()  # handed to a waiter: make your own (a lent one was discarded)
_CLOSED = object()  # handed to a waiter: the pool closed


class _Pool(Generic[R]):
    """At most `width` objects made by `make`, lent to one thread at a time and reused. When all
    are lent, borrowers wait in line and a returned object goes straight to the first in line
    (strictly first come, first served: without that, a thread arriving just as one is
    returned takes it and the woken waiter goes back to the end, which tripled the search
    page's p99 under load)."""

    def __init__(self, make: Callable[[], R], close: Callable[[R], None], width: int) -> None:
        self._make, self._close, self.width = make, close, width
        self._idle: list[R] = []
        self._waiting: deque[_Slot] = deque()
        self._made = 0
        self._closed = False
        self._mutex = threading.Lock()

    @contextmanager
    def borrow(self) -> Iterator[R]:
        slot = None
        with self._mutex:
            if self._closed:
                raise StoreError("the store is closed")
            if self._idle and not self._waiting:
                got: object = self._idle.pop()
            elif self._made < self.width and not self._waiting:
                self._made += 1
                got = _MAKE
            else:
                slot = _Slot()
                self._waiting.append(slot)
        if slot is not None:
            slot.lock.acquire()  # released by whoever hands us an object
            got = slot.item
            if got is _CLOSED:
                raise StoreError("the store is closed")
        if got is _MAKE:
            try:
                got = self._make()
            except BaseException:
                self._forget()
                raise
        item = cast(R, got)
        try:
            yield item
        except BaseException as exc:
            if not isinstance(exc, StoreError):  # an unexpected failure: do not reuse it
                self._discard(item)
                raise
            self._give_back(item)
            raise
        self._give_back(item)

    def _hand(self, item: object) -> bool:
        """Give `item` to the first waiter (caller holds the mutex); False if none waits."""
        if not self._waiting:
            return False
        slot = self._waiting.popleft()
        slot.item = item
        slot.lock.release()
        return True

    def _give_back(self, item: R) -> None:
        with self._mutex:
            if not self._closed:
                if not self._hand(item):
                    self._idle.append(item)
                return
        self._discard(item)

    def _discard(self, item: R) -> None:
        with suppress(Exception):
            self._close(item)
        self._forget()

    def _forget(self) -> None:
        with self._mutex:
            if self._closed or not self._hand(_MAKE):  # else the waiter makes one instead
                self._made -= 1

    def close(self) -> None:
        with self._mutex:
            self._closed = True
            idle, self._idle = self._idle, []
            while self._hand(_CLOSED):
                pass
        for item in idle:
            self._discard(item)


class _Searcher:
    """An index searcher of its own (whoosh searchers and the index's caches are not safe to
    share between threads), and the build it was opened on."""

    __slots__ = ("build", "index")

    def __init__(self) -> None:
        self.index: SearchIndex | None = None
        self.build: str | None = None

    def drop(self) -> None:
        if self.index is not None:
            self.index.close()
        self.index = None
        self.build = None


class Store:
    """Writes (and index upkeep) are serialised by one lock per Store and, across processes, by
    SQLite's write lock and the index lock. Reads do not take that lock: an SQLite read borrows
    one of READ_CONNECTIONS pooled connections, a search takes turns on the store's own reading
    searcher, so page views never wait for a write's index commit, nor entry reads for a
    search."""

    def __init__(self, settings: Settings | None = None) -> None:
        self.settings = settings or get_settings()
        self._lock = threading.RLock()
        self._bulk_depth = 0
        self._synced_rev = -1
        self._build: str | None = None
        self._conns: _Pool[sqlite3.Connection] = _Pool(
            self._reader_conn, sqlite3.Connection.close, READ_CONNECTIONS
        )
        self._searcher = _Searcher()
        self._search_lock = threading.Lock()
        self._closed = False
        # odd while this process rebuilds the index (the directory is replaced under it): a
        # lock-free read that overlapped a rebuild is redone under the lock
        self._rebuilds = 0
        data_dir = self.settings.data_dir
        try:
            data_dir.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StoreError(f"cannot create data directory {data_dir}: {exc.strerror}") from None
        if not data_dir.is_dir():
            raise StoreError(f"data directory {data_dir} is not a directory")
        self._conn = self._connect()
        # The search index (whoosh) is opened, checked and caught up on first use (a search, a
        # write, a check), not here: an analysis needs none of it (its BM25 similarity comes
        # from the compiled KB, kb.bm25), and importing and opening it was ~100 ms of a 1-line
        # `perfkb analyze` and ~170 MB at 10,000 entries.
        self._search_index: SearchIndex | None = None
        self._index_ready = False
        self._last_rebuild_reason: str | None = None

    # -- connection ---------------------------------------------------------------------------

    def _connect(self) -> sqlite3.Connection:
        path = self.settings.db_path
        try:
            conn = sqlite3.connect(
                path,
                timeout=BUSY_TIMEOUT_MS / 1000,
                isolation_level=None,
                check_same_thread=False,
            )
        except sqlite3.Error as exc:
            raise StoreError(f"cannot open database {path}: {exc}") from None
        try:
            conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
            conn.execute("PRAGMA journal_mode = WAL")
            conn.execute("PRAGMA synchronous = NORMAL")
            migrate(conn)
            row = conn.execute("SELECT value FROM meta WHERE key = 'store_id'").fetchone()
            self._store_id = row[0]
        except MigrationError as exc:
            conn.close()
            raise StoreError(str(exc)) from None
        except sqlite3.DatabaseError as exc:
            conn.close()
            raise StoreError(f"{path} is not a usable perfkb database: {exc}") from None
        return conn

    @property
    def _index(self) -> SearchIndex:
        """The search index, opened on first use: rebuilt if missing, corrupt, foreign or
        newer than SQLite, caught up if older (what opening a Store used to do). While it is
        being opened, the opening thread gets it as it is (the checks use it); others wait."""
        if self._index_ready:
            return cast("SearchIndex", self._search_index)
        with self._lock:
            if self._search_index is None:
                if self._closed or self._conn is None:
                    raise StoreError("the store is closed")
                from kb.index import SearchIndex  # whoosh: only when the index is used

                self._search_index = SearchIndex(
                    self.settings.index_dir,
                    self.settings.data_dir / "index.lock",
                    limits=self.settings.search_limits(),
                )
                try:
                    self._ensure_index()
                except BaseException:
                    self._search_index.close()
                    self._search_index = None
                    raise
                self._index_ready = True
            return self._search_index

    def open_index(self) -> None:
        """Open (check, rebuild or catch up) the search index now rather than on the first
        search: what a long-lived process does at start (`perfkb serve`, kb.analysis.warm)."""
        _ = self._index

    @property
    def index_opened(self) -> bool:
        """Whether this store has opened its search index (an analysis never does)."""
        return self._search_index is not None

    @property
    def last_rebuild_reason(self) -> str | None:
        """Why the index was last rebuilt by this store (None: it was not); opens the index,
        as opening a store used to, so that this says what opening found."""
        self.open_index()
        return self._last_rebuild_reason

    def _reader_conn(self) -> sqlite3.Connection:
        path = self.settings.db_path
        try:
            conn = sqlite3.connect(
                path,
                timeout=BUSY_TIMEOUT_MS / 1000,
                isolation_level=None,  # autocommit: every SELECT sees the latest commit
                check_same_thread=False,  # pooled: used by one thread at a time, any thread
            )
            conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
            conn.execute("PRAGMA query_only = 1")
        except sqlite3.Error as exc:
            raise StoreError(f"cannot open database {path}: {exc}") from None
        return conn

    def _drop_idle_searchers(self) -> None:
        """After a rebuild: let go of the old index files now, unless a search is using them
        (it then reopens on its next turn, seeing the new build)."""
        if self._search_lock.acquire(blocking=False):
            try:
                self._searcher.drop()
            finally:
                self._search_lock.release()

    def close(self) -> None:
        self._conns.close()
        with self._search_lock:
            self._closed = True
            self._searcher.drop()
        with self._lock:
            if self._search_index is not None:
                self._search_index.close()
            conn = getattr(self, "_conn", None)
            if conn is not None:
                conn.close()
                self._conn = None  # type: ignore[assignment]

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextmanager
    def _tx(self) -> Iterator[sqlite3.Connection]:
        """A short write transaction; BEGIN IMMEDIATE takes the write lock up front so two
        processes never deadlock upgrading read locks."""
        conn = self._conn
        if conn is None:
            raise StoreError("the store is closed")
        try:
            conn.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as exc:
            raise StoreError(f"the database is busy: {exc}") from None
        try:
            yield conn
            conn.execute("COMMIT")
        except sqlite3.IntegrityError:
            conn.execute("ROLLBACK")
            raise
        except sqlite3.Error as exc:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise StoreError(f"database error: {exc}") from None
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise

    @contextmanager
    def _read(self) -> Iterator[sqlite3.Connection]:
        """A read transaction: one consistent snapshot across several SELECTs."""
        conn = self._conn
        if conn is None:
            raise StoreError("the store is closed")
        conn.execute("BEGIN")
        try:
            yield conn
        finally:
            conn.execute("COMMIT")

    # -- index upkeep -------------------------------------------------------------------------

    def _max_rev(self, conn: sqlite3.Connection | None = None) -> int:
        (rev,) = (
            (conn or self._conn).execute("SELECT COALESCE(MAX(id), 0) FROM revisions").fetchone()
        )
        return int(rev)

    def _ensure_index(self) -> None:
        """At open: rebuild a missing, corrupt, foreign or newer-than-SQLite index; catch up an
        older one."""
        problem = self._index.open()
        if problem:
            self._rebuild(problem)
        else:
            self._sync()

    def _stamp_usable(self, stamp: Stamp | None, max_rev: int) -> bool:
        return (
            stamp is not None
            and stamp.store_id == self._store_id
            and stamp.schema_version == INDEX_SCHEMA_VERSION
            and stamp.rev <= max_rev
        )

    def _sync(self) -> None:
        """Apply to the index every revision SQLite has and the index's stamp does not."""
        with self._lock, self._index.lock():
            stamp = self._index.stamp()
            with self._read() as conn:
                max_rev = self._max_rev(conn)
                if not self._stamp_usable(stamp, max_rev):
                    reason = "no stamp" if stamp is None else "stamp does not match the database"
                    upserts = deletes = None
                else:
                    assert stamp is not None
                    rows = conn.execute(
                        "SELECT e.id, e.data, e.deleted FROM entries e WHERE e.id IN "
                        "(SELECT DISTINCT entry_id FROM revisions WHERE id > ? AND id <= ?)",
                        (stamp.rev, max_rev),
                    ).fetchall()
                    live, bad = _readable([(i, d) for i, d, deleted in rows if not deleted])
                    upserts = [doc_from_entry(e) for e in live]
                    deletes = [i for i, _, deleted in rows if deleted or i in bad]
            if upserts is None or deletes is None:
                self._rebuild(reason)
                return
            assert stamp is not None
            if stamp.rev < max_rev:
                new_stamp = Stamp(store_id=self._store_id, rev=max_rev, build=stamp.build)
                self._index.apply(upserts, deletes, new_stamp)
            self._note_synced(max_rev, stamp.build)

    def _note_synced(self, rev: int, build: str) -> None:
        if self._build is not None and build != self._build:
            # another process rebuilt the index: drop our reader of the old files
            problem = self._index.open()
            if problem:
                self._rebuild(problem)
                return
        self._build = build
        self._synced_rev = rev

    def _rebuild(self, reason: str = "requested") -> int:
        with self._lock, self._index.lock():
            with self._read() as conn:
                max_rev = self._max_rev(conn)
                rows = conn.execute(
                    "SELECT id, data FROM entries WHERE deleted = 0 ORDER BY id"
                ).fetchall()
            stamp = Stamp(store_id=self._store_id, rev=max_rev)
            self._rebuilds += 1
            try:
                live, bad = _readable(rows)
                self._warn_unreadable(bad)
                # a list, not a generator: a long one is split between two processes
                docs = [doc_from_entry(e) for e in live]
                count = self._index.rebuild(docs, stamp)
                self._build = stamp.build  # before the count is even again (see _read_index)
            except OSError as exc:
                raise StoreError(f"cannot rebuild the search index: {exc}") from None
            except IndexUnavailable as exc:
                raise StoreError(str(exc)) from None
            finally:
                self._rebuilds += 1
                self._drop_idle_searchers()
            self._synced_rev = max_rev
            self._last_rebuild_reason = reason
            return count

    def _after_write(self) -> None:
        if self._bulk_depth == 0:
            self._sync_safely()

    def _sync_safely(self) -> None:
        """Index upkeep after a write: SQLite already holds the change, so a failure here
        loses nothing (the next search or open catches up); say so in one line."""
        try:
            self._sync()
        except (IndexUnavailable, OSError) as exc:
            raise StoreError(f"saved, but the search index was not updated: {exc}") from None

    def _catch_up(self) -> None:
        if self._max_rev() != self._synced_rev:
            self._sync_safely()

    @contextmanager
    def bulk(self) -> Iterator[Store]:
        """Defer index updates to the end of the block (one commit for a large import)."""
        with self._lock:
            self._bulk_depth += 1
            try:
                yield self
            finally:
                self._bulk_depth -= 1
                if self._bulk_depth == 0:
                    self._sync_safely()

    def reindex(self) -> int:
        """Rebuild the whole index from SQLite; returns the number of entries indexed."""
        with self._lock:
            return self._rebuild("reindex")

    def check(self, *, repair: bool = True) -> CheckReport:
        """Check SQLite's own integrity, then compare the index with SQLite entry by entry;
        rebuild the index if they disagree or it cannot be read."""
        with self._lock, self._index.lock():
            # integrity_check, not quick_check: only it compares indexes with their tables
            found = [r[0] for r in self._conn.execute("PRAGMA integrity_check(5)").fetchall()]
            database = "ok" if found == ["ok"] else "; ".join(map(str, found))
            try:
                self._sync_safely()
                have, index_problem = self._index.digests(), None
            except Exception as exc:  # a damaged index raises whatever whoosh raises
                have, index_problem = {}, f"{type(exc).__name__}: {exc}"[:300]
            with self._read() as conn:
                rows = conn.execute("SELECT id, data FROM entries WHERE deleted = 0").fetchall()
            live, bad = _readable(rows)
            want = {e.id: entry_digest(e) for e in live}
            report = CheckReport(
                unreadable=bad,
                entries=len(want),
                indexed=len(have),
                missing=[] if index_problem else sorted(set(want) - set(have)),
                extra=sorted(set(have) - set(want)),
                stale=sorted(i for i in set(want) & set(have) if want[i] != have[i]),
                database=database,
                index_problem=index_problem,
            )
            if not report.ok and repair:
                report.quarantined = self._quarantine(sorted(bad))
                self._rebuild("check found differences")
                report.repaired = True
            return report

    def _quarantine(self, entry_ids: list[str]) -> list[str]:
        """Take unreadable entries out of the KB: each is soft-deleted by a revision of its own
        (author 'perfkb check --repair'); its raw JSON stays in the row and its history, so
        nothing is destroyed and someone can still fix it by hand. Returns the ids moved."""
        done = []
        for entry_id in entry_ids:
            with self._tx() as conn:
                row = self._row(conn, entry_id)
                if row is None or row[1]:
                    continue
                try:
                    _from_json(row[0], entry_id)
                    continue  # repaired in between by someone else
                except UnreadableEntry:
                    pass
                self._write(
                    conn,
                    row,
                    None,
                    entry_id=entry_id,
                    action="delete",
                    author="perfkb check --repair",
                    changed=["unreadable"],
                )
            done.append(entry_id)
        return done

    def unreadable(self) -> dict[str, str]:
        """Live entries that are stored but no longer validate: id -> why."""
        with self._conns.borrow() as conn:
            rows = conn.execute("SELECT id, data FROM entries WHERE deleted = 0").fetchall()
        return _readable(rows)[1]

    _warned: set[str] = set()

    def _warn_unreadable(self, bad: dict[str, str]) -> None:
        """Log each unreadable row once per process (every listing skips it)."""
        for entry_id, problem in bad.items():
            if entry_id not in self._warned:
                self._warned.add(entry_id)
                log.warning(
                    "entry %r cannot be read (%s): skipped; remove it with "
                    "`perfkb delete %s` or `perfkb check --repair`",
                    entry_id,
                    problem,
                    entry_id,
                )

    # -- backup and restore -------------------------------------------------------------------

    def backup(self, dest: Path | str, *, overwrite: bool = False) -> BackupInfo:
        """Copy the database to `dest` (SQLite backup API) while other processes keep writing."""
        from kb.backup import write_backup

        with self._lock:
            if self._conn is None:
                raise StoreError("the store is closed")
            return write_backup(self._conn, Path(dest), overwrite=overwrite)

    def restore_backup(self, src: Path | str) -> BackupInfo:
        """Replace the whole database with a checked backup, then rebuild the index.

        The backup is validated and copied aside first; the copy then goes over the live
        database in one SQLite write transaction, so every process sees either the old or the
        restored KB, never a mixture, and a crash midway leaves the old one.
        """
        from kb.backup import discard, prepare_restore

        if self._conn is None:
            raise StoreError("the store is closed")
        (page_size,) = self._conn.execute("PRAGMA page_size").fetchone()
        work, info = prepare_restore(
            Path(src),
            self.settings.data_dir,
            store_id=self._store_id,
            page_size=page_size,
            after_revision=self._max_rev(),
        )
        try:
            with self._lock, self._index.lock():
                copy = sqlite3.connect(work)
                try:
                    copy.backup(self._conn)
                except sqlite3.Error as exc:
                    raise StoreError(f"restore failed; the database is unchanged: {exc}") from None
                finally:
                    copy.close()
                self._rebuild("restored from a backup")
        finally:
            discard(work)
        return info

    def index_doc_count(self) -> int:
        with self._lock:
            self._catch_up()
            return self._index.doc_count()

    # -- entries ------------------------------------------------------------------------------

    def _row(self, conn: sqlite3.Connection, entry_id: str) -> tuple[str, int, int] | None:
        return conn.execute(
            "SELECT data, deleted, rev FROM entries WHERE id = ?", (entry_id,)
        ).fetchone()

    @staticmethod
    def _old(row: tuple[str, int, int] | None, entry_id: str) -> Entry | None:
        """The stored version a write replaces; None for a new id or an unreadable row (which
        the write then replaces: that is one way to repair it)."""
        if row is None:
            return None
        try:
            return _from_json(row[0], entry_id)
        except UnreadableEntry:
            return None

    def _write(
        self,
        conn: sqlite3.Connection,
        row: tuple[str, int, int] | None,
        entry: Entry | None,
        *,
        action: Action,
        author: str,
        changed: list[str],
        entry_id: str = "",
    ) -> None:
        """Store `entry` (None: mark `entry_id` deleted) as the revision after `row`, the
        stored row as `_row` read it (None for a new id), and record who did what."""
        at = _iso(_now())
        rev = (row[2] if row else 0) + 1
        entry_id = entry.id if entry is not None else entry_id
        if entry is not None:
            data = _to_json(entry)
            conn.execute(
                "INSERT INTO entries"
                " (id, title, data, deleted, deleted_at, created, updated, rev, checksum)"
                " VALUES (?, ?, ?, 0, NULL, ?, ?, ?, ?) ON CONFLICT (id) DO UPDATE SET"
                " title = excluded.title, data = excluded.data, deleted = 0, deleted_at = NULL,"
                " created = excluded.created, updated = excluded.updated, rev = excluded.rev,"
                " checksum = excluded.checksum",
                (
                    entry.id,
                    entry.title,
                    data,
                    _iso(entry.created),
                    _iso(entry.updated),
                    rev,
                    data_checksum(data),  # validated just now (_to_json): trusted on load
                ),
            )
        else:
            conn.execute(
                "UPDATE entries SET deleted = 1, deleted_at = ?, rev = ? WHERE id = ?",
                (at, rev, entry_id),
            )
            data = None
        conn.execute(
            "INSERT INTO revisions (entry_id, rev, author, at, action, changed_fields, snapshot)"
            " VALUES (?, ?, ?, ?, ?, ?, ?)",
            (entry_id, rev, author, at, action, json.dumps(changed), data),
        )

    @staticmethod
    def _author(author: str) -> str:
        author = (author or "").strip()
        if not author:
            raise StoreError("every change needs an author")
        try:  # shown by `perfkb history` and the pages: no escape sequences, one line
            reject_controls(author, one_line=True)
        except ValueError as exc:
            raise StoreError(f"the author name {exc}") from None
        return author[:200]

    def add(self, entry: Entry, *, author: str, action: Action = "create") -> Entry:
        """Create an entry. Adding an id that was deleted brings it back (a 'restore')."""
        author = self._author(author)
        entry = normalize(entry)
        with self._lock:
            with self._tx() as conn:
                row = self._row(conn, entry.id)
                if row is not None and not row[1]:
                    raise EntryExists(f"entry '{entry.id}' already exists")
                old = self._old(row, entry.id)
                if row is not None and action == "create":
                    action = "restore"
                changed = changed_fields(old, entry)
                self._write(conn, row, entry, action=action, author=author, changed=changed)
            self._after_write()
        return entry

    def update(self, entry: Entry, *, author: str, expected_rev: int | None = None) -> Entry:
        """Save a new version of a live entry. `created` stays, `updated` becomes now, and the
        previous version stays in history. With `expected_rev`, refuse if someone else saved
        in between (the editor would otherwise overwrite their change)."""
        author = self._author(author)
        with self._lock:
            with self._tx() as conn:
                row = self._row(conn, entry.id)
                if row is None or row[1]:
                    raise EntryNotFound(f"no entry '{entry.id}'")
                if expected_rev is not None and row[2] != expected_rev:
                    raise StoreError(
                        f"entry '{entry.id}' was changed by someone else since you opened it "
                        f"(revision {row[2]}, you edited {expected_rev})"
                    )
                old = self._old(row, entry.id)  # None: unreadable, and this edit replaces it
                new = normalize(entry)
                if old is not None:
                    new = new.model_copy(update={"created": old.created})
                changed = changed_fields(old, new)
                if not changed and old is not None:
                    return old
                newest = max(_now(), old.updated) if old is not None else _now()
                new = new.model_copy(update={"updated": newest})
                self._write(conn, row, new, action="update", author=author, changed=changed)
            self._after_write()
        return new

    def upsert(
        self,
        entry: Entry,
        *,
        author: str,
        keep_local_edits: bool = True,
        restore_deleted: bool = False,
        force: bool = False,
    ) -> tuple[Entry, UpsertStatus]:
        """Import one entry as written in a file (its timestamps are kept).

        Never overwrites a stored entry whose `updated` is newer, or one compared with a file
        that gives no `updated` (its age is unknown, so it is not assumed newer): that is
        "kept-newer" with `keep_local_edits` (what `perfkb init` wants; it also keeps an entry
        changed in perfkb since it was last imported, and a deleted one) and "conflict"
        without it (what `perfkb import` reports). `force` overwrites anyway; the replaced
        version stays in the history. `created` is never reset: an overwrite keeps the
        earlier of the stored and the file's. With `restore_deleted` a deleted entry comes
        back.
        """
        author = self._author(author)
        given = entry.model_fields_set  # before normalize: did the file say when?
        entry = normalize(entry)
        with self._lock:
            with self._tx() as conn:
                row = self._row(conn, entry.id)
                if row is None:
                    status: UpsertStatus = "created"
                    old = None
                    action: Action = "import"
                else:
                    old = self._old(row, entry.id)  # None: unreadable, so the file repairs it
                    deleted = bool(row[1])
                    last_action = conn.execute(
                        "SELECT action FROM revisions WHERE entry_id = ? ORDER BY rev DESC LIMIT 1",
                        (entry.id,),
                    ).fetchone()
                    edited_here = last_action is not None and last_action[0] != "import"
                    if old is not None:
                        entry = _dated_from(entry, old, given)
                    if deleted and not restore_deleted:
                        return old or entry, "kept-newer"
                    if deleted:
                        status, action = "created", "restore"
                    elif old is None:
                        status, action = "updated", "import"
                    elif _dump(old) == _dump(entry):
                        return old, "unchanged"
                    elif force:
                        status, action = "updated", "import"
                        if "updated" not in given:  # an overwrite now is a change made now
                            entry = entry.model_copy(update={"updated": max(_now(), old.updated)})
                    elif (
                        "updated" not in given
                        or old.updated >= entry.updated
                        or (keep_local_edits and edited_here)
                    ):
                        return old, "kept-newer" if keep_local_edits else "conflict"
                    else:
                        status, action = "updated", "import"
                changed = changed_fields(old, entry)
                self._write(conn, row, entry, action=action, author=author, changed=changed)
            self._after_write()
        return entry, status

    def delete(self, entry_id: str, *, author: str) -> None:
        """Soft delete: the entry leaves search and listings; its history stays."""
        author = self._author(author)
        with self._lock:
            with self._tx() as conn:
                row = self._row(conn, entry_id)
                if row is None or row[1]:
                    raise EntryNotFound(f"no entry '{entry_id}'")
                self._write(
                    conn, row, None, entry_id=entry_id, action="delete", author=author, changed=[]
                )
            self._after_write()

    def restore(self, entry_id: str, *, author: str) -> Entry:
        """Bring back a soft-deleted entry as it was when deleted."""
        author = self._author(author)
        with self._lock:
            with self._tx() as conn:
                row = self._row(conn, entry_id)
                if row is None:
                    raise EntryNotFound(f"no entry '{entry_id}'")
                if not row[1]:
                    raise StoreError(f"entry '{entry_id}' is not deleted")
                try:
                    entry = _from_json(row[0], entry_id)
                except UnreadableEntry as exc:
                    raise StoreError(
                        f"entry '{entry_id}' cannot be restored: it cannot be read "
                        f"({exc.problem}); add a corrected version under the same id instead"
                    ) from None
                self._write(conn, row, entry, action="restore", author=author, changed=[])
            self._after_write()
        return entry

    def get(self, entry_id: str, *, include_deleted: bool = False) -> Entry:
        with self._conns.borrow() as conn:
            row = self._row(conn, entry_id)
        if row is None:
            raise EntryNotFound(f"no entry '{entry_id}'")
        if row[1] and not include_deleted:
            raise EntryNotFound(f"entry '{entry_id}' was deleted (perfkb restore {entry_id})")
        return _from_json(row[0], entry_id)

    def current_rev(self, entry_id: str) -> int:
        """The entry's latest revision number (for optimistic edits)."""
        with self._conns.borrow() as conn:
            row = self._row(conn, entry_id)
        if row is None:
            raise EntryNotFound(f"no entry '{entry_id}'")
        return int(row[2])

    def list_entries(self) -> list[Entry]:
        with self._conns.borrow() as conn:
            rows = conn.execute(
                "SELECT id, data FROM entries WHERE deleted = 0 ORDER BY id"
            ).fetchall()
        entries, bad = _readable(rows)
        self._warn_unreadable(bad)  # skipped, not fatal: `perfkb check` names them
        return entries

    def list_entries_with_state(
        self,
    ) -> tuple[list[Entry], list[tuple[int, str | None]], dict[str, str]]:
        """(entries, the (rev, checksum) each is at, unreadable rows: id -> why) in one read,
        as list_entries (which this warns like); what a compiled KB is built and saved from."""
        with self._conns.borrow() as conn:
            rows = conn.execute(
                "SELECT id, data, rev, checksum FROM entries WHERE deleted = 0 ORDER BY id"
            ).fetchall()
        entries, bad = _readable([(r[0], r[1]) for r in rows])
        self._warn_unreadable(bad)
        state = {r[0]: (int(r[2]), r[3]) for r in rows}
        return entries, [state[e.id] for e in entries], bad

    def live_state(self) -> dict[str, tuple[int, str | None]]:
        """id -> (rev, checksum) of every live entry, from the covering index (no JSON read):
        what a saved compiled KB is compared with to find the entries changed since."""
        with self._conns.borrow() as conn:
            rows = conn.execute(
                "SELECT id, rev, checksum FROM entries INDEXED BY entries_state WHERE deleted = 0"
            ).fetchall()
        return {i: (int(r), c) for i, r, c in rows}

    @property
    def store_id(self) -> str:
        return self._store_id

    def count(self) -> int:
        with self._conns.borrow() as conn:
            (n,) = conn.execute("SELECT COUNT(*) FROM entries WHERE deleted = 0").fetchone()
        return int(n)

    def history(self, entry_id: str) -> list[Revision]:
        with self._conns.borrow() as conn:
            rows = conn.execute(
                "SELECT rev, entry_id, author, at, action, changed_fields, snapshot"
                " FROM revisions WHERE entry_id = ? ORDER BY rev",
                (entry_id,),
            ).fetchall()
        if not rows:
            raise EntryNotFound(f"no entry '{entry_id}'")
        return [
            Revision(
                rev=rev,
                entry_id=eid,
                author=author,
                at=datetime.fromisoformat(at),
                action=action,
                changed_fields=json.loads(changed),
                entry=self._snapshot(snap, eid),
            )
            for rev, eid, author, at, action, changed, snap in rows
        ]

    @staticmethod
    def _snapshot(snap: str | None, entry_id: str) -> Entry | None:
        """A revision's entry; None if absent (a delete) or unreadable (history still shows)."""
        if not snap:
            return None
        try:
            return _from_json(snap, entry_id)
        except UnreadableEntry:
            return None

    def state_key(self) -> str:
        """The store's id and its entries' stamp (migration 3): a new random stamp is written in
        the transaction of every change to `entries`, by perfkb or behind its back (the
        triggers are the database's own), so equal keys mean equal entries. What a persisted
        compiled KB is keyed by (kb.matcher). One row read: the digest of every live entry's
        (id, rev, checksum) it replaced cost 36 ms CPU at 50,000 entries."""
        with self._conns.borrow() as conn:
            rows = dict(
                conn.execute(
                    "SELECT key, value FROM meta WHERE key IN ('store_id', 'entries_stamp')"
                ).fetchall()
            )
        return f"{rows.get('store_id', '')}:{rows.get('entries_stamp', '')}"

    def entry_at(self, entry_id: str, rev: int) -> Entry:
        """The entry as revision `rev` stored it (validated): the version a persisted compiled
        KB was built from, even if the entry changed since."""
        with self._conns.borrow() as conn:
            row = conn.execute(
                "SELECT snapshot FROM revisions WHERE entry_id = ? AND rev = ?", (entry_id, rev)
            ).fetchone()
        if row is None or not row[0]:
            raise EntryNotFound(f"no revision {rev} of entry '{entry_id}'")
        return _from_json(row[0], entry_id)

    def data_version(self) -> int:
        """The newest revision id: it changes whenever any process changes any entry."""
        with self._conns.borrow() as conn:
            return self._max_rev(conn)

    # -- search -------------------------------------------------------------------------------

    def _read_index(self, read: Callable[[SearchIndex], T]) -> T | None:
        """`read` on a pooled searcher of its own, without the store's lock. The index first
        catches up with SQLite if another writer moved it on (under the lock, as before). None
        when the lock-free read could not be trusted (a rebuild overlapped it, or the index
        failed to open or to answer): the caller then takes the locked path, which repairs."""
        if self.data_version() != self._synced_rev:
            with self._lock:  # before borrowing: a writer holding the lock may need to read
                self._catch_up()
        with self._search_lock:
            if self._closed:
                raise StoreError("the store is closed")
            searcher = self._searcher
            rebuilds = self._rebuilds
            if rebuilds % 2:
                return None
            build = self._build
            if searcher.index is None or searcher.build != build:
                from kb.index import SearchIndex

                searcher.drop()
                index = SearchIndex(
                    self.settings.index_dir,
                    self.settings.data_dir / "index.lock",
                    limits=self.settings.search_limits(),
                )
                if index.open() is not None:
                    return None
                searcher.index, searcher.build = index, build
            try:
                found = read(searcher.index)
            except QueryError as exc:
                raise BadQuery(str(exc)) from None
            except Exception:  # whoosh raises many types on a file replaced under it
                searcher.drop()
                return None
            return found if self._rebuilds == rebuilds else None

    def search(
        self,
        query: str,
        *,
        filters: dict[str, str] | None = None,
        page: int = 1,
        per_page: int = 20,
    ) -> SearchPage:
        try:
            parsed = parse_query(query, filters)
        except QueryError as exc:
            raise BadQuery(str(exc)) from None
        page = max(1, int(page))
        per_page = max(1, min(100, int(per_page)))
        found = self._read_index(lambda index: index.search(parsed, page=page, per_page=per_page))
        if found is not None:
            return found
        with self._lock:  # the careful path: reopen, or rebuild a damaged index, and retry
            self._catch_up()
            for attempt in ("reopen", "rebuild", "give up"):
                try:
                    return self._index.search(parsed, page=page, per_page=per_page)
                except QueryError as exc:
                    raise BadQuery(str(exc)) from None
                except Exception as exc:  # another process rebuilding, or a damaged file
                    if attempt == "give up":
                        raise StoreError(f"search failed: {type(exc).__name__}: {exc}") from None
                    with self._index.lock():
                        problem = self._index.open() if attempt == "reopen" else "search failed"
                        if problem:
                            self._rebuild(problem)
                        else:
                            self._sync_safely()
            raise AssertionError("unreachable")

    def similar(self, identifiers: list[str], *, limit: int = 50) -> dict[str, float]:
        """entry id -> 0..1 similarity of its identifiers to these, as the search index
        answers it (whoosh, see SearchIndex). Analyses take the same figures from the compiled
        KB instead (Matcher.similar, kb.bm25) and never open the index; this is their oracle."""
        found = self._read_index(lambda index: index.similar(identifiers, limit=limit))
        if found is not None:
            return found
        with self._lock:
            self._catch_up()
            try:
                return self._index.similar(identifiers, limit=limit)
            except Exception:  # similarity is a ranking hint: never fail an analysis over it
                return {}

    # -- feedback -----------------------------------------------------------------------------

    def record_feedback(
        self,
        entry_id: str,
        fingerprint: str,
        verdict: Literal["right", "wrong"],
        user: str,
    ) -> None:
        if verdict not in ("right", "wrong"):
            raise StoreError(f"feedback must be 'right' or 'wrong', not '{verdict}'")
        user = self._author(user)
        if not fingerprint or len(fingerprint) > 200:
            raise StoreError("feedback needs the analysis fingerprint (at most 200 characters)")
        with self._lock, self._tx() as conn:
            row = self._row(conn, entry_id)
            if row is None or row[1]:
                raise EntryNotFound(f"no entry '{entry_id}'")
            conn.execute(
                "INSERT INTO feedback (entry_id, fingerprint, user, verdict, at)"
                " VALUES (?, ?, ?, ?, ?) ON CONFLICT (user, entry_id, fingerprint)"
                " DO UPDATE SET verdict = excluded.verdict, at = excluded.at",
                (entry_id, fingerprint, user, verdict, _iso(_now())),
            )

    def feedback_counts(self, entry_id: str) -> dict[str, int]:
        with self._conns.borrow() as conn:
            rows = conn.execute(
                "SELECT verdict, COUNT(*) FROM feedback WHERE entry_id = ? GROUP BY verdict",
                (entry_id,),
            ).fetchall()
        counts = {"right": 0, "wrong": 0}
        counts.update({v: int(n) for v, n in rows})
        return counts

    def feedback_for(self, fingerprint: str) -> dict[str, dict[str, int]]:
        with self._conns.borrow() as conn:
            rows = conn.execute(
                "SELECT entry_id, verdict, COUNT(*) FROM feedback WHERE fingerprint = ?"
                " GROUP BY entry_id, verdict",
                (fingerprint,),
            ).fetchall()
        out: dict[str, dict[str, int]] = {}
        for entry_id, verdict, n in rows:
            out.setdefault(entry_id, {"right": 0, "wrong": 0})[verdict] = int(n)
        return out

    # -- saved analyses -----------------------------------------------------------------------

    def save_analysis(self, text: str, result_json: str) -> str:
        """Keep a pasted text (capped) and its result for a permalink; returns its short id."""
        raw = text.encode("utf-8", errors="replace")
        text = raw.decode("utf-8")  # lone surrogates (valid in JSON) cannot be stored
        cap = self.settings.saved_text_bytes
        if len(raw) > cap:
            kept = raw[:cap].decode("utf-8", errors="ignore")
            text = kept + f"\n[perfkb kept the first {cap} of {len(raw)} bytes]"
        if len(result_json) > ANALYSIS_RESULT_CAP:
            raise StoreError("the analysis result is too large to save")
        with self._lock:
            for _ in range(5):
                analysis_id = base64.b32encode(secrets.token_bytes(5)).decode().lower()
                try:
                    with self._tx() as conn:
                        conn.execute(
                            "INSERT INTO analyses (id, created, text, result_json)"
                            " VALUES (?, ?, ?, ?)",
                            (analysis_id, _iso(_now()), text, result_json),
                        )
                    return analysis_id
                except sqlite3.IntegrityError:
                    continue
        raise StoreError("could not allocate an analysis id")

    def updated_times(self, entry_ids: list[str]) -> dict[str, str]:
        """entry id -> its `updated` time (ISO, UTC) for live entries among `entry_ids`: the
        search page's 'recently updated' order."""
        out: dict[str, str] = {}
        with self._conns.borrow() as conn:
            for start in range(0, len(entry_ids), 500):
                chunk = entry_ids[start : start + 500]
                marks = ",".join("?" * len(chunk))
                rows = conn.execute(
                    f"SELECT id, updated FROM entries WHERE deleted = 0 AND id IN ({marks})",
                    chunk,
                ).fetchall()
                out.update({str(r[0]): str(r[1]) for r in rows})
        return out

    def recent_analyses(self, limit: int = 10) -> list[tuple[str, str, str]]:
        """(id, created ISO time, result JSON) of the latest saved analyses, newest first: for
        the Slack App Home."""
        limit = max(1, min(50, int(limit)))
        with self._conns.borrow() as conn:
            rows = conn.execute(
                "SELECT id, created, result_json FROM analyses ORDER BY created DESC, id LIMIT ?",
                (limit,),
            ).fetchall()
        return [(str(r[0]), str(r[1]), str(r[2])) for r in rows]

    def entries_created_since(self, since: datetime, limit: int = 20) -> list[Entry]:
        """Live entries created at or after `since`, newest first."""
        with self._conns.borrow() as conn:
            rows = conn.execute(
                "SELECT id, data FROM entries WHERE deleted = 0 AND created >= ?"
                " ORDER BY created DESC, id LIMIT ?",
                (_iso(_utc(since)), max(1, min(100, int(limit)))),
            ).fetchall()
        entries, bad = _readable(rows)
        self._warn_unreadable(bad)
        return entries

    def get_analysis(self, analysis_id: str) -> tuple[str, str]:
        with self._conns.borrow() as conn:
            row = conn.execute(
                "SELECT text, result_json FROM analyses WHERE id = ?", (analysis_id,)
            ).fetchone()
        if row is None:
            raise StoreError(f"no saved analysis '{analysis_id}'")
        return row[0], row[1]
