"""Issue 20 item 2: no text from the evidence can run as a command when an on-call DBA pastes a
suggested next command into a shell.

Hostile names (command substitution, backticks, quotes that close the SQL literal, ';', '|',
'&&', globbing, unicode quotes, NUL, line breaks, SQL*Plus 'host' and '&' variables, very long
names) are planted into AWR, Statspack, tkprof, raw 10046, hanganalyze, strace, truss and
pstack/gdb evidence, analysed through the real analysis with the starter KB, and every suggested
command is then executed by /bin/sh (and bash, where users usually paste) in a sandbox: a
temporary cwd and HOME, with shims on PATH for sqlplus, strace, truss, pstack, gdb and the other
tools, which only record their arguments and stdin. Each payload would create a file in the sandbox if it ran; none may appear. The sqlplus
shim also proves the event name reaches SQL*Plus intact as one SQL string literal.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import kb
from kb import command_fill
from kb.analysis import analyze_text
from kb.entry_yaml import load_entry
from kb.matcher import Matcher
from kb.models import Entry

FIXTURES = Path(__file__).resolve().parent / "fixtures"

# Every payload creates a file whose name starts with "pwned" in the cwd when it runs.
HOSTILE = [
    "$(touch pwned1)",
    "`touch pwned2`",
    'x\'"; touch pwned3; echo "',
    "x'; touch pwned4; echo '",
    "’; touch pwned5; echo ‘",
    "“$(touch pwned6)”",
    "; touch pwned7",
    "| touch pwned8",
    "&& touch pwned9",
    "* ? [a-z]*",
    "${IFS}touch${IFS}pwned10",
    "'; host touch pwned11; --",
    "&x; touch pwned12",
    "a\ntouch pwned13\nEOF\ntouch pwned14",
    "b\x00$(touch pwned15)",
    "{pid}; touch pwned16",
    "w" * 5000 + "$(touch pwned17)",
    "> pwned18",
    "$((1))$(>pwned19)",
    "\\'$(touch pwned20)",
]

TOOLS = [
    "sqlplus",
    "strace",
    "truss",
    "pstack",
    "gdb",
    "eu-stack",
    "dtrace",
    "bpftrace",
    "perf",
    "pidstat",
    "prstat",
    "iostat",
    "mpstat",
    "vmstat",
    "netstat",
    "nstat",
    "intrstat",
    "lockstat",
    "top",
    "pfiles",
    "lsof",
    "pmap",
    "ipcs",
    "lgrpinfo",
    "numactl",
    "pgrep",
    "ps",
    "lsnrctl",
    "ss",
    "ip",
    "dladm",
    "dmesg",
    "mdb",
    "ping",
    "sysctl",
    "ndd",
    "sar",
    "zfs",
    "free",
    "df",
    "sleep",
    "kill",
    "tkprof",
]

SHIM = """#!/bin/sh
# records how it was called (one [arg] per argument) and its stdin, nothing else
{
  printf '%s' "$(basename "$0")"
  for a in "$@"; do printf ' [%s]' "$a"; done
  printf '\\n'
  if [ "$(basename "$0")" = sqlplus ]; then cat; printf '\\n--end--\\n'; fi
} >> "$SHIM_LOG"
exit 0
"""


def _starter() -> list[Entry]:
    folder = Path(kb.__file__).resolve().parent / "entries"
    return [load_entry(p.read_text(), str(p)) for p in sorted(folder.glob("*.yaml"))]


@pytest.fixture(scope="module")
def matcher() -> Matcher:
    return Matcher(_starter())


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("sandbox")
    bin_dir, home, logs = root / "bin", root / "home", root / "logs"
    for d in (bin_dir, home, logs):
        d.mkdir()
    for tool in TOOLS:
        shim = bin_dir / tool
        shim.write_text(SHIM)
        shim.chmod(0o755)
    return {"root": root, "bin": bin_dir, "home": home, "logs": logs}


SHELLS = [s for s in ("/bin/sh", shutil.which("bash")) if s]


def run_in_sandbox(command: str, box: dict[str, Path], shell: str) -> str:
    """Run one suggested command as a pasted shell command; return what the shims recorded."""
    log = box["logs"] / "shim.log"
    log.write_text("")
    env = {
        "PATH": f"{box['bin']}:/usr/bin:/bin",
        "HOME": str(box["home"]),
        "SHIM_LOG": str(log),
        "LC_ALL": "C.UTF-8",
    }
    subprocess.run(
        [shell, "-c", command],
        cwd=box["home"],
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        timeout=20,
        check=False,
    )
    return log.read_text(errors="replace")


def assert_nothing_ran(box: dict[str, Path], command: str) -> None:
    planted = [p.name for p in box["home"].iterdir() if p.name.startswith("pwned")]
    assert not planted, f"injected command ran ({planted}) from: {command!r}"
    assert not list(box["root"].glob("pwned*")), command


def hostile_evidence() -> list[tuple[str, str, str]]:
    """(label, hostile name, evidence text) for each name planted into each format's fixture."""
    awr = (FIXTURES / "oracle/awr_19c_top10_db_file_sequential_read.txt").read_text()
    statspack = (FIXTURES / "oracle/statspack_top5_log_file_sync.txt").read_text()
    tkprof = (FIXTURES / "oracle/tkprof_db_file_sequential_read.txt").read_text()
    strace = (FIXTURES / "linux/strace_oracle_commit_fttT.txt").read_text()
    truss = (FIXTURES / "seeds/001_truss_shmdt.txt").read_text()
    pstack = (FIXTURES / "os/pstack_solaris_threads.txt").read_text()
    gdb = (FIXTURES / "os/gdb_bt_oracle_semtimedop.txt").read_text()
    trace = (FIXTURES / "oracle/trace10046_19c_pasted.txt").read_text()
    hang = (FIXTURES / "oracle/hanganalyze_cpu_blocker.trc").read_text()
    out = []
    for name in HOSTILE:
        prose = f"on host db1, pid {name} sid {name} process {name} device {name}\n"
        out += [
            ("awr", name, awr.replace("db file sequential read", name)),
            ("statspack", name, statspack.replace("log file sync", name)),
            ("tkprof", name, tkprof.replace("db file sequential read", name)),
            ("strace", name, prose + strace.replace("RUSAGE_SELF", name)),
            ("strace-p", name, strace.replace("-p 4711", f"-p {name}")),
            ("truss", name, prose + truss.replace("0x380000000", name)),
            ("pstack", name, pstack.replace("tnslsnr", name)),
            ("gdb", name, prose + gdb),
            ("trace10046", name, trace.replace("db file sequential read", name)),
            ("hanganalyze", name, hang.replace("library cache lock", name)),
        ]
    return out


def test_hostile_event_names_reach_the_analysis(matcher: Matcher) -> None:
    """The test is not vacuous: the AWR parser keeps hostile one-line names as the top event,
    and those within Oracle's 64 characters are filled into the ASH command."""
    awr = (FIXTURES / "oracle/awr_19c_top10_db_file_sequential_read.txt").read_text()
    filled = 0
    for name in HOSTILE:
        if "\n" in name or "\x00" in name:
            continue
        result = analyze_text(awr.replace("db file sequential read", name), matcher=matcher)
        tops = [b.facts.get("waits.top_event") for b in result.blocks]
        assert name.strip() in tops, (name, tops)
        sql = [c.command for c in result.next_commands if "active_session_history" in c.command]
        assert sql, name
        if len(name) <= 64:
            assert f"event = '{name.strip().replace(chr(39), chr(39) * 2)}'" in sql[0]
            filled += 1
        else:
            assert "event = 'EVENT'" in sql[0]
    assert filled >= 15


@pytest.mark.parametrize("shell", SHELLS)
def test_every_suggested_command_is_inert(matcher: Matcher, sandbox, shell: str) -> None:
    ran = 0
    sql_seen = 0
    for label, name, text in hostile_evidence():
        result = analyze_text(text, matcher=matcher)
        assert result.next_commands, label
        for cmd in result.next_commands:
            log = run_in_sandbox(cmd.command, sandbox, shell)
            ran += 1
            assert_nothing_ran(sandbox, cmd.command)
            if "active_session_history" in cmd.command and "EVENT" not in cmd.command:
                # SQL*Plus read the event name back exactly, as one literal
                m = re.search(r"where event = '((?:[^']|'')*)' and", log)
                assert m, (label, log)
                tops = {b.facts.get("waits.top_event") for b in result.blocks}
                assert m.group(1).replace("''", "'") in tops, (label, name, log)
                assert "set define off" in log
                sql_seen += 1
    assert ran > 200
    assert sql_seen >= 30


def test_entry_commands_with_hostile_prose_are_inert(matcher: Matcher, sandbox) -> None:
    """Every starter entry's own commands (PID/SID placeholders) when its fixture matches, with a
    hostile pid, sid, process and device in the prose."""
    ran = 0
    for fixture in sorted((FIXTURES / "kb").glob("*/positive*.txt")):  # one directory per entry
        for name in HOSTILE[:3]:
            text = f"pid {name}; sid {name}; the process {name} on {name}\n" + fixture.read_text()
            result = analyze_text(text, matcher=matcher)
            for cmd in result.next_commands:
                run_in_sandbox(cmd.command, sandbox, "/bin/sh")
                assert_nothing_ran(sandbox, cmd.command)
                ran += 1
    assert ran > 250


def test_filled_pids_reach_the_tool_as_one_word(sandbox) -> None:
    result = analyze_text(
        (FIXTURES / "linux/strace_oracle_commit_fttT.txt").read_text(), entries=_starter()
    )
    commands = [c.command for c in result.next_commands if "4711" in c.command]
    assert commands, [c.command for c in result.next_commands]
    for command in commands:
        log = run_in_sandbox(command, sandbox, "/bin/sh")
        # a word of its own, or inside the script of a tracer
        assert "[4711]" in log or "/pid == 4711/" in log, (command, log)


# -- the filler itself ---------------------------------------------------------------------------


def test_each_kind_takes_only_what_it_can_be() -> None:
    fill = command_fill.fill
    assert fill("pstack {pid}", {"pid": 4711}) == "pstack 4711"
    assert fill("pstack {pid}", {"pid": "4711"}) == "pstack 4711"
    for bad in (-1, 0, "12; id", "0x10", "12 13", True, 3.5, None, "1" * 11):
        assert fill("pstack {pid}", {"pid": bad}) == "pstack PID", bad
    assert fill("x {sql_id}", {"sql_id": "6tq2xw9b8c0mj"}) == "x 6tq2xw9b8c0mj"
    assert fill("x {sql_id}", {"sql_id": "6tq2xw9b8c0mJ"}) == "x SQL_ID"
    assert fill("x {sql_id}", {"sql_id": "6tq2xw9b8c0me"}) == "x SQL_ID"  # 'e' is not base-32
    assert fill("iostat {device}", {"device": "sdb1"}) == "iostat sdb1"
    assert fill("iostat {device}", {"device": "-o/etc/passwd"}) == "iostat DEVICE"
    assert fill("ls {path}", {"path": "/u01/app/x.trc"}) == "ls /u01/app/x.trc"
    assert fill("ls {path}", {"path": "/u01/a b"}) == "ls PATH"
    assert fill("pgrep {process}", {"process": "ora_lgwr_ORCL"}) == "pgrep ora_lgwr_ORCL"
    assert fill("pgrep {process}", {"process": "-f"}) == "pgrep PROCESS"


def test_each_context_quotes_its_own_way() -> None:
    fill = command_fill.fill
    # a shell word: quoted as one word
    assert fill("echo {event}", {"event": "log file sync"}) == "echo 'log file sync'"
    assert fill("echo {event}", {"event": "a'b"}) == "echo 'a'\"'\"'b'"
    # a SQL literal in a quoted heredoc: quotes doubled; a line break can never be filled
    assert fill("'{event:sql}'", {"event": "it's"}) == "'it''s'"
    assert fill("'{event:sql}'", {"event": "a\nEOF"}) == "'EVENT'"
    assert command_fill.quote("a\nb", "sql") is None
    # inside a single-quoted script only identifiers go
    assert fill("syscall::{syscall:script}:entry", {"syscall": "pread64"}) == (
        "syscall::pread64:entry"
    )
    assert fill("syscall::{syscall:script}:entry", {"syscall": "a'b"}) == "syscall::SYSCALL:entry"
    assert fill("'{event:script}'", {"event": "log file sync"}) == "'EVENT'"


def test_event_names_are_bounded_printable_text() -> None:
    ok = command_fill.safe_value
    assert ok("event", "enq: TX - row lock contention", "sql") == "enq: TX - row lock contention"
    assert ok("event", "e" * 64, "sql") == "e" * 64
    assert ok("event", "e" * 65, "sql") is None
    for bad in ("", "a\x00b", "a\tb", "a\rb", "a\x1b[31mb", " padded", "a\u2028b"):
        assert ok("event", bad, "sql") is None, repr(bad)


def test_hand_written_placeholders_and_one_pass() -> None:
    fill = command_fill.fill
    values = {"pid": 42, "sid": 7}
    assert fill("truss -p PID; x <pid> {PID} <PID> {pid}", values) == "truss -p 42; x 42 42 42 42"
    assert fill("exec trace(SID); select sid from v$session", values) == (
        "exec trace(7); select sid from v$session"
    )
    # unfilled hand-written placeholders stay as written
    assert fill("pstack <pid>", {}) == "pstack <pid>"
    # a value that looks like a placeholder is never filled again
    assert fill("echo {event} {pid}", {"event": "PID {pid}", "pid": 1}) == "echo 'PID {pid}' 1"
    assert command_fill.placeholders("a {event:sql} PID {syscall:script} <sid>") == [
        ("event", "sql"),
        ("pid", "word"),
        ("syscall", "script"),
        ("sid", "word"),
    ]
    # things that look like braces but are no placeholder kind are left alone
    assert fill("awk '{print $1}' {nope}", values) == "awk '{print $1}' {nope}"


# -- the same commands through the real surfaces -------------------------------------------------


def _hostile_awr(name: str) -> str:
    awr = (FIXTURES / "oracle/awr_19c_top10_db_file_sequential_read.txt").read_text()
    return awr.replace("db file sequential read", name)


def test_api_and_cli_serve_the_same_inert_commands(tmp_path, sandbox) -> None:
    """POST /api/analyze on the HTTP server and `perfkb analyze --json` give commands that
    run inert in the sandbox, and the same ones (the analysis fills them once for every surface)."""
    import httpx

    from kb.settings import Settings
    from kb.web.devserver import running_server, seed_entries

    settings = Settings(data_dir=tmp_path / "data", api_token=None, proxy_user_header=None)
    seed_entries(settings)
    names = HOSTILE[:4]
    via_api: dict[str, list[str]] = {}
    with running_server(settings) as url, httpx.Client(base_url=url, timeout=60) as client:
        for name in names:
            r = client.post("/api/analyze", json={"text": _hostile_awr(name)})
            assert r.status_code == 200
            via_api[name] = [c["command"] for c in r.json()["next_commands"]]
    for name in names:
        evidence = tmp_path / "awr.txt"
        evidence.write_text(_hostile_awr(name))
        cli = subprocess.run(
            [sys.executable, "-m", "kb", "analyze", "--json", str(evidence)],
            capture_output=True,
            text=True,
            env={**os.environ, "PERFKB_DATA_DIR": str(settings.data_dir)},
            cwd=Path(__file__).resolve().parents[1],
            timeout=120,
            check=True,
        )
        via_cli = [c["command"] for c in json.loads(cli.stdout)["next_commands"]]
        assert via_cli == via_api[name]
        assert any("active_session_history" in c for c in via_cli)
        for command in via_cli:
            for shell in SHELLS:
                run_in_sandbox(command, sandbox, shell)
                assert_nothing_ran(sandbox, command)
