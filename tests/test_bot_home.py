"""The Slack app beyond replies, through the real Bolt app with signed requests against the Slack
stub: group DMs (message.mpim), the :eyes: reaction on a large upload, `/perfkb show ID`,
previews of perfkb links (link_shared -> chat.unfurl) and the App Home tab."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest
from slack_stub import TEAM, Harness, running_harness

SEEDS = Path(__file__).parent / "fixtures" / "seeds"
_n = itertools.count(1)


def ts() -> str:
    return f"1700002000.{next(_n):06d}"


@pytest.fixture(scope="module")
def bot(tmp_path_factory: pytest.TempPathFactory):
    with running_harness(tmp_path_factory.mktemp("home")) as harness:
        yield harness


def texts(call) -> str:
    return call.body.get("text", "") + json.dumps(call.body.get("blocks", []), ensure_ascii=False)


def test_a_group_dm_with_evidence_is_answered_in_its_thread(bot: Harness):
    event = {
        "type": "message",
        "channel": "G0GROUPDM",
        "channel_type": "mpim",
        "user": "U0ALICE",
        "text": "```\n" + (SEEDS / "001_truss_shmdt.txt").read_text() + "\n```",
        "ts": ts(),
    }
    assert bot.server.send_event(event).status_code == 200
    reply = bot.wait_reply("G0GROUPDM", event["ts"])
    assert "numa-shmdt-disconnect-storm" in texts(reply)
    assert "•  " in reply.body["blocks"][0]["text"]["text"]  # the triage sentences lead


def _share(bot: Harness, file: dict, channel: str) -> str:
    msg_ts = ts()
    event = {
        "type": "message",
        "subtype": "file_share",
        "channel": channel,
        "channel_type": "channel",
        "user": "U0ALICE",
        "text": "",
        "ts": msg_ts,
        "files": [file],
        "upload": True,
    }
    assert bot.server.send_event(event).status_code == 200
    return msg_ts


def test_a_large_upload_gets_eyes_while_it_is_read_and_a_small_one_does_not(bot: Harness):
    # a real truss capture after enough prose to pass the size from which people wait
    from bot.files import EYES_FROM_BYTES

    filler = ("notes from the night shift, nothing measured on this line\n" * 12_000).encode()
    assert len(filler) > EYES_FROM_BYTES
    content = filler + (SEEDS / "001_truss_shmdt.txt").read_bytes()
    big = bot.stub.add_file("night.txt", content)
    msg_ts = _share(bot, big, "C0EYES")
    reply = bot.wait_reply("C0EYES", msg_ts)
    removed = bot.stub.wait_for("reactions.remove", lambda c: c.body.get("timestamp") == msg_ts)
    added = bot.stub.wait_for("reactions.add", lambda c: c.body.get("timestamp") == msg_ts)
    assert added[0].body["name"] == removed[0].body["name"] == "eyes"
    assert added[0].body["channel"] == "C0EYES"
    order = [id(c) for c in bot.stub.calls]
    assert order.index(id(added[0])) < order.index(id(reply)) < order.index(id(removed[0]))

    small = bot.stub.add_file("small.txt", (SEEDS / "001_truss_shmdt.txt").read_bytes())
    small_ts = _share(bot, small, "C0EYES")
    bot.wait_reply("C0EYES", small_ts)
    assert not [
        c for c in bot.stub.api_calls("reactions.add") if c.body.get("timestamp") == small_ts
    ]


def _command(bot: Harness, text: str) -> str:
    url = bot.stub.response_url(f"show{next(_n)}")
    fields = {
        "token": "legacy",
        "team_id": TEAM,
        "team_domain": "perfkb-test",
        "channel_id": "C0CMD",
        "channel_name": "incidents",
        "user_id": "U0ALICE",
        "user_name": "alice",
        "command": "/perfkb",
        "text": text,
        "api_app_id": "A0TEST",
        "response_url": url,
        "trigger_id": f"{next(_n)}.trigger",
    }
    assert bot.server.send_form(fields).status_code == 200
    return url


def _response(bot: Harness, url: str):
    return bot.stub.wait_for(where=lambda c: c.path == url.split(bot.stub.url)[1])[0]


def test_show_gives_one_entry_by_id_or_link(bot: Harness):
    call = _response(bot, _command(bot, "show numa-shmdt-disconnect-storm"))
    body = texts(call)
    assert "http://kb.test/entries/numa-shmdt-disconnect-storm" in body
    assert "*Symptom*" in body and "*Fix*" in body and "```" in body
    assert call.body["response_type"] == "ephemeral"
    linked = _response(
        bot, _command(bot, "show <http://kb.test/entries/numa-shmdt-disconnect-storm>")
    )
    assert "*Root cause*" in texts(linked)
    missing = _response(bot, _command(bot, "show no-such-entry"))
    assert "No entry `no-such-entry`" in missing.body["text"]


def test_show_without_an_id_says_how(bot: Harness):
    url = bot.stub.response_url("unused")
    fields = {
        "token": "legacy",
        "team_id": TEAM,
        "channel_id": "C0CMD",
        "user_id": "U0ALICE",
        "command": "/perfkb",
        "text": "show",
        "api_app_id": "A0TEST",
        "response_url": url,
        "trigger_id": "1.trigger",
    }
    r = bot.server.send_form(fields)
    assert r.status_code == 200
    assert "/perfkb show numa-shmdt-disconnect-storm" in r.text


def test_links_to_entries_and_analyses_are_previewed_and_others_left_alone(bot: Harness):
    from kb.analysis import analyze_text

    result = analyze_text((SEEDS / "001_truss_shmdt.txt").read_text(), bot.store)
    analysis_id = bot.store.save_analysis("x", result.model_dump_json())
    entry_url = "http://kb.test/entries/numa-shmdt-disconnect-storm"
    analysis_url = f"http://kb.test/analyze/{analysis_id}"
    msg_ts = ts()
    event = {
        "type": "link_shared",
        "channel": "C0LINKS",
        "user": "U0ALICE",
        "message_ts": msg_ts,
        "links": [
            {"domain": "kb.test", "url": entry_url},
            {"domain": "kb.test", "url": analysis_url},
            {"domain": "evil.test", "url": "http://evil.test/entries/numa-shmdt-disconnect-storm"},
            {"domain": "kb.test", "url": "http://kb.test/entries/no-such-entry"},
        ],
    }
    assert bot.server.send_event(event).status_code == 200
    (call,) = bot.stub.wait_for("chat.unfurl", lambda c: c.body.get("ts") == msg_ts)
    unfurls = call.body["unfurls"]
    unfurls = json.loads(unfurls) if isinstance(unfurls, str) else unfurls
    assert set(unfurls) == {entry_url, analysis_url}
    assert "Disconnect storm" in json.dumps(unfurls[entry_url])
    shown = json.dumps(unfurls[analysis_url], ensure_ascii=False)
    assert "perfkb analysis" in shown and "•  " in shown  # the triage sentences


def test_app_home_lists_recent_analyses_and_new_entries(bot: Harness):
    from kb.analysis import analyze_text

    result = analyze_text((SEEDS / "001_truss_shmdt.txt").read_text(), bot.store)
    analysis_id = bot.store.save_analysis("x", result.model_dump_json())
    event = {"type": "app_home_opened", "user": "U0HOME", "channel": "D0HOME", "tab": "home"}
    assert bot.server.send_event(event).status_code == 200
    (call,) = bot.stub.wait_for("views.publish", lambda c: c.body.get("user_id") == "U0HOME")
    view = call.body["view"]
    view = json.loads(view) if isinstance(view, str) else view
    assert view["type"] == "home"
    shown = json.dumps(view, ensure_ascii=False)
    assert f"http://kb.test/analyze/{analysis_id}" in shown
    assert "Entries added in the last 30 days" in shown
    # the seeded entries were created now, so they are recent
    assert "http://kb.test/entries/" in shown
    messages_tab = {"type": "app_home_opened", "user": "U0MSG", "tab": "messages"}
    bot.server.send_event(messages_tab)
    bot.drain()
    assert not [c for c in bot.stub.api_calls("views.publish") if c.body.get("user_id") == "U0MSG"]
