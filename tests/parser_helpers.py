"""What the parser tests share: driving a parser as the detector does, fixture lines without their
provenance comment, the catalogue check on a block, and hypothesis strategies that damage real
captures. A plain module so each test file says what it uses."""

from __future__ import annotations

import gc
import json
import math
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from ingest.base import Parser
from ingest.facts import FACTS, facts_for
from ingest.model import Block

FIXTURES = Path(__file__).parent / "fixtures"

# the settings of the "random input never raises" property tests
PROPERTY = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])


# -- driving --------------------------------------------------------------------------------------


def drive_parser(
    parser: Parser, lines: Sequence[str], *, start_line: int = 1, numbered: bool = False
) -> tuple[Block, list]:
    """Feed every line as the detector does (count and keep the accepted ones) and finish.

    Returns the block and the rejected lines: their text, or with `numbered` their 1-based
    numbers in `lines`."""
    rejected: list = []
    for number, line in enumerate(lines, start=1):
        if parser.feed(line):
            parser.lines += 1
            parser.keep(line)
        else:
            rejected.append(number if numbered else line)
    return parser.finish(start_line, start_line + max(len(lines), 1) - 1), rejected


def assert_rejected_without_trace(parser: Parser, lines: Sequence[str]) -> tuple:
    """Each line is refused and the parser's facts are as they were; returns those facts."""
    before = parser.facts()
    for line in lines:
        assert parser.feed(line) is False, line
    assert parser.facts() == before
    return before


# -- fixtures -------------------------------------------------------------------------------------


def fixture_lines(path: Path | str) -> list[str]:
    """A fixture's lines without our provenance comment (`# perfkb ...` and the `#` lines and
    blank lines right after it). Seeds carry no such comment and come back whole."""
    path = FIXTURES / path if isinstance(path, str) else path
    lines = path.read_text(encoding="utf-8").splitlines()
    if lines and lines[0].startswith("# perfkb"):
        while lines and (lines[0].startswith("#") or not lines[0].strip()):
            lines.pop(0)
    return lines


def fixture_samples() -> dict[str, list[list[str]]]:
    """Every fixture under tests/fixtures run through the detector: for each format, the lines of
    each block of it that the detector found (the lines its parser took, as `Block.text` keeps
    them; an HTML report as the text lines its tables lay out). So a fixture added for a new
    format is a sample of that format without a word in any test."""
    from ingest.detect import parse_stream

    samples: dict[str, list[list[str]]] = {}
    for path in sorted(FIXTURES.rglob("*")):
        if not path.is_file() or path.suffix in (".md", ".yaml", ".yml", ".json", ".py"):
            continue
        with path.open("rb") as handle:
            evidence = parse_stream(handle)
        for block in evidence.blocks:
            if block.format != "unknown" and block.text and not block.text_truncated:
                samples.setdefault(block.format, []).append(block.text.split("\n"))
    return samples


# -- checking a block -----------------------------------------------------------------------------


def assert_facts_valid(
    block: Block, source: str | None = None, *, number: type | tuple[type, ...] = (int, float)
) -> None:
    """Every fact is in the catalogue for `source` (the block's format unless given) with its
    declared shape, every number is a finite `number`, and the block survives JSON both ways."""
    allowed = facts_for(source or block.format)
    for name, value in block.facts.items():
        assert name in allowed, name
        spec = FACTS[name]
        assert isinstance(value, dict) == (spec.keyed_by is not None), name
        if spec.kind == "string" and spec.keyed_by is None:
            assert isinstance(value, str), name
            continue
        values = value.values() if isinstance(value, dict) else [value]
        assert all(
            isinstance(v, number) and not isinstance(v, bool) and math.isfinite(v) for v in values
        ), name
    json.dumps(block.model_dump(), allow_nan=False)
    Block.model_validate(block.model_dump())
    Block.model_validate_json(block.model_dump_json())


def slowest_hostile_line(parser_type: type[Parser], prep: Sequence[str]) -> float:
    """CPU seconds of the slowest start_score + feed + finish over long lines built to make a
    backtracking regex blow up, after feeding `prep`. CPU time, not wall time: the test machine
    is shared, and a regex that backtracks burns CPU where a waiting process does not."""
    slowest = 0.0
    for prefix in HOSTILE_PREFIXES:
        for filler in HOSTILE_FILLERS:
            line = prefix + filler * (4000 // len(filler)) + "x"
            # with the cyclic GC off, and a slow line measured again (best of three): a
            # backtracking regex is slow every time, while a full collection of the test
            # process's heap (it once made waits take 0.1 s CPU in a mixed run at load 11) or
            # another thread's burst is not
            best = float("inf")
            gc.disable()
            try:
                for _ in range(3):
                    if best < 0.01:
                        break
                    start = time.process_time()
                    parser_type.start_score(line)
                    p = parser_type()
                    for earlier in prep:
                        p.feed(earlier)
                    p.feed(line)
                    p.finish(1, 2)
                    best = min(best, time.process_time() - start)
            finally:
                gc.enable()
            slowest = max(slowest, best)
    return slowest


HOSTILE_PREFIXES = [
    "",
    " ",
    "#1  0x1 in a ",
    " ffff80ffbcf9298a a (",
    "oracle`a",
    "  1 |",
    "@[",
    "1 2 a:",
    "a = 1",
    "Thread 1 (",
    "a 1 [001] 1.0: ",
    "CPU ",
    "12:00:00 AM ",
    "  a ",
]
HOSTILE_FILLERS = [" ", "\t", "1 ", "a ", ") ", "@ ", ", ", ":"]


# -- hypothesis strategies ------------------------------------------------------------------------

# any one-line text, surrogates and line breaks taken out
NOISE = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=80).map(
    lambda s: s.replace("\n", " ").replace("\r", " ")
)
# what a damaged line gets salted with
INSERTS = [" 0 ", "1", " x ", "|", "`", "#1 ", "@", " 99999 ", "\t", ":"]


def token_lines(
    *parts: st.SearchStrategy[str], sep: str = " ", max_size: int | None = None
) -> st.SearchStrategy[str]:
    """Lines made of tokens drawn from `parts`, joined by `sep`."""
    return st.lists(st.one_of(*parts), max_size=max_size).map(sep.join)


def cut_lines(sample: Sequence[str], at_most: int | None = None) -> st.SearchStrategy[str]:
    """Real lines cut short: anywhere in the line, or at a column up to `at_most`."""
    if at_most is None:
        return st.sampled_from(sample).flatmap(
            lambda s: st.integers(0, len(s)).map(lambda i: s[:i])
        )
    return st.tuples(st.sampled_from(sample), st.integers(0, at_most)).map(lambda t: t[0][: t[1]])


def salted_lines(sample: Sequence[str], at_most: int = 120) -> st.SearchStrategy[str]:
    """Real lines with one of INSERTS put in at a column up to `at_most`."""
    return st.tuples(
        st.sampled_from(sample), st.integers(0, at_most), st.sampled_from(INSERTS)
    ).map(lambda t: t[0][: t[1]] + t[2] + t[0][t[1] :])


@st.composite
def damaged_documents(draw: Callable, docs: Sequence[Sequence[str]]) -> list[str]:
    """A slice of a real capture with a few lines cut, split, duplicated, dropped or salted."""
    doc = draw(st.sampled_from(docs))
    start = draw(st.integers(0, len(doc) - 1))
    lines = list(doc[start : start + draw(st.integers(1, 40))])
    for _ in range(draw(st.integers(0, 6))):
        i = draw(st.integers(0, len(lines) - 1))
        op = draw(st.sampled_from(["cut", "insert", "drop", "dup", "junk"]))
        if op == "cut":
            lines[i] = lines[i][: draw(st.integers(0, len(lines[i])))]
        elif op == "insert":
            at = draw(st.integers(0, len(lines[i])))
            lines[i] = lines[i][:at] + draw(st.sampled_from(INSERTS)) + lines[i][at:]
        elif op == "drop" and len(lines) > 1:
            del lines[i]
        elif op == "dup":
            lines.insert(i, lines[i])
        else:
            lines.insert(i, draw(st.text(max_size=40)))
    return lines


@st.composite
def truncated_runs(draw: Callable, lines: Sequence[str], cut_at_most: int) -> list[str]:
    """A run of consecutive real lines whose last line stops mid-way, as a cut-off paste."""
    a = draw(st.integers(0, len(lines)))
    b = draw(st.integers(0, len(lines)))
    cut = draw(st.integers(0, cut_at_most))
    run = list(lines[min(a, b) : max(a, b)])
    if run:
        run[-1] = run[-1][:cut]
    return run
