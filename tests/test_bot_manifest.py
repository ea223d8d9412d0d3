"""bot/manifest.yml must agree with the code: the slash command, the shortcut's callback id,
the events the listeners handle, the scopes the Web API calls need, and the request URL path."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlsplit

import yaml

from bot import http, shortcuts

MANIFEST = Path(__file__).resolve().parents[1] / "bot" / "manifest.yml"


def test_manifest_matches_the_listeners_and_api_calls():
    manifest = yaml.safe_load(MANIFEST.read_text())
    features, settings = manifest["features"], manifest["settings"]
    assert [c["command"] for c in features["slash_commands"]] == ["/perfkb"]
    (shortcut,) = features["shortcuts"]
    assert (shortcut["type"], shortcut["callback_id"]) == ("message", shortcuts.SHORTCUT_CALLBACK)
    assert shortcut["name"] == "Add to knowledge base"
    assert set(settings["event_subscriptions"]["bot_events"]) == {
        "app_home_opened",
        "app_mention",
        "file_shared",
        "link_shared",
        "message.channels",
        "message.groups",
        "message.im",
        "message.mpim",
    }
    assert settings["interactivity"]["is_enabled"] is True
    scopes = set(manifest["oauth_config"]["scopes"]["bot"])
    # chat.postMessage/update, files.info + download, conversations.replies, /perfkb, mentions
    needed = {"chat:write", "files:read", "channels:history", "groups:history", "im:history"}
    # group DMs, the :eyes: reaction, link previews
    needed |= {"mpim:history", "reactions:write", "links:read", "links:write"}
    assert needed | {"commands", "app_mentions:read"} <= scopes
    urls = [
        settings["event_subscriptions"]["request_url"],
        settings["interactivity"]["request_url"],
        *[c["url"] for c in features["slash_commands"]],
    ]
    assert all(u.endswith(http.PATH) for u in urls)
    assert features["app_home"]["messages_tab_enabled"] is True  # people can DM the bot
    assert features["app_home"]["home_tab_enabled"] is True  # app_home_opened -> views.publish
    assert features["unfurl_domains"] == [
        urlsplit(settings["interactivity"]["request_url"]).hostname
    ]
