"""prstat parser: -mL microstates over several screens, plain prstat with a zone summary, Total:
lines, malformed rows, random input."""

from __future__ import annotations

import pytest
from parser_helpers import (
    assert_rejected_without_trace,
    drive_parser,
    fixture_lines,
)

from ingest.detect import parse_text
from ingest.model import Block
from ingest.parsers.prstat import PrstatParser


def run(lines: list[str]) -> tuple[Block, list[int]]:
    return drive_parser(PrstatParser(), lines, numbered=True)


def test_microstates_over_two_screens():
    block, rejected = run(fixture_lines("os/prstat_mL_screens.txt"))
    f = block.facts
    assert rejected == [] and block.malformed_lines == 0 and block.platform == "solaris"
    assert f["proc.lck_pct"]["oracle/1"] == 68  # the busiest `oracle/1` of the two pids
    assert f["proc.top_lck"] == "oracle/1 (12077/1)" and f["proc.max_lck_pct"] == 68
    assert f["proc.top_lat"] == "oracle/1 (12011/1)" and f["proc.max_lat_pct"] == 9.45
    assert f["proc.top_cpu"] == "oracle/1 (12011/1)" and f["proc.max_cpu_pct"] == 90.5
    assert f["runq.ldavg_1_max"] == 18.9 and f["runq.ldavg_1_last"] == 18.9
    assert block.details["screens"] == 2
    rows = {r["pid"]: r for r in block.details["processes"]}
    assert rows["12011/1"]["scl"] == 49000  # `50K` and `48K`
    assert block.details["total"] == {"processes": 182, "lwps": 1212}


def test_plain_prstat_with_zone_summary():
    block, rejected = run(fixture_lines("os/prstat_plain_Z.txt"))
    f = block.facts
    assert rejected == [] and block.malformed_lines == 0
    assert f["proc.cpu_pct"] == {"oracle": 12, "nscd": 0.1}
    assert f["proc.rss_kb"]["oracle"] == 11 * 1024 * 1024
    assert f["proc.top_cpu"] == "oracle (2291)" and f["proc.count"] == 3
    assert "proc.lck_pct" not in f
    assert f["runq.ldavg_1_last"] == 3.1


def test_detected_after_a_prompt_in_prose():
    text = "\n".join(
        [
            "prstat shows it:",
            "bash-3.2$ prstat -mLc 5 2",
            *fixture_lines("os/prstat_mL_screens.txt"),
        ]
    )
    evidence = parse_text(text)
    assert [b.format for b in evidence.blocks] == ["prstat"]
    assert evidence.blocks[0].platform == "solaris"


def test_malformed_rows_are_counted():
    lines = fixture_lines("os/prstat_mL_screens.txt")[:2] + [
        " 12012 oracle    62  30 0.1",
        " 12013 oracle    62  30 0.1 0.0 0.0 0.0 0.0 7.9  10 900 5Q   0 oracle/1",
        " 12014 oracle   162  30 0.1 0.0 0.0 0.0 0.0 7.9  10 900 50   0 oracle/1",
    ]
    block, rejected = run(lines)
    assert rejected == [] and block.malformed_lines == 3
    assert block.facts["proc.count"] == 1


def test_rejected_lines_leave_the_parser_unchanged():
    p = PrstatParser()
    for line in fixture_lines("os/prstat_mL_screens.txt")[:3]:
        p.feed(line)
    assert_rejected_without_trace(
        p,
        [
            "",
            "then I ran pstack",
            "26330:  /usr/bin/java",
            "CPU minf mjf xcal  intr ithr  csw icsw migr smtx  srw syscl  usr sys  wt idl",
        ],
    )


@pytest.mark.parametrize(
    ("line", "score"),
    [
        ("   PID USERNAME USR SYS TRP TFL DFL LCK SLP LAT VCX ICX SCL SIG PROCESS/LWPID", 2),
        ("   PID USERNAME  SIZE   RSS STATE  PRI NICE      TIME  CPU PROCESS/NLWP", 2),
        ("$ prstat -Lm", 2),
        ("PID PROCESS/LWPID", 0),
        ("prstat said the java process was busy", 0),
    ],
)
def test_start_score(line, score):
    assert PrstatParser.start_score(line) == score


def test_user_summary_of_prstat_a_is_not_read_as_processes():
    # invented numbers in the `prstat -a` layout: the per-user summary under the processes
    lines = fixture_lines("os/prstat_plain_Z.txt")[:4] + [
        " NPROC USERNAME  SWAP   RSS MEMORY      TIME  CPU",
        "   140 oracle     40G   38G    60%  90:12:01  13%",
        "    60 root      900M  600M   0.9%   1:02:11 0.1%",
        "Total: 200 processes, 2100 lwps, load averages: 3.10, 3.00, 2.95",
    ]
    block, rejected = run(lines)
    assert rejected == [] and block.malformed_lines == 0
    assert block.facts["proc.count"] == 3 and "root" not in block.facts["proc.cpu_pct"]
