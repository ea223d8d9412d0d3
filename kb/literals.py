"""The literal text a regex or a condition tree requires: every match must contain it, so a paste
without it cannot make the condition hold. The matcher and the signature index use this to skip
text conditions that cannot hold, without changing any verdict (tests/test_matcher_prefilter.py).
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Sequence

from kb.signatures import TextCondition


def grams(text: str) -> set[str]:
    return {text[i : i + 3] for i in range(len(text) - 2)}


_REGEX_META = set("\\.^$*+?{}[]()|")
_PLAIN_ESCAPES = set("dDwWsSbBAznrtfv")
_FLAGS = re.compile(r"\(\?([^:)]*)").findall  # escapes that take no argument: a run just ends there


def _skip_class(regex: str, i: int) -> int:
    """Index just past the character class that opens at regex[i] == '['."""
    j = i + 1
    if regex[j : j + 1] == "^":
        j += 1
    if regex[j : j + 1] == "]":
        j += 1
    while j < len(regex) and regex[j] != "]":
        if regex[j] == "\\":
            j += 2
        elif regex.startswith("[:", j):
            end = regex.find(":]", j + 2)
            j = len(regex) if end < 0 else end + 2
        else:
            j += 1
    return j + 1


def _skip_group(regex: str, i: int) -> int:
    """Index just past the group that opens at regex[i] == '('."""
    depth, j = 0, i
    while j < len(regex):
        c = regex[j]
        if c == "\\":
            j += 2
            continue
        if c == "[":
            j = _skip_class(regex, j)
            continue
        depth += c == "("
        depth -= c == ")"
        j += 1
        if depth == 0:
            break
    return j


def literal_runs(regex: str) -> list[str]:
    """Literal stretches every match of `regex` must contain, read conservatively: none when the
    pattern has a top-level alternation, flags or an escape with an argument (\\x41, \\p{L});
    groups and classes are skipped whole; a run ends at any other metacharacter and loses its
    last character before a quantifier that may skip it."""
    for flags in _FLAGS(regex):
        if set(flags) - set("imsU-"):  # x (verbose) changes what the pattern's text means
            return []
    runs: list[str] = []
    cur: list[str] = []
    i = 0
    while i < len(regex):
        c = regex[i]
        if c == "|":
            return []
        if c in "([":
            runs.append("".join(cur))
            cur = []
            i = _skip_group(regex, i) if c == "(" else _skip_class(regex, i)
            continue
        if c == "\\":
            nxt = regex[i + 1 : i + 2]
            if nxt.isalnum() or not nxt:
                if nxt not in _PLAIN_ESCAPES:
                    return []
                runs.append("".join(cur))
                cur, i = [], i + 2
                continue
            lit, i = nxt, i + 2  # an escaped metacharacter stands for itself
        elif c in _REGEX_META:
            runs.append("".join(cur))
            cur = []
            if c == "{":  # a counted repetition: its digits are not text
                end = regex.find("}", i)
                i = len(regex) if end < 0 else end + 1
            else:
                i += 1
            continue
        else:
            lit, i = c, i + 1
        if regex[i : i + 1] in ("?", "*", "{"):
            runs.append("".join(cur))  # this character may be absent
            cur = []
            continue
        cur.append(lit)
    runs.append("".join(cur))
    return [r for r in runs if r]


def _top_alternatives(regex: str) -> list[str]:
    """The pattern split at its top-level `|` (groups and classes skipped whole)."""
    parts, start, i = [], 0, 0
    while i < len(regex):
        c = regex[i]
        if c == "\\":
            i += 2
        elif c == "(":
            i = _skip_group(regex, i)
        elif c == "[":
            i = _skip_class(regex, i)
        else:
            if c == "|":
                parts.append(regex[start:i])
                start = i + 1
            i += 1
    parts.append(regex[start:])
    return parts


def any_probe(cond) -> list[str] | None:
    """For a regex with a top-level alternation (which has no `probe`): the longest literal of
    each alternative (3+ characters, lowercase), one of which every match must contain; None
    when an alternative has none. Signature regexes are often `a|b|c` of literal phrases: at
    50,000 synthetic entries six in ten of the RE2 patterns a seed paste reached were of this
    shape and none of their phrases was in it, yet each was compiled (kb.sigindex._LazySet)."""
    regex = getattr(cond, "regex", None)
    if not isinstance(cond, TextCondition) or regex is None:
        return None
    for flags in _FLAGS(regex):
        if set(flags) - set("imsU-"):
            return None
    parts = _top_alternatives(regex)
    if len(parts) < 2:
        return None
    found = set()
    for part in parts:
        best = max(literal_runs(part), key=len, default="").lower()
        if not _usable(best):
            return None
        found.add(best)
    return sorted(found)


def _usable(literal: str) -> bool:
    # ASCII only: lower-casing it is exact, and the text is case-folded, which never loses an
    # ASCII letter RE2's case folding would match (K for k, ſ for s)
    return len(literal) >= 3 and literal.isascii() and "\n" not in literal


def probe(cond) -> str | None:
    """The longest literal (3+ characters, lowercase) a text condition reached through all-nodes
    only must find in the text for the condition tree to hold; None when there is none."""
    best = ""
    if cond.kind == "all":
        for c in cond.children:
            p = probe(c) or ""
            best = p if len(p) > len(best) else best
    elif isinstance(cond, TextCondition):
        if cond.text is not None:
            best = cond.text.lower()
        elif cond.regex is not None:
            best = max(literal_runs(cond.regex), key=len, default="").lower()
    return best if _usable(best) else None


def rarest_grams(literals: Sequence[str | None]) -> list[str | None]:
    """For each literal, the trigram of it that the fewest of these literals share (ties: the
    smallest), None for None. Items keyed by it fall in small buckets, so a text skips every
    bucket whose trigram it lacks: the matcher's text signatures and the signature index's text
    leaves are both bucketed this way."""
    df: dict[str, int] = defaultdict(int)
    for literal in literals:
        for g in grams(literal or ""):
            df[g] += 1
    return [min(grams(lit), key=lambda g: (df[g], g)) if lit else None for lit in literals]
