"""The perfkb command: every subcommand on real files, and errors as one line with a non-zero
exit (never a traceback)."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import httpx
import pytest
from typer.testing import CliRunner

from kb.cli import app
from kb.entry_yaml import dump_entry, read_entries
from kb.store import Store

FIXTURES = Path(__file__).parent / "fixtures" / "seeds"
PERFKB = Path(sys.executable).parent / "perfkb"


@pytest.fixture
def run(settings):
    """run("search", "shmdt") -> result, against the test's data dir."""
    runner = CliRunner()

    def invoke(*args: str, input: str | None = None, env: dict | None = None):
        return runner.invoke(
            app, ["--data-dir", str(settings.data_dir), *args], input=input, env=env
        )

    return invoke


def _one_error_line(result, *fragments: str) -> str:
    assert result.exit_code != 0
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("perfkb: error: ")
    assert "Traceback" not in result.output + result.stderr
    for fragment in fragments:
        assert fragment in lines[0], lines[0]
    return lines[0]


@pytest.fixture
def starters(tmp_path, make_entry):
    """A directory of two starter entry files."""
    directory = tmp_path / "starters"
    directory.mkdir()
    for entry in (
        make_entry("starter-one", title="Semaphore storm on startup"),
        make_entry("starter-two", title="Latch free on a hot block"),
    ):
        (directory / f"{entry.id}.yaml").write_text(dump_entry(entry))
    return directory


# -- init -------------------------------------------------------------------------------------


def test_init_loads_the_shipped_entries_and_is_idempotent(run):
    first = run("init")
    assert first.exit_code == 0, first.stderr
    assert "0 updated" in first.stdout and "0 unchanged" in first.stdout
    again = run("init")
    assert again.exit_code == 0
    assert "0 created" in again.stdout and "0 updated" in again.stdout
    found = json.loads(run("search", "shmdt", "--json").stdout)
    assert found["results"][0]["id"] == "numa-shmdt-disconnect-storm"


def test_init_never_overwrites_an_edited_or_newer_entry(run, settings, starters, make_entry):
    assert "2 created" in run("init", "--entries", str(starters)).stdout
    store = Store(settings)
    edited = store.get("starter-one").model_copy(update={"fix": "Our local fix."})
    store.update(edited, author="alice")
    store.close()
    # the shipped file changes too, with an older timestamp for starter-two's copy
    newer = make_entry("starter-one", fix="Shipped fix v2.", updated="2030-01-01T00:00:00Z")
    (starters / "starter-one.yaml").write_text(dump_entry(newer))
    result = run("init", "--entries", str(starters))
    assert result.exit_code == 0
    assert "0 created, 0 updated, 1 unchanged, 1 kept" in result.stdout.replace("\n", " ")
    store = Store(settings)
    assert store.get("starter-one").fix == "Our local fix."
    store.close()


def test_init_updates_an_untouched_entry_from_a_newer_file(run, settings, starters, make_entry):
    run("init", "--entries", str(starters))
    newer = make_entry("starter-two", fix="Shipped fix v2.", updated="2030-01-01T00:00:00Z")
    (starters / "starter-two.yaml").write_text(dump_entry(newer))
    assert "1 updated" in run("init", "--entries", str(starters)).stdout
    assert json.loads(run("show", "starter-two", "--json").stdout)["fix"] == "Shipped fix v2."


# -- search and show --------------------------------------------------------------------------


def test_search_and_show(run, starters):
    run("init", "--entries", str(starters))
    result = run("search", "semaphore", "storm", "--json")
    assert result.exit_code == 0
    data = json.loads(result.stdout)
    assert data["results"][0]["id"] == "starter-one"
    assert {"id", "title", "score", "snippet", "platforms"} <= set(data["results"][0])
    assert data["facets"]["platform"] == {"solaris": 1}

    table = run("search", "semaphore")
    assert table.exit_code == 0 and "starter-one" in table.stdout

    shown = json.loads(run("show", "starter-one", "--json").stdout)
    assert shown["title"] == "Semaphore storm on startup"
    assert shown["signatures"][0]["when"]["all"][0]["key"] == "shmdt"
    human = run("show", "starter-one")
    assert human.exit_code == 0
    assert "Semaphore storm on startup" in human.stdout
    assert "syscall.count[shmdt] ≥ 5" in human.stdout
    assert run("show", "starter-one", "--yaml").stdout.startswith("id: starter-one\n")

    empty = run("search", "nothing-matches-this")
    assert empty.exit_code == 0 and "no entries" in empty.stdout


def test_search_pages(run, starters):
    run("init", "--entries", str(starters))
    page2 = json.loads(run("search", "--json", "--per-page", "1", "--page", "2").stdout)
    assert page2["total"] == 2 and len(page2["results"]) == 1


# -- add, edit, history, delete ---------------------------------------------------------------


def test_add_then_add_again(run, tmp_path, make_entry):
    path = tmp_path / "new.yaml"
    path.write_text(dump_entry(make_entry("brand-new")))
    result = run("add", str(path))
    assert result.exit_code == 0 and "added brand-new" in result.stdout
    _one_error_line(run("add", str(path)), "'brand-new' already exists")


def _editor(tmp_path: Path, body: str) -> str:
    """An $EDITOR: a Python script that edits the YAML file it is given."""
    script = tmp_path / "editor.py"
    script.write_text("import sys, pathlib\npath = pathlib.Path(sys.argv[1])\n" + body)
    return f"{sys.executable} {script}"


def test_edit_saves_a_valid_change(run, tmp_path, starters):
    run("init", "--entries", str(starters))
    editor = _editor(
        tmp_path,
        "path.write_text(path.read_text().replace('Semaphore storm', 'Semaphore flood'))\n",
    )
    result = run("edit", "starter-one", env={"EDITOR": editor, "VISUAL": ""})
    assert result.exit_code == 0, result.stderr
    assert "saved starter-one" in result.stdout and "title" in result.stdout
    history = json.loads(run("history", "starter-one", "--json").stdout)
    assert [h["action"] for h in history] == ["import", "update"]
    assert history[1]["changed_fields"] == ["title"]
    assert json.loads(run("show", "starter-one", "--json").stdout)["title"].startswith(
        "Semaphore flood"
    )


def test_edit_with_no_change(run, tmp_path, starters):
    run("init", "--entries", str(starters))
    result = run("edit", "starter-one", env={"EDITOR": _editor(tmp_path, "pass\n")})
    assert result.exit_code == 0 and "no changes" in result.stdout


def test_an_invalid_edit_can_be_fixed_by_editing_again(run, tmp_path, starters):
    run("init", "--entries", str(starters))
    counter = tmp_path / "calls"
    editor = _editor(
        tmp_path,
        textwrap.dedent(
            f"""
            counter = pathlib.Path({str(counter)!r})
            calls = int(counter.read_text()) + 1 if counter.exists() else 1
            counter.write_text(str(calls))
            text = path.read_text()
            if calls == 1:
                text = text.replace('platforms: [solaris]', 'platforms: [plan9]')
            else:
                text = text.replace('platforms: [plan9]', 'platforms: [linux]')
            path.write_text(text)
            """
        ),
    )
    result = run("edit", "starter-one", input="y\n", env={"EDITOR": editor})
    assert result.exit_code == 0, result.stderr
    assert "platforms[0]" in result.stderr  # the first attempt's error was shown
    assert json.loads(run("show", "starter-one", "--json").stdout)["platforms"] == ["linux"]


def test_an_invalid_edit_is_never_lost(run, tmp_path, starters):
    run("init", "--entries", str(starters))
    editor = _editor(
        tmp_path, "path.write_text(path.read_text().replace('weight: 0.7', 'weight: 7'))\n"
    )
    result = run("edit", "starter-one", input="n\n", env={"EDITOR": editor})
    assert result.exit_code == 1
    last = result.stderr.strip().splitlines()[-1]
    assert "not saved; your edit is kept in" in last
    kept = Path(last.rsplit(" in ", 1)[1])
    assert "weight: 7" in kept.read_text()
    assert json.loads(run("show", "starter-one", "--json").stdout)["signatures"][0]["weight"] == 0.7
    kept.unlink()


def test_edit_refuses_to_change_the_id(run, tmp_path, starters):
    run("init", "--entries", str(starters))
    editor = _editor(
        tmp_path, "path.write_text(path.read_text().replace('id: starter-one', 'id: other'))\n"
    )
    result = run("edit", "starter-one", input="n\n", env={"EDITOR": editor})
    assert result.exit_code == 1
    assert "the id cannot change" in result.stderr
    Path(result.stderr.strip().rsplit(" in ", 1)[1]).unlink()


def test_edit_with_a_missing_editor(run, starters):
    run("init", "--entries", str(starters))
    result = run("edit", "starter-one", env={"EDITOR": "/nonexistent/editor", "VISUAL": ""})
    line = _one_error_line(result, "cannot run editor", "The entry is in")
    Path(line.rsplit(" is in ", 1)[1]).unlink()


def test_delete_restore_and_history(run, starters):
    run("init", "--entries", str(starters))
    assert run("delete", "starter-two").exit_code == 0
    _one_error_line(run("show", "starter-two"), "was deleted")
    assert json.loads(run("search", "latch", "--json").stdout)["total"] == 0
    assert run("restore", "starter-two").exit_code == 0
    history = run("history", "starter-two")
    assert history.exit_code == 0
    for action in ("import", "delete", "restore"):
        assert action in history.stdout


# -- import and export ------------------------------------------------------------------------


def test_export_import_export_through_the_cli(run, tmp_path, settings):
    assert run("init").exit_code == 0
    out1, out2 = tmp_path / "out1", tmp_path / "out2"
    assert run("export", str(out1)).exit_code == 0
    other = CliRunner()
    other_dir = str(tmp_path / "other-data")
    imported = other.invoke(app, ["--data-dir", other_dir, "import", str(out1)])
    assert imported.exit_code == 0, imported.stderr
    assert other.invoke(app, ["--data-dir", other_dir, "export", str(out2)]).exit_code == 0
    names = sorted(p.name for p in out1.iterdir())
    assert names and names == sorted(p.name for p in out2.iterdir())
    for name in names:
        assert (out1 / name).read_bytes() == (out2 / name).read_bytes()


def test_import_many_files_reports_bad_ones_and_keeps_the_rest(run, tmp_path, make_entry):
    directory = tmp_path / "many"
    (directory / "nested").mkdir(parents=True)
    for i in range(24):
        (directory / f"e{i:02}.yaml").write_text(dump_entry(make_entry(f"bulk-{i}")))
    (directory / "nested" / "broken.yaml").write_text("id: broken\ntitle: [unclosed\n")
    (directory / "notes.txt").write_text("not an entry")
    result = run("import", str(directory))
    assert result.exit_code == 1
    assert "broken.yaml" in result.stderr and "YAML error" in result.stderr
    assert "24 created" in result.stdout
    assert json.loads(run("search", "--json").stdout)["total"] == 24
    again = run("import", str(directory / "e00.yaml"))
    assert again.exit_code == 0 and "1 unchanged" in again.stdout


def test_import_restores_a_deleted_entry(run, tmp_path, make_entry):
    path = tmp_path / "one.yaml"
    path.write_text(dump_entry(make_entry("comes-back")))
    run("import", str(path))
    run("delete", "comes-back")
    assert "1 created" in run("import", str(path)).stdout
    assert run("show", "comes-back").exit_code == 0


# -- maintenance ------------------------------------------------------------------------------


def test_reindex_and_check(run, settings, starters):
    run("init", "--entries", str(starters))
    result = run("reindex")
    assert result.exit_code == 0 and "indexed 2 entries" in result.stdout
    check = json.loads(run("check", "--json").stdout)
    assert check["ok"] and check["entries"] == check["indexed"] == 2
    store = Store(settings)
    store._index.delete(["starter-one"])  # damage it behind the store's back
    store.close()
    damaged = run("check", "--no-repair")
    assert damaged.exit_code == 1 and "starter-one" in damaged.stdout
    repaired = run("check")
    assert repaired.exit_code == 0 and "repaired" in repaired.stdout
    assert run("check").stdout.strip().endswith("consistent")


# -- analyze ----------------------------------------------------------------------------------


def test_analyze_a_seed_capture(run):
    run("init")
    result = run("analyze", str(FIXTURES / "001_truss_shmdt.txt"), "--json")
    assert result.exit_code == 0, result.stderr
    data = json.loads(result.stdout)
    assert {"blocks", "matches", "next_commands"} <= set(data)
    assert data["blocks"][0]["format"] == "truss"
    assert data["blocks"][0]["facts"]["syscall.count"]["shmdt"] == 10
    assert data["matches"][0]["id"] == "numa-shmdt-disconnect-storm"
    human = run("analyze", str(FIXTURES / "001_truss_shmdt.txt"))
    assert human.exit_code == 0
    assert "block 1: truss" in human.stdout and "numa-shmdt-disconnect-storm" in human.stdout


def test_analyze_a_raw_10046_trace_prints_its_response_time_profile(run):
    run("init")
    trace = Path(__file__).parent / "fixtures" / "oracle" / "trace10046_19c_pasted.txt"
    human = run("analyze", str(trace), env={"COLUMNS": "200"})
    assert human.exit_code == 0, human.stderr
    out = human.stdout
    assert "block 1: trace10046" in out and "Response-time profile" in out
    # the think-time row is marked, and the components are listed with their share of R
    assert "SQL*Net message from client (think time)" in out
    assert "db file sequential read" in out and "% of R" in out


def test_analyze_reads_stdin(run):
    run("init")
    text = (FIXTURES / "001_truss_shmdt.txt").read_text()
    result = run("analyze", "-", "--json", input=text)
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["blocks"][0]["format"] == "truss"


def test_analyze_a_large_file_streams_it(run, tmp_path):
    run("init")
    lines = (FIXTURES / "001_truss_shmdt.txt").read_text().splitlines()
    big = tmp_path / "big.txt"
    with big.open("w") as fh:
        while fh.tell() < 6 * 1024 * 1024:
            fh.write("\n".join(lines) + "\n")
    result = run("analyze", str(big), "--json")
    assert result.exit_code == 0, result.stderr
    data = json.loads(result.stdout)  # the progress bar stayed off stdout
    assert data["blocks"] and data["blocks"][0]["format"] == "truss"


def test_analyze_bad_inputs(run, tmp_path):
    _one_error_line(run("analyze", str(tmp_path / "missing.txt")), "no such file")
    _one_error_line(run("analyze", str(tmp_path)), "is a directory")
    binary = tmp_path / "binary.bin"
    binary.write_bytes(bytes(range(256)) * 100 + b"\xff\xfe\x00garbage")
    # binary data is refused with the reason (issue 9), not analysed into nonsense
    _one_error_line(run("analyze", str(binary), "--json"), "not a text capture: it contains NUL")


# -- errors -----------------------------------------------------------------------------------


def test_errors_are_one_line(run, tmp_path):
    _one_error_line(run("show", "no-such-entry"), "no entry 'no-such-entry'")
    _one_error_line(run("history", "no-such-entry"), "no entry")
    _one_error_line(run("delete", "no-such-entry"), "no entry")
    _one_error_line(run("add", str(tmp_path / "missing.yaml")), "no such file")
    _one_error_line(run("add", str(tmp_path)), "is a directory")
    _one_error_line(run("import", str(tmp_path / "nowhere")), "no such file or directory")
    empty = tmp_path / "empty-dir"
    empty.mkdir()
    _one_error_line(run("import", str(empty)), "no .yaml files")
    latin1 = tmp_path / "latin1.yaml"
    latin1.write_bytes("id: caf\xe9\n".encode("latin-1"))
    _one_error_line(run("add", str(latin1)), "not UTF-8")
    bad = tmp_path / "bad.yaml"
    bad.write_text("id: Bad Id\ntitle: x\n")
    _one_error_line(run("add", str(bad)), "bad.yaml", "entry 'Bad Id'", "id:")
    _one_error_line(run("search", "platform:plan9"), "unknown platform 'plan9'")
    _one_error_line(run("show"), "Missing argument")
    _one_error_line(run("search", "--page", "0"), "--page")
    _one_error_line(run("frobnicate"), "No such command")


def test_a_data_dir_that_cannot_be_used(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    result = CliRunner().invoke(app, ["--data-dir", str(blocker / "sub"), "search", "x"])
    _one_error_line(result, "data directory")
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "perfkb.sqlite3").write_bytes(b"garbage" * 1000)
    result = CliRunner().invoke(app, ["--data-dir", str(broken), "search", "x"])
    _one_error_line(result, "not a usable perfkb database")


# -- the installed console script -------------------------------------------------------------


def _perfkb(*args: str, data_dir: Path, stdin: str | None = None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PERFKB_")}
    return subprocess.run(
        [str(PERFKB), "--data-dir", str(data_dir), *args],
        capture_output=True,
        text=True,
        input=stdin,
        env=env,
        timeout=120,
    )


def test_the_installed_perfkb_command(tmp_path):
    data_dir = tmp_path / "kb"
    init = _perfkb("init", data_dir=data_dir)
    assert init.returncode == 0, init.stderr
    found = _perfkb("search", "cladm", "--json", data_dir=data_dir)
    assert found.returncode == 0, found.stderr
    assert json.loads(found.stdout)["results"][0]["id"] == "listener-slow-fork-cladm"
    missing = _perfkb("show", "no-such-entry", data_dir=data_dir)
    assert missing.returncode == 1
    assert missing.stderr == "perfkb: error: no entry 'no-such-entry'\n"
    assert missing.stdout == ""
    usage = _perfkb("search", "--page", "x", data_dir=data_dir)
    assert usage.returncode == 2 and len(usage.stderr.splitlines()) == 1
    assert "Traceback" not in usage.stderr


def test_python_dash_m_kb(tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "kb", "--data-dir", str(tmp_path / "kb"), "search", "--json"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["total"] == 0


def test_read_entries_matches_what_show_prints(run, starters):
    run("init", "--entries", str(starters))
    shown = run("show", "starter-two", "--yaml").stdout
    assert shown == (starters / "starter-two.yaml").read_text()
    assert read_entries(starters / "starter-two.yaml")[0].id == "starter-two"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_serve_starts_the_web_app_on_the_given_port(tmp_path):
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PERFKB_", "SLACK_"))}
    proc = subprocess.Popen(
        [str(PERFKB), "--data-dir", str(tmp_path / "kb"), "serve", "--port", str(port)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )
    try:
        deadline = time.monotonic() + 60
        status = None
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                status = httpx.get(f"http://127.0.0.1:{port}/", timeout=2).status_code
                break
            except httpx.TransportError:
                time.sleep(0.2)
        assert status == 200, proc.stderr.read1().decode() if proc.poll() is not None else status
        assert (tmp_path / "kb" / "perfkb.sqlite3").exists()  # --data-dir reached the app
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def test_bot_without_tokens_says_what_is_missing(run):
    result = run("bot", env={"SLACK_BOT_TOKEN": "", "SLACK_APP_TOKEN": ""})
    _one_error_line(result, "SLACK_BOT_TOKEN", "not set")
