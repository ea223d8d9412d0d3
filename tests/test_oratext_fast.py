"""The Oracle text formats' fast paths (issue 19, oratext): what the raw 10046 reader writes out
inline for its usual WAIT lines, and tkprof's attribute lines read in its run, must give exactly
the evidence of the line-by-line reference (the parser without a fast path, claiming nothing)
on generated input with hostile lines mixed in: digits beyond ASCII, a `tim=` inside the
parameters, parameters longer than the fast regex reads, idle and unknown events, 8i lines
without tim, and lines cut or wrapped. The archive text budget is checked here too."""

from __future__ import annotations

import io
import random
import sys
from pathlib import Path

import pytest

from ingest import detect
from ingest.base import Parser
from ingest.detect import parse_lines, parse_stream, parse_text
from ingest.parsers.tkprof import TkprofParser
from ingest.parsers.trace10046 import Trace10046Parser

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # benchmarks/ is not an installed package: run from the checkout
    sys.path.insert(0, str(ROOT))
from benchmarks import gen_awr, gen_oracle, gen_trace10046  # noqa: E402


def _paths(data: bytes) -> list[str]:
    out = [
        parse_lines(
            line.decode("utf-8", errors="replace") for line in io.BytesIO(data)
        ).model_dump_json()
    ]
    for chunk in (1024 * 1024, 4093):
        with pytest.MonkeyPatch.context() as m:
            m.setattr(detect, "CHUNK", chunk)
            out.append(parse_stream(io.BytesIO(data)).model_dump_json())
    out.append(parse_text(data.decode("utf-8", errors="replace")).model_dump_json())
    return out


def _same_as_reference(data: bytes, ptype: type[Parser]) -> str:
    """Every way in gives what the parser without its fast path and claims gives."""
    with pytest.MonkeyPatch.context() as m:
        m.setattr(ptype, "claims", Parser.claims)
        m.setattr(ptype, "fast", False)
        want = _paths(data)
    assert len(set(want)) == 1
    got = _paths(data)
    assert got == want
    return got[0]


def _hostile_waits(rng: random.Random, tim: int) -> list[str]:
    """WAIT lines in shapes the fast regex must read as `_wait` does, or leave to it."""
    arabic = str.maketrans("0123456789", "٠١٢٣٤٥٦٧٨٩")
    return [
        # digits beyond ASCII in tim and ela (float() reads them; the inline code must not)
        f"WAIT #5: nam='db file sequential read' ela= 12 file#=1 block#=2 blocks=1 "
        f"obj#=7 tim={str(tim).translate(arabic)}",
        f"WAIT #5: nam='direct path read' ela= {'٣٤'} file number=1 tim={tim + 5}",
        # a tim= inside the parameters, then the real one
        f"WAIT #5: nam='log file sync' ela= 900 buffer#=tim=3 sync scn=1 tim={tim + 9}",
        # parameters longer than the fast regex reads (400 characters)
        f"WAIT #5: nam='gc cr request' ela= 77 {'p=1 ' * 120}tim={tim + 20}",
        # idle, then a new longest wait, then an event name with spaces and symbols
        f"WAIT #0: nam='SQL*Net message from client' ela= {rng.randrange(10**7)} "
        f"driver id=1413697536 #bytes=1 p3=0 obj#=-1 tim={tim + 40}",
        f"WAIT #5: nam='enq: TX - row lock contention' ela= 8000000 name|mode=1415053318 "
        f"usn<<16 | slot=1 sequence=2 obj#=88 tim={tim + 8_000_100}",
        # no parameters at all; extra spaces after ela=; trailing blanks
        f"WAIT #5: nam='latch free' ela=      3 tim={tim + 8_000_200}   ",
        # an 8i wait: no tim (the slow path's `_wait` places it)
        "WAIT #5: nam='db file scattered read' ela= 4 p1=1 p2=2 p3=8",
    ]


def test_10046_inline_waits_match_the_reference(tmp_path):
    path = tmp_path / "t.trc"
    gen_trace10046.generate(300 * 1024, path, seed=46)
    lines = path.read_text().splitlines()
    rng = random.Random(4610)
    out: list[str] = []
    tim = 7_783_247_002_784
    for line in lines:
        out.append(line)
        if line.startswith("FETCH #") and rng.random() < 0.05:
            tim += 10_000_000
            out.extend(_hostile_waits(rng, tim))
    data = ("\n".join(out) + "\n").encode()
    got = _same_as_reference(data, Trace10046Parser)
    assert '"trace10046.max_wait_event":"enq: TX - row lock contention"' in got
    # and the generated tallies still hold
    exp = gen_trace10046.generate(300 * 1024, tmp_path / "u.trc", seed=46)
    block = parse_text(data.decode()).blocks[0]
    assert block.facts["trace10046.fetch_count"] == exp.fetches
    assert block.facts["event.count"]["enq: TX - row lock contention"] >= 1


def test_10046_many_events_and_pending_beyond_their_caps():
    """More distinct events than MAX_EVENTS and more waits than MAX_PENDING before a call: the
    inline code drops and places them as `_wait` does."""
    tim = 5_000_000_000_000
    lines = ["PARSING IN CURSOR #9 len=8 dep=0 uid=1 oct=3 lid=1 tim=1 hv=1 ad='1' sqlid='q1'",
             "select 1", "END OF STMT"]  # fmt: skip
    for i in range(5000):
        tim += 10
        lines.append(f"WAIT #9: nam='event {i % 2100}' ela= {i % 97} p1={i} tim={tim}")
    tim += 100
    lines.append(f"FETCH #9:c=1,e=100,p=0,cr=1,cu=0,mis=0,r=1,dep=0,og=1,tim={tim}")
    data = ("\n".join(lines) + "\n").encode()
    _same_as_reference(data, Trace10046Parser)


def test_tkprof_generated_and_damaged_match_the_reference(tmp_path):
    path = tmp_path / "r.prf"
    gen_oracle.generate_tkprof(250 * 1024, path, seed=7)
    data = path.read_bytes()
    _same_as_reference(data, TkprofParser)
    rng = random.Random(77)
    out: list[bytes] = []
    for line in data.splitlines(keepends=True):
        r = rng.random()
        if r < 0.01:
            out.append(b"Misses in library cache during parse: 99999999999999\n")
        elif r < 0.02:
            out.append(b"Parsing user id: SYS   (recursive depth: 7)\n")
        elif r < 0.03:
            out.append(b"Optimizer mode: FIRST_ROWS\n")
        elif r < 0.035:
            out.append(line.replace(b":", b" :", 1))
        elif r < 0.04:
            out.append(b"  " + line)
        elif r < 0.045:
            out.append(b"Number of plan statistics captured: 3\n")
        out.append(line)
    _same_as_reference(b"".join(out), TkprofParser)


def test_an_awr_archive_keeps_a_bounded_text_in_total(tmp_path, monkeypatch):
    """Every report of an archive is still a block with all its facts; their text together
    stays under SHARED_TEXT_CAP (whole lines), and a block that lost text says how much."""
    path = tmp_path / "archive.txt"
    gen_awr.generate_awr(600 * 1024, path, seed=3)
    data = path.read_text()
    monkeypatch.setattr(detect, "SHARED_TEXT_CAP", 100 * 1024)
    blocks = parse_text(data).blocks
    assert len(blocks) > 30 and {b.format for b in blocks} == {"waits"}
    assert sum(len(b.text) for b in blocks) <= 100 * 1024
    with monkeypatch.context() as m:
        m.setattr(detect, "SHARED_TEXT_CAP", 10**12)
        whole = parse_text(data).blocks
    assert len(whole) == len(blocks)
    cut = 0
    for b, w in zip(blocks, whole, strict=True):
        assert b.facts == w.facts
        assert {k: v for k, v in b.details.items() if k != "text_dropped"} == w.details
        assert w.text.startswith(b.text)
        if b.text != w.text:
            cut += 1
            assert b.text_truncated
            assert b.details["text_dropped"] == len(w.text) - len(b.text)
            assert b.text == "" or w.text[len(b.text)] == "\n"
        else:
            assert "text_dropped" not in b.details
    assert cut >= len(blocks) - 20
    # the same through the batch path
    assert (
        parse_stream(io.BytesIO(data.encode())).model_dump_json()
        == parse_lines(io.StringIO(data)).model_dump_json()
    )


def test_one_report_keeps_its_text(tmp_path):
    path = tmp_path / "archive.txt"
    gen_awr.generate_awr(60 * 1024, path, seed=5)
    first = parse_text(path.read_text()).blocks[0]
    lines = path.read_text().splitlines()[first.start_line - 1 : first.end_line]
    one = parse_text("\n".join(lines) + "\n").blocks
    assert len(one) == 1 and not one[0].text_truncated and "text_dropped" not in one[0].details
    assert one[0].text == first.text and len(first.text) > 1000
