"""DBMS_XPLAN output: `display_cursor` (one child cursor) and `display_awr` (every plan AWR kept
for a statement), in any release from 10g:

    SQL_ID  7h35uxf5uhmm1, child number 1          <- display_awr prints `SQL_ID 7h35uxf5uhmm1`
    -------------------------------------
    select ... from orders where ...

    Plan hash value: 3914023618

    --------------------------------------------------------------------
    | Id  | Operation          | Name   | Rows  | Bytes | Cost (%CPU)| ...
    ...
    Note
    -----
       - this is an adaptive plan
       - statistics feedback used for this statement

What is read: the plan hash values of each sql_id (several under one sql_id: the statement
changed plans, the same `plan.*` facts as a plan history listing), the child numbers, and the
Note section's remarks that explain a plan change (adaptive plan, statistics or cardinality
feedback, dynamic statistics or sampling, a SQL plan baseline, profile or patch). The plan steps
themselves are kept as text only.
"""

from __future__ import annotations

import re
from typing import ClassVar

from ingest.base import Parser
from ingest.model import Format, Platform
from ingest.parsers.pasted import unpaste

MAX_LINE = 4096
MAX_SQL = 500
MAX_TEXT_LINES = 400  # SQL text lines between SQL_ID and its plan
MAX_SECTION_LINES = 200  # lines of a Predicate Information / Note / ... section
_SQL_ID = re.compile(
    r"^\s*SQL_ID:?\s+(?P<id>[0-9a-z]{13})(?:\s*,\s*child\s+number\s+(?P<child>\d{1,6}))?\s*$"
)
_PHV = re.compile(r"^\s*Plan\s+hash\s+value:\s*(?P<phv>\d{1,12})\b")
_NOTE_ITEM = re.compile(r"^\s*-\s+(?P<text>\S.*)$")
_SECTION = re.compile(
    r"^\s*(?:Note|Predicate Information|Query Block Name|Column Projection|Outline Data"
    r"|Hint Report|Remote SQL Information|Sql Plan Directive|SQL Analysis Report)\b"
)
# Note remarks -> what they say about the plan
_REMARKS = (
    ("adaptive", re.compile(r"this is an adaptive plan", re.I)),
    ("feedback", re.compile(r"(?:statistics|cardinality) feedback used", re.I)),
    ("dynamic_statistics", re.compile(r"dynamic (?:statistics|sampling) used", re.I)),
    ("baseline", re.compile(r"SQL plan baseline .* used for this statement", re.I)),
    ("profile", re.compile(r"SQL profile .* used for this statement", re.I)),
    ("patch", re.compile(r"SQL patch .* used for this statement", re.I)),
    ("directive", re.compile(r"SQL plan directives? used", re.I)),
)


class XplanParser(Parser):
    format: ClassVar[Format] = "xplan"

    def __init__(self) -> None:
        super().__init__()
        self.sql_id: str | None = None
        self.plans: dict[str, set[str]] = {}
        self.children: dict[str, set[str]] = {}
        self.remarks: dict[str, float] = {}
        self.in_note = False
        self.text_lines = 0  # lines since SQL_ID before a plan hash: the statement's text
        self.section_lines: int | None = None  # lines read in the current section

    @classmethod
    def start_score(cls, line: str) -> int:
        if len(line) > MAX_LINE or not ("SQL_ID" in line or "Plan hash value" in line):
            return 0
        text = unpaste(line)
        return 2 if _SQL_ID.match(text) or _PHV.match(text) else 0

    def feed(self, line: str) -> bool:
        if len(line) > MAX_LINE:
            return False
        text = unpaste(line)
        s = text.strip()
        if not s:
            return bool(self.lines)
        if (m := _SQL_ID.match(text)) is not None:
            self.sql_id = m["id"]
            if m["child"] is not None and len(self.children) < MAX_SQL:
                self.children.setdefault(m["id"], set()).add(m["child"])
            self.in_note, self.text_lines, self.section_lines = False, 1, None
            return True
        if (m := _PHV.match(text)) is not None:
            key = self.sql_id or "?"
            if key in self.plans or len(self.plans) < MAX_SQL:
                self.plans.setdefault(key, set()).add(m["phv"])
            self.in_note, self.text_lines, self.section_lines = False, 0, None
            return True
        if self.in_note and (m := _NOTE_ITEM.match(text)) is not None:
            for name, rx in _REMARKS:
                if rx.search(m["text"]):
                    self.remarks[name] = 1.0
            return True
        if (sec := _SECTION.match(text)) is not None:
            self.in_note = sec.group(0).strip() == "Note"
            self.section_lines = 0
            return True
        if s[0] in "|-+=":
            return True  # the plan table and the rulers under section titles
        if self.text_lines and self.text_lines < MAX_TEXT_LINES:
            self.text_lines += 1  # the statement's text between SQL_ID and its plan
            return True
        if self.section_lines is not None and self.section_lines < MAX_SECTION_LINES:
            # predicate lines (`   3 - access("O"."ID"=:B1)`), their wrapped halves, a note
            # remark's second line
            self.section_lines += 1
            return True
        return False

    def facts(self) -> tuple[dict, dict, list[str], Platform | None]:
        if not self.plans:
            return {}, {}, [], None
        facts: dict = {
            "plan.hashes": {sql: float(len(p)) for sql, p in self.plans.items()},
            "plan.max_hashes": float(max(len(p) for p in self.plans.values())),
        }
        for name in ("adaptive", "feedback", "dynamic_statistics", "baseline", "profile"):
            facts[f"plan.note_{name}"] = self.remarks.get(name, 0.0)
        details = {
            "plans": {sql: sorted(p) for sql, p in self.plans.items()},
            "children": {sql: sorted(c, key=int) for sql, c in self.children.items()},
            "notes": sorted(self.remarks),
        }
        identifiers = [sql for sql in self.plans if sql != "?"][:100]
        return facts, details, identifiers, None
