"""`top` / `top -H` (procps, batch or screen copy) and Solaris/BSD `top`: the summary header
and the process table.

    top - 14:23:01 up 10 days,  3:04,  2 users,  load average: 8.12, 7.50, 6.90
    Tasks: 312 total,   5 running, 307 sleeping,   0 stopped,   0 zombie    (Threads: with -H)
    %Cpu(s): 45.3 us, 12.1 sy,  0.0 ni, 38.2 id,  3.9 wa,  0.0 hi,  0.5 si,  0.0 st
    KiB Mem : 16266948 total,   234012 free, 12345678 used,  3687258 buff/cache
      PID USER      PR  NI    VIRT    RES    SHR S  %CPU  %MEM     TIME+ COMMAND

Old procps prints `Cpu(s): 45.3%us, ...` and `Mem: 16266948k total, ...`; the `1` key prints
one `%Cpu0 :` line per CPU (which gives the CPU count for the load per CPU). Solaris top:
`last pid: ...; load avg: ...`, `CPU states: 85.2% idle, 10.1% user, 4.7% kernel, ...`,
`Memory: 32G phys mem, 4G free mem, ...`. The process table's columns are read from its
header; COMMAND is last and may hold spaces (-c). A batch capture holds several frames: each
`top -` line starts a new one, and the facts are the last frame's (the first frame of
`top -b` measures since each process started).
"""

from __future__ import annotations

import re
from typing import ClassVar

from ingest.base import Parser, line_at
from ingest.model import Format, Platform
from ingest.parsers import ostable
from ingest.parsers.pasted import number, sample_mark, unpaste

MAX_LINE = 4096
MAX_KEYS = 2000
_TOP = re.compile(r"^\s*top\s+-\s+\S+\s+up\b")
_SOL_TOP = re.compile(r"^\s*last pid:\s*\d+;?\s+load av(?:g|erages?):")
_LOAD = re.compile(
    r"load av(?:g|erages?):\s*(?P<a>\d+(?:[.,]\d+)?),?\s+(?P<b>\d+(?:[.,]\d+)?),?\s+(?P<c>\d+(?:[.,]\d+)?)"
)
_UPDAYS = re.compile(r"\bup\s+(?P<days>\d+)(?:\s+days?|\+)")
_TASKS = re.compile(r"^\s*(?P<what>Tasks|Threads|Processes):\s*(?P<rest>.*\d.*)$")
_SOL_PROCS = re.compile(r"^\s*(?P<total>\d+)\s+processes:\s*(?P<rest>.*)$")
_CPU = re.compile(r"^\s*(?P<label>%?Cpu(?:\(s\)|(?P<n>\d+))|CPU states)\s*:\s*(?P<rest>.*)$")
_MEM = re.compile(
    r"^\s*(?:(?P<unit>KiB|MiB|GiB|TiB)\s*)?(?P<what>Mem|Swap|Memory)\s*:\s*(?P<rest>.*)$"
)
_PAIR = re.compile(
    r"(?P<n>\d+(?:[.,]\d+)?)\s*(?P<u>[kKMGT])?\s*%?\s*(?P<name>[a-z][a-z/ ]*[a-z]|[a-z]{2})"
)
_HEADER = re.compile(r"^\s*PID\s+(?:USER|USERNAME)\b.*\b(?:COMMAND|CMD|Command)\s*$")
# a process row: the pid, the user (group 1) and more (what claims takes, its user not a number)
_ROW = re.compile(r"\s*\d+\s+(\S+)\s+\S").match
_TOP_HINT = re.compile(r"top -|last pid|Tasks|Threads|Processes|Cpu|CPU states|Mem|PID")
_CPU_NAMES = {
    "us": "usr",
    "user": "usr",
    "sy": "sys",
    "system": "sys",
    "kernel": "sys",
    "ni": "nice",
    "nice": "nice",
    "id": "idle",
    "idle": "idle",
    "wa": "wait",
    "iowait": "wait",
    "hi": "hi",
    "si": "si",
    "st": "steal",
    "steal": "steal",
}
# what a CPU or memory line's numbers read as, by its text (pure; a capture repeats lines)
_MEMO: dict = {}
_MEMO_MAX = 4096
_UNIT_MB = {"KiB": 1 / 1024, "MiB": 1.0, "GiB": 1024.0, "TiB": 1048576.0}
_SUFFIX_MB = {"k": 1 / 1024, "K": 1 / 1024, "M": 1.0, "G": 1024.0, "T": 1048576.0}


class _Frame:
    def __init__(self, core: tuple | None = None) -> None:
        self.load: tuple[float, float, float] | None = None
        self.days: float | None = None
        self.tasks: dict[str, float] = {}
        self.cpu: dict[str, float] = {}
        self.per_cpu = 0
        self.mem: dict[str, float] = {}
        self.swap: dict[str, float] = {}
        self.proc_cpu: dict[str, float] = {}  # summed by command (top -H: a process's threads)
        self.proc_cpu_max: dict[str, float] = {}  # the busiest row of each command
        self.proc_mem: dict[str, float] = {}
        self.states: dict[str, float] = {}
        self.rows = 0
        # the C store of this frame's rows (table.c's top mode: per command and per state),
        # read back into the dicts above before Python reads a row or the facts are made;
        # None with `python` False: not given yet; `python` True: the dicts are the store
        self.core: tuple | None = core
        self.python = False
        # the summary lines the C reader took for this frame, not read yet: read (in order, by
        # TopParser._replay) when the frame's facts are wanted or Python reads another summary
        # line of it; a later frame replaces this one, so most frames' are never read (they
        # were most of what top cost once its rows were in C: ~30 µs a frame)
        self.pending: list[str] = []

    def settle(self) -> None:
        """The C store read back into the dicts (in the order its keys came: a C row adds a
        command to proc_cpu, proc_cpu_max and proc_mem at once), which are the store from here
        on."""
        if self.core is not None:
            cpu, states = self.core
            for key, cols in cpu.export()[0]:
                for c, st in cols:
                    if c == 0:
                        self.proc_cpu[key] = st[1]
                        self.proc_cpu_max[key] = max(0.0, st[3])
                    else:
                        self.proc_mem[key] = st[1]
            for key, cols in states.export()[0]:
                self.states[key] = float(cols[0][1][0])
            self.core = None
        self.python = True


def _cells(columns: list[str]) -> tuple[int | None, int | None, int | None]:
    """Where a row's CPU share, memory share and state are (a column named twice: its last
    place), worked out once per header instead of a dict per row."""
    place = {name: i for i, name in enumerate(columns[:-1])}
    cpu = place.get("%CPU", place.get("CPU"))
    return cpu, place.get("%MEM"), place.get("S", place.get("STATE"))


class TopParser(Parser):
    format: ClassVar[Format] = "top"

    def __init__(self) -> None:
        super().__init__()
        self.frame = _Frame()
        self.frames = 0
        self.columns: list[str] | None = None
        self._cells: tuple[int | None, int | None, int | None] = (None, None, None)
        self._layout: tuple[int, int, int, int] | None = None  # for the C reader (top_run)
        self._header = ""  # the line of the last header read (the C reader reads it again)
        self._columns: list[str] = []  # its columns
        self._tables: tuple | None = None  # the C frame store, made once, cleared per frame
        self._headers: dict[str, list[str]] = {}  # a header line as pasted -> its columns
        self.solaris = False

    def claims(self, line: str) -> bool:
        """Once a process table's header is read, a row (the pid first, a user name, not a
        number, second) is this block's: no other format starts on one, and asking them all
        about each row was most of the time a long `top -b` capture took."""
        if self.columns is None:
            return False
        m = _ROW(line)
        return m is not None and not m.group(1).isdigit()

    fast = True

    feed_run = Parser.feed_steps

    def _store(self) -> tuple | None:
        """The current frame's C tables (the parser's, emptied for it), or None: the Python
        dicts are its store."""
        f = self.frame
        if f.core is None and not f.python:
            if self._tables is None:
                cpu = ostable.native_table(
                    ["cpu", "mem"], keyed=True, bounds={}, max_keys=MAX_KEYS, max_line=MAX_LINE
                )
                states = ostable.native_table(["n"], keyed=True, bounds={}, max_keys=1 << 30)
                if cpu is None or states is None:
                    f.python = True
                    return None
                cpu.top()
                self._tables = (cpu, states)
            else:  # the frame before is gone (replaced), or settled into its dicts
                self._tables[0].clear()
                self._tables[1].clear()
            f.core = self._tables
        return f.core

    def run_step(self, text: str, pos: int, endpos: int, plain: dict) -> tuple[int, int, int]:
        """Parser.feed_steps' step: frames read in C (table.c's top mode: rows, blank lines,
        the header in force, the summary lines kept as text for `_replay`) while the frame's
        rows have all been read there, then the lines feed would read as below without the
        detector's tests; every other line goes through feed."""
        n = 0
        f = self.frame
        if self._layout is not None and not f.python:
            core = self._store()
            if core is not None:
                blank = plain.get((type(self), "")) is False and self.lines > 0
                flags = (
                    (self.columns is not None)
                    | blank << 1
                    | (self.frames > 0 and not self.solaris) << 2
                )
                pos, n, rows, frames, have, summary = core[0].run(
                    text, pos, endpos, core[1], *self._layout, self._header, flags
                )
                if frames:
                    self.frames += frames
                    f = self.frame = _Frame(core)
                    f.pending = summary
                    f.rows = rows
                else:
                    f.pending += summary
                    f.rows += rows
                self.columns = self._columns if have else None
                if pos >= endpos:
                    return pos, n, self.STEP_STOP
        end, line = line_at(text, pos, endpos)
        if not line:  # the blank line before the table: feed takes it once lines came
            if plain.get((type(self), line)) is False and self.lines:
                return end + 1, n + 1, self.STEP_TOOK
            return pos, n, self.STEP_STOP
        columns = self._headers.get(line)
        if columns is not None:  # a header read before: feed reads it so again
            self._set_columns(columns, line)
            return end + 1, n + 1, self.STEP_TOOK
        if len(line) <= MAX_LINE and _TOP_HINT.search(line):
            got = unpaste(line)
            if _score(got) == 2:  # handed over; feed reads it as _read does (not blank,
                if not self._read(got, line):  # no marker, no row: none of those scores)
                    return pos, n, self.STEP_STOP
                return end + 1, n + 1, self.STEP_TOOK
        return pos, n, self.STEP_FEED

    def _set_columns(self, columns: list[str], line: str) -> None:
        self.columns = self._columns = columns
        self._header = line
        self._cells = _cells(columns)
        cpu, mem, state = self._cells
        self._layout = (len(columns), cpu, mem, -1 if state is None else state)
        if cpu is None or mem is None or len(columns) > 64:
            self._layout = None
            self.frame.settle()  # no C reader for this layout: the dicts from here on

    @classmethod
    def start_score(cls, line: str) -> int:
        if len(line) > MAX_LINE or not _TOP_HINT.search(line):
            return 0
        return _score(unpaste(line))

    def feed(self, line: str) -> bool:
        if len(line) > MAX_LINE:
            return False
        text = unpaste(line)
        if not text.strip():
            return bool(self.lines)
        if self.lines and text.startswith("zzz") and sample_mark(text):
            return True  # OSWatcher's marker between two samples: the later one counts
        # a process row starts with its pid: of the shapes below only Solaris's `N processes:`
        # can, so a long capture's rows skip the others
        first = text.lstrip()[:1]
        if "0" <= first <= "9" and self.columns is not None and not _SOL_PROCS.match(text):
            return self._row(text)
        return self._read(text, line)

    def _read(self, text: str, line: str) -> bool:
        """feed of a line that is not blank, not OSWatcher's marker and no process row (as
        unpasted: `text`): every line start_score scores 2 is one."""
        if _TOP.match(text) or _SOL_TOP.match(text):
            if self.frames and self.solaris != bool(_SOL_TOP.match(text)):
                return False  # another system's top: its own block
            if self.frames:
                self.frame = _Frame()
            self.frames += 1
            self.columns = None
            self.solaris = self.solaris or bool(_SOL_TOP.match(text))
            self._uptime(text)
            return True
        if self.frame.pending:  # the summary lines before this one first
            self._replay()
        if m := _TASKS.match(text):
            self.frame.tasks = {"total": 0.0}
            for p in _PAIR.finditer(m["rest"]):
                self.frame.tasks[p["name"].strip()] = number(p["n"]) or 0.0
            return True
        if m := _SOL_PROCS.match(text):
            self.frame.tasks = {"total": float(m["total"])}
            for p in _PAIR.finditer(m["rest"]):
                self.frame.tasks[p["name"].strip()] = number(p["n"]) or 0.0
            return True
        if m := _CPU.match(text):
            values = _MEMO.get(rest := m["rest"])
            if values is None:
                values = {
                    _CPU_NAMES[p["name"].strip()]: number(p["n"]) or 0.0
                    for p in _PAIR.finditer(rest)
                    if p["name"].strip() in _CPU_NAMES
                }
                if len(_MEMO) < _MEMO_MAX:
                    _MEMO[rest] = values
            values = dict(values)  # the frame's own: per-CPU lines add to it
            if m["n"] is not None:
                self.frame.per_cpu += 1
                if not self.frame.cpu:
                    self.frame.cpu = {"_sum_" + k: v for k, v in values.items()}
                else:
                    for k, v in values.items():
                        self.frame.cpu["_sum_" + k] = self.frame.cpu.get("_sum_" + k, 0.0) + v
            else:
                self.frame.cpu = values
            return True
        if m := _MEM.match(text):
            self._memory(m)
            return True
        if _HEADER.match(text):
            columns = text.split()
            self._set_columns(columns, line)
            if len(self._headers) < 64:
                self._headers[line] = columns
            return True
        if self.columns is not None:
            return self._row(text)
        return False

    def _uptime(self, text: str) -> None:
        """The frame's load averages and days up, from its first line."""
        if m := _LOAD.search(text):
            vals = [number(m[k]) or 0.0 for k in "abc"]
            self.frame.load = (vals[0], vals[1], vals[2])
        if m := _UPDAYS.search(text):
            self.frame.days = float(m["days"])

    def _replay(self) -> None:
        """The summary lines the C reader took for this frame, read as feed would have read
        them then (they set only the frame's summary fields, which nothing read since)."""
        lines, self.frame.pending = self.frame.pending, []
        for line in lines:
            text = unpaste(line)
            if _TOP.match(text):  # the frame's first line (the frame itself is made)
                self._uptime(text)
            else:
                self._read(text, line)

    def _memory(self, m: re.Match) -> None:
        key = (m["unit"], m["what"], m["rest"])
        writes = _MEMO.get(key)
        if writes is None:
            writes = _memory_writes(m)
            if len(_MEMO) < _MEMO_MAX:
                _MEMO[key] = writes
        f = self.frame
        for swap, name, mb in writes:
            (f.swap if swap else f.mem)[name] = mb

    def _row(self, text: str) -> bool:
        cols = self.columns
        assert cols is not None
        tokens = text.split()
        if not tokens or not tokens[0].isdigit():
            return False
        if len(tokens) < len(cols):
            self.malformed += 1
            return True
        at_cpu, at_mem, at_state = self._cells
        f = self.frame
        if not f.python:
            f.settle()  # this frame's rows read in C so far: the dicts are the store from here
        f.rows += 1
        cpu = None if at_cpu is None else number(tokens[at_cpu])
        mem = None if at_mem is None else number(tokens[at_mem])
        # the command's first word (COMMAND is last and may hold spaces), as shown: 200 at most
        key = tokens[len(cols) - 1][:200]
        if key not in f.proc_cpu and len(f.proc_cpu) >= MAX_KEYS:
            return True
        if cpu is not None:
            f.proc_cpu[key] = f.proc_cpu.get(key, 0.0) + cpu
            f.proc_cpu_max[key] = max(f.proc_cpu_max.get(key, 0.0), cpu)
        if mem is not None:
            f.proc_mem[key] = f.proc_mem.get(key, 0.0) + mem
        state = None if at_state is None else tokens[at_state]
        if state:
            f.states[state] = f.states.get(state, 0.0) + 1
        return True

    def facts(self) -> tuple[dict, dict, list[str], Platform | None]:
        f = self.frame
        f.settle()
        if f.pending:
            self._replay()
        facts: dict = {}
        if f.load:
            facts["load.avg1"], facts["load.avg5"], facts["load.avg15"] = f.load
            if f.per_cpu:
                facts["load.per_cpu"] = round(f.load[0] / f.per_cpu, 3)
        if f.days is not None:
            facts["uptime.days"] = f.days
        if f.tasks:
            facts["top.tasks"] = f.tasks.get("total", 0.0)
            for name, fact in (("running", "top.running"), ("zombie", "top.zombie")):
                if name in f.tasks:
                    facts[fact] = f.tasks[name]
        cpu = dict(f.cpu)
        if f.per_cpu and any(k.startswith("_sum_") for k in cpu):
            cpu = {k[5:]: v / f.per_cpu for k, v in cpu.items() if k.startswith("_sum_")}
        for name in ("usr", "sys", "wait", "idle", "steal"):
            if name in cpu:
                facts[f"cpu.{name}_pct"] = round(cpu[name], 2)
        if "hi" in cpu or "si" in cpu:
            facts["cpu.irq_pct"] = round(cpu.get("hi", 0.0) + cpu.get("si", 0.0), 2)
        mem, swap = f.mem, f.swap
        if "total" in mem:
            facts["mem.total_mb"] = round(mem["total"], 1)
            if "free" in mem:
                facts["mem.free_mb"] = round(mem["free"], 1)
            avail = swap.get("avail", mem.get("available"))
            if avail is not None:
                facts["mem.available_mb"] = round(avail, 1)
                if mem["total"]:
                    facts["mem.available_pct"] = round(100 * avail / mem["total"], 2)
            cache = mem.get("buff/cache", mem.get("buffers", 0.0) + swap.get("cached", 0.0))
            if cache:
                facts["mem.cached_mb"] = round(cache, 1)
        if "total" in swap:
            facts["mem.swap_total_mb"] = round(swap["total"], 1)
            used = swap.get("used")
            if used is None and "free" in swap:
                used = swap["total"] - swap["free"]
            if used is not None:
                facts["mem.swap_used_mb"] = round(used, 1)
                if swap["total"]:
                    facts["mem.swap_used_pct"] = round(100 * used / swap["total"], 2)
        if f.proc_cpu:
            # proc.cpu_pct means the busiest process of that name, as pidstat and prstat give it;
            # the sum over a command's rows (threads with -H) leads proc.top_command
            facts["proc.cpu_pct"] = {k: round(v, 2) for k, v in f.proc_cpu_max.items()}
            top = max(f.proc_cpu.items(), key=lambda kv: (kv[1], kv[0]))
            facts["proc.top_command"], facts["proc.top_cpu_pct"] = top[0], round(top[1], 2)
        if f.proc_mem:
            facts["proc.mem_pct"] = {k: round(v, 2) for k, v in f.proc_mem.items()}
        if f.states:
            facts["top.state_count"] = dict(f.states)
        ranked = sorted(f.proc_cpu.items(), key=lambda kv: -kv[1])[:30]
        details: dict = {
            "frames": self.frames,
            "cpus_listed": f.per_cpu,
            "processes": [
                {"command": k, "cpu_pct": v, "mem_pct": f.proc_mem.get(k)} for k, v in ranked
            ],
            "rows": f.rows,
        }
        identifiers = [k for k, _ in ranked]
        platform: Platform = "solaris" if self.solaris else "linux"
        return facts, details, identifiers, platform


def _memory_writes(m: re.Match) -> list[tuple[bool, str, float]]:
    """What a memory line sets, in order: (to the swap dict, name, MiB). Pure: remembered."""
    out: list[tuple[bool, str, float]] = []
    scale = _UNIT_MB.get(m["unit"] or "", 1 / 1024)  # old procps: 'k' suffixed kB
    to_swap = m["what"] == "Swap"
    for p in _PAIR.finditer(m["rest"]):
        value = number(p["n"]) or 0.0
        unit = p["u"]
        mb = value * (_SUFFIX_MB[unit] if unit else scale)
        name = p["name"].strip()
        if m["what"] == "Memory":  # Solaris: '32G phys mem, 4G free mem, 16G total swap'
            key = {
                "phys mem": "total",
                "free mem": "free",
                "total swap": "swap total",
                "free swap": "swap free",
            }.get(name)
            if key and key.startswith("swap "):
                out.append((True, key[5:], mb))
            elif key:
                out.append((False, key, mb))
            continue
        if name.startswith("avail"):
            out.append((False, "available", mb))
        else:
            out.append((to_swap, name.split()[0], mb))
    return out


def _score(text: str) -> int:
    """start_score of an unpasted line holding one of the hint words."""
    if _TOP.match(text) or _SOL_TOP.match(text) or _HEADER.match(text):
        return 2
    if (m := _TASKS.match(text)) and "total" in m["rest"]:
        return 2
    if (m := _CPU.match(text)) and m["label"] != "CPU states" or (m and "idle" in m["rest"]):
        return 2
    if (m := _MEM.match(text)) and m["unit"]:
        return 2
    return 0
