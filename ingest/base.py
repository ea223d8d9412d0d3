"""The one interface every format parser implements.

Parsers are incremental so a 1 GB capture parses in bounded memory: the detector feeds lines one
at a time and asks for the finished Block at the end. A parser keeps aggregates (counts, sums,
top-N lists), never the whole input.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import ClassVar

from ingest.model import TEXT_CAP, Block, Format, Platform

MAX_LINE = 64 * 1024  # longer lines are cut: nothing we parse needs more, and regexes stay cheap


def line_at(text: str, pos: int, endpos: int) -> tuple[int, str]:
    """The line of `text` at `pos` as the runs (`feed_run`'s steps) look at it: where it ends (its
    newline or `endpos`) and its text without trailing CRs, which the detector strips before
    `feed` (the length test against MAX_LINE is the caller's: it counts the CRs)."""
    nl = text.find("\n", pos, endpos)
    end = endpos if nl < 0 else nl
    return end, text[pos:end].rstrip("\r")


class Parser(ABC):
    format: ClassVar[Format]
    # The platforms this format's tool runs on: when two formats read the same lines alike
    # (bare syscall lines: strace or truss), the one the context so far points to wins.
    platforms: ClassVar[tuple[str, ...]] = ()

    @classmethod
    @abstractmethod
    def start_score(cls, line: str) -> int:
        """How strongly `line` says a block of this format starts here.

        0: not this format; 1: plausible (a line of this format, but also of others);
        2: certain (a header or a shape no other format has). The detector opens a block on 2,
        or on 1 when the next lines agree.
        """

    def __init__(self) -> None:
        self.lines = 0
        self.malformed = 0
        self._text: list[str] = []
        self._text_bytes = 0
        self.text_truncated = False

    @abstractmethod
    def feed(self, line: str) -> bool:
        """Consume one line (without its newline). Return False if the line does not belong to
        this block, so the detector can close it; the parser must then be unchanged by it.

        A line that belongs to the format but cannot be parsed is counted in `self.malformed` and
        accepted (returns True): malformed lines are never fatal. The detector itself counts
        accepted lines and keeps their text (`keep`), so parsers need not.
        """

    @classmethod
    def claims(cls, line: str) -> bool:
        """Does `line` continue an open block of this format whatever other formats make of it?

        For a line prefix only this format prints (truss's `pid:`): behind it, another format's
        header shape is part of the capture, not the start of a new block. Saying so also spares
        the detector asking every other format about each such line, which the fast path could
        not afford for the many unique -v lines of a large capture.

        The detector asks the open parser itself, so a parser may also say yes from what it has
        read (a raw 10046 trace claims the SQL text between PARSING IN CURSOR and END OF STMT,
        as long as the cursor's len= allows)."""
        return False

    # Blocks of this format come many to an input (an archive of AWR reports, one block each):
    # the detector keeps SHARED_TEXT_CAP of their text in total instead of TEXT_CAP each, so
    # memory does not grow with the number of reports.
    shared_text: ClassVar[bool] = False

    # Optional fast path for long runs of one format (truss, strace). The detector calls it only
    # while this parser's block is open and its first lines are in the context; it counts the
    # lines taken and keeps their text itself.
    fast = False

    def feed_run(self, text: str, pos: int, endpos: int, plain: dict) -> tuple[int, int]:
        """Consume whole lines of `text` from `pos` (a line start) up to `endpos` (a newline or
        the end of the text); return (where it stopped, lines taken). It may take only lines that
        `feed` would accept exactly as it would have, and that the detector would have handed to
        this parser: lines this parser's `start_score` scores 2 or it `claims`, or lines that
        `plain` (the detector's memo, keyed (type(self), line)) says no other format starts on:
        `plain.get(key) is False`. The detector's memo (ingest/detect.py:Answers) works out an
        answer it does not hold yet, so ask it after the cheaper tests; `dict.get(plain, key)`
        asks only what it holds (a plain dict, as tests pass, holds what it was given). The lines
        contain no fence and no control character; trailing CR characters are part of the line
        here (the detector strips them before `feed`). It must stop at a line longer than
        MAX_LINE (the detector cuts those) and at the first line it cannot vouch for, which then
        takes the ordinary path."""
        return pos, 0

    def feed_one(self, text: str, pos: int, endpos: int, plain: dict) -> int:
        """For `feed_run`: feed the line of `text` at `pos` through `feed`, as the detector would,
        if it would hand it to this parser (this parser claims it or scores it 2, or `plain` says
        no other format starts on it) and it is not longer than MAX_LINE. Returns where the next
        line starts, or -1 when the run must stop here (the parser then unchanged by it). At
        `endpos` there is no line left: a `run_step` that took the run's last line and asks for
        the ordinary path must not have an empty line fed (the AWR reader's tests found one)."""
        if pos >= endpos:
            return -1
        nl = text.find("\n", pos, endpos)
        end = endpos if nl < 0 else nl
        if end - pos > MAX_LINE:
            return -1
        line = text[pos:end].rstrip("\r")
        if not self.handed(line, plain) or not self.feed(line):
            return -1
        return end + 1

    def handed(self, line: str, plain: dict) -> bool:
        """Would the detector hand `line` to this open block? What it asks before feeding, in
        its order: a known answer, then the parser's own tests, then (the detector's memo works
        a missing answer out, asking every other format the prefilter admits) whether another
        format starts on it. The order only saves work (each test is pure): asking the memo
        first made it ask the other formats about every Load Profile row of an AWR archive."""
        me = type(self)
        key = (me, line)
        return (
            dict.get(plain, key) is False
            or self.claims(line)
            or me.start_score(line) == 2
            or plain.get(key) is False
        )

    def feed_lines(self, text: str, pos: int, endpos: int, plain: dict) -> tuple[int, int]:
        """A `feed_run` made of `feed_one` alone: line after line until one must take the
        ordinary path. For a parser whose runs have no cheaper shape to read than its own
        `feed` (sar's day of rows per section: 9 % less CPU on a 2 MB capture than the
        detector's per-line work); vmstat and iostat runs are 3-8 rows between headers, where
        setting up each run cost more than it saved (3-4 % more), so they do not use it."""
        taken = 0
        feed_one = self.feed_one
        while pos < endpos:
            nxt = feed_one(text, pos, endpos, plain)
            if nxt < 0:
                break
            pos = nxt
            taken += 1
        return pos, taken

    # What `run_step` tells `feed_steps` to do next (see there).
    STEP_TOOK: ClassVar[int] = 1
    STEP_FEED: ClassVar[int] = 0
    STEP_STOP: ClassVar[int] = -1

    def run_step(self, text: str, pos: int, endpos: int, plain: dict) -> tuple[int, int, int]:
        """For `feed_steps`: what this format reads at `pos` cheaper than `feed_one` (a C core's
        rows, a header read before). Returns (where it got to, lines it took, what next):
        STEP_TOOK when it took the line it got to as well (the loop goes on after it),
        STEP_FEED when that line goes through `feed_one`, STEP_STOP when the run ends there."""
        return pos, 0, self.STEP_FEED

    def feed_steps(self, text: str, pos: int, endpos: int, plain: dict) -> tuple[int, int]:
        """A `feed_run` of `run_step` and `feed_one`: the loop the fast parsers share (pidstat,
        prstat, top, iostat, sar), so each writes only its own step. `feed_lines` is this loop
        with no step (one call less per line for a parser that has none)."""
        taken = 0
        step = self.run_step
        feed_one = self.feed_one
        feed = self.STEP_FEED
        while pos < endpos:
            pos, n, how = step(text, pos, endpos, plain)
            taken += n
            if how != feed:
                if how < 0:
                    break
                continue
            nxt = feed_one(text, pos, endpos, plain)
            if nxt < 0:
                break
            pos = nxt
            taken += 1
        return pos, taken

    def header_step(
        self, text: str, pos: int, endpos: int, taken: int, header: Callable, use: Callable
    ) -> tuple[int, int, int]:
        """The end of pidstat's and prstat's `run_step` (after their C rows): a blank line ends
        the run (feed refuses it; the detector waits for the next), a header read before
        (`header(line)` not None) is set again by `use` as feed would, whatever came before;
        any other line goes through `feed_one`. `taken`: lines the step took before `pos`."""
        end, line = line_at(text, pos, endpos)
        if not line:
            return pos, taken, self.STEP_STOP
        got = header(line) if end - pos <= MAX_LINE else None
        if got is None:
            return pos, taken, self.STEP_FEED
        use(got)
        return end + 1, taken + 1, self.STEP_TOOK

    @abstractmethod
    def facts(self) -> tuple[dict, dict, list[str], Platform | None]:
        """Return (facts, details, identifiers, platform) for the lines fed so far."""

    # -- shared helpers -------------------------------------------------------------------------

    def keep(self, line: str) -> None:
        """Remember raw text up to TEXT_CAP for text conditions and display."""
        if self.text_truncated:
            return
        size = len(line) + 1
        if self._text_bytes + size > TEXT_CAP:
            self.text_truncated = True
            return
        self._text.append(line)
        self._text_bytes += size

    def finish(self, start_line: int, end_line: int) -> Block:
        facts, details, identifiers, platform = self.facts()
        return Block(
            format=self.format,
            platform=platform,
            start_line=start_line,
            end_line=end_line,
            lines=self.lines,
            malformed_lines=self.malformed,
            facts=facts,
            details=details,
            identifiers=identifiers,
            text="\n".join(self._text),
            text_truncated=self.text_truncated,
        )
