"""The catalogue of fact names: the contract between parsers (which produce them) and signatures
(which test them). A signature naming a fact that is not here, or a fact its sources never
produce, fails validation. Keyed facts are tables: `syscall.avg_ms` keyed by `shmdt`.

Units are in the name where there is one (`_ms`, `_s`, `_pct`). Percentages are 0..100.
The catalogue also says how each fact is shown to a person (its label and unit, `show`), and
`number` is the one way a number is printed: the explanations, the CLI, the web page and the
Slack reply all read them from here, so a fact reads the same wherever it appears.
truss and strace produce the same syscall facts under the same names, so one signature covers
both; tkprof and waits share the `event.*` facts for the same reason.
"""

from __future__ import annotations

import math
from functools import lru_cache

from pydantic import BaseModel, model_validator

SYSCALL_SOURCES = ("truss", "strace")
EVENT_SOURCES = ("tkprof", "waits", "trace10046")
FUNCTION_SOURCES = ("stack", "dtrace", "perf")
# OS samplers: the CPU split, run queue, memory and paging read the same from each of them
CPU_SOURCES = ("mpstat", "vmstat", "iostat", "sar")
DEVICE_SOURCES = ("iostat", "sar")
PROC_SOURCES = ("pidstat", "prstat")


_UNIT_SUFFIXES = (("_ms", "ms"), ("_s", "s"), ("_pct", "%"))


def _unit_from_name(name: str) -> str:
    for suffix, unit in _UNIT_SUFFIXES:
        if name.endswith(suffix):
            return unit
    return "%" if ".pct_" in name else ""  # event.pct_of_waited


def _label_from_name(name: str) -> str:
    """'syscall.avg_ms' -> 'avg': the part after the group, without its unit suffix. Read after
    the key it qualifies ('shmdt avg 12 ms'); a spec gives `label` where this reads badly."""
    tail = name.split(".", 1)[-1]
    for suffix, _ in _UNIT_SUFFIXES:
        if tail.endswith(suffix) and tail != suffix.lstrip("_"):
            tail = tail[: -len(suffix)]
    return tail.replace("_", " ")


def number(value: float) -> str:
    """The one way a number is printed: thousands separators from 100 up and for whole numbers,
    two decimals at most from 1 up, three significant digits below (never an exponent)."""
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if abs(value) >= 100 or float(value).is_integer():
        return f"{value:,.0f}"
    if abs(value) >= 1:
        return f"{value:.2f}".rstrip("0").rstrip(".")
    # three significant digits, written out: '0.000123', never '1.23e-04'
    decimals = 2 - math.floor(math.log10(abs(value)))
    return f"{value:.{decimals}f}".rstrip("0").rstrip(".")


class FactSpec(BaseModel):
    name: str
    sources: tuple[str, ...]
    keyed_by: str | None = None  # what the key is ("syscall", "event", ...); None for scalars
    kind: str = "number"  # number | string
    doc: str
    label: str = ""  # how an observation names it; default: the name without group and unit
    unit: str = ""  # ms, s, %, ... ; default: from the name's suffix

    @model_validator(mode="after")
    def _defaults(self) -> FactSpec:
        if not self.label:
            self.label = _label_from_name(self.name)
        if not self.unit:
            self.unit = _unit_from_name(self.name)
        return self

    def show(self, value: object) -> str:
        """A value as a person reads it: '12.5 ms', '41 %', '1,234'; strings as they are."""
        if isinstance(value, str) or not isinstance(value, int | float):
            return str(value)
        return f"{number(value)} {self.unit}" if self.unit else number(value)


def _specs() -> list[FactSpec]:
    S, E, F = SYSCALL_SOURCES, EVENT_SOURCES, FUNCTION_SOURCES
    V = ("vdollar",)
    CPU, DEV, PROC = CPU_SOURCES, DEVICE_SOURCES, PROC_SOURCES
    f = FactSpec
    return [
        # ---- syscalls: truss (Solaris) and strace (Linux) ---------------------------------
        f(
            name="syscall.count",
            label="calls",
            sources=S,
            keyed_by="syscall",
            doc="calls of the syscall",
        ),
        f(
            name="syscall.total_ms",
            sources=S,
            keyed_by="syscall",
            doc="time in the syscall: from -E / -T when present, else from -D deltas, else from "
            "-d / -t timestamps (the gap to the next line of the same pid, as people read it)",
        ),
        f(name="syscall.avg_ms", sources=S, keyed_by="syscall", doc="total_ms / timed calls"),
        f(name="syscall.p50_ms", sources=S, keyed_by="syscall", doc="median call time"),
        f(name="syscall.max_ms", sources=S, keyed_by="syscall", doc="slowest call"),
        f(
            name="syscall.delta_ms",
            sources=S,
            keyed_by="syscall",
            doc="sum of -D deltas (truss) / -r deltas (strace) of the calls: wall time since the "
            "previous event, which includes time blocked and user CPU before the call",
        ),
        f(
            name="syscall.errors",
            label="failed calls",
            sources=S,
            keyed_by="syscall",
            doc="calls that failed",
        ),
        f(
            name="syscall.share_pct",
            sources=S,
            keyed_by="syscall",
            doc="share of all syscall time (or of calls, when untimed) taken by this syscall",
        ),
        f(
            name="syscall.max_per_process",
            label="calls by one process",
            sources=S,
            keyed_by="syscall",
            doc="most calls of this syscall made by any one process",
        ),
        f(name="errno.count", sources=S, keyed_by="errno", doc="failed calls by errno (ENOENT...)"),
        f(
            name="repeat.count",
            label="identical calls",
            sources=S,
            keyed_by="syscall",
            doc="size of the largest group of identical calls (same syscall, fd and size argument)",
        ),
        f(
            name="repeat.size",
            label="size of the identical calls",
            sources=S,
            keyed_by="syscall",
            doc="size argument of that group",
        ),
        f(
            name="repeat.fd",
            label="fd of the identical calls",
            sources=S,
            keyed_by="syscall",
            doc="fd argument of that group",
        ),
        f(name="trace.calls", sources=S, doc="syscall lines parsed"),
        f(name="trace.processes", sources=S, doc="distinct pids seen"),
        f(name="trace.span_s", sources=S, doc="last timestamp minus first, when timestamped"),
        f(name="trace.syscall_ms", sources=S, doc="sum of syscall.total_ms over all syscalls"),
        f(name="trace.max_gap_ms", sources=S, doc="biggest gap between consecutive lines of a pid"),
        f(name="trace.errors", sources=S, doc="failed calls"),
        f(name="trace.signals", sources=S, doc="signals delivered"),
        # what the slow calls were on (ingest/parsers/syscalls.py:FdTargets)
        f(
            name="trace.slowest_share_pct",
            sources=S,
            doc="the slowest call's time as a share of the trace's span (first to last timestamp)",
            label="slowest call's share of the trace",
        ),
        f(
            name="timeout.count",
            sources=S,
            keyed_by="syscall",
            doc="poll / select / epoll_wait / pollsys calls that returned 0: nothing was ready "
            "before their (non-zero) timeout ran out",
            label="waits that timed out",
        ),
        f(
            name="timeout.max_ms",
            sources=S,
            keyed_by="syscall",
            doc="the longest timeout argument among the waits that ran out",
            label="longest timeout that ran out",
        ),
        f(
            name="poll.zero_timeout",
            sources=S,
            keyed_by="syscall",
            doc="polls with a 0 timeout that found nothing (busy polling, e.g. a Go runtime)",
            label="zero-timeout polls",
        ),
        f(
            name="socket.connects",
            sources=S,
            keyed_by="peer",
            doc="connect() calls per peer address (port 53 is DNS, 1521 the Oracle listener)",
            label="connects",
        ),
        f(
            name="socket.connect_errors",
            sources=S,
            keyed_by="peer",
            doc="connect() calls that failed, per peer (EINPROGRESS is not a failure)",
            label="failed connects",
        ),
        f(
            name="socket.dns_timeouts",
            sources=S,
            doc="waits that ran out on a socket connected to port 53 (a DNS server not answering)",
            label="DNS waits that timed out",
        ),
        f(
            name="fd.errors",
            sources=S,
            keyed_by="target",
            doc="failed calls on an fd whose target is known, keyed '<file, device or socket> "
            "<call>: <errno>' (a read of /dev/random failing with EAGAIN)",
            label="failed calls",
        ),
        f(
            name="trace.asleep",
            sources=S,
            keyed_by="syscall",
            doc="LWPs truss showed blocked in the call, `(sleeping...)` (lwp_park: parked "
            "threads; pollsys / read: waiting for input)",
            label="LWPs asleep",
        ),
        f(
            name="futex.error_pct",
            sources=S,
            doc="share of futex calls that failed (EAGAIN: the value changed; ETIMEDOUT: the "
            "wait ran out): a high share with many calls is lock or scheduler churn",
            label="futex calls failing",
        ),
        f(
            name="futex.calls_per_s",
            sources=S,
            doc="futex calls per second of the trace's span",
            unit="/s",
            label="futex calls",
        ),
        f(name="fork.avg_ms", sources=S, doc="average fork/fork1/vfork/clone time in the parent"),
        f(name="fork.max_ms", sources=S, doc="slowest fork/fork1/vfork/clone"),
        f(name="exec.avg_ms", sources=S, doc="average execve time"),
        # ---- Oracle events: tkprof wait tables and AWR/Statspack/session event tables -------
        f(name="event.waited_s", sources=E, keyed_by="event", doc="total time waited (seconds)"),
        f(name="event.count", label="waits", sources=E, keyed_by="event", doc="times waited"),
        f(name="event.avg_ms", sources=E, keyed_by="event", doc="average wait (ms)"),
        f(name="event.max_ms", sources=E, keyed_by="event", doc="longest wait (ms), when shown"),
        f(
            name="event.pct_of_waited",
            label="share of waited time",
            sources=E,
            keyed_by="event",
            doc="share of all waited time in the table(s)",
        ),
        f(
            name="event.pct_of_db_time",
            label="share of DB time",
            sources=("waits",),
            keyed_by="event",
            doc="% DB time as AWR prints it (Top Timed Events)",
        ),
        f(name="event.timeouts", sources=("waits",), keyed_by="event", doc="time-outs"),
        f(name="waits.total_s", sources=E, doc="total waited time over all events (seconds)"),
        f(name="waits.events", sources=E, doc="number of distinct events"),
        f(name="waits.top_event", sources=E, kind="string", doc="event with the most time"),
        f(name="waits.top_pct", sources=E, doc="its share of waited time"),
        f(
            name="enqueue.requests",
            label="requests",
            sources=("waits",),
            keyed_by="enqueue",
            doc="enqueue activity requests, keyed by type (CF, TX, HW...)",
        ),
        f(
            name="enqueue.waits",
            label="waits",
            sources=("waits",),
            keyed_by="enqueue",
            doc="enqueue waits",
        ),
        f(
            name="enqueue.wait_ms",
            sources=("waits",),
            keyed_by="enqueue",
            doc="enqueue total wait time (ms)",
        ),
        f(
            name="stat.value",
            label="value",
            sources=("waits", "vdollar"),
            keyed_by="statistic",
            doc="session/system statistic values ('messages sent', 'redo size'...)",
        ),
        f(
            name="event.cpu_s",
            sources=("waits",),
            doc="DB CPU / CPU time (seconds) from a Top events table: not a wait, so in no "
            "event table",
        ),
        f(
            name="waits.idle_s",
            sources=("waits",),
            doc="time in idle events (ingest/oracle_events.py: SQL*Net message from client, "
            "rdbms ipc message, the Idle class...), which no total or share includes",
        ),
        # ---- AWR / Statspack reports (text or HTML): the sections around the event tables ---
        f(
            name="bg_event.waited_s",
            sources=("waits",),
            keyed_by="event",
            doc="background processes' waited time (s) from Background Wait Events, kept apart "
            "from the foreground event.* facts",
        ),
        f(name="bg_event.count", sources=("waits",), keyed_by="event", doc="background waits"),
        f(
            name="bg_event.avg_ms",
            sources=("waits",),
            keyed_by="event",
            doc="background average wait (ms)",
        ),
        f(
            name="wait_class.waited_s",
            sources=("waits",),
            keyed_by="wait_class",
            doc="time waited per wait class (s): User I/O, Commit, Concurrency...",
        ),
        f(name="wait_class.count", sources=("waits",), keyed_by="wait_class", doc="waits"),
        f(
            name="wait_class.avg_ms",
            sources=("waits",),
            keyed_by="wait_class",
            doc="average wait of the class (ms)",
        ),
        f(
            name="wait_class.pct_of_db_time",
            sources=("waits",),
            keyed_by="wait_class",
            doc="% of DB time in the class, as the report prints it",
        ),
        f(
            name="time_model.s",
            label="time",
            unit="s",
            sources=("waits", "vdollar"),
            keyed_by="statistic",
            doc="Time Model statistics (s): DB time, DB CPU, parse time elapsed, hard parse "
            "elapsed time...",
        ),
        f(
            name="time_model.pct_of_db_time",
            sources=("waits",),
            keyed_by="statistic",
            doc="Time Model statistic as % of DB time",
        ),
        *[
            f(name=f"report.{key}", sources=("waits",), kind="string", doc=doc)
            for key, doc in (
                ("kind", "awr or statspack, from the report's first line"),
                ("db_name", "database name"),
                ("db_id", "DBID"),
                ("db_role", "PRIMARY / PHYSICAL STANDBY"),
                ("edition", "EE / SE2..."),
                ("container", "PDB name of a PDB-level report"),
                ("instance", "instance name"),
                ("startup_time", "instance startup time, as printed"),
                ("release", "Oracle release, as printed (19.0.0.0.0)"),
                ("rac", "RAC: YES/NO"),
                ("host", "host name"),
                ("platform", "platform name (Linux x86 64-bit, Solaris[tm] OE (64-bit)...)"),
                ("begin_time", "begin snapshot time, as printed"),
                ("end_time", "end snapshot time, as printed"),
            )
        ],
        *[
            f(name=f"report.{key}", sources=("waits",), doc=doc)
            for key, doc in (
                ("inst_num", "instance number"),
                ("cpus", "CPUs of the host"),
                ("cores", "cores of the host"),
                ("sockets", "sockets of the host"),
                ("memory_gb", "memory of the host (GB)"),
                ("begin_snap", "begin snapshot id"),
                ("end_snap", "end snapshot id"),
                ("sessions_begin", "sessions at the begin snapshot"),
                ("sessions_end", "sessions at the end snapshot"),
                ("elapsed_s", "snapshot interval (s)"),
                ("db_time_s", "DB time of the interval (s): the base of every % of DB time"),
                ("db_cpu_s", "DB CPU of the interval (s)"),
                ("aas", "average active sessions: DB time / elapsed"),
            )
        ],
        *[
            f(
                name=f"load.{col}",
                label=label,
                unit=unit,
                sources=("waits",),
                keyed_by="statistic",
                doc=f"Load Profile {label}, keyed by the lower-case label without units "
                "('db time', 'redo size', 'logical read', 'hard parses', 'executes')",
            )
            for col, label, unit in (
                ("per_s", "per second", "/s"),
                ("per_txn", "per transaction", "/txn"),
                ("per_exec", "per execution", "/exec"),
                ("per_call", "per user call", "/call"),
            )
        ],
        f(name="latch.gets", sources=("waits",), keyed_by="latch", doc="latch get requests"),
        f(name="latch.misses", sources=("waits",), keyed_by="latch", doc="latch misses"),
        f(name="latch.sleeps", sources=("waits",), keyed_by="latch", doc="latch sleeps"),
        f(
            name="latch.wait_s",
            sources=("waits",),
            keyed_by="latch",
            doc="time waited for the latch (s), Latch Activity",
        ),
        f(
            name="segment.pct_of_total",
            sources=("waits",),
            keyed_by="segment",
            doc="a segment's share of the report's total, keyed 'Row Lock Waits: OWNER.OBJECT' "
            "(the Segments by ... section's metric, then owner.object)",
        ),
        f(
            name="efficiency.pct",
            label="efficiency",
            unit="%",
            sources=("waits",),
            keyed_by="statistic",
            doc="Instance Efficiency percentages ('buffer hit', 'soft parse', 'execute to parse', "
            "'latch hit', 'non-parse cpu'...)",
        ),
        *[
            f(name=f"sql.{key}", sources=("waits",), keyed_by="sql", doc=doc)
            for key, doc in (
                ("elapsed_s", "elapsed time (s) of the statement, by SQL id or old hash value"),
                ("cpu_s", "CPU time (s) of the statement"),
                ("executions", "executions of the statement"),
                ("elapsed_per_exec_s", "elapsed time per execution (s)"),
                ("gets", "buffer gets of the statement"),
                ("reads", "physical reads of the statement"),
                ("parse_calls", "parse calls of the statement"),
                ("version_count", "child cursors of the statement (SQL ordered by Version Count)"),
            )
        ],
        f(
            name="sql.max_version_count",
            sources=("waits",),
            label="most child cursors of one statement",
            doc="the largest version count in SQL ordered by Version Count",
        ),
        # ---- v$ views and ASH: SQL*Plus / SQLcl query output -------------------------------
        f(name="vdollar.rows", sources=V, doc="table rows read"),
        f(
            name="session.count",
            sources=V,
            keyed_by="event",
            doc="v$session / v$session_wait rows in the event",
        ),
        f(
            name="session.seconds_in_wait_max",
            label="longest wait so far",
            unit="s",
            sources=V,
            keyed_by="event",
            doc="longest SECONDS_IN_WAIT / SEC_IN_WAIT of a session in the event (s)",
        ),
        f(name="session.p1", sources=V, keyed_by="event", doc="P1 of the event's last row"),
        f(
            name="lock.request_mode",
            sources=V,
            keyed_by="lock_type",
            doc="highest REQUEST mode in v$lock per lock type (TX, TM...)",
        ),
        f(name="lock.held_mode", sources=V, keyed_by="lock_type", doc="highest LMODE held"),
        f(name="lock.waiters", sources=V, keyed_by="lock_type", doc="rows requesting the type"),
        f(name="lock.blockers", sources=V, keyed_by="lock_type", doc="rows with BLOCK > 0"),
        f(name="lock.ctime_max_s", sources=V, keyed_by="lock_type", doc="longest CTIME (s)"),
        f(
            name="ash.seconds",
            label="ASH time",
            unit="s",
            sources=V,
            keyed_by="event",
            doc="ASH time per event (s): samples x 1 s (v$active_session_history) or x 10 s "
            "(dba_hist_*), or a SECONDS column; ON CPU when the session was on CPU",
        ),
        f(name="ash.samples", sources=V, keyed_by="event", doc="ASH samples per event"),
        f(
            name="ash.sql_seconds",
            label="ASH time",
            unit="s",
            sources=V,
            keyed_by="sql",
            doc="ASH time per SQL_ID (s)",
        ),
        f(
            name="ash.state_seconds",
            label="ASH time",
            unit="s",
            sources=V,
            keyed_by="state",
            doc="ASH time per SESSION_STATE (ON CPU, WAITING)",
        ),
        f(
            name="ash.flag_seconds",
            label="ASH time",
            unit="s",
            sources=V,
            keyed_by="flag",
            doc="ASH time per IN_* flag (IN_PARSE, IN_HARD_PARSE, IN_CURSOR_CLOSE...)",
        ),
        f(
            name="ash.chain_seconds",
            label="ASH time",
            unit="s",
            sources=V,
            keyed_by="chain",
            doc="ash_wait_chains / dash_waitchains time per chain (s)",
        ),
        f(name="ash.total_s", sources=V, doc="ASH time over all rows (s)"),
        f(name="ash.dba_hist", sources=V, doc="1 when the query read dba_hist_* (10 s samples)"),
        f(name="ash.top_event", sources=V, kind="string", doc="event with the most ASH time"),
        f(name="ash.top_pct", sources=V, doc="its share of ASH time"),
        f(name="ash.top_chain", sources=V, kind="string", doc="wait chain with the most time"),
        f(name="ash.top_chain_s", sources=V, doc="its time (s)"),
        # ---- tkprof ------------------------------------------------------------------------
        f(name="tkprof.statements", sources=("tkprof",), doc="statements in the report"),
        f(name="tkprof.elapsed_s", sources=("tkprof",), doc="elapsed of the totals"),
        f(name="tkprof.cpu_s", sources=("tkprof",), doc="cpu of the totals"),
        f(name="tkprof.waited_s", sources=("tkprof",), doc="sum of waited time"),
        f(name="tkprof.accounted_s", sources=("tkprof",), doc="cpu + waited"),
        f(name="tkprof.unaccounted_s", sources=("tkprof",), doc="elapsed - cpu - waited"),
        f(name="tkprof.unaccounted_pct", sources=("tkprof",), doc="unaccounted share of elapsed"),
        f(name="tkprof.parse_count", sources=("tkprof",), doc="parse calls"),
        f(name="tkprof.execute_count", sources=("tkprof",), doc="execute calls"),
        f(name="tkprof.fetch_count", sources=("tkprof",), doc="fetch calls"),
        f(name="tkprof.parse_cpu_s", sources=("tkprof",), doc="cpu of parse calls"),
        f(name="tkprof.parse_cpu_pct", sources=("tkprof",), doc="parse cpu share of all cpu"),
        f(name="tkprof.hard_parses", sources=("tkprof",), doc="misses in library cache (parse)"),
        f(name="tkprof.disk", sources=("tkprof",), doc="physical reads (blocks)"),
        f(name="tkprof.query", sources=("tkprof",), doc="consistent gets"),
        f(name="tkprof.current", sources=("tkprof",), doc="current gets"),
        f(name="tkprof.rows", sources=("tkprof",), doc="rows processed"),
        f(name="tkprof.rows_per_fetch", sources=("tkprof",), doc="rows / fetch calls"),
        f(name="tkprof.lio_per_row", sources=("tkprof",), doc="(query + current) / rows"),
        f(
            name="tkprof.recursive_elapsed_s",
            sources=("tkprof",),
            doc="elapsed seconds of OVERALL TOTALS FOR ALL RECURSIVE STATEMENTS (or the sum of "
            "the recursive statements): time inside SQL that Oracle or PL/SQL ran for you",
        ),
        f(
            name="tkprof.recursive_cpu_s",
            sources=("tkprof",),
            doc="cpu seconds of the recursive totals",
        ),
        f(
            name="tkprof.recursive_parse_count",
            sources=("tkprof",),
            doc="parse calls of recursive statements",
        ),
        f(
            name="tkprof.recursive_execute_count",
            sources=("tkprof",),
            doc="execute calls of recursive statements",
        ),
        f(
            name="tkprof.recursive_hard_parses",
            sources=("tkprof",),
            doc="misses in library cache during parse, recursive statements only",
        ),
        f(
            name="tkprof.nonrecursive_hard_parses",
            sources=("tkprof",),
            doc="misses in library cache during parse, non-recursive (user) statements only",
        ),
        f(
            name="tkprof.execute_misses",
            sources=("tkprof",),
            doc="misses in library cache during execute (a cursor aged out or invalidated "
            "between parse and execute)",
        ),
        f(
            name="tkprof.distinct_statements",
            sources=("tkprof",),
            doc="distinct statements: the trailer's 'unique SQL statements in trace file' when "
            "printed, else distinct SQL ids (or texts) among the statements read",
        ),
        f(
            name="tkprof.user_statements",
            sources=("tkprof",),
            doc="'user SQL statements in trace file' from the trailer",
        ),
        f(
            name="tkprof.internal_statements",
            sources=("tkprof",),
            doc="'internal SQL statements in trace file' from the trailer (recursive SQL)",
        ),
        f(
            name="tkprof.seq_updates",
            sources=("tkprof",),
            doc="executions of the recursive 'update seq$' statement: one per sequence cache "
            "refill, one per NEXTVAL for a NOCACHE sequence",
        ),
        f(
            name="tkprof.hard_parse_pct",
            sources=("tkprof",),
            doc="hard parses per 100 parse calls (all statements): near 100 is literal SQL",
        ),
        # ---- raw 10046 extended SQL trace: a Method R response-time profile ----------------
        f(
            name="trace10046.response_s",
            label="response time R",
            sources=("trace10046",),
            doc="response time R in seconds: dep=0 call elapsed + waits between calls + "
            "unexplained clock time between calls (think time included)",
        ),
        f(name="trace10046.cpu_s", sources=("trace10046",), doc="CPU seconds of dep=0 calls"),
        f(
            name="trace10046.waited_s",
            sources=("trace10046",),
            doc="seconds in non-idle waits, inside and between calls",
        ),
        f(
            name="trace10046.think_s",
            label="think time",
            sources=("trace10046",),
            doc="seconds in 'SQL*Net message from client' between calls (the client's time)",
        ),
        f(name="trace10046.think_pct", sources=("trace10046",), doc="think time share of R (%)"),
        f(
            name="trace10046.unaccounted_within_s",
            label="unaccounted within calls",
            sources=("trace10046",),
            doc="seconds of dep=0 call elapsed not explained by their CPU and the waits inside "
            "them (run queue, paging, uninstrumented code); may be negative (rounding)",
        ),
        f(
            name="trace10046.unaccounted_between_s",
            label="unaccounted between calls",
            sources=("trace10046",),
            doc="seconds the clock (tim) moved between calls with no call and no wait",
        ),
        f(
            name="trace10046.unaccounted_pct",
            sources=("trace10046",),
            doc="unaccounted-for time (within + between calls) as a share of R (%)",
        ),
        f(
            name="trace10046.profile_s",
            label="time",
            sources=("trace10046",),
            keyed_by="component",
            doc="the response-time profile in seconds: CPU service, each wait event, "
            "unaccounted-for within and between calls",
        ),
        f(
            name="trace10046.profile_pct",
            label="share of R",
            sources=("trace10046",),
            keyed_by="component",
            doc="each profile component as a share of R (%)",
        ),
        f(name="trace10046.span_s", sources=("trace10046",), doc="last tim - first tim (s)"),
        f(name="trace10046.db_calls", sources=("trace10046",), doc="database calls, all depths"),
        f(
            name="trace10046.dep0_calls",
            sources=("trace10046",),
            doc="top-level database calls: dep=0, or the shallowest depth in a piece of a trace "
            "that starts inside a call (see trace10046.top_depth)",
        ),
        f(
            name="trace10046.top_depth",
            sources=("trace10046",),
            doc="the depth R is computed from: 0 for a whole trace, 1 for a piece holding only "
            "the SQL a PL/SQL call ran",
        ),
        f(
            name="trace10046.seq_updates",
            sources=("trace10046",),
            doc="executions of the recursive 'update seq$': one per sequence cache refill, one "
            "per NEXTVAL for a NOCACHE sequence",
        ),
        f(
            name="trace10046.recursive_calls",
            sources=("trace10046",),
            doc="database calls at dep>0 (SQL run by PL/SQL, the data dictionary, triggers)",
        ),
        f(name="trace10046.parse_count", sources=("trace10046",), doc="PARSE calls"),
        f(name="trace10046.exec_count", sources=("trace10046",), doc="EXEC calls"),
        f(name="trace10046.fetch_count", sources=("trace10046",), doc="FETCH calls"),
        f(
            name="trace10046.hard_parses",
            sources=("trace10046",),
            doc="PARSE calls with mis=1 (library cache misses at parse: hard parses)",
        ),
        f(name="trace10046.rows", sources=("trace10046",), doc="rows (r=) of all calls"),
        f(
            name="trace10046.rows_per_fetch",
            sources=("trace10046",),
            doc="rows per FETCH call (the client's array size, when it fetches full arrays)",
        ),
        f(
            name="trace10046.max_gap_s",
            label="largest clock gap",
            sources=("trace10046",),
            doc="largest stretch of clock (tim) between the end of one timed line and the start "
            "of the next that no call or wait at any depth accounts for (s)",
        ),
        f(name="trace10046.disk", sources=("trace10046",), doc="blocks read physically (p=)"),
        f(name="trace10046.query", sources=("trace10046",), doc="consistent gets (cr=)"),
        f(name="trace10046.current", sources=("trace10046",), doc="current gets (cu=)"),
        f(name="trace10046.statements", sources=("trace10046",), doc="distinct statements"),
        f(name="trace10046.commits", sources=("trace10046",), doc="XCTEND rlbk=0 lines"),
        f(name="trace10046.rollbacks", sources=("trace10046",), doc="XCTEND rlbk=1 lines"),
        f(name="trace10046.errors", sources=("trace10046",), doc="ERROR / PARSE ERROR lines"),
        f(
            name="trace10046.max_wait_ms",
            sources=("trace10046",),
            doc="longest single non-idle wait (ms)",
        ),
        f(
            name="trace10046.max_wait_event",
            sources=("trace10046",),
            kind="string",
            doc="event of the longest single non-idle wait",
        ),
        f(
            name="trace10046.max_wait_obj",
            sources=("trace10046",),
            doc="obj# (data object id) of the longest wait",
        ),
        f(name="trace10046.max_wait_file", sources=("trace10046",), doc="its file#"),
        f(name="trace10046.max_wait_block", sources=("trace10046",), doc="its block#"),
        f(
            name="trace10046.time_unit",
            label="time unit",
            sources=("trace10046",),
            kind="string",
            doc="unit of c/e/ela/tim in the trace: 'us' (9i and later) or 'cs' (8i and "
            "earlier), from the header, else from tim magnitudes",
        ),
        f(
            name="trace10046.release",
            sources=("trace10046",),
            kind="string",
            doc="Oracle release from the trace header",
        ),
        f(
            name="statement.elapsed_s",
            sources=("trace10046",),
            keyed_by="statement",
            doc="elapsed seconds of all calls of the statement (sql_id, else hv=, else cursor "
            "#); a recursive statement's time is also inside its parent's",
        ),
        f(
            name="statement.cpu_s",
            sources=("trace10046",),
            keyed_by="statement",
            doc="CPU seconds of the statement's calls",
        ),
        f(
            name="statement.exec_count",
            sources=("trace10046",),
            keyed_by="statement",
            doc="EXEC calls of the statement",
        ),
        f(
            name="statement.parse_count",
            sources=("trace10046",),
            keyed_by="statement",
            doc="PARSE calls of the statement",
        ),
        f(
            name="statement.hard_parses",
            sources=("trace10046",),
            keyed_by="statement",
            doc="PARSE calls of the statement with mis=1",
        ),
        # ---- hanganalyze -----------------------------------------------------------------
        f(name="hang.chains", sources=("hanganalyze",), doc="wait chains reported"),
        f(
            name="hang.waiters",
            sources=("hanganalyze",),
            doc="sessions waiting behind another session in the chains",
        ),
        f(
            name="hang.blocker_sid",
            sources=("hanganalyze",),
            doc="session id at the head of the longest chain (the root blocker)",
        ),
        f(name="hang.blocker_ospid", sources=("hanganalyze",), doc="its OS process id"),
        f(
            name="hang.blocker_event",
            sources=("hanganalyze",),
            kind="string",
            doc="what the root blocker is doing ('SQL*Net message from client' = idle, holding "
            "what others want; 'not in wait' = on CPU)",
        ),
        f(
            name="hang.blocker_wait_s",
            sources=("hanganalyze",),
            doc="seconds the root blocker has been in its current wait",
        ),
        f(
            name="hang.blocking_sessions",
            sources=("hanganalyze",),
            doc="sessions the root blocker blocks, as hanganalyze prints it",
        ),
        f(
            name="hang.waiter_event",
            sources=("hanganalyze",),
            kind="string",
            doc="event the blocked sessions wait on (the first waiter's)",
        ),
        f(
            name="hang.max_waiter_wait_s",
            sources=("hanganalyze",),
            doc="longest time in wait among the blocked sessions (s)",
        ),
        f(
            name="hang.event_count",
            sources=("hanganalyze",),
            keyed_by="event",
            doc="sessions in the chains by the event they wait on",
        ),
        f(
            name="hang.signature",
            sources=("hanganalyze",),
            kind="string",
            doc="the first chain's signature ('blocker event'<='waiter event')",
        ),
        # ---- LGWR trace ------------------------------------------------------------------
        f(
            name="lgwr.slow_writes",
            sources=("lgwr_trace",),
            doc="'Warning: log write elapsed time' lines (redo writes over 500 ms)",
        ),
        f(name="lgwr.max_write_ms", sources=("lgwr_trace",), doc="slowest redo write (ms)"),
        f(name="lgwr.avg_write_ms", sources=("lgwr_trace",), doc="average slow redo write (ms)"),
        f(name="lgwr.min_write_ms", sources=("lgwr_trace",), doc="fastest warned write (ms)"),
        f(
            name="lgwr.max_write_kb",
            unit="KB",
            sources=("lgwr_trace",),
            doc="largest redo write among the warnings (KB)",
        ),
        f(
            name="lgwr.avg_write_kb",
            unit="KB",
            sources=("lgwr_trace",),
            doc="average redo write size among the warnings (KB)",
        ),
        f(
            name="lgwr.ms_per_mb",
            unit="ms/MB",
            sources=("lgwr_trace",),
            doc="total warned write time / total warned MB (ms per MB: slow device vs big writes)",
        ),
        f(
            name="lgwr.broadcast_waits",
            sources=("lgwr_trace",),
            doc="'Warning: log write broadcast wait time' lines (RAC: waiting for the SCN "
            "broadcast before posting the committers)",
        ),
        f(
            name="lgwr.sync_mode_switches",
            sources=("lgwr_trace",),
            doc="adaptive log file sync switches between post/wait and polling "
            "(kcrfw_update_adaptive_sync_mode, 'Log file sync switching to ...')",
        ),
        # ---- mpstat ------------------------------------------------------------------------
        f(
            name="cpu.count",
            sources=("mpstat", "vmstat", "iostat", "sar", "pidstat"),
            doc="CPUs reported (sysstat: from the banner)",
        ),
        f(name="cpu.intervals", sources=CPU, doc="samples (the since-boot one excluded)"),
        f(name="cpu.usr_pct", sources=CPU, doc="average user %"),
        f(name="cpu.sys_pct", sources=CPU, doc="average system %"),
        f(name="cpu.wait_pct", sources=CPU, doc="average wait/iowait %"),
        f(name="cpu.idle_pct", sources=CPU, doc="average idle %"),
        f(name="cpu.steal_pct", sources=CPU, doc="average steal % (Linux)"),
        f(name="cpu.irq_pct", sources=("mpstat", "sar"), doc="average irq + soft % (Linux)"),
        f(name="cpu.max_sys_pct", sources=("mpstat",), doc="highest per-CPU system %"),
        f(
            name="cpu.share_sys_over_50_pct",
            label="share of CPUs with sys above 50",
            sources=("mpstat",),
            doc="share of CPUs whose system % is above 50",
        ),
        f(
            name="cpu.share_sys_over_80_pct",
            label="share of CPUs with sys above 80",
            sources=("mpstat",),
            doc="share of CPUs whose system % is above 80",
        ),
        f(name="cpu.sys_usr_ratio", sources=("mpstat",), doc="sys % / usr % (usr floored at 1)"),
        f(
            name="cpu.intr_top_share_pct",
            label="share of interrupts on the busiest CPU",
            sources=("mpstat",),
            doc="share of all interrupts taken by the busiest CPU (Solaris intr column, sysstat "
            "mpstat -I SUM)",
        ),
        f(name="cpu.max_smtx", sources=("mpstat",), doc="highest per-CPU smtx (mutex spins)"),
        f(name="cpu.max_xcal", sources=("mpstat",), doc="highest per-CPU xcal"),
        f(name="cpu.max_migr", sources=("mpstat",), doc="highest per-CPU migr"),
        f(name="cpu.sys_skew", sources=("mpstat",), doc="max - min per-CPU system %"),
        f(name="cpu.sys", sources=("mpstat",), keyed_by="cpu", doc="system % per CPU id"),
        f(name="cpu.intr", sources=("mpstat",), keyed_by="cpu", doc="interrupts per CPU id"),
        # mpstat: the other sysstat columns, per-CPU hot spots, -I tables, processor sets
        f(
            name="cpu.softirq_pct",
            sources=("mpstat",),
            doc="average %soft (Linux)",
            label="softirq",
        ),
        f(
            name="cpu.hardirq_pct",
            sources=("mpstat",),
            doc="average %irq (Linux)",
            label="hard irq",
        ),
        f(name="cpu.nice_pct", sources=("mpstat",), doc="average %nice (Linux)", label="nice"),
        f(
            name="cpu.guest_pct",
            sources=("mpstat",),
            doc="average %guest + %gnice: CPU given to virtual machines (Linux)",
            label="guest",
        ),
        f(name="cpu.usr", sources=("mpstat",), keyed_by="cpu", doc="user % per CPU id", unit="%"),
        f(
            name="cpu.wait",
            sources=("mpstat",),
            keyed_by="cpu",
            doc="iowait/wt % per CPU id",
            unit="%",
        ),
        f(name="cpu.idle", sources=("mpstat",), keyed_by="cpu", doc="idle % per CPU id", unit="%"),
        f(
            name="cpu.softirq",
            sources=("mpstat",),
            keyed_by="cpu",
            doc="%soft per CPU id",
            unit="%",
        ),
        f(name="cpu.hardirq", sources=("mpstat",), keyed_by="cpu", doc="%irq per CPU id", unit="%"),
        f(name="cpu.steal", sources=("mpstat",), keyed_by="cpu", doc="%steal per CPU id", unit="%"),
        f(
            name="cpu.syscl",
            sources=("mpstat",),
            keyed_by="cpu",
            doc="system calls per second per CPU id or processor set (Solaris syscl)",
            unit="/s",
            label="syscalls",
        ),
        f(
            name="cpu.max_usr_pct",
            sources=("mpstat",),
            doc="highest per-CPU user %",
            label="busiest usr",
        ),
        f(
            name="cpu.max_wait_pct",
            sources=CPU,
            doc="highest iowait %: of any CPU (mpstat), of any sample (vmstat, iostat, sar)",
            label="worst iowait",
        ),
        f(
            name="cpu.min_idle_pct",
            sources=("mpstat",),
            doc="lowest per-CPU idle %",
            label="least idle",
        ),
        f(
            name="cpu.max_softirq_pct",
            sources=("mpstat",),
            doc="highest per-CPU %soft (one CPU doing a NIC's or the block layer's softirqs)",
            label="hottest softirq",
        ),
        f(
            name="cpu.max_hardirq_pct",
            sources=("mpstat",),
            doc="highest per-CPU %irq",
            label="hottest irq",
        ),
        f(
            name="cpu.max_irq_pct",
            sources=("mpstat",),
            doc="highest per-CPU %irq + %soft: a CPU saturated by interrupt work",
            label="hottest irq + softirq",
        ),
        f(
            name="cpu.max_steal_pct",
            sources=("mpstat",),
            doc="highest per-CPU %steal",
            label="worst steal",
        ),
        f(
            name="cpu.irq_hot_cpus",
            sources=("mpstat",),
            doc="CPUs whose %irq + %soft is 30 or more",
            label="CPUs hot with irq + softirq",
        ),
        f(
            name="cpu.steal_hot_cpus",
            sources=("mpstat",),
            doc="CPUs whose %steal is 30 or more (the hypervisor gives them to others)",
            label="CPUs losing 30 %+ to steal",
        ),
        f(
            name="cpu.sets",
            sources=("mpstat",),
            doc="processor sets reported (Solaris mpstat -a); cpu.count is then their CPUs",
            label="processor sets",
        ),
        f(
            name="cpu.intr_per_s",
            sources=("mpstat",),
            doc="interrupts per second, the `all` row of mpstat -I SUM (else the CPUs' sum)",
            unit="/s",
            label="interrupts",
        ),
        f(
            name="cpu.intr_cpu_sum_per_s",
            sources=("mpstat",),
            doc="interrupts per second summed over the CPU rows of mpstat -I SUM (some sysstat "
            "releases overflow the all row; this sum does not)",
            unit="/s",
            label="interrupts (sum of CPUs)",
        ),
        f(
            name="cpu.softirq_per_s",
            sources=("mpstat",),
            keyed_by="softirq",
            doc="softirqs per second by kind (NET_RX, TIMER, ...), summed over CPUs (mpstat -I SCPU)",
            unit="/s",
            label="per s",
        ),
        f(
            name="cpu.irq_per_s",
            sources=("mpstat",),
            keyed_by="irq",
            doc="interrupts per second by interrupt line, summed over CPUs (mpstat -I CPU)",
            unit="/s",
            label="per s",
        ),
        # ---- OS samplers: vmstat, iostat, sar, pidstat, prstat -------------------------------
        # Means and maxima are over the samples, without vmstat's/iostat's first (since boot)
        # when later ones exist; counters that only grow since boot are never facts.
        f(
            name="os.since_boot",
            sources=("vmstat", "iostat"),
            doc="1 when the only sample is the tool's first, the average since boot: the other "
            "facts of the block then describe uptime, not the incident; for counters that only "
            "grow from boot (netstat -s, nstat -a, /proc/vmstat, PSI totals) 1 when the block "
            "holds one sample (totals over the uptime, never compared with a threshold), 0 when "
            "two samples give a difference",
            label="since-boot sample only",
        ),
        f(
            name="cpu.max_busy_pct",
            sources=("vmstat", "iostat", "sar"),
            doc="highest 100 - idle % of any sample",
            unit="%",
            label="busiest sample",
        ),
        f(
            name="runq.avg",
            sources=("vmstat", "sar"),
            doc="mean run queue (vmstat r, sar runq-sz; "
            "Linux vmstat counts running tasks too): compare with cpu.count",
            label="run queue",
        ),
        f(
            name="runq.max",
            sources=("vmstat", "sar"),
            doc="largest run queue sample",
            label="run queue (max)",
        ),
        f(
            name="runq.per_cpu_max",
            sources=("vmstat", "sar"),
            doc="largest run queue / CPUs (sar banner, AIX lcpu=)",
            label="run queue per CPU (max)",
        ),
        f(
            name="runq.blocked_avg",
            sources=("vmstat", "sar"),
            doc="mean tasks blocked (vmstat b: uninterruptible, usually on I/O; sar -q blocked)",
            label="blocked",
        ),
        f(
            name="runq.blocked_max",
            sources=("vmstat", "sar"),
            doc="most tasks blocked",
            label="blocked (max)",
        ),
        f(
            name="runq.plist_max",
            sources=("sar",),
            doc="largest task list (plist-sz)",
            label="tasks",
        ),
        f(
            name="runq.ldavg_1_max",
            sources=("sar", "prstat"),
            doc="highest 1-minute load average (sar -q ldavg-1, prstat Total: lines)",
            label="load average 1 min (max)",
        ),
        f(
            name="runq.ldavg_1_avg",
            sources=("sar",),
            doc="mean 1-minute load average",
            label="load average 1 min",
        ),
        f(
            name="runq.ldavg_1_last",
            sources=("sar", "prstat"),
            doc="last 1-minute load average",
            label="load average 1 min (last)",
        ),
        f(
            name="runq.ldavg_15_last",
            sources=("sar",),
            doc="last 15-minute load average",
            label="load average 15 min (last)",
        ),
        f(
            name="runq.ldavg_per_cpu_max",
            sources=("sar",),
            doc="highest ldavg-1 / CPUs "
            "(banner): above 1 means more runnable (and, on Linux, D-state) tasks than CPUs",
            label="load per CPU (max)",
        ),
        f(
            name="sys.cs_per_s_avg",
            sources=("vmstat", "sar"),
            doc="mean context switches per second (vmstat cs, sar -w cswch/s, Solaris pswch/s)",
            unit="/s",
            label="context switches",
        ),
        f(
            name="sys.cs_per_s_max",
            sources=("vmstat", "sar"),
            doc="most context switches per second in a sample",
            unit="/s",
            label="context switches (max)",
        ),
        f(
            name="sys.intr_per_s_avg",
            sources=("vmstat",),
            doc="mean interrupts per second (vmstat in)",
            unit="/s",
            label="interrupts",
        ),
        f(
            name="sys.intr_per_s_max",
            sources=("vmstat",),
            doc="most interrupts per second",
            unit="/s",
            label="interrupts (max)",
        ),
        f(
            name="sys.syscalls_per_s_avg",
            sources=("vmstat",),
            doc="mean system calls per second (Solaris/AIX/BSD vmstat faults sy)",
            unit="/s",
            label="system calls",
        ),
        f(
            name="sys.syscalls_per_s_max",
            sources=("vmstat",),
            doc="most system calls per second",
            unit="/s",
            label="system calls (max)",
        ),
        f(
            name="mem.free_kb_min",
            sources=("vmstat", "sar"),
            doc="lowest free memory (vmstat "
            "free/fre, sar -r kbmemfree) in KiB (vmstat -S and AIX pages converted)",
            unit="KiB",
            label="free memory (min)",
        ),
        f(
            name="mem.free_kb_avg",
            sources=("vmstat", "sar"),
            doc="mean free memory in KiB",
            unit="KiB",
            label="free memory",
        ),
        f(
            name="mem.avail_kb_min",
            sources=("sar",),
            doc="lowest kbavail (free + reclaimable)",
            unit="KiB",
            label="available memory (min)",
        ),
        f(
            name="mem.used_pct_max",
            sources=("sar",),
            doc="highest %memused",
            unit="%",
            label="memory used (max)",
        ),
        f(
            name="mem.commit_pct_max",
            sources=("sar",),
            doc="highest %commit (over 100: more committed than RAM + swap)",
            unit="%",
            label="memory committed (max)",
        ),
        f(
            name="mem.swap_used_kb_max",
            sources=("vmstat",),
            doc="most swap in use (Linux vmstat swpd)",
            unit="KiB",
            label="swap used (max)",
        ),
        f(
            name="mem.swap_avail_kb_min",
            sources=("vmstat",),
            doc="least available swap (Solaris vmstat swap)",
            unit="KiB",
            label="swap available (min)",
        ),
        f(
            name="swap.used_pct_max",
            sources=("sar",),
            doc="highest %swpused (sar -S)",
            unit="%",
            label="swap used (max)",
        ),
        f(
            name="swap.in_kbps_avg",
            sources=("vmstat",),
            doc="mean swap-in rate: Linux si, Solaris -p api, AIX pi (4 KiB pages)",
            unit="KiB/s",
            label="swap in",
        ),
        f(
            name="swap.in_kbps_max",
            sources=("vmstat",),
            doc="highest swap-in rate",
            unit="KiB/s",
            label="swap in (max)",
        ),
        f(
            name="swap.out_kbps_avg",
            sources=("vmstat",),
            doc="mean swap-out rate: Linux so, Solaris -p apo, AIX po",
            unit="KiB/s",
            label="swap out",
        ),
        f(
            name="swap.out_kbps_max",
            sources=("vmstat",),
            doc="highest swap-out rate",
            unit="KiB/s",
            label="swap out (max)",
        ),
        f(
            name="swap.in_pages_per_s_avg",
            sources=("sar",),
            doc="mean pswpin/s (Solaris swpin/s)",
            unit="pages/s",
            label="swap in",
        ),
        f(
            name="swap.in_pages_per_s_max",
            sources=("sar",),
            doc="highest pswpin/s",
            unit="pages/s",
            label="swap in (max)",
        ),
        f(
            name="swap.out_pages_per_s_avg",
            sources=("sar",),
            doc="mean pswpout/s (Solaris swpot/s)",
            unit="pages/s",
            label="swap out",
        ),
        f(
            name="swap.out_pages_per_s_max",
            sources=("sar",),
            doc="highest pswpout/s",
            unit="pages/s",
            label="swap out (max)",
        ),
        f(
            name="page.in_kbps_max",
            sources=("vmstat",),
            doc="highest Solaris vmstat pi (all page-ins, file system included)",
            unit="KiB/s",
            label="page in (max)",
        ),
        f(
            name="page.out_kbps_max",
            sources=("vmstat",),
            doc="highest Solaris vmstat po",
            unit="KiB/s",
            label="page out (max)",
        ),
        f(
            name="page.scan_rate_avg",
            sources=("vmstat", "sar"),
            doc="mean page scanner rate "
            "(vmstat sr; sar -B pgscank/s + pgscand/s): the scanner runs when memory is short",
            unit="pages/s",
            label="page scan rate",
        ),
        f(
            name="page.scan_rate_max",
            sources=("vmstat", "sar"),
            doc="highest page scan rate",
            unit="pages/s",
            label="page scan rate (max)",
        ),
        f(
            name="page.majflt_per_s_max",
            sources=("sar",),
            doc="highest majflt/s (faults that read from disk)",
            unit="/s",
            label="major faults (max)",
        ),
        # per device: iostat -x (Linux, Solaris) and sar -d; means over samples
        f(
            name="dev.r_per_s",
            sources=DEV,
            keyed_by="device",
            doc="reads per second",
            unit="/s",
            label="reads",
        ),
        f(
            name="dev.w_per_s",
            sources=DEV,
            keyed_by="device",
            doc="writes per second",
            unit="/s",
            label="writes",
        ),
        f(
            name="dev.tps",
            sources=DEV,
            keyed_by="device",
            doc="transfers per second (plain iostat, sar -d; Solaris sar r+w/s)",
            unit="/s",
            label="transfers",
        ),
        f(
            name="dev.rkb_per_s",
            sources=DEV,
            keyed_by="device",
            doc="KiB read per second (sectors and MB converted)",
            unit="KiB/s",
            label="read throughput",
        ),
        f(
            name="dev.wkb_per_s",
            sources=DEV,
            keyed_by="device",
            doc="KiB written per second",
            unit="KiB/s",
            label="write throughput",
        ),
        f(
            name="dev.await_ms",
            sources=DEV,
            keyed_by="device",
            doc="mean time per request, "
            "queue included: await, or r_await/w_await weighted by r/s and w/s, or Solaris "
            "wsvc_t + asvc_t (sar: avwait + avserv)",
            unit="ms",
            label="await",
        ),
        f(
            name="dev.r_await_ms",
            sources=("iostat",),
            keyed_by="device",
            doc="read await",
            unit="ms",
            label="read await",
        ),
        f(
            name="dev.w_await_ms",
            sources=("iostat",),
            keyed_by="device",
            doc="write await",
            unit="ms",
            label="write await",
        ),
        f(
            name="dev.max_await_ms",
            sources=DEV,
            keyed_by="device",
            doc="worst sample's await",
            unit="ms",
            label="await (max)",
        ),
        f(
            name="dev.queue",
            sources=DEV,
            keyed_by="device",
            doc="mean requests queued or in "
            "service (aqu-sz/avgqu-sz; Solaris wait + actv; sar avque)",
            label="queue",
        ),
        f(
            name="dev.util_pct",
            sources=DEV,
            keyed_by="device",
            doc="mean %util (Solaris %b): "
            "time with at least one request in service; see io.util_caveat",
            unit="%",
            label="utilisation",
        ),
        f(
            name="dev.svctm_ms",
            sources=DEV,
            keyed_by="device",
            doc="service time where "
            "printed (sysstat svctm, deprecated and unreliable; Solaris asvc_t)",
            unit="ms",
            label="service time",
        ),
        f(name="io.devices", sources=DEV, doc="devices seen", label="devices"),
        f(
            name="io.max_await_ms",
            sources=DEV,
            doc="worst await of any device and sample",
            unit="ms",
            label="worst await",
        ),
        f(
            name="io.max_r_await_ms",
            sources=("iostat",),
            doc="worst device read await (mean)",
            unit="ms",
            label="worst read await",
        ),
        f(
            name="io.max_w_await_ms",
            sources=("iostat",),
            doc="worst device write await (mean)",
            unit="ms",
            label="worst write await",
        ),
        f(
            name="io.max_util_pct",
            sources=DEV,
            doc="highest %util of any device and sample",
            unit="%",
            label="highest utilisation",
        ),
        f(
            name="io.max_queue",
            sources=DEV,
            doc="longest mean queue of any device",
            label="longest queue",
        ),
        f(
            name="io.worst_device",
            sources=DEV,
            kind="string",
            doc="the slowest device doing "
            "at least 1 request/s (service times below that mean nothing), else the busiest",
            label="worst device",
        ),
        f(
            name="io.worst_await_ms",
            sources=DEV,
            doc="that device's mean await",
            unit="ms",
            label="worst device await",
        ),
        f(
            name="io.worst_util_pct",
            sources=DEV,
            doc="that device's mean %util",
            unit="%",
            label="worst device utilisation",
        ),
        f(
            name="io.util_caveat",
            sources=DEV,
            doc="1 when a device near 100 %util serves "
            "requests in parallel (NVMe, device-mapper, md, multipath or array LUNs, or a queue "
            "of 2+ at 2 ms or less): its %util says busy, not saturated; read await and queue",
            label="%util unreliable here",
        ),
        # sar: network and TCP
        f(
            name="net.rx_kb_per_s",
            sources=("sar",),
            keyed_by="iface",
            doc="KiB received per second (sar -n DEV)",
            unit="KiB/s",
            label="received",
        ),
        f(
            name="net.tx_kb_per_s",
            sources=("sar",),
            keyed_by="iface",
            doc="KiB sent per second",
            unit="KiB/s",
            label="sent",
        ),
        f(
            name="net.rx_pkts_per_s",
            sources=("sar",),
            keyed_by="iface",
            doc="packets received per second",
            unit="/s",
            label="packets in",
        ),
        f(
            name="net.tx_pkts_per_s",
            sources=("sar",),
            keyed_by="iface",
            doc="packets sent per second",
            unit="/s",
            label="packets out",
        ),
        f(
            name="net.util_pct",
            sources=("sar",),
            keyed_by="iface",
            doc="mean %ifutil",
            unit="%",
            label="link utilisation",
        ),
        f(
            name="net.max_util_pct",
            sources=("sar",),
            doc="highest %ifutil of any interface",
            unit="%",
            label="link utilisation (max)",
        ),
        f(
            name="net.rx_errors_per_s",
            sources=("sar",),
            keyed_by="iface",
            doc="rxerr/s (sar -n EDEV)",
            unit="/s",
            label="receive errors",
        ),
        f(
            name="net.tx_errors_per_s",
            sources=("sar",),
            keyed_by="iface",
            doc="txerr/s",
            unit="/s",
            label="send errors",
        ),
        f(
            name="net.rx_drops_per_s",
            sources=("sar",),
            keyed_by="iface",
            doc="rxdrop/s (no buffer: the host did not keep up)",
            unit="/s",
            label="receive drops",
        ),
        f(
            name="net.tx_drops_per_s",
            sources=("sar",),
            keyed_by="iface",
            doc="txdrop/s",
            unit="/s",
            label="send drops",
        ),
        *[
            f(
                name=f"tcp.{n}_per_s_{how}",
                sources=("sar",),
                doc=f"{what} per second ({how}; sar -n TCP,ETCP {col})",
                unit="/s",
                label=f"{what} ({how})",
            )
            for n, what, col in (
                ("retrans", "TCP segments retransmitted", "retrans/s"),
                ("active", "TCP active opens", "active/s"),
                ("passive", "TCP passive opens", "passive/s"),
                ("oseg", "TCP segments sent", "oseg/s"),
                ("resets", "TCP resets sent", "orsts/s"),
                ("failed", "TCP failed connection attempts", "atmptf/s"),
            )
            for how in ("avg", "max")
        ],
        f(
            name="tcp.retrans_pct",
            sources=("sar",),
            doc="retransmitted segments per 100 segments sent (retrans/s over oseg/s)",
            unit="%",
            label="retransmits",
        ),
        f(
            name="sar.samples",
            sources=("sar",),
            doc="most timed rows of any section",
            label="samples",
        ),
        # per process: pidstat and prstat; keyed by command (prstat -L: name/lwpid)
        f(name="proc.count", sources=PROC, doc="processes (or threads) seen", label="processes"),
        f(name="proc.samples", sources=("pidstat",), doc="pidstat reports seen", label="samples"),
        f(
            name="proc.cpu_pct",
            sources=PROC,
            keyed_by="process",
            doc="mean %CPU (pidstat %CPU, prstat CPU) of the busiest process of that name",
            unit="%",
            label="CPU",
        ),
        f(
            name="proc.usr_pct",
            sources=PROC,
            keyed_by="process",
            doc="user % (pidstat %usr, prstat -m USR)",
            unit="%",
            label="user",
        ),
        f(
            name="proc.sys_pct",
            sources=PROC,
            keyed_by="process",
            doc="system % (pidstat %system, prstat -m SYS)",
            unit="%",
            label="system",
        ),
        f(
            name="proc.wait_pct",
            sources=("pidstat",),
            keyed_by="process",
            doc="%wait: time runnable but waiting for a CPU (sysstat 12)",
            unit="%",
            label="waiting for CPU",
        ),
        f(
            name="proc.lck_pct",
            sources=("prstat",),
            keyed_by="process",
            doc="prstat -m LCK: time waiting for user-level locks",
            unit="%",
            label="lock wait",
        ),
        f(
            name="proc.lat_pct",
            sources=("prstat",),
            keyed_by="process",
            doc="prstat -m LAT: time waiting for a CPU (run queue latency)",
            unit="%",
            label="CPU latency",
        ),
        f(
            name="proc.kb_rd_per_s",
            sources=("pidstat",),
            keyed_by="process",
            doc="kB_rd/s",
            unit="KiB/s",
            label="read",
        ),
        f(
            name="proc.kb_wr_per_s",
            sources=("pidstat",),
            keyed_by="process",
            doc="kB_wr/s",
            unit="KiB/s",
            label="written",
        ),
        f(
            name="proc.iodelay",
            sources=("pidstat",),
            keyed_by="process",
            doc="iodelay: clock ticks the task waited for block I/O (and swap-in) in the interval",
            label="I/O delay",
        ),
        f(
            name="proc.cswch_per_s",
            sources=("pidstat",),
            keyed_by="process",
            doc="voluntary context switches per second (blocking)",
            unit="/s",
            label="voluntary switches",
        ),
        f(
            name="proc.nvcswch_per_s",
            sources=("pidstat",),
            keyed_by="process",
            doc="involuntary context switches per second (preempted)",
            unit="/s",
            label="involuntary switches",
        ),
        f(
            name="proc.majflt_per_s",
            sources=("pidstat",),
            keyed_by="process",
            doc="major faults per second",
            unit="/s",
            label="major faults",
        ),
        f(
            name="proc.rss_kb",
            sources=PROC,
            keyed_by="process",
            doc="resident set size",
            unit="KiB",
            label="RSS",
        ),
        f(
            name="proc.top_cpu",
            sources=PROC,
            kind="string",
            doc="`command (pid)` with the highest CPU (prstat -m: USR + SYS)",
            label="top process by CPU",
        ),
        f(
            name="proc.max_cpu_pct",
            sources=PROC,
            doc="its CPU %",
            unit="%",
            label="top process CPU",
        ),
        f(
            name="proc.top_io",
            sources=("pidstat",),
            kind="string",
            doc="`command (pid)` with the most kB read + written per second",
            label="top process by I/O",
        ),
        f(
            name="proc.max_io_kb_per_s",
            sources=("pidstat",),
            doc="its kB_rd/s + kB_wr/s",
            unit="KiB/s",
            label="top process I/O",
        ),
        f(
            name="proc.top_cs",
            sources=("pidstat",),
            kind="string",
            doc="`command (pid)` with the most involuntary context switches",
            label="most preempted process",
        ),
        f(
            name="proc.max_nvcswch_per_s",
            sources=("pidstat",),
            doc="its nvcswch/s",
            unit="/s",
            label="most involuntary switches",
        ),
        f(
            name="proc.top_wait",
            sources=("pidstat",),
            kind="string",
            doc="`command (pid)` with the highest %wait",
            label="process waiting most for CPU",
        ),
        f(
            name="proc.max_wait_pct",
            sources=("pidstat",),
            doc="its %wait",
            unit="%",
            label="highest %wait",
        ),
        f(
            name="proc.top_lat",
            sources=("prstat",),
            kind="string",
            doc="`name/lwp (pid/lwp)` with the highest LAT",
            label="thread waiting most for CPU",
        ),
        f(
            name="proc.max_lat_pct",
            sources=("prstat",),
            doc="its LAT %",
            unit="%",
            label="highest LAT",
        ),
        f(
            name="proc.top_lck",
            sources=("prstat",),
            kind="string",
            doc="`name/lwp (pid/lwp)` with the highest LCK",
            label="thread waiting most on locks",
        ),
        f(
            name="proc.max_lck_pct",
            sources=("prstat",),
            doc="its LCK %",
            unit="%",
            label="highest LCK",
        ),
        # ---- functions: stacks (pstack, gdb, ustack) and DTrace ----------------------------
        f(
            name="frame.count",
            label="frames",
            sources=F,
            keyed_by="function",
            doc="frames naming the function (a DTrace ustack counts as often as it was seen)",
        ),
        f(
            name="frame.top",
            label="stacks with it on top",
            sources=F,
            keyed_by="function",
            doc="stacks (weighted by DTrace counts) whose innermost non-libc frame is the function",
        ),
        f(
            name="layer.count",
            label="frames in layer",
            sources=F,
            keyed_by="layer",
            doc="frames per Oracle kernel layer prefix (kge, kgl, opi, sl, ...), from "
            "ingest/data/oracle_prefixes.tsv",
        ),
        f(name="stack.stacks", sources=F, doc="stacks/threads seen"),
        f(name="stack.frames", sources=F, doc="frames seen"),
        f(
            name="stack.samples",
            sources=("stack",),
            doc="samples of the same process or thread (the same pstack/gdb header, or "
            "oradebug short_stack lines; a folded short stack profile's sample count)",
        ),
        f(
            name="stack.stable_frames",
            sources=("stack",),
            doc="frames present in every sample of that process or thread: it is stuck below "
            "them (oradebug's own ksedsts/ksdxcb/sspuser frames left out)",
        ),
        f(
            name="probe.count",
            label="count",
            sources=("dtrace",),
            keyed_by="function",
            doc="DTrace aggregation counts by function/probe name (`name count`, `module "
            "function count`, printf lines 'X executed N times')",
        ),
        f(
            name="probe.time_ms",
            sources=("dtrace",),
            keyed_by="function",
            doc="time per function from DTrace printf lines ('waited in ms: N')",
        ),
        f(
            name="probe.max_count",
            sources=("dtrace",),
            doc="largest aggregation count in the output",
        ),
        f(
            name="hist.p50",
            sources=("dtrace",),
            keyed_by="aggregation",
            doc="median bucket value of a quantize/lquantize histogram, keyed by its label",
        ),
        f(name="hist.max", sources=("dtrace",), keyed_by="aggregation", doc="highest bucket"),
        f(
            name="hist.p90",
            sources=("dtrace",),
            keyed_by="aggregation",
            doc="bucket holding the 90th percentile (bpftrace/BCC: its lower bound)",
        ),
        f(
            name="hist.p99",
            sources=("dtrace",),
            keyed_by="aggregation",
            doc="bucket holding the 99th percentile: the tail a latency histogram is read for",
        ),
        f(
            name="hist.modes",
            sources=("dtrace",),
            keyed_by="aggregation",
            doc="peaks of the histogram (2: bimodal, e.g. cache hits and misses)",
        ),
        f(name="hist.count", sources=("dtrace",), keyed_by="aggregation", doc="values counted"),
    ]


# ---- OS profiles and Linux system files (issue 15: lockstat, perf, /proc, netstat, free, top) ----
LOCK_SOURCES = ("lockstat",)
PERF_SOURCES = ("perf",)
MEMORY_SOURCES = ("meminfo", "free", "top")
LOAD_SOURCES = ("uptime", "top")
# formats whose counters only grow from boot: one sample is never compared with a threshold
SINCE_BOOT_SOURCES = ("netstat", "pressure", "procvmstat")
# facts other formats already produce that these formats produce too, under the same name
EXTRA_SOURCES = {
    "os.since_boot": SINCE_BOOT_SOURCES,
    "tcp.retrans_pct": ("netstat",),
    "proc.cpu_pct": ("top",),
    "cpu.usr_pct": ("top",),
    "cpu.sys_pct": ("top",),
    "cpu.wait_pct": ("top",),
    "cpu.idle_pct": ("top",),
    "cpu.steal_pct": ("top",),
    "cpu.irq_pct": ("top",),
}


def _os_profile_specs() -> list[FactSpec]:
    L, P, M, LD = LOCK_SOURCES, PERF_SOURCES, MEMORY_SOURCES, LOAD_SOURCES
    f = FactSpec
    return [
        # ---- lockstat (Solaris/illumos) --------------------------------------------------
        f(
            name="lock.top_lock",
            sources=L,
            kind="string",
            label="hottest lock",
            doc="top row's lock",
        ),
        f(
            name="lock.top_caller",
            sources=L,
            kind="string",
            label="its caller",
            doc="top row's caller, as printed (background+0xdc)",
        ),
        f(name="lock.top_pct", sources=L, label="top row share", doc="top row's indv %"),
        f(
            name="lock.max_block_ms",
            sources=L,
            label="longest average block",
            doc="highest average time per event in a block section (a reader or writer asleep)",
        ),
        f(
            name="lockstat.spin_events",
            sources=L,
            label="spin events",
            doc="events of the spin sections (adaptive mutex spin, spin lock spin): CPU burnt "
            "spinning, what mpstat shows as smtx",
        ),
        f(
            name="lockstat.block_events",
            sources=L,
            label="block events",
            doc="events of the block sections (adaptive mutex block, R/W blocked by ...): "
            "threads put to sleep on a lock",
        ),
        f(name="lockstat.hold_events", sources=L, label="hold events", doc="-H hold events"),
        f(
            name="lockstat.profile_events",
            sources=L,
            label="profiling events",
            doc="-I profiling interrupt samples",
        ),
        f(
            name="lockstat.top_profile_caller",
            sources=L,
            kind="string",
            label="hottest function (-I)",
            doc="function most often on CPU in a -I profile (e.g. mutex_vector_enter)",
        ),
        f(
            name="lockstat.events",
            sources=L,
            keyed_by="section",
            unit="events",
            doc="events of each lockstat section ('Adaptive mutex spin', 'R/W writer blocked "
            "by readers', 'Profiling interrupt'), from its title line",
        ),
        f(
            name="lockstat.events_per_s",
            sources=L,
            keyed_by="section",
            unit="/s",
            label="events per second",
            doc="events per second of each section, as its title prints it",
        ),
        f(name="lockstat.interval_s", sources=L, label="interval", doc="seconds measured"),
        f(
            name="lock.count",
            sources=L,
            keyed_by="lock",
            unit="events",
            doc="contention/hold events on the lock (by name or address), over all sections",
        ),
        f(
            name="lock.share_pct",
            sources=L,
            keyed_by="lock",
            label="share",
            doc="largest share (indv %) one row of this lock has of its section's events",
        ),
        f(
            name="lock.time_ms",
            sources=L,
            keyed_by="lock",
            label="time",
            doc="Count x average time (nsec/usec column): time spent spinning, blocked or "
            "holding the lock",
        ),
        f(
            name="caller.count",
            sources=L,
            keyed_by="function",
            unit="events",
            doc="events by caller function (offset stripped): who takes the hot locks, or "
            "which function a -I profile found on CPU",
        ),
        # ---- perf report / perf stat / folded stacks --------------------------------------
        f(
            name="perf.top_symbol",
            sources=P,
            kind="string",
            label="hottest function",
            doc="symbol with the highest self share",
        ),
        f(name="perf.top_pct", sources=P, label="hottest function share", doc="its self share"),
        f(
            name="perf.kernel_pct",
            sources=P,
            label="kernel share",
            doc="share of samples in kernel symbols ([k], kernel DSOs)",
        ),
        f(
            name="perf.user_pct",
            sources=P,
            label="user share",
            doc="share of samples in user symbols ([.])",
        ),
        f(name="perf.top_dso", sources=P, kind="string", label="hottest DSO", doc="top DSO"),
        f(name="perf.ipc", sources=P, label="instructions per cycle", doc="perf stat IPC"),
        f(
            name="perf.cpus_utilized",
            sources=P,
            label="CPUs utilized",
            doc="perf stat task-clock 'CPUs utilized'",
        ),
        f(name="perf.elapsed_s", sources=P, label="elapsed", doc="seconds time elapsed"),
        f(
            name="perf.unsupported",
            sources=P,
            label="counters not counted",
            doc="perf stat counters printed <not supported> or <not counted>",
        ),
        f(name="perf.samples", sources=P, label="samples", doc="samples (# Samples: 28K)"),
        f(name="perf.event", sources=P, kind="string", label="event", doc="sampled event"),
        f(name="perf.event_count", sources=P, label="event count", doc="# Event count (approx.)"),
        f(
            name="symbol.self_pct",
            sources=P,
            keyed_by="function",
            label="self",
            doc="share of samples in the symbol itself (perf report Overhead or Self column)",
        ),
        f(
            name="symbol.children_pct",
            sources=P,
            keyed_by="function",
            label="children",
            doc="share of samples in the symbol or what it called (perf report --children)",
        ),
        f(
            name="dso.pct",
            sources=P,
            keyed_by="dso",
            unit="%",
            label="share",
            doc="share of samples by shared object (oracle, libc-2.17.so, [kernel.kallsyms])",
        ),
        f(
            name="comm.pct",
            sources=P,
            keyed_by="command",
            unit="%",
            label="share",
            doc="share of samples by command (process name)",
        ),
        f(
            name="layer.pct",
            sources=P,
            keyed_by="layer",
            unit="%",
            label="share",
            doc="share of samples by Oracle kernel layer prefix (ingest/data/oracle_prefixes.tsv)",
        ),
        f(
            name="perf.counter",
            sources=P,
            keyed_by="event",
            doc="perf stat counter values (task-clock in ms, cycles, instructions, ...)",
        ),
        # ---- memory: /proc/meminfo, free, top ---------------------------------------------
        f(name="mem.available_pct", sources=M, label="available", doc="available / total"),
        f(name="mem.swap_used_pct", sources=M, label="swap used", doc="swap used / swap total"),
        f(
            name="mem.committed_pct",
            sources=("meminfo",),
            label="committed of the limit",
            doc="Committed_AS / CommitLimit (over 100 means allocations may fail with "
            "vm.overcommit_memory=2)",
        ),
        f(
            name="mem.hugepages_unused_pct",
            sources=("meminfo",),
            label="huge pages unused",
            doc="(HugePages_Free - HugePages_Rsvd) / HugePages_Total: reserved memory no one "
            "uses (an SGA that did not go into huge pages)",
        ),
        f(
            name="mem.pagetables_mb",
            sources=("meminfo",),
            label="page tables",
            unit="MB",
            doc="PageTables: large when a big SGA is mapped with small pages by many processes",
        ),
        f(name="mem.total_mb", sources=M, label="memory", unit="MB", doc="MemTotal / total"),
        f(
            name="mem.available_mb",
            sources=M,
            label="available",
            unit="MB",
            doc="MemAvailable / available (estimate of what can be had without swapping); "
            "old free without it: free + buffers + cached",
        ),
        f(name="mem.free_mb", sources=M, label="free", unit="MB", doc="MemFree / free"),
        f(
            name="mem.cached_mb",
            sources=M,
            label="page cache",
            unit="MB",
            doc="Cached (+ Buffers) / buff/cache",
        ),
        f(name="mem.swap_total_mb", sources=M, label="swap", unit="MB", doc="SwapTotal"),
        f(name="mem.swap_used_mb", sources=M, label="swap used", unit="MB", doc="swap in use"),
        f(
            name="mem.committed_mb",
            sources=("meminfo",),
            label="committed",
            unit="MB",
            doc="Committed_AS: memory promised to processes",
        ),
        f(
            name="mem.hugepages_total",
            sources=("meminfo",),
            label="huge pages",
            doc="HugePages_Total",
        ),
        f(
            name="mem.hugepages_free",
            sources=("meminfo",),
            label="huge pages free",
            doc="HugePages_Free",
        ),
        f(
            name="mem.hugepages_mb",
            sources=("meminfo",),
            label="huge pages",
            unit="MB",
            doc="HugePages_Total x Hugepagesize: memory reserved for huge pages (SGA)",
        ),
        f(
            name="mem.anon_hugepages_mb",
            sources=("meminfo",),
            label="transparent huge pages",
            unit="MB",
            doc="AnonHugePages (THP in use)",
        ),
        f(name="mem.dirty_mb", sources=("meminfo",), label="dirty", unit="MB", doc="Dirty"),
        f(
            name="meminfo.kb",
            sources=("meminfo",),
            keyed_by="field",
            unit="kB",
            label="",
            doc="every /proc/meminfo field as printed (kB; counts for HugePages_*)",
        ),
        # ---- pressure stall information: /proc/pressure/{cpu,memory,io} -------------------
        f(
            name="psi.max_avg10_pct",
            sources=("pressure",),
            label="highest avg10",
            doc="highest avg10 of any resource",
        ),
        f(
            name="psi.avg10_pct",
            sources=("pressure",),
            keyed_by="resource",
            label="avg10",
            doc="share of the last 10 s some/all tasks stalled, keyed 'cpu some', 'io full', ...",
        ),
        f(
            name="psi.avg60_pct",
            sources=("pressure",),
            keyed_by="resource",
            label="avg60",
            doc="same over 60 s",
        ),
        f(
            name="psi.avg300_pct",
            sources=("pressure",),
            keyed_by="resource",
            label="avg300",
            doc="same over 300 s",
        ),
        f(
            name="psi.stall_ms",
            sources=("pressure",),
            keyed_by="resource",
            label="stalled",
            doc="growth of 'total' (microseconds stalled since boot) between the first and last "
            "sample of the same resource, in ms (only when two samples are present)",
        ),
        # ---- network counters: netstat -s, nstat ------------------------------------------
        f(
            name="net.counter",
            sources=("netstat",),
            keyed_by="counter",
            doc="network counters under nstat names (TcpRetransSegs, TcpExtListenOverflows, ...): "
            "since boot with one sample (see os.since_boot), the growth between the first and "
            "last sample with two or more",
        ),
        f(
            name="net.per_s",
            sources=("netstat",),
            keyed_by="counter",
            unit="/s",
            label="per second",
            doc="growth per second between the first and last sample when their times are known "
            "(OSWatcher `zzz ***date` markers, or `date` lines between the outputs)",
        ),
        f(
            name="net.interval_s",
            sources=("netstat",),
            label="between first and last sample",
            doc="seconds between the first and last timed sample",
        ),
        f(
            name="tcp.listen_overflows",
            sources=("netstat",),
            label="listen queue overflows",
            doc="times the listen queue of a socket overflowed (TcpExtListenOverflows)",
        ),
        f(
            name="tcp.listen_drops",
            sources=("netstat",),
            label="SYNs to LISTEN sockets dropped",
            doc="TcpExtListenDrops",
        ),
        f(name="tcp.resets_sent", sources=("netstat",), label="resets sent", doc="TcpOutRsts"),
        f(
            name="tcp.failed_opens",
            sources=("netstat",),
            label="failed connection attempts",
            doc="TcpAttemptFails",
        ),
        f(
            name="udp.receive_errors",
            sources=("netstat",),
            label="UDP receive errors",
            doc="UdpInErrors + UdpRcvbufErrors (datagrams dropped, e.g. RAC interconnect)",
        ),
        f(
            name="net.samples",
            sources=("netstat",),
            label="samples",
            doc="netstat -s / nstat outputs in the block",
        ),
        # ---- kernel memory counters: /proc/vmstat ------------------------------------------
        f(
            name="vm.direct_scan_pages",
            sources=("procvmstat",),
            label="pages scanned by direct reclaim",
            doc="pgscan_direct (all zones): processes reclaiming memory themselves, stalled",
        ),
        f(
            name="vm.allocstall",
            sources=("procvmstat",),
            label="allocation stalls",
            doc="allocstall (all zones): allocations that had to wait for direct reclaim",
        ),
        f(
            name="vm.swap_pages",
            sources=("procvmstat",),
            label="pages swapped in and out",
            doc="pswpin + pswpout",
        ),
        f(name="vm.major_faults", sources=("procvmstat",), label="major faults", doc="pgmajfault"),
        f(
            name="vm.compact_stall",
            sources=("procvmstat",),
            label="compaction stalls",
            doc="compact_stall: allocations waiting for memory compaction (huge pages, THP)",
        ),
        f(
            name="vm.thp_fallback",
            sources=("procvmstat",),
            label="THP fallbacks",
            doc="thp_fault_fallback: transparent huge page faults that fell back to small pages",
        ),
        f(name="vm.oom_kill", sources=("procvmstat",), label="OOM kills", doc="oom_kill"),
        f(
            name="vm.counter",
            sources=("procvmstat",),
            keyed_by="counter",
            doc="every /proc/vmstat value: since boot with one sample (see os.since_boot), the "
            "growth between the first and last sample with two or more (nr_* gauges: the last)",
        ),
        f(
            name="vm.per_s",
            sources=("procvmstat",),
            keyed_by="counter",
            unit="/s",
            label="per second",
            doc="growth per second between the first and last timed sample",
        ),
        f(
            name="vm.interval_s",
            sources=("procvmstat",),
            label="between first and last sample",
            doc="seconds between the first and last timed sample",
        ),
        # ---- load: uptime, top --------------------------------------------------------------
        f(
            name="load.per_cpu",
            sources=LD,
            label="1-min load per CPU",
            doc="1-minute load average / CPUs, when the output shows the CPU count (top with "
            "per-CPU lines); above 1 runnable (Linux: or uninterruptible) work waits",
        ),
        f(name="load.avg1", sources=LD, label="load average (1 min)", doc="1-minute load average"),
        f(name="load.avg5", sources=LD, label="load average (5 min)", doc="5-minute load average"),
        f(
            name="load.avg15",
            sources=LD,
            label="load average (15 min)",
            doc="15-minute load average",
        ),
        f(name="uptime.days", sources=LD, label="up", unit="days", doc="time since boot"),
        # ---- top: header and process table --------------------------------------------------
        f(
            name="proc.top_command",
            sources=("top",),
            kind="string",
            label="busiest command",
            doc="command with the most %CPU, summed over its rows (top -H: its threads)",
        ),
        f(
            name="proc.top_cpu_pct",
            sources=("top",),
            label="its CPU",
            doc="its %CPU (summed over its rows)",
        ),
        f(name="top.tasks", sources=("top",), label="tasks", doc="Tasks/Threads/processes total"),
        f(name="top.running", sources=("top",), label="running", doc="tasks running"),
        f(name="top.zombie", sources=("top",), label="zombie", doc="zombie tasks"),
        f(
            name="top.state_count",
            sources=("top",),
            keyed_by="state",
            doc="rows of the process table by state (R running, D uninterruptible, S, ...)",
        ),
        f(
            name="proc.mem_pct",
            sources=("top",),
            keyed_by="command",
            label="memory",
            doc="%MEM by command (summed)",
        ),
    ]


def _all_specs() -> list[FactSpec]:
    specs = _specs() + _os_profile_specs()
    out = []
    for spec in specs:
        extra = EXTRA_SOURCES.get(spec.name)
        if extra:
            spec = spec.model_copy(update={"sources": spec.sources + extra})
        out.append(spec)
    return out


FACTS: dict[str, FactSpec] = {s.name: s for s in _all_specs()}


@lru_cache(maxsize=4096)
def spec_of(name: str) -> FactSpec:
    """The catalogue's spec, or one made from the name's rules for a name it does not hold."""
    spec = FACTS.get(name)
    return spec if spec is not None else FactSpec(name=name, sources=(), doc="")


def show(name: str, value: object) -> str:
    return spec_of(name).show(value)


def facts_for(source: str) -> set[str]:
    return {name for name, spec in FACTS.items() if source in spec.sources}


# The facts a person reads first from each OS sampler, in that order: renderers show these
# before the rest of the catalogue order (a Slack reply has room for a handful).
HEADLINE: dict[str, tuple[str, ...]] = {
    "vmstat": (
        "os.since_boot",
        "runq.max",
        "runq.per_cpu_max",
        "cpu.usr_pct",
        "cpu.sys_pct",
        "cpu.wait_pct",
        "swap.out_kbps_max",
        "page.scan_rate_max",
        "sys.cs_per_s_max",
        "mem.free_kb_min",
    ),
    "iostat": (
        "os.since_boot",
        "io.worst_device",
        "io.worst_await_ms",
        "io.worst_util_pct",
        "io.util_caveat",
        "io.max_queue",
        "cpu.wait_pct",
    ),
    "sar": (
        "runq.max",
        "runq.ldavg_per_cpu_max",
        "runq.ldavg_1_max",
        "cpu.count",
        "cpu.wait_pct",
        "io.worst_device",
        "io.worst_await_ms",
        "tcp.retrans_pct",
        "mem.used_pct_max",
        "page.scan_rate_max",
    ),
    "pidstat": (
        "proc.top_cpu",
        "proc.max_cpu_pct",
        "proc.top_io",
        "proc.max_io_kb_per_s",
        "proc.top_wait",
        "proc.max_wait_pct",
        "cpu.count",
    ),
    "prstat": (
        "proc.top_cpu",
        "proc.max_cpu_pct",
        "proc.top_lck",
        "proc.max_lck_pct",
        "proc.top_lat",
        "proc.max_lat_pct",
        "runq.ldavg_1_max",
    ),
}
