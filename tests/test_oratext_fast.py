"""The Oracle text formats' fast paths (issue 19, oratext): what the raw 10046 reader writes out
inline for its usual WAIT lines, and tkprof's attribute lines read in its run, must give exactly
the evidence of the line-by-line reference (the parser without a fast path, claiming nothing)
on generated input with hostile lines mixed in: digits beyond ASCII, a `tim=` inside the
parameters, parameters longer than the fast regex reads, idle and unknown events, 8i lines
without tim, and lines cut or wrapped. The archive text budget is checked here too."""

from __future__ import annotations

import io
import random
from pathlib import Path

import pytest

from benchmarks import gen_awr, gen_oracle, gen_trace10046
from ingest import detect
from ingest.base import Parser
from ingest.detect import parse_lines, parse_stream, parse_text
from ingest.parsers import trace10046
from ingest.parsers.tkprof import TkprofParser
from ingest.parsers.trace10046 import Trace10046Parser

ROOT = Path(__file__).resolve().parents[1]


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


CORPUS = ROOT.parent / "shared" / "corpus" / "snippets"
FIXTURES = ROOT / "tests" / "fixtures"


@pytest.fixture(params=[True, False], ids=["C core", "Python"])
def native(request, monkeypatch):
    """Each 10046 test runs with the C core's WAIT reader and with the Python reference."""
    if request.param:
        assert trace10046._c_waits is not None, "ingest/_syscore_src/ was not built"
    monkeypatch.setattr(trace10046, "NATIVE", request.param)
    return request.param


def test_the_c_core_reads_the_wait_runs(monkeypatch):
    assert trace10046.NATIVE and trace10046._c_waits is not None
    calls = []
    real = trace10046._c_waits

    def spy(*args):
        out = real(*args)
        calls.append(out[1])
        return out

    monkeypatch.setattr(trace10046, "_c_waits", spy)
    text = "Trace file /x/ora_1.trc\n" + "".join(
        f"WAIT #1: nam='db file sequential read' ela= 5 file#=1 block#={i} blocks=1 obj#=2 "
        f"tim={1000 + i * 10}\nFETCH #1:c=1,e=9,p=1,cr=1,cu=0,mis=0,r=1,dep=0,og=1,"
        f"tim={1005 + i * 10}\n"
        for i in range(200)
    )
    block = parse_text(text).blocks[0]
    assert block.facts["event.count"]["db file sequential read"] == 200
    assert sum(calls) > 150  # the first lines go line by line, the rest through the core


def test_10046_corpus_and_fixtures_with_and_without_the_core(monkeypatch):
    files = sorted(CORPUS.glob("*")) + sorted(p for p in FIXTURES.rglob("*") if p.is_file())
    assert len(files) > 100, "the corpus (../shared/corpus) and fixtures must be present"
    seen = 0
    for path in files:
        data = path.read_bytes()
        if b"WAIT #" not in data and b"PARSING IN CURSOR" not in data:
            continue
        monkeypatch.setattr(trace10046, "NATIVE", False)
        want = _paths(data)
        monkeypatch.setattr(trace10046, "NATIVE", True)
        assert _paths(data) == want, path.name
        seen += 1
    assert seen >= 5


def _edge_waits(tim: int) -> list[str]:
    """Lines at each bound of the shape the C reader takes (it must take exactly what the
    fast regex takes, and leave the rest to it)."""
    return [
        f"WAIT #5: nam='{'n' * 200}' ela= 3 p1=1 tim={tim + 1}",
        f"WAIT #5: nam='{'m' * 201}' ela= 3 p1=1 tim={tim + 2}",
        f"WAIT #5: nam='spaces'  ela=        4 tim={tim + 3}",  # 8 spaces after ela=
        f"WAIT #5: nam='spaces' ela=         4 tim={tim + 4}",  # 9 spaces
        f"WAIT #5: nam='big ela' ela= {'9' * 15} tim={tim + 5}",
        f"WAIT #5: nam='big ela' ela= {'9' * 16} tim={tim + 6}",
        f"WAIT #5: nam='long tim' ela= 1 tim={'1' * 20}",
        f"WAIT #5: nam='long tim' ela= 1 tim={'1' * 21}",
        f"WAIT #5: nam='params' ela= 2 {'x' * 400} tim={tim + 7}",
        f"WAIT #5: nam='params' ela= 2 {'x' * 401} tim={tim + 8}",
        f"WAIT #5: nam='two spaces' ela= 2  tim={tim + 9}",
        f"WAIT #5: nam='no space'ela= 2 tim={tim + 10}",
        f"WAIT #5: nam='glued' ela= 2x tim={tim + 11}",
        f"WAIT #5: nam='caf\u00e9 latin-1' ela= 2 tim={tim + 12}",
        f"WAIT #5: nam='\u0161 beyond latin-1' ela= 2 tim={tim + 13}",
        f"WAIT #5: nam='crlf' ela= 2 tim={tim + 14}\r",
        f"WAIT #5: nam='trailing' ela= 2 tim={tim + 15}  \r ",
        f"WAIT #5: nam='after tail' ela= 2 tim={tim + 16} x",
        f"WAIT #{'7' * 20}: nam='long cursor' ela= 2 tim={tim + 17}",
        f"WAIT #{'7' * 21}: nam='longer cursor' ela= 2 tim={tim + 18}",
        f"WAIT #5: nam='negative' ela= 2 tim=-{tim + 19}",
        f"WAIT #5: nam='decimal' ela= 2.5 tim={tim + 20}",
        f"WAIT #5: nam='SQL*Net message from client' ela= 3 tim={tim + 21}",
        f"WAIT #5: nam='earlier' ela= 99999 tim={tim - 10**9}",
        f"WAIT #5: nam='huge line' ela= 2 {'y' * 70000} tim={tim + 22}",
        f"WAIT #5: nam='spaces to the end' ela= 2 tim={tim + 23}{' ' * 70000}",
    ]


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


def test_10046_inline_waits_match_the_reference(tmp_path, native):
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
            if rng.random() < 0.2:
                out.extend(_edge_waits(tim))
    data = ("\n".join(out) + "\n").encode()
    got = _same_as_reference(data, Trace10046Parser)
    assert '"trace10046.max_wait_event":"enq: TX - row lock contention"' in got
    # and the generated tallies still hold
    exp = gen_trace10046.generate(300 * 1024, tmp_path / "u.trc", seed=46)
    blocks = [b for b in parse_text(data.decode()).blocks if b.format == "trace10046"]
    assert sum(b.facts["trace10046.fetch_count"] for b in blocks) == exp.fetches
    assert sum(b.facts["event.count"].get("enq: TX - row lock contention", 0) for b in blocks) > 1


def test_10046_many_events_and_pending_beyond_their_caps(native):
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
