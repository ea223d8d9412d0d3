"""Fuzz targets for what users send the knowledge base itself (issue 20), used by run_fuzz.py.

- ``entry-yaml`` and ``entry-json``: an entry as a person writes it (``perfkb add``, the web form's
  YAML, the Slack modal) or as an API client sends it. Inputs are the starter entries, damaged:
  hostile numbers (``.inf``, ``.nan``, ``1e999``, 400-digit integers), ``all``/``any``/``not``
  nested up to 250 deep, thousands of tags, control characters, wrong types, missing and unknown
  keys, duplicate keys, and the text-level damage run_fuzz.mutate does. Contract: an input is
  either refused with the entry errors people see (EntryError, EntryFileError, StoreError), or
  it is an entry that survives every round trip (YAML dump and load, JSON dump and validate, the
  store's write and read back), and the store still lists, searches and reads afterwards.
- ``commands``: an arbitrary value for every placeholder kind, filled into every command template
  perfkb has (the triage rules', the starter entries', and one per kind and context). Contract:
  a value that kb/command_fill.py accepts changes no shell structure — ``shlex.split`` of the
  filled command gives the template's words with the value as exactly one word (or one part of
  a word inside a quoted script), and a SQL literal in a quoted heredoc decodes back to the value
  without ending the literal, the line or the heredoc; a value it refuses leaves the command
  exactly as with no value at all.
"""

from __future__ import annotations

import json
import math
import os
import random
import re
import shlex
import shutil
import tempfile
from datetime import datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
ENTRIES = ROOT / "kb" / "entries"


class ContractError(AssertionError):
    pass


def _need(ok: bool, message: str) -> None:
    if not ok:
        raise ContractError(message)


# -- entries: inputs ----------------------------------------------------------------------------

HOSTILE_VALUES: list[Any] = [
    math.inf, -math.inf, math.nan, 1e308, -1e308, 5e-324, -0.0, 10**400, -(10**30), 0, -1,
    "", " ", "\x00", "a\x00b", "\x1b[31mred", "\u2028", "\ufeff", "x" * 5000, "é" * 300,
    "<script>alert(1)</script>", "$(touch /tmp/x)", "`id`", "{{7*7}}", "1e999", ".inf", "nan",
    "2020-13-45", "2020-02-30T25:61:00", "9" * 5000, None, True, False, [], {}, [[[]]],
    {"fact": "x"}, ["a"] * 50, "a: b", "- x", "&anchor", "*alias", "!!python/object", "|",
]  # fmt: skip
DEPTHS = [1, 5, 40, 120, 250]


def _plain(value: Any) -> Any:
    """Entry data as plain JSON-able values (timestamps as ISO strings)."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, datetime):
        return value.isoformat()
    return value


_STARTER: list[tuple[dict[str, Any], Any]] = []


def starter_pairs() -> list[tuple[dict[str, Any], Any]]:
    """(plain data, Entry) of every starter entry."""
    if not _STARTER:
        from kb.entry_yaml import entry_to_data, load_entry

        for path in sorted(ENTRIES.glob("*.yaml")):
            entry = load_entry(path.read_text(), str(path))
            _STARTER.append((_plain(entry_to_data(entry)), entry))
        if not _STARTER:
            raise SystemExit(f"no entries under {ENTRIES}")
    return _STARTER


def starter_data() -> list[dict[str, Any]]:
    return [data for data, _ in starter_pairs()]


def _paths(value: Any, here: tuple = ()) -> list[tuple]:
    """Every path to a value inside nested dicts and lists (the root excluded)."""
    out = []
    if isinstance(value, dict):
        for k, v in value.items():
            out.append((*here, k))
            out += _paths(v, (*here, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            out.append((*here, i))
            out += _paths(v, (*here, i))
    return out


def _set(data: Any, path: tuple, value: Any) -> None:
    for key in path[:-1]:
        data = data[key]
    data[path[-1]] = value


def _nest(condition: Any, depth: int, rng: random.Random) -> Any:
    for _ in range(depth):
        op = rng.choice(["all", "any", "not"])
        condition = {"not": condition} if op == "not" else {op: [condition]}
    return condition


def mutate_entry(data: dict[str, Any], rng: random.Random, steps: int) -> dict[str, Any]:
    """Damage an entry's data the ways hostile or careless authors do."""
    data = json.loads(json.dumps(data))
    for _ in range(steps):
        kind = rng.randrange(9)
        paths = _paths(data)
        if kind <= 2 and paths:  # any value becomes something hostile
            _set(data, rng.choice(paths), rng.choice(HOSTILE_VALUES))
        elif kind == 3:  # a condition's value or weight becomes a hostile number
            numeric = [p for p in paths if p[-1] in ("value", "weight", "min_confidence")]
            if numeric:
                _set(data, rng.choice(numeric), rng.choice(HOSTILE_VALUES[:10]))
        elif kind == 4:  # conditions nested deep
            sigs = data.get("signatures")
            if isinstance(sigs, list) and sigs and isinstance(sigs[0], dict):
                sigs[0]["when"] = _nest(sigs[0].get("when"), rng.choice(DEPTHS), rng)
        elif kind == 5:  # many or long tags
            n = rng.choice([2, 300, 5000])
            long = 3000 if n == 2 else rng.choice([1, 80])
            data["tags"] = [rng.choice(["numa", "x" * long, "Tag"])] * n
        elif kind == 6 and data:
            data.pop(rng.choice(list(data)), None)
        elif kind == 7:
            data[rng.choice(["extra", "id ", "Title", "__proto__", "signatures2"])] = "x"
        else:
            data["id"] = rng.choice(["a", "-x-", "x" * 120, "UPPER", "ok-id", "a/b", "a..b"])
    return data


def render_entry(data: dict[str, Any], rng: random.Random, as_json: bool) -> str:
    """The data as a document, sometimes with text-level damage a serializer would not make."""
    import yaml

    try:
        if as_json:
            text = json.dumps(data, ensure_ascii=rng.random() < 0.5)
            if rng.random() < 0.3:
                text = text.replace("Infinity", "1e999").replace("NaN", "-1e999")
        else:
            text = yaml.safe_dump(data, allow_unicode=True, sort_keys=False, width=10_000)
    except (RecursionError, ValueError):
        text = "{}" if as_json else "{}\n"
    if not as_json and rng.random() < 0.2:  # a duplicate key, as hand edits make them
        text += rng.choice(["title: a second title\n", "tags: [x]\n", "id: other-id\n"])
    return text


def entry_strategy(as_json: bool, damage: Any):
    """hypothesis inputs: a starter entry, damaged, as YAML or JSON text; sometimes that text
    damaged further by run_fuzz.mutate (passed in as `damage`)."""
    from hypothesis import strategies as st

    starters = starter_data()

    def build(seed: int, i: int, steps: int, text_damage: int) -> str:
        rng = random.Random(seed)
        data = mutate_entry(starters[i % len(starters)], rng, steps)
        text = render_entry(data, rng, as_json)
        if text_damage == 0:
            text = damage(text, rng, [text], rng.randrange(1, 4))
        return text

    return st.builds(
        build,
        st.integers(0, 2**32 - 1),
        st.integers(0, len(starters) - 1),
        st.integers(0, 4),
        st.integers(0, 5),
    )


# -- entries: checks ----------------------------------------------------------------------------


class _Stores:
    """One scratch store per process, replaced every few hundred writes (so a long run does not
    grow one index without bound)."""

    def __init__(self) -> None:
        self.store: Any = None
        self.dir: Path | None = None
        self.writes = 0
        self.n = 0

    def get(self) -> Any:
        from kb.settings import Settings
        from kb.store import Store

        if self.store is None or self.writes >= 300:
            self.close()
            self.dir = Path(tempfile.mkdtemp(prefix="perfkb-fuzz-store-"))
            self.store = Store(Settings(data_dir=self.dir))
            self.writes = 0
        return self.store

    def close(self) -> None:
        if self.store is not None:
            self.store.close()
        if self.dir is not None:
            shutil.rmtree(self.dir, ignore_errors=True)
        self.store, self.dir = None, None


STORES = _Stores()


def _same(a: Any, b: Any, what: str) -> None:
    _need(a == b, f"{what}: the entry read back differs from the one written")


def check_entry(text: str, *, as_json: bool) -> None:
    from kb.entry_yaml import dump_entry, load_entry
    from kb.errors import EntryError, EntryFileError, StoreError
    from kb.models import Entry, validate_entry

    if as_json:
        try:
            data = json.loads(text)
        except (json.JSONDecodeError, RecursionError):
            return  # the API answers 422 "not valid JSON" / "nested too deeply"
        if not isinstance(data, dict):
            return
        try:
            entry = validate_entry(data)
        except EntryError:
            return
    else:
        try:
            entry = load_entry(text)
        except EntryFileError:
            return
    # Accepted: it must survive every way it is written and read again.
    _same(load_entry(dump_entry(entry)), entry, "YAML dump and load")
    _same(Entry.model_validate_json(entry.model_dump_json()), entry, "JSON dump and validate")
    store = STORES.get()
    STORES.n += 1
    # hypothesis seeds the global `random` alike for every input, and whoosh names its segments
    # with it: the same name twice fails whoosh's own assertion. A fresh seed per write keeps
    # that artefact of the harness out of the results.
    random.seed(f"{os.getpid()}-{STORES.n}")
    entry = entry.model_copy(update={"id": f"fz{STORES.n}-{entry.id}"[:100]})
    try:
        saved, _ = store.upsert(entry, author="fuzz", keep_local_edits=False)
        STORES.writes += 1
    except (StoreError, EntryError):
        saved = None  # refused before the commit: fine, if the store is still whole
    if saved is not None:
        _same(store.get(saved.id), saved, "the store's write and read back")
    # One entry must never break the knowledge base for everybody else.
    store.list_entries()
    store.search("latch")


def check_entry_yaml(text: str) -> None:
    check_entry(text, as_json=False)


def check_entry_json(text: str) -> None:
    check_entry(text, as_json=True)


# -- commands -----------------------------------------------------------------------------------

# A value of each kind that is valid and appears nowhere else in any template.
SENTINELS = {
    "pid": "987654321",
    "sid": "987654322",
    "serial": "987654323",
    "sql_id": "zzzzzzzzzzzzz",
    "syscall": "qqsentinelqq",
    "event": "qqsentinelqq",
    "device": "qqsentinelqq",
    "path": "/qqsentinelqq",
    "process": "qqsentinelqq",
}
SHELL_HOSTILE = [
    "$(touch /tmp/x)", "`id`", "x'\"; id; echo \"", "'; id; '", "a\nb", "a\x00b", "’‘“”", ";",
    "|", "&&", "*", "?", "~root", "$HOME", "${IFS}", "-rf", "--", "-o/etc/passwd", "\\", "EOF",
    "a\rb", "'", "''", "\"", "!", "#", "{pid}", "PID", "<pid>", "&x", "@", "%", "\t", " ",
]  # fmt: skip

_TEMPLATES: list[str] = []


def command_templates() -> list[str]:
    """Every template with a placeholder: the triage rules', the starter entries' (and their
    translations to the other platform), and one per kind and context."""
    if _TEMPLATES:
        return _TEMPLATES
    from kb import command_fill
    from kb.entry_yaml import load_entry
    from kb.platform import translate
    from kb.triage import load_rules

    found: list[str] = []
    book = load_rules()
    for rule in [*book.rules, book.baseline]:
        found += [c.command for c in rule.commands]
    for path in sorted(ENTRIES.glob("*.yaml")):
        for c in load_entry(path.read_text(), str(path)).next_commands:
            found += [c.command, translate(c.command, "linux"), translate(c.command, "solaris")]
    for kind in command_fill.KINDS:
        found += [
            f"tool -x {{{kind}}} --flag",
            f"dtrace -n 'syscall::{{{kind}:script}}:entry {{ @[execname] = count(); }}'",
            f"sqlplus -s / as sysdba <<'EOF'\nselect 1 from dual where x = '{{{kind}:sql}}';\nEOF",
        ]
    _TEMPLATES.extend(dict.fromkeys(t for t in found if command_fill.placeholders(t)))
    return _TEMPLATES


def _check_sql(ref: str, filled: str, sentinel: str, value: str, template: str) -> None:
    ref_lines, lines = ref.split("\n"), filled.split("\n")
    _need(len(ref_lines) == len(lines), f"a value added a line to {template!r}")
    _need(re.search(r"<<-?\s*'[^']+'", ref) is not None, f"heredoc not quoted in {template!r}")
    for before, after in zip(ref_lines, lines, strict=True):
        if sentinel not in before:
            _need(before == after, f"a value changed another line of {template!r}")
            continue
        pre, _, post = before.partition(sentinel)
        _need(after.startswith(pre) and after.endswith(post), f"literal broken: {after!r}")
        literal = after[len(pre) : len(after) - len(post)]
        _need(re.fullmatch(r"(?:[^'\n\r\x00]|'')*", literal) is not None, f"ends: {literal!r}")
        _need(literal.replace("''", "'") == value, f"SQL literal {literal!r} is not {value!r}")


def check_command_value(value: str) -> None:
    from kb import command_fill

    for kind in command_fill.KINDS:
        for context in command_fill.CONTEXTS:
            safe = command_fill.safe_value(kind, value, context)
            if safe is None:
                continue
            _need("\n" not in safe and "\x00" not in safe and "\r" not in safe, f"{safe!r}")
            if context == "word":
                _need(shlex.split(safe) == [value], f"{safe!r} is not one shell word {value!r}")
    for template in command_templates():
        kinds = {k for k, _ in command_fill.placeholders(template)}
        for kind in kinds:
            contexts = {c for k, c in command_fill.placeholders(template) if k == kind}
            filled = command_fill.fill(template, {kind: value})
            safe = {command_fill.safe_value(kind, value, c) is not None for c in contexts}
            if safe == {False}:
                _need(filled == command_fill.fill(template, {}), f"unsafe value filled: {filled!r}")
                continue
            if len(safe) > 1:
                continue  # some contexts took the value, others not: no single reference
            sentinel = SENTINELS[kind]
            ref = command_fill.fill(template, {kind: sentinel})
            if "sql" in contexts:
                _check_sql(ref, filled, sentinel, value, template)
                continue
            try:
                words = shlex.split(ref)
            except ValueError:
                continue  # a template shlex cannot read (not one of ours to judge here)
            expected = [w.replace(sentinel, value) for w in words]
            got = shlex.split(filled)
            _need(got == expected, f"{template!r} with {value!r}: {got} != {expected}")


def command_strategy():
    from hypothesis import strategies as st

    kinds_like = st.one_of(
        st.from_regex(r"[0-9]{1,12}", fullmatch=True),
        st.from_regex(r"[0-9a-z]{13}", fullmatch=True),
        st.from_regex(r"[A-Za-z0-9_./:+-]{1,40}", fullmatch=True),
        st.from_regex(r"[a-z :*-]{1,64}", fullmatch=True),
    )
    pieces = st.lists(st.sampled_from(SHELL_HOSTILE), min_size=1, max_size=4).map("".join)
    return st.one_of(
        kinds_like,
        pieces,
        st.tuples(kinds_like, pieces).map("".join),
        st.text(max_size=80),
        st.text(alphabet=st.characters(codec="ascii"), max_size=70),
    )
