"""The catalogue says how a fact is shown (label, unit) and `number` is the one number format:
the explanations, the CLI and the Slack reply read them from ingest/facts.py."""

from __future__ import annotations

import math

import pytest

from ingest.facts import FACTS, FactSpec, number, show, spec_of


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        (49460.5, "49,460"),  # the CLI printed 4.946e+04
        (1234567, "1,234,567"),
        (100.0, "100"),
        (12.0, "12"),
        (12.345, "12.35"),
        (7.1, "7.1"),
        (0.000123, "0.000123"),
        (0.5, "0.5"),
        (-3.25, "-3.25"),
        (math.inf, "inf"),
        (True, "True"),
    ],
)
def test_number(value, shown):
    assert number(value) == shown


def test_no_number_is_ever_printed_with_an_exponent():
    for exponent in range(-6, 13):
        for mantissa in (1.0, 4.946, 9.99):
            assert "e" not in number(mantissa * 10**exponent)


def test_units_and_labels_come_from_the_name_unless_the_spec_says():
    assert (FACTS["syscall.avg_ms"].label, FACTS["syscall.avg_ms"].unit) == ("avg", "ms")
    assert (FACTS["trace.span_s"].label, FACTS["trace.span_s"].unit) == ("span", "s")
    assert FACTS["event.pct_of_waited"].unit == "%"
    assert FACTS["event.pct_of_db_time"].label == "share of DB time"
    assert FACTS["trace.calls"].unit == ""


def test_every_catalogue_fact_has_a_label():
    assert all(spec.label.strip() for spec in FACTS.values())


def test_show():
    assert show("syscall.avg_ms", 12.5) == "12.5 ms"
    assert show("event.pct_of_db_time", 41.0) == "41 %"
    assert show("trace.calls", 120000) == "120,000"
    assert show("waits.top_event", "log file sync") == "log file sync"


def test_a_name_outside_the_catalogue_is_shown_by_the_same_rules():
    assert spec_of("made.up_thing_ms").show(3) == "3 ms"
    assert spec_of("made.up_thing_ms").label == "up thing"
    assert FactSpec(name="x.y_pct", sources=(), doc="").unit == "%"
