"""The postmortem form: HTML fields <-> entry data, and reading form posts within size caps."""

from __future__ import annotations

import re
from typing import Any, ClassVar, Self
from urllib.parse import unquote_to_bytes

from fastapi import Request
from pydantic import BaseModel, Field
from starlette.datastructures import FormData
from starlette.exceptions import HTTPException

from kb.entry_yaml import FIELD_ORDER, dump_signatures, load_fragment
from kb.errors import EntryFileError
from kb.models import PLATFORMS, Entry
from kb.web import csrf
from kb.web.auth import require_page_writer
from kb.web.state import web

MAX_SIGNATURES_YAML = 256 * 1024
MAX_FIELDS = 2000  # fields in one form post
MAX_FILES = 2  # files in one form post
_ROW = re.compile(r"^(versions|commands)-(\d{1,3})-(\w+)$")
_SPLIT = re.compile(r"[,\s]+")


async def read_writer_form(request: Request) -> tuple[FormData, str]:
    """A form post that changes something: the form, once its CSRF token checks out, and the
    signed-in writer making the change (401 for anyone else)."""
    form = await read_form(request)
    csrf.check(request, form)
    return form, require_page_writer(request)


async def read_form(request: Request, *, limit: int | None = None) -> FormData:
    """Parse a form post. Text fields may be as large as the body cap (starlette's default
    per-field limit is 1 MB, smaller than a pasted capture); uploaded files are spooled to disk
    and bounded only by the request cap."""
    cap = limit or web(request).settings.max_body_bytes
    ctype = request.headers.get("content-type", "").split(";", 1)[0].strip().lower()
    if ctype == "application/x-www-form-urlencoded":
        body = await request.body()  # within the form cap: BodyLimit (kb/web/limits.py)
        return parse_urlencoded(body, max_fields=MAX_FIELDS, max_field_bytes=cap)
    try:
        return await request.form(max_part_size=cap, max_fields=MAX_FIELDS, max_files=MAX_FILES)
    except HTTPException as exc:
        if exc.status_code == 400 and "exceeded maximum size" in str(exc.detail):
            raise _field_too_large(cap) from None
        raise


def _field_too_large(cap: int) -> HTTPException:
    return HTTPException(
        413,
        f"A text field is larger than this server accepts ({cap / 1048576:.1f} MB). "
        "Upload a large capture as a file instead of pasting it.",
    )


def parse_urlencoded(body: bytes, *, max_fields: int, max_field_bytes: int) -> FormData:
    """An application/x-www-form-urlencoded body as FormData, in memory linear in its size.
    starlette decodes each field with urllib's unquote_plus, which splits the text at every
    '%': a 10 MB field of `%7B` became millions of small objects, ~770 MB and seconds of CPU,
    for anyone (forms are read before the login and CSRF checks). Here a field is unquoted a
    64 KB slice at a time, so the pieces are never more than one slice's worth. Field count
    and size are checked on the raw bytes first (413/400 with the limit)."""
    items: list[tuple[str, str]] = []
    for match in _PAIR.finditer(body):  # one pair at a time: b"a&a&..." is no list of millions
        if len(items) == max_fields:
            raise HTTPException(400, f"Too many form fields (at most {max_fields}).")
        if match.end() - match.start() > max_field_bytes:
            raise _field_too_large(max_field_bytes)
        name, _, value = match.group().partition(b"=")
        items.append((_unquote_plus(name), _unquote_plus(value)))
    return FormData(items)


_SLICE = 64 * 1024
_PAIR = re.compile(rb"[^&]+")


def _unquote_plus(raw: bytes) -> str:
    """urllib.parse.unquote_plus (UTF-8, undecodable bytes replaced), a slice at a time."""
    raw = raw.replace(b"+", b" ")
    if b"%" not in raw:
        return raw.decode("utf-8", "replace")
    out = bytearray()
    start, size = 0, len(raw)
    while start < size:
        end = min(start + _SLICE, size)
        if end < size:  # never cut a %XX escape in two
            cut = raw.rfind(b"%", end - 2, end)
            if cut > start:
                end = cut
        out += unquote_to_bytes(raw[start:end])
        start = end
    return out.decode("utf-8", "replace")


def load_signatures(text: str) -> tuple[list[Any], str | None]:
    """(signature data, error message) from the signatures textarea."""
    if len(text.encode()) > MAX_SIGNATURES_YAML:
        return [], f"signatures YAML is larger than {MAX_SIGNATURES_YAML // 1024} KB"
    if not text.strip():
        return [], None
    try:
        data = load_fragment(text)  # the entry files' reader: one set of YAML rules
    except EntryFileError as exc:
        return [], str(exc)
    if data is None:
        return [], None
    if isinstance(data, dict):
        data = [data]
    if not isinstance(data, list):
        return [], "signatures must be a YAML list of signatures (each starting with '- name:')"
    return data, None


class _FormRow(BaseModel):
    """A list item of an entry as the form edits it, one text box per field. `_LISTS` are the
    item's lists, written comma-separated; an empty box of `_OPTIONAL` is left out, so the item's
    default applies. One mapping both ways (from_item, item_data) for every kind of row."""

    _LISTS: ClassVar[frozenset[str]] = frozenset()
    _OPTIONAL: ClassVar[frozenset[str]] = frozenset()

    @classmethod
    def from_item(cls, item: BaseModel) -> Self:
        values = {}
        for name in cls.model_fields:
            value = getattr(item, name)
            values[name] = ", ".join(value) if name in cls._LISTS else value or ""
        return cls(**values)

    def item_data(self) -> dict[str, Any]:
        data: dict[str, Any] = {}
        for name in type(self).model_fields:
            value = getattr(self, name)
            if name in self._LISTS:
                data[name] = [v for v in _SPLIT.split(value) if v]
            elif value or name not in self._OPTIONAL:
                data[name] = value
        return data


class VersionRow(_FormRow):
    """One affected version range (kb.models.VersionRange); product 'oracle' when left empty."""

    _LISTS = frozenset({"fixed", "observed_fixed"})
    _OPTIONAL = frozenset({"product", "introduced"})

    product: str = "oracle"
    introduced: str = ""
    fixed: str = ""
    observed_fixed: str = ""
    note: str = ""

    def blank(self) -> bool:
        return not (self.introduced or self.fixed or self.observed_fixed or self.note)


class CommandRow(_FormRow):
    """One next command (kb.models.NextCommand) as the form edits it: the command's conditions
    are text boxes, and a command is intrusive exactly when its 'intrusive because' box says
    why."""

    _OPTIONAL = frozenset({"min_version"})

    platform: str = "any"
    command: str = ""
    why: str = ""
    min_version: str = ""
    licence: str = ""
    free_alternative: str = ""
    intrusive_why: str = ""

    def blank(self) -> bool:
        return not (self.command or self.why)

    def to_data(self) -> dict[str, Any]:
        return {**self.item_data(), "intrusive": bool(self.intrusive_why)}


class EntryForm(BaseModel):
    """What the form shows and posts: lists as text, rows as rows."""

    id: str = ""
    title: str = ""
    symptom: str = ""
    root_cause: str = ""
    fix: str = ""
    differential: str = ""
    versions: list[VersionRow] = Field(default_factory=list)
    platforms: list[str] = Field(default_factory=list)
    tags: str = ""
    references: str = ""
    commands: list[CommandRow] = Field(default_factory=list)
    signatures_yaml: str = ""
    evidence: str = ""
    base_rev: str = ""

    @classmethod
    def from_entry(cls, entry: Entry) -> EntryForm:
        return cls(
            id=entry.id,
            title=entry.title,
            symptom=entry.symptom,
            root_cause=entry.root_cause,
            fix=entry.fix,
            differential="\n".join(
                f"{d.entry}: {d.check}".replace("\n", "\n  ") for d in entry.differential
            ),
            versions=[VersionRow.from_item(v) for v in entry.affected_versions],
            platforms=list(entry.platforms),
            tags=", ".join(entry.tags),
            references="\n".join(entry.references),
            commands=[CommandRow.from_item(c) for c in entry.next_commands],
            signatures_yaml=dump_signatures(entry.signatures),
        )

    @classmethod
    def from_form(cls, form: FormData) -> EntryForm:
        def text(name: str) -> str:
            v = form.get(name)
            return v.replace("\r\n", "\n").strip() if isinstance(v, str) else ""

        rows: dict[str, dict[int, dict[str, str]]] = {"versions": {}, "commands": {}}
        for key, value in form.multi_items():
            m = _ROW.match(key)
            if m and isinstance(value, str):
                rows[m[1]].setdefault(int(m[2]), {})[m[3]] = _cell(value, m[3])
        versions = [
            VersionRow(**_known(VersionRow, r)) for _, r in sorted(rows["versions"].items())
        ]
        commands = [
            CommandRow(**_known(CommandRow, r)) for _, r in sorted(rows["commands"].items())
        ]
        return cls(
            id=text("id"),
            title=text("title"),
            symptom=text("symptom"),
            root_cause=text("root_cause"),
            fix=text("fix"),
            differential=text("differential"),
            versions=[v for v in versions if not v.blank()],
            platforms=[
                p for p in form.getlist("platforms") if isinstance(p, str) and p in PLATFORMS
            ],
            tags=text("tags"),
            references=text("references"),
            commands=[c for c in commands if not c.blank()],
            signatures_yaml=text("signatures_yaml"),
            evidence=text("evidence"),
            base_rev=text("base_rev"),
        )

    def to_data(
        self, *, author: str, created: Any = None
    ) -> tuple[dict[str, Any], list[tuple[str, str]]]:
        """Raw entry data for validate_entry, plus problems found before validation."""
        problems: list[tuple[str, str]] = []
        signatures, error = load_signatures(self.signatures_yaml)
        if error:
            problems.append(("signatures", error))
        data: dict[str, Any] = {
            "id": self.id,
            "title": self.title,
            "symptom": self.symptom,
            "root_cause": self.root_cause,
            "fix": self.fix,
            "differential": _differential(self.differential),
            "affected_versions": [v.item_data() for v in self.versions],
            "platforms": self.platforms,
            "tags": [t for t in _SPLIT.split(self.tags) if t],
            "references": [r.strip() for r in self.references.splitlines() if r.strip()],
            "next_commands": [c.to_data() for c in self.commands],
            "signatures": signatures,
            "author": author,
        }
        if created is not None:
            data["created"] = created
        return data, problems


def _cell(value: str, name: str) -> str:
    """One cell of a row as typed (a textarea posts CRLF). A command written on several lines
    (a here-document) keeps the line end it ends with, as the entry file holds it, so an entry
    saved unchanged from the form is the entry it was."""
    value = value.replace("\r\n", "\n")
    text = value.strip()
    if name == "command" and "\n" in text and value.rstrip(" \t").endswith("\n"):
        return text + "\n"
    return text


def _differential(text: str) -> list[dict[str, str]]:
    """'entry-or-name: the check that tells it apart', one per line; an indented line continues
    the check above it (a check written on several lines). A line without a colon is kept whole
    as the check, so validation names it rather than the form dropping it."""
    out: list[dict[str, str]] = []
    for line in text.splitlines():
        if not line.strip():
            continue
        if out and line[:1].isspace():
            out[-1]["check"] += "\n" + line.removeprefix("  ")
            continue
        name, sep, check = line.partition(":")
        out.append(
            {"entry": name.strip(), "check": check.strip()}
            if sep
            else {"entry": "", "check": line.strip()}
        )
    return out


def _known(model: type[BaseModel], row: dict[str, str]) -> dict[str, str]:
    return {k: v for k, v in row.items() if k in model.model_fields}


# the fields the editor has a box for: the entry's own but those the store keeps, and the evidence
FORM_FIELDS = (frozenset(FIELD_ORDER) - {"author", "created", "updated"}) | {"evidence"}


# pydantic's messages, said the way a person filling in the form reads them. Anything not listed
# (our own validators already write in words) is shown as it is.
_IN_WORDS: list[tuple[re.Pattern[str], Any]] = [
    (re.compile(r"^Field required$"), lambda m, f: "This is required."),
    (
        re.compile(r"^String should have at least (\d+) characters?$"),
        lambda m, f: "This is required." if m[1] == "1" else f"Write at least {m[1]} characters.",
    ),
    (
        re.compile(r"^String should have at most (\d+) characters?$"),
        lambda m, f: f"Too long: at most {int(m[1]):,} characters.",
    ),
    (
        re.compile(r"^String should match pattern '.*'$"),
        lambda m, f: (
            "Use lower-case letters, digits and hyphens, starting with a letter or digit "
            "(e.g. log-file-sync-commit-per-row)."
            if f == "id"
            else "Use lower-case letters, digits and hyphens only."
        ),
    ),
    (
        re.compile(r"^List should have at least 1 item.*$"),
        lambda m, f: "Choose at least one." if f == "platforms" else "Add at least one.",
    ),
    (
        re.compile(r"^List should have at most (\d+) items?.*$"),
        lambda m, f: f"Too many: at most {m[1]}.",
    ),
    (re.compile(r"^Input should be (.+)$"), lambda m, f: f"Must be {m[1]}."),
    (
        re.compile(r"^Extra inputs are not permitted$"),
        lambda m, f: "This field is not part of an entry.",
    ),
]


def in_words(msg: str, field: str) -> str:
    """A validation message as a sentence for the form (pydantic's wording replaced)."""
    for rx, say in _IN_WORDS:
        if m := rx.match(msg):
            return say(m, field)
    return msg


def problems_by_field(problems: list[tuple[str, str]]) -> dict[str, list[str]]:
    """Group validation problems under the form field they belong to ('' for the rest), each in
    words a person filling in the form understands."""
    out: dict[str, list[str]] = {}
    for path, msg in problems:
        msg = in_words(msg, re.split(r"[.\[]", path, maxsplit=1)[0] if path else "")
        head = re.split(r"[.\[]", path, maxsplit=1)[0] if path else ""
        rest = path[len(head) :].lstrip(".")
        key = head if head in FORM_FIELDS else ""
        rest = re.sub(r"^\[(\d+)\]", lambda m: f"row {int(m[1]) + 1}", rest)
        if key == "signatures":
            rest = rest.replace("row ", "signature ", 1)
        text = f"{rest}: {msg}" if rest else msg
        if not key and path:
            text = f"{path}: {msg}"
        out.setdefault(key, []).append(text)
    return out
