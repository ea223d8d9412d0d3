"""kb/conditions.py: one rule per leaf, the same on scalars (kb/evaluate.py) and, elementwise, on
arrays (kb/sigindex.py)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from kb.conditions import OPS, compare, count_text, fact_held, numbers_compare, text_held
from kb.signatures import FactCondition, TextCondition

VALUES = [0.0, 1e-10, 5e-10, 1.0, 1.0 + 1e-10, 1.0 + 1e-8, 5.0, -5.0, 1e12, 1e12 * (1 + 5e-10)]


@pytest.mark.parametrize("op", OPS)
def test_the_array_form_is_the_scalar_form_elementwise(op):
    left = np.array([a for a in VALUES for _ in VALUES])
    right = np.array([b for _ in VALUES for b in VALUES])
    arrays = numbers_compare(op, left, right, np.maximum)
    scalars = [compare(float(a), op, float(b)) for a, b in zip(left, right, strict=True)]
    assert arrays.tolist() == scalars


@pytest.mark.parametrize(
    ("a", "b"), [(1.0, 1.0 + 1e-10), (1e12, 1e12 * (1 + 5e-10)), (0.0, 5e-10), (3.0, 3.1)]
)
def test_equality_is_math_isclose(a, b):
    expected = math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-9)
    assert compare(a, "==", b) is expected
    assert compare(a, "!=", b) is (not expected)


def test_numbers_that_are_not_finite_hold_for_no_comparison():
    for op in OPS:
        assert not compare(math.inf, op, 1.0)
        assert not compare(math.nan, op, math.nan)


def test_strings_compare_case_blind_and_only_for_equality():
    assert compare("Log File Sync", "==", "log file sync")
    assert compare("a", "!=", "b")
    assert not compare("b", ">", "a")


def test_a_ref_leaf_adds_its_operands_times_the_factor():
    cond = FactCondition.model_validate(
        {
            "fact": "syscall.total_ms",
            "key": "shmdt",
            "op": ">=",
            "ref": {"fact": "trace.syscall_ms", "times": 0.5},
        }
    )
    facts = {"syscall.total_ms": {"shmdt": 60.0}, "trace.syscall_ms": 100.0}
    assert fact_held(cond, facts)
    assert not fact_held(cond, {"syscall.total_ms": {"shmdt": 40.0}, "trace.syscall_ms": 100.0})
    assert not fact_held(cond, {"syscall.total_ms": {"shmdt": 60.0}})  # an operand is missing


def test_text_leaves_count_plain_text_case_blind_and_regexes_up_to_min_count():
    plain = TextCondition.model_validate({"text": "ORAUS.MSB", "min_count": 2})
    assert count_text(plain, "open oraus.msb; open Oraus.msb") == 2
    assert text_held(plain, "open oraus.msb; open Oraus.msb")
    regex = TextCondition.model_validate({"regex": r"shmdt\(", "min_count": 3})
    assert count_text(regex, "shmdt(1) shmdt(2) shmdt(3) shmdt(4)", stop_at=3) == 3
    assert not text_held(regex, "shmdt(1) shmdt(2)")
