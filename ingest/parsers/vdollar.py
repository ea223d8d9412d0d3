"""SQL*Plus / SQLcl query output over v$ views and ASH -> session.*, lock.*, ash.* facts.

What a DBA pastes while an incident runs: `select * from v$session_wait`, `v$lock`, a query of
v$active_session_history or dba_hist_active_sess_history grouped by event or sql_id, Tanel
Poder's ash_wait_chains / dash_waitchains, `v$sess_time_model`. Every such table has the same
shape: a line of upper-case column names, a dashed ruler under each column, fixed-width rows.
Columns are known by name, in any order: SQL*Plus cuts a heading at the column's width
(`SESSION_STATE` under a 7-wide column prints `SESSION`, `SAMPLE_TIME` prints `SAMPLE_T`), so a
heading matches the known name it begins. Cells are cut by the ruler's columns, so an empty cell
(no SQL_ID while ON CPU) stays empty, and lines SQL*Plus padded to 3001 characters do not matter.

Tables of wait totals (EVENT with TOTAL_WAITS / TIME_WAITED) are the waits parser's: they give
the event.* facts signatures read. Here, rows are sessions, locks and samples:
- ASH samples count one second each (v$active_session_history) or ten (dba_hist_*, when the
  query said so); a COUNT(*) / SAMPLES / CNT column weighs a row by its value, a SECONDS column
  gives seconds directly (ash_wait_chains).
- the event of an ASH row is its EVENT, else its SESSION_STATE (ON CPU).
"""

from __future__ import annotations

import math
import re
from typing import ClassVar

from ingest.base import Parser
from ingest.model import Format, Platform

MAX_KEYS = 2000
MAX_COLUMNS = 60
MAX_ROWS_KEPT = 100
MAX_CELL = 200

# plan history (dba_hist_sqlstat, v$sql, awr_plan_change.sql): one row per plan and snapshot
PLAN_HISTORY = (
    "PLAN_HASH_VALUE",
    "SNAP_ID",
    "CHILD_NUMBER",
    "EXECUTIONS_DELTA",
    "EXECUTIONS",
    "EXECS",
    "AVG_ETIME",
    "ELA_PER_EXEC",
    "ELAPSED_TIME_DELTA",
    "ELAPSED_TIME",
)
KNOWN = (
    "SID",
    "SESSION_STATE",  # before SESSION_ID: a 7-wide column cuts SESSION_STATE to 'SESSION'
    "SESSION_ID",
    "SERIAL#",
    "SESSION_SERIAL#",
    "USERNAME",
    "USER_ID",
    "EVENT",
    "EVENT_NAME",
    "STATE",
    "SEQ#",
    "SEC_IN_WAIT",
    "SECONDS_IN_WAIT",
    "WAIT_TIME",
    "WAIT_TIME_MICRO",
    "TIME_WAITED",
    "WAIT_CLASS",
    "P1",
    "P2",
    "P3",
    "P1TEXT",
    "P2TEXT",
    "P3TEXT",
    "P1TRANSL",
    "BLOCKING_SESSION",
    "BLOCKING_INSTANCE",
    "FINAL_BLOCKING_SESSION",
    "ADDR",
    "KADDR",
    "TY",
    "TYPE",
    "ID1",
    "ID2",
    "LMODE",
    "REQUEST",
    "CTIME",
    "BLOCK",
    "SAMPLE_TIME",
    "SAMPLE_ID",
    "SQL_ID",
    "SQL_OPNAME",
    "TOP_LEVEL_SQL_ID",
    "SQL_PLAN_HASH_VALUE",
    "SQL_HASH_VALUE",
    "PROGRAM",
    "MODULE",
    "MACHINE",
    "CURRENT_OBJ#",
    "COUNT(*)",
    "CNT",
    "SAMPLES",
    "SECONDS",
    "WAIT_CHAIN",
    "%THIS",
    "STAT_NAME",
    "VALUE",
    "STATUS",
    "OSUSER",
    "INST_ID",
    *PLAN_HISTORY,
)
# plan history columns: numbers, which SQL*Plus never cuts, so matched whole only ('Exec' and
# 'Elapsed' in a report's Load Profile heading are not EXECS and ELAPSED_TIME)
EXACT_ONLY = frozenset(PLAN_HISTORY)
# columns only v$/ASH output has: one of them makes a heading line this format's start
STRONG = frozenset(
    {
        "SID",
        "SESSION_ID",
        "SEC_IN_WAIT",
        "SECONDS_IN_WAIT",
        "SESSION_STATE",
        "SAMPLE_TIME",
        "SAMPLE_ID",
        "SQL_ID",
        "ID1",
        "LMODE",
        "BLOCKING_SESSION",
        "WAIT_CHAIN",
        "STAT_NAME",
        "P1TEXT",
        "TOP_LEVEL_SQL_ID",
        "PLAN_HASH_VALUE",
    }
)
WAITS_OWNED = frozenset({"TOTAL_WAITS", "TIME_WAITED_MICRO", "TOTAL_TIMEOUTS", "AVERAGE_WAIT"})
TIME_MODEL_HINT = re.compile(r"\btime\b|^DB CPU$|cpu time", re.I)

# column headings: upper case, or capitalised ('Seconds', '%This' in ashtop / ash_wait_chains)
_HEAD_TOKEN = r"(?:%[A-Za-z0-9_]*|[A-Z][A-Za-z0-9_#$()*,'|:.-]*)"
RE_HEADING = re.compile(rf"^\s*{_HEAD_TOKEN}(?:\s+{_HEAD_TOKEN})+\s*$")
RE_RULER = re.compile(r"^\s*-+(?:\s+-+)*\s*$")
RE_PROMPT = re.compile(r"^\s*(?:SQL|SQLcl|[A-Za-z0-9_$#@\[\]]+)>\s?")
RE_CONTINUATION = re.compile(r"^\s{0,3}\d{1,4}\s{1,3}\S")
RE_FOOTER = re.compile(
    r"^\s*(?:no rows selected|\d[\d,]*\s+rows?\s+selected\.?|Elapsed:\s+[\d:.]+"
    r"|(?:old|new)\s+\d+:.*|PL/SQL procedure successfully completed\.?|Session altered\.?)\s*$",
    re.I,
)
RE_VIEW_QUERY = re.compile(r"^(?:SQL|SQLcl)>\s*select\b.*\b(?:g?v\$\w+|dba_hist_\w+|x\$\w+)", re.I)
RE_CLOCK = re.compile(r"\b(\d{1,2})[:.](\d{2})[:.](\d{2})\b")  # '10:00:04', '10.00.04.117 AM'
RE_EVENT_VIEW = re.compile(r"\bg?v\$\w*event\b", re.I)  # wait totals: the waits parser's
RE_NUMBER = re.compile(r"^-?\d[\d,]*(?:\.\d+)?$|^-?\.\d+$")
RE_FLAG = re.compile(r"\bIN_[A-Z_]+\b")
RE_SQL_ID_FILTER = re.compile(r"\bsql_id\s*=\s*'([0-9a-z]{13})'", re.I)
RE_CHAIN_PROGRAM = re.compile(r"^\(.*\)$")


def _canon(token: str) -> str | None:
    """The known column `token` names: itself, or (4 characters or more) the first known name
    it begins, as SQL*Plus cuts a heading to its column's width."""
    t = token.upper()
    if t in _KNOWN_SET:
        return t
    return _BY_PREFIX.get(t) if len(t) >= 4 else None


def _prefixes() -> dict[str, str]:
    """Every cut of 4 characters or more of a known name (but those matched whole only) ->
    the first known name, in KNOWN's order, that begins with it. Why a table: each heading
    token was tried against every name (~70 `startswith` a heading line), the costliest part
    of this format's start_score, which the detector asks about rows of AWR sections no block
    claims: start_score over the 3,297 lines of the corpus's 11g page laid out as text took
    8.0 ms, 4.3 ms with the table (a parse of the page spends ~100 ms; too little to see there)."""
    table: dict[str, str] = {}
    for name in KNOWN:
        if name not in EXACT_ONLY:
            for end in range(4, len(name) + 1):
                table.setdefault(name[:end], name)
    return table


_KNOWN_SET = frozenset(KNOWN)
_BY_PREFIX = _prefixes()


def _heading_columns(line: str) -> list[str | None] | None:
    if len(line) > 4000 or not RE_HEADING.match(line):
        return None
    return [_canon(t) for t in line.split()]


def _num(cell: str) -> float | None:
    c = cell.strip()
    if not c or not RE_NUMBER.match(c):
        return None
    try:
        v = float(c.replace(",", ""))
    except ValueError:
        return None
    return v if math.isfinite(v) and abs(v) < 1e18 else None


class VdollarParser(Parser):
    """Reads the tables of one SQL*Plus session log (query output over v$ views and ASH)."""

    format: ClassVar[Format] = "vdollar"

    @classmethod
    def start_score(cls, line: str) -> int:
        s = line.rstrip()
        if s[:4] in ("SQL>", "SQLc") and RE_VIEW_QUERY.match(s) and not RE_EVENT_VIEW.search(s):
            return 2  # 'SQL> select ... from v$session': the output follows
        if not s or not s.lstrip()[:1].isupper() and s.lstrip()[:1] != "%":
            return 0
        cols = _heading_columns(s)
        if cols is None:
            return 0
        names = {c for c in cols if c}
        if set(s.split()) & WAITS_OWNED:
            return 0
        if len(names) >= 2 and names & STRONG:
            return 2
        return 0

    def __init__(self) -> None:
        super().__init__()
        self._started = False
        self._heading: str | None = None
        self._spans: list[tuple[int, int]] | None = None
        self._columns: list[str | None] = []
        self._in_query = False
        self._dba_hist = False
        self.tables = 0
        self.rows = 0
        # sessions (v$session / v$session_wait)
        self.sess_count: dict[str, float] = {}
        self.sess_wait_max: dict[str, float] = {}
        self.sess_p1: dict[str, float] = {}
        self.sessions: list[dict] = []
        # locks (v$lock)
        self.lock_request: dict[str, float] = {}
        self.lock_held: dict[str, float] = {}
        self.lock_waiters: dict[str, float] = {}
        self.lock_blockers: dict[str, float] = {}
        self.lock_ctime: dict[str, float] = {}
        self.locks: list[dict] = []
        # ASH
        self.ash_event: dict[str, float] = {}
        self.ash_samples: dict[str, float] = {}
        self.ash_sql: dict[str, float] = {}
        self.ash_state: dict[str, float] = {}
        self.ash_flag: dict[str, float] = {}
        self.ash_chain: dict[str, float] = {}
        self.ash_total = 0.0
        self._seconds_col = False  # a SECONDS column gave time directly (ash_wait_chains)
        self._last_clock: int | None = None
        self._min_step: int | None = None
        self.ash_first: str | None = None
        self.ash_last: str | None = None
        # statistics (v$sess_time_model, v$sysstat, v$mystat joined to v$statname)
        self.stats: dict[str, float] = {}
        # plan history: (sql_id, plan hash) -> [executions, elapsed s, rows without an
        # execution count, the sum of their seconds per execution]
        self.plans: dict[tuple[str, str], list[float]] = {}
        self._sql_id: str | None = None  # the sql_id the query filtered on

    # -- feeding -------------------------------------------------------------------------------

    def feed(self, line: str) -> bool:
        s = line.rstrip()
        if not s:
            if self._spans is not None:
                self._spans = None
            self._heading = None
            return self._started
        if self._spans is None and self._heading is None and not self._started:
            if RE_VIEW_QUERY.match(s):
                self._started = True
                return self._feed(s)
            cols = _heading_columns(s)
            if cols is None or self.start_score(s) == 0:
                return False
            self._heading = s
            self._started = True
            return True
        ok = self._feed(s)
        if ok:
            self._started = True
        return ok

    def _feed(self, s: str) -> bool:
        if RE_PROMPT.match(s) and not RE_HEADING.match(s):
            self._in_query = True
            self._spans = None
            self._heading = None
            if "dba_hist" in s.lower():
                self._dba_hist = True
            self._query_sql_id(s)
            return True
        if self._in_query and RE_CONTINUATION.match(s):
            if "dba_hist" in s.lower():
                self._dba_hist = True
            self._query_sql_id(s)
            return True
        self._in_query = False
        if RE_FOOTER.match(s):
            self._spans = None
            return True
        if RE_RULER.match(s) and self._heading is not None:
            self._open(self._heading, s)
            return True
        if self._spans is not None:
            return self._row(s)
        cols = _heading_columns(s)
        if cols is not None and sum(1 for c in cols if c) >= 1:
            if set(s.split()) & WAITS_OWNED:
                return False  # the waits parser reads wait totals
            self._heading = s
            return True
        return False

    def _query_sql_id(self, s: str) -> None:
        """`where sql_id = '7h35uxf5uhmm1'`: the statement rows without a SQL_ID column are of."""
        if "sql_id" in s.lower() and (m := RE_SQL_ID_FILTER.search(s)) is not None:
            self._sql_id = m[1]

    def _open(self, heading: str, ruler: str) -> None:
        spans = [(m.start(), m.end()) for m in re.finditer(r"-+", ruler)][:MAX_COLUMNS]
        names: list[str | None] = []
        for a, b in spans:
            # the heading word over this column (headings are left-aligned, numbers' right)
            words = [
                m for m in re.finditer(r"\S+", heading) if m.start() < b + 1 and m.end() > a - 1
            ]
            token = words[0].group() if words else ""
            names.append(_canon(token) or (token.upper() or None))
        self._spans = spans
        self._columns = names
        self._heading = None
        self.tables += 1

    def _cells(self, s: str) -> dict[str, str]:
        assert self._spans is not None
        out: dict[str, str] = {}
        spans = self._spans
        for i, (a, _) in enumerate(spans):
            end = spans[i + 1][0] if i + 1 < len(spans) else len(s)
            name = self._columns[i]
            if name:
                out[name] = s[a:end].strip()[:MAX_CELL]
        return out

    def _row(self, s: str) -> bool:
        if RE_HEADING.match(s) and _heading_columns(s) and not any(c.isdigit() for c in s):
            self._spans = None
            self._heading = s
            return True
        cells = self._cells(s)
        if not any(cells.values()):
            self.malformed += 1
            return True
        self.rows += 1
        if "WAIT_CHAIN" in cells:
            self._chain(cells)
        elif "STAT_NAME" in cells and "VALUE" in cells:
            self._stat(cells)
        elif ("ID1" in cells or "LMODE" in cells) and ("TY" in cells or "TYPE" in cells):
            self._lock(cells)
        elif (
            "SAMPLE_TIME" in cells
            or "SAMPLE_ID" in cells
            or "SESSION_STATE" in cells
            or any(k in cells for k in ("COUNT(*)", "CNT", "SAMPLES"))
            and "EVENT" in cells
        ):
            self._ash(cells)
        elif "PLAN_HASH_VALUE" in cells and "EVENT" not in cells:
            self._plan(cells)
        elif "EVENT" in cells:
            self._session(cells)
        elif "SID" in cells or "SESSION_ID" in cells:
            self._keep(self.sessions, cells)
        return True

    # -- rows ----------------------------------------------------------------------------------

    @staticmethod
    def _keep(rows: list[dict], cells: dict[str, str]) -> None:
        if len(rows) < MAX_ROWS_KEPT:
            rows.append({k.lower(): v for k, v in cells.items() if v})

    @staticmethod
    def _add(table: dict[str, float], key: str, value: float) -> None:
        if key in table or len(table) < MAX_KEYS:
            table[key] = table.get(key, 0.0) + value

    @staticmethod
    def _max(table: dict[str, float], key: str, value: float) -> None:
        if key in table or len(table) < MAX_KEYS:
            table[key] = max(table.get(key, value), value)

    def _session(self, c: dict[str, str]) -> None:
        event = c.get("EVENT", "")
        if not event:
            return
        self._add(self.sess_count, event, 1.0)
        for col in ("SECONDS_IN_WAIT", "SEC_IN_WAIT"):
            v = _num(c.get(col, ""))
            if v is not None:
                self._max(self.sess_wait_max, event, v)
        p1 = _num(c.get("P1", ""))
        if p1 is not None:
            self.sess_p1[event] = p1
        self._keep(self.sessions, c)

    def _lock(self, c: dict[str, str]) -> None:
        kind = c.get("TY") or c.get("TYPE") or ""
        if not kind:
            return
        lmode, request = _num(c.get("LMODE", "")), _num(c.get("REQUEST", ""))
        if lmode is not None:
            self._max(self.lock_held, kind, lmode)
        if request is not None:
            self._max(self.lock_request, kind, request)
            if request > 0:
                self._add(self.lock_waiters, kind, 1.0)
        if (_num(c.get("BLOCK", "")) or 0) > 0:
            self._add(self.lock_blockers, kind, 1.0)
        ctime = _num(c.get("CTIME", ""))
        if ctime is not None:
            self._max(self.lock_ctime, kind, ctime)
        self._keep(self.locks, c)

    def _weight(self, c: dict[str, str]) -> tuple[float, float]:
        """(samples, units) a row stands for. Units are seconds when the row has a SECONDS
        column, else samples: how long a sample lasts (1 s, or 10 s in dba_hist_*) is decided
        at the end, when the query or the samples' spacing has said which."""
        if "SECONDS" in c:
            self._seconds_col = True
            secs = _num(c["SECONDS"]) or 0.0
            return secs / (10.0 if self._dba_hist else 1.0), secs
        n = 1.0
        for col in ("COUNT(*)", "CNT", "SAMPLES"):
            v = _num(c.get(col, ""))
            if v is not None:
                n = v
                break
        return n, n

    def _sample_spacing(self, when: str) -> None:
        m = RE_CLOCK.search(when)
        if not m:
            return
        t = int(m.group(1)) * 3600 + int(m.group(2)) * 60 + int(m.group(3))
        if self._last_clock is not None and 0 < t - self._last_clock < 3600:
            step = t - self._last_clock
            self._min_step = step if self._min_step is None else min(self._min_step, step)
        self._last_clock = t

    def _sample_s(self) -> float:
        """How many seconds one ASH sample stands for: 10 in dba_hist_* (said by the query, or
        by samples 10 s apart), else 1."""
        if self._seconds_col:
            return 1.0
        if self._dba_hist or (self._min_step is not None and self._min_step >= 9):
            return 10.0
        return 1.0

    def _ash(self, c: dict[str, str]) -> None:
        samples, secs = self._weight(c)
        state = c.get("SESSION_STATE", "")
        if state not in ("ON CPU", "WAITING", "") and c.get("SESSION_STATE") is not None:
            state = state.upper()
        event = c.get("EVENT") or ("ON CPU" if state == "ON CPU" else "")
        if event:
            self._add(self.ash_event, event, secs)
            self._add(self.ash_samples, event, samples)
        if state:
            self._add(self.ash_state, state, secs)
        sql = c.get("SQL_ID", "")
        if sql:
            self._add(self.ash_sql, sql, secs)
        for flag in sorted(
            set(RE_FLAG.findall(" ".join(c.values())))
        ):  # stable order: same JSON every run
            self._add(self.ash_flag, flag, secs)
        for col, value in c.items():
            if col.startswith("IN_") and value == "Y":
                self._add(self.ash_flag, col, secs)
        self.ash_total += secs
        when = c.get("SAMPLE_TIME")
        if when:
            self.ash_first = self.ash_first or when
            self.ash_last = when
            self._sample_spacing(when)

    def _chain(self, c: dict[str, str]) -> None:
        _, secs = self._weight(c)
        chain = " ".join(c.get("WAIT_CHAIN", "").split()).removeprefix("->").strip()
        if not chain:
            return
        self._add(self.ash_chain, chain[:150], secs)
        first = chain.split(" -> ")[0]
        event = next(
            (
                f.strip()
                for f in first.split(">>")
                if re.search(r"[A-Za-z]", f) and not RE_CHAIN_PROGRAM.match(f.strip())
            ),
            "",
        )
        if event:
            self._add(self.ash_event, event, secs)
        self.ash_total += secs

    def _stat(self, c: dict[str, str]) -> None:
        v = _num(c.get("VALUE", ""))
        name = c.get("STAT_NAME", "")
        if v is None or not name:
            return
        self._add(self.stats, name, v)

    def _plan(self, c: dict[str, str]) -> None:
        """A row of plan history: the plan's executions and elapsed time in the row's interval
        (AVG_ETIME / ELA_PER_EXEC in seconds per execution, ELAPSED_TIME(_DELTA) in
        microseconds in all)."""
        phv = c.get("PLAN_HASH_VALUE", "")
        if not phv.isdigit() or phv == "0":
            return
        key = (c.get("SQL_ID") or self._sql_id or "?", phv)
        if key not in self.plans and len(self.plans) >= MAX_KEYS:
            return
        execs = next(
            (v for k in ("EXECS", "EXECUTIONS_DELTA", "EXECUTIONS") if (v := _num(c.get(k, "")))),
            None,
        )
        per_exec = next(
            (v for k in ("AVG_ETIME", "ELA_PER_EXEC") if (v := _num(c.get(k, ""))) is not None),
            None,
        )
        total = next(
            (
                v / 1e6
                for k in ("ELAPSED_TIME_DELTA", "ELAPSED_TIME")
                if (v := _num(c.get(k, ""))) is not None
            ),
            None,
        )
        if per_exec is None and total is not None and execs:
            per_exec = total / execs
        if per_exec is None:
            return
        acc = self.plans.setdefault(key, [0.0, 0.0, 0.0, 0.0])
        if execs:
            acc[0] += execs
            acc[1] += per_exec * execs
        else:  # no execution count: each row's per-execution time counts once
            acc[2] += 1
            acc[3] += per_exec

    def _plan_facts(self) -> tuple[dict, dict]:
        """Per sql_id: how many plans, and the slowest plan's time per execution against the
        fastest's (a plan flip: the same statement, a new plan, many times slower)."""
        per_sql: dict[str, dict[str, float]] = {}
        for (sql, phv), (execs, ela, rows, row_sum) in self.plans.items():
            if execs:
                per_sql.setdefault(sql, {})[phv] = ela / execs
            elif rows:
                per_sql.setdefault(sql, {})[phv] = row_sum / rows
        if not per_sql:
            return {}, {}
        facts: dict = {
            "plan.hashes": {sql: float(len(p)) for sql, p in per_sql.items()},
            "plan.max_hashes": float(max(len(p) for p in per_sql.values())),
        }
        worst: tuple[float, str] | None = None
        for sql, p in per_sql.items():
            if len(p) > 1 and min(p.values()) > 0:
                ratio = max(p.values()) / min(p.values())
                if worst is None or (ratio, sql) > worst:
                    worst = (ratio, sql)
        if worst is not None:
            ratio, sql = worst
            facts["plan.worst_best_ratio"] = round(ratio, 2)
            facts["plan.flip_sql_id"] = sql
            facts["plan.worst_s_per_exec"] = round(max(per_sql[sql].values()), 6)
            facts["plan.best_s_per_exec"] = round(min(per_sql[sql].values()), 6)
        details = {
            "plans": {sql: {h: round(v, 6) for h, v in p.items()} for sql, p in per_sql.items()}
        }
        return facts, details

    # -- results -------------------------------------------------------------------------------

    def facts(self) -> tuple[dict, dict, list[str], Platform | None]:
        facts: dict = {}
        details: dict = {"tables": self.tables, "rows": self.rows}
        if self.rows:
            facts["vdollar.rows"] = float(self.rows)
        k = self._sample_s()
        scaled = {
            "ash.seconds": self.ash_event,
            "ash.sql_seconds": self.ash_sql,
            "ash.state_seconds": self.ash_state,
            "ash.flag_seconds": self.ash_flag,
        }
        for name, table in (
            ("session.count", self.sess_count),
            ("session.seconds_in_wait_max", self.sess_wait_max),
            ("session.p1", self.sess_p1),
            ("lock.request_mode", self.lock_request),
            ("lock.held_mode", self.lock_held),
            ("lock.waiters", self.lock_waiters),
            ("lock.blockers", self.lock_blockers),
            ("lock.ctime_max_s", self.lock_ctime),
            ("ash.seconds", self.ash_event),
            ("ash.samples", self.ash_samples),
            ("ash.sql_seconds", self.ash_sql),
            ("ash.state_seconds", self.ash_state),
            ("ash.flag_seconds", self.ash_flag),
            ("ash.chain_seconds", self.ash_chain),
        ):
            if table:
                facts[name] = (
                    {key: v * k for key, v in table.items()} if name in scaled else dict(table)
                )
        if self.ash_total:
            facts["ash.total_s"] = self.ash_total * k
            facts["ash.dba_hist"] = 1.0 if k == 10.0 else 0.0
            busiest = max(self.ash_event.items(), key=lambda kv: kv[1], default=None)
            if busiest:
                facts["ash.top_event"] = busiest[0]
                facts["ash.top_pct"] = round(busiest[1] / self.ash_total * 100.0, 3)
        if self.ash_chain:
            top = max(self.ash_chain.items(), key=lambda kv: kv[1])
            facts["ash.top_chain"] = top[0]
            facts["ash.top_chain_s"] = top[1]
        if self.ash_first:
            details["first_sample"] = self.ash_first
            details["last_sample"] = self.ash_last
        if self.stats:
            tm = {
                k: v / 1e6
                for k, v in self.stats.items()
                if TIME_MODEL_HINT.search(k) and ("DB time" in self.stats or "DB CPU" in self.stats)
            }
            if tm:
                facts["time_model.s"] = tm
            facts["stat.value"] = dict(self.stats)
        if self.plans:
            plan_facts, plan_details = self._plan_facts()
            facts.update(plan_facts)
            details.update(plan_details)
        if self.sessions:
            details["sessions"] = self.sessions
        if self.locks:
            details["locks"] = self.locks
        identifiers = list(self.sess_count) + list(self.ash_event)[:50] + list(self.ash_sql)[:50]
        identifiers += list(self.lock_request)
        return facts, details, list(dict.fromkeys(identifiers))[:200], None
