"""`perfkb check --kb` checks what a next command needs where a machine can tell: a release
(FETCH FIRST 12.1, sql_id 10g, /proc/pressure Linux 4.20, bpftrace 4.9, ipadm Solaris 11), a
licence with its free alternative (ASH/AWR/DBA_HIST: Diagnostics Pack; SQL Monitor, SQL Tuning
Advisor: Tuning Pack), intrusiveness (pstack, gdb, truss, the proc tools, DTrace pid probes) and a
time bound for every tracer; the triage rules' commands too. Each rule fails on a command that
breaks it and passes once the command says what it needs."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from kb.kbcheck import check_triage, command_problems, unbounded_tracer
from kb.models import NextCommand

ROOT = Path(__file__).resolve().parents[1]
SQL = "sqlplus -s / as sysdba <<'EOF'\n{}\nEOF\n"


def cmd(command: str, platform: str = "any", **kw: object) -> NextCommand:
    return NextCommand(command=command, platform=platform, why="w", **kw)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("command", "platform", "needed"),
    [
        (
            SQL.format("select * from v$sql order by cpu_time desc fetch first 10 rows only;"),
            "any",
            "12.1",
        ),
        (SQL.format("select sql_id, count(*) from v$session group by sql_id;"), "any", "10.1"),
        (
            SQL.format("select sid from v$session where blocking_session is not null;"),
            "any",
            "10.1",
        ),
        (SQL.format("select * from v$mutex_sleep_history;"), "any", "10.2"),
        (SQL.format("select sum(wait_time_micro) from v$session;"), "any", "11.1"),
        ("cat /proc/pressure/cpu", "linux", "4.20"),
        (
            "bpftrace -e 'tracepoint:sched:sched_switch { @ = count(); } interval:s:5 { exit(); }'",
            "linux",
            "4.9",
        ),
        ("ipadm show-prop -p smallest_anon_port tcp", "solaris", "11"),
        ("dtrace -n 'syscall::read:entry { @ = count(); } tick-5s { exit(0); }'", "solaris", "10"),
        ("zpool iostat -v 5 3", "solaris", "10"),
        ("timeout 15 perf sched record -a -- sleep 10", "linux", "2.6.32"),
    ],
)
def test_a_feature_of_a_later_release_needs_min_version(
    command: str, platform: str, needed: str
) -> None:
    problems = command_problems(cmd(command, platform))
    assert any(f"at least {needed}" in p for p in problems), problems
    lower = {
        "12.1": "11.2",
        "10.1": "9.2",
        "10.2": "10.1",
        "11.1": "10.2",
        "4.20": "4.19",
        "4.9": "4.4",
        "11": "10",
        "10": "9",
        "2.6.32": "2.6.31",
    }[needed]
    assert any(
        f"at least {needed}" in p
        for p in command_problems(cmd(command, platform, min_version=lower))
    )
    assert not [
        p
        for p in command_problems(cmd(command, platform, min_version=needed))
        if "min_version" in p
    ]


def test_version_rules_apply_to_their_platform_only() -> None:
    """min_version of a Solaris command is a Solaris release: an Oracle view rule does not apply
    to the text of a shell command that only names it in a comment or on another platform."""
    assert not command_problems(cmd("grep -c sql_id /tmp/notes.txt", "linux"))
    assert not command_problems(
        cmd("cat /proc/pressure/cpu   # fetch first", "linux", min_version="4.20")
    )


@pytest.mark.parametrize(
    ("view", "licence"),
    [
        ("v$active_session_history", "Diagnostics Pack"),
        ("dba_hist_sqlstat", "Diagnostics Pack"),
        ("gv$active_session_history", "Diagnostics Pack"),
        ("v$sql_monitor", "Tuning Pack"),
    ],
)
def test_pack_views_need_their_licence_and_a_free_alternative(view: str, licence: str) -> None:
    text = SQL.format(f"select count(*) from {view};")
    version = {"min_version": "11.1"}
    assert any(licence in p for p in command_problems(cmd(text, **version)))
    assert any(licence in p for p in command_problems(cmd(text, licence=licence, **version)))
    done = cmd(text, licence=licence, free_alternative="Statspack / v$ views", **version)
    assert command_problems(done) == []


@pytest.mark.parametrize(
    "command",
    [
        "pstack PID",
        "gdb -p PID -batch -ex bt",
        "pfiles PID",
        "pmap -sx PID | head",
        "eu-stack -p PID",
        "timeout 10 strace -c -p PID",
        "timeout -s INT 10 truss -c -p PID",
        "dtrace -n 'pid$target:oracle:kgl*:entry { @[probefunc] = count(); } tick-10s { exit(0); }' -p PID",
    ],
)
def test_tools_that_stop_or_slow_the_process_are_intrusive(command: str) -> None:
    assert any("intrusive" in p for p in command_problems(cmd(command, "linux")))
    marked = cmd(command, "linux", intrusive=True, intrusive_why="stops it")
    assert not [p for p in command_problems(marked) if "intrusive" in p]


def test_system_wide_samplers_are_not_intrusive() -> None:
    for command in (
        "perf record -a -g -- sleep 10",
        "vmstat 1 5",
        "ls -l /proc/PID/fd",
        "dtrace -n 'profile-997 { @[stack()] = count(); } tick-10s { exit(0); }'",
    ):
        assert command_problems(cmd(command, "linux")) == [], command


@pytest.mark.parametrize(
    ("bad", "good"),
    [
        ("strace -c -f -p PID   # Ctrl-C after 10-20 s", "timeout -s INT 15 strace -c -f -p PID"),
        ("truss -c -f -p PID", "truss -c -f -p PID & sleep 15; kill -INT $!"),
        ("truss -f -d -p PID", "timeout -s INT 10 truss -f -d -p PID"),
        ("perf top -p PID", "perf record -g -p PID -- sleep 10"),
        ("perf record -a -g", "perf record -a -g -- sleep 10"),
        (
            "dtrace -n 'syscall:::entry { @[probefunc] = count(); }'",
            "dtrace -n 'syscall:::entry { @[probefunc] = count(); } tick-10s { exit(0); }'",
        ),
        (
            "bpftrace -e 'kprobe:do_nanosleep { @ = count(); }'",
            "bpftrace -e 'kprobe:do_nanosleep { @ = count(); } interval:s:10 { exit(); }'",
        ),
        ("tcpdump -i any port 1521", "tcpdump -i any -c 1000 port 1521"),
        ("lockstat -C", "lockstat -C -s 10 sleep 10"),
        (
            SQL.format("exec dbms_monitor.session_trace_enable(session_id => 42, waits => true)"),
            SQL.format(
                "exec dbms_monitor.session_trace_enable(session_id => 42, waits => true)\n"
                "host sleep 60\nexec dbms_monitor.session_trace_disable(session_id => 42)"
            ),
        ),
        (
            SQL.format("alter session set events '10046 trace name context forever, level 12';"),
            SQL.format(
                "alter session set events '10046 trace name context forever, level 12';\n"
                "@batch.sql\nalter session set events '10046 trace name context off';"
            ),
        ),
    ],
)
def test_a_tracer_bounds_its_own_run_time(bad: str, good: str) -> None:
    assert unbounded_tracer(bad)
    assert not unbounded_tracer(good)


def test_the_triage_rules_are_checked_too(tmp_path: Path) -> None:
    rules = (ROOT / "kb" / "rules" / "triage.yaml").read_text(encoding="utf-8")
    assert check_triage() == []
    broken = rules.replace(
        '"truss -c -f -p {pid} & sleep 15; kill -INT $!"', '"truss -c -f -p {pid}"', 1
    )
    broken = broken.replace(
        "order by 2 desc) where rownum <= 10;", "order by 2 desc fetch first 10 rows only;", 1
    )
    broken = broken.replace("ASH needs the Diagnostics Pack; sampling", "Sampling", 1)
    assert broken.count("\n") == rules.count("\n")
    path = tmp_path / "triage.yaml"
    path.write_text(broken, encoding="utf-8")
    lines = [p.line() for p in check_triage(path)]
    assert any(
        "unaccounted-time: commands[2] is a tracer without a time bound" in x for x in lines
    ), lines
    assert any("FETCH FIRST" in x for x in lines), lines
    assert any("ash-on-cpu" in x and "Diagnostics Pack" in x for x in lines), lines


def test_check_kb_fails_on_a_command_that_hides_what_it_needs(tmp_path: Path) -> None:
    """The CLI gate: an entry file whose command reads DBA_HIST without its licence fails."""
    path = ROOT / "kb" / "entries" / "sequential-read-bad-plan.yaml"
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    first = data["next_commands"][0]
    assert "dba_hist_sqlstat" in first["command"] and first["licence"] == "Diagnostics Pack"
    del first["licence"], first["free_alternative"]
    entries = tmp_path / "entries"
    entries.mkdir()
    (entries / path.name).write_text(yaml.safe_dump(data), encoding="utf-8")
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "kb",
            "--data-dir",
            str(tmp_path / "data"),
            "check",
            "--kb",
            "--json",
            "--entries",
            str(entries),
            "--fixtures",
            str(ROOT / "tests" / "fixtures" / "kb"),
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
    )
    assert run.returncode == 1, run.stdout + run.stderr
    problems = json.loads(run.stdout)["problems"]
    assert [p["message"] for p in problems if p["rule"] == "command"] == [
        "next_commands[0] needs the Diagnostics Pack: set licence and a free_alternative"
    ]
