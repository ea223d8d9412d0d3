"""The web server and the bot are two processes writing one KB, and a `perfkb import` may run
beside them. Two writer processes make 500 adds and edits each (some on the same entries) while
the CLI imports a directory: afterwards nothing is lost, every revision is there in order, and
the index agrees with SQLite; `perfkb check` confirms it and repairs an index that does not."""

from __future__ import annotations

import json
import os
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

pytestmark = pytest.mark.timeout(240)

OPS = 500  # per writer: adds and edits
SHARED = 5  # entries both writers edit
IMPORTED = 100

# One writer (the web server or the bot): even steps add an entry of its own, odd steps edit
# the entry it added just before, and every fifth step also edits a shared entry. It logs what
# it did as JSON once done; nothing is batched, each call is its own transaction.
WRITER = textwrap.dedent(
    """
    import json, sys, time
    from pathlib import Path
    from kb.models import validate_entry
    from kb.settings import Settings
    from kb.store import Store

    data_dir, name, ops, shared, go = sys.argv[1:6]
    ops, shared, go = int(ops), int(shared), Path(go)
    store = Store(Settings(data_dir=data_dir))
    while not go.exists():
        time.sleep(0.002)
    log = []
    for i in range(ops):
        own = f"{name}-{i - i % 2}"
        if i % 2 == 0:
            store.add(validate_entry({
                "id": own, "title": f"{name} entry {i}", "symptom": f"mk{name}{i}x",
                "root_cause": "r", "fix": "f", "platforms": ["linux"], "tags": [name],
            }), author=name)
            log.append([own, "create"])
        else:
            entry = store.get(own)
            store.update(entry.model_copy(update={"title": f"{name} edited {i}"}), author=name)
            log.append([own, "update"])
        if i % 5 == 4:
            target = f"shared-{(i // 5) % shared}"
            entry = store.get(target)
            store.update(entry.model_copy(update={"fix": f"{name} step {i}"}), author=name)
            log.append([target, "update"])
    store.close()
    print(json.dumps(log))
    """
)


def perfkb(data_dir: Path, *args: str, timeout: float = 120) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "kb", *args],
        env={**os.environ, "PERFKB_DATA_DIR": str(data_dir)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def import_dir(directory: Path) -> list[str]:
    directory.mkdir()
    template = dump_entry(validate_entry(entry_data("imp-template", symptom="impmarkerX")))
    ids = []
    for i in range(IMPORTED):
        entry_id = f"imp-{i:03d}"
        text = template.replace("imp-template", entry_id).replace("impmarkerX", f"im{i}z")
        (directory / f"{entry_id}.yaml").write_text(text, encoding="utf-8")
        ids.append(entry_id)
    return ids


def test_two_writers_and_an_import_lose_nothing_and_the_index_agrees(tmp_path: Path):
    data = tmp_path / "data"
    settings = Settings(data_dir=data)
    with Store(settings) as store:
        for k in range(SHARED):
            store.add(validate_entry(entry_data(f"shared-{k}")), author="setup")
    imported = import_dir(tmp_path / "import")
    go = tmp_path / "go"
    writers = {
        name: subprocess.Popen(
            [sys.executable, "-c", WRITER, str(data), name, str(OPS), str(SHARED), str(go)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for name in ("web", "bot")
    }
    time.sleep(0.5)  # both have the store open
    go.touch()
    cli = perfkb(data, "import", str(tmp_path / "import"))
    logs = {}
    for name, proc in writers.items():
        out, err = proc.communicate(timeout=200)
        assert proc.returncode == 0, err
        logs[name] = json.loads(out)
    out, err = cli.communicate(timeout=120)
    assert cli.returncode == 0, err
    assert f"{IMPORTED} created" in out

    expected_revisions = SHARED + IMPORTED + sum(len(log) for log in logs.values())
    with Store(settings) as store:
        # every entry is there, with every revision, numbered without gaps
        ids = {e.id for e in store.list_entries()}
        own = {f"{n}-{i}" for n in logs for i in range(0, OPS, 2)}
        shared = {f"shared-{k}" for k in range(SHARED)}
        assert ids == own | shared | set(imported)
        for name, log in logs.items():
            assert len(log) == OPS + OPS // 5
            for i in range(0, OPS, 2):
                history = store.history(f"{name}-{i}")
                assert [(r.rev, r.action, r.author) for r in history] == [
                    (1, "create", name),
                    (2, "update", name),
                ]
                assert history[-1].entry.title == f"{name} edited {i + 1}"
        for k in range(SHARED):
            history = store.history(f"shared-{k}")
            edits = [r for log in logs.values() for r in log if r[0] == f"shared-{k}"]
            assert [r.rev for r in history] == list(range(1, len(edits) + 2))
            by = [r.author for r in history[1:]]
            assert sorted(set(by)) == ["bot", "web"] and len(by) == len(edits)
            # each writer's own edits to it kept their order
            for name in logs:
                steps = [int(r.entry.fix.split()[-1]) for r in history[1:] if r.author == name]
                assert steps == sorted(steps)
        with sqlite3.connect(settings.db_path) as conn:
            assert conn.execute("SELECT COUNT(*) FROM revisions").fetchone()[0] == (
                expected_revisions
            )
            assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]

        # the index agrees with SQLite, entry by entry
        report = store.check(repair=False)
        assert report.ok, report
        assert report.entries == report.indexed == len(ids)
        for name in logs:
            assert store.search(f"tag:{name}", per_page=5).total == OPS // 2
            assert [h.id for h in store.search(f"mk{name}{OPS - 2}x").results] == [
                f"{name}-{OPS - 2}"
            ]
        assert [h.id for h in store.search(f"im{IMPORTED - 1}z").results] == [imported[-1]]

    check = perfkb(data, "check")
    out, err = check.communicate(timeout=60)
    assert check.returncode == 0, err
    assert f"database: {len(ids)} entries; index: {len(ids)} documents" in out
    assert out.strip().endswith("consistent")


def test_perfkb_check_finds_and_repairs_an_index_that_disagrees(tmp_path: Path):
    data = tmp_path / "data"
    settings = Settings(data_dir=data)
    with Store(settings) as store:
        for i in range(6):
            store.add(validate_entry(entry_data(f"chk-{i}", symptom=f"chkmarker{i}")), author="a")
        # the index loses one document and keeps a stale copy of another (a writer that died
        # between its SQLite commit and its index commit, or a hand-edited index)
        stamp = store._index.stamp()
        store._index.delete(["chk-1"], stamp)
        old = store.get("chk-2")
        store._conn.execute(
            "UPDATE entries SET data = ? WHERE id = 'chk-2'",
            (old.model_copy(update={"title": "changed behind the index"}).model_dump_json(),),
        )

    report = perfkb(data, "check", "--no-repair", "--json")
    out, err = report.communicate(timeout=60)
    assert report.returncode == 1, err
    found = json.loads(out)
    assert (found["missing"], found["stale"], found["ok"]) == (["chk-1"], ["chk-2"], False)

    repair = perfkb(data, "check")
    out, err = repair.communicate(timeout=60)
    assert repair.returncode == 0, err
    assert "missing in the index: chk-1" in out and "stale in the index: chk-2" in out
    assert "repaired (index rebuilt)" in out

    with Store(settings) as store:
        assert store.check(repair=False).ok
        assert [h.id for h in store.search("chkmarker1").results] == ["chk-1"]
        assert [h.id for h in store.search("behind").results] == ["chk-2"]


def test_perfkb_check_rebuilds_an_index_damaged_on_disk(tmp_path: Path):
    data = tmp_path / "data"
    settings = Settings(data_dir=data)
    with Store(settings) as store:
        for i in range(3):
            store.add(validate_entry(entry_data(f"dmg-{i}", symptom=f"dmgmarker{i}")), author="a")
    victims = [p for p in (data / "index").iterdir() if p.suffix in (".seg", ".toc")]
    assert victims
    for path in victims:
        path.write_bytes(b"\0garbage" * 10)
    check = perfkb(data, "check")
    out, err = check.communicate(timeout=60)
    assert check.returncode == 0, err
    assert "Traceback" not in out + err
    assert "database: 3 entries; index: 3 documents" in out
    with Store(settings) as store:
        assert store.check(repair=False).ok
        assert [h.id for h in store.search("dmgmarker2").results] == ["dmg-2"]


def test_perfkb_check_reports_a_damaged_database_and_exits_1(tmp_path: Path):
    data = tmp_path / "data"
    settings = Settings(data_dir=data)
    with Store(settings) as store:
        for i in range(4):
            store.add(validate_entry(entry_data(f"bad-{i}")), author="a")
    # an index whose stored definition no longer matches its contents: SQLite opens the file,
    # only integrity_check (not quick_check) notices
    conn = sqlite3.connect(settings.db_path)
    conn.execute("PRAGMA writable_schema = ON")
    conn.execute(
        "UPDATE sqlite_master SET sql = 'CREATE INDEX entries_live ON entries (deleted, title)'"
        " WHERE name = 'entries_live'"
    )
    conn.commit()
    conn.close()
    check = perfkb(data, "check")
    out, err = check.communicate(timeout=60)
    assert check.returncode == 1, out + err
    assert "database integrity: row 1 missing from index entries_live" in out
    assert "restore it from a backup" in out
