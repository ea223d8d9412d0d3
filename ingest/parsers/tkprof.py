"""tkprof reports -> tkprof.* and event.* facts.

The first question a DBA asks of a tkprof is whether elapsed time is explained by cpu plus
waits. When it is not, the gap (unaccounted-for time) points below Oracle's instrumentation:
run-queue, paging, or kernel code that never posts a wait (the 12.2 PL/SQL exception seed).

Which numbers feed which facts, and why:
- Time and call totals come from `OVERALL TOTALS FOR ALL NON-RECURSIVE STATEMENTS` when the
  report has it, else from the sum of the non-recursive statements (of all statements when every
  one is recursive). Recursive calls run inside their parents: adding them counts time twice.
- Events come from every wait table: the OVERALL sections when present, else the statements.
  A recursive statement's waits happen inside its parent's call, so they are part of the
  accounting, and each wait is listed under exactly one cursor, so nothing is counted twice.
- tkprof.waited_s leaves out IDLE_EVENTS: the gaps between database calls (client think time).
  tkprof lists them, but they lie outside every call's elapsed. They stay in event.* and in
  waits.total_s, which describe the tables as printed. 'SQL*Net more data from client' counts
  (the client sending the rest of a call, inside it), and so does 'PL/SQL lock timer'
  (DBMS_LOCK.SLEEP sleeps inside the call).
- tkprof.hard_parses includes recursive statements: SQL run from PL/SQL is recursive, and its
  hard parses are the ones people hunt.
- unaccounted = elapsed - cpu - waited is never clamped: a negative value is a finding too
  (cpu counted both in a call and in a wait).
- tkprof.rows_per_fetch divides the Fetch row's rows by fetch calls (the array size people
  check); tkprof.rows and lio_per_row use all rows, DML included.

Memory stays bounded: running totals, the statement being read, and the slowest
MAX_STATEMENTS_KEPT statement summaries.
"""

from __future__ import annotations

import heapq
import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field, fields
from typing import ClassVar

from pydantic import BaseModel, Field

from ingest.base import MAX_LINE, Parser
from ingest.model import Format, Platform

IDLE_EVENTS: frozenset[str] = frozenset(
    {"SQL*Net message from client", "SQL*Net vector message from client"}
)

TEXT_EXCERPT = 300  # characters of SQL text kept per statement
MAX_SQL_LINES = 2000  # SQL text lines without a call table before we stop believing it is SQL
MAX_ROWSOURCE_ROWS = 60  # plan lines kept per statement
MAX_STATEMENTS_KEPT = 50  # statement summaries kept in details (the slowest)
MAX_DISTINCT = 100_000  # distinct statements remembered for tkprof.distinct_statements
MAX_EVENTS = 2000  # distinct events tracked; Oracle defines fewer
TOP_EVENTS = 50  # events listed in details

_NUM = r"\d+(?:\.\d+)?"
RE_HEADER = re.compile(r"^\s*TKPROF:\s+Release\s+(\S+)")
RE_CALL_HEADER = re.compile(r"^\s*call\s+count\s+cpu\s+elapsed\s+disk\s+query\s+current\s+rows\s*$")
RE_CALL_ROW = re.compile(
    rf"^\s*(Parse|Execute|Fetch|total)\s+(\d+)\s+({_NUM})\s+({_NUM})\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s*$"
)
RE_CALL_ROW_LOOSE = re.compile(r"^\s*(Parse|Execute|Fetch|total)\s+\S")
RE_RULER = re.compile(r"^\s*-+(?:\s+-+)*\s*$")
RE_STARS = re.compile(r"^\s*\*{10,}\s*$")
RE_SQL_ID = re.compile(r"^\s*SQL ID:\s*(\w+)(?:\s+Plan Hash:\s*(\d+))?\s*$")
RE_PLAN_HASH = re.compile(r"^\s*Plan Hash:\s*(\d+)\s*$")
RE_MISSES = re.compile(r"^\s*Misses in library cache during (parse|execute):\s*(\d+)\s*$")
RE_OPTIMIZER = re.compile(r"^\s*Optimizer (?:mode|goal):\s*(\S+)")
RE_USER = re.compile(r"^\s*Parsing user id:\s*(\S+)(.*)$")
RE_DEPTH = re.compile(r"recursive depth:\s*(\d{1,6})\b")
RE_PLAN_STATS = re.compile(r"^\s*Number of plan statistics captured:\s*(\d+)\s*$")
RE_ROWSRC_HEADER = re.compile(
    r"^\s*Rows(\s+\(1st\)\s+Rows\s+\(avg\)\s+Rows\s+\(max\))?\s+(?:Row Source Operation|Execution Plan)\s*$"
)
RE_ROWSRC_1 = re.compile(r"^(\s*(\d+)\s+)(\S.*)$")  # lines arrive right-stripped
RE_ROWSRC_3 = re.compile(r"^(\s*(\d+)\s+(\d+)\s+(\d+)\s+)(\S.*)$")
RE_ROWSRC_STATS = re.compile(r"\((cr=[^)]*)\)")
RE_ROWSRC_SHAPE = re.compile(r"^\s*\d+\s+.*\(cr=\d+ pr=\d+ pw=\d+ time=\d+ us\b")  # tkprof only
RE_KV = re.compile(r"(\w+)=(\d+)")
RE_WAIT_INTRO = re.compile(r"^\s*Elapsed times include waiting on following events:\s*$")
RE_WAIT_HEAD1 = re.compile(r"^\s*Event waited on\s+Times\s+Max\.\s*Wait\s+Total Waited\s*$")
RE_WAIT_HEAD2 = re.compile(r"^\s*-+\s+Waited\s+-+\s+-+\s*$")
RE_INT = re.compile(r"^\d+$")
RE_DEC = re.compile(rf"^{_NUM}$")
RE_OVERALL = re.compile(r"^\s*OVERALL TOTALS FOR ALL (NON-RECURSIVE|RECURSIVE) STATEMENTS\s*$")
RE_COUNT_LINE = re.compile(
    r"^\s*(\d{1,15})\s+(?:(user|internal|unique)\s+)?(SQL statements?|sessions?)\s+in\s+"
    r"(session|trace ?file)\.?\s*$"
)
RE_TRACE_LINE = re.compile(r"^\s*(\d{1,15})\s+(lines|elapsed seconds) in trace file\.?\s*$")
RE_TRAILER_KV = re.compile(r"^\s*(Trace file compatibility|Trace file|Sort options):\s*(.*)$")
RE_COPYRIGHT = re.compile(r"^\s*Copyright \(c\)")
RE_LEGEND = re.compile(r"^\s*(?:count|cpu|elapsed|disk|query|current|rows)\s*=\s")
RE_ERROR = re.compile(
    r"^\s*(?:The following statements? encountered an? error during parse:|Error encountered:"
    r"|parse error offset:|error during execute of EXPLAIN PLAN|ORA-\d{5})"
)
RE_SQL_START = re.compile(
    r"^\s*(?:(?:select|insert|update|delete|merge|with|begin|declare|call|alter|create|drop"
    r"|truncate|lock|commit|rollback|savepoint|grant|revoke|analyze|explain|set|comment|rename"
    r"|audit|noaudit|flashback|purge|associate|disassociate)\b|/\*|\(|<<)",
    re.IGNORECASE,
)

# parser states
START, PREAMBLE, AFTER_STARS, SQL, CALLS, STRUCT, ROWSRC, WAITS, TRAILER = range(9)

try:  # the C core's reader of call and wait table runs (ingest/_syscore_src/tkprof.c); optional
    from ingest._syscore import tkprof_tables as _c_tables
except ImportError:  # pragma: no cover - the pure-Python path is the reference
    _c_tables = None
# False: feed_run reads every line in Python (the reference the tests compare the C reader
# with). The C reader takes a strict subset of _FAST's lines and applies them as feed_run does.
NATIVE = _c_tables is not None
_C_STATES = (START, CALLS, STRUCT, ROWSRC, WAITS, TRAILER, SQL)
_C_KINDS = ("Parse", "Execute", "Fetch", "total")

# The lines a large report is mostly made of, read straight from the text by the fast path
# (`feed_run`), one anchored match a line: a call-table row (groups 1-8), a wait-table row (9-12),
# a line starting with a digit (13: a row source line when it holds `(cr=` and ends in `)`), a
# ruler (14), a row of stars (15), a blank line (16). Each alternative is a strict subset of what
# `_step` reads the same way in the states `feed_run` applies it in; anything else (and every
# line in another state) goes through `feed`. A wait row's event may not start like a line
# `_step_common` or RE_HEADER reads first. Quantifiers are possessive and a wait row's event
# ends in a non-space, so no alternative backtracks over a long run of spaces.
_FAST = re.compile(
    r"(?:[ \t]*+(Parse|Execute|Fetch|total)[ \t]++(\d++)[ \t]++(\d++(?:\.\d++)?+)"
    r"[ \t]++(\d++(?:\.\d++)?+)[ \t]++(\d++)[ \t]++(\d++)[ \t]++(\d++)[ \t]++(\d++)"
    r"|[ \t]++((?!TKPROF:|Optimizer |Parsing user id:|Trace file|Sort options:|The following "
    r"|Error encountered:|parse error offset:|error during execute|ORA-\d|SQL ID:|Plan Hash:"
    r"|Misses in |Number of plan |OVERALL |Rows\b|Elapsed times |Event waited |Row Source"
    r"|(?:Parse|Execute|Fetch|total)\s|call\s|[\d*-])\S(?:[^\n]{0,400}?\S)?)"
    r"[ \t]++(\d++)[ \t]++(\d++(?:\.\d++)?+)[ \t]++(\d++(?:\.\d++)?+)"
    r"|([ \t]*+\d[^\n]{0,4000}+)"
    r"|(-++(?:[ \t]++-++)*+)"
    r"|([ \t]*+\*{10,}+)"
    r"|()"
    r")[ \t]*+\r*+(?:\n|\Z)"
)
# Lines only a tkprof report prints, in any state past the first line: the open block claims
# them whatever another format makes of them (and the detector need not ask the others).
_CLAIMED = re.compile(
    r"^\s*+(?:\*{10,}+\s*$|(?:Parse|Execute|Fetch|total)\s+\d+\s+\d+(?:\.\d+)?\s+\d+(?:\.\d+)?\s"
    r"|SQL ID:|Plan Hash:|Misses in library cache during |Optimizer (?:mode|goal):"
    r"|Parsing user id:|Number of plan statistics captured:|-+\s+Waited\s"
    r"|-++(?:\s++-++)*+\s*$|Rows(?:\s+\(1st\)|\s+Row Source Operation|\s+Execution Plan))"
)

# How every line `start_score` scores above 0 starts (after its `^\s*`): one match turns away the
# rest, SQL text above all, which the detector asks the open block's start_score about (twice
# when feed_run hands it on) before asking the other formats: 10 regexes a line before this.
_SCORED = re.compile(
    r"\s*+(?:TKPROF:|call|OVERALL TOTALS|Elapsed times|Event waited|\d|SQL ID:|Misses in"
    r"|Parse|Execute|Fetch|total|Parsing user id:)"
)

# How every line `_step_sql` reads otherwise than as SQL text starts (RE_HEADER, RE_CALL_HEADER,
# RE_STARS, RE_CALL_ROW, RE_SQL_ID, RE_PLAN_HASH after their `^\s*`): one match instead of six.
_SQL_OTHER = re.compile(r"\s*+(?:TKPROF:|call|\*|Parse|Execute|Fetch|total|SQL ID:|Plan Hash:)")

# The first words of a statement's attribute lines and table headers (`_attr`): which of
# `_step_common`'s regexes reads the line, asked alone instead of the whole list in order.
_ATTR = re.compile(
    r"[ \t]*+(call|SQL ID:|Misses in |Optimizer |Parsing user id:|Number of plan |Rows\b"
    r"|Elapsed times |Event waited |-++[ \t]++Waited\b)"
)


class RowSourceLine(BaseModel):
    """One plan line with its runtime statistics, as tkprof printed it."""

    rows: float
    rows_avg: float | None = None
    rows_max: float | None = None
    depth: int = 0
    operation: str
    stats: dict[str, float] = Field(default_factory=dict)  # cr, pr, pw, time (us), starts, cost


class StatementSummary(BaseModel):
    index: int = Field(description="1-based position in the report")
    sql_id: str | None = None
    plan_hash: str | None = None
    text: str = ""
    depth: int = 0
    parsing_user: str | None = None
    optimizer_mode: str | None = None
    calls: dict[str, dict[str, float]] = Field(default_factory=dict)
    elapsed_s: float = 0.0
    cpu_s: float = 0.0
    waited_s: float = 0.0
    unaccounted_s: float = 0.0
    misses_parse: int = 0
    misses_execute: int = 0
    waits: list[dict[str, float | str]] = Field(default_factory=list)
    row_source: list[RowSourceLine] = Field(default_factory=list)
    row_source_lines: int = 0


@dataclass
class _Totals:
    """A call table reduced to the numbers facts need."""

    parse_count: float = 0.0
    execute_count: float = 0.0
    fetch_count: float = 0.0
    cpu: float = 0.0
    elapsed: float = 0.0
    disk: float = 0.0
    query: float = 0.0
    current: float = 0.0
    rows: float = 0.0
    parse_cpu: float = 0.0
    fetch_rows: float = 0.0

    def add(self, other: _Totals) -> None:
        # field by field, written out: a loop of getattr/setattr over fields() was a sixth of
        # closing a statement (once per statement: 591k times in the 1 GB capture)
        self.parse_count += other.parse_count
        self.execute_count += other.execute_count
        self.fetch_count += other.fetch_count
        self.cpu += other.cpu
        self.elapsed += other.elapsed
        self.disk += other.disk
        self.query += other.query
        self.current += other.current
        self.rows += other.rows
        self.parse_cpu += other.parse_cpu
        self.fetch_rows += other.fetch_rows


@dataclass
class _Stmt:
    kind: str = "statement"  # statement | overall_nonrec | overall_rec
    sql_id: str | None = None
    plan_hash: str | None = None
    text: str = ""
    text_lines: int = 0
    calls: dict[str, tuple[float, ...]] = field(default_factory=dict)
    misses_parse: int = 0
    misses_execute: int = 0
    optimizer_mode: str | None = None
    user: str | None = None
    depth: int = 0
    # plan lines as RowSourceLine's fields: the models are built for the statements shown
    row_source: list[dict] = field(default_factory=list)
    row_source_lines: int = 0
    rs_base_col: int | None = None
    rs_three: bool = False
    waits: dict[str, list[float]] = field(default_factory=dict)  # event -> [count, max_s, total_s]

    def totals(self) -> _Totals | None:
        if not self.calls:
            return None
        t = _Totals()
        whole = self.calls.get("total")
        if whole is None:
            parts = [self.calls[k] for k in ("Parse", "Execute", "Fetch") if k in self.calls]
            sums = [sum(p[i] for p in parts) for i in range(7)]
            whole = tuple(sums)
        _, t.cpu, t.elapsed, t.disk, t.query, t.current, t.rows = whole
        t.parse_count = self.calls.get("Parse", (0.0,) * 7)[0]
        t.execute_count = self.calls.get("Execute", (0.0,) * 7)[0]
        t.fetch_count = self.calls.get("Fetch", (0.0,) * 7)[0]
        t.parse_cpu = self.calls.get("Parse", (0.0,) * 7)[1]
        t.fetch_rows = self.calls.get("Fetch", (0.0,) * 7)[6]
        return t

    def waited(self) -> float:
        return sum(v[2] for e, v in self.waits.items() if e not in IDLE_EVENTS)


# add() names every field: a field added to _Totals and not to add() fails here, at import
assert len(fields(_Totals)) == 11, "_Totals.add adds 11 fields"


def _add_events(into: dict[str, list[float]], events: dict[str, list[float]]) -> int:
    """Merge event rows; returns how many new events did not fit under MAX_EVENTS."""
    dropped = 0
    for name, (count, max_s, total_s) in events.items():
        cur = into.get(name)
        if cur is None:
            if len(into) >= MAX_EVENTS:
                dropped += 1
                continue
            into[name] = [count, max_s, total_s]
        else:
            cur[0] += count
            cur[1] = max(cur[1], max_s)
            cur[2] += total_s
    return dropped


@dataclass
class _Agg:
    """Everything kept from closed statements."""

    statements: int = 0
    nonrec: _Totals = field(default_factory=_Totals)
    nonrec_n: int = 0
    rec: _Totals = field(default_factory=_Totals)
    rec_n: int = 0
    stmt_events: dict[str, list[float]] = field(default_factory=dict)
    stmt_misses_parse: int = 0
    stmt_misses_execute: int = 0
    overall: dict[str, _Totals] = field(default_factory=dict)  # overall_nonrec / overall_rec
    overall_events: dict[str, list[float]] = field(default_factory=dict)
    overall_misses_parse: int = 0
    overall_misses_execute: int = 0
    overall_seen: bool = False
    dropped_events: int = 0
    top: list[tuple[float, int, StatementSummary]] = field(default_factory=list)
    # hard parses split by recursion (a literal-SQL report shows them non-recursive, a NOCACHE
    # sequence or a dictionary problem recursive) and the distinct statements seen
    rec_misses_parse: int = 0
    nonrec_misses_parse: int = 0
    overall_rec_misses_parse: int = 0
    overall_nonrec_misses_parse: int = 0
    distinct: set[str] = field(default_factory=set)
    distinct_dropped: int = 0
    seq_updates: float = 0.0

    def copy(self) -> _Agg:
        new = _Agg(**{f.name: getattr(self, f.name) for f in fields(self)})
        new.nonrec = _Totals(**vars(self.nonrec))
        new.rec = _Totals(**vars(self.rec))
        new.stmt_events = {k: list(v) for k, v in self.stmt_events.items()}
        new.overall = {k: _Totals(**vars(v)) for k, v in self.overall.items()}
        new.overall_events = {k: list(v) for k, v in self.overall_events.items()}
        new.top = list(self.top)
        new.distinct = set(self.distinct)
        return new

    def take(self, st: _Stmt) -> None:
        totals = st.totals()
        if st.kind != "statement":
            self.overall_seen = True
            if totals is not None:
                self.overall[st.kind] = totals
            self.dropped_events += _add_events(self.overall_events, st.waits)
            self.overall_misses_parse += st.misses_parse
            self.overall_misses_execute += st.misses_execute
            if st.kind == "overall_rec":
                self.overall_rec_misses_parse += st.misses_parse
            else:
                self.overall_nonrec_misses_parse += st.misses_parse
            return
        if totals is None and not st.waits:
            return  # SQL text without a call table (a parse error, a cut-off paste)
        self.dropped_events += _add_events(self.stmt_events, st.waits)
        self.stmt_misses_parse += st.misses_parse
        self.stmt_misses_execute += st.misses_execute
        if st.depth > 0:
            self.rec_misses_parse += st.misses_parse
        else:
            self.nonrec_misses_parse += st.misses_parse
        key = st.sql_id or " ".join(st.text.split())[:TEXT_EXCERPT]
        if key and key not in self.distinct:
            if len(self.distinct) < MAX_DISTINCT:
                self.distinct.add(key)
            else:
                self.distinct_dropped += 1
        if totals is None:
            return
        # the text is kept one space between words and none in front, so its first six
        # characters are the first six of the joined words: the split runs for UPDATEs alone
        text = st.text
        if text[:6].lower() == "update" and " ".join(text.split())[:12].lower() == "update seq$ ":
            self.seq_updates += totals.execute_count
        self.statements += 1
        if st.depth > 0:
            self.rec.add(totals)
            self.rec_n += 1
        else:
            self.nonrec.add(totals)
            self.nonrec_n += 1
        # the summary (a pydantic model) is built only for a statement that enters the top list:
        # in a large report most do not, and building each was a tenth of the parse
        key = (totals.elapsed, -self.statements)
        if len(self.top) < MAX_STATEMENTS_KEPT:
            heapq.heappush(self.top, (*key, _summary(st, totals, self.statements)))
        elif key > self.top[0][:2]:
            heapq.heapreplace(self.top, (*key, _summary(st, totals, self.statements)))


def _r(x: float) -> float:
    return round(x, 6)


def _summary(st: _Stmt, totals: _Totals, index: int) -> StatementSummary:
    names = ("count", "cpu", "elapsed", "disk", "query", "current", "rows")
    waited = st.waited()
    waits = sorted(st.waits.items(), key=lambda kv: -kv[1][2])
    return StatementSummary(
        index=index,
        sql_id=st.sql_id,
        plan_hash=st.plan_hash,
        text=st.text,
        depth=st.depth,
        parsing_user=st.user,
        optimizer_mode=st.optimizer_mode,
        calls={k: dict(zip(names, v, strict=True)) for k, v in st.calls.items()},
        elapsed_s=totals.elapsed,
        cpu_s=totals.cpu,
        waited_s=_r(waited),
        unaccounted_s=_r(totals.elapsed - totals.cpu - waited),
        misses_parse=st.misses_parse,
        misses_execute=st.misses_execute,
        waits=[
            {"event": e, "count": c, "max_wait_s": m, "total_waited_s": t, "idle": e in IDLE_EVENTS}
            for e, (c, m, t) in waits[:TOP_EVENTS]
        ],
        row_source=[RowSourceLine(**row) for row in st.row_source],
        row_source_lines=st.row_source_lines,
    )


MAX_VALUE = 1e18  # larger than any counter tkprof prints; bigger "numbers" are noise


def _finite(*values: float) -> bool:
    # -MAX_VALUE <= v <= MAX_VALUE is isfinite(v) and abs(v) <= MAX_VALUE (NaN compares false),
    # without a generator and two calls per value (it runs on every plan and wait row)
    for v in values:  # noqa: SIM110 (all() with a generator is what this loop replaced)
        if not -MAX_VALUE <= v <= MAX_VALUE:
            return False
    return True


class TkprofParser(Parser):
    """Reads one tkprof report (or a piece of one: a bare call table, a wait table)."""

    format: ClassVar[Format] = "tkprof"

    @classmethod
    def start_score(cls, line: str) -> int:
        if not _SCORED.match(line):
            return 0
        if (
            RE_HEADER.match(line)
            or RE_CALL_HEADER.match(line)
            or RE_OVERALL.match(line)
            or RE_WAIT_INTRO.match(line)
            or RE_WAIT_HEAD1.match(line)
            or RE_ROWSRC_SHAPE.match(line)
        ):
            return 2
        if (
            RE_SQL_ID.match(line)
            or RE_MISSES.match(line)
            or RE_CALL_ROW.match(line)
            or RE_USER.match(line)
        ):
            return 1
        return 0

    fast = True

    def __init__(self) -> None:
        super().__init__()
        self._state = START
        self._stmt: _Stmt | None = None
        self._agg = _Agg()
        self._release: str | None = None
        self._header_info: dict[str, str] = {}
        self._trailer: dict[str, float] = {}
        self._overall_counts: dict[str, float] = {}

    # -- feeding -------------------------------------------------------------------------------

    def feed(self, line: str) -> bool:
        s = line.rstrip()
        action = self._blank() if not s.strip() else self._step(s)
        if action is None:
            return False
        action()
        return True

    def claims(self, line: str) -> bool:  # type: ignore[override]
        """Inside a report: the lines only tkprof prints (call and wait rows, rulers, stars, the
        statement's attribute lines, row source lines with their statistics) and blank lines.
        Claiming only matters for a line another format scores 2; what tkprof then does with
        it is what `feed` says, as always. SQL text is not claimed: a cut statement followed by
        another tool's header (vmstat's ` r  b   swpd`) must still end there."""
        st = self._state
        if st == START:
            return False
        if not line.strip() or _CLAIMED.match(line):
            return True
        if st == WAITS:
            return _wait_row(line.rstrip()) is not None
        if st == ROWSRC:
            return "(cr=" in line
        return False

    def feed_run(self, text: str, pos: int, endpos: int, plain: dict) -> tuple[int, int]:
        """Runs of a report without the detector's per-line work: one anchored regex a line
        reads call rows, wait rows, row source lines, rulers, stars and blank lines straight
        from the text, with the state changes `feed` would make. Other lines go through `feed`
        when this block claims them, they score 2 here, or the detector's memo says no other
        format starts on them; else the run stops."""
        taken = 0
        fast = _FAST.match
        attr = _ATTR.match
        call_row = self._call_row
        limit = endpos + 1 if endpos < len(text) else endpos
        native = _c_tables if NATIVE else None
        while pos < endpos:
            if native is not None:  # the table lines it can vouch for, then one in Python
                pos, k = native(
                    self, text, pos, endpos, _C_STATES, _C_KINDS, MAX_LINE, MAX_EVENTS,
                    MAX_ROWSOURCE_ROWS, plain, MAX_SQL_LINES, TEXT_EXCERPT,
                )  # fmt: skip
                if k:
                    taken += k
                    if pos >= endpos:
                        break
                if self._state == SQL:
                    # SQL text the C reader left: the detector's memo had no answer, so it must
                    # ask the other formats about it (feed_one would only find that out)
                    nl = text.find("\n", pos, endpos)
                    line = text[pos : endpos if nl < 0 else nl].rstrip("\r")
                    if plain.get((type(self), line)) is None and not _SQL_OTHER.match(line):
                        break
            m = fast(text, pos, limit)
            if m is not None and m.end() - pos <= MAX_LINE:
                i = m.lastindex
                st = self._state
                done = True
                if i == 8:  # a call row
                    if st != TRAILER:
                        g = m.groups()
                        call_row(g[0], tuple(float(x) for x in g[1:8]))
                    else:
                        done = False
                elif i == 12:  # a wait row
                    if st == WAITS:
                        g = m.groups()
                        self._add_wait(g[8].strip(), g[9], g[10], g[11])
                    else:
                        done = False
                elif i == 13:  # a line starting with a digit: a row source line?
                    row = m[13].rstrip()
                    act = None
                    if st == ROWSRC and "(cr=" in row and row[-1] == ")":
                        act = self._step_rowsource(row)
                    if act is not None:
                        act()
                    else:
                        done = False
                elif i == 14:  # a ruler
                    done = st in (CALLS, ROWSRC, STRUCT)
                elif i == 15:  # stars
                    self._on_stars()
                else:  # blank
                    if st == START:
                        done = False
                    elif st in (CALLS, ROWSRC, WAITS):
                        self._state = STRUCT
                if done:
                    taken += 1
                    pos = m.end()
                    continue
            if self._state not in (START, TRAILER) and (a := attr(text, pos, limit)) is not None:
                nl = text.find("\n", pos, endpos)
                end = endpos if nl < 0 else nl
                act = self._attr(a[1], text[pos:end].rstrip()) if end - pos <= MAX_LINE else None
                if act is not None:
                    act()
                    taken += 1
                    pos = end + 1
                    continue
            nxt = self.feed_one(text, pos, endpos, plain)
            if nxt < 0:
                break
            taken += 1
            pos = nxt
        return min(pos, endpos + 1) if taken else pos, taken

    def _attr(self, word: str, s: str) -> Callable[[], None] | None:
        """For `feed_run`: what `_step` makes of an attribute line or table header (`word` is
        how it starts, `s` the line right-stripped) outside SQL text, asking only the regex that
        reads it; None to leave the line to `feed`. Past the first line these are lines the
        block claims or scores 2, so the detector hands them here; inside SQL text (a header
        ends it) only the call table's header means the same."""
        st = self._state
        if word == "call":
            return self._on_call_header if RE_CALL_HEADER.match(s) else None
        if st == SQL:
            return None
        if word == "SQL ID:":
            m = RE_SQL_ID.match(s)
            return m and (lambda: self._new_stmt(sql_id=m.group(1), plan_hash=m.group(2)))
        if word == "Misses in ":
            m = RE_MISSES.match(s)
            return m and (lambda: self._on_misses(m.group(1), m.group(2)))
        if word == "Optimizer ":
            m = RE_OPTIMIZER.match(s)
            return m and (lambda: self._set_attr("optimizer_mode", m.group(1)))
        if word == "Parsing user id:":
            m = RE_USER.match(s)
            return m and (lambda: self._on_user(m.group(1), m.group(2)))
        if word == "Number of plan ":
            return (lambda: self._to(STRUCT)) if RE_PLAN_STATS.match(s) else None
        if word == "Rows":
            m = RE_ROWSRC_HEADER.match(s)
            return m and (lambda: self._on_rowsource_header(bool(m.group(1))))
        if word in ("Elapsed times ", "Event waited "):
            if RE_WAIT_INTRO.match(s) or RE_WAIT_HEAD1.match(s):
                return self._on_wait_intro
            return None
        # the wait table's second header line means something only inside a wait table
        return _noop if st == WAITS and RE_WAIT_HEAD2.match(s) else None

    def _blank(self) -> Callable[[], None] | None:
        if self._state == START:
            return None

        def act() -> None:
            if self._state in (CALLS, ROWSRC, WAITS):
                self._state = STRUCT

        return act

    def _step(self, s: str) -> Callable[[], None] | None:
        """Decide what the line is without touching state; return the change to apply."""
        st = self._state
        if st == SQL and not _SQL_OTHER.match(s):  # SQL text: nothing else reads it
            return self._step_sql_text(s)
        m = RE_HEADER.match(s)
        if m:
            if st != START:
                return None  # a second report starts its own block
            return lambda: self._on_header(m.group(1))
        if st == SQL:
            return self._step_sql(s)
        if st == TRAILER and not (
            RE_STARS.match(s)
            or RE_COUNT_LINE.match(s)
            or RE_TRACE_LINE.match(s)
            or RE_TRAILER_KV.match(s)
        ):
            return None  # the report is over: whatever follows is not part of it
        action = self._step_common(s)
        if action is not None:
            return action
        if st == CALLS and RE_CALL_ROW_LOOSE.match(s):
            return self._malformed
        if st == ROWSRC:
            return self._step_rowsource(s)
        if st != WAITS and RE_ROWSRC_SHAPE.match(s):
            three = RE_ROWSRC_3.match(s) is not None
            return lambda: self._rowsource_without_header(s, three)
        if st == WAITS:
            return self._step_waits(s)
        if st in (PREAMBLE, AFTER_STARS):
            if RE_LEGEND.match(s) or RE_COPYRIGHT.match(s):
                return _noop
            if RE_SQL_START.match(s) or RE_ERROR.match(s):
                return lambda: self._new_stmt(text=s)
        return None

    def _step_sql(self, s: str) -> Callable[[], None] | None:
        stmt = self._stmt
        if RE_CALL_HEADER.match(s):
            return self._on_call_header
        if RE_STARS.match(s):
            return self._on_stars
        if RE_CALL_ROW.match(s):
            return lambda: self._on_call_row(s)
        m = RE_SQL_ID.match(s)
        if m:
            if stmt is not None and stmt.sql_id is None and not stmt.text:
                return lambda: self._set_ids(m.group(1), m.group(2))
            return lambda: self._new_stmt(sql_id=m.group(1), plan_hash=m.group(2))
        m = RE_PLAN_HASH.match(s)
        if m and stmt is not None and stmt.plan_hash is None and not stmt.text:
            return lambda: self._set_ids(stmt.sql_id, m.group(1))
        return self._step_sql_text(s)

    def _step_sql_text(self, s: str) -> Callable[[], None] | None:
        stmt = self._stmt
        if stmt is not None and stmt.text_lines >= MAX_SQL_LINES:
            return None
        return lambda: self._add_text(s)

    def _step_common(self, s: str) -> Callable[[], None] | None:
        """Lines that mean the same wherever they appear outside SQL text."""
        if RE_STARS.match(s):
            return self._on_stars
        if RE_CALL_HEADER.match(s):
            return self._on_call_header
        if RE_CALL_ROW.match(s):
            return lambda: self._on_call_row(s)
        m = RE_OVERALL.match(s)
        if m:
            kind = "overall_nonrec" if m.group(1) == "NON-RECURSIVE" else "overall_rec"
            return lambda: self._new_stmt(kind=kind, state=STRUCT)
        m = RE_SQL_ID.match(s)
        if m:
            return lambda: self._new_stmt(sql_id=m.group(1), plan_hash=m.group(2))
        m = RE_PLAN_HASH.match(s)
        if m and self._stmt is not None and self._stmt.plan_hash is None:
            return lambda: self._set_ids(self._stmt.sql_id if self._stmt else None, m.group(1))
        m = RE_MISSES.match(s)
        if m:
            return lambda: self._on_misses(m.group(1), m.group(2))
        m = RE_OPTIMIZER.match(s)
        if m:
            return lambda: self._set_attr("optimizer_mode", m.group(1))
        m = RE_USER.match(s)
        if m:
            return lambda: self._on_user(m.group(1), m.group(2))
        if RE_PLAN_STATS.match(s):
            return lambda: self._to(STRUCT)
        m = RE_ROWSRC_HEADER.match(s)
        if m:
            return lambda: self._on_rowsource_header(bool(m.group(1)))
        if RE_WAIT_INTRO.match(s) or RE_WAIT_HEAD1.match(s):
            return self._on_wait_intro
        m = RE_COUNT_LINE.match(s)
        if m:
            return lambda: self._on_count_line(m)
        m = RE_TRACE_LINE.match(s)
        if m:
            return lambda: self._on_trace_line(m.group(2), float(m.group(1)))
        m = RE_TRAILER_KV.match(s)
        if m:
            return lambda: self._on_kv(m.group(1), m.group(2))
        if RE_ERROR.match(s) and self._state != TRAILER:
            return _noop
        if RE_RULER.match(s) and self._state in (CALLS, ROWSRC, STRUCT):
            return _noop
        return None

    def _step_rowsource(self, s: str) -> Callable[[], None] | None:
        stmt = self._stmt
        if stmt is None:
            return None
        m = (RE_ROWSRC_3 if stmt.rs_three else RE_ROWSRC_1).match(s)
        if m:
            return lambda: self._add_rowsource(m)
        if s[:1].isspace() and any(c.isdigit() for c in s):
            return self._malformed
        return None

    def _step_waits(self, s: str) -> Callable[[], None] | None:
        if RE_WAIT_HEAD1.match(s) or RE_WAIT_HEAD2.match(s):
            return _noop
        row = _wait_row(s)
        if row is not None:
            return lambda: self._add_wait(*row)
        if s[:1].isspace():
            return self._malformed  # indented like a wait row, but not one
        return None

    # -- state changes -------------------------------------------------------------------------

    def _to(self, state: int) -> None:
        self._state = state

    def _malformed(self) -> None:
        self.malformed += 1

    def _on_header(self, release: str) -> None:
        self._release = release
        self._state = PREAMBLE

    def _close_stmt(self) -> None:
        if self._stmt is not None:
            self._agg.take(self._stmt)
            self._stmt = None

    def _new_stmt(
        self,
        *,
        kind: str = "statement",
        sql_id: str | None = None,
        plan_hash: str | None = None,
        text: str | None = None,
        state: int = SQL,
    ) -> None:
        self._close_stmt()
        self._stmt = _Stmt(kind=kind, sql_id=sql_id, plan_hash=plan_hash)
        if text is not None:
            self._add_text(text)
        self._state = state

    def _current(self) -> _Stmt:
        if self._stmt is None:
            self._stmt = _Stmt()
        return self._stmt

    def _set_ids(self, sql_id: str | None, plan_hash: str | None) -> None:
        stmt = self._current()
        stmt.sql_id = sql_id
        if plan_hash is not None:
            stmt.plan_hash = plan_hash
        self._state = SQL

    def _add_text(self, s: str) -> None:
        stmt = self._current()
        stmt.text_lines += 1
        self._state = SQL
        if len(stmt.text) < TEXT_EXCERPT:
            joined = (stmt.text + " " + " ".join(s.split())).strip()
            stmt.text = joined[:TEXT_EXCERPT]

    def _on_stars(self) -> None:
        self._close_stmt()
        if self._state == TRAILER:
            return
        self._state = AFTER_STARS

    def _on_call_header(self) -> None:
        stmt = self._stmt
        if stmt is None or stmt.calls:
            self._new_stmt(state=CALLS)
        self._state = CALLS

    def _on_call_row(self, s: str) -> None:
        m = RE_CALL_ROW.match(s)
        assert m is not None
        self._call_row(m.group(1), tuple(float(g) for g in m.groups()[1:]))

    def _call_row(self, kind: str, values: tuple[float, ...]) -> None:
        # the values are read from digits: never negative nor NaN, so this is `_finite`
        if max(values) > MAX_VALUE:
            self.malformed += 1
            return
        stmt = self._stmt
        if stmt is None or kind in stmt.calls:
            self._new_stmt(state=CALLS)
            stmt = self._stmt
        assert stmt is not None
        stmt.calls[kind] = values
        self._state = CALLS

    def _on_misses(self, when: str, digits: str) -> None:
        if len(digits) > 12:
            self.malformed += 1
            return
        n = int(digits)
        stmt = self._current()
        if when == "parse":
            stmt.misses_parse += n
        else:
            stmt.misses_execute += n
        self._state = STRUCT

    def _set_attr(self, name: str, value: str) -> None:
        setattr(self._current(), name, value)
        self._state = STRUCT

    def _on_user(self, user: str, rest: str) -> None:
        stmt = self._current()
        stmt.user = user
        m = RE_DEPTH.search(rest)
        stmt.depth = int(m.group(1)) if m else 0
        self._state = STRUCT

    def _on_rowsource_header(self, three: bool) -> None:
        stmt = self._current()
        stmt.rs_three = three
        stmt.rs_base_col = None
        self._state = ROWSRC

    def _rowsource_without_header(self, s: str, three: bool) -> None:
        """A plan line pasted without its header: the layout follows from its numbers."""
        self._on_rowsource_header(three)
        m = (RE_ROWSRC_3 if three else RE_ROWSRC_1).match(s)
        if m:
            self._add_rowsource(m)

    def _add_rowsource(self, m: re.Match[str]) -> None:
        stmt = self._current()
        stmt.row_source_lines += 1
        if len(stmt.row_source) >= MAX_ROWSOURCE_ROWS:
            return
        prefix, op_text = m.group(1), m.groups()[-1]
        col = len(prefix)
        if stmt.rs_base_col is None:
            stmt.rs_base_col = col
        stats_m = RE_ROWSRC_STATS.search(op_text)
        stats: dict[str, float] = {}
        if stats_m:
            stats = {k: float(v) for k, v in RE_KV.findall(stats_m.group(1))}
            operation = op_text[: stats_m.start()].strip()
        else:
            operation = op_text.strip()
        nums = [float(g) for g in m.groups()[1:-1]]
        if not _finite(*nums, *stats.values()):
            self.malformed += 1
            return
        stmt.row_source.append(
            {
                "rows": nums[0],
                "rows_avg": nums[1] if len(nums) == 3 else None,
                "rows_max": nums[2] if len(nums) == 3 else None,
                "depth": max(0, col - stmt.rs_base_col),
                "operation": operation[:200],
                "stats": stats,
            }
        )

    def _on_wait_intro(self) -> None:
        self._current()
        self._state = WAITS

    def _add_wait(self, event: str, times: str, max_s: str, total_s: str) -> None:
        values = [float(times), float(max_s), float(total_s)]
        if not _finite(*values):
            self.malformed += 1
            return
        waits = self._current().waits
        if event not in waits and len(waits) >= MAX_EVENTS:
            self._agg.dropped_events += 1
            return
        _add_events(waits, {event: values})

    def _on_count_line(self, m: re.Match[str]) -> None:
        n, _, what, where = m.groups()
        key = " ".join(m.group(0).split()[1:]).rstrip(".")  # 'user SQL statements in session'
        if where.startswith("session") and what.startswith("SQL"):
            self._overall_counts[key] = float(n)
        else:
            self._trailer[key] = float(n)
            self._close_stmt()
            self._state = TRAILER

    def _on_trace_line(self, what: str, n: float) -> None:
        self._trailer[f"{what} in trace file"] = n
        self._close_stmt()
        self._state = TRAILER

    def _on_kv(self, key: str, value: str) -> None:
        if self._state in (START, PREAMBLE):
            self._header_info[key] = value[:200]
            self._state = PREAMBLE
            return
        self._close_stmt()
        self._header_info.setdefault(key, value[:200])
        self._state = TRAILER

    # -- results -------------------------------------------------------------------------------

    def facts(self) -> tuple[dict, dict, list[str], Platform | None]:
        agg = self._agg.copy()
        if self._stmt is not None:
            agg.take(self._stmt)
        totals, source = self._totals(agg)
        events = agg.overall_events if agg.overall_seen else agg.stmt_events
        waited = sum(v[2] for e, v in events.items() if e not in IDLE_EVENTS)
        idle = sum(v[2] for e, v in events.items() if e in IDLE_EVENTS)

        facts: dict[str, float | str | dict[str, float]] = {
            "tkprof.statements": float(agg.statements),
            "tkprof.waited_s": _r(waited),
        }
        details: dict = {
            "release": self._release,
            "header": dict(self._header_info),
            "idle_events": sorted(IDLE_EVENTS),
            "totals_source": source,
        }
        if totals is not None:
            facts.update(_total_facts(totals, waited))
            if agg.overall_seen:
                facts["tkprof.hard_parses"] = float(agg.overall_misses_parse)
            else:
                facts["tkprof.hard_parses"] = float(agg.stmt_misses_parse)
            details["totals"] = {
                "elapsed_s": totals.elapsed,
                "cpu_s": totals.cpu,
                "waited_s": _r(waited),
                "idle_wait_s": _r(idle),
                "unaccounted_s": facts["tkprof.unaccounted_s"],
                "unaccounted_pct": facts["tkprof.unaccounted_pct"],
                **{k: v for k, v in vars(totals).items() if k not in ("cpu", "elapsed")},
            }
        rec = agg.overall.get("overall_rec") or (agg.rec if agg.rec_n else None)
        if rec is not None:
            details["recursive_totals"] = dict(vars(rec))
        facts.update(self._recursion_facts(agg, rec, totals))
        facts.update(_event_facts(events))
        details["events"] = _event_rows(events)
        summaries = sorted(agg.top, key=lambda t: (-t[0], -t[1]))
        details["statements"] = [t[2].model_dump() for t in summaries]
        details["statements_total"] = agg.statements
        if self._overall_counts:
            details["session_counts"] = dict(self._overall_counts)
        if self._trailer:
            details["trailer"] = dict(self._trailer)
        if agg.dropped_events:
            details["dropped_events"] = agg.dropped_events

        facts = _finite_only(facts)
        identifiers = [e for e, _ in sorted(events.items(), key=lambda kv: -kv[1][2])][:100]
        identifiers += [t[2].sql_id for t in summaries if t[2].sql_id]
        return facts, details, list(dict.fromkeys(identifiers)), None

    def _recursion_facts(
        self, agg: _Agg, rec: _Totals | None, totals: _Totals | None
    ) -> dict[str, float]:
        """Hard parses split by recursion, recursive totals and distinct statements: what tells
        a literal-SQL report (many user statements, each parsed hard once) from a NOCACHE
        sequence or a data dictionary problem (the hard parses and the time are recursive)."""
        out: dict[str, float] = {}
        if rec is not None:
            out["tkprof.recursive_elapsed_s"] = _r(rec.elapsed)
            out["tkprof.recursive_cpu_s"] = _r(rec.cpu)
            out["tkprof.recursive_parse_count"] = rec.parse_count
            out["tkprof.recursive_execute_count"] = rec.execute_count
        if agg.overall_seen:
            out["tkprof.recursive_hard_parses"] = float(agg.overall_rec_misses_parse)
            out["tkprof.nonrecursive_hard_parses"] = float(agg.overall_nonrec_misses_parse)
            out["tkprof.execute_misses"] = float(agg.overall_misses_execute)
            hard = agg.overall_misses_parse
        else:
            out["tkprof.recursive_hard_parses"] = float(agg.rec_misses_parse)
            out["tkprof.nonrecursive_hard_parses"] = float(agg.nonrec_misses_parse)
            out["tkprof.execute_misses"] = float(agg.stmt_misses_execute)
            hard = agg.stmt_misses_parse
        parses = 0.0
        if "overall_nonrec" in agg.overall or "overall_rec" in agg.overall:
            parses = sum(t.parse_count for t in agg.overall.values())
        else:
            parses = agg.nonrec.parse_count + agg.rec.parse_count
        if parses > 0:
            out["tkprof.hard_parse_pct"] = _r(min(hard / parses * 100.0, 100.0))
        if agg.statements:
            out["tkprof.seq_updates"] = agg.seq_updates
        unique = self._trailer.get("unique SQL statements in trace file")
        if unique is None:
            unique = self._overall_counts.get("unique SQL statements in session")
        if unique is not None:
            out["tkprof.distinct_statements"] = float(unique)
        elif agg.distinct:
            out["tkprof.distinct_statements"] = float(len(agg.distinct) + agg.distinct_dropped)
        for key, fact in (
            ("user SQL statements in trace file", "tkprof.user_statements"),
            ("internal SQL statements in trace file", "tkprof.internal_statements"),
        ):
            value = self._trailer.get(key)
            if value is None:
                value = self._overall_counts.get(key.replace("trace file", "session"))
            if value is not None:
                out[fact] = float(value)
        return out

    @staticmethod
    def _totals(agg: _Agg) -> tuple[_Totals | None, str | None]:
        if "overall_nonrec" in agg.overall:
            return agg.overall["overall_nonrec"], "OVERALL TOTALS FOR ALL NON-RECURSIVE STATEMENTS"
        if agg.nonrec_n:
            return agg.nonrec, f"sum of {agg.nonrec_n} non-recursive statement(s)"
        if "overall_rec" in agg.overall:
            return agg.overall["overall_rec"], "OVERALL TOTALS FOR ALL RECURSIVE STATEMENTS"
        if agg.rec_n:
            return agg.rec, f"sum of {agg.rec_n} recursive statement(s)"
        return None, None


def _finite_only(facts: dict) -> dict:
    """Drop what is not a finite number: facts must compare, never overflow."""
    out: dict = {}
    for k, v in facts.items():
        if isinstance(v, dict):
            v = {key: x for key, x in v.items() if math.isfinite(x)}
        elif isinstance(v, float) and not math.isfinite(v):
            continue
        out[k] = v
    return out


def _noop() -> None:
    return None


def _wait_row(s: str) -> tuple[str, str, str, str] | None:
    """'  db file sequential read   1874   0.02   1.96' -> its four cells (split from the right:
    event names hold spaces, the three numbers never do)."""
    if not s[:1].isspace():
        return None
    parts = s.rsplit(None, 3)
    if len(parts) != 4:
        return None
    event, times, max_s, total_s = parts
    event = event.strip()
    if not event or not RE_INT.match(times) or not RE_DEC.match(max_s) or not RE_DEC.match(total_s):
        return None
    return event, times, max_s, total_s


def _total_facts(t: _Totals, waited: float) -> dict[str, float]:
    unaccounted = t.elapsed - t.cpu - waited
    out = {
        "tkprof.elapsed_s": _r(t.elapsed),
        "tkprof.cpu_s": _r(t.cpu),
        "tkprof.accounted_s": _r(t.cpu + waited),
        "tkprof.unaccounted_s": _r(unaccounted),
        "tkprof.unaccounted_pct": _r(unaccounted / t.elapsed * 100.0) if t.elapsed > 0 else 0.0,
        "tkprof.parse_count": t.parse_count,
        "tkprof.execute_count": t.execute_count,
        "tkprof.fetch_count": t.fetch_count,
        "tkprof.parse_cpu_s": _r(t.parse_cpu),
        "tkprof.parse_cpu_pct": _r(t.parse_cpu / t.cpu * 100.0) if t.cpu > 0 else 0.0,
        "tkprof.disk": t.disk,
        "tkprof.query": t.query,
        "tkprof.current": t.current,
        "tkprof.rows": t.rows,
    }
    if t.fetch_count > 0:
        out["tkprof.rows_per_fetch"] = _r(t.fetch_rows / t.fetch_count)
    if t.rows > 0:
        out["tkprof.lio_per_row"] = _r((t.query + t.current) / t.rows)
    return {k: v for k, v in out.items() if math.isfinite(v)}


def _event_facts(events: dict[str, list[float]]) -> dict[str, float | str | dict[str, float]]:
    total = sum(v[2] for v in events.values())
    out: dict[str, float | str | dict[str, float]] = {
        "waits.total_s": _r(total),
        "waits.events": float(len(events)),
    }
    if not events:
        return out
    out["event.waited_s"] = {e: _r(v[2]) for e, v in events.items()}
    out["event.count"] = {e: v[0] for e, v in events.items()}
    out["event.avg_ms"] = {
        e: _r(1000.0 * v[2] / v[0]) if v[0] > 0 else 0.0 for e, v in events.items()
    }
    out["event.max_ms"] = {e: _r(1000.0 * v[1]) for e, v in events.items()}
    out["event.pct_of_waited"] = {
        e: _r(v[2] / total * 100.0) if total > 0 else 0.0 for e, v in events.items()
    }
    if total > 0:
        top = max(events.items(), key=lambda kv: kv[1][2])
        out["waits.top_event"] = top[0]
        out["waits.top_pct"] = _r(top[1][2] / total * 100.0)
    return out


def _event_rows(events: dict[str, list[float]]) -> list[dict[str, float | str | bool]]:
    total = sum(v[2] for v in events.values())
    ranked = sorted(events.items(), key=lambda kv: (-kv[1][2], -kv[1][0], kv[0]))
    return [
        {
            "event": e,
            "count": c,
            "waited_s": _r(t),
            "avg_ms": _r(1000.0 * t / c) if c > 0 else 0.0,
            "max_ms": _r(1000.0 * m),
            "pct_of_waited": _r(t / total * 100.0) if total > 0 else 0.0,
            "idle": e in IDLE_EVENTS,
        }
        for e, (c, m, t) in ranked[:TOP_EVENTS]
    ]
