"""Deterministic generator of realistic truss (Solaris) and strace (Linux) captures.

The captures look like what people trace on a busy Oracle host: a listener forking shadow
processes, sessions reading from SQL*Net sockets, pread()s of datafile blocks, semaphore waits,
timers, signals and the occasional failed call. truss output carries -f pid or pid/lwp prefixes,
-d/-D/-E time columns, -v continuation lines (pollsys fds, socket addresses, sigaction masks, stat
results), `Received signal` lines, fork children `(returning as child ...)`, `argc =` execs and
`(sleeping...)` lines at attach; strace output carries -f pids, -tt or -ttt timestamps, -T
durations, `<unfinished ...>` / `<... resumed>` pairs, `--- SIGxxx {...} ---` and `+++ exited +++`.

Everything is drawn from `random.Random(seed)`, so a (kind, mode, size, seed) always yields the
same bytes, and the generator tallies what it wrote (calls per syscall, errors, signals,
processes) in an `Expected` record: the smoke test checks that the parsers count exactly that.
The timing numbers are made up; their shapes follow the seed captures (tests/fixtures/seeds/004
truss listener lines, 001 truss shmdt lines) and the formats described in the reference notes.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Literal

from pydantic import BaseModel

from benchmarks.capture_cache import CaptureWriter, cached

GEN_VERSION = 1
DATA_DIR = Path(__file__).resolve().parent / "data"
SEED = 8
MB = 1024 * 1024
SIZES: dict[str, int] = {"10MB": 10 * MB, "100MB": 100 * MB, "1GB": 1024 * MB}
TRUSS_MODES = ("dDE", "d", "dD")
STRACE_MODES = ("ttT", "tt", "tttT")
MAX_PROCESSES = 1500  # the parser tracks 4096 pids on their own; stay well under that

Kind = Literal["truss", "strace"]

# One regular expression for "a completed syscall line" per format: the grep -cE reference.
GREP_RE: dict[str, str] = {
    "truss": r"^[0-9/]+: +([0-9]+\.[0-9]+ +)*[A-Za-z_][A-Za-z0-9_]*\(.*\) *(= |Err#)",
    "strace": r"^[0-9]+ +[0-9:.]+ +[A-Za-z_][A-Za-z0-9_]*\(.*\) += ",
}


class Expected(BaseModel):
    """What a generated capture holds, tallied while writing it."""

    kind: Kind
    mode: str
    seed: int
    gen_version: int = GEN_VERSION
    target_bytes: int
    bytes: int = 0
    lines: int = 0
    calls: int = 0
    errors: int = 0
    signals: int = 0
    processes: int = 0
    continuation_lines: int = 0
    unfinished: int = 0
    syscalls: dict[str, int] = {}
    errnos: dict[str, int] = {}


class _Tally:
    def __init__(self) -> None:
        self.calls = 0
        self.errors = 0
        self.signals = 0
        self.cont = 0
        self.unfinished = 0
        self.syscalls: Counter[str] = Counter()
        self.errnos: Counter[str] = Counter()
        self.pids: set[int] = set()

    def call(self, pid: int, name: str, errno: str | None = None) -> None:
        self.calls += 1
        self.syscalls[name] += 1
        self.pids.add(pid)
        if errno is not None:
            self.errors += 1
            self.errnos[errno] += 1


def _hex(rng: random.Random, base: int, span: int) -> str:
    return f"0x{base + rng.randrange(span) * 8:X}"


# ---- truss ----------------------------------------------------------------------------------

_SOL_ERRNO = {"ENOENT": 2, "EINTR": 4, "EAGAIN": 11, "ETIME": 62, "ENOTCONN": 134}
_ORACLE_HOME = "/u01/app/oracle/product/12.2.0/dbhome_1"


class _TrussGen:
    """truss -f [-d] [-D] [-E] -v all of a listener and its shadow processes."""

    def __init__(self, mode: str, rng: random.Random, out: CaptureWriter, tally: _Tally) -> None:
        self.mode = mode
        self.rng = rng
        self.out = out
        self.t = tally
        self.tick = 15000  # -d clock in 1/10000 s: the trace starts 1.5 s before our first line
        self.last: dict[tuple[int, int], int] = {}
        self.listener = 15697
        self.next_pid = 8195
        self.servers: list[tuple[int, int]] = []  # (pid, lwps)
        for i in range(40):
            self.servers.append((2101 + 37 * i, 3 if i % 7 == 0 else 1))
        self.children = 0

    # -- formatting -------------------------------------------------------------------------

    @staticmethod
    def _sec(ticks: int) -> str:
        return f"{ticks // 10000}.{ticks % 10000:04d}"

    def _prefix(self, pid: int, lwp: int, in_call: int, multi: bool) -> str:
        """'pid[/lwp]: d D E ' for the current tick; in_call is the -E value in ticks."""
        key = (pid, lwp)
        delta = self.tick - self.last.get(key, 0)
        self.last[key] = self.tick
        head = f"{pid}/{lwp}:" if multi else f"{pid}:"
        cols = []
        if "d" in self.mode:
            cols.append(self._sec(self.tick))
        if "D" in self.mode:
            cols.append(self._sec(delta))
        if "E" in self.mode:
            cols.append(self._sec(min(in_call, delta)))
        return head + " " + " ".join(cols) + (" " if cols else "")

    def _emit_call(
        self,
        pid: int,
        lwp: int,
        multi: bool,
        call: str,
        ret: str | None,
        errno: str | None = None,
        in_call: int = 0,
        name: str | None = None,
        extra: str = "",
    ) -> None:
        self.tick += 1 + int(self.rng.expovariate(1 / 4))
        self.tick += in_call
        if errno is not None:
            tail = f"Err#{_SOL_ERRNO[errno]} {errno}"
        elif ret is not None:
            tail = f"= {ret}"
        else:
            tail = ""
        text = call.ljust(38) + " " + tail if tail else call + extra
        self.out.add(self._prefix(pid, lwp, in_call, multi) + text)
        self.t.call(pid, name or call[: call.index("(")], errno)

    def _cont(self, pid: int, lwp: int, multi: bool, text: str) -> None:
        head = f"{pid}/{lwp}:" if multi else f"{pid}:"
        self.out.add(f"{head}\t{text}")
        self.t.cont += 1

    # -- the capture ------------------------------------------------------------------------

    def header(self) -> None:
        flags = " ".join(f"-{c}" for c in self.mode)
        self.out.add(f"# truss -o /var/tmp/lsnr.truss -f -v all {flags} -p {self.listener}")
        for pid, lwps in self.servers[:4]:
            multi = lwps > 1
            head = f"{pid}/1:" if multi else f"{pid}:"
            cols = " ".join(["0.0000"] * len(self.mode))
            self.out.add(f"{head} {cols} read(15, 0x10A2B3C40, 8208)".ljust(52) + " (sleeping...)")
        self.t.pids.update(pid for pid, _ in self.servers[:4])

    def step(self) -> None:
        r = self.rng.random()
        if r < 0.04:
            self._listener()
        else:
            pid, lwps = self.servers[self.rng.randrange(len(self.servers))]
            self._server(pid, self.rng.randrange(1, lwps + 1), lwps > 1)

    def _listener(self) -> None:
        rng, pid = self.rng, self.listener
        nfd = rng.randint(2, 4)
        ready = rng.randrange(nfd)
        self._emit_call(pid, 1, False, f"pollsys(0x10041CDA8, {nfd}, 0x00000000, 0x00000000)", "1")
        for i in range(nfd):
            rev = "POLLIN|POLLRDNORM" if i == ready else "0"
            self._cont(pid, 1, False, f"fd={9 + i} ev=POLLIN|POLLRDNORM rev={rev}")
        if self.children >= MAX_PROCESSES - 50 or rng.random() < 0.6:
            return
        fd = 13
        self._emit_call(
            pid,
            1,
            False,
            f"accept(12, {_hex(rng, 0xFFFFFFFF7FFF8800, 64)}, 0xFFFFFFFF7FFF88AC, SOV_DEFAULT)",
            str(fd),
            in_call=rng.randint(0, 20),
        )
        self._cont(
            pid,
            1,
            False,
            f"AF_INET name = 10.44.29.{rng.randint(2, 250)} port = {rng.randint(30000, 65000)}",
        )
        if rng.random() < 0.3:
            self._emit_call(
                pid,
                1,
                False,
                "getpeername(12, 0xFFFFFFFF7FFF889C, 0xFFFFFFFF7FFF88AC, SOV_DEFAULT)",
                None,
                "ENOTCONN",
            )
        self._emit_call(pid, 1, False, f"ioctl({fd}, FIONBIO, 0xFFFFFFFF7FFF88AC)", "0")
        lib = rng.choice(["libnk59.so", "libngss9.so", "libnnts9.so", "libnrad9.so"])
        found = rng.random() < 0.5
        self._emit_call(
            pid,
            1,
            False,
            f'access("{_ORACLE_HOME}/lib/{lib}", F_OK)',
            "0" if found else None,
            None if found else "ENOENT",
        )
        # fork a shadow process: parent line, child's first line, the child's short life
        child = self.next_pid
        self.next_pid += rng.randint(1, 9)
        self.children += 1
        fork_ticks = rng.randint(5, 400)  # fork1 of a big listener is slow (seed 004)
        self._emit_call(pid, 1, False, "fork1()", str(child), in_call=fork_ticks)
        self.tick += 1
        self.last[(child, 1)] = 0
        self.out.add(
            self._prefix(child, 1, 0, False)
            + "fork1()".ljust(38)
            + f" (returning as child ...) = {pid}"
        )
        self.t.pids.add(child)
        self._emit_call(child, 1, False, "getpid()", f"{child} [{pid}]")
        for cfd in (9, 12):
            self._emit_call(child, 1, False, f"close({cfd})", "0")
        self._emit_call(
            child,
            1,
            False,
            f'execve("{_ORACLE_HOME}/bin/oracle", 0xFFBFFB0C, 0xFFBFFB18)',
            None,
            extra="  argc = 2",
        )
        for _ in range(rng.randint(3, 12)):
            self._server(child, 1, False)
        self._emit_call(child, 1, False, "_exit(0)", None)
        # the parent hears about it
        self.tick += rng.randint(1, 30)
        self.out.add(
            self._prefix(pid, 1, 0, False)
            + "    Received signal #18, SIGCLD, in pollsys() [caught]"
        )
        self.t.signals += 1
        self._cont(pid, 1, False, f"  siginfo: SIGCLD CLD_EXITED pid={child} status=0x0000")
        self._emit_call(
            pid, 1, False, "waitid(P_ALL, 0, 0xFFFFFFFF7FFF8D40, WEXITED|WTRAPPED|WNOHANG)", "0"
        )

    def _server(self, pid: int, lwp: int, multi: bool) -> None:
        rng = self.rng
        r = rng.random()
        fd = 15
        if r < 0.22:
            n = rng.choice([21, 240, 8208, 1107, 226])
            wait = int(rng.expovariate(1 / 300)) if rng.random() < 0.5 else 0
            self._emit_call(
                pid,
                lwp,
                multi,
                f'read({fd}, "\\0F0\\0\\001\\0\\0\\001 801 ,"..., 8208)',
                str(n),
                in_call=wait,
                name="read",
            )
        elif r < 0.34:
            n = rng.choice([11, 226, 1502, 8192])
            self._emit_call(
                pid, lwp, multi, f'write({fd}, "\\0\\v\\0\\0\\f\\0\\0\\0\\001 @", {n})', str(n)
            )
        elif r < 0.52:
            blk = rng.randrange(1, 2_000_000) * 8192
            ticks = int(rng.lognormvariate(3.2, 0.8))  # ~2.5 ms median datafile read
            self._emit_call(
                pid,
                lwp,
                multi,
                f"pread({257 + rng.randrange(12)}, 0x{0x3A6F2000 + rng.randrange(4096) * 8192:X}, 8192, 0x{blk:X})",
                "8192",
                in_call=ticks,
            )
        elif r < 0.58:
            self._emit_call(
                pid, lwp, multi, "times(0xFFFFFFFF7FFFB1D0)", str(1_230_000 + self.tick // 100)
            )
        elif r < 0.64:
            self._emit_call(pid, lwp, multi, "getrusage(RUSAGE_SELF, 0xFFFFFFFF7FFFAB70)", "0")
        elif r < 0.71:
            timed_out = rng.random() < 0.4
            ticks = 1000 if timed_out else rng.randint(0, 300)
            self._emit_call(
                pid,
                lwp,
                multi,
                "semtimedop(16777247, 0xFFFFFFFF7FFFB3A4, 1, 0xFFFFFFFF7FFFB390)",
                None if timed_out else "0",
                "EAGAIN" if timed_out else None,
                in_call=ticks,
            )
        elif r < 0.76:
            nfd = rng.randint(1, 3)
            self._emit_call(
                pid,
                lwp,
                multi,
                f"pollsys(0xFFFFFFFF7FFFA8C0, {nfd}, 0xFFFFFFFF7FFFA9E0, 0x00000000)",
                "0" if rng.random() < 0.5 else "1",
                in_call=rng.randint(0, 100),
            )
            for i in range(nfd):
                self._cont(pid, lwp, multi, f"fd={fd + i} ev=POLLIN|POLLRDNORM rev=0")
            self._cont(pid, lwp, multi, "timeout: 0.000000000 sec")
        elif r < 0.80:
            self._emit_call(pid, lwp, multi, f"lseek({fd}, 0, SEEK_CUR)", "0")
        elif r < 0.84:
            missing = rng.random() < 0.5
            self._emit_call(
                pid,
                lwp,
                multi,
                f'stat("{_ORACLE_HOME}/rdbms/mesg/oraus.msb", 0xFFFFFFFF7FFF9D60)',
                None if missing else "0",
                "ENOENT" if missing else None,
            )
            if not missing:
                self._cont(
                    pid,
                    lwp,
                    multi,
                    "    d=0x00740012 i=1234567 m=0100644 l=1  u=100   g=101   sz=1191424",
                )
                self._cont(
                    pid, lwp, multi, "\tat = Jun 12 10:14:07 GMT 2018  [ 1528798447.000000000 ]"
                )
        elif r < 0.87:
            self._emit_call(
                pid, lwp, multi, f'open("{_ORACLE_HOME}/rdbms/mesg/oraus.msb", O_RDONLY)', "14"
            )
            self._emit_call(pid, lwp, multi, "fcntl(14, F_SETFD, 0x00000001)", "0")
            self._emit_call(pid, lwp, multi, "close(14)", "0")
        elif r < 0.90:
            self._emit_call(pid, lwp, multi, f"ioctl({fd}, FIONBIO, 0xFFFFFFFF7FFF9E7C)", "0")
        elif r < 0.93:
            self._emit_call(
                pid,
                lwp,
                multi,
                "lwp_park(0x00000000, 0)",
                None,
                "ETIME",
                in_call=rng.randint(0, 50),
            )
        elif r < 0.95:
            self._emit_call(
                pid,
                lwp,
                multi,
                "mmap(0x00000000, 1048576, PROT_READ|PROT_WRITE, MAP_PRIVATE, 14, 0)",
                "0xFFFFFFFF7E500000",
            )
            self._emit_call(pid, lwp, multi, "munmap(0xFFFFFFFF7E500000, 1048576)", "0")
        elif r < 0.97:
            self._emit_call(
                pid, lwp, multi, "sigaction(SIGPIPE, 0xFFFFFFFF7FFF8B80, 0xFFFFFFFF7FFF8CA8)", "0"
            )
            self._cont(
                pid,
                lwp,
                multi,
                "new: hand = 0x00000001 mask = 0x9FBFF057 0x0000FFF7 0 0 flags = 0x000C",
            )
            self._cont(pid, lwp, multi, "old: hand = 0x00000001 mask = 0 0 0 0 flags = 0x0000")
        elif r < 0.995:
            self._emit_call(pid, lwp, multi, "yield()", "0")
        else:
            # a timer interrupts a semaphore wait
            self.tick += rng.randint(10, 500)
            self.out.add(
                self._prefix(pid, lwp, 0, multi)
                + "    Received signal #14, SIGALRM, in semtimedop() [caught]"
            )
            self.t.signals += 1
            self.t.pids.add(pid)
            self._emit_call(
                pid,
                lwp,
                multi,
                "semtimedop(16777247, 0xFFFFFFFF7FFFB3A4, 1, 0xFFFFFFFF7FFFB390)",
                None,
                "EINTR",
            )
            self._emit_call(pid, lwp, multi, "setcontext(0xFFFFFFFF7FFFAF10)", None)

    def finish(self) -> None:
        pass


# ---- strace ---------------------------------------------------------------------------------


class _StraceGen:
    """strace -f -o FILE [-tt|-ttt] [-T] of a listener and its server processes (Linux)."""

    def __init__(self, mode: str, rng: random.Random, out: CaptureWriter, tally: _Tally) -> None:
        self.mode = mode
        self.timed = mode.endswith("T")
        self.epoch = mode.startswith("ttt")
        self.rng = rng
        self.out = out
        self.t = tally
        self.us = (10 * 3600 + 14 * 60 + 7) * 1_000_000  # 10:14:07 in microseconds
        self.epoch_base = 1_717_000_000 * 1_000_000 - self.us
        self.listener = 4242
        self.servers = [23001 + 13 * i for i in range(40)]
        self.next_pid = 31000
        self.children = 0
        self.pending: dict[int, tuple[str, int, str, str, str | None]] = {}

    def _clock(self) -> str:
        us = self.us
        if self.epoch:
            v = self.epoch_base + us
            return f"{v // 1_000_000}.{v % 1_000_000:06d}"
        s = us // 1_000_000
        return f"{s // 3600 % 24:02d}:{s // 60 % 60:02d}:{s % 60:02d}.{us % 1_000_000:06d}"

    def _advance(self) -> None:
        self.us += 1 + int(self.rng.expovariate(1 / 40))

    def _line(self, pid: int, text: str) -> None:
        self._advance()
        self.out.add(f"{pid:<5} {self._clock()} {text}")

    def _tail(self, ret: str, errno: str | None, dur_us: int) -> str:
        if errno is not None:
            msg = _LINUX_ERRMSG[errno]
            tail = f"= -1 {errno} ({msg})"
        else:
            tail = f"= {ret}"
        if self.timed:
            tail += f" <{dur_us // 1_000_000}.{dur_us % 1_000_000:06d}>"
        return tail

    def _call(
        self, pid: int, name: str, args: str, ret: str, errno: str | None = None, dur_us: int = 0
    ) -> None:
        self.us += dur_us
        self._line(pid, f"{name}({args})".ljust(39) + " " + self._tail(ret, errno, dur_us))
        self.t.call(pid, name, errno)

    def _blocking(
        self, pid: int, name: str, head: str, rest: str, ret: str, errno: str | None, dur_us: int
    ) -> None:
        """A call other pids may print during: sometimes split into unfinished / resumed."""
        if self.rng.random() < 0.5:
            sep = ", " if head and not head.endswith(" ") else ""
            self._call(pid, name, head + (sep + rest if rest else ""), ret, errno, dur_us)
            return
        self._line(pid, f"{name}({head} <unfinished ...>")
        self.t.pids.add(pid)
        self.t.unfinished += 1
        self.pending[pid] = (name, self.us, rest, ret, errno)

    def _resume(self, pid: int) -> None:
        name, start, rest, ret, errno = self.pending.pop(pid)
        self._advance()
        dur = self.us - start
        self.out.add(
            f"{pid:<5} {self._clock()} <... {name} resumed>{rest}) " + self._tail(ret, errno, dur)
        )
        self.t.call(pid, name, errno)

    def header(self) -> None:
        pass

    def step(self) -> None:
        if self.rng.random() < 0.04:
            pid = self.listener
        else:
            pid = self.servers[self.rng.randrange(len(self.servers))]
        if pid in self.pending:
            self._resume(pid)
        elif pid == self.listener:
            self._listener()
        else:
            self._server(pid)

    def _listener(self) -> None:
        rng, pid = self.rng, self.listener
        wait = int(rng.expovariate(1 / 20000))
        self._blocking(
            pid, "epoll_wait", "12, ", "[{EPOLLIN, {u32=15, u64=15}}], 64, -1", "1", None, wait
        )
        if pid in self.pending or self.children >= MAX_PROCESSES - 50 or rng.random() < 0.6:
            return
        self._call(
            pid,
            "accept4",
            '12, {sa_family=AF_INET, sin_port=htons(41612), sin_addr=inet_addr("10.44.29.32")}, [16], SOCK_CLOEXEC',
            "13",
            None,
            rng.randint(5, 60),
        )
        self._call(pid, "setsockopt", "13, SOL_TCP, TCP_NODELAY, [1], 4", "0", None, 4)
        found = rng.random() < 0.5
        self._call(
            pid,
            "access",
            '"/u01/app/oracle/product/19.0.0/dbhome_1/lib/libnrad19.so", F_OK',
            "0" if found else "-1",
            None if found else "ENOENT",
            6,
        )
        child = self.next_pid
        self.next_pid += rng.randint(1, 9)
        self.children += 1
        self._call(
            pid,
            "clone",
            "child_stack=NULL, flags=CLONE_CHILD_CLEARTID|CLONE_CHILD_SETTID|SIGCHLD, child_tidptr=0x7f8e1c1d2a10",
            str(child),
            None,
            rng.randint(200, 5000),
        )
        self._call(child, "set_robust_list", "0x7f8e1c1d2a20, 24", "0", None, 3)
        for cfd in (12, 14):
            self._call(child, "close", str(cfd), "0", None, 4)
        self._call(
            child,
            "execve",
            '"/u01/app/oracle/product/19.0.0/dbhome_1/bin/oracle", ["oracleORCL", "(LOCAL=NO)"], 0x7ffd2a1b3c40 /* 31 vars */',
            "0",
            None,
            rng.randint(300, 900),
        )
        for _ in range(rng.randint(3, 12)):
            self._server(child, allow_block=False)
        self._advance()
        self.out.add(f"{child:<5} {self._clock()} " + "exit_group(0)".ljust(39) + " = ?")
        self.t.call(child, "exit_group")
        self._line(child, "+++ exited with 0 +++")
        self._line(
            pid,
            f"--- SIGCHLD {{si_signo=SIGCHLD, si_code=CLD_EXITED, si_pid={child}, si_uid=54321, si_status=0, si_utime=0, si_stime=0}} ---",
        )
        self.t.signals += 1
        self._call(
            pid,
            "wait4",
            "-1, [{WIFEXITED(s) && WEXITSTATUS(s) == 0}], WNOHANG, NULL",
            str(child),
            None,
            8,
        )

    def _server(self, pid: int, allow_block: bool = True) -> None:
        rng = self.rng
        r = rng.random()
        fd = 15
        if r < 0.22:
            n = rng.choice([21, 240, 1107, 226])
            wait = int(rng.expovariate(1 / 3000)) if rng.random() < 0.5 else rng.randint(2, 30)
            data = '"\\0\\25\\0\\0\\6\\0\\0\\0\\0\\0\\3^\\22i\\376\\377\\377"...'
            if allow_block:
                self._blocking(pid, "read", f"{fd}, ", f"{data}, 8208", str(n), None, wait)
            else:
                self._call(pid, "read", f"{fd}, {data}, 8208", str(n), None, wait)
        elif r < 0.34:
            n = rng.choice([11, 237, 1502, 8192])
            self._call(
                pid,
                "write",
                f'{fd}, "\\0\\355\\0\\0\\6\\0\\0\\0\\0\\0\\20\\27\\0"..., {n}',
                str(n),
                None,
                rng.randint(5, 40),
            )
        elif r < 0.52:
            off = rng.randrange(1, 2_000_000) * 8192
            dur = int(rng.lognormvariate(7.8, 0.8))  # ~2.4 ms median datafile read
            self._call(
                pid,
                "pread64",
                f'{257 + rng.randrange(12)}, "\\6\\242\\0\\0\\304\\t\\0\\0\\364\\2\\363\\0\\0\\0\\2\\4"..., 8192, {off}',
                "8192",
                None,
                dur,
            )
        elif r < 0.58:
            self._call(
                pid,
                "times",
                "{tms_utime=41, tms_stime=9, tms_cutime=0, tms_cstime=0}",
                str(429_513_111 + self.us // 10_000),
                None,
                3,
            )
        elif r < 0.64:
            self._call(
                pid,
                "getrusage",
                "RUSAGE_SELF, {ru_utime={tv_sec=0, tv_usec=412345}, ru_stime={tv_sec=0, tv_usec=98765}, ...}",
                "0",
                None,
                4,
            )
        elif r < 0.71:
            timed_out = rng.random() < 0.4
            dur = 100_000 + rng.randint(0, 400) if timed_out else rng.randint(5, 30_000)
            head = "98307, [{sem_num=34, sem_op=-1, sem_flg=0}], 1, {tv_sec=0, tv_nsec=100000000}"
            if allow_block:
                self._blocking(
                    pid,
                    "semtimedop",
                    head,
                    "",
                    "-1" if timed_out else "0",
                    "EAGAIN" if timed_out else None,
                    dur,
                )
            else:
                self._call(
                    pid,
                    "semtimedop",
                    head,
                    "-1" if timed_out else "0",
                    "EAGAIN" if timed_out else None,
                    dur,
                )
        elif r < 0.76:
            self._call(
                pid,
                "poll",
                f"[{{fd={fd}, events=POLLIN|POLLPRI|POLLRDNORM}}], 1, 0",
                "0 (Timeout)",
                None,
                5,
            )
        elif r < 0.80:
            self._call(pid, "lseek", f"{fd}, 0, SEEK_CUR", "0", None, 2)
        elif r < 0.84:
            missing = rng.random() < 0.5
            path = '"/u01/app/oracle/product/19.0.0/dbhome_1/rdbms/mesg/oraus.msb"'
            if missing:
                self._call(pid, "stat", f"{path}, 0x7ffd2a1b1f60", "-1", "ENOENT", 9)
            else:
                self._call(
                    pid,
                    "stat",
                    f"{path}, {{st_mode=S_IFREG|0644, st_size=1191424, ...}}",
                    "0",
                    None,
                    7,
                )
        elif r < 0.87:
            self._call(
                pid,
                "openat",
                'AT_FDCWD, "/u01/app/oracle/product/19.0.0/dbhome_1/rdbms/mesg/oraus.msb", O_RDONLY|O_CLOEXEC',
                "14",
                None,
                12,
            )
            self._call(pid, "fcntl", "14, F_SETFD, FD_CLOEXEC", "0", None, 2)
            self._call(pid, "close", "14", "0", None, 3)
        elif r < 0.90:
            self._call(pid, "ioctl", f"{fd}, FIONBIO, [1]", "0", None, 2)
        elif r < 0.93:
            wait = rng.randint(10, 2000)
            if allow_block:
                self._blocking(
                    pid, "futex", "0x7f8e1c0009c8, FUTEX_WAIT_PRIVATE, 0, NULL", "", "0", None, wait
                )
            else:
                self._call(
                    pid, "futex", "0x7f8e1c0009c8, FUTEX_WAIT_PRIVATE, 0, NULL", "0", None, wait
                )
        elif r < 0.95:
            self._call(
                pid,
                "mmap",
                "NULL, 1052672, PROT_READ|PROT_WRITE, MAP_PRIVATE|MAP_ANONYMOUS|MAP_NORESERVE, -1, 0",
                "0x7f8e1a2b3000",
                None,
                6,
            )
            self._call(pid, "munmap", "0x7f8e1a2b3000, 1052672", "0", None, 9)
        elif r < 0.97:
            self._call(pid, "rt_sigprocmask", "SIG_BLOCK, [ALRM], [], 8", "0", None, 2)
        elif r < 0.995:
            self._call(pid, "getppid", "", str(self.listener), None, 1)
        else:
            self._line(pid, "--- SIGALRM {si_signo=SIGALRM, si_code=SI_KERNEL} ---")
            self.t.signals += 1
            self.t.pids.add(pid)
            self._call(pid, "rt_sigreturn", "{mask=[]}", "-1", "EINTR", 3)

    def finish(self) -> None:
        for pid in sorted(self.pending):
            self._resume(pid)


_LINUX_ERRMSG = {
    "ENOENT": "No such file or directory",
    "EAGAIN": "Resource temporarily unavailable",
    "EINTR": "Interrupted system call",
}


# ---- public ---------------------------------------------------------------------------------


def default_mode(kind: Kind) -> str:
    return "dDE" if kind == "truss" else "ttT"


def generate(
    kind: Kind,
    target_bytes: int,
    path: Path,
    *,
    seed: int = SEED,
    mode: str | None = None,
    progress: Callable[[int], None] | None = None,
) -> Expected:
    """Write a capture of at least `target_bytes` to `path`; return what it holds."""
    mode = mode or default_mode(kind)
    modes = TRUSS_MODES if kind == "truss" else STRACE_MODES
    if mode not in modes:
        raise ValueError(f"{kind} mode must be one of {', '.join(modes)}, not {mode!r}")
    rng = random.Random(f"{kind}:{mode}:{seed}")
    tally = _Tally()
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="ascii", newline="\n") as fh:
        out = CaptureWriter(fh, target_bytes)
        gen = (_TrussGen if kind == "truss" else _StraceGen)(mode, rng, out, tally)
        gen.header()
        reported = 0
        while not out.full:
            gen.step()
            if progress is not None and out.size - reported >= 8 * MB:
                progress(out.size - reported)
                reported = out.size
        gen.finish()
        out.flush()
    return Expected(
        kind=kind,
        mode=mode,
        seed=seed,
        target_bytes=target_bytes,
        bytes=out.size,
        lines=out.lines,
        calls=tally.calls,
        errors=tally.errors,
        signals=tally.signals,
        processes=len(tally.pids),
        continuation_lines=tally.cont,
        unfinished=tally.unfinished,
        syscalls=dict(sorted(tally.syscalls.items())),
        errnos=dict(sorted(tally.errnos.items())),
    )


def ensure(
    kind: Kind, size_label: str, *, data_dir: Path = DATA_DIR, seed: int = SEED
) -> tuple[Path, Expected]:
    """The capture for (kind, size) under data_dir, generated once and reused
    (benchmarks/capture_cache.py)."""
    target = SIZES[size_label]
    path = data_dir / f"{kind}-{size_label}.txt"
    return cached(
        path,
        Expected,
        lambda: generate(kind, target, path, seed=seed),
        gen_version=GEN_VERSION,
        seed=seed,
        target_bytes=target,
    )


# ---- strace -c / -C summary tables ------------------------------------------------------------

SUMMARY_VERSION = 1
# what `strace -c -f -p PID` of a shadow process reports: the calls a session spends time in
_SUMMARY_CALLS = (
    "pread64", "read", "write", "semtimedop", "epoll_wait", "poll", "getrusage", "times",
    "lseek", "io_submit", "io_getevents", "mmap", "munmap", "futex", "recvfrom", "sendto",
    "clock_gettime", "gettimeofday", "openat", "close", "fstat", "stat", "ioctl", "fcntl",
    "rt_sigprocmask", "rt_sigaction", "setitimer", "getpid", "brk", "shmdt", "semctl",
    "nanosleep", "sched_yield", "pwrite64", "fsync", "fdatasync", "access", "kill",
)  # fmt: skip


# a row of the table: the grep -cE reference
SUMMARY_GREP_RE = r"^ *[0-9]+[.,][0-9]+ +[0-9]+[.,][0-9]+ +[0-9 ]+[A-Za-z_][A-Za-z0-9_]*$"
SUMMARY_RULER = "------ ----------- ----------- --------- --------- ----------------"


class ExpectedSummary(BaseModel):
    """What a generated run of strace -c tables holds: the perfkb facts it must give are the
    last row printed for each syscall (strace -c prints one table per detach) and the last
    total row."""

    seed: int
    gen_version: int = SUMMARY_VERSION
    target_bytes: int
    bytes: int = 0
    lines: int = 0
    tables: int = 0
    rows: int = 0
    calls: int = 0  # the last total row's calls
    errors: int = 0
    syscalls: dict[str, int] = {}  # calls of the last row of each syscall


def generate_summary(target_bytes: int, path: Path, *, seed: int = SEED) -> ExpectedSummary:
    """`strace -c -p PID` run again and again against shadow processes (a monitoring loop's
    log): per run the attach and detach lines, the table (strace 4.x-6.x layout: `% time
    seconds usecs/call calls errors syscall`, the errors cell blank when there were none, as
    strace prints it), its rulers and the total row, then a blank line. The numbers are made
    up, in the shape of strace's own output."""
    rng = random.Random(f"strace-c:{seed}")
    exp = ExpectedSummary(seed=seed, target_bytes=target_bytes)
    ruler = SUMMARY_RULER
    last: dict[str, int] = {}
    with path.open("w", encoding="ascii", newline="\n") as fh:
        out = CaptureWriter(fh, target_bytes)
        while not out.full:
            pid = 20000 + rng.randrange(20000)
            out.add(f"strace: Process {pid} attached")
            out.add(f"^Cstrace: Process {pid} detached")
            out.add("% time     seconds  usecs/call     calls    errors syscall")
            out.add(ruler)
            names = rng.sample(_SUMMARY_CALLS, rng.randrange(8, len(_SUMMARY_CALLS)))
            cells = []
            for name in names:
                calls = rng.randrange(1, 200_000)
                usecs = rng.randrange(0, 5000)
                errors = rng.randrange(1, calls + 1) if rng.random() < 0.15 else 0
                cells.append((calls * usecs, name, calls, usecs, errors))
            total_us = sum(c[0] for c in cells) or 1
            cells.sort(key=lambda c: -c[0])
            tc = te = 0
            for us, name, calls, usecs, errors in cells:
                err = str(errors) if errors else ""
                out.add(
                    f"{100.0 * us / total_us:6.2f} {us / 1e6:11.6f} {usecs:11d} {calls:9d} "
                    f"{err:>9} {name}"
                )
                last[name] = calls
                tc, te = tc + calls, te + errors
                exp.rows += 1
            out.add(ruler)
            out.add(f"100.00 {total_us / 1e6:11.6f} {'':11} {tc:9d} {te or '':>9} total")
            out.add("")
            exp.tables += 1
            exp.calls, exp.errors = tc, te
        out.flush()
    exp.bytes, exp.lines = out.size, out.lines
    exp.syscalls = dict(sorted(last.items()))
    return exp


def ensure_summary(
    size_label: str, *, data_dir: Path = DATA_DIR, seed: int = SEED
) -> tuple[Path, ExpectedSummary]:
    """The strace -c capture for size under data_dir, generated once and reused (as ensure)."""
    target = SIZES[size_label]
    path = data_dir / f"strace-c-{size_label}.txt"
    return cached(
        path,
        ExpectedSummary,
        lambda: generate_summary(target, path, seed=seed),
        gen_version=SUMMARY_VERSION,
        seed=seed,
        target_bytes=target,
    )


if __name__ == "__main__":  # python -m benchmarks.gen_traces KIND SIZE
    import sys

    if len(sys.argv) != 3 or sys.argv[1] not in ("truss", "strace") or sys.argv[2] not in SIZES:
        sys.exit(f"usage: python -m benchmarks.gen_traces truss|strace {'|'.join(SIZES)}")
    p, e = ensure(sys.argv[1], sys.argv[2])  # type: ignore[arg-type]
    print(f"{p}: {e.bytes:,} bytes, {e.lines:,} lines, {e.calls:,} calls")
