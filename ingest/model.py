"""Typed evidence: what ingest hands to kb. Parsers fill these; nothing downstream re-reads raw text
except the optional literal/regex text conditions, which only see the capped `Block.text`."""

# Annotations are evaluated here, not kept as strings (no `from __future__ import annotations`):
# pydantic compiled each string field annotation (typing.ForwardRef) on every start (issue #19).
from typing import Literal

from pydantic import BaseModel, Field


def new_list() -> list:
    """An empty list: the `default_factory` of list fields, in place of `list` itself.

    Why: pydantic asks `inspect.signature` of every default factory (does it take the validated
    data?); for a builtin that parses its text signature with tokenize, compiling tokenize's
    big regex on the first one. A Python function's signature is read from its code object:
    measured on `perfkb analyze` of a 1-line truss file, 1,332.1 M -> 1,296.6 M instructions
    (-2.7 %) with the list/dict factories of every model it builds changed (issue #19)."""
    return []


def new_dict() -> dict:
    """An empty dict: the `default_factory` of dict fields (why: see new_list)."""
    return {}


# Every evidence format, once: the parser registry's formats and "unknown" (text no parser
# read). kb.signatures.Source (what a signature may read) is derived from this list.
FORMATS: tuple[str, ...] = (
    "tkprof",
    "truss",
    "strace",
    "mpstat",
    "stack",
    "dtrace",
    "waits",
    "trace10046",
    "hanganalyze",
    "lgwr_trace",
    "vdollar",
    "vmstat",
    "iostat",
    "sar",
    "pidstat",
    "prstat",
    "lockstat",
    "perf",
    "meminfo",
    "pressure",
    "netstat",
    "free",
    "uptime",
    "top",
    "procvmstat",
    "cgroup",
    "nfsiostat",
    "oraparam",
    "xplan",
    "unknown",
)
Format = Literal[FORMATS]  # type: ignore[valid-type]  # a Literal of the tuple's items
Platform = Literal["solaris", "linux", "aix", "hpux", "windows", "any"]

# A fact value is a number, a short string, or a table keyed by a name (syscall, event...).
FactValue = float | int | str | dict[str, float]

# How much of a block's raw text is kept for text conditions and display (bytes of UTF-8).
TEXT_CAP = 256 * 1024
# How much raw text the blocks of a format that comes as an archive of many reports (hourly AWR
# text reports one after another) keep between them in one input: TEXT_CAP each made a 100 MB
# archive keep every report's text. One report is under it, so it keeps all of its text.
SHARED_TEXT_CAP = 4 * TEXT_CAP


class Block(BaseModel):
    """One evidence block found in the input, already parsed."""

    format: Format
    platform: Platform | None = None
    start_line: int = Field(description="1-based first line of the block in the input")
    end_line: int = Field(description="1-based last line of the block in the input")
    lines: int = 0
    malformed_lines: int = Field(0, description="lines of the format that did not parse")
    facts: dict[str, FactValue] = Field(
        default_factory=new_dict,
        description="named facts (see ingest/facts.py): what signatures read",
    )
    details: dict = Field(
        default_factory=new_dict,
        description="format-specific structured view for people: tables, per-process rows, ...",
    )
    identifiers: list[str] = Field(
        default_factory=new_list,
        description="names in the evidence (syscalls, functions, events) for text ranking",
    )
    text: str = Field("", description="raw text of the block, capped at TEXT_CAP")
    text_truncated: bool = False


class Context(BaseModel):
    """What the prose and the evidence say about the environment."""

    versions: list[str] = Field(default_factory=new_list, description="Oracle versions, as written")
    platform: Platform | None = None
    platform_hints: list[str] = Field(default_factory=new_list)
    ora_errors: list[str] = Field(default_factory=new_list)
    processes: list[str] = Field(default_factory=new_list)
    pids: list[int] = Field(default_factory=new_list)
    sids: list[int] = Field(default_factory=new_list)
    prose: str = Field("", description="non-evidence text, capped")


class Evidence(BaseModel):
    """Everything ingest found in one input."""

    blocks: list[Block] = Field(default_factory=new_list)
    context: Context = Field(default_factory=Context)
    total_lines: int = 0
    total_bytes: int = 0
