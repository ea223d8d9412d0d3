"""Fill the placeholders of a suggested command with values read from the evidence, safely.

Why this module exists: evidence is text anybody can paste or upload, and the suggested next
commands are meant to be copied into a root shell on the database host. An AWR whose top event is
named ``$(touch /tmp/x)`` must not turn "which SQL waits on this event" into a command that runs
code. So every value goes through two gates, and this is the only place that fills placeholders
(the playbook, the entries' commands, the CLI, the web page, the API and the bot all show what
this module produced):

1. **What it can be.** Each placeholder *kind* declares its values (a pid is digits, a sql_id is 13
   base-32 characters, a syscall is an identifier, an event name is printable text of at most 64
   characters, ...). A value that is not one is not used.
2. **How it is quoted where it stands.** Each placeholder in a template names its *context*:
   ``word`` (a shell word: ``shlex.quote``), ``sql`` (inside a SQL string literal in a quoted
   heredoc ``<<'EOF'``, where the shell expands nothing: single quotes are doubled and a value may
   not hold a line break, so it can neither end the literal nor the heredoc) or ``script`` (inside
   a single-quoted DTrace/bpftrace program: only identifier characters may go there).

A value that fails either gate leaves the placeholder unfilled, shown as its name (``PID``,
``EVENT``): the command stays a useful template and nothing from the evidence reaches the shell.

Template syntax: ``{kind}`` or ``{kind:context}`` (``{event:sql}``, ``{syscall:script}``). The
placeholders people write in entries' commands are understood too: ``PID``, ``<pid>``, ``{pid}``
and the same for ``SID`` (digits only, so safe in every context).
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Literal

Context = Literal["word", "sql", "script"]
CONTEXTS: tuple[Context, ...] = ("word", "sql", "script")


@dataclass(frozen=True)
class Kind:
    """One kind of placeholder: what its values can be, and the name shown when it stays unfilled."""

    name: str
    doc: str
    valid: Callable[[str], bool]

    @property
    def shown(self) -> str:
        return self.name.upper()


def _pattern(rx: str) -> Callable[[str], bool]:
    compiled = re.compile(rx)
    return lambda v: compiled.fullmatch(v) is not None


def _event_name(value: str) -> bool:
    # Oracle's v$event_name.name is VARCHAR2(64); printable excludes line breaks, NUL and the
    # other control characters that could end a heredoc line or confuse a terminal.
    return 0 < len(value) <= 64 and value.isprintable() and value == value.strip()


KINDS: dict[str, Kind] = {
    k.name: k
    for k in (
        Kind("pid", "a process id: 1 to 10 digits, no sign", _pattern(r"[1-9][0-9]{0,9}")),
        Kind("sid", "an Oracle session id: 1 to 10 digits", _pattern(r"[1-9][0-9]{0,9}")),
        Kind("serial", "a session serial#: 1 to 10 digits", _pattern(r"[1-9][0-9]{0,9}")),
        Kind(
            "sql_id",
            "an Oracle sql_id: 13 characters of Oracle's base-32 alphabet",
            _pattern(r"[0-9abcdfghjkmnpqrstuvwxyz]{13}"),
        ),
        Kind("syscall", "a system call name: an identifier", _pattern(r"[a-z_][a-z0-9_]{0,63}")),
        Kind("event", "an Oracle wait event name: printable text, at most 64 chars", _event_name),
        Kind(
            "device",
            "a device name: letters, digits and _ . / -, not starting with '-'",
            _pattern(r"[A-Za-z0-9_./][A-Za-z0-9_./-]{0,127}"),
        ),
        Kind(
            "path",
            "an absolute file path of letters, digits and _ . / + - (no spaces)",
            _pattern(r"/[A-Za-z0-9_./+-]{0,1023}"),
        ),
        Kind(
            "process",
            "a process name: letters, digits and _ . : + -, not starting with '-'",
            _pattern(r"[A-Za-z0-9_.][A-Za-z0-9_.:+-]{0,63}"),
        ),
    )
}

# Characters a value may hold to go into a single-quoted script (dtrace -n '...'): identifiers.
_SCRIPT_SAFE = re.compile(r"[A-Za-z0-9_]+")

_TYPED = re.compile(r"\{(" + "|".join(KINDS) + r")(?::(" + "|".join(CONTEXTS) + r"))?\}")
# The hand-written forms in entries' commands. Upper-case PID / SID words and <pid> / {pid} are
# placeholders; lower-case 'sid' in SQL is not. Values are digits, so the context does not matter.
_LEGACY = re.compile(r"<(pid|sid)>|<(PID|SID)>|\{(PID|SID)\}|\b(PID|SID)\b")
_ANY = re.compile(f"{_TYPED.pattern}|{_LEGACY.pattern}")


def quote(value: str, context: Context) -> str | None:
    """The value as it must be written in this context, or None when it cannot be made safe."""
    if context == "word":
        return shlex.quote(value)
    if context == "sql":
        if "\n" in value or "\r" in value or "\x00" in value:
            return None
        return value.replace("'", "''")
    if context == "script":
        return value if _SCRIPT_SAFE.fullmatch(value) else None
    return None


def safe_value(kind: str, value: object, context: Context = "word") -> str | None:
    """`value` validated as a `kind` and quoted for `context`; None leaves the placeholder as is."""
    spec = KINDS.get(kind)
    if spec is None or value is None or isinstance(value, bool):
        return None
    if isinstance(value, int):
        text = str(value)
    elif isinstance(value, str):
        text = value
    else:
        return None
    if len(text) > 1024 or not spec.valid(text):
        return None
    return quote(text, context)


def _parse(m: re.Match[str]) -> tuple[str, Context]:
    """(kind, context) of one placeholder match of _ANY."""
    if m.group(1):
        return m.group(1), (m.group(2) or "word")  # type: ignore[return-value]
    legacy = next(g for g in m.groups()[2:] if g)
    return legacy.lower(), "word"


def placeholders(template: str) -> list[tuple[str, Context]]:
    """The (kind, context) of every placeholder in the template, in order."""
    return [_parse(m) for m in _ANY.finditer(template)]


def fill(template: str, values: Mapping[str, object]) -> str:
    """The template with each placeholder replaced by its safe value, or by its name when the
    value is missing or cannot be made safe. One pass: a filled value is never re-read as a
    placeholder."""

    def one(m: re.Match[str]) -> str:
        kind, context = _parse(m)
        safe = safe_value(kind, values.get(kind), context)
        if safe is not None:
            return safe
        # Unfilled: keep a hand-written placeholder as written, a typed one as its name.
        return m.group(0) if not m.group(1) else KINDS[kind].shown

    return _ANY.sub(one, template)


def unfilled(template: str) -> str:
    """The template as shown with nothing known (every placeholder as its name)."""
    return fill(template, {})
