"""What the DBMS_XPLAN parser reads (issue 16, plan flips): plan hash values per sql_id from
display_awr and display_cursor, child numbers, and the Note remarks that explain a plan change;
the plan table, predicates and the statement's text stay in the block; pastes read the same."""

from __future__ import annotations

import pytest

from ingest.detect import parse_text
from tests.parser_helpers import assert_facts_valid, fixture_lines

FIXTURE = "oracle/xplan_display_awr_cursor.txt"


def _blocks(text: str) -> list:
    blocks = [b for b in parse_text(text).blocks if b.format == "xplan"]
    for b in blocks:
        assert_facts_valid(b)
    return blocks


def _fixture_blocks() -> list:
    return _blocks("\n".join(fixture_lines(FIXTURE)) + "\n")


def test_display_awr_lists_two_plans_of_one_statement():
    awr, _ = _fixture_blocks()
    assert awr.facts["plan.hashes"] == {"7h35uxf5uhmm1": 2}
    assert awr.facts["plan.max_hashes"] == 2
    assert awr.details["plans"]["7h35uxf5uhmm1"] == ["1288465413", "3914023618"]
    assert awr.facts["plan.note_adaptive"] == 0
    assert "HASH JOIN" in awr.text and "o.order_ref = :b1" in awr.text


def test_display_cursor_child_and_its_note():
    _, cursor = _fixture_blocks()
    assert cursor.details["children"] == {"7h35uxf5uhmm1": ["2"]}
    assert cursor.facts["plan.note_adaptive"] == 1 and cursor.facts["plan.note_feedback"] == 1
    assert cursor.facts["plan.note_baseline"] == 0
    assert 'filter("O"."ORDER_REF"=:B1)' in cursor.text  # predicates stay in the block


@pytest.mark.parametrize(
    ("remark", "fact"),
    [
        ("dynamic statistics used: dynamic sampling (level=2)", "plan.note_dynamic_statistics"),
        ("dynamic sampling used for this statement (level=2)", "plan.note_dynamic_statistics"),
        (
            'SQL plan baseline "SQL_PLAN_01yu884fpund494ecae5c" used for this statement',
            "plan.note_baseline",
        ),
        ('SQL profile "coe_7h35uxf5uhmm1_1288465413" used for this statement', "plan.note_profile"),
        ("cardinality feedback used for this statement", "plan.note_feedback"),
    ],
)
def test_note_remarks(remark, fact):
    text = f"SQL_ID  0qa98gcnnza7h, child number 0\n\nPlan hash value: 42\n\nNote\n-----\n   - {remark}\n"
    (block,) = _blocks(text)
    assert block.facts[fact] == 1


PASTES = {
    "collapsed whitespace": lambda line: " ".join(line.split()),
    "quoted with '# '": lambda line: "# " + line,
    "journal prefix": lambda line: "Nov 24 10:00:01 db01 sqlplus[811]: " + line,
}


@pytest.mark.parametrize("paste", sorted(PASTES))
def test_pasted_plans_read_the_same(paste):
    lines = fixture_lines(FIXTURE)
    expected = [b.facts for b in _blocks("\n".join(lines) + "\n")]
    pasted = "\n".join(PASTES[paste](line) for line in lines) + "\n"
    assert [b.facts for b in _blocks(pasted)] == expected
