"""Find evidence blocks in arbitrary text and parse each with its format's parser, in one pass.

Input may be a Slack message with prose around ``` fences, a file mixing several outputs, a
capture with a shell prompt on top, or a 1 GB trace: everything is handled line by line, and
each line is looked at by at most a few parsers. What is not evidence becomes context.

How a block opens: a line one parser scores 2 (a header or an unmistakable shape) opens it at
once; lines scored 1 open tentative candidates that must accept the next lines too
(CONFIRM_LINES in all) before they count, so a stray `name  123` line is not a DTrace table.
A block closes when its parser rejects a line, when a fence opens or closes, or when another
parser scores a line 2 that the current parser does not.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Iterable, Iterator
from types import ModuleType
from typing import BinaryIO

try:  # CPython's own regex parser, private but only read: the gates (`_gate`) parse shapes with it
    from re import _compiler as _sre_compiler
    from re import _constants as _sre
    from re import _parser as _sre_parser
except ImportError:  # pragma: no cover - a Python without them: no gates, every shape searched
    _sre = None

from ingest.base import MAX_LINE, Parser
from ingest.context import ContextExtractor
from ingest.model import FORMATS, SHARED_TEXT_CAP, TEXT_CAP, Block, Evidence
from ingest.parsers import REGISTRY, Registered, all_parsers, load, loaded

try:  # built by `pip install` (setup.py); without it first_bad's job is done with regexes
    from ingest import _syscore
except ImportError:  # pragma: no cover - a checkout used without installing
    _syscore = None
try:  # every prefilter word found in one pass (Aho-Corasick, in Rust)
    import ahocorasick_rs
except ImportError:  # pragma: no cover - the same answer from one `in` test per word
    ahocorasick_rs = None

CONFIRM_LINES = 3
# Two candidates that read every line alike (bare syscall lines: strace or truss) wait this many
# lines for one that only one of them prints before the tie is broken.
TIE_LINES = 64
HAND_OVER_LINES = 3  # a block this short may still go to the format its next line starts
CONTEXT_LINES_PER_BLOCK = 50  # header lines of a block also feed context (TKPROF: Release ...)
# A fast parser's block takes runs (Parser.feed_run) from its line after the ones _hand_over may
# still give away, its first CONTEXT_LINES_PER_BLOCK lines fed to the context in a batch. Each AWR
# report's block took its first 50 lines one by one, a third of an archive's lines (set to
# CONTEXT_LINES_PER_BLOCK: the reference, runs only after those).
RUNS_FROM = HAND_OVER_LINES + 1
STRONG_MEMO = 16384  # lines whose "does another format start here?" answer is remembered...
STRONG_MEMO_LINE = 256  # ...if at most this long (so the memo stays under ~6 MB)
# A run asks the memo (Answers.get) about a line it has no answer for instead of leaving the run
# for it; off: runs stop there and the line takes the detector's per-line path (the reference).
ANSWERS_IN_RUNS = True
_FENCE = "```"
_FENCE_LANG = re.compile(r"^[A-Za-z0-9_+.-]{1,20}$")
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\ud800-\udfff]")
_BAD = re.compile(r"```|[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\ud800-\udfff]").search  # ends a fast run
# every byte but the ASCII control characters _CONTROL replaces: deleting these from an ASCII
# text leaves nothing when it has none (a C loop, ten times faster than searching with _BAD)
_NOT_CONTROL = bytes(b for b in range(256) if not (b < 32 and b not in (9, 10, 13) or b == 127))
_UNDECODABLE = "\ufffd"  # what a byte that was not UTF-8 became
_first_bad = _syscore.first_bad if _syscore is not None else None  # what _BAD finds, in C


def _binary(line: str) -> bool:
    """Every format we parse is text a tool printed; a line where more than one character in
    eight did not decode is binary data (or a wrong encoding), so no parser needs to look."""
    return _UNDECODABLE in line and line.count(_UNDECODABLE) * 8 > len(line)


class Prefilter:
    """Which formats a line may start: the registry's prefilters (ingest/parsers/__init__.py)
    tested at once. Asking all 29 parsers' `start_score` about a line nobody claims (SQL text in
    a tkprof, an AWR row, chat between blocks) cost 20-27 us; most parsers cannot score a line
    that lacks their words, so one Aho-Corasick pass finds every word of every prefilter the
    line holds (but two blanks: an `in` test), the few shapes (regexes)
    are searched once each, only for formats the words did not already admit and, where a
    shape needs words, only if the line holds one; then only the admitted parsers are asked, in
    registry order. Each distinct set of admitted formats is one cached tuple of classes, their
    modules imported when first needed."""

    def __init__(self, entries: tuple[Registered, ...] = REGISTRY, gates: bool = True) -> None:
        """`gates`: search a shape only in lines whose first and last characters and count of
        digits it allows (`_Gates`); off, every shape is searched as before (the reference)."""
        self.entries = entries
        shapes: dict[tuple[str, tuple[str, ...]], int] = {}  # shape -> the formats it admits
        for i, e in enumerate(entries):
            for s in e.shapes:
                shapes[(s.regex, s.needs)] = shapes.get((s.regex, s.needs), 0) | 1 << i
        # bit k of a shape's `needs` mask: shape k's words; 0: searched in every line
        self._shapes = [
            (re.compile(regex).search, bits, (1 << k) if needs else 0)
            for k, ((regex, needs), bits) in enumerate(shapes.items())
        ]
        self._gates = _Gates([regex for regex, _ in shapes], gates)
        self._shape_lists: dict[int, tuple[tuple[Callable, int, int], ...]] = {}
        words = sorted({w for e in entries for w in e.words} | {w for r, n in shapes for w in n})
        # per word: the formats it admits, and the shapes it lets be searched. A word of one
        # repeated character (two blanks) is tested with `in` (a C scan): the automaton reports
        # every match, overlapping ones too, and an AWR row's runs of blanks hold dozens
        found = [
            (
                w,
                sum(1 << i for i, e in enumerate(entries) if w in e.words),
                sum(1 << k for k, (_, needs) in enumerate(shapes) if w in needs),
            )
            for w in words
        ]
        aho = ahocorasick_rs
        self._short = [f for f in found if _runs(f[0]) or not aho]
        long = [f for f in found if not _runs(f[0]) and aho]
        self._long_masks = [(m, n) for _, m, n in long]
        self._find = (
            aho.AhoCorasick([w for w, _, _ in long]).find_matches_as_indexes if long else None
        )
        self.nocase = sorted({w.lower() for e in entries for w in e.nocase})
        self._nocase_masks = [
            sum(1 << i for i, e in enumerate(entries) if w in e.nocase) for w in self.nocase
        ]
        self._nocase_bits = sum(1 << i for i, e in enumerate(entries) if e.nocase)
        self._everything = (1 << len(entries)) - 1
        self._by_mask: dict[int, tuple[type[Parser], ...]] = {}
        self._entries: dict[int, tuple[Registered, ...]] = {}
        self._find_nocase = (
            aho.AhoCorasick(self.nocase).find_matches_as_indexes if aho and self.nocase else None
        )

    def mask(self, line: str) -> int:
        """The formats `line` passes the prefilter of, as bits in registry order."""
        mask = needs = 0
        for word, bits, need in self._short:
            if word in line:
                mask |= bits
                needs |= need
        try:
            if self._find is not None:
                long_masks = self._long_masks
                for index, _, _ in self._find(line, overlapping=True):
                    bits, need = long_masks[index]
                    mask |= bits
                    needs |= need
            if self._nocase_bits & ~mask:
                mask |= self._nocase_mask(line)
        except (UnicodeError, ValueError):  # a string Rust cannot take: ask everyone
            return self._everything
        allowed = self._gates.allowed(line)
        shapes = self._shape_lists.get(allowed)
        if shapes is None:
            shapes = tuple(s for k, s in enumerate(self._shapes) if allowed >> k & 1)
            self._shape_lists[allowed] = shapes
        for search, bits, need in shapes:
            if bits & ~mask and (not need or needs & need) and search(line) is not None:
                mask |= bits
        return mask

    def _nocase_mask(self, line: str) -> int:
        """The formats admitted by a word of `nocase`. Their regexes ignore case, which in
        Python also matches `ſ` to s, the Kelvin sign to k and `İ`/`ı` to i: casefold() maps the
        first two, the replacements the last (looser is allowed, missing is not)."""
        low = line.lower() if line.isascii() else _fold(line)
        mask = 0
        masks = self._nocase_masks
        if self._find_nocase is not None:
            for index, _, _ in self._find_nocase(low, overlapping=True):
                mask |= masks[index]
        else:
            for index, word in enumerate(self.nocase):
                if word in low:
                    mask |= masks[index]
        return mask

    def admitted(self, line: str) -> Iterable[type[Parser]]:
        """The parser classes that may score `line` above 0, in registry order. Until each of
        their modules has been imported, an iterable that imports each as the detector reaches
        it: the detector stops at the first format scoring 2, so a file of truss lines never
        imports the formats after truss that its lines also pass."""
        mask = self.mask(line)
        got = self._by_mask.get(mask)
        if got is not None:
            return got
        entries = self._entries.get(mask)
        if entries is None:
            entries = tuple(e for i, e in enumerate(self.entries) if mask >> i & 1)
            self._entries[mask] = entries
        if any(loaded(e) is None for e in entries):
            return _Loading(entries)
        got = self._by_mask[mask] = tuple(load(e) for e in entries)
        return got


_ASCII = tuple(chr(i) for i in range(128))
_DIGITS = frozenset("0123456789")
_NOT_DIGITS = bytes(b for b in range(128) if chr(b) not in _DIGITS)
if _sre is not None:
    _ONE_CHAR = {_sre.LITERAL, _sre.NOT_LITERAL, _sre.IN, _sre.ANY}
    _REPEATS = {_sre.MAX_REPEAT, _sre.MIN_REPEAT, _sre.POSSESSIVE_REPEAT}
    _ZERO_WIDTH = {_sre.AT, _sre.ASSERT, _sre.ASSERT_NOT}
    _STARTS = {_sre.AT_BEGINNING, _sre.AT_BEGINNING_STRING}
    _ENDS = {_sre.AT_END, _sre.AT_END_STRING}


class _Gates:
    """Which shapes (the registry's prefilter regexes) may match a line, told from the line's
    first and last characters and how many digits it holds, before searching them. Each shape's
    gate is read off its parsed regex (re's own parser), so a new or changed shape gets its own:
    for a shape anchored at the start (`^` on every branch) the characters a match can start
    with, at the end (`$` on every branch) those it can end with (each only if something must
    be matched there), and the digits every match holds. Why: a line no format claims (the
    first SQL text line of each tkprof statement, unique) searched the six unconditional shapes,
    10 of the prefilter's 12 us; most start, end or count digits unlike any of them. Lines
    beyond ASCII pass every gate but the first and last character's when those are ASCII."""

    def __init__(self, regexes: list[str], enabled: bool = True) -> None:
        self.all = (1 << len(regexes)) - 1
        self.first: dict[str, int] = {}  # character (or "" for an empty line) -> shapes allowed
        self.last: dict[str, int] = {}
        self.digits: list[int] = []  # shapes allowed by n digits (the last: n or more)
        if not enabled or _sre is None:  # every shape allowed: the reference
            return
        needed = [0] * len(regexes)
        firsts: list[frozenset[str] | None] = []
        lasts: list[frozenset[str] | None] = []
        for k, regex in enumerate(regexes):
            first, last, needed[k] = _gate(regex)
            firsts.append(first)
            lasts.append(last)
        for table, edges in ((self.first, firsts), (self.last, lasts)):
            for c in _ASCII + ("",):
                if c != "\n":  # `$` matches before a last newline: no gate on it
                    table[c] = sum(1 << k for k, e in enumerate(edges) if e is None or c in e)
        self.digits = [
            sum(1 << k for k, need in enumerate(needed) if need <= n)
            for n in range(max(needed, default=0) + 1)
        ]

    def allowed(self, line: str) -> int:
        """The shapes `line` may match, as bits in the order of the regexes."""
        allowed = self.first.get(line[:1], self.all) & self.last.get(line[-1:], self.all)
        digits = self.digits
        if len(digits) > 1 and allowed & ~digits[0] and line.isascii():
            n = len(line.encode("ascii").translate(None, _NOT_DIGITS))
            allowed &= digits[n] if n < len(digits) else digits[-1]
        return allowed


def _gate(regex: str) -> tuple[frozenset[str] | None, frozenset[str] | None, int]:
    """The gate of one regex: the ASCII characters a match's first and last characters can be
    when it is anchored there (None: no gate) and the least number of ASCII digits a match holds.
    Looser is allowed (a lookaround is read as matching anything), tighter never: a construct
    this does not know gives no gate. tests/test_detect_cheap.py checks it on every line.
    The parse tree is re's private one: if a release changes it so that reading it fails, the
    shape gets no gate (looser), not an error at import."""
    try:
        return _read_gate(regex)
    except Exception:  # noqa: BLE001 - see above: no gate is always a correct answer
        return None, None, 0


def _read_gate(regex: str) -> tuple[frozenset[str] | None, frozenset[str] | None, int]:
    try:
        parsed = _sre_parser.parse(regex)
    except re.error:
        return None, None, 0
    flags = parsed.state.flags
    if flags & (re.MULTILINE | re.VERBOSE):
        return None, None, 0
    known: dict[int, frozenset[str]] = {}

    def chars(node: tuple) -> frozenset[str]:
        got = known.get(id(node))
        if got is None:
            one = _sre_compiler.compile(_sre_parser.SubPattern(parsed.state, [node]), flags)
            got = known[id(node)] = frozenset(c for c in _ASCII if one.fullmatch(c))
        return got

    everything = frozenset(_ASCII)

    def edge(seq: list, backwards: bool) -> tuple[frozenset[str], bool]:
        # the characters a match of `seq` can start (end) with, and whether it can be empty
        got: frozenset[str] = frozenset()
        for node in reversed(seq) if backwards else seq:
            op, av = node
            if op in _ONE_CHAR:
                return got | chars(node), False
            if op in _ZERO_WIDTH:
                continue
            if op is _sre.SUBPATTERN and not av[1] and not av[2]:
                more, empty = edge(av[3].data, backwards)
            elif op is _sre.ATOMIC_GROUP:
                more, empty = edge(av.data, backwards)
            elif op is _sre.BRANCH:
                ends = [edge(b.data, backwards) for b in av[1]]
                more = frozenset().union(*(e for e, _ in ends))
                empty = any(x for _, x in ends)
            elif op in _REPEATS:
                more, empty = edge(av[2].data, backwards)
                empty = empty or av[0] == 0
            else:  # a back reference, scoped flags...: anything
                return everything, True
            got |= more
            if not empty:
                return got, False
        return got, True

    def anchored(seq: list, backwards: bool) -> frozenset[str] | None:
        # the edge characters if every match of `seq` touches that end of the line
        nodes = list(reversed(seq)) if backwards else list(seq)
        if not nodes:
            return None
        op, av = nodes[0]
        if op is _sre.AT and av in (_ENDS if backwards else _STARTS):
            rest = nodes[1:]
            got, empty = edge(list(reversed(rest)) if backwards else rest, backwards)
            return None if empty else got
        if op is _sre.SUBPATTERN and not av[1] and not av[2]:
            return anchored(av[3].data, backwards)
        if op is _sre.BRANCH:
            ends = [anchored(b.data, backwards) for b in av[1]]
            return None if any(e is None for e in ends) else frozenset().union(*ends)
        return None

    def digits(seq: list) -> int:
        n = 0
        for node in seq:
            op, av = node
            if op in _ONE_CHAR:
                got = chars(node)
                n += bool(got) and got <= _DIGITS
            elif op is _sre.SUBPATTERN:
                n += digits(av[3].data)
            elif op is _sre.ATOMIC_GROUP:
                n += digits(av.data)
            elif op is _sre.BRANCH:
                n += min(digits(b.data) for b in av[1])
            elif op in _REPEATS:
                n += av[0] * digits(av[2].data)
        return n

    return anchored(parsed.data, False), anchored(parsed.data, True), digits(parsed.data)


def _fold(line: str) -> str:
    return line.casefold().replace("\u0131", "i").replace("\u0307", "")


class _Loading:
    """Admitted formats, some not imported yet: each is imported when iteration reaches it."""

    __slots__ = ("entries",)

    def __init__(self, entries: tuple[Registered, ...]) -> None:
        self.entries = entries

    def __iter__(self) -> Iterator[type[Parser]]:
        for entry in self.entries:
            yield load(entry)


_PREFILTER: Prefilter | None = None


def prefilter() -> Prefilter:
    """The registry's prefilter, built once per process (the automaton takes ~1 ms)."""
    global _PREFILTER
    if _PREFILTER is None:
        _PREFILTER = Prefilter()
    return _PREFILTER


class _Everyone:
    """A Detector given its own parser classes asks each of them about every line (no
    prefilter): the reference the prefilter's equivalence tests compare to."""

    def __init__(self, parsers: tuple[type[Parser], ...]) -> None:
        self.parsers = parsers

    def admitted(self, line: str) -> Iterable[type[Parser]]:
        return self.parsers


class Answers(dict):
    """The detector's memo of "does a format other than the open block's start on this line?",
    keyed (the open parser's type, the line): True or False. Runs read it (`Parser.feed_run`'s
    `plain`): `known` is the plain lookup; `get` answers every key, working a missing answer out
    (`answer`, the detector's question to the prefilter's admitted formats) and remembering it
    if the line is at most STRONG_MEMO_LINE long. So a run is not left for a line seen the first
    time: the first SQL text line of each tkprof statement (unique) left `feed_run` for the
    detector's per-line path and came back, ~35 of its ~60 us (docs/benchmarks.md, "tkprof
    statements in C"). With ANSWERS_IN_RUNS off, `get` answers only what is known, as a dict."""

    __slots__ = ("_answer", "_last")

    known = dict.get

    def __init__(self, answer: Callable[[str, type[Parser]], bool]) -> None:
        super().__init__()
        self._answer = answer
        # the last answer not remembered (a long line): a run and the detector may both ask
        self._last: tuple[tuple[type[Parser], str], bool] | None = None

    def get(self, key: tuple[type[Parser], str], default: object = None) -> object:  # type: ignore[override]
        known = dict.get(self, key)
        if known is not None or not ANSWERS_IN_RUNS:
            return default if known is None else known
        return self.other(*key)

    def other(self, current: type[Parser], line: str) -> bool:
        """Does a format other than `current` score `line` 2?"""
        key = (current, line)
        known = dict.get(self, key)
        if known is not None:
            return known
        last = self._last
        if last is not None and last[0] == key:
            return last[1]
        found = self._answer(line, current)
        if len(line) <= STRONG_MEMO_LINE:
            if len(self) >= STRONG_MEMO:
                self.clear()
            self[key] = found
        else:
            self._last = (key, found)
        return found


class _Open:
    """A parser with the line range it has taken so far."""

    __slots__ = ("parser", "start", "end", "accepted")

    def __init__(self, parser: Parser, start: int) -> None:
        self.parser = parser
        self.start = start
        self.end = start
        self.accepted = 0


class Detector:
    def __init__(self, parsers: tuple[type[Parser], ...] | None = None) -> None:
        """`parsers`: ask exactly these, about every line (no prefilter); by default the
        registry's formats, each asked only about the lines its prefilter admits."""
        self._given = parsers
        self._admitted = (prefilter() if parsers is None else _Everyone(parsers)).admitted
        self.blocks: list[Block] = []
        self.context = ContextExtractor()
        self.current: _Open | None = None
        self.candidates: list[_Open] = []
        self.held: list[tuple[int, str]] = []  # lines seen by candidates, not yet owned
        self.in_fence = False
        self.unknown: list[tuple[int, str]] = []  # unclaimed lines inside a fence
        self.unknown_bytes = 0
        self.total_lines = 0
        self.total_bytes = 0
        self._strong_memo = Answers(self._answer)
        self.shared_text = 0  # text kept so far by blocks of `Parser.shared_text` formats

    @property
    def parser_types(self) -> tuple[type[Parser], ...]:
        """Every parser this detector may ask, in tie-break order (imports them all)."""
        return self._given if self._given is not None else all_parsers()

    # -- public ---------------------------------------------------------------------------------

    def feed_lines(self, lines: Iterable[str]) -> None:
        for raw in lines:
            self._raw(raw)

    def feed_text(self, text: str) -> None:
        """Feed many lines at once: `text` holds whole lines, each ending in "\n" (only the
        input's last line may lack it). Gives exactly what `feed_lines` gives for the same lines
        (split after each "\n"), but once a parser with a fast path (truss, strace) owns a block
        of RUNS_FROM lines, runs of its lines go to `Parser.feed_run` instead of one by one (the
        first CONTEXT_LINES_PER_BLOCK of them still fed to the context, in batches)."""
        n = len(text)
        pos = 0
        bad = -1  # where the next fence or control character is (n: none), once looked for
        plain: bool | None = None
        while pos < n:
            cur = self.current
            if cur is not None and not self.candidates:
                p = cur.parser
                if p.fast and p.lines >= RUNS_FROM:
                    if bad < pos:
                        bad = _first_bad(text, pos) if _first_bad is not None else -1
                        if bad < 0:  # not built, or text beyond Latin-1
                            if plain is None:  # most chunks are ASCII without control characters
                                plain = text.isascii() and not text.encode("ascii").translate(
                                    None, _NOT_CONTROL
                                )
                            if plain:
                                bad = text.find(_FENCE, pos)
                                bad = n if bad < 0 else bad
                            else:
                                m = _BAD(text, pos)
                                bad = m.start() if m is not None else n
                    # the run ends before the line holding the fence or control character
                    endpos = n if bad == n else text.rfind("\n", pos, bad)
                    if endpos > pos:
                        new, taken = p.feed_run(text, pos, endpos, self._strong_memo)
                        if taken:
                            new = min(new, n)
                            early = CONTEXT_LINES_PER_BLOCK - p.lines
                            if early > 0:  # what _account gives the context, in one batch
                                k = min(early, taken)
                                self.context.feed_evidence(
                                    [x.rstrip("\r") for x in text[pos:new].split("\n", k)[:k]]
                                )
                            if not p.text_truncated:
                                keep = p.keep
                                for line in text[pos:new].split("\n", taken)[:taken]:
                                    keep(line.rstrip("\r"))
                            self.total_lines += taken
                            self.total_bytes += new - pos
                            p.lines += taken
                            cur.end = self.total_lines
                            pos = new
                            if pos >= n:
                                break
            end = text.find("\n", pos)
            end = n if end < 0 else end + 1
            if end - pos == 1 and text[pos] == "\n":
                # a bare newline: what _raw does for it, without the slice and the checks that
                # cannot fire on an empty line. iostat and DTrace print one after every report
                # or stack, where each run of the fast path stops (7 % of iostat's instructions,
                # 3 % of a ustack() dump's, in cachegrind)
                self.total_lines += 1
                self.total_bytes += 1
                self._line("", self.total_lines)
            else:
                self._raw(text[pos:end])
            pos = end

    def _raw(self, raw: str) -> None:
        self.total_lines += 1
        self.total_bytes += len(raw)
        lineno = self.total_lines
        line = raw.rstrip("\r\n")
        if len(line) > MAX_LINE:
            line = line[:MAX_LINE]
        if "\x00" in line or _CONTROL.search(line):
            # control characters become spaces; lone surrogates (JSON can carry them)
            # cannot be encoded anywhere downstream and become U+FFFD
            line = _CONTROL.sub(lambda m: " " if m[0] < "\ud800" else _UNDECODABLE, line)
        if _FENCE in line:
            self._fenced(line, lineno)
            return
        self._line(line, lineno)

    def finish(self) -> Evidence:
        self._boundary()
        if not self.blocks and self.unknown_bytes == 0 and self.context._prose:
            # nothing recognisable at all: the whole input is one unknown block
            self.unknown = [(1, line) for line in self.context._prose]
            self.unknown[-1] = (self.total_lines, self.unknown[-1][1])
            self._flush_unknown()
        platforms = [b.platform for b in self.blocks]
        return Evidence(
            blocks=self.blocks,
            context=self.context.build(platforms),
            total_lines=self.total_lines,
            total_bytes=self.total_bytes,
        )

    # -- internals ------------------------------------------------------------------------------

    def _fenced(self, line: str, lineno: int) -> None:
        """Split a line at ``` markers: each marker is a block boundary."""
        parts = line.split(_FENCE)
        for i, part in enumerate(parts):
            if i > 0:
                self._boundary()
                self.in_fence = not self.in_fence
                if self.in_fence and _FENCE_LANG.match(part.strip()) and i == len(parts) - 1:
                    continue  # ```text : a language tag, not content
            if part.strip():
                self._line(part, lineno)

    def _boundary(self) -> None:
        self._settle_candidates(eof=True)
        self._close()
        self._flush_unknown()

    def _to_context(self, line: str, lineno: int) -> None:
        self.context.feed(line, prose=True)
        if self.in_fence and line.strip() and self.unknown_bytes < TEXT_CAP:
            self.unknown.append((lineno, line))
            self.unknown_bytes += len(line) + 1

    def _flush_unknown(self) -> None:
        """Fenced text no parser claimed is still evidence the user meant us to read."""
        if not self.unknown:
            return
        # a fact-less block hands its lines back when it closes, after lines that came later
        self.unknown.sort(key=lambda item: item[0])
        text = "\n".join(line for _, line in self.unknown)
        self.blocks.append(
            Block(
                format="unknown",
                start_line=self.unknown[0][0],
                end_line=self.unknown[-1][0],
                lines=len(self.unknown),
                text=text[:TEXT_CAP],
                text_truncated=len(text) > TEXT_CAP,
            )
        )
        self.unknown = []
        self.unknown_bytes = 0

    def _line(self, line: str, lineno: int) -> None:
        cur = self.current
        if cur is not None:
            parser = cur.parser
            ptype = type(parser)
            if parser.lines <= HAND_OVER_LINES and self._hand_over(cur, line, lineno):
                return
            if (
                # a line seen before that no other format starts on (the blank line between
                # two mpstat intervals, a repeated header): the memo answers before the parser
                # is asked; each test is pure, so their order changes only the cost
                self._strong_memo.known((ptype, line)) is False
                or parser.claims(line)
                or ptype.start_score(line) == 2
                or not self._strong_other(line, ptype)
            ):
                if parser.feed(line):
                    self._take(cur, line, lineno)
                    return
                if not line.strip():
                    return  # a blank line the parser did not want: wait for the next one
            self._close()
        if self.candidates:
            self._feed_candidates(line, lineno)
            return
        self._start(line, lineno)

    def _hand_over(self, cur: _Open, line: str, lineno: int) -> bool:
        """The first lines of a block go with the format that starts after them when they are
        its preamble too. sysstat prints the same banner (`Linux 5.8 (host) date _x86_64_ (2 CPU)`)
        and restart lines above mpstat, iostat, sar and pidstat tables, and whichever parser took
        them cannot know which table follows: the table's header (scored 2 by a parser earlier
        in the registry than the block's) or, after the banner alone, a line only the heir scores
        (iostat's `-t` stamp) decides. The heir must read every line already taken, so the
        banner's CPU count lands in the table's block instead of a block of its own."""
        parser = cur.parser
        kept = parser._text
        if not line.strip() or len(kept) != parser.lines or not kept:
            return False
        heirs: list[type[Parser]] = []
        admitted = self._admitted(line)
        for ptype in admitted:
            if ptype.start_score(line) == 2:
                if ptype is not type(parser):
                    heirs = [ptype]
                break
        else:
            if len(kept) == 1 and type(parser).start_score(line) == 0:
                heirs = [pt for pt in admitted if pt.start_score(line) == 1]
        for ptype in heirs:
            if ptype is type(parser):
                continue
            heir = ptype()
            if not all(heir.feed(k) for k in kept) or not heir.feed(line):
                continue
            opened = _Open(heir, cur.start)
            heir.lines = len(kept)  # their context was taken when they first came
            for k in kept:
                heir.keep(k)
            self.current = opened
            self._take(opened, line, lineno)
            return True
        return False

    def _strong_other(self, line: str, current: type[Parser]) -> bool:
        # start_score is a pure function of the line, and captures repeat lines verbatim (truss
        # -v continuation lines such as `15697: fd=9 ev=POLLIN rev=0`): asking every other
        # parser about each of them was a quarter of the time spent on a large truss capture.
        return self._strong_memo.other(current, line)

    def _answer(self, line: str, current: type[Parser]) -> bool:
        """Does a format other than `current` score `line` 2? (Asked once per distinct line:
        the memo remembers.)"""
        for ptype in self._admitted(line):
            if ptype is not current and ptype.start_score(line) == 2:
                return True
        return False

    def _start(self, line: str, lineno: int) -> None:
        if not line.strip():
            return
        if _binary(line):
            self._to_context(line, lineno)
            return
        best: list[type[Parser]] = []
        strong: type[Parser] | None = None
        for ptype in self._admitted(line):
            score = ptype.start_score(line)
            if score == 2:
                strong = ptype
                break
            if score == 1:
                best.append(ptype)
        if strong is not None:
            opened = _Open(strong(), lineno)
            if opened.parser.feed(line):
                self.current = opened
                self._take(opened, line, lineno)
                return
        for ptype in best:
            cand = _Open(ptype(), lineno)
            if cand.parser.feed(line):
                cand.accepted = 1
                cand.end = lineno
                self.candidates.append(cand)
        if self.candidates:
            self.held = [(lineno, line)]
            self._settle_candidates(eof=False)
        else:
            self._to_context(line, lineno)

    def _feed_candidates(self, line: str, lineno: int) -> None:
        strong = next((pt for pt in self._admitted(line) if pt.start_score(line) == 2), None)
        if strong is not None:
            own = [c for c in self.candidates if type(c.parser) is strong]
            if own and own[0].parser.feed(line):
                # the line only this candidate's format prints: it confirms that reading
                cand = own[0]
                cand.accepted = max(cand.accepted + 1, CONFIRM_LINES)
                cand.end = lineno
                self.candidates = own
                self.held.append((lineno, line))
                self._settle_candidates(eof=False)
                return
            # a strong start beats any tentative reading
            self._settle_candidates(eof=True)
            self._close()
            self._start(line, lineno)
            return
        alive = []
        for cand in self.candidates:
            if cand.parser.feed(line):
                if line.strip():
                    cand.accepted += 1
                cand.end = lineno
                alive.append(cand)
            elif not line.strip():
                alive.append(cand)  # blank line: no verdict yet
        if not alive:
            # nobody took this line: settle what the candidates had, then start afresh here
            self._settle_candidates(eof=True)
            self._start(line, lineno)
            return
        self.candidates = alive
        self.held.append((lineno, line))
        self._settle_candidates(eof=False)

    def _settle_candidates(self, *, eof: bool) -> None:
        if not self.candidates:
            return
        ready = [c for c in self.candidates if c.accepted >= CONFIRM_LINES]
        if len(ready) > 1 and not eof and len(self.held) < TIE_LINES:
            return  # a tie: wait for a line only one of them reads
        if not ready and eof:
            # at a boundary, a candidate that took every line it saw (at least two) wins
            ready = [c for c in self.candidates if c.accepted >= 2]
            if not ready and not self.blocks and self.current is None and not self.context._prose:
                # a one-line paste with nothing around it ("read(9, ...) = 512") is still evidence
                ready = [c for c in self.candidates if c.accepted >= 1]
        if ready:
            chosen = self._tie_break(ready)
            self.candidates = []
            self.current = chosen
            for lineno, line in self.held:
                if lineno <= chosen.end:
                    self._account(chosen, line, lineno)
            self.held = []
            return
        if eof:
            for lineno, line in self.held:
                self._to_context(line, lineno)
            self.candidates = []
            self.held = []

    def _tie_break(self, ready: list[_Open]) -> _Open:
        """Of candidates that read the same lines alike, the one whose tool runs on the platform
        the context so far points to (a `[root@host ~]#` prompt, a uname line, the word strace);
        else registry order."""
        if len(ready) > 1:
            lean = self.context.leaning()
            if lean is not None:
                for cand in ready:
                    if lean in type(cand.parser).platforms:
                        return cand
        return ready[0]

    def _take(self, opened: _Open, line: str, lineno: int) -> None:
        opened.end = lineno
        self._account(opened, line, lineno)

    def _account(self, opened: _Open, line: str, lineno: int) -> None:
        p = opened.parser
        p.lines += 1
        p.keep(line)
        if p.lines <= CONTEXT_LINES_PER_BLOCK:
            self.context.feed(line, prose=False)

    def _close(self) -> None:
        cur = self.current
        if cur is None:
            return
        self.current = None
        try:
            block = cur.parser.finish(cur.start, cur.end)
        except Exception as exc:  # a parser bug must not lose the user's other evidence
            block = Block(
                format="unknown",
                start_line=cur.start,
                end_line=cur.end,
                lines=cur.parser.lines,
                malformed_lines=cur.parser.lines,
                details={"error": f"{type(cur.parser).__name__} failed: {exc}"},
                text="\n".join(cur.parser._text),
            )
        if block.format != "unknown" and not _has_content(block):
            # a command line that announced a capture which never followed: prose, not evidence
            kept = cur.parser._text
            for i, line in enumerate(kept):  # numbered as closely as we know: the last is exact
                self._to_context(
                    line, cur.end if i == len(kept) - 1 else min(cur.start + i, cur.end)
                )
            return
        if type(cur.parser).shared_text and block.text:
            block = self._share_text(block)
        self.blocks.append(block)

    def _share_text(self, block: Block) -> Block:
        """What is left of SHARED_TEXT_CAP for this block's text: whole lines, the rest dropped
        and said so (`text_truncated`, and `details["text_dropped"]` in characters)."""
        left = SHARED_TEXT_CAP - self.shared_text
        text = block.text
        if len(text) <= left:
            self.shared_text += len(text)
            return block
        cut = text.rfind("\n", 0, left + 1) if left > 0 else -1
        kept = text[:cut] if cut > 0 else ""
        self.shared_text += len(kept)
        details = dict(block.details)
        details["text_dropped"] = len(text) - len(kept)
        return block.model_copy(update={"text": kept, "text_truncated": True, "details": details})


def _has_content(block: Block) -> bool:
    for value in block.facts.values():
        if isinstance(value, dict):
            if value:
                return True
        elif isinstance(value, str) or value:
            return True
    return False


def _html() -> ModuleType:
    """ingest.html_report, imported when an input may hold an HTML document (it has a "<"
    where a document would start): it pulls in lxml's etree (libxml2), which a text capture
    never needs (issue #19: `perfkb analyze` start-up)."""
    from ingest import html_report

    return html_report


def load_readers() -> None:
    """Import every reader the detector loads on first use (each parser module, the HTML
    reader) now: a long-lived process (kb.analysis.warm) pays for them while it starts, not in
    the first request whose paste needs them."""
    all_parsers()
    _html()


def _with_html(lines: Iterable[str]) -> Iterator[str]:
    """The lines, except that from the first line opening an HTML document (an uploaded
    awrrpt_*.html, maybe under a message's own words) on, the text its tables lay out
    (ingest/html_report.py)."""
    it = iter(lines)
    for line in it:
        first = line[:1]
        if (
            first == "<" or (first in " \t" and line.lstrip()[:1] == "<")
        ) and _html().looks_like_html(line):
            rest = (x if x.endswith("\n") else x + "\n" for x in itertools.chain([line], it))
            yield from _html().html_lines(rest)
            return
        yield line


def parse_lines(lines: Iterable[str]) -> Evidence:
    """Parse a stream of lines (a file object works) in bounded memory. An HTML document is
    read as the text its tables lay out."""
    detector = Detector()
    detector.feed_lines(_with_html(lines))
    return detector.finish()


_HTML_START = re.compile(r"^[ \t]*(?:<!doctype\s+html|<html[\s>])", re.I | re.M)


def parse_text(text: str) -> Evidence:
    detector = Detector()
    if any(tag in text for tag in ("<html", "<HTML", "<!DOCTYPE", "<!doctype")):
        m = _HTML_START.search(text)
        if m is not None:
            if m.start():
                detector.feed_text(text[: m.start()])
            detector.feed_lines(_html().html_lines([text[m.start() :]]))
            return detector.finish()
    detector.feed_text(text)
    return detector.finish()


CHUNK = 1024 * 1024  # what parse_stream reads at a time


def parse_stream(raw: BinaryIO, advance: Callable[[int], None] | None = None) -> Evidence:
    """Parse a binary stream (a file opened "rb", stdin's buffer) in bounded memory, reading
    about CHUNK bytes at a time; bytes that are not UTF-8 become U+FFFD, as decoding it line by
    line would make them. `advance(n)` is told of every n bytes read."""
    detector = Detector()
    tail = bytearray()  # the start of a line that has not ended yet
    first = raw.read(CHUNK)
    # a document starts with "<" (its doctype or <html>) in its first SNIFF characters, so an
    # input with no "<" in its first block is text without importing the HTML reader
    if b"<" in first and _html().looks_like_html(
        first[: _html().SNIFF].decode("utf-8", errors="replace")
    ):
        if advance is not None and first:
            advance(len(first))
        detector.feed_lines(_html().html_lines(_decoded_chunks(first, raw, advance)))
        return detector.finish()
    pending: bytes | None = first
    while True:
        block = pending if pending is not None else raw.read(CHUNK)
        pending = None
        if not block:
            break
        if advance is not None:
            advance(len(block))
        cut = block.rfind(b"\n") + 1
        if not cut:  # no line ends in it: keep reading (a line longer than CHUNK)
            tail += block
            continue
        # "\n" never occurs inside a multi-byte UTF-8 sequence: decoding whole lines at once
        # gives what decoding each line would. The line the tail started is decoded on its own,
        # so the rest of the block is decoded where it lies (no copy of the megabyte)
        start = 0
        if tail:
            start = block.find(b"\n") + 1
            tail += memoryview(block)[:start]
            detector.feed_text(tail.decode("utf-8", errors="replace"))
        if start < cut:
            detector.feed_text(str(memoryview(block)[start:cut], "utf-8", "replace"))
        tail = bytearray(memoryview(block)[cut:])
    if tail:
        detector.feed_text(tail.decode("utf-8", errors="replace"))
    return detector.finish()


def _decoded_chunks(
    first: bytes, raw: BinaryIO, advance: Callable[[int], None] | None
) -> Iterable[str]:
    """The stream as text, a chunk at a time, a multi-byte character never split."""
    import codecs

    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    yield decoder.decode(first)
    while True:
        block = raw.read(CHUNK)
        if not block:
            break
        if advance is not None:
            advance(len(block))
        yield decoder.decode(block)
    yield decoder.decode(b"", final=True)


def parse_chunks(chunks: Iterable[str]) -> Evidence:
    """Parse text that arrives in pieces cut anywhere (an upload read in blocks, batches of a
    download's lines): whole lines go to `Detector.feed_text`, the batch path `parse_stream`
    uses, and a line cut between two pieces waits for its end. Gives what `parse_lines` gives
    for the same text split after each "\n"."""
    detector = Detector()
    tail: list[str] = []  # the start of a line that has not ended yet
    it = iter(chunks)
    for chunk in it:
        cut = chunk.rfind("\n") + 1
        if not cut:
            if chunk:
                tail.append(chunk)
            continue
        if tail:
            tail.append(chunk[:cut])
            text = "".join(tail)
            tail = []
        else:
            text = chunk if cut == len(chunk) else chunk[:cut]
        html = _html_line(text)
        if html >= 0:  # as parse_lines: from that line on, the text the document's tables lay out
            if html:
                detector.feed_text(text[:html])
            detector.feed_lines(_html().html_lines(itertools.chain([text[html:], chunk[cut:]], it)))
            return detector.finish()
        detector.feed_text(text)
        if cut < len(chunk):
            tail.append(chunk[cut:])
    if tail:
        text = "".join(tail)
        html = _html_line(text)
        if html >= 0:
            if html:
                detector.feed_text(text[:html])
            detector.feed_lines(_html().html_lines([text[html:]]))
            return detector.finish()
        detector.feed_text(text)
    return detector.finish()


_TAG_LINE = re.compile(r"^(?:<|[ \t][^\S\n]*<)", re.M)


def _html_line(text: str) -> int:
    """Where the first line of `text` (whole lines) that `_with_html` takes for the opening of an
    HTML document starts, or -1."""
    if "<" not in text:
        return -1
    for m in _TAG_LINE.finditer(text):
        start = m.start()
        end = text.find("\n", start)
        if _html().looks_like_html(text[start : len(text) if end < 0 else end + 1]):
            return start
    return -1


def line_chunks(lines: Iterable[str], size: int = CHUNK) -> Iterator[str]:
    """Lines (with or without their "\n") joined into pieces of about `size` characters for
    `parse_chunks`: a line source (a file object, any iterable of lines) then takes the batch
    path too. Lines are taken LINES_AT_ONCE at a time (islice, in C) and measured with one sum:
    a Python step and a new string per line cost a tenth of a 10 MB truss analysis. A piece
    holds at most `size` characters plus LINES_AT_ONCE lines."""
    it = iter(lines)
    batch: list[str] = []
    n = 0
    while True:
        more = list(itertools.islice(it, LINES_AT_ONCE))
        if not more:
            break
        batch += more
        n += sum(map(len, more)) + len(more)
        if n >= size:
            yield _whole_lines(batch)
            batch, n = [], 0
    if batch:
        yield _whole_lines(batch)


LINES_AT_ONCE = 256


def _whole_lines(batch: list[str]) -> str:
    """`batch` joined, a "\n" after each line that lacks one; lines of one kind (str.splitlines'
    come without, a file object's with) are joined in one call."""
    ends = list(map(str.endswith, batch, itertools.repeat("\n")))
    if not any(ends):
        return "\n".join(batch) + "\n"
    if all(ends):
        return "".join(batch)
    return "".join([line if end else line + "\n" for line, end in zip(batch, ends, strict=True)])


BINARY_SAMPLE = 8192  # how much of an input is looked at to tell text from binary data
NOT_TEXT = "perfkb reads text captures (" + ", ".join(f for f in FORMATS if f != "unknown") + ")"


def binary_reason(sample: bytes | str) -> str | None:
    """Why an input starting with `sample` is not a text capture, or None if it is text.

    Every format we parse is text a tool printed. An input with NUL bytes, UTF-16, or mostly
    undecodable bytes is an image, an archive or a core file pasted by mistake, and analysing
    it would only produce nonsense, so adapters refuse it with this reason.
    """
    if isinstance(sample, bytes):
        head = sample[:BINARY_SAMPLE]
        if head.startswith((b"\xff\xfe", b"\xfe\xff")):
            return "it is UTF-16 text; convert it first with iconv -f UTF-16 -t UTF-8"
        text = head.decode("utf-8", errors="replace")
    else:
        text = sample[:BINARY_SAMPLE]
    if "\x00" in text:
        return "it contains NUL bytes"
    bad = text.count(_UNDECODABLE) + len(_CONTROL.findall(text))
    if bad * 4 > len(text):
        return "most of its bytes are not text"
    return None


def _runs(word: str) -> bool:
    """Is `word` one character repeated (its matches overlap along every run of it)?"""
    return len(word) > 1 and len(set(word)) == 1
