"""vmstat parser: Linux procps (-S, -w, -t, -a), Solaris, AIX, OSWatcher archives; the since-boot
first sample; pasted prefixes; malformed rows; random input."""

from __future__ import annotations

import pytest
from parser_helpers import (
    assert_rejected_without_trace,
    drive_parser,
    fixture_lines,
)

from ingest.detect import parse_text
from ingest.model import Block
from ingest.parsers.vmstat import VmstatParser


def run(lines: list[str]) -> tuple[Block, list[int]]:
    return drive_parser(VmstatParser(), lines, numbered=True)


def test_linux_swapping_in_megabytes():
    block, rejected = run(fixture_lines("os/vmstat_linux_swapping_SM.txt"))
    f = block.facts
    assert rejected == [] and block.malformed_lines == 0
    assert block.format == "vmstat" and block.platform == "linux"
    # -S M on the command line: memory and swap columns are MiB, facts are KiB
    assert f["mem.free_kb_min"] == 141 * 1024
    assert f["swap.in_kbps_max"] == 530 * 1024 and f["swap.out_kbps_max"] == 700 * 1024
    assert f["swap.out_kbps_avg"] == pytest.approx((420 + 610 + 390 + 700 + 455) / 5 * 1024)
    assert f["mem.swap_used_kb_max"] == 3105 * 1024
    # the since-boot row (r 3, cs 3900) is not in the averages
    assert f["cpu.intervals"] == 5
    assert f["runq.avg"] == pytest.approx((14 + 17 + 12 + 19 + 15) / 5)
    assert f["runq.max"] == 19 and f["runq.blocked_max"] == 9
    assert f["sys.cs_per_s_max"] == 25600 and f["sys.intr_per_s_avg"] == pytest.approx(9370)
    assert f["cpu.wait_pct"] == pytest.approx((30 + 32 + 26 + 32 + 31) / 5)
    assert f["cpu.max_busy_pct"] == 100 and "os.since_boot" not in f
    assert block.details["since_boot"]["cs"] == 3900
    assert block.details["memory_unit_kb"] == 1024


def test_linux_wide_with_timestamps_and_repeated_header():
    block, rejected = run(fixture_lines("os/vmstat_linux_wide_t.txt"))
    f = block.facts
    assert rejected == [] and block.malformed_lines == 0
    assert "gu" in block.details["columns"]
    # the row after the repeated header is a real interval: three intervals counted
    assert f["cpu.intervals"] == 3
    assert f["cpu.idle_pct"] == pytest.approx((99 + 96 + 98) / 3, abs=0.001)
    assert block.details["span"] == ["2026-11-24 09:00:02", "2026-11-24 09:00:06"]
    assert f["mem.free_kb_min"] == 12870800


def test_solaris_scan_rate_and_disk_columns():
    block, rejected = run(fixture_lines("os/vmstat_solaris_memory_short.txt"))
    f = block.facts
    assert rejected == [] and block.platform == "solaris"
    cols = block.details["columns"]
    assert cols[cols.index("sr") + 1 : cols.index("in")] == [
        "disk:s0",
        "disk:s1",
        "disk:s2",
        "disk:s3",
    ]
    assert f["page.scan_rate_max"] == 120455
    assert f["page.scan_rate_avg"] == pytest.approx((98231 + 120455 + 101002) / 3)
    assert f["page.out_kbps_max"] == 5230 and f["mem.free_kb_min"] == 58320
    # `sy` under faults is system calls; `sy` under cpu is system CPU %
    assert f["sys.syscalls_per_s_max"] == 19500
    assert f["cpu.sys_pct"] == pytest.approx((41 + 47 + 44) / 3)
    assert "swap.in_kbps_max" not in f  # plain vmstat cannot tell swap-ins from file paging


def test_oswatcher_snapshots_each_drop_their_first_row():
    lines = fixture_lines("os/vmstat_oswatcher.txt")
    block, rejected = run(lines)
    f = block.facts
    assert rejected == [] and block.malformed_lines == 0
    assert f["cpu.intervals"] == 4  # two snapshots of three rows, minus two since-boot rows
    assert f["runq.avg"] == pytest.approx((30 + 28 + 26 + 24) / 4)
    assert f["sys.cs_per_s_max"] == 40000
    assert any("2 OSWatcher" in n for n in block.details["notes"])
    evidence = parse_text("\n".join(lines))
    assert [b.format for b in evidence.blocks] == ["vmstat"]


def test_aix_pages_and_lpar_cpu_count():
    block, rejected = run(fixture_lines("os/vmstat_aix.txt"))
    f = block.facts
    assert block.platform == "aix" and block.malformed_lines == 0
    assert f["cpu.count"] == 8
    assert f["cpu.intervals"] == 1  # the second row; the first is since boot
    assert f["swap.out_kbps_max"] == 82 * 4 and f["mem.free_kb_min"] == 9120 * 4
    assert f["page.scan_rate_max"] == 1650 and f["runq.per_cpu_max"] == pytest.approx(5 / 8)


def test_one_sample_is_marked_since_boot():
    lines = [
        "procs -----------memory---------- ---swap-- -----io---- -system-- ------cpu-----",
        " r  b   swpd   free   buff  cache   si   so    bi    bo   in   cs us sy id wa st",
        " 4  0      0 812300  20100 900100    0    0     3     9   50   90  9  2 89  0  0",
    ]
    block, _ = run(lines)
    f = block.facts
    assert f["os.since_boot"] == 1 and f["cpu.intervals"] == 1
    assert f["runq.max"] == 4
    assert any("since boot" in n for n in block.details["notes"])


@pytest.mark.parametrize(
    "prefix",
    ["# ", "Nov 24 10:01:02 db01 oswatcher[812]: ", "node07: ", "> "],
)
def test_pasted_prefixes_are_read_through(prefix):
    lines = [prefix + line for line in fixture_lines("os/vmstat_linux_swapping_SM.txt")[1:]]
    block, rejected = run(lines)
    assert rejected == [] and block.facts["runq.max"] == 19


def test_collapsed_whitespace_and_detection_in_prose():
    text = (
        "load went up after 10:00, here is vmstat:\n"
        "procs ---memory--- ---swap-- ---io--- -system-- ----cpu----\n"
        "r b swpd free buff cache si so bi bo in cs us sy id wa st\n"
        "1 0 0 100 10 1000 0 0 0 0 10 20 1 1 98 0 0\n"
        "9 3 0 90 10 1000 0 0 0 0 1000 9000 50 40 0 10 0\n"
        "8 2 0 95 10 1000 0 0 0 0 1100 9500 55 35 0 10 0\n"
        "thanks\n"
    )
    evidence = parse_text(text)
    [block] = evidence.blocks
    assert block.format == "vmstat" and block.facts["runq.max"] == 9
    assert block.facts["cpu.intervals"] == 2


def test_malformed_rows_are_counted_not_fatal():
    lines = fixture_lines("os/vmstat_linux_swapping_SM.txt")[1:4] + [
        " 9  1    812",  # cut short
        " 9  1    812    950     64  20480    2    3    40    55 2100 3900 12  3 184  1  0",
        " 9  1    812    950     64  20480    2    3    40    55 2100 3900 12  3 8x  1  0",
    ]
    block, rejected = run(lines)
    assert rejected == [] and block.malformed_lines == 3
    assert block.facts["cpu.intervals"] == 1


def test_rejected_lines_leave_the_parser_unchanged():
    p = VmstatParser()
    for line in fixture_lines("os/vmstat_linux_swapping_SM.txt")[:5]:
        assert p.feed(line)
    assert_rejected_without_trace(
        p,
        [
            "",
            "Top 5 Timed Events",
            "CPU minf mjf xcal  intr ithr  csw icsw migr smtx  srw syscl  usr sys  wt idl",
            "$ iostat -x 5",
            " kthr      memory            page            disk          faults      cpu",
            " r b w   swap  free  re  mf pi po fr de sr s0 s1 s2 s3   in   sy   cs us sy id",
        ],
    )


@pytest.mark.parametrize(
    ("line", "score"),
    [
        ("procs -----------memory---------- ---swap-- -----io---- -system-- ------cpu-----", 2),
        (" kthr      memory            page            disk          faults      cpu", 2),
        (" r  b   swpd   free   buff  cache   si   so    bi    bo   in   cs us sy id wa st", 2),
        ("$ vmstat 5 10", 2),
        ("[root@db ~]# vmstat -S M 1", 2),
        ("the vmstat output shows", 0),
        (" 1  0      0 812300  20100 900100    0    0     3     9   50   90  9  2 89  0  0", 0),
        ("r b", 0),
    ],
)
def test_start_score(line, score):
    assert VmstatParser.start_score(line) == score


def test_series_stay_bounded_on_a_long_capture():
    header = fixture_lines("os/vmstat_linux_swapping_SM.txt")[1:3]
    row = " 5  1    812    950     64  20480    2    3    40    55 2100 3900 12  3 84  1  0"
    p = VmstatParser()
    for line in header + [row] * 20000:
        assert p.feed(line)
    facts, details, _, _ = p.facts()
    assert facts["cpu.intervals"] == 19999
    assert all(len(v) <= 241 for v in details["series"].values())
    assert len(details["rows"]) <= 5


def test_solaris_p_anonymous_paging_is_swapping():
    # invented numbers in the Solaris `vmstat -p 5` layout: api/apo are swap-ins/outs
    lines = [
        "     memory           page          executable      anonymous      filesystem",
        "   swap  free  re  mf  fr  de  sr  epi  epo  epf  api  apo  apf  fpi  fpo  fpf",
        " 8123456 412300 5 40  0   0   0    0    0    0    0    0    0    1    0    0",
        " 6998012 58320 140 1020 6400 0 120455 12 0 0 2100 4800 4800 300 1200 1200",
        " 6991400 59900 110 870 5500 0 101002 8 0 0 1900 4100 4100 280 900 900",
    ]
    block, rejected = run(lines)
    f = block.facts
    assert rejected == [] and block.malformed_lines == 0 and block.platform == "solaris"
    assert f["swap.out_kbps_max"] == 4800 and f["swap.in_kbps_avg"] == 2000
    assert f["page.scan_rate_max"] == 120455 and "cpu.usr_pct" not in f
