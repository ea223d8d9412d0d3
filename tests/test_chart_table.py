"""The web page's charts are a table in the fact catalogue (ingest/data/facts.yaml
`block_charts`): every format that has charts is in it, every fact a row names is in the
catalogue and produced by the row's formats, every details key and series it reads is one the
parser really writes, and every row draws on real evidence. kb/web/charts.py only draws kinds."""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path

import pytest
from pydantic import ValidationError

from ingest.detect import parse_text
from ingest.facts import FACTS, BlockChart, _block_charts, bar_charts, block_charts
from ingest.model import Block
from ingest.parsers.mpstat import CPU_COLUMNS
from kb.web import charts

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT.parent / "shared" / "corpus"
# the formats kb/web/charts.py drew charts for when the table was written into the catalogue
CHARTED = [
    *("mpstat", "truss", "strace", "vdollar", "waits", "tkprof", "trace10046"),
    *("vmstat", "sar", "iostat", "pidstat", "prstat", "perf", "lockstat", "top"),
    *("meminfo", "free", "procvmstat", "pressure", "stack", "dtrace"),
]
# rows no fixture or snippet draws (perf folded stacks, without a perf report table): their
# behaviour is tested on a made block below
UNSEEN = {("perf",): "Most frequent functions"}


@lru_cache(maxsize=1)
def evidence_blocks() -> dict[str, list[Block]]:
    """Every block of every fixture and corpus snippet, by format."""
    snippets = CORPUS / "snippets"
    assert snippets.is_dir(), f"the corpus is missing: {snippets}"
    files = [p for p in (ROOT / "tests" / "fixtures").rglob("*") if p.is_file()]
    files += [p for p in snippets.iterdir() if p.is_file()]
    out: dict[str, list[Block]] = {}
    for path in sorted(files):
        text = path.read_text(encoding="utf-8", errors="replace")
        for block in parse_text(text).blocks:
            out.setdefault(block.format, []).append(block)
    return out


def test_every_charted_format_has_rows() -> None:
    for fmt in CHARTED:
        assert block_charts(fmt) or bar_charts(fmt), fmt


def test_rows_name_catalogue_facts_of_their_formats_and_shape() -> None:
    keyed_roles = lambda c: [*c.facts, *(n.fact for n in c.notes), c.share_of, c.when, c.unless]  # noqa: E731
    for chart in _block_charts():
        for name in chart.fact_names():
            spec = FACTS.get(name)
            assert spec is not None, (chart.caption, name)
            assert set(spec.sources) & set(chart.formats), (chart.caption, name, spec.sources)
        for name in keyed_roles(chart):
            if name:
                assert FACTS[name].keyed_by is not None, (chart.caption, name)
        scalars = [*chart.scalars, chart.threshold, chart.total, *chart.requires]
        for name in scalars + [p.fact for p in chart.parts]:
            if name:
                assert FACTS[name].keyed_by is None, (chart.caption, name)


def test_every_row_draws_on_real_evidence() -> None:
    blocks = evidence_blocks()
    for chart in _block_charts():
        if UNSEEN.get(chart.formats) == chart.caption:
            continue
        drawn = {
            c
            for fmt in chart.formats
            for b in blocks.get(fmt, [])
            for c, _ in charts.block_charts(b)
        }
        head = chart.caption.split("{}")[0]
        assert any(c.startswith(head) for c in drawn), chart.caption


def test_details_keys_and_series_are_what_the_parsers_write() -> None:
    blocks = evidence_blocks()
    for chart in _block_charts():
        if not chart.details:
            continue
        for fmt in chart.formats:
            seen = [b.details[chart.details] for b in blocks[fmt] if chart.details in b.details]
            assert seen, (fmt, chart.details)
            if chart.series:
                names = {n for s in seen for n in s}
                assert set(chart.series) <= names, (fmt, set(chart.series) - names)
            if chart.columns:
                names = {k for rows in seen for row in rows for k in row}
                wanted = {n for cols in chart.columns.values() for n in cols}
                assert wanted <= names and wanted <= set(CPU_COLUMNS), wanted - names


def test_the_renderer_names_no_format_and_draws_every_kind() -> None:
    source = Path(charts.__file__).read_text(encoding="utf-8")
    for fmt in CHARTED:
        assert not re.search(rf"[\"']{fmt}[\"']", source), fmt
    kinds = BlockChart.model_fields["kind"].annotation.__args__
    assert set(charts._KINDS) == set(kinds)


def test_a_row_that_cannot_draw_is_refused() -> None:
    ok = {"formats": ["vmstat"], "kind": "hbars", "caption": "c", "title": "t", "facts": ["x"]}
    assert BlockChart.model_validate(ok).limit == 12
    for bad in (
        {**ok, "facts": []},
        {**ok, "kind": "series_lines"},  # reads no details key
        {**ok, "kind": "pie"},
        {**ok, "colour": "red"},
        {**ok, "kind": "split_bar", "parts": [{"class": "a", "label": "b"}]},  # part of nothing
    ):
        with pytest.raises(ValidationError):
            BlockChart.model_validate(bad)


def test_units_come_from_the_catalogue_unless_a_row_says() -> None:
    by_caption = {c.caption: c for c in _block_charts()}
    assert by_caption["Time by syscall"].unit == " ms"  # syscall.total_ms
    assert by_caption["ASH time by event"].unit == " s"  # ash.seconds is in s
    assert by_caption["Hottest locks"].unit == ""  # counts: the row says no unit


def test_a_note_joins_every_fact_that_has_the_key() -> None:
    block = Block(
        format="iostat",
        start_line=1,
        end_line=1,
        facts={
            "dev.await_ms": {"sda": 40.0, "sdb": 2.0},
            "dev.util_pct": {"sda": 97.0},
            "dev.queue": {"sda": 3.5, "sdb": 0.2},
        },
    )
    svg = dict(charts.block_charts(block))["Device latency (await)"]
    assert "40 ms · 97% util · queue 3.5" in svg
    assert "2 ms · queue 0.2" in svg


def test_perf_folded_stacks_chart_frames_only_without_a_report_table() -> None:
    folded = Block(format="perf", start_line=1, end_line=1, facts={"frame.top": {"kcbgtcr": 40.0}})
    assert [c for c, _ in charts.block_charts(folded)] == ["Most frequent functions"]
    report = folded.model_copy(
        update={"facts": {**folded.facts, "symbol.self_pct": {"kcbgtcr": 12.5}}}
    )
    assert [c for c, _ in charts.block_charts(report)] == ["Hottest functions"]
