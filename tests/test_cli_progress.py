"""`perfkb analyze` reads big files with a progress bar (ingest.detect.parse_stream's `advance`):
the bar must account for every byte, but move per block read, not per line (per line cost a
tenth of the analysis of a 10 MB capture)."""

from __future__ import annotations

import io

from ingest.detect import CHUNK, parse_stream


def test_progress_counts_every_byte_in_few_steps():
    # truss -d read() lines in the shape of seed 000's capture, then a line with a bad byte
    data = b"15697: 1.5426 read(3, 0x1, 10) = 10\n" * 100_000 + b"bad \xff byte\nlast"
    steps: list[int] = []
    evidence = parse_stream(io.BytesIO(data), steps.append)
    assert sum(steps) == len(data)
    assert len(steps) == len(data) // CHUNK + 1
    assert evidence.total_lines == 100_002
    assert evidence.blocks[0].facts["syscall.count"]["read"] == 100_000


def test_parse_stream_without_progress():
    assert parse_stream(io.BytesIO(b"a\nb"), None).total_lines == 2
