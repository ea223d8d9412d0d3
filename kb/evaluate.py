"""Evaluate one signature condition tree against the facts of a block (or of several blocks), and
say in words what was observed, so a DBA can check perfkb read the evidence as they would.

What each leaf means is kb/conditions.py's; this module only walks the tree and words it.
"""

from __future__ import annotations

from collections.abc import Mapping

from ingest.facts import FACTS, show, spec_of
from kb.conditions import (
    MAX_TEXT_MATCHES,
    compare,
    count_text,
    fact_held,
    lookup,
    operands,
    text_held,
)
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

__all__ = ["MAX_TEXT_MATCHES", "eval_fact", "eval_text", "evaluate", "quick"]


def _ref_value(facts: Mapping, ref: FactRef) -> tuple[float | None, str]:
    total = 0.0
    words = []
    for name, key in operands(ref):
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
        held = compare(float(value), cond.op, right)
        observed = (
            f"{subject}: {label} {shown} {OP_SYMBOL[cond.op] if held else 'vs'} {right_text}"
            f" = {show(cond.ref.fact, right)}"
        )
        return ConditionOutcome(condition=cond.describe(), held=held, observed=observed)
    held = compare(value if isinstance(value, str) else float(value), cond.op, cond.value)
    target = cond.value if isinstance(cond.value, str) else spec.show(cond.value)
    relation = OP_SYMBOL[cond.op] if held else f"(needs {OP_SYMBOL[cond.op]}"
    observed = f"{subject}: {label} {shown} {relation} {target}" + ("" if held else ")")
    return ConditionOutcome(condition=cond.describe(), held=held, observed=observed)


def eval_text(cond: TextCondition, text: str) -> ConditionOutcome:
    count = count_text(cond, text)
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


def quick(cond, facts: Mapping, text: str) -> tuple[bool, int, int]:
    """(held, leaves that held as evaluate() reports them, leaves) without outcomes."""
    if isinstance(cond, AllOf | AnyOf):
        parts = [quick(c, facts, text) for c in (cond.all if isinstance(cond, AllOf) else cond.any)]
        held = all(p[0] for p in parts) if isinstance(cond, AllOf) else any(p[0] for p in parts)
        return held, sum(p[1] for p in parts), sum(p[2] for p in parts)
    if isinstance(cond, NotOf):
        h, n, leaves = quick(cond.not_, facts, text)
        return not h, leaves - n, leaves
    h = fact_held(cond, facts) if isinstance(cond, FactCondition) else text_held(cond, text)
    return h, int(h), 1
