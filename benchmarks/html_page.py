"""An AWR report saved as HTML, the form DBAs most often upload: the corpus's real 11g page
(shared/corpus/snippets/09, 1 MB, 92 tables) read by `ingest.html_report.html_lines` (libxml2
through lxml's parser target) beside `reference_html_lines` (the standard library's tokenizer
driving the same renderer: the reader perfkb used until 2026-12-03), in the same process and
run, alternating, CPU time (process_time), median of the repetitions. Two cases: the tokenizer
and renderer alone (the document's text lines), and the whole parse (`parse_stream` of the
page's bytes, as `perfkb analyze` reads a file), whose evidence must be the same both ways.
No target: issue #19's rows time generated text captures; this shows what the HTML form of
its AWR row costs.
"""

from __future__ import annotations

import io
import statistics
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

from benchmarks.report import Figure, ratio
from ingest import html_report
from ingest.detect import parse_stream

BENCH = "html_page"
PAGE = (
    Path(__file__).resolve().parents[2]
    / "shared/corpus/snippets/09_awr-html_solaris-ebs-11g-log-file-sync.html"
)
Reader = Callable[[Iterable[str]], Iterator[str]]


def _parse(raw: bytes, reader: Reader) -> dict:
    """parse_stream of `raw` with `reader` as the HTML reader the detector calls."""
    kept = html_report.html_lines
    html_report.html_lines = reader
    try:
        return parse_stream(io.BytesIO(raw)).model_dump(mode="json")
    finally:
        html_report.html_lines = kept


def run(full: bool) -> list[Figure]:
    reps = 9 if full else 5
    raw = PAGE.read_bytes()
    text = raw.decode("utf-8", errors="replace")
    mb = len(raw) / 2**20
    readers: dict[str, Reader] = {
        "libxml2": html_report.html_lines,
        "stdlib": html_report.reference_html_lines,
    }
    if _parse(raw, readers["libxml2"]) != _parse(raw, readers["stdlib"]):
        raise RuntimeError(f"{PAGE.name}: the two readers gave different evidence")
    cases: dict[str, Callable[[Reader], object]] = {
        "tokenize and lay out (html_lines)": lambda reader: list(reader([text])),
        "whole parse (parse_stream)": lambda reader: _parse(raw, reader),
    }
    figures = []
    for case, fn in cases.items():
        samples: dict[str, list[float]] = {name: [] for name in readers}
        for r in range(reps):  # alternate, so a slow minute falls on both
            for name in readers if r % 2 == 0 else reversed(readers):
                started = time.process_time()
                fn(readers[name])
                samples[name].append(time.process_time() - started)
        fast, ref = (statistics.median(samples[name]) for name in readers)
        figures.append(
            Figure(
                bench=BENCH,
                case=f"AWR page {mb:.1f} MB: {case}",
                metric="CPU, median",
                value=round(fast * 1000, 1),
                unit="ms",
                reference="the stdlib tokenizer, same renderer",
                ref_value=round(ref * 1000, 1),
                ratio=ratio(fast, ref),
                note=f"{mb / fast:.2f} MB/s against {mb / ref:.2f} MB/s",
                extra={
                    "reps": reps,
                    "samples_ms": {k: [round(x * 1000, 1) for x in v] for k, v in samples.items()},
                },
            )
        )
    return figures
