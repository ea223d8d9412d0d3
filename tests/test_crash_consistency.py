"""kill -9 in the middle of writing, then start again: SQLite is intact (integrity_check ok),
every write that was acknowledged is there, nothing half-written is, and the search index is
rebuilt or caught up so it agrees with SQLite. Each scenario SIGKILLs a real process once it
has started writing."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from conftest import entry_data

from kb.entry_yaml import dump_entry
from kb.models import validate_entry
from kb.settings import Settings
from kb.store import Store

pytestmark = pytest.mark.timeout(180)

IMPORT_ENTRIES = 1200
REINDEX_ENTRIES = 1500


def env_for(data_dir: Path) -> dict[str, str]:
    return {**os.environ, "PERFKB_DATA_DIR": str(data_dir)}


def revisions(db: Path) -> int:
    """Committed revisions, read the way any other process would."""
    try:
        conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5)
    except sqlite3.Error:
        return 0
    try:
        return conn.execute("SELECT COUNT(*) FROM revisions").fetchone()[0]
    except sqlite3.Error:
        return 0  # not created yet
    finally:
        conn.close()


def wait_for(condition, what: str, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.002)


def kill(proc: subprocess.Popen) -> None:
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL


def assert_intact(data_dir: Path) -> Store:
    """Open the store as a restarted server would, and check SQLite and the index."""
    db = data_dir / "perfkb.sqlite3"
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        orphans = conn.execute(
            "SELECT COUNT(*) FROM entries e WHERE NOT EXISTS "
            "(SELECT 1 FROM revisions r WHERE r.entry_id = e.id AND r.rev = e.rev)"
        ).fetchone()[0]
        assert orphans == 0  # every entry row has the revision that wrote it
    store = Store(Settings(data_dir=data_dir))
    report = store.check(repair=False)
    assert report.ok, report
    assert store.index_doc_count() == store.count()
    return store


def yaml_files(directory: Path, count: int) -> list[str]:
    """`count` entry files, made from one dumped entry (dumping each would cost seconds)."""
    directory.mkdir()
    template = dump_entry(validate_entry(entry_data("crash-template", symptom="crashmarkerX")))
    ids = []
    for i in range(count):
        entry_id = f"crash-{i:05d}"
        text = template.replace("crash-template", entry_id).replace("crashmarkerX", f"cm{i}z")
        (directory / f"{entry_id}.yaml").write_text(text, encoding="utf-8")
        ids.append(entry_id)
    return ids


def test_kill_during_import_keeps_every_committed_entry(tmp_path: Path):
    data = tmp_path / "data"
    ids = yaml_files(tmp_path / "entries", IMPORT_ENTRIES)
    Store(Settings(data_dir=data)).close()
    db = data / "perfkb.sqlite3"
    proc = subprocess.Popen(
        [sys.executable, "-m", "kb", "import", str(tmp_path / "entries")],
        env=env_for(data),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    wait_for(lambda: revisions(db) >= 50, "the import to start writing")
    kill(proc)

    store = assert_intact(data)
    try:
        present = {e.id for e in store.list_entries()}
        assert 50 <= len(present) < IMPORT_ENTRIES  # it really died midway
        # files are imported in name order, one transaction each: what is there is a prefix
        assert present == set(ids[: len(present)])
        last = len(present) - 1
        assert [h.id for h in store.search(f"cm{last}z").results] == [ids[last]]
        assert [r.action for r in store.history(ids[last])] == ["import"]
    finally:
        store.close()

    # the same import run again completes the job
    done = subprocess.run(
        [sys.executable, "-m", "kb", "import", str(tmp_path / "entries")],
        env=env_for(data),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert f"{IMPORT_ENTRIES - len(present)} created" in done.stdout
    assert f"{len(present)} unchanged" in done.stdout
    assert_intact(data).close()


def test_kill_during_reindex_leaves_an_index_that_is_rebuilt_on_restart(tmp_path: Path):
    data = tmp_path / "data"
    with Store(Settings(data_dir=data)) as store, store.bulk():
        for i in range(REINDEX_ENTRIES):
            entry = validate_entry(entry_data(f"rx-{i:05d}", symptom=f"rxmarker{i}q"))
            store.upsert(entry, author="seed")
    stamp = data / "index" / "perfkb-stamp.json"
    for delay in (0.0, 0.1, 0.25):
        assert stamp.exists()
        proc = subprocess.Popen(
            [sys.executable, "-m", "kb", "reindex"],
            env=env_for(data),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        # a rebuild removes the stamp first and writes it back last
        wait_for(lambda p=proc: not stamp.exists() or p.poll() is not None, "the reindex to start")
        time.sleep(delay)
        assert proc.poll() is None, "the reindex finished before it could be killed"
        kill(proc)

        store = assert_intact(data)  # opening rebuilds or catches up the index
        try:
            assert store.count() == REINDEX_ENTRIES
            assert [h.id for h in store.search("rxmarker1234q").results] == ["rx-01234"]
            # the killed process held the index lock: it is free again
            store.add(validate_entry(entry_data(f"after-kill-{int(delay * 100)}")), author="t")
            assert store.search(f"after-kill-{int(delay * 100)}").total == 1
            store.delete(f"after-kill-{int(delay * 100)}", author="t")
        finally:
            store.close()


# Adds w-0, w-1, ... one at a time, printing each id once add() has returned.
WRITER = textwrap.dedent(
    """
    import sys
    from kb.models import validate_entry
    from kb.settings import Settings
    from kb.store import Store

    store = Store(Settings(data_dir=sys.argv[1]))
    for i in range(100000):
        store.add(validate_entry({
            "id": f"w-{i}", "title": f"Acknowledged write {i}", "symptom": f"ackmarker{i}",
            "root_cause": "r", "fix": "f", "platforms": ["linux"],
        }), author="writer")
        if i % 3 == 2:
            store.delete(f"w-{i - 1}", author="writer")
        print(f"w-{i}", flush=True)
    """
)


def test_kill_during_single_writes_loses_no_acknowledged_write(tmp_path: Path):
    data = tmp_path / "data"
    Store(Settings(data_dir=data)).close()
    proc = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(data)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    acknowledged = []
    for line in proc.stdout:
        acknowledged.append(line.strip())
        if len(acknowledged) == 60:
            break
    kill(proc)

    store = assert_intact(data)
    try:
        live = {e.id for e in store.list_entries()}
        for n, entry_id in enumerate(acknowledged):
            if n % 3 == 1 and n + 1 < len(acknowledged):  # deleted before w-{n+1} was printed
                assert entry_id not in live
                assert [r.action for r in store.history(entry_id)] == ["create", "delete"]
            elif n % 3 != 1:
                assert entry_id in live
                assert store.search(f"ackmarker{n}").total == 1
        # the writer ran on while we read its output: whatever else is there came after
        assert all(int(i.removeprefix("w-")) >= len(acknowledged) for i in live - set(acknowledged))
    finally:
        store.close()
