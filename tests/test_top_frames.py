"""top's frames read in C (table.c's top mode: rows, blank lines, the header in force and the
summary lines, which it keeps as text for top.py's `_replay`) against the Python reader, the
reference: the evidence must be identical with the core on and off (ostable.NATIVE), line by
line, streamed in two read sizes and as one text, on captures whose summary lines, blank lines
and headers were made hostile (shapes next to the ones the core takes, pastes' prefixes, other
units, per-CPU lines, old procps and Solaris lines, markers between frames), and with the facts
read half-way. Each test checks the core started frames, so a core that never ran fails."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from benchmarks import gen_os_tables
from ingest.detect import Detector
from ingest.parsers import ostable, top
from ingest.parsers.pasted import unpaste
from ingest.parsers.top import TopParser
from tests import test_proc_core
from tests.test_proc_core import (
    TOP_PROCPS32,
    TOP_PROCPS33_H,
    _capture,
    _make_hostile,
    _repeat,
    _same,
)

ROOT = Path(__file__).resolve().parents[1]

rows_read = test_proc_core.rows_read  # the fixture: [1] counts the frames the core started

# what each summary line may become: a near miss of the shape the core takes, or the same
# line as another tool, release or paste prints it
_TOP_LINES = [
    "top -  14:00:05 up 10 days,  3:04,  2 users,  load average: 1.00, 2.00, 3.00",
    "top - 14:00:05 up 3 min,  1 user,  load average: 0,50, 0,40, 0,30",
    "top - 14:00:05 upx 10 days, load average: 1.00, 2.00, 3.00",
    "top - 14:00:05  up 1+02:03, load averages: 4.00 5.00 6.00",
    "top - 14:00:05 up",
    "top - 14:00:05",
    "top -\t14:00:05\tup 2 days, load average: 1.00, 2.00, 3.00",
    "top - up 2 days, load average: 1.00, 2.00, 3.00",
    "top\u00a0- 14:00:05 up 2 days, load average: 1.00, 2.00, 3.00",
    "last pid: 12345;  load avg:  3.10,  2.45,  1.67;  up 12+03:04:05   14:23:01",
]
_TASK_LINES = [
    "Tasks: 312 total,   5 running, 307 sleeping,   0 stopped,   0 zombie",
    "Threads: 912 total,   9 running, 903 sleeping,   0 stopped,   1 zombie",
    "Processes: 200 total, 2 running, 198 sleeping",
    "Tasks: 312 alle, 5 laufend",
    "Tasks: total",
    "Tasks : 312 total, 5 running",
    "tasks: 312 total, 5 running",
    "123 processes: 120 sleeping, 2 running, 1 on cpu",
]
_CPU_LINES = [
    "%Cpu0  : 27.9 us, 10.8 sy,  0.0 ni, 61.3 id,  0.0 wa,  0.0 hi,  0.0 si,  0.0 st",
    "%Cpu12 : 90.0 us,  5.0 sy,  0.0 ni,  5.0 id,  0.0 wa,  0.0 hi,  0.0 si,  0.0 st",
    "Cpu(s): 10.0%us,  5.0%sy,  0.0%ni, 80.0%id,  5.0%wa,  0.0%hi,  0.0%si,  0.0%st",
    "%Cpu(s) : 45,3 us, 12,1 sy,  0,0 ni, 38,2 id,  3,9 wa,  0,0 hi,  0,5 si,  0,0 st",
    "%Cpu :  1.0 us",
    "%Cpux: 1.0 us",
    "%Cpu(s)  1.0 us",
    "CPU states: 70.0% idle, 20.0% user, 10.0% kernel,  0.0% iowait,  0.0% swap",
    "%Cpu(s):",
]
_MEM_LINES = [
    "KiB Mem : 16266948 total,   234012 free, 12345678 used,  3687258 buff/cache",
    "GiB Mem :     62.8 total,      1.2 free,     39.2 used,     22.4 buff/cache",
    "TiB Mem :      1.0 total,      0.5 free,      0.5 used,      0.0 buff/cache",
    "MiB Memory: 64263.9 total, 1234.5 free",
    "MiB  Mem :  64263.9 total,   1234.5 free,  40123.4 used,  22906.0 buff/cache",
    "MiBMem: 64263.9 total",
    "MiB Swap:   8192.0 total,   8000.0 free,    192.0 used.",
    "KiB Swap:  8388604 total,  8388604 free,        0 used. 12345678 avail Mem",
    "Mem:   8000000k total,  7000000k used,  1000000k free,   200000k buffers",
    "MiB Mem :  64.263,9 total,   1.234,5 free",
    "MiB Mem",
    "Memory: 32G phys mem, 4G free mem, 16G total swap, 12G free swap",
]
_OTHER = ["", "   ", "zzz ***Tue Nov 25 14:00:05 UTC 2026", "$ top -b -n 1", "\u00a0"]
_HEADERS = [
    "  PID USER      PR  NI    VIRT    RES    SHR S  %CPU  %MEM     TIME+ COMMAND",
    "    PID USER      PR  NI    VIRT    RES    SHR S  %CPU  %MEM     TIME+ COMMAND   ",
    "    PID USER      PR  NI    VIRT    RES    SHR S  %CPU  %MEM     TIME+ COMMAND\r",
    "    PID USER      PR  NI    VIRT    RES    SHR  %CPU  %MEM     TIME+ COMMAND",
    "    PID USER      PR  NI    VIRT    RES    SHR S  %CPU     TIME+ COMMAND",
]


def _hostile_summary(line: str, rng: random.Random) -> list[str]:
    """A summary line, blank line or header (not a row) replaced, doubled, prefixed or joined
    by others."""
    if line.lstrip()[:1].isdigit():
        return [line]
    pick = rng.randrange(12)
    if pick == 0:
        return [rng.choice(_TOP_LINES)]
    if pick == 1:
        return [rng.choice(_TASK_LINES)]
    if pick == 2:
        return [line, *rng.sample(_CPU_LINES[:2], 2)] if "Cpu" in line else [line]
    if pick == 3:
        return [rng.choice(_CPU_LINES)]
    if pick == 4:
        return [rng.choice(_MEM_LINES)]
    if pick == 5:
        return [rng.choice(_OTHER), line]
    if pick == 6:
        return [rng.choice(["# ", "> ", "Nov 25 14:00:05 db01 top[77]: ", "node01: "]) + line]
    if pick == 7:
        return [line + rng.choice(["\r", " ", "\t", " \u00e9"])]
    if pick == 8:
        return [rng.choice(_HEADERS)] if "PID" in line else [line, line]
    if pick == 9:
        return [line.replace(" ", "\u00a0", 1)]
    if pick == 10:
        return [line[: rng.randrange(len(line) + 1)]]
    return [" " + line]


@pytest.mark.parametrize("share", [0.05, 0.2, 0.5])
@pytest.mark.parametrize("seed", range(3))
def test_hostile_summary_lines(tmp_path, monkeypatch, rows_read, seed, share):
    data = _make_hostile(_capture("top", tmp_path)[: 64 * 1024], _hostile_summary, seed, share)
    _same(data, monkeypatch)
    if share < 0.5:  # at one in two, blocks end (Solaris lines, prompts) before the context
        assert rows_read[1] > 0  # is full: frames the core started


_KINDS = {"top -": _TOP_LINES, "Tasks": _TASK_LINES, "%Cpu": _CPU_LINES, "MiB ": _MEM_LINES}
_KINDS["    PID"] = _HEADERS
_NEAR = [(kind, line) for kind, near in _KINDS.items() for line in near]
_NEAR += [("MiB ", line) for line in _OTHER]  # before the memory lines


@pytest.mark.parametrize("how", ["replace", "insert"])
def test_each_near_miss_alone(tmp_path, monkeypatch, rows_read, how):
    """Every line above, one at a time in an otherwise clean capture (frame k gets the k-th,
    in place of its line of the same kind or after it), so each meets the core mid-run (all
    in Latin-1: one character beyond it sends a whole chunk to the Python reader)."""
    path = tmp_path / "top.txt"
    gen_os_tables.generate("top", 2 * len(_NEAR) * 2200, path)  # every line twice
    lines = path.read_text().splitlines()
    every = _NEAR
    out: list[str] = []
    frame = -1
    for line in lines:
        frame += line.startswith("top - ")
        kind, pick = every[frame % len(every)]
        if frame < 1 or not line.startswith(kind):
            out.append(line)
        elif how == "replace":
            out.append(pick)
        else:
            out += [line, pick]
    data = ("\n".join(out) + "\n").encode()
    _same(data, monkeypatch)
    # frames started in C (three passes; a block a near miss ends starts with Python lines)
    assert rows_read[1] > 0.3 * 3 * frame


@pytest.mark.parametrize("seed", range(3))
def test_hostile_family_members(monkeypatch, rows_read, seed):
    for text in (TOP_PROCPS33_H, TOP_PROCPS32):
        _same(_make_hostile(_repeat(text, 30).encode(), _hostile_summary, seed, 0.3), monkeypatch)
    assert rows_read[1] > 0


def test_per_cpu_lines_and_old_procps(monkeypatch, rows_read):
    """-H with a line per CPU (their sum divided by the count: the order of the lines is the
    sum's) and procps 3.2 (`Mem:` without a unit: read in Python after the core's lines)."""
    for text in (TOP_PROCPS33_H, TOP_PROCPS32):
        want = _same(_repeat(text, 40).encode(), monkeypatch)
        assert '"load.avg1"' in want
    assert '"cpu.usr_pct":21.2' in _same(_repeat(TOP_PROCPS33_H, 40).encode(), monkeypatch)
    assert rows_read[1] > 0


def test_facts_read_half_way(tmp_path, monkeypatch, rows_read):
    """The facts asked for in the middle of a capture (the frame's summary lines read then),
    then more frames: the same blocks as without the core."""
    text = _capture("top", tmp_path)[: 64 * 1024].decode()
    cut = text.index("\ntop - ", len(text) // 2) + 1
    out = []
    for native in (False, True):
        monkeypatch.setattr(ostable, "NATIVE", native)
        d = Detector()
        d.feed_text(text[:cut])
        assert d.current is not None and d.current.parser.format == "top"
        seen = d.current.parser.facts()
        d.feed_text(text[cut:])
        out.append((repr(seen), d.finish().model_dump_json()))
    assert out[0] == out[1]
    assert rows_read[1] > 0


def _core_takes(line: str) -> tuple[bool, bool]:
    """(did the C run take `line` alone, as a frame's first line), with a header set."""
    cpu = ostable.native_table(["cpu", "mem"], keyed=True, bounds={}, max_keys=9, max_line=4096)
    states = ostable.native_table(["n"], keyed=True, bounds={}, max_keys=9)
    assert cpu is not None and states is not None
    cpu.top()
    text = line + "\n"
    got = cpu.run(text, 0, len(text), states, 12, 8, 9, 7, _HEADERS[0], 1 | 4)
    return got[1] == 1, got[3] == 1


def test_the_core_takes_only_lines_it_would_be_handed():
    """A summary line the core takes is one start_score scores 2 (so the detector would hand
    it over whatever other formats say), that unpaste leaves as it is and that _read reads as
    the same kind (a frame's first line or not); checked on every near miss above and on 3,000
    random edits of the generator's summary lines. (Feed takes some lines scored 0 too, such
    as a `Tasks:` line without a total: the detector hands them over only when no other format
    starts on them, which the core cannot know.)"""
    rng = random.Random(19)
    base = [line for _, line in _NEAR if line.strip()] + [
        "top - 14:00:05 up 10 days,  3:04,  2 users,  load average: 17.76, 7.50, 6.90",
        "Tasks: 312 total,   5 running, 307 sleeping,   0 stopped,   0 zombie",
        "%Cpu(s): 27.9 us, 10.8 sy,  0.0 ni, 61.4 id,  0.0 wa,  0.0 hi,  0.0 si,  0.0 st",
        "MiB Mem :  64263.9 total,   1234.5 free,  40123.4 used,  22906.0 buff/cache",
        "MiB Swap:   8192.0 total,   8000.0 free,    192.0 used.  20345.6 avail Mem",
    ]
    lines = list(base)
    for _ in range(3000):
        chars = list(rng.choice(base))
        for _ in range(rng.randrange(1, 4)):
            at = rng.randrange(len(chars) + 1)
            if rng.random() < 0.5 and at < len(chars):
                del chars[at]
            else:
                chars.insert(at, rng.choice(" \t:()s0x-#upTMiBemtotal"))
        lines.append("".join(chars))
    taken = 0
    for line in lines:
        took, first = _core_takes(line)
        if not took or line == _HEADERS[0] or line.lstrip()[:1].isdigit():
            continue
        taken += 1
        assert TopParser.start_score(line) == 2, line
        assert unpaste(line) == line, line
        assert first == bool(top._TOP.match(line)), line
        parser = TopParser()
        assert parser.feed(line), line
    assert taken > 500
