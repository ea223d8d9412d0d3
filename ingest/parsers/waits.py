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
import sys
from dataclasses import dataclass, field
from functools import lru_cache
from typing import ClassVar, NamedTuple

from ingest.base import MAX_LINE, Parser
from ingest.model import Format, Platform
from ingest.oracle_events import is_idle
from ingest.parsers.awr_report import RE_MINUTES, RE_SNAP, ReportReader, section_of

try:  # the C core's readers of an open table's rows and of report sections' lines
    from ingest._syscore import awr_lines as _c_lines  # (ingest/_syscore_src/awr.c); optional
    from ingest._syscore import awr_rows as _c_rows
except ImportError:  # pragma: no cover - the pure-Python path is the reference
    _c_rows = _c_lines = None
# False: every line goes through `feed` (the reference the tests compare the C reader with).
NATIVE = _c_rows is not None
# the report sections whose lines `_feed` hands to the ReportReader, not to the open table
_REPORT_SECTIONS = frozenset({"header", "load", "efficiency", "sql", "latch", "segments", "skip"})
# awr_lines's section codes and the kinds of line it hands back (awr.c's AWR_LOAD.., AWR_BLANK..)
_LINES_LOAD, _LINES_SQL, _LINES_SKIP = 1, 2, 3
_LINE_BLANK, _LINE_ROW = 0, 1

# is_idle is pure and the same few dozen events come back in every report of an archive,
# each asked twice a report (the total, then its row): the answers are cached
_idle_cached = lru_cache(maxsize=4096)(is_idle)
CACHED_HEADER = 2000  # characters of a table's header and ruler that may be kept in a cache


def _idle(event: str, wait_class: str | None) -> bool:
    if len(event) > 200 or (wait_class is not None and len(wait_class) > 200):
        return is_idle(event, wait_class)
    return _idle_cached(event, wait_class)


MAX_KEYS = 5000  # distinct events / enqueues / statistics kept per kind
ALIGN_SLACK = 4  # characters a number may stray from its column edge (seed 003 spills by 2)
MAX_COLUMNS = 40
MAX_VALUE = 1e18  # larger than any Oracle counter; bigger "numbers" are noise, and sums stay finite  # a "ruler" with more dash groups is not a table header
MAX_TABLES = 50  # tables described in details
TOP_ROWS = 100  # rows listed in details per kind
CPU_ROWS = frozenset({"DB CPU", "CPU time", "CPU Time", "CPU"})
_REPORT_INITIALS = frozenset("WSDBEHLITFE")  # first letters of RE_REPORT_START's lines
MAX_REPORT_NOTES = 3  # prose lines (someone's notes) a pasted report may hold in a row
RE_PAGE_HEADER = re.compile(r"^\s*(?:OUTPUT|COLUMN_VALUE|PLAN_TABLE_OUTPUT)\s*$")
RE_REPORT_START = re.compile(
    r"^\s*(?:WORKLOAD REPOSITORY (?:PDB |CDB )?report|STATSPACK (?:Statistics )?report for"
    r"|(?:DB Name|Database)\s+DB Id\b|(?:Snapshot\s+)?Snap Id\s+Snap Time\b"
    r"|(?:Begin|End)\s+Snap:\s+\d|(?:Elapsed|DB\s+[Tt]ime):\s+[\d.,]+\s*\((?:mins|secs)\)|Load Profile\b|Instance Efficiency (?:Percentages|Indicators)"
    r"|Time Model (?:Statistics|System Stats)|SQL ordered by\b|Host\s*Name\s+Platform\b"
    r"|(?:Foreground |Background )?Wait Class(?:es by Total Wait Time)?\s*(?:DB/Inst:.*)?$)"
)
# words of a wait event's name, for rows whose alignment a forum or chat collapsed
# the first line of an event name wrapped by a narrow window: words, at most 60 characters
RE_WRAPPED_NAME = re.compile(r"^\s{0,2}[a-zA-Z][\w*:/()\-]*(?: [\w*:/()\-]+){1,8}\s*$")
RE_EVENT_WORDS = re.compile(
    r"\b(?:read|write|sync|wait|waits|latch|enq|gc|log|file|buffer|cursor|library|lock|direct"
    r"|path|SQL\*Net|resmgr|mutex|pin|row cache|checkpoint|switch|busy)\b",
    re.I,
)
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
    r"^\s*Top\s+(?:\d+\s+)?(?:Timed\s+)?(?:Foreground\s+)?(?:Wait\s+)?Events"
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
    r"|EVENT\s+TOTAL_WAITS\b"
    r"|(?:[A-Z_#]+\s+){1,4}EVENT(?:_NAME)?\s+(?:[A-Z_#]+\s+){0,3}TOTAL_WAITS\b)",
    re.I,
)
RE_NUMBER = re.compile(
    r"^[+-]?(?:(?:\d{1,3}(?:,\d{3})+|\d+)?(?:\.\d+)?|\d+,\d{1,2}|,\d+|\d{1,3}(?:\.\d{3})+,\d+)"
    r"(?:[KMGT](?![a-z]))?(?:ns|us|ms|s)?%?$"
)
RE_DECIMAL_COMMA = re.compile(r"^[+-]?(?:\d+,\d{1,2}|,\d+|\d{1,3}(?:\.\d{3})+,\d+)$")
RE_HAS_DIGIT = re.compile(r"\d")
_TITLE_INITIALS = frozenset("EeTtFfBbWwIiSsUCOP")  # first letters of the lines scored 2
_TITLE_FIRST = "FfBbWwEeIiSsT"  # first letters of RE_TITLE's, RE_TOP_TITLE's, RE_INTERVAL's lines
RE_ROW_HINT = re.compile(r"[^\s\d]\s{2,}[-.\d]")  # 'a name  1,234': a word, 2+ spaces, a number
RE_TOKEN = re.compile(r"\S+")
# a unit token ('s', 'ms', 'us', 'ns') one whitespace character after another token: what
# `_tokens` joins to the number before it ('52.86 s'); without one there is nothing to join
RE_UNIT_AFTER = re.compile(r"\S\s(?:ns|us|ms|s)(?!\S)")
RE_ENQ_NAME = re.compile(r"^\s*([A-Z0-9]{2})-\S")
RE_WORDS = re.compile(r"[a-z_]+")
RE_NAME_TAIL = re.compile(r"(?:\s+(?:-|N/A))+\s*$")  # empty cells between a name and its numbers
# What a report prints inside its sections and no other format's header looks like: a row of
# two or more words, two or more spaces, then numbers (placeholders, a trailing word or two such
# as a wait class); a dashed ruler of several groups; a '->' note; a title's tilde underline.
# Possessive and bounded, so a 64 KB hostile line costs one short scan.
_NUM = r"[-+]?[\d,.]++(?:[KMGT]|ms|us|s)?+%?+"
RE_CLAIMED = re.compile(
    r" {0,24}+[A-Za-z][\w:*/()%#.'$-]{0,40}+(?: [\w:*/()%#.'$-]{1,40}+){1,8}+ {2,}+"
    rf"{_NUM}(?: ++(?:{_NUM}|-|N/A)){{0,14}}+(?: ++[A-Za-z][\w/*-]{{0,20}}+){{0,3}}+ *+"
    r"|\s*+-{2,}+(?: ++-{2,}+)++\s*+|\s*+->.*|\s*+~{3,}+\s*+"
)

RE_CLAIMED_LOAD = re.compile(
    r" {0,24}+[A-Za-z][\w ()/%.-]{0,40}+: {1,30}+[-\d.,]{1,24}+(?: {1,30}+[-\d.,]{1,24}+){0,4}+ *+"
    r"|(?: {0,24}+[A-Za-z][\w -]{0,40}+%: {1,8}+[\d.,]{1,12}+){1,3}+ *+"
)
RE_CLAIMED_SQL = re.compile(
    r" {0,24}+[\d,.]{1,24}+(?: {1,30}+[\d,.]{1,24}+){1,9}+ {1,9}+[0-9a-z]{13} *+"
)

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
        "username",
        "sid",
        "serial",
        "inst_id",
        "osuser",
        "program",
        "con_id",
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


@lru_cache(maxsize=4096)
def parse_number(token: str) -> tuple[float, float | None] | None:
    """'1,647,276' -> (1647276, None); '3.23ms' -> (3.23, 0.001); '21.1K' -> (21100, None).

    The second item is the unit in seconds when the token carries one. None: not a number.
    Cached: a week of hourly reports prints the same cells ('0', '.0', '100.00', '-') again
    and again, and the answer is an immutable tuple (bounded, so unique counters cannot grow
    it without limit)."""
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
    if RE_DECIMAL_COMMA.match(t):  # '45,6' and '1.234,5': a European locale's NLS settings
        t = t.replace(".", "").replace(",", ".")
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
    scope: str = "fg"  # fg | bg: which processes' waits (AWR 11g+ prints them apart)
    collapsed: bool = False  # header read from single-spaced words: values go in order
    event_col: int | None = None  # v$ output grouped by user/SID: the EVENT column, not first
    # the columns that take values, worked out at the table's first row (its columns are
    # settled before it is made) instead of at every row
    values: list[_Column] | None = field(default=None, repr=False, compare=False)
    # (value columns, their right edges, words after the numbers) for the C reader, worked out
    # at the first row; () when it does not read this table's rows (WaitsParser._native)
    native: tuple | None = field(default=None, repr=False, compare=False)
    # whether a Wait Class column is among the columns, worked out at the first row
    classed: bool | None = field(default=None, repr=False, compare=False)


@dataclass(slots=True)
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
        # the sums written out, not a closure made per call: this runs for every event row of
        # every report (a closure and three calls were a third of an archive row's cost here)
        cnt = row.get("count")
        if isinstance(cnt, float):
            self.count = cnt if self.count is None else self.count + cnt
        v = row.get("time_s")
        if isinstance(v, float):
            self.waited_s = v if self.waited_s is None else self.waited_s + v
        v = row.get("timeouts")
        if isinstance(v, float):
            self.timeouts = v if self.timeouts is None else self.timeouts + v
        avg = row.get("avg_ms")
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


# Plain data, not pydantic models: an archive's every report builds a few dozen of each, and
# the Block they end up in is validated once at the boundary (`Parser.finish`); validating each
# row first was ~2 % of an archive's parse. `dump` gives what `model_dump` gave, key for key.
@dataclass(slots=True)
class EventRow:
    event: str
    count: float | None = None
    waited_s: float | None = None
    avg_ms: float | None = None
    max_ms: float | None = None
    timeouts: float | None = None
    pct_of_waited: float | None = None
    pct_of_db_time: float | None = None
    wait_class: str | None = None
    idle: bool = False

    def dump(self) -> dict:
        return {
            "event": self.event,
            "count": self.count,
            "waited_s": self.waited_s,
            "avg_ms": self.avg_ms,
            "max_ms": self.max_ms,
            "timeouts": self.timeouts,
            "pct_of_waited": self.pct_of_waited,
            "pct_of_db_time": self.pct_of_db_time,
            "wait_class": self.wait_class,
            "idle": self.idle,
        }


@dataclass(slots=True)
class TableInfo:
    kind: str
    title: str = ""
    columns: list[str] = field(default_factory=list)
    rows: int = 0
    top_summary: bool = False
    assumed_columns: bool = False

    def dump(self) -> dict:
        return {
            "title": self.title,
            "kind": self.kind,
            "columns": list(self.columns),
            "rows": self.rows,
            "top_summary": self.top_summary,
            "assumed_columns": self.assumed_columns,
        }


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
    if "session" in low:
        return "ignore", None  # 'Avg Active Sessions' of the wait class table
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


RE_HEADER_PHRASE = re.compile(
    r"%\s*Time\s*-?\s*outs|Total\s+Wait\s+Time\s*\((?:sec|s)\)|Wait\s+Time\s*\((?:sec|s)\)"
    r"|Time\s*\((?:sec|s|ms|cs)\)|Avg\s+wait\s*\((?:ms|s)\)|Wait\s+Avg\s*\(ms\)|Avg\s*\(ms\)"
    r"|Avg\s+Wait(?:\s+Time)?|%\s*DB\s+time|%\s*Total\s+Call\s+Time|%\s*Total\s+Ela\s+Time"
    r"|Ela\s+Time|Call\s+Time|Wait\s+Class|%\s*Total|\(ms\)|\S+",
    re.I,
)


def _collapsed_columns(header: list[str]) -> list[_Column]:
    """Columns of a header whose spacing was collapsed ('Event Waits Time (s) (ms) Time'):
    known phrases in order. Values then go to the columns in order (no positions to use)."""
    last = header[-1] if header else ""
    labels = [" ".join(m.group().split()) for m in RE_HEADER_PHRASE.finditer(last)]
    above = " ".join(header[:-1])
    out = []
    for label in labels:
        low = label.lower()
        if low == "(ms)":
            label = "Avg (ms)"
        elif (
            low in ("time", "ela time", "call time")
            and "%" in above
            and any(c.kind == "time" for c in out)
        ):
            label = "% Total Time"  # the '% DB' / '%Total' above it, a time column before it
        kind, unit = classify(label)
        out.append(_Column(label=label, start=0, end=0, kind=kind, unit=unit))
    return out[:MAX_COLUMNS]


def _collapsed_event_row(line: str) -> bool:
    """'db file sequential read 1,234,567 8,910 45.6': an event row whose alignment a forum,
    a chat client or a slide collapsed to single spaces."""
    if len(line) > 300:
        return False
    split = _split_row(line)
    if split is None or split.text or len(split.nums) < 2:
        return False
    words = split.name.split()
    return (
        2 <= len(words) <= 10
        and all(w[0].isalpha() or w[0] in "(*" for w in words)
        and words[0][0].islower()
        and RE_EVENT_WORDS.search(split.name) is not None
    )


def _build_columns(header: list[str], ruler: str | None) -> list[_Column]:
    """The columns of a table from its header lines and the ruler under them (None: none).

    Fresh `_Column`s every call (the parser marks the name column on them); what they are made
    of is cached, as an archive of reports prints the same few headers in every report."""
    key = tuple(header)
    if sum(map(len, key)) + len(ruler or "") > CACHED_HEADER:
        return _read_columns(header, ruler)  # no hostile 64 KB header kept in the cache
    return [_Column(*c) for c in _column_shapes(key, ruler)]


@lru_cache(maxsize=1024)
def _column_shapes(
    header: tuple[str, ...], ruler: str | None
) -> tuple[tuple[str, int, int, str, float | None], ...]:
    return tuple(
        (c.label, c.start, c.end, c.kind, c.unit) for c in _read_columns(list(header), ruler)
    )


def _read_columns(header: list[str], ruler: str | None) -> list[_Column]:
    collapsed = bool(header) and "  " not in header[-1].strip() and len(header[-1].split()) > 2
    if collapsed and (ruler is None or "  " not in ruler.strip()):
        return _collapsed_columns(header)
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
    return _header_words(line)


@lru_cache(maxsize=2048)
def _header_words(line: str) -> bool:
    """`_is_header`'s vocabulary test, cached: every report of an archive prints the same
    column names, each asked up to three times (at most 400 characters a line kept)."""
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
    if RE_UNIT_AFTER.search(line) is None:
        return toks  # no unit token one space after another token: nothing to join
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
    # from the end: trailing words, then the run of cells; the name's words before the run
    # are never read as numbers (most of a row's tokens)
    end = len(toks)
    while end > 0:
        tok = toks[end - 1][2]
        if parse_number(tok) is not None or tok == "-" or tok == "N/A":
            break
        end -= 1
    values: dict[int, tuple[float, float | None] | None] = {}
    start = end
    while start > 0:
        tok = toks[start - 1][2]
        value = parse_number(tok)
        if value is None and tok != "-" and tok != "N/A":
            break
        start -= 1
        values[start] = value
    while start < end and values[start] is None:
        start += 1  # a leading '-' is part of the name or an empty cell before the first number
    if start == end:
        return None
    name = line[: toks[start][0]].rstrip()
    if name.endswith(("-", "N/A")):
        name = RE_NAME_TAIL.sub("", name)
    nums = [_Cell(toks[i][0], toks[i][1], values[i]) for i in range(start, end)]
    return _Split(line, name.strip(), nums, [t[2] for t in toks[end:]])


def _titled_row(name: str, line: str) -> bool:
    """Is a row the C reader read a section title after all? It reads rows starting with a
    capital ('DB time', 'SQL*Net message to client': a fifth of an archive's table rows, each
    ~10x dearer through `_feed`), and `section_of`'s titles are case-sensitive words such as
    'Host CPU', which it leaves to this (one regex, only for those rows)."""
    return name[0] < "a" and section_of(line) is not None


class WaitsParser(Parser):
    """Reads one or several wait-event / enqueue / statistics tables that belong together."""

    format: ClassVar[Format] = "waits"
    shared_text = True  # an archive of hourly AWR / Statspack reports is one block a report

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
        first = line.lstrip()[:1]
        if first in _REPORT_INITIALS and len(line) <= 200 and RE_REPORT_START.match(line):
            return 2  # a report's header or a section only reports print
        if len(line) > 400:
            return 0
        if "  " not in line.strip():
            # cheap tests first: the detector asks this of every line of a truss capture
            if (
                first.isalpha()
                and line.rstrip()[-1:].isdigit()
                and "=" not in line
                and '"' not in line
                and _collapsed_event_row(line)
            ):
                return 1
            return 0
        if not RE_ROW_HINT.search(line):
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
        # whole reports: the section being read, what it holds, background waits apart
        self._report = ReportReader()
        self._section: str | None = None
        self._in_report = False  # a report's header or Load Profile was seen
        self._scope = "fg"
        self._events_bg: dict[str, _EventAcc] = {}
        self._wait_class: dict[str, dict[str, float]] = {}
        self._time_model: dict[str, float] = {}
        self._time_model_pct: dict[str, float] = {}
        self._stash: list[str] = []  # the header a SQL*Plus page break interrupted
        self._page_break = False
        self._prose = 0
        self._wrap = ""  # the first part of an event name a narrow paste wrapped

    fast = True  # runs of rows go through Parser.feed_lines without the detector's per-line work

    def claims(self, line: str) -> bool:  # type: ignore[override]
        """Inside a block: blank lines, rulers, '->' notes, tilde underlines and rows of a
        name of two or more words followed by numbers (RE_CLAIMED). Claiming only matters for
        a line another format scores 2, and no header of another format has these shapes; it
        spares the detector asking every other format about each row of a report, a third of
        the time spent on an archive of AWR reports. What the block then does with the line is
        what `feed` says, as always: a row that is not this table's still ends the block."""
        if not self._started:
            return False
        if not line.strip() or RE_CLAIMED.fullmatch(line) is not None:
            return True
        # inside the sections of a report that only reports print, their rows by their shape:
        # Load Profile's 'Executes:   1,234.5   12.3' and Instance Efficiency's '%:' pairs, SQL
        # ordered by's rows of numbers ending in a SQL Id, and a section's page title
        # ('init.ora Parameters   DB/Inst: X/x1  Snaps: 1-2'); each would stop the run
        section = self._section
        if section == "load" or section == "efficiency":
            return RE_CLAIMED_LOAD.fullmatch(line) is not None
        if section == "sql" and RE_CLAIMED_SQL.fullmatch(line) is not None:
            return True
        return "DB/Inst:" in line and section_of(line) is not None

    def feed_run(self, text: str, pos: int, endpos: int, plain: dict) -> tuple[int, int]:
        # rows of an open ruled table through the C reader (`run_step`), every other line
        # through `feed_one`: the detector's per-line work is saved on all of them
        if _c_rows is None or not NATIVE:
            return self.feed_lines(text, pos, endpos, plain)
        return self.feed_steps(text, pos, endpos, plain)

    def _native(self) -> tuple[_Table, list[_Column], tuple[int, ...], bool] | None:
        """The open table, its value columns, their right edges and whether words may follow
        the numbers, when the C reader (ingest/_syscore_src/awr.c) may read its rows: in the
        state where `_feed` hands a row straight to `_table_line` and `_row` reads it by the
        ruler's columns (a named, ruled table: not assumed, not collapsed, no EVENT column
        inside; no wrapped name or page break pending; no report section reading the line)."""
        table = self._table
        if (
            table is None
            or self._wrap
            or self._page_break
            or not self._started
            or self._section in _REPORT_SECTIONS
            or not NATIVE
        ):
            return None
        if table.native is None:
            if (
                table.kind == "enqueues"
                or not table.named_rows
                or table.assumed
                or table.collapsed
                or table.event_col is not None
            ):
                table.native = ()
            else:
                cols = self._value_columns(table)
                words = any(c.kind in ("class", "reason") for c in table.columns)
                table.native = (cols, tuple(c.end for c in cols), words)
        if not table.native:
            return None
        return table, *table.native

    def _lines_section(self) -> int:
        """awr_lines's code for the section being read when the C core may read its lines (the
        state in which `_feed` hands every line to the ReportReader): 0 when it may not."""
        section = self._section
        if not self._started or self._page_break or not NATIVE:
            return 0
        report = self._report
        if section == "load":
            return _LINES_LOAD if report._load_cols else 0  # else a line may name the columns
        if section == "sql":
            return _LINES_SQL if report.sql_keyed() else 0
        return _LINES_SKIP if section == "skip" else 0

    def _report_lines(
        self, text: str, pos: int, endpos: int, plain: dict, section: int
    ) -> tuple[int, int, int]:
        """A run of a report section's lines read by the C core (`awr_lines`): blank lines,
        Load Profile rows, SQL text and the lines of sections read for their title only, each
        applied as `feed` applies it, as long as the detector would hand the line to this
        parser (`handed`) and it is no section title (`section_of`, which awr.c leaves
        to Python); the line it stops at goes through `feed_one`."""
        assert _c_lines is not None
        _, lines = _c_lines(text, pos, endpos, section, MAX_LINE)
        taken = 0
        handed = self.handed
        report = self._report
        for nxt, line, kind, label, values in lines:
            if kind == _LINE_BLANK:
                self._blank()
            else:
                if not handed(line, plain):
                    break
                if section_of(line) is not None:
                    break
                if kind == _LINE_ROW:
                    report.load_row(label, values)
                elif section == _LINES_SQL and not report.sql_noise():
                    break
                self._prose = 0
            pos = nxt
            taken += 1
        return pos, taken, self.STEP_FEED

    def run_step(self, text: str, pos: int, endpos: int, plain: dict) -> tuple[int, int, int]:
        """The rows of the open table the C reader vouches for (`_native`), applied as `_row`
        applies them, as long as this block claims them (else the detector may hand a line
        elsewhere), or a report section's lines (`_report_lines`); the line it stops at goes
        through `feed_one`."""
        native = self._native()
        if native is None or _c_rows is None:
            section = self._lines_section() if _c_lines is not None else 0
            if section:
                return self._report_lines(text, pos, endpos, plain, section)
            return pos, 0, self.STEP_FEED
        table, cols, ends, words = native
        _, rows = _c_rows(text, pos, endpos, cols, ends, words, MAX_LINE)
        taken = 0
        claimed = RE_CLAIMED.fullmatch
        take = self._take_row
        for nxt, line, name, cells, trailing in rows:
            if claimed(line) is None or _titled_row(name, line):
                break
            take(table, name, cells, trailing)
            pos = nxt
            taken += 1
        if taken:
            self._prose = 0  # what `feed` does after an accepted line
        return pos, taken, self.STEP_FEED

    # -- feeding -------------------------------------------------------------------------------

    def feed(self, line: str) -> bool:
        s = line.rstrip("\r\n")
        if not s.strip():
            if not self._started:
                return False
            self._blank()
            return True
        native = self._native() if _c_rows is not None else None
        if native is not None:  # a row of the open table the C reader vouches for
            table, cols, ends, words = native
            _, rows = _c_rows(s, 0, len(s), cols, ends, words, MAX_LINE)
            if rows and not _titled_row(rows[0][2], s):
                _, _, name, cells, trailing = rows[0]
                self._take_row(table, name, cells, trailing)
                self._prose = 0
                return True
        accepted = self._feed(s)
        if accepted:
            self._started = True
            self._prose = 0
        elif (
            self._in_report
            and self._prose < MAX_REPORT_NOTES
            and _is_prose(s)
            and not RE_TOP_TITLE.match(s)
        ):
            # a line of someone's notes inside a pasted report: the report goes on after it
            self._prose += 1
            return True
        return accepted

    def _blank(self) -> None:
        """A blank line inside the block: the table ends, the header read so far is kept for
        a SQL*Plus page break."""
        if self._table is not None:
            self._last_table = self._table
        self._table = None
        if self._header:
            self._stash = self._header
        elif self._last_table is not None:
            self._stash = []
        self._header = []

    def _feed(self, s: str) -> bool:
        # Each test below runs only when the line's first character (or a character the line
        # must hold) allows its regex to match, so a table row is not asked a dozen questions
        # whose answers its first letter already gives. Case-insensitive regexes also match a
        # few letters beyond ASCII ('ſ' for 's', 'ı' for 'i'): a first character beyond ASCII
        # always asks.
        first = s.lstrip()[:1]
        if self._started and first in "OCP" and RE_PAGE_HEADER.match(s):
            # SQL*Plus repeats the column heading of a spooled report on every page
            self._header = self._stash
            if not self._header and self._table is None and self._last_table is not None:
                self._table = self._last_table  # the table goes on on the next page
            self._page_break = True
            return True
        if self._page_break:
            self._page_break = False
            if RE_SINGLE_RULER.match(s):
                return True
        top = first == "T" and RE_TOP_TITLE.match(s) is not None
        if self._events_top and top:
            # one report has one Top N table: a second one is another report or period (two
            # pasted side by side to compare), so it starts a block of its own
            return False
        section = section_of(s)
        if section is not None:
            self._end_table()
            if section == "tables":  # statistics tables the column names describe
                self._section = None
                self._title = sys.intern(" ".join(s.split())[:120])
                return True
            self._section = section
            self._report.title(s, section)
            if section in ("header", "load", "efficiency", "timemodel"):
                self._in_report = True
            if section in ("wait_class", "timemodel"):
                self._title = sys.intern(" ".join(s.split())[:120])
            return True
        if ":" in s and (RE_SNAP.match(s) or RE_MINUTES.search(s)):
            self._report.snapshot_line(s)
            return True
        titled = first in _TITLE_FIRST or not first.isascii()
        if self._section in _REPORT_SECTIONS:
            if top or (titled and RE_TITLE.match(s)):
                self._section = None
            elif self._section == "skip" or self._started:
                return self._report.feed(s, self._section)
        if first in "-=":  # '' too: a line of spaces (never here: `feed` takes blank lines)
            if RE_MULTI_RULER.match(s):
                self._open_table(s)
                return True
            if RE_SINGLE_RULER.match(s):
                self._end_table()
                return True
            if RE_NOTE.match(s):
                return self._started
        if titled:
            m = RE_INTERVAL.match(s)
            if m:
                self._set_interval(m.group(1), m.group(2) or "s")
                return True
            m = RE_TOP_TITLE.match(s) if top else RE_TITLE.match(s)
            if m:
                self._end_table()
                self._section = None
                self._scope = "bg" if m.group().lstrip().lower().startswith("background") else "fg"
                self._title = sys.intern(" ".join(m.group().split())[:120])
                rest = " " * m.end() + s[m.end() :]  # 'Top 5 Timed Events   Avg %Total': 'Avg..'
                self._header = [rest] if rest.strip() else []
                return True
        tildes = "~~~" in s
        if tildes and not RE_TILDES.sub("", s).strip(" ~"):
            return True  # the underline of a title
        if self._table is not None:
            return self._table_line(s)
        if tildes or _is_header(s):
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
            if (
                table.kind == "events"
                and table.named_rows
                and len(s) <= 60
                and not self._wrap
                and RE_WRAPPED_NAME.match(s)
            ):
                self._wrap = " ".join(s.split())  # a long event name wrapped onto its own line
                return True
            return False
        # one pass instead of a dry run first: a refused row changes nothing but the wrapped
        # words it took, which go back (the line may be prose that ends the block)
        wrap = self._wrap
        if not self._row(table, split):
            self._wrap = wrap
            if _is_prose(s):
                return False
            self.malformed += 1
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
            kind, named = self._kind(cols)
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
        kind, named = self._kind(cols)
        self._table = self._new_table(cols, kind, named)
        if cols and named:
            self._table.name_width = cols[0].end - cols[0].start
        self._header = []

    def _kind(self, cols: list[_Column]) -> tuple[str, bool]:
        """A table's kind: its section's when the section says (a Time Model reads like a
        statistics table, a Wait Class table like events), else from its columns."""
        if self._section in ("wait_class", "timemodel") and cols:
            return self._section, True
        return _table_kind(cols)

    def _new_table(
        self, cols: list[_Column], kind: str, named: bool, *, assumed: bool = False
    ) -> _Table:
        if named and cols:
            cols[0].kind = "name"
        event_col = next(
            (
                i
                for i, c in enumerate(cols)
                if 0 < i < len(cols) - 1 and c.label.upper() in ("EVENT", "EVENT_NAME")
            ),
            None,
        )
        if event_col is not None and not assumed and cols[-1].end > 0:
            for c in cols[: event_col + 1]:
                c.kind = "name"  # USERNAME, SID: who waited, not how much
        else:
            event_col = None
        table = _Table(
            kind=kind,
            columns=cols,
            title=self._title,
            top=bool(RE_TOP_TITLE.match(self._title)),
            named_rows=named,
            assumed=assumed,
            scope=self._scope,
            event_col=event_col,
            collapsed=bool(cols) and not assumed and all(c.end == 0 for c in cols),
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
        self._wrap = ""

    def _set_interval(self, value: str, unit: str) -> None:
        parsed = parse_number(value)
        if parsed is None:
            return
        factor = 60.0 if unit.lower().startswith("m") else 1.0
        self._interval_s = parsed[0] * factor

    # -- rows ----------------------------------------------------------------------------------

    @staticmethod
    def _value_columns(table: _Table) -> list[_Column]:
        if table.values is not None:
            return table.values
        if not table.named_rows:
            table.values = table.columns
        else:
            table.values = [c for c in table.columns if c.kind not in ("name", "class", "reason")]
        return table.values

    def _assign(
        self,
        table: _Table,
        nums: list[_Cell],
        *,
        aligned: bool = False,
        in_order: bool = False,
    ) -> list[tuple[_Column, float, float | None]] | None:
        """Give each number the column whose right edge is nearest, keeping left-to-right
        order. None when there are more numbers than columns, or (aligned=True) when a number
        sits more than ALIGN_SLACK characters from its column's right edge."""
        cols = self._value_columns(table)
        if len(nums) > len(cols):
            return None
        if table.assumed or table.collapsed or in_order:
            chosen = list(range(len(nums)))
        else:
            chosen = []
            lo = 0
            n_cols, n_nums = len(cols), len(nums)
            for i, (_, end, _) in enumerate(nums):
                # the nearest right edge in lo..hi, the leftmost on a tie (a plain loop: this
                # runs for every cell of every row)
                best, gap = lo, abs(cols[lo].end - end)
                for j in range(lo + 1, n_cols - (n_nums - i) + 1):
                    d = abs(cols[j].end - end)
                    if d < gap:
                        best, gap = j, d
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
        n_cols = len(self._value_columns(table))
        if n_cols == 0:
            return False
        if self._wrap and table.kind == "events":
            name = f"{self._wrap} {name}".strip()  # the wrapped line's words come first
            if not dry:
                self._wrap = ""
        if table.event_col is not None:
            col = table.columns[table.event_col]
            nxt = table.columns[table.event_col + 1].start
            name = line[col.start : nxt].strip()
            nums = [c for c in nums if c.start >= nxt - 1]
            if not name or not nums:
                return False
        if text and not any(c.kind in ("class", "reason") for c in table.columns):
            if len(text) == 1 and len(nums) == n_cols and "  " in line.strip():
                text = []  # a full row with someone's mark after it ('@jls'): the row stands
            else:
                return False  # words after the numbers: prose, not a row of this table
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
        collapsed = "  " not in line.strip()  # a pasted row whose alignment was lost
        cells = self._assign(table, nums, aligned=aligned and not collapsed, in_order=collapsed)
        if cells is None:
            return False
        if dry:
            return True
        self._take_row(table, name, cells, " ".join(text)[:60])
        return True

    def _take_row(
        self,
        table: _Table,
        name: str,
        cells: list[tuple[_Column, float, float | None]],
        trailing: str,
    ) -> None:
        """A row of `table` read: counted and applied by the table's kind (what `_row` and the
        C reader's rows both end in)."""
        # the same names come back in every report of an archive, and each report's block
        # keeps them as keys of its facts: one string each, not one per report
        name = sys.intern(name)
        table.rows += 1
        info = self._table_infos.get(id(table))
        if info is not None:
            info.rows = table.rows
        if table.kind == "events":
            self._event_row(table, name, cells, trailing)
        elif table.kind == "enqueues":
            self._enqueue_row(name, cells, trailing)
            self._pending_name = None
        elif table.kind == "stats":
            self._stat_row(name, cells)
        elif table.kind == "timemodel":
            self._time_model_row(name, cells)
        elif table.kind == "wait_class":
            self._wait_class_row(name, cells)

    def _time_model_row(self, name: str, cells: list[tuple[_Column, float, float | None]]) -> None:
        if name not in self._time_model and len(self._time_model) >= MAX_KEYS:
            return
        for col, value, unit in cells:
            low = col.label.lower()
            if col.kind == "time" or (col.kind == "ignore" and "time" in low and "%" not in low):
                self._time_model[name] = value * (unit or col.unit or 1.0)
            elif "%" in low and "cpu" not in low:
                self._time_model_pct[name] = value

    def _wait_class_row(self, name: str, cells: list[tuple[_Column, float, float | None]]) -> None:
        if name not in self._wait_class and len(self._wait_class) >= MAX_KEYS:
            return
        row = self._wait_class.setdefault(name, {})
        for col, value, unit in cells:
            if col.kind == "count":
                row["count"] = value
            elif col.kind == "time":
                row["waited_s"] = value * (unit or col.unit or 1.0)
            elif col.kind == "avg":
                row["avg_ms"] = value * (unit or col.unit or 1e-3) * 1000.0
            elif col.kind == "pct_db":
                row["pct_db_time"] = value

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
        if cls:
            if table.classed is None:
                table.classed = any(c.kind == "class" for c in table.columns)
            if table.classed:
                row["class"] = cls
        if name in CPU_ROWS:
            self._cpu[name] = {k: v for k, v in row.items() if isinstance(v, float)}
            return
        if table.name_width >= 20 and len(name) == table.name_width:
            name = self._uncut(name)
        if table.top:
            acc = self._events_top
        elif table.scope == "bg":
            acc = self._events_bg
        else:
            acc = self._events_full
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
        known = [n for n in self._events_top if n.startswith(name)]
        known += _long_names(name) if len(name) <= CACHED_HEADER else _long_names.__wrapped__(name)
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
        events = dict(self._events_full or self._events_top)
        other = self._events_top if self._events_full else {}
        for name, acc in other.items():
            if name not in events and not any(n.startswith(name) for n in events):
                events[name] = acc  # its full-table row was cut off or unreadable
        facts: dict[str, float | str | dict[str, float]] = {}
        details: dict = {
            "tables": [t.dump() for t in self._tables],
            "events_from": "full tables"
            if self._events_full
            else ("top-N summary" if self._events_top else None),
        }
        if self._interval_s is not None:
            details["interval_s"] = self._interval_s
        report_facts, report_details = self._report.facts(self._time_model)
        db_time = report_facts.get("report.db_time_s")
        db_time = db_time if isinstance(db_time, float) and db_time > 0 else None

        rows = self._event_rows(events, other, db_time)
        bg = self._event_rows(self._events_bg, {}, None) if self._events_bg else []
        busy = [r for r in rows if not r.idle]
        total = sum(r.waited_s or 0.0 for r in busy)
        idle_s = sum(r.waited_s or 0.0 for r in rows if r.idle)
        if events:
            facts["waits.total_s"] = _r(total)
            facts["waits.events"] = float(len(events))
        if events or bg:
            # a background process's event (LGWR's log file parallel write) is read by name as
            # readily as a foreground one: the per-event facts hold both, the foreground's row
            # where both print one; shares and totals stay foreground only
            both = [r for r in bg if r.event not in events] + rows
            _table_fact(facts, "event.waited_s", {r.event: r.waited_s for r in both})
            _table_fact(facts, "event.count", {r.event: r.count for r in both})
            _table_fact(facts, "event.avg_ms", {r.event: r.avg_ms for r in both})
            _table_fact(facts, "event.max_ms", {r.event: r.max_ms for r in both})
        if events:
            _table_fact(facts, "event.timeouts", {r.event: r.timeouts for r in rows})
            _table_fact(facts, "event.pct_of_waited", {r.event: r.pct_of_waited for r in rows})
            if idle_s > 0:
                facts["waits.idle_s"] = _r(idle_s)
            if total > 0:
                facts["waits.top_event"] = busy[0].event
                facts["waits.top_pct"] = busy[0].pct_of_waited or 0.0
        pct_db = {r.event: r.pct_of_db_time for r in rows}
        for name, cpu in self._cpu.items():
            pct_db[name] = cpu.get("pct_db")
            if "time_s" in cpu and events:
                facts["event.cpu_s"] = cpu["time_s"]
        _table_fact(facts, "event.pct_of_db_time", pct_db)
        details["events"] = [r.dump() for r in rows[:TOP_ROWS]]
        if self._cpu:
            details["cpu"] = self._cpu
        if bg:
            _table_fact(facts, "bg_event.waited_s", {r.event: r.waited_s for r in bg})
            _table_fact(facts, "bg_event.count", {r.event: r.count for r in bg})
            _table_fact(facts, "bg_event.avg_ms", {r.event: r.avg_ms for r in bg})
            details["background_events"] = [r.dump() for r in bg[:TOP_ROWS]]
        if self._wait_class:
            for fact, key in (
                ("wait_class.waited_s", "waited_s"),
                ("wait_class.count", "count"),
                ("wait_class.avg_ms", "avg_ms"),
                ("wait_class.pct_of_db_time", "pct_db_time"),
            ):
                _table_fact(facts, fact, {k: v.get(key) for k, v in self._wait_class.items()})
            details["wait_classes"] = [{"wait_class": k, **v} for k, v in self._wait_class.items()]
        if self._time_model:
            facts["time_model.s"] = dict(self._time_model)
        if self._time_model_pct:
            facts["time_model.pct_of_db_time"] = dict(self._time_model_pct)
        facts.update(report_facts)
        details.update(report_details)

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
        identifiers += list(self._report.sql)[:50]
        return facts, details, list(dict.fromkeys(identifiers)), None

    @staticmethod
    def _event_rows(
        events: dict[str, _EventAcc], other: dict[str, _EventAcc], db_time: float | None
    ) -> list[EventRow]:
        """One row per event, busiest first. Idle waits are listed but are in no base: neither
        in pct_of_waited's total nor given a share of DB time (they are not part of it)."""
        total = sum(e.waited_s or 0.0 for n, e in events.items() if not _idle(n, e.wait_class))
        rows: list[EventRow] = []
        for name, acc in events.items():
            waited = acc.waited_s
            idle = _idle(
                name, acc.wait_class or (other[name].wait_class if name in other else None)
            )
            pct_db = acc.pct_db
            if pct_db is None and name in other:
                pct_db = other[name].pct_db
            if pct_db is None and db_time and waited is not None and not idle:
                pct_db = _r(waited / db_time * 100.0)
            rows.append(
                EventRow(
                    event=name,
                    count=acc.count,
                    waited_s=_r(waited) if waited is not None else None,
                    avg_ms=_r_opt(acc.average_ms()),
                    max_ms=_r_opt(acc.max_ms),
                    timeouts=acc.timeouts,
                    pct_of_waited=_r(waited / total * 100.0)
                    if waited is not None and total > 0 and not idle
                    else None,
                    pct_of_db_time=None if idle else pct_db,
                    wait_class=acc.wait_class,
                    idle=idle,
                )
            )
        rows.sort(key=lambda r: (r.idle, -(r.waited_s or 0.0), -(r.count or 0.0), r.event))
        return rows


@lru_cache(maxsize=1024)
def _long_names(name: str) -> tuple[str, ...]:
    """The LONG_EVENT_NAMES a cut name may stand for: the same few cut names in every report of
    an archive (each asked of all of them was ~2 % of its parse)."""
    return tuple(n for n in LONG_EVENT_NAMES if n.startswith(name))


def _r(x: float) -> float:
    return round(x, 6)


def _r_opt(x: float | None) -> float | None:
    return None if x is None else _r(x)


def _table_fact(facts: dict, name: str, table: dict[str, float | None]) -> None:
    clean = {k: v for k, v in table.items() if v is not None and math.isfinite(v)}
    if clean:
        facts[name] = clean
