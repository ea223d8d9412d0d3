"""`perfkb analyze` reads big files with a progress bar: the bar must account for every byte,
but move per megabyte, not per line (per line cost a tenth of the analysis of a 10 MB capture)."""

from __future__ import annotations

import io

from kb.cli import PROGRESS_STEP, _lines


def test_lines_are_decoded_and_progress_counts_every_byte_in_few_steps():
    data = b"15697: 1.5426 read(3, 0x1, 10) = 10\n" * 100_000 + b"bad \xff byte\nlast"
    steps: list[int] = []
    lines = list(_lines(io.BytesIO(data), steps.append))
    assert len(lines) == 100_002
    assert lines[-2] == "bad \ufffd byte\n" and lines[-1] == "last"
    assert sum(steps) == len(data)
    assert len(steps) == len(data) // PROGRESS_STEP + 1


def test_lines_without_progress():
    assert list(_lines(io.BytesIO(b"a\nb"), None)) == ["a\n", "b"]
