"""The batch paths of tkprof and stack (their claims and feed_run, taken by Detector.feed_text,
parse_stream and parse_text) must give exactly the evidence of the reference: every way in with
these parsers claiming nothing and without a fast path (what every report and stack dump went
through before them). Checked on every corpus snippet and fixture, on generated reports and dumps
(whole, cut, CRLF, damaged and mixed with other formats) and on hypothesis-drawn text; and the
generators' tallies must be what perfkb reports."""

from __future__ import annotations

import io
import json
import random
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from benchmarks import gen_awr, gen_oracle, gen_stacks
from ingest import detect
from ingest.base import Parser
from ingest.detect import parse_lines, parse_stream, parse_text
from ingest.parsers.dtrace import DtraceParser
from ingest.parsers.stack import StackParser
from ingest.parsers.tkprof import TkprofParser
from ingest.parsers.waits import RE_CLAIMED, WaitsParser, parse_number

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT.parent / "shared" / "corpus" / "snippets"
FIXTURES = ROOT / "tests" / "fixtures"


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


FAST_HERE = (TkprofParser, StackParser, DtraceParser, WaitsParser)
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
    seen = {"tkprof": 0, "stack": 0, "dtrace": 0, "waits": 0}
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
    # perf script headers StackParser._perf_step must leave to feed: each also matches, or
    # starts like, a header _header tries before perf's (gdb's Thread, eu-stack's PID, a
    # core's, pstack's `pid: cmd`) or holds an Oracle hint word; the last (a thread id,
    # trailing blanks, a CR) it reads itself
    b"Thread 1 (x 4001 666000.01: cpu-clock):\n",
    b"PID 4001 - 4001 [000] 66.000001: cpu-clock:\n",
    b"core 'x' of 77: oracle 4001 [000] 66.000001: cpu-clock:\n",
    b"4001: 4001 [000] 66.000001: cpu-clock:\n",
    b"4001: ora 4001 [000] 66.000001: cpu-clock:\n",
    b"java Stack 4001 [000] 66.000001: cpu-clock:\n",
    b"oradebug dump 4001 [000] 66.000001: cpu-clock:\n",
    b"ora_dbw0_orcl 4001/4002 [003] 66.000002:   250000 cpu-clock:   \r\n",
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


_HEADS = {
    "gdb": [f"#{i}  0x00000000{i:08x} in f{i % 7} () from /lib64/libc.so.6" for i in range(60)],
    # perf script samples: once the block has read a sample header, its runs take the next
    # headers and blank lines themselves (StackParser._perf_step)
    "perf": [
        line
        for i in range(5)
        for line in (
            f"oracle 4242 [001] 66.{i:06d}:   10101 cpu-clock: ",
            *(f"\t    {j + 4096:x} fn{j}+0x{j:x} (/u01/bin/oracle)" for j in range(11)),
            "",
        )
    ],
}


def test_perf_headers_the_run_must_leave_to_feed_read_alike(monkeypatch):
    """Each perf-like header of _STACK_OTHERS (and a blank line) after a perf script sample,
    where the block's run reads the next header itself: as the reference reads it."""
    frames = [f"\t    {j + 4096:x} fn{j}+0x{j:x} (/u01/bin/oracle)\n" for j in range(11)]
    tricky = [x for x in _STACK_OTHERS if b"66.0" in x or b"666000.01" in x] + [b"   \n"]
    assert len(tricky) == 10
    head = "".join(h + "\n" for h in _HEADS["perf"]).encode()
    for line in tricky:
        _same(head + line + "".join(frames).encode() + b"\n" + head, monkeypatch)


def test_perf_samples_of_processes_named_like_other_tools_stay_in_the_dump():
    """`perf record -a` samples every process, sysstat's among them: a sample header whose
    command another format reads as its command line (vmstat, iostat, sar, pidstat and prstat
    score `vmstat 4242 ...` 2) or strace as a signal line (`--- x 4242 ...`) continues the dump,
    every way in. The block's claims say so, and _perf_step reads such headers as feed does (so
    _same's reference, which claims nothing, would split the dump there: not compared to it)."""
    names = ["oracle", "vmstat", "iostat", "sar", "pidstat", "prstat", "--- x", "oracle"]
    frames = "".join(f"\t    {j + 4096:x} fn{j}+0x{j:x} (/u01/bin/oracle)\n" for j in range(12))
    text = "".join(
        f"{comm} 4242 [001] 66.{i:06d}:   10101 cpu-clock: \n{frames}\n"
        for i, comm in enumerate(names * 3)
    )
    data = text.encode()
    for read in PATHS:
        ev = json.loads(read(data))
        assert [(b["format"], b["start_line"]) for b in ev["blocks"]] == [("stack", 1)]
        block = ev["blocks"][0]
        assert block["facts"]["stack.stacks"] == 24.0
        assert block["details"]["perf_script"]["samples"] == 24
        commands = block["details"]["perf_script"]["commands"]
        assert {c.split()[0] for c in commands} == {
            "oracle",
            "vmstat",
            "iostat",
            "sar",
            "pidstat",
            "prstat",
            "---",
        }


_STACK_LINE = st.sampled_from([x.decode().rstrip("\n") for x in _STACK_OTHERS[:-1]])


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    body=st.lists(st.one_of(_STACK_LINE, st.text(max_size=40)), max_size=80),
    crlf=st.booleans(),
    layout=st.sampled_from(sorted(_HEADS)),
)
def test_drawn_stack_text_reads_alike(body, crlf, layout):
    head = _HEADS[layout]
    data = ("\r\n" if crlf else "\n").join([*head, *body]).encode("utf-8", errors="replace")
    with pytest.MonkeyPatch.context() as mp:
        _same(data, mp)


# -- AWR / Statspack text (the waits parser) ------------------------------------------------------


@pytest.fixture(scope="module")
def archive(tmp_path_factory) -> tuple[bytes, gen_awr.ExpectedAwr]:
    path = tmp_path_factory.mktemp("gen") / "awr.txt"
    exp = gen_awr.generate_awr(400 * 1024, path, seed=31)
    return path.read_bytes(), exp


def test_generated_awr_archive_counts_and_reads_alike(archive, monkeypatch):
    data, exp = archive
    assert exp.bytes == len(data)
    assert set(exp.by_layout) == set(gen_awr.LAYOUTS)
    _same(data, monkeypatch)
    ev = parse_text(data.decode())
    assert [b.format for b in ev.blocks] == ["waits"] * exp.reports
    assert sum(b.lines for b in ev.blocks) <= exp.lines
    from benchmarks.streaming import _check_awr

    blocks = [b.model_dump() for b in ev.blocks]
    assert _check_awr(exp, blocks) == ""
    blocks[3]["facts"]["event.count"] = {"log file sync": 1.0}
    assert "waits" in _check_awr(exp, blocks)
    assert "reports" in _check_awr(exp, blocks[1:])


def test_awr_fast_path_is_really_taken(archive, monkeypatch):
    data, _ = archive
    calls = []
    real = WaitsParser.feed_run

    def spy(self, text, pos, endpos, plain):
        out = real(self, text, pos, endpos, plain)
        calls.append(out[1])
        return out

    monkeypatch.setattr(WaitsParser, "feed_run", spy)
    parse_stream(io.BytesIO(data))
    assert sum(calls) > data.count(b"\n") // 2


def test_awr_generator_is_seeded(tmp_path):
    a, b, c = (tmp_path / n for n in "abc")
    assert gen_awr.generate_awr(40_000, a, seed=1) == gen_awr.generate_awr(40_000, b, seed=1)
    assert a.read_bytes() == b.read_bytes()
    gen_awr.generate_awr(40_000, c, seed=2)
    assert c.read_bytes() != a.read_bytes()


_AWR_OTHERS = [
    b"procs -----------memory---------- ---swap-- -----io---- -system-- ------cpu-----\n",
    b" r  b   swpd   free   buff  cache   si   so    bi    bo   in   cs us sy id wa st\n",
    b"IpInReceives                    1234567            0.0\n",
    b"PID 4242 - process\n",
    b"Linux 5.15.0 (db01)  11/24/2026  _x86_64_  (8 CPU)\n",
    b"12:00:01 AM     CPU     %user     %nice   %system   %iowait    %steal     %idle\n",
    b"WORKLOAD REPOSITORY report for\n",
    b"Top 5 Timed Events                                         Avg %Total\n",
    b"db file sequential read  \xc2\xa0  12   0.01  0.20\n",
    b"log file sync 3,825 0 1,495 391 0.4 17.6\n",
    b"direct path read            1.234,5     12,5\n",
    b"SQL> select * from v$system_event;\n",
    b"TKPROF: Release 12.1.0.2.0 - Development on Mon\n",
    b"WAIT #139: nam='db file sequential read' ela= 532 file#=4 block#=1 blocks=1 tim=17\n",
    b"#0  0x00007f3c2a1b4e8a in semtimedop () from /lib64/libc.so.6\n",
    b"OUTPUT\n",
    b"-> a note\n",
    b"```\n",
    b"\x00\x07 junk\n",
    b"\n",
    b"  enq: TX - row lock contention   " + b"9" * 400 + b"  1\n",
    b"gc cr block 2-way " + b"1 " * 3000 + b"\n",
]


def test_cut_crlf_damaged_and_mixed_awr_reads_alike(archive, monkeypatch):
    data, _ = archive
    _same(data[: len(data) * 2 // 3], monkeypatch)
    _same(data.replace(b"\n", b"\r\n")[:200_000], monkeypatch)
    for seed in range(3):
        rng = random.Random(seed)
        out: list[bytes] = []
        for line in data.splitlines(keepends=True)[:4000]:
            r = rng.random()
            if r < 0.02:
                continue
            if r < 0.05:
                out.append(rng.choice(_AWR_OTHERS))
            elif r < 0.07:
                out.append(line.replace(b" ", b"  ", 2))
            elif r < 0.09:
                out.append(b" ".join(line.split()) + b"\n")  # a paste that collapsed spaces
            elif r < 0.10:
                out.append(line[: len(line) // 2] + b"\n")
            out.append(line)
        _same(b"".join(out), monkeypatch)


def test_claimed_shapes_and_hostile_lines():
    assert RE_CLAIMED.fullmatch("db file sequential read      35,732   6,575   184  77.5 User I/O")
    assert RE_CLAIMED.fullmatch("-------------------------- ------------ -----")
    assert RE_CLAIMED.fullmatch("-> ordered by wait time desc")
    # other formats' rows and headers are not claimed
    assert not RE_CLAIMED.fullmatch("IpInReceives                    1234567            0.0")
    assert not RE_CLAIMED.fullmatch(" r  b   swpd   free   buff  cache   si   so    bi    bo")
    assert not RE_CLAIMED.fullmatch("12:00:01 AM     CPU     %user     %nice   %system")
    for hostile in ("a b  " + "1 " * 32000, "x " * 32000, "-" * 65536, "a b  " + "9" * 65000):
        RE_CLAIMED.fullmatch(hostile)  # must return (possessive: no backtracking blow-up)


@given(st.text(alphabet="0123456789,.%-+KMGTmsu ", max_size=12))
def test_cached_number_reading_is_the_plain_one(token):
    assert parse_number(token) == parse_number.__wrapped__(token)


_AWR_LINE = st.sampled_from(
    [
        "Foreground Wait Events                       DB/Inst: BENCH/bench1  Snaps: 1-2",
        "-> ordered by wait time desc, waits desc (idle events last)",
        "                                                             Avg",
        "                                        %Time Total Wait    wait    Waits   % DB",
        "Event                             Waits -outs   Time (s)    (ms)     /txn   time",
        "-------------------------- ------------ ----- ---------- ------- -------- ------",
        "db file sequential read          35,732     0      6,575     184      4.0   77.5",
        "log file sync                     3,825     0      1,495     391      0.4   17.6",
        "SQL*Net message from clien      120,000     0     99,000     825     13.3",
        "enq: TX - row lock contention",
        "                                   11     0          3     250      0.0     .1",
        "Top 10 Foreground Events by Total Wait Time",
        "~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~",
        "DB CPU                                            4.6              38.0",
        "Statistic                                     Total     per Second     per Trans",
        "consistent gets                          12,345,678        3,434.1       1,371.7",
        "Load Profile              Per Second    Per Transaction   Per Exec   Per Call",
        "       DB Time(s):               23.5                0.9       0.09       0.68",
        "OUTPUT",
        "",
        "   ",
        "vmstat 1",
        " r  b   swpd   free   buff  cache   si   so    bi    bo   in   cs us sy id wa st",
        " 1  0      0 812344  10240 402112    0    0     3     9  120  230  2  1 97  0  0",
    ]
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    body=st.lists(st.one_of(_AWR_LINE, st.text(max_size=40)), max_size=80),
    crlf=st.booleans(),
)
def test_drawn_awr_text_reads_alike(body, crlf):
    # a report's first 60 lines (past CONTEXT_LINES_PER_BLOCK) for the fast path to start
    head = "\n".join(
        gen_awr._report(random.Random(0), "11g", 100, gen_awr.ExpectedAwr(seed=0, target_bytes=0))
    ).split("\n")[:60]
    data = ("\r\n" if crlf else "\n").join([*head, *body]).encode("utf-8", errors="replace")
    with pytest.MonkeyPatch.context() as mp:
        _same(data, mp)
