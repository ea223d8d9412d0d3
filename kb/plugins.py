"""Plugins: packages above kb that add web routes and CLI commands without kb importing them.

Why: the Slack bot renders kb's analyses, so it sits above kb; when kb/web/app.py and kb/cli.py
imported `bot.http` and `bot.socket` to mount the bot, the layers pointed both ways and kb could
not be read, tested or shipped without the bot. As in Datasette, a plugin is a module named in
the entry-point group `perfkb.plugins` (pyproject.toml); kb calls the hooks it defines:

- `register_routes(app, store, settings)`: add routes to the FastAPI app (the bot's
  POST /slack/events);
- `register_commands(cli, command)`: add typer commands (`perfkb bot`); `command` is the CLI's
  decorator that turns the errors people cause into one line and a non-zero exit.

A plugin whose module cannot be imported (its optional dependencies are missing) is logged and
left out: everything else keeps working, as it did when the bot import failed before.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from types import ModuleType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import typer
    from fastapi import FastAPI

    from kb.settings import Settings
    from kb.store import Store

GROUP = "perfkb.plugins"
log = logging.getLogger("perfkb.plugins")


@functools.cache
def plugins() -> tuple[ModuleType, ...]:
    """The plugin modules, loaded once per process, in entry-point name order (stable)."""
    from importlib.metadata import entry_points

    loaded = []
    for ep in sorted(entry_points(group=GROUP), key=lambda ep: ep.name):
        try:
            loaded.append(ep.load())
        except ImportError as exc:
            log.info("plugin %s not available: %s", ep.name, exc)
    return tuple(loaded)


def _hooks(name: str) -> list[Callable[..., Any]]:
    return [hook for module in plugins() if callable(hook := getattr(module, name, None))]


def register_routes(app: FastAPI, store: Store, settings: Settings) -> None:
    for hook in _hooks("register_routes"):
        hook(app, store, settings)


def register_commands(cli: typer.Typer, command: Callable[..., Any]) -> None:
    for hook in _hooks("register_commands"):
        hook(cli, command)
