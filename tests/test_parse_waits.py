"""Wait-event table parser: AWR, Statspack, session snapshots, enqueues and statistics."""

from __future__ import annotations

from pathlib import Path

import pytest
from parser_helpers import (
    FIXTURES,
    assert_facts_valid,
    assert_rejected_without_trace,
    drive_parser,
    fixture_lines,
)

from ingest.model import Block
from ingest.parsers.waits import MAX_KEYS, WaitsParser, parse_number

SEEDS = FIXTURES / "seeds"
ORACLE = FIXTURES / "oracle"


def drive(lines: list[str]) -> tuple[Block, list[str]]:
    return drive_parser(WaitsParser(), lines)


def from_file(tmp_path: Path, text: str) -> tuple[Block, list[str]]:
    path = tmp_path / "waits.txt"
    path.write_text(text)
    return drive(path.read_text().splitlines())


def assert_valid(block: Block) -> None:
    assert_facts_valid(block, "waits")


# -- seed snapshots (centiseconds) --------------------------------------------------------------


def test_seed_basicfile_snapshot_enqueues_events_and_stats_in_one_block():
    block, rejected = drive((SEEDS / "003_waits_basicfile.txt").read_text().splitlines())
    assert rejected == []
    f = block.facts
    assert f["event.waited_s"]["control file parallel write"] == pytest.approx(3.8575)
    assert f["waits.total_s"] == pytest.approx(5.1959)
    assert f["event.pct_of_waited"]["control file parallel write"] == pytest.approx(74.24, abs=0.01)
    assert f["waits.top_event"] == "control file parallel write"
    assert f["event.count"]["control file sequential read"] == 5014
    assert f["event.avg_ms"]["control file parallel write"] == pytest.approx(0.96)  # .096 cs
    assert f["event.max_ms"]["direct path sync"] == pytest.approx(60.0)  # 6 cs
    assert f["event.timeouts"]["direct path write"] == 0
    assert f["enqueue.requests"] == {"CF": 2006, "XR": 1000, "TM": 1002, "TX": 1031}
    assert f["enqueue.waits"]["CF"] == 0
    assert f["stat.value"]["lob writes"] == 1000
    assert f["stat.value"]["redo size"] == 1_647_276
    assert f["stat.value"]["KTFB alloc space (block)"] == 9_437_184
    assert [t["kind"] for t in block.details["tables"]] == ["enqueues", "events", "stats"]
    assert block.details["interval_s"] == 6
    assert block.details["enqueues"][0]["reason"] in ("contention", "database force logging")
    assert block.malformed_lines == 0
    assert_valid(block)


def test_seed_write_complete_snapshot():
    block, rejected = drive((SEEDS / "003_waits_write_complete.txt").read_text().splitlines())
    assert rejected == []
    f = block.facts
    assert f["event.count"]["write complete waits"] == 1000
    assert f["event.waited_s"]["write complete waits"] == pytest.approx(10.0702)
    assert f["event.avg_ms"]["write complete waits"] == pytest.approx(10.07, abs=0.01)
    assert f["stat.value"]["messages sent"] == 2000


def test_seed_securefile_snapshot():
    block, _ = drive((SEEDS / "003_waits_securefile.txt").read_text().splitlines())
    assert block.facts["event.waited_s"] == {"direct path write": pytest.approx(0.8572)}
    assert block.facts["enqueue.requests"]["DW"] == 1057
    assert block.facts["stat.value"]["securefile direct write ops"] == 1000


# -- AWR and Statspack --------------------------------------------------------------------------


def test_awr_19c_top10_with_unit_suffixes():
    block, rejected = drive(fixture_lines(ORACLE / "awr_19c_top10_db_file_sequential_read.txt"))
    assert rejected == []
    f = block.facts
    assert f["waits.top_event"] == "db file sequential read"
    assert f["event.waited_s"]["db file sequential read"] == 21100  # '21.1K'
    assert f["event.count"]["db file sequential read"] == 4_218_377
    assert f["event.avg_ms"]["db file sequential read"] == 5.0
    assert f["event.avg_ms"]["gc cr grant 2-way"] == pytest.approx(0.32342)  # '323.42us'
    assert f["event.avg_ms"]["enq: TX - row lock contention"] == pytest.approx(707.01)
    assert f["event.pct_of_db_time"]["db file sequential read"] == 61.8
    assert f["event.pct_of_db_time"]["DB CPU"] == 24.6
    assert "DB CPU" not in f["event.waited_s"]  # CPU is not a wait
    assert f["waits.events"] == 9
    assert f["event.pct_of_waited"]["db file sequential read"] == pytest.approx(88.43, abs=0.01)
    assert block.details["cpu"]["DB CPU"]["time_s"] == 8410.2
    rows = {r["event"]: r for r in block.details["events"]}
    assert rows["log file sync"]["wait_class"] == "Commit"
    assert block.details["tables"][0]["columns"] == [
        "Event",
        "Waits",
        "Total Wait Time (sec)",
        "Avg Wait",
        "% DB time",
        "Wait Class",
    ]
    assert_valid(block)


def test_statspack_top5_with_title_words_in_the_header():
    block, rejected = drive(fixture_lines(ORACLE / "statspack_top5_log_file_sync.txt"))
    assert rejected == []
    f = block.facts
    assert f["waits.top_event"] == "log file sync"
    assert f["event.waited_s"]["log file sync"] == 4163
    assert f["event.avg_ms"]["log file sync"] == 7
    assert f["event.pct_of_db_time"]["log file sync"] == 48.1
    assert f["event.pct_of_db_time"]["CPU time"] == 26.7
    assert f["waits.total_s"] == 4163 + 1257 + 571 + 103
    assert block.details["tables"][0]["columns"][3] == "Avg wait (ms)"


AWR_121 = """\
Top 10 Foreground Events by Total Wait Time
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
                                           Total Wait       Wait   % DB Wait
Event                                Waits Time (sec)    Avg(ms)   time Class
------------------------------ ----------- ---------- ---------- ------ --------
log file sync                      310,442     1862.7       6.00   41.3 Commit
DB CPU                                         1204.5              26.7
db file sequential read            402,118      804.2       2.00   17.8 User I/O
buffer busy waits                   20,518      205.2      10.00    4.5 Concurre
"""


def test_awr_121_layout_with_numeric_average_column(tmp_path):
    # made-up 12.1 numbers: time = waits x avg, % of a 4,510 s DB time
    block, rejected = from_file(tmp_path, AWR_121)
    assert rejected == []
    f = block.facts
    assert f["event.avg_ms"] == {
        "log file sync": 6.0,
        "db file sequential read": 2.0,
        "buffer busy waits": 10.0,
    }
    assert f["event.waited_s"]["log file sync"] == 1862.7
    assert f["event.pct_of_db_time"]["buffer busy waits"] == 4.5


AWR_122_TOP_AND_FULL = """\
Top 10 Foreground Events by Total Wait Time
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
                                           Total Wait       Avg   % DB Wait
Event                                Waits Time (sec)      Wait   time Class
------------------------------ ----------- ---------- --------- ------ --------
enq: TX - row lock contention           12       61.4    5.12 s   87.1 Applicat
DB CPU                                              7.9             11.2
log file sync                          406         .8    1.97ms    1.1 Commit


Foreground Wait Events                     DB/Inst: ORCL/orcl  Snaps: 210-211
-> s  - second, ms - millisecond, us - microsecond, ns - nanosecond
-> Only events with Total Wait Time (s) >= .001 are shown
-> ordered by wait time desc, waits desc (idle events last)

                                                Total
                                       %Time     Wait              Waits   % DB
Event                            Waits -outs Time (s)  Avg wait     /txn   time
-------------------------- ----------- ----- -------- --------- -------- ------
enq: TX - row lock content          12             61    5.12 s      0.1   87.1
log file sync                      406     0        1    1.97ms      2.9    1.1
db file sequential read             88     0        0  402.11us      0.6     .1
SQL*Net message from clien         917          2,204    2.40 s      6.6
                          ------------------------------------------------------
"""


def test_top_n_summary_yields_to_the_full_table_and_cut_names_are_restored(tmp_path):
    # made-up 12.2 numbers: a row lock wait dominating a short interval
    block, rejected = from_file(tmp_path, AWR_122_TOP_AND_FULL)
    assert rejected == []
    f = block.facts
    assert block.details["events_from"] == "full tables"
    assert set(f["event.count"]) == {
        "enq: TX - row lock contention",
        "log file sync",
        "db file sequential read",
        "SQL*Net message from client",
    }
    assert f["event.count"]["log file sync"] == 406  # not 812: the Top 10 row is a summary
    assert f["event.waited_s"]["enq: TX - row lock contention"] == 61
    assert f["event.avg_ms"]["enq: TX - row lock contention"] == pytest.approx(5120)
    assert f["event.avg_ms"]["db file sequential read"] == pytest.approx(0.40211)
    assert f["event.waited_s"]["SQL*Net message from client"] == 2204  # blank %Time-outs cell
    assert f["event.pct_of_db_time"]["enq: TX - row lock contention"] == 87.1
    assert "SQL*Net message from client" not in f["event.pct_of_db_time"]
    assert "event.timeouts" not in f  # '%Time -outs' is a share of waits, not a count


VSESSION_EVENT = """\
EVENT                                    TOTAL_WAITS TOTAL_TIMEOUTS TIME_WAITED AVERAGE_WAIT   MAX_WAIT
---------------------------------------- ----------- -------------- ----------- ------------ ----------
db file scattered read                         18204              0       27510         1.51         38
db file sequential read                         6120              0        3366          .55         21
SQL*Net message from client                       64              0         902        14.09        311
log file sync                                     12              0           9          .75          2

4 rows selected.
"""


def test_v_session_event_query_output_is_in_centiseconds(tmp_path):
    # made-up numbers for one session: TIME_WAITED / AVERAGE_WAIT / MAX_WAIT are centiseconds
    block, rejected = from_file(tmp_path, VSESSION_EVENT)
    assert rejected == ["4 rows selected."]
    f = block.facts
    assert f["event.waited_s"]["db file scattered read"] == pytest.approx(275.10)
    assert f["event.avg_ms"]["db file scattered read"] == pytest.approx(15.1)
    assert f["event.max_ms"]["SQL*Net message from client"] == pytest.approx(3110)
    assert f["waits.top_event"] == "db file scattered read"


def test_enqueue_tables_one_line_and_two_line(tmp_path):
    # made-up numbers; Statspack prints the type on its own line above the figures
    text = """\
Type    Requests       Waits     Success      Failed    Wait m/s Reason
----    --------       -----     -------      ------    -------- ------
TX         4,512          37       4,512           0         912 row lock contention
CF           220           4         220           0          18 contention

Enqueue activity  DB/Inst: ORCL/orcl  Snaps: 118-119
-> only enqueues with waits are shown
-> ordered by Wait Time desc, Waits desc

Enqueue Type (Request Reason)
------------------------------------------------------------------------------
    Requests    Succ Gets Failed Gets       Waits  Wt Time (s) Av Wt Time(ms)
------------ ------------ ----------- ----------- ------------ --------------
TX-Transaction (row lock contention)
         911          911           0         402          284         706.47
HW-Segment High Water Mark
       6,118        6,118           0         127            3          23.62
"""
    block, rejected = from_file(tmp_path, text)
    assert rejected == []
    f = block.facts
    assert f["enqueue.requests"] == {"TX": 4512 + 911, "CF": 220, "HW": 6118}
    assert f["enqueue.waits"] == {"TX": 37 + 402, "CF": 4, "HW": 127}
    assert f["enqueue.wait_ms"]["TX"] == pytest.approx(912 + 284_000)
    assert f["enqueue.wait_ms"]["HW"] == pytest.approx(3000)
    assert "event.waited_s" not in f


def test_header_without_ruler_and_rows_without_header(tmp_path):
    block, rejected = from_file(
        tmp_path,
        "Event                          Waits    Time (s)   Avg (ms)\n"
        "db file sequential read        1,024       5.12        5.0\n"
        "log file sync                    300       0.90        3.0\n",
    )
    assert rejected == []
    assert block.facts["event.waited_s"] == {"db file sequential read": 5.12, "log file sync": 0.9}
    assert block.facts["event.avg_ms"]["log file sync"] == 3.0

    bare = [
        "db file sequential read        1024     5.12     5.00",
        "log file sync   300   0.90   3.00",
    ]
    assert WaitsParser.start_score(bare[0]) == 1
    block, rejected = drive(bare)
    assert rejected == []
    assert block.facts["event.count"] == {"db file sequential read": 1024, "log file sync": 300}
    assert block.details["tables"][0]["assumed_columns"] is True


# -- block boundaries ---------------------------------------------------------------------------


def test_prose_after_a_table_ends_the_block_and_changes_nothing():
    p = WaitsParser()
    for line in (SEEDS / "003_waits_write_complete.txt").read_text().splitlines():
        assert p.feed(line)
    assert p.feed("")
    assert_rejected_without_trace(
        p,
        [
            "That looks like two messages sent for each LOB inserted.",
            "We saw 1000 waits and then 2 more.",
        ],
    )


def test_a_sentence_right_under_a_table_is_prose_not_a_malformed_row():
    lines = (SEEDS / "003_waits_basicfile.txt").read_text().splitlines()
    p = WaitsParser()
    for line in lines:
        assert p.feed(line)
    assert not p.feed("So each of the 1,000 LOB writes cost about 4 control file writes.")
    assert p.feed(
        "lob reads                                                                     12"
    )
    assert p.finish(1, len(lines) + 1).facts["stat.value"]["lob reads"] == 12


def test_start_scores():
    s = WaitsParser.start_score
    assert s("Event                  Waits   Time_outs      Csec    Avg Csec    Max Csec") == 2
    assert s("Type    Requests       Waits     Success      Failed    Wait m/s Reason") == 2
    assert s("Top 5 Timed Events                                          Avg %Total") == 2
    assert s("Top 10 Foreground Events by Total Wait Time") == 2
    assert s("Session Events") == 2
    assert s("System enqueues") == 2
    assert s("Interval:-      6 seconds") == 2
    assert s("control file parallel write        4,000     0     385.75     .096     6") == 1
    assert s("kgecss                                                            2") == 0
    assert s("  Event waited on                             Times   Max. Wait  Total Waited") == 0
    assert (
        s("call     count       cpu    elapsed       disk      query    current        rows") == 0
    )
    assert s("The waits were 12 and 30 seconds long.") == 0


def test_parse_number_forms():
    assert parse_number("1,647,276") == (1_647_276, None)
    assert parse_number(".125") == (0.125, None)
    assert parse_number("3.23ms") == (3.23, 0.001)
    assert parse_number("268.69us") == (268.69, 1e-6)
    assert parse_number("21.1K") == (21_100, None)
    assert parse_number("-") is None
    assert parse_number("2-way") is None
    assert parse_number("1" * 400) is None  # overflows a float: not a usable number


def test_a_row_under_a_table_without_number_columns_is_malformed_not_fatal():
    # found by fuzzing: a header whose only columns are the name and a text column
    block, rejected = drive(
        [
            "Event                          Wait Class",
            "------------------------------ ----------",
            "db file sequential read   12   User I/O",
        ]
    )
    assert rejected == []
    assert block.malformed_lines == 1
    assert "event.count" not in block.facts


def test_absurdly_large_numbers_are_not_numbers():
    # found by hypothesis: a value near the float maximum made a share infinite
    huge = "1" + "0" * 300
    block, rejected = drive(
        [
            "Event          Waits   Time (s)",
            f"db file read   2   {huge}.000",
            "log file sync   4   0.02",
        ]
    )
    assert rejected == []
    assert block.malformed_lines == 1
    assert_valid(block)
    assert block.facts["event.count"] == {"log file sync": 4}


def test_many_statistics_stay_bounded(tmp_path):
    rows = "\n".join(f"made up statistic {i:06d}        {i:,}" for i in range(MAX_KEYS + 500))
    block, rejected = from_file(tmp_path, "Name          Value\n----          -----\n" + rows)
    assert rejected == []
    assert len(block.facts["stat.value"]) == MAX_KEYS
    assert block.details["dropped_rows"] == 500
    assert block.facts["stat.value"]["made up statistic 001234"] == 1234
