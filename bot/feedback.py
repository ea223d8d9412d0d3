"""The "Right cause" / "Wrong cause" buttons under each suggestion.

The action id carries the entry id and the evidence fingerprint, so a vote is stored per entry and
per evidence (store.record_feedback) and the matcher can rank with it the next time the same kind
of evidence comes in. The message is then updated in place to show the vote was recorded.
"""

from __future__ import annotations

from typing import Any

from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError, SlackClientError

from bot import escape
from bot.common import api_error, deps, log, redact, user_of
from bot.render import FEEDBACK_ACTION, mark_feedback, parse_feedback_action_id
from kb.store import StoreError

__all__ = ["FEEDBACK_ACTION", "record_feedback"]


def record_feedback(
    body: dict[str, Any], action: dict[str, Any], client: WebClient, respond: Any, context: Any
) -> None:
    """Lazy listener of a feedback button."""
    parsed = parse_feedback_action_id(action.get("action_id", ""))
    user = user_of(body)
    if parsed is None or not user:
        log.warning("ignoring a feedback action with an unexpected id")
        return
    verdict, entry_id, fingerprint = parsed
    d = deps(context)
    try:
        d.store.record_feedback(entry_id, fingerprint, verdict, user)  # type: ignore[arg-type]
        counts = d.store.feedback_for(fingerprint).get(entry_id, {})
    except StoreError as exc:
        _tell(respond, f"perfkb could not record that: {escape.text(exc)}")
        return
    except Exception as exc:
        log.error("recording feedback failed: %s", redact(exc), exc_info=True)
        _tell(respond, "perfkb could not record that; the error is logged.")
        return
    message = body.get("message")
    channel = (body.get("channel") or {}).get("id")
    if not message or not channel:  # an ephemeral message: only response_url can change it
        _tell(respond, f"Recorded: *{verdict} cause* for `{escape.code(entry_id)}`.")
        return
    blocks = mark_feedback(message.get("blocks") or [], entry_id, user, verdict, counts)
    try:
        client.chat_update(
            channel=channel, ts=message["ts"], text=message.get("text") or "", blocks=blocks
        )
    except (SlackApiError, SlackClientError) as exc:
        log.error("chat.update after feedback failed: %s", api_error(exc))
        _tell(respond, f"Recorded: *{verdict} cause* for `{escape.code(entry_id)}`.")


def _tell(respond: Any, text: str) -> None:
    try:
        respond(text=text, response_type="ephemeral", replace_original=False)
    except Exception as exc:
        log.error("response_url failed: %s", redact(exc))
