"""Raw extended SQL trace (event 10046, `sql_trace`, DBMS_MONITOR) -> a Method R response-time
profile plus the event.* facts tkprof and the wait tables produce.

A DBA pastes the raw trace when tkprof hides what matters: the order of calls, the gap between a
last FETCH and its CLOSE, the one 8-second wait among a million short ones. So the parser keeps
the order-dependent accounting tkprof cannot (Millsap and Holt, "Optimizing Oracle Performance"):

- R (response time) is the sum of the elapsed `e` of the dep=0 database calls plus every wait
  that happened between calls plus the clock time between calls nobody accounted for.
  Recursive calls (dep>0) run inside their dep=0 parent, so their e and c are never added again.
- A wait is inside a call when it ended after that call began (`tim - e` of the next dep=0 call;
  waits are written before the call line that contains them); else it is between calls. 'SQL*Net
  message from client' is always between calls: it is the client's think time and is kept apart.
- Unaccounted within calls = e - c - (waits inside) of the dep=0 calls: CPU run-queue time,
  paging, or kernel code without a wait event. Between calls: the clock (tim) moved but no call
  and no wait explains it (pieces with `..skip..` land here too).
- Times: Oracle 8i and earlier write c, e, ela and tim in centiseconds; 9i and later in
  microseconds. The header decides (`Oracle9i ... Release 9.2`, `ORACLE V10.2.0.1.0`,
  `Oracle Database 19c`); without a header, WAIT lines with tim= (10g on) mean microseconds,
  else tim magnitudes decide (an 8i clock in cs has 10 digits or fewer, the 9i microsecond clock
  16), else microseconds. The `trace10046.time_unit` fact says which.

Memory stays bounded whatever the size: running sums, at most MAX_STATEMENTS statements, at most
MAX_CURSORS cursor numbers, at most MAX_PENDING waits waiting to be placed inside or between calls
(beyond that the oldest are placed inside the call that is open: a long PL/SQL call is the only
way to write that many waits without a dep=0 call line).

Lines may arrive from a paste: shell prompts, `#` or syslog prefixes, collapsed or doubled
spaces, a long WAIT line wrapped before its `obj#=`/`tim=` (the continuation is joined).
"""

from __future__ import annotations

import copy
import re
from collections import deque
from typing import ClassVar

from ingest.base import MAX_LINE, Parser
from ingest.model import Format, Platform
from ingest.parsers.tkprof import IDLE_EVENTS, _event_facts, _event_rows, _finite_only, _r

try:  # the C core's reader of WAIT runs (ingest/_syscore_src/trace10046.c); optional
    from ingest._syscore import trace10046_waits as _c_waits
except ImportError:
    _c_waits = None
# Whether feed_run hands runs of WAIT lines to the C core; the Python code below is the
# reference (tests turn this off and compare).
NATIVE = _c_waits is not None

MAX_STATEMENTS = 5000
MAX_CURSORS = 20000
MAX_PENDING = 4096
MAX_EVENTS = 2000
STATEMENTS_SHOWN = 30
TEXT_EXCERPT = 200
PROFILE_CPU = "CPU service (dep=0 calls)"
PROFILE_UNACC_IN = "unaccounted-for within calls"
PROFILE_UNACC_BETWEEN = "unaccounted-for between calls"

_CALL_RE = re.compile(
    r"(?:^|(?<=[\s>:#\]]))(PARSE|EXEC|FETCH|CLOSE|SORT UNMAP|UNMAP|RPC EXEC|RPC CALL)\s?#(\d+)\s*:"
    r"\s*(c\s*=.*)$"
)
_WAIT_RE = re.compile(
    r"(?:^|(?<=[\s>:#\]]))WAIT\s?#(\d+)\s*:\s*nam\s*=\s*['\u2018\u2019]([^'\u2018\u2019]{0,200})"
    r"['\u2018\u2019]\s*ela\s*=\s*(\d+(?:\.\d+)?)"
    r"(.*)$"
)
_PARSING_RE = re.compile(r"(?:^|(?<=[\s>:#\]]))PARSING IN CURSOR\s?#(\d+)\s+(.*)$")
_STAT_RE = re.compile(r"(?:^|(?<=[\s>:#\]]))STAT\s?#(\d+)\s+id=\s*\d+")
_BINDS_RE = re.compile(r"(?:^|(?<=[\s>:#\]]))BINDS\s?#(\d+)\s*:")
_XCTEND_RE = re.compile(r"(?:^|(?<=[\s>:#\]]))XCTEND\s+rlbk=\s*(\d+)\s*,\s*rd_only=\s*(\d+)")
_ERROR_RE = re.compile(r"(?:^|(?<=[\s>:#\]]))(?:PARSE )?ERROR\s?#(\d+)\s*:.*\berr=\s*(\d+)")
# the usual layout of the lines a large trace is made of, read straight from the text (fast path)
_FAST = re.compile(
    r"WAIT #(\d{1,20}): nam='([^'\n]{0,200})' ela= {0,8}(\d{1,15})( [^\n]{0,400})? tim=(\d{1,20})"
    r"[ \r]*(?:\n|\Z)"
    r"|(PARSE|EXEC|FETCH|CLOSE) #(\d{1,20}):c=(\d{1,15}),e=(\d{1,15}),p=(\d{1,15}),"
    r"cr=(\d{1,15}),cu=(\d{1,15}),mis=(\d{1,9}),r=(\d{1,15}),dep=(\d{1,9}),og=\d{1,3},"
    r"(?:plh=\d{1,12},)?tim=(\d{1,20})[ \r]*(?:\n|\Z)"
    r"|STAT #\d{1,20} id=\d{1,9} [^\n]{0,2000}(?:\n|\Z)"
)
_CLAIMED = re.compile(
    r"^(?:={21}|END OF STMT|\*\*\* \d{4}-\d\d-\d\d[ T][\d:.]+\S*(?: \(.*\))?"
    r"| Bind#\d+|  (?:oacdty|kxsbbbfp|value|No oacdef|Frm#|oacflg)\b.*)\s*$"
)
_SEQ_UPDATE = "update seq$ "  # the recursive update of a NOCACHE (or exhausted cache) sequence
_KV_RE = re.compile(r"(\w+)\s*=\s*['\u2018\u2019]?([^\s,'\u2018\u2019]*)")
_PARAM_RE = re.compile(r"([A-Za-z_#$|][\w#$|<> ]{0,30}?)\s*=\s*(-?\d+|0x[0-9a-fA-F]+)")
_STAMP_RE = re.compile(r"^\s*\*\*\* (.{0,200})$")
_END_STMT = "END OF STMT"
# the header Oracle writes at the top of every trace file (and what pastes keep of it)
_HEADER_RE = re.compile(
    r"^\s*(?:Trace file \S+\.tr[cm]\b|Dump file \S+\.tr[cm]\b|Oracle Database \d+\w* .*Release \S+"
    r"|Oracle9i .*Release \S+|Oracle8i .*Release \S+|ORACLE V\d+\.\d+|ORACLE_HOME\s*[:=]"
    r"|Build label:\s|Instance name:\s|Redo thread mounted|Oracle process number:"
    r"|Unix process pid:\s*\d+|Windows thread id:\s*\d+|System name:|Node name:|Release:|Version:?\s"
    r"|Machine:|vsnsql=|With the \w.* options?|Data Mining|CLID:|CPU\s+:|Process Affinity"
    r"|Memory \(Avail|Windows \w.* Version|\w{3} \w{3} +\d{1,2} \d\d:\d\d:\d\d \d{4}\s*$)"
)
_RELEASE_RE = re.compile(
    r"(?:Release|ORACLE V|^\s*Version)\s*(\d{1,2})\.(\d+)(?:\.\d+){0,3}", re.IGNORECASE
)
_HEADER_FIELD = re.compile(
    r"^\s*(Node name|ORACLE_HOME|Instance name|System name|Machine)\s*[:=]\s*(\S.*)$"
)
_PID_RE = re.compile(r"(?:Unix process pid|Windows thread id):\s*(\d+)")
_SESSION_RE = re.compile(r"SESSION ID:\((\d+\.\d+)\)")
_OTHER_BODY = re.compile(
    r"^\s*(?:APPNAME |LOB\w* #\d|RPC \w+|PARSE ERROR #|ERROR #|CLOSE #|Bind#\d|ASH |kxsbbbfp=|"
    r"----- |Dump of memory|Binds? (?:for|of)\b|\d+ bytes? of\b)"
)
_SKIP_RE = re.compile(r"^\s*(?:\.\.+\s*\w*\s*\.*|=+)\s*$")
_TRACE_FILE = re.compile(r"^\s*(?:Trace|Dump) file \S+\.tr[cm]\s*$")
_TRACE_CONT = re.compile(r"^\s*\*\*\* TRACE (?:DUMP )?CONTINUED")


def _continues(line: str) -> bool:
    """The rest of a wrapped WAIT or call line: it starts with `name=value` (`obj#=-1`,
    `blocks=1`, `tim=...`), never with a record keyword."""
    stripped = line.strip()
    if not stripped:
        return False
    first = stripped.split(None, 1)[0]
    name, sep, _ = first.partition("=")
    return bool(sep) and bool(name) and name.replace("#", "").replace("_", "").isalnum()


def _num(value: str) -> float:
    try:
        return float(value)
    except ValueError:
        return 0.0


class _Stmt:
    __slots__ = ("key", "dep", "text", "parse", "exec", "fetch", "e", "c", "mis", "rows", "p")

    def __init__(self, key: str, dep: int, text: str = "") -> None:
        self.key = key
        self.dep = dep
        self.text = text
        self.parse = self.exec = self.fetch = 0
        self.e = self.c = 0.0
        self.mis = 0
        self.rows = self.p = 0.0


class Trace10046Parser(Parser):
    format: ClassVar[Format] = "trace10046"
    fast = True

    def __init__(self) -> None:
        super().__init__()
        self.release: str | None = None
        self.major: int | None = None
        self.pid: int | None = None
        self.header_info: dict[str, str] = {}  # host, ORACLE_HOME, instance, OS (a few keys)
        self.session: str | None = None
        self.tim_digits_max = 0
        self.timed_waits = False  # WAIT lines with tim= exist only from 10g on (microseconds)
        self.calls = 0
        self.dep0_calls = 0
        self.top_dep: int | None = None  # 0 in a whole trace; 1 in a piece of PL/SQL's SQL
        self.seq_updates = 0
        self.recursive_calls = 0
        self.counts = {"PARSE": 0, "EXEC": 0, "FETCH": 0}
        self.hard_parses = 0
        self.misses = 0
        self.rows = self.p = self.cr = self.cu = 0.0
        self.fetch_rows = 0.0
        self.prev_end: float | None = None  # tim of the last timed line
        self.max_gap: tuple[float, float, float] | None = None  # gap, from tim, to tim
        self.e0 = self.c0 = 0.0  # dep=0 sums, in trace units
        self.inside = 0.0  # waits inside dep=0 calls
        self.between = 0.0  # non-idle waits between calls
        self.think = 0.0  # idle waits between calls
        self.gap = 0.0  # clock time between calls not explained
        self.last_end: float | None = None
        self.first_tim: float | None = None
        self.last_tim: float | None = None
        self.events: dict[str, list[float]] = {}  # event -> [count, max, total] in trace units
        self.dropped_events = 0
        self.pending: deque[tuple[float | None, float, bool]] = deque()
        self.max_wait: tuple[float, str, str] | None = None  # ela, event, rest of the line
        self.cursors: dict[str, _Stmt] = {}
        self.statements: dict[str, _Stmt] = {}
        self.statements_dropped = 0
        # where the cursors of statements beyond MAX_STATEMENTS point (never reported)
        self._dropped = _Stmt("(beyond the statement cap)", 0, "x" * TEXT_EXCERPT)
        self.stat_lines = 0
        self.bind_blocks = 0
        self.commits = 0
        self.rollbacks = 0
        self.errors: dict[str, int] = {}
        self.stamps = 0
        self.last_stamp: str | None = None
        self.in_sql: _Stmt | None = None
        self.sql_budget = 0  # characters of SQL text still expected (from len=, with slack)
        self.in_binds = False
        self.held: str | None = None  # a WAIT/call line that may continue on the next line
        self.seen_body = False

    # -- detection ------------------------------------------------------------------------------

    @classmethod
    def start_score(cls, line: str) -> int:
        if len(line) > MAX_LINE:
            return 0
        if _TRACE_FILE.match(line):
            return 2
        if "#" not in line and "XCTEND" not in line:
            return 0
        if (
            _WAIT_RE.search(line)
            or _CALL_RE.search(line)
            or _PARSING_RE.search(line)
            or _STAT_RE.search(line)
            or _BINDS_RE.search(line)
        ):
            return 2
        if _XCTEND_RE.search(line):
            return 1
        return 0

    def claims(self, line: str) -> bool:  # type: ignore[override]
        """Lines only a 10046 trace prints (the cursor separator, END OF STMT, the lines of a
        BINDS block, `*** ` timestamps), and the SQL text of the cursor being parsed (up to what
        its len= allows): inside a trace they continue it whatever else they look like, and the
        fast path can take them without asking the other formats."""
        if self.in_sql is not None and self.sql_budget > 0:
            return True
        return bool(_CLAIMED.match(line))

    # -- feeding --------------------------------------------------------------------------------

    def feed(self, line: str) -> bool:
        if len(line) > MAX_LINE:
            return False
        held = self.held
        if held is not None:
            if "tim=" not in held and _continues(line):
                self.held = None
                self._body(held + " " + line.strip())
                return True
            self.held = None
            self._body(held)
        return self._line(line)

    def _line(self, line: str) -> bool:
        head = line[:5]
        if head in (
            "WAIT ",
            "EXEC ",
            "FETCH",
            "PARSE",
            "CLOSE",
            "STAT ",
            "BINDS",
            "XCTEN",
            "UNMAP",
        ):
            if self._body_first(line):
                return True
        elif (" #" in line or "XCTEND" in line) and self._body_first(line):
            return True
        stripped = line.strip()
        if self.in_sql is not None:
            if stripped == _END_STMT or stripped.endswith(_END_STMT):
                self.in_sql = None
                return True
            if self.sql_budget > 0:
                self.sql_budget -= len(line) + 1
                st = self.in_sql
                if len(st.text) < TEXT_EXCERPT and stripped:
                    st.text = (st.text + " " + stripped).strip()[:TEXT_EXCERPT]
                return True
            self.in_sql = None
        if not stripped:
            return False
        if self.in_binds and (line[:1].isspace() or stripped.startswith("Bind#")):
            return True
        self.in_binds = False
        if stripped == _END_STMT or _SKIP_RE.match(line):
            return self.seen_body or not stripped.startswith(".")
        if m := _STAMP_RE.match(line):
            self.stamps += 1
            self.last_stamp = m.group(1)[:80]
            if s := _SESSION_RE.search(line):
                self.session = s.group(1)
            return True
        if _TRACE_CONT.match(line) or _OTHER_BODY.match(line):
            return True
        if _HEADER_RE.match(line):
            if self.seen_body and self.release is not None:
                return False  # the next trace file's header: its own block
            self._header(line)
            return True
        return False

    def _header(self, line: str) -> None:
        if m := _RELEASE_RE.search(line):
            # 'Version 19.18.0.0.0' (18c+) is more precise than 'Release 19.0.0.0.0' above it
            finer = line.lstrip().startswith("Version") and self.major == int(m.group(1))
            if self.release is None or "Release" in line or finer:
                self.major = int(m.group(1))
                self.release = m.group(0).split(None, 1)[-1].lstrip("V ").strip()
        if m := _PID_RE.search(line):
            self.pid = int(m.group(1))
        if m := _HEADER_FIELD.match(line):
            key = m.group(1).lower().replace(" ", "_")
            self.header_info.setdefault(key, m.group(2).strip()[:200])

    def _body_first(self, line: str) -> bool:
        """A trace body line; a WAIT or call line without its tim= may be wrapped: hold it."""
        if (
            line.startswith(("WAIT", "EXEC", "FETCH", "PARSE #", "CLOSE"))
            and "tim=" not in line
            and (self.tim_digits_max or self.events)
            and self.start_score(line) == 2
            and not line.startswith("PARSE ERROR")
        ):
            self.held = line
            self.in_sql = None
            self.in_binds = False
            self.seen_body = True
            return True
        return self._body(line)

    def _body(self, line: str) -> bool:
        if "WAIT" in line and (m := _WAIT_RE.search(line)):
            self._wait(m.group(2), _num(m.group(3)), m.group(4))
        elif m := _CALL_RE.search(line):
            self._call(m.group(1), m.group(2), m.group(3))
        elif m := _PARSING_RE.search(line):
            self._parsing(m.group(1), m.group(2))
            self.seen_body = True
            return True
        elif _STAT_RE.search(line):
            self.stat_lines += 1
        elif _BINDS_RE.search(line):
            self.bind_blocks += 1
            self.in_sql = None
            self.in_binds = True
            self.seen_body = True
            return True
        elif m := _XCTEND_RE.search(line):
            if m.group(1) == "1":
                self.rollbacks += 1
            else:
                self.commits += 1
        elif m := _ERROR_RE.search(line):
            code = f"ORA-{int(m.group(2)):05d}"
            if code in self.errors or len(self.errors) < 100:
                self.errors[code] = self.errors.get(code, 0) + 1
        else:
            return False
        self.in_sql = None
        self.in_binds = False
        self.seen_body = True
        return True

    def _tim(self, value: str, took: float) -> float | None:
        """A line's tim (when it is a number), which ends something that took `took`: it
        moves the clock, and the largest stretch of clock between one timed line's end and the
        next one's start is kept (no call and no wait of any depth accounts for it: the 450 s
        between a last FETCH and its CLOSE)."""
        if value.isdecimal():
            digits = len(value)
        else:
            unsigned = value.lstrip("-")
            if not unsigned.isdecimal():
                return None
            digits = len(unsigned)
        if digits > self.tim_digits_max:
            self.tim_digits_max = digits
        t = float(value)
        prev = self.prev_end
        if prev is None:
            if self.first_tim is None:
                self.first_tim = t
        else:
            gap = t - took - prev
            if gap > 0 and (self.max_gap is None or gap > self.max_gap[0]):
                self.max_gap = (gap, prev, t)
        self.prev_end = self.last_tim = t
        return t

    def _wait(self, name: str, ela: float, rest: str, tim_s: str | None = None) -> None:
        """One WAIT line; `rest` is what follows ela (parameters, obj#, tim), `tim_s` its tim
        when the caller has it already."""
        ev = self.events.get(name)
        if ev is None:
            if len(self.events) >= MAX_EVENTS:
                self.dropped_events += 1
            else:
                ev = self.events[name] = [0.0, 0.0, 0.0]
        if ev is not None:
            ev[0] += 1
            ev[2] += ela
            if ela > ev[1]:
                ev[1] = ela
        idle = name in IDLE_EVENTS
        if not idle and (self.max_wait is None or ela > self.max_wait[0]):
            self.max_wait = (ela, name, rest[:300])
        if tim_s is None:
            i = rest.rfind("tim=")
            if i >= 0:
                tim_s = rest[i + 4 :].split(None, 1)[0].rstrip(",") if rest[i + 4 :].strip() else ""
        if tim_s and self._tim(tim_s, ela) is not None:
            tim: float | None = self.last_tim
            self.timed_waits = True
        else:
            tim = None
        pending = self.pending
        pending.append((tim, ela, idle))
        if len(pending) > MAX_PENDING:
            _, old, old_idle = pending.popleft()
            if old_idle:
                self.think += old
            else:
                self.inside += old

    def _call(self, kind: str, cursor: str, rest: str) -> None:
        kv: dict[str, str] = {}
        for part in rest.split(","):
            k, sep, v = part.partition("=")
            if sep:
                kv[k.strip()] = v.strip()
        dep_s = kv.get("dep", "0")
        mis_s = kv.get("mis", "0")
        tim_s = kv.get("tim")
        self._call_values(
            kind,
            cursor,
            _num(kv.get("c", "0")),
            _num(kv.get("e", "0")),
            _num(kv.get("p", "0")),
            _num(kv.get("cr", "0")),
            _num(kv.get("cu", "0")),
            int(mis_s) if mis_s.isdecimal() and len(mis_s) < 10 else 0,
            _num(kv.get("r", "0")),
            int(dep_s) if dep_s.isdecimal() and len(dep_s) < 10 else 0,
            tim_s.split(None, 1)[0] if tim_s and tim_s.strip() else None,
        )

    def _call_values(
        self,
        kind: str,
        cursor: str,
        c: float,
        e: float,
        p: float,
        cr: float,
        cu: float,
        mis: int,
        r: float,
        dep: int,
        tim_s: str | None,
    ) -> None:
        tim = self._tim(tim_s, e) if tim_s else None
        self.calls += 1
        if kind in self.counts:
            self.counts[kind] += 1
        if mis:
            self.misses += mis
            if kind == "PARSE":
                self.hard_parses += mis
        self.rows += r
        if kind == "FETCH":
            self.fetch_rows += r
        self.p += p
        self.cr += cr
        self.cu += cu
        st = self.cursors.get(cursor)
        if st is None:
            st = self._statement(f"cursor #{cursor}", dep, "")
            self._cursor(cursor, st if st is not None else self._dropped)
        if st is not None and st is not self._dropped:
            if kind == "PARSE":
                st.parse += 1
                st.mis += mis
            elif kind == "EXEC":
                st.exec += 1
                if st.text[:12].lower() == _SEQ_UPDATE:
                    self.seq_updates += 1
            elif kind == "FETCH":
                st.fetch += 1
            st.e += e
            st.c += c
            st.rows += r
            st.p += p
        top = self.top_dep
        if top is None or dep < top:
            if top is not None:
                self._new_top()
            self.top_dep = top = dep
        if dep == top:
            self.dep0_calls += 1
            self._dep0(e, c, tim)
        else:
            self.recursive_calls += 1

    def _new_top(self) -> None:
        """A piece that began inside a call (dep=1 lines first) reaches a shallower call: that
        call contains what was counted as top level so far, so its e and c replace them; the
        waits placed so far are inside it (think time excepted)."""
        self.inside += self.between
        self.between = 0.0
        self.e0 = self.c0 = 0.0
        self.gap = 0.0
        self.last_end = None
        self.recursive_calls += self.dep0_calls
        self.dep0_calls = 0

    def _dep0(self, e: float, c: float, tim: float | None) -> None:
        start = tim - e if tim is not None else None
        pending = self.pending
        while pending:
            wtim, ela, idle = pending.popleft()
            if idle or (start is not None and wtim is not None and wtim <= start):
                # `_between` written out: a trace places tens of waits per call this way
                if idle:
                    self.think += ela
                else:
                    self.between += ela
                last = self.last_end
                if wtim is not None:
                    if last is not None and wtim - ela > last:
                        self.gap += wtim - ela - last
                    if last is None or wtim > last:
                        self.last_end = wtim
                elif last is not None:
                    self.last_end = last + ela  # an 8i wait has no tim: it follows what came before
            else:
                self.inside += ela
        self.e0 += e
        self.c0 += c
        if start is not None:
            if self.last_end is not None and start > self.last_end:
                self.gap += start - self.last_end
            if self.last_end is None or tim > self.last_end:  # type: ignore[operator]
                self.last_end = tim

    def _between(self, wtim: float | None, ela: float, idle: bool) -> None:
        if idle:
            self.think += ela
        else:
            self.between += ela
        if wtim is not None:
            start = wtim - ela
            if self.last_end is not None and start > self.last_end:
                self.gap += start - self.last_end
            if self.last_end is None or wtim > self.last_end:
                self.last_end = wtim
        elif self.last_end is not None:
            self.last_end += ela  # an 8i wait has no tim: it follows what came before

    def _parsing(self, cursor: str, rest: str) -> None:
        kv = dict(_KV_RE.findall(rest))
        sqlid = kv.get("sqlid")
        hv = kv.get("hv")
        key = sqlid or (f"hv={hv}" if hv else f"cursor #{cursor}")
        dep_s = kv.get("dep", "0")
        st = self._statement(key, int(dep_s) if dep_s.isdecimal() else 0, "")
        if st is not None:
            self._cursor(cursor, st)
            self.in_sql = st if not st.text else _Stmt(key, st.dep, "x" * TEXT_EXCERPT)
        else:
            self._cursor(cursor, self._dropped)  # counted once, not again at each call
            self.in_sql = self._dropped
        length = kv.get("len", "")
        # Oracle writes the statement as sent: len= characters, newlines included. Pastes add
        # prefixes and indentation, so twice that and some more before the text stops counting.
        self.sql_budget = int(length) * 2 + 400 if length.isdecimal() and len(length) < 9 else 4000

    def _statement(self, key: str, dep: int, text: str) -> _Stmt | None:
        st = self.statements.get(key)
        if st is None:
            if len(self.statements) >= MAX_STATEMENTS:
                self.statements_dropped += 1
                return None
            st = self.statements[key] = _Stmt(key, dep, text)
        return st

    def _cursor(self, cursor: str, st: _Stmt) -> None:
        if cursor not in self.cursors and len(self.cursors) >= MAX_CURSORS:
            self.cursors.clear()
        self.cursors[cursor] = st

    # -- fast path ------------------------------------------------------------------------------

    def feed_run(self, text: str, pos: int, endpos: int, plain: dict) -> tuple[int, int]:
        """Runs of WAIT / call / STAT lines (what a large trace is made of) without the
        detector's per-line work: one anchored regex per line reads the usual layout straight
        from the text. Other lines go through `feed` here, exactly as one by one, when they
        score 2 here or the detector's memo says no other format starts on them; else the run
        stops."""
        taken = 0
        fast = _FAST.match
        wait = self._wait
        call = self._call_values
        events = self.events
        pending = self.pending
        idle_events = IDLE_EVENTS
        limit = endpos + 1 if endpos < len(text) else endpos
        native = _c_waits if NATIVE else None
        while pos < endpos:
            if self.held is None and self.in_sql is None and not self.in_binds:
                if native is not None and text.startswith("WAIT #", pos):
                    pos, n = native(
                        self, text, pos, endpos, IDLE_EVENTS, MAX_EVENTS, MAX_PENDING, MAX_LINE
                    )
                    if n:
                        taken += n
                        continue
                m = fast(text, pos, limit)
                if m is not None and m.end() - pos <= MAX_LINE:
                    g = m.groups()
                    if g[0] is not None and not g[4].isascii():
                        # digits beyond ASCII: `_wait` says what they mean
                        wait(g[1], float(g[2]), text[m.end(3) : m.end(5)], g[4])
                    elif g[0] is not None:
                        # `_wait` and `_tim` written out for the usual WAIT line (a tim of
                        # ASCII digits): two calls a line were a fifth of a trace's parse
                        name = g[1]
                        ela = float(g[2])
                        ev = events.get(name)
                        if ev is None:
                            if len(events) >= MAX_EVENTS:
                                self.dropped_events += 1
                            else:
                                ev = events[name] = [0.0, 0.0, 0.0]
                        if ev is not None:
                            ev[0] += 1
                            ev[2] += ela
                            if ela > ev[1]:
                                ev[1] = ela
                        idle = name in idle_events
                        if not idle:
                            top = self.max_wait
                            if top is None or ela > top[0]:
                                # the parameters are kept only for a new longest wait
                                self.max_wait = (ela, name, text[m.end(3) : m.end(5)][:300])
                        tim_s = g[4]
                        if len(tim_s) > self.tim_digits_max:
                            self.tim_digits_max = len(tim_s)
                        t = float(tim_s)
                        prev = self.prev_end
                        if prev is None:
                            if self.first_tim is None:
                                self.first_tim = t
                        else:
                            gap = t - ela - prev
                            if gap > 0 and (self.max_gap is None or gap > self.max_gap[0]):
                                self.max_gap = (gap, prev, t)
                        self.prev_end = self.last_tim = t
                        self.timed_waits = True
                        pending.append((t, ela, idle))
                        if len(pending) > MAX_PENDING:
                            _, old, old_idle = pending.popleft()
                            if old_idle:
                                self.think += old
                            else:
                                self.inside += old
                    elif g[5] is not None:
                        call(
                            g[5],
                            g[6],
                            float(g[7]),
                            float(g[8]),
                            float(g[9]),
                            float(g[10]),
                            float(g[11]),
                            int(g[12]),
                            float(g[13]),
                            int(g[14]),
                            g[15],
                        )
                    else:
                        self.stat_lines += 1
                    self.seen_body = True
                    taken += 1
                    pos = m.end()
                    continue
            nxt = self.feed_one(text, pos, endpos, plain)
            if nxt < 0:
                break
            taken += 1
            pos = nxt
        return min(pos, endpos + 1) if taken else pos, taken

    # -- results --------------------------------------------------------------------------------

    def _unit(self) -> tuple[str, str]:
        if self.major is not None:
            return ("cs", "header") if self.major <= 8 else ("us", "header")
        if self.timed_waits:
            # a tim counted from boot can have 10 digits or fewer in microseconds too
            return "us", "WAIT lines carry tim= (10g and later)"
        if self.tim_digits_max:
            return ("cs", "tim magnitude") if self.tim_digits_max <= 10 else ("us", "tim magnitude")
        return "us", "default (no header, no tim)"

    def facts(self) -> tuple[dict, dict, list[str], Platform | None]:
        if self.held is not None or self.pending:
            me = copy.deepcopy(self)
            if me.held is not None:
                held, me.held = me.held, None
                me._body(held)
            while me.pending:
                wtim, ela, idle = me.pending.popleft()
                me._between(wtim, ela, idle)
            return me._facts()
        return self._facts()

    def _facts(self) -> tuple[dict, dict, list[str], Platform | None]:
        seen = self.calls or self.events or self.stat_lines or self.bind_blocks
        if not seen and not self.commits and not self.errors:
            return {}, {}, [], None
        unit, basis = self._unit()
        k = 1e-6 if unit == "us" else 1e-2
        events = {e: [v[0], v[1] * k, v[2] * k] for e, v in self.events.items()}
        cpu = self.c0 * k
        within = (self.e0 - self.c0 - self.inside) * k
        gap = self.gap * k
        think = self.think * k
        between = self.between * k
        response = self.e0 * k + between + think + gap
        waited = sum(v[2] for e, v in events.items() if e not in IDLE_EVENTS)
        facts: dict = {
            "trace10046.time_unit": unit,
            "trace10046.response_s": _r(response),
            "trace10046.cpu_s": _r(cpu),
            "trace10046.waited_s": _r(waited),
            "trace10046.think_s": _r(think),
            "trace10046.unaccounted_within_s": _r(within),
            "trace10046.unaccounted_between_s": _r(gap),
            "trace10046.db_calls": float(self.calls),
            "trace10046.dep0_calls": float(self.dep0_calls),
            "trace10046.recursive_calls": float(self.recursive_calls),
            "trace10046.parse_count": float(self.counts["PARSE"]),
            "trace10046.exec_count": float(self.counts["EXEC"]),
            "trace10046.fetch_count": float(self.counts["FETCH"]),
            "trace10046.hard_parses": float(self.hard_parses),
            "trace10046.rows": self.rows,
            "trace10046.disk": self.p,
            "trace10046.query": self.cr,
            "trace10046.current": self.cu,
            "trace10046.statements": float(len(self.statements) + self.statements_dropped),
            "trace10046.commits": float(self.commits),
            "trace10046.rollbacks": float(self.rollbacks),
            "trace10046.errors": float(sum(self.errors.values())),
            "trace10046.seq_updates": float(self.seq_updates),
            "trace10046.top_depth": float(self.top_dep or 0),
        }
        if response > 0:
            facts["trace10046.unaccounted_pct"] = _r((within + gap) / response * 100.0)
            facts["trace10046.think_pct"] = _r(think / response * 100.0)
        if self.first_tim is not None and self.last_tim is not None:
            facts["trace10046.span_s"] = _r((self.last_tim - self.first_tim) * k)
        if self.release:
            facts["trace10046.release"] = self.release
        if self.counts["FETCH"]:
            facts["trace10046.rows_per_fetch"] = _r(self.fetch_rows / self.counts["FETCH"])
        if self.max_gap is not None:
            facts["trace10046.max_gap_s"] = _r(self.max_gap[0] * k)
        if self.max_wait is not None:
            ela, name, rest = self.max_wait
            facts["trace10046.max_wait_ms"] = _r(ela * k * 1000.0)
            facts["trace10046.max_wait_event"] = name
            params = {p.strip(): v for p, v in _PARAM_RE.findall(rest)}
            for key, fact in (("obj#", "obj"), ("file#", "file"), ("block#", "block")):
                v = params.get(key)
                if v is not None and v.lstrip("-").isdecimal():
                    facts[f"trace10046.max_wait_{fact}"] = float(v)
        # the profile: every component of R, largest first
        profile: dict[str, float] = {PROFILE_CPU: cpu}
        for e, v in events.items():
            profile[e] = v[2]
        profile[PROFILE_UNACC_IN] = within
        profile[PROFILE_UNACC_BETWEEN] = gap
        profile_rows = []
        if response > 0:
            facts["trace10046.profile_s"] = {n: _r(s) for n, s in profile.items()}
            facts["trace10046.profile_pct"] = {
                n: _r(s / response * 100.0) for n, s in profile.items()
            }
            for name, secs in sorted(profile.items(), key=lambda kv: -abs(kv[1])):
                ev = events.get(name)
                profile_rows.append(
                    {
                        "component": name,
                        "seconds": _r(secs),
                        "pct_of_r": _r(secs / response * 100.0),
                        "calls": ev[0] if ev else None,
                        "avg_ms": _r(ev[2] / ev[0] * 1000.0) if ev and ev[0] else None,
                        "max_ms": _r(ev[1] * 1000.0) if ev else None,
                        "idle": name in IDLE_EVENTS,
                    }
                )
        facts.update(_event_facts(events))
        stmts = sorted(self.statements.values(), key=lambda s: (-s.e, s.key))
        if stmts:
            facts["statement.elapsed_s"] = {s.key: _r(s.e * k) for s in stmts[:200]}
            facts["statement.cpu_s"] = {s.key: _r(s.c * k) for s in stmts[:200]}
            facts["statement.exec_count"] = {s.key: float(s.exec) for s in stmts[:200]}
            facts["statement.parse_count"] = {s.key: float(s.parse) for s in stmts[:200]}
            facts["statement.hard_parses"] = {s.key: float(s.mis) for s in stmts[:200]}
        details = {
            "release": self.release,
            "time_unit": unit,
            "time_unit_basis": basis,
            "pid": self.pid,
            "header": dict(self.header_info),
            "session": self.session,
            "last_timestamp": self.last_stamp,
            "response_time_s": _r(response),
            "profile": profile_rows,
            "events": _event_rows(events),
            "statements": [
                {
                    "statement": s.key,
                    "dep": s.dep,
                    "text": s.text,
                    "parse": s.parse,
                    "exec": s.exec,
                    "fetch": s.fetch,
                    "hard_parses": s.mis,
                    "elapsed_s": _r(s.e * k),
                    "cpu_s": _r(s.c * k),
                    "rows": s.rows,
                    "disk": s.p,
                }
                for s in stmts[:STATEMENTS_SHOWN]
            ],
            "statements_total": len(self.statements) + self.statements_dropped,
            "stat_lines": self.stat_lines,
            "library_cache_misses": self.misses,  # mis= of every call, EXEC misses included
            "bind_blocks": self.bind_blocks,
            "errors": dict(self.errors),
            "note": "R = dep=0 call time + waits between calls + unexplained clock time between "
            "calls; think time ('SQL*Net message from client') is part of R and shown apart",
        }
        if self.max_wait is not None:
            details["longest_wait"] = {
                "event": self.max_wait[1],
                "ms": facts["trace10046.max_wait_ms"],
                "params": self.max_wait[2].strip()[:200],
            }
        if self.max_gap is not None:
            details["largest_gap"] = {
                "seconds": facts["trace10046.max_gap_s"],
                "after_tim": int(self.max_gap[1]),
                "before_tim": int(self.max_gap[2]),
            }
        if self.dropped_events:
            details["dropped_events"] = self.dropped_events
        identifiers = [e for e, _ in sorted(events.items(), key=lambda kv: -kv[1][2])][:100]
        identifiers += [s.key for s in stmts[:50] if not s.key.startswith("cursor #")]
        identifiers += sorted(self.errors)
        return _finite_only(facts), details, list(dict.fromkeys(identifiers)), None
