"""The C reader of a tkprof report's table runs (tkprof_tables, ingest/_syscore_src/tkprof.c:
call rows, wait rows, rulers and blank lines, applied to the parser's statement) must give the
evidence of the Python reader (tkprof.NATIVE = False) and of the line-by-line path, by every way
in (parse_lines, parse_stream at two read sizes, parse_text): on every tkprof corpus snippet and
fixture and on pasted copies of them (collapsed whitespace, tabs, CRLF, indented), on reports as
releases and options print them (8i without SQL IDs, explain=, waits=no, aggregate=no, sort=,
sys=no, 23ai's three row counts), on generated and damaged reports, and on lines at each bound
the C reader checks (15/16 digits, a kind read twice, 402/403-character event names, text beyond
ASCII, names that start like other lines, more events than MAX_EVENTS)."""

from __future__ import annotations

import io
import random
import re
from pathlib import Path

import pytest

from benchmarks import gen_oracle
from ingest import detect
from ingest.base import MAX_LINE
from ingest.detect import parse_lines, parse_stream, parse_text
from ingest.parsers import tkprof

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT.parent / "shared" / "corpus" / "snippets"
FIXTURES = ROOT / "tests" / "fixtures"


def _ways(data: bytes) -> list[str]:
    text = data.decode("utf-8", errors="replace")
    out = [
        parse_lines(
            line.decode("utf-8", errors="replace") for line in io.BytesIO(data)
        ).model_dump_json()
    ]
    for chunk in (1024 * 1024, 4093):
        with pytest.MonkeyPatch.context() as m:
            m.setattr(detect, "CHUNK", chunk)
            out.append(parse_stream(io.BytesIO(data)).model_dump_json())
    out.append(parse_text(text).model_dump_json())
    return out


def _alike(data: bytes, *, native_lines: int = 0) -> str:
    """C reader on and off, every way in: one evidence; returns it. The C reader must have
    taken at least `native_lines` lines (a block's first CONTEXT_LINES_PER_BLOCK lines go one
    by one, without feed_run: the lines under test must come after them)."""
    with pytest.MonkeyPatch.context() as m:
        m.setattr(tkprof, "NATIVE", False)
        want = _ways(data)
    assert len(set(want)) == 1
    taken = [0]
    real = tkprof._c_tables

    def counted(*args):
        pos, k = real(*args)
        taken[0] += k
        return pos, k

    with pytest.MonkeyPatch.context() as m:
        m.setattr(tkprof, "_c_tables", counted)
        got = _ways(data)
    assert got == want
    assert taken[0] >= native_lines
    return got[0]


def _reports() -> list[Path]:
    assert CORPUS.is_dir(), f"the shared corpus is missing at {CORPUS}"
    paths = sorted(CORPUS.glob("*_tkprof_*.txt"))
    assert len(paths) >= 5
    paths += sorted((FIXTURES / "oracle").glob("tkprof_*.txt"))
    paths += [FIXTURES / "seeds" / "000_tkprof_122.txt"]
    paths += [
        p
        for p in sorted((FIXTURES / "kb").rglob("*.txt"))
        if b"Elapsed times include" in p.read_bytes() or b"call     count" in p.read_bytes()
    ]
    return paths


def test_the_c_reader_is_built():
    assert tkprof._c_tables is not None, "ingest._syscore lacks tkprof_tables"
    assert tkprof.NATIVE


def test_the_c_reader_takes_the_table_lines(tmp_path, monkeypatch):
    path = tmp_path / "r.prf"
    exp = gen_oracle.generate_tkprof(100 * 1024, path, seed=5)
    taken: list[int] = []
    real = tkprof._c_tables

    def counted(*args):
        pos, k = real(*args)
        taken.append(k)
        return pos, k

    monkeypatch.setattr(tkprof, "_c_tables", counted)
    block = parse_text(path.read_text()).blocks[0]
    assert block.facts["tkprof.statements"] == exp.statements
    # tables, attribute lines, headers, SQL ID, stars and repeated SQL text: all but the first
    # SQL text line of each statement (unique: the detector asks the other formats about it)
    assert sum(taken) > block.lines * 0.9


@pytest.mark.parametrize("path", _reports(), ids=lambda p: p.name)
def test_corpus_and_fixtures(path):
    _alike(path.read_bytes())


def _pasted(text: str) -> dict[str, str]:
    lines = text.splitlines()
    return {
        "collapsed": "".join(" ".join(line.split()) + "\n" for line in lines),
        "tabs": "".join(line.replace("  ", "\t") + "\n" for line in lines),
        "crlf": text.replace("\n", "\r\n"),
        "indented": "".join("  " + line + "\n" for line in lines),
        "trailing blanks": "".join(line + " \t \n" for line in lines),
        "no final newline": text.rstrip("\n"),
    }


@pytest.mark.parametrize(
    "variant", ["collapsed", "tabs", "crlf", "indented", "trailing blanks", "no final newline"]
)
def test_pasted_reports(variant):
    for path in _reports()[:8]:
        _alike(_pasted(path.read_text(errors="replace"))[variant].encode())


# Reports as releases and options print them. Numbers are invented; the layouts are tkprof's
# (8i's `Misses` / `Optimizer goal` / single-column Rows, 10g+ `SQL ID`, 11.2.0.2+ three row
# counts, explain='s `Execution Plan`, waits=no without the wait table, aggregate=no repeating a
# statement, sys=no leaving out recursive SYS statements).
CALLS = """
call     count       cpu    elapsed       disk      query    current        rows
------- ------  -------- ---------- ---------- ---------- ----------  ----------
Parse        1      0.01       0.02          0          0          0           0
Execute      1      0.00       0.00          0          0          0           0
Fetch       {f}      1.25       9.80       4000      52000          0        {r}
------- ------  -------- ---------- ---------- ---------- ----------  ----------
total       {t}      1.26       9.82       4000      52000          0        {r}
"""
WAITS = """
Elapsed times include waiting on following events:
  Event waited on                             Times   Max. Wait  Total Waited
  ----------------------------------------   Waited  ----------  ------------
  SQL*Net message to client                      {f}        0.00          0.01
  db file sequential read                     4000        0.05          7.90
  SQL*Net message from client                    {f}        2.10          5.55
"""
STARS = "*" * 80 + "\n"


def _stmt(sql: str, *, sql_id: str | None, rows: str, waits: bool, depth: int = 0) -> str:
    head = f"SQL ID: {sql_id} Plan Hash: 1234567890\n\n" if sql_id else ""
    user = f"Parsing user id: 54{f'     (recursive depth: {depth})' if depth else ''}\n"
    body = CALLS.format(f=11, r=1000, t=13)
    mid = "\nMisses in library cache during parse: 1\nOptimizer mode: ALL_ROWS\n" + user
    out = head + sql + "\n" + body + mid + "\n" + rows
    if waits:
        out += WAITS.format(f=12)
    return out + "\n\n\n" + STARS + "\n"


ROWS_8I = """Rows     Row Source Operation
-------  ---------------------------------------------------
   1000  TABLE ACCESS FULL ORDERS (cr=52000 r=4000 w=0 time=9800000 us)
"""
ROWS_23 = """Rows (1st) Rows (avg) Rows (max)  Row Source Operation
---------- ---------- ----------  ---------------------------------------------------
      1000       1000       1000  TABLE ACCESS FULL ORDERS (cr=52000 pr=4000 pw=0 time=9800000 us cost=12 size=100 card=10)
"""  # noqa: E501
ROWS_EXPLAIN = """Rows     Execution Plan
-------  ---------------------------------------------------
      0  SELECT STATEMENT   MODE: ALL_ROWS
   1000   TABLE ACCESS   MODE: ANALYZED (FULL) OF 'ORDERS' (TABLE)
"""
HEADER = (
    """
TKPROF: Release {rel} - Production on Tue Nov 24 10:00:00 2026

Copyright (c) 1982, 2019, Oracle.  All rights reserved.

Trace file: orcl_ora_4242.trc
Sort options: {sort}
"""
    + STARS
)
TRAILER = (
    """
OVERALL TOTALS FOR ALL NON-RECURSIVE STATEMENTS
"""
    + CALLS.format(f=22, r=2000, t=26)
    + """
Misses in library cache during parse: 2
"""
    + WAITS.format(f=24)
    + """
    2  user  SQL statements in session.
    0  internal SQL statements in session.
    2  SQL statements in session.
"""
    + STARS
    + """Trace file: orcl_ora_4242.trc
Trace file compatibility: 11.1.0.7
Sort options: {sort}
       1  session in tracefile.
       2  user  SQL statements in trace file.
     130  lines in trace file.
      15  elapsed seconds in trace file.
"""
)

SQL = "select o.id, o.amount\nfrom\n orders o where o.status = :b1\n"


def _head() -> str:
    """A report's header and two statements: past the block's first CONTEXT_LINES_PER_BLOCK
    lines, so what follows goes through feed_run and the C reader."""
    pad = _stmt(SQL, sql_id="0000000000000", rows=ROWS_23, waits=True)
    return HEADER.format(rel="19.0.0.0.0", sort="default") + pad * 2


@pytest.mark.parametrize(
    ("rel", "sort", "sql_id", "rows", "waits"),
    [
        ("8.1.7.4.0", "default", None, ROWS_8I, False),
        ("10.2.0.5.0", "prsela  exeela  fchela", "7bsn3x2rc3yfq", ROWS_8I, True),
        ("11.2.0.4.0", "default", "7bsn3x2rc3yfq", ROWS_23, True),
        ("12.2.0.1.0", "fchela", "7bsn3x2rc3yfq", ROWS_EXPLAIN, True),
        ("19.0.0.0.0", "default", "7bsn3x2rc3yfq", ROWS_23, False),
        ("23.0.0.0.0", "default", "7bsn3x2rc3yfq", ROWS_23, True),
    ],
)
def test_releases_and_options(rel, sort, sql_id, rows, waits):
    one = _stmt(SQL, sql_id=sql_id, rows=rows, waits=waits)
    rec = _stmt("SELECT NVL(MAX(ID),0) FROM SEQ$\n", sql_id=sql_id, rows=rows, waits=waits, depth=1)
    report = HEADER.format(rel=rel, sort=sort) + one + rec + one + TRAILER.format(sort=sort)
    want = _alike(report.encode(), native_lines=10)
    assert '"format":"tkprof"' in want
    # aggregate=no: the same statement printed once per execution; sys=no: no recursive ones
    _alike((HEADER.format(rel=rel, sort=sort) + one * 6 + TRAILER.format(sort=sort)).encode())
    for variant in _pasted(report).values():
        _alike(variant.encode())


def _wait_table(rows: list[str]) -> str:
    head = WAITS.split("\n")[1:4]
    return "\n".join(head) + "\n" + "".join(rows)


@pytest.mark.parametrize(
    "line",
    [
        "  db file sequential read                     4000        0.05          7.90\n",
        "  db file sequential read                     " + "9" * 15 + "        0.05   7.90\n",
        "  db file sequential read                     " + "9" * 16 + "        0.05   7.90\n",
        "  db file sequential read     40  0." + "1" * 14 + "   7.90\n",
        "  db file sequential read     40  0." + "1" * 15 + "   7.90\n",
        "  db file sequential read     40.5  0.05   7.90\n",
        "  db file sequential read     40  0.05   7.\n",
        "  db file sequential read     40  .05   7.90\n",
        "  db file sequential read     40  0.05\n",
        "  " + "e" * 402 + "  40  0.05   7.90\n",
        "  " + "e" * 403 + "  40  0.05   7.90\n",
        "  caf\u00e9 wait  40  0.05   7.90\n",
        "  nbsp\u00a0wait  40  0.05   7.90\n",
        "  \u0663 wait  40  0.05   7.90\n",
        "  wait with 1 2 numbers  40  0.05   7.90\n",
        "  tab\tinside\t40\t0.05\t7.90\n",
        "  Rows  40  0.05   7.90\n",
        "  Rowsy  40  0.05   7.90\n",
        "  Parse  40  0.05   7.90\n",
        "  Parsed  40  0.05   7.90\n",
        # \x1c-\x1f are whitespace to Python's \s (str.isspace): _FAST's `Parse\s` exclusion
        "  Parse\x1cx  40  0.05   7.90\n",
        "  call\x1fx  40  0.05   7.90\n",
        "  Fetch\x0bx  40  0.05   7.90\n",
        "  call  40  0.05   7.90\n",
        "  ORA-01555  40  0.05   7.90\n",
        "  ORA-x  40  0.05   7.90\n",
        "  SQL ID: x  40  0.05   7.90\n",
        "  Misses in x  40  0.05   7.90\n",
        "  Elapsed times x  40  0.05   7.90\n",
        "  *wait  40  0.05   7.90\n",
        "  -wait  40  0.05   7.90\n",
        "  wait  40  0.05   7.90\r\n",
        "  wait  40  0.05   7.90 \r\n",
        "  wait  40  0.05   7.90\r \n",
        "wait at the margin  40  0.05   7.90\n",
        "  wait  40  0.05   7.90" + " " * (MAX_LINE + 5) + "\n",
        "  ----------------------------------------   Waited  ----------  ------------\n",
        "\n",
        " \t \n",
        "\t\r\t\n",
    ],
)
def test_wait_rows_at_the_bounds(line):
    good = "  log file sync  10  0.01  0.05\n"
    table = _wait_table([good, line, good, line])
    body = _stmt(SQL, sql_id="7bsn3x2rc3yfq", rows=ROWS_23, waits=False)
    report = _head() + body.replace("\n\n\n" + STARS, "\n" + table + "\n" + STARS)
    _alike(report.encode("utf-8"), native_lines=20)


@pytest.mark.parametrize(
    "row",
    [
        "Fetch       11      1.25       9.80       4000      52000          0        1000\n",
        "Fetch       11      1.25       9.80       4000      52000          0        "
        + "9" * 15
        + "\n",
        "Fetch       11      1.25       9.80       4000      52000          0        "
        + "9" * 16
        + "\n",
        "Fetch       11      1.25       9.80       4000      52000          0      1000.5\n",
        "Fetch     11.5      1.25       9.80       4000      52000          0        1000\n",
        "Fetch       11      1,25       9,80       4000      52000          0        1000\n",
        "Fetch       11      1.25       9.80       4000      52000          0\n",
        "Fetch       11      1.25       9.80       4000      52000          0    1000    1\n",
        "  Fetch 11 1.25 9.80 4000 52000 0 1000\n",
        "Fetch\t11\t1.25\t9.80\t4000\t52000\t0\t1000\r\n",
        "Parse        1      0.01       0.02          0          0          0           0\n",
        "Fetched     11      1.25       9.80       4000      52000          0        1000\n",
        "Fetch       11      1.25       9.80       4000      52000          0        1000 x\n",
        "------- ------  -------- ---------- ---------- ---------- ----------  ----------\n",
        "-------x ------\n",
        "  ------- ------\n",
        "*" * 80 + "\n",
        "\n",
    ],
)
def test_call_rows_at_the_bounds(row):
    body = _stmt(SQL, sql_id="7bsn3x2rc3yfq", rows=ROWS_23, waits=True)
    fetch = "Fetch       11      1.25       9.80       4000      52000          0        1000\n"
    damaged = body.replace(fetch, row, 1)
    again = body.replace(fetch, fetch + row, 1)
    _alike((_head() + damaged + again + body).encode(), native_lines=20)
    # a bare call table pasted alone (no report header)
    _alike((CALLS.format(f=11, r=1000, t=13).replace(fetch, row)).encode())


def test_more_events_than_kept():
    events = [f"  event number {i}  {i + 1}  0.01  0.{i % 100:02d}\n" for i in range(2100)]
    table = _wait_table(events + events[:50])
    body = _stmt(SQL, sql_id="7bsn3x2rc3yfq", rows=ROWS_23, waits=False)
    report = _head() + body.replace("\n\n\n" + STARS, "\n" + table + "\n" + STARS)
    want = _alike((report * 2).encode(), native_lines=4000)
    # each report: the padding's 3 events, then 2,100 more of which 1,997 fit under MAX_EVENTS
    assert want.count('"dropped_events":103') == 2


@pytest.mark.parametrize("seed", range(3))
def test_generated_and_damaged(tmp_path, seed):
    path = tmp_path / "r.prf"
    gen_oracle.generate_tkprof(60 * 1024, path, seed=seed)
    data = path.read_bytes()
    _alike(data)
    rng = random.Random(seed)
    out: list[bytes] = []
    for line in data.splitlines(keepends=True):
        r = rng.random()
        if r < 0.02:
            out.append(line[: len(line) // 2] + b"\n")
        elif r < 0.03:
            out.append(line.replace(b".", b","))
        elif r < 0.04:
            out.append(line.rstrip(b"\n") + b"\r\n")
        elif r < 0.05:
            out.append(b"\xc3\xa9" + line)
        elif r < 0.06:
            out.append(b"   10:00:01  0  1  2  3  4\n")
        elif r < 0.07:
            continue
        elif r < 0.075:
            out.append(b"Parse        1      0.01       0.02          0          0          0  0\n")
        out.append(line)
    _alike(b"".join(out))


PLAN_23 = "      1000       1000       1000  TABLE ACCESS FULL ORDERS (cr=52000 pr=4000 pw=0 time=98 us)\n"


@pytest.mark.parametrize(
    "line",
    [
        PLAN_23,
        "      1000       1000       1000    INDEX RANGE SCAN ORDERS_PK (cr=3 pr=0 pw=0 time=5 us)\n",
        "      1000       1000       1000 SORT (cr=3 pr=0 pw=0 time=5 us)\n",  # left of the base
        "  " + "9" * 15 + "  1  1  OP (cr=1 pr=0 pw=0 time=1 us)\n",
        "  " + "9" * 16 + "  1  1  OP (cr=1 pr=0 pw=0 time=1 us)\n",
        "  1  1  1  OP (cr=" + "9" * 15 + " pr=0 pw=0 time=1 us)\n",
        "  1  1  1  OP (cr=" + "9" * 16 + " pr=0 pw=0 time=1 us)\n",
        "  1  1  1  OP (cr=1 cr=2 a=b=3 x=12y=4 _z=5 7=8 time=1 us)\n",
        "  1  1  1  OP (cr=)\n",
        "  1  1  1  OP (cr=1) FILTER (cr=2)\n",
        "  1  1  1  OP (cr=1 pr=0 pw=0 time=1 us) x\n",
        "  1  1  1  OP (cr=1 pr=0 pw=0 time=1 us\n",
        "  1  1  1  OP cr=1)\n",
        "  1  1  1  " + "OPERATION " * 30 + "(cr=1 pr=0 pw=0 time=1 us)\n",
        "  1  1  1  OP " + "x" * 4100 + " (cr=1)\n",
        "  1  1  1  caf\u00e9 (cr=1 pr=0 pw=0 time=1 us)\n",
        "  1  1  1  OP\u00a0X (cr=1 pr=0 pw=0 time=1 us)\n",
        "\t1\t1\t1\tOP (cr=1 pr=0 pw=0 time=1 us)\r\n",
        "  1  1  1  OP (cr=1 pr=0 pw=0 time=1 us)  \r\n",
        "  1  1  OP (cr=1 pr=0 pw=0 time=1 us)\n",  # one count short of the header's three
        "  1  OP (cr=1 pr=0 pw=0 time=1 us)\n",
        "  1  1  1  (cr=1 pr=0 pw=0 time=1 us)\n",
        "  1  1  1\n",
        "1 1 1 OP (cr=1 pr=0 pw=0 time=1 us)\n",
    ],
)
def test_plan_lines_at_the_bounds(line):
    body = _stmt(SQL, sql_id="7bsn3x2rc3yfq", rows=ROWS_23, waits=True)
    plans = body.replace(ROWS_23, ROWS_23 + line + PLAN_23 + line)
    _alike((_head() + plans + body).encode("utf-8"), native_lines=20)
    # the single-column layout of 8i-10g reads the same lines another way
    one = body.replace(ROWS_23, ROWS_8I + line + line)
    _alike((_head() + one + body).encode("utf-8"), native_lines=20)


def test_more_plan_lines_than_kept():
    body = _stmt(SQL, sql_id="7bsn3x2rc3yfq", rows=ROWS_23, waits=True)
    many = "".join(
        f"{i:10d} {i:10d} {i:10d}  {' ' * (i % 7)}OP {i} (cr={i} pr=0 pw=0 time={i} us)\n"
        for i in range(tkprof.MAX_ROWSOURCE_ROWS + 25)
    )
    want = _alike((_head() + body.replace(ROWS_23, ROWS_23 + many)).encode(), native_lines=150)
    assert f'"row_source_lines":{tkprof.MAX_ROWSOURCE_ROWS + 26}' in want


# The statement's own lines the C reader reads too (attribute lines, table headers, SQL text the
# detector's memo vouches for, SQL ID and stars through the parser's own methods): each placed
# where a report prints it, and damaged at each point the reader checks.
ATTR_LINES = [
    "Misses in library cache during parse: 1\n",
    "Misses in library cache during execute: 3\n",
    "Misses in library cache during parse: " + "9" * 12 + "\n",
    "Misses in library cache during parse: " + "9" * 13 + "\n",
    "Misses in library cache during parse:7\n",
    "Misses in library cache during parse: 1 x\n",
    "Misses in library cache during parse: \u0661\n",
    "Misses  in library cache during parse: 1\n",
    "  Misses in library cache during parse: 1  \r\n",
    "Optimizer mode: ALL_ROWS\n",
    "Optimizer goal: CHOOSE\n",
    "Optimizer mode: FIRST_ROWS trailing words\n",
    "Optimizer mode:\tRULE\n",
    "Optimizer mode:\n",
    "Optimizer mode: caf\u00e9\n",
    "Optimizer mode: A\u00a0B\n",
    "Parsing user id: 54\n",
    "Parsing user id: SYS   (recursive depth: 2)\n",
    "Parsing user id: SYS   (recursive depth: 999999)\n",
    "Parsing user id: SYS   (recursive depth: 1234567) recursive depth: 3\n",
    "Parsing user id: SYS   (recursive depth: 2x) recursive depth: 3\n",
    "Parsing user id: SYS   recursive depth:4\n",
    "Parsing user id: recursive depth: 5\n",
    "Parsing user id: 54  (SCOTT)   (recursive depth: 1)\n",
    "Parsing user id:\n",
    "Parsing user id: 5\u00e9\n",
    "Number of plan statistics captured: 1\n",
    "Number of plan statistics captured: 1 x\n",
    "Number of plan statistics captured:\n",
    "Rows     Row Source Operation\n",
    "Rows     Execution Plan\n",
    "Rows (1st) Rows (avg) Rows (max)  Row Source Operation\n",
    "Rows (1st) Rows (avg) Rows (max)  Execution Plan\n",
    "Rows (1st) Rows (avg)  Row Source Operation\n",
    "Rows\tRow Source Operation\n",
    "Rows     Row  Source Operation\n",
    "Elapsed times include waiting on following events:\n",
    "Elapsed times include waiting on following events: x\n",
    "  Event waited on                             Times   Max. Wait  Total Waited\n",
    "  Event waited on Times Max.Wait Total Waited\n",
    "  ----------------------------------------   Waited  ----------  ------------\n",
    "----   Waited  ----------  ------------\n",
    "----   Waited  ----------\n",
    "----   Waitedx  ----------  ------------\n",
    "call     count       cpu    elapsed       disk      query    current        rows\n",
    "call     count       cpu    elapsed       disk      query    current\n",
    "SQL ID: 7bsn3x2rc3yfq Plan Hash: 1234567890\n",
    "SQL ID: 7bsn3x2rc3yfq\n",
    "SQL ID:7bsn3x2rc3yfq  Plan Hash:1\n",
    "SQL ID: 7bsn3x2rc3yfq Plan Hash: x\n",
    "SQL ID: 7bsn3x2rc3yfq junk\n",
    "SQL ID: \n",
    "SQL ID: caf\u00e9\n",
    "*" * 10 + "\n",
    "*" * 9 + "\n",
    "  " + "*" * 80 + "  \n",
    "*" * 80 + " x\n",
]


@pytest.mark.parametrize("line", ATTR_LINES)
def test_statement_lines_at_the_bounds(line):
    body = _stmt(SQL, sql_id="7bsn3x2rc3yfq", rows=ROWS_23, waits=True)
    data = [
        # in place of each attribute line, and again after it
        body.replace("Optimizer mode: ALL_ROWS\n", line),
        body.replace("Optimizer mode: ALL_ROWS\n", "Optimizer mode: ALL_ROWS\n" + line),
        body.replace("Misses in library cache during parse: 1\n", line),
        body.replace("Parsing user id: 54\n", line),
        # inside the plan, inside the wait table, in the SQL text, after the stars
        body.replace(PLAN_23 if PLAN_23 in body else ROWS_23, ROWS_23 + line, 1),
        body.replace("  db file sequential read", line + "  db file sequential read", 1),
        body.replace("from\n", "from\n" + line, 1),
        body + line,
    ]
    for one in data:
        _alike((_head() + one + body).encode("utf-8"), native_lines=20)


@pytest.mark.parametrize(
    "line",
    [
        "  and o.created > sysdate - 1\n",
        "\tand   o.created\t> sysdate - 1\n",
        "  and o.name = 'caf\u00e9'\n",
        "  and o.name = 'a\u00a0b'\n",
        "-- a comment\n",
        "------- ------\n",
        "  1  1  1  OP (cr=1 pr=0 pw=0 time=1 us)\n",
        "  db file sequential read  40  0.05   7.90\n",
        "Parse ordered text\n",
        "call it\n",
        "TKPROF: Release 19.0.0.0.0\n",
        "Plan Hash: 42\n",
        "x" * 400 + "\n",
        " r  b   swpd   free   buff  cache   si   so    bi    bo   in   cs us sy id wa st\n",
        "procs -----------memory---------- ---swap-- -----io---- -system-- ------cpu-----\n",
        "Misses in library cache during parse: 1\n",
        "Optimizer mode: ALL_ROWS\n",
        "SQL ID: 7bsn3x2rc3yfq\n",
    ],
)
def test_sql_text_lines(line):
    """SQL text the detector's memo has seen (the same statement twice): the C reader reads it
    only where the memo says no other format starts on it, as feed_one would."""
    body = _stmt(SQL + line, sql_id="7bsn3x2rc3yfq", rows=ROWS_23, waits=True)
    long_sql = "".join(f"  and c{i} = :b{i}\n" for i in range(80)) + line
    longer = _stmt(SQL + long_sql, sql_id="7bsn3x2rc3yfq", rows=ROWS_23, waits=False)
    _alike((_head() + body * 3 + longer * 2).encode("utf-8"), native_lines=40)


def test_sql_text_past_the_kept_lines():
    lines = "".join(f"  and c{i % 7} = :b\n" for i in range(tkprof.MAX_SQL_LINES + 20))
    body = _stmt(SQL + lines, sql_id="7bsn3x2rc3yfq", rows=ROWS_23, waits=True)
    _alike((_head() + body * 2).encode("utf-8"), native_lines=tkprof.MAX_SQL_LINES)


def test_the_first_word_gates_change_no_answer(tmp_path):
    """`_SCORED` (start_score) and `_SQL_OTHER` (SQL text in `_step`, feed_run's stop before SQL
    text the detector must ask about) turn lines away by how they start: with both matching
    every line (so every regex is asked, as before them) the scores and the evidence are the
    same, on the corpus, the fixtures, generated reports and the hostile lines above."""
    path = tmp_path / "r.prf"
    gen_oracle.generate_tkprof(60 * 1024, path, seed=3)
    texts = [p.read_text(errors="replace") for p in _reports()] + [path.read_text()]
    hostile = ATTR_LINES + [
        "  Parse", "\u2003call x", "  \u0663 1 (cr=1)", "TKPROF: Release 9", "OVERALL TOTALS FOR ALL",
        "*" * 12, "Plan Hash: 1", "SQL ID: x", "Parsing user id: 1", "select 1 from dual",
    ]  # fmt: skip
    lines = [line for text in texts for line in text.splitlines()] + hostile
    gated = [tkprof.TkprofParser.start_score(line) for line in lines]
    every = re.compile("")
    with pytest.MonkeyPatch.context() as m:
        m.setattr(tkprof, "_SCORED", every)
        m.setattr(tkprof, "_SQL_OTHER", every)
        assert [tkprof.TkprofParser.start_score(line) for line in lines] == gated
        want = [parse_text(text).model_dump_json() for text in texts]
        want.append(parse_text(_head() + "".join(h + "\n" for h in hostile)).model_dump_json())
    got = [parse_text(text).model_dump_json() for text in texts]
    got.append(parse_text(_head() + "".join(h + "\n" for h in hostile)).model_dump_json())
    assert got == want
