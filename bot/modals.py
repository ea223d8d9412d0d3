"""The entry modals (add an entry, edit one) and the analyze modal, and the parsing of their
submissions.

Slack caps a modal text input at 3,000 characters and a view at 100 blocks. Prefilled evidence
and proposed signatures are cut at a line boundary to fit (the full evidence stays in the thread
it came from). An entry being edited is never cut: prose longer than an input continues in more
inputs cut at line ends, and the list fields (differential, next commands, signatures) are the
entry file's YAML (kb.entry_yaml writes and reads it) split between items. An entry that still
does not fit (a single line over 3,000 characters, more than 100 inputs) is edited on the web.
"""

from __future__ import annotations

import json
import re
from typing import Any

from pydantic import BaseModel

from kb.entry_yaml import dump_items, dump_signatures, load_field
from kb.errors import EntryFileError
from kb.models import PLATFORMS, Entry, EntryError, validate_entry
from kb.signatures import Signature
from kb.versions import InvalidVersion, Version

INPUT_MAX = 3000
MAX_BLOCKS = 100
ADD_CALLBACK = "add_entry"
EDIT_CALLBACK = "edit_entry"
ANALYZE_CALLBACK = "analyze_paste"
ACTION = "value"

PROSE = ("symptom", "root_cause", "fix")  # text, continued in more inputs at line ends
YAML_FIELDS = ("differential", "next_commands", "signatures")  # entry_yaml's YAML, split by item
# Entry field (first part of a validation error path) -> the modal field that holds it.
FIELD_BLOCK = {
    "id": "entry_id",
    "title": "title",
    "symptom": "symptom",
    "root_cause": "root_cause",
    "fix": "fix",
    "differential": "differential",
    "affected_versions": "versions",
    "platforms": "platforms",
    "tags": "tags",
    "references": "references",
    "next_commands": "next_commands",
    "signatures": "signatures",
}
VERSIONS_HINT = (
    "One product per line: `PRODUCT [INTRODUCED] [fixed V1, V2] [observed V3] [note: text]`, e.g. "
    "`oracle 12.2 fixed 19.14, 21.4` or `oracle fixed 19.3`. `fixed` is a documented fix; "
    "`observed` a release where it was seen gone without one."
)
DIFFERENTIAL_HINT = (
    "Look-alike incidents and the check that tells each apart: `- entry: ID or name` then "
    "`  check: what to look at`."
)
COMMANDS_HINT = (
    "One item per command: command, platform, why, and when they apply min_version, licence "
    "(+ free_alternative), intrusive: true (+ intrusive_why). Bound tracers in time "
    "(`timeout 10 strace -c ...`)."
)
SIGNATURES_HINT = (
    "Proposed from the evidence's facts: tighten the thresholds before saving. "
    "See docs/signatures.md for the language."
)


class Origin(BaseModel):
    """Where the modal was opened from, carried in private_metadata."""

    channel: str = ""
    thread_ts: str = ""
    entry_id: str = ""  # the entry an edit modal edits
    rev: int = 0  # its revision when the modal opened

    def metadata(self) -> str:
        """private_metadata: the edit fields only on an edit modal."""
        return self.model_dump_json(exclude=None if self.entry_id else {"entry_id", "rev"})


def clip_lines(text: str, limit: int = INPUT_MAX) -> str:
    """Cut `text` to `limit` characters at a line boundary."""
    if len(text) <= limit:
        return text
    cut = text[:limit]
    return cut[: cut.rfind("\n")] if "\n" in cut else cut


def plain(text: str) -> dict[str, Any]:
    return {"type": "plain_text", "text": text}


def text_input(
    block_id: str,
    label: str,
    *,
    initial: str = "",
    multiline: bool = False,
    optional: bool = False,
    max_length: int = INPUT_MAX,
    hint: str = "",
    placeholder: str = "",
) -> dict[str, Any]:
    element: dict[str, Any] = {
        "type": "plain_text_input",
        "action_id": ACTION,
        "multiline": multiline,
        "max_length": max_length,
    }
    if initial:
        element["initial_value"] = clip_lines(initial, max_length)
    if placeholder:
        element["placeholder"] = plain(placeholder[:150])
    block: dict[str, Any] = {
        "type": "input",
        "block_id": block_id,
        "label": plain(label),
        "optional": optional,
        "element": element,
    }
    if hint:
        block["hint"] = plain(hint[:2000])
    return block


def signatures_yaml(signatures: list[Signature], limit: int = INPUT_MAX) -> str:
    """Proposed signatures as the YAML an entry file would hold, as many as fit in `limit`."""
    shown = list(signatures)
    while shown:
        text = dump_signatures(shown)
        if len(text) <= limit:
            return text
        shown.pop()
    return ""


def _block_id(name: str, part: int) -> str:
    """`symptom`, `symptom_2`, `symptom_3`: a field too long for one input continues in more."""
    return name if part == 1 else f"{name}_{part}"


def pack(items: list[str], joiner: str, limit: int = INPUT_MAX) -> list[list[int]] | None:
    """Consecutive item indexes grouped so each group joined by `joiner` fits `limit`; None
    when one item alone is too long for an input (the modal cannot hold that field)."""
    groups: list[list[int]] = []
    size = 0
    for n, item in enumerate(items):
        if len(item) > limit:
            return None
        if groups and size + len(joiner) + len(item) <= limit:
            groups[-1].append(n)
            size += len(joiner) + len(item)
        else:
            groups.append([n])
            size = len(item)
    return groups


class TooLarge(ValueError):
    """The entry does not fit Slack's modal limits; the web editor holds any entry."""


def _text_parts(name: str, label: str, text: str, *, optional: bool, hint: str = "") -> list:
    """A prose or line-list field as one input, or several cut at line ends."""
    lines = text.split("\n") if text else [""]
    groups = pack(lines, "\n")
    if groups is None:
        raise TooLarge(f"{label} has a line longer than {INPUT_MAX:,} characters")
    return [
        text_input(
            _block_id(name, n),
            label if n == 1 else f"{label} (continued, part {n})",
            initial="\n".join(lines[i] for i in group),
            multiline=True,
            optional=optional or n > 1,
            hint=hint if n == 1 else "",
        )
        for n, group in enumerate(groups, start=1)
    ]


def _yaml_parts(name: str, label: str, entry: Entry | None, hint: str, extra: str = "") -> list:
    """A list field as YAML (entry_yaml writes it), split between items over as many inputs as
    it needs, with one more empty input to add items when the last one is nearly full."""
    count = len(getattr(entry, name)) if entry is not None else 0
    items = [dump_items(name, entry, n, n + 1) for n in range(count)] if entry else []
    if extra and not items:
        items = [extra]
    groups = pack([i.rstrip("\n") for i in items], "\n")
    if groups is None:
        raise TooLarge(f"one of the {label.lower()} is longer than {INPUT_MAX:,} characters")
    texts = ["\n".join(items[i].rstrip("\n") for i in group) for group in groups] or [""]
    if len(texts[-1]) > INPUT_MAX // 2:
        texts.append("")
    return [
        text_input(
            _block_id(name, n),
            label if n == 1 else f"{label} (continued, part {n})",
            initial=text,
            optional=True,
            multiline=True,
            hint=hint if n == 1 else "Continues the list above; items may move between parts.",
        )
        for n, text in enumerate(texts, start=1)
    ]


def format_versions(entry: Entry) -> str:
    """Affected versions in the line form parse_versions reads."""
    lines = []
    for r in entry.affected_versions:
        words = [r.product]
        if r.introduced:
            words.append(r.introduced)
        if r.fixed:
            words.append("fixed " + ", ".join(r.fixed))
        if r.observed_fixed:
            words.append("observed " + ", ".join(r.observed_fixed))
        if r.note:
            words.append("note: " + r.note)
        lines.append(" ".join(words))
    return "\n".join(lines)


def entry_view(
    *,
    entry: Entry | None = None,
    evidence: str = "",
    signatures: str = "",
    platforms: list[str] | None = None,
    origin: Origin | None = None,
) -> dict[str, Any]:
    """The add-entry modal (no `entry`: empty but for evidence and proposed signatures) or the
    edit-entry modal (every field of `entry`). Each plain_text_input holds at most 3,000
    characters, so long prose continues in further inputs cut at line ends, and the list fields
    (differential, next commands, signatures) are YAML written by kb.entry_yaml, split between
    items. Raises TooLarge when the entry cannot fit (an over-long line, more than 100 blocks)."""
    e = entry
    options = [{"text": plain(p), "value": p} for p in PLATFORMS]
    by_value = {o["value"]: o for o in options}  # in the entry's order: an edit keeps it
    chosen = [by_value[p] for p in (e.platforms if e else platforms or []) if p in by_value]
    select: dict[str, Any] = {
        "type": "multi_static_select",
        "action_id": ACTION,
        "options": options,
        "placeholder": plain("solaris, linux, …"),
    }
    if chosen:
        select["initial_options"] = chosen
    blocks = [
        text_input(
            "title",
            "Title",
            initial=e.title if e else "",
            max_length=200,
            placeholder="What went wrong, in one line",
        )
    ]
    if e is None:
        blocks.append(
            text_input(
                "entry_id",
                "Entry id",
                optional=True,
                max_length=100,
                hint="Lowercase words joined by dashes. Leave empty to derive it from the title.",
            )
        )
    for name in PROSE:
        label = name.replace("_", " ").capitalize()
        blocks += _text_parts(name, label, getattr(e, name) if e else "", optional=False)
    blocks += _yaml_parts("differential", "Differential (YAML)", e, DIFFERENTIAL_HINT)
    blocks += _text_parts(
        "versions",
        "Affected versions",
        format_versions(e) if e else "",
        optional=True,
        hint=VERSIONS_HINT,
    )
    blocks.append(
        {"type": "input", "block_id": "platforms", "label": plain("Platforms"), "element": select}
    )
    tags = ", ".join(e.tags) if e else ""
    if len(tags) > INPUT_MAX:
        raise TooLarge(f"the tags are longer than {INPUT_MAX:,} characters")
    blocks.append(
        text_input(
            "tags",
            "Tags",
            initial=tags,
            optional=True,
            max_length=INPUT_MAX,
            hint="Comma separated.",
        )
    )
    blocks += _text_parts(
        "references",
        "References",
        "\n".join(e.references) if e else "",
        optional=True,
        hint="One http(s) URL per line.",
    )
    blocks += _yaml_parts("next_commands", "Next commands (YAML)", e, COMMANDS_HINT)
    blocks += _yaml_parts("signatures", "Signatures (YAML)", e, SIGNATURES_HINT, signatures)
    if e is None:
        blocks.append(
            text_input(
                "evidence",
                "Evidence",
                initial=evidence,
                optional=True,
                multiline=True,
                hint="Kept with the symptom so readers see what the incident looked like.",
            )
        )
    if len(blocks) > MAX_BLOCKS:
        raise TooLarge(f"the entry needs {len(blocks)} inputs; a Slack modal holds {MAX_BLOCKS}")
    return {
        "type": "modal",
        "callback_id": EDIT_CALLBACK if e else ADD_CALLBACK,
        "title": plain("Edit entry" if e else "Add to knowledge base"),
        "submit": plain("Save changes" if e else "Create entry"),
        "close": plain("Cancel"),
        "private_metadata": (origin or Origin()).metadata(),
        "blocks": blocks,
    }


def add_entry_view(
    *,
    evidence: str = "",
    signatures: str = "",
    platforms: list[str] | None = None,
    origin: Origin | None = None,
) -> dict[str, Any]:
    """The add-entry modal, prefilled with evidence and proposed signatures when known."""
    return entry_view(evidence=evidence, signatures=signatures, platforms=platforms, origin=origin)


def edit_entry_view(entry: Entry, *, rev: int, origin: Origin | None = None) -> dict[str, Any]:
    """The edit-entry modal for `entry` at revision `rev`, proved to give `entry` back when it
    is submitted unchanged. TooLarge when it cannot (the caller points to the web editor)."""
    origin = (origin or Origin()).model_copy(update={"entry_id": entry.id, "rev": rev})
    view = entry_view(entry=entry, origin=origin)
    back, errors = entry_from_view({**view, "state": {"values": initial_state(view)}}, entry.author)
    if back is None or comparable(back) != comparable(entry):
        problem = "; ".join(errors.values()) or "a field would not survive the form unchanged"
        raise TooLarge(problem)
    return view


def comparable(entry: Entry) -> dict[str, Any]:
    """What an edit may change: everything but who saved it and when."""
    return entry.model_dump(mode="json", exclude={"author", "created", "updated"})


def initial_state(view: dict[str, Any]) -> dict[str, Any]:
    """The state Slack sends for `view` submitted without a change."""
    state: dict[str, Any] = {}
    for block in view["blocks"]:
        if block.get("type") != "input":
            continue
        element = block["element"]
        if element["type"] == "plain_text_input":
            value = {"type": "plain_text_input", "value": element.get("initial_value")}
        else:
            value = {
                "type": element["type"],
                "selected_options": element.get("initial_options", []),
            }
        state[block["block_id"]] = {ACTION: value}
    return state


def too_large_view(entry_id: str, url: str, why: str) -> dict[str, Any]:
    """Said instead of the edit modal when the entry does not fit one."""
    text = f"This entry cannot be edited in Slack ({why[:500]}). Edit it on the web: {url}"
    return {
        "type": "modal",
        "title": plain("Edit entry"),
        "close": plain("Close"),
        "blocks": [{"type": "section", "text": plain(text[:3000])}],
    }


def analyze_view(origin: Origin | None = None) -> dict[str, Any]:
    return {
        "type": "modal",
        "callback_id": ANALYZE_CALLBACK,
        "title": plain("Analyze evidence"),
        "submit": plain("Analyze"),
        "close": plain("Cancel"),
        "private_metadata": (origin or Origin()).metadata(),
        "blocks": [
            text_input(
                "evidence",
                "Evidence",
                multiline=True,
                hint="tkprof, truss/strace, mpstat, pstack/DTrace or a wait-event table. Slack "
                "forms hold 3,000 characters: upload bigger captures as a file in a DM with me.",
            )
        ],
    }


# -- reading submissions ---------------------------------------------------------------------------


def origin_of(view: dict[str, Any]) -> Origin:
    try:
        return Origin.model_validate(json.loads(view.get("private_metadata") or "{}"))
    except ValueError:
        return Origin()


def field(values: dict[str, Any], block_id: str) -> str:
    state = values.get(block_id, {}).get(ACTION, {})
    return (state.get("value") or "").strip()


def selected(values: dict[str, Any], block_id: str) -> list[str]:
    state = values.get(block_id, {}).get(ACTION, {})
    return [o.get("value", "") for o in state.get("selected_options") or []]


def slugify(text: str, limit: int = 60) -> str:
    slug = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")
    return slug[:limit].rstrip("-")


_NOTE = re.compile(r"(?:^|\s)note:\s*", re.IGNORECASE)
_LISTS = {"fixed": "fixed", "observed": "observed_fixed"}


def parse_versions(text: str) -> list[dict[str, Any]]:
    """`oracle 12.2 fixed 19.14, 21.4 observed 19.20 note: text` lines -> VersionRange data.
    ValueError names the line."""
    out = []
    for n, raw in enumerate(text.splitlines(), start=1):
        note = ""
        if m := _NOTE.search(raw):
            raw, note = raw[: m.start()], raw[m.end() :].strip()
        tokens = raw.replace(",", " ").split()
        if not tokens:
            if note:
                raise ValueError(
                    f"line {n}: start with the product, e.g. 'oracle 12.2 fixed 19.14'"
                )
            continue
        product, rest = tokens[0].lower(), tokens[1:]
        if product in ("fixed", "from", "observed") or product[0].isdigit():
            raise ValueError(f"line {n}: start with the product, e.g. 'oracle 12.2 fixed 19.14'")
        if rest and rest[0].lower() == "from":
            rest = rest[1:]
        introduced = None
        if rest and rest[0].lower() not in _LISTS:
            introduced, rest = rest[0], rest[1:]
        lists: dict[str, list[str]] = {"fixed": [], "observed_fixed": []}
        said: list[str] = []
        for word in rest:
            if word.lower() in _LISTS:
                if word.lower() in said:
                    raise ValueError(f"line {n}: '{word}' is given twice")
                said.append(word.lower())
                continue
            if not said:
                raise ValueError(f"line {n}: expected 'fixed' after {introduced}, got '{word}'")
            lists[_LISTS[said[-1]]].append(word)
        for word in said:
            if not lists[_LISTS[word]]:
                raise ValueError(f"line {n}: '{word}' needs at least one version")
        for v in [introduced, *lists["fixed"], *lists["observed_fixed"]]:
            if v is None:
                continue
            try:
                Version(v)
            except InvalidVersion:
                raise ValueError(f"line {n}: '{v}' is not a version") from None
        item: dict[str, Any] = {
            "product": product,
            "introduced": introduced,
            "fixed": lists["fixed"],
        }
        if lists["observed_fixed"]:
            item["observed_fixed"] = lists["observed_fixed"]
        if note:
            item["note"] = note
        out.append(item)
    return out


def parse_list(name: str, text: str) -> list[Any]:
    """One YAML part of a list field (differential, next_commands, signatures) as a list."""
    if not text.strip():
        return []
    try:  # the entry files' reader: no aliases (YAML bombs), no duplicate keys, bounded nesting
        data = load_field(name, text)
    except EntryFileError as exc:
        raise ValueError(str(exc)) from None
    if data is None:
        return []
    if isinstance(data, dict) and name in data:
        data = data[name]
    if isinstance(data, dict):
        data = [data]
    if not isinstance(data, list):
        raise ValueError("give a YAML list, one item starting with '- '")
    return data


def parse_signatures(text: str) -> list[Any]:
    return parse_list("signatures", text)


def parts(values: dict[str, Any], name: str) -> list[tuple[str, str]]:
    """(block id, raw text) of a field and its continuations, in order."""
    out = []
    n = 1
    while (bid := _block_id(name, n)) in values:
        state = values[bid].get(ACTION, {})
        out.append((bid, (state.get("value") or "").replace("\r\n", "\n")))
        n += 1
    return out


NOUN = {
    "differential": "look-alike",
    "affected_versions": "line",
    "references": "line",
    "next_commands": "command",
    "signatures": "signature",
}


class _Reader:
    """Reads a submitted view field by field, remembering which block holds which list item so
    a validation problem is shown on the input the person has to change."""

    def __init__(self, values: dict[str, Any]) -> None:
        self.values = values
        self.errors: dict[str, str] = {}
        self.where: dict[str, list[tuple[str, int, int]]] = {}  # field -> (block, start, stop)

    def error(self, block: str, text: str) -> None:
        self.errors[block] = (self.errors[block] + "; " + text) if block in self.errors else text

    def prose(self, name: str) -> str:
        return "\n".join(t for _, t in parts(self.values, name)).strip()

    def items(self, name: str, field_name: str, parse: Any) -> list[Any]:
        out: list[Any] = []
        for bid, text in parts(self.values, name):
            try:
                got = parse(text)
            except ValueError as exc:
                self.error(bid, str(exc))
                continue
            self.where.setdefault(field_name, []).append((bid, len(out), len(out) + len(got)))
            out += got
        return out

    def block_of(self, path: str) -> tuple[str, str]:
        """(block, message prefix) for a validation error path such as next_commands[3].why."""
        top = re.split(r"[.\[]", path, maxsplit=1)[0] if path else ""
        block = FIELD_BLOCK.get(top, "title")
        m = re.match(r"^\w+\[(\d+)\]\.?(.*)$", path)
        if m and top in self.where:
            index = int(m[1])
            for bid, start, stop in self.where[top]:
                if start <= index < stop:
                    rest = f" {m[2]}" if m[2] else ""
                    return bid, f"{NOUN.get(top, 'item')} {index - start + 1}{rest}"
        return block, path if path and path != top else ""


def entry_from_view(view: dict[str, Any], author: str) -> tuple[Entry | None, dict[str, str]]:
    """Build the entry a submitted add-entry or edit-entry modal describes, or the errors to
    show per block."""
    values = view.get("state", {}).get("values", {})
    editing = origin_of(view).entry_id if view.get("callback_id") == EDIT_CALLBACK else ""
    r = _Reader(values)
    title = field(values, "title")
    entry_id = editing or field(values, "entry_id") or slugify(title)
    if not entry_id:
        r.error("title", "Give a title with some letters or digits (the id is derived from it).")
    versions = r.items("versions", "affected_versions", parse_versions)
    references = r.items(
        "references", "references", lambda t: [x.strip() for x in t.splitlines() if x.strip()]
    )
    lists = {name: r.items(name, name, lambda t, n=name: parse_list(n, t)) for name in YAML_FIELDS}
    symptom = r.prose("symptom")
    evidence = field(values, "evidence")
    if evidence and symptom:
        symptom += f"\n\nEvidence (from Slack):\n```\n{evidence}\n```"
    tags = [t.strip() for t in field(values, "tags").split(",") if t.strip()]
    data = {
        "id": entry_id,
        "title": title,
        "symptom": symptom,
        "root_cause": r.prose("root_cause"),
        "fix": r.prose("fix"),
        "differential": lists["differential"],
        "affected_versions": versions,
        "platforms": selected(values, "platforms"),
        "tags": tags,
        "references": references,
        "next_commands": lists["next_commands"],
        "signatures": lists["signatures"],
        "author": author[:200],
    }
    try:
        entry = validate_entry(data)
    except EntryError as exc:
        for path, msg in exc.problems:
            block, prefix = r.block_of(path)
            if block == "entry_id" and not field(values, "entry_id"):
                block = "title"
            r.error(block, f"{prefix}: {msg}" if prefix else msg)
        return None, {k: v[:500] for k, v in r.errors.items()}
    if r.errors:
        return None, r.errors
    return entry, {}
