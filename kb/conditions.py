"""What a signature's leaf condition means, written once.

Two evaluators read these rules: kb/evaluate.py walks one condition tree and says in words what
it observed (for the ten entries a person sees), kb/sigindex.py evaluates every signature of the
KB at once with numpy arrays (for ranking). They used to carry their own copies of the comparison,
the sum of a `ref`, and the counting of a text, and tests had to prove the copies agreed; here
each rule exists once, and the array form is the scalar form applied elementwise:

- a fact leaf compares the fact's value with a number, a string or the sum of other facts
  (`ref`, times a factor); strings compare case-blind and only with == / !=; numbers compare
  only when both sides are finite; == and != mean math.isclose(rel_tol=1e-9, abs_tol=1e-9);
- a text leaf counts the matches of a plain text (case-blind unless asked) or of an RE2 regex in
  the view's text, up to MAX_TEXT_MATCHES, and holds from `min_count` matches on.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable, Mapping
from functools import lru_cache
from typing import Any

from kb.regex_safety import compile_safe
from kb.signatures import FactCondition, FactRef, TextCondition

# Text conditions count matches up to this many: enough for any min_count people write, and a
# bound on the work one condition can do on a huge paste.
MAX_TEXT_MATCHES = 100_000

# The ordering operators; they apply elementwise to numpy arrays as they are.
ORDER: dict[str, Callable[[Any, Any], Any]] = {
    ">": operator.gt,
    ">=": operator.ge,
    "<": operator.lt,
    "<=": operator.le,
}
OPS = (">", ">=", "<", "<=", "==", "!=")  # every operator, in the compiled evaluator's codes
TOLERANCE = 1e-9  # == and != : relative and absolute, as math.isclose(rel_tol=, abs_tol=)


def lookup(facts: Mapping, name: str, key: str | None) -> Any:
    """The value a leaf reads: a scalar fact, or one key of a keyed fact (None when absent)."""
    value = facts.get(name)
    if key is None:
        return value
    if isinstance(value, Mapping):
        return value.get(key)
    return None


def numbers_compare(op: str, left: Any, right: Any, maximum: Callable = max) -> Any:
    """`left op right` for two finite numbers, or elementwise for two arrays of them (pass
    numpy.maximum as `maximum`). Finiteness is the caller's check (scalars: `compare`; arrays: a
    mask), since the two forms test it differently."""
    if op in ORDER:
        return ORDER[op](left, right)
    close = abs(left - right) <= maximum(TOLERANCE * maximum(abs(left), abs(right)), TOLERANCE)
    if op == "==":
        return close
    if op == "!=":
        return ~close if not isinstance(close, bool) else not close
    raise KeyError(op)


def compare(left: Any, op: str, right: Any) -> bool:
    """One fact leaf's comparison on scalars: strings case-blind with == and != only."""
    if isinstance(left, str) or isinstance(right, str):
        if op == "==":
            return str(left).lower() == str(right).lower()
        if op == "!=":
            return str(left).lower() != str(right).lower()
        return False
    if not (math.isfinite(left) and math.isfinite(right)):
        return False
    return bool(numbers_compare(op, left, right))


def operands(ref: FactRef) -> list[tuple[str, str | None]]:
    """The (fact, key) pairs a `ref` adds up, in order."""
    return [(ref.fact, ref.key)] + [(p.fact, p.key) for p in ref.plus]


def ref_values(facts: Mapping, ref: FactRef) -> list[float] | None:
    """The numbers a `ref` adds up, or None when one of them is not a number in the view."""
    out: list[float] = []
    for name, key in operands(ref):
        v = lookup(facts, name, key)
        if not isinstance(v, int | float):
            return None
        out.append(float(v))
    return out


def fact_held(cond: FactCondition, facts: Mapping) -> bool:
    value = lookup(facts, cond.fact, cond.key)
    if value is None or isinstance(value, Mapping):
        return False
    if cond.ref is not None:
        parts = ref_values(facts, cond.ref)
        if parts is None:
            return False
        return compare(float(value), cond.op, sum(parts) * cond.ref.times)
    return compare(value if isinstance(value, str) else float(value), cond.op, cond.value)


# -- text leaves ----------------------------------------------------------------------------------


@lru_cache(maxsize=16384)
def compiled(pattern: str, case_sensitive: bool) -> tuple[Any, bool]:
    """(regex, may match empty). Our own cache: re2.compile keeps only 128 patterns, fewer than a
    big KB has, and recompiling every regex on every analysis was the matcher's hot path."""
    rx = compile_safe(pattern, case_sensitive)
    return rx, rx.fullmatch(b"") is not None


_last_encoded: tuple[str | None, bytes] = (None, b"")


def utf8(text: str) -> bytes:
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


def lowered(text: str) -> str:
    """text.lower(), once per analysis rather than once per literal condition."""
    global _last_lower
    last = _last_lower
    if last[0] is text:
        return last[1]
    low = text.lower()
    _last_lower = (text, low)
    return low


def needle_of(cond: TextCondition) -> str:
    """The plain text a leaf counts, as it is looked for (lower-cased unless case-sensitive)."""
    needle = cond.text or ""
    return needle if cond.case_sensitive else needle.lower()


def count_text(cond: TextCondition, text: str, stop_at: int = MAX_TEXT_MATCHES) -> int:
    """Matches of the leaf in `text`, counting stops at `stop_at` (never above MAX_TEXT_MATCHES).

    Regexes match the UTF-8 bytes: counting needs no offsets (the same count, except that a
    pattern matching the empty string would step through multi-byte characters byte by byte,
    so those match the str)."""
    if cond.regex is not None:
        rx, empty = compiled(cond.regex, cond.case_sensitive)
        stop = min(stop_at, MAX_TEXT_MATCHES)
        count = 0
        for count, _ in enumerate(rx.finditer(text if empty else utf8(text)), start=1):  # noqa: B007
            if count >= stop:
                break
        return count
    return (text if cond.case_sensitive else lowered(text)).count(needle_of(cond))


def text_held(cond: TextCondition, text: str) -> bool:
    return count_text(cond, text, stop_at=cond.min_count) >= cond.min_count
