"""What the column-table OS tools (vmstat, iostat, sar, pidstat, prstat) share: cleaning a pasted
line, reading a number however it was pasted, sysstat's time labels and banner, and a bounded
per-metric summary of samples.

These tools print a header line naming the columns and rows of numbers under it; people paste
them with a shell prompt in front, behind a `#` on every line, behind a syslog/journal or pdsh
prefix, with whitespace collapsed, with thousands separators or decimal commas (sysstat under a
European locale). The parsers read columns by the header's names, so the same cleaning and
number reading serve all five, and each parser stays about its tool's meaning.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from ingest.facts import number
from ingest.parsers.pasted import number as num
from ingest.parsers.pasted import unpaste

try:  # the C core (ingest/_syscore_src/table.c): optional, the Python readers are the reference
    from ingest import _syscore
except ImportError:  # pragma: no cover - built by setup.py
    _syscore = None

__all__ = [
    "SYSSTAT_BANNER",
    "MAX_LINE",
    "Series",
    "banner",
    "clean",
    "cleaned",
    "clock_row",
    "command",
    "num",
    "split_clock",
]

MAX_LINE = 2048  # table lines are short (iostat -x of sysstat 12 is ~230); longer is not a row

# the one sysstat banner regex (mpstat, iostat, sar, pidstat print it above their tables)
SYSSTAT_BANNER = re.compile(
    r"^Linux\s+(?P<kernel>\S+)\s+\((?P<host>[^)]*)\)\s+(?P<date>\S+)"
    r"(?:\s+_(?P<arch>\w+)_)?\s+\((?P<cpus>\d{1,6})\s+CPU\)\s*$"
)
_CLOCK = re.compile(r"^(\d{1,2}):(\d{2}):(\d{2})$")
_AMPM = ("AM", "PM", "am", "pm")
# the tool with no arguments, or options/numbers first (`sar -d 30 1`, `vmstat 5`), not prose
_CMD = re.compile(r"^(?:sudo\s+)?(?:/\S*/)?(vmstat|iostat|sar|pidstat|prstat)(\s+[-\d][^|;&<>]*)?$")


def clean(line: str) -> str:
    """The line without what pasting put in front of it: a shell prompt, a `#` before every line,
    a syslog/journal or pdsh prefix (ingest/parsers/pasted.py). Collapsed whitespace needs
    nothing: columns are split on any run of blanks."""
    if len(line) > MAX_LINE:
        return ""
    head = line.lstrip()[:11]
    if head[:1].isdigit() and head[10:11] != "T":
        return line  # a row as printed (not an ISO journal stamp): nothing in front of it
    return unpaste(line, prompts=True, hosts=True)


def cleaned(line: str, hints: tuple[str, ...] = ()) -> tuple[str, list[str]] | None:
    """(the cleaned line stripped, its tokens), or None for a line too long to be a row or
    blank once cleaned, or (when `hints` are given: start_score's cheap first test) holding none
    of the parser's hint words: the first step of every feed and start_score of the
    column-table parsers, which read tokens, never positions."""
    if len(line) > MAX_LINE or (hints and not any(w in line for w in hints)):
        return None
    text = clean(line).strip()
    if not text:
        return None
    return text, text.split()


# what a row of numbers is made of: deleting these from it leaves nothing
_NUMERIC = str.maketrans("", "", "0123456789.,- \t")


def numeric(text: str) -> bool:
    """Only numbers and blanks: a data row no other format's header can start with."""
    return bool(text) and not text.translate(_NUMERIC)


def table_row(line: str, lead: int) -> bool:
    """`lead` label tokens (a device, a clock, AM/PM, a key) then only numbers: the shape of a
    data row, checked without regexes (the detector asks for it on every line of a capture)."""
    parts = line.split(None, lead)
    return len(parts) > lead and numeric(parts[lead]) and len(parts[lead]) > 3


_ROW_START = re.compile(r"\d\d:\d\d:\d\d ")


def clock_row(line: str) -> bool:
    """A sysstat data row as printed: a clock, a key (`all`, a CPU, a device; behind AM/PM on a
    12 h clock), then only numbers (`05:10:01 PM  all  13.9 ...`, `10:00:05  dev8-0  1.0 ...`).
    sar and mpstat claim these inside their blocks: no other format starts on one, and asking
    every other parser about each row was most of the time spent on a long capture."""
    return bool(_ROW_START.match(line)) and (table_row(line, 2) or table_row(line, 3))


def command(line: str) -> tuple[str, list[str]] | None:
    """(tool, arguments) when the cleaned line is the command that produced a table."""
    m = _CMD.match(line.strip())
    if not m:
        return None
    return m.group(1), (m.group(2) or "").split()


def split_clock(tokens: list[str]) -> tuple[str, int | None, list[str]]:
    """sysstat's row label: (`05:10:01 PM`, seconds since midnight on a 24 h clock, the rest).

    Rows of sar/pidstat start with the sample's time, on a 12 h clock with AM/PM where the locale
    says so; `Average:` (or a localised `Moyenne:`) rows have a label ending in a colon and no
    time. Returns ("", None, tokens) when the row has neither."""
    if not tokens:
        return "", None, tokens
    m = _CLOCK.match(tokens[0])
    if m:
        h, mi, s = (int(g) for g in m.groups())
        rest = tokens[1:]
        label = tokens[0]
        if rest and rest[0] in _AMPM:
            pm = rest[0].upper() == "PM"
            h = (h % 12) + (12 if pm else 0)
            label = f"{tokens[0]} {rest[0]}"
            rest = rest[1:]
        if h > 23 or mi > 59 or s > 60:
            return "", None, tokens
        return label, h * 3600 + mi * 60 + s, rest
    first = tokens[0]
    if first.endswith(":") and len(first) > 2 and first[:-1].replace(".", "").isalpha():
        return first, None, tokens[1:]
    return "", None, tokens


def is_command_of(text: str, tool: str) -> bool:
    """Is the cleaned line the command that printed `tool`'s table (`sar -d 30 1`, `vmstat 5`)?
    Every one of these parsers opens a block on its own command line."""
    cmd = command(text)
    return cmd is not None and cmd[0] == tool


def banner_line(line: str) -> bool:
    """Is the raw line sysstat's banner? iostat, sar and pidstat claim it, so it stays at the top
    of their report although mpstat would start a block on it (each feed refuses it once rows
    have come)."""
    return "CPU)" in line and banner(clean(line)) is not None


def banner(line: str) -> dict | None:
    """The sysstat banner (`Linux 3.10... (host) 12/02/2021 _x86_64_ (8 CPU)`) as a dict."""
    m = SYSSTAT_BANNER.match(line.strip())
    if not m:
        return None
    return {k: v for k, v in m.groupdict().items() if v}


POINTS = 240  # points kept per series for charts: a day of 1-minute sar samples, halved as needed


class Series:
    """Bounded summary of one metric over samples: count, sum, min, max, first, last and a
    downsampled run of points for a chart (pairs are averaged when the run is full, so a 1 GB
    capture keeps POINTS points, not millions)."""

    __slots__ = (
        "n",
        "total",
        "low",
        "high",
        "first",
        "last",
        "points",
        "_keep",
        "_step",
        "_acc",
        "_k",
    )

    def __init__(self, points: bool = True) -> None:
        self._keep = points
        self.n = 0
        self.total = 0.0
        self.low = float("inf")
        self.high = float("-inf")
        self.first: float | None = None
        self.last: float | None = None
        self.points: list[float] = []
        self._step = 1  # samples per point
        self._acc = 0.0
        self._k = 0

    def add(self, value: float) -> None:
        self.n += 1
        self.total += value
        if value < self.low:
            self.low = value
        if value > self.high:
            self.high = value
        if self.first is None:
            self.first = value
        self.last = value
        if not self._keep:
            return
        self._acc += value
        self._k += 1
        if self._k == self._step:
            self.points.append(self._acc / self._k)
            self._acc, self._k = 0.0, 0
            if len(self.points) >= POINTS:
                self.points = [
                    (self.points[i] + self.points[i + 1]) / 2
                    for i in range(0, len(self.points) - 1, 2)
                ]
                self._step *= 2

    @property
    def mean(self) -> float | None:
        return self.total / self.n if self.n else None

    def chart(self) -> list[float]:
        """The points, with the partial one at the end."""
        return self.points + ([self._acc / self._k] if self._k else [])


# Is the C row reader (ingest/_syscore_src/table.c) used? Tests set it False to compare the
# evidence with the Python readers, the reference, as tests/test_syscore.py does for truss.
NATIVE = _syscore is not None and hasattr(_syscore, "Table")


def native_table(
    columns: list[str],
    *,
    keyed: bool,
    bounds: dict[str, tuple[float, float]],
    grouped: bool = False,
    points: int = 0,
    max_keys: int,
    max_group: int = 1,
    key_int: bool = False,
    comma: int = 0,
    check_clock: bool = True,
    max_line: int = MAX_LINE,
    tail: list[str] | None = None,
    rows: tuple | None = None,
    sheet: tuple[list[bool], bool] | None = None,
):
    """A C Table (table.c) for a header's value columns, or None when the core is off or not
    built. `bounds`: the columns a row must keep in a range, else the row goes to the Python
    reader (which counts it malformed); `points`: chart points for every key (1), for the
    `all`/`-1` keys (2) or none (0); `comma`: a decimal comma is no number (0), any is (1,
    mpstat's _NUMBER), one is unless it looks like a thousands group (2, as pasted.number);
    `tail`: the interval header's tokens after its clock (grouped, mpstat); `rows`: rows
    mode, device rows `key value ...` without a clock (iostat: (factors, util, ops, colpoints,
    max_report), table.c's rows_init says what each is); `sheet`: sheet mode, vmstat's rows of
    numbers, `zzz` markers and known header lines ((per column whether it keeps chart points,
    whether rows end in -t's date and time), table.c's sheet_init)."""
    if not NATIVE or not columns or len(columns) > 64:
        return None
    lo = [bounds[c][0] if c in bounds else None for c in columns]
    hi = [bounds[c][1] if c in bounds else None for c in columns]
    return _syscore.Table(  # type: ignore[union-attr]
        len(columns), keyed, key_int, comma, grouped, points, max_keys, max_group,
        check_clock, max_line, lo, hi, tail, rows, sheet,
    )  # fmt: skip


def series_of(state: tuple, points: bool) -> Series:
    """A Series from a C Table's export of one column: the fields Series.add keeps."""
    s = Series(points)
    s.n, s.total, s.low, s.high, s.first, s.last, _, s.points, s._step, s._acc, s._k = state
    return s


def r3(value: float) -> float:
    return round(value, 3)


_SIZE = re.compile(r"^(\d+(?:[.,]\d+)?)([KMGTP])?B?$", re.IGNORECASE)
_SIZE_KB = {"": 1.0, "K": 1.0, "M": 1024.0, "G": 1024.0**2, "T": 1024.0**3, "P": 1024.0**4}


def size_kb(token: str) -> float | None:
    """A size as prstat (`1575M`, `12G`) or FreeBSD vmstat (`1.4G`) print it, in KiB; a bare
    number is taken as KiB."""
    m = _SIZE.match(token)
    if not m:
        return None
    return float(m.group(1).replace(",", ".")) * _SIZE_KB[(m.group(2) or "").upper()]


MAX_PROCS = 4096  # processes/threads tracked; more are counted, not kept


class ProcTable:
    """Per-process (or per-thread) means over samples for pidstat and prstat: key -> metric ->
    Series, with the command name and pid kept for display. Bounded by MAX_PROCS keys.

    Given its parser's `metrics` (and the C core built), the store is a C Table in proc mode
    (table.c): `run` reads rows of the header `layout` gave it in C, and the rows the Python
    reader reads go to the same store through `add`, so keys keep one order and each series
    one sum; `rows`, `names` and `dropped` are read back from it. Without the core the dicts
    below are the store, and they stay the reference."""

    def __init__(
        self,
        metrics: tuple[str, ...] = (),
        bounds: dict[str, tuple[float, float]] | None = None,
    ) -> None:
        self._rows: dict[str, dict[str, Series]] = {}
        self._names: dict[str, tuple[str, str]] = {}  # key -> (command, pid[/tid])
        self._dropped = 0
        self.metrics = metrics
        self.index = {m: i for i, m in enumerate(metrics)}
        self.core = (
            native_table(list(metrics), keyed=True, bounds=bounds or {}, max_keys=MAX_PROCS)
            if metrics
            else None
        )
        if self.core is not None:
            self.core.proc((), (), 0, -1, -1, -1)
        self._stale = False
        self._layouts: dict[tuple, tuple] = {}  # a layout -> core.proc's arguments

    def layout(self, codes: list[int], metrics: list[str | None], mode: int) -> None:
        """The C reader's layout for a header: per token its code (table.c's proc mode: 0 text,
        1 the pid, 2 a TID, 3 a number, 4 a size, 5 a prstat count) and its metric (None: read
        only to check it); mode 1 pidstat, 2 prstat, 3 prstat -L, 0 none (the Python reader
        reads every row). A metric named twice leaves the rows to the Python reader (its dict
        keeps one value per metric)."""
        if self.core is None:
            return
        memo = (tuple(codes), tuple(metrics), mode)
        args = self._layouts.get(memo)
        if args is None:
            args = self._layouts[memo] = self._proc_args(codes, metrics, mode)
        self.core.proc(*args)

    def _proc_args(self, codes: list[int], metrics: list[str | None], mode: int) -> tuple:
        named = [m for m in metrics if m is not None]
        if len(set(named)) != len(named) or any(m not in self.index for m in named):
            mode = 0
        cols = [-1 if m is None else self.index.get(m, -1) for m in metrics]
        usr, sys = self.index.get("usr", -1), self.index.get("sys", -1)
        both = "usr" in named and "sys" in named and "cpu_m" in self.index
        return codes, cols, mode, self.index["cpu_m"] if both else -1, usr, sys

    def run(self, text: str, pos: int, endpos: int, label: str) -> tuple[int, int, int, str]:
        """C: rows from `pos` until one it cannot vouch for -> (where it stopped, rows read,
        new sample labels among them, the last label)."""
        pos, n, new, last = self.core.run(text, pos, endpos, label)  # type: ignore[union-attr]
        if n:
            self._stale = True
        return pos, n, new, label if last is None else last

    def add(self, key: str, command: str, ident: str, values: dict[str, float]) -> None:
        if self.core is not None:
            index = self.index
            self.core.padd(key, command, ident, [index[m] for m in values], list(values.values()))
            self._stale = True
            return
        cols = self._rows.get(key)
        if cols is None:
            if len(self._rows) >= MAX_PROCS:
                self._dropped += 1
                return
            cols = self._rows[key] = {}
            self._names[key] = (command, ident)
        for name, value in values.items():
            s = cols.get(name)
            if s is None:
                s = cols[name] = Series(points=False)
            s.add(value)

    def _sync(self) -> None:
        """The C store read back into the dicts (once after each change)."""
        if self.core is None or not self._stale:
            return
        keys = self.core.export()[0]
        names, self._dropped = self.core.procs()
        metrics = self.metrics
        self._rows = {
            key: {metrics[c]: series_of(st, False) for c, st in cols} for key, cols in keys
        }
        self._names = {key: nm for (key, _), nm in zip(keys, names, strict=True)}
        self._stale = False

    @property
    def rows(self) -> dict[str, dict[str, Series]]:
        self._sync()
        return self._rows

    @property
    def names(self) -> dict[str, tuple[str, str]]:
        self._sync()
        return self._names

    @property
    def dropped(self) -> int:
        self._sync()
        return self._dropped

    def means(self) -> dict[str, dict[str, float]]:
        return {
            key: {m: s.mean for m, s in cols.items() if s.mean is not None}
            for key, cols in self.rows.items()
        }  # type: ignore[misc]

    def by_command(self, metric: str) -> dict[str, float]:
        """The metric per command name: the busiest process of that name (a table keyed by
        name lets a signature say `ora_lgwr*`; summing same-named processes would invent one)."""
        out: dict[str, float] = {}
        for key, row in self.means().items():
            if metric in row:
                name = self.names[key][0]
                out[name] = max(out.get(name, float("-inf")), row[metric])
        return {k: r3(v) for k, v in out.items()}

    def ranked(
        self, busy: Callable[[dict[str, float]], float], name: str, hide: tuple[str, ...] = ()
    ) -> tuple[list[str], list[dict]]:
        """(keys busiest first by `busy` of their means, ties in table order; the first 30 as
        rows for details: the command under `name`, the pid, each mean but `hide` to 2
        decimals). pidstat ranks by CPU and I/O, prstat by CPU and microstate waits."""
        means = self.means()
        order = sorted(means, key=lambda k: -busy(means[k]))
        rows = [
            {
                name: self.names[k][0],
                "pid": self.names[k][1],
                **{m: round(v, 2) for m, v in means[k].items() if m not in hide},
            }
            for k in order[:30]
        ]
        return order, rows

    def top(self, metric: str) -> tuple[str, float] | None:
        """(`command (pid)`, value) of the process with the highest mean of `metric`."""
        best: tuple[str, float] | None = None
        for key, row in self.means().items():
            if metric in row and (best is None or row[metric] > best[1]):
                command, ident = self.names[key]
                best = (f"{command} ({ident})", row[metric])
        return best


def findings(facts: dict, notes: list[str] | None = None) -> list[str]:
    """Plain sentences for the renderers (CLI, web page, Slack), as mpstat and the syscall
    parsers give theirs: what a person would say first about an OS sampler's block. Read from
    the block's facts, so every parser of the five says it the same way."""
    f = facts
    out: list[str] = []

    def val(name: str) -> float:
        v = f.get(name)
        return float(v) if isinstance(v, int | float) else 0.0

    if val("os.since_boot"):
        out.append("one sample only, the average since boot: it describes the uptime")
    cpus = val("cpu.count")
    if val("runq.per_cpu_max") > 1 or (not cpus and val("runq.max") >= 8):
        on = f" on {number(cpus)} CPUs" if cpus else ""
        out.append(f"run queue up to {number(val('runq.max'))}{on}")
    if val("runq.ldavg_per_cpu_max") > 1:
        out.append(f"load average up to {number(val('runq.ldavg_1_max'))} on {number(cpus)} CPUs")
    if val("cpu.usr_pct") + val("cpu.sys_pct") >= 90 and not val("os.since_boot"):
        out.append(
            f"CPUs busy: user {number(val('cpu.usr_pct'))} %, system "
            f"{number(val('cpu.sys_pct'))} %, idle {number(val('cpu.idle_pct'))} % on average"
        )
    if val("cpu.max_wait_pct") >= 20:
        out.append(f"iowait up to {number(val('cpu.max_wait_pct'))} %")
    swap_out = max(val("swap.out_kbps_max"), val("swap.in_kbps_max"))
    if swap_out > 0:
        out.append(
            f"swapping: up to {number(val('swap.in_kbps_max'))} KiB/s in, "
            f"{number(val('swap.out_kbps_max'))} KiB/s out"
        )
    if max(val("swap.out_pages_per_s_max"), val("swap.in_pages_per_s_max")) > 0:
        out.append(
            f"swapping: up to {number(val('swap.in_pages_per_s_max'))} pages/s in, "
            f"{number(val('swap.out_pages_per_s_max'))} pages/s out"
        )
    if val("page.scan_rate_max") > 0:
        out.append(f"page scanner running: up to {number(val('page.scan_rate_max'))} pages/s")
    if val("sys.cs_per_s_max") >= 50000:
        out.append(f"context switches up to {number(val('sys.cs_per_s_max'))}/s")
    worst = f.get("io.worst_device")
    if isinstance(worst, str) and (
        val("io.worst_await_ms") >= 10 or val("io.worst_util_pct") >= 80
    ):
        parts = [f"await {number(val('io.worst_await_ms'))} ms"] if "io.worst_await_ms" in f else []
        if "io.worst_util_pct" in f:
            parts.append(f"{number(val('io.worst_util_pct'))} % util")
        queue = f.get("dev.queue")
        if isinstance(queue, dict) and worst in queue:
            parts.append(f"queue {number(queue[worst])}")
        out.append(f"slowest device {worst}: " + ", ".join(parts))
    if val("io.util_caveat"):
        out += [n for n in (notes or []) if n.startswith("%util near 100")][:1]
    for who, how, unit, floor in (
        ("proc.top_cpu", "proc.max_cpu_pct", "% CPU", 50.0),
        ("proc.top_io", "proc.max_io_kb_per_s", "KiB/s read + written", 1024.0),
        ("proc.top_lck", "proc.max_lck_pct", "% waiting on user locks (LCK)", 10.0),
        ("proc.top_lat", "proc.max_lat_pct", "% waiting for a CPU (LAT)", 5.0),
        ("proc.top_wait", "proc.max_wait_pct", "% waiting for a CPU (%wait)", 10.0),
    ):
        name = f.get(who)
        if isinstance(name, str) and val(how) >= floor:
            out.append(f"{name}: {number(val(how))} {unit}")
    if val("tcp.retrans_pct") >= 1:
        out.append(f"TCP retransmits {number(val('tcp.retrans_pct'))} % of segments sent")
    return out[:6]
