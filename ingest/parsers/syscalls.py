"""Aggregation shared by the truss and strace parsers.

Both parsers reduce each line to "pid P made call N (args), which took D ms / returned R / failed
with E" and hand it to one `SyscallAggregator`, so the two formats fill the same `syscall.*`,
`errno.*`, `repeat.*`, `trace.*`, `fork.*` and `exec.*` facts (ingest/facts.py) and one signature
covers Solaris and Linux.

Memory stays bounded whatever the input size: per syscall a few counters and a reservoir of at
most RESERVOIR durations (exact medians for pasted captures, a uniform sample for huge ones); per
process a few counters; top-N heaps for the slowest calls and biggest gaps; caps on distinct
syscalls, processes and repeat groups.

Time attribution (`timing` in details):
  "E" / "T"  the in-call time truss -E / strace -T printed on the call's own line;
  "D"        the truss -D delta printed on the call's line (includes user time before the call);
  "d"        only timestamps: a call's time is the gap to the next line of the same pid, the way
             people read a `truss -d` capture; a pid's last call stays untimed and the clock is
             reset at `[...]` elisions, so elided lines are never charged to anyone;
  "none"     no times at all: shares are shares of calls.
"""

from __future__ import annotations

import bisect
import copy
import heapq
import math
import random
import re
from abc import abstractmethod
from collections.abc import Callable
from typing import Literal

from pydantic import BaseModel, Field

from ingest.base import MAX_LINE, Parser
from ingest.facts import number
from ingest.model import Block, new_dict, new_list

try:  # built by `pip install` (setup.py); without it the pure-Python aggregator does everything
    from ingest import _syscore
except ImportError:  # pragma: no cover - a checkout used without installing
    _syscore = None

Timing = Literal["E", "D", "d", "T", "none"]

MAX_SYSCALLS = 1000  # distinct names; further names are counted under OTHER
MAX_PIDS = 4096  # processes with their own counters; further ones share one bucket
MAX_REPEAT_KEYS = 8192  # distinct (syscall, fd, size) groups tracked
RESERVOIR = 512  # durations kept per syscall for the median
SHAPE_CACHE = 64  # argument lists per syscall whose repeat counter is remembered...
SHAPE_ARGS = 160  # ...if at most this long (so at most ~10 MB over MAX_SYSCALLS names)
TOP_N = 10
MAX_ROWS = 100  # syscall and process rows in details
MAX_IDENTIFIERS = 50
MAX_NAMES = 200  # distinct errno / signal / fault names
MAX_CHILDREN = 50  # fork children and exits listed in details
OTHER = "(other)"

FORK_CALLS = frozenset(
    {"fork", "fork1", "forkx", "forkall", "forkallx", "vfork", "clone", "clone3", "rfork"}
)
EXEC_CALLS = frozenset({"execve", "exece", "exec", "execveat"})

# Where the size argument sits, counted from the end of the argument list (default: last).
_SIZE_FROM_END = {
    "pread": 2,
    "pread64": 2,
    "pwrite": 2,
    "pwrite64": 2,
    "recv": 2,
    "send": 2,
    "recvfrom": 4,
    "sendto": 4,
}

# Latency histogram bucket upper bounds (ms), 1-2-5 steps; the last bucket also holds slower calls.
HIST_BOUNDS: tuple[float, ...] = tuple(
    round(m * 10.0**e, 6) for e in range(-3, 6) for m in (1, 2, 5)
)
_NBUCKETS = len(HIST_BOUNDS)
_bucket = bisect.bisect_left

# Calls whose first argument is a file descriptor (Solaris and Linux names).
_FD_CALL_NAMES = """
read write pread pread64 pwrite pwrite64 readv writev preadv pwritev preadv2 pwritev2 close
fcntl fcntl64 ioctl lseek llseek _llseek fstat fstat64 fxstat fstatfs fstatvfs fstatvfs64
getdents getdents64 accept accept4 getsockname getpeername setsockopt getsockopt send sendto
sendmsg sendmmsg recv recvfrom recvmsg recvmmsg shutdown bind connect listen fsync fdsync
fdatasync ftruncate ftruncate64 fchmod fchown dup dup2 dup3 epoll_wait epoll_pwait epoll_ctl
sendfile sendfile64 fadvise64 posix_fadvise fallocate flock readahead sync_file_range
io_uring_enter port_get port_getn port_associate port_send
"""
FD_CALLS = frozenset(_FD_CALL_NAMES.split())

_SIZE_MAX_DIGITS = 15

# -- strace or truss? ------------------------------------------------------------------------------
# A bare call line (`read(9, "...", 8192) = 8192`) is printed alike by strace and truss; these are
# the shapes only one of them prints. strace: decoded structures `{tv_sec=...}`, `= -1 ENOENT (No
# such file or directory)`, `<0.000123>`, lower-case hex, `"..."...` (three dots after a cut
# string), `/* 90 vars */`, AT_FDCWD, and calls only Linux has. truss: `Err#2 ENOENT`, upper-case
# or zero-padded hex (`0xFFBFF8A0`, `0x00000000`), `"..".., ` (two dots), `(sleeping...)`, and
# calls only Solaris (lwp_park, pollsys) or AIX (kread, thread_tsleep) has.
_STRACE_ONLY = re.compile(
    r"\)\s+=\s+-1\s+E[A-Z0-9]+\s+\(|<\d+\.\d{6}>\s*$|\{[a-z_]{2,}=|\[\{[a-z_]+="
    r"|(?<![\w])0x[0-9a-f]*[a-f][0-9a-f]*\b|\"\.{3}[,)]|/\* \d+ vars? \*/|\bAT_FDCWD\b"
    r"|\)\s+=\s+\?\s*$|\b(?:sin6?_port|sun_path|sa_family)="
).search
_TRUSS_ONLY = re.compile(
    r"\bErr#\d|(?<![\w])0x[0-9A-F]*[A-F][0-9A-F]*\b|(?<![\w])0x[0-9A-F]{8}(?:[0-9A-F]{8})?\b"
    r"|\"\.\.(?!\.)[,)]|\(sleeping\.\.\.\)"
).search
_CALL_NAME = re.compile(r"^\s*+(?:\S*:\s*+)?(?:\S*:\s*+)?([A-Za-z_]\w*+)\(").match
_LINUX_ONLY_CALLS_NAMES = """openat openat2 newfstatat fstatat64 pread64 pwrite64 epoll_wait epoll_pwait epoll_pwait2
    epoll_ctl epoll_create epoll_create1 futex clock_nanosleep rt_sigaction rt_sigprocmask
    rt_sigreturn rt_sigtimedwait arch_prctl set_tid_address set_robust_list prlimit64 io_submit
    io_getevents io_pgetevents io_setup io_uring_enter io_uring_setup getrandom recvmmsg
    sendmmsg accept4 eventfd2 timerfd_create timerfd_settime inotify_init1 inotify_add_watch
    exit_group sched_yield gettid tgkill tkill clone clone3 wait4 ppoll pselect6 _llseek mremap
    mmap2 fadvise64 sync_file_range getdents64 semtimedop_time64 rseq membarrier
    capget capset prctl personality sysinfo sched_getaffinity sched_setaffinity"""
LINUX_ONLY_CALLS = frozenset(_LINUX_ONLY_CALLS_NAMES.split())
_SOLARIS_ONLY_CALLS_NAMES = """lwp_park lwp_unpark lwp_create lwp_exit lwp_kill lwp_sigmask lwp_self lwp_wait
    lwp_mutex_lock lwp_mutex_unlock lwp_mutex_timedlock lwp_mutex_wakeup lwp_cond_wait
    lwp_cond_signal lwp_cond_broadcast lwp_continue lwp_suspend lwp_name pollsys kaio
    getmsg putmsg door_call door_return door_info portfs so_socket so_socketpair semsys
    shmsys msgsys schedctl resolvepath memcntl sysconfig priocntlsys privsys pset_bind
    pset pset_info llseek yield fxstat xstat lxstat cladm lgrpsys getloadavg mmapobj
    sigaction sigprocmask uucopy forksys fork1 forkx"""
SOLARIS_ONLY_CALLS = frozenset(_SOLARIS_ONLY_CALLS_NAMES.split())
_AIX_ONLY_CALLS_NAMES = """kread kwrite kopen kclose kioctl kfcntl klseek kpread kpwrite kreadv kwritev _nsleep
    nsleep thread_tsleep thread_twakeup thread_waitlock_ thread_waitlock thread_setmystate
    thread_setmymask_fast thread_unlock_ _pollset_poll pollset_poll pollset_ctl
    _getpid _getppid __libc_sbrk kfork appulimit getprocs64 _sigaction ngetsockname
    ngetpeername naccept nrecvfrom nsendmsg kpoll _select _setitimer"""
AIX_ONLY_CALLS = frozenset(_AIX_ONLY_CALLS_NAMES.split())


def dialect(line: str) -> str | None:
    """Which tool printed this syscall line, from its shape alone: "strace", "truss" (Solaris),
    "aix" (AIX truss), or None when both print it alike (say so rather than guess)."""
    m = _CALL_NAME(line)
    if m is not None:
        name = m.group(1)
        if name in AIX_ONLY_CALLS:
            return "aix"
        if name in LINUX_ONLY_CALLS:
            return "strace"
        if name in SOLARIS_ONLY_CALLS:
            return "truss"
    if _TRUSS_ONLY(line):
        return "truss"
    if _STRACE_ONLY(line):
        return "strace"
    return None


def _int_arg(s: str) -> int | None:
    s = s.strip()
    if "<" in s:  # strace -y: 3</u01/oradata/users01.dbf>
        s = s[: s.find("<")]
    # isdigit() alone would pass "²", which int() rejects
    if s.isascii() and s.isdigit() and len(s) <= _SIZE_MAX_DIGITS:
        return int(s)
    return None


def pid_number(text: str | None) -> int | None:
    """A pid printed as a fork's return value or a child's parent; a superscript digit or a
    5,000-digit number (int() raises on both) is no pid."""
    if text and len(text) <= 18 and text.isascii() and text.isdigit():
        return int(text)
    return None


def arg_shape(name: str, args: str) -> tuple:
    """The key that makes two calls "identical" for repeat.*.

    For calls on a file descriptor: (name, fd, size), fd being the first argument and size the
    argument where read/write style calls put their byte count (last, or as _SIZE_FROM_END says),
    kept as text here (cheap on the hot path) and read as integers only for the result. Other
    calls (shmdt(0x38..), cladm(...), semtimedop(...)) are keyed by their argument text (first 80
    characters), so different addresses stay apart.
    """
    if name not in FD_CALLS:
        return (name, args[:80])
    back = _SIZE_FROM_END.get(name, 1)
    parts = args.rsplit(",", back)
    size = parts[1].strip()[:20] if len(parts) > back else ""
    fd = args.partition(",")[0].strip()
    if "<" in fd:  # strace -y: 3</u01/oradata/users01.dbf>
        fd = fd[: fd.find("<")]
    return (name, fd[:20], size)


class _Stat:
    __slots__ = (
        "name",
        "count",
        "timed",
        "total",
        "max",
        "delta",
        "has_delta",
        "errors",
        "samples",
        "special",
        "shapes",
    )

    def __init__(self, name: str) -> None:
        self.name = name
        self.count = 0
        self.timed = 0
        self.total = 0.0
        self.max = 0.0
        self.delta = 0.0
        self.has_delta = False
        self.errors = 0
        self.samples: list[float] = []
        self.special = name in FORK_CALLS or name in EXEC_CALLS
        self.shapes: dict[str, list[int]] = {}  # args text -> its repeat key's counter (recent)


class _Proc:
    __slots__ = ("pid", "calls", "errors", "time", "sys", "last_ts", "last_name", "pending")

    def __init__(self, pid: int | None) -> None:
        self.pid = pid
        self.calls = 0
        self.errors = 0
        self.time = 0.0
        self.sys: dict[str, int] = {}
        self.last_ts: float | None = None
        self.last_name: str | None = None
        # a call waiting for the next line of its pid ("d" timing): [stat, ts, line, notes, ...]
        self.pending: list | None = None


class SummaryRow(BaseModel):
    """One row of a `truss -c` / `strace -c` table."""

    syscall: str
    calls: int
    seconds: float
    errors: int = 0
    pct: float | None = None


class SyscallRow(BaseModel):
    syscall: str
    calls: int
    errors: int
    total_ms: float | None = None
    avg_ms: float | None = None
    p50_ms: float | None = None
    max_ms: float | None = None
    delta_ms: float | None = None
    share_pct: float


class ProcessRow(BaseModel):
    pid: int | None = Field(description="None: lines without a pid prefix (one process)")
    calls: int
    errors: int
    time_ms: float | None = None
    top: list[tuple[str, int]] = Field(description="its most frequent syscalls, with counts")


class SlowCall(BaseModel):
    syscall: str
    pid: int | None
    ms: float
    line: int = Field(description="line in the input (block-relative until Parser.finish)")
    ret: str | None = None
    err: str | None = None
    notes: list[str] = Field(default_factory=new_list, description="-v continuation lines")


class Gap(BaseModel):
    pid: int | None
    ms: float
    line: int
    after: str | None = Field(None, description="what the pid did on its previous line")
    before: str | None = Field(None, description="the syscall or event ending the gap")


class SyscallDetails(BaseModel):
    syscalls: list[SyscallRow]
    processes: list[ProcessRow]
    slowest: list[SlowCall]
    gaps: list[Gap]
    timing: Timing
    summary: bool
    latency_histogram: list[tuple[float, int]]
    errnos: dict[str, int]
    signals: dict[str, int]
    faults: dict[str, int] = Field(default_factory=new_dict)
    children: list[dict] = Field(default_factory=new_list)
    exits: list[dict] = Field(default_factory=new_list)
    continuation_lines: int = 0
    elisions: int = 0
    summary_extra: dict[str, float] = Field(default_factory=new_dict)
    processes_capped: bool = False


def _r(x: float) -> float:
    return round(x, 4)


def bump(table: dict[str, int], key: str, n: int = 1) -> None:
    """Count into a name table (signals, errnos...) that garbage input cannot grow forever."""
    if key in table or len(table) < MAX_NAMES:
        table[key] = table.get(key, 0) + n


class SyscallAggregator:
    """Streaming statistics over syscall events; everything it keeps is capped."""

    def __init__(self) -> None:
        self._init_tables()
        self.gap_timing = False  # "d" timing: charge each pid's gap to its previous call
        self.stats: dict[str, _Stat] = {}
        self.procs: dict[int | None, _Proc] = {}
        self._overflow = _Proc(None)
        self.procs_capped = False
        self.repeats: dict[tuple, list[int]] = {}  # repeat key -> [count]
        self.hist = [0] * len(HIST_BOUNDS)
        self.slowest: list[tuple[float, int, dict]] = []
        self.gaps: list[tuple[float, int, dict]] = []
        self.seq = 0
        self.ts_min = math.inf
        self.ts_max = -math.inf
        self._slow_floor = 0.0  # a call must beat this to enter `slowest` (0 ms calls never do)
        self._gap_floor = -1.0
        self.fork = [0, 0.0, 0.0]  # timed count, total, max
        self.exec = [0, 0.0, 0.0]
        self.continuations = 0
        self.elisions = 0
        self._last_notes: list[str] | None = None
        self.routed: list[tuple[int, str]] = []  # filled by the C scanners only

    def _init_tables(self) -> None:
        """The state that stays in Python with either aggregator (NativeAggregator shares the
        dicts and lists with its C core)."""
        self.errnos: dict[str, int] = {}
        self.signals: dict[str, int] = {}
        self.faults: dict[str, int] = {}  # truss `Incurred fault #6, FLTBOUNDS`
        self.summary: dict[str, SummaryRow] = {}
        self.summary_total: SummaryRow | None = None
        self.summary_extra: dict[str, float] = {}
        self.children: list[dict] = []
        self.exits: list[dict] = []
        self._random = random.Random(0).random

    def state(self) -> SyscallAggregator:
        """This aggregator as one whose counters can be read (for tests and inspection)."""
        return self

    # -- intake -----------------------------------------------------------------------------

    def proc(self, pid: int | None) -> _Proc:
        pc = self.procs.get(pid)
        if pc is None:
            if len(self.procs) < MAX_PIDS:
                pc = self.procs[pid] = _Proc(pid)
            else:
                self.procs_capped = True
                pc = self._overflow
        return pc

    def call(
        self,
        pid: int | None,
        name: str,
        dur: float | None,
        delta: float | None,
        ts: float | None,
        gap: float | None,
        err: str | None,
        args: str,
        line: int,
        ret: str | None = None,
    ) -> None:
        """One syscall. dur/delta/gap in ms, ts in seconds (None when not printed)."""
        st = self.stats.get(name)
        if st is None:
            st = self._new_stat(name)
            name = st.name
        st.count += 1
        pc = self.procs.get(pid)
        if pc is None:
            pc = self.proc(pid)
        pc.calls += 1
        sysc = pc.sys
        sysc[name] = sysc.get(name, 0) + 1
        if err is not None:
            st.errors += 1
            pc.errors += 1
            bump(self.errnos, err)
        if delta is not None:
            st.delta += delta
            st.has_delta = True
        # captures repeat argument lists verbatim (read(15, "..."..., 8208)): remember the
        # counter of their repeat key
        cell = st.shapes.get(args)
        if cell is None:
            cell = self._repeat_cell(st, name, args)
        cell[0] += 1
        if st.special and name in FORK_CALLS:
            child = pid_number(ret)
            if child is not None:
                self._add_child(child, pid, line)
        if ts is not None or gap is not None:
            self._clock(pc, ts, gap, line, name)
        pc.last_name = name
        if dur is None:
            if self.gap_timing and ts is not None and pc is not self._overflow:
                notes: list[str] = []
                pc.pending = [st, ts, line, notes, ret, err]
                self._last_notes = notes
            else:
                self._last_notes = None
            return
        entry = self._timed(st, pc, dur, line, ret, err, None)
        self._last_notes = entry["notes"] if entry is not None else None

    def _repeat_cell(self, st: _Stat, name: str, args: str) -> list[int]:
        k = (name, args[:80]) if name not in FD_CALLS else arg_shape(name, args)
        reps = self.repeats
        cell = reps.get(k)
        if cell is None:
            if len(reps) < MAX_REPEAT_KEYS:
                cell = reps[k] = [0]
            else:
                cell = [0]  # not tracked: counts nowhere
        if len(args) <= SHAPE_ARGS:
            shapes = st.shapes
            if len(shapes) >= SHAPE_CACHE:
                shapes.clear()
            shapes[args] = cell
        return cell

    def _new_stat(self, name: str) -> _Stat:
        if len(self.stats) >= MAX_SYSCALLS - 1:  # one slot stays free for OTHER
            name = OTHER
        st = self.stats.get(name)
        if st is None:
            st = self.stats[name] = _Stat(name)
        return st

    def event(
        self, pid: int | None, ts: float | None, gap: float | None, line: int, what: str
    ) -> None:
        """A timestamped line that is not a call (signal, exit, fork child): it ends a gap."""
        pc = self.procs.get(pid) or self.proc(pid)
        if ts is not None or gap is not None:
            self._clock(pc, ts, gap, line, what)
        pc.last_name = what

    def signal(self, pid: int | None, name: str, ts: float | None, gap: float | None, line: int):
        bump(self.signals, name)
        self.event(pid, ts, gap, line, name)

    def fault(self, name: str) -> None:
        bump(self.faults, name)

    def child(self, pid: int | None, parent: str | None, line: int, ts: float | None) -> None:
        """A fork child's first line: the child's clock starts here; it is not a second call."""
        pc = self.procs.get(pid) or self.proc(pid)
        if ts is not None and pc is not self._overflow:
            pc.last_ts = ts
            self._span(ts)
        if pid is not None:
            self._add_child(pid, pid_number(parent), line)

    def _add_child(self, pid: int, parent: int | None, line: int) -> None:
        if len(self.children) < MAX_CHILDREN and all(c["pid"] != pid for c in self.children):
            self.children.append({"pid": pid, "parent": parent, "line": line})

    def exited(self, pid: int | None, status: str, line: int, ts: float | None) -> None:
        if len(self.exits) < MAX_CHILDREN:
            self.exits.append({"pid": pid, "status": status, "line": line})
        self.event(pid, ts, None, line, "exit")

    def continuation(self, text: str) -> None:
        """A -v line (fd=9 ev=POLLIN..., AF_INET name = ...): belongs to the previous call."""
        self.continuations += 1
        notes = self._last_notes
        if notes is not None and len(notes) < 3:
            notes.append(text.strip()[:160])

    def elide(self) -> None:
        """`[...]`: lines were cut here, so no gap may span it."""
        self.elisions += 1
        for pc in self.procs.values():
            pc.pending = None
            pc.last_ts = None
            pc.last_name = None
        self._last_notes = None

    def add_summary(self, row: SummaryRow, total: bool = False) -> None:
        if total:
            self.summary_total = row
        elif row.syscall in self.summary or len(self.summary) < MAX_SYSCALLS:
            self.summary[row.syscall] = row

    # -- internals --------------------------------------------------------------------------

    def _span(self, ts: float) -> None:
        if ts < self.ts_min:
            self.ts_min = ts
        if ts > self.ts_max:
            self.ts_max = ts

    def _clock(self, pc: _Proc, ts: float | None, gap: float | None, line: int, what: str):
        if pc is self._overflow:
            return
        if ts is not None:
            self._span(ts)
            last = pc.last_ts
            pc.last_ts = ts
            if last is not None:
                if gap is None and ts >= last:
                    gap = (ts - last) * 1000.0
                if pc.pending is not None:
                    self._close_pending(pc, ts)
        if gap is not None and gap > self._gap_floor and pc.last_name is not None:
            self._push_gap(pc, gap, line, what)

    def _close_pending(self, pc: _Proc, ts: float) -> None:
        """ "d" timing: the pid's next line has come, so its previous call took until now."""
        p = pc.pending
        pc.pending = None
        if ts >= p[1]:
            self._timed(p[0], pc, (ts - p[1]) * 1000.0, p[2], p[4], p[5], p[3])

    def _push_gap(self, pc: _Proc, gap: float, line: int, what: str) -> None:
        heap = self.gaps
        self.seq += 1
        entry = {"pid": pc.pid, "ms": _r(gap), "line": line, "after": pc.last_name}
        entry["before"] = what
        if len(heap) < TOP_N:
            heapq.heappush(heap, (gap, self.seq, entry))
        else:
            heapq.heapreplace(heap, (gap, self.seq, entry))
            self._gap_floor = heap[0][0]

    def _fork_exec(self, name: str, dur: float) -> None:
        f = self.fork if name in FORK_CALLS else self.exec
        f[0] += 1
        f[1] += dur
        if dur > f[2]:
            f[2] = dur

    def _push_slow(self, st: _Stat, pc: _Proc, dur, line, ret, err, notes) -> dict:
        heap = self.slowest
        self.seq += 1
        entry = {
            "syscall": st.name,
            "pid": pc.pid,
            "ms": _r(dur),
            "line": line,
            "ret": ret,
            "err": err,
            "notes": notes if notes is not None else [],
        }
        if len(heap) < TOP_N:
            heapq.heappush(heap, (dur, self.seq, entry))
        else:
            heapq.heapreplace(heap, (dur, self.seq, entry))
            self._slow_floor = heap[0][0]
        return entry

    def _timed(self, st: _Stat, pc: _Proc, dur, line, ret, err, notes) -> dict | None:
        """Account one timed call: as it comes (call) or, with "d" timing, when its pid's next
        line ends it. Returns the slow-call entry it made, if the call was one of the slowest."""
        st.timed += 1
        st.total += dur
        if dur > st.max:
            st.max = dur
        samples = st.samples
        if len(samples) < RESERVOIR:
            samples.append(dur)
        else:  # reservoir sampling: every call so far is equally likely to be kept
            j = int(self._random() * st.timed)
            if j < RESERVOIR:
                samples[j] = dur
        i = _bucket(HIST_BOUNDS, dur)
        self.hist[i if i < _NBUCKETS else -1] += 1
        pc.time += dur
        if st.special:
            self._fork_exec(st.name, dur)
        if dur > self._slow_floor:
            return self._push_slow(st, pc, dur, line, ret, err, notes)
        return None

    # -- results ----------------------------------------------------------------------------

    def snapshot(self) -> SyscallAggregator:
        """A copy to finish off (e.g. count unfinished calls) without touching the live one."""
        return copy.deepcopy(self)

    def result(self, timing: Timing) -> tuple[dict, dict, list[str]]:
        """(facts, details, identifiers) for what was fed so far."""
        stats = self.stats
        rows: dict[str, dict] = {}
        for name, st in stats.items():
            row: dict = {"syscall": name, "calls": st.count, "errors": st.errors}
            if st.timed:
                s = sorted(st.samples)
                mid = len(s) // 2
                p50 = s[mid] if len(s) % 2 else (s[mid - 1] + s[mid]) / 2.0
                row.update(
                    total_ms=_r(st.total),
                    avg_ms=_r(st.total / st.timed),
                    p50_ms=_r(p50),
                    max_ms=_r(st.max),
                )
            if st.has_delta:
                row["delta_ms"] = _r(st.delta)
            rows[name] = row
        calls = sum(st.count for st in stats.values())
        errors = sum(st.errors for st in stats.values())
        for name, sr in self.summary.items():
            row = rows.setdefault(name, {"syscall": name, "calls": 0, "errors": 0})
            row.update(
                calls=sr.calls,
                errors=sr.errors,
                total_ms=_r(sr.seconds * 1000.0),
                avg_ms=_r(sr.seconds * 1000.0 / sr.calls) if sr.calls else 0.0,
            )
            if sr.pct is not None:
                row["share_pct"] = sr.pct
        if self.summary:
            tot = self.summary_total
            if tot is not None:
                calls, errors = tot.calls, tot.errors
            else:
                calls = max(calls, sum(r.calls for r in self.summary.values()))
                errors = max(errors, sum(r.errors for r in self.summary.values()))

        timed_total = sum(r.get("total_ms", 0.0) for r in rows.values())
        all_calls = sum(r["calls"] for r in rows.values())
        for row in rows.values():
            if "share_pct" in row:
                continue
            if timed_total > 0:
                row["share_pct"] = _r(100.0 * row.get("total_ms", 0.0) / timed_total)
            else:
                row["share_pct"] = _r(100.0 * row["calls"] / all_calls) if all_calls else 0.0

        facts: dict = {}

        def table(fact: str, field: str) -> None:
            t = {n: float(r[field]) for n, r in rows.items() if r.get(field) is not None}
            if t:
                facts[fact] = t

        table("syscall.count", "calls")
        table("syscall.total_ms", "total_ms")
        table("syscall.avg_ms", "avg_ms")
        table("syscall.p50_ms", "p50_ms")
        table("syscall.max_ms", "max_ms")
        table("syscall.delta_ms", "delta_ms")
        table("syscall.errors", "errors")
        table("syscall.share_pct", "share_pct")

        per_proc: dict[str, int] = {}
        for pc in [*self.procs.values(), self._overflow]:
            for n, c in pc.sys.items():
                if c > per_proc.get(n, 0):
                    per_proc[n] = c
        # a -c table is not split by process: its count is the best bound there is
        for name, sr in self.summary.items():
            per_proc.setdefault(name, sr.calls)
        if per_proc:
            facts["syscall.max_per_process"] = {n: float(c) for n, c in per_proc.items()}

        errnos = dict(self.errnos)
        if errnos:
            facts["errno.count"] = {e: float(c) for e, c in errnos.items()}

        best: dict[str, tuple[int, int | None, int | None]] = {}
        for key, (c,) in self.repeats.items():
            name = key[0]
            if c > best.get(name, (0, None, None))[0]:
                if len(key) == 3:
                    best[name] = (c, _int_arg(key[1]), _int_arg(key[2]))
                else:
                    best[name] = (c, None, None)
        if best:
            facts["repeat.count"] = {n: float(b[0]) for n, b in best.items()}
            sizes = {n: float(b[2]) for n, b in best.items() if b[2] is not None}
            fds = {n: float(b[1]) for n, b in best.items() if b[1] is not None}
            if sizes:
                facts["repeat.size"] = sizes
            if fds:
                facts["repeat.fd"] = fds

        pids = len(self.procs) + (1 if self._overflow.calls else 0)
        facts["trace.calls"] = float(calls)
        facts["trace.processes"] = float(pids if calls or pids else 0)
        facts["trace.errors"] = float(errors)
        facts["trace.signals"] = float(sum(self.signals.values()))
        if self.ts_max >= self.ts_min:
            facts["trace.span_s"] = _r(self.ts_max - self.ts_min)
        if timed_total > 0 or any("total_ms" in r for r in rows.values()):
            facts["trace.syscall_ms"] = _r(timed_total)
        if self.gaps:
            facts["trace.max_gap_ms"] = _r(max(g[0] for g in self.gaps))
        if self.fork[0]:
            facts["fork.avg_ms"] = _r(self.fork[1] / self.fork[0])
            facts["fork.max_ms"] = _r(self.fork[2])
        if self.exec[0]:
            facts["exec.avg_ms"] = _r(self.exec[1] / self.exec[0])

        ordered = sorted(
            rows.values(), key=lambda r: (-r.get("total_ms", 0.0), -r["calls"], r["syscall"])
        )
        procs = sorted(
            (pc for pc in self.procs.values() if pc.calls),
            key=lambda pc: (-pc.time, -pc.calls, pc.pid if pc.pid is not None else -1),
        )
        any_timed = any(st.timed for st in stats.values())
        lo = next((i for i, c in enumerate(self.hist) if c), None)
        hi = max((i for i, c in enumerate(self.hist) if c), default=None)
        hist = [(HIST_BOUNDS[i], self.hist[i]) for i in range(lo, hi + 1)] if lo is not None else []
        details = SyscallDetails(
            syscalls=[SyscallRow(**r) for r in ordered[:MAX_ROWS]],
            processes=[
                ProcessRow(
                    pid=pc.pid,
                    calls=pc.calls,
                    errors=pc.errors,
                    time_ms=_r(pc.time) if any_timed else None,
                    top=sorted(pc.sys.items(), key=lambda kv: (-kv[1], kv[0]))[:5],
                )
                for pc in procs[:MAX_ROWS]
            ],
            slowest=[SlowCall(**e) for _, _, e in sorted(self.slowest, reverse=True)],
            gaps=[Gap(**e) for _, _, e in sorted(self.gaps, reverse=True)],
            timing=timing,
            summary=bool(self.summary),
            latency_histogram=hist,
            errnos=errnos,
            signals=dict(self.signals),
            faults=dict(self.faults),
            children=list(self.children),
            exits=list(self.exits),
            continuation_lines=self.continuations,
            elisions=self.elisions,
            summary_extra=dict(self.summary_extra),
            processes_capped=self.procs_capped,
        ).model_dump()
        identifiers = [r["syscall"] for r in ordered if r["syscall"] != OTHER][:MAX_IDENTIFIERS]
        return facts, details, identifiers


def shift_lines(details: dict, offset: int) -> None:
    """Turn block-relative line numbers in details into input line numbers."""
    if not offset:
        return
    for key in ("slowest", "gaps", "children", "exits"):
        for item in details.get(key, []):
            if isinstance(item.get("line"), int):
                item["line"] += offset


def decimal(s: str) -> float:
    """A number printed with a decimal point or, under some locales, a decimal comma."""
    return float(s.replace(",", "."))


# -- what a call waited on ---------------------------------------------------------------------
# The calls that name what later calls use: opens and sockets give an fd its target, connect and
# accept its peer, close ends it; the poll family says what it waited on and for how long. The C
# scanners hand these lines to the Python path (TARGET_CALLS in _syscore.configure), so
# `FdTargets.call` sees every one of them whichever path read the rest.
OPEN_CALLS = frozenset({"open", "open64", "openat", "openat2", "creat", "creat64", "kopen"})
SOCKET_CALLS = frozenset({"socket", "so_socket"})
CONNECT_CALLS = frozenset({"connect"})
PEER_CALLS = frozenset(
    {"getpeername", "ngetpeername"}
)  # a socket's peer, when it was opened before
ACCEPT_CALLS = frozenset({"accept", "accept4", "naccept"})
DUP_CALLS = frozenset({"dup", "dup2", "dup3"})
FCNTL_CALLS = frozenset({"fcntl", "fcntl64", "kfcntl"})  # F_DUPFD copies an fd too
POLL_CALLS = frozenset(
    {"poll", "ppoll", "select", "pselect6", "_newselect", "epoll_wait", "epoll_pwait",
     "epoll_pwait2", "pollsys", "_pollset_poll", "port_get", "port_getn"}
)  # fmt: skip
EPOLL_CTL_CALLS = frozenset({"epoll_ctl"})
TARGET_CALLS = (
    OPEN_CALLS | SOCKET_CALLS | CONNECT_CALLS | ACCEPT_CALLS | DUP_CALLS | EPOLL_CTL_CALLS
) | (POLL_CALLS | FCNTL_CALLS | PEER_CALLS)
# Which of those lines the C scanners hand to the Python path, as (name, kind) pairs: 1 always,
# 2 when the call returned 0 (a poll that ran out; other returns change nothing), 3 when its
# arguments hold F_DUPFD, 4 (every FD_CALLS name, last: the scanner reads that long list only
# for a failed call) when it failed. A line it keeps is one FdTargets.call would ignore, so both
# paths build the same tables.
ROUTE_KIND: tuple[tuple[str, int], ...] = (
    tuple(
        (n, 1)
        for n in sorted(
            OPEN_CALLS
            | SOCKET_CALLS
            | CONNECT_CALLS
            | ACCEPT_CALLS
            | DUP_CALLS
            | EPOLL_CTL_CALLS
            | PEER_CALLS
        )
    )
    + tuple((n, 2) for n in sorted(POLL_CALLS))
    + tuple((n, 3) for n in sorted(FCNTL_CALLS))
    + tuple((n, 4) for n in sorted(FD_CALLS))
)

MAX_FDS = 4096  # (pid, fd) entries remembered; the oldest go first
MAX_FD_HISTORY = 4  # targets remembered per (pid, fd), for calls before a reuse
MAX_EPOLL_FDS = 16  # fds remembered per epoll instance
MAX_TIMEOUTS = 20  # expired waits listed in details
MAX_PEERS = 50  # distinct connect() peers counted

# well-known ports: what a person calls the service at the other end
PORT_NAMES = {
    53: "DNS",
    88: "Kerberos",
    111: "rpcbind",
    123: "NTP",
    389: "LDAP",
    636: "LDAPS",
    1521: "Oracle listener",
    1522: "Oracle listener",
    2049: "NFS",
    2484: "Oracle listener (TCPS)",
    3268: "LDAP global catalog",
    5432: "PostgreSQL",
    6200: "Oracle ONS",
}
_QUOTED = re.compile(r'"((?:[^"\\]|\\.){0,4096})"').search
_PORT = re.compile(r"\bsin6?_port=htons\((\d{1,5})\)").search
_ADDR4 = re.compile(r'\bsin_addr=inet_addr\("([\d.]{7,15})"\)').search
_ADDR6 = re.compile(r'inet_pton\(AF_INET6,\s*"([0-9A-Fa-f:.]{2,45})"').search
_SUN_PATH = re.compile(r'\bsun_path=@?"((?:[^"\\]|\\.){0,256})"').search
_FAMILY = re.compile(r"\b(AF_[A-Z0-9]+|PF_[A-Z0-9]+)").search
_POLL_FDS = re.compile(r"\{fd=(-?\d{1,10})").findall
_SELECT_SET = re.compile(r"^\s*\d{1,5},\s*\[([\d ]{0,200})\]").match
_TV = re.compile(r"\{tv_sec=(\d{1,12}),\s*tv_(n|u)sec=(\d{1,9})\}").search
_FD_Y = re.compile(r"^\s*(\d{1,9})<([^>]{1,512})>").match  # strace -y: 3</path>
_INT = re.compile(r"^\s*(-?\d{1,10})\s*$").match
_NESTED = re.compile(r'["{\[(]').search
_IO_FLAGS = ("O_DIRECT", "O_DSYNC", "O_SYNC", "O_NONBLOCK", "O_NDELAY")


def describe_peer(args: str) -> str | None:
    """`{sa_family=AF_INET, sin_port=htons(53), sin_addr=inet_addr("10.0.0.2")}` -> "10.0.0.2:53
    (DNS)"; a unix socket -> its path. None when the address is not decoded (truss prints a
    pointer)."""
    path = _SUN_PATH(args)
    if path is not None:
        return "unix:" + path.group(1)
    port = _PORT(args)
    if port is None:
        return None
    addr = _ADDR4(args) or _ADDR6(args)
    p = int(port.group(1))
    host = addr.group(1) if addr is not None else "?"
    text = f"[{host}]:{p}" if ":" in host else f"{host}:{p}"
    name = PORT_NAMES.get(p)
    return f"{text} ({name})" if name else text


def _split_args(args: str) -> list[str]:
    """Top-level comma-separated arguments (structures, arrays and strings kept whole)."""
    if not _NESTED(args):
        return [a.strip() for a in args.split(",")]
    out: list[str] = []
    depth = 0
    quote = False
    start = 0
    i = 0
    n = min(len(args), 8192)
    while i < n:
        c = args[i]
        if quote:
            if c == "\\":
                i += 1
            elif c == '"':
                quote = False
        elif c == '"':
            quote = True
        elif c in "{[(":
            depth += 1
        elif c in "}])":
            depth -= 1
        elif c == "," and depth == 0:
            out.append(args[start:i].strip())
            start = i + 1
        i += 1
    out.append(args[start:n].strip())
    return out


def _fd_of(arg: str) -> tuple[int | None, str | None]:
    """An fd argument, with the target strace -y printed beside it (`3</u01/x.dbf>`)."""
    m = _FD_Y(arg)
    if m is not None:
        return int(m.group(1)), m.group(2)
    m = _INT(arg)
    return (int(m.group(1)), None) if m is not None else (None, None)


def _timeout_ms(name: str, parts: list[str]) -> float | None:
    """The timeout a poll-family call was given, in ms (None: none, or not decoded)."""
    if name == "poll" and len(parts) >= 3:
        m = _INT(parts[2])
        return float(m.group(1)) if m is not None and int(m.group(1)) >= 0 else None
    if name in ("epoll_wait", "epoll_pwait", "epoll_pwait2") and len(parts) >= 4:
        m = _INT(parts[3])
        if m is not None:
            return float(m.group(1)) if int(m.group(1)) >= 0 else None
    if name in ("ppoll", "select", "pselect6", "_newselect", "epoll_pwait2"):
        for p in parts[2:]:
            tv = _TV(p)
            if tv is not None:
                sec, unit, frac = tv.groups()
                return int(sec) * 1000.0 + int(frac) / (1e6 if unit == "n" else 1e3)
    return None


class FdTargets:
    """What each fd of each pid refers to (a file, a device, a socket and its peer), what the
    poll family waited on and which waits ran out, with every table capped."""

    def __init__(self) -> None:
        self.fds: dict[tuple, list[list]] = {}  # (pid, fd) -> [[from_line, to_line, target]]
        self.epoll: dict[tuple, list[int]] = {}  # (pid, epfd) -> fds added to it
        self.timeouts: list[dict] = []
        self.expired: dict[str, int] = {}  # syscall -> waits that ran out (timeout > 0)
        self.expired_max: dict[str, float] = {}  # syscall -> longest timeout that ran out
        self.zero_polls: dict[str, int] = {}  # syscall -> polls with a 0 timeout
        self.peers: dict[str, int] = {}  # connect() peer -> calls
        self.peer_errors: dict[str, int] = {}  # connect() peer -> failed calls
        self.dns_timeouts = 0
        self.fd_errors: dict[str, int] = {}  # "target call: ERRNO" -> calls
        self.last_fd: int | None = None  # the fd slow_target last read off a line
        self.asleep: dict[tuple, str] = {}  # (pid, lwp) -> the call it went to sleep in

    # -- intake -------------------------------------------------------------------------------

    def sleeping(self, pid, lwp: str | None, name: str, args: str) -> None:
        """truss's `(sleeping...)`: the LWP blocked in this call when the line was printed."""
        key = (pid, lwp)
        if key in self.asleep or len(self.asleep) < MAX_FDS:
            self.asleep[key] = f"{name}({args.split('(sleeping')[0].strip()[:80]}"

    def _set(self, pid, fd: int, target: str, line: int) -> None:
        key = (pid, fd)
        hist = self.fds.get(key)
        if hist is None:
            if len(self.fds) >= MAX_FDS:
                del self.fds[next(iter(self.fds))]
            hist = self.fds[key] = []
        if hist and hist[-1][1] is None:
            hist[-1][1] = line
        hist.append([line, None, target[:200]])
        del hist[:-MAX_FD_HISTORY]

    def target(self, pid, fd: int, line: int | None = None) -> str | None:
        """What fd referred to at `line` (None: at the end)."""
        hist = self.fds.get((pid, fd))
        if not hist:
            return None
        if line is None:
            return hist[-1][2] if hist[-1][1] is None else None
        for start, end, target in reversed(hist):
            if start <= line and (end is None or line <= end):
                return target
        return None

    def call(self, pid, name: str, args: str, ret: str | None, err: str | None,
             dur: float | None, line: int) -> None:  # fmt: skip
        """One call whose name is in TARGET_CALLS, or one that failed (args as printed, ret as
        text). An fd is never "closed" here: a reused fd's next open ends its previous target,
        which needs no close line (the C scanners keep those)."""
        first = args.partition(",")[0]
        if err is not None and name in FD_CALLS:
            fd, shown = _fd_of(first)
            target = shown or (self.target(pid, fd, line) if fd is not None else None)
            if target is not None:
                key = f"{target} {name}: {err}"[:200]
                if key in self.fd_errors or len(self.fd_errors) < MAX_PEERS:
                    self.fd_errors[key] = self.fd_errors.get(key, 0) + 1
        if name not in TARGET_CALLS:
            return
        fd_ret = _INT(ret) if ret else None
        new_fd = int(fd_ret.group(1)) if fd_ret is not None and err is None else None
        if name in OPEN_CALLS:
            q = _QUOTED(args)
            if q is not None and new_fd is not None and new_fd >= 0:
                flags = [f for f in _IO_FLAGS if f in args]  # what changes how I/O waits
                path = q.group(1) + (f" ({'|'.join(flags)})" if flags else "")
                self._set(pid, new_fd, path, line)
        elif name in SOCKET_CALLS:
            if new_fd is not None and new_fd >= 0:
                fam = _FAMILY(args)
                self._set(pid, new_fd, "socket " + (fam.group(1) if fam else "?"), line)
        elif name in CONNECT_CALLS:
            fd, _ = _fd_of(first)
            peer = describe_peer(args)
            if peer is not None:
                if peer in self.peers or len(self.peers) < MAX_PEERS:
                    self.peers[peer] = self.peers.get(peer, 0) + 1
                    if err is not None and err != "EINPROGRESS":
                        self.peer_errors[peer] = self.peer_errors.get(peer, 0) + 1
                if fd is not None:
                    self._set(pid, fd, "socket to " + peer, line)
        elif name in PEER_CALLS:
            fd, _ = _fd_of(first)
            peer = describe_peer(args) if err is None else None
            if (
                fd is not None
                and peer is not None
                and self.target(pid, fd, line) != ("socket to " + peer)
            ):
                self._set(pid, fd, "socket to " + peer, line)
        elif name in ACCEPT_CALLS:
            if new_fd is not None and new_fd >= 0:
                peer = describe_peer(args)
                self._set(pid, new_fd, "socket from " + (peer or "a client"), line)
        elif name in DUP_CALLS or (name in FCNTL_CALLS and "F_DUPFD" in args):
            fd, _ = _fd_of(first)
            if fd is not None and new_fd is not None and new_fd >= 0:
                t = self.target(pid, fd, line)
                if t is not None:
                    self._set(pid, new_fd, t, line)
        elif name in EPOLL_CTL_CALLS:
            parts = _split_args(args)
            if len(parts) >= 3 and "ADD" in parts[1]:
                epfd, _ = _fd_of(parts[0])
                fd, _ = _fd_of(parts[2])
                if epfd is not None and fd is not None:
                    key = (pid, epfd)
                    fds = self.epoll.get(key)
                    if fds is None and len(self.epoll) < MAX_FDS:
                        fds = self.epoll[key] = []
                    if fds is not None and fd not in fds and len(fds) < MAX_EPOLL_FDS:
                        fds.append(fd)
        elif name in POLL_CALLS and ret == "0" and err is None:
            self._poll(pid, name, args, dur, line)

    def _poll(self, pid, name: str, args: str, dur: float | None, line: int) -> None:
        if name in ("poll", "epoll_wait"):  # the timeout is the last argument
            parts = [args.partition(",")[0], "", "", ""]
            parts[2 if name == "poll" else 3] = args.rpartition(",")[2]
        else:
            parts = _split_args(args)
        timeout = _timeout_ms(name, parts)
        if timeout == 0:
            self.zero_polls[name] = self.zero_polls.get(name, 0) + 1
            return
        # returned 0: nothing became ready before the timeout (pollsys/_pollset_poll print a
        # pointer for it: a 0 return is still a timeout)
        self.expired[name] = self.expired.get(name, 0) + 1
        if timeout is not None and timeout > self.expired_max.get(name, -1.0):
            self.expired_max[name] = timeout
        fds: list[int] = []
        if name in ("poll", "ppoll"):
            fds = [int(x) for x in _POLL_FDS(args, 0, 4096)[:8]]
        elif name in ("select", "pselect6", "_newselect"):
            m = _SELECT_SET(args)
            if m is not None:
                fds = [int(x) for x in m.group(1).split()[:8]]
        elif name.startswith("epoll") and parts:
            epfd, _ = _fd_of(parts[0])
            if epfd is not None:
                fds = list(self.epoll.get((pid, epfd), []))[:8]
        targets = [t for fd in fds if (t := self.target(pid, fd, line)) is not None]
        if any("(DNS)" in t for t in targets):
            self.dns_timeouts += 1
        if len(self.timeouts) < MAX_TIMEOUTS:
            entry: dict = {"syscall": name, "pid": pid, "line": line, "fds": fds}
            entry["timeout_ms"] = timeout
            entry["ms"] = round(dur, 4) if dur is not None else None
            entry["targets"] = targets
            self.timeouts.append(entry)

    # -- results --------------------------------------------------------------------------------

    def slow_target(self, pid, name: str, text: str | None, line: int) -> str | None:
        """What a slow call (its line's text, when kept) was on: its fd's file, device or peer,
        or what its poll waited on."""
        if text is None:
            return None
        i = text.find(name + "(")
        if i < 0:
            return None
        body = text[i + len(name) + 1 :]
        parts = _split_args(body)
        if name in FD_CALLS and parts:
            fd, shown = _fd_of(parts[0])
            if shown is not None:
                return shown
            if fd is not None:
                self.last_fd = fd
                t = self.target(pid, fd, line)
                if t is None and name.startswith("epoll"):
                    inner = self.epoll.get((pid, fd), [])
                    ts = [x for f in inner if (x := self.target(pid, f, line)) is not None]
                    return ", ".join(ts[:3]) or None
                return t
        if name in ("poll", "ppoll"):
            ts = [x for f in _POLL_FDS(body)[:8] if (x := self.target(pid, int(f), line))]
            return ", ".join(ts[:3]) or None
        return None

    def facts(self, facts: dict, details: dict) -> None:
        if self.expired:
            facts["timeout.count"] = {n: float(c) for n, c in self.expired.items()}
        if self.expired_max:
            facts["timeout.max_ms"] = {n: float(v) for n, v in self.expired_max.items()}
        if self.zero_polls:
            facts["poll.zero_timeout"] = {n: float(c) for n, c in self.zero_polls.items()}
        if self.peers:
            top = sorted(self.peers.items(), key=lambda kv: -kv[1])[:20]
            facts["socket.connects"] = {p: float(c) for p, c in top}
        if self.peer_errors:
            facts["socket.connect_errors"] = {p: float(c) for p, c in self.peer_errors.items()}
        if self.dns_timeouts:
            facts["socket.dns_timeouts"] = float(self.dns_timeouts)
        if self.fd_errors:
            top = sorted(self.fd_errors.items(), key=lambda kv: -kv[1])[:20]
            facts["fd.errors"] = {k: float(c) for k, c in top}
        if self.asleep:
            by_call: dict[str, float] = {}
            for call in self.asleep.values():
                name = call.partition("(")[0]
                by_call[name] = by_call.get(name, 0.0) + 1.0
            facts["trace.asleep"] = by_call
            details["asleep"] = [
                {"pid": pid, "lwp": lwp, "call": call + " (sleeping...)"}
                for (pid, lwp), call in list(self.asleep.items())[:50]
            ]
        details["timeouts"] = list(self.timeouts)
        open_fds = [
            {"pid": pid, "fd": fd, "target": hist[-1][2]}
            for (pid, fd), hist in self.fds.items()
            if hist
        ]
        details["fd_targets"] = open_fds[-50:]

    def repeat_targets(self, facts: dict, details: dict) -> None:
        """What the fd of each syscall's most repeated call (repeat.fd) refers to."""
        out = {}
        for name, fd in (facts.get("repeat.fd") or {}).items():
            for (_pid, f), hist in self.fds.items():
                if f == int(fd) and hist:
                    out[name] = hist[-1][2]
                    break
        if out:
            details["repeat_targets"] = out


MAX_FINDINGS = 6


def _findings(facts: dict, details: dict) -> list[str]:
    """A few plain sentences saying what the trace's slow calls and waits were on, for the
    renderers to show as they are (they hold no diagnosis)."""
    out: list[str] = []
    slowest = details.get("slowest") or []
    if slowest:
        s = slowest[0]
        text = f"slowest call: {s['syscall']} {number(s['ms'])} ms"
        if s.get("target"):
            text += f" on {s['target']}"
        elif s.get("fd") is not None:
            text += f" on fd {s['fd']} (not opened in the trace)"
        if s.get("share_pct") is not None:
            text += f", {number(s['share_pct'])} % of the traced span"
        out.append(text)
    groups: dict[tuple, list[dict]] = {}
    for t in details.get("timeouts") or []:
        groups.setdefault((t["syscall"], tuple(t["targets"])), []).append(t)
    for (name, targets), items in list(groups.items())[:2]:
        limit = items[0].get("timeout_ms")
        text = f"{name} returned 0 (timed out) {len(items)} time{'s' if len(items) > 1 else ''}"
        if limit is not None:
            text += f" after its {number(limit)} ms timeout"
        if targets:
            text += " waiting on " + ", ".join(targets[:2])
        out.append(text)
    for key, n in list((facts.get("fd.errors") or {}).items())[:1]:
        out.append(f"failed calls on {key} ({number(n)}×)")
    asleep = facts.get("trace.asleep") or {}
    if asleep:
        out.append(
            "LWPs asleep: "
            + ", ".join(
                f"{number(n)} in {name}"
                for name, n in sorted(asleep.items(), key=lambda kv: -kv[1])
            )
        )
    futex = (facts.get("syscall.count") or {}).get("futex", 0)
    if futex >= 100 and facts.get("futex.error_pct", 0) >= 20:
        out.append(
            f"futex churn: {number(futex)} calls, {number(facts['futex.error_pct'])} % failing "
            "(EAGAIN / ETIMEDOUT)"
        )
    return out[:MAX_FINDINGS]


class NativeAggregator(SyscallAggregator):
    """SyscallAggregator with its per-call state in C (ingest/_syscore_src/): call, event, child,
    continuation and elide run there, and the parsers' scanners (truss_run, strace_run) feed it
    whole runs of lines. Results and snapshots come from an export into a plain
    SyscallAggregator, so result() is the same code; the rare lines (signals, exits, summaries)
    keep the inherited Python methods. The counters live only in C: read them through state()."""

    def __init__(self) -> None:  # no super().__init__(): the counters it makes would be stale
        self._init_tables()
        core = self._core = _syscore.Core(
            self.errnos, self.children, self._random, self.signals, self.exits
        )
        # instance attributes: the parsers' `self.agg.call(...)` goes straight to C
        self.call = core.call  # type: ignore[method-assign]
        self.event = core.event  # type: ignore[method-assign]
        self.continuation = core.continuation  # type: ignore[method-assign]
        self.elide = core.elide  # type: ignore[method-assign]
        self.truss_run = core.truss_run
        self.strace_run = core.strace_run
        self.routed = core.routed  # lines the scanners took that FdTargets reads

    @property  # type: ignore[override]
    def gap_timing(self) -> bool:
        return self._core.gap_timing

    @gap_timing.setter
    def gap_timing(self, value: bool) -> None:
        self._core.gap_timing = value

    def state(self) -> SyscallAggregator:
        return self._export()

    def proc(self, pid: int | None) -> None:  # type: ignore[override]
        self._core.proc(pid)

    def child(self, pid: int | None, parent: str | None, line: int, ts: float | None) -> None:
        self._core.child(pid, pid_number(parent), line, ts)

    def _export(self) -> SyscallAggregator:
        """The state as a plain aggregator, sharing objects with this one."""
        agg = SyscallAggregator()
        for name in ("signals", "faults", "summary", "summary_total", "summary_extra", "exits"):
            setattr(agg, name, getattr(self, name))
        rng = random.Random()
        rng.setstate(self._random.__self__.getstate())
        agg._random = rng.random
        self._core.export(agg)
        return agg

    def snapshot(self) -> SyscallAggregator:
        return copy.deepcopy(self._export())

    def result(self, timing: Timing) -> tuple[dict, dict, list[str]]:
        return self._export().result(timing)


if _syscore is not None:
    _syscore.configure(
        {
            "MAX_SYSCALLS": MAX_SYSCALLS,
            "MAX_PIDS": MAX_PIDS,
            "MAX_REPEAT_KEYS": MAX_REPEAT_KEYS,
            "RESERVOIR": RESERVOIR,
            "TOP_N": TOP_N,
            "MAX_NAMES": MAX_NAMES,
            "MAX_CHILDREN": MAX_CHILDREN,
            "MAX_LINE": MAX_LINE,
            "OTHER": OTHER,
            "FORK_CALLS": FORK_CALLS,
            "EXEC_CALLS": EXEC_CALLS,
            "ROUTE_KIND": ROUTE_KIND,
            "FD_CALLS": FD_CALLS,
            "SIZE_FROM_END": _SIZE_FROM_END,
            "HIST_BOUNDS": HIST_BOUNDS,
            "arg_shape": arg_shape,
            "Stat": _Stat,
            "Proc": _Proc,
        }
    )

# The aggregator the parsers use; tests switch to the pure-Python reference with
# `monkeypatch.setattr(syscalls, "NATIVE", False)`.
NATIVE = _syscore is not None


class SyscallParser(Parser):
    """What truss and strace parsers have in common: one aggregator, a count of accepted lines
    for the line numbers in details, and those numbers moved to the input's at the end."""

    def __init__(self) -> None:
        super().__init__()
        self.agg = NativeAggregator() if NATIVE else SyscallAggregator()
        self._n = 0  # accepted lines, for line numbers in details
        self.targets = FdTargets()

    def _what_it_waited_on(self, facts: dict, details: dict) -> None:
        """Name what the slowest calls were on (from the fd table and the kept text of their
        lines), the waits that ran out, the share of the trace's span the slowest call took,
        and how hard futexes were hammered."""
        kept = None if self.text_truncated else self._text
        span = facts.get("trace.span_s")
        for slow in details.get("slowest", []):
            line = slow.get("line")
            text = kept[line - 1] if kept is not None and 0 < line <= len(kept) else None
            self.targets.last_fd = None
            target = self.targets.slow_target(slow.get("pid"), slow["syscall"], text, line)
            if target is not None:
                slow["target"] = target
            if self.targets.last_fd is not None:
                slow["fd"] = self.targets.last_fd  # named even when the trace never opened it
            if span:
                slow["share_pct"] = round(100.0 * slow["ms"] / (span * 1000.0), 2)
        slowest = details.get("slowest") or []
        if slowest and span:
            facts["trace.slowest_share_pct"] = slowest[0]["share_pct"]
        self.targets.facts(facts, details)
        self.targets.repeat_targets(facts, details)
        count = facts.get("syscall.count", {}).get("futex")
        if count:
            errors = facts.get("syscall.errors", {}).get("futex", 0.0)
            facts["futex.error_pct"] = round(100.0 * errors / count, 3)
            if span:
                facts["futex.calls_per_s"] = round(count / span, 3)
        details["findings"] = _findings(facts, details)

    @abstractmethod
    def _read(self, text: str, pos: int, endpos: int, limit: int, single: bool = False) -> int:
        """The format's one reader of its common lines, for at most `limit` lines (-1: no
        limit) of `text` from `pos`; returns where it stopped. `feed` is its one-line case
        (`single`: a line the run would stop at is judged as feed judges it, and -1 says it is
        not this block's); feed_run, and the C scanner for each line it hands back, use it for
        runs. One reader, so the fast path cannot drift from feed."""

    @abstractmethod
    def _routed_call(self, line: str) -> tuple | None:
        """(pid, name, args, ret, errno, duration ms) of a call line the C scanner took and
        routed to FdTargets, or None."""

    def _drain(self) -> None:
        """Hand FdTargets the lines the C scanner took for it (in order, before anything the
        Python path reads next)."""
        routed = self.agg.routed
        for n, line in routed:
            call = self._routed_call(line)
            if call is not None:
                self.targets.call(*call, n)
        routed.clear()

    def _scan(
        self, step: Callable[[int], tuple[int, int]], text: str, pos: int, endpos: int
    ) -> int:
        """feed_run with a C scanner: `step(pos)` takes lines from pos and says why it stopped
        (0: at endpos; 1: the line there is for _read; 2: text it does not read, all of it
        for _read). Returns where the run ends."""
        while True:
            pos, status = step(pos)
            if status == 0:
                return pos
            new = self._read(text, pos, endpos, -1 if status == 2 else 1)
            if new == pos or status == 2:
                return new
            pos = new

    def finish(self, start_line: int, end_line: int) -> Block:
        block = super().finish(start_line, end_line)
        shift_lines(block.details, start_line - 1)
        return block
