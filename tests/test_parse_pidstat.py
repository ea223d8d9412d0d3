"""pidstat parser: -u with %wait, -w -t threads, -h -r -d on one line, Average rows, old layouts,
malformed rows, random input."""

from __future__ import annotations

import pytest
from parser_helpers import (
    assert_rejected_without_trace,
    drive_parser,
    fixture_lines,
)

from ingest.detect import parse_text
from ingest.model import Block
from ingest.parsers.pidstat import PidstatParser


def run(lines: list[str]) -> tuple[Block, list[int]]:
    return drive_parser(PidstatParser(), lines, numbered=True)


def nonblank_rejected(lines: list[str]) -> list[str]:
    _, rejected = run(lines)
    return [lines[n - 1] for n in rejected if lines[n - 1].strip()]


def test_cpu_and_wait_per_process():
    lines = fixture_lines("os/pidstat_u_wait_12h.txt")
    block, _ = run(lines)
    f = block.facts
    assert nonblank_rejected(lines) == [] and block.malformed_lines == 0
    assert block.platform == "linux" and f["cpu.count"] == 4
    assert f["proc.cpu_pct"]["oracle_8812_orcl"] == 97.5
    assert f["proc.wait_pct"]["oracle_8815_orcl"] == 29
    assert f["proc.sys_pct"]["oracle_8815_orcl"] == 19
    assert f["proc.top_cpu"] == "oracle_8812_orcl (8812)" and f["proc.max_cpu_pct"] == 97.5
    assert f["proc.top_wait"] == "oracle_8812_orcl (8812)" and f["proc.max_wait_pct"] == 37.5
    assert f["proc.samples"] == 2 and f["proc.count"] == 4
    # timed rows are used; the Average rows are pidstat's own and agree
    assert f["proc.cpu_pct"]["sssd_nss"] == 0.4


def test_threads_and_context_switches():
    lines = fixture_lines("os/pidstat_t_w_threads.txt")
    block, _ = run(lines)
    f = block.facts
    assert nonblank_rejected(lines) == [] and block.malformed_lines == 0
    cs = f["proc.cswch_per_s"]
    assert cs["GC Thread#0/4433"] == 9100 and cs["java"] == 12
    assert f["proc.nvcswch_per_s"]["C2 CompilerThre/4434"] == 2500
    assert f["proc.top_cs"] == "C2 CompilerThre/4434 (4434)"
    assert f["proc.max_nvcswch_per_s"] == 2500


def test_h_layout_memory_and_io_on_one_line():
    lines = fixture_lines("os/pidstat_h_r_d.txt")
    block, _ = run(lines)
    f = block.facts
    assert nonblank_rejected(lines) == [] and block.malformed_lines == 0
    assert f["proc.kb_rd_per_s"]["postgres"] == 13500  # the busier of the two postgres
    assert f["proc.majflt_per_s"]["postgres"] == 36
    assert f["proc.rss_kb"]["postgres"] == 3125000
    assert f["proc.iodelay"]["postgres"] == 52.5
    assert f["proc.top_io"] == "postgres (2300)" and f["proc.max_io_kb_per_s"] == 14350
    assert f["proc.samples"] == 2


def test_old_layout_without_uid_and_average_only():
    lines = [
        "Average:       PID   %user %system    %CPU   CPU  Command",
        "Average:      4410   20,00   10,00   30,00     -  java",
        "Average:      4411    1,00    1,00    2,00     -  sshd",
    ]
    block, rejected = run(lines)
    assert rejected == []
    assert block.facts["proc.cpu_pct"] == {"java": 30, "sshd": 2}
    assert any("Average" in n for n in block.details["notes"])


def test_banner_goes_with_the_table_in_a_paste():
    text = "\n".join(["[root@h ~]# pidstat -u 5 2", *fixture_lines("os/pidstat_u_wait_12h.txt")])
    evidence = parse_text(text)
    assert [b.format for b in evidence.blocks] == ["pidstat"]
    assert evidence.blocks[0].facts["cpu.count"] == 4


def test_malformed_rows_are_counted():
    lines = fixture_lines("os/pidstat_u_wait_12h.txt")[2:4] + [
        "02:10:06 PM    54321      8812   88.00",
        "02:10:06 PM    54321      88x2   88.00    9.00    0.00   35.00   97.00     1  oracle",
        "02:10:06 PM    54321      8812   8y.00    9.00    0.00   35.00   97.00     1  oracle",
    ]
    block, rejected = run(lines)
    assert rejected == [] and block.malformed_lines == 3
    assert block.facts["proc.count"] == 1


def test_rejected_lines_leave_the_parser_unchanged():
    p = PidstatParser()
    for line in fixture_lines("os/pidstat_u_wait_12h.txt")[:4]:
        p.feed(line)
    assert_rejected_without_trace(
        p,
        [
            "",
            "this is prose",
            "Linux 5.4.17 (oradb1)  11/24/2026  _x86_64_  (4 CPU)",
            "   PID USERNAME USR SYS TRP TFL DFL LCK SLP LAT VCX ICX SCL SIG PROCESS/LWPID",
        ],
    )


@pytest.mark.parametrize(
    ("line", "score"),
    [
        ("02:10:01 PM   UID       PID    %usr %system  %guest   %wait    %CPU   CPU  Command", 2),
        ("16:20:01      UID      TGID       TID   cswch/s nvcswch/s  Command", 2),
        ("#      Time   UID       PID  kB_rd/s   kB_wr/s kB_ccwr/s iodelay  Command", 2),
        ("$ pidstat -d 2 10", 2),
        ("PID Command", 0),
        ("UID PID USER Command", 0),
    ],
)
def test_start_score(line, score):
    assert PidstatParser.start_score(line) == score
