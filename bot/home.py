"""The App Home tab and link previews (unfurls) of perfkb URLs.

Why: people share perfkb links in incident channels; a preview that already says what the evidence
showed saves a click mid-incident. The App Home is where someone who did not see a thread finds
the latest analyses and what the team added to the knowledge base recently.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import unquote, urlsplit

from slack_sdk import WebClient

from bot.common import deps, log, redact
from bot.render import render_home, unfurl_analysis, unfurl_entry
from kb.results import AnalysisResult
from kb.store import EntryNotFound, StoreError

HOME_DAYS = 30
MAX_UNFURLS = 5  # Slack sends at most a few links per message; more is not a person's message
_ENTRY_PATH = re.compile(r"^/entries/([a-z0-9][a-z0-9-]{0,99})/?$")
_ANALYSIS_PATH = re.compile(r"^/analyze/([a-z0-9]{1,40})/?$")


def publish_home(event: dict[str, Any], client: WebClient, context: Any) -> None:
    """Lazy listener for `app_home_opened`: recent analyses and the entries of the last 30 days."""
    if event.get("tab", "home") != "home" or not event.get("user"):
        return
    d = deps(context)
    try:
        since = datetime.now(UTC) - timedelta(days=HOME_DAYS)
        view = render_home(
            d.store.recent_analyses(10),
            d.store.entries_created_since(since),
            d.settings.base_url,
            HOME_DAYS,
        )
        client.views_publish(user_id=event["user"], view=view)
    except Exception as exc:
        log.error("App Home for %s failed: %s", event.get("user"), redact(exc))


def _ours(url: str, base_url: str) -> str | None:
    """The path of a link to this perfkb (same host and port as PERFKB_BASE_URL), else None."""
    try:
        link, base = urlsplit(url), urlsplit(base_url)
    except ValueError:
        return None
    if not link.hostname or link.hostname != base.hostname or link.port != base.port:
        return None
    prefix = base.path.rstrip("/")
    path = unquote(link.path)
    if prefix and not path.startswith(prefix + "/"):
        return None
    return path[len(prefix) :]


def preview(url: str, d: Any) -> dict[str, Any] | None:
    """The unfurl of one link, or None when it is not a perfkb entry or analysis."""
    path = _ours(url, d.settings.base_url)
    if path is None:
        return None
    base = d.settings.base_url
    if m := _ENTRY_PATH.match(path):
        try:
            return unfurl_entry(d.store.get(m.group(1)), base)
        except EntryNotFound:
            return None
    if m := _ANALYSIS_PATH.match(path):
        try:
            _, raw = d.store.get_analysis(m.group(1))
            return unfurl_analysis(m.group(1), AnalysisResult.model_validate_json(raw), base)
        except (StoreError, ValueError):
            return None
    return None


def unfurl_links(event: dict[str, Any], client: WebClient, context: Any) -> None:
    """Lazy listener for `link_shared`: previews for links to perfkb entries and analyses."""
    d = deps(context)
    unfurls: dict[str, Any] = {}
    for item in (event.get("links") or [])[:MAX_UNFURLS]:
        url = item.get("url") if isinstance(item, dict) else None
        if isinstance(url, str) and (shown := preview(url, d)) is not None:
            unfurls[url] = shown
    if not unfurls:
        return
    try:
        if event.get("unfurl_id") and event.get("source"):
            client.chat_unfurl(
                unfurl_id=event["unfurl_id"], source=event["source"], unfurls=unfurls
            )
        else:
            client.chat_unfurl(channel=event["channel"], ts=event["message_ts"], unfurls=unfurls)
    except Exception as exc:
        log.error("chat.unfurl failed: %s", redact(exc))
