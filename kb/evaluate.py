"""Evaluate one signature condition tree against the facts of a block (or of several blocks), and
say in words what was observed, so a DBA can check perfkb read the evidence as they would."""

from __future__ import annotations

import math
import operator
from collections.abc import Mapping
from functools import lru_cache
from typing import Any

from ingest.facts import FACTS, show, spec_of
from kb.regex_safety import compile_safe
from kb.results import ConditionOutcome
from kb.signatures import (
    OP_SYMBOL,
    AllOf,
    AnyOf,
    FactCondition,
    FactRef,
    NotOf,
    TextCondition,
)

# Text conditions count matches up to this many: enough for any min_count people write, and a
# bound on the work one condition can do on a huge paste.
MAX_TEXT_MATCHES = 100_000


def lookup(facts: Mapping, name: str, key: str | None):
    value = facts.get(name)
    if key is None:
        return value
    if isinstance(value, Mapping):
        return value.get(key)
    return None


# The ordering operators, shared with kb/sigindex.py (they work elementwise on numpy arrays too);
# == and != compare with math.isclose(rel_tol=1e-9, abs_tol=1e-9).
ORDER = {">": operator.gt, ">=": operator.ge, "<": operator.lt, "<=": operator.le}


def _compare(left, op: str, right) -> bool:
    if isinstance(left, str) or isinstance(right, str):
        if op == "==":
            return str(left).lower() == str(right).lower()
        if op == "!=":
            return str(left).lower() != str(right).lower()
        return False
    if not (math.isfinite(left) and math.isfinite(right)):
        return False
    if op in ORDER:
        return ORDER[op](left, right)
    close = math.isclose(left, right, rel_tol=1e-9, abs_tol=1e-9)
    if op == "==":
        return close
    if op == "!=":
        return not close
    raise KeyError(op)


def _ref_value(facts: Mapping, ref: FactRef) -> tuple[float | None, str]:
    parts = [(ref.fact, ref.key)] + [(p.fact, p.key) for p in ref.plus]
    total = 0.0
    words = []
    for name, key in parts:
        v = lookup(facts, name, key)
        if not isinstance(v, int | float):
            return None, f"{name}{f'[{key}]' if key else ''} not seen"
        total += float(v)
        words.append(f"{spec_of(name).label} {show(name, float(v))}")
    text = " + ".join(words)
    if ref.times != 1:
        text = f"{ref.times:g} × ({text})" if len(words) > 1 else f"{ref.times:g} × {text}"
    return total * ref.times, text


def eval_fact(cond: FactCondition, facts: Mapping) -> ConditionOutcome:
    subject = cond.key or FACTS[cond.fact].name.split(".")[0]
    value = lookup(facts, cond.fact, cond.key)
    if value is None or (isinstance(value, Mapping)):
        return ConditionOutcome(
            condition=cond.describe(), held=False, observed=f"{subject}: not seen in the evidence"
        )
    spec = spec_of(cond.fact)
    label = spec.label
    shown = value if isinstance(value, str) else spec.show(float(value))
    if cond.ref is not None:
        right, right_text = _ref_value(facts, cond.ref)
        if right is None:
            return ConditionOutcome(
                condition=cond.describe(), held=False, observed=f"{subject}: {right_text}"
            )
        held = _compare(float(value), cond.op, right)
        observed = (
            f"{subject}: {label} {shown} {OP_SYMBOL[cond.op] if held else 'vs'} {right_text}"
            f" = {show(cond.ref.fact, right)}"
        )
        return ConditionOutcome(condition=cond.describe(), held=held, observed=observed)
    held = _compare(value if isinstance(value, str) else float(value), cond.op, cond.value)
    target = cond.value if isinstance(cond.value, str) else spec.show(cond.value)
    relation = OP_SYMBOL[cond.op] if held else f"(needs {OP_SYMBOL[cond.op]}"
    observed = f"{subject}: {label} {shown} {relation} {target}" + ("" if held else ")")
    return ConditionOutcome(condition=cond.describe(), held=held, observed=observed)


@lru_cache(maxsize=16384)
def _compiled(pattern: str, case_sensitive: bool) -> tuple[Any, bool]:
    """(regex, may match empty). Our own cache: re2.compile keeps only 128 patterns, fewer than a
    big KB has, and recompiling every regex on every analysis was the matcher's hot path."""
    rx = compile_safe(pattern, case_sensitive)
    return rx, rx.fullmatch(b"") is not None


_last_encoded: tuple[str | None, bytes] = (None, b"")


def _utf8(text: str) -> bytes:
    """The text as UTF-8, encoded once per analysis instead of once per regex: re2's str path
    re-encodes the whole text on every call and maps every match offset back to characters."""
    global _last_encoded
    last = _last_encoded
    if last[0] is text:
        return last[1]
    data = text.encode("utf-8", "replace")
    _last_encoded = (text, data)
    return data


_last_lower: tuple[str | None, str] = (None, "")


def _lower(text: str) -> str:
    """text.lower(), once per analysis rather than once per literal condition."""
    global _last_lower
    last = _last_lower
    if last[0] is text:
        return last[1]
    low = text.lower()
    _last_lower = (text, low)
    return low


def eval_text(cond: TextCondition, text: str) -> ConditionOutcome:
    if cond.regex is not None:
        rx, empty = _compiled(cond.regex, cond.case_sensitive)
        count = 0
        # counting needs no offsets, so match the bytes (same count, except that a pattern
        # matching the empty string would step through multi-byte characters byte by byte)
        hay = text if empty else _utf8(text)
        for count, _ in enumerate(rx.finditer(hay), start=1):  # noqa: B007
            if count >= MAX_TEXT_MATCHES:
                break
    else:
        needle = cond.text or ""
        hay = text if cond.case_sensitive else _lower(text)
        count = hay.count(needle if cond.case_sensitive else needle.lower())
    held = count >= cond.min_count
    what = f"'{cond.text}'" if cond.text is not None else f"/{cond.regex}/"
    observed = f"{what} seen {count} time{'s' if count != 1 else ''}"
    if cond.min_count > 1:
        observed += f" ({'≥' if held else 'needs ≥'} {cond.min_count})"
    return ConditionOutcome(condition=cond.describe(), held=held, observed=observed)


def evaluate(cond, facts: Mapping, text: str) -> tuple[bool, list[ConditionOutcome]]:
    """(held, leaf outcomes). Outcomes under a `not` are reported with the negation applied."""
    if isinstance(cond, AllOf):
        held, outs = True, []
        for c in cond.all:
            h, o = evaluate(c, facts, text)
            held &= h
            outs += o
        return held, outs
    if isinstance(cond, AnyOf):
        held, outs = False, []
        for c in cond.any:
            h, o = evaluate(c, facts, text)
            held |= h
            outs += o
        return held, outs
    if isinstance(cond, NotOf):
        h, o = evaluate(cond.not_, facts, text)
        negated = [
            ConditionOutcome(condition=f"not ({x.condition})", held=not x.held, observed=x.observed)
            for x in o
        ]
        return not h, negated
    if isinstance(cond, FactCondition):
        out = eval_fact(cond, facts)
        return out.held, [out]
    out = eval_text(cond, text)
    return out.held, [out]


# -- held-ness only -------------------------------------------------------------------------------
# The matcher ranks every candidate signature but shows the conditions of ten entries at most;
# `quick` gives evaluate()'s verdict and number of held leaves without building the outcomes
# (their strings and models were most of the matching time). tests/test_matcher_prefilter.py
# checks the two agree.


def _fact_held(cond: FactCondition, facts: Mapping) -> bool:
    value = lookup(facts, cond.fact, cond.key)
    if value is None or isinstance(value, Mapping):
        return False
    if cond.ref is not None:
        ref = cond.ref
        total = 0.0
        for name, key in [(ref.fact, ref.key)] + [(p.fact, p.key) for p in ref.plus]:
            v = lookup(facts, name, key)
            if not isinstance(v, int | float):
                return False
            total += float(v)
        return _compare(float(value), cond.op, total * ref.times)
    return _compare(value if isinstance(value, str) else float(value), cond.op, cond.value)


def _text_held(cond: TextCondition, text: str) -> bool:
    need = cond.min_count
    if cond.regex is not None:
        rx, empty = _compiled(cond.regex, cond.case_sensitive)
        count = 0
        for count, _ in enumerate(rx.finditer(text if empty else _utf8(text)), start=1):  # noqa: B007
            if count >= need or count >= MAX_TEXT_MATCHES:
                break
        return count >= need
    needle = cond.text or ""
    hay = text if cond.case_sensitive else _lower(text)
    return hay.count(needle if cond.case_sensitive else needle.lower()) >= need


def quick(cond, facts: Mapping, text: str) -> tuple[bool, int, int]:
    """(held, leaves that held as evaluate() reports them, leaves) without outcomes."""
    if isinstance(cond, AllOf | AnyOf):
        parts = [quick(c, facts, text) for c in (cond.all if isinstance(cond, AllOf) else cond.any)]
        held = all(p[0] for p in parts) if isinstance(cond, AllOf) else any(p[0] for p in parts)
        return held, sum(p[1] for p in parts), sum(p[2] for p in parts)
    if isinstance(cond, NotOf):
        h, n, leaves = quick(cond.not_, facts, text)
        return not h, leaves - n, leaves
    h = _fact_held(cond, facts) if isinstance(cond, FactCondition) else _text_held(cond, text)
    return h, int(h), 1
