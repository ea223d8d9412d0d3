"""Wait-event tables -> event.*, waits.*, enqueue.* and stat.value facts.

Covers AWR "Top 10 Foreground Events by Total Wait Time" (12.1 `Wait Avg(ms)` and 12.2+ `Avg
Wait` with unit suffixes: 3.23ms, 268.69us, 52.86 s, 21.1K), AWR/Statspack foreground and
background wait event tables, Statspack "Top 5 Timed Events", session event snapshots in
centiseconds (`Event Waits Time_outs Csec Avg Csec Max Csec`) or seconds, v$session_event
query output (TIME_WAITED in centiseconds), enqueue activity and `name value` statistics.

Columns are read by position, not by counting tokens: AWR leaves cells blank (%Time-outs, the
waits of DB CPU), so each number goes to the column whose right edge is nearest its own (numbers
are right-aligned). Columns come from the dashed ruler under a header and the header words above
it; with no ruler, from the header's word groups. The header words also give units.

"Top N" tables summarise the full event tables: when a block holds both, facts come from the
full tables only, so an event is not counted twice. Several full tables (snapshots of
consecutive intervals) add up. DB CPU / CPU time rows are not waits: they appear only in
event.pct_of_db_time and in details. waits.total_s, event.pct_of_waited and waits.top_event cover
every event in the table, idle ones included, as the table reads.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import ClassVar, NamedTuple

from pydantic import BaseModel, Field

from ingest.base import Parser
from ingest.model import Format, Platform

MAX_KEYS = 5000  # distinct events / enqueues / statistics kept per kind
ALIGN_SLACK = 4  # characters a number may stray from its column edge (seed 003 spills by 2)
MAX_COLUMNS = 40
MAX_VALUE = 1e18  # larger than any Oracle counter; bigger "numbers" are noise, and sums stay finite  # a "ruler" with more dash groups is not a table header
MAX_TABLES = 50  # tables described in details
TOP_ROWS = 100  # rows listed in details per kind
CPU_ROWS = frozenset({"DB CPU", "CPU time", "CPU Time", "CPU"})
# AWR's full event tables cut names at the column width ('SQL*Net message from clien'); a cut
# name is restored from the Top-N table of the same block or from these common long names.
LONG_EVENT_NAMES = (
    "SQL*Net message from client",
    "SQL*Net more data from client",
    "SQL*Net more data to client",
    "SQL*Net message from dblink",
    "SQL*Net break/reset to client",
    "SQL*Net vector message from client",
    "control file sequential read",
    "control file parallel write",
    "enq: TX - row lock contention",
    "enq: TX - allocate ITL entry",
    "enq: KO - fast object checkpoint",
    "enq: RO - fast object reuse",
    "latch: cache buffers chains",
    "latch: cache buffers lru chain",
    "log file switch (checkpoint incomplete)",
    "log file switch (archiving needed)",
    "log file switch (private strand flush incomplete)",
    "PX Deq: Slave Session Stats",
    "cell single block physical read",
    "cell multiblock physical read",
    "ASM file metadata operation",
    "gc current block congested",
    "gc cr multi block request",
)

RE_MULTI_RULER = re.compile(r"^\s*-{2,}(?:\s+-{2,})+\s*$")
RE_SINGLE_RULER = re.compile(r"^\s*[-=]{3,}\s*$")
RE_TILDES = re.compile(r"~{3,}")
RE_NOTE = re.compile(r"^\s*->")
RE_INTERVAL = re.compile(
    r"^\s*Interval:-\s*([\d.,]+)\s*(seconds?|secs?|s|minutes?|mins?)?\s*$", re.I
)
RE_TOP_TITLE = re.compile(
    r"^\s*Top\s+(?:\d+\s+)?(?:Timed|Foreground)\s+(?:Wait\s+)?Events"
    r"(?:\s+by\s+(?:Total\s+)?Wait\s+Time)?(?:\s+DB/Inst:.*)?"
)
RE_TITLE = re.compile(
    r"^\s*(?:(?:Foreground|Background)\s+Wait\s+Events\b.*|Wait\s+Events(?:\s+DB/Inst:.*)?"
    r"|Enqueue\s+Activity\b.*|Instance\s+Activity\s+Stat.*"
    r"|(?:System|Session)\s+(?:enqueues|events|stats|statistics|waits|wait\s+events))\s*$",
    re.IGNORECASE,
)
RE_START_HEADERS = re.compile(
    r"^\s*(?:Event\s+Waits\s+(?:Time_?outs|Timeouts|-?outs|Time\b|%Time)"
    r"|Type\s+Requests\s+Waits\s+Success"
    r"|EVENT\s+TOTAL_WAITS\b)",
    re.I,
)
RE_NUMBER = re.compile(
    r"^[+-]?(?:\d{1,3}(?:,\d{3})+|\d+)?(?:\.\d+)?(?:[KMGT](?![a-z]))?(?:ns|us|ms|s)?%?$"
)
RE_HAS_DIGIT = re.compile(r"\d")
_TITLE_INITIALS = frozenset("EeTtFfBbWwIiSs")  # first letters of the lines scored 2
RE_ROW_HINT = re.compile(r"[^\s\d]\s{2,}[-.\d]")  # 'a name  1,234': a word, 2+ spaces, a number
RE_TOKEN = re.compile(r"\S+")
RE_ENQ_NAME = re.compile(r"^\s*([A-Z0-9]{2})-\S")
RE_WORDS = re.compile(r"[a-z_]+")
RE_NAME_TAIL = re.compile(r"(?:\s+(?:-|N/A))+\s*$")  # empty cells between a name and its numbers

_SCALE = {"K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12}
_UNIT_S = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}
_HEADER_VOCAB = frozenset(
    [
        "event",
        "events",
        "waits",
        "wait",
        "waited",
        "time",
        "times",
        "timeouts",
        "time_outs",
        "outs",
        "total",
        "avg",
        "average",
        "max",
        "maximum",
        "csec",
        "cs",
        "sec",
        "secs",
        "seconds",
        "s",
        "ms",
        "us",
        "class",
        "db",
        "call",
        "ela",
        "name",
        "value",
        "statistic",
        "statistics",
        "type",
        "requests",
        "success",
        "succ",
        "gets",
        "failed",
        "reason",
        "m",
        "per",
        "second",
        "trans",
        "txn",
        "exec",
        "total_waits",
        "total_timeouts",
        "time_waited",
        "time_waited_micro",
        "average_wait",
        "max_wait",
        "wait_class",
        "event_name",
        "wt",
        "av",
        "bg",
        "fg",
        "of",
        "pct",
        "enqueue",
        "request",
    ]
)
_HEADER_ANCHORS = frozenset(
    [
        "event",
        "waits",
        "wait",
        "type",
        "name",
        "statistic",
        "value",
        "requests",
        "time",
        "total",
        "avg",
        "total_waits",
    ]
)


def parse_number(token: str) -> tuple[float, float | None] | None:
    """'1,647,276' -> (1647276, None); '3.23ms' -> (3.23, 0.001); '21.1K' -> (21100, None).

    The second item is the unit in seconds when the token carries one. None: not a number."""
    if not RE_HAS_DIGIT.search(token) or not RE_NUMBER.match(token):
        return None
    t = token.rstrip("%")
    unit = None
    for suffix in ("ns", "us", "ms", "s"):
        if t.endswith(suffix):
            unit = _UNIT_S[suffix]
            t = t[: -len(suffix)]
            break
    scale = 1.0
    if t and t[-1] in _SCALE:
        scale = _SCALE[t[-1]]
        t = t[:-1]
    try:
        value = float(t.replace(",", "")) * scale
    except ValueError:
        return None
    if not math.isfinite(value) or abs(value) > MAX_VALUE:
        return None
    return value, unit


@dataclass
class _Column:
    label: str
    start: int
    end: int
    kind: str = "ignore"
    unit: float | None = None  # seconds per printed unit, when the header says


@dataclass
class _Table:
    kind: str  # events | enqueues | stats | ignore
    columns: list[_Column]
    title: str = ""
    top: bool = False
    named_rows: bool = True  # False: names sit on their own line above the numbers
    rows: int = 0
    assumed: bool = False
    name_width: int = 0  # width of the name column under a ruler (0: unknown)


@dataclass
class _EventAcc:
    count: float | None = None
    waited_s: float | None = None
    avg_weighted: float = 0.0  # sum of printed avg_ms * count, to re-average over tables
    avg_weight: float = 0.0
    avg_ms: float | None = None
    max_ms: float | None = None
    timeouts: float | None = None
    pct_db: float | None = None
    wait_class: str | None = None

    def add(self, row: dict[str, float | str]) -> None:
        def plus(old: float | None, key: str) -> float | None:
            v = row.get(key)
            if not isinstance(v, float):
                return old
            return v if old is None else old + v

        self.count = plus(self.count, "count")
        self.waited_s = plus(self.waited_s, "time_s")
        self.timeouts = plus(self.timeouts, "timeouts")
        avg, cnt = row.get("avg_ms"), row.get("count")
        if isinstance(avg, float):
            self.avg_ms = avg
            if isinstance(cnt, float) and cnt > 0:
                self.avg_weighted += avg * cnt
                self.avg_weight += cnt
        mx = row.get("max_ms")
        if isinstance(mx, float):
            self.max_ms = mx if self.max_ms is None else max(self.max_ms, mx)
        pct = row.get("pct_db")
        if isinstance(pct, float):
            self.pct_db = pct
        cls = row.get("class")
        if isinstance(cls, str) and cls:
            self.wait_class = cls

    def average_ms(self) -> float | None:
        if self.avg_weight > 0:
            return self.avg_weighted / self.avg_weight
        if self.avg_ms is not None:
            return self.avg_ms
        if self.count and self.waited_s is not None:
            return 1000.0 * self.waited_s / self.count
        return None


class EventRow(BaseModel):
    event: str
    count: float | None = None
    waited_s: float | None = None
    avg_ms: float | None = None
    max_ms: float | None = None
    timeouts: float | None = None
    pct_of_waited: float | None = None
    pct_of_db_time: float | None = None
    wait_class: str | None = None


class TableInfo(BaseModel):
    title: str = ""
    kind: str
    columns: list[str] = Field(default_factory=list)
    rows: int = 0
    top_summary: bool = False
    assumed_columns: bool = False


def _unit_from_label(label: str) -> float | None:
    low = label.lower()
    if "micro" in low or "(us)" in low or "usec" in low:
        return 1e-6
    if (
        "csec" in low
        or "centi" in low
        or low.replace(" ", "")
        in (
            "time_waited",
            "average_wait",
            "max_wait",
        )
    ):
        return 0.01
    if "(ms)" in low or re.search(r"\bms\b|msec", low):
        return 1e-3
    if re.search(r"\(s\)|\(sec\)|\bsecs?\b|seconds", low):
        return 1.0
    return None


def classify(label: str) -> tuple[str, float | None]:
    """A column's meaning and unit from its header words ('Avg Csec' -> avg in centiseconds)."""
    low = " ".join(label.lower().split())
    unit = _unit_from_label(low)
    if not low:
        return "ignore", None
    if "txn" in low or "per second" in low or "per trans" in low or "per exec" in low:
        return "ignore", None
    if "/s" in low.replace("m/s", ""):
        return "ignore", None
    if "class" in low:
        return "class", None
    if "reason" in low:
        return "reason", None
    if "outs" in low or "timeout" in low:
        return ("ignore", None) if "%" in low else ("timeouts", None)
    if "%" in low or "pct" in low:
        if "db" in low or "total" in low or "call" in low or "ela" in low:
            return "pct_db", None
        return "ignore", None
    if re.search(r"\bavg|average|\bav\b", low):
        return "avg", unit
    if "max" in low:
        return "max", unit
    if "request" in low:
        return "requests", None
    if "succ" in low:
        return "success", None
    if "failed" in low:
        return "failed", None
    if "value" in low:
        return "value", None
    if "m/s" in low:
        return "wait_ms", 1e-3
    if re.search(r"time|csec|\bsecs?\b|seconds|waited", low):
        return "time", unit
    if "waits" in low or "count" in low:
        return "count", None
    if "total" in low:
        return "total", None
    return "ignore", None


def _word_groups(line: str) -> list[tuple[int, int, str]]:
    """Header cells: runs of words separated by single spaces."""
    return [(m.start(), m.end(), m.group()) for m in re.finditer(r"\S+(?: \S+)*", line)]


def _build_columns(header: list[str], ruler: str | None) -> list[_Column]:
    if ruler is not None:
        spans = [(m.start(), m.end()) for m in re.finditer(r"-+", ruler)]
    else:
        last = header[-1] if header else ""
        spans = [(a, b) for a, b, _ in _word_groups(last)]
        header = [last]
    if not spans or len(spans) > MAX_COLUMNS:
        return []
    words: list[list[str]] = [[] for _ in spans]
    for line in header:
        clean = RE_TILDES.sub(lambda m: " " * len(m.group()), line)
        for m in RE_TOKEN.finditer(clean):
            centre = (m.start() + m.end()) / 2
            best = min(
                range(len(spans)),
                key=lambda i: (
                    0 if spans[i][0] <= centre < spans[i][1] else 1,
                    min(abs(centre - spans[i][0]), abs(centre - spans[i][1])),
                ),
            )
            words[best].append(m.group())
    cols = []
    for (a, b), w in zip(spans, words, strict=True):
        label = " ".join(w)
        kind, unit = classify(label)
        cols.append(_Column(label=label, start=a, end=b, kind=kind, unit=unit))
    return cols


def _table_kind(cols: list[_Column]) -> tuple[str, bool]:
    """(kind, named_rows) from the columns."""
    if not cols:
        return "ignore", True
    first = cols[0].label.lower()
    kinds = {c.kind for c in cols[1:]}
    if "requests" in kinds or cols[0].kind == "requests":
        return "enqueues", cols[0].kind != "requests"
    if "class" in first and "event" not in first:
        return "ignore", True  # wait classes are not events
    if "event" in first or ("count" in kinds and "time" in kinds):
        return "events", True
    if "value" in kinds or "statistic" in first or first.endswith("name") or "name" in first:
        return "stats", True
    return "ignore", True


def _is_header(line: str) -> bool:
    """A line of column names ('Total Wait       Wait   % DB Wait'), not prose."""
    if RE_HAS_DIGIT.search(line) or len(line) > 400:
        return False
    words = RE_WORDS.findall(line.lower())
    if not words:
        return False
    known = sum(1 for w in words if w in _HEADER_VOCAB)
    return known / len(words) >= 0.75 and any(w in _HEADER_ANCHORS for w in words)


def _is_prose(line: str) -> bool:
    """Table cells are separated by runs of spaces; sentences by single ones."""
    return "  " not in line.strip()


def _tokens(line: str) -> list[tuple[int, int, str]]:
    """Whitespace tokens with positions; '52.86 s' (AWR 12.2 averages) is one token."""
    toks = [(m.start(), m.end(), m.group()) for m in RE_TOKEN.finditer(line)]
    out: list[tuple[int, int, str]] = []
    for tok in toks:
        if (
            out
            and tok[2] in _UNIT_S
            and tok[0] == out[-1][1] + 1
            and RE_NUMBER.match(out[-1][2])
            and not out[-1][2][-1].isalpha()
        ):
            a, _, text = out.pop()
            out.append((a, tok[1], text + tok[2]))
        else:
            out.append(tok)
    return out


class _Cell(NamedTuple):
    start: int
    end: int
    value: tuple[float, float | None] | None  # parse_number's answer; None: a '-' placeholder


class _Split(NamedTuple):
    line: str
    name: str
    nums: list[_Cell]
    text: list[str]  # words after the numbers (Wait Class, Reason)


def _split_row(line: str) -> _Split | None:
    """Name, numbers and trailing words of a row; None when the line holds no number.

    The values are the last run of numbers: names may hold numbers ('gc cr block 2-way' does
    not, but a statistic may), trailing words never do."""
    toks = _tokens(line)
    values = [parse_number(t[2]) for t in toks]
    cells = [v is not None or t[2] in ("-", "N/A") for t, v in zip(toks, values, strict=True)]
    end = len(toks)
    while end > 0 and not cells[end - 1]:
        end -= 1
    start = end
    while start > 0 and cells[start - 1]:
        start -= 1
    while start < end and values[start] is None:
        start += 1  # a leading '-' is part of the name or an empty cell before the first number
    if start == end:
        return None
    name = line[: toks[start][0]].rstrip()
    if name.endswith(("-", "N/A")):
        name = RE_NAME_TAIL.sub("", name)
    nums = [_Cell(toks[i][0], toks[i][1], values[i]) for i in range(start, end)]
    return _Split(line, name.strip(), nums, [t[2] for t in toks[end:]])


class WaitsParser(Parser):
    """Reads one or several wait-event / enqueue / statistics tables that belong together."""

    format: ClassVar[Format] = "waits"

    @classmethod
    def start_score(cls, line: str) -> int:
        # the detector asks this of every line it reads: cheap exits first
        if line.lstrip()[:1] in _TITLE_INITIALS and (
            RE_START_HEADERS.match(line)
            or RE_TOP_TITLE.match(line)
            or RE_TITLE.match(line)
            or RE_INTERVAL.match(line)
        ):
            return 2
        if len(line) > 400 or "  " not in line or not RE_ROW_HINT.search(line):
            return 0
        split = _split_row(line)
        if split is None:
            return 0
        _, name, nums, text = split
        words = re.findall(r"[A-Za-z][\w*:/()-]*", name)
        if (
            len(words) >= 2
            and len(nums) >= 2
            and not text
            and not name.lower().startswith("average")
            and re.search(r"\S\s{2,}\S", line[: nums[0][1]])
        ):
            return 1
        return 0

    def __init__(self) -> None:
        super().__init__()
        self._started = False
        self._table: _Table | None = None
        self._last_table: _Table | None = None
        self._header: list[str] = []
        self._title = ""
        self._pending_name: str | None = None
        self._interval_s: float | None = None
        self._events_full: dict[str, _EventAcc] = {}
        self._events_top: dict[str, _EventAcc] = {}
        self._cpu: dict[str, dict[str, float]] = {}
        self._enqueues: dict[str, dict[str, float]] = {}
        self._enq_reason: dict[str, str] = {}
        self._stats: dict[str, float] = {}
        self._tables: list[TableInfo] = []
        self._table_infos: dict[int, TableInfo] = {}
        self._dropped = 0

    # -- feeding -------------------------------------------------------------------------------

    def feed(self, line: str) -> bool:
        s = line.rstrip("\r\n")
        if not s.strip():
            if not self._started:
                return False
            if self._table is not None:
                self._last_table = self._table
            self._table = None
            self._header = []
            return True
        accepted = self._feed(s)
        if accepted:
            self._started = True
        return accepted

    def _feed(self, s: str) -> bool:
        if RE_MULTI_RULER.match(s):
            self._open_table(s)
            return True
        if RE_SINGLE_RULER.match(s):
            self._end_table()
            return True
        if RE_NOTE.match(s):
            return self._started
        m = RE_INTERVAL.match(s)
        if m:
            self._set_interval(m.group(1), m.group(2) or "s")
            return True
        m = RE_TOP_TITLE.match(s) or RE_TITLE.match(s)
        if m:
            self._end_table()
            self._title = " ".join(m.group().split())[:120]
            rest = " " * m.end() + s[m.end() :]  # 'Top 5 Timed Events   Avg %Total': keep 'Avg..'
            self._header = [rest] if rest.strip() else []
            return True
        if RE_TILDES.search(s) and not RE_TILDES.sub("", s).strip(" ~"):
            return True  # the underline of a title
        if self._table is not None:
            return self._table_line(s)
        if RE_TILDES.search(s) or _is_header(s):
            self._header = (self._header + [s])[-3:]
            return True
        return self._loose_row(s)

    def _table_line(self, s: str) -> bool:
        table = self._table
        assert table is not None
        split = _split_row(s)
        if split is None:
            if table.kind == "enqueues" and not table.named_rows:
                m = RE_ENQ_NAME.match(s)
                if m:
                    self._pending_name = s.strip()
                    return True
            if _is_header(s) or RE_TILDES.search(s):
                self._end_table()
                self._header = [s]
                return True
            return False
        if not self._row(table, split, dry=True):
            if _is_prose(s):
                return False
            self.malformed += 1
            return True
        self._row(table, split)
        return True

    def _loose_row(self, s: str) -> bool:
        """A row outside a ruled table: under a header without ruler, after a blank inside a
        table, or on its own (start_score 1)."""
        split = _split_row(s)
        if split is None:
            return False
        header = [h for h in self._header if _is_header(h)]
        if header:
            cols = _build_columns(header, None)
            kind, named = _table_kind(cols)
            if cols and (kind != "ignore" or len(cols) > 1):
                if named:
                    cols[0].kind = "name"
                fits = self._row(_Table(kind, cols, named_rows=named), split, dry=True)
                if not fits and _is_prose(s):
                    return False
                table = self._new_table(cols, kind, named)
                self._table = table
                if not self._row(table, split):
                    self.malformed += 1
                return True
        last = self._last_table
        if last is not None and not last.assumed and self._row(last, split, dry=True, aligned=True):
            self._table = self._last_table
            self._row(self._table, split)
            return True
        if self.start_score(s) == 0:
            return False
        cols = [
            _Column("Event", 0, 0, "name"),
            _Column("Waits", 0, 0, "count"),
            _Column("Time (s)", 0, 0, "time", 1.0),
            _Column("Avg (ms)", 0, 0, "avg", 1e-3),
        ]
        table = self._new_table(cols, "events", True, assumed=True)
        self._table = table
        if not self._row(table, split):
            self.malformed += 1
        return True

    # -- tables --------------------------------------------------------------------------------

    def _open_table(self, ruler: str) -> None:
        header = [h for h in self._header if h.strip()]
        if not header:
            self._table = None
            return
        cols = _build_columns(header, ruler)
        kind, named = _table_kind(cols)
        self._table = self._new_table(cols, kind, named)
        if cols and named:
            self._table.name_width = cols[0].end - cols[0].start
        self._header = []

    def _new_table(
        self, cols: list[_Column], kind: str, named: bool, *, assumed: bool = False
    ) -> _Table:
        if named and cols:
            cols[0].kind = "name"
        table = _Table(
            kind=kind,
            columns=cols,
            title=self._title,
            top=bool(RE_TOP_TITLE.match(self._title)),
            named_rows=named,
            assumed=assumed,
        )
        self._title = ""
        self._pending_name = None
        if len(self._tables) < MAX_TABLES:
            info = TableInfo(
                title=table.title,
                kind=kind,
                columns=[c.label for c in cols],
                top_summary=table.top,
                assumed_columns=assumed,
            )
            self._tables.append(info)
            self._table_infos[id(table)] = info
        return table

    def _end_table(self) -> None:
        if self._table is not None:
            self._last_table = self._table
        self._table = None
        self._header = []

    def _set_interval(self, value: str, unit: str) -> None:
        parsed = parse_number(value)
        if parsed is None:
            return
        factor = 60.0 if unit.lower().startswith("m") else 1.0
        self._interval_s = parsed[0] * factor

    # -- rows ----------------------------------------------------------------------------------

    @staticmethod
    def _value_columns(table: _Table) -> list[_Column]:
        if not table.named_rows:
            return table.columns
        return [c for c in table.columns if c.kind not in ("name", "class", "reason")]

    def _assign(
        self, table: _Table, nums: list[_Cell], *, aligned: bool = False
    ) -> list[tuple[_Column, float, float | None]] | None:
        """Give each number the column whose right edge is nearest, keeping left-to-right
        order. None when there are more numbers than columns, or (aligned=True) when a number
        sits more than ALIGN_SLACK characters from its column's right edge."""
        cols = self._value_columns(table)
        if len(nums) > len(cols):
            return None
        if table.assumed:
            chosen = list(range(len(nums)))
        else:
            chosen = []
            lo = 0
            for i, (_, end, _) in enumerate(nums):
                hi = len(cols) - (len(nums) - i)
                best = min(range(lo, hi + 1), key=lambda j: (abs(cols[j].end - end), j))
                if aligned and abs(cols[best].end - end) > ALIGN_SLACK:
                    return None
                chosen.append(best)
                lo = best + 1
        out = []
        for j, cell in zip(chosen, nums, strict=True):
            if cell.value is None:
                continue  # a '-' placeholder holds its cell and carries no value
            out.append((cols[j], cell.value[0], cell.value[1]))
        return out

    def _row(
        self, table: _Table, split: _Split, *, dry: bool = False, aligned: bool = False
    ) -> bool:
        line, name, nums, text = split
        if text and not any(c.kind in ("class", "reason") for c in table.columns):
            return False  # words after the numbers: prose, not a row of this table
        n_cols = len(self._value_columns(table))
        if n_cols == 0:
            return False
        extra = len(nums) - n_cols
        if table.named_rows and extra > 0:
            name = line[: nums[extra][0]].strip()  # leading numbers belong to the name
            nums = nums[extra:]
        if table.named_rows and not name:
            return False
        if not table.named_rows:
            name = self._pending_name or ""
            if not name:
                return False
        cells = self._assign(table, nums, aligned=aligned)
        if cells is None:
            return False
        if dry:
            return True
        table.rows += 1
        info = self._table_infos.get(id(table))
        if info is not None:
            info.rows = table.rows
        trailing = " ".join(text)[:60]
        if table.kind == "events":
            self._event_row(table, name, cells, trailing)
        elif table.kind == "enqueues":
            self._enqueue_row(name, cells, trailing)
            self._pending_name = None
        elif table.kind == "stats":
            self._stat_row(name, cells)
        return True

    def _event_row(
        self, table: _Table, name: str, cells: list[tuple[_Column, float, float | None]], cls: str
    ) -> None:
        row: dict[str, float | str] = {}
        for col, value, unit in cells:
            if col.kind == "count":
                row["count"] = value
            elif col.kind == "time":
                row["time_s"] = value * (unit or col.unit or 1.0)
            elif col.kind in ("avg", "max"):
                row[f"{col.kind}_ms"] = value * (unit or col.unit or 1e-3) * 1000.0
            elif col.kind == "timeouts":
                row["timeouts"] = value
            elif col.kind == "pct_db":
                row["pct_db"] = value
        if cls and any(c.kind == "class" for c in table.columns):
            row["class"] = cls
        if name in CPU_ROWS:
            self._cpu[name] = {k: v for k, v in row.items() if isinstance(v, float)}
            return
        if table.name_width >= 20 and len(name) == table.name_width:
            name = self._uncut(name)
        acc = self._events_top if table.top else self._events_full
        entry = acc.get(name)
        if entry is None:
            if len(acc) >= MAX_KEYS:
                self._dropped += 1
                return
            entry = acc[name] = _EventAcc()
        entry.add(row)

    def _uncut(self, name: str) -> str:
        """'enq: TX - row lock content' -> 'enq: TX - row lock contention' when unambiguous."""
        if name in self._events_top or name in self._events_full:
            return name
        known = [n for n in (*self._events_top, *LONG_EVENT_NAMES) if n.startswith(name)]
        return known[0] if len(set(known)) == 1 else name

    def _enqueue_row(
        self, name: str, cells: list[tuple[_Column, float, float | None]], reason: str
    ) -> None:
        key = name.split("-", 1)[0].strip() if "-" in name[:3] else name.split()[0]
        cur = self._enqueues.get(key)
        if cur is None:
            if len(self._enqueues) >= MAX_KEYS:
                self._dropped += 1
                return
            cur = self._enqueues[key] = {}
        for col, value, unit in cells:
            if col.kind == "requests":
                cur["requests"] = cur.get("requests", 0.0) + value
            elif col.kind == "count":
                cur["waits"] = cur.get("waits", 0.0) + value
            elif col.kind in ("wait_ms", "time"):
                ms = value * (unit or col.unit or 1.0) * 1000.0
                cur["wait_ms"] = cur.get("wait_ms", 0.0) + ms
            elif col.kind in ("success", "failed"):
                cur[col.kind] = cur.get(col.kind, 0.0) + value
        if reason:
            self._enq_reason.setdefault(key, reason)

    def _stat_row(self, name: str, cells: list[tuple[_Column, float, float | None]]) -> None:
        preferred = [c for c in cells if c[0].kind in ("value", "total")]
        value = (preferred or cells or [(None, None, None)])[0][1]
        if value is None:
            return
        if name not in self._stats and len(self._stats) >= MAX_KEYS:
            self._dropped += 1
            return
        self._stats[name] = self._stats.get(name, 0.0) + value

    # -- results -------------------------------------------------------------------------------

    def facts(self) -> tuple[dict, dict, list[str], Platform | None]:
        events = self._events_full or self._events_top
        other = self._events_top if self._events_full else {}
        facts: dict[str, float | str | dict[str, float]] = {}
        details: dict = {
            "tables": [t.model_dump() for t in self._tables],
            "events_from": "full tables"
            if self._events_full
            else ("top-N summary" if self._events_top else None),
        }
        if self._interval_s is not None:
            details["interval_s"] = self._interval_s

        total = sum(e.waited_s or 0.0 for e in events.values())
        rows: list[EventRow] = []
        for name, acc in events.items():
            waited = acc.waited_s
            pct_db = acc.pct_db
            if pct_db is None and name in other:
                pct_db = other[name].pct_db
            rows.append(
                EventRow(
                    event=name,
                    count=acc.count,
                    waited_s=_r(waited) if waited is not None else None,
                    avg_ms=_r_opt(acc.average_ms()),
                    max_ms=_r_opt(acc.max_ms),
                    timeouts=acc.timeouts,
                    pct_of_waited=_r(waited / total * 100.0)
                    if waited is not None and total > 0
                    else None,
                    pct_of_db_time=pct_db,
                    wait_class=acc.wait_class,
                )
            )
        rows.sort(key=lambda r: (-(r.waited_s or 0.0), -(r.count or 0.0), r.event))
        if events:
            facts["waits.total_s"] = _r(total)
            facts["waits.events"] = float(len(events))
            _table_fact(facts, "event.waited_s", {r.event: r.waited_s for r in rows})
            _table_fact(facts, "event.count", {r.event: r.count for r in rows})
            _table_fact(facts, "event.avg_ms", {r.event: r.avg_ms for r in rows})
            _table_fact(facts, "event.max_ms", {r.event: r.max_ms for r in rows})
            _table_fact(facts, "event.timeouts", {r.event: r.timeouts for r in rows})
            _table_fact(facts, "event.pct_of_waited", {r.event: r.pct_of_waited for r in rows})
            if total > 0:
                facts["waits.top_event"] = rows[0].event
                facts["waits.top_pct"] = rows[0].pct_of_waited or 0.0
        pct_db = {r.event: r.pct_of_db_time for r in rows}
        for name, cpu in self._cpu.items():
            pct_db[name] = cpu.get("pct_db")
        _table_fact(facts, "event.pct_of_db_time", pct_db)
        details["events"] = [r.model_dump() for r in rows[:TOP_ROWS]]
        if self._cpu:
            details["cpu"] = self._cpu

        if self._enqueues:
            for fact, key in (
                ("enqueue.requests", "requests"),
                ("enqueue.waits", "waits"),
                ("enqueue.wait_ms", "wait_ms"),
            ):
                _table_fact(facts, fact, {k: v.get(key) for k, v in self._enqueues.items()})
            details["enqueues"] = [
                {"type": k, **v, "reason": self._enq_reason.get(k, "")}
                for k, v in sorted(self._enqueues.items(), key=lambda kv: -kv[1].get("wait_ms", 0))
            ][:TOP_ROWS]
        if self._stats:
            facts["stat.value"] = dict(self._stats)
            details["stats"] = [{"name": k, "value": v} for k, v in self._stats.items()][:TOP_ROWS]
        if self._dropped:
            details["dropped_rows"] = self._dropped

        facts = {k: v for k, v in facts.items() if not isinstance(v, float) or math.isfinite(v)}
        identifiers = [r.event for r in rows[:100]]
        identifiers += list(self._enqueues)[:50]
        identifiers += list(self._stats)[:50]
        return facts, details, list(dict.fromkeys(identifiers)), None


def _r(x: float) -> float:
    return round(x, 6)


def _r_opt(x: float | None) -> float | None:
    return None if x is None else _r(x)


def _table_fact(facts: dict, name: str, table: dict[str, float | None]) -> None:
    clean = {k: v for k, v in table.items() if v is not None and math.isfinite(v)}
    if clean:
        facts[name] = clean
