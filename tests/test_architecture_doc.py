"""docs/architecture.md's module map stays true: every module of ingest/, kb/ and bot/ is named by a
row (directly, in a {a,b} list, or under a folder row), and every path a row names exists."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "architecture.md"
PACKAGES = ("ingest", "kb", "bot")


def _named_paths() -> list[str]:
    text = DOC.read_text(encoding="utf-8")
    section = text.split("## Module map", 1)[1].split("\n## ", 1)[0]
    out: list[str] = []
    for row in section.splitlines():
        if not row.startswith("| `"):
            continue
        first_cell = row.split("|")[1]
        for code in re.findall(r"`([^`]+)`", first_cell):
            path = code.split(":", 1)[0]
            brace = re.fullmatch(r"(.*)\{([^}]*)\}(.*)", path)
            if brace:
                out += [brace[1] + part + brace[3] for part in brace[2].split(",")]
            else:
                out.append(path)
    return out


def _modules() -> list[str]:
    found = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*")):
            if path.suffix in (".py", ".c") and path.name != "__init__.py":
                found.append(path.relative_to(ROOT).as_posix())
    return found


def test_every_row_names_something_that_exists():
    missing = [p for p in _named_paths() if not (ROOT / p).exists()]
    assert not missing, f"docs/architecture.md names paths that do not exist: {missing}"


def test_every_module_is_in_the_map():
    named = _named_paths()
    folders = [p for p in named if p.endswith("/")]
    left_out = [
        m for m in _modules() if m not in named and not any(m.startswith(f) for f in folders)
    ]
    assert not left_out, f"add these modules to docs/architecture.md's module map: {left_out}"
