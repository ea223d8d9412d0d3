"""What a fresh install must hold: the pinned whoosh fork importing cleanly, the starter entries
and web assets shipped inside the package, and the console script."""

from __future__ import annotations

import subprocess
import sys
from importlib import metadata
from pathlib import Path

import kb


def test_whoosh_fork_is_pinned_and_imports_under_warnings_as_errors(tmp_path):
    # the original whoosh 2.7.4 raises SyntaxError here on 3.11 (invalid escapes); the pinned
    # whoosh-reloaded 2.7.5 keeps the 2.7 API and index format and imports cleanly
    assert metadata.version("whoosh-reloaded") == "2.7.5"
    out = subprocess.run(
        [
            sys.executable,
            "-W",
            "error",
            "-c",
            "import whoosh.index, whoosh.qparser, whoosh.fields, kb.index, kb.store",
        ],
        capture_output=True,
        text=True,
        # an empty bytecode cache forces every module to compile from source here
        env={"PYTHONPYCACHEPREFIX": str(tmp_path / "pycache"), "PATH": "/usr/bin:/bin"},
        cwd=tmp_path,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr


def test_package_ships_entries_templates_and_console_script():
    root = Path(kb.__file__).parent
    assert len(list((root / "entries").glob("*.yaml"))) >= 38
    assert (root / "web" / "templates").is_dir() and any((root / "web" / "static").iterdir())
    scripts = {ep.name: ep.value for ep in metadata.entry_points(group="console_scripts")}
    assert scripts.get("perfkb") == "kb.cli:app"
