"""`/perfkb edit ID`: the edit-entry modal holds every field of every starter entry and gives it
back unchanged, through the real Bolt app, signed requests and the stub Web API."""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from slack_stub import TEAM, Harness, running_harness

from bot.modals import INPUT_MAX, MAX_BLOCKS, comparable, entry_view, initial_state
from kb.models import validate_entry

_n = itertools.count(1)
ALICE = {"id": "U0ALICE", "username": "alice", "name": "alice", "team_id": TEAM}


@pytest.fixture(scope="module")
def bot(tmp_path_factory: pytest.TempPathFactory):
    with running_harness(tmp_path_factory.mktemp("edit")) as harness:
        yield harness


def slash(bot: Harness, text: str) -> Any:
    fields = {
        "token": "legacy",
        "team_id": TEAM,
        "team_domain": "perfkb-test",
        "channel_id": "C0EDIT",
        "channel_name": "incidents",
        "user_id": "U0ALICE",
        "user_name": "alice",
        "command": "/perfkb",
        "text": text,
        "api_app_id": "A0TEST",
        "response_url": bot.stub.response_url(f"edit{next(_n)}"),
        "trigger_id": f"{next(_n)}.trigger",
    }
    return bot.server.send_form(fields)


def open_edit(bot: Harness, entry_id: str) -> dict[str, Any]:
    def mine(c: Any) -> bool:
        return c.body["view"].get("private_metadata", "").find(f'"entry_id":"{entry_id}"') >= 0

    before = len([c for c in bot.stub.api_calls("views.open") if mine(c)])
    assert slash(bot, f"edit {entry_id}").status_code == 200
    return bot.stub.wait_for("views.open", mine, count=before + 1)[-1].body["view"]


def submit(bot: Harness, view: dict[str, Any], **values: str) -> Any:
    state = initial_state(view)
    for block_id, value in values.items():
        state[block_id] = {"value": {"type": "plain_text_input", "value": value}}
    payload = {
        "type": "view_submission",
        "team": {"id": TEAM, "domain": "perfkb-test"},
        "user": ALICE,
        "api_app_id": "A0TEST",
        "token": "legacy",
        "trigger_id": f"{next(_n)}.trigger",
        "view": {**view, "id": "V0EDIT", "team_id": TEAM, "state": {"values": state}},
        "response_urls": [],
    }
    return bot.server.send_interaction(payload)


def within_slack_limits(view: dict[str, Any]) -> None:
    assert len(view["blocks"]) <= MAX_BLOCKS
    for block in view["blocks"]:
        element = block.get("element", {})
        if element.get("type") == "plain_text_input":
            assert len(element.get("initial_value", "")) <= element["max_length"] <= INPUT_MAX


def test_every_starter_entry_round_trips_through_the_edit_modal(bot: Harness):
    entries = bot.store.list_entries()
    assert len(entries) >= 84
    for entry in entries:
        view = open_edit(bot, entry.id)
        within_slack_limits(view)
        rev = bot.store.current_rev(entry.id)
        resp = submit(bot, view)
        assert resp.status_code == 200 and not resp.content, (entry.id, resp.text)
        done = bot.stub.wait_for(
            "chat.postMessage", lambda c, i=entry.id: f"`{i}`" in c.body.get("text", "")
        )
        assert "left unchanged" in done[-1].body["text"]
        assert comparable(bot.store.get(entry.id)) == comparable(entry), entry.id
        assert bot.store.current_rev(entry.id) == rev  # nothing to save, no new revision


def test_an_edit_saves_a_revision_and_keeps_every_other_field(bot: Harness):
    entry = bot.store.get("log-file-sync-commit-per-row")
    assert entry.differential and entry.next_commands and entry.affected_versions
    view = open_edit(bot, entry.id)
    resp = submit(bot, view, title="Log file sync: a commit per row, edited in Slack")
    assert resp.status_code == 200 and not resp.content, resp.text
    bot.stub.wait_for("chat.postMessage", lambda c: "edited" in c.body.get("text", ""))
    after = bot.store.get(entry.id)
    assert after.title == "Log file sync: a commit per row, edited in Slack"
    assert {**comparable(after), "title": entry.title} == comparable(entry)
    assert after.author == "alice (Slack U0ALICE)"
    assert bot.store.history(entry.id)[-1].action == "update"
    stale = submit(bot, view, title="A second edit from the stale form")
    assert stale.json()["response_action"] == "errors"
    assert "since you opened it" in stale.json()["errors"]["title"]


def test_new_fields_are_edited_and_bad_input_is_named_on_its_input(bot: Harness):
    entry = bot.store.get("fsync-latency")
    view = open_edit(bot, entry.id)
    commands = (
        "- command: timeout 10 strace -f -tt -T -e trace=fsync,fdatasync -p PID\n"
        "  platform: linux\n"
        "  why: time each fsync\n"
        "  min_version: twelve\n"
        "- command: pstack PID\n"
        "  platform: solaris\n"
        "  why: where it waits\n"
        "  intrusive: true\n"
    )
    bad = submit(
        bot,
        view,
        versions="oracle 19.3 fixed\nlinux 4.18 observed 5.4 note: seen gone after the upgrade",
        next_commands=commands,
        differential="- entry: io-latency-one-device\n",
    )
    errors = bad.json()["errors"]
    assert bad.json()["response_action"] == "errors"
    assert errors["versions"] == "line 1: 'fixed' needs at least one version"
    good_versions = "oracle 19.3 fixed 19.14\nlinux 4.18 observed 5.4 note: seen gone after it"
    bad = submit(bot, view, versions=good_versions, next_commands=commands)
    errors = bad.json()["errors"]
    assert set(errors) == {"next_commands"}
    assert "command 1 min_version" in errors["next_commands"]
    assert "command 2: an intrusive command says why" in errors["next_commands"]
    fixed = commands.replace("twelve", "12.1").replace(
        "  intrusive: true\n", "  intrusive: true\n  intrusive_why: stops the process\n"
    )
    diff = "- entry: io-latency-one-device\n  check: iostat await on one device only\n"
    ok = submit(bot, view, versions=good_versions, next_commands=fixed, differential=diff)
    assert ok.status_code == 200 and not ok.content, ok.text
    bot.stub.wait_for(
        "chat.postMessage",
        lambda c: "edited" in c.body.get("text", "") and "fsync" in c.body.get("text", ""),
    )
    after = bot.store.get(entry.id)
    assert after.affected_versions[1].observed_fixed == ["5.4"]
    assert after.affected_versions[1].note == "seen gone after it"
    assert after.next_commands[0].min_version == "12.1"
    assert after.next_commands[1].intrusive_why == "stops the process"
    assert after.differential[0].check == "iostat await on one device only"


def test_edit_of_an_unknown_id_says_so(bot: Harness):
    assert slash(bot, "edit no-such-entry").status_code == 200
    reply = bot.stub.wait_for(
        path_prefix="/response/", where=lambda c: "no-such-entry" in str(c.body)
    )
    assert "No entry" in str(reply[-1].body)


def test_long_fields_continue_in_more_inputs_and_come_back_whole():
    """Prose longer than one input and more commands than fit one input are split, never cut."""
    paragraph = ("A line of symptom prose that is long enough to matter in a modal. " * 3).strip()
    data = {
        "id": "long-entry",
        "title": "An entry longer than one Slack input",
        "symptom": "\n".join(f"{n}: {paragraph}" for n in range(60)),
        "root_cause": "r",
        "fix": "f",
        "platforms": ["linux"],
        "next_commands": [
            {
                "command": f"timeout 10 strace -c -p PID{n}",
                "platform": "linux",
                "why": "count system calls " + "x" * 300,
            }
            for n in range(30)
        ],
    }
    entry = validate_entry(data)
    view = entry_view(entry=entry)
    within_slack_limits(view)
    ids = [b["block_id"] for b in view["blocks"]]
    assert "symptom_2" in ids and "next_commands_2" in ids
    from bot.modals import Origin, entry_from_view

    view["private_metadata"] = Origin(entry_id=entry.id).model_dump_json()
    back, errors = entry_from_view({**view, "state": {"values": initial_state(view)}}, "x")
    assert errors == {} and back is not None
    assert comparable(back) == comparable(entry)


def test_an_entry_too_large_for_a_modal_is_sent_to_the_web_editor(bot: Harness):
    """A single line longer than a Slack input cannot be split without changing it: the modal
    says so and links the web editor instead of opening a form that would cut it."""
    data = {
        "id": "one-very-long-line",
        "title": "An entry whose symptom is one 3,500-character line",
        "symptom": "word " * 700,
        "root_cause": "r",
        "fix": "f",
        "platforms": ["linux"],
    }
    data["symptom"] = data["symptom"].strip()
    bot.store.add(validate_entry(data), author="test")
    assert slash(bot, "edit one-very-long-line").status_code == 200
    calls = bot.stub.wait_for(
        "views.open", lambda c: "one-very-long-line/edit" in str(c.body["view"].get("blocks"))
    )
    view = calls[-1].body["view"]
    assert "submit" not in view
    text = view["blocks"][0]["text"]["text"]
    assert "cannot be edited in Slack" in text
    assert "http://kb.test/entries/one-very-long-line/edit" in text
