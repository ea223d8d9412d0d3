"""The raw 10046 parser on fixtures of my own in the shapes real traces have: an 8.1.7 trace in
centiseconds, a 19c trace pasted with prompts, journal prefixes and a wrapped WAIT line, and a
piece without header or PARSING IN CURSOR; the Method R accounting; and the fast path through
the detector. What every parser owes (random or damaged input never raises, refusals leave no
trace, feed_run = feed) is in tests/test_parser_contract.py."""

from __future__ import annotations

import io
import random
from pathlib import Path

import pytest

from benchmarks import gen_trace10046
from ingest import detect
from ingest.detect import Detector, parse_lines, parse_stream, parse_text
from ingest.parsers.trace10046 import PROFILE_CPU, PROFILE_UNACC_IN, Trace10046Parser
from tests.parser_helpers import (
    assert_facts_valid,
    assert_rejected_without_trace,
    drive_parser,
    fixture_lines,
)

ROOT = Path(__file__).resolve().parent.parent

CS = fixture_lines("oracle/trace10046_817_cs.trc")
PASTED = fixture_lines("oracle/trace10046_19c_pasted.txt")
PIECE = fixture_lines("oracle/trace10046_piece.txt")


def run(lines):
    return drive_parser(Trace10046Parser(), lines)


def _block(lines):
    blocks = [b for b in parse_text("\n".join(lines) + "\n").blocks if b.format == "trace10046"]
    assert len(blocks) == 1, [b.format for b in parse_text("\n".join(lines)).blocks]
    assert_facts_valid(blocks[0])
    return blocks[0]


def test_817_trace_counts_in_centiseconds_from_its_header():
    b = _block(CS)
    f = b.facts
    assert f["trace10046.time_unit"] == "cs" and b.details["time_unit_basis"] == "header"
    assert f["trace10046.release"].startswith("8.1.7")
    # dep=0 calls: e = 3 + 0 + 13 + 11 cs, c = 2 + 0 + 1 + 0 cs
    assert f["trace10046.cpu_s"] == pytest.approx(0.03)
    assert f["event.count"]["db file sequential read"] == 4
    assert f["event.waited_s"]["db file sequential read"] == pytest.approx(0.22)
    assert f["event.max_ms"]["db file sequential read"] == pytest.approx(70.0)
    assert f["trace10046.think_s"] == pytest.approx(2.0)
    assert f["trace10046.hard_parses"] == 1 and f["trace10046.parse_count"] == 1
    assert f["trace10046.fetch_count"] == 2 and f["trace10046.disk"] == 4
    # 8i waits carry no tim: they are placed inside the next call, except think time
    assert f["trace10046.response_s"] == pytest.approx(0.27 + 2.0)
    assert f["trace10046.unaccounted_within_s"] == pytest.approx(0.27 - 0.03 - 0.22)
    assert f["trace10046.max_wait_event"] == "db file sequential read"
    assert f["trace10046.max_wait_ms"] == pytest.approx(70.0)
    assert b.details["pid"] == 4242 and b.details["session"] == "17.301"


def test_magnitudes_decide_the_unit_without_a_header():
    body = [line for line in CS if line.startswith(("PARSE", "EXEC", "FETCH", "WAIT"))]
    b = _block(body)
    assert b.facts["trace10046.time_unit"] == "cs"
    assert b.details["time_unit_basis"] == "tim magnitude"
    assert _block(PIECE).facts["trace10046.time_unit"] == "us"


def test_19c_paste_with_prompt_prefixes_and_a_wrapped_wait():
    b = _block(PASTED)
    f = b.facts
    assert f["trace10046.time_unit"] == "us" and f["trace10046.release"] == "19.18.0.0.0"
    assert f["event.count"]["db file sequential read"] == 2
    assert f["event.count"]["log file sync"] == 1
    # the wrapped line's obj#/block# arrive on the continuation line
    assert f["trace10046.max_wait_event"] == "db file sequential read"
    assert f["trace10046.max_wait_ms"] == pytest.approx(120.0)
    assert f["trace10046.max_wait_obj"] == 778 and f["trace10046.max_wait_block"] == 9002
    assert f["trace10046.think_s"] == pytest.approx(2.0)
    assert f["statement.hard_parses"]["0abcdefghjkmn"] == 1
    assert f["trace10046.commits"] == 1
    # R: PARSE 0.0008 + EXEC 0.1412 + think 2.0 + log file sync 0.003 (between calls) + gaps
    parts = f["trace10046.profile_s"]
    assert sum(parts.values()) == pytest.approx(f["trace10046.response_s"], rel=1e-6)
    assert parts["log file sync"] == pytest.approx(0.003)
    assert parts[PROFILE_CPU] == pytest.approx(0.0015)
    # EXEC e=0.1412, c=0.001, waits inside 0.14 -> 0.0002 unaccounted within
    assert parts[PROFILE_UNACC_IN] == pytest.approx(0.0008 - 0.0005 + 0.1412 - 0.001 - 0.14)


def test_piece_without_parsing_in_cursor():
    b = _block(PIECE)
    f = b.facts
    key = "cursor #139947924936336"
    assert f["statement.exec_count"][key] == 0 and f["trace10046.fetch_count"] == 2
    assert f["trace10046.rows_per_fetch"] == 15
    assert f["trace10046.think_s"] == pytest.approx(0.006)
    assert "trace10046.max_wait_event" in f  # SQL*Net message to client, the only non-idle
    assert f["trace10046.think_pct"] > 90


def test_other_formats_lines_are_refused_unchanged():
    p = Trace10046Parser()
    for line in PIECE:
        assert p.feed(line)
    assert_rejected_without_trace(
        p,
        [
            "15697: 1.5426 1.0901 0.0000 pollsys(0x10041CDA8, 2, 0x0, 0x0) = 1",
            "CPU minf mjf xcal  intr ithr  csw icsw migr smtx  srw syscl  usr sys  wt idl",
            "Warning: log write elapsed time 610ms, size 12KB",
        ],
    )


def test_fast_path_gives_what_line_by_line_gives():
    header = CS[:14]
    body = []
    tim = 5_000_000_000_000
    for i in range(3000):
        tim += 900
        body.append(
            f"WAIT #7: nam='db file sequential read' ela= {100 + i % 50} file#=4 block#={i} "
            f"blocks=1 obj#=99 tim={tim}"
        )
        tim += 300
        body.append(f"FETCH #7:c=100,e=1300,p=1,cr=3,cu=0,mis=0,r=10,dep=0,og=1,tim={tim}")
        if i % 500 == 0:
            body.append(f"STAT #7 id=1 cnt=10 pid=0 pos=1 obj=99 op='TABLE ACCESS FULL T{i}'")
            body.append("*** 2024-05-06 10:00:00.000")
    lines = [ln.replace("tim=1074", "tim=5000000") for ln in header] + body
    text = "\n".join(lines) + "\n"
    fast = Detector()
    fast.feed_text(text)
    a = fast.finish()
    b = parse_lines(line + "\n" for line in lines)
    assert [x.model_dump() for x in a.blocks] == [x.model_dump() for x in b.blocks]
    block = [x for x in a.blocks if x.format == "trace10046"][0]
    assert block.facts["trace10046.fetch_count"] == 3000
    assert block.facts["event.count"]["db file sequential read"] == 3000


def test_piece_starting_inside_a_call_reaches_its_parent():
    lines = [
        "EXEC #2:c=100,e=200,p=0,cr=0,cu=0,mis=0,r=0,dep=1,og=1,tim=1000000000200",
        "WAIT #2: nam='db file sequential read' ela= 500 file#=1 block#=2 blocks=1 obj#=3 "
        "tim=1000000000800",
        "FETCH #2:c=100,e=700,p=1,cr=1,cu=0,mis=0,r=1,dep=1,og=1,tim=1000000000900",
        "EXEC #1:c=300,e=1000,p=1,cr=1,cu=0,mis=0,r=1,dep=0,og=1,tim=1000000001000",
    ]
    block, rejected = run(lines)
    assert rejected == []
    f = block.facts
    assert f["trace10046.top_depth"] == 0 and f["trace10046.dep0_calls"] == 1
    assert f["trace10046.recursive_calls"] == 2
    assert f["trace10046.response_s"] == pytest.approx(0.001)
    assert f["trace10046.cpu_s"] == pytest.approx(0.0003)
    assert f["trace10046.unaccounted_within_s"] == pytest.approx(0.0002)


def test_smart_quotes_from_a_chat_client():
    lines = [
        "PARSING IN CURSOR #5 len=20 dep=0 uid=1 oct=3 lid=1 tim=1000000000000 hv=9 ad=\u201822\u2019 "
        "sqlid=\u2018abcdabcdabcd1\u2019",
        "select 1 from dual",
        "END OF STMT",
        "WAIT #5: nam=\u2018db file scattered read\u2019 ela= 900 file#=3 block#=8 blocks=16 "
        "obj#=4 tim=1000000001000",
        "FETCH #5:c=50,e=1000,p=16,cr=17,cu=0,mis=0,r=1,dep=0,og=1,tim=1000000001050",
    ]
    block, rejected = run(lines)
    assert rejected == []
    f = block.facts
    assert f["event.count"]["db file scattered read"] == 1
    assert f["statement.exec_count"]["abcdabcdabcd1"] == 0
    assert f["statement.elapsed_s"]["abcdabcdabcd1"] == pytest.approx(0.001)


def _evidence_by_lines(data: bytes) -> str:
    d = Detector()
    d.feed_lines(line.decode("utf-8", errors="replace") for line in io.BytesIO(data))
    return d.finish().model_dump_json()


def _same_on_every_path(data: bytes, monkeypatch) -> None:
    want = _evidence_by_lines(data)
    for chunk in (1024 * 1024, 4093):
        monkeypatch.setattr(detect, "CHUNK", chunk)
        assert parse_stream(io.BytesIO(data)).model_dump_json() == want
    assert parse_text(data.decode("utf-8", errors="replace")).model_dump_json() == want


def test_generated_trace_damaged_gives_the_same_evidence_on_every_path(tmp_path, monkeypatch):
    path = tmp_path / "t.trc"
    gen_trace10046.generate(420 * 1024, path)
    data = path.read_bytes()
    _same_on_every_path(data, monkeypatch)
    _same_on_every_path(data[: len(data) * 2 // 3], monkeypatch)  # cut inside a line
    _same_on_every_path(data.replace(b"\n", b"\r\n"), monkeypatch)
    rng = random.Random(10046)
    out: list[bytes] = []
    for line in data.splitlines(keepends=True):
        r = rng.random()
        if r < 0.002:
            out.append(b"some prose about it\n")
        elif r < 0.003:
            out.append(b"```\n")
        elif r < 0.004:
            out.append(line.replace(b" ", b"\x01", 1))
        elif r < 0.006:
            out.append(line[: rng.randrange(len(line))] + b"\n")
        elif r < 0.007:
            out.append(b"\xff\xfe" + line)
        elif r < 0.008:
            out.append(line.rstrip(b"\n") + b"   \r\r\n")
        elif r < 0.009:
            out.append(b"\n")
        elif r < 0.010:
            out.append(b"  " + line)
        elif r < 0.011:
            out.append(b"15697: 1.5426 1.0901 0.0000 pollsys(0x10041CDA8, 2, 0x0, 0x0) = 1\n")
        out.append(line)
    _same_on_every_path(b"".join(out), monkeypatch)


def test_9i_header_means_microseconds():
    """9.2 already wrote e, ela and tim in microseconds (8i and earlier in centiseconds)."""
    lines = [
        "Oracle9i Enterprise Edition Release 9.2.0.6.0 - Production",
        "*** SESSION ID:(52.55034) 2007-01-19 09:56:00.761",
        "WAIT #0: nam='SQL*Net message to client' ela= 4639 p1=1650815232 p2=1 p3=0",
        "WAIT #0: nam='SQL*Net message from client' ela= 27102 p1=1650815232 p2=1 p3=0",
        "PARSE #1:c=10000,e=12345,p=0,cr=0,cu=0,mis=1,r=0,dep=0,og=4,tim=1141818516446923",
    ]
    block, rejected = run(lines)
    assert rejected == []
    f = block.facts
    assert f["trace10046.time_unit"] == "us" and block.details["time_unit_basis"] == "header"
    assert f["trace10046.release"] == "9.2.0.6.0"
    assert f["trace10046.think_s"] == pytest.approx(0.027102)
    assert f["trace10046.cpu_s"] == pytest.approx(0.01)


def test_sql_text_that_looks_like_another_format_stays_in_the_trace():
    lines = [
        "PARSING IN CURSOR #7 len=70 dep=0 uid=1 oct=3 lid=1 tim=1000000000000 hv=1 ad='a' "
        "sqlid='0000000000007'",
        "select * from t where note = '",
        "Thread 1 (Thread 0x7f (LWP 4242)):",
        "'",
        "END OF STMT",
        "PARSE #7:c=10,e=10,p=0,cr=0,cu=0,mis=1,r=0,dep=0,og=1,tim=1000000000010",
    ]
    blocks = parse_text("\n".join(lines) + "\n").blocks
    assert [b.format for b in blocks] == ["trace10046"]
    assert blocks[0].facts["trace10046.hard_parses"] == 1


def test_a_statement_cut_off_before_end_of_stmt_gives_way_to_what_follows():
    truss = [
        f"15697: {i}.5426 1.0901 0.0000 pollsys(0x10041CDA8, 2, 0x0, 0x0) = 1" for i in range(60)
    ]
    lines = [
        "EXEC #3:c=10,e=10,p=0,cr=0,cu=0,mis=0,r=0,dep=0,og=1,tim=1000000000010",
        "PARSING IN CURSOR #9 len=20 dep=0 uid=1 oct=3 lid=1 tim=1000000000020 hv=1 ad='a'",
        "select 1 from dual",
        *truss,
    ]
    blocks = parse_text("\n".join(lines) + "\n").blocks
    assert [b.format for b in blocks] == ["trace10046", "truss"]
    assert blocks[1].facts["trace.calls"] >= 50


def test_a_young_microsecond_clock_is_not_mistaken_for_centiseconds():
    # 10g+ counts tim from boot on some platforms: 10 digits within three hours of it
    lines = [
        "WAIT #3: nam='db file sequential read' ela= 812 file#=4 block#=9 blocks=1 obj#=7 "
        "tim=3456789012",
        "FETCH #3:c=200,e=1100,p=1,cr=4,cu=0,mis=0,r=1,dep=0,og=1,tim=3456789100",
    ]
    block, _ = run(lines)
    assert block.facts["trace10046.time_unit"] == "us"
    assert block.facts["event.max_ms"]["db file sequential read"] == pytest.approx(0.812)


def test_memory_stays_bounded_with_literal_sql():
    from ingest.parsers import trace10046 as mod

    p = Trace10046Parser()
    n = mod.MAX_STATEMENTS + 500
    for i in range(n):
        p.feed(
            f"PARSING IN CURSOR #{i} len=30 dep=0 uid=1 oct=3 lid=1 tim={10**12 + i * 10} "
            f"hv={i} ad='a' sqlid='lit{i:010d}'"
        )
        p.feed(f"select * from t where id = {i}")
        p.feed("END OF STMT")
        p.feed(f"PARSE #{i}:c=5,e=5,p=0,cr=0,cu=0,mis=1,r=0,dep=0,og=1,tim={10**12 + i * 10 + 5}")
    assert len(p.statements) == mod.MAX_STATEMENTS
    f = p.facts()[0]
    assert f["trace10046.statements"] == n and f["trace10046.hard_parses"] == n
    assert len(f["statement.elapsed_s"]) <= 200


def test_superscript_digits_in_numeric_fields_do_not_raise():
    # "²" is a digit to str.isdigit() but int() and float() refuse it: before, `dep=0²` in a
    # PARSING IN CURSOR line raised out of parse_text and lost the whole paste
    text = (
        "PARSING IN CURSOR #140 len=8\u00b2 dep=0\u00b2 uid=0 oct=3 lid=0 tim=1000 hv=1 ad='a'"
        " sqlid='abc'\n"
        "select 1\n"
        "END OF STMT\n"
        "EXEC #140:c=0,e=5,p=0,cr=0,cu=0,mis=0\u00b2,r=0,dep=0\u00b2,og=1,plh=0,tim=1\u00b200\n"
        "WAIT #140: nam='db file sequential read' ela= 5 file#=4\u00b2 block#=1 blocks=1 obj#=2"
        " tim=1005\n"
    )
    (block,) = parse_text(text).blocks
    assert block.format == "trace10046"
    assert block.facts["event.count"] == {"db file sequential read": 1.0}
