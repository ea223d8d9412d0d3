"""Render diagnostic commands for the platform the evidence came from, and pick placeholder values.

Entries carry commands for each platform they know; when one is missing for the user's
platform we translate the common Solaris <-> Linux tool pairs rather than show nothing.
"""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path

from ingest.datafile import load_yaml
from ingest.model import Evidence

# The translation pairs are rules, kept as data beside the triage rules.
TRANSLATIONS_PATH = Path(__file__).with_name("rules") / "translate.yaml"


@lru_cache(maxsize=1)
def _rules() -> dict[str, list[tuple[re.Pattern[str], str]]]:
    """{platform: [(pattern, replacement)]} from translate.yaml, compiled once when first used
    (not at import: most commands never need translating)."""
    data = load_yaml(TRANSLATIONS_PATH)
    return {
        plat: [(re.compile(r["pattern"]), r["to"]) for r in rows] for plat, rows in data.items()
    }


def translate(command: str, to_platform: str) -> str:
    """The command for `to_platform` (linux or solaris) through the usual tool pairs; a
    command none of them matches, or another platform, comes back as it was."""
    out = command
    for rx, repl in _rules().get(to_platform, ()):
        out = rx.sub(repl, out, count=1)
    return out


def evidence_pid(evidence: Evidence) -> int | None:
    """The process the evidence is about: a pid named in the prose, else the busiest traced pid."""
    if evidence.context.pids:
        return evidence.context.pids[0]
    for block in evidence.blocks:
        procs = block.details.get("processes") if isinstance(block.details, dict) else None
        if procs:
            try:
                return int(procs[0]["pid"])
            except (KeyError, TypeError, ValueError):
                continue
    return None


def evidence_values(evidence: Evidence) -> dict[str, object]:
    """The placeholder values the evidence as a whole supplies (kb/command_fill.py validates and
    quotes them; here they are only picked)."""
    values: dict[str, object] = {}
    pid = evidence_pid(evidence)
    if pid is not None:
        values["pid"] = pid
    if evidence.context.sids:
        values["sid"] = evidence.context.sids[0]
    return values
