"""HTTP mode at POST /slack/events on the real web app: Slack's URL check, request signatures,
the 503 when Slack is not configured, and the body cap."""

from __future__ import annotations

import json
import logging
import time
from pathlib import Path

import httpx
import pytest
from slack_stub import SECRET, BotServer, Harness, event_payload, make_settings, running_harness


@pytest.fixture
def bot(tmp_path: Path):
    with running_harness(tmp_path) as harness:
        yield harness


def evidence_event(channel: str) -> str:
    text = "```\n" + (Path(__file__).parent / "fixtures/seeds/002_dtrace_flat.txt").read_text()
    event = {"type": "message", "channel": channel, "channel_type": "channel", "user": "U0EVE"}
    event.update(text=text + "\n```", ts="1700000100.000001")
    return json.dumps(event_payload(event))


def test_url_verification_answers_the_challenge(bot: Harness):
    body = json.dumps(
        {"token": "t", "challenge": "3eZbrw1aBm2rZgRNFdxV2595E9CY", "type": "url_verification"}
    )
    resp = bot.server.post_signed(body, "application/json")
    assert resp.status_code == 200
    assert resp.json() == {"challenge": "3eZbrw1aBm2rZgRNFdxV2595E9CY"}


def test_unsigned_wrongly_signed_stale_or_tampered_requests_get_401_and_no_reply(bot: Harness):
    body = evidence_event("C0FORGED")
    unsigned = bot.server.http.post(
        "/slack/events", content=body, headers={"Content-Type": "application/json"}
    )
    wrong = bot.server.post_signed(body, "application/json", secret="not-the-secret")
    stale = bot.server.post_signed(body, "application/json", timestamp=int(time.time()) - 6 * 60)
    signed_for_other_body = bot.server.post_signed(
        body.replace("C0FORGED", "C0ELSE"), "application/json"
    ).request.headers
    tampered = bot.server.http.post(
        "/slack/events",
        content=body,
        headers={
            "Content-Type": "application/json",
            "X-Slack-Request-Timestamp": signed_for_other_body["x-slack-request-timestamp"],
            "X-Slack-Signature": signed_for_other_body["x-slack-signature"],
        },
    )
    for resp in (unsigned, wrong, stale, tampered):
        assert resp.status_code == 401
    bot.drain()
    assert bot.replies("C0FORGED") == []
    # The correctly signed copy for the other channel went through: the bot was listening.
    assert len(bot.replies("C0ELSE")) == 1


def test_missing_slack_settings_give_503_and_a_log_line_naming_them(tmp_path: Path, caplog):
    from kb.web.app import create_app

    caplog.set_level(logging.WARNING, logger="perfkb.bot")
    settings = make_settings(tmp_path, None, SLACK_SIGNING_SECRET=None)
    with BotServer(create_app(settings), SECRET) as server:
        resp = server.post_signed(evidence_event("C0X"), "application/json")
        assert resp.status_code == 503
        assert "SLACK_SIGNING_SECRET" in resp.json()["error"]
        assert server.http.get("/").status_code == 200  # the rest of the site still works
    assert any(
        "SLACK_SIGNING_SECRET" in r.getMessage() and "/slack/events" in r.getMessage()
        for r in caplog.records
    )


def test_missing_bot_token_is_named_too(tmp_path: Path, caplog):
    from kb.web.app import create_app

    caplog.set_level(logging.WARNING, logger="perfkb.bot")
    settings = make_settings(tmp_path, None, SLACK_BOT_TOKEN=None, SLACK_SIGNING_SECRET=None)
    with BotServer(create_app(settings), SECRET) as server:
        resp = server.post_signed("{}", "application/json")
    assert resp.status_code == 503
    assert "SLACK_BOT_TOKEN and SLACK_SIGNING_SECRET not set" in resp.json()["error"]
    assert "SLACK_BOT_TOKEN and SLACK_SIGNING_SECRET not set" in caplog.text


def test_oversized_body_is_refused_before_dispatch(bot: Harness):
    body = json.dumps({"type": "event_callback", "pad": "x" * (1024 * 1024 + 10)})
    resp = bot.server.post_signed(body, "application/json")
    assert resp.status_code == 413
    assert isinstance(resp, httpx.Response) and "too large" in resp.text
