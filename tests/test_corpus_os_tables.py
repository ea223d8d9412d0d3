"""The published vmstat, iostat, sar, pidstat and prstat snippets of ../shared/corpus: each is read
as its format (one block, nothing left as `unknown` or misread as mpstat or a wait table) and the
numbers a person reads off it are in the facts. The values below were read off the snippets
themselves (labels.yaml notes what a reader saw); a miss fails."""

from __future__ import annotations

from pathlib import Path

import pytest
from parser_helpers import assert_facts_valid

from ingest.detect import parse_text
from ingest.model import Block

CORPUS = Path(__file__).resolve().parents[1].parent / "shared" / "corpus"


def blocks_of(name: str) -> list[Block]:
    """The evidence blocks of one snippet (the corpus must be there: CI has it beside the
    clone)."""
    matches = list((CORPUS / "snippets").glob(f"{name}_*.txt"))
    assert len(matches) == 1, f"snippet {name} missing from {CORPUS}"
    return [b for b in parse_text(matches[0].read_text(encoding="utf-8")).blocks]


def only_block(name: str, fmt: str, platform: str) -> Block:
    blocks = [b for b in blocks_of(name) if b.format != "unknown" or b.text.strip()]
    assert [(b.format, b.platform) for b in blocks] == [(fmt, platform)]
    assert blocks[0].malformed_lines == 0
    assert_facts_valid(blocks[0])
    return blocks[0]


def test_46_solaris_vmstat_cpu_bound():
    b = only_block("46", "vmstat", "solaris")
    f = b.facts
    # the since-boot first row (us 18) is left out: eight intervals, user CPU 81..98
    assert f["cpu.intervals"] == 8
    assert f["cpu.idle_pct"] == 0 and f["cpu.max_busy_pct"] == 100
    assert f["cpu.usr_pct"] == pytest.approx((85 + 97 * 3 + 81 + 97 + 95 + 98) / 8, abs=0.01)
    assert f["sys.syscalls_per_s_max"] == 4828  # the faults `sy` column, not CPU sy
    assert f["cpu.sys_pct"] == pytest.approx((15 + 3 * 3 + 19 + 3 + 5 + 2) / 8, abs=0.01)
    assert f["mem.free_kb_min"] == 82300 and f["mem.swap_avail_kb_min"] == 1051264
    assert f["page.scan_rate_max"] == 0 and f["runq.max"] == 1
    assert b.details["since_boot"]["us"] == 18


def test_47_linux_vmstat_active_and_timestamps():
    b = only_block("47", "vmstat", "linux")
    f = b.facts
    assert f["cpu.intervals"] == 3 and f["cpu.idle_pct"] == 100 and f["cpu.wait_pct"] == 0
    assert f["mem.free_kb_min"] == 2794716
    assert b.details["since_boot"]["r"] == 2
    assert b.details["span"] == ["2021-09-16 20:33:18", "2021-09-16 20:33:28"]
    assert "inact" in b.details["columns"] and "active" in b.details["columns"]


def test_48_linux_vmstat_context_switches_not_a_wait_table():
    b = only_block("48", "vmstat", "linux")
    f = b.facts
    assert f["sys.cs_per_s_max"] == 199817 and f["sys.intr_per_s_max"] == 99294
    assert b.details["since_boot"]["cs"] == 185522
    assert f["cpu.idle_pct"] > 98 and f["cpu.usr_pct"] == 0
    assert f["runq.max"] == 2 and f["runq.blocked_max"] == 0
    assert f["mem.free_kb_min"] == 30105680 and f["swap.out_kbps_max"] == 0


def test_49_sysstat12_iostat_single_since_boot_report():
    b = only_block("49", "iostat", "linux")
    f = b.facts
    assert f["cpu.count"] == 2 and f["os.since_boot"] == 1
    assert f["dev.r_per_s"]["sda"] == 2.67 and f["dev.w_per_s"]["sda"] == 2.81
    assert f["dev.r_await_ms"]["sda"] == 0.36 and f["dev.w_await_ms"]["sda"] == 0.42
    assert f["dev.util_pct"]["sda"] == 0.41 and f["dev.util_pct"]["dm-0"] == 0.34
    assert f["cpu.idle_pct"] == 99.09
    assert f["io.devices"] == 14 and f["io.util_caveat"] == 0


def test_50_sysstat10_iostat_saturated_xvda():
    b = only_block("50", "iostat", "linux")
    f = b.facts
    # the second report is the one that counts; the first (since boot) is kept for display
    assert f["cpu.wait_pct"] == 96.38 and "os.since_boot" not in f
    assert f["dev.await_ms"]["xvda"] == 181.07 and f["dev.util_pct"]["xvda"] == 99.15
    assert f["dev.r_per_s"]["xvda"] == 87.93 and f["dev.queue"]["xvda"] == 18.11
    assert f["io.worst_device"] == "xvda" and f["io.max_util_pct"] == 99.15
    boot = b.details["since_boot"]
    assert boot["cpu"]["wait"] == 77.20 and boot["cpu"]["steal"] == 19.44
    assert boot["devices"]["xvda"]["await"] == 439.36 and boot["devices"]["xvda"]["queue"] == 29.5
    assert boot["devices"]["xvda"]["util"] == 80.49


def test_51_ssd_at_100_util_carries_the_caveat():
    b = only_block("51", "iostat", "linux")
    f = b.facts
    assert f["dev.r_per_s"]["sdb"] == 56791.5 and f["dev.rkb_per_s"]["sdb"] == 221848
    assert f["dev.queue"]["sdb"] == 23.31 and f["dev.await_ms"]["sdb"] == 0.41
    assert f["dev.svctm_ms"]["sdb"] == 0.02 and f["dev.util_pct"]["sdb"] == 100.05
    assert f["cpu.usr_pct"] == 57.34
    assert f["io.util_caveat"] == 1  # 23 requests in flight at 0.4 ms: busy, not saturated
    assert any("%util" in n for n in b.details["notes"])


def test_52_solaris_iostat_xnp_with_partitions_and_nfs():
    b = only_block("52", "iostat", "solaris")
    f = b.facts
    assert f["dev.r_per_s"]["c0t0d0"] == 0.4 and f["dev.w_per_s"]["c0t0d0"] == 0.3
    assert f["dev.svctm_ms"]["c0t0d0"] == 36.9 and f["dev.util_pct"]["c0t0d0"] == 1
    assert "c0t0d0s1" in f["dev.util_pct"]
    assert f["dev.await_ms"]["fuji:/export/home/user3"] == pytest.approx(0.6 + 35.0)
    assert f["os.since_boot"] == 1  # one report after the command line: since boot


def test_53_sar_q_run_queue_and_load():
    b = only_block("53", "sar", "linux")
    f = b.facts
    assert f["runq.max"] == 3 and f["runq.plist_max"] == 371 and f["runq.blocked_max"] == 2
    assert f["runq.ldavg_1_max"] == 8.78 and f["runq.ldavg_15_last"] == 5.14
    assert f["sar.samples"] == 13
    assert b.details["series"]["ldavg-1"][0] == 0.29
    assert b.details["span"] == ["05:10:01 PM", "05:22:01 PM"]


def test_54_sar_d_one_device_with_banner_cpu_count():
    b = only_block("54", "sar", "linux")
    f = b.facts
    assert f["cpu.count"] == 4
    assert f["dev.tps"]["dev253-9"] == 7669.55
    assert f["dev.wkb_per_s"]["dev253-9"] == pytest.approx(61353.93 / 2)  # sectors -> KiB
    assert f["dev.queue"]["dev253-9"] == 35.39 and f["dev.await_ms"]["dev253-9"] == 4.61
    assert f["dev.svctm_ms"]["dev253-9"] == 0.03 and f["dev.util_pct"]["dev253-9"] == 19.8
    assert f["io.worst_device"] == "dev253-9"


def test_55_pidstat_d_oracle_writers():
    b = only_block("55", "pidstat", "linux")
    f = b.facts
    assert f["cpu.count"] == 24
    wr = f["proc.kb_wr_per_s"]
    assert wr["ora_lgwr_cmpind"] == 56026.67 and wr["ora_dbw0_cmpind"] == 8106.67
    assert wr["ora_dbw1_cmpind"] == 6567.62 and wr["ora_dbw2_cmpind"] == 7851.43
    assert wr["ora_dw08_cmpind"] == 25931.43
    assert set(f["proc.iodelay"].values()) == {0}
    assert f["proc.top_io"] == "ora_lgwr_cmpind (16617)"


def test_56_prstat_and_prstat_mL_in_one_paste():
    b = only_block("56", "prstat", "solaris")
    f = b.facts
    assert f["proc.usr_pct"]["java/8"] == 81 and f["proc.lck_pct"]["java/8"] == 16
    assert f["proc.lat_pct"]["java/8"] == 2.5
    assert f["proc.cpu_pct"]["java/8"] == 1.8  # the plain prstat table's CPU column
    assert f["proc.top_lck"] == "java/8 (26330/8)" and f["proc.max_lck_pct"] == 16
    rows = {r["pid"]: r for r in b.details["processes"]}
    assert rows["26330/8"]["icx"] == 126


def test_findings_say_what_a_reader_says_first():
    assert any(
        f.startswith("CPUs busy: user 93.38 %")
        for f in only_block("46", "vmstat", "solaris").details["findings"]
    )
    assert (
        "context switches up to 199,817/s"
        in only_block("48", "vmstat", "linux").details["findings"]
    )
    assert only_block("50", "iostat", "linux").details["findings"] == [
        "iowait up to 96.38 %",
        "slowest device xvda: await 181 ms, 99.15 % util, queue 18.11",
    ]
    assert any(
        "busy, not saturation" in f for f in only_block("51", "iostat", "linux").details["findings"]
    )
    assert "since boot" in only_block("49", "iostat", "linux").details["findings"][0]
