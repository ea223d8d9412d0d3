"""Whole AWR / Statspack reports through the waits parser: header, Load Profile, Instance
Efficiency, Time Model, Wait Class, foreground/background event tables, SQL ordered by; the HTML
report and its text twin; pastes that lost their alignment, decimal commas, unit suffixes."""

from __future__ import annotations

import io

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from parser_helpers import (
    FIXTURES,
    assert_facts_valid,
    drive_parser,
)

from ingest.detect import parse_lines, parse_stream, parse_text
from ingest.html_report import html_lines, looks_like_html, reference_html_lines
from ingest.model import Block
from ingest.oracle_events import is_idle
from ingest.parsers.waits import WaitsParser, parse_number

ORACLE = FIXTURES / "oracle"
TWIN_TXT = ORACLE / "awr_23ai_twin.txt"
TWIN_HTML = ORACLE / "awr_23ai_twin.html"
# a real 11g AWR page (1 MB, 92 tables), published: see the corpus's labels.yaml
AWR_PAGE = (
    FIXTURES.parents[1].parent
    / "shared/corpus/snippets/09_awr-html_solaris-ebs-11g-log-file-sync.html"
)


def drive(lines: list[str]) -> tuple[Block, list[str]]:
    return drive_parser(WaitsParser(), lines)


def waits_block(text: str) -> Block:
    (block,) = [b for b in parse_text(text).blocks if b.format == "waits"]
    assert_facts_valid(block)
    return block


# -- the text report and its HTML twin ------------------------------------------------------------


def test_text_report_and_its_html_twin_give_the_same_facts():
    text = waits_block(TWIN_TXT.read_text()).facts
    html = waits_block(TWIN_HTML.read_text()).facts
    for name in (
        "waits.top_event",
        "event.count",
        "event.waited_s",
        "event.avg_ms",
        "event.pct_of_db_time",
        "event.pct_of_waited",
        "load.per_s",
        "load.per_txn",
        "efficiency.pct",
        "time_model.s",
        "report.db_time_s",
        "report.elapsed_s",
        "report.release",
        "report.cpus",
        "sql.elapsed_s",
        "sql.executions",
    ):
        assert text[name] == html[name], name
    assert text["waits.top_event"] == "log file sync"
    assert text["event.pct_of_db_time"]["log file sync"] == 41.0
    assert text["event.pct_of_db_time"]["DB CPU"] == 34.0
    assert text["load.per_s"]["redo size"] == 1_204_332.5
    assert text["load.per_txn"]["executes"] == 31.1


def test_report_header_and_sections():
    f = waits_block(TWIN_TXT.read_text()).facts
    assert f["report.kind"] == "awr"
    assert f["report.db_name"] == "SALESDB"
    assert f["report.release"] == "23.0.0.0.0"
    assert f["report.host"] == "dbhost07"
    assert f["report.platform"] == "Linux x86 64-bit"
    assert (f["report.cpus"], f["report.cores"], f["report.memory_gb"]) == (16, 8, 125.5)
    assert (f["report.begin_snap"], f["report.end_snap"]) == (4410, 4411)
    assert f["report.begin_time"] == "03-Nov-26 10:00:04"
    assert f["report.elapsed_s"] == 3600
    assert f["report.db_time_s"] == 1800
    assert f["report.aas"] == pytest.approx(0.5)
    assert f["efficiency.pct"]["soft parse"] == 99.49
    assert f["time_model.pct_of_db_time"]["hard parse elapsed time"] == 0.7
    assert "DB time" not in f["time_model.pct_of_db_time"]
    assert f["wait_class.waited_s"]["Commit"] == 738
    assert f["sql.elapsed_per_exec_s"]["7hd91k2m0p1tq"] == 9.79
    # the load profile and the header are not events
    assert set(f["event.count"]) == {
        "log file sync",
        "db file sequential read",
        "enq: TX - row lock contention",
        "gc cr block 2-way",
        "SQL*Net message from client",
        "log file parallel write",
        "db file parallel write",
        "rdbms ipc message",
    }


def test_idle_and_background_waits_stay_out_of_every_base():
    f = waits_block(TWIN_TXT.read_text()).facts
    # 'SQL*Net message from clien' (cut at the column width) is restored and idle
    assert "SQL*Net message from client" in f["event.count"]
    assert "SQL*Net message from client" not in f["event.pct_of_waited"]
    assert "rdbms ipc message" not in f["event.pct_of_waited"]
    assert f["waits.idle_s"] == 29_876
    # foreground non-idle total: 738 + 301 + 53 + 21
    assert f["waits.total_s"] == 1113
    assert f["event.pct_of_waited"]["log file sync"] == pytest.approx(738 / 1113 * 100)
    # background apart, yet LGWR's event is read by name
    assert f["bg_event.waited_s"]["log file parallel write"] == 291
    assert "log file parallel write" not in f["event.pct_of_waited"]
    assert f["event.avg_ms"]["log file parallel write"] == 0.7


def test_pct_of_db_time_computed_from_db_time_when_the_table_has_none():
    text = """Foreground Wait Events
                                                             Avg
                                        %Time Total Wait    wait    Waits
Event                             Waits -outs   Time (s)    (ms)     /txn
-------------------------- ------------ ----- ---------- ------- --------
log file sync                    10,000     0        410   41.00      0.9
db file sequential read          50,000     0        100    2.00      4.0
"""
    header = "   DB Time:               16.67 (mins)\n\n"
    f = waits_block(header + text).facts
    assert f["event.pct_of_db_time"]["log file sync"] == pytest.approx(41.0, abs=0.05)


def test_html_report_read_from_a_stream_and_from_lines():
    with TWIN_HTML.open("rb") as raw:
        streamed = [b for b in parse_stream(raw).blocks if b.format == "waits"]
    lines = [b for b in parse_lines(io.StringIO(TWIN_HTML.read_text())).blocks]
    expected = waits_block(TWIN_HTML.read_text()).facts
    assert [b.facts for b in streamed] == [expected]
    assert [b.facts for b in lines if b.format == "waits"] == [expected]


@pytest.mark.parametrize("path", [AWR_PAGE, TWIN_HTML], ids=lambda p: p.name)
@pytest.mark.parametrize("size", [None, 65_536, 777])
def test_libxml2_reads_a_report_as_the_stdlib_tokenizer_does(path, size):
    """html_lines (libxml2 through lxml) against the pure-Python reference tokenizer driving
    the same renderer, the document whole and cut anywhere (a tag or an entity split across
    two chunks): the same lines, so the faster reader changed no fact."""
    doc = path.read_text(errors="replace")
    chunks = [doc] if size is None else [doc[i : i + size] for i in range(0, len(doc), size)]
    lines = list(html_lines(chunks))
    assert lines == list(reference_html_lines(chunks))
    assert sum(1 for line in lines if set(line) <= {"-", " "} and "-" in line) >= 5  # rulers


def test_html_that_libxml2_would_stop_on_is_read_to_its_end():
    """A lone surrogate (a JSON paste can carry one) cannot go to libxml2 as UTF-8, and
    libxml2 before 2.14 stopped at 256 levels of nesting or 10 MB of one text run unless told
    otherwise: each would lose the rest of the report."""
    table = (
        "<table><tr><th>Event</th><th>Waits</th></tr>"
        "<tr><td>log file sync</td><td>1,024</td></tr></table>"
    )
    odd = "<html><body><p>bad \ud800 char</p>" + table + "</body></html>"
    lines = list(html_lines([odd]))
    assert "bad \ufffd char" in lines and any(line.startswith("log file sync") for line in lines)
    deep = "<html><body>" + "<div>" * 3000 + "deep" + "</div>" * 3000 + table + "</body></html>"
    assert any(line.startswith("log file sync") for line in html_lines([deep]))
    long = "<html><body><p>" + "x" * 11_000_000 + "</p>" + table + "</body></html>"
    chunks = [long[i : i + (1 << 20)] for i in range(0, len(long), 1 << 20)]
    assert any(line.startswith("log file sync") for line in html_lines(chunks))


def test_a_line_break_in_a_cell_separates_its_words():
    doc = "<html><body><table><tr><td>log file<br>sync</td><td>db file<br/>sequential read</td>"
    doc += "</tr></table></body></html>"
    (row,) = [line for line in html_lines([doc]) if line.strip()]
    assert row.split("  ") == ["log file sync", "db file sequential read"]
    assert list(reference_html_lines([doc])) == list(html_lines([doc]))


def test_only_a_document_is_taken_for_html():
    assert looks_like_html("<!DOCTYPE html>\n<html>")
    assert looks_like_html("  <html lang='en'><head>")
    assert looks_like_html("<!-- saved from url=(0014)about:internet -->\n<html>")
    assert not looks_like_html("my AWR says <html> somewhere\nlog file sync  1  2")
    ev = parse_text("pasted: <table><tr><td>1</td></tr></table>\n")
    assert all(b.format != "waits" for b in ev.blocks)


def test_html_scripts_are_dropped_and_markup_is_not_rendered():
    doc = (
        "<html><head><script>alert('x')</script></head><body>"
        "<h3>Top 10 Foreground Events by Total Wait Time</h3>"
        "<table><tr><th>Event</th><th>Waits</th><th>Total Wait Time (sec)</th>"
        "<th>Avg Wait</th><th>% DB time</th><th>Wait Class</th></tr>"
        "<tr><td>&lt;b&gt;log file sync</td><td>10</td><td>1.5</td><td>150ms</td>"
        "<td>20.0</td><td>Commit</td></tr></table><script>evil()</script></body></html>"
    )
    lines = list(html_lines([doc]))
    assert not any("alert" in line or "evil" in line for line in lines)
    f = waits_block(doc).facts
    assert f["event.count"] == {"<b>log file sync": 10}  # text, never markup


# -- releases and layouts -------------------------------------------------------------------------

STATSPACK_9I = """STATSPACK report for

DB Name         DB Id    Instance     Inst Num Release     Cluster Host
------------ ----------- ------------ -------- ----------- ------- ------------
LEDGER        2233445566 ledger              1 9.2.0.8.0   NO      erp01

            Snap Id     Snap Time      Sessions Curs/Sess Comment
            ------- ------------------ -------- --------- -------------------
Begin Snap:     811 14-Mar-07 09:00:02       61      12.4
  End Snap:     812 14-Mar-07 10:00:03       66      12.9
   Elapsed:               60.02 (mins)

Load Profile
~~~~~~~~~~~~                            Per Second       Per Transaction
                                   ---------------       ---------------
                  Redo size:            118,204.33              4,210.90
              Logical reads:             21,330.12                759.87
                 Hard parses:                  4.02                  0.14
              % Blocks changed per Read:   11.02    Recursive Call %:    88.10

Top 5 Timed Events
~~~~~~~~~~~~~~~~~~                                                     % Total
Event                                               Waits    Time (s) Ela Time
-------------------------------------------- ------------ ----------- --------
db file sequential read                         1,234,567       8,910    45.60
CPU time                                                        5,002    25.60
log file sync                                      88,120       2,311    11.83
"""


def test_statspack_9i():
    f = waits_block(STATSPACK_9I).facts
    assert f["report.kind"] == "statspack"
    assert f["report.release"] == "9.2.0.8.0"
    assert f["report.host"] == "erp01"
    assert f["report.elapsed_s"] == pytest.approx(60.02 * 60)
    assert f["load.per_s"]["redo size"] == 118_204.33
    assert f["load.per_txn"]["hard parses"] == 0.14
    d = "db file sequential read"
    assert f["event.count"][d] == 1_234_567
    assert f["event.waited_s"][d] == 8910
    assert f["event.pct_of_db_time"][d] == 45.6
    assert f["event.pct_of_db_time"]["CPU time"] == 25.6
    assert not any("Snap" in k for k in f["event.count"])


COLLAPSED = """Top 5 Timed Events
Avg %Total
wait Call
Event Waits Time (s) (ms) Time
db file sequential read 1,234,567 8,910 7 45.6
log file sync 88,120 2,311 26 11.8
"""


def test_collapsed_whitespace_table():
    f = waits_block(COLLAPSED).facts
    d = "db file sequential read"
    assert f["event.count"][d] == 1_234_567
    assert f["event.waited_s"][d] == 8910
    assert f["event.avg_ms"][d] == 7
    assert f["event.pct_of_db_time"][d] == 45.6
    assert f["event.count"]["log file sync"] == 88_120


def test_a_lone_collapsed_row_still_gives_its_event():
    f = waits_block("db file sequential read 1,234,567 8,910 45.6\n").facts
    assert f["event.count"]["db file sequential read"] == 1_234_567
    assert f["event.waited_s"]["db file sequential read"] == 8910


def test_decimal_commas_and_suffixes():
    assert parse_number("45,6") == (45.6, None)
    assert parse_number("1.234,5") == (1234.5, None)
    assert parse_number("1,234") == (1234.0, None)
    assert parse_number("3.5M") == (3_500_000.0, None)
    assert parse_number("12.5K") == (12_500.0, None)
    assert parse_number("25ms") == (25.0, 0.001)
    text = """Top 5 Timed Foreground Events
                                                           Avg
                                                          wait   % DB
Event                                 Waits     Time(s)   (ms)   time Wait Class
------------------------------ ------------ ----------- ------ ------ ----------
log file sync                          3.5M       4.200    1,2   41,5 Commit
db file sequential read               12.5K          38    3,0    3,8 User I/O
"""
    f = waits_block(text).facts
    assert f["event.count"]["log file sync"] == 3_500_000
    assert f["event.avg_ms"]["log file sync"] == pytest.approx(1.2)
    assert f["event.pct_of_db_time"]["log file sync"] == pytest.approx(41.5)
    assert f["event.count"]["db file sequential read"] == 12_500


def test_sqlplus_page_breaks_inside_a_spooled_report():
    text = """WORKLOAD REPOSITORY report for

Top 10 Foreground Events by Total Wait Time
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
                                           Total Wait       Avg   % DB Wait

OUTPUT
Event                                Waits Time (sec)      Wait   time Class
------------------------------ ----------- ---------- --------- ------ --------
log file sync                       20,000       80.0    4.00ms   40.0 Commit

OUTPUT
db file sequential read             10,000       20.0    2.00ms   10.0 User I/O
"""
    f = waits_block(text).facts
    assert f["event.avg_ms"]["log file sync"] == pytest.approx(4.0)
    assert f["event.pct_of_db_time"]["log file sync"] == 40.0
    assert f["event.avg_ms"]["db file sequential read"] == pytest.approx(2.0)


def test_rac_gc_events_and_notes_inside_a_report():
    text = """Load Profile                    Per Second   Per Transaction
~~~~~~~~~~~~~~~            ---------------   ---------------
             DB Time(s):               2.0               0.1
this is where I think the problem starts
Top 10 Foreground Events by Total Wait Time
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
                                           Total Wait       Avg   % DB Wait
Event                                Waits Time (sec)      Wait   time Class
------------------------------ ----------- ---------- --------- ------ --------
gc cr block 2-way                  400,000     1000.0    2.50ms   13.9 Cluster
gc current block busy               20,000      600.0   30.00ms    8.3 Cluster
"""
    (block,) = [b for b in parse_text(text).blocks if b.format == "waits"]
    f = block.facts
    assert f["load.per_s"]["db time"] == 2.0
    assert f["event.avg_ms"]["gc cr block 2-way"] == pytest.approx(2.5)
    assert f["event.pct_of_db_time"]["gc current block busy"] == 8.3


def test_idle_list():
    assert is_idle("SQL*Net message from client")
    assert is_idle("SQL*Net message from clien")  # cut at an AWR column width
    assert is_idle("rdbms ipc message")
    assert is_idle("PL/SQL lock timer")
    assert is_idle("some new event", "Idle")
    assert not is_idle("log file sync")
    assert not is_idle("SQL*Net more data from client")


# -- robustness -----------------------------------------------------------------------------------


# well-formed report markup as AWR writes it: cells of words, numbers, entities, inline tags
_CELL_TEXT = st.text(
    alphabet=st.sampled_from("abcXYZ019 .,:%/()-_$#\u00e9\u20ac"), min_size=0, max_size=12
)
_CELL = st.builds(
    lambda a, mark, b: f"{a}{mark}{b}",
    _CELL_TEXT,
    st.sampled_from(
        ["", "&amp;", "&lt;", "&nbsp;", "&#233;", "<b>x</b>", "<a href='#a'>y</a>", "<br/>", "<br>"]
    ),
    _CELL_TEXT,
)
_ROW = st.lists(_CELL, min_size=1, max_size=6)
_TABLE = st.builds(
    lambda head, rows: (
        "<table border='0'>"
        + "<tr>"
        + "".join(f"<th class='awrbg'>{c}</th>" for c in head)
        + "</tr>\n"
        + "".join(
            "<tr>" + "".join(f"<td class='awrc'>{c}</td>" for c in r) + "</tr>\n" for r in rows
        )
        + "</table>"
    ),
    _ROW,
    st.lists(_ROW, max_size=5),
)
_PART = st.one_of(
    _TABLE,
    st.builds(lambda t: f"<h3 class='awr'>{t}</h3>", _CELL),
    st.builds(lambda t: f"<p />{t}<p />", _CELL),
    st.builds(lambda t: f"<ul><li>{t}</li></ul>", _CELL),
    st.just("<script>x = '<td>';</script><style>td {}</style>"),
    _CELL_TEXT.map(lambda t: t + "\n"),
)


@settings(max_examples=120, deadline=None)
@given(st.lists(_PART, max_size=8), st.integers(min_value=1, max_value=200))
def test_libxml2_and_the_reference_agree_on_well_formed_report_markup(parts, cut):
    """Random documents of the markup AWR and Statspack pages are made of, whole and cut
    every `cut` characters: libxml2 gives the lines the stdlib tokenizer gives."""
    doc = "<html><head><title>AWR</title></head><body class='awr'>" + "".join(parts)
    doc += "</body></html>"
    chunks = [doc[i : i + cut] for i in range(0, len(doc), cut)]
    assert list(html_lines([doc])) == list(reference_html_lines([doc]))
    assert list(html_lines(chunks)) == list(reference_html_lines(chunks))


@settings(max_examples=150, deadline=None)
@given(st.text(max_size=400))
def test_html_of_any_shape_never_raises(junk):
    doc = "<html><body><table><tr><th>Event</th><th>Waits</th></tr>" + junk
    lines = list(html_lines([doc[: len(doc) // 2], doc[len(doc) // 2 :]]))
    assert all("\n" not in line for line in lines)
    for block in parse_text(doc).blocks:
        assert_facts_valid(block)


# -- shown to people: Slack, web page, CLI ---------------------------------------------------------


def test_top_events_and_load_profile_are_shown_first():
    from bot.render import render_analysis
    from kb.analysis import analyze_text
    from kb.cli import _fact_summary
    from kb.web.charts import block_charts

    block = waits_block(TWIN_TXT.read_text())
    # Slack says it in the triage's sentences: the top event by DB time, then the load
    result = analyze_text(TWIN_TXT.read_text())
    head = render_analysis(result, base_url="http://kb.test").blocks[0]["text"]["text"]
    top = head.index("The top wait is 'log file sync' with 41 % of DB time")
    assert top < head.index("Load Profile per second: db time 0.5")
    captions = [caption for caption, _ in block_charts(block)]
    assert captions[0] == "Top events, % of DB time"
    rows = _fact_summary(block.facts)
    assert [name for name, _ in rows[:2]] == ["event.pct_of_db_time", "load.per_s"]
    assert rows[0][1].startswith("log file sync=41")


LATCH_AND_SEGMENTS = """WORKLOAD REPOSITORY report for

Latch Activity                          DB/Inst: SALESDB/salesdb1  Snaps: 4410-4411
-> "Get Requests", "Pct Get Miss" and "Avg Slps/Miss" are statistics for
   willing-to-wait latch get requests

                                           Pct    Avg   Wait                 Pct
                                    Get    Get   Slps   Time       NoWait NoWait
Latch Name                     Requests   Miss  /Miss    (s)     Requests   Miss
------------------------ -------------- ------ ------ ------ ------------ ------
cache buffers chains        812,440,118    2.1    0.3    412    1,204,332    0.0
shared pool                   4,210,551    0.4    0.1     38            0

Latch Sleep Breakdown                   DB/Inst: SALESDB/salesdb1  Snaps: 4410-4411
-> ordered by misses desc

Latch Name
----------------------------------------
  Get Requests      Misses      Sleeps  Spin Gets
-------------- ----------- ----------- -----------
cache buffers chains
   812,440,118  17,061,242   5,118,372  12,001,880
shared pool
     4,210,551      16,842       1,684      15,201

Segments by Row Lock Waits              DB/Inst: SALESDB/salesdb1  Snaps: 4410-4411
-> % of Capture shows % of row lock waits for each top segment compared

           Tablespace                      Subobject  Obj.       Row Lock
Owner         Name    Object Name            Name     Type          Waits  %Total
---------- ---------- -------------------- ---------- ----- ------------ -------
APP        DATA01     ORDERS                          TABLE           112   88.19
APP        DATA01     ORDER_LINES                     TABLE            15   11.81
"""


def test_latch_and_segment_sections():
    f = waits_block(LATCH_AND_SEGMENTS).facts
    assert f["latch.gets"]["cache buffers chains"] == 812_440_118
    assert f["latch.wait_s"]["cache buffers chains"] == 412
    assert f["latch.sleeps"]["cache buffers chains"] == 5_118_372
    assert f["latch.misses"]["shared pool"] == 16_842
    assert f["segment.pct_of_total"]["Row Lock Waits: APP.ORDERS"] == 88.19
    assert "event.count" not in f  # neither table is one of waits


def test_a_long_event_name_wrapped_by_a_narrow_paste():
    text = """Top 5 Timed Foreground Events
                                                           Avg
                                                          wait   % DB
Event                                 Waits     Time(s)   (ms)   time Wait Class
------------------------------ ------------ ----------- ------ ------ ----------
log file switch (checkpoint
incomplete)                           1,204         982    816   31.2 Configurat
log file sync                        88,120         611      7   19.4 Commit
"""
    f = waits_block(text).facts
    e = "log file switch (checkpoint incomplete)"
    assert f["event.count"][e] == 1204
    assert f["event.pct_of_db_time"][e] == 31.2
    assert f["event.count"]["log file sync"] == 88_120


def test_an_html_report_under_a_message_of_its_own_words():
    doc = TWIN_HTML.read_text()
    message = "here is last night's report, commits were slow\n\n"
    expected = waits_block(doc).facts
    assert waits_block(message + doc).facts == expected
    lines = parse_lines(io.StringIO(message + doc))
    assert [b.facts for b in lines.blocks if b.format == "waits"] == [expected]
    assert "commits were slow" in lines.context.prose


def test_collapsed_11g_top5_with_its_wait_class():
    text = """Top 5 Timed Foreground Events
Avg
wait % DB
Event Waits Time(s) (ms) time Wait Class
db file sequential read 35,732 6,575 184 77.5 User I/O
log file sync 3,825 1,495 391 17.6 Commit
"""
    f = waits_block(text).facts
    assert f["event.pct_of_db_time"] == {"db file sequential read": 77.5, "log file sync": 17.6}
    assert f["event.avg_ms"]["log file sync"] == 391


def test_a_huge_cell_or_line_in_html_stays_bounded():
    doc = "<html><body><p>" + "x" * 300_000 + "</p><table><tr><td>" + "y" * 300_000
    doc += "</td><td>1</td></tr></table></body></html>"
    lines = list(html_lines([doc[i : i + 10_000] for i in range(0, len(doc), 10_000)]))
    assert max(len(line) for line in lines) <= 70_000
