"""Linux pressure stall information: `/proc/pressure/{cpu,memory,io}` and cgroup v2
`cpu.pressure` / `memory.pressure` / `io.pressure`:

    some avg10=1.53 avg60=0.87 avg300=0.25 total=8723645
    full avg10=0.00 avg60=0.00 avg300=0.00 total=214386

`some`: share of time at least one task stalled on the resource; `full`: all non-idle tasks
stalled at once. The avg windows are already rates; `total` is microseconds stalled since boot
(or since the cgroup was made), so one sample of it is marked since boot and only the growth
between two samples of the same resource is reported. Which resource a pair of lines belongs
to comes from what the paste says: `grep . /proc/pressure/*` prefixes, `==> file <==` headers
of head/tail, or the `cat` command line above.
"""

from __future__ import annotations

import re
from typing import ClassVar

from ingest.base import Parser
from ingest.model import Format, Platform
from ingest.parsers.pasted import number, unpaste

MAX_LINE = 512
MAX_KEYS = 200
_LINE = re.compile(
    r"^\s*(?:(?P<path>\S*?(?P<res1>cpu|memory|io|irq)(?:\.pressure)?):\s*)?(?P<kind>some|full)\s+"
    r"avg10=(?P<a10>\d+(?:[.,]\d+)?)\s+avg60=(?P<a60>\d+(?:[.,]\d+)?)\s+"
    r"avg300=(?P<a300>\d+(?:[.,]\d+)?)\s+total=(?P<total>\d{1,20})\s*$"
)
_NAMED = re.compile(
    r"(?:pressure/|/)(?P<res>cpu|memory|io|irq)(?:\.pressure)?\b|^(?P<bare>cpu|memory|io|irq)\.pressure\b"
)


class PressureParser(Parser):
    format: ClassVar[Format] = "pressure"

    def __init__(self) -> None:
        super().__init__()
        self.resource: str | None = None
        self.first: dict[str, dict[str, float]] = {}
        self.last: dict[str, dict[str, float]] = {}
        self.samples: dict[str, int] = {}

    @classmethod
    def start_score(cls, line: str) -> int:
        if len(line) > MAX_LINE or "avg10=" not in line:
            return 0
        return 2 if _LINE.match(unpaste(line)) else 0

    def feed(self, line: str) -> bool:
        if len(line) > MAX_LINE:
            return False
        text = unpaste(line)
        if not text.strip():
            return bool(self.lines)
        m = _LINE.match(text)
        if m is None:
            named = _NAMED.search(text)
            if named and len(text) < 200 and ("<==" in text or "cat" in text or "pressure" in text):
                self.resource = named["res"] or named["bare"]
                return True
            return False
        resource = m["res1"] or self.resource or "?"
        key = f"{resource} {m['kind']}"
        row = {
            "avg10": number(m["a10"]) or 0.0,
            "avg60": number(m["a60"]) or 0.0,
            "avg300": number(m["a300"]) or 0.0,
            "total": float(m["total"]),
        }
        if key not in self.last and len(self.last) >= MAX_KEYS:
            return True
        self.first.setdefault(key, row)
        self.last[key] = row
        self.samples[key] = self.samples.get(key, 0) + 1
        return True

    def facts(self) -> tuple[dict, dict, list[str], Platform | None]:
        facts: dict = {}
        if self.last:
            for window in ("avg10", "avg60", "avg300"):
                facts[f"psi.{window}_pct"] = {k: v[window] for k, v in self.last.items()}
            facts["psi.max_avg10_pct"] = max(v["avg10"] for v in self.last.values())
            grown = {
                k: round((self.last[k]["total"] - self.first[k]["total"]) / 1000.0, 3)
                for k, n in self.samples.items()
                if n > 1 and self.last[k]["total"] >= self.first[k]["total"]
            }
            if grown:
                facts["psi.stall_ms"] = grown
            facts["os.since_boot"] = 0.0 if grown else 1.0
        details = {"resources": {k: dict(v, samples=self.samples[k]) for k, v in self.last.items()}}
        return facts, details, [], "linux"
