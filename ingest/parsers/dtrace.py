"""DTrace (and bpftrace) output: aggregation tables, ustack() aggregations, quantize/lquantize
histograms, printf result lines, and tables whose line breaks were lost when pasted.

What is read:
- `name  count` and `module function count` tables -> probe.count, and frame.count /
  layer.count as if each counted function were a frame seen that many times;
- ustack() blocks (`module`func+0xoff` frames, then the count) -> frame.*, layer.*, stack.*;
- `value --- Distribution --- count` histograms under a label line -> hist.*; a label that
  appears twice (two aggregations keyed the same way) gets ' #2' on its second histogram;
- `X executed N times, waited in ms: T` -> probe.count[X] = N, probe.time_ms[X] = T;
- bpftrace `@name[key]: N` maps, `@[ ...stack... ]: N` stacks and hist()/lhist() tables.

Names are kept as printed (`_cladm`, not `cladm`): a person searches for what the stack shows,
and the libc entry symbol differs from the syscall name on purpose. A key seen twice (the same
table pasted twice, or two outputs on one flattened line) keeps its larger count rather than the
sum, which would count the same calls twice.

A block of `module`func` frames with no count and nothing else DTrace-specific is a plain stack
listing (mdb, or a ustack() paste cut short): it is reported with format `stack`.
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import ClassVar

from ingest.base import Parser
from ingest.model import Block, Format, Platform
from ingest.parsers import functions
from ingest.parsers.functions import MAX_FRAMES, TICK_FRAME, Frame, FunctionStats

MAX_KEYS = 5000
MAX_HISTOGRAMS = 200
MAX_BUCKETS = 1000
MAX_NOTES = 50
# Longer lines can only be a table whose line breaks were lost; no other shape is tried on them.
MAX_SHAPED_LINE = 4096

_IDENT = re.compile(r"^[A-Za-z_$][\w$.:/-]*$")
_KEY = re.compile(r"^[\w$.:/<>*+-]+$")
_MODULE = re.compile(r"^[A-Za-z_][\w.+-]*$")
_FUNC = re.compile(r"^[A-Za-z_$][\w$.]*$")
# counts have at most 15 digits: real ones are far smaller, and sums of them stay finite
_INT = re.compile(r"^\d{1,15}$")
_LOWER = re.compile(r"[a-z]")
_ADDRESS = re.compile(r"^(?:0x)?[0-9a-fA-F]+$")

_FRAME_COUNT = re.compile(
    r"^\s*(?P<module>[\w.+-]+)`(?P<func>[^+\s(`]+)(?:\+0x[0-9a-fA-F]+)?\s+(?P<count>\d{1,15})\s*$"
)
_COUNT = re.compile(r"^\s*(?P<count>\d{1,15})\s*$")
# What a ustack() aggregation is made of, read straight from the text by `feed_run`: a frame
# line as TICK_FRAME reads it (groups 1-2) and a stack's count line as _COUNT reads it (3). A line
# matching TICK_FRAME matches none of the shapes `_classify` tries before it, and a count line none
# but _COUNT, so each is what `feed` reads (when no histogram, bpftrace stack or held row is open).
_FAST = re.compile(
    r"[ \t]*+(?:([\w.+-]++)`([^+\s(`]++)(?:\+(?:0x[0-9a-fA-F]++|\d++))?+(?:\([^\n]*\))?"
    r"|(\d{1,15}+))[ \t]*+\r*+(?:\n|\Z)"
)
_HIST_HEADER = re.compile(r"^\s*value\s+-+\s*Distribution\s*-+\s*count\s*$")
_HIST_ROW = re.compile(
    r"^\s*(?P<value>(?:(?:<|>=)\s*)?-?\d{1,15})\s+\|(?P<bar>[@ ]*)(?:\|\s*)?(?P<count>\d{1,15})\s*$"
)
_EXECUTED = re.compile(
    r"^\s*(?P<name>[\w$.:]+)\s+executed\s+(?P<n>\d{1,15})\s+times?"
    r"(?:,?\s*waited\s+in\s+(?P<unit>ms|us|ns|s|sec|seconds)\s*:?\s*(?P<t>\d{1,15}(?:\.\d{1,9})?))?\s*$"
)
_SUM = re.compile(r"^\s*[\w$.]+(?:\s*\+\s*[\w$.]+)*\s*=\s*\d+(?:\.\d+)?\s*(?:(?:ms|us|ns|s)\s*)?$")
_COMMAND = re.compile(
    r"^(?!#!)\s*(?:\[[^\]]*\][#$]\s*|\S*[#$%>]\s*)?(?:pfexec\s+|sudo\s+)?(?:\S*/)?"
    r"(?P<tool>dtrace|bpftrace)\s+(?:-\w|')"
)
_DTRACE_MSG = re.compile(r"^dtrace:\s+\S")
_ELISION = re.compile(r"^\s*(?:\[\s*\.\.\.\s*\]|\.\.\.)\s*$")
_CPU_HEADER = re.compile(r"^\s*CPU\s+ID\s+FUNCTION:NAME\s*$")
_FIRE = re.compile(r"^\s*\d+\s+\d+\s+[\w$.`-]*:[\w$.:-]*(?:\s+.*)?$")
# user@host# as a token; the part before the first @ excludes @, or a run of @ backtracks
# quadratically (a 24 KB token of them took 3 s)
_PROMPT = re.compile(r"^[^\s@]*@\S*[#$]$|^\S*\][#$]$|^[#$]$")
# bpftrace
_BPF_ATTACH = re.compile(r"^Attaching \d+ probes?\.\.\.\s*$")
_BPF_VALUE = re.compile(r"^@(?P<name>\w*)(?:\[(?P<key>[^\]]*)\])?:\s*(?P<value>-?\d{1,15})\s*$")
_BPF_LABEL = re.compile(r"^@(?P<name>\w*)(?:\[(?P<key>[^\]]*)\])?:\s*$")
_BPF_STACK_OPEN = re.compile(r"^@(?P<name>\w*)\[(?P<first>[^\]]*)$")
_BPF_STACK_CLOSE = re.compile(r"^\s*\]:\s*(?P<value>\d{1,15})\s*$")
_BPF_FRAME = re.compile(
    r"^\s+(?:[0-9a-fA-F]+\s+)?(?P<func>[^\s+]+?)(?:\+\d+|\+0x[0-9a-fA-F]+)?(?:\s+\((?P<module>[^()]+)\))?\s*$"
)
_BPF_BUCKET = re.compile(
    r"^\s*(?:\[(?P<lo>-?\d{1,15}(?:\.\d+)?[KMGTP]?)(?:,\s*(?:-?[\d.]+[KMGTP]?|\.\.\.))?[\])]"
    r"|\(\.\.\.,\s*(?P<under>-?\d{1,15}(?:\.\d+)?[KMGTP]?)\))\s+(?P<count>\d{1,15})\s+\|[@ ]*\|\s*$"
)
# BCC tools (biolatency, funclatency, runqlat, ...): `     usecs   : count     distribution`
# then `   128 -> 255    : 7    |****     |`; a `disk = 'sda'` line names each histogram of -D/-P
_BCC_HEADER = re.compile(r"^\s*(?P<unit>[A-Za-z_][\w-]{0,30})\s+:\s+count\s+distribution\s*$")
_BCC_ROW = re.compile(
    r"^\s*(?P<lo>\d{1,15})\s*->\s*\d{1,15}\s*:\s*(?P<count>\d{1,15})\s*(?:\|[*\s]*\|?)?\s*$"
)
_TRACING = re.compile(r"^Tracing\b.{0,100}(?:Hit Ctrl-C to end|Ctrl-C to end)\.?\s*$")
_BCC_LABEL = re.compile(r"^\s*[A-Za-z_][\w ]{0,30}\s+=\s+\S.{0,100}$")
_SUFFIX = {"K": 1024.0, "M": 1024.0**2, "G": 1024.0**3, "T": 1024.0**4, "P": 1024.0**5}
_TIME_MS = {"ms": 1.0, "us": 1e-3, "ns": 1e-6, "s": 1000.0, "sec": 1000.0, "seconds": 1000.0}


def _row(line: str) -> tuple[list[str], str] | None:
    """`keys... count`: the keys and the count text, split on whitespace (linear, no regex)."""
    tokens = line.split()
    if len(tokens) < 2 or not _INT.match(tokens[-1]):
        return None
    return tokens[:-1], tokens[-1]


def _bpf_number(text: str) -> float:
    if text[-1] in _SUFFIX:
        return float(text[:-1]) * _SUFFIX[text[-1]]
    return float(text)


def _hist_value(text: str) -> float:
    """lquantize edges: `< 0` is below 0 (read as -1), `>= 30` is 30 or more (read as 30)."""
    text = text.replace(" ", "")
    if text.startswith("<"):
        return float(text[1:]) - 1
    if text.startswith(">="):
        return float(text[2:])
    return float(text)


def _modes(buckets: list[tuple[float, float]], total: float) -> list[float]:
    """The peaks a person sees in a histogram: buckets holding at least 5 % of the values that
    rise above their neighbours, with a valley below half the smaller peak between two of
    them (biolatency's cache hits at 1-2 ms and misses at 8-16 ms are two modes)."""
    peaks: list[tuple[float, float]] = []  # (value, count)
    valley = float("inf")
    counts = [c for _, c in buckets]
    for i, (value, count) in enumerate(buckets):
        before = counts[i - 1] if i else -1.0
        after = counts[i + 1] if i + 1 < len(counts) else -1.0
        if count >= 0.05 * total and count > before and count >= after:
            if peaks and valley >= min(peaks[-1][1], count) / 2:
                if count > peaks[-1][1]:
                    peaks[-1] = (value, count)  # no real dip: the same mode
            else:
                peaks.append((value, count))
            valley = count
        valley = min(valley, count)
    return [v for v, _ in peaks]


def _frame(module: str | None, func: str | None) -> Frame:
    if func is not None and (not func or _ADDRESS.match(func) or set(func) <= {"?"}):
        func = None
    return Frame(function=func, module=module or None)


@lru_cache(maxsize=8)
def _flat_rows(
    line: str,
) -> tuple[tuple[str, tuple[tuple[str | None, str, float], ...]], ...] | None:
    """Rows of a table whose line breaks were lost: repeated `module function count` triples (or
    `name count` pairs), possibly several outputs each after a shell prompt. None if not that."""
    tokens = line.split()
    if len(tokens) < 8:
        return None
    numbers = sum(t.isdigit() for t in tokens)
    # every row names its function with a token that is not a number: a line of numbers
    # alone (a table of counters, a hex dump) cannot be one, however long
    if numbers < 4 or numbers * 4 < len(tokens) or len(tokens) - numbers < 4:
        return None
    segments: list[list[str]] = [[]]
    for tok in tokens:
        if _PROMPT.match(tok) and segments[-1]:
            segments.append([])
        segments[-1].append(tok)
    outputs = []
    triples = pairs = 0
    for seg in segments:
        rows_t, cmd_t = _scan(seg, 3)
        rows_p, cmd_p = _scan(seg, 2)
        if rows_t and len(rows_t) * 3 >= len(rows_p) * 2:
            outputs.append((" ".join(cmd_t)[:120], tuple(rows_t)))
            triples += len(rows_t)
        elif rows_p:
            outputs.append((" ".join(cmd_p)[:120], tuple(rows_p)))
            pairs += len(rows_p)
    if triples >= 4 or pairs >= 8:
        return tuple(outputs)
    return None


def _scan(tokens: list[str], width: int) -> tuple[list[tuple[str | None, str, float]], list[str]]:
    rows: list[tuple[str | None, str, float]] = []
    command: list[str] = []
    i = 0
    while i < len(tokens):
        chunk = tokens[i : i + width]
        if (
            len(chunk) == width
            and chunk[-1].isdigit()
            and not chunk[-2][0].isdigit()
            and _INT.match(chunk[-1])
            and _FUNC.match(chunk[-2])
        ):
            if width == 2:
                rows.append((None, chunk[0], float(chunk[1])))
                i += 2
                continue
            if _MODULE.match(chunk[0]):
                rows.append((chunk[0], chunk[1], float(chunk[2])))
                i += 3
                continue
        if not rows and not _PROMPT.match(tokens[i]):
            command.append(tokens[i])
        i += 1
    return rows, command


@dataclass
class _Hist:
    label: str
    buckets: list[tuple[float, float]] = field(default_factory=list)


@dataclass
class _State:
    """Everything the parser accumulates (kept apart from the raw text so facts() can copy it)."""

    stats: FunctionStats = field(default_factory=FunctionStats)
    probe_count: dict[str, float] = field(default_factory=dict)
    probe_time_ms: dict[str, float] = field(default_factory=dict)
    modules: dict[str, str] = field(default_factory=dict)
    max_count: float = 0.0
    frames: list[Frame] = field(default_factory=list)
    frames_dropped: int = 0
    bpf_key: str | None = None  # inside a bpftrace `@[` ... `]: N` multi-line key
    pending_row: tuple[str, float, str] | None = None  # `keys count` that may be a label
    label: str | None = None  # a line that may name the next histogram
    hist: _Hist | None = None
    hists: dict[str, dict] = field(default_factory=dict)
    hist_rows: list[dict] = field(default_factory=list)
    uncounted_stacks: int = 0
    seen: set[str] = field(default_factory=set)
    notes: list[str] = field(default_factory=list)
    outputs: list[dict] = field(default_factory=list)
    keys_dropped: int = 0
    after_blank: bool = False  # the last line taken was blank: a new table may start


class DtraceParser(Parser):
    format: ClassVar[Format] = "dtrace"

    def __init__(self) -> None:
        super().__init__()
        self.s = _State()
        self._finishing = False  # set by finish(): _settled closes the state itself
        self._frame_cache: dict[tuple[str, str], Frame] = {}  # for feed_run
        self._native_cache: dict[str, Frame] = {}  # the C reader's, keyed "module\0func"

    # -- detection ------------------------------------------------------------------------------

    @classmethod
    def start_score(cls, line: str) -> int:
        if len(line) > MAX_SHAPED_LINE:
            return 2 if _flat_rows(line) is not None else 0
        if (
            _HIST_HEADER.match(line)
            or _BCC_HEADER.match(line)
            or _TRACING.match(line)
            or _COMMAND.match(line[:256])
            or _DTRACE_MSG.match(line)
            or _CPU_HEADER.match(line)
            or _EXECUTED.match(line)
            or _FRAME_COUNT.match(line)
            or _BPF_ATTACH.match(line)
            or _BPF_VALUE.match(line)
            or (_BPF_LABEL.match(line) and line.startswith("@"))
        ):
            return 2
        if _FIRE.match(line) and ":" in line.split()[2]:
            return 2
        if _flat_rows(line) is not None:
            return 2
        if TICK_FRAME.match(line):
            return 1
        row = _row(line)
        if row and line[:1].isspace():
            # printa() indents its rows; an unindented `word 123` is more often a shell command
            # (`pfiles 5522`) or prose, so it may continue a table but does not start one
            # and function names have lower case: `CHUNK  32768` is a SQL storage clause
            keys = row[0]
            if len(keys) == 1 and _IDENT.match(keys[0]) and _LOWER.search(keys[0]):
                return 1
            if len(keys) == 2 and _MODULE.match(keys[0]) and _FUNC.match(keys[1]):
                return 1 if _LOWER.search(keys[1]) else 0
        return 0

    # -- feeding --------------------------------------------------------------------------------

    fast = True

    def claims(self, line: str) -> bool:  # type: ignore[override]
        """Inside DTrace output: ustack() frames (`module`func+0x..`, which score only 1, as
        mdb's frames do), a stack's count line and blank lines continue the block. Claiming only
        spares the detector asking every other format about each of them (a ustack()
        aggregation is mostly such lines, and their offsets make them unique); what the block
        does with the line is what `feed` says."""
        if not self.lines:
            return False
        if not line.strip():
            return True
        return len(line) <= MAX_SHAPED_LINE and bool(TICK_FRAME.match(line) or _COUNT.match(line))

    def feed_run(self, text: str, pos: int, endpos: int, plain: dict) -> tuple[int, int]:
        """Runs of lines the detector would hand this block without its per-line work: ustack()
        frames and count lines read with one anchored regex (the frame objects from a small
        cache: the same functions recur in every stack), the rest fed one by one (see
        `Parser.feed_one`)."""
        taken = 0
        feed_one = self.feed_one
        fast = _FAST.match
        s = self.s
        cache = self._frame_cache
        limit = endpos + 1 if endpos < len(text) else endpos
        native = functions.NATIVE and text.isascii()
        while pos < endpos:
            if (
                native
                and self.lines
                and s.hist is None
                and s.bpf_key is None
                and s.pending_row is None
            ):
                pos, n = self._native_run(text, pos, endpos)
                taken += n
                if pos >= endpos:
                    break
            m = fast(text, pos, limit)
            if (
                m is not None
                and self.lines  # as `claims` (the detector runs a block past its first lines)
                and m.end() - pos <= MAX_SHAPED_LINE
                and s.hist is None
                and s.bpf_key is None
                and s.pending_row is None
                and (m[3] is None or s.frames)
            ):
                s.after_blank = False
                if m[3] is not None:  # the count closing a stack
                    self._end_stack(float(m[3]))
                elif len(s.frames) >= MAX_FRAMES:
                    s.frames_dropped += 1
                else:
                    key = (m[1], m[2])
                    frame = cache.get(key)
                    if frame is None:
                        if len(cache) >= 4096:
                            cache.clear()
                        frame = cache[key] = _frame(*key)
                    s.frames.append(frame)
                taken += 1
                pos = m.end()
                continue
            nxt = feed_one(text, pos, endpos, plain)
            if nxt < 0:
                break
            taken += 1
            pos = nxt
        return min(pos, endpos + 1) if taken else pos, taken

    def _native_run(self, text: str, pos: int, endpos: int) -> tuple[int, int]:
        """Frame and count lines from `pos` read by the C reader (functions.stack_frames) with
        what the loop of `feed_run` does for them, up to the first line it cannot vouch for."""
        s = self.s
        pos, n, items, _, dropped, _, _, _ = functions.stack_frames(
            text,
            pos,
            endpos,
            24,  # ustack() frames and count lines
            len(s.frames),
            -1,
            MAX_SHAPED_LINE,
            MAX_FRAMES,
            self._native_cache,
            _frame,
        )
        if n:
            s.after_blank = False
            for item in items:
                if item.__class__ is float:
                    self._end_stack(item)
                else:
                    s.frames.extend(item)
            s.frames_dropped += dropped
        return pos, n

    def feed(self, line: str) -> bool:
        s = self.s
        if not line.strip():
            if not (s.frames or s.pending_row or s.hist or s.label or s.bpf_key is not None):
                return False
            self._flush_row()
            self._end_stack(None)
            self._end_hist()
            s.label = None
            s.bpf_key = None
            s.after_blank = True
            return True
        if s.bpf_key is not None:
            return len(line) <= MAX_SHAPED_LINE and self._bpf_stack_line(line)
        if s.hist is not None and len(line) <= MAX_SHAPED_LINE:
            if m := _HIST_ROW.match(line):
                self._bucket(_hist_value(m["value"]), float(m["count"]))
                return True
            if m := _BPF_BUCKET.match(line):
                value = _bpf_number(m["lo"]) if m["lo"] else _bpf_number(m["under"]) - 1
                self._bucket(value, float(m["count"]))
                return True
            if m := _BCC_ROW.match(line):
                self._bucket(float(m["lo"]), float(m["count"]))
                return True
            if "|" in line and re.match(r"^\s*[\[(<>=\d-]", line):
                self.malformed += 1  # a histogram row we cannot read
                return True
        handler = self._classify(line)
        if handler is None:
            return False
        s.after_blank = False
        if handler != self._hist_header:
            self._flush_row()
        if s.hist is not None:
            self._end_hist()
        handler(line)
        return True

    def _classify(self, line: str):
        """The handler for this line, or None if it is not DTrace output. Changes nothing."""
        s = self.s
        if len(line) > MAX_SHAPED_LINE:
            return self._flat if _flat_rows(line) is not None else None
        if _HIST_HEADER.match(line):
            return self._hist_header
        if _BCC_HEADER.match(line):
            return self._bcc_header
        if _TRACING.match(line):
            return self._tracing
        if "bcc" in s.seen and "=" in line and _BCC_LABEL.match(line):
            return self._label_line
        if _FRAME_COUNT.match(line):
            return self._frame_count
        if TICK_FRAME.match(line):
            return self._frame_line
        if _COUNT.match(line):
            return self._count if (s.frames or s.seen) else None
        if _EXECUTED.match(line):
            return self._executed
        if _BPF_VALUE.match(line):
            return self._bpf_value
        if line.rstrip().endswith(("[", ",")) and _BPF_STACK_OPEN.match(line.rstrip()):
            return self._bpf_open
        if _BPF_LABEL.match(line):
            return self._bpf_label
        if _BPF_ATTACH.match(line) or (line.strip() == "^C" and s.seen):
            return self._bpftrace_note
        if _COMMAND.match(line[:256]) or _DTRACE_MSG.match(line) or _CPU_HEADER.match(line):
            return self._note
        if _FIRE.match(line) and ":" in line.split()[2]:
            return self._fire
        if _ELISION.match(line) or (_SUM.match(line) and s.seen):
            return self._note
        if _flat_rows(line) is not None:
            return self._flat
        row = _row(line)
        if row and len(row[0]) <= 4 and all(_KEY.match(k) for k in row[0]):
            keys = row[0]
            if s.after_blank and keys[-1] in s.probe_count and s.pending_row is None:
                return None  # a table repeating a name already counted: the next output
            return self._table_row
        word = line.strip()
        if (
            s.seen
            and " " not in word
            and _KEY.match(word)
            and len(word) < 80
            and _LOWER.search(word)
        ):
            return self._label_line
        return None

    # -- handlers -------------------------------------------------------------------------------

    def _note(self, line: str) -> None:
        s = self.s
        tool = _COMMAND.match(line[:256])
        if tool:
            s.seen.add("command")
            if tool["tool"] == "bpftrace":
                s.seen.add("bpftrace")
        elif _DTRACE_MSG.match(line) or _CPU_HEADER.match(line):
            s.seen.add("dtrace")
        elif _SUM.match(line):
            s.seen.add("printf")
        if len(s.notes) < MAX_NOTES and not _ELISION.match(line):
            s.notes.append(line.strip()[:200])

    def _bpftrace_note(self, line: str) -> None:
        self.s.seen.add("bpftrace")

    def _fire(self, line: str) -> None:
        self.s.seen.add("probe")
        self.s.label = None

    def _set_count(self, key: str, count: float, module: str | None, function: bool) -> None:
        s = self.s
        if key not in s.probe_count and len(s.probe_count) >= MAX_KEYS:
            s.keys_dropped += 1
            return
        s.probe_count[key] = max(s.probe_count.get(key, 0.0), count)
        s.max_count = max(s.max_count, count)
        if module and key not in s.modules and len(s.modules) < MAX_KEYS:
            s.modules[key] = module
        if function:
            s.stats.add_counted(key, count, module)

    def _table_row(self, line: str) -> None:
        row = _row(line)
        assert row is not None
        keys = " ".join(row[0])
        self.s.pending_row = (keys, float(row[1]), f"{keys} {row[1]}")

    def _flush_row(self) -> None:
        """The held `keys count` line was not a histogram label: it is a table row."""
        s = self.s
        if s.pending_row is None:
            return
        keys, count, _ = s.pending_row
        s.pending_row = None
        s.seen.add("table")
        parts = keys.split()
        if len(parts) == 1:
            self._set_count(parts[0], count, None, bool(_FUNC.match(parts[0])))
        elif len(parts) == 2 and _MODULE.match(parts[0]) and _FUNC.match(parts[1]):
            self._set_count(parts[1], count, parts[0], True)
        else:
            self._set_count(keys, count, None, False)

    def _label_line(self, line: str) -> None:
        self.s.label = line.strip()

    def _frame_line(self, line: str) -> None:
        m = TICK_FRAME.match(line)
        assert m is not None
        s = self.s
        if len(s.frames) >= MAX_FRAMES:
            s.frames_dropped += 1
            return
        s.frames.append(_frame(m["module"], m["func"]))

    def _end_stack(self, count: float | None) -> None:
        s = self.s
        if not s.frames:
            return
        if count is None:
            s.uncounted_stacks += 1
        else:
            s.seen.add("ustack")
            s.max_count = max(s.max_count, count)
        s.stats.add_stack(s.frames, 1.0 if count is None else count)
        s.frames = []

    def _count(self, line: str) -> None:
        m = _COUNT.match(line)
        assert m is not None
        if self.s.frames:
            self._end_stack(float(m["count"]))
        else:
            self._set_count("@", float(m["count"]), None, False)

    def _frame_count(self, line: str) -> None:
        m = _FRAME_COUNT.match(line)
        assert m is not None
        self._end_stack(None)
        self.s.seen.add("table")
        func = None if _ADDRESS.match(m["func"]) else m["func"]
        if func:
            self._set_count(func, float(m["count"]), m["module"], True)

    def _executed(self, line: str) -> None:
        m = _EXECUTED.match(line)
        assert m is not None
        s = self.s
        s.seen.add("printf")
        name = m["name"]
        self._set_count(name, float(m["n"]), None, False)
        if m["t"] is not None and (name in s.probe_time_ms or len(s.probe_time_ms) < MAX_KEYS):
            ms = float(m["t"]) * _TIME_MS[m["unit"]]
            s.probe_time_ms[name] = max(s.probe_time_ms.get(name, 0.0), ms)

    def _flat(self, line: str) -> None:
        s = self.s
        s.seen.add("table")
        outputs = _flat_rows(line) or ()
        for command, rows in outputs:
            for module, func, count in rows:
                self._set_count(func, count, module, True)
            if len(s.outputs) < MAX_NOTES:
                s.outputs.append({"command": command, "rows": len(rows)})
        if len(outputs) > 1 and len(s.notes) < MAX_NOTES:
            s.notes.append(f"{len(outputs)} outputs on one line (line breaks lost in the paste)")

    # -- histograms -----------------------------------------------------------------------------

    def _hist_header(self, line: str) -> None:
        s = self.s
        label = s.label or (s.pending_row[2] if s.pending_row else "")
        s.pending_row = None
        s.label = None
        self._start_hist(label)

    def _tracing(self, line: str) -> None:
        """BCC's and bpftrace's 'Tracing ... Hit Ctrl-C to end.': Linux eBPF output follows."""
        self.s.seen.add("bcc")

    def _bcc_header(self, line: str) -> None:
        m = _BCC_HEADER.match(line)
        assert m is not None
        s = self.s
        s.seen.add("bcc")
        # `disk = 'sda'` names the table: 'disk sda usecs'
        named = " ".join(s.label.replace("=", " ").replace("'", " ").split()) if s.label else ""
        label = f"{named} {m['unit']}" if named else m["unit"]
        s.label = None
        self._start_hist(label)

    def _start_hist(self, label: str) -> None:
        s = self.s
        self._end_stack(None)
        s.seen.add("hist")
        s.hist = _Hist(label=" ".join(label.split()) or "@")

    def _bucket(self, value: float, count: float) -> None:
        hist = self.s.hist
        assert hist is not None
        if len(hist.buckets) < MAX_BUCKETS:
            hist.buckets.append((value, count))

    def _end_hist(self) -> None:
        s = self.s
        hist, s.hist = s.hist, None
        if hist is None or not hist.buckets or len(s.hists) >= MAX_HISTOGRAMS:
            return
        key, n = hist.label, 1
        while key in s.hists:
            n += 1
            key = f"{hist.label} #{n}"
        total = sum(c for _, c in hist.buckets)
        summary: dict = {"count": total}
        used = [v for v, c in hist.buckets if c > 0]
        if used:
            summary["max"] = max(used)
            ordered = sorted(hist.buckets)
            for name, share in (("p50", 0.5), ("p90", 0.9), ("p99", 0.99)):
                running = 0.0
                for value, count in ordered:
                    running += count
                    if running >= total * share:
                        summary[name] = value
                        break
            modes = _modes(ordered, total)
            summary["modes"] = float(len(modes))
            summary["mode_values"] = modes
        s.hists[key] = summary
        buckets = [{"value": v, "count": c} for v, c in hist.buckets[:100]]
        s.hist_rows.append({"label": key, **summary, "buckets": buckets})

    # -- bpftrace -------------------------------------------------------------------------------

    def _bpf_value(self, line: str) -> None:
        m = _BPF_VALUE.match(line)
        assert m is not None
        s = self.s
        s.seen.add("bpftrace")
        key = (m["key"] or "").strip() or m["name"] or "@"
        # map keys are as often process names or pids as functions: counts only, no frames
        self._set_count(key, float(m["value"]), None, False)

    def _bpf_label(self, line: str) -> None:
        m = _BPF_LABEL.match(line)
        assert m is not None
        self.s.seen.add("bpftrace")
        name = "@" + m["name"] + (f"[{m['key']}]" if m["key"] is not None else "")
        self._start_hist(name)

    def _bpf_open(self, line: str) -> None:
        m = _BPF_STACK_OPEN.match(line)
        assert m is not None
        self._end_stack(None)
        self.s.seen.add("bpftrace")
        self.s.bpf_key = m["first"].strip().rstrip(",").strip()

    def _bpf_stack_line(self, line: str) -> bool:
        s = self.s
        if m := _BPF_STACK_CLOSE.match(line):
            s.bpf_key = None
            self._end_stack(float(m["value"]))
            return True
        if m := _BPF_FRAME.match(line):
            if len(s.frames) < MAX_FRAMES:
                module = m["module"].strip() if m["module"] else None
                s.frames.append(_frame(module, m["func"].rstrip(",")))
            else:
                s.frames_dropped += 1
            return True
        return False

    # -- results --------------------------------------------------------------------------------

    def _close_pending(self) -> None:
        """Close the pending row, stack and histogram (each a no-op when none is open)."""
        self._flush_row()
        self._end_stack(None)
        self._end_hist()

    def _settled(self) -> _State:
        """The state with pending rows, stacks and histograms closed: a copy while lines may
        still come, the state itself once finish() has begun. No line is fed after finish, and
        its two deep copies (facts, then the stack test) were ~5 % of analysing the seed
        incidents at 10,000 entries (cProfile of the web pool's analysis)."""
        if self._finishing:
            self._close_pending()
            return self.s
        saved = self.s
        self.s = copy.deepcopy(saved)
        try:
            self._close_pending()
            return self.s
        finally:
            self.s = saved

    def _plain_stack(self, s: _State) -> bool:
        return s.uncounted_stacks > 0 and not s.seen and not s.probe_count

    def facts(self) -> tuple[dict, dict, list[str], Platform | None]:
        s = self._settled()
        facts: dict = s.stats.facts()
        if s.probe_count:
            facts["probe.count"] = dict(s.probe_count)
        if s.probe_time_ms:
            facts["probe.time_ms"] = dict(s.probe_time_ms)
        if s.max_count:
            facts["probe.max_count"] = s.max_count
        for name in ("p50", "p90", "p99", "max", "count", "modes"):
            table = {k: float(v[name]) for k, v in s.hists.items() if name in v}
            if table:
                facts[f"hist.{name}"] = table
        details = s.stats.details()
        if s.probe_count:
            ranked = sorted(s.probe_count.items(), key=lambda kv: (-kv[1], kv[0]))[:50]
            details["probes"] = [
                {
                    "name": k,
                    "count": v,
                    "module": s.modules.get(k),
                    "time_ms": s.probe_time_ms.get(k),
                }
                for k, v in ranked
            ]
        if s.hist_rows:
            details["histograms"] = s.hist_rows
        if s.outputs:
            details["outputs"] = s.outputs
        if s.notes:
            details["notes"] = s.notes
        if s.uncounted_stacks:
            details["stacks_without_count"] = s.uncounted_stacks
        if s.frames_dropped or s.keys_dropped:
            details["dropped"] = {"frames": s.frames_dropped, "keys": s.keys_dropped}
        identifiers = s.stats.identifiers()
        extra = sorted(s.probe_count, key=lambda k: -s.probe_count[k])[:100]
        identifiers += [k for k in extra if k not in identifiers and " " not in k]
        platform: Platform = "linux" if s.seen & {"bpftrace", "bcc"} else "solaris"
        return facts, details, identifiers, platform

    def finish(self, start_line: int, end_line: int) -> Block:
        self._finishing = True
        block = super().finish(start_line, end_line)
        if self._plain_stack(self._settled()):
            block = block.model_copy(update={"format": "stack"})
        return block
