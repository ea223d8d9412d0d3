"""Done-when test of issue #14 items 1-2: the real AWR / Statspack reports (text and HTML), v$
query output and ASH output of the development corpus (snippets 01-14) are detected as their
format, and the numbers a DBA reads off each are in the facts.

The expected values were read off the snippets themselves (labels.yaml holds one reader's notes
of the same numbers). The corpus sits beside the repository (`../shared/corpus`); the test fails,
not skips, when it is missing.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from parser_helpers import assert_facts_valid

from ingest.detect import parse_stream, parse_text
from ingest.model import Block

CORPUS = Path(__file__).resolve().parents[1].parent / "shared" / "corpus"
SNIPPETS = CORPUS / "snippets"


def _path(prefix: str) -> Path:
    assert SNIPPETS.is_dir(), f"the corpus is missing: {SNIPPETS}"
    (path,) = SNIPPETS.glob(f"{prefix}_*")
    return path


def blocks(prefix: str, fmt: str) -> list[Block]:
    found = [b for b in parse_text(_path(prefix).read_text(errors="replace")).blocks]
    assert found, prefix
    mine = [b for b in found if b.format == fmt]
    assert mine, f"{prefix}: no {fmt} block in {[b.format for b in found]}"
    for b in mine:
        assert_facts_valid(b)
    return mine


def facts(prefix: str, fmt: str) -> dict:
    """The facts of all the snippet's blocks of the format (keyed tables merged)."""
    out: dict = {}
    for b in blocks(prefix, fmt):
        for k, v in b.facts.items():
            if isinstance(v, dict):
                out.setdefault(k, {}).update(v)
            else:
                out.setdefault(k, v)
    return out


def approx(x: float, rel: float = 1e-3):
    return pytest.approx(x, rel=rel)


def test_no_snippet_01_to_14_is_unknown():
    for i in range(1, 15):
        parsed = parse_text(_path(f"{i:02d}").read_text(errors="replace"))
        formats = {b.format for b in parsed.blocks}
        assert formats & {"waits", "vdollar"}, (i, formats)
        assert "unknown" not in formats, (i, formats)


def test_01_awr_19c_pdb_spool_tx_row_lock():
    f = facts("01", "waits")
    assert len(blocks("01", "waits")) == 1  # the SQL*Plus page breaks do not split the report
    assert f["report.kind"] == "awr"
    assert f["report.release"] == "19.0.0.0.0"
    assert f["report.db_name"] == "RACDB"
    assert f["report.cpus"] == 2
    assert f["report.elapsed_s"] == approx(3600)
    assert f["report.db_time_s"] == approx(53.4)
    e = "enq: TX - row lock contention"
    assert f["event.count"][e] == 1
    assert f["event.avg_ms"][e] == approx(52860)
    assert f["event.pct_of_db_time"][e] == 98.9
    assert f["event.pct_of_db_time"]["DB CPU"] == 0.8
    assert f["waits.top_event"] == e
    assert f["load.per_s"]["executes"] == 0.6
    assert f["time_model.s"]["sql execute elapsed time"] == 53.2
    assert f["wait_class.pct_of_db_time"]["Application"] == 98.9
    # the Begin Snap row is the header, never an event
    assert not any("Snap" in k for k in f["event.count"])


def test_02_awr_11201_io_bound():
    f = facts("02", "waits")
    assert f["report.db_name"] == "ORCL"
    assert f["report.release"] == "11.2.0.1.0"
    assert f["report.elapsed_s"] == approx(6.03 * 60)
    assert f["report.db_time_s"] == approx(141.41 * 60)
    assert f["load.per_s"]["db time"] == 23.5
    assert f["load.per_s"]["db cpu"] == 0.1
    d = "db file sequential read"
    assert f["event.count"][d] == 35732
    assert f["event.avg_ms"][d] == 184
    assert f["event.pct_of_db_time"][d] == 77.5
    assert f["event.count"]["log file sync"] == 3825
    assert f["event.avg_ms"]["log file sync"] == approx(391, rel=0.01)
    assert f["event.pct_of_db_time"]["log file sync"] == 17.6
    assert f["event.avg_ms"]["log file parallel write"] == 37  # LGWR's, from the background table
    assert f["bg_event.avg_ms"]["log file parallel write"] == 37
    assert f["wait_class.pct_of_db_time"]["User I/O"] == 80.6
    # idle waits are listed but in no share: PL/SQL lock timer's 6,140 s is no 'top event'
    assert f["event.waited_s"]["PL/SQL lock timer"] == 6140
    assert "PL/SQL lock timer" not in f["event.pct_of_waited"]
    assert "rdbms ipc message" not in f["event.pct_of_waited"]
    assert f["waits.top_event"] not in ("PL/SQL lock timer", "rdbms ipc message")
    assert f["efficiency.pct"]["soft parse"] == 98.16


def test_03_awr_12c_oda_load_profile_and_top10():
    f = facts("03", "waits")
    assert f["load.per_s"]["db time"] == 9.5
    assert f["load.per_s"]["db cpu"] == 6.7
    assert f["load.per_s"]["redo size"] == 28_534_906.0
    assert f["load.per_s"]["transactions"] == 5052.9
    assert f["event.count"]["log file sync"] == 3_472_568
    assert f["event.avg_ms"]["log file sync"] == approx(1.0)
    assert f["event.pct_of_db_time"]["log file sync"] == 27.3
    assert f["event.pct_of_db_time"]["DB CPU"] == 71.1
    assert f["event.avg_ms"]["enq: HW - contention"] == approx(61.55)
    # the Wait Event Histogram's rows are not events
    assert not any(k.startswith("log file switch (private") for k in f["event.count"])


def test_04_awr_exadata_two_top10_tables_are_two_blocks():
    bare, virtual = (b.facts for b in blocks("04", "waits"))
    assert bare["load.per_s"]["db time"] == 42.9
    assert bare["load.per_s"]["redo size"] == 58_364_739.1
    c, fb = "cell single block physical read", "free buffer waits"
    assert bare["event.count"] == {c: 9_272_548, fb: 152_043}
    assert bare["event.avg_ms"][c] == 0.45
    assert bare["event.pct_of_db_time"] == {c: 69.3, fb: 25.1, "DB CPU": 13.1}
    assert virtual["event.avg_ms"][c] == 0.51
    assert virtual["event.pct_of_db_time"][fb] == 30.6
    assert not any("Requests" in k or "(MB)" in k for k in bare["event.count"])  # IO Profile


def test_05_awr_top10_section_alone():
    f = facts("05", "waits")
    e = "direct path write temp"
    assert f["event.count"][e] == 7146
    assert f["event.waited_s"][e] == approx(8.1)
    assert f["event.avg_ms"][e] == approx(1.14)
    assert f["event.pct_of_db_time"][e] == 67.3
    assert f["event.cpu_s"] == approx(4.6)
    assert f["event.avg_ms"]["enq: KO - fast object checkpoint"] == approx(228.12)


def test_06_statspack_top5_and_statistics():
    f = facts("06", "waits")
    d = "db file sequential read"
    assert f["waits.top_event"] == d
    assert f["event.count"][d] == 9_896_083
    assert f["event.waited_s"][d] == 14_338
    assert f["event.avg_ms"][d] == 1
    assert f["event.pct_of_db_time"][d] == 32.8
    assert f["stat.value"]["physical reads for flashback new"] == 1_196_359
    assert f["stat.value"]["undo change vector size"] == 7_100_240_724
    assert f["stat.value"]["flashback log write bytes"] == 16_034_947_072
    assert f["stat.value"]["flashback log writes"] == 45_350


def test_07_statspack_time_model_and_sql_by_parse_calls():
    f = facts("07", "waits")
    assert f["time_model.s"]["DB CPU"] == 3254.3
    assert f["time_model.pct_of_db_time"]["DB CPU"] == 101.2
    assert f["time_model.s"]["parse time elapsed"] == 2155.6
    assert f["time_model.pct_of_db_time"]["parse time elapsed"] == 67.1
    assert f["time_model.s"]["hard parse elapsed time"] == 2029.8
    assert f["time_model.pct_of_db_time"]["hard parse elapsed time"] == 63.1
    assert f["sql.parse_calls"]["3360804353"] == 4_094_739
    assert f["sql.executions"]["3360804353"] == 4_094_712
    assert "event.count" not in f  # a time model is not a table of waits


def test_08_statspack_se2_resmgr_header_not_events():
    f = facts("08", "waits")
    assert f["report.elapsed_s"] == approx(6.47 * 60)
    assert f["report.db_time_s"] == approx(126.27 * 60)
    assert f["report.db_cpu_s"] == approx(24.10 * 60)
    assert f["report.aas"] == 19.5
    assert f["load.per_s"]["db time"] == 19.5
    assert f["load.per_s"]["db cpu"] == 3.7
    r = "resmgr:cpu quantum"
    assert f["event.count"][r] == 14_987
    assert f["event.waited_s"][r] == 6114
    assert f["event.avg_ms"][r] == 408
    assert f["event.pct_of_db_time"][r] == 99.7
    assert set(f["event.count"]) == {
        r,
        "db file sequential read",
        "log file sync",
        "Disk file operations I/O",
    }


def test_09_awr_html_report():
    f = facts("09", "waits")
    assert f["report.kind"] == "awr"
    assert f["report.platform"] == "Solaris[tm] OE (64-bit)"
    assert f["report.cpus"] == 176
    assert f["report.elapsed_s"] == approx(60.36 * 60)
    assert f["report.db_time_s"] == approx(2335.14 * 60)
    assert f["event.pct_of_db_time"]["DB CPU"] == 78.9
    assert f["event.count"]["log file sync"] == 751_267
    assert f["event.avg_ms"]["log file sync"] == approx(14, rel=0.05)
    assert f["event.pct_of_db_time"]["log file sync"] == approx(7.6, rel=0.01)
    assert f["event.avg_ms"]["log file parallel write"] == approx(3, rel=0.2)
    assert f["event.avg_ms"]["latch: shared pool"] == approx(68, rel=0.02)
    assert f["load.per_s"]["transactions"] == 419.9
    assert f["waits.top_event"] == "log file sync"


def test_09_html_read_as_a_file_gives_the_same_facts():
    path = _path("09")
    with path.open("rb") as raw:
        streamed = [b for b in parse_stream(raw).blocks if b.format == "waits"]
    assert [b.facts for b in streamed] == [b.facts for b in blocks("09", "waits")]


def test_10_sqlplus_session_wait_and_vlock():
    f = facts("10", "vdollar")
    e = "enq: TX - row lock contention"
    assert f["session.seconds_in_wait_max"][e] == 81
    assert f["session.p1"][e] == 1_415_053_318
    assert f["lock.request_mode"]["TX"] == 6
    assert f["lock.held_mode"]["TM"] == 3
    assert f["lock.waiters"]["TX"] >= 1
    found = blocks("10", "vdollar")
    sessions = [s for b in found for s in b.details.get("sessions", [])]
    locks = [lk for b in found for lk in b.details.get("locks", [])]
    assert any(s.get("sid") == "152" and s.get("event") == e for s in sessions)
    assert any(s.get("sid") == "144" for s in sessions)
    assert any(lk.get("id1") == "393221" and lk.get("id2") == "6000" for lk in locks)


def test_11_system_event_microseconds():
    f = facts("11", "waits")
    e = "log file switch (checkpoint incomplete)"
    assert f["event.count"][e] == 166
    assert f["event.timeouts"][e] == 0
    assert f["event.waited_s"][e] == approx(196.362926)


def test_12_sess_time_model_and_session_event():
    tm = facts("12", "vdollar")
    assert tm["time_model.s"]["DB time"] == approx(165.08494)
    assert tm["time_model.s"]["DB CPU"] == approx(61.119)
    f = facts("12", "waits")
    d = "db file sequential read"
    assert f["event.count"][d] == 100_100
    assert f["event.waited_s"][d] == approx(104.060605)
    assert f["event.max_ms"][d] == approx(1010)  # MAX_WAIT 101 cs
    assert f["event.count"]["SQL*Net message from client"] == 32


def test_13_dash_waitchains():
    f = facts("13", "vdollar")
    assert f["ash.top_chain_s"] == 13880
    assert "(LGWR) >>log file parallel write" in f["ash.top_chain"]
    chains = f["ash.chain_seconds"]
    assert max(v for k, v in chains.items() if "(SMON) >>gc current block busy" in k) == 13770
    lms = [v for k, v in chains.items() if "gcs log flush sync" in k and "(LGWR)" in k]
    assert max(lms) == 3480
    tm = [v for k, v in chains.items() if "enq: TM - contention" in k and "8wjazjp71w35a" in k]
    assert max(tm) == 2720
    assert f["ash.seconds"]["log file parallel write"] >= 13880


def test_14_ash_on_cpu_in_cursor_close():
    f = facts("14", "vdollar")
    assert f["ash.flag_seconds"]["IN_CURSOR_CLOSE"] == 46
    assert f["ash.state_seconds"]["ON CPU"] == 48
    assert f["ash.sql_seconds"]["a6n6qc8g855q6"] == 2
    assert f["ash.top_event"] == "ON CPU"
    (block,) = blocks("14", "vdollar")
    assert block.details["last_sample"] == "20:48:29"
