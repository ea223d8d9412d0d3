"""The parser registry. Order is the tie-break when two formats claim the same lines: the more
specific shapes come first. sar comes before mpstat: `sar -u` prints a `CPU %user ...` header
mpstat also scores, and sar's header check leaves mpstat's own column order to mpstat.

Each format is named here as data (`REGISTRY`): where its class lives and what a line must hold
for its `start_score` to be more than 0 (its prefilter). The detector tests every line against
all prefilters at once (ingest/detect.py:Prefilter) and asks only the formats a line passes; a
parser module is imported the first time a line passes its prefilter, so a one-line truss file
never compiles the regexes of the other 28 formats. `PARSERS` (every class, imported on first
use) stays for the callers that want them all: tests, kbcheck, docs.

A prefilter must be a *necessary* condition: `start_score(line) > 0` only if the line holds one
of `words` (plain substrings, case as written) or of `nocase` (any case), or matches a `shape`.
tests/test_prefilter.py proves it on every line of the corpus, the fixtures, the seeds and the
benchmark generators; a parser whose `start_score` learns a new shape must widen its entry here.
Each entry says where its words come from: the cheap first test of the parser's `start_score`
where it has one, else the literal text each of its start regexes requires.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    from ingest.base import Parser


class Shape(NamedTuple):
    """A regex a line passing a prefilter may match instead of holding one of its words. With
    `needs`, it is searched only in lines holding one of those words, because a line without
    one cannot score (the regex requires one, or the parser's own first test does: iostat's
    hint words): an unanchored search costs ~1 us a line, the words are found for all formats
    in one pass. Without, it should start with `^`, so a search is one attempt at the start."""

    regex: str
    needs: tuple[str, ...] = ()


# `name(` (every syscall line has one), written so the search scans for the literal "(" in C and
# looks behind it, instead of trying \w at every position (0.1 instead of 1 us a line)
_CALL = r"\((?<=\w\()"


class Registered(NamedTuple):
    """One format of the registry: its class as `module:Class` under ingest.parsers, and its
    prefilter: a line passes when it holds one of `words` (as written) or of `nocase` (lower
    case, for start regexes that ignore case), or matches one of `shapes`."""

    format: str
    target: str
    words: tuple[str, ...]
    shapes: tuple[Shape, ...] = ()
    nocase: tuple[str, ...] = ()


REGISTRY: tuple[Registered, ...] = (
    Registered(
        "tkprof",
        "tkprof:TkprofParser",
        # RE_HEADER, RE_CALL_HEADER, RE_OVERALL, RE_WAIT_INTRO, RE_WAIT_HEAD1, RE_ROWSRC_SHAPE,
        # RE_SQL_ID, RE_MISSES, RE_CALL_ROW (Parse|Execute|Fetch|total), RE_USER
        (
            "TKPROF:",
            "call",
            "OVERALL TOTALS",
            "Elapsed times include",
            "Event waited on",
            "(cr=",
            "SQL ID:",
            "Misses in library cache",
            "Parse",
            "Execute",
            "Fetch",
            "total",
            "Parsing user id:",
        ),
    ),
    # _TRACE_FILE, then its own cheap test: "#" or "XCTEND"
    Registered(
        "trace10046", "trace10046:Trace10046Parser", ("Trace file", "Dump file", "#", "XCTEND")
    ),
    # _START: HANG ANALYSIS, Chain N, Chains most likely..., (Non-/Open/Other) ... chains
    Registered(
        "hanganalyze", "hanganalyze:HanganalyzeParser", ("HANG ANALYSIS", "Chain", "chains")
    ),
    Registered("lgwr_trace", "lgwr:LgwrTraceParser", ("arning", "kcrfw", "sync")),
    # _CALL and _CALLISH need `name(`; _CMD, _SUM_HEAD, _SIG_HEAD
    Registered(
        "truss", "truss:TrussParser", ("truss", "syscall", "signals"), (Shape(_CALL, ("(",)),)
    ),
    # _CALL needs `) =`; _UNFINISHED/_RESUMED "...", _ATTACH/_CMD, _SIGNAL/_EXIT, _SUM_HEAD
    Registered(
        "strace",
        "strace:StraceParser",
        ("...", "strace", "+++", "---", "%"),
        (Shape(r"\) +=", (") ",)),),
    ),
    Registered(
        "vmstat",
        "vmstat:VmstatParser",
        ("procs", "kthr", " b ", "vmstat", "OSW", "lcpu=", "anonymous", "swap"),  # _HINTS
    ),
    # _HINTS, except that a line passing on its ":" alone must be a device header (any case),
    # an `extended device statistics` title or a `-t` stamp (_STAMP: a clock or epoch seconds)
    Registered(
        "iostat",
        "iostat:IostatParser",
        ("evice", "avg-cpu", "iostat", "CPU)"),
        (Shape(r":(?<=\d:)\d\d:\d\d", (":",)), Shape(r"\d{9}", (":",))),
        ("device",),
    ),
    Registered("pidstat", "pidstat:PidstatParser", ("Command", "pidstat", "CPU)")),
    Registered("prstat", "prstat:PrstatParser", ("PROCESS/", "prstat")),
    Registered(
        "sar",
        "sar:SarParser",
        ("%", "/s", "-sz", "kb", "DEV", "IFACE", "device", "sar", "SunOS", "CPU)", "freemem"),
    ),
    # a CPU or NODE column, the sysstat banner; after an optional paste prefix (_PASTE_PREFIX),
    # a first token that is CPU or SET once all but capitals are gone (_solaris_header), or a
    # row of integers only (a Solaris row without its header)
    Registered(
        "mpstat",
        "mpstat:MpstatParser",
        ("CPU", "NODE", "Linux"),
        (
            Shape(
                r"^\s*+(?:#++\s?|[A-Za-z][\w.-]{0,63}:\s+)?\s*+(?:[\d\s]++$|[^A-Z\s]*+"
                r"(?:C[^A-Z\s]*+P[^A-Z\s]*+U|S[^A-Z\s]*+E[^A-Z\s]*+T)[^A-Z\s]*+(?:\s|$))"
            ),
        ),
    ),
    # RE_TOP_TITLE (Events), RE_REPORT_START's titles; RE_START_HEADERS, RE_TITLE, RE_INTERVAL
    # ignore case; a collapsed event row starts with a letter, holds no `=` or `"` and ends in a
    # number (_collapsed_event_row), a spaced one (two blanks inside) matches RE_ROW_HINT
    Registered(
        "waits",
        "waits:WaitsParser",
        (
            "Events",
            "WORKLOAD REPOSITORY",
            "STATSPACK",
            "DB",
            "Snap",
            "Elapsed",
            "Load Profile",
            "Time Model",
            "SQL ordered by",
            "Platform",
        ),
        (Shape(r'^\s*[^\W\d_][^="]*\d\s*$'), Shape(r"[^\s\d]\s{2,}[-.\d]", ("  ",))),
        ("wait", "enqueue", "instance", "system", "session", "interval"),
    ),
    # `SQL> select`, or a heading: every token starts with a capital or % (RE_HEADING)
    Registered(
        "vdollar",
        "vdollar:VdollarParser",
        (),
        (Shape(r"^(?:SQL|\s*[A-Z%]\S*(?:\s+[A-Z%]\S*)+\s*$)"),),
    ),
    Registered("xplan", "xplan:XplanParser", ("SQL_ID", "Plan hash value")),
    Registered("oraparam", "oraparam:OraParamParser", ("NAME", "show", "SHOW", "*.")),
    Registered("lockstat", "lockstat:LockstatParser", ("events", "Count", "lockstat")),
    Registered(
        "perf",
        "perf:PerfParser",
        (  # _PERF_HINT
            "%",
            ";",
            "Samples",
            "Events:",
            "PerfTop",
            "Event count",
            "Overhead",
            "Children",
            "Period",
            "Performance counter",
            "elapsed",
            "<not ",
            "counts",
            "perf",
            "captured on",
            "nrcpus",
            "cmdline",
            "total memory",
            "cpudesc",
        ),
    ),
    Registered(
        "top",
        "top:TopParser",
        ("top -", "last pid", "Tasks", "Threads", "Processes", "Cpu", "CPU states", "Mem", "PID"),
    ),
    # /proc/loadavg's line (_LOADAVG) ends in digits, so most lines holding a `/` (SQL comments,
    # paths) are turned away by the shape's gate before uptime is asked
    Registered(
        "uptime",
        "uptime:UptimeParser",
        ("load av",),
        (Shape(r"\d\.\d+\s+\d+\.\d+\s+\d+\.\d+\s+\d+/\d+\s+\d+\s*$", ("/",)),),
    ),
    # _LINE (`Name:  123`, a letter first), _COMMAND
    Registered(
        "meminfo", "meminfo:MeminfoParser", ("meminfo",), (Shape(r":(?<=[\w()]:)\s+\d", (":",)),)
    ),
    Registered("pressure", "pressure:PressureParser", ("avg10=",)),
    # its cheap test; the `=` branch also needs _NET_HINT
    Registered(
        "netstat",
        "netstat:NetstatParser",
        ("Ip", "Tcp", "Udp", "Icmp", "Sctp", "stat", "#kernel", "zzz"),
        (
            Shape(
                r"(?:tcp|udp|ip|icmp|sctp|igmp)[A-Z]", ("tcp", "udp", "ip", "icmp", "sctp", "igmp")
            ),
        ),
    ),
    Registered("procvmstat", "procvmstat:ProcVmstatParser", ("_", "pg", "vmstat")),
    Registered(
        "cgroup",
        "cgroup:CgroupCpuParser",
        ("cpu.max", "cpu.cfs_", "cpu.stat", "CPUQuota", "nr_", "_usec", "throttled"),
    ),
    Registered("nfsiostat", "nfsiostat:NfsiostatParser", ("mounted on",)),
    Registered("free", "free:FreeParser", ("total", "free")),
    # _HIST_HEADER/_BCC_HEADER, _TRACING, _COMMAND/_DTRACE_MSG, _EXECUTED, _FRAME_COUNT and
    # TICK_FRAME (`), _BPF_ATTACH, _BPF_VALUE/_BPF_LABEL (@), _CPU_HEADER; an indented
    # `keys count` row (_row), _FIRE, rows flattened onto one line (_flat_rows: four or more
    # tokens that are a whole number: four runs of digits at least)
    Registered(
        "dtrace",
        "dtrace:DtraceParser",
        ("istribution", "Ctrl-C", "trace", "executed", "`", "Attaching", "@", "FUNCTION:NAME"),
        (
            Shape(r"^(?:\s.*\d\s*$|\s*+\d++\s++\d++\s++[\w$.`-]*+:)"),
            Shape(r"\d(?:\D++\d++){3}"),
        ),
    ),
    # `name()` (short stack, call stack rows, 12.2 frames, folded), perf's `(/lib...)` or
    # `([kernel...])`, gdb/eu-stack `#N`, frames with ` or +0x, [<addr>], the headings; a
    # heading ending in `:` (perf script's sample line, Call Trace:), pstack's hex address
    # first (_PSTACK)
    Registered(
        "stack",
        "stack:StackParser",
        (
            "()",
            "(/",
            "([",
            "#",
            "`",
            "+0x",
            "[<",
            "Call Stack",
            "Short stack",
            "Call Trace",
            "calling",
            "Thread",
            "TID",
            "PID",
            "core",
        ),
        (Shape(r":\s*$", (":",)), Shape(r"^\s*(?:0x)?[0-9a-fA-F]{6}")),
    ),
)

_LOADED: dict[str, type[Parser]] = {}


def load(entry: Registered) -> type[Parser]:
    """The parser class of `entry`, its module imported on first use."""
    cls = _LOADED.get(entry.format)
    if cls is None:
        module, _, name = entry.target.partition(":")
        cls = getattr(importlib.import_module(f"{__name__}.{module}"), name)
        _LOADED[entry.format] = cls
    return cls


def loaded(entry: Registered) -> type[Parser] | None:
    """The parser class of `entry` if its module was imported, else None (imports nothing)."""
    return _LOADED.get(entry.format)


def parser_for(fmt: str) -> type[Parser]:
    """The parser class of format `fmt` (KeyError if none parses it)."""
    for entry in REGISTRY:
        if entry.format == fmt:
            return load(entry)
    raise KeyError(fmt)


def all_parsers() -> tuple[type[Parser], ...]:
    """Every parser class in registry order (imports every parser module)."""
    return tuple(load(entry) for entry in REGISTRY)


def __getattr__(name: str) -> tuple[type[Parser], ...]:
    # `from ingest.parsers import PARSERS` keeps working, and only then imports every module
    if name == "PARSERS":
        return all_parsers()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "PARSERS",
    "REGISTRY",
    "Registered",
    "Shape",
    "all_parsers",
    "load",
    "loaded",
    "parser_for",
]
