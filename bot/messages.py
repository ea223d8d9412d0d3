"""Messages and mentions with pasted evidence: answered in their thread.

Channel chatter without evidence is left alone; a DM or a mention without evidence gets the short
help. The bot never answers itself, other bots, edits or deletions, and one message is answered
once even when it arrives as both a `message` and an `app_mention` event.
"""

from __future__ import annotations

import html
import re
from typing import Any

from slack_sdk import WebClient

from bot import files
from bot.common import analyze, deps, log, post, reply_analysis, report_failure
from bot.render import has_evidence, render_help

# Subtypes that are a person saying something; everything else (edits, deletions, joins, bot
# messages, ...) is ignored.
ANSWERED_SUBTYPES = {None, "file_share", "thread_broadcast"}
MAX_TEXT = 200_000  # Slack caps messages at 40k characters; this only guards against oddities

_MENTION = re.compile(r"<@[A-Z0-9]+(?:\|[^>]*)?>")
_LINK = re.compile(r"<((?:https?|mailto|tel):[^>|]*)(?:\|([^>]*))?>")
_CHANNEL = re.compile(r"<#[A-Z0-9]+\|([^>]*)>")
_SPECIAL = re.compile(r"<!(here|channel|everyone)(?:\|[^>]*)?>")


def slack_to_plain(text: str) -> str:
    """Slack's wire format back to what the user typed: mentions dropped, links and channels as
    their labels, and the three escaped characters restored (parsers need `<` and `&`)."""
    text = _MENTION.sub("", text)
    text = _LINK.sub(lambda m: m.group(2) or m.group(1), text)
    text = _CHANNEL.sub(lambda m: "#" + m.group(1), text)
    text = _SPECIAL.sub(lambda m: "@" + m.group(1), text)
    return html.unescape(text)


def from_person(event: dict[str, Any], context: Any) -> bool:
    """True for a message a person wrote (not us, not another bot, not an edit)."""
    if event.get("subtype") not in ANSWERED_SUBTYPES:
        return False
    if event.get("bot_id") or event.get("bot_profile") or not event.get("user"):
        return False
    bot_user = context.get("bot_user_id")
    return not (bot_user and event.get("user") == bot_user)


def thread_of(event: dict[str, Any]) -> str:
    return event.get("thread_ts") or event["ts"]


def handle_message(event: dict[str, Any], client: WebClient, context: Any) -> None:
    """Lazy listener for `message` events."""
    answer(event, client, context, addressed=event.get("channel_type") == "im")


def handle_mention(event: dict[str, Any], client: WebClient, context: Any) -> None:
    """Lazy listener for `app_mention`: the user asked us, so no evidence still gets help."""
    answer(event, client, context, addressed=True)


def answer(event: dict[str, Any], client: WebClient, context: Any, *, addressed: bool) -> None:
    if not from_person(event, context) or "ts" not in event or "channel" not in event:
        return
    d = deps(context)
    channel, thread_ts = event["channel"], thread_of(event)
    if not d.events.first_time(f"msg:{channel}:{event['ts']}"):
        return
    text = slack_to_plain(event.get("text") or "")[:MAX_TEXT]
    try:
        if event.get("files") and files.handle_message_files(event, text, client, context):
            return
        result = analyze(d, text=text)
        if has_evidence(result):
            reply_analysis(d, client, result, text=text, channel=channel, thread_ts=thread_ts)
        elif addressed:
            dm = event.get("channel_type") == "im"
            note = "I found no evidence in that message."
            post(
                client,
                render_help(note),
                channel=channel,
                thread_ts=None if dm else thread_ts,
            )
        else:
            log.debug("no evidence in %s/%s; not answering", channel, event["ts"])
    except Exception as exc:
        report_failure(client, "the analysis of this message", exc, channel, thread_ts)
