"""The Bolt app: one set of listeners for HTTP mode (web server) and Socket Mode (`perfkb bot`).

Every listener is registered as `ack` + `lazy`: the ack returns within Slack's 3 seconds and the
work runs after it. In HTTP mode (process_before_response=True) Bolt sends the HTTP response
when the ack function returns and runs the lazy functions in its thread pool; in Socket Mode the
same functions run on Bolt's listener threads.
"""

from __future__ import annotations

import logging
import secrets
from typing import TYPE_CHECKING, Any

from slack_bolt import App, BoltResponse
from slack_sdk import WebClient
from slack_sdk.http_retry.builtin_handlers import (
    ConnectionErrorRetryHandler,
    RateLimitErrorRetryHandler,
)

from bot import commands, feedback, files, home, messages, shortcuts
from bot.common import CONTEXT_KEY, BotDeps, ack_now, log, redact
from bot.events import EventLog
from bot.modals import ADD_CALLBACK, ANALYZE_CALLBACK, EDIT_CALLBACK
from kb.settings import Settings

if TYPE_CHECKING:
    from kb.store import Store

EVENTS_DB = "bot_events.sqlite3"
WEB_API_TIMEOUT_S = 20


BOLT_LOG = logging.getLogger("perfkb.bot.bolt")
# Bolt also reads SLACK_BOT_TOKEN from the environment and warns that our client (which carries
# the same token) wins over it; that is the intent, so the warning is only noise.
BOLT_LOG.addFilter(lambda record: "`token` will be unused" not in record.getMessage())


class BotConfigError(Exception):
    """A Slack setting is missing or unusable; str(e) names it."""


def web_client(settings: Settings) -> WebClient:
    """A Web API client on SLACK_API_URL that waits out 429s (Retry-After) and retries once on
    a dropped connection."""
    base_url = settings.slack_api_url.rstrip("/") + "/"
    return WebClient(
        token=settings.slack_bot_token,
        base_url=base_url,
        timeout=WEB_API_TIMEOUT_S,
        retry_handlers=[
            RateLimitErrorRetryHandler(max_retry_count=2),
            ConnectionErrorRetryHandler(max_retry_count=1),
        ],
        logger=logging.getLogger("perfkb.bot.webapi"),
    )


def register(app: App) -> None:
    """All listeners. Module-level functions only, so every app gets the same objects."""
    app.event("message")(ack=ack_now, lazy=[messages.handle_message])
    app.event("app_mention")(ack=ack_now, lazy=[messages.handle_mention])
    app.event("file_shared")(ack=ack_now, lazy=[files.handle_file_shared])
    app.event("app_home_opened")(ack=ack_now, lazy=[home.publish_home])
    app.event("link_shared")(ack=ack_now, lazy=[home.unfurl_links])
    app.command("/perfkb")(ack=commands.ack_command, lazy=[commands.run_command])
    app.view(ANALYZE_CALLBACK)(ack=commands.ack_analyze, lazy=[commands.run_analyze])
    app.shortcut(shortcuts.SHORTCUT_CALLBACK)(ack=ack_now, lazy=[shortcuts.open_add_from_message])
    app.view(ADD_CALLBACK)(ack=shortcuts.ack_add_entry, lazy=[shortcuts.create_entry])
    app.view(EDIT_CALLBACK)(ack=shortcuts.ack_edit_entry, lazy=[shortcuts.save_edit])
    app.action(feedback.FEEDBACK_ACTION)(ack=ack_now, lazy=[feedback.record_feedback])
    app.error(on_error)


def on_error(error: Exception, body: dict[str, Any]) -> None:
    kind = body.get("type") if isinstance(body, dict) else "?"
    log.error("unhandled error in a %s request: %s", kind, redact(error))


def build_app(store: Store, settings: Settings, *, process_before_response: bool = False) -> App:
    """The Bolt app over `store`. Needs SLACK_BOT_TOKEN; HTTP mode (process_before_response)
    also needs SLACK_SIGNING_SECRET. Makes no network call: auth.test runs on the first event."""
    if not settings.slack_bot_token:
        raise BotConfigError("SLACK_BOT_TOKEN is not set")
    if process_before_response and not settings.slack_signing_secret:
        raise BotConfigError("SLACK_SIGNING_SECRET is not set")
    deps = BotDeps(store=store, settings=settings, events=EventLog(settings.data_dir / EVENTS_DB))
    app = App(
        name="perfkb",
        logger=BOLT_LOG,
        client=web_client(settings),  # carries the bot token
        # Socket Mode requests are not signed; an unguessable secret keeps HTTP closed anyway.
        signing_secret=settings.slack_signing_secret or secrets.token_hex(32),
        token_verification_enabled=False,
        process_before_response=process_before_response,
    )

    def attach(context: Any, next: Any) -> None:
        context[CONTEXT_KEY] = deps
        next()

    def skip_seen(body: dict[str, Any], request: Any, next: Any) -> BoltResponse | None:
        event_id = body.get("event_id") if body.get("type") == "event_callback" else None
        if event_id and not deps.events.first_time(f"event:{event_id}"):
            retry = (request.headers.get("x-slack-retry-num") or ["-"])[0]
            log.info(
                "event %s already handled; ignoring the redelivery (retry %s)", event_id, retry
            )
            return BoltResponse(status=200, body="")
        next()
        return None

    app.middleware(attach)
    app.middleware(skip_seen)
    register(app)
    return app
