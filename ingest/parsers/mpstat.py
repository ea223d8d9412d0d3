"""mpstat: Solaris (`CPU minf mjf xcal intr ... usr sys wt idl [set]`) and Linux sysstat
(`%usr %nice %sys %iowait %irq %soft %steal %guest [%gnice] %idle`, `-P ALL`, `Average:`).

Copy-paste mangles Solaris headers (`CPU ..intr ithr ...` with columns lost), so Solaris columns
are read by name when the header and the rows agree, else from the right end, where
`usr sys wt idl` always are. Solaris prints a since-boot table first: with several intervals it
is dropped, as a person reading mpstat would. Memory is bounded: per-CPU running sums, the
interval being read, and at most MAX_INTERVALS interval summaries for display.
"""

from __future__ import annotations

import copy
import re
from operator import add as _add
from typing import Any, ClassVar

from ingest.base import Parser
from ingest.facts import number
from ingest.model import Format, Platform
from ingest.parsers import ostable
from ingest.parsers.ostable import SYSSTAT_BANNER as _BANNER
from ingest.parsers.ostable import clock_row, native_table

SOLARIS_COLUMNS = (
    "minf",
    "mjf",
    "xcal",
    "intr",
    "ithr",
    "csw",
    "icsw",
    "migr",
    "smtx",
    "srw",
    "syscl",
    "usr",
    "sys",
    "wt",
    "idl",
)
_SOLARIS_KNOWN = frozenset((*SOLARIS_COLUMNS, "set", "sze"))
# Solaris and Linux names -> the names used in facts and details.
_CANONICAL = {
    "wt": "wait",
    "idl": "idle",
    "%usr": "usr",
    "%user": "usr",
    "%nice": "nice",
    "%sys": "sys",
    "%system": "sys",
    "%iowait": "wait",
    "%irq": "irq",
    "%soft": "soft",
    "%steal": "steal",
    "%guest": "guest",
    "%gnice": "gnice",
    "%idle": "idle",
    "intr/s": "intr",
}
_PCT = ("usr", "sys", "wait", "idle")
# Linux sysstat's other %-columns, each kept per CPU and from the `all` row
_LINUX_PCT = ("nice", "irq", "soft", "steal", "guest", "gnice")
# The per-CPU columns details["cpus"] carries, under these names whatever the release called them
# (`%usr`, `usr`, `wt`): the catalogue's mpstat chart (ingest/data/facts.yaml) reads them as they are.
CPU_COLUMNS = ("usr", "sys", "wait", "idle", "intr", "smtx", "xcal", *_LINUX_PCT)
# `mpstat -I SCPU` columns (softirq kinds); any other `-I` table with `N/s` columns is per IRQ
_SOFTIRQS = frozenset(
    [
        "HI",
        "TIMER",
        "NET_TX",
        "NET_RX",
        "BLOCK",
        "BLOCK_IOPOLL",
        "IRQ_POLL",
        "TASKLET",
        "SCHED",
        "HRTIMER",
        "RCU",
    ]
)
MAX_IRQ_NAMES = 512  # distinct interrupt columns kept per table
# A CPU is a hot spot when irq + soft or steal takes at least this share of it
HOT_PCT = 30.0

MAX_CPUS = 4096
MAX_INTERVALS = 500

# at most 12 integer digits: real counters are far smaller, and sums of them stay finite
_NUMBER = re.compile(r"^-?\d{1,12}(?:[.,]\d{1,6})?$")
# A row as sysstat prints it (`12:00:01 AM   all  13.92 ...`): every line this matches is one
# ostable.clock_row says yes to (ASCII blanks and keys, so str.split cuts it where this does),
# so feed_run asks clock_row only about the others
_PLAIN_ROW = re.compile(
    r"\d\d:\d\d:\d\d +(?:[AP]M +)?[A-Za-z0-9]+ +[0-9.,-][0-9.,\- \t]{3,}"
).fullmatch
# token -> its value (a _NUMBER read by _num), or None when it is not a _NUMBER
_READ: dict[str, float | None] = {}
_READ_MAX = 65536  # distinct tokens remembered (sysstat's 0.00-100.00 are 10,001)


def _values(tokens: list[str]) -> list[float] | None:
    """The tokens as numbers, or None if one is not a _NUMBER. The same answer as checking
    each with _NUMBER and reading it with _num, from a memo of tokens already read."""
    get = _READ.get
    out = [get(t) for t in tokens]
    if None in out:
        if len(_READ) >= _READ_MAX:
            _READ.clear()
        for i, t in enumerate(tokens):
            if t not in _READ:
                _READ[t] = _num(t) if _NUMBER.match(t) else None
            v = _READ[t]
            if v is None:
                return None
            out[i] = v
    return out  # type: ignore[return-value]


_INT = re.compile(r"^\d+$")
_TIME = re.compile(r"^\d{1,2}:\d{2}:\d{2}$")
_STATE = re.compile(r"^\s*<<.*>>\s*$")
# What pastes put before every line: a `#` (a comment-quoted capture) or `host: ` (pdsh, clush,
# ansible); `Average:` is mpstat's own and a `12:00:01` clock is not a host name.
_PASTE_PREFIX = re.compile(r"^\s*(?:#+\s?|(?!Average:)[A-Za-z][\w.-]{0,63}:\s+)").match
_CLOCK = re.compile(r"\b\d{1,2}:\d{2}:\d{2}\b")
_YEAR = re.compile(r"\b(?:19|20)\d{2}\b")
# mpstat lines are short; anything longer is not one (and is not worth a regex)
MAX_LINE = 1024


def _solaris_date(line: str) -> bool:
    """`mpstat -T u|d` stamps: an epoch number, or a date with a clock and a year."""
    text = line.strip()
    if len(text) > 80:
        return False
    if text.isdigit():
        return 9 <= len(text) <= 11
    return bool(_CLOCK.search(text) and _YEAR.search(text))


def _num(token: str) -> float:
    return float(token.replace(",", "."))


def _clean(token: str) -> list[str]:
    """A Solaris header token as names: '..intr' -> ['intr'], 'icswmigr' -> ['icsw', 'migr']."""
    word = re.sub(r"[^a-z]", "", token.lower())
    if word in _SOLARIS_KNOWN:
        return [word]
    names: list[str] = []
    while word:
        for size in (5, 4, 3, 2):
            if word[:size] in _SOLARIS_KNOWN:
                names.append(word[:size])
                word = word[size:]
                break
        else:
            return ["?"]
    return names or ["?"]


def _solaris_header(line: str) -> list[str] | None:
    """Column names after CPU (per CPU) or SET (`mpstat -a`: per processor set, with `sze`)."""
    tokens = line.split()
    if len(tokens) < 5 or re.sub(r"[^A-Z]", "", tokens[0]) not in ("CPU", "SET"):
        return None
    names = [n for tok in tokens[1:] for n in _clean(tok)]
    known = set(names)
    if {"usr", "sys", "idl"} <= known and names.count("?") <= 2:
        return names
    return None


def _id_column(tokens: list[str]) -> int:
    """Where sysstat's id column is: CPU, or NODE (`mpstat -N`, per NUMA node); -1: none."""
    for name in ("CPU", "NODE"):
        if name in tokens:
            return tokens.index(name)
    return -1


def _intr_header(line: str) -> tuple[int, str, list[str]] | None:
    """(tokens before CPU, kind, column names) of a sysstat `mpstat -I` table: `intr/s` alone
    (SUM), softirq kinds (SCPU), or one `N/s` column per interrupt line (CPU)."""
    tokens = line.split()
    at = _id_column(tokens)
    if at < 0:
        return None
    names = tokens[at + 1 :]
    if not names or not all(n.endswith("/s") and len(n) > 2 for n in names):
        return None
    if "%idle" in names:
        return None
    bare = [n[:-2] for n in names]
    if bare == ["intr"]:
        return at, "sum", bare
    if all(n in _SOFTIRQS for n in bare):
        return at, "soft", bare
    return at, "irq", bare


def _linux_header(line: str) -> tuple[int, list[str]] | None:
    """(tokens before the CPU column, value column names) for a sysstat CPU table header."""
    tokens = line.split()
    at = _id_column(tokens)
    if at < 0:
        return None
    names = tokens[at + 1 :]
    if "%idle" not in names or not all(n in _CANONICAL for n in names):
        return None
    return at, [_CANONICAL[n] for n in names]


class _Interval:
    __slots__ = ("label", "rows", "all_row")

    def __init__(self, label: str) -> None:
        self.label = label
        self.rows: dict[str, dict[str, float]] = {}
        self.all_row: dict[str, float] | None = None

    def empty(self) -> bool:
        return not self.rows and self.all_row is None


class _Totals:
    """Running sums over the intervals that count."""

    def __init__(self) -> None:
        # cpu -> column -> sum; while a CPU's rows keep the columns of its first row, its sums
        # are (columns, [sums]) added up in one C loop per row (settle() makes them dicts)
        self.cpu_sums: dict[str, Any] = {}
        self.cpu_n: dict[str, int] = {}
        self.all_sums: dict[str, float] = {}
        self.all_n = 0
        self.intervals = 0
        self.summaries: list[dict] = []

    def add(self, interval: _Interval) -> None:
        self.intervals += 1
        cpu_sums, cpu_n = self.cpu_sums, self.cpu_n
        for cpu, row in interval.rows.items():
            sums = cpu_sums.get(cpu)
            if sums is None:  # 0.0 + v, as a sum that starts at 0.0 (-0.0 becomes 0.0)
                cpu_sums[cpu] = (tuple(row), [0.0 + v for v in row.values()])
            elif type(sums) is tuple and sums[0] == tuple(row):
                sums[1][:] = map(_add, sums[1], row.values())  # the same adds, in order
            else:
                if type(sums) is tuple:  # other columns (another header): a dict from now on
                    sums = cpu_sums[cpu] = dict(zip(*sums, strict=True))
                for key, value in row.items():
                    sums[key] = sums.get(key, 0.0) + value
            cpu_n[cpu] = cpu_n.get(cpu, 0) + 1
        if interval.all_row is not None:
            for key, value in interval.all_row.items():
                self.all_sums[key] = self.all_sums.get(key, 0.0) + value
            self.all_n += 1
        if len(self.summaries) < MAX_INTERVALS:
            self.summaries.append(_summary(interval))

    def settle(self) -> None:
        """Every CPU's sums as a dict of column -> sum (what facts read)."""
        for cpu, sums in self.cpu_sums.items():
            if type(sums) is tuple:
                self.cpu_sums[cpu] = dict(zip(*sums, strict=True))


def _mean(rows: list[dict[str, float]], key: str) -> float | None:
    values = [r[key] for r in rows if key in r]
    return sum(values) / len(values) if values else None


def _summary(interval: _Interval) -> dict:
    # the `all` row as printed, when there is one: the numbers people quote
    rows = [interval.all_row] if interval.all_row else list(interval.rows.values())
    out: dict = {"label": interval.label, "cpus": len(interval.rows)}
    for key in _PCT:
        value = _mean(rows, key)
        if value is not None:
            out[key] = round(value, 2)
    return out


class MpstatParser(Parser):
    format: ClassVar[Format] = "mpstat"

    def __init__(self) -> None:
        super().__init__()
        self.kind: str | None = None  # "solaris" | "linux"
        self._names: list[str] = []  # Solaris header names, or Linux value column names
        self._headers = 0
        self._current: _Interval | None = None
        self._first: _Interval | None = None  # Solaris since-boot table, held until a second
        self._dropped_first = False
        self._average = _Interval("Average")
        self._totals = _Totals()
        self._banner: dict | None = None
        self._pending_label = ""
        self._state_lines = 0
        self._mismatched_rows = 0
        self._strip: bool | None = None  # a `#` / `host: ` before every line (None: not known)
        self._sets = False  # Solaris `mpstat -a`: rows are processor sets
        self._nodes = False  # sysstat `mpstat -N`: rows are NUMA nodes
        self._table = "cpu"  # which sysstat table the rows belong to: cpu, or an -I kind
        self._intr_at = 0
        self._tail: list[str] = []  # the last CPU table header from its id column on
        # `mpstat -I` tables: kind -> cpu -> column -> [sum, samples]; Average rows apart
        self._irq: dict[str, dict[str, dict[str, list[float]]]] = {}
        self._irq_avg: dict[str, dict[str, dict[str, list[float]]]] = {}
        # while feed_run's rows go to the C row reader (table.c), it holds _totals' sums and
        # _current; _leave() hands them back before anything else reads or changes them
        self._core: Any = None

    # -- detection ------------------------------------------------------------------------------

    @classmethod
    def start_score(cls, line: str) -> int:
        score = cls._score(line)
        if score == 0 and (m := _PASTE_PREFIX(line)) is not None:
            return cls._score(line[m.end() :])
        return score

    @classmethod
    def _score(cls, line: str) -> int:
        if len(line) > MAX_LINE:
            return 0
        if _solaris_header(line) or _linux_header(line) or _intr_header(line):
            return 2
        if _BANNER.match(line):
            return 2
        tokens = line.split()
        # a full Solaris row without its header: usr+sys+wt+idl close to 100 (a vmstat row,
        # also 17 integers, ends in us sy id wa st and fails this)
        if (
            len(tokens) in (16, 17)
            and all(_INT.match(t) for t in tokens)
            and 97 <= sum(int(t) for t in tokens[-4:]) <= 103
        ):
            return 1
        return 0

    @classmethod
    def claims(cls, line: str) -> bool:
        """A sysstat row (`12:00:01 AM  3  57.17 ...`) continues the table: asking every other
        format about each of them was three quarters of the time on a long `mpstat -P ALL`."""
        return clock_row(line)

    # -- feeding --------------------------------------------------------------------------------

    def feed(self, line: str) -> bool:
        if self._core is not None and line.strip():
            self._leave()  # a blank line changes nothing: the C reader keeps the state
        if self._strip is None:  # the first line says whether every line has a prefix
            m = _PASTE_PREFIX(line)
            rest = line[m.end() :] if m is not None else ""
            # `Moyenne:    CPU ...` is a localised Average header, not a host before one
            raw_first = m is None or (rest.lstrip()[:3] == "CPU" and "#" not in m.group())
            for strip in (False, True) if raw_first else (True, False):
                if strip and m is None:
                    continue
                if self._feed(rest if strip else line):
                    self._strip = strip
                    return True
            return False
        if self._strip:
            m = _PASTE_PREFIX(line)
            if m is None:
                return False
            line = line[m.end() :]
        return self._feed(line)

    def _feed(self, line: str) -> bool:
        if not line.strip() or len(line) > MAX_LINE:
            return False
        if m := _BANNER.match(line):
            if self.kind == "solaris" or self._has_data():
                return False
            self.kind = "linux"
            self._banner = {k: v for k, v in m.groupdict().items() if v}
            return True
        if names := _solaris_header(line):
            if self.kind == "linux":
                return False
            sets = re.sub(r"[^A-Z]", "", line.split()[0]) == "SET"
            if self._headers and sets != self._sets:
                return False  # per-CPU and per-set tables are separate blocks
            self.kind = "solaris"
            self._sets = sets
            self._names = names
            self._start_interval(self._pending_label or f"interval {self._headers + 1}")
            self._pending_label = ""
            self._headers += 1
            return True
        if header := _linux_header(line):
            if self.kind == "solaris":
                return False
            nodes = "NODE" in line.split()
            if self._headers and nodes != self._nodes:
                return False  # per-CPU and per-node tables are separate blocks
            self._nodes = nodes
            self.kind = "linux"
            self._table = "cpu"
            self._names = header[1]
            self._tail = line.split()[header[0] :]
            self._headers += 1
            if line.split()[0] != "Average:":
                self._start_interval(" ".join(line.split()[: header[0]]))
            return True
        if intr := _intr_header(line):
            if self.kind == "solaris":
                return False
            self.kind = "linux"
            self._intr_at, self._table, self._names = intr
            self._headers += 1
            return True
        if self.kind == "linux":
            if self._table != "cpu":
                return self._irq_row(line)
            return self._linux_row(line)
        if self.kind == "solaris":
            if _STATE.match(line):
                self._state_lines += 1
                return True
            if _solaris_date(line):
                self._pending_label = line.strip()[:40]
                return True
            return self._solaris_row(line)
        tokens = line.split()
        if len(tokens) in (16, 17) and all(_INT.match(t) for t in tokens):
            self.kind = "solaris"
            self._names = list(SOLARIS_COLUMNS) + (["set"] if len(tokens) == 17 else [])
            return self._solaris_row(line)
        return False

    fast = True

    def feed_run(self, text: str, pos: int, endpos: int, plain: dict) -> tuple[int, int]:
        """Base.feed_run: the rows of a sysstat CPU table (the lines `claims` says are ours)
        while one is open, each read by `_linux_tokens` as `feed` would read it, and the next
        interval's header (`_same_header`: a line this parser scores 2); a blank line, another
        header, an Average row, a pasted prefix or anything else stops the run and takes the
        ordinary path. Once the first MAX_INTERVALS interval summaries are made, the C row
        reader (`_enter`) reads the common rows and headers, and the lines it stops at are read
        here as before."""
        if self.kind != "linux" or self._table != "cpu" or self._strip is not False:
            return pos, 0
        taken = 0
        row = self._linux_tokens
        find = text.find
        while pos < endpos:
            core = self._core if self._core is not None else self._enter()
            if core is not None:
                pos, n, _, _ = core.run(text, pos, endpos)
                taken += n
                if pos >= endpos:
                    break
            end = find("\n", pos, endpos)
            if end < 0:
                end = endpos
            line = text[pos:end].rstrip("\r")
            if len(line) > MAX_LINE:
                break
            if _PLAIN_ROW(line) or clock_row(line):
                if self._core is not None:
                    self._leave()
                if not row(line.split()):
                    break
            elif self._header_tokens(line) is None:
                break
            else:
                if self._core is not None:
                    self._leave()
                self._same_header(line)
            taken += 1
            pos = end + 1
        return pos, taken

    def _enter(self) -> Any:
        """The C row reader with this parser's running sums and open interval handed over, or
        None: the core is off, the first MAX_INTERVALS summaries (made per interval, in Python)
        are not all made yet, or the state has a shape the reader does not keep (NUMA nodes,
        CPUs whose sums have other columns, repeated column names)."""
        t = self._totals
        names = tuple(self._names)
        if (
            not ostable.NATIVE
            or self._nodes
            or not self._tail
            or len(t.summaries) < MAX_INTERVALS
            or len(set(names)) != len(names)
            or len(t.cpu_sums) >= MAX_CPUS
        ):
            return None
        if any(type(v) is not tuple or v[0] != names for v in t.cpu_sums.values()):
            return None
        if t.all_n and not all(n in t.all_sums for n in names):
            return None
        cur = self._current
        if cur is not None:
            rows = [*cur.rows.values(), *([cur.all_row] if cur.all_row is not None else [])]
            if len(cur.label) > 40 or any(tuple(r) != names for r in rows):
                return None
        core = native_table(
            list(names),
            keyed=True,
            key_int=True,
            comma=1,
            grouped=True,
            bounds={n: (0.0, 100.0) for n in names if n in _PCT},
            max_keys=2 * MAX_CPUS + 1,
            max_group=MAX_CPUS,
            check_clock=False,
            max_line=MAX_LINE,
            tail=self._tail,
        )
        if core is None:
            return None
        try:  # a label or key the core cannot hold (too long in UTF-8, a lone surrogate)
            for cpu, sums in t.cpu_sums.items():
                core.load(cpu, t.cpu_n[cpu], sums[1])
            if t.all_n:
                core.load("all", t.all_n, [t.all_sums[n] for n in names])
            if cur is not None:
                core.open(cur.label)
                for cpu, r in cur.rows.items():
                    core.put(cpu, list(r.values()))
                if cur.all_row is not None:
                    core.put("all", list(cur.all_row.values()))
        except (ValueError, UnicodeError):
            return None  # the Python reader goes on
        self._core = core
        return core

    def _leave(self) -> None:
        """Take the state back from the C row reader: the sums (as _Totals.add leaves them),
        the intervals and headers it read, and the interval still open."""
        core, self._core = self._core, None
        keys, group, intervals, headers = core.export()
        names = tuple(self._names)
        t = self._totals
        for cpu, cols in keys:
            n = cols[0][1][0] if cols else 0
            if not n:
                continue
            sums = [st[1] for _, st in cols]
            if cpu == "all":
                for name, v in zip(names, sums, strict=True):
                    t.all_sums[name] = v
                t.all_n = n
            else:
                t.cpu_sums[cpu] = (names, sums)
                t.cpu_n[cpu] = n
        t.intervals += intervals
        self._headers += headers
        if group is None:
            self._current = None
            return
        label, rows = group
        cur = self._current = _Interval(label)
        for cpu, values in rows:
            row = dict(zip(names, values, strict=True))
            if cpu == "all":
                cur.all_row = row
            else:
                cur.rows[cpu] = row

    def _header_tokens(self, line: str) -> tuple[int, list[str]] | None:
        """(tokens before the column names, the tokens) when the line is the next interval's
        header (see _same_header), else None; changes nothing."""
        tokens = line.split()
        if not tokens or not _TIME.match(tokens[0]):
            return None
        at = 2 if len(tokens) > 1 and tokens[1] in ("AM", "PM") else 1
        if tokens[at:] != self._tail or not self._tail:
            return None
        return at, tokens

    def _same_header(self, line: str) -> bool:
        """The next interval's header (`12:00:02 AM  CPU  %usr ...`, this parser scores it 2):
        the same columns as the table's header behind a new clock. Read as feed reads a CPU
        table header, without asking the header regexes again; anything else is left to feed."""
        got = self._header_tokens(line)
        if got is None:
            return False
        at, tokens = got
        self._headers += 1
        self._start_interval(" ".join(tokens[:at]))
        return True

    def _has_data(self) -> bool:
        return (
            self._totals.intervals > 0
            or self._first is not None
            or (self._current is not None and not self._current.empty())
        )

    def _start_interval(self, label: str) -> None:
        self._commit()
        self._current = _Interval(label)

    def _commit(self) -> None:
        cur = self._current
        self._current = None
        if cur is None or cur.empty():
            return
        if self.kind == "solaris":
            if self._first is None and not self._dropped_first:
                self._first = cur  # since boot: counts only if no other interval follows
                return
            if self._first is not None:
                self._first = None
                self._dropped_first = True
        self._totals.add(cur)

    def _store(self, interval: _Interval, cpu: str, row: dict[str, float]) -> None:
        if cpu == "all":
            interval.all_row = row
        elif cpu in interval.rows or len(interval.rows) < MAX_CPUS:
            interval.rows[cpu] = row

    def _solaris_row(self, line: str) -> bool:
        tokens = line.split()
        if not tokens or not _INT.match(tokens[0]):
            return False
        values = tokens[1:]
        if not all(_NUMBER.match(v) for v in values) or not 4 <= len(values) <= 16:
            self.malformed += 1
            return True
        names = self._names
        if len(values) != len(names) or "?" in names:
            self._mismatched_rows += 1
            canon = list(SOLARIS_COLUMNS) + (["set"] if names and names[-1] == "set" else [])
            if len(values) > len(canon):
                self.malformed += 1  # more values than mpstat has columns
                return True
            names = canon[-len(values) :]
        row = {_CANONICAL.get(n, n): _num(v) for n, v in zip(names, values, strict=True)}
        row.pop("set", None)
        if any(not 0 <= row.get(k, 0) <= 100 for k in _PCT):
            self.malformed += 1
            return True
        cpu = f"set {tokens[0]}" if self._sets else tokens[0]
        if self._current is None or cpu in self._current.rows:
            self._start_interval(self._pending_label or f"interval {self._totals.intervals + 2}")
            self._pending_label = ""
        assert self._current is not None
        self._store(self._current, cpu, row)
        return True

    def _linux_row(self, line: str) -> bool:
        return self._linux_tokens(line.split())

    def _linux_tokens(self, tokens: list[str]) -> bool:
        # the hot loop of a long `mpstat -P ALL` (feed_run calls it for every row): values
        # repeat (`0.00`, a busy CPU's `100.00`), so each token is read once (_values)
        n = len(self._names)
        if len(tokens) < 2:
            return False
        first = tokens[0]
        timed = _TIME.match(first) is not None
        if not timed and not (first.endswith(":") and not _TIME.match(first.rstrip(":"))):
            return False
        average = not timed
        if len(tokens) < n + 2:
            self.malformed += 1
            return True
        numbers = _values(tokens[-n:])
        if numbers is None:
            self.malformed += 1
            return True
        cpu = tokens[-n - 1]
        if cpu != "all" and not _INT.match(cpu):
            self.malformed += 1
            return True
        row = dict(zip(self._names, numbers, strict=True))
        for k in _PCT:
            v = row.get(k)
            if v is not None and not 0 <= v <= 100:
                self.malformed += 1
                return True
        if self._nodes and cpu != "all":
            cpu = f"node {cpu}"
        if average:
            self._store(self._average, cpu, row)
            return True
        label = " ".join(tokens[: -n - 1])
        cur = self._current
        if cur is None or cur.label != label or cpu in cur.rows or (cpu == "all" and cur.all_row):
            self._start_interval(label)
        assert self._current is not None
        self._store(self._current, cpu, row)
        return True

    def _irq_row(self, line: str) -> bool:
        """A row of an `mpstat -I` table: rates per CPU (decimal commas under some locales)."""
        tokens = line.split()
        n = len(self._names)
        if len(tokens) < 2:
            return False
        average = tokens[0] == "Average:"
        if not (average or _TIME.match(tokens[0])):
            return False
        if len(tokens) < n + 2 or not all(_NUMBER.match(v) for v in tokens[-n:]):
            self.malformed += 1
            return True
        cpu = tokens[-n - 1]
        if cpu != "all" and not _INT.match(cpu):
            self.malformed += 1
            return True
        tables = self._irq_avg if average else self._irq
        table = tables.setdefault(self._table, {})
        row = table.get(cpu)
        if row is None:
            if len(table) >= MAX_CPUS:
                return True
            row = table[cpu] = {}
        for name, v in zip(self._names, tokens[-n:], strict=True):
            cell = row.get(name)
            if cell is None:
                if len(row) >= MAX_IRQ_NAMES:
                    continue
                cell = row[name] = [0.0, 0]
            cell[0] += _num(v)
            cell[1] += 1
        return True

    # -- results --------------------------------------------------------------------------------

    def _final_totals(self) -> tuple[_Totals, list[str]]:
        """Totals including the interval still open, without changing the parser."""
        totals = copy.deepcopy(self._totals)
        notes: list[str] = []
        cur = self._current if self._current is not None and not self._current.empty() else None
        pending: list[_Interval] = []
        if self.kind == "solaris":
            if self._dropped_first or (self._first is not None and cur is not None):
                notes.append("first interval (since boot) dropped")
                pending = [cur] if cur is not None else []
            elif (only := self._first or cur) is not None:
                pending = [only]
                notes.append("one interval: kept as is (if it is mpstat's first, it is since boot)")
        elif cur is not None:
            pending = [cur]
        for interval in pending:
            totals.add(interval)
        if totals.intervals == 0 and not self._average.empty():
            totals.add(self._average)
            notes.append("only the Average rows were present")
        totals.settle()
        if self._mismatched_rows:
            notes.append(
                f"{self._mismatched_rows} rows did not match the header: columns read from the "
                "right end (usr sys wt idl last)"
            )
        if self._state_lines:
            notes.append(f"{self._state_lines} processor state-change lines")
        return totals, notes

    def facts(self) -> tuple[dict, dict, list[str], Platform | None]:
        if self._core is not None:
            self._leave()
        totals, notes = self._final_totals()
        per_cpu = {
            cpu: {k: v / totals.cpu_n[cpu] for k, v in sums.items()}
            for cpu, sums in totals.cpu_sums.items()
        }
        facts: dict = {}
        details: dict = {"notes": notes}
        if self._banner:
            details["banner"] = self._banner
        count = len(per_cpu) or (int(self._banner["cpus"]) if self._banner else 0)
        if self._nodes:  # the rows are NUMA nodes: the CPU count is the banner's, if any
            count = int(self._banner["cpus"]) if self._banner else 0
            notes.append("rows are NUMA nodes (mpstat -N), keyed 'node N'")
        if self._sets and per_cpu:
            facts["cpu.sets"] = float(len(per_cpu))
            count = int(sum(r.get("sze", 0.0) for r in per_cpu.values())) or count
        if count:
            facts["cpu.count"] = float(count)
        if totals.intervals:
            facts["cpu.intervals"] = float(totals.intervals)

        # The `all` row is what people quote (and mpstat weighs it by each CPU's ticks): its
        # mean over the intervals; averages of the per-CPU rows only when there is none.
        def from_all(key: str) -> float | None:
            if key not in totals.all_sums or not totals.all_n:
                return None
            return totals.all_sums[key] / totals.all_n

        def weight(c: str) -> float:
            """A processor set's rows are averages over its CPUs: weigh them by its size."""
            if not self._sets:
                return 1.0
            return max(totals.cpu_sums[c].get("sze", 0.0) / totals.cpu_n[c], 0.0)

        def from_cpus(key: str) -> float | None:
            have = [c for c in totals.cpu_sums if key in totals.cpu_sums[c] and weight(c) > 0]
            if not have:
                return None
            return sum(totals.cpu_sums[c][key] * weight(c) for c in have) / sum(
                totals.cpu_n[c] * weight(c) for c in have
            )

        samples = sum(totals.cpu_n.values()) if per_cpu else totals.all_n

        def overall(key: str) -> float | None:
            value = from_all(key)
            return value if value is not None else from_cpus(key)

        for key in _PCT:
            value = overall(key)
            if value is not None:
                facts[f"cpu.{key}_pct"] = round(value, 3)
        if (steal := overall("steal")) is not None:
            facts["cpu.steal_pct"] = round(steal, 3)
        irq, soft = overall("irq"), overall("soft")
        if irq is not None or soft is not None:
            facts["cpu.irq_pct"] = round((irq or 0.0) + (soft or 0.0), 3)
        for key, name in (("soft", "softirq"), ("irq", "hardirq"), ("nice", "nice")):
            if (value := overall(key)) is not None:
                facts[f"cpu.{name}_pct"] = round(value, 3)
        if (guest := overall("guest")) is not None:
            facts["cpu.guest_pct"] = round(guest + (overall("gnice") or 0.0), 3)
        if "cpu.sys_pct" in facts and "cpu.usr_pct" in facts:
            facts["cpu.sys_usr_ratio"] = round(
                facts["cpu.sys_pct"] / max(facts["cpu.usr_pct"], 1), 3
            )
        if per_cpu:
            self._per_cpu_facts(per_cpu, facts, details)
        self._irq_facts(facts, details, notes)
        if self.kind == "linux" and totals.intervals == 1 and self._average.empty():
            notes.append(
                "one report: if mpstat ran without an interval, these are averages since boot, "
                "not what the CPUs do now"
            )
        details["findings"] = _findings(details)
        details["samples"] = samples
        details["intervals"] = totals.summaries
        if not self._average.empty():
            details["average"] = _summary(self._average)
        platform: Platform | None = "solaris" if self.kind == "solaris" else None
        if self.kind == "linux":
            platform = "linux"
        identifiers = ["mpstat"] + (["sys"] if facts.get("cpu.sys_pct", 0) > 50 else [])
        if facts.get("cpu.max_irq_pct", 0) >= HOT_PCT:
            identifiers.append("softirq")
        if facts.get("cpu.max_steal_pct", 0) >= HOT_PCT:
            identifiers.append("steal")
        return facts, details, identifiers, platform

    def _irq_facts(self, facts: dict, details: dict, notes: list[str]) -> None:
        """Facts from `mpstat -I` tables (interval rows; the Average rows when alone)."""
        for kind in ("sum", "soft", "irq"):
            table = self._irq.get(kind) or self._irq_avg.get(kind)
            if not table:
                continue
            means = {
                cpu: {n: c[0] / c[1] for n, c in row.items() if c[1]} for cpu, row in table.items()
            }
            cpus = {c: r for c, r in means.items() if c != "all"}
            if kind == "sum":
                intr = {c: r["intr"] for c, r in cpus.items() if "intr" in r}
                if intr:
                    facts["cpu.intr"] = {c: round(v, 3) for c, v in intr.items()}
                    total = sum(intr.values())
                    facts["cpu.intr_cpu_sum_per_s"] = round(total, 3)
                    if total > 0:
                        top = max(intr.values())
                        facts["cpu.intr_top_share_pct"] = round(100.0 * top / total, 3)
                all_row = means.get("all", {}).get("intr")
                if all_row is not None:
                    facts["cpu.intr_per_s"] = round(all_row, 3)
                    if intr and all_row < 0.5 * sum(intr.values()):
                        notes.append(
                            f"the all row ({all_row:,.0f} intr/s) is far below the sum of the "
                            f"CPU rows ({sum(intr.values()):,.0f}): a known sysstat overflow in "
                            "that sum; read the per-CPU rows"
                        )
                elif intr:
                    facts["cpu.intr_per_s"] = round(sum(intr.values()), 3)
                details["intr_per_cpu"] = {c: round(v, 2) for c, v in sorted(intr.items())}
                continue
            # per softirq kind / per interrupt line: summed over the CPUs (the all row if alone)
            by_name: dict[str, float] = {}
            for row in (cpus or {"all": means.get("all", {})}).values():
                for name, v in row.items():
                    by_name[name] = by_name.get(name, 0.0) + v
            top = dict(sorted(by_name.items(), key=lambda kv: -kv[1])[:50])
            fact = "cpu.softirq_per_s" if kind == "soft" else "cpu.irq_per_s"
            if top:
                facts[fact] = {n: round(v, 3) for n, v in top.items()}
            hot = []
            for name, total in top.items():
                if total <= 0 or len(cpus) < 2:
                    continue
                cpu = max(cpus, key=lambda c: cpus[c].get(name, 0.0))
                share = 100.0 * cpus[cpu].get(name, 0.0) / total
                if share >= 50 and share * len(cpus) >= 200:
                    hot.append({"name": name, "cpu": cpu, "share_pct": round(share, 1)})
            details["softirq_hot" if kind == "soft" else "irq_hot"] = hot[:20]

    @staticmethod
    def _per_cpu_facts(per_cpu: dict[str, dict[str, float]], facts: dict, details: dict) -> None:
        sys_by_cpu = {c: r["sys"] for c, r in per_cpu.items() if "sys" in r}
        if sys_by_cpu:
            values = list(sys_by_cpu.values())
            facts["cpu.max_sys_pct"] = round(max(values), 3)
            facts["cpu.sys_skew"] = round(max(values) - min(values), 3)
            facts["cpu.share_sys_over_50_pct"] = round(
                100.0 * sum(v > 50 for v in values) / len(values), 3
            )
            facts["cpu.share_sys_over_80_pct"] = round(
                100.0 * sum(v > 80 for v in values) / len(values), 3
            )
            facts["cpu.sys"] = {c: round(v, 3) for c, v in sys_by_cpu.items()}
        # every other column per CPU, and the hottest CPU for each
        for key, name in (
            ("usr", "usr"),
            ("wait", "wait"),
            ("idle", "idle"),
            ("soft", "softirq"),
            ("irq", "hardirq"),
            ("steal", "steal"),
            ("syscl", "syscl"),
        ):
            by_cpu = {c: r[key] for c, r in per_cpu.items() if key in r}
            if not by_cpu:
                continue
            facts[f"cpu.{name}"] = {c: round(v, 3) for c, v in by_cpu.items()}
            if key == "idle":
                facts["cpu.min_idle_pct"] = round(min(by_cpu.values()), 3)
            elif key != "syscl":
                facts[f"cpu.max_{name}_pct"] = round(max(by_cpu.values()), 3)
        both = {
            c: r.get("irq", 0.0) + r.get("soft", 0.0)
            for c, r in per_cpu.items()
            if "irq" in r or "soft" in r
        }
        if both:
            facts["cpu.max_irq_pct"] = round(max(both.values()), 3)
            facts["cpu.irq_hot_cpus"] = float(sum(v >= HOT_PCT for v in both.values()))
        steal = [r["steal"] for r in per_cpu.values() if "steal" in r]
        if steal:
            facts["cpu.steal_hot_cpus"] = float(sum(v >= HOT_PCT for v in steal))
        intr = {c: r["intr"] for c, r in per_cpu.items() if "intr" in r}
        if intr:
            facts["cpu.intr"] = {c: round(v, 3) for c, v in intr.items()}
            total = sum(intr.values())
            if total > 0:
                facts["cpu.intr_top_share_pct"] = round(100.0 * max(intr.values()) / total, 3)
        for key in ("smtx", "xcal", "migr"):
            values = [r[key] for r in per_cpu.values() if key in r]
            if values:
                facts[f"cpu.max_{key}"] = round(max(values), 3)
        details["cpus"] = [
            {"id": c, **{k: round(per_cpu[c][k], 2) for k in CPU_COLUMNS if k in per_cpu[c]}}
            for c in sorted(per_cpu, key=lambda c: (len(c), c))
        ]
        details["hot_cpus"] = _hot(per_cpu)


def _findings(details: dict) -> list[str]:
    """Plain sentences for the renderers: the CPUs interrupts or steal take over."""
    out = []
    for h in details.get("hot_cpus", []):
        if h["metric"] in ("irq+soft", "steal"):
            out.append(
                f"CPU {h['cpu']}: {h['metric']} {number(h['value'])} % "
                f"(the other CPUs' median {number(h['others_median'])} %)"
            )
    for key in ("softirq_hot", "irq_hot"):
        for h in details.get(key, [])[:2]:
            out.append(
                f"CPU {h['cpu']} takes {number(h['share_pct'])} % of the {h['name']} interrupts"
            )
    return out[:6]


def _hot(per_cpu: dict[str, dict[str, float]]) -> list[dict]:
    """CPUs carrying far more interrupts, mutex spins or cross-calls than the others, and CPUs
    that irq + softirq or steal take over (a NIC's queue pinned to one CPU, a noisy host)."""
    hot = []
    for key in ("intr", "smtx", "xcal"):
        values = {c: r[key] for c, r in per_cpu.items() if key in r}
        if len(values) < 2:
            continue
        cpu = max(values, key=lambda c: values[c])
        others = sorted(v for c, v in values.items() if c != cpu)
        median = others[len(others) // 2]
        total = sum(values.values())
        if values[cpu] > 0 and values[cpu] >= 2 * max(median, 1):
            hot.append(
                {
                    "cpu": cpu,
                    "metric": key,
                    "value": values[cpu],
                    "share_pct": round(100.0 * values[cpu] / total, 1),
                    "others_median": median,
                }
            )
    for metric, keys in (("irq+soft", ("irq", "soft")), ("steal", ("steal",))):
        values = {
            c: sum(r.get(k, 0.0) for k in keys)
            for c, r in per_cpu.items()
            if any(k in r for k in keys)
        }
        for cpu, value in sorted(values.items(), key=lambda kv: -kv[1])[:8]:
            if value < HOT_PCT:
                break
            others = sorted(v for c, v in values.items() if c != cpu) or [0.0]
            hot.append(
                {
                    "cpu": cpu,
                    "metric": metric,
                    "value": round(value, 2),
                    "others_median": round(others[len(others) // 2], 2),
                }
            )
    return hot
