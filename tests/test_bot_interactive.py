"""Slash command, message shortcut, modals and feedback buttons, end to end through signed HTTP
requests and the stub Web API. Evidence comes from the seed snippets (tests/fixtures/seeds/)."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from slack_stub import TEAM, Call, Harness, running_harness

SEEDS = Path(__file__).parent / "fixtures" / "seeds"
_n = itertools.count(1)


@pytest.fixture(scope="module")
def bot(tmp_path_factory: pytest.TempPathFactory):
    with running_harness(tmp_path_factory.mktemp("interactive")) as harness:
        yield harness


def seed(name: str) -> str:
    return (SEEDS / name).read_text()


def user(uid: str = "U0ALICE", name: str = "alice") -> dict[str, str]:
    return {"id": uid, "username": name, "name": name, "team_id": TEAM}


def command(bot: Harness, text: str, channel: str = "C0CMD") -> tuple[Any, str]:
    response_url = bot.stub.response_url(f"cmd{next(_n)}")
    fields = {
        "token": "legacy",
        "team_id": TEAM,
        "team_domain": "perfkb-test",
        "channel_id": channel,
        "channel_name": "incidents",
        "user_id": "U0ALICE",
        "user_name": "alice",
        "command": "/perfkb",
        "text": text,
        "api_app_id": "A0TEST",
        "response_url": response_url,
        "trigger_id": f"{next(_n)}.trigger",
    }
    return bot.server.send_form(fields), response_url


def state_from(view: dict[str, Any], **values: Any) -> dict[str, Any]:
    """The state Slack would send for `view` once the user typed `values` (others as prefilled)."""
    state: dict[str, Any] = {}
    for block in view["blocks"]:
        if block["type"] != "input":
            continue
        element, bid = block["element"], block["block_id"]
        if element["type"] == "plain_text_input":
            value = values.get(bid, element.get("initial_value"))
            state[bid] = {"value": {"type": "plain_text_input", "value": value}}
        else:
            chosen = values.get(bid)
            options = (
                [{"text": {"type": "plain_text", "text": v}, "value": v} for v in chosen]
                if chosen is not None
                else element.get("initial_options", [])
            )
            state[bid] = {"value": {"type": element["type"], "selected_options": options}}
    return state


def submit(bot: Harness, view: dict[str, Any], who: dict[str, str] | None = None, **values: Any):
    payload = {
        "type": "view_submission",
        "team": {"id": TEAM, "domain": "perfkb-test"},
        "user": who or user(),
        "api_app_id": "A0TEST",
        "token": "legacy",
        "trigger_id": f"{next(_n)}.trigger",
        "view": {
            **view,
            "id": "V0TEST",
            "team_id": TEAM,
            "state": {"values": state_from(view, **values)},
            "hash": "1.abc",
        },
        "response_urls": [],
    }
    return bot.server.send_interaction(payload)


def opened_view(bot: Harness, callback_id: str, count: int = 1) -> dict[str, Any]:
    calls = bot.stub.wait_for(
        "views.open", lambda c: c.body["view"]["callback_id"] == callback_id, count=count
    )
    return calls[-1].body["view"]


def block_texts(call: Call) -> str:
    return json.dumps(call.body.get("blocks", []), ensure_ascii=False) + call.body.get("text", "")


# -- /perfkb ---------------------------------------------------------------------------------------


def test_help_is_the_ack_itself(bot: Harness):
    resp, _ = command(bot, "help")
    assert resp.status_code == 200
    assert "/perfkb search" in json.dumps(resp.json())


def test_unknown_subcommand_gets_help_with_a_note(bot: Harness):
    resp, _ = command(bot, "frobnicate now")
    assert "`frobnicate` is not a perfkb command" in json.dumps(resp.json())


def test_search_answers_through_response_url(bot: Harness):
    resp, url = command(bot, "search shmdt")
    assert resp.status_code == 200
    call = bot.stub.wait_for(where=lambda c: c.path == url.split(bot.stub.url)[1])[0]
    assert "http://kb.test/entries/numa-shmdt-disconnect-storm" in block_texts(call)
    assert "http://kb.test/search?q=shmdt" in block_texts(call)
    assert call.body["response_type"] == "ephemeral"


def test_bad_search_query_is_explained(bot: Harness):
    resp, url = command(bot, "search shmdt platform:plan9")
    assert resp.status_code == 200
    call = bot.stub.wait_for(where=lambda c: c.path == url.split(bot.stub.url)[1])[0]
    assert call.body["text"].startswith("Search failed: unknown platform 'plan9'")


def test_search_without_query_says_how(bot: Harness):
    resp, _ = command(bot, "search")
    assert "Give a query" in resp.text


def test_analyze_opens_a_modal_and_the_submission_comes_back_as_a_dm(bot: Harness):
    command(bot, "analyze")
    view = opened_view(bot, "analyze_paste")
    empty = submit(bot, view, evidence="")
    assert empty.json() == {
        "response_action": "errors",
        "errors": {"evidence": "Paste some evidence to analyse."},
    }
    resp = submit(bot, view, who=user("U0DMME", "dana"), evidence=seed("002_dtrace_flat.txt"))
    assert resp.status_code == 200 and not resp.content
    dm = bot.wait_reply("U0DMME")
    assert "standalone-plsql-pin-overhead" in block_texts(dm)


def test_add_opens_an_empty_add_entry_modal(bot: Harness):
    command(bot, "add", channel="C0ADDCMD")
    view = opened_view(bot, "add_entry")
    ids = [b["block_id"] for b in view["blocks"]]
    for field in ("title", "symptom", "root_cause", "fix", "versions", "platforms", "signatures"):
        assert field in ids
    assert json.loads(view["private_metadata"]) == {"channel": "C0ADDCMD", "thread_ts": ""}


# -- message shortcut + add-entry modal -------------------------------------------------------------


def open_shortcut(bot: Harness, channel: str, thread_ts: str, evidence: str) -> dict[str, Any]:
    bot.stub.set_thread(
        channel,
        thread_ts,
        [
            {"type": "message", "user": "U0ALICE", "ts": thread_ts, "text": "Disconnects are slow"},
            {"type": "message", "user": "U0BOB", "ts": thread_ts + "1", "text": evidence},
            {"type": "message", "bot_id": "B0X", "ts": thread_ts + "2", "text": "perfkb: ..."},
        ],
    )
    payload = {
        "type": "message_action",
        "token": "legacy",
        "action_ts": "1700000500.1",
        "team": {"id": TEAM, "domain": "perfkb-test"},
        "user": user(),
        "channel": {"id": channel, "name": "incidents"},
        "callback_id": "add_to_kb",
        "trigger_id": f"{next(_n)}.trigger",
        "message_ts": thread_ts + "1",
        "message": {
            "type": "message",
            "user": "U0BOB",
            "ts": thread_ts + "1",
            "thread_ts": thread_ts,
            "text": evidence,
        },
        "response_url": bot.stub.response_url("shortcut"),
    }
    before = [
        c for c in bot.stub.api_calls("views.open") if c.body["view"]["callback_id"] == "add_entry"
    ]
    assert bot.server.send_interaction(payload).status_code == 200
    return opened_view(bot, "add_entry", count=len(before) + 1)


def test_shortcut_opens_a_modal_prefilled_from_the_thread(bot: Harness):
    evidence = "```\n" + seed("001_truss_shmdt.txt") + "```"
    view = open_shortcut(bot, "C0SHORT", "1700000400.000100", evidence)
    replies = bot.stub.api_calls("conversations.replies")
    assert replies[-1].body["ts"] == "1700000400.000100"
    initial = {b["block_id"]: b["element"].get("initial_value") for b in view["blocks"]}
    assert "shmdt(0x380000000)" in initial["evidence"]
    proposed = yaml.safe_load(initial["signatures"])
    assert isinstance(proposed, list) and proposed
    assert "truss" in proposed[0]["sources"] or "strace" in proposed[0]["sources"]
    platforms = next(b for b in view["blocks"] if b["block_id"] == "platforms")
    assert [o["value"] for o in platforms["element"]["initial_options"]] == ["solaris"]
    origin = json.loads(view["private_metadata"])
    assert origin == {"channel": "C0SHORT", "thread_ts": "1700000400.000100"}


def test_submission_problems_are_shown_on_their_fields(bot: Harness):
    view = open_shortcut(bot, "C0BAD", "1700000400.000200", seed("001_truss_shmdt.txt"))
    resp = submit(
        bot,
        view,
        title="Slow shmdt",
        symptom="s",
        root_cause="r",
        fix="f",
        versions="oracle twelve fixed",
        platforms=[],
        signatures="- name: [unclosed",
    )
    body = resp.json()
    assert body["response_action"] == "errors"
    assert set(body["errors"]) == {"versions", "signatures", "platforms"}
    assert "line 1" in body["errors"]["versions"]
    assert "YAML" in body["errors"]["signatures"]


def test_submission_creates_the_entry_indexes_it_and_links_it_in_the_thread(bot: Harness):
    thread = "1700000400.000300"
    view = open_shortcut(bot, "C0ADD", thread, "```\n" + seed("001_truss_shmdt.txt") + "```")
    title = "Quarrelsome shmdt detach storm on Tuesday"
    resp = submit(
        bot,
        view,
        title=title,
        symptom="Disconnects took seconds; truss showed shmdt at ~24 ms each.",
        root_cause="SGA spread over many lgroups",
        fix="Pin the SGA to fewer lgroups",
        versions="oracle 11.2 fixed 12.2",
        tags="numa, shm",
    )
    assert resp.status_code == 200 and not resp.content
    link = bot.wait_reply("C0ADD", thread)
    entry_id = "quarrelsome-shmdt-detach-storm-on-tuesday"
    assert f"http://kb.test/entries/{entry_id}" in link.body["text"]
    entry = bot.store.get(entry_id)
    assert entry.author == "alice (Slack U0ALICE)"
    assert entry.platforms == ["solaris"]
    assert entry.affected_versions[0].fixed == ["12.2"]
    assert "shmdt(0x380000000)" in entry.symptom  # the evidence travels with the entry
    assert entry.signatures, "the proposed signatures were saved"
    assert [r.action for r in bot.store.history(entry_id)] == ["create"]
    hits = bot.store.search("quarrelsome").results
    assert [h.id for h in hits] == [entry_id]
    again = submit(bot, view, title=title, symptom="s", root_cause="r", fix="f")
    assert again.json()["response_action"] == "errors"
    assert "exists" in again.json()["errors"]["title"]


# -- feedback --------------------------------------------------------------------------------------


def click(bot: Harness, reply: Call, entry_id: str, verdict: str, who: dict[str, str]) -> None:
    blocks = reply.body["blocks"]
    actions = next(b for b in blocks if b.get("block_id") == f"fb:{entry_id}")
    button = next(e for e in actions["elements"] if e["action_id"].startswith(f"fb-{verdict}:"))
    ts = reply.response["ts"]
    payload = {
        "type": "block_actions",
        "user": who,
        "api_app_id": "A0TEST",
        "token": "legacy",
        "container": {
            "type": "message",
            "message_ts": ts,
            "channel_id": reply.body["channel"],
            "is_ephemeral": False,
        },
        "trigger_id": f"{next(_n)}.trigger",
        "team": {"id": TEAM, "domain": "perfkb-test"},
        "channel": {"id": reply.body["channel"], "name": "incidents"},
        "message": {
            "type": "message",
            "user": "UBOT0001",
            "bot_id": "BBOT0001",
            "ts": ts,
            "text": reply.body["text"],
            "blocks": blocks,
        },
        "response_url": bot.stub.response_url("feedback"),
        "actions": [
            {
                "type": "button",
                "action_id": button["action_id"],
                "block_id": actions["block_id"],
                "text": button["text"],
                "value": button["value"],
                "action_ts": "1700000600.1",
            }
        ],
    }
    assert bot.server.send_interaction(payload).status_code == 200


def analysis_of(bot: Harness, reply: Call) -> dict[str, Any]:
    footer = reply.body["blocks"][-1]["elements"][0]["text"]
    analysis_id = footer.split("/analyze/")[1].split("|")[0]
    return json.loads(bot.store.get_analysis(analysis_id)[1])


def post_evidence(bot: Harness, channel: str, ts: str, text: str) -> Call:
    event = {"type": "message", "channel": channel, "channel_type": "channel", "user": "U0ALICE"}
    bot.server.send_event({**event, "text": text, "ts": ts})
    return bot.wait_reply(channel, ts)


def test_feedback_is_recorded_shown_and_changes_the_ranking(bot: Harness):
    evidence = "```\n" + seed("002_dtrace_ustack.txt") + "```"
    entry_id = "standalone-plsql-pin-overhead"
    first = post_evidence(bot, "C0FB", "1700000700.000001", evidence)
    before = analysis_of(bot, first)
    top = before["matches"][0]
    assert top["id"] == entry_id and top["confidence"] == "high"

    click(bot, first, entry_id, "wrong", user("U0BOB", "bob"))
    update = bot.stub.wait_for("chat.update", lambda c: c.body["channel"] == "C0FB")[0]
    line = next(b for b in update.body["blocks"] if b.get("block_id") == f"fbc:{entry_id}")
    assert "Recorded: <@U0BOB> says *wrong cause*" in line["elements"][0]["text"]
    assert "0 right · 1 wrong" in line["elements"][0]["text"]
    assert bot.store.feedback_for(before["fingerprint"]) == {entry_id: {"right": 0, "wrong": 1}}

    second = post_evidence(bot, "C0FB", "1700000700.000002", evidence)
    after = analysis_of(bot, second)
    demoted = next(m for m in after["matches"] if m["id"] == entry_id)
    assert after["fingerprint"] == before["fingerprint"]
    assert demoted["score"] < top["score"]
    assert demoted["confidence"] != "high"
    assert "0 right · 1 wrong" in block_texts(second)
