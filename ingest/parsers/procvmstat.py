"""Linux `/proc/vmstat`: one `name value` pair per line, the kernel's memory-management
counters (`pgscan_direct 1234`, `allocstall_normal 56`, `pswpout 789`, `compact_stall 12`,
`thp_fault_fallback 3`, `oom_kill 1`) and a few gauges (`nr_free_pages`, `nr_dirty`).

Almost all of them only grow from boot, so one sample is a total over the uptime (marked
`os.since_boot`, never a rate); two samples (`cat /proc/vmstat; sleep 10; cat /proc/vmstat`,
OSWatcher markers, `date` lines between) give the growth and, when timed, rates per second —
through the same CounterSamples as netstat. What people read off it: direct reclaim (processes
scanning for memory themselves: pgscan_direct, allocstall), swapping (pswpin/pswpout), major
faults, compaction stalls and transparent huge page fallbacks, OOM kills.
"""

from __future__ import annotations

import re
from typing import ClassVar

from ingest.base import Parser
from ingest.model import Format, Platform
from ingest.parsers.counters import CounterSamples
from ingest.parsers.pasted import number, sample_mark, unpaste

MAX_LINE = 256
MAX_KEYS = 1000
_LINE = re.compile(r"^\s*(?:\S*vmstat:)?(?P<name>[a-z][a-z0-9_]{1,60})\s+(?P<value>\d{1,20})\s*$")
# names only /proc/vmstat prints: one of them opens a block
_DISTINCT = frozenset(
    {
        "nr_free_pages",
        "nr_inactive_anon",
        "nr_active_anon",
        "nr_dirty",
        "nr_writeback",
        "pgpgin",
        "pgpgout",
        "pswpin",
        "pswpout",
        "pgfault",
        "pgmajfault",
        "pgscan_kswapd",
        "pgscan_direct",
        "pgsteal_kswapd",
        "pgsteal_direct",
        "allocstall",
        "allocstall_normal",
        "compact_stall",
        "thp_fault_alloc",
        "thp_fault_fallback",
        "oom_kill",
        "workingset_refault",
        "workingset_refault_file",
    }
)
# current values, not counters
_GAUGE_PREFIXES = ("nr_",)
_COMMAND = re.compile(r"^\s*(?:\S*[#$%>]\s*)?(?:cat|grep|egrep|head|less)\b.*\bvmstat\b")


def _sum(values: dict[str, float], *prefixes: str) -> float | None:
    """pgscan_direct on old kernels, pgscan_direct_normal/_dma32/_movable on 3.x-4.x."""
    hits = [v for k, v in values.items() if k.startswith(prefixes)]
    return sum(hits) if hits else None


class ProcVmstatParser(Parser):
    format: ClassVar[Format] = "procvmstat"

    def __init__(self) -> None:
        super().__init__()
        self.counters = CounterSamples(max_keys=MAX_KEYS)
        self.gauges: set[str] = set()

    @classmethod
    def start_score(cls, line: str) -> int:
        if len(line) > MAX_LINE or not ("_" in line or "pg" in line or "vmstat" in line):
            return 0
        m = _LINE.match(unpaste(line))
        if m is None:
            return 1 if _COMMAND.match(line) else 0
        return 2 if m["name"] in _DISTINCT else 0

    def feed(self, line: str) -> bool:
        if len(line) > MAX_LINE:
            return False
        text = unpaste(line)
        if not text.strip():
            return False
        m = _LINE.match(text)
        if m is None:
            if _COMMAND.match(text):
                if self.counters.last:
                    self.counters.new_sample()  # `cat /proc/vmstat` again: the next sample
                return True
            if (self.lines and text.lstrip().startswith("zzz")) or (
                self.counters.last and text[:1].isalpha()
            ):
                mark = sample_mark(text)
                if mark is not None:
                    self.counters.mark(mark[1])
                    return True
            return False
        name = m["name"]
        value = number(m["value"])
        if value is None:
            self.malformed += 1
            return True
        if name.startswith(_GAUGE_PREFIXES):
            self.gauges.add(name)
            self.counters.gauges = frozenset(self.gauges)
        self.counters.set(name, value)
        return True

    def facts(self) -> tuple[dict, dict, list[str], Platform | None]:
        c = self.counters
        if not c.last:
            return {}, {}, [], None
        values = c.values()
        facts: dict = {"vm.counter": values, "os.since_boot": 1.0 if c.since_boot else 0.0}
        if (rate := c.rate(values)) is not None:
            facts["vm.interval_s"], facts["vm.per_s"] = rate
        for fact, prefixes in (
            ("vm.direct_scan_pages", ("pgscan_direct",)),
            ("vm.allocstall", ("allocstall",)),
            ("vm.swap_pages", ("pswpin", "pswpout")),
            ("vm.major_faults", ("pgmajfault",)),
            ("vm.compact_stall", ("compact_stall",)),
            ("vm.thp_fallback", ("thp_fault_fallback",)),
            ("vm.oom_kill", ("oom_kill",)),
        ):
            total = _sum(values, *prefixes)
            if total is not None:
                facts[fact] = total
        details = {"samples": c.samples, "since_boot": c.since_boot, "mode": c.mode}
        return facts, details, [], "linux"
