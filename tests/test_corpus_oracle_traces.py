"""Done-when test for the Oracle trace snippets of the shared corpus (15-29): each is detected as
its format and the facts a DBA reads off it are in the block's facts. The numbers below were read
off the snippets (compare labels.yaml); a miss fails, a missing corpus fails."""

from __future__ import annotations

from pathlib import Path

import pytest

from ingest.detect import parse_text
from ingest.model import Block
from tests.parser_helpers import assert_facts_valid

CORPUS = Path(__file__).resolve().parents[1].parent / "shared" / "corpus" / "snippets"


def _blocks(number: int) -> list[Block]:
    assert CORPUS.is_dir(), f"corpus missing: {CORPUS}"
    paths = sorted(CORPUS.glob(f"{number:02d}_*"))
    assert len(paths) == 1, paths
    blocks = parse_text(paths[0].read_text(encoding="utf-8", errors="replace")).blocks
    for b in blocks:
        if b.format != "unknown":
            assert_facts_valid(b)
    return blocks


def _one(number: int, fmt: str) -> Block:
    found = [b for b in _blocks(number) if b.format == fmt]
    assert found, f"snippet {number}: no {fmt} block"
    return max(found, key=lambda b: b.lines)


def _close(value: float, want: float, rel: float = 1e-3) -> bool:
    return value == pytest.approx(want, rel=rel, abs=1e-9)


# -- tkprof -----------------------------------------------------------------------------------


def test_15_tkprof_overall_totals_split_by_recursion():
    f = _one(15, "tkprof").facts
    assert f["tkprof.elapsed_s"] == pytest.approx(0.10)
    assert f["tkprof.recursive_elapsed_s"] == pytest.approx(0.31)
    assert f["tkprof.disk"] == 6
    assert f["tkprof.hard_parses"] == 17
    assert f["tkprof.nonrecursive_hard_parses"] == 2
    assert f["tkprof.recursive_hard_parses"] == 15
    assert f["tkprof.distinct_statements"] == 19
    assert f["tkprof.user_statements"] == 3 and f["tkprof.internal_statements"] == 16


def test_16_tkprof_single_block_reads():
    f = _one(16, "tkprof").facts
    assert f["tkprof.fetch_count"] == 3334 and f["tkprof.rows"] == 333292
    assert f["tkprof.cpu_s"] == pytest.approx(11.45)
    assert f["tkprof.elapsed_s"] == pytest.approx(36.22)
    assert f["tkprof.disk"] == 99722 and f["tkprof.query"] == 102184
    assert f["event.count"]["db file sequential read"] == 99722
    assert f["event.waited_s"]["db file sequential read"] == pytest.approx(30.60)
    assert f["event.max_ms"]["db file sequential read"] == pytest.approx(40.0)
    assert f["event.waited_s"]["SQL*Net message from client"] == pytest.approx(1.12)


def test_17_tkprof_recursive_statement_parsed_per_execution():
    f = _one(17, "tkprof").facts
    assert f["tkprof.parse_count"] == 362494 and f["tkprof.execute_count"] == 362494
    assert f["tkprof.recursive_parse_count"] == 362494
    assert f["tkprof.recursive_elapsed_s"] == pytest.approx(23.07)
    assert f["tkprof.cpu_s"] == pytest.approx(19.38)
    assert f["tkprof.query"] == 724988
    assert f["tkprof.distinct_statements"] == 1
    assert "47r1y8yn34jmj" in _one(17, "tkprof").identifiers


def test_18_tkprof_direct_path_write_temp():
    f = _one(18, "tkprof").facts
    assert f["tkprof.fetch_count"] == 21 and f["tkprof.rows"] == 2011
    assert f["tkprof.current"] == 25355 and f["tkprof.disk"] == 288
    assert f["event.count"]["direct path write temp"] == 2158
    assert f["event.waited_s"]["direct path write temp"] == pytest.approx(1.59)
    assert f["event.count"]["ASM IO for non-blocking poll"] == 6769


def test_19_tkprof_four_full_scans():
    f = _one(19, "tkprof").facts
    assert f["tkprof.statements"] == 4
    assert f["event.count"]["SQL*Net more data to client"] >= 71976
    assert f["event.waited_s"]["SQL*Net message from client"] > 93
    assert f["tkprof.hard_parses"] == 0


# -- raw 10046 --------------------------------------------------------------------------------


def test_20_trace10046_cursor_pin_s_wait_on_x_at_parse():
    b = _one(20, "trace10046")
    f = b.facts
    assert f["trace10046.time_unit"] == "us" and f["trace10046.release"].startswith("12.2.0.1")
    assert f["event.max_ms"]["cursor: pin S wait on X"] == pytest.approx(262.717)
    assert f["event.waited_s"]["library cache: mutex X"] == pytest.approx(0.007325)
    assert f["event.max_ms"]["read by other session"] == pytest.approx(17.61)
    assert f["event.max_ms"]["PL/SQL lock timer"] == pytest.approx(500.087)
    # the PL/SQL block: its PARSE (270564 us) and EXEC (5134386 us) are its elapsed
    assert f["statement.elapsed_s"]["9x825n14bw9r9"] >= 5.134386 + 0.270564
    assert f["waits.top_event"] == "PL/SQL lock timer"
    # Method R: R is the dep=0 time plus what lies between calls, and the parts add up
    parts = f["trace10046.profile_s"]
    assert sum(parts.values()) == pytest.approx(f["trace10046.response_s"], rel=1e-4)
    assert b.details["pid"] == 9854
    assert b.details["header"]["node_name"] == "ora122rac01.jks.com"
    assert b.details["header"]["oracle_home"] == "/u01/app/oracledb/product/12.2.0/db1"


def test_21_trace10046_array_fetch_and_network_round_trips():
    f = _one(21, "trace10046").facts
    assert f["trace10046.release"].startswith("19")
    assert f["trace10046.rows_per_fetch"] <= 10
    snmfc = f["event.avg_ms"]["SQL*Net message from client"]
    assert 6.0 < snmfc < 7.6
    assert f["trace10046.think_pct"] > 90
    assert "4y53369cbbaqf" in f["statement.elapsed_s"]


def test_22_trace10046_insert_returning_with_sequence():
    b = _one(22, "trace10046")
    f = b.facts
    assert f["trace10046.release"].startswith("10.2.0.1")
    assert f["trace10046.time_unit"] == "us"
    assert f["trace10046.cpu_s"] == pytest.approx(1.5, abs=1e-3)
    assert f["trace10046.max_wait_event"] == "db file sequential read"
    assert f["trace10046.max_wait_ms"] == pytest.approx(33.297)
    assert f["trace10046.max_wait_obj"] == 54441 and f["trace10046.max_wait_file"] == 4
    assert f["trace10046.max_wait_block"] == 127140
    assert f["event.max_ms"]["log file sync"] == pytest.approx(0.168)
    assert f["event.max_ms"]["SQL*Net message from client"] == pytest.approx(9864.075)
    assert f["trace10046.think_s"] == pytest.approx(9.864876)
    assert f["statement.elapsed_s"]["hv=2228079888"] >= 1.525863
    assert f["trace10046.commits"] == 2
    assert b.details["session"] == "44.524"
    assert f["trace10046.seq_updates"] == 1  # NEXTVAL refilled the sequence cache once


def test_23_trace10046_piece_with_binds():
    b = _one(23, "trace10046")
    f = b.facts
    assert f["statement.exec_count"]["47r1y8yn34jmj"] == 2
    assert f["trace10046.query"] == 4
    assert b.details["bind_blocks"] == 2
    # a piece holding only dep=1 calls: R is computed from them
    assert f["trace10046.top_depth"] == 1 and f["trace10046.dep0_calls"] == 8
    assert f["trace10046.response_s"] >= 0.000538


def test_24_trace10046_gap_between_last_fetch_and_close():
    b = _one(24, "trace10046")
    f = b.facts
    assert f["statement.elapsed_s"]["3sfmy3y34t71n"] >= 558.267064
    assert f["trace10046.cpu_s"] == pytest.approx(552.848007, rel=1e-6)
    assert f["trace10046.current"] >= 1118112
    assert f["trace10046.max_gap_s"] == pytest.approx(450.293536, rel=1e-5)
    gap = b.details["largest_gap"]
    assert gap["after_tim"] == 9831739623185 and gap["before_tim"] == 9832189916721
    assert "btysk50atwccn" in f["statement.elapsed_s"]


# -- hanganalyze, stacks, LGWR ----------------------------------------------------------------


def test_25_hanganalyze_root_blocker_idle_in_sqlnet():
    f = _one(25, "hanganalyze").facts
    assert f["hang.blocker_sid"] == 47 and f["hang.blocker_ospid"] == 36626
    assert f["hang.blocker_event"] == "SQL*Net message from client"
    assert f["hang.blocker_wait_s"] == 183
    assert f["hang.blocking_sessions"] == 2
    assert f["hang.waiters"] == 2 and f["hang.chains"] == 2
    assert f["hang.waiter_event"] == "enq: TX - row lock contention"
    assert f["hang.max_waiter_wait_s"] == 112  # sid 34: 1 min 52 sec
    assert "enq: TX - row lock contention" in f["hang.signature"]


def test_26_short_stack_profile():
    f = _one(26, "stack").facts
    assert f["stack.samples"] == 20
    assert f["frame.count"]["qertbFetch"] == 40
    assert f["frame.count"]["kdstf01001010000km"] >= 20
    assert f["layer.count"]["kd"] > 0 and f["layer.count"]["qer"] > 0


def test_27_pstack_solaris_cms_thread():
    f = _one(27, "stack").facts
    assert f["stack.frames"] == 10
    assert "__1cRPushOrMarkClosureGdo_oop6MppnHoopDesc__v_" in f["frame.top"]
    assert "__1cZConcurrentMarkSweepThreadDrun6M_v_" in f["frame.count"]


def test_28_pstack_linux_assm_free_space_search():
    f = _one(28, "stack").facts
    assert f["stack.frames"] == 32
    assert "kdb_count_pdml_itl" in f["frame.top"]
    for name in ("ktspfpblk", "ktspfsrch", "ktspscan_bmb", "ktspgsp_cbk1", "updrowFastPath"):
        assert name in f["frame.count"], name


def test_29_lgwr_trace_slow_log_writes():
    f = _one(29, "lgwr_trace").facts
    assert f["lgwr.slow_writes"] >= 9
    assert f["lgwr.max_write_ms"] >= 1562
    assert f["lgwr.min_write_ms"] >= 500
    assert f["lgwr.max_write_kb"] >= 3323
