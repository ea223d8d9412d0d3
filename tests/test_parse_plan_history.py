"""Plan history listings read by the vdollar parser (issue 16, plan flips): dba_hist_sqlstat
queries, v$sql children and Kerry Osborne's awr_plan_change.sql layout give the plans of each
statement and their elapsed time per execution, weighted by executions."""

from __future__ import annotations

import pytest

from ingest.detect import parse_text
from tests.parser_helpers import assert_facts_valid


def _vdollar(text: str):
    blocks = [b for b in parse_text(text).blocks if b.format == "vdollar"]
    assert len(blocks) == 1, [(b.format, b.start_line) for b in parse_text(text).blocks]
    assert_facts_valid(blocks[0])
    return blocks[0]


AWR_PLAN_CHANGE = """\
SQL> @awr_plan_change
Enter value for sql_id: 0qa98gcnnza7h

   SNAP_ID   NODE BEGIN_INTERVAL_TIME            SQL_ID        PLAN_HASH_VALUE        EXECS    AVG_ETIME        AVG_LIO
---------- ------ ------------------------------ ------------- --------------- ------------ ------------ --------------
     21857      1 20-NOV-26 09.00.04.128 AM      0qa98gcnnza7h       568322376          100         .020          3,210
     21858      1 20-NOV-26 10.00.06.551 AM      0qa98gcnnza7h       568322376          300         .030          3,305
     21859      1 20-NOV-26 11.00.02.907 AM      0qa98gcnnza7h      3723858078          200        1.500        812,411
     21859      1 20-NOV-26 11.00.02.907 AM      5ck7w2zkqa1r9      1140122801           50         .002             40
"""


def test_awr_plan_change_layout_weights_plans_by_executions():
    f = _vdollar(AWR_PLAN_CHANGE).facts
    assert f["plan.hashes"] == {"0qa98gcnnza7h": 2, "5ck7w2zkqa1r9": 1}
    assert f["plan.max_hashes"] == 2
    assert f["plan.flip_sql_id"] == "0qa98gcnnza7h"
    # (100 x 0.020 + 300 x 0.030) / 400 = 0.0275 s; the new plan 1.5 s
    assert f["plan.best_s_per_exec"] == pytest.approx(0.0275)
    assert f["plan.worst_s_per_exec"] == 1.5
    assert f["plan.worst_best_ratio"] == pytest.approx(54.55)


def test_v_sql_children_give_microseconds_in_all():
    text = (
        "SQL_ID        CHILD_NUMBER PLAN_HASH_VALUE EXECUTIONS ELAPSED_TIME\n"
        "------------- ------------ --------------- ---------- ------------\n"
        "9zg9qd9bm4spu            0      2506138112        500    1,000,000\n"
        "9zg9qd9bm4spu            1      1388734953         10   30,000,000\n"
    )
    f = _vdollar(text).facts
    assert f["plan.best_s_per_exec"] == 0.002 and f["plan.worst_s_per_exec"] == 3.0
    assert f["plan.worst_best_ratio"] == 1500


def test_the_sql_id_of_the_query_names_rows_without_one_and_zero_hashes_are_skipped():
    text = (
        "SQL> select snap_id, plan_hash_value, executions_delta, elapsed_time_delta"
        " from dba_hist_sqlstat where sql_id = 'b6usrg82hwsa3' order by 1;\n"
        "\n"
        "   SNAP_ID PLAN_HASH_VALUE EXECUTIONS_DELTA ELAPSED_TIME_DELTA\n"
        "---------- --------------- ---------------- ------------------\n"
        "       101               0                5             50,000\n"
        "       102       111222333               10            100,000\n"
    )
    f = _vdollar(text).facts
    assert f["plan.hashes"] == {"b6usrg82hwsa3": 1}
    assert "plan.worst_best_ratio" not in f  # one plan: nothing to compare


def test_one_plan_per_statement_is_no_flip():
    text = AWR_PLAN_CHANGE.replace("3723858078", " 568322376")
    f = _vdollar(text).facts
    assert f["plan.max_hashes"] == 1 and "plan.flip_sql_id" not in f
