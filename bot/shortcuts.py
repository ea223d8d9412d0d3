"""Message shortcut "Add to knowledge base" and the add-entry modal's submission.

The modal is prefilled from the whole thread: the evidence blocks found in its messages and
signatures proposed from their facts (kb.proposal.propose_signatures). The submission is checked
in the ack, so problems show on the fields; the entry is written in the lazy listener, with the
Slack user as author, and a link goes to the thread (or to the user for `/perfkb add`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError, SlackClientError

from bot import escape
from bot.common import BotDeps, api_error, deps, log, post, report_failure, user_of
from bot.escape import code
from bot.messages import slack_to_plain
from bot.modals import (
    Origin,
    add_entry_view,
    clip_lines,
    comparable,
    entry_from_view,
    field,
    origin_of,
    signatures_yaml,
)
from bot.render import entry_url, link
from ingest.detect import parse_text
from kb.models import Entry
from kb.proposal import propose_signatures
from kb.store import EntryNotFound, StoreError

SHORTCUT_CALLBACK = "add_to_kb"
THREAD_LIMIT = 200
THREAD_TEXT_CAP = 512 * 1024


def author_of(body: dict[str, Any]) -> str:
    user = body.get("user") or {}
    uid = user.get("id") or "unknown"
    name = user.get("username") or user.get("name")
    return f"{name} (Slack {uid})" if name else f"Slack {uid}"


def thread_text(client: WebClient, channel: str, thread_ts: str, message: dict[str, Any]) -> str:
    """The people's messages of the thread, oldest first; the shortcut's own message alone when
    the thread cannot be read (no scope, bot not in the channel)."""
    try:
        replies = client.conversations_replies(channel=channel, ts=thread_ts, limit=THREAD_LIMIT)
        messages = replies.get("messages") or []
    except (SlackApiError, SlackClientError) as exc:
        log.warning("conversations.replies in %s failed: %s", channel, api_error(exc))
        messages = [message]
    texts, size = [], 0
    for msg in messages:
        if msg.get("bot_id") or not msg.get("text"):
            continue
        text = slack_to_plain(msg["text"])
        texts.append(text)
        size += len(text)
        if size > THREAD_TEXT_CAP:
            break
    return "\n\n".join(texts) or slack_to_plain(message.get("text") or "")


def prefill(text: str) -> tuple[str, str, list[str]]:
    """(evidence, proposed signatures YAML, platforms) for the modal."""
    evidence = parse_text(text)
    blocks = [b for b in evidence.blocks if b.format != "unknown"]
    shown = "\n\n".join(b.text for b in blocks) or text
    platforms = {b.platform for b in blocks if b.platform and b.platform != "any"}
    if evidence.context.platform and evidence.context.platform != "any":
        platforms.add(evidence.context.platform)
    yaml_text = signatures_yaml(propose_signatures(evidence)) if blocks else ""
    return clip_lines(shown), yaml_text, sorted(platforms)


def open_add_from_message(body: dict[str, Any], client: WebClient, context: Any) -> None:
    """Lazy listener of the message shortcut: read the thread, open the prefilled modal."""
    channel = (body.get("channel") or {}).get("id", "")
    message = body.get("message") or {}
    thread_ts = message.get("thread_ts") or message.get("ts") or ""
    try:
        text = thread_text(client, channel, thread_ts, message)
        evidence, yaml_text, platforms = prefill(text)
        view = add_entry_view(
            evidence=evidence,
            signatures=yaml_text,
            platforms=platforms,
            origin=Origin(channel=channel, thread_ts=thread_ts),
        )
        client.views_open(trigger_id=body["trigger_id"], view=view)
    except Exception as exc:
        user = (body.get("user") or {}).get("id")
        report_failure(client, "opening the add-entry form", exc, user)


def ack_add_entry(ack: Any, body: dict[str, Any], view: dict[str, Any], context: Any) -> None:
    """Validate in the ack so Slack shows the problems on the fields."""
    d = deps(context)
    entry, errors = entry_from_view(view, author_of(body))
    if entry is not None and exists(d, entry.id):
        typed = field(view.get("state", {}).get("values", {}), "entry_id")
        block = "entry_id" if typed else "title"
        errors = {block: f"An entry with id '{entry.id}' exists; choose another id or title."}
    if errors:
        ack(response_action="errors", errors=errors)
        return
    ack()


def exists(d: BotDeps, entry_id: str) -> bool:
    try:
        d.store.get(entry_id)
    except EntryNotFound:
        return False
    return True


def _save(
    client: WebClient,
    user: str,
    view: dict[str, Any],
    body: dict[str, Any],
    write: Callable[[Entry, str], tuple[Entry, str]],
) -> tuple[Entry, str] | None:
    """The entry a submitted add/edit modal holds, written by `write(entry, author)`; None when
    the ack refused it already or the write failed (the user is told which)."""
    author = author_of(body)
    entry, _ = entry_from_view(view, author)
    if entry is None:  # the ack refused it already
        return None
    try:
        return write(entry, author)
    except (StoreError, EntryNotFound) as exc:
        post(client, channel=user, text=f"perfkb did not save the entry: {escape.text(exc)}")
    except Exception as exc:
        report_failure(client, "saving the entry", exc, user)
    return None


def create_entry(
    body: dict[str, Any], view: dict[str, Any], client: WebClient, context: Any
) -> None:
    """Lazy listener of the submission: write the entry, then post its link."""
    d, user, origin = deps(context), user_of(body), origin_of(view)
    done = _save(client, user, view, body, lambda e, author: (d.store.add(e, author=author), ""))
    if done is None:
        return
    saved, _ = done
    url = entry_url(d.settings.base_url, saved.id)
    text = f"<@{user}> added {link(url, saved.title)} to the knowledge base (`{code(saved.id)}`)."
    in_thread = origin.channel and origin.thread_ts
    if in_thread and post(client, channel=origin.channel, thread_ts=origin.thread_ts, text=text):
        return
    post(client, channel=user, text=text)


def ack_edit_entry(ack: Any, body: dict[str, Any], view: dict[str, Any], context: Any) -> None:
    """Validate an edit in the ack, like an addition; a save by someone else since the modal
    opened is shown too, so nobody overwrites a change they never saw."""
    d = deps(context)
    entry, errors = entry_from_view(view, author_of(body))
    origin = origin_of(view)
    if entry is not None:
        try:
            current = d.store.current_rev(entry.id)
        except EntryNotFound:
            current = None
        if current is None:
            errors = {"title": f"Entry '{entry.id}' was deleted since you opened it."}
        elif origin.rev and current != origin.rev:
            errors = {
                "title": f"Someone saved '{entry.id}' since you opened it (revision {current}, "
                f"you edited {origin.rev}); close this form and edit again."
            }
    if errors:
        ack(response_action="errors", errors=errors)
        return
    ack()


def save_edit(body: dict[str, Any], view: dict[str, Any], client: WebClient, context: Any) -> None:
    """Lazy listener of an edit: save the new revision (none when nothing changed), then tell
    the editor with a link."""
    d, user, origin = deps(context), user_of(body), origin_of(view)

    def write(entry: Entry, author: str) -> tuple[Entry, str]:
        old = d.store.get(entry.id)
        if comparable(old) == comparable(entry):
            return old, "left unchanged"
        return d.store.update(entry, author=author, expected_rev=origin.rev or None), "edited"

    done = _save(client, user, view, body, write)
    if done is None:
        return
    saved, verb = done
    url = entry_url(d.settings.base_url, saved.id)
    text = f"<@{user}> {verb} {link(url, saved.title)} (`{code(saved.id)}`)."
    post(client, channel=origin.channel or user, text=text)
