"""Triage (kb/triage.py, kb/rules/triage.yaml): sentences for every paste, and next commands for
the evidence's platform chosen by rules written as data."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError
from typer.testing import CliRunner

from ingest.detect import parse_lines
from ingest.model import Block, Context, Evidence
from kb import command_fill
from kb.analysis import analyze_evidence, analyze_text
from kb.cli import app
from kb.triage import RULES_PATH, RuleBook, is_idle, load_rules, triage

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT.parent / "shared" / "corpus"
FIXTURES = ROOT / "tests" / "fixtures"


@pytest.fixture(autouse=True)
def _fresh_console():
    """The CLI's console is made on first use and keeps the width it saw then: these tests run
    it at 40 columns, so each gets its own and leaves none behind for the next test."""
    import kb.cli

    kb.cli.out._console = kb.cli.err._console = None
    yield
    kb.cli.out._console = kb.cli.err._console = None


def _labels() -> dict[str, dict]:
    assert (CORPUS / "labels.yaml").is_file(), f"corpus missing at {CORPUS}"
    return {Path(x["file"]).name: x for x in yaml.safe_load((CORPUS / "labels.yaml").read_text())}


def _for_platform(commands, platform: str | None) -> list:
    """Commands a person on this platform can run: Oracle ('any') and their OS's."""
    wanted = {"any", platform} if platform in ("solaris", "linux") else {"any", "solaris", "linux"}
    return [c for c in commands if c.platform in wanted]


def test_every_corpus_snippet_gets_sentences_and_problems_get_commands():
    labels = _labels()
    snippets = sorted((CORPUS / "snippets").iterdir())
    assert len(snippets) >= 50
    for path in snippets:
        result = analyze_text(path.read_text(errors="replace"))
        assert result.findings, path.name
        assert all(f.text.strip() and "{" not in f.text for f in result.findings), path.name
        assert len(result.findings) <= 6, path.name
        if labels[path.name]["problem_shown"]:
            assert _for_platform(result.next_commands, result.platform), path.name


def test_every_fixture_gets_at_least_one_sentence():
    files = [p for p in sorted(FIXTURES.rglob("*")) if p.is_file()]
    assert len(files) >= 50
    for path in files:
        result = analyze_text(path.read_text(errors="replace"))
        assert result.findings and result.findings[0].text, path.name
        assert result.next_commands, path.name


def test_unknown_platform_gets_oracle_once_and_os_commands_for_both():
    # mpstat averages with no platform named anywhere: numbers of our own invention
    block = Block(
        format="mpstat",
        start_line=1,
        end_line=6,
        facts={"cpu.count": 8.0, "cpu.usr_pct": 40.0, "cpu.sys_pct": 45.0, "cpu.idle_pct": 15.0},
    )
    result = analyze_evidence(Evidence(blocks=[block]), entries=[])
    assert result.platform is None
    by = {
        p: [c.command for c in result.next_commands if c.platform == p]
        for p in ("solaris", "linux")
    }
    assert "prstat -mLc 1 5" in by["solaris"] and "pidstat -u 1 5" in by["linux"]
    nothing = analyze_text("the database is slow since this morning\n")
    platforms = [c.platform for c in nothing.next_commands]
    assert set(platforms) == {"any", "solaris", "linux"}
    assert platforms.count("any") == 1  # the Oracle command once, not once per OS


def test_known_platform_gets_only_its_own_os_commands():
    text = (
        CORPUS / "snippets" / "41_mpstat_linux-4cpu-pgio-async-cpu-busy-no-iowait.txt"
    ).read_text()
    result = analyze_text(text)
    assert result.platform == "linux"
    assert {c.platform for c in result.next_commands} <= {"linux", "any"}
    assert any(c.command.startswith("pidstat") for c in result.next_commands)
    assert any("% system" in f.text and "Across 4 CPUs" in f.text for f in result.findings)


def test_pid_from_a_pstack_header_fills_the_command():
    stack = "\n".join(
        [
            "pid 23456: ora_j000_PROD",
            "#0  0x00007f0 in semtimedop () from /lib64/libc.so.6",
            "#1  0x0000001 in sskgpwwait ()",
            "#2  0x0000002 in skgpwwait ()",
            "#3  0x0000003 in ksliwat ()",
            "#4  0x0000004 in kslwaitctx ()",
            "#5  0x0000005 in ksqcmi ()",
            "#6  0x0000006 in opiodr ()",
        ]
    )
    result = analyze_text(stack)
    assert result.blocks[0].format == "stack"
    commands = [c.command for c in result.next_commands]
    assert any("23456" in c for c in commands), commands
    assert not any("PID" in c for c in commands if "stack" in c)


def _waits_block(events: dict[str, tuple[float, float]], **extra) -> Block:
    """Two-event wait table: name -> (seconds waited, waits); numbers of our own invention."""
    total = sum(s for s, _ in events.values())
    top = max(events, key=lambda e: events[e][0])
    facts = {
        "event.waited_s": {e: s for e, (s, _) in events.items()},
        "event.count": {e: n for e, (_, n) in events.items()},
        "event.avg_ms": {e: 1000 * s / n for e, (s, n) in events.items()},
        "event.pct_of_waited": {e: 100 * s / total for e, (s, _) in events.items()},
        "waits.total_s": total,
        "waits.events": float(len(events)),
        "waits.top_event": top,
        "waits.top_pct": 100 * events[top][0] / total,
        **extra,
    }
    return Block(format="waits", start_line=1, end_line=5, facts=facts)


def test_no_ash_query_on_an_idle_event():
    idle = _waits_block(
        {"SQL*Net message from client": (900.0, 3000), "db file sequential read": (12.0, 4000)}
    )
    assert is_idle("SQL*Net message from client")
    result = analyze_evidence(Evidence(blocks=[idle]), entries=[])
    assert not any("active_session_history" in c.command for c in result.next_commands)
    assert any("idle" in f.text for f in result.findings)
    busy = _waits_block({"log file sync": (300.0, 40000), "db file sequential read": (12.0, 4000)})
    result = analyze_evidence(Evidence(blocks=[busy]), entries=[])
    ash = [c.command for c in result.next_commands if "active_session_history" in c.command]
    assert len(ash) == 1 and "event = 'log file sync'" in ash[0]
    assert any("'log file sync'" in f.text and "7.5 ms" in f.text for f in result.findings)


def test_hostile_event_name_stays_a_sql_literal():
    hostile = "x'; drop user sys; --"
    block = _waits_block({hostile: (300.0, 10), "db file sequential read": (1.0, 10)})
    result = analyze_evidence(Evidence(blocks=[block]), entries=[])
    ash = [c.command for c in result.next_commands if "active_session_history" in c.command]
    assert ash and "'x''; drop user sys; --'" in ash[0]


def test_a_trace_that_blocks_for_seconds_is_said_and_the_fd_is_looked_at():
    trace = "\n".join(
        [
            "4321  10:00:00.000100 connect(9, {sa_family=AF_INET, sin_port=htons(1521)}, 16) = 0 <0.000300>",
            '4321  10:00:00.000500 write(9, "ping", 4) = 4 <0.000020>',
            "4321  10:00:00.000600 poll([{fd=9, events=POLLIN}], 1, 30000) = 0 (Timeout) <30.001000>",
            "4321  10:00:30.002000 close(9) = 0 <0.000010>",
        ]
    )
    result = analyze_evidence(
        Evidence(blocks=parse_lines(trace.splitlines()).blocks, context=Context(platform="linux")),
        entries=[],
    )
    text = " ".join(f.text for f in result.findings)
    assert "poll" in text and "30,001 ms" in text
    commands = [c.command for c in result.next_commands]
    assert "lsof -n -P -p 4321" in commands, commands


def test_nothing_recognised_is_one_plain_sentence_and_a_baseline():
    result = analyze_text("hello, the database is slow since this morning, any idea?\n")
    assert len(result.findings) == 1
    assert "recognised no capture" in result.findings[0].text
    assert {c.platform for c in result.next_commands} == {"any", "solaris", "linux"}


def test_rules_file_is_valid_and_every_rule_has_commands():
    book = load_rules()
    assert len(book.rules) >= 10
    for rule in [*book.rules, book.baseline]:
        assert rule.commands, rule.name
        for c in rule.commands:
            # every placeholder is one the single filler knows
            assert command_fill.placeholders(c.command) is not None


def test_a_rule_naming_an_unknown_fact_is_refused(tmp_path):
    data = yaml.safe_load(RULES_PATH.read_text())
    data["rules"][0]["when"] = {"fact": "tkprof.elapsd_s", "op": ">=", "value": 1}
    with pytest.raises(ValidationError, match="unknown fact"):
        RuleBook.model_validate(data)
    data = yaml.safe_load(RULES_PATH.read_text())
    data["rules"][0]["finding"] = "it took {tkprof.no_such}"
    with pytest.raises(ValidationError, match="unknown fact"):
        RuleBook.model_validate(data)


def test_findings_in_analyze_json(settings):
    text = CORPUS / "snippets" / "16_tkprof_11gR1-bitmap-index-cold-cache-single-block-reads.txt"
    runner = CliRunner()
    out = runner.invoke(app, ["--data-dir", str(settings.data_dir), "analyze", str(text), "--json"])
    assert out.exit_code == 0, out.output
    body = json.loads(out.stdout)
    assert set(body) >= {"findings", "blocks", "matches", "next_commands"}
    assert any("99,722 single-block reads" in f["text"] for f in body["findings"])
    assert all({"command", "platform"} <= set(c) for c in body["next_commands"])


def test_triage_runs_without_the_matcher():
    ev = parse_lines((CORPUS / "snippets" / "25_hanganalyze_19c-row-lock-chains.txt").open())
    found = triage(ev, command_fill.fill)
    assert any("root blocker is session" in f.text for f in found.findings)
    assert "hang-blocker" in found.fired


def _analyze_cli(settings, path: Path, columns: str) -> str:
    runner = CliRunner()
    out = runner.invoke(
        app,
        ["--data-dir", str(settings.data_dir), "analyze", str(path)],
        env={"COLUMNS": columns},
    )
    assert out.exit_code == 0, out.output
    return out.stdout


@pytest.mark.parametrize(
    "name",
    [
        "02_awr-text_11201-linux-2cpu-db-file-sequential-read-184ms-log-file-sync.txt",
        "56_prstat-mL_solaris-sparc-t2-java5-cms-gc-thread.txt",
        "30_strace_oracle-server-process-ttt-T-sqltrace-writes.txt",
    ],
)
def test_cli_prints_every_command_whole_on_its_own_lines_at_40_columns(settings, name):
    path = CORPUS / "snippets" / name
    text = _analyze_cli(settings, path, "40")
    lines = text.splitlines()
    from kb.store import Store

    with Store(settings) as store:
        result = analyze_evidence(parse_lines(path.open(errors="replace")), store)
    assert result.next_commands
    for c in result.next_commands:
        for part in c.command.splitlines():
            assert part in lines, (part, text)
    assert "…" not in text
    assert "e+0" not in text
    assert " 1 entries" not in text


def test_cli_unknown_platform_labels_both_and_never_a_lone_solaris_heading(settings, tmp_path):
    path = tmp_path / "prose.txt"
    path.write_text("the batch is slow since this morning, no capture yet\n")
    lines = _analyze_cli(settings, path, "120").splitlines()
    assert "Solaris:" in lines and "Linux:" in lines and "Oracle (any platform):" in lines


def test_cli_empty_input_is_one_sentence(settings, tmp_path):
    empty = tmp_path / "empty.txt"
    empty.write_text("\n")
    text = _analyze_cli(settings, empty, "80")
    assert "No evidence perfkb can read was found in this input (it reads: tkprof" in text
    assert "┏" not in text and "┌" not in text  # no empty box


def _near_entry(make_entry):
    return make_entry(
        "lfs-near",
        title="Commits wait on log file sync",
        signatures=[
            {
                "name": "slow-commits",
                "sources": ["waits"],
                "weight": 0.8,
                "when": {
                    "all": [
                        {"fact": "event.avg_ms", "key": "log file sync", "op": "<=", "value": 5},
                        {
                            "fact": "event.pct_of_waited",
                            "key": "log file sync",
                            "op": ">=",
                            "value": 30,
                        },
                    ]
                },
            }
        ],
    )


def test_near_miss_and_reason_are_said_in_words(make_entry):
    # 'log file sync' at 7.1 ms average, 71 % of the waited time: our own numbers
    block = _waits_block({"log file sync": (71.0, 10000), "db file sequential read": (29.0, 9000)})
    result = analyze_evidence(Evidence(blocks=[block]), entries=[_near_entry(make_entry)])
    m = result.matches[0]
    assert m.related_only and m.confidence == "low"
    assert m.near_misses == ["would match if 'log file sync' avg were ≤ 5 ms; it is 7.1 ms"]
    assert m.reason.startswith("low: no signature held")
    assert "log file sync" in m.reason
    fast = _waits_block({"log file sync": (30.0, 10000), "db file sequential read": (29.0, 9000)})
    held = analyze_evidence(Evidence(blocks=[fast]), entries=[_near_entry(make_entry)])
    assert held.matches[0].confidence == "high"
    assert held.matches[0].reason.startswith("high: signature 'slow-commits' held")
    assert held.matches[0].near_misses == []


def test_cli_show_prints_the_title_and_commands_whole_and_counts_in_words(settings, make_entry):
    from kb.store import Store

    title = "Listener forks slowly because cladm is called for every connection on the cluster"
    entry = make_entry(
        "long-title-entry",
        title=title,
        next_commands=[
            {
                "platform": "solaris",
                "command": "truss -f -d -D -E -o /tmp/listener-with-a-long-name.truss -p PID",
                "why": "Time each connect from accept to the child's reply.",
            }
        ],
    )
    with Store(settings) as store:
        store.add(entry, author="test")
    runner = CliRunner()
    base = ["--data-dir", str(settings.data_dir)]
    shown = runner.invoke(app, [*base, "show", "long-title-entry"], env={"COLUMNS": "40"})
    assert shown.exit_code == 0, shown.output
    lines = shown.stdout.splitlines()
    assert title in lines
    assert "truss -f -d -D -E -o /tmp/listener-with-a-long-name.truss -p PID" in lines
    found = runner.invoke(app, [*base, "search", "cladm"], env={"COLUMNS": "120"})
    assert found.exit_code == 0, found.output
    assert "1 entry" in found.stdout and "1 entries" not in found.stdout


def test_values_from_headers_fill_sid_serial_and_sql_id():
    # a 10046 trace's '*** SESSION ID:(450.21030)' header fills the baseline's trace command
    trace = CORPUS / "snippets" / "20_trace10046_12c-rac-cursor-pin-s-wait-on-x-at-parse.txt"
    commands = [c.command for c in analyze_text(trace.read_text()).next_commands]
    assert any("session_trace_enable(450, 21030, waits => true)" in c for c in commands)
    # an AWR's top SQL by elapsed time names the statement whose plans to look at
    awr = CORPUS / "snippets" / "09_awr-html_solaris-ebs-11g-log-file-sync.html"
    commands = [c.command for c in analyze_text(awr.read_text()).next_commands]
    assert any("dbms_xplan.display_awr('0fy66841qq8s8')" in c for c in commands)


def test_windows_evidence_gets_no_unix_commands():
    trace = CORPUS / "snippets" / "22_trace10046_10201-windows-insert-returning-sequence.txt"
    result = analyze_text(trace.read_text())
    assert result.platform == "windows"
    assert result.next_commands and {c.platform for c in result.next_commands} == {"any"}


def test_ash_on_cpu_is_never_queried_as_an_event():
    ash = CORPUS / "snippets" / "14_ash_12201-on-cpu-in-cursor-close-no-sql-id.txt"
    result = analyze_text(ash.read_text())
    commands = [c.command for c in result.next_commands]
    assert not any("event = 'ON CPU'" in c for c in commands)
    assert any("session_state = " in c for c in commands)
    assert any("on CPU, not waiting" in f.text for f in result.findings)


def test_one_number_format_on_every_surface():
    from ingest.facts import number
    from kb.web.charts import _fmt
    from kb.web.render import num

    for value in (0, 0.000123, 0.5, 1.23456, 49460.0, 1234567.891, -7.25):
        assert num(value) == _fmt(value) == number(value)
    assert "e+" not in number(4.946e4) and number(4.946e4) == "49,460"


_NUMBERS = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.integers(-(10**12), 10**12),
)
_KEYS = st.sampled_from(
    ["read", "SQL*Net message from client", "db file sequential read", "ON CPU", "0", "x'; --"]
)
_FACT = st.sampled_from(sorted(__import__("ingest.facts", fromlist=["FACTS"]).FACTS))
_TEXT = st.text(st.characters(blacklist_characters="{}"), max_size=20)  # braces: templates only
_VALUE = st.one_of(_NUMBERS, _TEXT, st.dictionaries(_KEYS, _NUMBERS, max_size=4))


@settings(max_examples=300, deadline=None)
@given(
    fmt=st.sampled_from(["waits", "tkprof", "strace", "truss", "mpstat", "stack", "vdollar"]),
    facts=st.dictionaries(_FACT, _VALUE, max_size=12),
    details=st.dictionaries(
        st.sampled_from(["stacks", "statements", "session", "pid", "findings", "layers"]),
        st.one_of(_TEXT, st.integers(), st.lists(_TEXT, max_size=3)),
        max_size=4,
    ),
)
def test_any_facts_give_sentences_and_never_raise(fmt, facts, details):
    block = Block(format=fmt, start_line=1, end_line=2, facts={}, details=details)
    block.facts.update(facts)  # as a parser could leave them, unchecked
    found = triage(Evidence(blocks=[block]), command_fill.fill)
    assert found.findings and found.commands
    for f in found.findings:
        assert "nan" not in f.text.split() and "inf" not in f.text.split()
        assert "{" not in f.text  # no placeholder of a rule's sentence left unfilled


def test_facts_no_describer_knows_are_still_said():
    # a format newer than the describers: its values as the catalogue labels them
    from kb.triage import _generic

    block = Block(
        format="mpstat",
        start_line=1,
        end_line=3,
        facts={"cpu.intervals": 12.0, "cpu.intr": {"0": 120.0, "1": 5400.0, "2": 90.0}},
    )
    said = _generic(block)
    assert said[0] == "The mpstat capture shows intervals 12."
    assert said[1] == "Intr (cpu) is highest for 1: 5,400."


def test_a_loop_of_identical_calls_is_said():
    # 40,000 one-byte reads on fd 9: numbers of our own invention, in a truss summary's shape
    block = Block(
        format="truss",
        start_line=1,
        end_line=9,
        facts={
            "syscall.count": {"read": 40000.0, "close": 1.0},
            "syscall.share_pct": {"read": 99.0, "close": 1.0},
            "repeat.count": {"read": 40000.0},
            "repeat.fd": {"read": 9.0},
            "repeat.size": {"read": 1.0},
            "trace.calls": 40001.0,
        },
    )
    said = [f.text for f in triage(Evidence(blocks=[block]), command_fill.fill).findings]
    assert any(s.startswith("40,000 identical read calls (fd 9, size 1)") for s in said), said


def test_prstat_names_the_process_the_commands_look_at():
    from parser_helpers import fixture_lines

    result = analyze_text("\n".join(fixture_lines("os/prstat_mL_screens.txt")))
    commands = [c.command for c in result.next_commands]
    # the thread waiting on user locks (LCK), not the busiest one, for the lock commands
    assert "plockstat -A -e 10 -p 12077" in commands and "pstack 12077" in commands
    # the parser's own words keep the process name as written
    assert any(f.text.startswith("oracle/1 (12077/1): 68 %") for f in result.findings)
