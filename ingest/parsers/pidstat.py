"""pidstat (sysstat): -u (`%usr %system %guest [%wait] %CPU CPU`), -d (`kB_rd/s kB_wr/s kB_ccwr/s
[iodelay]`), -w (`cswch/s nvcswch/s`), -r (`minflt/s majflt/s VSZ RSS %MEM`), -t (`TGID TID`, thread
rows `|__name`), -h (one `#`-headed line per process with an epoch Time column), -l (command
lines with spaces), old layouts without UID, `Average:` rows, 12 h clocks, and the banner.

The header names the columns; `Command` is last and takes the rest of the row. Each report is an
interval (pidstat takes its first snapshot silently), so every timed row counts; `Average:`
rows are pidstat's own means, used only when there are no timed rows. Facts are keyed by
command name (the busiest process of that name) so a signature can name `ora_lgwr*`.
"""

from __future__ import annotations

import functools
import re
from typing import ClassVar

from ingest.base import Parser
from ingest.model import Format, Platform
from ingest.parsers.ostable import (
    ProcTable,
    banner,
    banner_line,
    cleaned,
    command,
    findings,
    is_command_of,
    num,
    r3,
    split_clock,
)

_METRICS = {
    "%usr": "usr",
    "%user": "usr",
    "%system": "sys",
    "%guest": "guest",
    "%wait": "wait",
    "%CPU": "cpu",
    "kB_rd/s": "kb_rd",
    "kB_wr/s": "kb_wr",
    "kB_ccwr/s": "kb_ccwr",
    "iodelay": "iodelay",
    "cswch/s": "cswch",
    "nvcswch/s": "nvcswch",
    "minflt/s": "minflt",
    "majflt/s": "majflt",
    "VSZ": "vsz_kb",
    "RSS": "rss_kb",
    "%MEM": "mem",
    "StkSize": None,
    "StkRef": None,
    "CPU": None,
    "prio": None,
    "policy": None,
    "threads": None,
    "fd-nr": None,
}
_IDS = ("UID", "USER", "PID", "TGID", "TID", "Time", "Time:")
# the ProcTable's metrics (the C store's columns) and the ranges a row must keep (see _row)
_PROC_METRICS = tuple(dict.fromkeys(m for m in _METRICS.values() if m is not None))
_BOUNDS = {m: (0.0, 100.0 * 4096) for m in ("cpu", "usr", "sys")}
_HEADERS_MAX = 64  # header lines remembered as pasted (a capture repeats a few)
# a clock split_clock reads, at the start of a line as printed (minutes checked here, hours and
# seconds by _memo), then a blank
_CLOCK8 = re.compile(r"(\d\d):[0-5]\d:(\d\d)[ \t]").match
_EPOCH = re.compile(r"^\d{9,11}$")
# a row as pidstat prints it: the clock (12 h with AM/PM or 24 h), a number, then anything up to
# a command name that does not end in a digit-only token (what claims takes as this block's)
_ROW = re.compile(r"\d\d:\d\d:\d\d(?: [AP]M)?\s+\d+\s+\S.*\s(?!\d+\s*$)\S+\s*$").match


@functools.lru_cache(maxsize=64)
def _layout(names: tuple[str, ...]) -> tuple[list[int], list[str | None], int]:
    """The C reader's layout of a header (ProcTable.layout): the tokens after the clock up to
    the command, as _row reads them. `-h` (a Time column, rows without a clock) is left to the
    Python reader."""
    fixed = names[:-1]
    if names[0] == "Time":
        return [], [], 0
    pid = "PID" if "PID" in fixed else "TGID"
    codes: list[int] = []
    metrics: list[str | None] = []
    for name in fixed:
        if name in _IDS:
            codes.append(1 if name == pid else 2 if name == "TID" else 0)
            metrics.append(None)
        elif (metric := _METRICS.get(name)) is None:
            codes.append(0)  # CPU, prio, policy: not read
            metrics.append(None)
        else:
            codes.append(3)
            metrics.append(metric)
    return codes, metrics, 1


def _header(tokens: list[str]) -> list[str] | None:
    """Column names of a pidstat header (the time label already split off)."""
    if len(tokens) < 3 or tokens[-1] != "Command":
        return None
    if "PID" not in tokens and "TGID" not in tokens:
        return None
    if not all(t in _METRICS or t in _IDS for t in tokens[:-1]):
        return None
    if not any(t in _METRICS for t in tokens[:-1]):
        return None
    return [t.rstrip(":") for t in tokens]


class PidstatParser(Parser):
    format: ClassVar[Format] = "pidstat"

    def __init__(self) -> None:
        super().__init__()
        self.banner: dict | None = None
        self.names: list[str] | None = None
        self.procs = ProcTable(_PROC_METRICS, _BOUNDS)
        self.average = ProcTable()
        # a header line as pasted, after its clock -> (its names, AM/PM after the clock)
        self._headers: dict[str, tuple[list[str], bool]] = {}
        self.samples = 0  # reports: a new time label starts one (a set of labels would grow)
        self.last_label = ""
        self.threads = False

    @classmethod
    def start_score(cls, line: str) -> int:
        if not ("Command" in line or "pidstat" in line or "CPU)" in line):
            return 0
        got = cleaned(line)
        if got is None:
            return 0
        text, tokens = got
        _, _, rest = split_clock(tokens)
        if _header(rest):
            return 2
        if is_command_of(text, "pidstat"):
            return 2
        if banner(text):
            return 1
        return 0

    def claims(self, line: str) -> bool:
        """sysstat's banner continues this block even though mpstat would start on it: it is
        the top of this report (after its command line); feed refuses it once rows came.
        Once a header is read, a row stamped with a clock and ending in a command name is this
        block's too: no other format starts on one, and asking them all about each row was
        most of the time a long capture took."""
        if self.names is not None and _ROW(line):
            return True
        return banner_line(line)

    fast = True

    feed_run = Parser.feed_steps

    def run_step(self, text: str, pos: int, endpos: int, plain: dict) -> tuple[int, int, int]:
        """Parser.feed_steps' step: timed rows read by the ProcTable's C reader (table.c's proc
        mode), then a header seen before read from memory (header_step); every other line (and
        any row the C reader does not vouch for) goes through feed as before."""
        n = 0
        procs = self.procs
        if procs.core is not None and self.names is not None:
            pos, n, new, self.last_label = procs.run(text, pos, endpos, self.last_label)
            if n:
                self.samples += new
            if pos >= endpos:
                return pos, n, self.STEP_STOP
        return self.header_step(text, pos, endpos, n, self._memo, self._set_header)

    def _memo(self, line: str) -> list[str] | None:
        """The names of a header line read before, clock aside (pidstat stamps its headers):
        feed reads a line that starts with a clock split_clock takes as a header exactly when
        the text after the clock is one, so the text after the clock is the memo's key."""
        m = _CLOCK8(line)
        if m is None or (got := self._headers.get(line[8:])) is None:
            return None
        names, ampm = got
        if int(m[2]) > 60 or (not ampm and int(m[1]) > 23):
            return None
        return names

    def _set_header(self, names: list[str]) -> None:
        self.names = names
        self.threads |= "TID" in names
        self.procs.layout(*_layout(tuple(names)))

    def feed(self, line: str) -> bool:
        if not line:
            return False  # what cleaned says of it, without the cleaning (one a report)
        got = cleaned(line)
        if got is None:
            return False
        text, tokens = got
        if cmd := command(text):
            return cmd[0] == "pidstat"
        if b := banner(text):
            if self.banner is not None or self.procs.rows or self.average.rows:
                return False
            self.banner = b
            return True
        label, secs, rest = split_clock(tokens)
        if names := _header(rest):
            self._set_header(names)
            if len(self._headers) < _HEADERS_MAX and _CLOCK8(line) and line[10:11] != "T":
                self._headers[line[8:]] = (names, tokens[1] in ("AM", "PM", "am", "pm"))
            return True
        if self.names is None:
            return False
        return self._row(label, secs, rest)

    def _row(self, label: str, secs: int | None, rest: list[str]) -> bool:
        names = self.names
        assert names is not None
        fixed = len(names) - 1
        if len(rest) < fixed + 1:
            if rest and num(rest[0]) is not None:
                self.malformed += 1
                return True
            return False
        if names[0] == "Time" and not (label or _EPOCH.match(rest[0])):
            return False
        if not label and names[0] != "Time":
            return False  # pidstat rows start with the time or `Average:`
        row: dict[str, float] = {}
        ids: dict[str, str] = {}
        for name, tok in zip(names[:fixed], rest[:fixed], strict=True):
            if name in _IDS:
                ids[name] = tok
                continue
            metric = _METRICS.get(name)
            if metric is None:
                continue  # CPU (`-` in Average rows), prio, policy: not read
            value = num(tok)
            if value is None:
                self.malformed += 1
                return True
            row[metric] = value
        cmd = " ".join(rest[fixed:])[:200]
        pid = ids.get("PID") or ids.get("TGID") or ""
        tid = ids.get("TID", "-")
        if not (pid.isdigit() or pid == "-") or not (tid.isdigit() or tid == "-"):
            self.malformed += 1
            return True
        thread = tid != "-" and cmd.startswith("|__")
        name = cmd.removeprefix("|__").strip() or "?"  # thread names have spaces
        if thread:
            key, ident, shown = f"t{tid}", tid, f"{name}/{tid}"
        else:
            key, ident, shown = f"p{pid}", pid, name
        if any(not 0 <= row.get(m, 0) <= 100.0 * 4096 for m in ("cpu", "usr", "sys")):
            self.malformed += 1
            return True
        if secs is None and label and names[0] != "Time":
            self.average.add(key, shown, ident, row)
        else:
            stamp = label or rest[0]
            if stamp != self.last_label:
                self.samples += 1
                self.last_label = stamp
            self.procs.add(key, shown, ident, row)
        return True

    def facts(self) -> tuple[dict, dict, list[str], Platform | None]:
        procs = self.procs if self.procs.rows else self.average
        facts: dict = {}
        notes: list[str] = []
        if not self.procs.rows and self.average.rows:
            notes.append("only the Average rows were present")
        if self.banner:
            facts["cpu.count"] = float(self.banner["cpus"])
        details: dict = {"notes": notes}
        if self.banner:
            details["banner"] = self.banner
        if not procs.rows:
            return facts, details, ["pidstat"], "linux" if self.banner else None
        facts["proc.count"] = float(len(procs.rows))
        if self.samples:
            facts["proc.samples"] = float(self.samples)
        for fact, metric in (
            ("proc.cpu_pct", "cpu"),
            ("proc.usr_pct", "usr"),
            ("proc.sys_pct", "sys"),
            ("proc.wait_pct", "wait"),
            ("proc.kb_rd_per_s", "kb_rd"),
            ("proc.kb_wr_per_s", "kb_wr"),
            ("proc.iodelay", "iodelay"),
            ("proc.cswch_per_s", "cswch"),
            ("proc.nvcswch_per_s", "nvcswch"),
            ("proc.majflt_per_s", "majflt"),
            ("proc.rss_kb", "rss_kb"),
        ):
            if table := procs.by_command(metric):
                facts[fact] = _top(table)
        for top_fact, max_fact, metric in (
            ("proc.top_cpu", "proc.max_cpu_pct", "cpu"),
            ("proc.top_cs", "proc.max_nvcswch_per_s", "nvcswch"),
            ("proc.top_wait", "proc.max_wait_pct", "wait"),
        ):
            if top := procs.top(metric):
                facts[top_fact], facts[max_fact] = top[0], r3(top[1])
        io = {k: r.get("kb_rd", 0.0) + r.get("kb_wr", 0.0) for k, r in procs.means().items()}
        io = {k: v for k, v in io.items() if any(m in procs.rows[k] for m in ("kb_rd", "kb_wr"))}
        if io:
            key = max(io, key=lambda k: io[k])
            command, ident = procs.names[key]
            facts["proc.top_io"] = f"{command} ({ident})"
            facts["proc.max_io_kb_per_s"] = r3(io[key])
        order, details["processes"] = procs.ranked(
            lambda m: m.get("cpu", 0.0) + m.get("kb_rd", 0.0) + m.get("kb_wr", 0.0), "command"
        )
        if procs.dropped:
            notes.append(f"{procs.dropped} rows of processes beyond the first {len(procs.rows)}")
        details["findings"] = findings(facts, notes)
        idents = ["pidstat", *sorted({procs.names[k][0] for k in order[:20]})]
        return facts, details, idents, "linux"


def _top(table: dict[str, float], limit: int = 200) -> dict[str, float]:
    """The largest `limit` entries: a keyed fact stays small however many processes ran."""
    if len(table) <= limit:
        return table
    return dict(sorted(table.items(), key=lambda kv: -kv[1])[:limit])
