"""`/perfkb search QUERY | analyze | add | help`, and the analyze modal's submission.

The ack answers what needs no work (help, usage errors); searches and modals happen in the lazy
listener so the 3-second ack always holds.
"""

from __future__ import annotations

from typing import Any

from slack_sdk import WebClient

from bot import escape
from bot.common import analyze, deps, log, post, redact, reply_analysis, report_failure
from bot.modals import ANALYZE_CALLBACK, Origin, add_entry_view, analyze_view, field
from bot.render import has_evidence, render_help, render_search
from kb.store import StoreError

SUBCOMMANDS = ("search", "analyze", "add", "help")
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
    else:
        ack()


def run_command(command: dict[str, Any], client: WebClient, respond: Any, context: Any) -> None:
    sub, rest = split(command.get("text"))
    if sub not in ("search", "analyze", "add") or (sub == "search" and not rest):
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
