"""LGWR trace files (`<sid>_lgwr_<pid>.trc`): the `Warning: log write elapsed time 610ms, size
12KB` lines LGWR writes whenever one redo write takes longer than 500 ms (10.2 onwards; 12c also
prints them from its LGnn slaves), the `log write broadcast wait time` lines of RAC, and the
adaptive log file sync switches between post/wait and polling (11.2.0.3+).

What a DBA reads off them: how many slow writes, how slow, and whether slowness follows size
(a device that takes 1.5 s for 12 KB is sick; 3 MB in 600 ms is a big write on a slow path).
`lgwr.ms_per_mb` answers the second question in one number. `*** <timestamp>` lines between the
warnings belong to the block; everything else closes it.
"""

from __future__ import annotations

import re
from typing import ClassVar

from ingest.base import MAX_LINE, Parser
from ingest.model import Format, Platform

_WRITE = re.compile(
    r"Warning:\s*log write (?:elapsed )?time\s*(\d+(?:[.,]\d+)?)\s*ms\s*,\s*size\s*(\d+(?:[.,]\d+)?)\s*KB",
    re.IGNORECASE,
)
_BROADCAST = re.compile(r"Warning:\s*log write broadcast wait time\s*(\d+)\s*ms", re.IGNORECASE)
# 11.2.0.3+ adaptive log file sync: LGWR switching between post/wait and polling
_SWITCH = re.compile(
    r"kcrfw_update_adaptive_sync_mode:|Log file sync switching to (?:polling|post/wait)",
    re.IGNORECASE,
)
_STAMP = re.compile(r"^\s*\*\*\* \d{4}-\d\d-\d\d[ T]")


def _num(text: str) -> float:
    return float(text.replace(",", "."))


class LgwrTraceParser(Parser):
    format: ClassVar[Format] = "lgwr_trace"

    def __init__(self) -> None:
        super().__init__()
        self.writes = 0
        self.total_ms = 0.0
        self.total_kb = 0.0
        self.max_ms = 0.0
        self.min_ms: float | None = None
        self.max_kb = 0.0
        self.max_line: tuple[float, float] | None = None
        self.broadcasts = 0
        self.switches = 0
        self.first_stamp: str | None = None
        self.last_stamp: str | None = None

    @classmethod
    def start_score(cls, line: str) -> int:
        if len(line) > MAX_LINE or not ("arning" in line or "kcrfw" in line or "sync" in line):
            return 0
        if _WRITE.search(line) or _BROADCAST.search(line) or _SWITCH.search(line):
            return 2
        return 0

    def feed(self, line: str) -> bool:
        if len(line) > MAX_LINE:
            return False
        if m := _WRITE.search(line):
            ms, kb = _num(m.group(1)), _num(m.group(2))
            self.writes += 1
            self.total_ms += ms
            self.total_kb += kb
            if ms > self.max_ms:
                self.max_ms = ms
                self.max_line = (ms, kb)
            self.min_ms = ms if self.min_ms is None else min(self.min_ms, ms)
            self.max_kb = max(self.max_kb, kb)
            return True
        if _BROADCAST.search(line):
            self.broadcasts += 1
            return True
        if _SWITCH.search(line):
            self.switches += 1
            return True
        if _STAMP.match(line):
            stamp = line.strip()[4:40]
            self.first_stamp = self.first_stamp or stamp
            self.last_stamp = stamp
            return True
        return False

    def facts(self) -> tuple[dict, dict, list[str], Platform | None]:
        if not self.writes and not self.broadcasts and not self.switches:
            return {}, {}, [], None
        facts: dict = {
            "lgwr.slow_writes": float(self.writes),
            "lgwr.broadcast_waits": float(self.broadcasts),
            "lgwr.sync_mode_switches": float(self.switches),
        }
        if self.writes:
            facts["lgwr.max_write_ms"] = self.max_ms
            facts["lgwr.min_write_ms"] = float(self.min_ms or 0.0)
            facts["lgwr.avg_write_ms"] = round(self.total_ms / self.writes, 3)
            facts["lgwr.max_write_kb"] = self.max_kb
            facts["lgwr.avg_write_kb"] = round(self.total_kb / self.writes, 3)
            if self.total_kb > 0:
                facts["lgwr.ms_per_mb"] = round(self.total_ms / (self.total_kb / 1024.0), 3)
        details = {
            "first_timestamp": self.first_stamp,
            "last_timestamp": self.last_stamp,
            "slowest": {"ms": self.max_line[0], "kb": self.max_line[1]} if self.max_line else None,
            "threshold_ms": 500,
        }
        return facts, details, ["log file parallel write", "LGWR"], None
