"""Process stacks: Solaris/AIX pstack, gdb `bt` / `thread apply all bt`, eu-stack, Solaris
`module`function+0xoff` frames (mdb, ustack() without counts), Linux kernel stacks
(`[<0>] func+0x1a/0x40`) and `perf script` call chains.

Every frame is reduced to its function name (offsets and arguments stripped) and fed to the
shared FunctionStats, so the facts are the ones a DTrace ustack() produces too. A new stack
starts at a thread or process header, at gdb's frame #0, or after a blank line.
"""

from __future__ import annotations

import copy
import re
from typing import ClassVar

from ingest.base import Parser, line_at
from ingest.model import Format, Platform
from ingest.parsers import functions
from ingest.parsers.functions import MAX_FRAMES, TICK_FRAME, Frame, FunctionStats

# No stack line is longer (a gdb frame with long C++ arguments stays well below it).
MAX_LINE = 4096
_ADDRESS = re.compile(r"^(?:0x)?[0-9a-fA-F]+$")

# ffff80ffbcf9298a __read () + a        |  0x0900000000012345  nsleep(??, ??) + 0x94 (AIX)
_PSTACK = re.compile(
    r"^\s*(?P<hex>0x)?(?P<addr>[0-9a-fA-F]{6,16})\s+(?P<name>[A-Za-z_$.?<~][^\s(]*)\s*\((?P<rest>.*)$"
)
_PSTACK_STRICT = re.compile(r"\)\s*(?:\+\s*(?:0x)?[0-9a-fA-F]+\s*)?$")
# #3  0x000000000c8d3f5a in kslwtbctx ()   |  #0  semtimedop () at ../sysdeps/...
_GDB = re.compile(
    r"^#(?P<n>\d{1,9})\s+(?:0x(?P<addr>[0-9a-fA-F]+)\s+in\s+|(?!0x))"
    r"(?P<name>[^\s(](?:[^(]*[^\s(])?)\s*\((?P<rest>.*)$"
)
# #0  0x00007f3c2a1b4e8a semtimedop   |  #0  0x00007f3c2a1b4e8a semtimedop - /usr/lib64/libc.so.6
_EU = re.compile(
    r"^#(?P<n>\d{1,9})\s+0x(?P<addr>[0-9a-fA-F]+)(?:\s+(?P<name>[^\s-]\S*))?(?:\s+-\s+(?P<module>\S+))?\s*$"
)
_FROM = re.compile(r"\bfrom\s+(?P<module>\S+)\s*$")
# [<ffffffff8110c8a2>] futex_wait_queue_me+0xc2/0x120   |   ? do_syscall_64+0x5b/0x1a0 [mod]
_KSTACK = re.compile(
    r"^\s*\[<(?:0x)?[0-9a-fA-F]+>\]\s+(?:\?\s+)?(?P<func>[^\s+]+)\+0x[0-9a-fA-F]+/0x[0-9a-fA-F]+"
    r"(?:\s+\[(?P<module>[\w-]+)\])?\s*$"
)
_KFRAME = re.compile(
    r"^\s*(?:\?\s+)?(?P<func>[A-Za-z_.][\w.$]*)\+0x[0-9a-fA-F]+/0x[0-9a-fA-F]+"
    r"(?:\s+\[(?P<module>[\w-]+)\])?\s*$"
)
# perf script:       7f3c2a1b4e8a semtimedop+0xa (/usr/lib64/libc-2.17.so)
_PERF = re.compile(
    r"^\s+(?P<addr>[0-9a-fA-F]+)\s+(?P<func>\S+?)(?:\+0x[0-9a-fA-F]+)?\s+\((?P<module>[/\[][^()]*)\)\s*$"
)
_PERF_HEADER = re.compile(
    r"^(?P<comm>\S(?:[^\t]*\S)?)\s+(?P<pid>\d+)(?:/(?P<tid>\d+))?\s+(?:\[\d+\]\s+)?"
    r"(?P<time>\d+\.\d+):\s+(?:(?P<period>\d+)\s+)?(?P<event>\S+?):\s*$"
)

# Oracle: oradebug short_stack (`ksedsts()+244<-ksdxfstk()+58<-...`, innermost first), the folded
# "short stack profile" (`     20 kdstf01001010000km()+346`), incident/error trace call stack
# tables (`ksedst()+31   call   ksedst1()   000000000 ? ...`) and 12.2+ `[N] (ksedst1()+95 -> ...)`
_SHORT_FRAME = re.compile(r"^\s*<?-?\s*([A-Za-z_$][\w$#.]*)\(\)(?:\+(-?\d+))?\s*$")
_SHORT_STACK = re.compile(r"[A-Za-z_$][\w$#.]*\(\)(?:\+\d+)?\s*<-\s*[A-Za-z_$][\w$#.]*\(\)")
_FOLDED = re.compile(r"^\s*(\d{1,12})\s+([A-Za-z_$][\w$#.]*)\(\)(?:\+(\d+))?\s*$")
_CALL_STACK_HEAD = re.compile(
    r"^\s*-{3,}\s*(?:Short |Abridged )?Call Stack Trace\s*-{3,}\s*$|^\s*Short stack dump:\s*$"
    r"|^\s*calling\s+call\s+entry\s+argument values"
)
_CALL_STACK_ROW = re.compile(
    r"^\s*(?:\[\d+\]\s+)?([A-Za-z_$][\w$#.]*)\(\)(?:\+(\d+))?\s+"
    r"(?:call|ptr_call|PTR_CALL|CALL|signal|SIGNAL|jmp|\?\?\?)\s+\S"
)
_FRAME_1222 = re.compile(r"^\s*(?:FRAME\s*)?\[\d+\]\s*\(([A-Za-z_$][\w$#.]*)\(\)(?:\+\d+)?\s*->")
_CALL_STACK_NOISE = re.compile(
    r"^(?:\s*location\s+type\s+point|\s*-{8,}(?:\s+-{4,})+|\s+CALL TYPE:"
    r"|\s+[A-Z][A-Z0-9]{1,2} [0-9A-F]{3,16}\b|\s{20,}[0-9A-Fa-f]{6,16} \?)"
)
# the frames oradebug's own signal handling adds on top of every short stack
_ORACLE_HINT = re.compile(r"\(\)|Stack|calling|oradebug|Statement processed")
_ORADEBUG = re.compile(r"^\s*(?:SQL>\s*)?(?:oradebug\s+\w+.*|Statement processed\.?)\s*$", re.I)
_DUMPER = frozenset({"ksedsts", "ksdxfstk", "ksdxcb", "sspuser", "__sighandler", "__restore_rt"})

_LWP = re.compile(r"^\s*-{3,}\s*lwp#\s*(?P<lwp>\d+)\s*/\s*thread#\s*(?P<thread>\d+)\s*-{3,}\s*$")
_GDB_THREAD = re.compile(r"^Thread\s+(?P<n>\d+)\s+\((?P<what>.*)\):?\s*$")
_LWP_IN = re.compile(r"\bLWP\s+(\d+)")
_EU_TID = re.compile(r"^TID\s+(?P<tid>\d+):\s*$")
_EU_PID = re.compile(r"^PID\s+(?P<pid>\d+)\s+-\s+(?P<what>\S.*)$")
_PID = re.compile(r"^(?P<pid>\d+):\s+(?P<cmd>\S.*)$")
_CORE = re.compile(r"^core\s+'[^']*'\s+of\s+(?P<pid>\d+):\s+(?P<cmd>\S.*)$")
_TRUSS_LIKE = re.compile(r"^\d+:\s+(?:[\d.]+\s+)*[\w]+\(|^\d+:\s+[\d.]+\s")
_CALL_TRACE = re.compile(r"^\s*Call Trace:\s*$")
_CONTINUATION = re.compile(r"^\s+(?:at\s+\S+|from\s+\S+)\s*$")
_NOISE = re.compile(
    r"^(?:\(gdb\)|\[New (?:LWP|Thread)\b|\[Thread debugging\b|Using host libthread_db\b"
    r"|\[Inferior \d+ .*detached\]|Backtrace stopped\b|Reading symbols from\b"
    r"|0x[0-9a-fA-F]+ in \S+ \(.*\)(?: from \S+)?\s*$"
    r"|\s*-+\s*called from signal handler\b|\s*\.\.\.\s*$)"
)


# The frame lines a large dump is made of, read straight from the text by the fast path
# (`feed_run`): a gdb / Linux pstack frame `#N  0xADDR in name () [from lib]` (groups 1-3) and a
# Solaris / AIX pstack frame `ADDR name (args) [+ off]` (4-5) and a perf script frame
# `\tADDR func+0xoff (module)` (6-7, the same groups as _PERF). Each is a strict subset of what
# `feed` reads as that frame (and of what `start_score` scores 2 or `claims`), a pstack or perf
# frame given it holds none of the words `_ORACLE_HINT` looks for (checked separately); anything
# else goes through `feed`.
_FAST = re.compile(
    r"#(\d{1,9})[ \t]++0x[0-9a-fA-F]++[ \t]++in[ \t]++([A-Za-z_][\w.$]{0,500}+) \(\)"
    r"(?:[ \t]++from[ \t]++([^\s:<]{1,500}+))?[ \t]*+\r*+(?:\n|\Z)"
    r"|[ \t]*+(0x)?+[0-9a-fA-F]{6,16}+[ \t]++([A-Za-z_$.?<~][^\s(]{0,500}+)[ \t]*+"
    r"\((?![/\[])[^()\n]{0,2000}+\)(?:[ \t]*+\+[ \t]*+(?:0x)?+[0-9a-fA-F]++)?[ \t]*+\r*+(?:\n|\Z)"
    r"|[ \t]++[0-9a-fA-F]{1,16}+[ \t]++(\S{1,500}?)(?:\+0x[0-9a-fA-F]+)?[ \t]++\(([/\[][^()\n]{0,2000})\)"
    r"[ \t]*+\r*+(?:\n|\Z)"
)
_FRAME_CACHE_MAX = 4096


def _frame(name: str | None, module: str | None = None) -> Frame:
    """Build a frame; '??', '[unknown]' and bare addresses have no function name."""
    if name is not None:
        name = name.strip()
        if not name or set(name) <= {"?"} or name == "[unknown]" or _ADDRESS.match(name):
            name = None
    return Frame(function=name, module=module or None)


MAX_LABELS = 200  # processes/threads whose samples are compared


def _remember(
    groups: dict[str, tuple[int, frozenset[str]]], label: str, frames: list[Frame]
) -> dict[str, tuple[int, frozenset[str]]]:
    """Count one more sample of `label` and keep the frames every sample of it shares."""
    if not label:
        return groups
    seen = groups.get(label)
    if seen is not None:
        # the shared set never holds None: intersecting it with the names as a list is the
        # same set, without building a second one per sample
        common = seen[1]
        groups[label] = (seen[0] + 1, common.intersection([f.function for f in frames]))
    elif len(groups) < MAX_LABELS:
        names = frozenset([f.function for f in frames])
        groups[label] = (1, names - {None} if None in names else names)
    return groups


class StackParser(Parser):
    format: ClassVar[Format] = "stack"

    def __init__(self) -> None:
        super().__init__()
        self.stats = FunctionStats()
        self._frames: list[Frame] = []
        self._label = ""
        self._last_gdb = -1
        self._votes: dict[str, int] = {}
        self._threads: list[str] = []
        self.frames_dropped = 0
        self._folded: dict[str, float] = {}  # short stack profile: function -> count
        self._folded_rows: list[tuple[float, str]] = []
        # samples of the same process or thread (same header label): how many, and the frames
        # all of them share (a process stuck below them)
        self._by_label: dict[str, tuple[int, frozenset[str]]] = {}
        self._innermost: list[str] = []
        self._short_stacks = 0
        self._perf: dict | None = None  # perf script: samples, events, commands, time span
        self._frame_cache: dict[tuple[str, str | None], Frame] = {}  # for feed_run
        self._native_cache: dict[str, Frame] = {}  # the C reader's, keyed "name\0module"

    # -- detection ------------------------------------------------------------------------------

    @classmethod
    def start_score(cls, line: str) -> int:
        if len(line) > MAX_LINE:
            return 0
        if "()" in line and (
            _SHORT_STACK.search(line) or _CALL_STACK_ROW.match(line) or _FRAME_1222.match(line)
        ):
            return 2
        if _CALL_STACK_HEAD.match(line):
            return 2
        if "()" in line and _FOLDED.match(line):
            return 2
        if (
            _LWP.match(line)
            or _GDB_THREAD.match(line)
            or _EU_TID.match(line)
            or _EU_PID.match(line)
            or _CORE.match(line)
            or _KSTACK.match(line)
        ):
            return 2
        m = _PSTACK.match(line)
        if m and _PSTACK_STRICT.search(m.group("rest")) and not _PERF.match(line):
            return 2
        if _GDB.match(line) or _EU.match(line):
            return 2
        if TICK_FRAME.match(line) or _KFRAME.match(line) or _PERF.match(line):
            return 1
        if _PERF_HEADER.match(line) or _CALL_TRACE.match(line):
            return 1
        # `pid:  command` heads pstack but also pfiles, pmap, pldd...: it never opens a block on
        # its own (it would become a one-line block); inside a stack block it starts a new stack
        return 0

    # -- feeding --------------------------------------------------------------------------------

    def _vote(self, platform: str) -> None:
        self._votes[platform] = self._votes.get(platform, 0) + 1

    def _perf_sample(self, m: re.Match) -> None:
        """What a person reads off perf script's sample lines: which event, which processes,
        over how long (the stacks themselves go to FunctionStats like any other)."""
        p = self._perf
        if p is None:
            p = self._perf = {"samples": 0, "events": {}, "commands": {}, "period": 0.0}
        p["samples"] += 1
        t = float(m["time"])
        p["first_time"] = min(p.get("first_time", t), t)
        p["last_time"] = max(p.get("last_time", t), t)
        if m["period"]:
            p["period"] += float(m["period"])
        for table, key in ((p["events"], m["event"]), (p["commands"], f"{m['comm']} {m['pid']}")):
            if key in table or len(table) < 50:
                table[key] = table.get(key, 0) + 1

    def _commit(self) -> None:
        if self._frames:
            self.stats.add_stack(self._frames, 1.0, self._label)
            self._by_label = _remember(self._by_label, self._label, self._frames)
        self._frames = []
        self._last_gdb = -1

    def _new_stack(self, label: str) -> None:
        self._commit()
        self._label = label
        if len(self._threads) < 200:
            self._threads.append(label)

    def _push(self, frame: Frame) -> None:
        if len(self._frames) >= MAX_FRAMES:
            self.frames_dropped += 1
            return
        self._frames.append(frame)

    fast = True

    def claims(self, line: str) -> bool:  # type: ignore[override]
        """A blank line ends the stack being read (feed takes it only then); no other format
        starts on one, so saying so only spares the detector asking them. Inside `perf script`
        output, its sample header and frame lines (which score only 1: `name  123` shapes other
        tables print too) continue the block."""
        if not line.strip():
            return bool(self._frames)
        return self._perf is not None and bool(_PERF.match(line) or _PERF_HEADER.match(line))

    def feed_run(self, text: str, pos: int, endpos: int, plain: dict) -> tuple[int, int]:
        """Runs of frame lines without the detector's per-line work: one anchored regex a line
        reads the usual gdb and pstack frames straight from the text, with what `feed` does for
        them (the same Frame, from a small cache: the same function and library recur in every
        sample). Other lines go through `feed` when this block claims them, they score 2 here,
        or the detector's memo says no other format starts on them; else the run stops."""
        taken = 0
        fast = _FAST.match
        hint = _ORACLE_HINT.search
        cache = self._frame_cache
        push = self._push
        votes = self._votes
        limit = endpos + 1 if endpos < len(text) else endpos
        native = functions.NATIVE and text.isascii()
        while pos < endpos:
            if native:
                pos, n = self._native_run(text, pos, endpos)
                taken += n
                if pos >= endpos:
                    break
            m = fast(text, pos, limit)
            key: tuple[str, str | None] | None = None
            # a gdb frame's `()` is the only hint word its shape allows (feed's _oracle needs a
            # `<-` or a line not starting with `#` to read it); the others must have none
            if (
                m is not None
                and m.end() - pos <= MAX_LINE
                and (m[2] is not None or hint(text, pos, m.end()) is None)
            ):
                if m[2] is not None:  # gdb: frame #0 (or a number going back) starts a stack
                    number = int(m[1])
                    if self._frames and number <= self._last_gdb:
                        self._commit()
                    self._last_gdb = number
                    votes["linux"] = votes.get("linux", 0) + 1
                    key = (m[2], m[3])
                elif m[5] is not None:
                    if not m[4]:
                        votes["solaris"] = votes.get("solaris", 0) + 1
                    key = (m[5], None)
                elif self._perf is not None:  # a perf script frame, claimed inside its output
                    votes["linux"] = votes.get("linux", 0) + 1
                    key = (m[6], m[7].strip())
            if key is not None:
                frame = cache.get(key)
                if frame is None:
                    if len(cache) >= _FRAME_CACHE_MAX:
                        cache.clear()
                    frame = cache[key] = _frame(*key)
                push(frame)
                taken += 1
                pos = m.end()  # type: ignore[union-attr]
                continue
            # (perf script's sample headers score 1: they never take the gdb/pstack way)
            if self._perf is None:
                nxt = self._strong_header(text, pos, endpos)
            else:
                nxt = self._perf_step(text, pos, endpos)
            if nxt < 0:
                nxt = self.feed_one(text, pos, endpos, plain)
                if nxt < 0:
                    break
            taken += 1
            pos = nxt
        return min(pos, endpos + 1) if taken else pos, taken

    def _strong_header(self, text: str, pos: int, endpos: int) -> int:
        """feed_one for a header start_score scores 2 (gdb's `Thread N (...)`, pstack's
        `--- lwp# N / thread# N ---`, eu-stack's TID and PID lines, a core's): feed_one would
        take it on that score alone and feed reads it with _header when no Oracle hint word
        is in it, so this does just that, without the memo, claims, start_score and feed's own
        tests. Where the next line starts, or -1 (feed_one then decides). Why: there is one
        such header a stack, and start_score then feed matched it twice over: a 3 MB Solaris
        pstack slice took 461M instructions before, 433-435M after (cachegrind, 2026-12-02);
        gdb's change was within its noise."""
        if pos >= endpos:
            return -1
        end, line = line_at(text, pos, endpos)
        if end - pos > MAX_LINE or _ORACLE_HINT.search(line) is not None:
            return -1
        return end + 1 if self._header(line, strong_only=True) else -1

    def _perf_step(self, text: str, pos: int, endpos: int) -> int:
        """feed_one, inside perf script output, for the two lines each sample has besides its
        frames: the blank line after it (claims takes it while frames are held, and feed commits
        the stack) and the next sample's header (claims takes it, feed finds no Oracle hint word
        and _header reads it as perf's after six other header shapes: of those, the ones a perf
        header can also match start with a digit, `Thread`, `PID` or `core`; Solaris's lwp rule
        ends in dashes and eu-stack's `TID N:` holds no time, where perf's ends in a colon after
        one). Where the next line starts, or -1 (feed_one then decides). Why: each sample's
        header went through claims (perf's frame and header regexes), the Oracle hint and
        seven header shapes, perf's header regex a second time among them: on the first 3 MB
        of the benchmark's perf script dump, 811M -> 698M instructions (-14 %, cachegrind,
        parse_stream less the imports, 2026-12-03)."""
        if pos >= endpos:
            return -1
        end, line = line_at(text, pos, endpos)
        if end - pos > MAX_LINE:
            return -1
        if not line.strip():
            return end + 1 if self._blank() else -1
        if (
            line[0].isdigit()
            or line.startswith(("Thread", "PID", "core"))
            or _ORACLE_HINT.search(line) is not None
        ):
            return -1
        m = _PERF_HEADER.match(line)
        if m is None:
            return -1
        self._perf_header(m)
        return end + 1

    def _native_run(self, text: str, pos: int, endpos: int) -> tuple[int, int]:
        """The frame lines from `pos` read by the C reader (functions.stack_frames) with what
        the loop of `feed_run` does for them; it stops at the first line it cannot vouch for,
        which that loop then reads."""
        shapes = 7 if self._perf is not None else 3  # gdb, pstack (and perf inside its output)
        pos, n, items, last_gdb, dropped, linux, solaris, first = functions.stack_frames(
            text,
            pos,
            endpos,
            shapes,
            len(self._frames),
            self._last_gdb,
            MAX_LINE,
            MAX_FRAMES,
            self._native_cache,
            _frame,
        )
        if n:
            for item in items:
                if item is None:
                    self._commit()
                else:
                    self._frames.extend(item)
            self._last_gdb = last_gdb
            self.frames_dropped += dropped
            votes = self._votes
            for name, count in (
                (("solaris", solaris), ("linux", linux))
                if first == 2
                else (("linux", linux), ("solaris", solaris))
            ):
                if count:
                    votes[name] = votes.get(name, 0) + count
        return pos, n

    def feed(self, line: str) -> bool:
        if len(line) > MAX_LINE:
            return False
        if not line.strip():
            return self._blank()
        if _ORACLE_HINT.search(line) and self._oracle(line):
            return True
        return self._header(line) or self._frame_line(line) or self._other(line)

    def _blank(self) -> bool:
        """A blank line: it ends the stack being read, and is taken only when there is one."""
        if not self._frames:
            return False
        self._commit()
        self._label = ""
        return True

    def _oracle(self, line: str) -> bool:
        """Oracle's own stack shapes; False when the line is none of them."""
        if _SHORT_STACK.search(line):
            self._short_stack(line)
            return True
        if m := _FOLDED.match(line):
            name, count = m.group(2), float(m.group(1))
            self._folded[name] = self._folded.get(name, 0.0) + count
            if len(self._folded_rows) < 200:
                self._folded_rows.append((count, f"{name}()+{m.group(3) or 0}"))
            return True
        if _ORADEBUG.match(line):
            return True  # the commands between samples
        if _CALL_STACK_HEAD.match(line):
            if "calling" not in line:
                self._new_stack(line.strip().strip("-").strip()[:60])
            return True
        if m := _CALL_STACK_ROW.match(line) or _FRAME_1222.match(line):
            self._push(_frame(m.group(1), "oracle"))
            return True
        return bool(self._frames and _CALL_STACK_NOISE.match(line))

    def _short_stack(self, line: str) -> None:
        """One oradebug short_stack sample: frames innermost first, separated by `<-`; the
        frames of the dump itself (ksedsts ... __sighandler) are not the process's work."""
        self._commit()
        frames: list[Frame] = []
        unreadable = False  # a line is malformed once, however many of its parts are
        for part in line.split("<-"):
            m = _SHORT_FRAME.match(part)
            if m is None:
                part = part.strip()
                tail = re.search(r"([A-Za-z_$][\w$#.]*)\(\)(?:\+\d+)?\s*$", part)
                if tail is None:
                    unreadable = unreadable or bool(part)
                    continue
                name = tail.group(1)
            else:
                name = m.group(1)
            frames.append(_frame(name, "oracle"))
        self.malformed += unreadable
        cut = 0
        for i, f in enumerate(frames[:8]):
            if f.function in _DUMPER:
                cut = i + 1
        frames = frames[cut:] or frames
        if len(frames) > MAX_FRAMES:
            self.frames_dropped += len(frames) - MAX_FRAMES
            frames = frames[:MAX_FRAMES]
        self._short_stacks += 1
        self._new_stack("oradebug short_stack")
        self._frames = frames
        if frames and frames[0].function and len(self._innermost) < 1000:
            self._innermost.append(frames[0].function)
        self._commit()

    def _header(self, line: str, strong_only: bool = False) -> bool:
        """A stack's header line starts a new stack. The first five shapes tested are the
        headers start_score scores 2 on their own; with `strong_only` (_strong_header) only
        they are read, and any other line is left to feed_one."""
        if m := _LWP.match(line):
            self._vote("solaris")
            self._new_stack(f"lwp# {m['lwp']} / thread# {m['thread']}")
        elif m := _GDB_THREAD.match(line):
            self._vote("linux")
            lwp = _LWP_IN.search(m["what"])
            self._new_stack(f"Thread {m['n']}" + (f" (LWP {lwp.group(1)})" if lwp else ""))
        elif m := _EU_TID.match(line):
            self._vote("linux")
            self._new_stack(f"TID {m['tid']}")
        elif m := _EU_PID.match(line):
            self._vote("linux")
            self._new_stack(f"PID {m['pid']} - {m['what'].strip()[:80]}")
        elif m := _CORE.match(line):
            self._vote("solaris")
            self._new_stack(f"pid {m['pid']}: {m['cmd'].strip()[:80]}")
        elif strong_only:
            return False
        elif (m := _PID.match(line)) and not _TRUSS_LIKE.match(line):
            self._new_stack(f"pid {m['pid']}: {m['cmd'].strip()[:80]}")
        elif m := _PERF_HEADER.match(line):
            self._perf_header(m)
        elif _CALL_TRACE.match(line):
            self._vote("linux")
            self._new_stack("kernel call trace")
        else:
            return False
        return True

    def _perf_header(self, m: re.Match) -> None:
        """A perf script sample's header line (`comm pid [cpu] time: period event:`) read."""
        self._vote("linux")
        self._new_stack(f"{m['comm'].strip()[:40]} {m['pid']}")
        self._perf_sample(m)

    def _frame_line(self, line: str) -> bool:
        if line.startswith("#"):
            return self._numbered(line)
        if (m := _PSTACK.match(line)) and not _PERF.match(line):
            if not m["hex"]:
                self._vote("solaris")
            self._push(_frame(m["name"]))
        elif m := TICK_FRAME.match(line):
            self._vote("solaris")
            self._push(_frame(m["func"], m["module"]))
        elif m := _KSTACK.match(line) or _KFRAME.match(line):
            self._vote("linux")
            self._push(_frame(m["func"], m["module"] or "kernel"))
        elif m := _PERF.match(line):
            self._vote("linux")
            self._push(_frame(m["func"], m["module"].strip()))
        else:
            return False
        return True

    def _numbered(self, line: str) -> bool:
        """gdb and eu-stack frames: `#N ...`. Frame #0 (or a number going back) starts a stack."""
        m = _GDB.match(line)
        eu = None if m else _EU.match(line)
        if m is None and eu is None:
            if re.match(r"^#\d+\s", line):
                self.malformed += 1
                return True
            return False
        number = int((m or eu)["n"])  # type: ignore[index]
        if self._frames and number <= self._last_gdb:
            self._commit()
        self._last_gdb = number
        self._vote("linux")
        if m is not None:
            module = _FROM.search(m["rest"])
            self._push(_frame(m["name"], module["module"] if module else None))
        else:
            self._push(_frame(eu["name"], eu["module"]))  # type: ignore[index]
        return True

    def _other(self, line: str) -> bool:
        if _CONTINUATION.match(line):
            stripped = line.strip()
            if stripped.startswith("from ") and self._frames:
                last = self._frames[-1]
                self._frames[-1] = Frame(last.function, stripped[5:].strip())
                self._vote("linux")
            return True
        if _NOISE.match(line):
            return True
        if self._frames and re.match(r"^\s*(?:0x)?[0-9a-fA-F]{8,16}\s+\S", line):
            # an address line cut short or in an unknown layout: part of the stack, unreadable
            self.malformed += 1
            return True
        return False

    # -- results --------------------------------------------------------------------------------

    def facts(self) -> tuple[dict, dict, list[str], Platform | None]:
        stats = self.stats
        if self._frames:
            stats = copy.deepcopy(self.stats)
            stats.add_stack(self._frames, 1.0, self._label)
        if self._folded:
            stats = copy.deepcopy(stats)
            for name, count in self._folded.items():
                if name not in _DUMPER:  # oradebug's own frames, in every sample
                    stats.add_counted(name, count, "oracle")
        facts = stats.facts()
        details = stats.details()
        if self._folded:
            # one sample holds the dump's own frames once: their count is the number of samples
            samples = max(
                (
                    self._folded[n]
                    for n in ("ksedsts", "ksdxfstk", "main", "_start")
                    if n in self._folded
                ),
                default=max(self._folded.values()),
            )
            facts["stack.samples"] = float(samples)
            deepest = [n for n in self._folded if n not in _DUMPER and self._folded[n] >= samples]
            facts["stack.stable_frames"] = float(len(deepest))
            details["short_stack_profile"] = [
                {"count": c, "frame": f} for c, f in sorted(self._folded_rows, key=lambda t: -t[0])
            ]
        groups = self._by_label
        if self._frames:
            groups = _remember(dict(groups), self._label, self._frames)
        if groups:
            label, (samples, common) = max(groups.items(), key=lambda kv: kv[1][0])
            if samples >= 2 or self._short_stacks:
                facts["stack.samples"] = float(samples)
                facts["stack.stable_frames"] = float(len(common))
                details["stable_frames"] = sorted(common)[:200]
                details["stable_frames_of"] = label
        if self._short_stacks > 1:
            counts: dict[str, int] = {}
            for name in self._innermost:
                counts[name] = counts.get(name, 0) + 1
            details["innermost_frames"] = dict(sorted(counts.items(), key=lambda kv: -kv[1])[:30])
        if self._threads:
            details["threads"] = self._threads
        if self.frames_dropped:
            details["frames_dropped"] = self.frames_dropped
        if self._perf is not None:
            perf = dict(self._perf)
            perf["span_s"] = round(perf["last_time"] - perf["first_time"], 6)
            details["perf_script"] = perf
        platform: Platform | None = None
        if self._votes:
            best = max(self._votes.items(), key=lambda kv: kv[1])[0]
            platform = "solaris" if best == "solaris" else "linux"
        return facts, details, stats.identifiers(), platform
