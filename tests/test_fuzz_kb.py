"""The fuzz targets of issue 20 (fuzz/kb_targets.py): the entry path (YAML and JSON through
validation and the store's round trip) and the next-command filler. A short run of each holds its
contract here (the Makefile's `test` target also runs them for a few seconds each through
fuzz/run_fuzz.py), and each check is shown to catch what it is there to catch."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings

ROOT = Path(__file__).resolve().parents[1]


def _load(name: str, path: Path):
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


FUZZ = _load("perfkb_fuzz", ROOT / "fuzz" / "run_fuzz.py")
KB = sys.modules["kb_targets"]
TARGETS = ["entry-yaml", "entry-json", "commands"]


@pytest.mark.parametrize("target", TARGETS)
def test_short_run_holds_the_contract(target):
    check = FUZZ.targets()[target]

    @settings(
        max_examples=25 if target != "commands" else 150,
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(FUZZ.target_strategy(target, []))
    def run(text: str) -> None:
        check(text)

    run()


def test_inputs_are_really_hostile():
    """The entry strategy makes the cases issue 20 names: infinities, deep nesting, many tags."""
    import random

    rng = random.Random(7)
    starters = KB.starter_data()
    texts = [
        KB.render_entry(KB.mutate_entry(starters[i % len(starters)], rng, 4), rng, i % 2 == 0)
        for i in range(120)
    ]
    joined = "\n".join(texts)
    assert ".inf" in joined or ".nan" in joined
    assert "Infinity" in joined or "1e999" in joined
    assert any(t.count("not:") + t.count('"not"') >= 40 for t in texts)
    assert any(t.count("- Tag") >= 300 or t.count('"Tag"') >= 300 for t in texts)


@pytest.mark.parametrize(
    "text",
    [
        "id: a-b\ntitle: abc\nsymptom: s\nroot_cause: r\nfix: f\nplatforms: [linux]\n"
        "signatures:\n- name: n\n  sources: [waits]\n  weight: .inf\n"
        "  when: {fact: waits.top_pct, op: '>=', value: .nan}\n",
        "id: a-b\ntitle: abc\n" + "title: again\n",
        "[" * 5000,
        "\x00\x01",
    ],
)
def test_known_poison_entries_are_refused_or_round_trip(text):
    KB.check_entry_yaml(text)
    KB.check_entry_json(text)
    as_json = json.dumps({"id": "a-b", "title": "abc", "weight": float("inf")})
    KB.check_entry_json(as_json.replace("Infinity", "1e999"))


def test_entry_check_catches_an_entry_that_changes_in_the_store(monkeypatch):
    from kb.store import Store

    real_get = Store.get

    def altered(self, entry_id, **kw):
        entry = real_get(self, entry_id, **kw)
        return entry.model_copy(update={"title": entry.title + " (changed)"})

    monkeypatch.setattr(Store, "get", altered)
    text = (ROOT / "kb" / "entries" / "log-buffer-space.yaml").read_text()
    with pytest.raises(KB.ContractError, match="store"):
        KB.check_entry_yaml(text)


def test_command_check_catches_a_filler_that_does_not_quote(monkeypatch):
    from kb import command_fill

    monkeypatch.setattr(command_fill, "quote", lambda value, context: value)
    with pytest.raises(KB.ContractError):
        KB.check_command_value("a b")
    with pytest.raises(KB.ContractError):
        KB.check_command_value("x'; id; '")


def test_command_templates_cover_playbook_entries_and_every_kind():
    from kb import command_fill

    templates = KB.command_templates()
    assert any("active_session_history" in t and "{event:sql}" in t for t in templates)
    assert any("{syscall:script}" in t for t in templates)
    assert sum("PID" in t for t in templates) > 30  # the starter entries' own commands
    for kind in command_fill.KINDS:
        assert any(f"{{{kind}:sql}}" in t for t in templates)


def test_the_bounded_run_of_make_test_finishes_and_reports(tmp_path):
    """What `make test` runs, at 1 s per target: exit 0 and every target ran inputs."""
    out = tmp_path / "outcomes.json"
    proc = subprocess.run(
        [
            sys.executable,
            str(ROOT / "fuzz" / "run_fuzz.py"),
            "--only",
            *TARGETS,
            "--seconds",
            "1",
            "--jobs",
            "1",
            "--out",
            str(tmp_path / "failures"),
            "--json",
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    outcomes = json.loads(out.read_text())
    assert [o["target"] for o in outcomes] == TARGETS
    assert all(o["inputs"] > 0 and o["failures"] == 0 for o in outcomes)


def test_a_bounded_run_checks_at_least_one_input_however_short(tmp_path):
    """--seconds is time spent fuzzing: the warm-up is not counted, and the first input runs
    even when the clock is already past the bound (a slow box once left a 1 s target with none)."""
    outcome = FUZZ.run_hypothesis("commands", 50, 2.0, tmp_path, seed=1, seconds=1e-9)
    assert outcome.inputs == 1 and outcome.failures == 0
