"""prstat (Solaris/illumos): plain (`PID USERNAME SIZE RSS STATE PRI NICE TIME CPU PROCESS/NLWP`),
`-L` (PROCESS/LWPID), `-m`/`-mL` microstates (`USR SYS TRP TFL DFL LCK SLP LAT VCX ICX SCL SIG`),
the `-a`/`-t`/`-J`/`-Z` summary tables (accepted, not read) and `Total:` lines with the load
averages.

Columns are read by the header's names; PROCESS/LWPID is last. Several screens (one per
interval) and several tables (`prstat` then `prstat -Lm`) in one paste make one block: each row
is keyed by pid and LWP, and facts are means over the screens. Microstates are percentages of
the interval: LCK is time waiting for user-level locks, LAT time waiting for a CPU (run queue
latency), the two a person reads first after USR/SYS.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import ClassVar

from ingest.base import Parser
from ingest.model import Format, Platform
from ingest.parsers.ostable import (
    ProcTable,
    Series,
    cleaned,
    command,
    findings,
    is_command_of,
    num,
    r3,
    size_kb,
)

_MICRO = {
    "USR": "usr",
    "SYS": "sys",
    "TRP": "trp",
    "TFL": "tfl",
    "DFL": "dfl",
    "LCK": "lck",
    "SLP": "slp",
    "LAT": "lat",
    "VCX": "vcx",
    "ICX": "icx",
    "SCL": "scl",
    "SIG": "sig",
}
_PLAIN = {"SIZE": "size_kb", "RSS": "rss_kb", "CPU": "cpu", "PRI": None, "NICE": None}
_TEXT = ("USERNAME", "STATE", "TIME")
_LAST = re.compile(r"^PROCESS/(NLWP|LWPID|LWP)$")
# a row as prstat prints it: the pid first, `name/lwp` (or `name/nlwp`) last (what claims takes)
_ROW = re.compile(r"\s*\d+\s+\S.*\s\S*/\d+\s*$").match
# -a/-t/-J/-T/-Z summary tables: `NPROC USERNAME SWAP RSS MEMORY TIME CPU`, `ZONEID NPROC ...`
_SUMMARY = re.compile(r"^(?:NPROC|ZONEID|TASKID|PROJID)\b.*\bMEMORY\b")
_TOTAL = re.compile(
    r"^Total:\s+(?P<procs>\d+)\s+processes,\s+(?P<lwps>\d+)\s+lwps,\s+load\s+averages?:\s*"
    r"(?P<l1>[\d.,]+),\s*(?P<l5>[\d.,]+),\s*(?P<l15>[\d.,]+)"
)


def _count(token: str) -> float | None:
    """A microstate column: a percentage, or a count prstat shortens (`50K`, `2M`)."""
    if token[-1:] in ("K", "M") and (value := num(token[:-1])) is not None:
        return value * (1e3 if token[-1] == "K" else 1e6)
    return num(token)


# the ProcTable's metrics (the C store's columns) and the ranges a row must keep (see _row)
_PROC_METRICS = (*_MICRO.values(), "size_kb", "rss_kb", "cpu", "cpu_m")
_BOUNDS = {m: (0.0, 100.5) for m in ("usr", "sys", "lck", "lat", "slp")}
_HEADERS_MAX = 64  # header lines remembered as pasted


def _layout(names: list[str], per_lwp: bool) -> tuple[list[int], list[str | None], int]:
    """The C reader's layout of a header (ProcTable.layout): the pid, then each column as
    _plan reads it (text columns not read; PRI and NICE read only to check them)."""
    codes, metrics = [1], [None]
    for name in names[1:]:
        if name in _TEXT:
            codes.append(0)
            metrics.append(None)
        elif name in _MICRO:
            codes.append(5)
            metrics.append(_MICRO[name])
        else:
            metric = _PLAIN[name]
            codes.append(4 if metric in ("size_kb", "rss_kb") else 3)
            metrics.append(metric)
    return codes, metrics, 3 if per_lwp else 2


# a header's names and -L -> (its _plan, its _layout): both pure, made once per header
_PLANS: dict[tuple[tuple[str, ...], bool], tuple[list, tuple]] = {}

_UNREAD = object()
_MEMO_MAX = 4096  # distinct cells remembered per reader (a screen's values repeat: 0.0, 36, 14K)
# what each reader made of a cell: the readers are pure, so one memo per reader for every block
_MEMOS: dict = {}


def _plan(names: list[str]) -> list[tuple[int, str | None, Callable, dict]]:
    """The header's columns as the row reader walks them: (token index, metric or None for a
    column read only to check it, the reader of its cells, that reader's memo); text columns
    are left out. Worked out once per header instead of per row."""
    plan = []
    for i, name in enumerate(names[1:], 1):
        if name in _TEXT:
            continue
        if name in _MICRO:
            metric: str | None = _MICRO[name]
            read: Callable = _count
        else:
            metric = _PLAIN[name]
            read = size_kb if metric in ("size_kb", "rss_kb") else num
        plan.append((i, metric, read, _MEMOS.setdefault(read, {})))
    return plan


def _header(tokens: list[str]) -> tuple[list[str], str] | None:
    """(column names, what follows the slash) of a prstat table header."""
    if len(tokens) < 4 or tokens[0] != "PID" or not (m := _LAST.match(tokens[-1])):
        return None
    for t in tokens[1:-1]:
        if t not in _MICRO and t not in _PLAIN and t not in _TEXT:
            return None
    return tokens[:-1], m.group(1)


class PrstatParser(Parser):
    format: ClassVar[Format] = "prstat"

    def __init__(self) -> None:
        super().__init__()
        self.names: list[str] | None = None
        self.per_lwp = False
        self.in_summary = False
        self.procs = ProcTable(_PROC_METRICS, _BOUNDS)
        self._headers: dict[str, tuple[list[str], str]] = {}  # a header as pasted -> _header
        self.screens = 0
        self.load = Series(points=False)
        self.total_procs: float | None = None
        self.total_lwps: float | None = None
        self.microstates = False
        self._plan: list[tuple[int, str | None, Callable, dict]] = []

    def claims(self, line: str) -> bool:
        """Once a header is read, a row (a pid first, PROCESS/LWPID or PROCESS/NLWP last) and
        the `Total:` line are this block's: no other format starts on one, and asking them all
        about each row was most of the time a long capture took."""
        if self.names is None:
            return False
        if line.startswith("Total:"):  # a screen's last line (its load averages change)
            return _TOTAL.match(line) is not None
        return _ROW(line) is not None

    fast = True

    feed_run = Parser.feed_steps

    def run_step(self, text: str, pos: int, endpos: int, plain: dict) -> tuple[int, int, int]:
        """Parser.feed_steps' step: rows read by the ProcTable's C reader (table.c's proc mode),
        then a header seen before read from memory (header_step); every other line (`Total:`,
        summaries, any row the C reader does not vouch for) goes through feed as before."""
        n = 0
        procs = self.procs
        if procs.core is not None and self.names is not None and not self.in_summary:
            pos, n, _, _ = procs.run(text, pos, endpos, "")
            if pos >= endpos:
                return pos, n, self.STEP_STOP
        return self.header_step(text, pos, endpos, n, self._headers.get, self._set_header)

    def _set_header(self, header: tuple[list[str], str]) -> None:
        self.names, after = header
        self.per_lwp = after in ("LWPID", "LWP")
        self.microstates |= "LCK" in self.names
        self.in_summary = False
        self.screens += 1
        made = _PLANS.get(key := (tuple(self.names), self.per_lwp))
        if made is None:  # each screen repeats its header: the plan and layout are made once
            made = (_plan(self.names), _layout(self.names, self.per_lwp))
            if len(_PLANS) < _HEADERS_MAX:
                _PLANS[key] = made
        self._plan = made[0]
        self.procs.layout(*made[1])

    @classmethod
    def start_score(cls, line: str) -> int:
        if not ("PROCESS/" in line or "prstat" in line):
            return 0
        got = cleaned(line)
        if got is None:
            return 0
        text, tokens = got
        if _header(tokens):
            return 2
        if is_command_of(text, "prstat"):
            return 2
        return 0

    def feed(self, line: str) -> bool:
        got = cleaned(line)
        if got is None:
            return False
        text, tokens = got
        # a row starts with its pid: none of the four shapes below starts with a digit, so a
        # long capture's rows skip them
        if not ("0" <= text[0] <= "9"):
            if cmd := command(text):
                return cmd[0] == "prstat"
            if header := _header(tokens):
                self._set_header(header)
                if len(self._headers) < _HEADERS_MAX:
                    self._headers[line] = header
                return True
            if m := _TOTAL.match(text):
                self.total_procs = float(m["procs"])
                self.total_lwps = float(m["lwps"])
                if (load := num(m["l1"])) is not None:
                    self.load.add(load)
                self.in_summary = False
                return True
            if _SUMMARY.match(text):
                self.in_summary = self.names is not None
                return self.in_summary
        if self.names is None:
            return False
        if self.in_summary:
            if tokens[0].isdigit():
                return True  # a zone/user/project summary row: not read
            if not self._row(tokens):
                return False  # refused: still in the summary (base.Parser.feed: no trace)
            self.in_summary = False
            return True
        return self._row(tokens)

    def _row(self, tokens: list[str]) -> bool:
        names = self.names
        assert names is not None
        if len(tokens) != len(names) + 1:
            if tokens[0].isdigit() and len(tokens) > 3:
                self.malformed += 1
                return True
            return False
        if not tokens[0].isdigit():
            return False
        row: dict[str, float] = {}
        for i, metric, read, memo in self._plan:
            tok = tokens[i]
            value = memo.get(tok, _UNREAD)
            if value is _UNREAD:
                value = read(tok)
                if len(memo) < _MEMO_MAX:
                    memo[tok] = value
            if value is None:
                self.malformed += 1
                return True
            if metric is not None:
                row[metric] = value
        for m in ("usr", "sys", "lck", "lat", "slp"):
            if not 0 <= row.get(m, 0) <= 100.5:
                self.malformed += 1
                return True
        if "usr" in row and "sys" in row:
            row["cpu_m"] = row["usr"] + row["sys"]
        pid, last = tokens[0], tokens[-1]
        name, _, lwp = last.rpartition("/")
        if not name:
            name, lwp = last, ""
        if self.per_lwp:
            key, ident, shown = f"{pid}/{lwp}", f"{pid}/{lwp}", f"{name}/{lwp}"
        else:
            key, ident, shown = pid, pid, name
        self.procs.add(key, shown, ident, row)
        return True

    def facts(self) -> tuple[dict, dict, list[str], Platform | None]:
        procs = self.procs
        facts: dict = {}
        details: dict = {"notes": [], "screens": self.screens}
        if self.load.n:
            facts["runq.ldavg_1_max"] = r3(self.load.high)
            facts["runq.ldavg_1_last"] = r3(self.load.last or 0.0)
        if self.total_procs is not None:
            details["total"] = {"processes": self.total_procs, "lwps": self.total_lwps}
        if not procs.rows:
            return facts, details, ["prstat"], "solaris"
        facts["proc.count"] = float(len(procs.rows))
        for fact, metric in (
            ("proc.cpu_pct", "cpu"),
            ("proc.usr_pct", "usr"),
            ("proc.sys_pct", "sys"),
            ("proc.lck_pct", "lck"),
            ("proc.lat_pct", "lat"),
            ("proc.rss_kb", "rss_kb"),
        ):
            if table := procs.by_command(metric):
                facts[fact] = dict(sorted(table.items(), key=lambda kv: -kv[1])[:200])
        for top_fact, max_fact, metric in (
            ("proc.top_cpu", "proc.max_cpu_pct", "cpu_m" if self.microstates else "cpu"),
            ("proc.top_lat", "proc.max_lat_pct", "lat"),
            ("proc.top_lck", "proc.max_lck_pct", "lck"),
        ):
            if top := procs.top(metric):
                facts[top_fact], facts[max_fact] = top[0], r3(top[1])
        order, details["processes"] = procs.ranked(
            lambda m: m.get("cpu_m", m.get("cpu", 0.0)) + m.get("lck", 0.0) + m.get("lat", 0.0),
            "process",
            hide=("cpu_m",),
        )
        details["findings"] = findings(facts, details["notes"])
        idents = ["prstat", *sorted({procs.names[k][0].split("/")[0] for k in order[:20]})]
        return facts, details, idents, "solaris"
