"""Issue 20 item 7: no user text the bot posts can ping a channel, mention someone, plant a
disguised link or break out of a code span: uploaded files' names, entry titles, evidence strings
(event names) and search queries, end to end through the real Bolt app with signed requests
against the local Slack stub. Evidence is the seed snippets (tests/fixtures/seeds/) and the AWR
fixture with hostile names written in."""

from __future__ import annotations

import itertools
import json
import re
from pathlib import Path
from typing import Any

import pytest
from slack_stub import TEAM, Call, Harness, running_harness

from bot import escape

FIXTURES = Path(__file__).parent / "fixtures"
_n = itertools.count(1)

# What Slack would make live: <!channel>, <!here>, <@U…>, <#C…>, <http://…|label>.
HOSTILE = "`<!channel>` *bold* _it_ ~st~ <@U0BOSS> <#C0ALL> <http://evil.example/x|docs> &amp;"
LIVE = re.compile(r"<([^<>]*)>")


def everything_posted(call: Call) -> str:
    return json.dumps(call.body, ensure_ascii=False)


def assert_inert(payload: str) -> None:
    """Only our own links and the acting user's mention may be live."""
    for token in LIVE.findall(payload):
        assert token.startswith("http://kb.test/") or token == "@U0ALICE", (token, payload[:2000])
    for bad in ("<!channel>", "<!here>", "<@U0BOSS>", "<#C0ALL>", "<http://evil.example"):
        assert bad not in payload


@pytest.fixture(scope="module")
def bot(tmp_path_factory: pytest.TempPathFactory):
    with running_harness(tmp_path_factory.mktemp("escaping"), max_file_bytes=64 * 1024) as h:
        yield h


def ts() -> str:
    return f"1700002000.{next(_n):06d}"


def wire(text: str) -> str:
    """What Slack sends for text a person typed: its three characters escaped."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def message(bot: Harness, channel: str, text: str, **extra: Any) -> str:
    """Post `text` as a person typed it (sent in Slack's wire format)."""
    text = wire(text)
    msg_ts = ts()
    event = {
        "type": "message",
        "channel": channel,
        "channel_type": "im" if channel.startswith("D") else "channel",
        "user": "U0ALICE",
        "text": text,
        "ts": msg_ts,
    }
    event.update(extra)
    assert bot.server.send_event(event).status_code == 200
    return msg_ts


def share(bot: Harness, file: dict[str, Any], channel: str) -> str:
    return message(bot, channel, "", subtype="file_share", files=[file], upload=True)


def slash(bot: Harness, text: str) -> tuple[Any, str]:
    response_url = bot.stub.response_url(f"esc{next(_n)}")
    fields = {
        "token": "legacy",
        "team_id": TEAM,
        "team_domain": "perfkb-test",
        "channel_id": "C0ESC",
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


def code_spans_hold(text: str, inner: str) -> None:
    """The file name sits in one intact code span: backticks pair up and none is inside it."""
    assert text.count("`") % 2 == 0, text
    spans = re.findall(r"`([^`]*)`", text)
    assert any(inner in s for s in spans), (inner, spans)


# -- file names ------------------------------------------------------------------------------------


def test_file_name_of_a_binary_upload_is_escaped(bot: Harness):
    name = "report`<!channel>`<@U0BOSS>`<http://evil.example|click>.bin"
    file = bot.stub.add_file(name, b"\x00\x01", extra={"filetype": "binary", "mimetype": "x/y"})
    share(bot, file, "D0ESC1")
    reply = bot.wait_reply("D0ESC1")
    assert_inert(everything_posted(reply))
    assert "not a text file" in reply.body["text"]
    code_spans_hold(reply.body["text"], "reportˋ&lt;!channel&gt;ˋ")


def test_file_name_in_the_too_large_message_is_escaped(bot: Harness):
    name = "big`<!here>`&<@U0BOSS>.txt"
    file = bot.stub.add_file(name, b"x" * (64 * 1024 + 1))
    msg_ts = share(bot, file, "C0ESC2")
    reply = bot.wait_reply("C0ESC2", msg_ts)
    assert_inert(everything_posted(reply))
    code_spans_hold(reply.body["text"], "bigˋ&lt;!here&gt;ˋ&amp;&lt;@U0BOSS&gt;.txt")


def test_file_name_in_the_no_evidence_message_is_escaped(bot: Harness):
    file = bot.stub.add_file("notes`<!channel>`.txt", b"just some words, nothing measured\n")
    share(bot, file, "D0ESC3")
    reply = bot.wait_reply("D0ESC3")
    assert "I found no evidence in" in everything_posted(reply)
    assert_inert(everything_posted(reply))


def test_binary_content_message_names_the_file_escaped(bot: Harness):
    file = bot.stub.add_file("core`<!channel>`.txt", b"\x7fELF\x00\x00\x00" * 200)
    msg_ts = share(bot, file, "C0ESC4")
    reply = bot.wait_reply("C0ESC4", msg_ts)
    assert_inert(everything_posted(reply))
    code_spans_hold(reply.body["text"], "coreˋ&lt;!channel&gt;ˋ.txt")


# -- entry titles, evidence strings, next commands -------------------------------------------------


def test_hostile_entry_title_in_an_analysis_reply_is_escaped(bot: Harness, make_entry):
    entry = make_entry("hostile-title-entry", title=f"Slow shmdt {HOSTILE}"[:200])
    bot.store.add(entry, author="tester")
    text = (FIXTURES / "seeds/001_truss_shmdt.txt").read_text()
    msg_ts = message(bot, "C0ESC5", f"pid 1234 {HOSTILE}\n```\n{text}\n```")
    reply = bot.wait_reply("C0ESC5", msg_ts)
    payload = everything_posted(reply)
    assert "http://kb.test/entries/hostile-title-entry" in payload
    assert "&lt;!channel&gt;" in payload
    assert_inert(payload)


def test_hostile_event_name_in_evidence_and_commands_is_escaped(bot: Harness):
    awr = (FIXTURES / "oracle/awr_19c_top10_db_file_sequential_read.txt").read_text()
    event = "x`<!channel>` <@U0BOSS> *b*"
    msg_ts = message(bot, "C0ESC6", awr.replace("db file sequential read", event))
    reply = bot.wait_reply("C0ESC6", msg_ts)
    payload = everything_posted(reply)
    assert_inert(payload)
    blocks = "\n".join(
        b["text"]["text"] for b in reply.body["blocks"] if b.get("type") == "section"
    )
    commands = re.findall(r"```(.*?)```", blocks, flags=re.S)
    # the SQL with the event name is one intact code block: its fences cannot be closed early
    assert any("active_session_history" in c and "&lt;!channel&gt;" in c for c in commands)


# -- search queries and commands ------------------------------------------------------------------


def test_search_query_is_escaped_in_the_results(bot: Harness):
    resp, url = slash(bot, f"search shmdt {HOSTILE}")
    assert resp.status_code == 200
    call = bot.stub.wait_for(where=lambda c: c.path == url.split(bot.stub.url)[1])[0]
    assert_inert(everything_posted(call))


def test_unknown_subcommand_is_escaped_in_the_ack(bot: Harness):
    resp, _ = slash(bot, "`<!channel>`")
    assert resp.status_code == 200
    body = json.dumps(resp.json(), ensure_ascii=False)
    assert "is not a perfkb command" in body
    assert_inert(body)


def test_failed_search_message_quoting_the_query_is_escaped(bot: Harness):
    resp, url = slash(bot, "search platform:<!channel>")
    assert resp.status_code == 200
    call = bot.stub.wait_for(where=lambda c: c.path == url.split(bot.stub.url)[1])[0]
    assert_inert(everything_posted(call))


# -- the escape functions --------------------------------------------------------------------------


def test_escape_functions_follow_slacks_rules():
    assert escape.esc("a & <b> c") == "a &amp; &lt;b&gt; c"
    assert escape.text("*x* _y_ ~z~ `w` db_file_name") == "∗x∗ ˍyˍ ∼z∼ ˋwˋ db_file_name"
    assert escape.text("a\x00b\u2028c") == "a b c"
    # inside a word they are no markup and stay as pasted
    assert escape.text("SQL*Net a~b x_y") == "SQL*Net a~b x_y"
    assert escape.text("*SQL*Net*") == "∗SQL*Net∗"
    assert escape.code("a`b\nc<d>") == "aˋb c&lt;d&gt;"
    assert len(escape.code("x" * 500)) == 200
    assert "```" not in escape.code_block("echo ```; x ````")
    assert escape.code_block("`a`").startswith("\u200b`")
    assert escape.code_block("`a`").endswith("`\u200b")
    assert escape.label("a|b <!here>") == "a¦b &lt;!here&gt;"
