"""Entries as YAML files: what people write, review in pull requests and export.

The writer is a pure function of the entry with a fixed field order, so export → import →
export gives the same bytes. Long prose goes in block scalars; signature conditions are written
as one-line mappings where they fit, nested under all/any/not, so a condition tree reads like
the rule it is. The reader rejects YAML aliases (entries never need them, and they can expand
exponentially), keeps version numbers as written (`fixed: [19.10]` stays "19.10", not 19.1),
and names the file, the entry and the field in every error.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import suppress
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml

from kb.errors import EntryFileError
from kb.models import Entry, EntryError, NextCommand, validate_entry
from kb.signatures import FactCondition, Signature, TextCondition

FIELD_ORDER = (
    "id",
    "title",
    "symptom",
    "root_cause",
    "fix",
    "differential",
    "affected_versions",
    "platforms",
    "tags",
    "references",
    "next_commands",
    "signatures",
    "author",
    "created",
    "updated",
)
MAX_FILE_BYTES = 5 * 1024 * 1024
FOLD_AT = 80  # single-line prose longer than this is written folded
WRAP_AT = 90  # folded prose breaks at the first space past this column
FLOW_MAX = 88  # a mapping whose one-line form is longer than this is written as a block


# --------------------------------------------------------------------------------------------
# writing


class _Flow(dict):
    pass


class _FlowList(list):
    pass


class _Literal(str):
    pass


class _Folded(str):
    pass


class _Timestamp(str):
    pass


class _Dumper(yaml.SafeDumper):
    """Folded prose wraps near WRAP_AT columns; nothing else wraps (a title or a shell command
    stays on one line, so it can be found with grep and copied)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.best_width = 1_000_000

    def write_folded(self, text: str) -> None:
        saved, self.best_width = self.best_width, WRAP_AT
        try:
            super().write_folded(text)
        finally:
            self.best_width = saved


# YAML reads these as line breaks, and PyYAML does not always escape them outside double quotes
_BREAKS = ("\x85", "\u2028", "\u2029")


def _str_style(style: str | None):
    def represent(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
        chosen = '"' if any(b in value for b in _BREAKS) else style
        return dumper.represent_scalar("tag:yaml.org,2002:str", str(value), style=chosen)

    return represent


_Dumper.add_representer(str, _str_style(None))
_Dumper.add_representer(_Literal, _str_style("|"))
_Dumper.add_representer(_Folded, _str_style(">"))
_Dumper.add_representer(
    _Timestamp, lambda d, s: d.represent_scalar("tag:yaml.org,2002:timestamp", str(s))
)
_Dumper.add_representer(
    _Flow, lambda d, m: d.represent_mapping("tag:yaml.org,2002:map", m, flow_style=True)
)
_Dumper.add_representer(
    _FlowList, lambda d, s: d.represent_sequence("tag:yaml.org,2002:seq", s, flow_style=True)
)


def _text(value: str) -> str:
    """Block style for long or multi-line text (PyYAML falls back to quotes when it must)."""
    if "\n" in value.rstrip("\n"):
        return _Literal(value)
    if len(value) > FOLD_AT:
        return _Folded(value)
    return value


def _command(value: str) -> str:
    """Shell commands stay on one line unless they are written on several."""
    return _Literal(value) if "\n" in value.rstrip("\n") else value


def _number(value: float | int) -> float | int:
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e15:
        return int(value)
    return value


def _timestamp(value: datetime) -> _Timestamp:
    dt = value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)
    return _Timestamp(dt.isoformat().replace("+00:00", "Z"))


def _compact(mapping: dict[str, Any]) -> dict[str, Any]:
    """One line when it reads well on one line, a block mapping otherwise."""
    one_line = json.dumps(mapping, ensure_ascii=False, default=str)
    nested = any(
        (isinstance(v, dict) and not isinstance(v, _Flow))
        or (isinstance(v, list) and _has_dicts(v))
        for v in mapping.values()
    )
    if len(one_line) <= FLOW_MAX and not nested:
        return _Flow(mapping)
    return {
        k: _FlowList(v) if isinstance(v, list) and not _has_dicts(v) else v
        for k, v in mapping.items()
    }


def _has_dicts(items: list[Any]) -> bool:
    return any(isinstance(v, dict) for v in items)


def _operand(fact: str, key: str | None) -> dict[str, Any]:
    out: dict[str, Any] = {"fact": fact}
    if key is not None:
        out["key"] = key
    return out


def _condition(cond: Any) -> dict[str, Any]:
    if cond.kind == "not":
        return {"not": _condition(cond.not_)}
    if cond.children:
        return {cond.kind: [_condition(c) for c in cond.children]}
    if isinstance(cond, FactCondition):
        out = _operand(cond.fact, cond.key)
        out["op"] = cond.op
        if cond.ref is not None:
            ref = _operand(cond.ref.fact, cond.ref.key)
            if cond.ref.times != 1:
                ref["times"] = _number(cond.ref.times)
            if cond.ref.plus:
                ref["plus"] = [_Flow(_operand(p.fact, p.key)) for p in cond.ref.plus]
            out["ref"] = _compact(ref)
        else:
            out["value"] = _number(cond.value) if isinstance(cond.value, float) else cond.value
        return _compact(out)
    if isinstance(cond, TextCondition):
        out = {"text": cond.text} if cond.text is not None else {"regex": cond.regex}
        if cond.min_count != 1:
            out["min_count"] = cond.min_count
        if cond.case_sensitive:
            out["case_sensitive"] = True
        return _compact(out)
    raise TypeError(f"unknown condition {type(cond).__name__}")


def _signature(sig: Signature) -> dict[str, Any]:
    out: dict[str, Any] = {"name": sig.name}
    if sig.description:
        out["description"] = _text(sig.description)
    out["sources"] = _FlowList(sig.sources)
    out["weight"] = _number(sig.weight)
    if not sig.specific:
        out["specific"] = False
    out["when"] = _condition(sig.when)
    return out


def _next_command(c: NextCommand) -> dict[str, Any]:
    """command, platform, why, then only the conditions that are set, in the model's order."""
    out: dict[str, Any] = {
        "command": _command(c.command),
        "platform": c.platform,
        "why": _text(c.why),
    }
    if c.min_version is not None:
        out["min_version"] = c.min_version
    if c.licence:
        out["licence"] = c.licence
    if c.free_alternative:
        out["free_alternative"] = _text(c.free_alternative)
    if c.intrusive:
        out["intrusive"] = True
        out["intrusive_why"] = _text(c.intrusive_why)
    return out


def entry_to_data(entry: Entry) -> dict[str, Any]:
    """The entry as plain data in FIELD_ORDER, with style markers for the YAML writer."""
    versions = []
    for r in entry.affected_versions:
        item: dict[str, Any] = {"product": r.product}
        if r.introduced is not None:
            item["introduced"] = r.introduced
        if r.fixed:
            item["fixed"] = _FlowList(r.fixed)
        if r.observed_fixed:
            item["observed_fixed"] = _FlowList(r.observed_fixed)
        if r.note:
            item["note"] = r.note
        versions.append(_compact(item))
    data: dict[str, Any] = {
        "id": entry.id,
        "title": entry.title,
        "symptom": _text(entry.symptom),
        "root_cause": _text(entry.root_cause),
        "fix": _text(entry.fix),
        "differential": [{"entry": d.entry, "check": _text(d.check)} for d in entry.differential],
        "affected_versions": versions,
        "platforms": _FlowList(entry.platforms),
        "tags": _FlowList(entry.tags),
        "references": list(entry.references),
        "next_commands": [_next_command(c) for c in entry.next_commands],
        "signatures": [_signature(s) for s in entry.signatures],
        "author": entry.author,
        "created": _timestamp(entry.created),
        "updated": _timestamp(entry.updated),
    }
    assert tuple(data) == FIELD_ORDER
    return data


def dump_entry(entry: Entry) -> str:
    return yaml.dump(
        entry_to_data(entry),
        Dumper=_Dumper,
        sort_keys=False,
        allow_unicode=True,
        default_flow_style=False,
    )


def dump_signatures(signatures: Sequence[Signature]) -> str:
    """Signatures as an entry file holds them (one line per leaf, defaults left out): what the
    web form and the Slack modal show for editing, so a signature reads the same everywhere."""
    if not signatures:
        return ""
    return yaml.dump(
        [_signature(s) for s in signatures],
        Dumper=_Dumper,
        sort_keys=False,
        allow_unicode=True,
        default_flow_style=False,
    )


def dump_items(name: str, entry: Entry, start: int = 0, stop: int | None = None) -> str:
    """Items start..stop of one list field of an entry (`differential`, `affected_versions`,
    `next_commands`, `signatures`) as the entry file writes them, for a form or a modal that
    edits the field as text: the same YAML as the file, so an edit reads the same everywhere
    (a modal that splits a long list over several inputs writes each part with this)."""
    items = entry_to_data(entry)[name][start:stop]
    if not items:
        return ""
    return yaml.dump(
        list(items), Dumper=_Dumper, sort_keys=False, allow_unicode=True, default_flow_style=False
    )


def entry_filename(entry_id: str) -> str:
    return f"{entry_id}.yaml"


def write_entry(entry: Entry, directory: Path) -> Path:
    """Write `<id>.yaml` in `directory` atomically (a reader never sees half a file) and never
    through a symbolic link: an export directory may be shared, and a link planted there as
    `<id>.yaml` or as the temporary file would make perfkb overwrite whatever it points to
    with the user's rights. The temporary file is created exclusively under a random name
    (O_CREAT|O_EXCL, which does not follow links), and a target that is a link is refused;
    the rename replaces a directory entry, never what a link points to."""
    path = Path(directory) / entry_filename(entry.id)
    if path.is_symlink():
        raise EntryFileError(
            f"{path}: is a symbolic link; perfkb does not write through links "
            "(remove it, or export to another directory)"
        )
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(dump_entry(entry))
        os.chmod(tmp, 0o644)  # mkstemp creates 0600; an export is meant to be read
        os.replace(tmp, path)
    except BaseException:
        with suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    return path


# --------------------------------------------------------------------------------------------
# reading


class _SourceFloat(float):
    source: str


class _SourceInt(int):
    source: str


# libyaml's parser when PyYAML was built with it (about 10x faster), else the pure-Python one
_BaseLoader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _Loader(_BaseLoader):
    pass


def _construct_float(loader: yaml.SafeLoader, node: yaml.ScalarNode) -> float:
    value = _SourceFloat(yaml.SafeLoader.construct_yaml_float(loader, node))
    value.source = node.value
    return value


def _construct_int(loader: yaml.SafeLoader, node: yaml.ScalarNode) -> int | str:
    """An int that remembers how it was written; one too long for Python's int() (4,300
    digits) stays text, so a tag or a version of 5,000 digits gets a length message from
    validation instead of a crash."""
    try:
        value = _SourceInt(yaml.SafeLoader.construct_yaml_int(loader, node))
    except ValueError:
        return str(node.value)
    value.source = node.value
    return value


def _construct_timestamp(loader: yaml.SafeLoader, node: yaml.ScalarNode) -> Any:
    """A timestamp that is no date (2020-13-45) is an error at its line, not a crash."""
    try:
        return yaml.SafeLoader.construct_yaml_timestamp(loader, node)
    except (ValueError, OverflowError) as exc:
        raise yaml.constructor.ConstructorError(
            None,
            None,
            f"'{str(node.value)[:40]}' is not a valid date or time ({exc})",
            node.start_mark,
        ) from None


def _construct_mapping(loader: yaml.SafeLoader, node: yaml.MappingNode) -> dict[Any, Any]:
    """A mapping whose keys are unique: YAML keeps the last of two `fix:` lines silently, so a
    careless merge would lose the first; name the key and its line instead."""
    seen: set[Any] = set()
    for key_node, _ in node.value:
        if isinstance(key_node, yaml.ScalarNode):
            key = key_node.value
            if key in seen:
                raise yaml.constructor.ConstructorError(
                    None, None, f"duplicate key '{str(key)[:80]}'", key_node.start_mark
                )
            seen.add(key)
    return yaml.SafeLoader.construct_yaml_map(loader, node)


_Loader.add_constructor("tag:yaml.org,2002:float", _construct_float)
_Loader.add_constructor("tag:yaml.org,2002:int", _construct_int)
_Loader.add_constructor("tag:yaml.org,2002:timestamp", _construct_timestamp)
_Loader.add_constructor("tag:yaml.org,2002:map", _construct_mapping)


def _as_written(value: Any) -> Any:
    """A number where text belongs (a version, a tag, a key) becomes the text as written."""
    if isinstance(value, _SourceFloat | _SourceInt):
        return value.source
    return value


def _fix_condition(node: Any) -> None:
    if isinstance(node, dict):
        for k in ("key", "text", "regex"):
            if k in node:
                node[k] = _as_written(node[k])
        for v in node.values():
            _fix_condition(v)
    elif isinstance(node, list):
        for v in node:
            _fix_condition(v)


def _fix_text_fields(data: dict[str, Any]) -> dict[str, Any]:
    for key in ("id", "title", "author"):
        if key in data:
            data[key] = _as_written(data[key])
    if isinstance(data.get("tags"), list):
        data["tags"] = [_as_written(t) for t in data["tags"]]
    if isinstance(data.get("affected_versions"), list):
        for r in data["affected_versions"]:
            if isinstance(r, dict):
                for k in ("introduced", "product", "note"):
                    if k in r:
                        r[k] = _as_written(r[k])
                for k in ("fixed", "observed_fixed"):
                    if isinstance(r.get(k), list):
                        r[k] = [_as_written(v) for v in r[k]]
                    elif k in r:
                        r[k] = [_as_written(r[k])]
    if isinstance(data.get("next_commands"), list):
        for c in data["next_commands"]:
            if isinstance(c, dict) and "min_version" in c:
                c["min_version"] = _as_written(c["min_version"])
    if isinstance(data.get("signatures"), list):
        _fix_condition(data["signatures"])
    return data


def _shares_nodes(data: Any) -> bool:
    """True if a container appears twice: what a YAML alias (*name) produces. Entries never
    need aliases, and nested ones expand exponentially when validated."""
    seen: set[int] = set()
    stack = [data]
    while stack:
        node = stack.pop()
        if isinstance(node, dict | list):
            if id(node) in seen:
                return True
            seen.add(id(node))
            stack.extend(node.values() if isinstance(node, dict) else node)
    return False


# Entries nest a few levels; libyaml builds nodes recursively in C and crashes the process
# (SIGSEGV) somewhere past 20,000 levels, which a 5 MB file of brackets reaches.
MAX_NESTING = 100
SCAN_FROM = 10_000  # fewer indicators than this cannot nest deep enough to crash
_OPENERS = "[{-?:"  # every nested collection starts at one of these indicators


def _too_deep(text: str) -> bool:
    """True if collections nest deeper than MAX_NESTING. The indicator count bounds the depth,
    so ordinary files skip the event scan (non-recursive, in libyaml's parser); shallower
    nesting that is still too deep for Python ends in a RecursionError we report."""
    if sum(text.count(c) for c in _OPENERS) < SCAN_FROM:
        return False
    depth = 0
    for event in yaml.parse(text, Loader=_Loader):
        if isinstance(event, yaml.CollectionStartEvent):
            depth += 1
            if depth > MAX_NESTING:
                return True
        elif isinstance(event, yaml.CollectionEndEvent):
            depth -= 1
    return False


def _located(exc: yaml.YAMLError) -> tuple[str, str]:
    """(' line L, column C' or '', the problem) of a YAML error, for one-line messages."""
    if isinstance(exc, yaml.MarkedYAMLError):
        mark = exc.problem_mark or exc.context_mark
        where = f" line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        return where, str(exc.problem or exc.context or "invalid YAML")
    return "", " ".join(str(exc).split())


def _documents(text: str, source: str) -> Iterator[Any]:
    try:
        if _too_deep(text):
            raise EntryFileError(f"{source}: YAML nested more than {MAX_NESTING} levels deep")
        for doc in yaml.load_all(text, Loader=_Loader):
            if _shares_nodes(doc):
                raise EntryFileError(
                    f"{source}: YAML aliases (*name) are not allowed in entry files"
                )
            yield doc
    except yaml.YAMLError as exc:
        where, problem = _located(exc)
        raise EntryFileError(f"{source}:{where}: YAML error: {problem}") from None
    except RecursionError:
        raise EntryFileError(f"{source}: YAML nested too deeply") from None


def load_fragment(text: str) -> Any:
    """Part of an entry typed into a form or a modal (the signatures field), read exactly as
    entry files are: no aliases, no duplicate keys, bounded nesting, a date that is no date or
    a 5,000-digit number an error at its line, keys and literals kept as written. Raises
    EntryFileError('YAML line L, column C: problem')."""
    try:
        if _too_deep(text):
            raise EntryFileError(f"YAML nested more than {MAX_NESTING} levels deep")
        docs = list(yaml.load_all(text, Loader=_Loader))
    except yaml.YAMLError as exc:
        where, problem = _located(exc)
        raise EntryFileError(f"YAML{where}: {problem}") from None
    except RecursionError:
        raise EntryFileError("YAML nested too deeply") from None
    if len(docs) > 1:
        raise EntryFileError("YAML holds several documents (---); give one")
    data = docs[0] if docs else None
    if _shares_nodes(data):
        raise EntryFileError("YAML aliases (*name) are not allowed here")
    _fix_condition(data)
    return data


def load_field(name: str, text: str) -> Any:
    """A list field typed as YAML (what dump_field wrote, edited), read as load_fragment reads
    it and with the entry file's text fields kept as written (`min_version: 12.1` stays the
    text '12.1'). Raises EntryFileError."""
    data = load_fragment(text)
    if isinstance(data, list):
        data = _fix_text_fields({name: data})[name]
    return data


def load_entries(text: str, source: str = "<text>") -> list[Entry]:
    """Entries from YAML text: one mapping, a list of mappings, or several documents."""
    raw: list[tuple[str, Any]] = []
    docs = list(_documents(text, source))
    for n, doc in enumerate(docs, 1):
        where = source if len(docs) == 1 else f"{source} (document {n})"
        if doc is None:
            continue
        if isinstance(doc, list):
            raw += [(f"{where} item {i}", item) for i, item in enumerate(doc, 1)]
        else:
            raw.append((where, doc))
    if not raw:
        raise EntryFileError(f"{source}: no entry in the file")
    entries = []
    seen: set[str] = set()
    for where, item in raw:
        if not isinstance(item, dict):
            kind = type(item).__name__
            raise EntryFileError(
                f"{where}: expected an entry (a mapping with id, title, ...), found {kind}"
            )
        try:
            entry = validate_entry(_fix_text_fields(item), source=where)
        except EntryError as exc:
            raise EntryFileError(f"{where}: {exc}") from None
        except RecursionError:
            raise EntryFileError(f"{where}: YAML nested too deeply") from None
        if entry.id in seen:
            raise EntryFileError(f"{where}: entry '{entry.id}' appears twice")
        seen.add(entry.id)
        entries.append(entry)
    return entries


def load_entry(text: str, source: str = "<text>") -> Entry:
    entries = load_entries(text, source)
    if len(entries) != 1:
        raise EntryFileError(f"{source}: expected one entry, found {len(entries)}")
    return entries[0]


def read_text(path: Path) -> str:
    """An entry file's text, with the reasons it cannot be read said plainly."""
    path = Path(path)
    if path.is_dir():
        raise EntryFileError(f"{path}: is a directory, not an entry file")
    try:
        size = path.stat().st_size
        if size > MAX_FILE_BYTES:
            raise EntryFileError(f"{path}: {size} bytes is too large for an entry file")
        return path.read_bytes().decode("utf-8")
    except FileNotFoundError:
        raise EntryFileError(f"{path}: no such file") from None
    except UnicodeDecodeError as exc:
        raise EntryFileError(f"{path}: not UTF-8 text (byte {exc.start})") from None
    except OSError as exc:
        raise EntryFileError(f"{path}: cannot read: {exc.strerror}") from None


def read_entries(path: Path) -> list[Entry]:
    return load_entries(read_text(path), str(path))
