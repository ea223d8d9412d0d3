"""The batch paths of tkprof and stack (their claims and feed_run, taken by Detector.feed_text,
parse_stream and parse_text) must give exactly the evidence of the reference: every way in with
these parsers claiming nothing and without a fast path (what every report and stack dump went
through before them). Checked on every corpus snippet and fixture, on generated reports and dumps
(whole, cut, CRLF, damaged and mixed with other formats) and on hypothesis-drawn text; and the
generators' tallies must be what perfkb reports."""

from __future__ import annotations

import io
import random
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ingest import detect
from ingest.base import Parser
from ingest.detect import parse_lines, parse_stream, parse_text
from ingest.parsers.dtrace import DtraceParser
from ingest.parsers.stack import StackParser
from ingest.parsers.tkprof import TkprofParser

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT.parent / "shared" / "corpus" / "snippets"
FIXTURES = ROOT / "tests" / "fixtures"

if str(ROOT) not in sys.path:  # benchmarks/ is not an installed package: run from the checkout
    sys.path.insert(0, str(ROOT))
from benchmarks import gen_oracle, gen_stacks  # noqa: E402


def _by_lines(data: bytes) -> str:
    lines = (line.decode("utf-8", errors="replace") for line in io.BytesIO(data))
    return parse_lines(lines).model_dump_json()


def _by_stream(chunk: int):
    def read(data: bytes) -> str:
        with pytest.MonkeyPatch.context() as m:
            m.setattr(detect, "CHUNK", chunk)
            return parse_stream(io.BytesIO(data)).model_dump_json()

    return read


def _by_text(data: bytes) -> str:
    return parse_text(data.decode("utf-8", errors="replace")).model_dump_json()


FAST_HERE = (TkprofParser, StackParser, DtraceParser)
PATHS = (_by_lines, _by_stream(1024 * 1024), _by_stream(4093), _by_text)


def _same(data: bytes, monkeypatch) -> str:
    """Each way in reads `data` as it did with tkprof claiming nothing and without a fast path
    (the reference); returns the line-by-line evidence."""
    with monkeypatch.context() as m:
        for ptype in FAST_HERE:
            m.setattr(ptype, "claims", Parser.claims)
            m.setattr(ptype, "fast", False)
        want = [read(data) for read in PATHS]
    assert [read(data) for read in PATHS] == want
    return want[0]


@pytest.fixture(scope="module")
def report(tmp_path_factory) -> tuple[bytes, gen_oracle.ExpectedOracle]:
    path = tmp_path_factory.mktemp("gen") / "tkprof.prf"
    exp = gen_oracle.generate_tkprof(600 * 1024, path, seed=19)
    return path.read_bytes(), exp


def test_corpus_and_fixtures_read_alike(monkeypatch):
    files = sorted(CORPUS.glob("*")) + sorted(p for p in FIXTURES.rglob("*") if p.is_file())
    assert len(files) > 100, "the corpus (../shared/corpus) and fixtures must be present"
    seen = {"tkprof": 0, "stack": 0, "dtrace": 0}
    for path in files:
        want = _same(path.read_bytes(), monkeypatch)
        for fmt in seen:
            seen[fmt] += f'"format":"{fmt}"' in want
    assert min(seen.values()) >= 5, seen


def test_generated_report_counts_and_reads_alike(report, monkeypatch):
    data, exp = report
    assert exp.bytes == len(data)
    want = _same(data, monkeypatch)
    ev = parse_text(data.decode())
    assert [b.format for b in ev.blocks] == ["tkprof"]
    facts = ev.blocks[0].facts
    assert ev.blocks[0].lines == exp.lines
    assert facts["tkprof.statements"] == exp.statements
    assert facts["tkprof.execute_count"] == exp.executes
    assert sum(facts["event.count"].values()) == exp.waits
    assert '"format":"tkprof"' in want
    from benchmarks.streaming import _check_oracle

    assert _check_oracle(exp, facts) == ""
    facts["tkprof.statements"] -= 1
    assert "statements" in _check_oracle(exp, facts)


def test_generator_is_seeded(tmp_path):
    a, b, c = (tmp_path / n for n in "abc")
    assert gen_oracle.generate_tkprof(50_000, a, seed=1) == gen_oracle.generate_tkprof(
        50_000, b, seed=1
    )
    assert a.read_bytes() == b.read_bytes()
    gen_oracle.generate_tkprof(50_000, c, seed=2)
    assert c.read_bytes() != a.read_bytes()


def test_the_fast_path_is_really_taken(report, monkeypatch):
    data, _ = report
    calls = []
    real = TkprofParser.feed_run

    def spy(self, text, pos, endpos, plain):
        out = real(self, text, pos, endpos, plain)
        calls.append(out[1])
        return out

    monkeypatch.setattr(TkprofParser, "feed_run", spy)
    parse_stream(io.BytesIO(data))
    assert sum(calls) > data.count(b"\n") * 9 // 10


def test_cut_crlf_damaged_and_mixed_reports_read_alike(report, monkeypatch):
    data, _ = report
    _same(data[: len(data) * 2 // 3], monkeypatch)  # cut in the middle of a line
    _same(data.replace(b"\n", b"\r\n"), monkeypatch)
    others = [
        b"procs -----------memory---------- ---swap-- -----io---- -system-- ------cpu-----\n",
        b" r  b   swpd   free   buff  cache   si   so    bi    bo   in   cs us sy id wa st\n",
        b"WAIT #139: nam='db file sequential read' ela= 532 file#=4 block#=1 blocks=1 tim=17\n",
        b"Trace file /u01/diag/rdbms/x/x1/trace/x1_ora_1.trc\n",
        b"```\n",
        b"  db file sequential read \xc2\xa0  12   0.01  0.20\n",
        b"Parse\xc2\xa01 0.00 0.00 0 0 0 0\n",
        b"  Parse 1 0.00 0.00 0 0 0 0.5\n",
        b"  Optimizer mode: x   1   0.00   0.00\n",
        b"  \xd9\xa1 \xd9\xa1 \xd9\xa1  TABLE ACCESS FULL T (cr=1 pr=0 pw=0 time=1 us)\n",
        b"Fetch 1 0.00 0.00 0 0 0 1" + b"9" * 400 + b"\n",
        b"\x00\x07 junk\n",
        b"TKPROF: Release 12.1.0.2.0 - Development on Mon\n",
        b"select obj#, type# from obj$ where owner# = :1\n",
        b"\n",
        b"----- ----\n",
    ]
    for seed in range(4):
        rng = random.Random(seed)
        out: list[bytes] = []
        for line in data.splitlines(keepends=True)[:4000]:
            r = rng.random()
            if r < 0.02:
                continue  # a dropped line
            if r < 0.05:
                out.append(rng.choice(others))
            elif r < 0.07:
                out.append(line.replace(b" ", b"  ", 3))
            elif r < 0.08:
                out.append(line[: len(line) // 2] + b"\n")
            out.append(line)
        _same(b"".join(out), monkeypatch)


_LINE = st.sampled_from(
    [
        "SQL ID: 0abc123def456 Plan Hash: 42",
        "select a from t",
        "call     count       cpu    elapsed       disk      query    current        rows",
        "------- ------  -------- ---------- ---------- ---------- ----------  ----------",
        "Parse        1      0.00       0.00          0          0          0           0",
        "Execute      2      0.01       0.02          0          5          1           1",
        "total        3      0.01       0.02          0          5          1           1",
        "Misses in library cache during parse: 1",
        "Parsing user id: SYS   (recursive depth: 1)",
        "Rows (1st) Rows (avg) Rows (max)  Row Source Operation",
        "         1          1          1  TABLE ACCESS FULL T (cr=3 pr=0 pw=0 time=5 us)",
        "Rows     Row Source Operation",
        "      1  SORT AGGREGATE (cr=3 pr=0 pw=0 time=5 us)",
        "Elapsed times include waiting on following events:",
        "  Event waited on                             Times   Max. Wait  Total Waited",
        "  ----------------------------------------   Waited  ----------  ------------",
        "  db file sequential read                       144        0.00          0.06",
        "  SQL*Net message from client                     2        1.50          3.00",
        "*" * 80,
        "OVERALL TOTALS FOR ALL NON-RECURSIVE STATEMENTS",
        "    3  user  SQL statements in session.",
        "Trace file: x.trc",
        "",
        "   ",
        "vmstat 1",
        "WAIT #1: nam='log file sync' ela= 5 tim=9",
    ]
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    head=st.lists(_LINE, min_size=60, max_size=61),
    body=st.lists(st.one_of(_LINE, st.text(max_size=40)), max_size=80),
    crlf=st.booleans(),
)
def test_drawn_tkprof_text_reads_alike(head, body, crlf):
    # head: enough lines (past CONTEXT_LINES_PER_BLOCK) for the fast path to start
    lines = ["TKPROF: Release 19.0.0.0.0 - Development", *head, *body]
    data = ("\r\n" if crlf else "\n").join(lines).encode("utf-8", errors="replace")
    with pytest.MonkeyPatch.context() as mp:
        _same(data, mp)


@pytest.fixture(scope="module")
def dumps(tmp_path_factory) -> dict[str, tuple[bytes, gen_stacks.ExpectedStacks]]:
    out = {}
    for kind in gen_stacks.KINDS:
        path = tmp_path_factory.mktemp("gen") / f"{kind}.txt"
        exp = gen_stacks.generate(kind, 500 * 1024, path, seed=27)
        out[kind] = (path.read_bytes(), exp)
    return out


@pytest.mark.parametrize("kind", gen_stacks.KINDS)
def test_generated_stack_dump_counts_and_reads_alike(dumps, kind, monkeypatch):
    data, exp = dumps[kind]
    assert exp.bytes == len(data)
    _same(data, monkeypatch)
    ev = parse_text(data.decode())
    assert [b.format for b in ev.blocks] == ["dtrace" if kind == "dtrace" else "stack"]
    facts = ev.blocks[0].facts
    assert (facts["stack.stacks"], facts["stack.frames"]) == (exp.stacks, exp.frames)
    from benchmarks.streaming import _check_stacks

    assert _check_stacks(exp, facts) == ""
    assert "frames" in _check_stacks(exp, {**facts, "stack.frames": 1.0})
    calls = []

    def spy(self, text, pos, endpos, plain):
        out = real(self, text, pos, endpos, plain)
        calls.append(out[1])
        return out

    ptype = DtraceParser if kind == "dtrace" else StackParser
    real = ptype.feed_run
    monkeypatch.setattr(ptype, "feed_run", spy)
    parse_stream(io.BytesIO(data))
    assert sum(calls) > data.count(b"\n") * 9 // 10


_STACK_OTHERS = [
    b"#3  0x0000000000400d2f in main () at t.c:12\n",
    b"#0  0x00007f3c2a1b4e8a semtimedop - /usr/lib64/libc.so.6\n",
    b"#1  0x0000000009ed3e26 in kdb_count ()\n",
    b"#2  0x0000000009ed3e26 in ksedsts()+244<-ksdxfstk()+58 () from /x\n",
    b"#4  0x0000000009ed3e26 in deadbeef () from /lib64/libc.so.6\n",
    b"#5  0x0000000009ed3e26 in ?? ()\n",
    b" ff2c57f8 _lwp_start (0, 0, 0, 0, 0, 0)\n",
    b" ff2c57f8 Stackwalker (0, 0) + 4\n",
    b" ff2c57f8 __pollsys (/usr/lib/x) + 4\n",
    b"     7f3c2a1b4e8a semtimedop+0xa (/usr/lib64/libc-2.17.so)\n",
    b"\t    7f3c2a1b4e8a std::run()+0xa (/usr/lib64/libx.so)\n",
    b"\t    7f3c2a1b4e8a calling_Stack+0xa ([kernel.kallsyms])\n",
    b"\t    7f3c2a1b4e8a \xc2\xa0x+0xa (/lib/a)\n",
    b"\t               0 [unknown] ([unknown])\n",
    b"dd 29776 666709.771979:   10101010 cpu-clock: \n",
    b"oracle 4242/4243 [002] 66.000001: cycles:\n",
    b'4242  10:00:00.000001 read(9, "x", 512) = 512 <0.000010>\n',
    b"15697: 1.5426 1.0901 0.0000 pollsys(0x10041CDA8, 2, 0x0, 0x0) = 1\n",
    b"              libc.so.1`__pollsys+0xa\n",
    b"              oracle`kdst+0x1b(1, 2)\n",
    b"             91205\n",
    b"  value  ------------- Distribution ------------- count\n",
    b"  read                                   1234\n",
    b"dtrace: description 'x' matched 1 probe\n",
    b"26330:\t/usr/jdk/instances/jdk1.5.0/bin/java -Dx\n",
    b"-----------------  lwp# 9 / thread# 9  --------------------\n",
    b"Thread 7 (Thread 0x7f0000000001 (LWP 77)):\n",
    b"ksedsts()+244<-ksdxfstk()+58<-ksdxcb()+1876<-sspuser()+112<-__sighandler()\n",
    b"procs -----------memory---------- ---swap-- -----io---- -system-- ------cpu-----\n",
    b" r  b   swpd   free   buff  cache   si   so    bi    bo   in   cs us sy id wa st\n",
    b"```\n",
    b"\n",
    b"   \n",
    b"#6  0x" + b"0" * 5000 + b" in long ()\n",
]


@pytest.mark.parametrize("kind", gen_stacks.KINDS)
def test_cut_crlf_damaged_and_mixed_dumps_read_alike(dumps, kind, monkeypatch):
    data, _ = dumps[kind]
    _same(data[: len(data) * 2 // 3], monkeypatch)
    _same(data.replace(b"\n", b"\r\n"), monkeypatch)
    for seed in range(3):
        rng = random.Random(seed)
        out: list[bytes] = []
        for line in data.splitlines(keepends=True)[:5000]:
            r = rng.random()
            if r < 0.02:
                continue
            if r < 0.05:
                out.append(rng.choice(_STACK_OTHERS))
            elif r < 0.07:
                out.append(line.replace(b" ", b"  ", 2))
            elif r < 0.08:
                out.append(line[: len(line) // 2] + b"\n")
            out.append(line)
        _same(b"".join(out), monkeypatch)


_STACK_LINE = st.sampled_from([x.decode().rstrip("\n") for x in _STACK_OTHERS[:-1]])


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    body=st.lists(st.one_of(_STACK_LINE, st.text(max_size=40)), max_size=80),
    crlf=st.booleans(),
)
def test_drawn_stack_text_reads_alike(body, crlf):
    head = [f"#{i}  0x00000000{i:08x} in f{i % 7} () from /lib64/libc.so.6" for i in range(60)]
    data = ("\r\n" if crlf else "\n").join([*head, *body]).encode("utf-8", errors="replace")
    with pytest.MonkeyPatch.context() as mp:
        _same(data, mp)
