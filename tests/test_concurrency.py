"""Two OS processes writing at once (say the web server and the bot) lose nothing, and each sees
the other's entries in search at once."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time

from kb.store import Store

PER_WRITER = 200

# A writer process: waits for the go file so both start together, then adds its entries one
# by one through Store (each add is its own SQLite transaction and index commit).
WRITER = textwrap.dedent(
    """
    import os, sys, time
    from pathlib import Path
    from kb.models import validate_entry
    from kb.settings import Settings
    from kb.store import Store

    data_dir, name, count, go = sys.argv[1], sys.argv[2], int(sys.argv[3]), Path(sys.argv[4])
    store = Store(Settings(data_dir=data_dir))
    while not go.exists():
        time.sleep(0.005)
    for i in range(count):
        store.add(validate_entry({
            "id": f"{name}-{i}",
            "title": f"Concurrent entry {name} number {i}",
            "symptom": f"marker{name}x{i} seen under load",
            "root_cause": "two writers at once",
            "fix": "nothing to fix",
            "platforms": ["linux"],
            "tags": [name],
        }), author=name)
    store.close()
    print("done", name)
    """
)


def test_two_processes_adding_at_once_lose_nothing(settings, tmp_path):
    Store(settings).close()  # create the database first, as `perfkb init` would
    go = tmp_path / "go"
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, str(settings.data_dir), name, str(PER_WRITER), str(go)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for name in ("web", "bot")
    ]
    time.sleep(0.3)  # both have opened the store
    go.touch()
    for proc in procs:
        out, err = proc.communicate(timeout=240)
        assert proc.returncode == 0, err
        assert out.startswith("done")

    store = Store(settings)
    try:
        ids = {e.id for e in store.list_entries()}
        expected = {f"{n}-{i}" for n in ("web", "bot") for i in range(PER_WRITER)}
        assert ids == expected
        assert store.index_doc_count() == 2 * PER_WRITER
        report = store.check(repair=False)
        assert report.ok, report
        for name in ("web", "bot"):
            for i in range(PER_WRITER):
                page = store.search(f"marker{name}x{i}")
                assert [h.id for h in page.results] == [f"{name}-{i}"]
            assert store.search(f"tag:{name}", per_page=5).total == PER_WRITER
        for entry_id in ("web-0", "bot-199"):
            assert [r.action for r in store.history(entry_id)] == ["create"]
    finally:
        store.close()


READER_SEES = textwrap.dedent(
    """
    import sys, time
    from kb.settings import Settings
    from kb.store import Store

    store = Store(Settings(data_dir=sys.argv[1]))
    print("ready", flush=True)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        hits = store.search("semaphoreburst").results
        if hits:
            print("found", hits[0].id, flush=True)
            break
        time.sleep(0.02)
    """
)


def test_a_running_process_sees_another_processes_entry_within_a_second(settings, make_entry):
    Store(settings).close()
    reader = subprocess.Popen(
        [sys.executable, "-c", READER_SEES, str(settings.data_dir)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert reader.stdout.readline().strip() == "ready"
        writer = Store(settings)
        writer.add(make_entry("sem-1", title="A semaphoreburst under load"), author="web")
        written = time.monotonic()
        line = reader.stdout.readline().strip()
        seen_after = time.monotonic() - written
        writer.close()
        assert line == "found sem-1"
        assert seen_after < 1.0
    finally:
        reader.kill()
        reader.wait()
