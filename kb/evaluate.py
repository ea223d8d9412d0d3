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
    FactCondition,
    FactRef,
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
    who = f"'{cond.key}'" if cond.key else FACTS[cond.fact].name.split(".")[0]
    value = lookup(facts, cond.fact, cond.key)
    if value is None or (isinstance(value, Mapping)):
        return ConditionOutcome(
            condition=cond.describe(),
            held=False,
            observed=f"{subject}: not seen in the evidence",
            wanted=f"the evidence showed {who}",
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
    wanted = "" if held else f"{who} {label} were {OP_SYMBOL[cond.op]} {target}; it is {shown}"
    return ConditionOutcome(condition=cond.describe(), held=held, observed=observed, wanted=wanted)


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
    if cond.kind == "fact":
        out = eval_fact(cond, facts)
        return out.held, [out]
    if cond.kind == "text":
        out = eval_text(cond, text)
        return out.held, [out]
    parts = [evaluate(c, facts, text) for c in cond.children]
    outs = [o for _, sub in parts for o in sub]
    if cond.kind == "not":
        negated = [
            ConditionOutcome(condition=f"not ({x.condition})", held=not x.held, observed=x.observed)
            for x in outs
        ]
        return not parts[0][0], negated
    held = all(h for h, _ in parts) if cond.kind == "all" else any(h for h, _ in parts)
    return held, outs


# -- held-ness only -------------------------------------------------------------------------------
# The matcher ranks every candidate signature but shows the conditions of ten entries at most;
# `quick` gives evaluate()'s verdict and number of held leaves without building the outcomes
# (their strings and models were most of the matching time). tests/test_matcher_prefilter.py
# checks the two agree.


def quick(cond, facts: Mapping, text: str) -> tuple[bool, int, int]:
    """(held, leaves that held as evaluate() reports them, leaves) without outcomes."""
    if cond.kind == "fact":
        h = fact_held(cond, facts)
        return h, int(h), 1
    if cond.kind == "text":
        h = text_held(cond, text)
        return h, int(h), 1
    parts = [quick(c, facts, text) for c in cond.children]
    n_held, leaves = sum(p[1] for p in parts), sum(p[2] for p in parts)
    if cond.kind == "not":
        return not parts[0][0], leaves - n_held, leaves
    held = all(p[0] for p in parts) if cond.kind == "all" else any(p[0] for p in parts)
    return held, n_held, leaves
