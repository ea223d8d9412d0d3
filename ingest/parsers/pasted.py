"""What pastes do to a tool's lines, undone once for the OS table parsers (lockstat, perf, the
Linux /proc files, netstat, free, uptime, top).

People paste from terminals, Slack, forums and slides: a `# ` before every line (a shell comment
or a Markdown quote), a syslog or journal prefix (`Mar 14 09:12:44 host tool[123]: `), runs of
blanks collapsed to one, numbers printed with thousands separators (`1,234,567`) or a decimal
comma (`0,95`). Each parser reads its columns from its header; these
helpers only give it back the line the tool printed and the numbers in it.
"""

from __future__ import annotations

import calendar
import re

# `Mar 14 09:12:44 host kernel: ` / `2024-03-14T09:12:44.123+0100 host tool[12]: `
_SYSLOG = re.compile(
    r"^(?:[A-Z][a-z]{2}\s+\d{1,2}\s+\d{1,2}:\d{2}:\d{2}"
    r"|\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:[.,]\d{1,9})?(?:Z|[+-]\d{2}:?\d{2})?)"
    r"\s+[\w.-]{1,64}\s+[\w./-]{1,64}(?:\[\d{1,10}\])?:\s"
)
# `> `, `# `, `#`: a quote or a comment mark before every line of a paste
_MARK = re.compile(r"^(?:>|#)(?:\s|$)")
_MONTH_NAMES = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
_NUMBER = re.compile(r"^[-+]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:[.,]\d+)?$|^[-+]?\.\d+$")


def unpaste(line: str, *, marks: bool = True) -> str:
    """The line as the tool printed it: syslog/journal prefix and a leading `#`/`>` removed."""
    head = line[:5]
    if len(line) > 16 and (
        (head[:3] in _MONTH_NAMES and head[3:4] == " ") or (head[:4].isdigit() and head[4:] == "-")
    ):
        m = _SYSLOG.match(line)
        if m:
            line = line[m.end() :]
    if marks and line[:1] in "#>" and _MARK.match(line):
        line = line[2:] if line[1:2] == " " else line[1:]
    return line


def number(token: str) -> float | None:
    """`1,234,567` -> 1234567; `0,95` -> 0.95; `12.5%` -> 12.5; None for anything else.

    A single comma followed by exactly three digits is read as a thousands separator (how
    English locales print counters); followed by one, two or more than three digits it is a
    decimal comma."""
    t = token.strip().rstrip("%")
    if not t or len(t) > 40 or not _NUMBER.match(t):
        return None
    if "," in t:
        if "." in t or t.count(",") > 1 or len(t.rsplit(",", 1)[1]) == 3:
            t = t.replace(",", "")
        else:
            t = t.replace(",", ".")
    try:
        value = float(t)
    except ValueError:
        return None
    return value if abs(value) < 1e18 else None


_SUFFIX = {"k": 1e3, "m": 1e6, "g": 1e9, "t": 1e12}


def scaled(token: str) -> float | None:
    """A count perf or top may print with a suffix: `28K` -> 28000, `1.2M` -> 1.2e6."""
    t = token.strip()
    if t and t[-1].lower() in _SUFFIX:
        base = number(t[:-1])
        return None if base is None else base * _SUFFIX[t[-1].lower()]
    return number(t)


# `zzz ***Mon Mar 14 09:12:44 UTC 2024` (OSWatcher / ExaWatcher between samples) and the
# output of `date` on its own line (`date; netstat -s; sleep 10; date; netstat -s`)
_ZZZ = re.compile(r"^zzz\s*\*{3}\s*(?P<when>.*?)\s*$")
_DATE = re.compile(
    r"^(?:[A-Z][a-z]{2},?\s+)?(?P<mon>[A-Z][a-z]{2})\s+(?P<day>\d{1,2})\s+"
    r"(?P<h>\d{1,2}):(?P<m>\d{2}):(?P<s>\d{2})(?:\s+[A-Z]{2,5}(?:[+-]\d{1,4})?)?\s+(?P<y>\d{4})$"
)
_ISO = re.compile(
    r"^(?P<y>\d{4})-(?P<mo>\d{2})-(?P<day>\d{2})[T ](?P<h>\d{2}):(?P<m>\d{2}):(?P<s>\d{2})"
)
_MONTHS = {m: i for i, m in enumerate(_MONTH_NAMES, 1)}


def sample_mark(line: str) -> tuple[bool, float | None] | None:
    """Is `line` a marker between two samples (OSWatcher's `zzz ***date`, or a `date` line)?
    Returns (True, seconds since the epoch or None when the date is unreadable), or None.

    The seconds only serve differences between two marks of one capture, so the time zone
    name is ignored (both marks carry the same)."""
    text = line.strip()
    if len(text) > 80:
        return None
    m = _ZZZ.match(text)
    when = m["when"] if m else text
    if not m and not text[:1].isalpha():
        return None
    d = _DATE.match(when)
    if d and d["mon"] in _MONTHS:
        return True, _epoch(int(d["y"]), _MONTHS[d["mon"]], int(d["day"]), d["h"], d["m"], d["s"])
    d = _ISO.match(when)
    if d and m:
        return True, _epoch(int(d["y"]), int(d["mo"]), int(d["day"]), d["h"], d["m"], d["s"])
    return (True, None) if m else None


def _epoch(year: int, month: int, day: int, h: str, m: str, s: str) -> float | None:
    if not (1 <= month <= 12 and 1 <= day <= 31 and int(h) < 24 and int(m) < 60 and int(s) < 61):
        return None
    return float(calendar.timegm((year, month, day, int(h), int(m), int(s), 0, 0, 0)))
