"""Render diagnostic commands for the platform the evidence came from, and pick placeholder values.

Entries carry commands for each platform they know; when one is missing for the user's
platform we translate the common Solaris <-> Linux tool pairs rather than show nothing.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from ingest.model import Evidence
from kb import command_fill

# (solaris pattern, linux replacement), (linux pattern, solaris replacement): the usual pairs.
_TO_LINUX: list[tuple[re.Pattern[str], str]] = [
    (re.compile(r"\btruss\s+-c\s+(-f\s+)?-p\s+"), "strace -c -f -p "),
    (re.compile(r"\btruss\s+(?:-[a-zA-Z]+\s+)*-p\s+"), "strace -f -tt -T -p "),
    (re.compile(r"\bpstack\s+"), "eu-stack -p "),
    (re.compile(r"\bpfiles\s+(\S+)"), r"ls -l /proc/\1/fd"),
    (re.compile(r"\bprstat\s+-mL\S*\s*(?:-p\s+)?"), "pidstat -u -w -t -p "),
    (re.compile(r"\bprstat\b[^|;]*"), "top -H -b -n 1"),
    (re.compile(r"\blgrpinfo\b[^|;]*"), "numactl --hardware"),
    (re.compile(r"\bpmap\s+-x\s+"), "pmap -x "),
    (re.compile(r"\biostat\s+-xnz\b"), "iostat -xz"),
    (re.compile(r"\bipcs\s+-ma\b"), "ipcs -m"),
    (re.compile(r"\bdtrace\s+-n\s+'syscall:::entry[^']*'"), "perf trace -s -p PID"),
    (re.compile(r"\bdtrace\b"), "bpftrace"),
]
_TO_SOLARIS: list[tuple[re.Pattern[str], str]] = [
    (re.compile(r"\bstrace\s+-c\s+(?:-f\s+)?-p\s+"), "truss -c -f -p "),
    (re.compile(r"\bstrace\s+(?:-[a-zA-Z]+\s+)*-p\s+"), "truss -f -d -D -E -p "),
    (
        re.compile(r"\b(?:eu-stack\s+-p|gdb\s+-p)\s+(\S+)(?:\s+-batch\s+-ex\s+'?bt'?)?"),
        r"pstack \1",
    ),
    (re.compile(r"\bls\s+-l\s+/proc/(\S+)/fd"), r"pfiles \1"),
    (re.compile(r"\bpidstat\b[^|;]*"), "prstat -mLc 1"),
    (re.compile(r"\btop\b[^|;]*"), "prstat -mLc 1"),
    (re.compile(r"\bnumactl\s+--hardware"), "lgrpinfo -a"),
    (re.compile(r"\biostat\s+-xz\b"), "iostat -xnz"),
    (re.compile(r"\bperf\s+top\b[^|;]*"), "dtrace -n 'profile-997 {@[ustack(5)] = count();}'"),
    (re.compile(r"\bbpftrace\b"), "dtrace"),
]


def translate(command: str, to_platform: str) -> str:
    rules = _TO_LINUX if to_platform == "linux" else _TO_SOLARIS if to_platform == "solaris" else []
    out = command
    for rx, repl in rules:
        new = rx.sub(repl, out, count=1)
        if new != out:
            out = new
    return out


def evidence_pid(evidence: Evidence) -> int | None:
    """The process the evidence is about: a pid named in the prose, else the busiest traced pid."""
    if evidence.context.pids:
        return evidence.context.pids[0]
    for block in evidence.blocks:
        procs = block.details.get("processes") if isinstance(block.details, dict) else None
        if procs:
            try:
                return int(procs[0]["pid"])
            except (KeyError, TypeError, ValueError):
                continue
    return None


def evidence_values(evidence: Evidence) -> dict[str, object]:
    """The placeholder values the evidence as a whole supplies (kb/command_fill.py validates and
    quotes them; here they are only picked)."""
    values: dict[str, object] = {}
    pid = evidence_pid(evidence)
    if pid is not None:
        values["pid"] = pid
    if evidence.context.sids:
        values["sid"] = evidence.context.sids[0]
    return values


def fill(command: str, evidence: Evidence, extra: Mapping[str, object] | None = None) -> str:
    """The command with its placeholders filled from the evidence (and `extra`, e.g. the block a
    playbook rule fired on), through the one safe filler."""
    values = evidence_values(evidence)
    if extra:
        values.update(extra)
    return command_fill.fill(command, values)
