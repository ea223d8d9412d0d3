"""Signatures are data people write, and their regular expressions run on whatever is pasted.
A pattern that backtracks catastrophically is refused when the entry is validated (at every
door: the library, `perfkb add`, the API); a pattern that is accepted runs on RE2, in time
linear in the text; and one analysis does bounded work however large the paste."""

from __future__ import annotations

import time

import httpx
import pytest
from typer.testing import CliRunner

from ingest.context import PROSE_CAP
from ingest.detect import MAX_LINE
from ingest.model import TEXT_CAP
from kb.analysis import analyze_text
from kb.cli import app as cli_app
from kb.entry_yaml import dump_entry
from kb.evaluate import MAX_TEXT_MATCHES, eval_text
from kb.models import EntryError, validate_entry
from kb.settings import Settings
from kb.signatures import TextCondition
from kb.store import Store
from kb.web.devserver import running_server

pytestmark = pytest.mark.timeout(60)

NESTED = "catastrophic-backtracking regular expression: nested quantifier"
MB = 1024 * 1024


def text_signature(pattern: str, **extra) -> list[dict]:
    return [
        {
            "name": "pattern",
            "sources": ["text"],
            "weight": 0.5,
            "when": {"regex": pattern, **extra},
        }
    ]


@pytest.mark.parametrize(
    "pattern",
    [r"(a+)+$", r"(\w+\s?)*$", r"(a*)*b", r"((ab)+)+c", r"(?:x+y?)+z", r"(a{1,500})+"],
)
def test_nested_quantifiers_are_refused_at_validation(raw_entry, pattern):
    with pytest.raises(EntryError) as caught:
        validate_entry(raw_entry("redos", signatures=text_signature(pattern)))
    assert caught.value.problems == [
        (
            "signatures[0].when",
            f"{NESTED} (a repeated group that itself repeats, like (a+)+)",
        )
    ]


def test_perfkb_add_refuses_an_entry_holding_a_dangerous_regex(raw_entry, make_entry, tmp_path):
    data_dir = tmp_path / "data"
    with Store(Settings(data_dir=data_dir)) as store:
        store.add(make_entry("already-here"), author="t")
    good = validate_entry(raw_entry("redos", signatures=text_signature(r"a+$")))
    path = tmp_path / "redos.yaml"
    path.write_text(dump_entry(good).replace("a+$", "(a+)+$"), encoding="utf-8")
    assert "(a+)+$" in path.read_text(encoding="utf-8")

    result = CliRunner().invoke(cli_app, ["--data-dir", str(data_dir), "add", str(path)])
    assert result.exit_code == 1
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith(f"perfkb: error: {path}: entry 'redos': signatures[0].when: {NESTED}")
    assert "Traceback" not in result.output
    with Store(Settings(data_dir=data_dir)) as store:
        assert [e.id for e in store.list_entries()] == ["already-here"]


def test_the_api_refuses_a_dangerous_regex_with_422(raw_entry, tmp_path):
    settings = Settings(data_dir=tmp_path / "data", api_token="t0ken-for-regex-tests-123456")
    data = raw_entry("redos", signatures=text_signature(r"(a+)+$"))
    body = {k: (v.isoformat() if hasattr(v, "isoformat") else v) for k, v in data.items()}
    with running_server(settings) as url, httpx.Client(base_url=url) as client:
        r = client.post(
            "/api/entries",
            json=body,
            headers={"Authorization": "Bearer t0ken-for-regex-tests-123456"},
        )
        assert r.status_code == 422
        assert r.json()["detail"] == [
            {
                "loc": "signatures[0].when",
                "msg": f"{NESTED} (a repeated group that itself repeats, like (a+)+)",
            }
        ]
        assert client.get("/api/entries/redos").status_code == 404


# Accepted (no nested quantifier) but exponential for a backtracking engine on a run of a's
# with no b: Python's re takes about twice as long for every two more a's.
ACCEPTED_BUT_BACKTRACKING = [r"(a|aa)*b", r"(a|a)*b", r"(a|aa)*c$", r"(?:a|ab|aab)*x"]


@pytest.mark.parametrize("pattern", ACCEPTED_BUT_BACKTRACKING)
def test_accepted_patterns_run_in_linear_time_on_a_megabyte_of_a(raw_entry, pattern):
    entry = validate_entry(raw_entry("linear", signatures=text_signature(pattern)))
    cond = entry.signatures[0].when
    assert isinstance(cond, TextCondition)
    text = "a" * MB
    started = time.perf_counter()
    outcome = eval_text(cond, text)
    one_mb = time.perf_counter() - started
    assert not outcome.held and outcome.observed.endswith("seen 0 times")
    assert one_mb < 0.5, f"{pattern} took {one_mb:.2f} s on 1 MB"
    started = time.perf_counter()
    eval_text(cond, "a" * (4 * MB))
    four_mb = time.perf_counter() - started
    assert four_mb < 2.0, f"{pattern} took {four_mb:.2f} s on 4 MB"


def test_an_analysis_with_such_an_entry_stays_fast_on_a_large_paste(raw_entry):
    entry = validate_entry(
        raw_entry(
            "long-runs",
            signatures=[
                *text_signature(r"(a|aa)*b"),
                {
                    "name": "many-as",
                    "sources": ["text"],
                    "weight": 0.4,
                    "when": {"regex": r"a{1000}", "min_count": 3},
                },
            ],
        )
    )
    paste = "```\n" + ("a" * 60_000 + "\n") * 80 + "```\nprose " + "a" * 3 * MB
    started = time.perf_counter()
    result = analyze_text(paste, entries=[entry])
    elapsed = time.perf_counter() - started
    assert elapsed < 10, f"analysis took {elapsed:.1f} s"
    (match,) = result.matches
    by_name = {s.name: s for s in match.signatures}
    assert not by_name["pattern"].held
    assert by_name["many-as"].held  # the condition ran on the capped text, and found the runs


def test_text_seen_by_conditions_is_capped(raw_entry):
    """A 5 MB single line, and 2 MB in fences: lines are cut, each block keeps at most
    TEXT_CAP, prose at most PROSE_CAP, and a condition counts at most MAX_TEXT_MATCHES."""
    one_line = analyze_text("x" * (5 * MB))
    assert all(len(b.text) <= MAX_LINE for b in one_line.blocks)
    assert len(one_line.context.prose) <= MAX_LINE

    fenced = analyze_text("```\n" + ("y" * 1000 + "\n") * 2048 + "```\n")
    assert all(len(b.text.encode()) <= TEXT_CAP for b in fenced.blocks)
    assert any(b.text_truncated for b in fenced.blocks)

    prose = analyze_text(("words of prose " * 60 + "\n") * 400)
    assert len(prose.context.prose) <= PROSE_CAP + 1000

    cond = TextCondition(regex="a")
    outcome = eval_text(cond, "a" * (MAX_TEXT_MATCHES * 3))
    assert outcome.observed == f"/a/ seen {MAX_TEXT_MATCHES} times"
