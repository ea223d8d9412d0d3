"""Knowledge a DBA can trust (issue 16): every entry is proved on evidence, ranks first on its own
positive fixtures and stays low on its healthy look-alikes; no entry rises above low on any healthy
evidence in the repository or on any corpus snippet whose reader's notes say no problem is shown;
`perfkb check --kb` refuses an entry without fixtures, SQL statements mixed on one line and
signatures built on preconditions alone; the first-five-minutes fields reach every renderer.

Fixtures live in tests/fixtures/kb/<entry-id>/: `positive*.txt` / `healthy*.txt` are evidence,
`positive*.ref` / `healthy*.ref` hold the path (under tests/fixtures) of evidence another test
already reads, so it is referenced rather than copied."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from ingest.detect import parse_text
from kb.analysis import analyze_evidence
from kb.entry_yaml import dump_entry, load_entry
from kb.kbcheck import check_kb, mixed_statements, precondition_only
from kb.matcher import Matcher
from kb.models import Entry, NextCommand, validate_entry
from kb.signatures import Signature

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures"
KB_FIXTURES = FIXTURES / "kb"
CORPUS = ROOT.parent / "shared" / "corpus"
ENTRIES = [
    load_entry(p.read_text(encoding="utf-8"), p.name)
    for p in sorted((ROOT / "kb" / "entries").glob("*.yaml"))
]
BY_ID = {e.id: e for e in ENTRIES}
MATCHER = Matcher(ENTRIES)

# Healthy evidence elsewhere in the repository (read by other tests as well).
REPO_HEALTHY = [
    "match/strace_ls_ordinary.txt",
    "os/mpstat_linux_healthy.txt",
    "seeds/000_dtrace_counts_121.txt",
    "seeds/000_strace_c_19c.txt",
    "seeds/003_waits_securefile.txt",
]


def _files(entry_id: str, role: str) -> list[Path]:
    here = KB_FIXTURES / entry_id
    out = sorted(here.glob(f"{role}*.txt"))
    for ref in sorted(here.glob(f"{role}*.ref")):
        out.append(FIXTURES / ref.read_text(encoding="utf-8").strip())
    return out


def _cases(role: str) -> list[tuple[str, Path]]:
    return [(e.id, f) for e in ENTRIES for f in _files(e.id, role)]


def _analyze(path: Path):
    return analyze_evidence(
        parse_text(path.read_text(encoding="utf-8", errors="replace")), matcher=MATCHER
    )


def _id(case: tuple[str, Path]) -> str:
    return f"{case[0]}:{case[1].name}"


# -- every entry proved on evidence ------------------------------------------------------------


def test_the_kb_keeps_the_trust_rules() -> None:
    """The same rules as `perfkb check --kb`: fixtures, one statement per line, no signature
    that holds on preconditions alone."""
    assert [p.line() for p in check_kb(ENTRIES, KB_FIXTURES)] == []


@pytest.mark.parametrize("entry_id", sorted(BY_ID))
def test_every_entry_has_a_positive_and_a_healthy_fixture(entry_id: str) -> None:
    assert _files(entry_id, "positive"), "no positive fixture"
    assert _files(entry_id, "healthy"), "no healthy look-alike"
    for f in _files(entry_id, "positive") + _files(entry_id, "healthy"):
        assert f.is_file(), f


@pytest.mark.parametrize("case", _cases("positive"), ids=_id)
def test_own_entry_ranks_first_on_its_positive_fixture(case: tuple[str, Path]) -> None:
    entry_id, path = case
    result = _analyze(path)
    ranking = [(m.id, m.score, m.confidence) for m in result.matches[:4]]
    assert result.matches and result.matches[0].id == entry_id, ranking
    assert result.matches[0].confidence in ("high", "medium"), ranking


@pytest.mark.parametrize("case", _cases("healthy"), ids=_id)
def test_own_entry_stays_low_on_its_healthy_look_alike(case: tuple[str, Path]) -> None:
    entry_id, path = case
    result = _analyze(path)
    own = [(m.id, m.score, m.confidence) for m in result.matches if m.id == entry_id]
    assert all(c == "low" for _, _, c in own), own


def _healthy_sweep() -> list[Path]:
    paths = {f for _, f in _cases("healthy")}
    paths |= {FIXTURES / p for p in REPO_HEALTHY}
    # and any fixture elsewhere in the repo whose name says it is healthy
    for pattern in ("*healthy*", "*normal*", "*ordinary*"):
        paths |= {p for p in FIXTURES.rglob(pattern) if p.is_file() and p.suffix != ".ref"}
    labels = yaml.safe_load((CORPUS / "labels.yaml").read_text(encoding="utf-8"))
    paths |= {CORPUS / item["file"] for item in labels if item.get("problem_shown") is False}
    return sorted(paths)


def test_the_corpus_is_there() -> None:
    """The sweep reads ../shared/corpus: it must fail, not pass empty, when the corpus is missing."""
    assert (CORPUS / "labels.yaml").is_file(), CORPUS
    labels = yaml.safe_load((CORPUS / "labels.yaml").read_text(encoding="utf-8"))
    assert sum(1 for item in labels if item.get("problem_shown") is False) >= 20


@pytest.mark.parametrize(
    "path",
    _healthy_sweep() if (CORPUS / "labels.yaml").is_file() else [],
    ids=lambda p: p.name[:60],
)
def test_no_entry_rises_above_low_on_healthy_evidence(path: Path) -> None:
    result = _analyze(path)
    raised = [(m.id, m.score, m.confidence) for m in result.matches if m.confidence != "low"]
    assert not raised, raised


# -- the rules of check --kb, each able to fail -------------------------------------------------


def test_two_statements_on_one_sqlplus_line_are_refused() -> None:
    bad = 'echo "select 1 from dual; select 2 from dual;" | sqlplus -s / as sysdba'
    good = "sqlplus -s / as sysdba <<'EOF'\nselect 1 from dual;\nselect 2 from dual;\nEOF\n"
    assert mixed_statements(bad)
    assert not mixed_statements(good)
    assert not mixed_statements("cat /proc/PID/schedstat; sleep 10; cat /proc/PID/schedstat")
    assert not mixed_statements("echo \"select ';' from dual;\" | sqlplus -s / as sysdba")


def _sig(**when: object) -> Signature:
    sources = ["text", "strace"]
    return Signature.model_validate({"name": "s", "sources": sources, "weight": 0.6, "when": when})


def test_preconditions_alone_are_refused_but_errors_and_counts_are_not() -> None:
    assert precondition_only(_sig(regex=r"oraus\.msb").when)
    assert precondition_only(_sig(all=[{"regex": "basicfile"}, {"regex": "nologging"}]).when)
    assert precondition_only(
        _sig(
            any=[{"regex": "x"}, {"fact": "syscall.count", "key": "read", "op": ">=", "value": 8}]
        ).when
    )
    assert not precondition_only(_sig(regex=r"\bORA-00257\b").when)
    assert not precondition_only(_sig(regex="oraus", min_count=5).when)
    assert not precondition_only(_sig(regex=r"PageTables:\s+\d{8,}\s+kB").when)
    assert not precondition_only(
        _sig(
            all=[{"regex": "x"}, {"fact": "syscall.count", "key": "read", "op": ">=", "value": 8}]
        ).when
    )


def test_check_kb_reports_each_rule(tmp_path: Path) -> None:
    entry = BY_ID["log-buffer-space"]
    bad = entry.model_copy(
        update={
            "next_commands": [
                NextCommand(
                    command='echo "select 1 from dual; select 2 from dual;" | sqlplus -s / as sysdba',
                    platform="any",
                    why="w",
                )
            ],
            "signatures": [
                *entry.signatures,
                _sig(regex="log_buffer").model_copy(update={"name": "setting"}),
            ],
        }
    )
    rules = sorted(p.rule for p in check_kb([bad], tmp_path))
    assert rules == ["fixtures", "mixed-statements", "precondition-only"]
    (tmp_path / entry.id).mkdir()
    (tmp_path / entry.id / "positive.txt").write_text("x", encoding="utf-8")
    assert [p.rule for p in check_kb([entry], tmp_path)] == []


def test_cli_check_kb_fails_on_a_broken_entry_file(tmp_path: Path) -> None:
    data = yaml.safe_load(
        (ROOT / "kb" / "entries" / "log-buffer-space.yaml").read_text(encoding="utf-8")
    )
    data["next_commands"][0]["command"] = (
        'echo "select 1 from dual; select 2 from dual;" | sqlplus -s / as sysdba'
    )
    entries = tmp_path / "entries"
    entries.mkdir()
    (entries / "log-buffer-space.yaml").write_text(yaml.safe_dump(data), encoding="utf-8")
    cmd = [
        sys.executable,
        "-m",
        "kb",
        "--data-dir",
        str(tmp_path / "data"),
        "check",
        "--kb",
        "--entries",
        str(entries),
        "--fixtures",
        str(KB_FIXTURES),
        "--json",
    ]
    out = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert out.returncode == 1, out.stderr
    report = json.loads(out.stdout)
    assert [p["rule"] for p in report["problems"]] == ["mixed-statements"]
    ok = subprocess.run(
        cmd[:7] + ["--entries", str(ROOT / "kb" / "entries"), "--fixtures", str(KB_FIXTURES)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )
    assert ok.returncode == 0, ok.stdout + ok.stderr


# -- the first-five-minutes fields --------------------------------------------------------------


def test_every_entry_names_look_alikes_and_bounds_its_tracers() -> None:
    for e in ENTRIES:
        assert e.differential, e.id
        for c in e.next_commands:
            if c.command.split()[0] in ("strace", "truss"):
                pytest.fail(f"{e.id}: unbounded tracer {c.command[:60]}")
            if c.command.startswith("dtrace"):
                assert "exit(" in c.command, (e.id, c.command)
            if c.command.startswith("timeout") and (
                " strace " in c.command or " truss " in c.command
            ):
                assert c.intrusive, (e.id, c.command)
            if any(w in c.command.lower() for w in ("dba_hist", "active_session_history")):
                assert c.licence and c.free_alternative, (e.id, c.command)


def test_commands_carry_their_caveats_to_every_renderer() -> None:
    c = NextCommand(
        command="timeout 10 strace -c -p PID",
        platform="linux",
        why="Counts.",
        min_version="12.1",
        licence="Diagnostics Pack",
        free_alternative="Statspack",
        intrusive=True,
        intrusive_why="stops the process at every call",
    )
    assert c.why_with_caveats() == (
        "Counts. [needs 12.1+; needs the Diagnostics Pack; without it: Statspack; "
        "intrusive: stops the process at every call]"
    )
    with pytest.raises(ValueError):
        NextCommand(command="x", platform="linux", why="w", intrusive=True)


def test_new_fields_round_trip_through_yaml_and_the_web_form() -> None:
    from kb.web.forms import EntryForm

    entry = BY_ID["sequential-read-bad-plan"]
    assert load_entry(dump_entry(entry)) == entry
    data, problems = EntryForm.from_entry(entry).to_data(author=entry.author, created=entry.created)
    assert not problems
    back = validate_entry(data)
    assert back.differential == entry.differential
    assert back.next_commands == entry.next_commands
    oraus = BY_ID["oraus-msb-exception-reads"]
    data, _ = EntryForm.from_entry(oraus).to_data(author=oraus.author)
    assert validate_entry(data).affected_versions == oraus.affected_versions


def test_cli_show_prints_look_alikes_and_caveats(tmp_path: Path) -> None:
    base = [sys.executable, "-m", "kb", "--data-dir", str(tmp_path / "d")]
    env = {"COLUMNS": "400", "PATH": "/usr/bin:/bin"}
    entry_file = str(ROOT / "kb" / "entries" / "sequential-read-bad-plan.yaml")
    added = subprocess.run(
        [*base, "add", entry_file], capture_output=True, text=True, cwd=ROOT, timeout=120, env=env
    )
    assert added.returncode == 0, added.stderr
    out = subprocess.run(
        [*base, "show", "sequential-read-bad-plan"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
        env=env,
    )
    assert out.returncode == 0, out.stderr
    assert "Look-alikes" in out.stdout and "io-latency-one-device" in out.stdout
    assert "Diagnostics Pack" in out.stdout and "intrusive:" in out.stdout


def test_entry_model_keeps_differential_in_field_order() -> None:
    text = dump_entry(BY_ID["log-buffer-space"])
    assert text.index("\nfix:") < text.index("\ndifferential:") < text.index("\naffected_versions:")
    assert isinstance(BY_ID["log-buffer-space"], Entry)


def test_suggested_commands_carry_caveats_to_the_slack_reply() -> None:
    """analyze's suggested commands (what the Slack reply and the analysis page list) say when
    a command is intrusive, from the entry's own fields."""
    from bot.render import render_analysis

    result = _analyze(KB_FIXTURES / "oraus-msb-exception-reads" / "healthy-strace-one-open.txt")
    assert not any(m.confidence != "low" for m in result.matches)
    result = _analyze(FIXTURES / "seeds" / "000_pstack_122.txt")
    whys = [c.why for c in result.next_commands]
    assert any("intrusive: stops the process" in w for w in whys), whys
    reply = render_analysis(result, base_url="http://perfkb.example")
    assert "intrusive: stops the process" in json.dumps(reply.blocks)


def test_look_alikes_named_by_id_exist() -> None:
    """A look-alike written as an id is linked on the web page: it must be an entry (a plain name
    with spaces is allowed for incidents the KB does not hold yet)."""
    dead = [
        (e.id, d.entry)
        for e in ENTRIES
        for d in e.differential
        if " " not in d.entry and d.entry not in BY_ID
    ]
    assert not dead
