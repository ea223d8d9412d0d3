"""The two modals (add an entry, analyze a paste) and the parsing of their submissions.

Slack caps a modal text input at 3,000 characters, so prefilled evidence and signature YAML are
cut at a line boundary to fit; the full evidence stays in the thread it came from.
"""

from __future__ import annotations

import json
import re
from typing import Any

from pydantic import BaseModel

from kb.entry_yaml import dump_signatures, load_fragment
from kb.errors import EntryFileError
from kb.models import PLATFORMS, Entry, EntryError, validate_entry
from kb.signatures import Signature
from kb.versions import InvalidVersion, Version

INPUT_MAX = 3000
ADD_CALLBACK = "add_entry"
ANALYZE_CALLBACK = "analyze_paste"
ACTION = "value"

# Entry field (first part of a validation error path) -> the modal block that holds it.
FIELD_BLOCK = {
    "id": "entry_id",
    "title": "title",
    "symptom": "symptom",
    "root_cause": "root_cause",
    "fix": "fix",
    "affected_versions": "versions",
    "platforms": "platforms",
    "tags": "tags",
    "signatures": "signatures",
}
VERSIONS_HINT = (
    "One product per line: `PRODUCT [INTRODUCED] [fixed V1, V2]`, e.g. `oracle 12.2 fixed 19.14, "
    "21.4` or `oracle fixed 19.3`."
)


class Origin(BaseModel):
    """Where the modal was opened from, carried in private_metadata."""

    channel: str = ""
    thread_ts: str = ""


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


def add_entry_view(
    *,
    evidence: str = "",
    signatures: str = "",
    platforms: list[str] | None = None,
    origin: Origin | None = None,
) -> dict[str, Any]:
    """The add-entry modal, prefilled with evidence and proposed signatures when known."""
    options = [{"text": plain(p), "value": p} for p in PLATFORMS]
    chosen = [o for o in options if o["value"] in (platforms or [])]
    select: dict[str, Any] = {
        "type": "multi_static_select",
        "action_id": ACTION,
        "options": options,
        "placeholder": plain("solaris, linux, …"),
    }
    if chosen:
        select["initial_options"] = chosen
    blocks = [
        text_input("title", "Title", max_length=200, placeholder="What went wrong, in one line"),
        text_input(
            "entry_id",
            "Entry id",
            optional=True,
            max_length=100,
            hint="Lowercase words joined by dashes. Leave empty to derive it from the title.",
        ),
        text_input("symptom", "Symptom", multiline=True, placeholder="What people saw"),
        text_input("root_cause", "Root cause", multiline=True),
        text_input("fix", "Fix", multiline=True, placeholder="Patch, parameter, workaround"),
        text_input(
            "versions", "Affected versions", optional=True, multiline=True, hint=VERSIONS_HINT
        ),
        {
            "type": "input",
            "block_id": "platforms",
            "label": plain("Platforms"),
            "element": select,
        },
        text_input("tags", "Tags", optional=True, max_length=500, hint="Comma separated."),
        text_input(
            "signatures",
            "Signatures (YAML)",
            initial=signatures,
            optional=True,
            multiline=True,
            hint="Proposed from the evidence's facts: tighten the thresholds before saving. "
            "See docs/signatures.md for the language.",
        ),
        text_input(
            "evidence",
            "Evidence",
            initial=evidence,
            optional=True,
            multiline=True,
            hint="Kept with the symptom so readers see what the incident looked like.",
        ),
    ]
    return {
        "type": "modal",
        "callback_id": ADD_CALLBACK,
        "title": plain("Add to knowledge base"),
        "submit": plain("Create entry"),
        "close": plain("Cancel"),
        "private_metadata": (origin or Origin()).model_dump_json(),
        "blocks": blocks,
    }


def analyze_view(origin: Origin | None = None) -> dict[str, Any]:
    return {
        "type": "modal",
        "callback_id": ANALYZE_CALLBACK,
        "title": plain("Analyze evidence"),
        "submit": plain("Analyze"),
        "close": plain("Cancel"),
        "private_metadata": (origin or Origin()).model_dump_json(),
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


def parse_versions(text: str) -> list[dict[str, Any]]:
    """`oracle 12.2 fixed 19.14, 21.4` lines -> VersionRange data. ValueError names the line."""
    out = []
    for n, raw in enumerate(text.splitlines(), start=1):
        tokens = raw.replace(",", " ").split()
        if not tokens:
            continue
        product, rest = tokens[0].lower(), tokens[1:]
        if product in ("fixed", "from") or product[0].isdigit():
            raise ValueError(f"line {n}: start with the product, e.g. 'oracle 12.2 fixed 19.14'")
        if rest and rest[0].lower() == "from":
            rest = rest[1:]
        introduced = None
        if rest and rest[0].lower() != "fixed":
            introduced, rest = rest[0], rest[1:]
        if rest and rest[0].lower() != "fixed":
            raise ValueError(f"line {n}: expected 'fixed' after {introduced}, got '{rest[0]}'")
        fixed = rest[1:]
        if rest and not fixed:
            raise ValueError(f"line {n}: 'fixed' needs at least one version")
        for v in [introduced, *fixed]:
            if v is None:
                continue
            try:
                Version(v)
            except InvalidVersion:
                raise ValueError(f"line {n}: '{v}' is not a version") from None
        out.append({"product": product, "introduced": introduced, "fixed": fixed})
    return out


def parse_signatures(text: str) -> list[Any]:
    if not text:
        return []
    try:  # the entry files' reader: no aliases (YAML bombs), no duplicate keys, bounded nesting
        data = load_fragment(text)
    except EntryFileError as exc:
        raise ValueError(str(exc)) from None
    if data is None:
        return []
    if isinstance(data, dict) and "signatures" in data:
        data = data["signatures"]
    if isinstance(data, dict):
        data = [data]
    if not isinstance(data, list):
        raise ValueError("give a list of signatures")
    return data


def entry_from_view(view: dict[str, Any], author: str) -> tuple[Entry | None, dict[str, str]]:
    """Build the entry a submitted add-entry modal describes, or the errors to show per block."""
    values = view.get("state", {}).get("values", {})
    errors: dict[str, str] = {}
    title = field(values, "title")
    entry_id = field(values, "entry_id") or slugify(title)
    if not entry_id:
        errors["title"] = "Give a title with some letters or digits (the id is derived from it)."
    try:
        versions = parse_versions(field(values, "versions"))
    except ValueError as exc:
        versions = []
        errors["versions"] = str(exc)
    try:
        signatures = parse_signatures(field(values, "signatures"))
    except ValueError as exc:
        signatures = []
        errors["signatures"] = str(exc)
    symptom = field(values, "symptom")
    evidence = field(values, "evidence")
    if evidence and symptom:
        symptom += f"\n\nEvidence (from Slack):\n```\n{evidence}\n```"
    tags = [t.strip() for t in field(values, "tags").split(",") if t.strip()]
    data = {
        "id": entry_id,
        "title": title,
        "symptom": symptom,
        "root_cause": field(values, "root_cause"),
        "fix": field(values, "fix"),
        "affected_versions": versions,
        "platforms": selected(values, "platforms"),
        "tags": tags,
        "signatures": signatures,
        "author": author[:200],
    }
    try:
        entry = validate_entry(data)
    except EntryError as exc:
        for path, msg in exc.problems:
            top = re.split(r"[.\[]", path, maxsplit=1)[0] if path else ""
            block = FIELD_BLOCK.get(top, "title")
            if block == "entry_id" and not field(values, "entry_id"):
                block = "title"
            text = f"{path}: {msg}" if path and path != top else msg
            errors[block] = (errors[block] + "; " + text) if block in errors else text
        return None, {k: v[:500] for k, v in errors.items()}
    if errors:
        return None, errors
    return entry, {}
