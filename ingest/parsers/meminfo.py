"""Linux `/proc/meminfo` (and `grep Huge /proc/meminfo`, `grep -H . /proc/meminfo`, NUMA
`/sys/devices/system/node/nodeN/meminfo` lines): `Name:  value kB` per line.

What people read off it: how much is really available (MemAvailable, not MemFree), how much is
promised (Committed_AS against CommitLimit), whether the huge pages reserved for an SGA are in
use (HugePages_Free - HugePages_Rsvd left over means the SGA went to small pages) and how big
the page tables have grown (a large SGA mapped with 4 kB pages by many processes). Values are
gauges: a second sample replaces the first. Every field is kept in `meminfo.kb` as printed.
"""

from __future__ import annotations

import re
from typing import ClassVar

from ingest.base import Parser
from ingest.model import Format, Platform
from ingest.parsers.pasted import number, sample_mark, unpaste

MAX_FIELDS = 300
MAX_LINE = 512
_LINE = re.compile(
    r"^\s*(?:\S*meminfo:)?(?:Node\s+(?P<node>\d{1,4})\s+)?(?P<name>[A-Za-z][\w()]{1,40}):\s+"
    r"(?P<value>\d[\d,]{0,20})(?:\s+(?P<unit>kB|KB|k|B))?\s*$"
)
_KNOWN = frozenset(
    {
        "MemTotal",
        "MemFree",
        "MemAvailable",
        "Buffers",
        "Cached",
        "SwapCached",
        "SwapTotal",
        "SwapFree",
        "Committed_AS",
        "CommitLimit",
        "HugePages_Total",
        "HugePages_Free",
        "HugePages_Rsvd",
        "HugePages_Surp",
        "Hugepagesize",
        "PageTables",
        "AnonHugePages",
        "Shmem",
        "Slab",
        "SReclaimable",
        "SUnreclaim",
        "Dirty",
        "Writeback",
        "Mapped",
        "Active(file)",
        "Inactive(file)",
        "Active(anon)",
        "Inactive(anon)",
        "AnonPages",
        "VmallocTotal",
        "Hugetlb",
        "KernelStack",
        "Mlocked",
        "Unevictable",
    }
)
_COMMAND = re.compile(r"^\s*(?:\S*[#$%>]\s*)?(?:cat|grep|head|less|more)\b.*\bmeminfo\b")


def mb(kb: float) -> float:
    return round(kb / 1024.0, 1)


class MeminfoParser(Parser):
    format: ClassVar[Format] = "meminfo"

    def __init__(self) -> None:
        super().__init__()
        self.fields: dict[str, float] = {}
        self.nodes: dict[str, float] = {}
        self.known = 0

    @classmethod
    def start_score(cls, line: str) -> int:
        if len(line) > MAX_LINE or ":" not in line:
            return 0
        m = _LINE.match(unpaste(line))
        if m is None:
            return 1 if _COMMAND.match(line) else 0
        if m["name"] in ("MemTotal", "MemFree", "MemAvailable", "HugePages_Total"):
            return 2
        return 1 if m["name"] in _KNOWN else 0

    def feed(self, line: str) -> bool:
        if len(line) > MAX_LINE:
            return False
        text = unpaste(line)
        if not text.strip():
            return False
        if self.lines and text.startswith("zzz") and sample_mark(text):
            return True  # OSWatcher's marker between two samples: the later one counts
        m = _LINE.match(text)
        if m is None:
            return not self.lines and bool(_COMMAND.match(text))
        value = number(m["value"])
        if value is None:
            self.malformed += 1
            return True
        if m["unit"] == "B":
            value /= 1024.0
        name = m["name"]
        if m["node"] is not None:
            key = f"Node {m['node']} {name}"
            if key in self.nodes or len(self.nodes) < MAX_FIELDS:
                self.nodes[key] = value
            return True
        if name in _KNOWN:
            self.known += 1
        if name in self.fields or len(self.fields) < MAX_FIELDS:
            self.fields[name] = value
        return True

    def facts(self) -> tuple[dict, dict, list[str], Platform | None]:
        f = dict(self.fields)
        if not f and self.nodes:  # only per-node lines: add the nodes up
            for key, value in self.nodes.items():
                name = key.split(" ", 2)[2]
                f[name] = f.get(name, 0.0) + value
        facts: dict = {}
        total = f.get("MemTotal")
        if total:
            facts["mem.total_mb"] = mb(total)
        avail = f.get("MemAvailable")
        if avail is None and "MemFree" in f and ("Cached" in f or "Buffers" in f):
            avail = f["MemFree"] + f.get("Cached", 0.0) + f.get("Buffers", 0.0)
        if avail is not None:
            facts["mem.available_mb"] = mb(avail)
            if total:
                facts["mem.available_pct"] = round(100 * avail / total, 2)
        if "MemFree" in f:
            facts["mem.free_mb"] = mb(f["MemFree"])
        if "Cached" in f or "Buffers" in f:
            facts["mem.cached_mb"] = mb(f.get("Cached", 0.0) + f.get("Buffers", 0.0))
        if "SwapTotal" in f:
            facts["mem.swap_total_mb"] = mb(f["SwapTotal"])
            if "SwapFree" in f:
                used = max(f["SwapTotal"] - f["SwapFree"], 0.0)
                facts["mem.swap_used_mb"] = mb(used)
                if f["SwapTotal"]:
                    facts["mem.swap_used_pct"] = round(100 * used / f["SwapTotal"], 2)
        if "Committed_AS" in f:
            facts["mem.committed_mb"] = mb(f["Committed_AS"])
            if f.get("CommitLimit"):
                facts["mem.committed_pct"] = round(100 * f["Committed_AS"] / f["CommitLimit"], 2)
        if "HugePages_Total" in f:
            hp = f["HugePages_Total"]
            facts["mem.hugepages_total"] = hp
            if "HugePages_Free" in f:
                facts["mem.hugepages_free"] = f["HugePages_Free"]
                if hp:
                    unused = max(f["HugePages_Free"] - f.get("HugePages_Rsvd", 0.0), 0.0)
                    facts["mem.hugepages_unused_pct"] = round(100 * unused / hp, 2)
            if "Hugepagesize" in f:
                facts["mem.hugepages_mb"] = mb(hp * f["Hugepagesize"])
        for name, fact in (
            ("PageTables", "mem.pagetables_mb"),
            ("AnonHugePages", "mem.anon_hugepages_mb"),
            ("Dirty", "mem.dirty_mb"),
        ):
            if name in f:
                facts[fact] = mb(f[name])
        if f:
            facts["meminfo.kb"] = f
        details: dict = {"fields": len(self.fields)}
        if self.nodes:
            details["nodes"] = dict(list(self.nodes.items())[:200])
        return facts, details, [], "linux"
