"""mpstat parser: Solaris (mangled headers, since-boot table) and Linux sysstat layouts."""

from __future__ import annotations

import pytest
from parser_helpers import (
    assert_rejected_without_trace,
    drive_parser,
    fixture_lines,
)

from ingest.model import Block
from ingest.parsers.mpstat import MAX_INTERVALS, MpstatParser


def run(lines: list[str]) -> tuple[Block, list[int]]:
    """Drive the parser as the detector does; return the block and the rejected line numbers."""
    return drive_parser(MpstatParser(), lines, numbered=True)


# -- Solaris ---------------------------------------------------------------------------------------


def test_seed_001_mangled_header_reads_sys_and_interrupts():
    block, rejected = run(fixture_lines("seeds/001_mpstat.txt"))
    f = block.facts
    assert (block.format, block.platform, block.malformed_lines, rejected) == (
        "mpstat",
        "solaris",
        0,
        [],
    )
    assert f["cpu.count"] == 14
    assert f["cpu.intervals"] == 1
    # sys per CPU read from the right end: CPU 4 is 0 usr / 100 sys, CPU 1 is 30 / 63
    assert f["cpu.sys"]["4"] == 100 and f["cpu.sys"]["1"] == 63
    assert f["cpu.usr_pct"] == pytest.approx(8.0)
    assert f["cpu.sys_pct"] == pytest.approx(1223 / 14, abs=0.01)
    # 12 of the 14 CPUs are above 80 % sys (CPU 1 at 63 and CPU 5 at 77 are not)
    assert f["cpu.share_sys_over_80_pct"] == pytest.approx(100 * 12 / 14, abs=0.01)
    assert f["cpu.share_sys_over_50_pct"] == 100
    assert f["cpu.max_sys_pct"] == 100 and f["cpu.sys_skew"] == 37
    assert f["cpu.sys_usr_ratio"] > 10
    # CPU 8 takes 6423 of 11437 interrupts
    assert f["cpu.intr"]["8"] == 6423
    assert sum(f["cpu.intr"].values()) == 11437
    assert f["cpu.intr_top_share_pct"] == pytest.approx(100 * 6423 / 11437, abs=0.01)
    assert f["cpu.max_smtx"] == 1893 and f["cpu.max_migr"] == 353
    assert "cpu.max_xcal" not in f  # the mangled header lost the xcal column: no invented value


def test_seed_001_details_give_chart_rows_and_hot_cpu():
    block, _ = run(fixture_lines("seeds/001_mpstat.txt"))
    cpus = block.details["cpus"]
    assert [c["id"] for c in cpus] == [str(i) for i in range(14)]
    assert cpus[8] == {
        "id": "8",
        "usr": 6.0,
        "sys": 86.0,
        "wait": 0.0,
        "idle": 9.0,
        "intr": 6423.0,
        "smtx": 546.0,
    }
    hot = {(h["cpu"], h["metric"]) for h in block.details["hot_cpus"]}
    assert ("8", "intr") in hot
    assert any("one interval" in n for n in block.details["notes"])


def test_solaris_since_boot_table_is_dropped():
    block, rejected = run(fixture_lines("os/mpstat_solaris_intervals.txt"))
    f = block.facts
    assert rejected == [] and block.platform == "solaris"
    assert f["cpu.intervals"] == 2
    assert "first interval (since boot) dropped" in block.details["notes"]
    assert f["cpu.sys"] == {"0": 60.5, "1": 65.5, "2": 82.0, "3": 63.5}
    assert f["cpu.share_sys_over_80_pct"] == 25
    assert f["cpu.max_xcal"] == 4180 and f["cpu.max_smtx"] == 2830
    assert [i["label"] for i in block.details["intervals"]] == ["interval 2", "interval 3"]
    hot = {(h["cpu"], h["metric"]) for h in block.details["hot_cpus"]}
    assert hot == {("2", "smtx"), ("2", "xcal")}


def test_solaris_set_column_and_state_change_lines():
    lines = [
        "CPU minf mjf xcal  intr ithr  csw icsw migr smtx  srw syscl  usr sys  wt idl set",
        "  0    1   0    2   300  100  200    5    3    4    0   500   10  20   0  70   0",
        "  <<processor 1 moved from pset: -1 to: 1>>",
        "  1    1   0    2   100    1  200    5    3    4    0   500   30  40   0  30   1",
    ]
    block, rejected = run(lines)
    assert rejected == []
    assert block.facts["cpu.sys"] == {"0": 20.0, "1": 40.0}
    assert block.facts["cpu.idle_pct"] == 50
    assert any("state-change" in n for n in block.details["notes"])


def test_solaris_rows_without_header():
    row = "  3   12   0   45   312  105  402   12   18    9    0  1205    4   3   0  93"
    assert MpstatParser.start_score(row) == 1
    block, rejected = run([row, row.replace("  3 ", "  4 ", 1)])
    assert rejected == []
    assert block.facts["cpu.count"] == 2 and block.facts["cpu.max_xcal"] == 45


def test_rows_wider_than_a_mangled_header_are_read_from_the_right():
    lines = [
        "CPU ..intr ithr  csw icsw migr smtx  srw syscl  usr sys  wt idl",
        "  0   21   0   35   312  105  402   12   18    9    0  1205    4   3   0  93",
    ]
    block, _ = run(lines)
    assert block.facts["cpu.sys"] == {"0": 3.0}
    assert block.facts["cpu.max_xcal"] == 35
    assert any("right end" in n for n in block.details["notes"])


def test_malformed_solaris_rows_are_counted_not_fatal():
    lines = [
        "CPU minf mjf xcal  intr ithr  csw icsw migr smtx  srw syscl  usr sys  wt idl",
        "  0    1   0    2   300  100  200    5    3    4    0   500   10  20   0  70",
        "  1    1   0",  # cut short
        "  2    x   y    z",  # garbage
        "  3    1   0    2   300  100  200    5    3    4    0   500   10 250   0  70",  # sys > 100
        "  4    1   0    2   300  100  200    5    3    4    0   500   10  20   0  70  1",  # 16 values
    ]
    block, rejected = run(lines)
    assert rejected == [] and block.malformed_lines == 4
    assert block.facts["cpu.count"] == 1


# -- Linux sysstat ---------------------------------------------------------------------------------


def test_linux_p_all_12h_with_average():
    block, rejected = run(fixture_lines("os/mpstat_linux_pall.txt"))
    f = block.facts
    assert block.platform == "linux" and block.malformed_lines == 0
    assert all(fixture_lines("os/mpstat_linux_pall.txt")[n - 1] == "" for n in rejected)
    assert f["cpu.count"] == 4  # the `all` row is not a CPU
    assert f["cpu.intervals"] == 2
    # our mean of the per-CPU samples agrees with sysstat's own Average row (rounding aside)
    average = block.details["average"]
    for key in ("usr", "sys", "wait", "idle"):
        assert f[f"cpu.{key}_pct"] == pytest.approx(average[key], abs=0.02)
    assert f["cpu.wait_pct"] > 30
    assert f["cpu.irq_pct"] == pytest.approx(0.49 + 0.96, abs=0.02)
    assert f["cpu.steal_pct"] == pytest.approx(0.33, abs=0.02)
    assert [i["label"] for i in block.details["intervals"]] == ["12:38:34 PM", "12:38:35 PM"]
    assert block.details["banner"]["host"] == "dbhost01.example.com"
    assert "cpu.intr" not in f


def test_linux_healthy_idle_host():
    block, _ = run(fixture_lines("os/mpstat_linux_healthy.txt"))
    f = block.facts
    assert f["cpu.count"] == 8 and f["cpu.intervals"] == 2
    assert f["cpu.idle_pct"] > 95 and f["cpu.sys_pct"] < 2
    assert f["cpu.share_sys_over_50_pct"] == 0
    assert block.details["hot_cpus"] == []


def test_linux_old_layout_without_gnice():
    block, _ = run(fixture_lines("os/mpstat_linux_old.txt"))
    f = block.facts
    assert f["cpu.count"] == 2
    assert f["cpu.usr_pct"] == pytest.approx(71.44, abs=0.02)
    assert f["cpu.sys"] == {"0": pytest.approx(10.74), "1": pytest.approx(11.46)}


def test_linux_all_rows_only_uses_banner_cpu_count():
    lines = [
        "Linux 5.15.0-105-generic (web1) \t04/02/2024 \t_x86_64_\t(8 CPU)",
        "",
        "13:05:10     CPU    %usr   %nice    %sys %iowait    %irq   %soft  %steal  %guest  %gnice   %idle",
        "13:05:11     all   10.00    0.00    5.00    1.00    0.00    0.00    0.00    0.00    0.00   84.00",
        "13:05:12     all   20.00    0.00    7.00    1.00    0.00    0.00    0.00    0.00    0.00   72.00",
        "13:05:13     all   30.00    0.00    9.00    1.00    0.00    0.00    0.00    0.00    0.00   60.00",
    ]
    block, _ = run(lines)
    f = block.facts
    assert f["cpu.count"] == 8 and f["cpu.intervals"] == 3
    assert f["cpu.usr_pct"] == 20 and f["cpu.sys_pct"] == 7
    assert "cpu.sys" not in f and "cpu.share_sys_over_80_pct" not in f


def test_linux_average_only_and_decimal_commas():
    lines = [
        "Moyenne:    CPU    %usr   %nice    %sys %iowait    %irq   %soft  %steal  %guest  %gnice   %idle",
        "Moyenne:    all   12,50    0,00    2,50    0,00    0,00    0,00    0,00    0,00    0,00   85,00",
        "Moyenne:      0   15,00    0,00    3,00    0,00    0,00    0,00    0,00    0,00    0,00   82,00",
        "Moyenne:      1   10,00    0,00    2,00    0,00    0,00    0,00    0,00    0,00    0,00   88,00",
    ]
    block, rejected = run(lines)
    assert rejected == []
    assert block.facts["cpu.count"] == 2
    assert block.facts["cpu.usr_pct"] == 12.5
    assert "only the Average rows were present" in block.details["notes"]


def test_linux_malformed_rows():
    lines = [
        "10:00:00 AM  CPU    %usr   %nice    %sys %iowait    %irq   %soft  %steal  %guest  %gnice   %idle",
        "10:00:01 AM  all   1.00    0.00    1.00    0.00    0.00    0.00    0.00    0.00    0.00   98.00",
        "10:00:01 AM    0   1.00    0.00    1.0",
        "10:00:01 AM  cpuX  1.00    0.00    1.00    0.00    0.00    0.00    0.00    0.00    0.00   98.00",
    ]
    block, rejected = run(lines)
    assert rejected == [] and block.malformed_lines == 2


# -- detection and block boundaries -------------------------------------------------------------


@pytest.mark.parametrize(
    ("line", "score"),
    [
        ("CPU minf mjf xcal  intr ithr  csw icsw migr smtx  srw syscl  usr sys  wt idl", 2),
        ("CPU ..intr ithr  csw icsw migr smtx  srw syscl  usr sys  wt idl", 2),
        (
            "12:38:33 PM  CPU    %usr   %nice    %sys %iowait    %irq   %soft  %steal  %guest   %idle",
            2,
        ),
        ("Linux 5.14.0-362.el9.x86_64 (h) \t03/14/2024 \t_x86_64_\t(8 CPU)", 2),
        ("CPU     ID                    FUNCTION:NAME", 0),
        ("the CPU was busy in sys mode most of the time", 0),
        ("  kgecss          2", 0),
        ("", 0),
    ],
)
def test_start_score(line, score):
    assert MpstatParser.start_score(line) == score


def test_rejected_line_leaves_the_parser_unchanged():
    lines = fixture_lines("seeds/001_mpstat.txt")
    p = MpstatParser()
    for line in lines:
        p.feed(line)
    assert_rejected_without_trace(p, ("Notice the numbers below", "12:00:01 AM  all  1 2 3", ""))


def test_solaris_and_linux_tables_do_not_mix():
    p = MpstatParser()
    assert p.feed("CPU minf mjf xcal  intr ithr  csw icsw migr smtx  srw syscl  usr sys  wt idl")
    assert not p.feed(
        "10:00:00  CPU  %usr %nice %sys %iowait %irq %soft %steal %guest %gnice %idle"
    )
    assert not p.feed("Linux 5.14.0 (h) \t03/14/2024 \t_x86_64_\t(8 CPU)")


def test_facts_can_be_read_midway():
    lines = fixture_lines("os/mpstat_solaris_intervals.txt")
    p = MpstatParser()
    for line in lines[:10]:
        p.feed(line)
    midway = p.facts()[0]
    assert midway["cpu.intervals"] == 1  # since-boot dropped once the second table started
    for line in lines[10:]:
        p.feed(line)
    assert p.facts()[0] == run(lines)[0].facts


def test_interval_details_are_capped():
    header = "CPU minf mjf xcal  intr ithr  csw icsw migr smtx  srw syscl  usr sys  wt idl"
    lines = []
    for _ in range(MAX_INTERVALS + 50):
        lines += [header, "  0 1 0 2 3 4 5 6 7 8 0 9 10 20 0 70"]
    block, _ = run(lines)
    assert block.facts["cpu.intervals"] == MAX_INTERVALS + 49
    assert len(block.details["intervals"]) == MAX_INTERVALS


def test_vmstat_rows_are_not_headerless_solaris_mpstat():
    """Linux vmstat prints 17 integers per row too; its CPU columns do not sum like mpstat's."""
    from ingest.parsers.mpstat import MpstatParser

    vmstat_row = (
        " 9 14 38112044 402118  20112 3104412 2011 3304 14220 22208 21022 41207 21 18 29 32  0"
    )
    solaris_row = "  4    0   0    3    86    1    2    3    1   63    0     8    0 100   0   0"
    assert MpstatParser.start_score(vmstat_row) == 0
    assert MpstatParser.start_score(solaris_row) == 1
