"""One analysis path: a 10 MB paste analysed the way the web page, the API and the Slack bot do
it (`kb.analysis.analyze_text`; an upload through `analyze_chunks` in 1 MB blocks; a Slack file's
bytes, as the download hands them on in 64 KB chunks, through the bot's decoder
(`bot.download.decode_text`) and `analyze_chunks`), against what `perfkb analyze FILE` does with the same bytes
(`ingest.detect.parse_stream` and `analyze_evidence`), in the same process and run, CPU time
(process_time), median of the repetitions. The line-by-line path the surfaces used before
(`parse_lines`) is measured too, as the old figure.

All run against the starter entries (kb/entries/) compiled once, without a store, so only the
parsing path differs between the rows.
"""

from __future__ import annotations

import io
import statistics
import time

from benchmarks.gen_traces import MB, ensure
from benchmarks.report import Figure, ratio
from benchmarks.synth_kb import real_entries
from bot.download import CHUNK as DOWNLOAD_CHUNK
from bot.download import decode_text
from ingest.detect import parse_lines, parse_stream
from kb.analysis import analyze_chunks, analyze_evidence, analyze_lines, analyze_text
from kb.matcher import Matcher

BENCH = "onepath"
TARGET_RATIO = 1.5


def _cpu(fn, reps: int) -> float:
    samples = []
    for _ in range(reps):
        t = time.process_time()
        fn()
        samples.append(time.process_time() - t)
    return statistics.median(samples)


def run(full: bool) -> list[Figure]:
    reps = 5 if full else 3
    path, exp = ensure("truss", "10MB")
    data = path.read_bytes()
    text = data.decode("utf-8", errors="replace")
    m = Matcher(list(real_entries()))
    blocks = [text[i : i + MB] for i in range(0, len(text), MB)]
    lines = text.splitlines()
    downloaded = [data[i : i + DOWNLOAD_CHUNK] for i in range(0, len(data), DOWNLOAD_CHUNK)]
    cases = {
        "CLI: parse_stream of the file": lambda: analyze_evidence(
            parse_stream(io.BytesIO(data)), matcher=m
        ),
        "paste / API / Slack message: analyze_text": lambda: analyze_text(text, matcher=m),
        "upload: analyze_chunks, 1 MB blocks": lambda: analyze_chunks(iter(blocks), matcher=m),
        "Slack file: decode_text, analyze_chunks": lambda: analyze_chunks(
            decode_text(iter(downloaded), "file", len(data)), matcher=m
        ),
        "a file's lines: analyze_lines": lambda: analyze_lines(lines, matcher=m),
        "before: line by line (parse_lines)": lambda: analyze_evidence(
            parse_lines(io.StringIO(text)), matcher=m
        ),
    }
    cpu = {name: _cpu(fn, reps) for name, fn in cases.items()}
    ref_name = "CLI: parse_stream of the file"
    ref = cpu[ref_name]
    figures = []
    for name, value in cpu.items():
        if name == ref_name:
            continue
        r = ratio(value, ref)
        before = name.startswith("before")
        figures.append(
            Figure(
                bench=BENCH,
                case=f"truss {exp.bytes / MB:.0f} MB",
                metric=name,
                value=round(value * 1000, 1),
                unit="ms CPU",
                reference=ref_name,
                ref_value=round(ref * 1000, 1),
                ratio=r,
                target="" if before else f"≤ {TARGET_RATIO:g}×",
                met=None if before else (r is not None and r <= TARGET_RATIO),
                extra={"reps": reps, "bytes": exp.bytes},
            )
        )
    return figures
