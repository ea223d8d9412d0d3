"""iostat parser: sysstat 9..12 layouts (-x, -d, -m, -p, -t, plain), Solaris -xn/-xnz/-T, the
since-boot first report, the %util caveat, locales, malformed rows, random input."""

from __future__ import annotations

import pytest
from parser_helpers import (
    assert_rejected_without_trace,
    drive_parser,
    fixture_lines,
)

from ingest.detect import parse_text
from ingest.model import Block
from ingest.parsers.iostat import IostatParser


def run(lines: list[str]) -> tuple[Block, list[int]]:
    return drive_parser(IostatParser(), lines, numbered=True)


def nonblank_rejections(name: str) -> list[str]:
    lines = fixture_lines(name)
    _, rejected = run(lines)
    return [lines[n - 1] for n in rejected if lines[n - 1].strip()]


def test_sysstat11_timestamps_first_report_left_out():
    block, _ = run(fixture_lines("os/iostat_sysstat11_xt_nvme.txt"))
    f = block.facts
    assert nonblank_rejections("os/iostat_sysstat11_xt_nvme.txt") == []
    assert block.malformed_lines == 0 and block.platform == "linux"
    assert f["cpu.count"] == 16 and f["cpu.intervals"] == 2
    assert f["cpu.wait_pct"] == pytest.approx((31.4 + 35.0) / 2)
    assert f["cpu.max_wait_pct"] == 35.0
    assert f["dev.r_await_ms"]["sda"] == 9 and f["dev.w_await_ms"]["sda"] == 110
    # await of a layout without one: r_await and w_await weighted by r/s and w/s
    expected = ((8 * 40 + 95 * 160) / 200 + (10 * 20 + 125 * 180) / 200) / 2
    assert f["dev.await_ms"]["sda"] == pytest.approx(expected, abs=0.001)
    assert f["dev.max_await_ms"]["sda"] == pytest.approx((10 * 20 + 125 * 180) / 200, abs=0.001)
    assert f["dev.queue"]["sda"] == pytest.approx(19.45)
    assert f["io.worst_device"] == "sda" and f["io.max_w_await_ms"] == 110
    assert f["io.max_util_pct"] == 100
    # nvme0n1 at 100 %util with 0.1 ms reads is busy, not saturated
    assert f["io.util_caveat"] == 1
    assert any("nvme0n1" in n for n in block.details["notes"])
    assert block.details["labels"] == ["11/24/2026 10:15:06 AM", "11/24/2026 10:15:11 AM"]
    assert block.details["since_boot"]["devices"]["sda"]["util"] == 0.46
    assert "os.since_boot" not in f


def test_sysstat9_megabytes_and_partitions_without_avg_cpu():
    block, _ = run(fixture_lines("os/iostat_sysstat9_dxmp.txt"))
    f = block.facts
    assert block.malformed_lines == 0
    assert "cpu.usr_pct" not in f and f["cpu.count"] == 4
    assert f["dev.rkb_per_s"]["sdb"] == 12 * 1024 and f["dev.wkb_per_s"]["sdb1"] == 30 * 1024
    assert f["dev.await_ms"] == {"sdb": 19.6, "sdb1": 19.6}
    assert f["dev.util_pct"]["sdb"] == 95 and f["io.util_caveat"] == 0
    assert block.details["reports"] == 1


def test_solaris_xnz_with_dates_and_array_lun():
    block, rejected = run(fixture_lines("os/iostat_solaris_xnz_T.txt"))
    f = block.facts
    assert rejected == [] and block.platform == "solaris"
    lun = "c0t600A0B800012345600000ABC4F1E2D3Cd0"
    # two reports after the since-boot one; c0t0d0 is idle in the last (-z) and has one sample
    assert f["dev.await_ms"][lun] == pytest.approx((14 + 35 + 10 + 31) / 2)
    assert f["dev.queue"][lun] == pytest.approx((42 + 42) / 2)
    assert f["dev.svctm_ms"][lun] == pytest.approx(33)
    assert f["dev.util_pct"][lun] == 100 and f["dev.util_pct"]["c0t0d0"] == 0
    assert f["io.worst_device"] == lun and f["io.util_caveat"] == 1
    assert block.details["labels"][0] == "Tue Nov 24 10:20:05 UTC 2026"


def test_plain_iostat_with_decimal_commas():
    block, _ = run(fixture_lines("os/iostat_plain_decimal_comma.txt"))
    f = block.facts
    assert block.malformed_lines == 0
    assert f["dev.tps"] == {"sda": 310.5} and f["dev.wkb_per_s"] == {"sda": 9800.25}
    assert f["cpu.wait_pct"] == 12 and f["cpu.count"] == 2
    assert "dev.await_ms" not in f  # plain iostat has no latency: none invented
    assert f["io.worst_device"] == "sda" and "io.worst_await_ms" not in f


def test_banner_only_then_iostat_is_one_block():
    text = "\n".join(fixture_lines("os/iostat_sysstat9_dxmp.txt"))
    evidence = parse_text("here you go\n" + text)
    assert [b.format for b in evidence.blocks] == ["iostat"]
    assert evidence.blocks[0].facts["cpu.count"] == 4


def test_prompt_and_command_line_start_the_block():
    lines = ["ubuntu@ip-10-0-0-1:~$ iostat -x 1 2", *fixture_lines("os/iostat_sysstat9_dxmp.txt")]
    evidence = parse_text("\n".join(lines))
    [block] = evidence.blocks
    assert block.format == "iostat" and block.start_line == 1


def test_single_report_without_banner_is_not_claimed_since_boot():
    lines = fixture_lines("os/iostat_sysstat11_xt_nvme.txt")[-4:]
    block, _ = run(lines)
    assert "os.since_boot" not in block.facts
    assert any("if it is iostat's first" in n for n in block.details["notes"])


def test_malformed_device_rows_are_counted():
    lines = fixture_lines("os/iostat_sysstat9_dxmp.txt")[2:4] + [
        "sdc               0.10     2.00    5.00",  # cut short
        "sdd               0.10     2.00    5.00   10.00     0.20     x.40    81.92     0.10    6.50   2.00   3.00",
    ]
    block, rejected = run(lines)
    assert rejected == [] and block.malformed_lines == 2
    assert set(block.facts["dev.util_pct"]) == {"sdb"}


def test_rejected_lines_leave_the_parser_unchanged():
    p = IostatParser()
    for line in fixture_lines("os/iostat_sysstat9_dxmp.txt")[2:4]:
        assert p.feed(line)
    assert_rejected_without_trace(
        p,
        [
            "",
            "Event                                 Waits    Time(s)",
            "    r/s    w/s   kr/s   kw/s wait actv wsvc_t asvc_t  %w  %b device",
            "Linux 2.6.32-754.el6.x86_64 (legacy01)  11/24/2026      _x86_64_        (4 CPU)",
            "procs -----------memory---------- ---swap-- -----io---- -system-- ------cpu-----",
        ],
    )


@pytest.mark.parametrize(
    ("line", "score"),
    [
        ("avg-cpu:  %user   %nice %system %iowait  %steal   %idle", 2),
        ("Device:  rrqm/s wrqm/s r/s w/s rkB/s wkB/s avgrq-sz avgqu-sz await svctm %util", 2),
        ("    r/s    w/s   kr/s   kw/s wait actv wsvc_t asvc_t  %w  %b device", 2),
        ("                    extended device statistics", 2),
        ("example% iostat -xnz 5", 2),
        ("Linux 5.8.0 (h) 12/02/2021 _x86_64_ (2 CPU)", 1),
        ("Device is busy", 0),
        ("sda 1.0 2.0", 0),
    ],
)
def test_start_score(line, score):
    assert IostatParser.start_score(line) == score


def test_facts_midway_leave_the_parser_as_it_was():
    lines = fixture_lines("os/iostat_sysstat11_xt_nvme.txt")
    p = IostatParser()
    for line in lines[:14]:
        p.feed(line)
    first = p.facts()
    assert p.facts() == first
    for line in lines[14:]:
        p.feed(line)
    whole, _ = run(lines)
    assert p.facts()[0] == whole.facts


def test_oswatcher_iostat_archive_drops_each_snapshots_first_report():
    # invented numbers in an OSWatcher iostat archive: `iostat -xk 1 2` per snapshot
    header = (
        "Device:  rrqm/s wrqm/s  r/s  w/s  rkB/s  wkB/s avgrq-sz avgqu-sz  await r_await "
        "w_await svctm %util"
    )
    lines = ["Linux OSWbb v8.3.2 exadb01"]
    for n, (boot, now) in enumerate(((1.0, 30.0), (2.0, 50.0))):
        lines += [
            f"zzz ***Tue Nov 24 10:0{n}:00 UTC 2026",
            "avg-cpu:  %user   %nice %system %iowait  %steal   %idle",
            "           5.00    0.00    2.00    1.00    0.00   92.00",
            header,
            f"sda 0.00 0.00 10.00 10.00 80.00 80.00 16.00 0.10 {boot} {boot} {boot} 0.50 1.00",
            "avg-cpu:  %user   %nice %system %iowait  %steal   %idle",
            "          20.00    0.00    9.00   40.00    0.00   31.00",
            header,
            f"sda 0.00 0.00 200.00 90.00 800.00 720.00 16.00 9.00 {now} {now} {now} 3.00 99.00",
        ]
    block, rejected = run(lines)
    f = block.facts
    assert rejected == [1] and block.malformed_lines == 0  # the OSWbb banner is vmstat's
    assert f["dev.await_ms"]["sda"] == 40 and f["cpu.wait_pct"] == 40
    assert f["cpu.intervals"] == 2 and "os.since_boot" not in f
    assert any("2 OSWatcher" in n for n in block.details["notes"])
    assert [b.format for b in parse_text("\n".join(lines)).blocks].count("iostat") == 1


def test_rows_a_narrow_terminal_wrapped_are_joined():
    lines = fixture_lines("os/iostat_sysstat11_xt_nvme.txt")
    wrapped = []
    for line in lines:
        if line.startswith(("sda ", "nvme0n1 ")):
            cut = line.index("  ", 40)  # wrap between two columns, as an 80-column terminal
            wrapped += [line[:cut], line[cut:]]
        else:
            wrapped.append(line)
    block, _ = run(wrapped)
    whole, _ = run(lines)
    assert block.malformed_lines == 0 and block.facts == whole.facts
    cut_at_end, _ = run(lines + ["sdz   1.00   2.00"])
    assert cut_at_end.malformed_lines == 1 and "sdz" not in cut_at_end.facts["dev.util_pct"]
