"""Rules a knowledge base must keep to be trusted (`perfkb check --kb`, tests/test_kb_trust.py).

Validation (kb/models.py) says an entry is well formed; these rules say it is fit to be read at
3 a.m.: every entry is proved on evidence (a fixture directory), every SQL command runs as written
(one statement per line, so one error cannot hide the next statement), and no signature makes a
diagnosis out of a precondition (a setting, a file name, a line of DDL that a healthy system shows
too). What a next command needs is checked where a machine can tell: a view or clause that
appeared in a release needs a min_version at least that release, the Diagnostics and Tuning Pack
views need their licence and a free alternative, a tool that stops or slows the process it looks
at is marked intrusive, and a tracer bounds its own run time (an entry's commands and the triage
rules' alike). Each problem is one line a person can act on.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path

from pydantic import BaseModel

from kb.models import Entry, NextCommand
from kb.signatures import TextCondition
from kb.versions import InvalidVersion, Version

SQL_START = re.compile(
    r"^\s*(?:echo\s+[\"'])?\s*(select|insert|update|delete|merge|exec|execute|begin|declare|"
    r"alter|create|drop|grant|truncate|with|set\s+\w+)\b",
    re.IGNORECASE,
)
# Text that is a symptom when seen once: an error the database or the OS reports.
ERROR_TEXT = re.compile(
    r"ORA-|TNS-|\\bORA|E[A-Z]{3,}|Checkpoint not complete|Archival stopped|Too many open files|"
    r"No space left on device|Cannot assign requested address"
)
# A regex that constrains a number (`[1-9]\d{2,}`, `\d{8,}`): a measurement written as text,
# not a precondition.
NUMBER_TEST = re.compile(r"\[[0-9]-9\]|\\d\{\d")


FETCH_FIRST = re.compile(r"\bfetch\s+(?:first|next)\b", re.I)  # the row limiting clause, 12.1
# What a command uses -> the first release that has it, for the platform whose version
# min_version then means (`any`: Oracle commands; an OS command's kernel or OS release).
# Each rests on the vendor's documentation of that release (docs/entry-style.md lists them).
NEEDS_VERSION: tuple[tuple[str, re.Pattern[str], str, str], ...] = (
    ("any", FETCH_FIRST, "12.1", "FETCH FIRST/NEXT"),
    ("any", re.compile(r"\bsql_id\b", re.I), "10.1", "the sql_id column"),
    ("any", re.compile(r"\bblocking_session\b", re.I), "10.1", "v$session.blocking_session"),
    ("any", re.compile(r"\bforce_matching_signature\b", re.I), "10.1", "force_matching_signature"),
    ("any", re.compile(r"\bv\$event_histogram\b", re.I), "10.1", "v$event_histogram"),
    ("any", re.compile(r"\bdbms_xplan\.display_cursor\b", re.I), "10.1", "display_cursor"),
    ("any", re.compile(r"\bdbms_monitor\b", re.I), "10.1", "dbms_monitor"),
    ("any", re.compile(r"\bv\$active_session_history\b|\bdba_hist_", re.I), "10.1", "ASH/AWR"),
    ("any", re.compile(r"\bv\$mutex_sleep", re.I), "10.2", "v$mutex_sleep(_history)"),
    ("any", re.compile(r"\bwait_time_micro\b", re.I), "11.1", "wait_time_micro"),
    ("any", re.compile(r"\bv\$sql_(?:plan_)?monitor\b", re.I), "11.1", "SQL Monitor views"),
    ("any", re.compile(r"\bsecurefile\b", re.I), "11.1", "SecureFiles"),
    ("linux", re.compile(r"/proc/pressure\b"), "4.20", "PSI (/proc/pressure, Linux 4.20)"),
    ("linux", re.compile(r"\bperf\s+sched\b"), "2.6.32", "perf sched (Linux 2.6.32)"),
    ("linux", re.compile(r"\bperf\s+trace\b"), "3.7", "perf trace (Linux 3.7)"),
    ("solaris", re.compile(r"\b(?:dtrace|intrstat|plockstat)\b"), "10", "DTrace (Solaris 10)"),
    ("solaris", re.compile(r"\bzpool\b|\bzfs\s"), "10", "ZFS (Solaris 10 6/06)"),
    ("linux", re.compile(r"\bbpftrace\b"), "4.9", "bpftrace (eBPF, Linux 4.9)"),
    ("solaris", re.compile(r"\bipadm\b"), "11", "ipadm (Solaris 11; ndd on 10)"),
)
# Views and packages a licence covers, and which licence.
NEEDS_LICENCE: tuple[tuple[re.Pattern[str], str], ...] = (
    (
        re.compile(
            r"\b(?:g?v\$active_session_history|dba_hist_\w+|dbms_workload_repository|"
            r"awrrpt|awrsqrpt|awrddrpt|ashrpt|addmrpt|dbms_addm)\b",
            re.I,
        ),
        "Diagnostics Pack",
    ),
    (
        re.compile(
            r"\b(?:dbms_sqltune|v\$sql_monitor|v\$sql_plan_monitor|report_sql_monitor|"
            r"dbms_sql_monitor)\b",
            re.I,
        ),
        "Tuning Pack",
    ),
)
# Tools that stop the process they look at (pstack and the proc tools grab it; gdb attaches) or
# slow every call it makes (ptrace tracers, DTrace pid probes, uprobes).
INTRUSIVE = re.compile(
    r"\b(?:pstack|pfiles|pldd|pmap|gdb|eu-stack|jstack|truss|strace|ltrace)\b"
    r"|\bdtrace\b.*(?:\bpid\$target\b|\bpid\d+:|\bpid\$\d)"
    r"|\bbpftrace\b.*\buprobe:",
    re.S,
)
# Tracers that run until stopped, and the ways a command bounds them.
TRACER = re.compile(
    r"\b(?:strace|truss|ltrace|dtrace|bpftrace|tcpdump|snoop|lockstat|plockstat)\b"
    r"|\bperf\s+(?:record|trace|top|sched\s+record|lock\s+record)\b"
)
BOUND = re.compile(
    r"\btimeout\s+(?:-s\s+\w+\s+)?\d"  # timeout 10 strace ...
    r"|--\s*sleep\s+\d"  # perf record ... -- sleep 10
    r"|&\s*sleep\s+\d+\s*;\s*kill\b"  # strace -c -p PID & sleep 15; kill -INT $!
    r"|\b(?:lockstat|plockstat)\b[^|;]*(?:\bsleep\s+\d|-e\s*\d)"  # lockstat ... sleep 5
    r"|\btick-\d+\w*\s*\{[^}]*\bexit\s*\("  # dtrace tick-10s { exit(0); }
    r"|\binterval:s:\d+\s*\{[^}]*\bexit\s*\("  # bpftrace interval:s:10 { exit(); }
    r"|\b(?:tcpdump|snoop)\b[^|;]*\s-c\s*\d"  # tcpdump -c 1000
)


def _code(command: str) -> str:
    """The command without shell comments (`# Ctrl-C after 10 s` bounds nothing)."""
    return "\n".join(
        re.sub(r"(^|\s)#(?![^'\"]*['\"]).*$", "", line) for line in command.splitlines()
    )


# SQL trace switched on for a session, and switched off again.
SQL_TRACE_ON = re.compile(
    r"\bsession_trace_enable\b|\bset_ev\b|set\s+events\s+'10046[^']*level\s*\d", re.I
)
SQL_TRACE_OFF = re.compile(r"\bsession_trace_disable\b|10046[^']*\boff\b", re.I)


def unbounded_tracer(command: str) -> bool:
    """A tracer that runs until someone stops it: no timeout, sleep, tick/interval exit or
    packet count; or SQL trace switched on and never off (a busy session fills the trace
    directory). A tracer left attached overnight is an incident of its own."""
    code = _code(command)
    if SQL_TRACE_ON.search(code) and not SQL_TRACE_OFF.search(code):
        return True
    return bool(TRACER.search(code)) and not BOUND.search(code)


def _below(min_version: str | None, needed: str) -> bool:
    if min_version is None:
        return True
    try:
        return Version(min_version) < Version(needed)
    except InvalidVersion:
        return True


def command_problems(c: NextCommand) -> list[str]:
    """What a next command's metadata leaves out, as far as the command's text tells."""
    out: list[str] = []
    code = _code(c.command)
    for platform, rx, needed, what in NEEDS_VERSION:
        if platform == c.platform and rx.search(code) and _below(c.min_version, needed):
            out.append(f"uses {what}: min_version must be at least {needed}")
    for rx, licence in NEEDS_LICENCE:
        if rx.search(code) and not (licence.lower() in c.licence.lower() and c.free_alternative):
            out.append(f"needs the {licence}: set licence and a free_alternative")
    if (INTRUSIVE.search(code) or SQL_TRACE_ON.search(code)) and not c.intrusive:
        out.append("stops or slows the process it looks at: set intrusive and intrusive_why")
    if unbounded_tracer(c.command):
        out.append("a tracer without a time bound (timeout N, -- sleep N, tick-Ns { exit(0); })")
    return out


class KbProblem(BaseModel):
    entry: str
    rule: str  # fixtures | mixed-statements | precondition-only | command | triage
    message: str

    def line(self) -> str:
        return f"{self.entry}: {self.message}"


def _statements(line: str) -> list[str]:
    """The SQL statements on one line: split at semicolons outside single quotes."""
    out, cur, quoted = [], "", False
    for ch in line:
        if ch == "'":
            quoted = not quoted
        if ch == ";" and not quoted:
            out.append(cur)
            cur = ""
        else:
            cur += ch
    out.append(cur)
    return [s for s in out if SQL_START.match(s)]


def mixed_statements(command: str) -> bool:
    """True when a line of a command that feeds SQL*Plus holds two SQL statements: `echo "select
    ...; select ...;" | sqlplus` (the classic mistake: SQL*Plus reads it as one line)."""
    if "sqlplus" not in command.lower():
        return False
    return any(len(_statements(line)) > 1 for line in command.splitlines())


def is_precondition(leaf: object) -> bool:
    """A leaf that a healthy system can hold as well as a sick one: a piece of text seen once (a
    setting, a file name, a DDL line) that is not an error message."""
    if not isinstance(leaf, TextCondition) or leaf.min_count > 1:
        return False
    if leaf.regex is not None and NUMBER_TEST.search(leaf.regex):
        return False
    pattern = leaf.text if leaf.text is not None else (leaf.regex or "")
    return not ERROR_TEXT.search(pattern)


def precondition_only(cond: object) -> bool:
    """Whether the condition can hold on preconditions alone: an `all` when each part can, an
    `any` when one branch can, a `not` always (an absence is no evidence either)."""
    kind = getattr(cond, "kind", "")
    if kind == "not":
        return True
    if kind == "all":
        return all(precondition_only(c) for c in cond.children)  # type: ignore[attr-defined]
    if kind == "any":
        return any(precondition_only(c) for c in cond.children)  # type: ignore[attr-defined]
    return is_precondition(cond)


def check_entry(entry: Entry, fixtures: Path | None) -> list[KbProblem]:
    problems: list[KbProblem] = []
    if fixtures is not None:
        here = fixtures / entry.id
        if not here.is_dir() or not any(p.is_file() for p in here.iterdir()):
            problems.append(
                KbProblem(
                    entry=entry.id,
                    rule="fixtures",
                    message=f"no evidence fixtures in {here} (a positive and a healthy one)",
                )
            )
    for i, c in enumerate(entry.next_commands):
        if mixed_statements(c.command):
            problems.append(
                KbProblem(
                    entry=entry.id,
                    rule="mixed-statements",
                    message=f"next_commands[{i}] puts two SQL statements on one line; use a "
                    "heredoc with one statement per line",
                )
            )
        for message in command_problems(c):
            problems.append(
                KbProblem(entry=entry.id, rule="command", message=f"next_commands[{i}] {message}")
            )
    for sig in entry.signatures:
        if sig.specific and precondition_only(sig.when):
            problems.append(
                KbProblem(
                    entry=entry.id,
                    rule="precondition-only",
                    message=f"signature {sig.name} holds on preconditions only (text seen once "
                    "that is no error); make it specific: false with weight at most 0.3",
                )
            )
    return problems


def check_triage(rules_path: Path | None = None) -> list[KbProblem]:
    """The triage rules' commands: one SQL statement per line, no FETCH FIRST (a rule's command
    has no min_version to say 12.1), a licence named in the why, tracers bounded in time."""
    from kb.triage import RULES_PATH, load_rules

    book = load_rules(rules_path or RULES_PATH)
    out: list[KbProblem] = []
    for rule in [*book.rules, book.baseline]:
        for i, c in enumerate(rule.commands):
            where = f"triage rule {rule.name}"
            if mixed_statements(c.command):
                out.append(
                    KbProblem(
                        entry=where,
                        rule="mixed-statements",
                        message=f"commands[{i}] puts two SQL statements on one line",
                    )
                )
            code = _code(c.command)
            if FETCH_FIRST.search(code):  # a rule's command has no min_version to say 12.1
                out.append(
                    KbProblem(
                        entry=where,
                        rule="triage",
                        message=f"commands[{i}] uses FETCH FIRST (12.1+); use a ROWNUM wrapper",
                    )
                )
            for rx, licence in NEEDS_LICENCE:
                if rx.search(code) and licence.lower() not in c.why.lower():
                    out.append(
                        KbProblem(
                            entry=where,
                            rule="triage",
                            message=f"commands[{i}] needs the {licence}: say so and the free "
                            "way in its why",
                        )
                    )
            if unbounded_tracer(c.command):
                out.append(
                    KbProblem(
                        entry=where,
                        rule="triage",
                        message=f"commands[{i}] is a tracer without a time bound "
                        "(timeout N, -- sleep N, tick-Ns { exit(0); })",
                    )
                )
    return out


def check_kb(
    entries: Iterable[Entry], fixtures: Path | None, *, triage: bool = True
) -> list[KbProblem]:
    """Every problem of every entry, then of the triage rules; `fixtures` None skips the fixture
    rule (an installed copy)."""
    out: list[KbProblem] = []
    for entry in entries:
        out += check_entry(entry, fixtures)
    if triage:
        out += check_triage()
    return out
