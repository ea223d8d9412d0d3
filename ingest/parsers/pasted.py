"""What pastes do to a tool's lines, undone once for every OS tool parser (vmstat, iostat, sar,
pidstat, prstat through ostable.py; lockstat, perf, the Linux /proc files, netstat, free, uptime,
top directly).

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
    r"^\s*(?:[A-Z][a-z]{2}\s+\d{1,2}\s+\d{1,2}:\d{2}:\d{2}"
    r"|\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:[.,]\d{1,9})?(?:Z|[+-]\d{2}:?\d{2})?)"
    r"\s+[\w.-]{1,64}\s+[\w./-]{1,64}(?:\[\d{1,10}\])?:\s"
)
# `$ `, `# `, `% `, `> `, `[root@host ~]# `, `user@host:~$ `, `host% `, `example% `, `SQL> `
_PROMPT = re.compile(
    r"^\s*(?:\[[^\]\s]{1,60}(?:\s[^\]]{0,60})?\]|[\w.-]{1,40}@[\w.-]{1,60}(?::[^\s$#%>]{0,80})?"
    r"|[\w.-]{1,40}(?=[%>]\s))?\s?[$#%>]\s+"
)
# pdsh / clush: `node01: ` (a host name with a digit, so sar's `Average:` is not one)
_HOST = re.compile(r"^\s*[A-Za-z][\w.-]{0,60}\d[\w.-]{0,20}:\s")
_MONTH_NAMES = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")


def unpaste(line: str, *, marks: bool = True, prompts: bool = False, hosts: bool = False) -> str:
    """The line as the tool printed it: a syslog/journal prefix, and with `marks` a `#` or `>`
    and a blank before it (a shell comment or a Markdown quote), are removed;
    with `prompts` a shell prompt, with `hosts` a pdsh/clush `node01: ` prefix. Up to three
    layers (`node01: # ...`). The last two are the column-table tools' choice: a `#` prompt is
    also a perf report's comment, and `DirectMap4k: ` in /proc/meminfo reads as a host name."""
    text = line
    for _ in range(3):
        before = text
        if (m := _SYSLOG.match(text)) is not None:
            text = text[m.end() :]
        if hosts and (m := _HOST.match(text)) is not None:
            text = text[m.end() :]
        stripped = text.lstrip()
        mark = stripped[:1] in ("#", ">") and not stripped.startswith(("#!", ">>"))
        # a mark is followed by a blank (nstat prints `#kernel` itself), except before the
        # column-table tools' rows, which no tool starts with `#`
        if marks and mark and (prompts or stripped[1:2] in ("", " ", "\t")):
            text = stripped[2:] if stripped[1:2] == " " else stripped[1:]
        elif prompts and (m := _PROMPT.match(text)) is not None:
            text = text[m.end() :]
        if text == before:
            break
    return text


_INT_GROUPS = re.compile(r"^[+-]?\d{1,3}(?:[,.'\u00a0\u202f]\d{3})+$")
_PLAIN = re.compile(r"^[+-]?(?:\d+(?:[.,]\d*)?|[.,]\d+)(?:[eE][+-]?\d{1,3})?$")
_EU = re.compile(r"^[+-]?\d{1,3}(?:\.\d{3})+,\d+$")
_US = re.compile(r"^[+-]?\d{1,3}(?:,\d{3})+\.\d+$")
_GROUP_MARKS = re.compile(r"[,.'\u00a0\u202f]")
MAX_NUMBER = 1e18  # larger is no counter any of these tools prints


def number(token: str) -> float | None:
    """A number as the tools print it under any locale, or None.

    `1,234,567`, `1.234.567` and `1'234'567` are thousands groups, and so is one comma before
    exactly three digits (`2,210`: how English locales print counters); a comma before one, two
    or more digits is a decimal comma (`0,95`, `12,50`); `1.234,56` and `1,234.56` carry both. A
    trailing `%` is dropped. nan, inf, `1_000` and absurd magnitudes are None."""
    try:  # the common case, in C: `12`, `0.41`, `-3.5`
        value = float(token)
    except ValueError:
        pass
    else:
        if value != value or abs(value) >= MAX_NUMBER or "_" in token:
            return None
        return value
    t = token.strip().rstrip("%")
    if not t or len(t) > 40:
        return None
    try:
        if _INT_GROUPS.match(t):
            value = float(_GROUP_MARKS.sub("", t))
        elif _PLAIN.match(t):
            value = float(t.replace(",", "."))
        elif _EU.match(t):
            value = float(t.replace(".", "").replace(",", "."))
        elif _US.match(t):
            value = float(t.replace(",", ""))
        else:
            return None
    except ValueError:
        return None
    if value != value or abs(value) >= MAX_NUMBER:
        return None
    return value


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
