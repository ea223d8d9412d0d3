"""`/perfkb search QUERY | show ID | analyze | add | edit ID | help`, and the analyze modal's submission.

The ack answers what needs no work (help, usage errors); searches and modals happen in the lazy
listener so the 3-second ack always holds.
"""

from __future__ import annotations

import re
from typing import Any

from slack_sdk import WebClient

from bot import escape
from bot.common import analyze, deps, log, post, redact, reply_analysis, report_failure
from bot.modals import (
    ANALYZE_CALLBACK,
    Origin,
    TooLarge,
    add_entry_view,
    analyze_view,
    edit_entry_view,
    field,
    too_large_view,
)
from bot.render import entry_url, has_evidence, render_entry, render_help, render_search
from kb.store import EntryNotFound, StoreError

SUBCOMMANDS = ("search", "show", "analyze", "add", "edit", "help")
_ENTRY_LINK = re.compile(r"/entries/([a-z0-9][a-z0-9-]{0,99})/?>?$")
__all__ = ["ANALYZE_CALLBACK", "ack_command", "run_command", "ack_analyze", "run_analyze"]


def split(text: str | None) -> tuple[str, str]:
    head, _, rest = (text or "").strip().partition(" ")
    return head.lower(), rest.strip()


def ack_command(ack: Any, command: dict[str, Any]) -> None:
    sub, rest = split(command.get("text"))
    if sub in ("", "help"):
        ack(**render_help().model_dump())
    elif sub not in SUBCOMMANDS:
        ack(**render_help(f"`{escape.code(sub, 40)}` is not a perfkb command.").model_dump())
    elif sub == "search" and not rest:
        ack(text="Give a query: `/perfkb search shmdt platform:solaris`")
    elif sub in ("show", "edit") and not rest:
        ack(text=f"Give an entry id: `/perfkb {sub} numa-shmdt-disconnect-storm`")
    else:
        ack()


def run_command(command: dict[str, Any], client: WebClient, respond: Any, context: Any) -> None:
    sub, rest = split(command.get("text"))
    if sub not in ("search", "show", "analyze", "add", "edit") or (
        sub in ("search", "show", "edit") and not rest
    ):
        return  # answered by the ack
    d = deps(context)
    origin = Origin(channel=command.get("channel_id", ""))
    try:
        if sub == "search":
            try:
                page = d.store.search(rest, per_page=10)
            except StoreError as exc:  # a query the store cannot run: its message is for people
                respond(text=f"Search failed: {escape.text(exc)}", response_type="ephemeral")
                return
            message = render_search(page, d.settings.base_url)
            respond(text=message.text, blocks=message.blocks, response_type="ephemeral")
        elif sub == "show":
            show(rest, respond, d)
        elif sub == "edit":
            edit(rest, command, client, respond, d, origin)
        elif sub == "analyze":
            client.views_open(trigger_id=command["trigger_id"], view=analyze_view(origin))
        else:
            client.views_open(trigger_id=command["trigger_id"], view=add_entry_view(origin=origin))
    except Exception as exc:
        log.error("/perfkb %s failed: %s", sub, redact(exc))
        try:
            respond(text=f"perfkb could not run `{escape.code(sub, 40)}`; the error is logged.")
        except Exception as inner:  # response_url expired or unreachable
            log.error("response_url failed too: %s", redact(inner))


def entry_id_of(words: str) -> str:
    """The id in `/perfkb show ID`, also when a link to the entry was pasted instead."""
    first = words.split()[0] if words.split() else ""
    m = _ENTRY_LINK.search(first.split("|")[0])
    return (m.group(1) if m else first).strip("<>").lower()


def show(words: str, respond: Any, d: Any) -> None:
    entry_id = entry_id_of(words)
    try:
        entry = d.store.get(entry_id)
    except EntryNotFound:
        respond(
            text=f"No entry `{escape.code(entry_id, 100)}`. Try `/perfkb search` to find its id.",
            response_type="ephemeral",
        )
        return
    message = render_entry(entry, d.settings.base_url)
    respond(text=message.text, blocks=message.blocks, response_type="ephemeral")


def edit(
    words: str, command: dict[str, Any], client: WebClient, respond: Any, d: Any, origin: Origin
) -> None:
    """Open the edit modal on the entry's current revision (or say where to edit it when it
    does not fit a Slack modal)."""
    entry_id = entry_id_of(words)
    try:
        entry = d.store.get(entry_id)
        rev = d.store.current_rev(entry_id)
    except EntryNotFound:
        respond(
            text=f"No entry `{escape.code(entry_id, 100)}`. Try `/perfkb search` to find its id.",
            response_type="ephemeral",
        )
        return
    try:
        view = edit_entry_view(entry, rev=rev, origin=origin)
    except TooLarge as exc:
        view = too_large_view(
            entry.id, entry_url(d.settings.base_url, entry.id) + "/edit", str(exc)
        )
    client.views_open(trigger_id=command["trigger_id"], view=view)


def ack_analyze(ack: Any, view: dict[str, Any]) -> None:
    text = field(view.get("state", {}).get("values", {}), "evidence")
    if not text:
        ack(response_action="errors", errors={"evidence": "Paste some evidence to analyse."})
        return
    ack()


def run_analyze(
    body: dict[str, Any], view: dict[str, Any], client: WebClient, context: Any
) -> None:
    """The analysis of a pasted modal goes to the user as a DM from the bot."""
    d = deps(context)
    user = body.get("user", {}).get("id", "")
    text = field(view.get("state", {}).get("values", {}), "evidence")
    try:
        result = analyze(d, text=text)
        if has_evidence(result):
            reply_analysis(d, client, result, text=text, channel=user, thread_ts=None)
        else:
            post(client, render_help("I found no evidence in what you pasted."), channel=user)
    except Exception as exc:
        report_failure(client, "the analysis of your paste", exc, user)
