"""A report section's lines read in C (ingest/_syscore_src/awr.c's `awr_lines`, applied by
`WaitsParser._report_lines`: blank lines, Load Profile rows, SQL text under SQL ordered by and the
lines of sections read for their title only) against the Python reader, the reference
(`waits.NATIVE` off): the evidence must be identical with the core on and off on a generated
archive, the corpus reports and reports whose sections hold hostile lines at each limit the C
reader checks. Each test checks that the core read lines, so a core that silently never ran
fails them."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from ingest.base import MAX_LINE
from ingest.detect import Detector, parse_stream
from ingest.parsers import waits
from tests.test_awr_native import _same
from tests.test_awr_reader_fast import _report_files, generated_archive

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def lines_read(monkeypatch):
    """How many lines of each kind `awr_lines` handed back (the core ran when they are > 0)."""
    assert waits._c_lines is not None, "the C core (ingest._syscore) must be built"
    count = {0: 0, 1: 0, 2: 0}
    real = waits._c_lines

    def counting(*args):
        got = real(*args)
        for item in got[1]:
            count[item[2]] += 1
        return got

    monkeypatch.setattr(waits, "_c_lines", counting)
    return count


@pytest.fixture(scope="module")
def archive(tmp_path_factory) -> bytes:
    return generated_archive(tmp_path_factory, 160 * 1024, seed=23)


def test_generated_archive(archive, monkeypatch, lines_read):
    _same(archive, monkeypatch)
    _same(archive[: len(archive) // 2], monkeypatch)  # cut inside a report
    assert lines_read[0] > 100 and lines_read[1] > 300 and lines_read[2] > 300, lines_read


def test_corpus_reports(monkeypatch, lines_read):
    for path in _report_files():
        _same(path.read_bytes(), monkeypatch)
    text = "\n\n".join(
        p.read_text(errors="replace") for p in _report_files() if p.suffix != ".html"
    )
    _same(text.encode(), monkeypatch)  # the reports one after another: runs past their heads
    assert sum(lines_read.values()) > 50, lines_read


# lines at each limit of the C reader (and just past it), put into each section below
LOAD = [
    "          Redo size:            7,666.8              306.7",
    "          Redo size:            7,666.8              306.7   ",
    "          Redo size :           7,666.8              306.7",
    "          Redo size:7,666.8 306.7",
    "          Redo size:            7,666,8              306.7",
    "          Redo size:            -7.5                 306.7",
    "          Redo size:            +7.5                 306.7",
    "          Redo size:            7.                   306.7",
    "          Redo size:            .5                   306.7",
    "          Redo size:            12.5K                306.7",
    "          Redo size:            12ms                 306.7",
    "          Redo size:            12%                  306.7",
    "          Redo size:            1234567890123456     306.7",
    "          Redo size:            -                    306.7",
    "          Redo size:            7,666.8              abc",
    "          Redo size:            7,666.8      306.7   1  2  3  4  5",
    "          Redo\tsize:            7,666.8              306.7",
    "          Rédo size:            7,666.8              306.7",
    "        Avg Active Sessions:        12.5",
    "      Sessions (x):   12   13",
    "   Elapsed:               59.90 (mins)",
    "   DB Time:              133.80 (mins)",
    "   DB Time(s):  133.80 (mins)",
    "Begin Snap:       100 20-Nov-26 04:00:04      239       1.6",
    "Top 5 Timed Events:   12   13",
    "Host CPU:    12    13",
    "Load Profile:    12    13",
    "Wait Class Snaps:   12   13",
    "OUTPUT",
    "  (s):    12",
    "     Per Second:   12   13",
    ":  12",
]
SQL = [
    "Module: JDBC Thin Client   ",
    "SELECT ID, STATUS FROM ORDERS WHERE CUSTOMER_ID = :4",
    "SELECT  ID FROM T",
    "select id from abcdefghijklm",
    "select id from abcdefghijklmn",
    "select id from ABCDEFGHIJKLM",
    "x",
    "- -",
    "-- a comment",
    "~~~ ---",
    "  542.7  400,711  0.0014  6.8  90.8  29.6 6nqzcm9qk4fqg",
    "542.7 400,711 0.0014 6.8 90.8 29.6 6nqzcm9qk4fqg",
    "begin dbms_stats.gather_schema_stats; end;",
    "Top 5 Timed Events",
    "Instance Activity Stats                      DB/Inst: BENCH/bench1  Snaps: 100-101",
    "Latch Activity                               DB/Inst: BENCH/bench1  Snaps: 100-101",
    "elapsed: 12 (mins)",
    "PLAN_TABLE_OUTPUT",
    "SELECT\tX FROM T",
    "SELECT 'é' FROM DUAL",
]
SKIP = [
    "db_block_size                 300",
    "sessions                      300",
    "End value",
    "                                                                End value",
    "Top 5 Timed Events",
    "SQL ordered by Gets                          DB/Inst: BENCH/bench1  Snaps: 100-101",
    "Foreground Wait Events                       DB/Inst: BENCH/bench1  Snaps: 100-101",
    "Begin Snap:       100 20-Nov-26 04:00:04      239       1.6",
    "   Elapsed:               59.90 (mins)",
    "Avg Active Sessions:  3.5",
    "COLUMN_VALUE",
    "cursor_sharing                4G   \t",
    "x" * (MAX_LINE + 5),
    "          -------------------------------------------------------------",
]


def _report(archive: bytes, load: str, sql: str, skip: str) -> str:
    """The archive's second report (it starts past a block's first lines) with `load` after its
    first Load Profile row, `sql` after its first SQL text line and `skip` after the first
    init.ora row."""
    text = archive.decode()
    start = text.index("WORKLOAD REPOSITORY report for", 10)
    end = text.index("WORKLOAD REPOSITORY report for", start + 10)
    out = []
    marks = {"Redo size:": load, "Module: ": sql, "db_block_size ": skip}
    for line in text[start:end].split("\n"):
        out.append(line)
        for mark, extra in list(marks.items()):
            if line.lstrip().startswith(mark):
                out.append(extra)
                del marks[mark]
    assert not marks, marks
    return "\n".join(out)


def test_hostile_lines(archive, monkeypatch, lines_read):
    head = archive.decode()[:4000]
    for i in range(max(len(LOAD), len(SQL), len(SKIP))):
        load, sql, skip = LOAD[i % len(LOAD)], SQL[i % len(SQL)], SKIP[i % len(SKIP)]
        one = _report(archive, load, sql, skip)
        _same((head + one * 3).encode(), monkeypatch)
    every = _report(archive, "\n".join(LOAD), "\n".join(SQL), "\n".join(SKIP))
    _same((head + every * 3).encode(), monkeypatch)
    assert lines_read[1] > 200 and lines_read[2] > 200, lines_read


def test_sql_noise_cap(archive, monkeypatch, lines_read):
    """Past MAX_SQL_NOISE lines of SQL text the SQL section ends (the reference's count)."""
    text = archive.decode()
    from ingest.parsers.awr_report import MAX_SQL_NOISE

    many = "\n".join(f"SELECT {i} FROM DUAL" for i in range(MAX_SQL_NOISE + 20))
    _same((text[:4000] + _report(archive, LOAD[0], many, SKIP[0]) * 2).encode(), monkeypatch)
    assert lines_read[2] > MAX_SQL_NOISE


def test_claimed_rows_ask_no_other_format(archive, monkeypatch):
    """A Load Profile row the block claims goes in without the detector's memo working out
    whether another format starts on it (`_report_lines` asks `Parser.handed`, feed_one's test).
    Before, the memo was asked first, and every other format admitted was asked about each
    Load Profile row of every report: 1,951 questions on the first 1 MB of the benchmark's
    archive, 284 after; 2,059M -> 1,653M instructions (cachegrind, 2026-12-03)."""
    rows: list[str] = []
    real_lines = waits._c_lines

    def reading(*args):
        got = real_lines(*args)
        rows.extend(item[1] for item in got[1] if item[2] == waits._LINE_ROW)
        return got

    asked: list[str] = []
    real_answer = Detector._answer

    def answer(self, line, current):
        asked.append(line)
        return real_answer(self, line, current)

    monkeypatch.setattr(waits, "_c_lines", reading)
    monkeypatch.setattr(Detector, "_answer", answer)
    parse_stream(io.BytesIO(archive))
    assert len(rows) > 200, len(rows)  # the C reader read Load Profile rows
    assert not set(rows) & set(asked), sorted(set(rows) & set(asked))[:5]
    assert asked  # other lines of a report are still asked about
