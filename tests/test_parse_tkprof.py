"""tkprof parser: the facts a DBA reads off a report, driven line by line as the detector does."""

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
from ingest.parsers.tkprof import IDLE_EVENTS, MAX_STATEMENTS_KEPT, TkprofParser

SEED = FIXTURES / "seeds" / "000_tkprof_122.txt"
ORACLE = FIXTURES / "oracle"


def drive(lines: list[str]) -> tuple[Block, list[str]]:
    return drive_parser(TkprofParser(), lines)


def write(tmp_path: Path, text: str) -> list[str]:
    path = tmp_path / "input.txt"
    path.write_text(text)
    return path.read_text().splitlines()


def assert_valid(block: Block) -> None:
    """Every fact is in the catalogue for tkprof, and every number is finite."""
    assert_facts_valid(block, "tkprof")


CALL_HEADER = [
    "call     count       cpu    elapsed       disk      query    current        rows",
    "------- ------  -------- ---------- ---------- ---------- ----------  ----------",
]
WAIT_HEADER = [
    "Elapsed times include waiting on following events:",
    "  Event waited on                             Times   Max. Wait  Total Waited",
    "  ----------------------------------------   Waited  ----------  ------------",
]


# -- the seed -----------------------------------------------------------------------------------


def test_seed_bare_call_table_reads_as_the_author_did():
    block, rejected = drive(SEED.read_text().splitlines())
    assert rejected == []
    f = block.facts
    assert f["tkprof.elapsed_s"] == 12.49
    assert f["tkprof.cpu_s"] == 2.25
    assert f["tkprof.waited_s"] == 0.0
    assert f["tkprof.unaccounted_s"] == pytest.approx(10.24)
    assert f["tkprof.unaccounted_pct"] == pytest.approx(82.0, abs=0.05)
    assert f["tkprof.statements"] == 1
    assert f["tkprof.execute_count"] == 1
    assert set(f["event.count"]) == {
        "Disk file operations I/O",
        "SQL*Net message to client",
        "SQL*Net message from client",
    }
    assert "waits.top_event" not in f  # nothing was waited: no event "dominates"
    assert block.malformed_lines == 0
    assert_valid(block)


def test_seed_block_ends_at_the_prose_after_its_wait_table():
    p = TkprofParser()
    for line in SEED.read_text().splitlines():
        assert p.feed(line)
    assert p.feed("")
    # a rejected line leaves the parser as it was
    assert_rejected_without_trace(
        p, ["Therefore, we need to use some OS diagnostics for further analysis."]
    )


# -- full reports -------------------------------------------------------------------------------


def test_19c_report_uses_overall_totals_and_counts_recursive_waits():
    block, rejected = drive(fixture_lines(ORACLE / "tkprof_19c_orders.txt"))
    assert rejected == []
    f, d = block.facts, block.details
    assert d["release"] == "19.0.0.0.0"
    assert d["totals_source"] == "OVERALL TOTALS FOR ALL NON-RECURSIVE STATEMENTS"
    assert f["tkprof.statements"] == 4
    assert f["tkprof.elapsed_s"] == 4.66
    assert f["tkprof.cpu_s"] == 1.54
    # non-idle waits of both OVERALL tables: 2.35 + 0.02 + 0.31 (+ 0.00) + 0.01 recursive
    assert f["tkprof.waited_s"] == pytest.approx(2.69)
    assert f["tkprof.accounted_s"] == pytest.approx(4.23)
    assert f["tkprof.unaccounted_s"] == pytest.approx(0.43)
    assert f["tkprof.unaccounted_pct"] == pytest.approx(100 * 0.43 / 4.66, abs=1e-4)
    assert f["tkprof.hard_parses"] == 3  # 2 non-recursive + 1 recursive
    assert (f["tkprof.parse_count"], f["tkprof.execute_count"], f["tkprof.fetch_count"]) == (
        501,
        501,
        181,
    )
    assert f["tkprof.parse_cpu_pct"] == pytest.approx(100 * 0.01 / 1.54, abs=1e-4)
    assert (f["tkprof.disk"], f["tkprof.query"], f["tkprof.current"]) == (2150, 49462, 1531)
    assert f["tkprof.rows"] == 18284
    assert f["tkprof.rows_per_fetch"] == pytest.approx(18034 / 181, abs=1e-4)
    assert f["tkprof.lio_per_row"] == pytest.approx((49462 + 1531) / 18284, abs=1e-4)
    # events: OVERALL non-recursive + recursive tables, idle ones listed too
    assert f["event.waited_s"]["db file sequential read"] == pytest.approx(2.36)
    assert f["event.count"]["db file sequential read"] == 2121
    assert f["event.max_ms"]["db file sequential read"] == pytest.approx(30.0)
    assert f["event.waited_s"]["SQL*Net message from client"] == pytest.approx(8.89)
    assert f["waits.total_s"] == pytest.approx(11.58)
    assert f["waits.top_event"] == "SQL*Net message from client"
    assert d["totals"]["idle_wait_s"] == pytest.approx(8.89)
    assert d["trailer"]["lines in trace file"] == 9321
    assert d["session_counts"]["user SQL statements in session"] == 3
    assert_valid(block)


def test_19c_statement_details_keep_ids_text_calls_and_row_source():
    block, _ = drive(fixture_lines(ORACLE / "tkprof_19c_orders.txt"))
    stmts = block.details["statements"]
    assert [s["sql_id"] for s in stmts] == [
        "4mx8dz1q7bk2p",
        "9b2kq6xv0w1ht",
        "8ggw94h7mvxd7",
        "0ck7pz2xh9bqd",
    ]  # slowest first
    first = stmts[0]
    assert first["plan_hash"] == "2706498542"
    assert first["text"].startswith("SELECT o.order_id, o.status, o.created_at, c.name FROM orders")
    assert first["calls"]["Fetch"] == {
        "count": 181,
        "cpu": 1.42,
        "elapsed": 3.87,
        "disk": 2113,
        "query": 48712,
        "current": 0,
        "rows": 18034,
    }
    assert first["misses_parse"] == 1
    assert first["optimizer_mode"] == "ALL_ROWS"
    assert first["parsing_user"] == "112"
    assert first["waited_s"] == pytest.approx(2.08)
    assert first["unaccounted_s"] == pytest.approx(0.37)
    ops = [(r["depth"], r["operation"], r["rows"], r["rows_max"]) for r in first["row_source"]]
    assert ops == [
        (0, "HASH JOIN", 18034, 18034),
        (1, "TABLE ACCESS FULL CUSTOMERS", 4120, 4120),
        (1, "TABLE ACCESS BY INDEX ROWID BATCHED ORDERS", 18034, 18034),
        (2, "INDEX RANGE SCAN ORDERS_CREATED_IX", 18034, 18034),
    ]
    assert first["row_source"][0]["stats"]["pr"] == 2113
    assert first["row_source"][0]["stats"]["time"] == 3861204
    recursive = stmts[3]
    assert (recursive["depth"], recursive["parsing_user"]) == (1, "SYS")
    assert recursive["misses_execute"] == 1
    assert block.details["recursive_totals"]["elapsed"] == 0.01
    assert "4mx8dz1q7bk2p" in block.identifiers
    assert "db file sequential read" in block.identifiers


def test_without_overall_totals_the_non_recursive_statements_are_summed():
    lines = fixture_lines(ORACLE / "tkprof_19c_orders.txt")
    cut = lines.index("OVERALL TOTALS FOR ALL NON-RECURSIVE STATEMENTS")
    block, rejected = drive(lines[:cut])
    assert rejected == []
    f = block.facts
    assert block.details["totals_source"] == "sum of 3 non-recursive statement(s)"
    assert f["tkprof.elapsed_s"] == pytest.approx(4.66)  # 3.87 + 0.43 + 0.36, not + 0.01
    assert f["tkprof.cpu_s"] == pytest.approx(1.54)
    assert f["tkprof.waited_s"] == pytest.approx(2.69)  # the recursive statement's wait counts
    assert f["tkprof.hard_parses"] == 3
    assert f["tkprof.statements"] == 4


def test_11201_separate_sql_id_and_plan_hash_lines_and_single_rows_column():
    block, rejected = drive(fixture_lines(ORACLE / "tkprof_11201_separate_ids.txt"))
    assert rejected == []
    f = block.facts
    assert block.details["release"] == "11.2.0.1.0"
    assert f["tkprof.elapsed_s"] == 9.67
    assert f["tkprof.cpu_s"] == 2.89
    assert f["tkprof.waited_s"] == pytest.approx(6.44)
    assert f["tkprof.unaccounted_s"] == pytest.approx(0.34)
    assert f["tkprof.hard_parses"] == 1
    assert f["waits.top_event"] == "direct path read"
    assert f["event.avg_ms"]["direct path read"] == pytest.approx(6410 / 688, abs=1e-4)
    by_id = {s["sql_id"]: s for s in block.details["statements"]}
    assert by_id["5c1g8d3yq2m7n"]["plan_hash"] == "2966233522"
    assert by_id["5c1g8d3yq2m7n"]["text"].startswith("SELECT CUST_ID, SUM(AMOUNT_SOLD) FROM SALES")
    assert by_id["2k9v7c1m4dfua"]["plan_hash"] == "0"
    assert by_id["7f0ra3ckwbt5n"]["depth"] == 1
    plan = by_id["5c1g8d3yq2m7n"]["row_source"]
    assert [(r["depth"], r["rows"]) for r in plan] == [
        (0, 7059),
        (1, 918843),
        (2, 918843),
        (3, 918843),
    ]
    assert plan[0]["rows_avg"] is None
    assert plan[3]["operation"] == "TABLE ACCESS FULL SALES PARTITION: KEY KEY"


def test_db_file_sequential_read_report():
    block, rejected = drive(fixture_lines(ORACLE / "tkprof_db_file_sequential_read.txt"))
    assert rejected == []
    f = block.facts
    assert f["waits.top_event"] == "db file sequential read"
    assert f["waits.top_pct"] > 99
    assert f["event.avg_ms"]["db file sequential read"] == pytest.approx(5.0055, abs=1e-3)
    assert f["tkprof.elapsed_s"] == 296.02
    assert f["tkprof.waited_s"] == pytest.approx(291.49)
    assert f["tkprof.unaccounted_pct"] < 1


# -- accounting rules ---------------------------------------------------------------------------


def _plsql_report(calls: list[str], waits: list[str]) -> str:
    return "\n".join(
        [
            "BEGIN",
            "  step_through_batch(:b1);",
            "END;",
            "",
            *CALL_HEADER,
            *calls,
            "",
            "Misses in library cache during parse: 0",
            "Parsing user id: 94  ",
            "",
            *WAIT_HEADER,
            *waits,
            "*" * 80,
        ]
    )


def test_idle_client_time_is_listed_but_not_waited_and_lock_timer_counts(tmp_path):
    # made-up: a PL/SQL block that sleeps 20 s in DBMS_SESSION.SLEEP, then the client idles 3.5 s
    text = _plsql_report(
        [
            "Parse        1      0.00       0.00          0          0          0           0",
            "Execute      1      0.04      20.05          0         12          0           1",
            "Fetch        0      0.00       0.00          0          0          0           0",
            "------- ------  -------- ---------- ---------- ---------- ----------  ----------",
            "total        2      0.04      20.05          0         12          0           1",
        ],
        [
            "  PL/SQL lock timer                               1       20.00         20.00",
            "  SQL*Net message to client                       1        0.00          0.00",
            "  SQL*Net message from client                     1        3.50          3.50",
        ],
    )
    p = TkprofParser()
    assert p.feed("SQL ID: 1qz7n3v2k8c0x Plan Hash: 0")
    for line in write(tmp_path, text):
        assert p.feed(line), line
    f = p.finish(1, 20).facts
    assert "SQL*Net message from client" in IDLE_EVENTS
    assert f["tkprof.waited_s"] == 20.0
    assert f["tkprof.unaccounted_s"] == pytest.approx(0.01)
    assert f["event.waited_s"]["SQL*Net message from client"] == 3.5
    assert f["waits.total_s"] == 23.5


def test_negative_unaccounted_time_is_reported_not_clamped(tmp_path):
    # made-up: cpu and a wait overlap (cpu + waits > elapsed), as on some Solaris/ZFS systems
    text = _plsql_report(
        [
            "Parse        1      0.00       0.00          0          0          0           0",
            "Execute      1      1.20       1.00          0          0          0           1",
            "Fetch        0      0.00       0.00          0          0          0           0",
            "------- ------  -------- ---------- ---------- ---------- ----------  ----------",
            "total        2      1.20       1.00          0          0          0           1",
        ],
        ["  db file sequential read                        40        0.02          0.30"],
    )
    block, rejected = drive(["SQL ID: 3kd9w0m2x7v1p Plan Hash: 0", *write(tmp_path, text)])
    assert rejected == []
    assert block.facts["tkprof.unaccounted_s"] == pytest.approx(-0.5)
    assert block.facts["tkprof.unaccounted_pct"] == pytest.approx(-50.0)


def test_malformed_call_row_is_counted_and_skipped():
    lines = SEED.read_text().splitlines()
    lines[3] = "Execute      1      2.25      12.4x          0          0          0           1"
    block, rejected = drive(lines)
    assert rejected == []
    assert block.malformed_lines == 1
    assert block.facts["tkprof.elapsed_s"] == 12.49  # the total row still reads


def test_absurdly_large_numbers_are_malformed():
    lines = SEED.read_text().splitlines()
    lines[6] = (
        "total        2      2.25 " + "9" * 330 + ".00          0          0          0           1"
    )
    lines.insert(8, "Misses in library cache during parse: " + "9" * 330)  # found by fuzzing
    block, rejected = drive(lines)
    assert rejected == []
    assert block.malformed_lines == 2
    assert block.facts["tkprof.elapsed_s"] == 12.49  # from Parse + Execute + Fetch instead
    assert_valid(block)


def test_a_wait_table_on_its_own_gives_event_facts_only():
    lines = [
        *WAIT_HEADER,
        "  log file sync                                 120        0.09          1.44",
        "  db file sequential read                        30        0.01          0.06",
    ]
    for table in (lines, lines[1:]):  # with or without the 'Elapsed times include' line
        block, rejected = drive(table)
        assert rejected == []
    f = block.facts
    assert f["tkprof.statements"] == 0
    assert "tkprof.elapsed_s" not in f
    assert f["waits.top_event"] == "log file sync"
    assert f["event.avg_ms"]["log file sync"] == pytest.approx(12.0)
    assert f["event.pct_of_waited"]["log file sync"] == pytest.approx(96.0)


def test_row_source_line_without_header_opens_a_block():
    line = "   4521   TABLE ACCESS FULL EMP (cr=9121 pr=9002 pw=0 time=2201117 us cost=311 size=0 card=4500)"
    assert TkprofParser.start_score(line) == 2
    p = TkprofParser()
    assert p.feed(line)
    assert p.feed("   4521    INDEX FAST FULL SCAN EMP_IX (cr=120 pr=0 pw=0 time=1 us)")
    assert p.feed("")
    assert not p.feed("That full scan is the whole story.")
    assert p.finish(1, 3).facts["tkprof.statements"] == 0  # a plan alone is no statement


# -- where a block ends -------------------------------------------------------------------------


def test_after_the_trailer_prose_and_a_second_report_are_not_taken():
    lines = fixture_lines(ORACLE / "tkprof_db_file_sequential_read.txt")
    p = TkprofParser()
    for line in lines:
        assert p.feed(line), line
    assert not p.feed("The plan above reads ORDER_LINES one block at a time.")
    assert not p.feed("TKPROF: Release 19.0.0.0.0 - Development on Tue Sep 23 09:00:00 2025")
    assert p.finish(1, len(lines)).facts["tkprof.statements"] == 1


def test_sql_text_is_arbitrary_but_prose_after_a_separator_ends_the_block():
    lines = [
        "TKPROF: Release 12.2.0.1.0 - Development on Fri Jan 5 11:02:10 2024",
        "",
        "*" * 80,
        "",
        "select /* Therefore, we need some OS diagnostics: this is a comment */ 1",
        "Misses in library cache: this line is SQL text, not a tkprof construct",
        "  from dual",
        "",
        *CALL_HEADER,
        "Parse        1      0.00       0.00          0          0          0           0",
        "Execute      1      0.00       0.00          0          0          0           0",
        "Fetch        2      0.00       0.00          0          0          0           1",
        "------- ------  -------- ---------- ---------- ---------- ----------  ----------",
        "total        4      0.00       0.00          0          0          0           1",
        "",
        "Misses in library cache during parse: 1",
        "Parsing user id: 61  ",
        "*" * 80,
        "",
    ]
    p = TkprofParser()
    for line in lines:
        assert p.feed(line), line
    assert not p.feed("As you can see, the query itself was instant.")
    block = p.finish(1, len(lines))
    assert block.facts["tkprof.fetch_count"] == 2
    assert block.details["statements"][0]["text"].startswith("select /* Therefore")


def test_start_scores():
    assert TkprofParser.start_score("TKPROF: Release 19.0.0.0.0 - Development on x") == 2
    assert TkprofParser.start_score(CALL_HEADER[0]) == 2
    assert TkprofParser.start_score("OVERALL TOTALS FOR ALL NON-RECURSIVE STATEMENTS") == 2
    assert TkprofParser.start_score(WAIT_HEADER[0]) == 2
    assert TkprofParser.start_score(WAIT_HEADER[1]) == 2
    assert TkprofParser.start_score("SQL ID: 4mx8dz1q7bk2p Plan Hash: 2706498542") == 1
    assert TkprofParser.start_score("Misses in library cache during parse: 1") == 1
    assert TkprofParser.start_score("Interestingly, the executed code is not instrumented.") == 0
    assert TkprofParser.start_score("Event    Waits   Time_outs   Csec   Avg Csec   Max Csec") == 0
    assert TkprofParser.start_score("") == 0


# -- bounds and robustness ----------------------------------------------------------------------


def test_many_statements_keep_bounded_details_and_exact_totals(tmp_path):
    parts = []
    n = 400
    for i in range(n):
        ela = (i % 97) / 100
        parts += [
            f"SQL ID: {i:013d} Plan Hash: {i}",
            "",
            "SELECT " + ", ".join(f"col_{j}" for j in range(80)) + f" FROM t{i}",
            "",
            *CALL_HEADER,
            "Parse        1      0.00       0.00          0          0          0           0",
            f"Execute      1      0.00 {ela:10.2f}          0          3          0           1",
            "Fetch        0      0.00       0.00          0          0          0           0",
            "------- ------  -------- ---------- ---------- ---------- ----------  ----------",
            f"total        2      0.00 {ela:10.2f}          0          3          0           1",
            "",
            "Rows     Row Source Operation",
            "-------  ---------------------------------------------------",
            *[f"      1  {' ' * (k % 5)}FILTER  (cr=3 pr=0 pw=0 time=1 us)" for k in range(70)],
            "",
            "*" * 80,
        ]
    block, rejected = drive(write(tmp_path, "\n".join(parts)))
    assert rejected == []
    f, d = block.facts, block.details
    assert f["tkprof.statements"] == n
    assert f["tkprof.elapsed_s"] == pytest.approx(sum((i % 97) / 100 for i in range(n)))
    assert f["tkprof.query"] == 3 * n
    assert len(d["statements"]) == MAX_STATEMENTS_KEPT
    assert d["statements"][0]["elapsed_s"] == 0.96
    assert all(len(s["text"]) <= 300 for s in d["statements"])
    assert all(len(s["row_source"]) == 60 and s["row_source_lines"] == 70 for s in d["statements"])


# -- hard parses by recursion, distinct statements, sequence refills (issue 14) ---------------


def test_nocache_sequence_report_counts_seq_updates_and_recursive_totals():
    block, _ = drive_parser(TkprofParser(), fixture_lines("oracle/tkprof_nocache_sequence.txt"))
    assert_facts_valid(block)
    f = block.facts
    assert f["tkprof.seq_updates"] == 20000
    assert f["tkprof.recursive_execute_count"] == 20000
    assert f["tkprof.recursive_elapsed_s"] == pytest.approx(3.35)
    assert f["tkprof.recursive_parse_count"] == 20000
    assert f["tkprof.nonrecursive_hard_parses"] == 1 and f["tkprof.recursive_hard_parses"] == 0
    assert f["tkprof.distinct_statements"] == 2
    assert f["tkprof.user_statements"] == 1 and f["tkprof.internal_statements"] == 1
    assert f["event.pct_of_waited"]["enq: SQ - contention"] > 80
