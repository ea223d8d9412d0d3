"""The fact catalogue as data (ingest/data/facts.yaml): every fact it lists is whole, and the
tables the renderers read from it (bar charts, proposal findings) name facts that exist, of
the right shape, produced by the formats they are drawn or proposed for."""

from __future__ import annotations

import yaml

from ingest import facts
from ingest.facts import CATALOGUE_PATH, FACTS, bar_charts, findings


def test_every_row_of_the_file_is_a_fact_with_a_doc() -> None:
    data = yaml.safe_load(CATALOGUE_PATH.read_text(encoding="utf-8"))
    rows = [row for family in data["families"] for row in family["facts"]]
    assert len(rows) == len(FACTS)  # no name twice
    for row in rows:
        spec = FACTS[row["name"]]
        assert spec.doc and spec.sources and spec.label
        assert spec.kind in ("number", "string")


def test_a_family_gives_its_defaults_and_a_row_may_say_otherwise() -> None:
    syscall = FACTS["syscall.avg_ms"]  # only the family's sources and key
    assert syscall.sources == facts.SYSCALL_SOURCES and syscall.keyed_by == "syscall"
    assert syscall.label == "avg" and syscall.unit == "ms"
    assert FACTS["trace.calls"].keyed_by is None  # `keyed_by: null` in the syscall family


def test_bar_charts_name_keyed_facts_their_formats_produce() -> None:
    charts = [c for fmt in ("pidstat", "prstat") for c in bar_charts(fmt)]
    assert charts
    for chart in charts:
        spec = FACTS[chart.fact]
        assert spec.keyed_by is not None
        assert any(fmt in spec.sources for fmt in chart.formats)
    assert [c.unit for c in bar_charts("pidstat")][:1] == ["%"]
    assert bar_charts("truss") == []


def test_findings_name_scalar_number_facts() -> None:
    assert findings()
    for finding in findings():
        spec = FACTS[finding.fact]
        assert spec.keyed_by is None and spec.kind == "number"
        assert finding.from_ > 0
