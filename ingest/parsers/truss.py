"""Solaris truss output -> syscall facts (shared with strace through syscalls.py).

Handles `pid:` / `pid/lwp:` / `/lwp:` prefixes, 0-3 leading time columns (-d absolute, -D delta,
-E in-call, always printed in that order), `= value [value2]`, `Err#N ENAME`, calls without a
return (`_exit(0)`, `execve(...) argc = 2`), `(returning as child ...)`, `(sleeping...)`, signal
and fault lines, -v continuation lines, `[...]` elisions and annotations, the `# truss ...`
command line, `Base time stamp:` and `-c` summaries.

Which columns a line's numbers are comes from the command line when it is in the paste; otherwise
the first BUFFERED lines decide: three numbers are -d -D -E; a column that never goes backwards
within an LWP is -d; a second column equal to the -d difference is -D, else -E. A lone column
that goes backwards reads as -D (a bare -E capture then gives the same call times, but its values
also count as deltas and gaps).

A fork child's `(returning as child ...)` line is the child half of its parent's fork: it starts
the child's clock and is listed in details["children"] but is not counted as a second call.
"""

from __future__ import annotations

import re

from ingest.base import MAX_LINE
from ingest.model import Platform
from ingest.parsers.syscalls import (
    AIX_ONLY_CALLS,
    TARGET_CALLS,
    SummaryRow,
    SyscallParser,
    Timing,
    bump,
    decimal,
    dialect,
)

# Possessive quantifiers (*+, ++) stop needless backtracking: this regex runs on every line.
# AIX truss prints `pid: tid:`; its thread id is read as the LWP (the lookahead keeps a -d time
# column, which has a ".", out of it)
_PFX = (
    r"(?:(\d{1,10}+)(?:(?:/|:[ \t]++(?=\d{1,10}+:\s))(\d{1,10}+)(?:@\d{1,10}+)?)?:"
    r"|/(\d{1,10}+)(?:@\d{1,10}+)?:)(?=\s)"
)
_T = r"(\d{1,12}+\.\d{1,5}+)"
_TIMES = r"(?:" + _T + r"\s++)?(?:" + _T + r"\s++)?(?:" + _T + r"\s++)?"

# pid, lwp, lwp2, t1, t2, t3, name, args, ret, errno, ename (after any leading whitespace)
_CALL_BODY = (
    r"(?:" + _PFX + r")?\s*+" + _TIMES + r"([A-Za-z_]\w*+)\((.*)\)\s*+"
    r"(?:=\s*+(-?\w++)(?:\s++\[[^\]]*+\])?"
    r"|Err#(\d{1,5}+)(?:\s++([A-Z][A-Z0-9_]*+))?(?:\s++\[[^\]]*+\])?"
    r"|argc\s*+=\s*+\d++)?\s*+$"
)
_CALL = re.compile(r"\s*+" + _CALL_BODY).match
# pid, lwp, lwp2, t1, t2, t3, rest
_LEAD = re.compile(r"^\s*(?:" + _PFX + r")?\s*" + _TIMES + r"(.*)$").match
_CALLISH = re.compile(r"[A-Za-z_]\w*\(").match
# `pid:` + text that is neither a time, a call nor a signal line: a -v continuation line
_PREFIXED_TEXT_BODY = (
    r"(?:\d{1,10}+(?:(?:/|:[ \t]++(?=\d{1,10}+:\s))\d{1,10}+(?:@\d{1,10}+)?)?"
    r"|/\d{1,10}+(?:@\d{1,10}+)?):\s++"
    r"(?!\d|\s|[A-Za-z_]\w*+\(|Received|Stopped|Stepped|Incurred)(.+)$"
)

# The one reader (_read) over one line or many at once: _CALL_BODY, then _PREFIXED_TEXT_BODY,
# as one regex anchored at a line start, with \s that cannot cross a newline ([^\S\n]) and
# character classes that exclude it, so on a line alone each alternative matches what it would
# by itself; trailing CRs fall into the final whitespace or the text group.
_W = r"[^\S\n]"
_RUN = re.compile(
    (r"^\s*+(?:" + _CALL_BODY + "|" + _PREFIXED_TEXT_BODY + ")")
    .replace(r"\s", _W)
    .replace(r"[^\]]", r"[^\]\n]"),
    re.M,
).match
# A pid/lwp prefix and whitespace: TrussParser.claims (no other format prints it)
_OWN = re.compile(r"\s*+(?:" + _PFX + ")").match
_SIGNAL = re.compile(
    r"(Received signal|Stopped by signal|Stepped|Incurred fault)\s*#?(\d+)?,?\s*(\w+)?"
).match
# Called on line[:256]: the optional prompt backtracks quadratically on a long run of #$%>
_CMD = re.compile(r"^\s*(?:\S*[#$%>]\s*)?(?:sudo\s+)?(?:\S*/)?truss(?:\s+(.*))?$").match
_SHELL = re.compile(
    r"^\s*\S*[#$%>]\s*(?:sudo\s+)?(?:e?grep|fgrep|tail|head|cat|less|more|sed|awk|sort|cut)\b"
).match
_ELISION = re.compile(r"^(?:\[.*\]|\.{3,}|…)$").match
_STRACE_SHAPE = re.compile(
    r"<unfinished \.\.\.>|<\.\.\. \w+ resumed>|^\s*\[pid\s|\)\s+=\s+(?:-1\s+E[A-Z]|\?)"
    r"|<\d+(?:\.\d+)?>\s*$|^\s*(?:---|\+\+\+)\s|^\s*strace:|^\s*\d+\.\d{6}\s"
    r"|^\s*\d{2}:\d{2}:\d{2}"
).search
_SUM_HEAD = re.compile(r"^\s*syscall\s+seconds\s+calls\s+errors\s*$").match
_SUM_ROW = re.compile(
    r"^\s*([A-Za-z_]\w*)\s+(\d{0,12}[.,]\d{1,9})\s+(\d{1,15})(?:\s+(\d{1,15}))?\s*$"
).match
_SUM_TOTAL = re.compile(
    r"^\s*sys totals:\s+(\d{0,12}[.,]\d{1,9})\s+(\d{1,15})(?:\s+(\d{1,15}))?\s*$"
).match
_SUM_EXTRA = re.compile(r"^\s*(usr time|elapsed|sys time):\s+(\d{0,12}[.,]\d{1,9})\s*$").match
_SEPARATOR = re.compile(r"^\s*-{3,}(?:\s+-{3,})*\s*$").match
_SIG_HEAD = re.compile(r"^\s*signals\s+-{3,}\s*$").match
_SIG_ROW = re.compile(r"^\s*(SIG[A-Z0-9]+)\s+(\d{1,15})\s*$").match
_SIG_TOTAL = re.compile(r"^\s*total:\s+\d{1,15}\s*$").match
_MISC = re.compile(r"^\s*(?:Base time stamp:|\*\*\*.*\*\*\*|truss:\s)").match

_ARG_OPTS = set("tTvxsSmMrwuUo")  # truss options that take an argument
BUFFERED = 48  # events looked at before deciding what the time columns are

# event kinds in the decision buffer
_CALL_EV, _CHILD_EV, _SIG_EV, _CONT_EV, _ELIDE_EV = range(5)


def _given(t1: str | None, t2: str | None, t3: str | None) -> tuple[str, ...]:
    """The time columns a line printed (they fill from the left)."""
    return (t1, t2, t3)[: 3 if t3 else 2 if t2 else 1 if t1 else 0]


def _flag_columns(args: str) -> tuple[str, ...] | None:
    """Time columns (subset of d, D, E in print order) named by a truss command line."""
    flags: set[str] = set()
    expect_arg = False
    for tok in args.split():
        if expect_arg:
            expect_arg = False
            continue
        if not tok.startswith("-") or tok == "-":
            break
        for i, c in enumerate(tok[1:]):
            if c in _ARG_OPTS:
                expect_arg = i == len(tok) - 2
                break
            flags.add(c)
    cols = tuple(c for c in "dDE" if c in flags)
    return cols if flags else None


Seq = list[tuple[tuple, tuple[float, ...]]]  # (pid, lwp) and the numbers of one line


def _monotonic(seq: Seq) -> bool:
    """Does the 1st column never go backwards within an LWP (i.e. is it -d)?"""
    last: dict[tuple, float] = {}
    for key, nums in seq:
        prev = last.get(key)
        if prev is not None and nums[0] + 1e-9 < prev:
            return False
        last[key] = nums[0]
    return True


def _delta_like(seq: Seq) -> bool:
    """Does the 2nd column equal the per-LWP difference of the 1st (i.e. is it -D)?"""
    last: dict[tuple, float] = {}
    hits = misses = 0
    for key, nums in seq:
        prev = last.get(key)
        expected = nums[0] - prev if prev is not None else nums[0]
        if abs(nums[1] - expected) <= 0.00015:
            hits += 1
        else:
            misses += 1
        last[key] = nums[0]
    return hits > 0 and hits >= misses


class TrussParser(SyscallParser):
    format = "truss"
    platforms = ("solaris", "aix")  # where truss runs: the detector's tie-break with strace

    @classmethod
    def start_score(cls, line: str) -> int:
        m = _CALL(line)
        if m is not None:
            pid, lwp, lwp2, t1 = m.group(1, 2, 3, 4)
            ret, errno = m.group(9, 10)
            if ret is None and errno is None:
                args = m.group(8)
                if ") = " in args or ") Err#" in args:
                    return 0
                return 2 if (pid or lwp2) else 0  # `_exit(0)` alone says little
            if errno is not None or pid or lwp2:
                return 2
            if t1 is not None:
                return 2  # truss -d/-D/-E prints 4 decimals; strace prints 6
            # a bare call line: truss's own shapes say truss, strace's say not truss
            said = dialect(line)
            return 1 if said is None else 0 if said == "strace" else 2
        if "Err#" in line and _CALLISH(line.lstrip()) and not _STRACE_SHAPE(line):
            return 2
        cmd = _CMD(line[:256])
        if cmd is not None and (cmd.group(1) or "").startswith("-"):
            return 2
        if _SUM_HEAD(line) or _SIG_HEAD(line):  # truss -c prints its signals table first
            return 2
        return 0

    @classmethod
    def claims(cls, line: str) -> bool:
        return _OWN(line) is not None

    def __init__(self) -> None:
        super().__init__()
        self._flag_cols: tuple[str, ...] | None = None
        self._buf: list[tuple] | None = []  # events until the time columns are decided
        self._cols: dict[int, tuple[int, int, int]] = {}  # n numbers -> index of d, D, E
        self._timing: Timing = "none"
        self._seen_call = False
        self._summary = False
        self._sig_section = False
        self._timed_events = 0
        # What the lines said about the platform: a pid/lwp prefix, a time column, Err# or a
        # Solaris-only call say Solaris; AIX's calls (kread, thread_tsleep) say AIX; bare lines
        # strace prints alike say nothing, and then the platform is None ("unsure").
        self._solaris = False

    # -- feeding ----------------------------------------------------------------------------

    def feed(self, line: str) -> bool:
        end = self._read(line, 0, len(line), 1, True)
        return end > 0 or (end == 0 and self._feed_other(line))

    fast = True

    def feed_run(self, text: str, pos: int, endpos: int, plain: dict) -> tuple[int, int]:
        """Base.feed_run: call lines with a pid, a time column or an Err# (lines this parser
        scores 2) and any line with a pid/lwp prefix (lines it claims), once the time columns are
        decided; anything else stops the run.

        With the C aggregator its scanner (truss_run) takes the common lines and hands each
        other line to _read, the reader feed also uses, whose regexes define what a line is."""
        if self._buf is not None:
            return pos, 0
        n0 = self._n
        scan = getattr(self.agg, "truss_run", None)
        if scan is None:
            end = self._read(text, pos, endpos, -1)
        else:
            cols = (self._cols_for(1), self._cols_for(2), self._cols_for(3))

            def step(at: int) -> tuple[int, int]:
                at, self._n, calls, status = scan(text, at, endpos, self._n, cols)
                if calls:
                    self._seen_call = True
                if self.agg.routed:
                    self._drain()
                return at, status

            end = self._scan(step, text, pos, endpos)
        if self._n != n0:
            self._solaris = True  # the run takes only prefixed, timed or Err# lines
        return end, self._n - n0

    def _routed_call(self, line: str) -> tuple | None:
        m = _CALL(line)
        if m is None:
            return None
        pid, _lwp, _lwp2, t1, t2, t3, name, args, ret, errno, ename = m.groups()
        err = (ename or "Err#" + errno) if errno is not None else None
        dur = self._times(t1, t2, t3)[2] if t1 is not None else None
        return int(pid) if pid else None, name, args, ret, err, dur

    def _read(self, text: str, pos: int, endpos: int, limit: int, single: bool = False) -> int:
        """The one reader of truss's call lines and `pid:` -v continuation lines, for at most
        `limit` lines (-1: no limit) of `text` from `pos`; returns where it stopped.

        feed is its one-line case (`single`): there any call line is taken (a bare one judged by
        its dialect: -1 says it is strace's, not this block's) and buffered while the time
        columns are undecided. In a run (feed_run, once they are decided, and the lines the C
        scanner hands back) only call lines this parser scores 2 are taken here; another line
        it claims goes to feed, as the detector would send it, and anything else stops the run."""
        run = _RUN
        agg = self.agg
        call = agg.call
        continuation = agg.continuation
        buffering = self._buf is not None  # only ever in a single line: feed_run waits
        dDE = self._cols.get(3) == (0, 1, 2)  # three columns read as -d -D -E (the usual case)
        n = self._n
        calls = False
        while limit:
            limit -= 1
            m = run(text, pos, endpos)
            if m is not None:
                end = m.end()
                if end - pos > MAX_LINE and not single:
                    break  # the detector cuts it: feed sees its first MAX_LINE characters
                pid, lwp, lwp2, t1, t2, t3, name, args, ret, errno, ename, cont = m.groups()
                if cont is not None:  # always a prefixed line
                    n += 1
                    if buffering:
                        self._buffer((_CONT_EV, cont))
                    else:
                        continuation(cont)
                    pos = end + 1
                    continue
                if single:
                    if not self._solaris:
                        if pid or lwp2 or t1 or errno is not None:
                            self._solaris = True
                        else:
                            said = dialect(text)
                            if said == "strace":
                                return -1  # strace's shape: not this block's
                            if said is not None:
                                self._solaris = True
                    # a call without a value whose text holds one: _feed_other's
                    ok = not (
                        ret is None
                        and errno is None
                        and "(sleeping" not in args
                        and (") = " in args or ") Err#" in args)
                    )
                elif ret is not None or errno is not None:
                    ok = pid or lwp2 or t1 or errno is not None  # else a bare call line: score 1
                else:  # _exit(0), an exec's argc, (sleeping...): taken when prefixed
                    ok = (pid or lwp2) and ") = " not in args and ") Err#" not in args
                if ok:
                    n += 1
                    calls = True
                    if "(sleeping" in args and ret is None and errno is None:
                        self.targets.sleeping(int(pid) if pid else None, lwp or lwp2, name, args)
                        pos = end + 1  # the call is reported again when it returns
                        continue
                    p = int(pid) if pid else None
                    if "(returning as" in args:
                        self._n = n
                        self._event((_CHILD_EV, p, _given(t1, t2, t3), ret, n, (p, lwp or lwp2)))
                        pos = end + 1
                        continue
                    err = (ename or "Err#" + errno) if errno is not None else None
                    if buffering:
                        nums = _given(t1, t2, t3)
                        self._n = n
                        self._buffer((_CALL_EV, p, nums, name, args, ret, err, n, (p, lwp or lwp2)))
                        pos = end + 1
                        continue
                    if t3 is not None and dDE:
                        ts = float(t1)
                        D = float(t2) * 1000.0
                        dur = float(t3) * 1000.0
                    elif t1 is not None:
                        ts, D, dur = self._times(t1, t2, t3)
                    else:
                        ts = D = dur = None
                    call(p, name, dur, D, ts, D, err, args, n, ret)
                    if name in TARGET_CALLS or err is not None:
                        self.targets.call(p, name, args, ret, err, dur, n)
                    pos = end + 1
                    continue
            if single:
                break  # feed hands it to _feed_other
            # any other line: taken through feed() if it is one this parser claims
            eol = text.find("\n", pos, endpos)
            eol = endpos if eol < 0 else eol
            if eol - pos > MAX_LINE:
                break
            line = text[pos:eol].rstrip("\r")
            if _OWN(line) is None:
                break  # the detector asks the other formats
            self._n = n
            if not self.feed(line):
                break
            n = self._n
            pos = eol + 1
        self._n = n
        if calls:
            self._seen_call = True
        return pos

    def _feed_other(self, line: str) -> bool:
        s = line.strip()
        if not s:  # kept, so a blank inside a capture does not split it
            self._n += 1
            return True
        if _ELISION(s) and not s.startswith("[pid"):
            self._n += 1
            self._event((_ELIDE_EV,))
            return True
        cmd = _CMD(line[:256])
        if cmd is not None and (cmd.group(1) or "-").startswith("-"):
            cols = _flag_columns(cmd.group(1) or "")
            if cols is not None and not self._seen_call:
                self._flag_cols = cols
            self._n += 1
            self._solaris = True
            return True
        if _SHELL(line) or _MISC(line) or _SEPARATOR(line):
            self._n += 1
            return True
        if self._summary_line(line):
            self._n += 1
            self._solaris = True
            return True
        m = _LEAD(line)
        if m is None:  # cannot happen: every group is optional
            return False
        pid, lwp, lwp2, t1, t2, t3, rest = m.groups()
        prefixed = bool(pid or lwp2)
        rest = rest.strip()
        sig = _SIGNAL(rest)
        if sig is not None and (prefixed or t1 or line[:1].isspace()):
            self._n += 1
            self._solaris = True
            nums = _given(t1, t2, t3)
            self._seen_call = True
            kind, number, name = sig.groups()
            p = int(pid) if pid else None
            name = name or ("#" + number if number else "signal")
            if kind == "Incurred fault":  # the signal it raises follows on its own line
                self.agg.fault(name)
                return True
            self._event((_SIG_EV, p, nums, name, self._n, (p, lwp or lwp2)))
            return True
        if not prefixed and _STRACE_SHAPE(line):
            return False
        if prefixed or (self._seen_call and line[:1].isspace()):
            self._n += 1
            if not rest:
                return True
            if _CALLISH(rest) or t1:
                self.malformed += 1  # a call cut short, or times without a call
            else:
                self._event((_CONT_EV, rest))
            return True
        if self._seen_call and _CALLISH(s):
            self._n += 1
            self.malformed += 1
            return True
        return False

    def _summary_line(self, line: str) -> bool:
        agg = self.agg
        if _SUM_HEAD(line):
            self._summary = True
            self._sig_section = False
            return True
        if _SIG_HEAD(line):
            self._sig_section = True
            return True
        if self._sig_section:
            m = _SIG_ROW(line)
            if m is not None:
                bump(agg.signals, m.group(1), int(m.group(2)))
                return True
            if _SIG_TOTAL(line):
                return True
        if not self._summary:
            return False
        m = _SUM_ROW(line)
        total = m is None
        if total:
            m = _SUM_TOTAL(line)
        if m is not None:  # name (a row's only), seconds, calls, errors
            name, seconds, calls, errors = ("total", *m.groups()) if total else m.groups()
            row = SummaryRow(
                syscall=name, seconds=decimal(seconds), calls=int(calls), errors=int(errors or 0)
            )
            agg.add_summary(row, total=total)
            return True
        m = _SUM_EXTRA(line)
        if m is not None:
            key = m.group(1).replace(" ", "_") + "_s"
            agg.summary_extra[key] = decimal(m.group(2))
            return True
        return False

    # -- time columns -----------------------------------------------------------------------

    def _event(self, ev: tuple) -> None:
        if self._buf is None:
            self._apply(ev)
        else:
            self._buffer(ev)

    def _buffer(self, ev: tuple) -> None:
        self._buf.append(ev)
        if ev[0] in (_CALL_EV, _CHILD_EV, _SIG_EV) and ev[2]:
            self._timed_events += 1
        if self._timed_events >= BUFFERED or len(self._buf) >= 4 * BUFFERED:
            self._decide()

    def _decide(self) -> None:
        """Name the time columns from the buffered lines, then replay them."""
        buf, self._buf = self._buf or [], None
        by_n: dict[int, Seq] = {}
        calls_by_n: dict[int, int] = {}
        for ev in buf:
            if ev[0] in (_CALL_EV, _CHILD_EV, _SIG_EV) and ev[2]:
                n = len(ev[2])
                by_n.setdefault(n, []).append((ev[-1], tuple(float(x) for x in ev[2])))
                if ev[0] == _CALL_EV:
                    calls_by_n[n] = calls_by_n.get(n, 0) + 1
        for n, seq in by_n.items():
            self._cols[n] = self._index(self._guess(n, seq))
        main = max(calls_by_n, key=lambda n: calls_by_n[n], default=0)
        di, Di, Ei = self._cols_for(main)
        self._timing = "E" if Ei >= 0 else "D" if Di >= 0 else "d" if di >= 0 else "none"
        self.agg.gap_timing = self._timing == "d"
        for ev in buf:
            self._apply(ev)

    def _guess(self, n: int, seq: Seq) -> tuple[str, ...]:
        if self._flag_cols is not None and len(self._flag_cols) == n:
            return self._flag_cols
        if n >= 3:
            return ("d", "D", "E")
        if n == 1:
            return ("d",) if _monotonic(seq) else ("D",)
        if not _monotonic(seq):
            return ("D", "E")
        return ("d", "D") if _delta_like(seq) else ("d", "E")

    @staticmethod
    def _index(cols: tuple[str, ...]) -> tuple[int, int, int]:
        return tuple(cols.index(c) if c in cols else -1 for c in "dDE")  # type: ignore[return-value]

    def _times(self, t1: str, t2: str | None, t3: str | None) -> tuple:
        """(timestamp, -D delta ms, duration ms) from a call line's leading number columns,
        read as the flags the capture was taken with (see _cols_for)."""
        ts = D = dur = None
        n = 3 if t3 else 2 if t2 else 1
        di, Di, Ei = self._cols.get(n) or self._cols_for(n)
        nums = (t1, t2, t3)
        if di >= 0:
            ts = float(nums[di])
        if Di >= 0:
            dur = D = float(nums[Di]) * 1000.0
        if Ei >= 0:
            dur = float(nums[Ei]) * 1000.0
        return ts, D, dur

    def _cols_for(self, n: int) -> tuple[int, int, int]:
        idx = self._cols.get(n)
        if idx is None:
            if self._flag_cols is not None and len(self._flag_cols) == n:
                cols = self._flag_cols
            else:
                cols = (("d", "D", "E"), ("d",), ("d", "D"), ("d", "D", "E"))[min(n, 3)]
                cols = cols[:n]
            idx = self._cols[n] = self._index(cols)
        return idx

    def _apply(self, ev: tuple) -> None:
        kind = ev[0]
        agg = self.agg
        if kind == _CALL_EV:
            _, pid, nums, name, args, ret, err, n, _ = ev
            ts = D = dur = None
            if nums:
                di, Di, Ei = self._cols_for(len(nums))
                if di >= 0:
                    ts = float(nums[di])
                if Di >= 0:
                    D = float(nums[Di]) * 1000.0
                    dur = D
                if Ei >= 0:
                    dur = float(nums[Ei]) * 1000.0
            agg.call(pid, name, dur, D, ts, D, err, args, n, ret)
            if name in TARGET_CALLS or err is not None:
                self.targets.call(pid, name, args, ret, err, dur, n)
        elif kind == _CONT_EV:
            agg.continuation(ev[1])
        elif kind == _ELIDE_EV:
            agg.elide()
        else:
            _, pid, nums, what, n, _ = ev
            ts = D = None
            if nums:
                di, Di, _ = self._cols_for(len(nums))
                ts = float(nums[di]) if di >= 0 else None
                D = float(nums[Di]) * 1000.0 if Di >= 0 else None
            if kind == _SIG_EV:
                agg.signal(pid, what, ts, D, n)
            else:
                agg.child(pid, what, n, ts)

    # -- results ----------------------------------------------------------------------------

    def facts(self) -> tuple[dict, dict, list[str], Platform | None]:
        if self._buf is not None:
            self._decide()
        facts, details, identifiers = self.agg.result(self._timing)
        self._what_it_waited_on(facts, details)
        # AIX's own calls (kread, thread_tsleep) say AIX: read from what was counted, so the
        # lines the C scanner took say it too
        aix = not AIX_ONLY_CALLS.isdisjoint(facts.get("syscall.count", ()))
        platform: Platform | None = "aix" if aix else "solaris" if self._solaris else None
        return facts, details, identifiers, platform
