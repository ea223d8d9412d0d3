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
import importlib
import os
import re
import sys
from collections.abc import Callable
from types import ModuleType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import typer
    from fastapi import FastAPI

    from kb.settings import Settings
    from kb.store import Store

GROUP = "perfkb.plugins"


def _normalized(distribution: str) -> str:
    """A distribution's name as importlib.metadata compares them (PEP 503, `_` for `-`)."""
    return re.sub(r"[-_.]+", "_", distribution).lower()


def _section(text: str, group: str) -> list[tuple[str, str]]:
    """The `name = value` lines of `[group]` in an entry_points.txt (the INI-like format of the
    packaging spec: `#`/`;` comments, blank lines, whitespace around `=` and names)."""
    found: list[tuple[str, str]] = []
    inside = False
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line[0] in "#;":
            continue
        if line.startswith("[") and line.endswith("]"):
            inside = line[1:-1].strip() == group
        elif inside and "=" in line:
            name, _, value = line.partition("=")
            found.append((name.strip(), value.strip()))
    return found


def _scan(group: str) -> list[tuple[str, str]] | None:
    """(name, value) of every entry point in `group` of the distributions on sys.path, read from
    their `*.dist-info`/`*.egg-info` directories; None if a path entry is a zip or other file
    (then importlib.metadata, which reads those, is asked instead).

    Why not importlib.metadata always: importing it (email, zipfile, importlib.resources) and
    building a Distribution for every installed package cost ~15 ms, a third of what
    `import typer, rich` costs, on every `perfkb --help` (issue #19). The rules are the same as
    its own: sys.path in order, the first distribution of a (normalized) name wins.
    """
    seen: set[str] = set()
    found: list[tuple[str, str]] = []
    for entry in sys.path:
        base = entry or "."
        if os.path.isfile(base):
            return None
        try:
            names = sorted(os.listdir(base))
        except OSError:  # missing, not a directory, a path-hook name
            continue
        for name in names:
            stem, dot, suffix = name.rpartition(".")
            if not dot or suffix not in ("dist-info", "egg-info"):
                continue
            distribution = _normalized(stem.partition("-")[0])
            if distribution in seen:
                continue
            seen.add(distribution)
            try:
                with open(os.path.join(base, name, "entry_points.txt"), encoding="utf-8") as fh:
                    text = fh.read()
            except (OSError, UnicodeDecodeError):  # no entry points, or an .egg-info file
                continue
            found.extend(_section(text, group))
    return found


def _entry_points(group: str) -> list[tuple[str, str]]:
    scanned = _scan(group)
    if scanned is not None:
        return scanned
    from importlib.metadata import entry_points

    return [(ep.name, ep.value) for ep in entry_points(group=group)]


def _load(value: str) -> Any:
    """What `module.sub:attr.attr [extra]` names, as EntryPoint.load resolves it."""
    target = value.partition("[")[0].strip()
    module_name, _, attrs = target.partition(":")
    obj: Any = importlib.import_module(module_name.strip())
    for attr in filter(None, attrs.strip().split(".")):
        obj = getattr(obj, attr)
    return obj


@functools.cache
def plugins() -> tuple[ModuleType, ...]:
    """The plugin modules, loaded once per process, in entry-point name order (stable)."""
    loaded = []
    for name, value in sorted(_entry_points(GROUP), key=lambda ep: ep[0]):
        try:
            loaded.append(_load(value))
        except ImportError as exc:
            # logging is imported only here: `perfkb --help` otherwise never needs it (~2 ms)
            import logging

            logging.getLogger("perfkb.plugins").info("plugin %s not available: %s", name, exc)
    return tuple(loaded)


def _hooks(name: str) -> list[Callable[..., Any]]:
    return [hook for module in plugins() if callable(hook := getattr(module, name, None))]


def register_routes(app: FastAPI, store: Store, settings: Settings) -> None:
    for hook in _hooks("register_routes"):
        hook(app, store, settings)


def register_commands(cli: typer.Typer, command: Callable[..., Any]) -> None:
    for hook in _hooks("register_commands"):
        hook(cli, command)
