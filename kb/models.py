"""The incident entry: what a team learned in a postmortem, in a shape perfkb can match against."""

# Annotations are evaluated here, not kept as strings (no `from __future__ import annotations`):
# pydantic compiled each string field annotation (typing.ForwardRef) on every start (issue #19).
import re
from datetime import UTC, datetime
from typing import Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from ingest.model import new_list
from kb.errors import EntryError
from kb.search_query import PLATFORMS  # defined there: `perfkb search` checks platform: without us
from kb.signatures import Signature, reject_controls
from kb.versions import InvalidVersion, Version

Platform = Literal["solaris", "linux", "aix", "hpux", "windows", "any"]
SLUG = r"^[a-z0-9]+(?:-[a-z0-9]+)*$"

# Limits on what one entry may hold (docs/signatures.md, docs/security.md): every surface that
# writes an entry validates it through Entry, so these hold for the CLI, the web form, the API
# and the Slack modal alike. The starter KB's largest entry is far inside each (6 signatures,
# 8 tags of at most 23 characters, 10 commands, 1,300-character prose).
MAX_SIGNATURES = 50
MAX_TAGS = 50
MAX_TAG_LENGTH = 64
MAX_COMMANDS = 50
MAX_REFERENCES = 50
MAX_REFERENCE_LENGTH = 2000
MAX_VERSION_RANGES = 50
MAX_DIFFERENTIAL = 50
MAX_FIXED = 50
MAX_VERSION_LENGTH = 40
MAX_PROSE = 50_000  # characters in symptom, root_cause, fix
MAX_LINE = 200  # characters in a title or an author
TAG = re.compile(r"[a-z0-9][a-z0-9._:+-]*")


def _now() -> datetime:
    return datetime.now(UTC).replace(microsecond=0)


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)


def _at_most(v: object, limit: int, what: str) -> object:
    """Refuse an over-long list before its items are validated (200,000 tags must be refused
    in microseconds, not validated one by one first)."""
    if isinstance(v, list | tuple) and len(v) > limit:
        raise ValueError(f"{len(v)} {what}; at most {limit}")
    return v


class VersionRange(_Strict):
    """One product's affected range: introduced in `introduced` (None: all earlier versions too),
    fixed in each release line listed in `fixed` (19.14 fixes 19.x from 19.14 on).

    `fixed` is only for a fix the vendor documents (a bug note, a patch, release notes).
    `observed_fixed` is where someone saw the problem gone without a documented fix (the release
    a write-up's author happened to test): worth knowing, but it never rules a version out,
    because a reader who trusts it and is wrong loses the diagnosis."""

    product: str = Field("oracle", min_length=1, max_length=40)
    introduced: str | None = Field(None, max_length=MAX_VERSION_LENGTH)
    fixed: list[str] = Field(default_factory=new_list)
    observed_fixed: list[str] = Field(default_factory=new_list)
    note: str = Field("", max_length=2000)

    @field_validator("product", "note")
    @classmethod
    def _one_line(cls, v: str) -> str:
        return reject_controls(v, one_line=True)

    @field_validator("introduced")
    @classmethod
    def _introduced(cls, v: str | None) -> str | None:
        if v is not None:
            Version(v)
        return v

    @field_validator("fixed", "observed_fixed", mode="before")
    @classmethod
    def _fixed_count(cls, v: object) -> object:
        return _at_most(v, MAX_FIXED, "fixed versions")

    @field_validator("fixed", "observed_fixed")
    @classmethod
    def _fixed(cls, v: list[str]) -> list[str]:
        for item in v:
            if len(item) > MAX_VERSION_LENGTH:
                raise ValueError(f"version is {len(item)} characters; at most {MAX_VERSION_LENGTH}")
            Version(item)
        return v

    def verdict(self, version: str) -> tuple[bool, str]:
        """(affected?, why) for one version of this product."""
        try:
            v = Version(version)
        except InvalidVersion:
            return True, f"cannot compare '{version}'"
        if self.introduced and v < Version(self.introduced):
            return False, f"introduced in {self.introduced}; you run {version}"
        fixes = sorted(Version(f) for f in self.fixed)
        for f in fixes:
            if f.major == v.major and v >= f:
                return False, f"fixed in {f}; you run {version}"
        if fixes and v.major > fixes[-1].major:
            return False, f"fixed in {fixes[-1]} and later releases; you run {version}"
        where = f"introduced in {self.introduced}" if self.introduced else "affected"
        seen = ""
        if self.observed_fixed:
            seen = f" (seen gone in {', '.join(self.observed_fixed)}, not a documented fix)"
        if fixes:
            return True, f"{where}, fixed in {', '.join(map(str, fixes))}{seen}; you run {version}"
        return True, f"{where}, no fix listed{seen}; you run {version}"

    def describe(self) -> str:
        parts = [self.product]
        parts.append(f"from {self.introduced}" if self.introduced else "all versions")
        if self.fixed:
            parts.append("fixed in " + ", ".join(self.fixed))
        if self.observed_fixed:
            parts.append("seen gone in " + ", ".join(self.observed_fixed) + " (no documented fix)")
        return " ".join(parts) + (f" ({self.note})" if self.note else "")


class NextCommand(_Strict):
    """One command to run next, with what the reader must know before running it on a production
    system at 3 a.m.: the release it needs, a licence it needs (and the free way to get the same
    answer), and whether it stops or slows the process it looks at. The command bounds its own
    run time (`timeout 10 strace -c ...`, a DTrace `tick-10s { exit(0); }`, a sample count):
    a forgotten tracer left attached is an incident of its own."""

    command: str = Field(min_length=1, max_length=2000)
    platform: Platform
    why: str = Field(min_length=1, max_length=2000)
    min_version: str | None = Field(None, max_length=MAX_VERSION_LENGTH)
    licence: str = Field("", max_length=200)
    free_alternative: str = Field("", max_length=2000)
    intrusive: bool = False
    intrusive_why: str = Field("", max_length=2000)

    @field_validator("command", "why", "free_alternative", "intrusive_why")
    @classmethod
    def _no_controls(cls, v: str) -> str:
        return reject_controls(v)

    @field_validator("licence")
    @classmethod
    def _licence_line(cls, v: str) -> str:
        return reject_controls(v, one_line=True)

    @field_validator("min_version")
    @classmethod
    def _min_version(cls, v: str | None) -> str | None:
        if v is not None:
            Version(v)
        return v

    @model_validator(mode="after")
    def _explained(self) -> "NextCommand":
        if self.intrusive and not self.intrusive_why:
            raise ValueError("an intrusive command says why (intrusive_why)")
        if self.intrusive_why and not self.intrusive:
            raise ValueError("intrusive_why is set but intrusive is false")
        if self.free_alternative and not self.licence:
            raise ValueError("free_alternative is given but no licence")
        return self

    def caveats(self) -> str:
        """The command's conditions in one line for every renderer ('' when there are none)."""
        parts = []
        if self.min_version:
            parts.append(f"needs {self.min_version}+")
        if self.licence:
            alt = f"; without it: {self.free_alternative}" if self.free_alternative else ""
            parts.append(f"needs the {self.licence}{alt}")
        if self.intrusive:
            parts.append(f"intrusive: {self.intrusive_why}")
        return "; ".join(parts)

    def why_with_caveats(self) -> str:
        c = self.caveats()
        return f"{self.why} [{c}]" if c else self.why


class Differential(_Strict):
    """A look-alike incident and the one check that tells it apart from this one: what the on-call
    reader rules out before acting on this entry's fix."""

    entry: str = Field(min_length=1, max_length=MAX_LINE)
    check: str = Field(min_length=1, max_length=2000)

    @field_validator("entry")
    @classmethod
    def _entry_line(cls, v: str) -> str:
        return reject_controls(v, one_line=True)

    @field_validator("check")
    @classmethod
    def _check(cls, v: str) -> str:
        return reject_controls(v)


class Entry(_Strict):
    id: str = Field(pattern=SLUG, max_length=100)
    title: str = Field(min_length=3, max_length=MAX_LINE)
    symptom: str = Field(min_length=1, max_length=MAX_PROSE)
    root_cause: str = Field(min_length=1, max_length=MAX_PROSE)
    fix: str = Field(min_length=1, max_length=MAX_PROSE)
    differential: list[Differential] = Field(default_factory=new_list)
    affected_versions: list[VersionRange] = Field(default_factory=new_list)
    platforms: list[Platform] = Field(min_length=1, max_length=len(PLATFORMS))
    tags: list[str] = Field(default_factory=new_list)
    references: list[str] = Field(default_factory=new_list)
    next_commands: list[NextCommand] = Field(default_factory=new_list)
    signatures: list[Signature] = Field(default_factory=new_list)
    author: str = Field("perfkb", min_length=1, max_length=MAX_LINE)
    created: datetime = Field(default_factory=_now)
    updated: datetime = Field(default_factory=_now)

    @field_validator(
        "differential",
        "affected_versions",
        "tags",
        "references",
        "next_commands",
        "signatures",
        mode="before",
    )
    @classmethod
    def _counts(cls, v: object, info: ValidationInfo) -> object:
        limit, what = {
            "differential": (MAX_DIFFERENTIAL, "differentials"),
            "affected_versions": (MAX_VERSION_RANGES, "version ranges"),
            "tags": (MAX_TAGS, "tags"),
            "references": (MAX_REFERENCES, "references"),
            "next_commands": (MAX_COMMANDS, "next commands"),
            "signatures": (MAX_SIGNATURES, "signatures"),
        }[str(info.field_name)]
        return _at_most(v, limit, what)

    @field_validator("title", "author")
    @classmethod
    def _one_line(cls, v: str) -> str:
        return reject_controls(v, one_line=True)

    @field_validator("symptom", "root_cause", "fix")
    @classmethod
    def _prose(cls, v: str) -> str:
        return reject_controls(v)

    @field_validator("tags")
    @classmethod
    def _tags(cls, v: list[str]) -> list[str]:
        """Lowercased, de-duplicated in order (a dict: linear, where a list scan was quadratic
        and made a 200,000-tag entry cost minutes per read)."""
        out: dict[str, None] = {}
        for t in v:
            t = t.strip().lower()
            if len(t) > MAX_TAG_LENGTH:
                raise ValueError(f"a tag is {len(t)} characters long; at most {MAX_TAG_LENGTH}")
            if not TAG.fullmatch(t):
                raise ValueError(f"tag '{t}' must be lowercase letters, digits and . _ : + -")
            out[t] = None
        return list(out)

    @field_validator("references")
    @classmethod
    def _refs(cls, v: list[str]) -> list[str]:
        for url in v:
            if len(url) > MAX_REFERENCE_LENGTH:
                raise ValueError(
                    f"a reference is {len(url)} characters long; at most {MAX_REFERENCE_LENGTH}"
                )
            if not re.fullmatch(r"https?://[^\s<>\"\x00-\x1f\x7f-\x9f]+", url):
                raise ValueError(f"reference '{url}' is not an http(s) URL")
        return v

    @model_validator(mode="after")
    def _unique_signature_names(self) -> "Entry":
        seen: set[str] = set()
        dupes = sorted({s.name for s in self.signatures if s.name in seen or seen.add(s.name)})
        if dupes:
            raise ValueError(f"signature names repeat: {', '.join(dupes)}")
        return self

    def searchable_identifiers(self) -> list[str]:
        out: list[str] = []
        for sig in self.signatures:
            out += [k for k in sig.identifiers() if k not in out]
        return out

    def sources(self) -> list[str]:
        out: list[str] = []
        for sig in self.signatures:
            out += [s for s in sig.sources if s not in out]
        return out


_UNION_TAGS = {"all", "any", "not", "fact", "text"}


def field_path(loc: tuple) -> str:
    """('signatures', 0, 'when', 'all', 'all', 1, 'fact') -> 'signatures[0].when.all[1]'.

    pydantic puts the union tag of each condition node into the location right after the slot that
    holds a condition (`when`, `not`, or an item of `all`/`any`); people do not need it.
    """
    out = ""
    expecting_tag = False
    prev = None
    for part in loc:
        if expecting_tag and part in _UNION_TAGS:
            expecting_tag = False
            prev = part
            continue
        if isinstance(part, int):
            out += f"[{part}]"
            expecting_tag = prev in ("all", "any")
        else:
            out += ("." if out else "") + str(part)
            expecting_tag = part in ("when", "not")
        prev = part
    return out


def validate_entry(data: dict, *, source: str | None = None) -> Entry:
    """Validate raw entry data, raising EntryError with one readable line per problem."""
    entry_id = str(data.get("id", source or "?")) if isinstance(data, dict) else (source or "?")
    try:
        return Entry.model_validate(data)
    except ValidationError as exc:
        problems = []
        for err in exc.errors():
            msg = err["msg"].removeprefix("Value error, ")
            problems.append((field_path(err["loc"]), msg))
        raise EntryError(entry_id, problems) from None
