"""kb/plugins.py: the bot reaches the web app and the CLI only through entry-point hooks, and a
plugin that cannot be imported is left out without breaking kb."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
import zipfile
from importlib.metadata import EntryPoint, entry_points
from pathlib import Path

import pytest

from kb import plugins

ROOT = Path(__file__).resolve().parents[1]


def test_the_bot_is_registered_as_a_plugin():
    names = [module.__name__ for module in plugins.plugins()]
    assert names == ["bot.plugin"]


def test_a_plugin_that_cannot_be_imported_is_logged_and_left_out(monkeypatch, caplog):
    broken = EntryPoint(name="broken", value="no_such_module_for_perfkb", group=plugins.GROUP)
    good = EntryPoint(name="slack", value="bot.plugin", group=plugins.GROUP)
    monkeypatch.setattr(
        plugins,
        "_entry_points",
        lambda group: [(ep.name, ep.value) for ep in (good, broken)] if group else [],
    )
    plugins.plugins.cache_clear()
    try:
        with caplog.at_level(logging.INFO, logger="perfkb.plugins"):
            loaded = plugins.plugins()
    finally:
        plugins.plugins.cache_clear()
    assert [m.__name__ for m in loaded] == ["bot.plugin"]
    assert "plugin broken not available" in caplog.text


@pytest.mark.parametrize("group", ["perfkb.plugins", "console_scripts", "pytest11"])
def test_the_entry_point_scan_finds_what_importlib_metadata_finds(group):
    """plugins() reads entry_points.txt itself (importlib.metadata costs ~15 ms of every
    `perfkb --help`); on this interpreter's sys.path it must find exactly what the standard
    library finds, for perfkb's group and for groups with many entries."""
    expected = {(ep.name, ep.value) for ep in entry_points(group=group)}
    scanned = plugins._scan(group)
    assert scanned is not None
    assert set(scanned) == expected
    assert group != "perfkb.plugins" or ("slack", "bot.plugin") in expected


def test_entry_points_txt_is_read_with_comments_spaces_and_other_sections():
    text = (
        "# written by a build backend\n"
        "[console_scripts]\n"
        "tool = pkg.cli:main\n"
        "\n"
        "[ perfkb.plugins ]\n"
        "; a comment\n"
        "  extra =  other.mod:hooks.inner [slack]\n"
        "plain=pkg.plugin\n"
        "[later]\n"
        "x = y\n"
    )
    assert plugins._section(text, "perfkb.plugins") == [
        ("extra", "other.mod:hooks.inner [slack]"),
        ("plain", "pkg.plugin"),
    ]
    assert plugins._load("kb.plugins:plugins") is plugins.plugins
    assert plugins._load("kb.plugins") is plugins


@pytest.mark.parametrize("module", ["kb.cli", "kb.web.app", "kb.store", "kb.matcher"])
def test_importing_kb_loads_neither_the_bot_nor_slack(module):
    """Importing a kb module, the CLI included, loads at most the bot's hook module (bot.plugin,
    which imports nothing itself) and no Slack library: the bot's code runs only when a hook
    does. The import-linter contract says the same of the source; this checks run time."""
    code = (
        f"import json, sys, {module}; "
        "print(json.dumps([m for m in sys.modules if m.split('.')[0] in ('bot', 'slack_bolt', 'slack_sdk')]))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout
    assert set(json.loads(out)) <= {"bot", "bot.plugin"}


def test_a_zip_on_sys_path_falls_back_to_importlib_metadata(tmp_path, monkeypatch):
    """Distributions inside a zip are importlib.metadata's business: the scan says it cannot
    answer (None), and plugins() asks importlib.metadata, which still finds the bot."""
    archive = tmp_path / "bundle.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("placeholder.txt", "nothing here\n")
    monkeypatch.setattr(sys, "path", [*sys.path, str(archive)])
    assert plugins._scan(plugins.GROUP) is None
    assert ("slack", "bot.plugin") in plugins._entry_points(plugins.GROUP)
