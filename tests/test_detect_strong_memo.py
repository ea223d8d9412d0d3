"""The detector remembers, per line text, whether another format starts there (a speed-up for
captures that repeat lines, such as truss -v continuation lines). Remembering must never change
a block boundary: every fixture under tests/fixtures/ and two generated captures are parsed with
the memo and with the check recomputed on every line, and must give the same evidence."""

from __future__ import annotations

from pathlib import Path

import pytest

from ingest import detect
from ingest.base import Parser
from ingest.detect import Detector

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = sorted(p for p in (ROOT / "tests" / "fixtures").rglob("*.txt"))


class _NoMemo(Detector):
    def _strong_other(self, line: str, current: type[Parser]) -> bool:
        return any(p is not current and p.start_score(line) == 2 for p in self.parser_types)


def _both(text: str) -> tuple[str, str]:
    out = []
    for cls in (Detector, _NoMemo):
        d = cls()
        d.feed_lines(text.splitlines(keepends=True))
        out.append(d.finish().model_dump_json())
    return out[0], out[1]


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: str(p.relative_to(ROOT / "tests")))
def test_memo_changes_no_block_in_any_fixture(path):
    memo, plain = _both(path.read_text(encoding="utf-8", errors="replace"))
    assert memo == plain


def test_memo_keeps_boundaries_in_repetitive_generated_captures(tmp_path):
    from benchmarks.gen_traces import generate

    for kind in ("truss", "strace"):
        path = tmp_path / kind
        generate(kind, 96 * 1024, path)
        # the same capture twice, an mpstat sample between: three blocks either way
        mpstat = (ROOT / "tests" / "fixtures" / "seeds" / "001_mpstat.txt").read_text()
        text = path.read_text() + mpstat + path.read_text()
        memo, plain = _both(text)
        assert memo == plain


def test_memo_is_bounded(monkeypatch):
    monkeypatch.setattr(detect, "STRONG_MEMO", 8)
    d = Detector()
    lines = ["15697: 1.0000 read(3, 0x1, 10) = 10\n"]
    lines += [f"15697: fd={i} ev=POLLIN rev=0\n" for i in range(50)]
    d.feed_lines(lines)
    assert len(d._strong_memo) <= 8
    assert d.finish().blocks[0].lines == 51
