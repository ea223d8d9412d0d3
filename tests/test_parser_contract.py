"""The contract of ingest/base.py:Parser, checked once for every parser in ingest.parsers.PARSERS.

What the detector relies on, whatever the format: start_score says 0, 1 or 2 and depends on the
line alone (the detector memoises it); a line feed() refuses leaves the parser as it was (the
detector goes on after a refused blank line, and candidates outlive refusals); a line claims()
claims is one feed() takes, and asking changes nothing; facts() is a read that can be asked at any
time; finish() builds a valid Block whose facts are in the catalogue (ingest/facts.py) for the
block's format with the catalogue's shape; random, damaged and hostile input never raises and
never backtracks for long; and a fast path (feed_run) takes exactly the lines, and leaves exactly
the state, that feed() line by line would.

Each parser's samples are found, not listed: every block of its format that the detector finds in
the fixtures under tests/fixtures (see parser_helpers.fixture_samples). A parser added to PARSERS
is covered here with no new test code, as soon as a fixture of its format exists; until then the
first test below fails and says so. What each parser reads off its real input stays in its own
tests/test_parse_<format>.py.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from typing import get_args

import pytest
from hypothesis import given
from hypothesis import strategies as st
from parser_helpers import (
    HOSTILE_FILLERS,
    HOSTILE_PREFIXES,
    NOISE,
    PROPERTY,
    assert_facts_valid,
    cut_lines,
    damaged_documents,
    fixture_samples,
    salted_lines,
    slowest_hostile_line,
    token_lines,
    truncated_runs,
)

from ingest.base import MAX_LINE, Parser
from ingest.model import TEXT_CAP, Block, Format
from ingest.parsers import PARSERS

SAMPLES = fixture_samples()
# the most lines a truncated run is cut from (the samples of a format one after the other)
RUN_LINES = 400
# numbers and number-like tokens that broke parsers before (fuzz and hypothesis finds): overflow,
# nan, thousands separators, decimal commas, unit suffixes, rulers
HOSTILE_NUMBERS = [
    "nan", "inf", "-1", "-0", "1e308", "1e309", "9" * 400, "1" + "0" * 300 + ".000",
    f"{10**400:,}", "1,647,276", "0,125", ".5", "21.1K", "1.2K", "3.4ms", "268.69us", "9us",
    "5 s", "²", "١٢٣", "0x7fffffff", "---- -----", "~~~~", "%",
]  # fmt: skip
PROSE = [
    "",
    "   ",
    "Looking at the output above, we see the same thing again.",
    "As you can see, the query itself was instant.",
    "$ ls -l /tmp",
    "[root@db01 ~]# uptime",
    "```",
]
EDGE_LINES = ["", " ", "\t", "#", "\ufffd" * 3, "0", "-" * 200, "=" * 80, "x" * MAX_LINE]


def _ids(ptype: type[Parser]) -> str:
    return ptype.format


every_parser = pytest.mark.parametrize("ptype", PARSERS, ids=_ids)


def samples_of(ptype: type[Parser]) -> list[list[str]]:
    """The parser's samples; a parser without any fails every test that needs one, saying why."""
    docs = SAMPLES.get(ptype.format)
    assert docs, (
        f"no fixture under tests/fixtures gives a {ptype.format} block: add one (with its "
        "provenance comment) so the parser contract covers this parser"
    )
    return docs


def _foreign(ptype: type[Parser]) -> list[str]:
    """Lines of every other format's first sample (their first lines: headers and rows)."""
    return [
        line
        for fmt, docs in sorted(SAMPLES.items())
        if fmt != ptype.format
        for line in docs[0][:12]
    ]


def _tokens(lines: Sequence[str]) -> list[str]:
    """The words a format is made of, as its samples print them (what a token soup is made of)."""
    words = sorted({w for line in lines for w in line.split()})
    return words[:: -(-len(words) // 400)] or ["x"]  # at most 400, spread over all of them


# what the detector never hands a parser: a newline inside a line, and the control characters
# and lone surrogates it turns into spaces (a tab and a carriage return stay)
_UNFIT = re.compile(r"[\n\x00-\x08\x0b\x0c\x0e-\x1f\x7f\ud800-\udfff]")
ALL_LINES = sorted({line for docs in SAMPLES.values() for doc in docs for line in doc})


# -- checking ---------------------------------------------------------------------------------


def check_block(block: Block, ptype: type[Parser], start: int, end: int, kept: list[str]) -> None:
    """What finish() must build: a valid Block over the lines given, whose facts are catalogued
    for its format with their declared shape, and whose text is what the detector kept."""
    assert isinstance(block, Block)
    # a parser names its own format, or the format its lines turned out to be (a DTrace ustack
    # with no count under it is a plain stack): always one some registered parser reads
    assert block.format == ptype.format or block.format in {p.format for p in PARSERS}
    assert (block.start_line, block.end_line) == (start, end)
    assert block.lines == len(kept)
    assert 0 <= block.malformed_lines <= block.lines  # malformed lines are accepted lines
    assert all(isinstance(i, str) for i in block.identifiers)
    assert len(block.text.encode("utf-8")) <= TEXT_CAP
    if not block.text_truncated:
        assert block.text == "\n".join(kept)
    assert_facts_valid(block)  # catalogued for block.format (its sources), shape, finite, JSON


def check_feeding(ptype: type[Parser], lines: Sequence[str]) -> Block:
    """Feed `lines` to two parsers: `probed` is fed every line and asked claims() (twice) before
    each; `plain` is fed only the lines `probed` took and asked nothing. A refused line must leave
    no trace: `plain`, which never saw it, takes the same lines after it and ends with the same
    block. claims() answers yes or no, the same when asked again, and asking changes nothing.

    A claimed line may still be refused: the detector asks claims() only to know whether to ask
    feed() without asking the other formats first, and feed() has the last word (the sysstat
    parsers claim sysstat's banner, which tops their report, and refuse it once rows came).

    facts() is asked at the end only: the base class promises it for the lines fed so far, not
    that asking early leaves what follows alone (truss decides its time columns when asked)."""
    probed, plain = ptype(), ptype()
    kept: list[str] = []
    for line in lines:
        claimed = probed.claims(line)
        assert isinstance(claimed, bool), line
        assert probed.claims(line) is claimed, line
        took = probed.feed(line)
        assert isinstance(took, bool), line
        if not took:
            continue
        assert plain.feed(line) is True, f"taken only after a refusal or a question: {line!r}"
        for p in (probed, plain):
            p.lines += 1
            p.keep(line)
        kept.append(line)
    assert probed.facts() == plain.facts() == probed.facts()  # and asking twice is the same
    end = max(len(lines), 1)
    block = probed.finish(1, end)
    assert block.model_dump() == plain.finish(1, end).model_dump()
    check_block(block, ptype, 1, end, kept)
    return block


def _line_ends(text: str, pos: int, count: int) -> int:
    """Where `count` whole lines from `pos` end (past their newline, or the end of the text)."""
    for _ in range(count):
        nl = text.find("\n", pos)
        pos = len(text) if nl < 0 else nl + 1
    return pos


def detector_memo(ptype: type[Parser], lines: Sequence[str]) -> dict:
    """The detector's memo as it would be after seeing `lines`: does another format start here?"""
    return {
        (ptype, line): any(o is not ptype and o.start_score(line) == 2 for o in PARSERS)
        for line in lines
    }


def check_feed_run(ptype: type[Parser], lines: Sequence[str], memo: dict, newline: str) -> int:
    """Drive one parser as Detector.feed_text does (feed_run wherever it takes lines, feed one
    line where it does not) and a twin with feed alone; every line feed_run takes must be one the
    detector would have handed over and one feed takes, and the two must end alike. Returns the
    number of lines the fast path took."""
    text = newline.join(lines) + newline
    fast, slow = ptype(), ptype()
    pos, n, by_run = 0, len(text), 0
    while pos < n:
        new, taken = fast.feed_run(text, pos, n, memo)
        assert taken >= 0
        if taken:
            assert min(new, n) == _line_ends(text, pos, taken), "stopped mid-line"
            for raw in text[pos:new].split("\n", taken)[:taken]:
                assert len(raw) <= MAX_LINE, "took a line longer than MAX_LINE"
                line = raw.rstrip("\r")
                handed = (
                    slow.claims(line)
                    or ptype.start_score(line) == 2
                    or memo.get((ptype, line)) is False
                )
                assert handed, f"took a line the detector would not hand it: {line!r}"
                assert slow.feed(line), f"took a line feed refuses: {line!r}"
                slow.lines += 1
                slow.keep(line)
                fast.lines += 1
                fast.keep(line)
            by_run += taken
            pos = min(new, n)
            assert fast.facts() == slow.facts()
            continue
        assert new == pos
        nl = text.find("\n", pos)
        end = n if nl < 0 else nl
        line = text[pos:end].rstrip("\r")[:MAX_LINE]  # as the detector cuts it
        took = fast.feed(line)
        assert slow.feed(line) is took
        if took:
            for p in (fast, slow):
                p.lines += 1
                p.keep(line)
        pos = end + 1
    end = max(len(lines), 1)
    assert fast.finish(1, end).model_dump() == slow.finish(1, end).model_dump()
    return by_run


# -- every parser has samples ---------------------------------------------------------------


@every_parser
def test_every_parser_has_samples_in_the_fixtures(ptype):
    assert samples_of(ptype)


def test_registered_parsers_are_distinct_formats():
    formats = [p.format for p in PARSERS]
    assert len(set(formats)) == len(formats)
    assert set(formats) <= set(get_args(Format)) - {"unknown"}


# -- start_score ----------------------------------------------------------------------------


@every_parser
def test_start_score_is_0_1_or_2_and_depends_on_the_line_alone(ptype):
    hostile = [p + f * (300 // len(f)) for p in HOSTILE_PREFIXES for f in HOSTILE_FILLERS]
    lines = [*ALL_LINES, *EDGE_LINES, *PROSE, *hostile, *HOSTILE_NUMBERS]
    scores = [ptype.start_score(line) for line in lines]
    assert all(type(s) is int and s in (0, 1, 2) for s in scores)
    # the detector remembers answers per line: asked again, in another order, the same answer
    again = [ptype.start_score(line) for line in reversed(lines)]
    assert scores == again[::-1]
    # its own samples open blocks: somewhere in them a line it scores 2, or 1 on a run
    assert any(s for s in (ptype.start_score(line) for d in samples_of(ptype) for line in d))


@every_parser
@PROPERTY
@given(line=st.one_of(NOISE, st.text(max_size=300)))
def test_start_score_of_any_text_is_0_1_or_2(ptype, line):
    assert ptype.start_score(line) in (0, 1, 2)


# -- feed, claims, facts, finish on real samples ------------------------------------------------


@every_parser
def test_real_samples_keep_the_contract_and_give_facts(ptype):
    for doc in samples_of(ptype):
        block = check_feeding(ptype, doc)
        assert block.format == ptype.format, doc[:3]
        assert block.facts, doc[:3]  # the detector kept the block because it had facts


@every_parser
def test_refusals_amid_real_samples_leave_no_trace(ptype):
    """Every line of a sample followed by a foreign line or prose: whatever is refused must
    leave the parser as it was, and the block must be the one the lines taken give."""
    foreign = PROSE + _foreign(ptype)
    for doc in samples_of(ptype):
        step = -(-len(foreign) // len(doc))  # every foreign line, spread over the sample
        mixed = []
        for i, line in enumerate(doc):
            mixed += [line, *foreign[i * step : (i + 1) * step]]
        check_feeding(ptype, mixed)


@every_parser
def test_finish_numbers_the_block_as_told(ptype):
    doc = samples_of(ptype)[0]
    p = ptype()
    kept = []
    for line in doc:
        if p.feed(line):
            p.lines += 1
            p.keep(line)
            kept.append(line)
    block = p.finish(101, 100 + len(doc))
    check_block(block, ptype, 101, 100 + len(doc), kept)


@every_parser
def test_kept_text_stops_at_text_cap_and_says_so(ptype):
    """The detector keeps each taken line through keep(): a long capture keeps a prefix of its
    text up to TEXT_CAP, flagged, whatever the format."""
    doc = samples_of(ptype)[0]
    p = ptype()
    kept: list[str] = []
    size = 0
    while size <= TEXT_CAP:
        for line in doc:
            if p.feed(line):
                p.lines += 1
                p.keep(line)
                kept.append(line)
                size += len(line.encode("utf-8")) + 1
        if not kept:
            break
    block = p.finish(1, len(kept))
    assert block.text_truncated
    assert len(block.text.encode("utf-8")) <= TEXT_CAP
    assert "\n".join(kept).startswith(block.text)


@every_parser
def test_an_empty_parser_finishes_an_empty_valid_block(ptype):
    block = ptype().finish(1, 1)
    check_block(block, ptype, 1, 1, [])


# -- random and damaged input ---------------------------------------------------------------


@functools.cache
def _random_lines(ptype: type[Parser]) -> st.SearchStrategy[list[str]]:
    """Whole samples damaged (lines cut, split, repeated, dropped, salted), runs of a sample cut
    off mid-line, and lines of a sample cut, salted, mixed with noise, with soups of the format's
    own words and characters, with hostile numbers, and with other formats' lines."""
    docs = SAMPLES.get(ptype.format, [])
    if not docs:  # the first test says why; here, an input that still exercises the parser
        docs = [PROSE]
    sample = [line for doc in docs for line in doc] or [""]
    words = _tokens(sample) + HOSTILE_NUMBERS
    alphabet = "".join(sorted({c for line in sample for c in line}))[:200] or "x"
    line = st.one_of(
        st.sampled_from(sample),
        cut_lines(sample, 120),
        salted_lines(sample),
        NOISE,
        token_lines(st.sampled_from(words), max_size=12),
        token_lines(st.sampled_from(words), sep="   ", max_size=8),
        st.text(alphabet=alphabet, max_size=80),
        st.sampled_from(_foreign(ptype) + PROSE),
    )
    return st.one_of(
        damaged_documents(docs),
        truncated_runs(sample[:RUN_LINES], cut_at_most=120),
        st.lists(line, max_size=40),
    )


@every_parser
@PROPERTY
@given(data=st.data())
def test_random_and_damaged_input_keeps_the_contract(ptype, data):
    check_feeding(ptype, data.draw(_random_lines(ptype), label="lines"))


@every_parser
def test_long_hostile_lines_stay_linear(ptype):
    """Lines of 4,000 characters built to make a backtracking regex blow up, alone and after the
    first lines of samples (the state in which rows are read: a header, an open histogram, a
    stack), up to eight samples spread over the fixtures: a few milliseconds at most when the
    parsing is linear, 0.3 s or more when a regex backtracks."""
    docs = samples_of(ptype)
    preps: list[Sequence[str]] = [[]] + [doc[:12] for doc in docs[:: -(-len(docs) // 8)]]
    slowest = max(slowest_hostile_line(ptype, prep) for prep in preps)
    # CPU seconds: the slowest today (waits) takes 0.02, and went over 0.05 once under load
    assert slowest < 0.1, slowest


# -- the fast path --------------------------------------------------------------------------

FAST = [p for p in PARSERS if p.fast]


@every_parser
def test_only_a_parser_that_says_fast_has_a_fast_path(ptype):
    overridden = ptype.feed_run is not Parser.feed_run
    assert overridden == ptype.fast
    if not ptype.fast:  # the default takes nothing, so the detector's ordinary path goes on
        text = "\n".join(samples_of(ptype)[0]) + "\n"
        assert ptype().feed_run(text, 0, len(text), {}) == (0, 0)


def _overlong(doc: Sequence[str]) -> list[str]:
    """The sample with a line longer than MAX_LINE in its middle (a run must stop there)."""
    middle = len(doc) // 2
    return [*doc[:middle], doc[middle] + " " * MAX_LINE + "1", *doc[middle:]]


@pytest.mark.parametrize("ptype", FAST, ids=_ids)
@pytest.mark.parametrize("newline", ["\n", "\r\n"], ids=["lf", "crlf"])
def test_feed_run_takes_exactly_what_feed_would(ptype, newline):
    by_run = 0
    for doc in samples_of(ptype):
        for lines in (doc, _overlong(doc)):
            # with the detector's memo (other formats asked), and with none (only its own lines)
            by_run += check_feed_run(ptype, lines, detector_memo(ptype, lines), newline)
            by_run += check_feed_run(ptype, lines, {}, newline)
    assert by_run > 0, "the fast path never took a line of the samples"


@pytest.mark.parametrize("ptype", FAST, ids=_ids)
@PROPERTY
@given(data=st.data())
def test_feed_run_on_damaged_input_takes_exactly_what_feed_would(ptype, data):
    lines = data.draw(_random_lines(ptype), label="lines")
    # as the detector hands text to feed_run: no newline inside a line, no control character,
    # no fence (each ends a run before the fast path is asked)
    lines = [_UNFIT.sub(" ", line).replace("```", "`` ") for line in lines]
    check_feed_run(ptype, lines, detector_memo(ptype, lines), "\n")


@every_parser
def test_feed_one_at_the_runs_end_feeds_nothing(ptype):
    """A `run_step` that took a run's last line may still ask for the ordinary path (feed_steps
    calls feed_one then): at endpos there is no line, so nothing is fed and the run stops.
    Before the guard, feed_one fed an empty line there (found by the AWR reader's tests on an
    archive cut mid-report)."""
    fed: list[str] = []

    class Spy(ptype):  # type: ignore[misc, valid-type]
        def feed(self, line: str) -> bool:
            fed.append(line)
            return True

        def claims(self, line: str) -> bool:
            return True

    text = "x\n"
    assert Spy().feed_one(text, len(text), len(text), {}) == -1
    assert Spy().feed_one(text, 1, 1, {}) == -1
    assert fed == []
    assert Spy().feed_one(text, 0, len(text), {}) == 2  # the spy does feed a real line
    assert fed == ["x"]
