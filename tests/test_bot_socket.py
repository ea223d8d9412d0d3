"""Socket Mode: `perfkb bot` builds the same listeners as HTTP mode, and a Socket Mode envelope
is answered through the stub Web API without any connection to Slack."""

from __future__ import annotations

from pathlib import Path

import pytest
from slack_bolt.adapter.socket_mode.internals import run_bolt_app
from slack_sdk.socket_mode.request import SocketModeRequest
from slack_stub import SlackStub, event_payload, make_settings, seeded_data_dir

import bot.socket
from bot.app import BotConfigError, build_app
from kb.store import Store

SEEDS = Path(__file__).parent / "fixtures" / "seeds"
APP_TOKEN = "xapp-1-A0TEST-0000-socketmodetesttoken"


def listeners(app) -> list[tuple]:
    return [(item.ack_function, tuple(item.lazy_functions)) for item in app._listeners]


@pytest.fixture
def world(tmp_path: Path):
    with SlackStub() as stub:
        settings = make_settings(seeded_data_dir(tmp_path), stub, SLACK_APP_TOKEN=APP_TOKEN)
        store = Store(settings)
        try:
            yield stub, settings, store
        finally:
            store.close()


def test_socket_handler_registers_the_same_listener_functions_as_http_mode(world):
    stub, settings, store = world
    handler = bot.socket.build_handler(store, settings)
    http_app = build_app(store, settings, process_before_response=True)
    assert not handler.app.process_before_response
    assert handler.app_token == APP_TOKEN
    assert listeners(handler.app) == listeners(http_app)
    kinds = {fn.__module__ + "." + fn.__name__ for _, lazy in listeners(http_app) for fn in lazy}
    assert {
        "bot.messages.handle_message",
        "bot.messages.handle_mention",
        "bot.files.handle_file_shared",
        "bot.home.publish_home",
        "bot.home.unfurl_links",
        "bot.commands.run_command",
        "bot.commands.run_analyze",
        "bot.shortcuts.open_add_from_message",
        "bot.shortcuts.create_entry",
        "bot.shortcuts.save_edit",
        "bot.feedback.record_feedback",
    } == kinds
    assert handler.client.web_client.base_url == settings.slack_api_url
    assert stub.calls == []  # building connects to nothing


def test_socket_mode_envelope_is_answered_through_the_web_api(world):
    stub, settings, store = world
    handler = bot.socket.build_handler(store, settings)
    text = "```\n" + (SEEDS / "002_dtrace_flat.txt").read_text() + "```"
    event = {"type": "message", "channel": "C0SOCK", "channel_type": "channel", "user": "U0AL"}
    event.update(text=text, ts="1700002000.000001")
    request = SocketModeRequest(
        type="events_api", envelope_id="env-1", payload=event_payload(event), retry_attempt=0
    )
    response = run_bolt_app(handler.app, request)
    assert response.status == 200
    (reply,) = stub.wait_for("chat.postMessage", lambda c: c.body["channel"] == "C0SOCK")
    assert reply.body["thread_ts"] == "1700002000.000001"
    assert "standalone-plsql-pin-overhead" in reply.body["text"] + str(reply.body["blocks"])


def test_run_without_tokens_exits_with_the_missing_setting(tmp_path: Path):
    settings = make_settings(tmp_path, None, SLACK_APP_TOKEN=None)
    with pytest.raises(SystemExit, match="SLACK_APP_TOKEN not set"):
        bot.socket.run(settings)


def test_a_bot_token_in_place_of_the_app_token_is_refused(world):
    _, settings, store = world
    wrong = settings.model_copy(update={"slack_app_token": "xoxb-not-an-app-token"})
    with pytest.raises(BotConfigError, match="xapp-"):
        bot.socket.build_handler(store, wrong)


def test_run_reports_a_refused_connection_in_one_line(world):
    stub, settings, _ = world
    stub.fail_once("apps.connections.open", "invalid_auth")
    with pytest.raises(SystemExit, match="Slack refused to connect: invalid_auth"):
        bot.socket.run(settings)
    (call,) = [c for c in stub.calls if c.api == "apps.connections.open"]
    assert call.headers["authorization"] == f"Bearer {APP_TOKEN}"
