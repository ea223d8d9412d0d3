"""Regular expressions in signatures are written by people and run on pasted text, so they must
never hang analysis. We compile them with RE2 (linear time) and, so authors learn early, also
reject at validation the nested-quantifier shapes that backtrack catastrophically elsewhere."""

from __future__ import annotations

import re
from functools import lru_cache
from re import _parser as _sre  # the stdlib's own regex parser (Python 3.11+)

import re2

from kb.errors import UnsafeRegex

_MAXREPEAT = _sre.MAXREPEAT
_REPEATS = {_sre.MAX_REPEAT, _sre.MIN_REPEAT, getattr(_sre, "POSSESSIVE_REPEAT", None)}
_REPEATS.discard(None)


def _unbounded_repeat_inside(items, inside_repeat: bool) -> str | None:
    for op, av in items:
        if op in _REPEATS:
            lo, hi, sub = av
            unbounded = hi == _MAXREPEAT or hi > 100
            if unbounded and inside_repeat:
                return "nested quantifier (a repeated group that itself repeats, like (a+)+)"
            found = _unbounded_repeat_inside(sub, inside_repeat or unbounded)
            if found:
                return found
        elif op == _sre.SUBPATTERN:
            found = _unbounded_repeat_inside(av[-1], inside_repeat)
            if found:
                return found
        elif op == _sre.BRANCH:
            for alt in av[1]:
                found = _unbounded_repeat_inside(alt, inside_repeat)
                if found:
                    return found
        elif op in (_sre.ASSERT, _sre.ASSERT_NOT):
            found = _unbounded_repeat_inside(av[1], inside_repeat)
            if found:
                return found
    return None


def check_regex(pattern: str) -> None:
    """Raise UnsafeRegex with a reason if `pattern` is invalid, not RE2-compatible or can
    backtrack catastrophically."""
    if len(pattern) > 1000:
        raise UnsafeRegex("regular expression longer than 1000 characters")
    try:
        parsed = _sre.parse(pattern)
    except re.error as exc:
        raise UnsafeRegex(f"invalid regular expression: {exc}") from None
    reason = _unbounded_repeat_inside(parsed, False)
    if reason:
        raise UnsafeRegex(f"catastrophic-backtracking regular expression: {reason}")
    options = re2.Options()
    options.log_errors = False  # the error is ours to report, in one line
    try:
        re2.compile(pattern, options)
    except Exception as exc:  # re2 raises its own error type, sometimes with a bytes message
        if exc.args and isinstance(exc.args[0], bytes):
            exc = exc.args[0].decode("utf-8", "replace")
        raise UnsafeRegex(f"not supported by the linear-time engine: {exc}") from None


@lru_cache(maxsize=4096)
def compile_safe(pattern: str, case_sensitive: bool = False):
    """Compile with RE2 so matching time is linear in the text, whatever the pattern."""
    options = re2.Options()
    options.case_sensitive = case_sensitive
    options.log_errors = False
    return re2.compile(pattern, options)
