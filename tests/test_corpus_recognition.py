"""How many real problem snippets of ../shared/corpus perfkb recognises: a top match of medium or
high confidence. The count is pinned as a floor (a change that loses a snippet fails here). That
no snippet the reader's notes call normal rises above low is test_kb_trust's false-positive sweep.

Run it as a script to see, per problem snippet, the top matches and why (the facts parsed and
the signatures that held): `python tests/test_corpus_recognition.py [--all]`."""

from __future__ import annotations

import sys
from functools import cache
from pathlib import Path

import yaml

from ingest.detect import parse_text
from kb.analysis import analyze_evidence
from kb.entry_yaml import load_entry
from kb.matcher import Matcher

ROOT = Path(__file__).resolve().parents[1]

CORPUS = ROOT.parent / "shared" / "corpus"
# Problem snippets whose top match is medium or high. Raise it when a change recognises more;
# never lower it to make a change pass.
FLOOR = 13


@cache
def matcher() -> Matcher:
    entries = [
        load_entry(p.read_text(encoding="utf-8"), p.name)
        for p in sorted((ROOT / "kb" / "entries").glob("*.yaml"))
    ]
    return Matcher(entries)


def labels() -> list[dict]:
    return yaml.safe_load((CORPUS / "labels.yaml").read_text(encoding="utf-8"))


def analyse(item: dict):
    text = (CORPUS / item["file"]).read_text(encoding="utf-8", errors="replace")
    return analyze_evidence(parse_text(text), matcher=matcher())


def recognised(result) -> bool:
    return bool(result.matches) and result.matches[0].confidence in ("medium", "high")


def report(show_all: bool = False) -> str:
    """Per problem snippet: recognised or not, the top three matches and why, the facts."""
    lines = []
    count = total = 0
    for item in labels():
        if item.get("problem_shown") is not True and not show_all:
            continue
        result = analyse(item)
        total += item.get("problem_shown") is True
        hit = recognised(result)
        count += hit and item.get("problem_shown") is True
        mark = "HIT " if hit else "miss"
        lines.append(f"{mark} {item['file']}  (problem_shown: {item.get('problem_shown')})")
        lines.append(f"     shows: {' '.join(str(item.get('what_it_shows', '')).split())[:300]}")
        for m in result.matches[:3]:
            held = [s.name for s in m.signatures if s.held]
            lines.append(f"     {m.confidence:6} {m.score:5.2f} {m.id}  held: {held}  {m.reason}")
        facts = sorted({name for b in result.blocks for name in b.facts})
        formats = sorted({b.format for b in result.blocks})
        lines.append(f"     formats: {formats}  facts: {facts[:40]}")
    lines.append(f"{count} of {total} problem snippets recognised (medium or high top match)")
    return "\n".join(lines)


def test_recognised_problem_snippets_do_not_drop_below_the_floor() -> None:
    assert (CORPUS / "labels.yaml").is_file(), f"the corpus is missing: {CORPUS}"
    problems = [i for i in labels() if i.get("problem_shown") is True]
    assert len(problems) >= 30
    hits = [i["file"] for i in problems if recognised(analyse(i))]
    assert len(hits) >= FLOOR, f"{len(hits)} recognised (floor {FLOOR}): {hits}"


if __name__ == "__main__":
    print(report(show_all="--all" in sys.argv))
