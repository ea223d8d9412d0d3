"""Oracle stacks and traces other than 10046: oradebug short_stack samples (the dump's own frames
dropped, the frames that stay put across samples), an incident call stack table, hanganalyze
chains with an on-CPU root blocker, and LGWR slow-write warnings. Fixtures are my own."""

from __future__ import annotations

import pytest

from ingest.detect import parse_text
from ingest.parsers.hanganalyze import duration_s
from ingest.parsers.lgwr import LgwrTraceParser
from tests.parser_helpers import (
    assert_facts_valid,
    drive_parser,
    fixture_lines,
)

SHORT = fixture_lines("oracle/short_stack_samples.txt")
INCIDENT = fixture_lines("oracle/incident_call_stack.trc")
HANG = fixture_lines("oracle/hanganalyze_cpu_blocker.trc")


def _only(lines, fmt):
    blocks = [b for b in parse_text("\n".join(lines) + "\n").blocks if b.format == fmt]
    assert len(blocks) == 1, [b.format for b in parse_text("\n".join(lines)).blocks]
    assert_facts_valid(blocks[0])
    return blocks[0]


def test_short_stack_samples_drop_the_dumper_and_keep_stable_frames():
    b = _only(SHORT, "stack")
    f = b.facts
    assert f["stack.samples"] == 3 and f["stack.stacks"] == 3
    assert "ksedsts" not in f["frame.count"] and "__sighandler" not in f["frame.count"]
    assert f["frame.top"] == {"kcbgtcr": 2.0, "kslgetl": 1.0}
    # every frame from kcbgtcr down to main is in all three samples; kslgetl is not
    assert f["stack.stable_frames"] == 12
    assert "kslgetl" not in b.details["stable_frames"]
    assert f["layer.count"]["kcb"] == 3


def test_incident_call_stack_table():
    f = _only(INCIDENT, "stack").facts
    assert f["stack.stacks"] == 1 and f["stack.frames"] == 10
    assert f["frame.count"]["qertbFetchByRowID"] == 1 and "kgeasnmierr" in f["frame.count"]
    assert f["layer.count"]["kge"] >= 1


def test_hanganalyze_root_blocker_on_cpu():
    f = _only(HANG, "hanganalyze").facts
    assert f["hang.blocker_sid"] == 400 and f["hang.blocker_ospid"] == 1003
    assert f["hang.blocker_event"] == "not in wait"
    assert f["hang.blocking_sessions"] == 2
    assert f["hang.waiters"] == 2
    assert f["hang.max_waiter_wait_s"] == 725
    assert f["hang.waiter_event"] == "cursor: pin S wait on X"


def test_hanganalyze_superscript_session_id_does_not_raise():
    # "²" passes str.isdigit() but int() refuses it: the parser raised on such a field
    lines = [line.replace("session id: 200", "session id: 2\u00b2") for line in HANG]
    assert lines != HANG
    f = _only(lines, "hanganalyze").facts
    assert f["hang.blocker_sid"] == 400 and f["hang.waiters"] == 2


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("1 min 29 sec", 89), ("0.000218 sec", 0.000218), ("2 hours 3 min", 7380), ("5 ms", 0.005)],
)
def test_hanganalyze_durations(text, seconds):
    assert duration_s(text) == pytest.approx(seconds)


def test_lgwr_warnings_broadcasts_switches_and_stamps():
    lines = [
        "*** 2024-01-02 03:04:05.678",
        "Warning: log write elapsed time 2500ms, size 4KB",
        "*** 2024-01-02 03:04:09.000",
        "Warning: log write elapsed time 600ms, size 2048KB",
        "Warning: log write broadcast wait time 1200ms (SCN 0x0.1234)",
        "kcrfw_update_adaptive_sync_mode: post->poll long#=2 sync#=13 sync=90 poll=3262 rw=0",
        "Log file sync switching to polling",
    ]
    block, rejected = drive_parser(LgwrTraceParser(), lines)
    assert rejected == []
    f = block.facts
    assert f["lgwr.slow_writes"] == 2 and f["lgwr.broadcast_waits"] == 1
    assert f["lgwr.sync_mode_switches"] == 2
    assert f["lgwr.max_write_ms"] == 2500 and f["lgwr.avg_write_ms"] == 1550
    assert f["lgwr.max_write_kb"] == 2048
    assert f["lgwr.ms_per_mb"] == pytest.approx(3100 / (2052 / 1024))


def test_hanganalyze_10g_open_chains():
    f = _only(fixture_lines("oracle/hanganalyze_10g_open_chains.trc"), "hanganalyze").facts
    assert f["hang.chains"] == 2
    assert f["hang.blocker_sid"] == 135 and f["hang.blocker_ospid"] == 24190
    assert f["hang.blocker_event"] == "SQL*Net message from client"
    assert f["hang.waiters"] == 1
    assert f["hang.waiter_event"] == "enq: TX - row lock contention"
    assert f["hang.event_count"]["db file sequential read"] == 1


def test_repeated_pstacks_of_one_process_keep_the_frames_that_stay_put():
    b = _only(fixture_lines("os/pstack_linux_three_samples.txt"), "stack")
    f = b.facts
    assert f["stack.stacks"] == 3
    # the first `31337:` line comes before the block opens (a `pid: command` line never opens
    # one), so two samples carry the pid's label; kslgetl is in one of them only
    assert f["stack.samples"] == 2
    assert f["stack.stable_frames"] == 7  # kcbgtcr .. main
    assert "kslgetl" not in b.details["stable_frames"]
    assert b.details["stable_frames_of"].startswith("pid 31337")


def test_short_call_stack_trace_section_of_an_incident_file():
    lines = [
        "----- Short Call Stack Trace -----",
        "ksedsts()+426<-ksdxfstk()+58<-ksdxcb()+872<-sspuser()+200<-__sighandler()<-"
        "semtimedop()+10<-skgpwwait()+187<-ksliwat()+2233<-kslwaitctx()+200<-kjusuc()+5827<-"
        "ksipgetctxia()+1968<-ksixpgetctx()+6<-kqlmLock()+1009<-kglLock()+1448<-opiexe()+3221<-"
        "opiodr()+1202<-ttcpip()+1222<-opitsk()+1900<-opiino()+936<-main()+201",
    ]
    b = _only(lines, "stack")
    f = b.facts
    assert f["frame.top"] == {"skgpwwait": 1.0}  # semtimedop is the syscall wrapper
    assert "ksedsts" not in f["frame.count"] and f["layer.count"]["kgl"] == 1


def test_a_short_stack_line_is_malformed_once_however_many_parts_are_unreadable():
    """malformed_lines counts lines (the parser contract: never more than the block's lines); a
    short_stack sample with two unreadable parts is one malformed line. Found by the contract's
    random input (two damaged parts in one sample counted 2 for 1 line)."""
    from ingest.parsers.stack import StackParser

    parser = StackParser()
    assert parser.feed("ksedsts()+244<-ksdxfstk()+32<-x y<-z w<-opitsk()+1673<-ksdxcb()+1")
    block = parser.finish(1, 1)
    assert block.malformed_lines == 1
    assert "opitsk" in str(block.facts)
