"""One analysis path (issue #19): pastes, uploads, API calls and Slack files are parsed by the
batch path (`Detector.feed_text`) the CLI uses, and give exactly what parsing the same text line
by line gives (`parse_lines`, the reference) on every fixture, however the text is cut."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from starlette.datastructures import UploadFile

from ingest.detect import (
    LINES_AT_ONCE,
    Detector,
    line_chunks,
    parse_chunks,
    parse_lines,
    parse_text,
)
from kb.analysis import analyze_chunks, analyze_lines, analyze_text
from kb.web import pages

FIXTURES = Path(__file__).resolve().parent / "fixtures"
FILES = sorted(
    p for p in FIXTURES.rglob("*") if p.is_file() and p.suffix in (".txt", ".trc", ".html")
)


def _evidence(ev) -> dict:
    # total_bytes counts what each caller handed over (with or without newlines): not compared
    return ev.model_dump(mode="json", exclude={"total_bytes"})


def _cut(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)]


def test_there_are_fixtures():
    assert len(FILES) > 40


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(FIXTURES)))
def test_every_way_in_parses_like_the_line_by_line_reference(path: Path):
    text = path.read_text(encoding="utf-8", errors="replace")
    want = _evidence(parse_lines(io.StringIO(text)))
    assert _evidence(parse_text(text)) == want
    for size in (1, 7, 4096):
        assert _evidence(parse_chunks(_cut(text, size))) == want, size
    assert _evidence(parse_chunks(line_chunks(io.StringIO(text)))) == want
    stripped = [line.rstrip("\n") for line in io.StringIO(text)]
    assert _evidence(parse_chunks(line_chunks(stripped, size=256))) == want


@pytest.mark.parametrize("size", [1, 64, 1 << 20])
def test_line_chunks_end_every_line_whatever_kind_of_lines_it_is_given(size: int):
    lines = ["a", "", "b\n", "c", "\n", "d\n"] * 300  # lines with and without their newline
    pieces = list(line_chunks(lines, size=size))
    assert "".join(pieces) == "a\n\nb\nc\n\nd\n" * 300
    for kind in (
        [x.rstrip("\n") for x in lines],
        [x if x.endswith("\n") else x + "\n" for x in lines],
    ):
        assert "".join(line_chunks(kind, size=size)) == "a\n\nb\nc\n\nd\n" * 300
    if size == 1:  # a piece closes once it holds `size` characters: here after each batch
        assert len(pieces) == -(-len(lines) // LINES_AT_ONCE)


HTML_DOC = (
    "<!DOCTYPE html>\n<html><body><h1>Top 10 Foreground Events</h1>\n<table>\n"
    "<tr><th>Event</th><th>Waits</th><th>Total Wait Time (sec)</th></tr>\n"
    "<tr><td>log file sync</td><td>1,204</td><td>88.1</td></tr>\n</table></body></html>\n"
)


@pytest.mark.parametrize(
    "before", ["", "here is the report:\n", "  <b>not a document</b>\n<p>\n", "a\n \t"]
)
def test_an_html_document_after_other_lines_is_read_as_parse_lines_reads_it(before: str):
    text = before + HTML_DOC
    want = _evidence(parse_lines(io.StringIO(text)))
    for size in (1, 5, 64, 1 << 20):
        assert _evidence(parse_chunks(_cut(text, size))) == want, size
    assert _evidence(parse_chunks(line_chunks(text.splitlines()))) == want


def test_the_analysis_surfaces_agree():
    text = (FIXTURES / "seeds" / "001_truss_shmdt.txt").read_text(encoding="utf-8")
    dumps = {
        name: result.model_dump(mode="json", exclude={"elapsed_ms"})
        for name, result in (
            ("text", analyze_text(text)),
            ("lines", analyze_lines(text.splitlines())),
            ("chunks", analyze_chunks(_cut(text, 100))),
        )
    }
    assert dumps["text"]["blocks"]
    assert dumps["text"] == dumps["lines"] == dumps["chunks"]


def _upload(data: bytes) -> UploadFile:
    return UploadFile(io.BytesIO(data), filename="capture.txt", size=len(data))


def _old_kept(data: bytes, cap: int) -> str:
    """What the line-by-line upload reader kept for the permalink: every line starting within
    the first `cap` characters."""
    kept, n = [], 0
    stream = io.TextIOWrapper(io.BytesIO(data), encoding="utf-8", errors="replace", newline=None)
    for line in stream:
        if n < cap:
            kept.append(line)
            n += len(line)
    return "".join(kept)


@pytest.mark.parametrize("cap", [1, 10, 11, 12, 40, 10_000])
@pytest.mark.parametrize("block", [3, 16, 1 << 20])
def test_uploads_are_read_in_blocks_and_keep_what_they_kept(monkeypatch, cap, block):
    data = b"first line\r\nsecond\rthird \xff byte\n" + b"x" * 30 + b"\nlast without newline"
    monkeypatch.setattr(pages, "UPLOAD_BLOCK", block)
    kept: list[str] = []
    chunks = list(pages._upload_chunks(_upload(data), kept, cap))
    text = "".join(chunks)
    reference = io.TextIOWrapper(io.BytesIO(data), encoding="utf-8", errors="replace", newline=None)
    assert text == reference.read()  # universal newlines, U+FFFD for the bad byte
    assert max(len(c) for c in chunks) <= block
    assert "".join(kept) == _old_kept(data, cap)


# -- blank lines on the batch path -------------------------------------------------------------
# Detector.feed_text hands a bare "\n" line straight to _line (what _raw would do for it after
# its checks, none of which can fire on an empty line): iostat, DTrace and mpstat print one
# between every report or stack. The evidence and the line accounting must be what the
# line-by-line reference gives, whatever opens or closes around the blank lines.

_BLANKS = sorted(
    p
    for p in (FIXTURES / "os").glob("*.txt")
    if p.name.split("_")[0] in {"iostat", "mpstat", "vmstat", "pstack", "gdb", "sar", "pidstat"}
) + sorted((FIXTURES.parents[2] / "shared" / "corpus" / "snippets").glob("*_iostat-x_*.txt"))


@pytest.mark.parametrize("path", _BLANKS, ids=lambda p: p.name)
def test_blank_lines_on_the_batch_path_read_as_line_by_line(path):
    text = path.read_text(errors="replace")
    # blank lines doubled, at the start, between blocks and in a fence, and a paste ending in
    # blank lines: every place a bare newline can reach the detector from
    variants = [
        text,
        "\n\n" + text.replace("\n\n", "\n\n\n") + "\n\n",
        "some prose\n\n```\n" + text + "\n```\n\nafter\n",
    ]
    for variant in variants:
        want = Detector()
        want.feed_lines(variant.splitlines(keepends=True))
        expected = want.finish()
        got = Detector()
        got.feed_text(variant)
        evidence = got.finish()
        assert evidence.model_dump_json() == expected.model_dump_json(), path.name
        assert (evidence.total_lines, evidence.total_bytes) == (
            variant.count("\n") + (not variant.endswith("\n")),
            len(variant),
        )
