"""Linux strace output -> syscall facts (shared with truss through syscalls.py).

Handles `[pid N]` and bare `N ` prefixes (lines without one belong to the traced process, named
by the first `strace: Process N attached` or `-p N`), -t / -tt / -ttt / -r timestamps (3, 6 or 9
decimals), -T `<secs>` durations, `<unfinished ...>` / `<... name resumed>` pairs stitched per
pid (`<detached ...>` calls are counted untimed), `--- SIGxxx {...} ---`, `+++ exited with N +++` / `+++ killed by SIGxxx +++`, `strace:`
lines, `= ? <unavailable>`, errors `= -1 ENOENT (...)`, and the -c / -C summary table with a
decimal point or a decimal comma.

Timing: -T when present ("T"); otherwise timestamps give each call the gap to the next line of
its pid ("d"; an unfinished call gets exactly resumed minus unfinished). -r values are accumulated
into a clock for that, and each call's own -r value is also summed into syscall.delta_ms.
"""

from __future__ import annotations

import re

from ingest.base import MAX_LINE
from ingest.model import Platform
from ingest.parsers.syscalls import (
    MAX_PIDS,
    TARGET_CALLS,
    SummaryRow,
    SyscallParser,
    Timing,
    decimal,
    dialect,
)

_FRAC = r"(?:\d{3}|\d{6}|\d{9})"
# pid, pid (bare), clock (-t/-tt), float (-ttt epoch or -r delta)
_PFX = (
    r"^\s*+(?:\[pid\s++(\d{1,10}+)\]\s*+|(\d{1,10}+)\s++)?"
    r"(\d{1,2}:\d\d:\d\d(?:\." + _FRAC + r")?(?=\s))?\s*+"
    r"(?:(\d{1,12}\." + _FRAC + r")\s++)?"
)
# ret (with an optional -y path), the rest: errno name and text, -T duration
_RET = r"(-?\d{1,20}+|0x[0-9a-fA-F]{1,16}+|\?)(?:<[^>]*+>)?(?=\s|$)(.*)$"
# What follows the prefix: name, args, ret, rest; name, args; name, rest
_CALL_BODY = r"([A-Za-z_]\w*+)\((.*)\) += +" + _RET
_UNFINISHED_BODY = r"([A-Za-z_]\w*+)\((.*?)\s*<(?:unfinished|detached) \.\.\.>\s*$"
_RESUMED_BODY = r"<\.\.\.\s+([A-Za-z_]\w*)\s+resumed>\s?(.*)$"
_CALL = re.compile(_PFX + _CALL_BODY).match
_UNFINISHED = re.compile(_PFX + _UNFINISHED_BODY).match
_RESUMED = re.compile(_PFX + _RESUMED_BODY).match
_TAIL = re.compile(r"(.*)\)\s+=\s+" + _RET).match
_SIGNAL = re.compile(_PFX + r"---\s+(?:stopped by\s+)?(SIG[A-Z0-9+]*|\w+)").match
_EXIT = re.compile(_PFX + r"\+\+\+\s+(?:exited with (-?\d{1,5})|killed by (SIG[A-Z0-9]+)).*$").match
_LEAD = re.compile(_PFX + r"(.*)$").match
# `^C` is how a terminal shows the Ctrl-C that stopped strace
_ATTACH = re.compile(r"^\s*(?:\^C)?strace:\s+Process\s+(\d{1,10})\s+(attached|detached)").match
_STRACE_MSG = re.compile(r"^\s*(?:\^C)?strace:\s").match
# Called on line[:256]: the optional prompt backtracks quadratically on a long run of #$%>
_CMD = re.compile(
    r"^\s*(?:\S*[#$%>]\s*)?(?:sudo\s+)?(?:[A-Z_][A-Z0-9_]*=\S*\s+)*(?:\S*/)?strace\s+(-.*)$"
).match
_PID_OPT = re.compile(r"(?:^|\s)-p\s*(\d{1,10})\b").search
_ERRNAME = re.compile(r"\s*(E[A-Z0-9]{2,})\b").match
_CALLISH = re.compile(r"[A-Za-z_]\w*\(").match
# The traced program's own output on the terminal strace writes to splits its write(1, ...) /
# write(2, ...) line: `write(1, "ok\n"..., 3ok` then the output, then `) = 3`.
_CUT_WRITE = re.compile(r"^(write|writev|pwrite64|pwrite|sendto)\(([12],.*)$").match
_ECHO_END = re.compile(r"^\)\s+=\s+" + _RET).match
MAX_ECHO = 64  # output lines taken while such a write is open
_ELISION = re.compile(r"^(?:\[\s*\.{3}\s*\]|\.{3,}|…)$").match
_SUM_HEAD = re.compile(
    r"^\s*%\s*time\s+(seconds)\s+(usecs/call)\s+(calls)\s+(errors)\s+syscall\s*$"
).match
_SEPARATOR = re.compile(r"^\s*-{3,}(?:\s+-{3,})+\s*$").match
_NUMBER = re.compile(r"^\d{1,15}(?:[.,]\d{1,9})?$").match
_TOKEN = re.compile(r"\S+").finditer
_NAME = re.compile(r"[A-Za-z_]\w*").fullmatch
_FIVE = ("pct", "seconds", "usecs", "calls", "errors")
_FOUR = ("pct", "seconds", "usecs", "calls")  # a blank cell the header cannot place
_THREE = ("pct", "seconds", "calls")
_HELD_MAX = 2048  # -c rows held before they are handed over (distinct names: bounded memory)
# How the lines between `strace -c -p` tables start (a blank, the attach and detach messages, the
# next header): no call line and no row or ruler starts so, so feed_run hands them to feed_one
# without asking the call and row readers first
_BETWEEN = ("\n", "strace: Process ", "^Cstrace: Process ", "% time ")
try:  # the C core's reader of -c rows and rulers (ingest/_syscore_src/summary.c); optional
    from ingest._syscore import strace_summary_rows as _c_summary_rows
except ImportError:  # pragma: no cover - the pure-Python path is the reference
    _c_summary_rows = None
# False: _summary_run reads every row in Python (the reference the tests compare the C reader
# with). The C reader takes a strict subset of _SUM_RUN's lines and stores them as _add_row does.
NATIVE = _c_summary_rows is not None
# A -c table's row (3 to 5 numbers: groups 1-5, then the syscall's name: 6) or ruler, one line
# from a line start: what claims says is this block's and _summary_run reads in a run. Blanks are
# ASCII here (the detector hands runs without control characters), so each such line splits into
# the tokens _summary_row reads.
_SUM_NUM = r"(\d{1,15}+(?:[.,]\d{1,9}+)?)[ \t]++"
_SUM_RUN = re.compile(
    r"[ \t]*+(?:" + _SUM_NUM * 3 + f"(?:{_SUM_NUM})?(?:{_SUM_NUM})?"
    r"([A-Za-z_]\w*+)|-{3,}+(?:[ \t]++-{3,}+)++)[ \t\r]*+$",
    re.M,
).match
# The fast path (feed_run) over many lines at once: _CALL, _UNFINISHED and _RESUMED behind one
# _PFX, anchored at a line start, with \s that cannot cross a newline ([^\S\n]) and character
# classes that exclude it. The prefix can only match one way (each optional part starts with a
# digit or "[" and no alternative after it does), so the groups are those of the line regexes.
_W = r"[^\S\n]"
_RUN = re.compile(
    (
        _PFX
        + "(?:"
        + _CALL_BODY.replace("[^>]", r"[^>\n]")
        + "|"
        + _UNFINISHED_BODY
        + "|"
        + _RESUMED_BODY
        + ")"
    ).replace(r"\s", _W),
    re.M,
).match
_TRUSS_SHAPE = re.compile(r"^\s*/?\d+(?:/\d+)?:\s|Err#\d").search
_ERR_NUM = re.compile(r"Err#\d").search  # the part of _TRUSS_SHAPE a _RUN line can show
# What syslog or the journal puts before a line strace wrote to it (`strace -o |logger`, a unit
# run under strace): `Mar 14 09:12:44 [host] [strace[123]:] `, or an ISO-8601 stamp
# (`journalctl -o short-iso`, rsyslog's high-precision format) with the same optional parts.
_LOG_PREFIX = re.compile(
    r"^\s*(?:<\d{1,3}>)?(?:[A-Z][a-z]{2}\s{1,2}\d{1,2}\s\d\d:\d\d:\d\d(?:\.\d{1,9})?"
    r"|\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:[.,]\d{1,9})?(?:Z|[+-]\d\d:?\d\d)?)\s++"
    r"(?:(?!\d)[\w.-]{1,64}\s++)?(?:[\w./@-]{1,64}(?:\[\d{1,10}\])?:\s++)?"
).match


_DURATION = re.compile(r"\d{1,9}(?:\.\d{1,9})?").fullmatch


def _outcome(ret: str, rest: str) -> tuple[str | None, float | None]:
    """(errno name, -T duration in ms) from what follows a call's return value."""
    dur = None
    rest = rest.rstrip()
    if rest[-1:] == ">":
        i = rest.rfind("<")
        value = rest[i + 1 : -1]
        if value[:1].isdigit() and _DURATION(value):
            dur = float(value) * 1000.0
            rest = rest[:i]
    if rest and (ret == "-1" or ret == "?"):
        e = _ERRNAME(rest)
        if e is not None:
            return e.group(1), dur
    return None, dur


class StraceParser(SyscallParser):
    format = "strace"
    platforms = ("linux",)  # where strace runs: the detector's tie-break with truss

    @classmethod
    def start_score(cls, line: str) -> int:
        score = cls._score(line)
        if score == 0 and line[:1] != " ":
            m = _LOG_PREFIX(line)
            if m is not None and m.end() < len(line):
                return cls._score(line[m.end() :])
        return score

    @classmethod
    def _score(cls, line: str) -> int:
        m = _CALL(line)  # cannot match truss: no `pid:` prefix, 4-decimal times or Err#
        if m is not None:
            pid_b, pid, clock, f, _, _, ret, rest = m.groups()
            if pid_b or pid or clock or f:
                return 2
            err, dur = _outcome(ret, rest)
            if dur is not None or err:
                return 2
            # a bare call line: strace's own shapes say strace, truss's say not strace
            said = dialect(line)
            return 2 if said == "strace" else 0 if said is not None else 1
        if "..." in line:
            if _UNFINISHED(line) or _RESUMED(line):
                return 2
        elif "strace" in line:
            if _ATTACH(line) or _CMD(line[:256]):
                return 2
        elif "+++" in line or "---" in line:
            if _SIGNAL(line) or _EXIT(line):
                return 2
        elif "%" in line and _SUM_HEAD(line):
            return 2
        return 0

    def __init__(self) -> None:
        super().__init__()
        self._main_pid: int | None = None
        self._decided = False
        self._any_dur = False
        self._seen_call = False
        self._clock = 0.0  # accumulated -r deltas
        self._epoch: int | None = None  # first -ttt second
        self._hm, self._hm_s = "", 0  # last HH:MM seen and its seconds
        self._day = 0.0  # day offset for -t/-tt clocks that pass midnight
        self._last_clock: float | None = None
        self._unfinished: dict[int | None, tuple] = {}
        self._summary = False
        self._head_line: str | None = None  # the last -c header read (feed_run's _between)
        self._sum_cols: list[tuple[str, int]] = []  # column name, end offset in the header
        self._sum_named: dict[tuple[int, ...], tuple[str, ...]] = {}  # 4-number rows' columns
        self._named_by_head: dict[tuple, dict[tuple[int, ...], tuple[str, ...]]] = {}
        # -c rows not yet handed to the aggregator: syscall -> (columns, numbers) of its last
        self._held_rows: dict[str, tuple[tuple[str, ...], list[str]]] = {}
        self._cut: tuple | None = None  # (pid, name, args, line) of a write the output split
        self._echo = 0  # output lines taken since
        # Has a line said Linux? Only bare call lines that truss prints alike leave it False,
        # and then the block's platform is None ("unsure") rather than a guess.
        self._linux = False

    # -- timestamps -------------------------------------------------------------------------

    def _time(self, clock: str | None, f: str | None) -> tuple[float | None, float | None]:
        """(absolute seconds, -r delta in ms) of a line's prefix."""
        ts = r = None
        if clock is not None:
            hm, _, sec = clock.rpartition(":")
            if hm != self._hm:  # hours and minutes change rarely: parse them once
                h, _, mi = hm.partition(":")
                self._hm, self._hm_s = hm, int(h) * 3600 + int(mi) * 60
            ts = self._hm_s + float(sec)
            last = self._last_clock
            if last is not None and ts + self._day < last - 43200:
                self._day += 86400.0
            ts += self._day
            self._last_clock = ts
            if f is not None:
                r = float(f) * 1000.0
        elif f is not None:
            v = float(f)
            if v >= 1e6:  # -ttt: epoch seconds, kept relative to the first one for precision
                whole, _, frac = f.partition(".")
                if self._epoch is None:
                    self._epoch = int(whole)
                ts = (int(whole) - self._epoch) + float("0." + frac)
            else:
                r = v * 1000.0
                self._clock += v
                ts = self._clock
        return ts, r

    def _prefix(
        self, pid_b: str | None, pid: str | None, clock: str | None, f: str | None
    ) -> tuple[int | None, float | None, float | None]:
        """(pid, absolute seconds, -r delta in ms) of a line's prefix; a line without a pid is
        the traced process's."""
        p = int(pid_b or pid) if (pid_b or pid) else self._main_pid
        ts, r = self._time(clock, f) if (clock or f) else (None, None)
        return p, ts, r

    def _decide(self, dur: float | None, ts: float | None) -> None:
        self._decided = True
        self.agg.gap_timing = dur is None and ts is not None

    # -- feeding ----------------------------------------------------------------------------

    def feed(self, line: str) -> bool:
        if self._feed(line):
            return True
        if line[:1] != " ":  # syslog / journal stamps start at the margin
            m = _LOG_PREFIX(line)
            if m is not None and m.end() < len(line):
                return self._feed(line[m.end() :])
        return False

    def _feed(self, line: str) -> bool:
        end = self._read(line, 0, len(line), 1, True)
        return end > 0 or (end == 0 and self._feed_other(line))

    fast = True

    def feed_run(self, text: str, pos: int, endpos: int, plain: dict) -> tuple[int, int]:
        """Base.feed_run: call lines with a pid or a time (lines this parser scores 2),
        `<unfinished ...>` and `<... resumed>` lines, and once a -c table's header is read its
        rows and rulers (what `claims` says), and between tables any line feed_one vouches
        for; anything else stops the run.

        With the C aggregator its scanner (strace_run) takes the common lines and hands each
        other line to _read, the reader feed also uses, whose regexes define what a line is."""
        n0 = self._n
        while True:
            if self._summary and text.startswith(_BETWEEN, pos):
                # a line between -c tables that neither the call reader nor the row reader
                # takes: straight to feed_one (a call or two less per line, 5 lines a table)
                end = pos
                if end >= endpos:
                    break
                pos = self._between(text, end, endpos)
                if pos < 0:
                    pos = self.feed_one(text, end, endpos, plain)
                    if pos < 0:
                        break
                continue
            end = self._calls(text, pos, endpos)
            if not self._summary or end >= endpos:
                break
            pos = self._summary_run(text, end, endpos)  # a -c table's rows and rulers
            if pos == end:  # a table's header, an attach line, a blank: one through feed
                pos = self.feed_one(text, end, endpos, plain)
                if pos < 0:
                    break
        if self._n != n0:
            self._linux = True  # the run takes only lines with a pid or a time, or -c rows
        return end, self._n - n0

    def _between(self, text: str, pos: int, endpos: int) -> int:
        """For feed_run: an attach or detach message, or a header with the text of the last one
        read, as feed reads it (both score 2, so the detector hands them here); returns where
        the next line starts, or -1 to leave the line to feed_one. A header of the same text
        sets what it set before, so only its line is counted."""
        if self._cut is not None:
            return -1
        nl = text.find("\n", pos, endpos)
        end = endpos if nl < 0 else nl
        if end - pos > MAX_LINE:
            return -1
        line = text[pos:end].rstrip("\r")
        if line == self._head_line:
            self._n += 1
            self._linux = True
            return end + 1
        m = _ATTACH(line)
        if m is None or _TRUSS_SHAPE(line):  # what _feed_other asks before _ATTACH
            return -1
        self._attached(m)
        return end + 1

    def _calls(self, text: str, pos: int, endpos: int) -> int:
        """feed_run's call lines from `pos`; returns where they stop."""
        # the C scanner does not know a write the output split (_cut): the reader closes it
        scan = getattr(self.agg, "strace_run", None) if self._cut is None else None
        if scan is None:
            return self._read(text, pos, endpos, -1)

        def step(at: int) -> tuple[int, int]:
            at, _, status = scan(text, at, endpos, self)  # it updates the parser's state
            if self.agg.routed:
                self._drain()
            return at, status

        return self._scan(step, text, pos, endpos)

    def _routed_call(self, line: str) -> tuple | None:
        m = _CALL(line)
        if m is None:
            return None
        pid_b, pid, _clock, _f, name, args, ret, rest = m.groups()
        p = int(pid_b or pid) if (pid_b or pid) else self._main_pid
        err, d = _outcome(ret, rest) if rest else (None, None)
        return p, name, args, ret, err, d

    def _read(self, text: str, pos: int, endpos: int, limit: int, single: bool = False) -> int:
        """The one reader of strace's call, `<unfinished ...>` and `<... resumed>` lines, for
        at most `limit` lines (-1: no limit) of `text` from `pos`; returns where it stopped.

        feed is its one-line case (`single`): there a bare call line (no pid, no time) is judged
        by its dialect, and -1 says the line is truss's, not this block's. In a run (feed_run,
        and the lines the C scanner hands back) a bare call line stops the run instead: the
        detector asks the other formats about it."""
        run = _RUN
        call = self.agg.call
        event = self.agg.event
        unfinished = self._unfinished
        time_of = self._time
        len_sec = 0  # characters after "HH:MM:" in the last clock (0: none yet)
        n0 = self._n
        unsure = False  # a bare call line that says nothing of Linux
        while limit:
            limit -= 1
            m = run(text, pos, endpos)
            if m is None:
                break
            end = m.end()
            if end - pos > MAX_LINE and not single:
                break  # the detector cuts it: feed sees its first MAX_LINE characters
            pid_b, pid, clock, f, name, args, ret, rest, u_name, u_args, r_name, r_rest = m.groups()
            if name is not None:
                if not (pid_b or pid or clock or f):
                    if not single:
                        break  # a bare call line: the detector asks the other formats
                    if not self._linux and "(" not in rest and "<" not in rest:
                        said = dialect(text)  # `-1 ENOENT (...)` and `<0.000123>` say Linux
                        if said is None:
                            unsure = True
                        elif said != "strace":
                            return -1  # truss's shape: not this block's
                if self._cut is not None:
                    self._cut = None  # the split write never got its value
                self._n += 1
                p = int(pid_b or pid) if (pid_b or pid) else self._main_pid
                if clock is not None and len_sec and clock[: -len_sec - 1] == self._hm:
                    # _time inlined for the usual case, a clock within the last HH:MM seen
                    # (the clock regex puts ":" after HH:MM, so the rest is the seconds)
                    ts = self._hm_s + float(clock[-len_sec:]) + self._day
                    if ts < self._last_clock - 43200:
                        ts, r = time_of(clock, f)  # past midnight: let _time count the day
                    else:
                        self._last_clock = ts
                        r = float(f) * 1000.0 if f is not None else None
                else:
                    ts, r = time_of(clock, f) if (clock or f) else (None, None)
                    len_sec = len(clock) - len(self._hm) - 1 if clock is not None else 0
                err, d = _outcome(ret, rest) if rest else (None, None)
                if not self._decided and ret != "?":
                    self._decide(d, ts)
                if d is not None:
                    self._any_dur = True
                call(p, name, d, r, ts, None, err, args, self._n, ret)
                if name in TARGET_CALLS or err is not None:
                    self.targets.call(p, name, args, ret, err, d, self._n)
            elif _ERR_NUM(text, pos, end):
                break  # truss's Err#: not this block's
            elif u_name is not None:
                self._n += 1
                p, ts, r = self._prefix(pid_b, pid, clock, f)
                event(p, ts, None, self._n, u_name)
                if p in unfinished or len(unfinished) < MAX_PIDS:
                    unfinished[p] = (u_name, u_args, ts, r, self._n)
            else:
                self._n += 1
                self._resumed((pid_b, pid, clock, f, r_name, r_rest.rstrip("\r")))
            pos = end + 1
        if self._n != n0:
            self._seen_call = True
            if not unsure:
                self._linux = True
        return pos

    def _feed_other(self, line: str) -> bool:
        if self._cut is not None:
            end = _ECHO_END(line)
            if end is not None:  # the split write's return value: the call is whole again
                p, name, args, line_no = self._cut
                self._cut = None
                self._n += 1
                self.malformed -= 1
                ret, rest = end.groups()
                err, d = _outcome(ret, rest)
                self.agg.call(p, name, d, None, None, None, err, args, line_no, ret)
                return True
        s = line.strip()
        if not s:  # kept, so a blank inside a capture does not split it
            self._n += 1
            return True
        if _TRUSS_SHAPE(line):
            return False
        m = _SIGNAL(line)
        if m is not None:
            self._n += 1
            self._linux = True
            pid_b, pid, clock, f, name = m.groups()
            p, ts, _ = self._prefix(pid_b, pid, clock, f)
            self.agg.signal(p, name, ts, None, self._n)
            return True
        m = _EXIT(line)
        if m is not None:
            self._n += 1
            self._linux = True
            pid_b, pid, clock, f, code, sig = m.groups()
            p, ts, _ = self._prefix(pid_b, pid, clock, f)
            status = f"exited with {code}" if code is not None else f"killed by {sig}"
            self.agg.exited(p, status, self._n, ts)
            return True
        m = _ATTACH(line)
        if m is not None:
            self._attached(m)
            return True
        if _STRACE_MSG(line):
            self._n += 1
            self._linux = True
            return True
        m = _CMD(line[:256])
        if m is not None:
            self._n += 1
            self._linux = True
            pm = _PID_OPT(m.group(1))
            if pm is not None and self._main_pid is None and not self._seen_call:
                self._main_pid = int(pm.group(1))
            return True
        if self._summary_line(line):
            self._n += 1
            self._linux = True
            return True
        if self._seen_call:
            if _ELISION(s):  # `...` / `[...]`: the poster cut lines here
                self._n += 1
                self.agg.elide()
                return True
            if s.startswith("> "):  # -k: a stack frame of the call above
                self._n += 1
                self.agg.continuation(s)
                return True
            lead = _LEAD(line)
            if lead is not None:
                rest = lead.group(5)
                prefixed = any(lead.group(i) for i in (1, 2, 3, 4))
                if _CALLISH(rest) and (prefixed or ")" not in rest):
                    self._n += 1
                    self.malformed += 1  # a call line cut short
                    cut = _CUT_WRITE(rest)
                    if cut is not None and not prefixed:
                        self._cut = (self._main_pid, cut.group(1), cut.group(2), self._n)
                        self._echo = 0
                    return True
        if self._cut is not None and self._echo < MAX_ECHO:
            self._n += 1  # the program's output, between its write and the write's value
            self._echo += 1
            return True
        return False

    def _attached(self, m: re.Match[str]) -> None:
        """`strace: Process N attached|detached` (_ATTACH's match)."""
        self._n += 1
        self._linux = True
        if m.group(2) == "attached" and self._main_pid is None and not self._seen_call:
            self._main_pid = int(m.group(1))
        if m.group(2) == "attached":
            self.agg.proc(int(m.group(1)))

    def _resumed(self, groups: tuple) -> None:
        pid_b, pid, clock, f, name, rest = groups
        p, ts, r = self._prefix(pid_b, pid, clock, f)
        start = self._unfinished.get(p)
        if start is not None and start[0] == name:
            del self._unfinished[p]
            head = start[1].rstrip().rstrip(",")
            t0, r, line_no = start[2], start[3], start[4]
        else:
            head, t0, line_no = "", None, self._n
        t = _TAIL(rest)
        if t is None:
            if start is not None and ("<unfinished" in rest or "<detached" in rest):  # still open
                self._unfinished[p] = start
            else:
                self.malformed += 1
            return
        tail_args, ret, rest = t.groups()
        args = f"{head}, {tail_args}" if head and tail_args else head or tail_args
        err, d = _outcome(ret, rest)
        if not self._decided and ret != "?":
            self._decide(d, ts)
        if d is not None:
            self._any_dur = True
        elif self.agg.gap_timing and ts is not None and t0 is not None and ts >= t0:
            d = (ts - t0) * 1000.0
        else:
            d = None
        self.agg.call(p, name, d, r, ts, None, err, args, line_no, ret)
        if name in TARGET_CALLS or err is not None:
            self.targets.call(p, name, args, ret, err, d, line_no)

    def _summary_line(self, line: str) -> bool:
        m = _SUM_HEAD(line)
        if m is not None:
            self._summary = True
            self._head_line = line
            self._sum_cols = [("pct", line.find("time") + 4)] + [
                (c, m.end(i)) for i, c in enumerate(("seconds", "usecs", "calls", "errors"), 1)
            ]
            # the 4-number rows' columns depend only on where the header's columns end: a log
            # of tables under one header layout names them once, not once per table
            key = tuple(self._sum_cols)
            named = self._named_by_head.get(key)
            if named is None:
                if len(self._named_by_head) >= 16:
                    self._named_by_head.clear()
                named = self._named_by_head[key] = {}
            self._sum_named = named
            return True
        if _SEPARATOR(line):
            return self._summary
        if not self._summary:
            return False
        return self._summary_row(line)

    def _summary_row(self, line: str) -> bool:
        """One row of the -c table as feed reads it: 3 to 5 numbers then the syscall's name."""
        toks = line.split()
        if len(toks) < 4 or not all(_NUMBER(t) for t in toks[:-1]):
            return False
        name = toks[-1]
        if not _NAME(name):
            return False
        nums = toks[:-1]
        if not 3 <= len(nums) <= 5:
            return False
        ends = tuple(t.end() for t in _TOKEN(line))[:-1] if len(nums) == 4 else ()
        self._add_row(name, nums, ends)
        return True

    def _add_row(self, name: str, nums: list[str], ends: tuple[int, ...]) -> None:
        """A row's numbers named by column and handed to the aggregator: the one place feed
        and the fast path (_summary_run) give a row its meaning. `ends` (where each number ends
        in the line) names 4 numbers, one cell of the 5 left blank."""
        if len(nums) == 5:
            cols = _FIVE
        elif len(nums) == 3:
            cols = _THREE
        else:
            cols = self._sum_named.get(ends)
            if cols is None:
                cols = tuple(self._columns_by_position(list(ends)) or _FOUR)
                if len(self._sum_named) < 64:
                    self._sum_named[ends] = cols
        # Only a syscall's last row counts (add_summary keeps the last), and a monitoring loop
        # prints the same names table after table: the row is held as text and made a
        # SummaryRow only when handed over (_hand_rows), a tenth of its cost before
        held = self._held_rows
        if name not in held and len(held) >= _HELD_MAX:
            self._hand_rows()
            held = self._held_rows
        held[name] = (cols, nums)

    def _hand_rows(self) -> None:
        """The held -c rows to the aggregator in the order their names first came, as _add_row
        would have handed each: the same names kept (the first MAX_SYSCALLS), the last row of
        each."""
        held, self._held_rows = self._held_rows, {}
        add = self.agg.add_summary
        for name, (cols, nums) in held.items():
            vals = {c: decimal(t) for c, t in zip(cols, nums, strict=True)}
            row = SummaryRow(
                syscall=name,
                calls=int(vals.get("calls", 0)),
                seconds=vals["seconds"],
                errors=int(vals.get("errors", 0)),
                pct=vals["pct"],
            )
            add(row, total=name == "total")

    def claims(self, line: str) -> bool:
        """Inside a -c table (its header read), its rows and rulers are this block's: a long
        table (one per `strace -c -p` run of a monitoring loop) is then not asked of every
        other format row after row. Only the shapes _summary_line takes whole are claimed."""
        return self._summary and _SUM_RUN(line) is not None

    def _summary_run(self, text: str, pos: int, endpos: int) -> int:
        """The -c table rows and rulers from `pos` (the lines `claims` says are this block's),
        each row's numbers read by _add_row as feed reads them; returns where the run
        stopped."""
        run = _SUM_RUN
        add = self._add_row
        native = _c_summary_rows if NATIVE else None
        n = self._n
        while pos < endpos:
            if native is not None:  # the rows and rulers it can vouch for, then one in Python
                pos, k = native(
                    text, pos, endpos, self._held_rows, self._sum_named, _HELD_MAX, _THREE, _FIVE,
                    MAX_LINE,
                )  # fmt: skip
                if k:
                    n += k
                    self._n = n
                if pos >= endpos:
                    break
            m = run(text, pos, endpos)
            if m is None:
                break
            end = m.end()
            if end - pos > MAX_LINE:
                break
            name = m.group(6)
            if name is not None:
                a, b, c, d, e = m.group(1, 2, 3, 4, 5)
                if d is None:
                    add(name, [a, b, c], ())
                elif e is None:
                    ends = (m.end(1) - pos, m.end(2) - pos, m.end(3) - pos, m.end(4) - pos)
                    add(name, [a, b, c, d], ends)
                else:
                    add(name, [a, b, c, d, e], ())
            n += 1
            self._n = n
            pos = end + 1
        return pos

    def _columns_by_position(self, ends: list[int]) -> list[str] | None:
        """Name 4 numbers by the header column their right edge sits under (blank cells)."""
        if not self._sum_cols:
            return None
        names = []
        for e in ends:
            col = min(self._sum_cols, key=lambda c: abs(c[1] - e))
            if abs(col[1] - e) > 2 or col[0] in names:
                return None
            names.append(col[0])
        return names

    # -- results ----------------------------------------------------------------------------

    def facts(self) -> tuple[dict, dict, list[str], Platform | None]:
        self._hand_rows()
        agg = self.agg
        if self._unfinished:  # calls still running when the capture stopped: count, untimed
            agg = agg.snapshot()
            for p, (name, args, _ts, r, line_no) in self._unfinished.items():
                agg.call(p, name, None, r, None, None, None, args, line_no)
        if self._any_dur:
            timing: Timing = "T"
        elif agg.gap_timing:
            timing = "d"
        else:
            timing = "none"
        facts, details, identifiers = agg.result(timing)
        self._what_it_waited_on(facts, details)
        return facts, details, identifiers, "linux" if self._linux else None
