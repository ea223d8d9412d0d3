"""iostat's per-report lines in IostatParser.feed_run: `-t`'s stamp, the avg-cpu numbers and the
blank lines between blocks are read without the detector's per-line tests (and, for the stamp,
without feed's chain of tests) while the C core reads the device rows. The evidence must be
identical with the core on and off (ostable.NATIVE off: no feed_run at all, every line through
the detector and feed, the reference), line by line, streamed in two read sizes and as one text,
on captures whose stamps, avg-cpu lines and blank lines were made odd, and on a layout of two
columns, where a three-token stamp has the shape of a device row.

The captures are invented in iostat's shape (tests/test_table_core.py's generator).
"""

from __future__ import annotations

import random
import re

import pytest

from ingest.parsers import iostat, ostable
from tests.test_table_core import _capture, _iostat_capture, _same


@pytest.fixture
def core_lines(monkeypatch):
    """How many lines iostat's feed_run took (0: the fast path never ran)."""
    count = [0]
    real = iostat.IostatParser.feed_run

    def counting(self, text, pos, endpos, plain):
        got = real(self, text, pos, endpos, plain)
        count[0] += got[1]
        return got

    monkeypatch.setattr(iostat.IostatParser, "feed_run", counting)
    return count


_STAMPS = [
    "11/25/2026 10:00:{s:02d} AM",  # sysstat's 12 h stamp, as printed
    "11/25/26 22:00:{s:02d}",  # a 2-digit year, 24 h
    "2026-11-25T10:00:{s:02d}+0100",  # S_TIME_FORMAT=ISO
    "11/25/2026 10:00:{s:02d} AM ",  # a trailing blank
    " 11/25/2026 10:00:{s:02d} AM",  # a leading one
    "11/25/2026\t10:00:{s:02d}\tAM",
    "11/25/2026 10:00:{s:02d} am",
    "11/25/2026 10:00:{s:02d}AM",
    "# 11/25/2026 10:00:{s:02d} AM",
    "Nov 25 10:00:{s:02d} db07 iostat[77]: 11/25/2026 10:00:{s:02d} AM",
    "Wed Nov 25 10:00:{s:02d} UTC 2026",
    "11/25/2026 10:00:{s:02d} AM extra",
    "11/25/2026 1:00:{s:02d} AM",
    "1764064800",
]


def _odd_line(line: str, rng: random.Random, s: int) -> list[str]:
    """A stamp, an avg-cpu line or a blank line made odd."""
    if re.match(r"\d\d/\d\d/\d{4} ", line):
        return [rng.choice(_STAMPS).format(s=s % 60)]
    if line.strip()[:1].isdigit():  # the avg-cpu numbers
        r = rng.randrange(9)
        if r == 0:
            return [line.replace(".", ",")]
        if r == 1:
            return [re.sub(r"\d+\.\d\d", "nan", line, count=1)]
        if r == 2:
            return [re.sub(r"\d+\.\d\d", "101.00", line, count=1)]
        if r == 3:
            return [line + "  0.00"]
        if r == 4:
            return [line[:20], line[20:]]
        if r == 5:
            return [line.replace("  ", "\t")]
        if r == 6:
            return ["", line]  # a blank line between the header and its numbers
        if r == 7:
            return [re.sub(r"\d+\.\d\d", "1.2.3", line, count=1)]
        return [line + " °"]
    if not line.strip():
        return [rng.choice(["", " ", "\t", "   \r", "\r", "  \t  "])]
    return [line]


def _odd(text: str, seed: int, share: float) -> bytes:
    rng = random.Random(seed)
    out: list[str] = []
    for i, line in enumerate(text.split("\n")):
        is_report_line = not line.strip() or re.match(r"(\d\d/\d\d/\d{4} |\s+\d+\.\d\d\s)", line)
        if is_report_line and rng.random() < share:
            out += _odd_line(line, rng, i)
        else:
            out.append(line)
    return "\n".join(out).encode()


def test_the_fast_path_runs_on_a_generated_capture(tmp_path, monkeypatch, core_lines):
    want = _same(_capture("iostat", tmp_path), monkeypatch)
    assert '"format":"iostat"' in want
    assert core_lines[0] > 500


@pytest.mark.parametrize("seed", range(6))
def test_odd_stamps_cpu_lines_and_blank_lines(tmp_path, monkeypatch, core_lines, seed):
    data = _capture("iostat", tmp_path)[: 64 * 1024].decode()
    _same(_odd(data, seed, 0.1 if seed % 2 else 0.5), monkeypatch)
    assert core_lines[0] > 100


@pytest.mark.parametrize("layout", ["x12", "x10", "k", "plain"])
def test_odd_report_lines_in_other_layouts(monkeypatch, layout):
    _same(_odd(_iostat_capture(layout, 60, 3), 9, 0.3), monkeypatch)


def test_a_two_column_layout_where_a_stamp_is_row_shaped(monkeypatch, core_lines):
    """`Device: tps kB_read/s` has two value columns: a stamp `11/25/2026 10:00:01 AM` is three
    tokens, a device row's count, so feed's first test sends it to _device_row, not to the stamp
    branch; the fast path must leave such a stamp to feed."""
    lines = ["Linux 5.14.0 (db07)  11/25/2026  _x86_64_  (16 CPU)", ""]
    rng = random.Random(4)
    for r in range(60):
        lines.append(f"11/25/2026 10:{r // 60:02d}:{r % 60:02d} AM")
        if r % 3:
            w = rng.uniform(0, 20)
            lines += [
                "avg-cpu:  %user   %nice %system %iowait  %steal   %idle",
                f"          10.00    0.00    2.00    {w:.2f}    0.00   {88 - w:.2f}",
                "",
            ]
        lines.append("Device:            tps    kB_read/s")
        for dev in ("sda", "sdb", "dm-0"):
            lines.append(f"{dev:<14}{rng.uniform(0, 99):8.2f} {rng.uniform(0, 900):10.2f}")
        lines.append("")
    want = _same(("\n".join(lines) + "\n").encode(), monkeypatch)
    assert '"format":"iostat"' in want
    assert core_lines[0] > 100


def test_the_core_off_takes_no_fast_path(tmp_path, monkeypatch, core_lines):
    """With the core off feed_run reads nothing: the reference is the line-by-line path."""
    monkeypatch.setattr(ostable, "NATIVE", False)
    from ingest.detect import parse_text

    parse_text(_capture("iostat", tmp_path).decode())
    assert core_lines[0] == 0
