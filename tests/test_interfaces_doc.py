"""docs/interfaces.md names the calls the adapters make; this keeps it from drifting (issue 18:
it once named a `kb.matcher.analyze` that did not exist, and its signatures were copied by hand).

Every `def name(...)` in a code block under a `## path` heading, and every `path: name(...)` in
the prose, must exist in that module (methods under the `class X:` line above them), and the
parameters the doc writes must be the function's own, in its order."""

from __future__ import annotations

import importlib
import inspect
import re
from pathlib import Path

DOC = Path(__file__).resolve().parents[1] / "docs" / "interfaces.md"
DEF = re.compile(r"^(\s*)def (\w+)\((.*?)\)\s*(?:->|$|#)")
CLASS = re.compile(r"^class (\w+)")
PROSE = re.compile(r"`((?:kb|bot|ingest)/[\w/]+\.py): (\w+)\(([^)]*)\)")
CALL = re.compile(r"^(\w+)\((\w*)\)\.(\w+)\(")


def _module(path: str):
    return importlib.import_module(path.removesuffix(".py").replace("/", "."))


def _params(text: str) -> list[str]:
    names = []
    for part in re.split(r",(?![^\[]*\])", text):
        part = part.strip().lstrip("*")
        if not part or part in ("...", "/"):
            continue
        names.append(re.split(r"[:=\s]", part, maxsplit=1)[0])
    return [n for n in names if n and n != "self"]


def _documented() -> list[tuple[str, str | None, str, list[str]]]:
    """(module path, class or None, function, documented parameter names)."""
    found = []
    module = None
    cls = None
    in_code = False
    pending = ""
    for line in DOC.read_text().splitlines():
        if line.startswith("## "):
            heading = line[3:].strip()
            module = heading if heading.endswith(".py") else None
            cls = None
        if line.startswith("```"):
            in_code = not in_code
            cls = None
            continue
        for path, name, params in PROSE.findall(line):
            found.append((path, None, name, _params(params)))
        if not in_code or module is None:
            continue
        if pending:
            line = pending + " " + line.strip()
            pending = ""
        if m := CLASS.match(line):
            cls = m.group(1)
            continue
        if line.lstrip().startswith("def ") and line.count("(") > line.count(")"):
            pending = line.split("#", 1)[0].rstrip()
            continue
        if m := DEF.match(line):
            indent, name, params = m.groups()
            found.append((module, cls if indent else None, name, _params(params)))
    return found


def test_the_doc_names_calls():
    names = {(m, c, f) for m, c, f, _ in _documented()}
    assert len(names) >= 25, names  # the parser above still reads the doc


def test_every_documented_call_exists_with_its_parameters():
    problems = []
    for path, cls, name, params in _documented():
        try:
            owner = _module(path)
            if cls:
                owner = getattr(owner, cls)
            func = getattr(owner, name)
        except (ImportError, AttributeError) as exc:
            problems.append(f"{path} {cls or ''}.{name}: {exc}")
            continue
        real = [p for p in inspect.signature(func).parameters if p != "self"]
        if params != real[: len(params)] and params != real:
            problems.append(f"{path} {cls or ''}.{name}: doc {params}, code {real}")
    assert not problems, "\n".join(problems)
