"""The signature language, defined once here and documented in docs/signatures.md.

A signature says which evidence sources it reads and a condition tree over the facts those
sources produce (ingest/facts.py) and/or the raw text:

    signatures:
      - name: slow-shmdt
        sources: [truss, strace]
        weight: 0.7
        when:
          all:
            - {fact: syscall.count, key: shmdt, op: ">=", value: 5}
            - {fact: syscall.avg_ms, key: shmdt, op: ">=", value: 5}

Condition nodes (exactly one form each):
  - {all: [...]}, {any: [...]}, {not: {...}}
  - {fact: NAME, key: KEY?, op: OP, value: NUMBER|STRING}
  - {fact: NAME, key: KEY?, op: OP, ref: {fact: NAME, key: KEY?, times: N, plus: [{fact, key}]}}
  - {text: LITERAL | regex: PATTERN, min_count: N, case_sensitive: BOOL}
"""

# Annotations are evaluated here, not kept as strings (no `from __future__ import annotations`):
# pydantic compiled each string field annotation (typing.ForwardRef) on every start (issue #19).
import difflib
import math
import re
from typing import Annotated, Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from ingest.facts import FACTS
from ingest.model import FORMATS, new_list
from kb.regex_safety import UnsafeRegex, check_regex

# what a signature may read: every parsed format (not "unknown"), or the whole pasted text
Source = Literal[tuple(f for f in FORMATS if f != "unknown") + ("text",)]  # type: ignore[valid-type]
Op = Literal[">", ">=", "<", "<=", "==", "!="]

OP_SYMBOL = {">": ">", ">=": "≥", "<": "<", "<=": "≤", "==": "=", "!=": "≠"}

# Limits (docs/signatures.md, docs/security.md). Every entry must survive SQLite and JSON and
# come back equal: pydantic's JSON reader gives up near 100 nested objects and its writer near
# 150, so a condition tree deeper than that committed and then broke every read of the KB.
# Real signatures nest 2 levels and hold at most 15 conditions.
MAX_CONDITION_DEPTH = 12  # all/any/not levels above a leaf
MAX_CONDITIONS = 200  # nodes (all/any/not and leaves) in one signature's tree
MAX_PLUS = 10  # operands in a ref's `plus`
MAX_STRING = 1000  # characters in a key, a text/regex literal or a string value
MAX_DESCRIPTION = 4000  # characters in a signature's description

# C0 controls except tab/newline/carriage return, DEL, C1 controls: never meaningful in an
# entry, and ESC or NUL in a stored field reaches terminals (perfkb show) and logs.
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")
# ...and for one-line fields (a title, an author) line breaks of every kind too
_CONTROL_ONE_LINE = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")


def reject_controls(value: str, *, one_line: bool = False) -> str:
    """Refuse control characters (one-line fields: line breaks too); the one home of this rule
    for entries and signatures."""
    found = (_CONTROL_ONE_LINE if one_line else _CONTROL).search(value)
    if found:
        what = "line break" if found.group() in "\n\r\u2028\u2029" else "control character"
        raise ValueError(f"contains a {what} (U+{ord(found.group()):04X}); remove it")
    return value


def _checked_str(value: Any, what: str) -> Any:
    if isinstance(value, str):
        if len(value) > MAX_STRING:
            raise ValueError(f"{what} is {len(value)} characters long; at most {MAX_STRING}")
        reject_controls(value)
    return value


class _Strict(BaseModel):
    # allow_inf_nan=False: JSON 1e999 and YAML .inf/.nan are refused (JSON stores them as null)
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


class _Node(_Strict):
    """Every condition node: its form (`kind`, the YAML key that introduces it) and the nodes
    directly under it (`children`: the items of all/any, the one of not, none for a leaf). Code
    that walks a tree reads these two instead of asking for each of the five classes and the
    three names children live under."""

    kind: ClassVar[str]

    @property
    def children(self) -> tuple["Condition", ...]:
        return ()


def _check_fact(name: str, key: str | None) -> None:
    spec = FACTS.get(name)
    if spec is None:
        close = difflib.get_close_matches(name, FACTS, n=1)
        hint = f" (did you mean '{close[0]}'?)" if close else ""
        raise ValueError(f"unknown fact '{name}'{hint}")
    if spec.keyed_by and not key:
        raise ValueError(f"fact '{name}' is a table keyed by {spec.keyed_by}: give a key")
    if not spec.keyed_by and key:
        raise ValueError(f"fact '{name}' is a single value: it takes no key")


class FactRef(_Strict):
    """The right-hand side when a fact is compared with another: times * (fact + plus...)."""

    fact: str
    key: str | None = None
    times: float = 1.0
    plus: list["FactOperand"] = Field(default_factory=new_list, max_length=MAX_PLUS)

    @model_validator(mode="after")
    def _known(self) -> "FactRef":
        _check_fact(self.fact, _checked_str(self.key, "key"))
        return self


class FactOperand(_Strict):
    fact: str
    key: str | None = None

    @model_validator(mode="after")
    def _known(self) -> "FactOperand":
        _check_fact(self.fact, _checked_str(self.key, "key"))
        return self


class FactCondition(_Node):
    kind: ClassVar[str] = "fact"

    fact: str
    key: str | None = None
    op: Op
    value: float | str | None = None
    ref: FactRef | None = None

    @field_validator("value", mode="before")
    @classmethod
    def _finite(cls, v: Any) -> Any:
        if isinstance(v, float) and not math.isfinite(v):
            raise ValueError("value must be a finite number (not inf or nan)")
        return v

    @model_validator(mode="after")
    def _shape(self) -> "FactCondition":
        _check_fact(self.fact, _checked_str(self.key, "key"))
        _checked_str(self.value, "value")
        if (self.value is None) == (self.ref is None):
            raise ValueError("give exactly one of 'value' or 'ref'")
        spec = FACTS[self.fact]
        if spec.kind == "string" and self.op not in ("==", "!="):
            raise ValueError(f"fact '{self.fact}' is text: only == and != apply")
        if spec.kind == "number" and isinstance(self.value, str):
            raise ValueError(f"fact '{self.fact}' is a number: value must be a number")
        return self

    def facts(self) -> list[str]:
        names = [self.fact]
        if self.ref:
            names.append(self.ref.fact)
            names += [p.fact for p in self.ref.plus]
        return names

    def fact_keys(self) -> list[str]:
        keys = [self.key] if self.key else []
        if self.ref:
            keys += [k for k in [self.ref.key, *[p.key for p in self.ref.plus]] if k]
        return keys

    def describe(self) -> str:
        left = f"{self.fact}[{self.key}]" if self.key else self.fact
        if self.ref is not None:
            right = self.ref.fact + (f"[{self.ref.key}]" if self.ref.key else "")
            for p in self.ref.plus:
                right += " + " + p.fact + (f"[{p.key}]" if p.key else "")
            if self.ref.plus:
                right = f"({right})"
            if self.ref.times != 1:
                right = f"{self.ref.times:g} × {right}"
        elif isinstance(self.value, float):
            right = f"{self.value:g}"
        else:
            right = repr(self.value)
        return f"{left} {OP_SYMBOL[self.op]} {right}"


class TextCondition(_Node):
    kind: ClassVar[str] = "text"

    text: str | None = None
    regex: str | None = None
    min_count: int = Field(1, ge=1)
    case_sensitive: bool = False

    @model_validator(mode="after")
    def _shape(self) -> "TextCondition":
        if (self.text is None) == (self.regex is None):
            raise ValueError("give exactly one of 'text' or 'regex'")
        if self.text is not None and not self.text.strip():
            raise ValueError("'text' must not be empty")
        _checked_str(self.text, "text")
        if self.regex is not None:
            try:
                check_regex(self.regex)
            except UnsafeRegex as exc:
                raise ValueError(str(exc)) from None
            reject_controls(self.regex)  # its length is bounded by check_regex
        return self

    def describe(self) -> str:
        what = f"text '{self.text}'" if self.text is not None else f"regex /{self.regex}/"
        return what + (f" seen ≥ {self.min_count} times" if self.min_count > 1 else " present")


class AllOf(_Node):
    kind: ClassVar[str] = "all"
    all: list["Condition"] = Field(min_length=1)

    @property
    def children(self) -> tuple["Condition", ...]:
        return tuple(self.all)


class AnyOf(_Node):
    kind: ClassVar[str] = "any"
    any: list["Condition"] = Field(min_length=1)

    @property
    def children(self) -> tuple["Condition", ...]:
        return tuple(self.any)


class NotOf(_Node):
    kind: ClassVar[str] = "not"
    not_: "Condition" = Field(alias="not")
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    @property
    def children(self) -> tuple["Condition", ...]:
        return (self.not_,)


def _condition_kind(v: Any) -> str:
    if isinstance(v, dict):
        for kind, keys in (
            ("all", ("all",)),
            ("any", ("any",)),
            ("not", ("not", "not_")),
            ("fact", ("fact",)),
            ("text", ("text", "regex")),
        ):
            if any(k in v for k in keys):
                return kind
        return "fact"  # let FactCondition report what is missing
    return {AllOf: "all", AnyOf: "any", NotOf: "not", FactCondition: "fact"}.get(type(v), "text")


from pydantic import Discriminator, Tag  # noqa: E402

Condition = Annotated[
    Annotated[AllOf, Tag("all")]
    | Annotated[AnyOf, Tag("any")]
    | Annotated[NotOf, Tag("not")]
    | Annotated[FactCondition, Tag("fact")]
    | Annotated[TextCondition, Tag("text")],
    Discriminator(_condition_kind),
]

AllOf.model_rebuild()
AnyOf.model_rebuild()
NotOf.model_rebuild()
FactRef.model_rebuild()


def walk(cond: Condition):
    """Yield every leaf condition under `cond`."""
    if cond.children:
        for c in cond.children:
            yield from walk(c)
    else:
        yield cond


def _tree_shape(when: Any) -> tuple[int, int]:
    """(depth, node count) of a raw condition tree, without recursion and stopping early: run
    before pydantic builds the tree, whose own recursion a deep tree would exhaust."""
    depth = nodes = 0
    stack = [(when, 0)]
    while stack and nodes <= MAX_CONDITIONS and depth <= MAX_CONDITION_DEPTH:
        node, level = stack.pop()
        nodes += 1
        depth = max(depth, level)
        if isinstance(node, BaseModel):
            node = node.model_dump(by_alias=True)  # a tree built in Python, not raw data
        if not isinstance(node, dict):
            continue
        for key in ("all", "any"):
            if isinstance(node.get(key), list):
                stack += [(c, level + 1) for c in node[key]]
        for key in ("not", "not_"):
            if key in node:
                stack.append((node[key], level + 1))
    return depth, nodes


class Signature(_Strict):
    name: str = Field(pattern=r"^[a-z0-9][a-z0-9-]*$", max_length=80)
    description: str = Field("", max_length=MAX_DESCRIPTION)
    sources: list[Source] = Field(min_length=1)
    weight: float = Field(0.5, gt=0, le=1)
    specific: bool = Field(
        True,
        description="False for generic symptoms (high %sys alone, unaccounted time alone): "
        "a match on generic signatures alone is never called high confidence",
    )
    when: Condition

    @model_validator(mode="before")
    @classmethod
    def _bounded_tree(cls, data: Any) -> Any:
        if isinstance(data, dict) and "when" in data:
            depth, nodes = _tree_shape(data["when"])
            if depth > MAX_CONDITION_DEPTH:
                raise ValueError(
                    f"conditions nest more than {MAX_CONDITION_DEPTH} levels deep "
                    "(all/any/not inside each other)"
                )
            if nodes > MAX_CONDITIONS:
                raise ValueError(f"more than {MAX_CONDITIONS} conditions in one signature")
        return data

    @field_validator("description")
    @classmethod
    def _description(cls, v: str) -> str:
        return reject_controls(v)

    @field_validator("sources")
    @classmethod
    def _unique_sources(cls, v: list[str]) -> list[str]:
        if len(set(v)) != len(v):
            raise ValueError("sources repeat")
        return v

    @model_validator(mode="after")
    def _facts_fit_sources(self) -> "Signature":
        sources = set(self.sources)
        for leaf in walk(self.when):
            if isinstance(leaf, FactCondition):
                for name in leaf.facts():
                    if not sources & set(FACTS[name].sources):
                        raise ValueError(
                            f"fact '{name}' comes from {', '.join(FACTS[name].sources)}, "
                            f"not from this signature's sources ({', '.join(self.sources)})"
                        )
        return self

    def identifiers(self) -> list[str]:
        """Keys the signature names (syscalls, functions, events): for prefiltering and search."""
        out: list[str] = []
        for leaf in walk(self.when):
            if isinstance(leaf, FactCondition):
                out += [k for k in leaf.fact_keys() if k not in out]
        return out

    def required_identifiers(self) -> list[str]:
        """Keys that must be present in the evidence for the signature to hold at all (keys of
        fact conditions reached only through all-nodes with a lower bound): used to prefilter."""
        return _required(self.when)


def _required(cond) -> list[str]:
    if cond.kind == "all":
        out: list[str] = []
        for c in cond.children:
            out += [k for k in _required(c) if k not in out]
        return out
    if isinstance(cond, FactCondition) and cond.key and cond.ref is None:
        lower_bound = cond.op in (">", ">=") and isinstance(cond.value, float) and cond.value > 0
        lower_bound |= cond.op == ">" and cond.value == 0
        return [cond.key] if lower_bound else []
    return []
