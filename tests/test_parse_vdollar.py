"""SQL*Plus / SQLcl query output over v$ views and ASH (the vdollar parser). The tables below are
written for these tests in the shapes SQL*Plus prints (numbers made up)."""

from __future__ import annotations

from parser_helpers import assert_facts_valid, drive_parser

from ingest.detect import parse_text
from ingest.model import Block
from ingest.parsers.vdollar import VdollarParser


def drive(lines: list[str]) -> tuple[Block, list[str]]:
    return drive_parser(VdollarParser(), lines)


def vblock(text: str) -> Block:
    found = [b for b in parse_text(text).blocks if b.format == "vdollar"]
    assert len(found) == 1, [(b.format, b.start_line) for b in parse_text(text).blocks]
    assert_facts_valid(found[0])
    return found[0]


SESSION_WAIT = """SQL> select sid, username, event, state, seconds_in_wait, blocking_session from v$session
  2  where wait_class <> 'Idle';

       SID USERNAME   EVENT                                    STATE    SECONDS_IN_WAIT BLOCKING_SESSION
---------- ---------- ---------------------------------------- -------- --------------- ----------------
        31 APP        enq: TX - row lock contention            WAITING              412               77
        45 APP        enq: TX - row lock contention            WAITING               96               77
        77 BATCH      SQL*Net message from client              WAITING              530
       102 APP        db file sequential read                  WAITED S               0

4 rows selected.
"""


def test_session_wait_output():
    f = vblock(SESSION_WAIT).facts
    e = "enq: TX - row lock contention"
    assert f["session.count"][e] == 2
    assert f["session.seconds_in_wait_max"][e] == 412
    assert f["vdollar.rows"] == 4


VLOCK = """       SID TY        ID1        ID2      LMODE    REQUEST      CTIME      BLOCK
---------- -- ---------- ---------- ---------- ---------- ---------- ----------
        77 TX     655390      21311          6          0        611          1
        31 TX     655390      21311          0          6        412          0
        45 TX     655390      21311          0          6         96          0
        31 TM      81234          0          3          0        412          0
"""


def test_vlock_output_any_column_order():
    f = vblock(VLOCK).facts
    assert f["lock.request_mode"]["TX"] == 6
    assert f["lock.held_mode"]["TX"] == 6
    assert f["lock.waiters"]["TX"] == 2
    assert f["lock.blockers"]["TX"] == 1
    assert f["lock.ctime_max_s"]["TX"] == 611
    assert f["lock.held_mode"]["TM"] == 3


ASH_HIST = """SQL> select event, sql_id, count(*) from dba_hist_active_sess_history
  2  where snap_id between 4410 and 4411 group by event, sql_id order by 3 desc;

EVENT                                    SQL_ID          COUNT(*)
---------------------------------------- ------------- ----------
log file sync                                                  82
db file sequential read                  4z8qkq0s2cx1n         40
                                         4z8qkq0s2cx1n         31

3 rows selected.
"""


def test_dba_hist_ash_counts_ten_seconds_a_sample():
    f = vblock(ASH_HIST).facts
    assert f["ash.dba_hist"] == 1
    assert f["ash.samples"]["log file sync"] == 82
    assert f["ash.seconds"]["log file sync"] == 820
    assert f["ash.sql_seconds"]["4z8qkq0s2cx1n"] == 710
    assert f["ash.top_event"] == "log file sync"


ASH_SAMPLES = """SAMPLE_TIME  SESSION_ID SQL_ID        SESSION EVENT                     IN_PARSE IN_HARD_PARSE
------------ ---------- ------------- ------- ------------------------- -------- -------------
10:00:01             31 4z8qkq0s2cx1n WAITING enq: TX - row lock conten N        N
10:00:02             31 4z8qkq0s2cx1n WAITING enq: TX - row lock conten N        N
10:00:03             52 9p1x0s2cx1nzq ON CPU                            Y        Y
"""


def test_v_ash_samples_one_second_each_and_flags():
    f = vblock(ASH_SAMPLES).facts
    assert f["ash.dba_hist"] == 0
    assert f["ash.state_seconds"] == {"WAITING": 2, "ON CPU": 1}
    assert f["ash.seconds"]["ON CPU"] == 1
    assert f["ash.flag_seconds"] == {"IN_PARSE": 1, "IN_HARD_PARSE": 1}
    assert f["ash.total_s"] == 3


def test_sess_time_model_in_microseconds():
    text = """STAT_NAME                                                             VALUE
---------------------------------------------------------------- ----------
DB time                                                            91234000
DB CPU                                                             40500000
parse time elapsed                                                  1200000
"""
    f = vblock(text).facts
    assert f["time_model.s"]["DB time"] == 91.234
    assert f["time_model.s"]["parse time elapsed"] == 1.2


def test_wait_totals_are_left_to_the_waits_parser():
    text = """EVENT                          TOTAL_WAITS TIME_WAITED_MICRO
------------------------------ ----------- -----------------
log file sync                         1200          36000000
"""
    formats = [b.format for b in parse_text(text).blocks]
    assert formats == ["waits"]
    assert VdollarParser.start_score(text.splitlines()[0]) == 0


def test_no_rows_selected_and_padded_lines():
    padded = [line.ljust(3001) for line in VLOCK.splitlines()]
    text = "\n".join(padded) + "\n\nno rows selected\n"
    f = vblock(text).facts
    assert f["lock.waiters"]["TX"] == 2


def test_prose_is_not_a_heading():
    assert VdollarParser.start_score("The SID was 152 and the EVENT was a lock") == 0
    assert VdollarParser.start_score("SID EVENT STATE") == 2


SESSION_EVENT_BY_USER = """SQL> select s.username, e.sid, e.event, e.total_waits, e.time_waited, e.average_wait
  2  from v$session_event e join v$session s using (sid);

USERNAME          SID EVENT                                    TOTAL_WAITS TIME_WAITED AVERAGE_WAIT
---------- ---------- ---------------------------------------- ----------- ----------- ------------
APP               131 log file sync                                  12044       30110          2.5
APP               131 db file sequential read                         8812        4405          .5
BATCH             207 log file sync                                   2210        9940          4.5
BATCH             207 SQL*Net message from client                     9000      880000        97.78

4 rows selected.
"""


def test_session_event_grouped_by_user_and_sid_sums_per_event_in_centiseconds():
    (block,) = [b for b in parse_text(SESSION_EVENT_BY_USER).blocks if b.format == "waits"]
    assert_facts_valid(block)
    f = block.facts
    assert f["event.count"]["log file sync"] == 12044 + 2210
    assert f["event.waited_s"]["log file sync"] == 400.5  # (30110 + 9940) cs
    assert f["event.waited_s"]["db file sequential read"] == 44.05
    assert "SQL*Net message from client" not in f["event.pct_of_waited"]
    assert f["waits.top_event"] == "log file sync"


def test_samples_ten_seconds_apart_are_dba_hist_samples():
    text = """SAMPLE_TIME               SESSION_ID SESSION EVENT
------------------------- ---------- ------- ------------------------------
03-NOV-26 10.00.04.117 AM         31 WAITING log file sync
03-NOV-26 10.00.14.121 AM         31 WAITING log file sync
03-NOV-26 10.00.24.125 AM         31 ON CPU
"""
    f = vblock(text).facts
    assert f["ash.dba_hist"] == 1
    assert f["ash.seconds"] == {"log file sync": 20, "ON CPU": 10}
    assert f["ash.samples"]["log file sync"] == 2


ASHTOP = """SQL> @ashtop session_state,event 1=1 sysdate-1/24 sysdate

    Total
  Seconds     AAS %This   SESSION EVENT                                    FIRST_SEEN
--------- ------- ------- ------- ---------------------------------------- -------------------
     2087     0.6   58% | ON CPU                                           2026-11-03 10:00:01
      911     0.3   25% | WAITING log file sync                            2026-11-03 10:00:04
      602     0.2   17% | WAITING db file sequential read                  2026-11-03 10:00:02

3 rows selected.
"""


def test_ashtop_output_with_capitalised_headings():
    f = vblock(ASHTOP).facts
    assert f["ash.seconds"] == {
        "ON CPU": 2087,
        "log file sync": 911,
        "db file sequential read": 602,
    }
    assert f["ash.state_seconds"]["WAITING"] == 1513
    assert f["ash.top_event"] == "ON CPU"


def test_a_cut_heading_names_the_first_known_column_it_begins():
    """vdollar._canon reads cuts from a prefix table; the rule it stands for, written out:
    the name itself, or (4 characters or more, not a column matched whole only) the first
    name in KNOWN's order that begins with the token, whatever its case."""
    from ingest.parsers.vdollar import EXACT_ONLY, KNOWN, _canon

    def rule(token: str) -> str | None:
        t = token.upper()
        if t in KNOWN:
            return t
        if len(t) >= 4:
            hits = [k for k in KNOWN if k.startswith(t) and k not in EXACT_ONLY]
            return hits[0] if hits else None
        return None

    tokens = {name[:end] for name in KNOWN for end in range(1, len(name) + 1)}
    tokens |= {t.lower() for t in tokens} | {t + "X" for t in tokens}
    tokens |= {"", "Seconds", "%This", "Event", "Waits", "DB/Inst:", "sql_id", "ELAPSED_TIME_"}
    assert [_canon(t) for t in sorted(tokens)] == [rule(t) for t in sorted(tokens)]
    assert _canon("SESSION") == "SESSION_STATE"  # a 7-wide column cuts SESSION_STATE first
    assert _canon("sess") is not None and _canon("SES") is None
