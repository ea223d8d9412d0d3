"""strace -c rows are held as text and handed to the aggregator only when read out
(StraceParser._hand_rows): the evidence must be what handing each row over at once gives
(`_HELD_MAX = 0`: a row is handed over as soon as another name follows, the reference), on a
generated monitoring log of many tables, on damaged and mixed copies of it, on tables with more
distinct names than the aggregator keeps (MAX_SYSCALLS) and than are held (_HELD_MAX), and when
the facts are read half-way through a capture."""

from __future__ import annotations

import io
import random
from pathlib import Path

import pytest

from benchmarks import gen_traces
from ingest.detect import Detector, parse_stream, parse_text
from ingest.parsers import strace
from ingest.parsers.syscalls import MAX_SYSCALLS

ROOT = Path(__file__).resolve().parents[1]


def _alike(data: bytes, monkeypatch) -> str:
    text = data.decode("utf-8", errors="replace")
    with monkeypatch.context() as m:
        m.setattr(strace, "_HELD_MAX", 0)
        want = [
            parse_stream(io.BytesIO(data)).model_dump_json(),
            parse_text(text).model_dump_json(),
        ]
    got = [parse_stream(io.BytesIO(data)).model_dump_json(), parse_text(text).model_dump_json()]
    assert got == want
    return want[0]


@pytest.fixture(scope="module")
def log(tmp_path_factory) -> tuple[bytes, gen_traces.ExpectedSummary]:
    path = tmp_path_factory.mktemp("gen") / "strace-c.txt"
    exp = gen_traces.generate_summary(200 * 1024, path, seed=41)
    return path.read_bytes(), exp


def test_generated_log_reads_alike_and_counts(log, monkeypatch):
    data, exp = log
    want = _alike(data, monkeypatch)
    assert want.count('"format":"strace"') == 1
    from benchmarks.streaming import _check_summary

    facts = parse_text(data.decode()).blocks[0].facts
    assert _check_summary(exp, facts) == ""


@pytest.mark.parametrize("seed", range(3))
def test_damaged_and_mixed_logs_read_alike(log, monkeypatch, seed):
    rng = random.Random(seed)
    out: list[bytes] = []
    for line in log[0].splitlines(keepends=True)[:3000]:
        r = rng.random()
        if r < 0.03:
            out.append(line[: len(line) // 2] + b"\n")
        elif r < 0.05:
            out.append(b'4242  read(3, "x", 1) = 1\n')
        elif r < 0.06:
            out.append(line.replace(b".", b","))
        elif r < 0.07:
            continue
        out.append(line)
    _alike(b"".join(out), monkeypatch)


def _table(names: list[str], scale: int) -> str:
    head = (
        "% time     seconds  usecs/call     calls    errors syscall\n"
        "------ ----------- ----------- --------- --------- ----------------\n"
    )
    rows = "".join(
        f"  0.{i % 100:02d}    0.{scale:06d}         {i + 1:3d}      {scale + i:4d}           {name}\n"
        for i, name in enumerate(names)
    )
    return head + rows + "------ ----------- ----------- --------- --------- ----------------\n"


def test_more_names_than_kept_or_held(monkeypatch):
    many = [f"call_{i}" for i in range(MAX_SYSCALLS + strace._HELD_MAX + 300)]
    text = _table(many, 7) + "\n" + _table(list(reversed(many[:50])) + ["total"], 9)
    want = _alike(text.encode(), monkeypatch)
    assert f'"call_{MAX_SYSCALLS - 1}"' in want
    assert f'"call_{MAX_SYSCALLS}"' not in want  # the aggregator's cap, as row by row
    d = Detector()
    d.feed_lines(text.splitlines(keepends=True))
    assert d.current is not None
    held = d.current.parser._held_rows
    assert 0 < len(held) <= strace._HELD_MAX  # memory stays bounded by the distinct names held


def test_facts_read_half_way_through(log, monkeypatch):
    """A block's facts read before its capture ends (rows held then handed over), then more
    tables: the same as handing each row over at once."""
    lines = log[0].decode().splitlines(keepends=True)
    half = len(lines) // 2

    def read() -> tuple[str, str]:
        d = Detector()
        d.feed_lines(lines[:half])
        assert d.current is not None and d.current.parser.format == "strace"
        d.current.parser.facts()
        d.feed_lines(lines[half:])
        return d.finish().model_dump_json(), parse_text("".join(lines)).model_dump_json()

    with monkeypatch.context() as m:
        m.setattr(strace, "_HELD_MAX", 0)
        want = read()
    assert read() == want
    assert want[0] == want[1]
