"""`uptime` / `w` header lines and `/proc/loadavg`: load averages and time since boot.

    14:23:01 up 10 days,  3:04,  2 users,  load average: 8.12, 7.50, 6.90      (Linux, BSD)
    2:23pm  up 12 day(s),  3:04,  2 users,  load average: 1.23, 1.45, 1.67     (Solaris)
    14:23  up 3 days, 2:04, 3 users, load averages: 2.10 1.98 1.75             (macOS)
    8.12 7.50 6.90 5/1234 56789                                                 (/proc/loadavg)

Decimal commas (`load average: 8,12, 7,50, 6,90`) are read. Repeated lines (uptime in a loop,
OSWatcher) are a series: the facts are the last line's, the series is kept for display. A load
average means little without the CPU count; this output does not print it, so the load per
CPU is left to outputs that do (top with per-CPU lines).
"""

from __future__ import annotations

import re
from typing import ClassVar

from ingest.base import Parser
from ingest.model import Format, Platform
from ingest.parsers.pasted import number, unpaste

MAX_LINE = 512
MAX_SERIES = 500
_LOAD = re.compile(
    r"load averages?:\s*(?P<a>\d+(?:[.,]\d+)?),?\s+(?P<b>\d+(?:[.,]\d+)?),?\s+"
    r"(?P<c>\d+(?:[.,]\d+)?)\s*$"
)
_UP = re.compile(
    r"\bup\s+(?:(?P<days>\d+)\s+day(?:s|\(s\))?,?\s*)?(?:(?P<h>\d{1,2}):(?P<m>\d{2})|"
    r"(?P<min>\d+)\s+mins?|(?P<hrs>\d+)\s+hrs?)?"
)
_LOADAVG = re.compile(
    r"^\s*(?P<a>\d+\.\d+)\s+(?P<b>\d+\.\d+)\s+(?P<c>\d+\.\d+)\s+(?P<run>\d+)/(?P<all>\d+)"
    r"\s+\d+\s*$"
)
_USERS = re.compile(r"(?P<n>\d+)\s+users?\b")


class UptimeParser(Parser):
    format: ClassVar[Format] = "uptime"

    def __init__(self) -> None:
        super().__init__()
        self.series: list[dict] = []
        self.last: dict | None = None
        self.max1 = 0.0
        self.runnable: tuple[float, float] | None = None

    @classmethod
    def start_score(cls, line: str) -> int:
        if len(line) > MAX_LINE or not ("load av" in line or "/" in line):
            return 0
        text = unpaste(line)
        if text.lstrip().startswith("top -") or "last pid:" in text:
            return 0  # top's own first line: top reads it
        if _LOAD.search(text) and _UP.search(text):
            return 2
        if _LOADAVG.match(text):
            return 2
        return 0

    def feed(self, line: str) -> bool:
        if len(line) > MAX_LINE:
            return False
        text = unpaste(line)
        if self.start_score(text) == 0:
            return False
        row: dict = {}
        if m := _LOADAVG.match(text):
            row = {k: float(m[k]) for k in "abc"}
            self.runnable = (float(m["run"]), float(m["all"]))
        elif m := _LOAD.search(text):
            values = [number(m[k]) for k in "abc"]
            if any(v is None for v in values):
                self.malformed += 1
                return True
            row = dict(zip("abc", values, strict=True))
            up = _UP.search(text)
            if up:
                days = float(up["days"] or 0)
                if up["h"]:
                    days += (int(up["h"]) * 60 + int(up["m"])) / 1440
                elif up["min"]:
                    days += int(up["min"]) / 1440
                elif up["hrs"]:
                    days += int(up["hrs"]) / 24
                row["days"] = round(days, 3)
            if u := _USERS.search(text):
                row["users"] = int(u["n"])
        self.last = row
        self.max1 = max(self.max1, row["a"])
        if len(self.series) < MAX_SERIES:
            self.series.append(row)
        return True

    def facts(self) -> tuple[dict, dict, list[str], Platform | None]:
        if self.last is None:
            return {}, {}, [], None
        r = self.last
        facts: dict = {"load.avg1": r["a"], "load.avg5": r["b"], "load.avg15": r["c"]}
        if "days" in r:
            facts["uptime.days"] = r["days"]
        details: dict = {"series": self.series, "max_avg1": self.max1}
        if self.runnable:
            details["runnable"], details["tasks"] = self.runnable
        return facts, details, [], None
