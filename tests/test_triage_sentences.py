"""The describers' threshold remarks are data (kb/rules/triage.yaml `sentences`): each follows the
describer it names, only when that describer read the block, holds at its threshold and not
below it, and is left out when a placeholder cannot be filled. Same-shape prose builders in
kb/triage.py share one helper."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from ingest.model import Block
from kb.triage import SentenceRule, describe, load_rules


def tkprof(**facts: float) -> Block:
    return Block(format="tkprof", start_line=1, end_line=1, facts=facts)


def test_the_file_has_sentences_for_the_describers_they_follow() -> None:
    follows = {s.follows for s in load_rules().sentences}
    assert {"tkprof", "trace10046"} <= follows


def test_a_sentence_follows_its_describer_at_its_threshold_and_not_below() -> None:
    base = {"tkprof.elapsed_s": 20.0, "tkprof.cpu_s": 2.0, "tkprof.waited_s": 16.0}
    at = describe(tkprof(**base, **{"tkprof.unaccounted_s": 2.0, "tkprof.unaccounted_pct": 10.0}))
    assert at[0].startswith("The traced 0 statements took 20 s")  # the describer's own first
    assert at[1] == (
        "2 s (10 %) is unaccounted for: neither CPU nor a measured wait (run queue, paging or "
        "uninstrumented code)."
    )
    below = describe(tkprof(**base, **{"tkprof.unaccounted_s": 1.9, "tkprof.unaccounted_pct": 9.9}))
    assert not any("unaccounted for" in s for s in below)


def test_a_sentence_needs_its_describer_to_have_read_the_block() -> None:
    small = {"tkprof.fetch_count": 5000.0, "tkprof.rows_per_fetch": 1.0}
    said = describe(tkprof(**{"tkprof.elapsed_s": 3.0}, **small))
    assert "5,000 fetches brought 1 rows each: the client fetches in small arrays." in said
    # without elapsed time the tkprof describer says nothing, so neither do its sentences
    assert not any("fetches brought" in s for s in describe(tkprof(**small)))


def test_a_sentence_with_a_hole_is_left_out() -> None:
    # unaccounted_pct holds, but the seconds it names are missing
    said = describe(tkprof(**{"tkprof.elapsed_s": 3.0, "tkprof.unaccounted_pct": 50.0}))
    assert not any("unaccounted for" in s for s in said)


def test_the_slowest_wait_of_a_10046_trace_is_quoted_as_text() -> None:
    block = Block(
        format="trace10046",
        start_line=1,
        end_line=1,
        facts={
            "trace10046.response_s": 4.0,
            "trace10046.max_wait_ms": 812.0,
            "trace10046.max_wait_event": "db file {x} <b>read</b>",
        },
    )
    said = describe(block)
    assert said[-1] == "The slowest single wait was 'db file {x} <b>read</b>' at 812 ms."


def test_a_sentence_must_follow_a_describer_and_say_something() -> None:
    ok = {
        "name": "x",
        "follows": "tkprof",
        "sources": ["tkprof"],
        "finding": "{tkprof.elapsed_s} in all.",
    }
    assert SentenceRule.model_validate(ok).follows == "tkprof"
    for bad in ({**ok, "follows": "vmstat-ish"}, {**ok, "finding": ""}, {**ok, "colour": 1}):
        with pytest.raises(ValidationError):
            SentenceRule.model_validate(bad)


def test_sessions_waiting_and_requesting_locks_read_alike() -> None:
    block = Block(
        format="vdollar",
        start_line=1,
        end_line=1,
        facts={
            "lock.waiters": {"TX": 1.0},
            "lock.ctime_max_s": {"TX": 95.0},
            "session.count": {
                "SQL*Net message from client": 40.0,
                "enq: TX - row lock contention": 3.0,
            },
        },
    )
    said = describe(block)
    assert (
        "1 session requests a TX lock, the longest for 95 s: someone holds it and has not "
        "committed or rolled back." in said
    )
    # the idle event has more sessions but is passed over; no longest time: no clause
    assert "3 sessions wait on 'enq: TX - row lock contention'." in said


def test_cpu_remarks_follow_the_split_and_name_the_hot_cpu() -> None:
    facts = {
        "cpu.usr_pct": 40.0,
        "cpu.sys_pct": 55.0,
        "cpu.idle_pct": 5.0,
        "cpu.count": 4.0,
        "cpu.max_sys_pct": 92.0,
        "cpu.sys_skew": 60.0,
        "cpu.sys": {"0": 32.0, "3": 92.0},
    }
    said = describe(Block(format="mpstat", start_line=1, end_line=1, facts=facts))
    assert said[:3] == [
        "Across 4 CPUs the time splits 40 % user, 55 % system, 5 % idle.",
        "The CPUs are saturated: work waits for a CPU.",
        "CPU 3 reaches 92 % system time while others stay lower: a hot spot, often interrupts "
        "or one busy kernel thread.",
    ]
    calm = {**facts, "cpu.idle_pct": 85.0, "cpu.sys_skew": 29.0}
    said = describe(Block(format="mpstat", start_line=1, end_line=1, facts=calm))
    assert "The CPUs are mostly idle: CPU is not the bottleneck here." in said
    assert not any("hot spot" in s for s in said)
