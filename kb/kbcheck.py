"""Rules a knowledge base must keep to be trusted (`perfkb check --kb`, tests/test_kb_trust.py).

Validation (kb/models.py) says an entry is well formed; these rules say it is fit to be read at
3 a.m.: every entry is proved on evidence (a fixture directory), every SQL command runs as written
(one statement per line, so one error cannot hide the next statement), and no signature makes a
diagnosis out of a precondition (a setting, a file name, a line of DDL that a healthy system shows
too). Each problem is one line a person can act on.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path

from pydantic import BaseModel

from kb.models import Entry
from kb.signatures import TextCondition

SQL_START = re.compile(
    r"^\s*(?:echo\s+[\"'])?\s*(select|insert|update|delete|merge|exec|execute|begin|declare|"
    r"alter|create|drop|grant|truncate|with|set\s+\w+)\b",
    re.IGNORECASE,
)
# Text that is a symptom when seen once: an error the database or the OS reports.
ERROR_TEXT = re.compile(
    r"ORA-|TNS-|\\bORA|E[A-Z]{3,}|Checkpoint not complete|Archival stopped|Too many open files|"
    r"No space left on device|Cannot assign requested address"
)
# A regex that constrains a number (`[1-9]\d{2,}`, `\d{8,}`): a measurement written as text,
# not a precondition.
NUMBER_TEST = re.compile(r"\[[0-9]-9\]|\\d\{\d")


class KbProblem(BaseModel):
    entry: str
    rule: str  # fixtures | mixed-statements | precondition-only
    message: str

    def line(self) -> str:
        return f"{self.entry}: {self.message}"


def _statements(line: str) -> list[str]:
    """The SQL statements on one line: split at semicolons outside single quotes."""
    out, cur, quoted = [], "", False
    for ch in line:
        if ch == "'":
            quoted = not quoted
        if ch == ";" and not quoted:
            out.append(cur)
            cur = ""
        else:
            cur += ch
    out.append(cur)
    return [s for s in out if SQL_START.match(s)]


def mixed_statements(command: str) -> bool:
    """True when a line of a command that feeds SQL*Plus holds two SQL statements: `echo "select
    ...; select ...;" | sqlplus` (the classic mistake: SQL*Plus reads it as one line)."""
    if "sqlplus" not in command.lower():
        return False
    return any(len(_statements(line)) > 1 for line in command.splitlines())


def is_precondition(leaf: object) -> bool:
    """A leaf that a healthy system can hold as well as a sick one: a piece of text seen once (a
    setting, a file name, a DDL line) that is not an error message."""
    if not isinstance(leaf, TextCondition) or leaf.min_count > 1:
        return False
    if leaf.regex is not None and NUMBER_TEST.search(leaf.regex):
        return False
    pattern = leaf.text if leaf.text is not None else (leaf.regex or "")
    return not ERROR_TEXT.search(pattern)


def precondition_only(cond: object) -> bool:
    """Whether the condition can hold on preconditions alone: an `all` when each part can, an
    `any` when one branch can, a `not` always (an absence is no evidence either)."""
    kind = getattr(cond, "kind", "")
    if kind == "not":
        return True
    if kind == "all":
        return all(precondition_only(c) for c in cond.children)  # type: ignore[attr-defined]
    if kind == "any":
        return any(precondition_only(c) for c in cond.children)  # type: ignore[attr-defined]
    return is_precondition(cond)


def check_entry(entry: Entry, fixtures: Path | None) -> list[KbProblem]:
    problems: list[KbProblem] = []
    if fixtures is not None:
        here = fixtures / entry.id
        if not here.is_dir() or not any(p.is_file() for p in here.iterdir()):
            problems.append(
                KbProblem(
                    entry=entry.id,
                    rule="fixtures",
                    message=f"no evidence fixtures in {here} (a positive and a healthy one)",
                )
            )
    for i, c in enumerate(entry.next_commands):
        if mixed_statements(c.command):
            problems.append(
                KbProblem(
                    entry=entry.id,
                    rule="mixed-statements",
                    message=f"next_commands[{i}] puts two SQL statements on one line; use a "
                    "heredoc with one statement per line",
                )
            )
    for sig in entry.signatures:
        if sig.specific and precondition_only(sig.when):
            problems.append(
                KbProblem(
                    entry=entry.id,
                    rule="precondition-only",
                    message=f"signature {sig.name} holds on preconditions only (text seen once "
                    "that is no error); make it specific: false with weight at most 0.3",
                )
            )
    return problems


def check_kb(entries: Iterable[Entry], fixtures: Path | None) -> list[KbProblem]:
    """Every problem of every entry; `fixtures` None skips the fixture rule (an installed copy)."""
    out: list[KbProblem] = []
    for entry in entries:
        out += check_entry(entry, fixtures)
    return out
