"""Uploaded text files: fetched from url_private with the bot token, streamed into the analysis.

An upload arrives twice (a `message` with `files`, and a `file_shared` event): whichever comes
first handles the file, keyed on its id. Files over PERFKB_MAX_FILE_BYTES, binary files and
fetch failures get a one-line answer instead of an analysis.
"""

from __future__ import annotations

import itertools
from typing import Any

from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError, SlackClientError

from bot.common import (
    BotDeps,
    analyze,
    api_error,
    deps,
    evidence_text,
    log,
    post,
    reply_analysis,
    report_failure,
    say_short,
)
from bot.download import DownloadError, iter_text, too_large_message
from bot.escape import code
from bot.render import has_evidence, render_help

MAX_FILES_PER_MESSAGE = 3
# From this size on, reading and analysing a file takes long enough that people wonder whether
# perfkb saw it: an :eyes: reaction on their message says it is being read, removed when done.
EYES_FROM_BYTES = 512 * 1024
READING = "eyes"
TEXT_FILETYPES = {"text", "txt", "log", "csv", "tsv", "markdown", "shell", "sql", "plain", "diff"}
TEXT_SUFFIXES = (".txt", ".log", ".out", ".trc", ".prf", ".lst", ".csv", ".tsv", ".html", ".md")


def is_text(file: dict[str, Any]) -> bool:
    mimetype = (file.get("mimetype") or "").lower()
    name = (file.get("name") or "").lower()
    return (
        mimetype.startswith("text/")
        or (file.get("filetype") or "").lower() in TEXT_FILETYPES
        or name.endswith(TEXT_SUFFIXES)
    )


def file_info(client: WebClient, file_id: str) -> dict[str, Any]:
    return client.files_info(file=file_id)["file"]


def share_ts(file: dict[str, Any], channel: str) -> str | None:
    """The ts of the message that shared `file` in `channel` (its thread, when in one)."""
    shares = file.get("shares") or {}
    for kind in ("public", "private"):
        for share in (shares.get(kind) or {}).get(channel) or []:
            return share.get("thread_ts") or share.get("ts")
    return None


def shared_message_ts(file: dict[str, Any], channel: str) -> str | None:
    """The ts of the message itself that shared `file` in `channel` (where a reaction goes)."""
    shares = file.get("shares") or {}
    for kind in ("public", "private"):
        for share in (shares.get(kind) or {}).get(channel) or []:
            return share.get("ts")
    return None


def _react(client: WebClient, add: bool, channel: str, ts: str | None) -> None:
    """Add or remove the :eyes: reaction; a failure only costs the sign, never the analysis."""
    if not ts:
        return
    try:
        if add:
            client.reactions_add(channel=channel, timestamp=ts, name=READING)
        else:
            client.reactions_remove(channel=channel, timestamp=ts, name=READING)
    except (SlackApiError, SlackClientError) as exc:
        log.info("reaction %s on %s/%s: %s", READING, channel, ts, api_error(exc))


def handle_file_shared(event: dict[str, Any], client: WebClient, context: Any) -> None:
    """Lazy listener for `file_shared`: look the file up, then analyse it like an attachment."""
    d = deps(context)
    file_id, channel = event.get("file_id"), event.get("channel_id")
    if not file_id or not channel:
        return
    if event.get("user_id") and event.get("user_id") == context.get("bot_user_id"):
        return
    if not d.events.first_time(f"file:{file_id}"):
        return
    try:
        info = file_info(client, file_id)
    except (SlackApiError, SlackClientError) as exc:
        log.error("files.info %s failed: %s", file_id, api_error(exc))
        say_short(client, channel, "perfkb could not look up that file (files.info failed).")
        return
    dm = channel.startswith("D")
    analyze_file(
        d,
        client,
        info,
        channel=channel,
        thread_ts=share_ts(info, channel),
        dm=dm,
        message_ts=shared_message_ts(info, channel),
    )


def handle_message_files(event: dict[str, Any], text: str, client: WebClient, context: Any) -> bool:
    """Analyse the text files attached to a message. True when the message needs nothing more
    (its files were handled here or already by a `file_shared` event)."""
    d = deps(context)
    channel, thread_ts = event["channel"], event.get("thread_ts") or event["ts"]
    dm = event.get("channel_type") == "im"
    attached = [f for f in event.get("files") or [] if f.get("id")]
    fresh = [f for f in attached if d.events.first_time(f"file:{f['id']}")]
    if attached and not fresh:
        return True
    handled = False
    for file in fresh[:MAX_FILES_PER_MESSAGE]:
        if not file.get("url_private") or "size" not in file:
            try:
                file = file_info(client, file["id"])
            except (SlackApiError, SlackClientError) as exc:
                log.error("files.info %s failed: %s", file["id"], api_error(exc))
                say_short(client, channel, "perfkb could not look up that file.", thread_ts)
                handled = True
                continue
        if is_text(file) or dm:  # analyse it, or say in the DM why not
            analyze_file(
                d,
                client,
                file,
                channel=channel,
                thread_ts=thread_ts,
                dm=dm,
                prefix=text,
                message_ts=event["ts"],
            )
            handled = True
    return handled


def analyze_file(
    d: BotDeps,
    client: WebClient,
    file: dict[str, Any],
    *,
    channel: str,
    thread_ts: str | None,
    dm: bool,
    prefix: str = "",
    message_ts: str | None = None,
) -> None:
    raw_name = str(file.get("name") or file.get("id") or "file")
    name = code(raw_name)  # the name as it may stand in our `code spans` (bot/escape.py)
    if not is_text(file):
        if dm:
            say_short(client, channel, f"`{name}` is not a text file; I read text captures.")
        return
    cap = d.settings.max_file_bytes
    size = file.get("size")
    if isinstance(size, int) and size > cap:
        say_short(client, channel, too_large_message(name, size, cap), thread_ts)
        return
    url = file.get("url_private_download") or file.get("url_private")
    if not url:
        say_short(client, channel, f"Slack gave no download link for `{name}`.", thread_ts)
        return
    big = isinstance(size, int) and size >= EYES_FROM_BYTES
    if big:
        _react(client, True, channel, message_ts)
    try:
        _read_and_answer(
            d, client, file, url, channel=channel, thread_ts=thread_ts, dm=dm, prefix=prefix
        )
    finally:
        if big:
            _react(client, False, channel, message_ts)


def _read_and_answer(
    d: BotDeps,
    client: WebClient,
    file: dict[str, Any],
    url: str,
    *,
    channel: str,
    thread_ts: str | None,
    dm: bool,
    prefix: str,
) -> None:
    raw_name = str(file.get("name") or file.get("id") or "file")
    name = code(raw_name)
    cap = d.settings.max_file_bytes
    token = d.settings.slack_bot_token or ""
    try:
        pieces = iter_text(
            url,
            token=token,
            api_url=d.settings.slack_api_url,
            max_bytes=cap,
            name=name,
            expect_html=(file.get("mimetype") or "") == "text/html",
        )
        # the message's own words come first, as lines of the same text
        head = [line + "\n" for line in prefix.splitlines()] if prefix.strip() else []
        result = analyze(d, chunks=itertools.chain(head, pieces))
    except DownloadError as exc:
        log.warning("file %s from %s not analysed: %s", file.get("id"), channel, exc)
        say_short(client, channel, f":warning: {exc}", thread_ts)
        return
    except Exception as exc:
        report_failure(client, f"the analysis of `{name}`", exc, channel, thread_ts)
        return
    if has_evidence(result):
        saved = f"[file {raw_name}]\n" + evidence_text(result, d.settings.saved_text_bytes)
        reply_analysis(d, client, result, text=saved, channel=channel, thread_ts=thread_ts)
    elif dm:
        post(client, render_help(f"I found no evidence in `{name}`."), channel=channel)
    else:
        log.info("no evidence in file %s; not answering in %s", file.get("id"), channel)
