"""Block Kit limits and degradation, feedback ids, modal parsing and the event log, on objects
built in the test. Fact values in the hand-built blocks echo seed 001's truss capture (10 shmdt
calls, ~24 ms each; tests/fixtures/seeds/001_truss_shmdt.txt); the huge result is synthetic."""

from __future__ import annotations

import json
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import yaml

from bot.events import EventLog
from bot.modals import (
    add_entry_view,
    entry_from_view,
    parse_versions,
    signatures_yaml,
    slugify,
)
from bot.render import (
    MAX_BLOCKS,
    MAX_MESSAGE,
    MAX_TEXT,
    esc,
    feedback_action_id,
    mark_feedback,
    parse_feedback_action_id,
    render_analysis,
    render_search,
)
from ingest.model import Block
from kb.index_docs import SnippetPart
from kb.results import AnalysisResult, Finding, Match, SuggestedCommand
from kb.signatures import Signature


def truss_block(start: int = 1) -> Block:
    return Block(
        format="truss",
        platform="solaris",
        start_line=start,
        end_line=start + 10,
        lines=11,
        facts={
            "trace.calls": 11,
            "trace.processes": 1,
            "syscall.count": {"shmdt": 10, "close": 1},
            "syscall.total_ms": {"shmdt": 242.3, "close": 17.7},
        },
        identifiers=["shmdt", "close"],
    )


def match(i: int, *, evidence: int = 3, title: str = "") -> Match:
    return Match(
        id=f"entry-{i}",
        title=title or f"Incident number {i}",
        score=0.9 - i * 0.05,
        confidence="high" if i == 0 else "medium",
        evidence=[
            f"shmdt: 10 calls, avg 24.2 ms ≥ 5 ms (observation {k})" for k in range(evidence)
        ],
        versions=["introduced in 10.2, fixed in 12.1; you run 11.2.0.4"],
        feedback={"right": 2, "wrong": 1},
    )


def small_result() -> AnalysisResult:
    return AnalysisResult(
        blocks=[truss_block()],
        findings=[Finding(text="Of 20 syscalls, shmdt takes 93 % & more")],
        matches=[match(0), match(1)],
        next_commands=[
            SuggestedCommand(
                command="truss -d -p <pid>", platform="solaris", why="see <shmdt> & co"
            )
        ],
        platform="solaris",
        fingerprint="0123456789abcdef",
        elapsed_ms=4.2,
    )


def huge_result(escaped_growth: bool = False) -> AnalysisResult:
    blocks = [truss_block(i * 20) for i in range(40)]
    matches = [match(i, evidence=60, title="T" * 190 + str(i)) for i in range(10)]
    for m in matches:
        m.evidence = [e + " " + "z" * 300 for e in m.evidence]
    if escaped_growth:  # text that grows when escaped for Slack (& -> &amp;)
        for block in blocks:
            block.facts["waits.top_event"] = "enq: " + "&" * 2000
        for m in matches:
            m.id = m.id.rjust(100, "x")
            m.title = "&" * 200
            m.evidence = ["&" * 400 for _ in m.evidence]
            m.versions = ["&" * 600]
    return AnalysisResult(
        blocks=blocks,
        matches=matches,
        next_commands=[
            SuggestedCommand(
                command="dtrace -n '" + "x" * 1500 + "'", platform="solaris", why="w" * 900
            )
            for _ in range(12)
        ],
        platform="solaris",
        fingerprint="fedcba9876543210",
    )


def section_texts(blocks: list[dict]) -> list[str]:
    out = []
    for b in blocks:
        if "text" in b:
            out.append(b["text"]["text"])
        for e in b.get("elements", []):
            if e.get("type") == "mrkdwn":
                out.append(e["text"])
    return out


def test_small_result_is_shown_in_full_and_escaped():
    msg = render_analysis(small_result(), base_url="http://kb.test/", analysis_id="abc123")
    text = "\n".join(section_texts(msg.blocks))
    assert "truss, solaris (lines 1–11)" in text
    assert "•  Of 20 syscalls, shmdt takes 93 % &amp; more" in text  # the triage, escaped
    assert "syscall.total_ms" not in text
    assert "*1. <http://kb.test/entries/entry-0|Incident number 0>*" in text
    assert "see &lt;shmdt&gt; &amp; co" in text and "```truss -d -p &lt;pid&gt;```" in text
    assert "<http://kb.test/analyze/abc123|Full analysis>" in text
    assert "2 right · 1 wrong" in text
    assert "summary only" not in text


def test_big_result_is_shown_with_less_detail():
    msg = render_analysis(huge_result(), base_url="http://kb.test", analysis_id="big1")
    assert len(msg.blocks) <= MAX_BLOCKS and msg.size() <= MAX_MESSAGE
    text = "\n".join(section_texts(msg.blocks))
    assert "7 more matches" in text and "; 36 more" in text
    assert "Shortened to fit Slack" in text and "summary only" not in text


def test_huge_result_degrades_to_a_summary_within_slack_limits():
    msg = render_analysis(huge_result(True), base_url="http://kb.test", analysis_id="big1")
    assert len(msg.blocks) <= MAX_BLOCKS
    assert msg.size() <= MAX_MESSAGE
    assert all(len(t) <= MAX_TEXT for t in section_texts(msg.blocks))
    assert len(msg.text) <= 300
    footer = section_texts(msg.blocks)[-1]
    assert "summary only" in footer and "http://kb.test/analyze/big1" in footer
    assert any(b.get("block_id", "").startswith("fb:") for b in msg.blocks)  # votes still possible


def test_feedback_action_ids_round_trip_and_reject_strangers():
    action_id = feedback_action_id("wrong", "numa-shmdt-disconnect-storm", "0123456789abcdef")
    assert parse_feedback_action_id(action_id) == (
        "wrong",
        "numa-shmdt-disconnect-storm",
        "0123456789abcdef",
    )
    assert parse_feedback_action_id(feedback_action_id("right", "x", "")) == ("right", "x", "none")
    for bad in ("fb-maybe:x:y", "fb-right:Bad_Id:y", "other", "fb-right:x:"):
        assert parse_feedback_action_id(bad) is None


def test_mark_feedback_replaces_only_that_entrys_line():
    blocks = render_analysis(small_result(), base_url="http://kb.test").blocks
    marked = mark_feedback(blocks, "entry-1", "U0BOB", "right", {"right": 3, "wrong": 1})
    assert len(marked) == len(blocks)
    lines = {
        b["block_id"]: b["elements"][0]["text"] for b in marked if "fbc:" in b.get("block_id", "")
    }
    assert lines["fbc:entry-1"].startswith("Recorded: <@U0BOB> says *right cause*")
    assert "3 right · 1 wrong" in lines["fbc:entry-1"]
    assert lines["fbc:entry-0"].startswith("Was this the cause?")


def test_search_snippet_marks_become_bold_and_text_is_escaped():
    class Hit:
        id, title, score = "numa-shmdt-disconnect-storm", "Slow <shmdt>", 3.0
        snippet = [
            SnippetPart(text="disconnect: "),
            SnippetPart(text="shmdt", hit=True),
            SnippetPart(text=" took 24 ms & more"),
        ]
        platforms, sources = ["solaris"], ["truss"]

    class Page:
        query, total, results = "shmdt", 1, [Hit()]

    msg = render_search(Page(), "http://kb.test")
    text = "\n".join(section_texts(msg.blocks))
    assert "*shmdt* took 24 ms &amp; more" in text
    assert "Slow &lt;shmdt&gt;" in text
    assert esc("a<b>&c") == "a&lt;b&gt;&amp;c"


# -- modals --------------------------------------------------------------------------------------


def test_parse_versions():
    assert parse_versions("oracle 12.2 fixed 19.14, 21.4\n\nsolaris from 11.3") == [
        {"product": "oracle", "introduced": "12.2", "fixed": ["19.14", "21.4"]},
        {"product": "solaris", "introduced": "11.3", "fixed": []},
    ]
    assert parse_versions("oracle fixed 19.3") == [
        {"product": "oracle", "introduced": None, "fixed": ["19.3"]}
    ]
    for bad, why in (
        ("12.2 fixed 19", "start with the product"),
        ("oracle 12.2 19.3", "expected 'fixed'"),
        ("oracle fixed", "needs at least one version"),
        ("oracle twelve", "not a version"),
    ):
        with pytest.raises(ValueError, match=why):
            parse_versions(bad)


def values(**fields: object) -> dict:
    out: dict = {}
    for name, value in fields.items():
        if isinstance(value, list):
            opts = [{"value": v} for v in value]
            out[name] = {"value": {"type": "multi_static_select", "selected_options": opts}}
        else:
            out[name] = {"value": {"type": "plain_text_input", "value": value}}
    return {"state": {"values": out}}


def test_entry_from_view_builds_a_valid_entry_with_a_derived_id():
    sig = Signature.model_validate(
        {
            "name": "slow-shmdt",
            "sources": ["truss", "strace"],
            "when": {"fact": "syscall.avg_ms", "key": "shmdt", "op": ">=", "value": 5},
        }
    )
    view = values(
        title="Slow shmdt: NUMA-spread SGA!",
        symptom="disconnects slow",
        root_cause="many lgroups",
        fix="fewer lgroups",
        platforms=["solaris"],
        tags="NUMA, shm",
        signatures=signatures_yaml([sig]),
        evidence="18.4807 shmdt(0x380000000) = 0",
    )
    entry, errors = entry_from_view(view, "alice (Slack U0ALICE)")
    assert errors == {}
    assert entry is not None and entry.id == "slow-shmdt-numa-spread-sga"
    assert entry.tags == ["numa", "shm"]
    assert entry.signatures == [sig]
    assert entry.symptom.endswith("```\n18.4807 shmdt(0x380000000) = 0\n```")


def test_entry_from_view_puts_model_errors_on_the_right_blocks():
    view = values(
        title="ab",
        symptom="s",
        root_cause="r",
        fix="f",
        platforms=["solaris"],
        tags="Bad Tag",
        signatures="- name: x\n  sources: [truss]\n  when: {fact: syscall.nope, key: a, op: '>', value: 1}",
    )
    entry, errors = entry_from_view(view, "alice")
    assert entry is None
    assert set(errors) == {"title", "tags", "signatures"}
    assert "syscall.nope" in errors["signatures"]


def test_prefilled_modal_fits_slack_limits():
    view = add_entry_view(evidence="line\n" * 2000, signatures="", platforms=["linux"])
    evidence = next(b for b in view["blocks"] if b["block_id"] == "evidence")
    assert len(evidence["element"]["initial_value"]) <= 3000
    assert len(json.dumps(view)) < 250_000
    assert len(view["blocks"]) <= 100
    assert slugify("  Äh -- Slow   FORK!! ") == "h-slow-fork"


def test_signatures_yaml_drops_signatures_until_it_fits():
    sigs = [
        Signature.model_validate(
            {
                "name": f"sig-{i}",
                "sources": ["truss"],
                "when": {"fact": "syscall.count", "key": f"call{i}", "op": ">=", "value": 5},
            }
        )
        for i in range(50)
    ]
    text = signatures_yaml(sigs, limit=1000)
    assert 0 < len(text) <= 1000
    kept = yaml.safe_load(text)
    assert [s["name"] for s in kept] == [f"sig-{i}" for i in range(len(kept))]


# -- event log -------------------------------------------------------------------------------------


def test_event_log_says_first_time_once_across_racing_instances(tmp_path: Path):
    """Separate EventLog objects (as the web server and the Socket Mode process hold) race to
    claim the same event: SQLite's primary key lets exactly one win."""
    path = tmp_path / "bot_events.sqlite3"
    logs = [EventLog(path) for _ in range(8)]
    barrier = threading.Barrier(len(logs))

    def claim(log: EventLog) -> bool:
        barrier.wait()
        return log.first_time("event:Ev1")

    with ThreadPoolExecutor(len(logs)) as pool:
        results = list(pool.map(claim, logs))
    assert sorted(results) == [False] * 7 + [True]
    assert EventLog(path).seen("event:Ev1") and not EventLog(path).seen("event:Ev2")


def test_a_raw_10046_block_is_said_in_sentences_not_fact_names():
    from bot.render import render_analysis
    from kb.analysis import analyze_text

    trace = Path(__file__).parent / "fixtures" / "oracle" / "trace10046_19c_pasted.txt"
    result = analyze_text(trace.read_text())
    message = render_analysis(result, base_url="http://kb.test")
    head = message.blocks[0]["text"]["text"]
    assert head.startswith("*Evidence:* 1 block")
    assert "Response time R is 2.15 s" in head  # R leads, as a sentence
    assert "trace10046." not in json.dumps(message.blocks)  # no internal fact names anywhere
