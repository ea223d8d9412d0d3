"""HTTP mode: Slack's events, commands and interactions at POST /slack/events on the web server.

Bolt verifies each request's signature (SLACK_SIGNING_SECRET, 5-minute window) and answers 401
itself. Without the Slack settings the web server still serves everything else and this route
answers 503, with a log line naming the missing setting.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response
from slack_bolt import App
from slack_bolt.adapter.fastapi import SlackRequestHandler
from slack_bolt.adapter.starlette.handler import to_bolt_request, to_starlette_response
from starlette.concurrency import run_in_threadpool

from kb.settings import Settings

if TYPE_CHECKING:
    from kb.store import Store

PATH = "/slack/events"
MAX_BODY = 1024 * 1024  # Slack's payloads are a few kB; a modal submission stays far below this
log = logging.getLogger("perfkb.bot")


class ThreadedSlackRequestHandler(SlackRequestHandler):
    """Bolt's FastAPI handler, with the (blocking) dispatch moved off the event loop so one
    slow ack never stalls the web page."""

    async def handle_post(self, req: Request) -> Response:
        chunks, size = [], 0
        async for chunk in req.stream():
            size += len(chunk)
            if size > MAX_BODY:
                return JSONResponse({"ok": False, "error": "request too large"}, status_code=413)
            chunks.append(chunk)
        body = b"".join(chunks)
        bolt_resp = await run_in_threadpool(self.app.dispatch, to_bolt_request(req, body))
        return to_starlette_response(bolt_resp)


def missing_settings(settings: Settings) -> list[str]:
    return [
        name
        for name, value in (
            ("SLACK_BOT_TOKEN", settings.slack_bot_token),
            ("SLACK_SIGNING_SECRET", settings.slack_signing_secret),
        )
        if not value
    ]


def mount(fastapi_app: FastAPI, store: Store, settings: Settings) -> App | None:
    """Add POST /slack/events to `fastapi_app`; returns the Bolt app (None when disabled)."""
    from bot.app import BotConfigError, build_app

    missing = missing_settings(settings)
    bolt_app: App | None = None
    reason = ""
    if missing:
        reason = f"{' and '.join(missing)} not set"
    else:
        try:
            bolt_app = build_app(store, settings, process_before_response=True)
        except (BotConfigError, ValueError, OSError) as exc:
            reason = str(exc)
    if bolt_app is None:
        log.warning("Slack HTTP mode disabled: %s; %s answers 503", reason, PATH)
        fastapi_app.state.slack_app = None

        @fastapi_app.post(PATH, include_in_schema=False)
        async def slack_disabled() -> Response:
            log.warning("Slack request refused: %s", reason)
            return JSONResponse(
                {"ok": False, "error": f"Slack is not configured on this server: {reason}"},
                status_code=503,
            )

        return None

    handler = ThreadedSlackRequestHandler(bolt_app)
    fastapi_app.state.slack_app = bolt_app

    @fastapi_app.post(PATH, include_in_schema=False)
    async def slack_events(req: Request) -> Response:
        return await handler.handle_post(req)

    log.info("Slack HTTP mode on %s (Web API %s)", PATH, settings.slack_api_url)
    return bolt_app
