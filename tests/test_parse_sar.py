"""sar parser: sysstat sections (-u, -q, -r, -B, -W, -d old and new, -n DEV/EDEV/TCP/ETCP),
Average rows, 12 h clocks, restarts, Solaris sar; sar -u vs mpstat; malformed rows; random
input."""

from __future__ import annotations

import pytest
from parser_helpers import (
    assert_rejected_without_trace,
    drive_parser,
    fixture_lines,
)

from ingest.detect import parse_text
from ingest.model import Block
from ingest.parsers.mpstat import MpstatParser
from ingest.parsers.sar import SarParser


def run(lines: list[str]) -> tuple[Block, list[int]]:
    return drive_parser(SarParser(), lines, numbered=True)


def nonblank_rejected(lines: list[str]) -> list[str]:
    _, rejected = run(lines)
    return [lines[n - 1] for n in rejected if lines[n - 1].strip()]


def test_cpu_runq_memory_sections_with_average_rows():
    lines = fixture_lines("os/sar_u_q_r_restart.txt")
    block, _ = run(lines)
    f = block.facts
    assert nonblank_rejected(lines) == [] and block.malformed_lines == 0
    assert block.platform == "linux" and f["cpu.count"] == 4
    # timed rows count; sar's own Average rows agree (they are only a fallback)
    assert f["cpu.usr_pct"] == pytest.approx(45) and f["cpu.sys_pct"] == pytest.approx(20)
    assert f["cpu.max_busy_pct"] == 90 and f["cpu.max_wait_pct"] == 5
    assert f["runq.max"] == 14 and f["runq.per_cpu_max"] == 3.5
    assert f["runq.ldavg_1_max"] == 12.4 and f["runq.ldavg_per_cpu_max"] == 3.1
    assert f["runq.ldavg_15_last"] == 3.9 and f["runq.blocked_max"] == 4
    assert f["mem.free_kb_min"] == 190000 and f["mem.used_pct_max"] == 97.68
    assert f["mem.commit_pct_max"] == 112
    assert f["sar.samples"] == 3
    assert any("restart" in n for n in block.details["notes"])
    assert block.details["series"]["runq-sz"] == [2, 11, 14]
    assert block.details["span"] == ["09:20:01 AM", "09:40:01 AM"]


def test_network_drops_and_retransmits_per_segment():
    lines = fixture_lines("os/sar_net_tcp_edev.txt")
    block, _ = run(lines)
    f = block.facts
    assert nonblank_rejected(lines) == [] and block.malformed_lines == 0
    assert f["net.rx_kb_per_s"]["eth0"] == 99000 and f["net.util_pct"]["eth0"] == 81.1
    assert f["net.max_util_pct"] == 81.92
    assert f["net.rx_drops_per_s"] == {"lo": 0, "eth0": 400}
    assert f["tcp.retrans_per_s_max"] == 1220
    assert f["tcp.retrans_pct"] == pytest.approx(100 * 1200 / 60000, abs=0.001)
    assert f["tcp.resets_per_s_avg"] == 27.5 and f["tcp.passive_per_s_avg"] == 305


def test_paging_swapping_and_new_disk_layout():
    lines = fixture_lines("os/sar_B_W_d_sysstat12.txt")
    block, _ = run(lines)
    f = block.facts
    assert nonblank_rejected(lines) == [] and block.malformed_lines == 0
    assert f["page.scan_rate_max"] == 64000 + 12000
    assert f["page.scan_rate_avg"] == pytest.approx(62000 + 10000)
    assert f["page.majflt_per_s_max"] == 950
    assert f["swap.out_pages_per_s_max"] == 3100 and f["swap.in_pages_per_s_avg"] == 1350
    assert f["dev.await_ms"]["sda"] == pytest.approx((26.09 + 29.17) / 2, abs=0.001)
    assert f["dev.max_await_ms"]["sda"] == 29.17 and f["dev.queue"]["sda"] == 65
    assert f["io.worst_device"] == "sda" and f["io.max_util_pct"] == 100
    assert f["io.util_caveat"] == 0  # sda is a plain disk; nvme0n1 is idle


def test_solaris_sar_group_rows_and_blank_columns():
    lines = fixture_lines("os/sar_solaris_u_d_q.txt")
    block, _ = run(lines)
    f = block.facts
    assert nonblank_rejected(lines) == [] and block.malformed_lines == 0
    assert block.platform == "solaris"
    assert f["cpu.sys_pct"] == pytest.approx(36.5) and f["cpu.idle_pct"] == 21
    assert f["dev.await_ms"]["ssd10"] == pytest.approx((35 + 40) / 2)
    assert f["dev.util_pct"]["ssd10"] == 96 and f["dev.queue"]["ssd10"] == pytest.approx(13.25)
    assert f["dev.tps"]["sd0"] == 2.5
    assert f["io.worst_device"] == "ssd10"
    assert f["runq.max"] == 22


def test_average_rows_alone_are_used():
    lines = [
        "Average:        CPU     %user     %nice   %system   %iowait    %steal     %idle",
        "Average:        all     12,50      0,00      2,50     30,00      0,00     55,00",
    ]
    block, rejected = run(lines)
    assert rejected == []
    assert block.facts["cpu.wait_pct"] == 30
    assert any("only Average rows" in n for n in block.details["notes"])


def test_sar_u_is_sar_and_mpstat_stays_mpstat():
    sar_u = "12:00:01 AM     CPU     %user     %nice   %system   %iowait    %steal     %idle"
    sar_all = (
        "12:00:01 AM  CPU  %usr  %nice  %sys  %iowait  %steal  %irq  %soft  %guest  %gnice  %idle"
    )
    mpstat = (
        "12:00:01 AM  CPU  %usr  %nice  %sys  %iowait  %irq  %soft  %steal  %guest  %gnice  %idle"
    )
    assert SarParser.start_score(sar_u) == 2 and SarParser.start_score(sar_all) == 2
    assert SarParser.start_score(mpstat) == 0 and MpstatParser.start_score(mpstat) == 2
    text = "\n".join(
        [sar_u, "12:10:01 AM     all     10.00      0.00      5.00      1.00      0.00     84.00"]
    )
    assert [b.format for b in parse_text(text).blocks] == ["sar"]


def test_per_cpu_rows_without_all_give_the_mean():
    lines = [
        "10:00:01 AM     CPU     %user     %nice   %system   %iowait    %steal     %idle",
        "10:00:02 AM       0     80.00      0.00     10.00      0.00      0.00     10.00",
        "10:00:02 AM       1     20.00      0.00     10.00      0.00      0.00     70.00",
    ]
    block, _ = run(lines)
    assert block.facts["cpu.usr_pct"] == 50 and block.facts["cpu.idle_pct"] == 40


def test_prompt_banner_and_section_make_one_block():
    lines = ["$ sar -q 60 3", *fixture_lines("os/sar_u_q_r_restart.txt")]
    evidence = parse_text("\n".join(lines))
    assert [b.format for b in evidence.blocks] == ["sar"]
    assert evidence.blocks[0].facts["cpu.count"] == 4


def test_malformed_rows_are_counted():
    lines = [
        "09:10:01 AM   runq-sz  plist-sz   ldavg-1   ldavg-5  ldavg-15   blocked",
        "09:20:01 AM         2       410      1.80      1.50",
        "09:30:01 AM         2       410      1.80      1.x0      1.20         0",
        "09:40:01 AM         5       410      1.80      1.50      1.20         0",
    ]
    block, rejected = run(lines)
    assert rejected == [] and block.malformed_lines == 2
    assert block.facts["runq.max"] == 5


def test_rejected_lines_leave_the_parser_unchanged():
    p = SarParser()
    for line in fixture_lines("os/sar_u_q_r_restart.txt")[:8]:
        p.feed(line)
    assert_rejected_without_trace(
        p,
        [
            "",
            "so the load went up",
            "Linux 3.10.0-1160.el7.x86_64 (other01)    11/24/2026      _x86_64_        (4 CPU)",
            "Event                                 Waits    Time(s)",
            "12:00:01 AM  CPU  %usr  %nice  %sys  %iowait  %irq  %soft  %steal  %guest  %gnice  %idle",
        ],
    )


def test_daily_reports_of_one_host_are_one_capture():
    day = fixture_lines("os/sar_u_q_r_restart.txt")
    block, _ = run(day + [""] + day)
    assert block.facts["sar.samples"] == 6 and block.facts["runq.max"] == 14
    assert any("2 daily reports of app03" in n for n in block.details["notes"])
    other = [day[0].replace("(app03)", "(app04)"), *day[1:]]
    p = SarParser()
    for line in day:
        p.feed(line)
    assert p.feed(other[0]) is False  # another host's report: its own block


def test_the_banner_goes_with_whichever_table_follows_it():
    banner = "Linux 5.15.0-91-generic (h1)  11/24/2026  _x86_64_  (8 CPU)"
    mpstat = [
        "10:00:01 AM  CPU    %usr   %nice    %sys %iowait    %irq   %soft  %steal  %guest  %gnice   %idle",
        "10:00:02 AM  all   10.00    0.00    5.00    1.00    0.00    0.00    0.00    0.00    0.00   84.00",
    ]
    sar_q = [
        "10:00:01 AM   runq-sz  plist-sz   ldavg-1   ldavg-5  ldavg-15   blocked",
        "10:00:02 AM         9       410     10.80      1.50      1.20         0",
    ]
    for table, fmt in ((mpstat, "mpstat"), (sar_q, "sar")):
        blocks = parse_text("\n".join([banner, "", *table])).blocks
        assert [(b.format, b.facts.get("cpu.count")) for b in blocks] == [(fmt, 8)]
    [b] = parse_text("\n".join([banner, "", *sar_q])).blocks
    assert b.facts["runq.ldavg_per_cpu_max"] == 1.35
