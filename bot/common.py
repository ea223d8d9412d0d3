"""What every listener shares: the store and settings (carried in the Bolt context), safe Web API
calls, analysis + reply, and log redaction.

Listeners are plain module-level functions so the HTTP app and the Socket Mode app register the
very same objects; per-app state reaches them through `context["perfkb"]`.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError, SlackClientError

from bot.events import EventLog
from bot.render import Message, has_evidence, render_analysis
from kb.analysis import analyze_chunks, analyze_text
from kb.results import AnalysisResult
from kb.settings import Settings
from kb.store import Store

log = logging.getLogger("perfkb.bot")

CONTEXT_KEY = "perfkb"
_TOKEN = re.compile(r"\b(xox[a-z]|xapp)-[A-Za-z0-9-]+")


@dataclass
class BotDeps:
    store: Store
    settings: Settings
    events: EventLog

    def __deepcopy__(self, memo: dict) -> BotDeps:
        # Bolt deep-copies the context for lazy listeners; the store is shared, not copied.
        return self

    def __copy__(self) -> BotDeps:
        return self


def user_of(body: dict[str, Any]) -> str:
    """The Slack user id an interaction payload came from ("" when it names none)."""
    return (body.get("user") or {}).get("id", "")


def deps(context: Any) -> BotDeps:
    return context[CONTEXT_KEY]


def redact(text: object) -> str:
    """A message safe to log: Slack tokens replaced."""
    return _TOKEN.sub(lambda m: m.group(1) + "-…", str(text))


def api_error(exc: Exception) -> str:
    if isinstance(exc, SlackApiError):
        return str(exc.response.get("error") or exc.response.status_code)
    return redact(f"{type(exc).__name__}: {exc}")


def ack_now(ack: Any) -> None:
    """Ack at once; the work happens in the lazy listener."""
    ack()


def post(client: WebClient, message: Message | None = None, **kwargs: Any) -> dict | None:
    """chat.postMessage that logs a Web API failure instead of raising (the reply is best
    effort; one failed post must not take the listener down)."""
    if message is not None:
        kwargs.update(text=message.text, blocks=message.blocks)
    try:
        return client.chat_postMessage(**kwargs).data  # type: ignore[return-value]
    except (SlackApiError, SlackClientError) as exc:
        log.error("chat.postMessage to %s failed: %s", kwargs.get("channel"), api_error(exc))
        return None


def say_short(client: WebClient, channel: str, text: str, thread_ts: str | None = None) -> None:
    post(client, channel=channel, thread_ts=thread_ts, text=text)


def report_failure(
    client: WebClient, what: str, exc: Exception, channel: str | None, thread_ts: str | None = None
) -> None:
    """Log an unexpected failure (redacted) and tell the user in a sentence."""
    log.error("%s failed: %s", what, api_error(exc), exc_info=not isinstance(exc, SlackApiError))
    if channel:
        say_short(
            client,
            channel,
            f":warning: perfkb could not finish {what}; the error is logged.",
            thread_ts,
        )


def analyze(
    d: BotDeps, *, text: str | None = None, chunks: Iterable[str] | None = None
) -> AnalysisResult:
    """A message's text, or a file's text arriving in pieces (bot.download.iter_text)."""
    if chunks is not None:
        return analyze_chunks(chunks, d.store)
    return analyze_text(text or "", d.store)


def evidence_text(result: AnalysisResult, cap: int) -> str:
    """The evidence blocks' text, for the saved analysis when the input was streamed."""
    parts, size = [], 0
    for block in result.blocks:
        if block.format == "unknown" or not block.text:
            continue
        parts.append(block.text)
        size += len(block.text)
        if size > cap:  # the store keeps `cap` bytes (Settings.saved_text_bytes) and says so
            break
    return "\n\n".join(parts)


def save(d: BotDeps, text: str, result: AnalysisResult) -> str | None:
    """Keep the analysis for its web permalink; a failure only costs the link."""
    try:
        return d.store.save_analysis(text, result.model_dump_json())  # capped by the store
    except Exception as exc:  # the reply is still worth sending
        log.error("saving the analysis failed: %s", redact(exc))
        return None


def reply_analysis(
    d: BotDeps,
    client: WebClient,
    result: AnalysisResult,
    *,
    text: str,
    channel: str,
    thread_ts: str | None,
) -> dict | None:
    analysis_id = save(d, text, result) if has_evidence(result) else None
    message = render_analysis(result, base_url=d.settings.base_url, analysis_id=analysis_id)
    return post(client, message, channel=channel, thread_ts=thread_ts, unfurl_links=False)
