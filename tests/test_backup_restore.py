"""`perfkb backup` copies the KB online while another process writes; `perfkb restore` checks a
backup before it touches anything and gives back a consistent KB: integrity ok, exactly the
entries the backup held with their history, and an index that agrees with SQLite."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ingest.facts import number
from kb.backup import inspect_backup
from kb.cli import app
from kb.settings import Settings
from kb.store import Store

pytestmark = pytest.mark.timeout(120)

# Adds w-0, w-1, ... one transaction each, as fast as it can, until told to stop or `count`.
WRITER = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from kb.models import validate_entry
    from kb.settings import Settings
    from kb.store import Store

    data_dir, count, stop = sys.argv[1], int(sys.argv[2]), Path(sys.argv[3])
    store = Store(Settings(data_dir=data_dir))
    for i in range(count):
        if stop.exists():
            break
        store.add(validate_entry({
            "id": f"w-{i}", "title": f"Written under load {i}",
            "symptom": f"loadmarker{i}", "root_cause": "a writer", "fix": "none",
            "platforms": ["linux"],
        }), author="writer")
        print(i, flush=True)
    store.close()
    """
)


class Ran:
    def __init__(self, returncode: int, stdout: str, stderr: str) -> None:
        self.returncode, self.stdout, self.stderr = returncode, stdout, stderr


@pytest.fixture
def perfkb(monkeypatch):
    """perfkb(data_dir, "backup", FILE): the CLI in this process (the global --data-dir option
    exports PERFKB_DATA_DIR; monkeypatch puts it back afterwards)."""
    runner = CliRunner()

    def invoke(data_dir: Path, *args: str) -> Ran:
        monkeypatch.setenv("PERFKB_DATA_DIR", str(data_dir))
        result = runner.invoke(app, ["--data-dir", str(data_dir), *args])
        if result.exception is not None and not isinstance(result.exception, SystemExit):
            raise result.exception
        return Ran(result.exit_code, result.stdout, result.stderr)

    return invoke


def perfkb_process(data_dir: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PERFKB_DATA_DIR": str(data_dir)}
    return subprocess.run(
        [sys.executable, "-m", "kb", *args], capture_output=True, text=True, timeout=60, env=env
    )


def assert_clean_failure(proc: Ran | subprocess.CompletedProcess, *needles: str) -> None:
    assert proc.returncode != 0, proc.stdout
    assert "Traceback" not in proc.stderr + proc.stdout
    line = proc.stderr.strip()
    assert line.startswith("perfkb: error: ") and "\n" not in line, proc.stderr
    for needle in needles:
        assert needle in line, line


def entry_ids(data_dir: Path) -> set[str]:
    with Store(Settings(data_dir=data_dir)) as store:
        return {e.id for e in store.list_entries()}


def test_backups_taken_while_another_process_writes_restore_to_consistent_kbs(
    tmp_path: Path, perfkb
):
    live = tmp_path / "live"
    Store(Settings(data_dir=live)).close()
    stop = tmp_path / "stop"
    writer = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(live), "100000", str(stop)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    backups: list[Path] = []
    try:
        assert writer.stdout is not None
        for line in writer.stdout:  # wait until it is writing for real
            if int(line) >= 20:
                break
        for n in range(3):
            dest = tmp_path / f"during-{n}.sqlite3"
            proc = perfkb(live, "backup", str(dest))
            assert proc.returncode == 0, proc.stderr
            assert f"to {dest}" in proc.stdout
            backups.append(dest)
        # and it goes on writing after the last copy: wait for a write the copy cannot hold
        # (lines already in the pipe may predate it), w-N where N is the copy's entry count
        copied = inspect_backup(backups[-1]).entries
        seen = 0
        for line in writer.stdout:
            seen = int(line)
            if seen >= copied:
                break
    finally:
        stop.touch()
        rest, err = writer.communicate(timeout=60)
    assert writer.returncode == 0, err
    written = max([seen, *map(int, rest.split())]) + 1

    held = []
    for n, backup in enumerate(backups):
        info = inspect_backup(backup)  # integrity_check, schema, every entry valid
        assert not Path(f"{backup}-wal").exists()  # one self-contained file
        target = tmp_path / f"restored-{n}"
        proc = perfkb(target, "restore", str(backup))
        assert proc.returncode == 0, proc.stderr
        assert f"restored {number(info.entries)} entries" in proc.stdout  # 1,203 as the CLI says it
        with Store(Settings(data_dir=target)) as store:
            ids = {e.id for e in store.list_entries()}
            # a snapshot of a writer adding w-0, w-1, ... in order has no holes
            assert ids == {f"w-{i}" for i in range(len(ids))}
            assert len(ids) == info.entries >= 20
            for i in (0, len(ids) - 1):
                assert [r.action for r in store.history(f"w-{i}")] == ["create"]
            assert store.check(repair=False).ok
            last = len(ids) - 1
            assert [h.id for h in store.search(f"loadmarker{last}").results] == [f"w-{last}"]
        held.append(len(ids))
    assert held == sorted(held)  # later backups hold at least as much
    assert held[-1] < written == len(entry_ids(live))  # the writer went on while we copied


def test_restore_over_a_live_kb_replaces_it_and_keeps_the_old_one(
    tmp_path: Path, make_entry, perfkb
):
    data = tmp_path / "data"
    with Store(Settings(data_dir=data)) as store:
        for i in range(3):
            store.add(make_entry(f"kept-{i}"), author="alice")
        store.update(make_entry("kept-0", title="Second version"), author="bob")
        snapshot = tmp_path / "kb.sqlite3"
        store.backup(snapshot)
        store.add(make_entry("after-backup"), author="alice")
        store.delete("kept-1", author="alice")
        version_before = store.data_version()

    other = Store(Settings(data_dir=data))  # another process with the KB open (say, the bot)
    try:
        assert other.search("after").total == 1
        proc = perfkb_process(data, "restore", str(snapshot))  # really another process
        assert proc.returncode == 0, proc.stderr
        assert "The KB it replaced is in" in proc.stdout

        assert {e.id for e in other.list_entries()} == {"kept-0", "kept-1", "kept-2"}
        assert other.search("after").total == 0  # its view of the index moved too
        assert other.data_version() > version_before  # caches keyed on it refresh
        history = other.history("kept-0")
        assert [(r.rev, r.action, r.author) for r in history] == [
            (1, "create", "alice"),
            (2, "update", "bob"),
        ]
        assert history[-1].entry is not None and history[-1].entry.title == "Second version"
        assert other.check(repair=False).ok
        other.add(make_entry("written-after-restore"), author="carol")  # the KB stays writable
        assert other.search("written").total == 1
    finally:
        other.close()

    (kept,) = (data / "backups").glob("before-restore-*.sqlite3")
    assert inspect_backup(kept).entries == 3  # kept-0, kept-2, after-backup
    proc = perfkb(data, "restore", str(kept))
    assert proc.returncode == 0, proc.stderr
    assert entry_ids(data) == {"kept-0", "kept-2", "after-backup"}


def test_restore_refuses_bad_files_and_leaves_the_kb_alone(tmp_path: Path, make_entry, perfkb):
    data = tmp_path / "data"
    with Store(Settings(data_dir=data)) as store:
        store.add(make_entry("survivor"), author="alice")
        good = tmp_path / "good.sqlite3"
        store.backup(good)

    random_bytes = tmp_path / "random.bin"
    random_bytes.write_bytes(os.urandom(64 * 1024))
    truncated = tmp_path / "truncated.sqlite3"
    truncated.write_bytes(good.read_bytes()[: good.stat().st_size // 2])
    foreign = tmp_path / "foreign.sqlite3"
    with sqlite3.connect(foreign) as conn:
        conn.execute("CREATE TABLE t (x)")
    newer = tmp_path / "newer.sqlite3"
    newer.write_bytes(good.read_bytes())
    with sqlite3.connect(newer) as conn:
        conn.execute("INSERT INTO schema_version VALUES (99, 'from the future', '2030-01-01')")
    tampered = tmp_path / "tampered.sqlite3"
    tampered.write_bytes(good.read_bytes())
    with sqlite3.connect(tampered) as conn:
        conn.execute('UPDATE entries SET data = \'{"id": "survivor"}\'')
    trigger = tmp_path / "trigger.sqlite3"  # would run on every future write once restored
    trigger.write_bytes(good.read_bytes())
    with sqlite3.connect(trigger) as conn:
        conn.execute("CREATE TRIGGER wipe AFTER INSERT ON revisions BEGIN DELETE FROM entries; END")
    altered = tmp_path / "altered.sqlite3"
    altered.write_bytes(good.read_bytes())
    with sqlite3.connect(altered) as conn:
        conn.execute("ALTER TABLE entries ADD COLUMN extra TEXT DEFAULT 'x'")
    (tmp_path / "a-dir").mkdir()

    cases = [
        (tmp_path / "missing.sqlite3", "no such file"),
        (tmp_path / "a-dir", "is a directory"),
        (random_bytes, "not a perfkb backup (not an SQLite database file)"),
        (truncated, "truncated.sqlite3"),
        (foreign, "not a perfkb backup (no meta, entries"),
        (newer, "made by a newer perfkb (schema version 99"),
        (tampered, "entry 'survivor' is not valid"),
        (trigger, "not restorable: it holds triggers, which perfkb never creates"),
        (altered, "not restorable: its schema differs from perfkb's (entries)"),
    ]
    for path, needle in cases:
        started = time.monotonic()
        proc = perfkb(data, "restore", str(path))
        assert_clean_failure(proc, needle)
        assert time.monotonic() - started < 30
    assert entry_ids(data) == {"survivor"}
    assert not (data / "backups").exists()  # nothing was replaced, so nothing was kept
    leftovers = [p.name for p in data.iterdir() if ".restore-" in p.name]
    assert leftovers == []


def test_backup_refuses_bad_destinations(tmp_path: Path, make_entry, perfkb):
    data = tmp_path / "data"
    assert_clean_failure(perfkb(data, "backup", str(tmp_path / "b.sqlite3")), "perfkb init")
    with Store(Settings(data_dir=data)) as store:
        store.add(make_entry("one"), author="alice")
    dest = tmp_path / "b.sqlite3"
    assert perfkb(data, "backup", str(dest)).returncode == 0
    assert_clean_failure(perfkb(data, "backup", str(dest)), "already exists", "--force")
    assert perfkb(data, "backup", "--force", str(dest)).returncode == 0
    assert_clean_failure(perfkb(data, "backup", str(tmp_path)), "is a directory")
    assert_clean_failure(perfkb(data, "backup", str(tmp_path / "no" / "b.db")), "no such directory")
    assert inspect_backup(dest).entries == 1


def test_a_slug_restores_an_entry_and_a_path_restores_a_backup(tmp_path: Path, make_entry, perfkb):
    data = tmp_path / "data"
    with Store(Settings(data_dir=data)) as store:
        store.add(make_entry("plain-id"), author="alice")
        store.delete("plain-id", author="alice")
    proc = perfkb(data, "restore", "plain-id")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "restored plain-id"
    assert_clean_failure(perfkb(data, "restore", "no-such-entry"), "no entry 'no-such-entry'")
    assert_clean_failure(perfkb(data, "restore", "./no-such-entry"), "no such file")
