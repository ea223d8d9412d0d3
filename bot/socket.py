"""Socket Mode (`perfkb bot`): for teams without a public URL. The app opens a WebSocket to
Slack with the app-level token (SLACK_APP_TOKEN, scope connections:write) and receives the same
events, commands and interactions that HTTP mode gets at /slack/events, handled by the same
listeners."""

from __future__ import annotations

import logging

from slack_bolt.adapter.socket_mode import SocketModeHandler
from slack_sdk.errors import SlackApiError

from bot.app import BotConfigError, build_app
from bot.common import api_error
from kb.settings import Settings
from kb.store import Store

log = logging.getLogger("perfkb.bot")


def build_handler(store: Store, settings: Settings) -> SocketModeHandler:
    """The Socket Mode handler, not yet connected."""
    if not settings.slack_app_token:
        raise BotConfigError("SLACK_APP_TOKEN is not set (an app-level xapp- token)")
    if not settings.slack_app_token.startswith("xapp-"):
        raise BotConfigError("SLACK_APP_TOKEN must be an app-level token starting with xapp-")
    app = build_app(store, settings, process_before_response=False)
    return SocketModeHandler(app, app_token=settings.slack_app_token)


def run(settings: Settings) -> None:
    """Connect and serve until interrupted. A missing setting or a token Slack refuses ends the
    process with a one-line message (SystemExit), not a traceback."""
    if not (settings.slack_bot_token and settings.slack_app_token):
        raise SystemExit(f"perfkb bot: {_missing_text(settings)}")
    if not logging.getLogger().handlers:  # a long-running process: show what it does
        logging.basicConfig(
            level=settings.log_level.upper(),
            format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        )
    store = Store(settings)
    try:
        from kb.analysis import warm

        warm(store)  # compile the KB now and keep it out of the cyclic GC (a long-lived process)
        handler = build_handler(store, settings)
        log.info("perfkb bot connecting in Socket Mode (Web API %s)", settings.slack_api_url)
        handler.start()
    except BotConfigError as exc:
        raise SystemExit(f"perfkb bot: {exc}") from None
    except SlackApiError as exc:
        raise SystemExit(f"perfkb bot: Slack refused to connect: {api_error(exc)}") from None
    except OSError as exc:  # urllib's URLError included: Slack (or SLACK_API_URL) unreachable
        reason = getattr(exc, "reason", exc)
        raise SystemExit(
            f"perfkb bot: cannot reach the Slack API at {settings.slack_api_url}: {reason}"
        ) from None
    except KeyboardInterrupt:
        log.info("perfkb bot stopped")
    finally:
        store.close()


def _missing_text(settings: Settings) -> str:
    names = [
        name
        for name, value in (
            ("SLACK_BOT_TOKEN", settings.slack_bot_token),
            ("SLACK_APP_TOKEN", settings.slack_app_token),
        )
        if not value
    ]
    return " and ".join(names) + " not set (see README: Slack setup in minutes)"
