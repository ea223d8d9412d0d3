"""The Slack bot as a perfkb plugin (entry point `perfkb.plugins: slack`, see kb/plugins.py).

kb never imports bot: the web app and the CLI call these hooks, which mount Slack's HTTP events
route and add `perfkb bot` (Socket Mode). The Slack libraries are imported only when a hook runs,
so `perfkb --help` does not pay for them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import typer
    from fastapi import FastAPI

    from kb.settings import Settings
    from kb.store import Store


def register_routes(app: FastAPI, store: Store, settings: Settings) -> None:
    """POST /slack/events on the web server (Bolt's HTTP mode; 503 until Slack is configured)."""
    from bot.http import mount

    mount(app, store, settings)


def register_commands(cli: typer.Typer, command: Callable[..., Any]) -> None:
    @command()
    def bot() -> None:
        """Run the Slack bot in Socket Mode (needs SLACK_BOT_TOKEN and SLACK_APP_TOKEN)."""
        from kb.cli import CliError, _settings

        try:
            from bot.socket import run
        except ImportError as exc:
            raise CliError(f"the Slack bot is not available in this build ({exc})") from None
        try:
            run(_settings())
        except SystemExit as exc:  # the bot says what is missing as its exit message
            if isinstance(exc.code, str):
                raise CliError(exc.code.removeprefix("perfkb bot: ")) from None
            raise
