"""iostat claims `-t`'s stamp above each report (ingest/parsers/iostat.py `claims`): the
detector then need not ask every other format about each stamp of a long capture. The stamps
below are invented in the shapes iostat -t prints under different locales and S_TIME_FORMAT."""

from __future__ import annotations

import pytest

from ingest.detect import parse_text
from ingest.parsers.iostat import IostatParser

STAMPS = [
    "11/25/2026 10:00:01 AM",
    "11/25/2026 10:00:01",
    "25.11.2026 10:00:01",
    "2026-11-25T10:00:01+0000",
    "Wed Nov 25 10:00:01 UTC 2026",
]


@pytest.mark.parametrize("stamp", STAMPS)
def test_a_stamp_is_claimed_as_pasted(stamp):
    assert IostatParser.claims(stamp)
    assert IostatParser.claims(f"[oracle@db07 ~]$ {stamp}")
    assert IostatParser.claims(f"# {stamp}")


@pytest.mark.parametrize(
    "line", ["10:00:01 the batch started", "see 11/25/2026 10:00:01 AM", "10:00:01", "at 10:00"]
)
def test_prose_with_a_time_is_not(line):
    assert not IostatParser.claims(line)


@pytest.mark.parametrize("stamp", STAMPS)
def test_every_report_takes_its_stamp(stamp):
    header = "Device            r/s     w/s     rkB/s     wkB/s  await  aqu-sz  %util"
    lines = ["Linux 5.14.0 (db07)  11/25/2026  _x86_64_  (4 CPU)", ""]
    for i in range(12):
        lines += [stamp.replace("10:00:01", f"10:00:{i:02d}"), header]
        lines += [f"sda   {i}.00  1.00  {i * 8}.00  8.00  {i + 1}.50  0.10  {i * 5}.00", ""]
    blocks = parse_text("\n".join(lines) + "\n").blocks
    assert [b.format for b in blocks] == ["iostat"]
    labels = blocks[0].details["labels"]
    assert len(labels) == 11  # the first report (since boot) left out
    assert labels[0] == stamp.replace("10:00:01", "10:00:01")[:40]
    assert labels[-1] == stamp.replace("10:00:01", "10:00:11")[:40]
    assert blocks[0].facts["io.max_await_ms"] == 12.5
