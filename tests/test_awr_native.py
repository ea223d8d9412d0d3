"""The rows of an AWR / Statspack report's open table read in C (ingest/_syscore_src/awr.c,
`waits._c_rows`, and `awr_report._cells`'s `awr_cells`) against the Python reader, the reference
(`waits.NATIVE` and `awr_report.NATIVE` off): the evidence must
be identical with the core on and off, streamed (the detector's runs, `run_step`) and line by line
(`feed`), on every corpus snippet and fixture holding a report (and the same pasted the ways
forums mangle it), a generated archive of the five layouts, and reports whose table rows were
made hostile at each limit the C reader checks. The row reader is also compared with
`_split_row` and `_assign` line by line. Each test checks that the core read rows, so a core that
silently never ran fails them."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from ingest.base import MAX_LINE
from ingest.detect import parse_lines, parse_stream
from ingest.parsers import awr_report, waits
from ingest.parsers.waits import WaitsParser, _split_row
from tests.test_awr_reader_fast import (
    _collapsed,
    _prefixed,
    _report_files,
    _wrapped,
    generated_archive,
)

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def rows_read(monkeypatch):
    """How many rows the C reader handed back (0: the core never ran)."""
    assert waits._c_rows is not None, "the C core (ingest._syscore) must be built"
    count = [0]
    real = waits._c_rows

    def counting(*args):
        got = real(*args)
        count[0] += len(got[1])
        return got

    monkeypatch.setattr(waits, "_c_rows", counting)
    return count


def _same(data: bytes, monkeypatch) -> str:
    """The evidence of `data`, streamed and line by line, is the Python reader's; returns it."""
    text = data.decode("utf-8", errors="replace")
    with monkeypatch.context() as m:
        m.setattr(waits, "NATIVE", False)
        m.setattr(awr_report, "NATIVE", False)
        want = parse_stream(io.BytesIO(data)).model_dump_json()
        want_lines = parse_lines(text.splitlines()).model_dump_json()
    assert parse_stream(io.BytesIO(data)).model_dump_json() == want
    assert parse_lines(text.splitlines()).model_dump_json() == want_lines
    return want


@pytest.fixture(scope="module")
def archive(tmp_path_factory) -> bytes:
    return generated_archive(tmp_path_factory, 160 * 1024, seed=17)


def test_corpus_and_fixture_reports(monkeypatch, rows_read):
    seen = 0
    for path in _report_files():
        seen += '"format":"waits"' in _same(path.read_bytes(), monkeypatch)
    assert seen >= 10, seen
    assert rows_read[0] > 200


def test_pasted_reports(monkeypatch, rows_read):
    for path in _report_files():
        if path.suffix == ".html":
            continue
        text = path.read_bytes().decode("utf-8", errors="replace")
        for variant in (
            _collapsed(text),
            _wrapped(text),
            _prefixed(text, "# "),
            text.replace("\n", "\r\n"),
        ):
            _same(variant.encode(), monkeypatch)
    assert rows_read[0] > 200


def test_generated_archive_every_layout(archive, monkeypatch, rows_read):
    text = archive.decode()
    for layout in ("Top 5 Timed Events", "Top 5 Timed Foreground", "Top 10 Foreground"):
        assert layout in text
    assert "STATSPACK report" in text and "Avg(ms)" in text and "ms " in text  # 12.1, 19c
    want = _same(archive, monkeypatch)
    assert want.count('"format":"waits"') > 10
    assert rows_read[0] > 500
    _same(archive[: len(archive) // 3], monkeypatch)  # cut inside a report
    _same(text.replace("\n", "\r\n").encode(), monkeypatch)


HEAD = """WORKLOAD REPOSITORY report for

Foreground Wait Events                       DB/Inst: BENCH/bench1  Snaps: 100-101
-> ordered by wait time desc, waits desc (idle events last)

                                                             Avg
                                        %Time Total Wait    wait    Waits   % DB
Event                             Waits -outs   Time (s)    (ms)     /txn   time
-------------------------- ------------ ----- ---------- ------- -------- ------
read by other session         2,087,014     0     35,479      17    231.9  441.9
gc cr block 2-way             2,943,655     0     20,605       7    327.1  256.7
"""
TOP = """Top 10 Foreground Events by Total Wait Time
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
                                           Total Wait       Avg   % DB Wait
Event                                Waits Time (sec)      Wait   time Class
------------------------------ ----------- ---------- --------- ------ --------
db file sequential read          1,234,567     12,345    3.23ms   45.1 User I/O
log file sync                       98,765      4,321    43.7ms   15.8 Commit
"""
STATS = """Instance Activity Stats                      DB/Inst: BENCH/bench1  Snaps: 100-101

Statistic                                     Total     per Second     per Trans
-------------------------------- ------------------ -------------- -------------
consistent gets                         703,528,950      195,751.0      78,169.9
"""
# rows at each limit of the C reader (and just past it), each read by Python when it stops
HOSTILE = [
    "db file scattered read          123,456     0      1,234      10     13.7   15.4",
    "db file scattered read\t        123,456     0      1,234      10     13.7   15.4",
    "db file scattered read          123,456     0      1,234      10     13.7   15.4\r",
    "db file scattered read          123,456     0      1,234      10     13.7   15.4   ",
    "db file scättered read          123,456     0      1,234      10     13.7   15.4",
    "direct path read 123,456 0 1,234 10 13.7 15.4",
    "direct path read                 52.86 s     0      1,234      10     13.7   15.4",
    "direct path read                   45,6     0      1,234      10     13.7   15.4",
    "direct path read                1234,567    0      1,234      10     13.7   15.4",
    "direct path read            1,234,56        0      1,234      10     13.7   15.4",
    "direct path read          123456789012345   0      1,234      10     13.7   15.4",
    "direct path read         1234567890123456   0      1,234      10     13.7   15.4",
    "direct path read              999999T       0      1,234      10     13.7   15.4",
    "direct path read               99999999999T 0      1,234      10     13.7   15.4",
    "direct path read               21.1K        0      1,234      10     13.7   15.4",
    "direct path read                 3.2ms      0      1,234      10     13.7   15.4",
    "direct path read                 3.2Ks      0      1,234      10     13.7   15.4",
    "direct path read                 3.2us%     0      1,234      10     13.7   15.4",
    "direct path read                 -12        0      1,234      10     13.7   15.4",
    "direct path read                 +12        0      1,234      10     13.7   15.4",
    "direct path read                 1.         0      1,234      10     13.7   15.4",
    "direct path read                 .5         0      1,234      10     13.7   15.4",
    "direct path read                 5%         0      1,234      10     13.7   15.4",
    "direct path read                  -         -      1,234      10     13.7   15.4",
    "direct path read                 N/A        0      1,234      10     13.7   15.4",
    "direct path read -               12         0      1,234      10     13.7   15.4",
    "direct path read N/A             12         0      1,234      10     13.7   15.4",
    "direct path read                 12         0      1,234      10     13.7   15.4  User I/O",
    "direct path read                 12         0      1,234      10     13.7   15.4  @jls",
    "direct path read   7    12       0      1,234      10     13.7   15.4   1   2",
    "session logical reads            12         0      1,234      10     13.7   15.4",
    "session waits                    12         0      1,234      10     13.7   15.4",
    "system events",
    "wait for stopper event           12         0      1,234      10     13.7   15.4",
    "background wait events  12  3",
    "enqueue activity   12  3",
    "instance activity stats   12  3",
    "interval:- 60 s",
    "init.ora parameters    12   3",
    "begin snap:   12 20-Nov-26 04:00:04      239       1.6",
    "end snap:   12 20-Nov-26 04:00:04      239       1.6",
    "elapsed:               59.90 (mins)",
    "db time:              133.80 (mins)",
    "enq: TX - row lock contention    12         0      1,234      10     13.7   15.4",
    "log file switch (checkpoint incomplete)  12    0   1,234   10   13.7   15.4",
    "log file switch: (x)  12    0   1,234   10   13.7   15.4",
    "latch free ~~~     12         0      1,234      10     13.7   15.4",
    "Latch free                       12         0      1,234      10     13.7   15.4",
    "SQL*Net message to client        12         0      1,234      10     13.7   15.4",
    "a  b",
    "x                                12",
    "12                               12         0",
    "just some prose a reader left in the report",
    "gc cr block 2-way       " + "1 " * 70,
    "gc cr block 2-way  " + "x" * (MAX_LINE + 10) + "  12",
    "gc cr block 2-way  " + "x" * (MAX_LINE - 40) + "  12",
    "db file parallel read           123,456     0      1,234      10     13.7   15.4",
    # capitals: rows the C reader reads, section titles (case-sensitive) it leaves to section_of
    "DB time                          12         0      1,234      10     13.7   15.4",
    "Host CPU                         12         0      1,234      10     13.7   15.4",
    "Cache Sizes                      12         0      1,234      10     13.7   15.4",
    "Load Profile                     12         0      1,234      10     13.7   15.4",
    "Top 5 Timed Events               12         0      1,234      10     13.7   15.4",
    "TOP waits                        12         0      1,234      10     13.7   15.4",
    "OUTPUT                           12",
    "Instance Efficiency Percentages  12         0      1,234      10     13.7   15.4",
]


def test_hostile_rows(monkeypatch, rows_read):
    tail = "\n" + TOP + "\n" + STATS + "\n"
    for row in HOSTILE:
        for text in (HEAD + row + "\n" + tail, HEAD + row + "\n" + row + "\n" + HEAD[50:] + tail):
            _same(text.encode(), monkeypatch)
    _same((HEAD + "\n".join(HOSTILE) + tail).encode(), monkeypatch)
    long_report = (HEAD + "\n".join(HOSTILE[:30]) + tail) * 40  # past the detector's first lines
    assert '"format":"waits"' in _same(long_report.encode(), monkeypatch)
    assert rows_read[0] > 1000


def test_row_reader_answers_as_split_row_and_assign(archive):
    """Where the C reader reads a row, it reads what `_split_row` and `_assign` read."""
    parser = WaitsParser()
    tables = []
    for line in archive.decode().splitlines()[:400]:
        parser.feed(line)
        native = parser._native()
        if native is not None and native[0] not in [t[0] for t in tables]:
            tables.append(native)
    assert len(tables) >= 5
    lines = HOSTILE + archive.decode().splitlines() + [r[:n] for r in HOSTILE for n in (20, 40)]
    read = 0
    for table, cols, ends, words in tables:
        for line in lines:
            _, rows = waits._c_rows(line, 0, len(line), cols, ends, words, MAX_LINE)
            if not rows:
                continue
            read += 1
            nxt, got_line, name, cells, trailing = rows[0]
            assert nxt == len(line) and got_line == line.rstrip("\r")
            split = _split_row(line)
            assert split is not None and split.name == name, line
            assert parser._assign(table, split.nums) == cells, line
            assert " ".join(split.text)[:60] == trailing, line
            assert not split.text or words, line
            probe = WaitsParser()
            probe.__dict__.update(parser.__dict__)
            assert probe._table_line(line) is True
    assert read > 300


def test_cells_answer_as_python(archive):
    """`awr_cells` gives `_py_cells`'s cells on every report line under the rulers reports print
    and odd ones, and leaves to Python what it does not read (beyond ASCII, tabs, no spans)."""
    lines = archive.decode().splitlines() + HOSTILE + ["", "   ", "a", " x  y ", "é  1  2", "a\tb"]
    for path in _report_files()[:20]:
        lines += path.read_bytes().decode("utf-8", errors="replace").splitlines()
    rulers = [ln for ln in lines if awr_report.RE_RULER.match(ln) and "-" in ln][:40]
    spans_of = [awr_report._spans(r) for r in rulers]
    spans_of += [[(0, 10), (11, 20), (21, 30)], [(4, 8), (8, 12), (20, 40)], [(0, 3)]]
    spans_of += [[(5, 6), (30, 31), (10, 12), (2, 40)], [(10, 10), (10, 10)]]
    read = 0
    for spans in spans_of:
        if not spans:
            continue
        for line in lines:
            got = awr_report._c_cells(line, spans)
            if got is None:
                assert not line.isascii() or not line.isprintable(), line
                continue
            read += 1
            assert got == awr_report._py_cells(line, spans), (line, spans)
    assert awr_report._c_cells("a  b", []) is None
    assert read > 10000
