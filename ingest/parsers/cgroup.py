"""Linux cgroup CPU bandwidth: `cpu.stat` of a container, pod or systemd unit, and its quota.

cgroup v1 (`/sys/fs/cgroup/cpu,cpuacct/.../cpu.stat`) prints

    nr_periods 3123
    nr_throttled 862
    throttled_time 90781462123          <- nanoseconds

and cgroup v2 (`/sys/fs/cgroup/.../cpu.stat`) prints

    usage_usec 8123456789
    user_usec 6123456789
    system_usec 2000000000
    nr_periods 3123
    nr_throttled 862
    throttled_usec 90781462             <- microseconds
    nr_bursts 0
    burst_usec 0

(v1 on 5.13+ adds nr_bursts/burst_time; v2 on 5.x+ may add core_sched.force_idle_usec). Every
value counts from the cgroup's creation, so one sample says nothing about now (marked
`os.since_boot`, its ratio kept in the details only); two samples (`cat; sleep 10; cat`, a
`for` loop, `date` lines or OSWatcher `zzz` markers between) give the share of CFS periods in
which the group ran out of quota and the time it sat throttled, through the same CounterSamples
as netstat and /proc/vmstat. The interval comes from the timestamps, else from the `sleep N` of
the command line that took the samples.

The quota, when pasted, is read too: v2 `cpu.max` (`200000 100000` or `max 100000`), v1
`cpu.cfs_quota_us` / `cpu.cfs_period_us` (-1: no limit) and systemd's
`CPUQuotaPerSecUSec=2s` (`systemctl show -p CPUQuotaPerSecUSec UNIT`). Lines may carry the
path `grep . .../cpu.stat` prints (`/sys/fs/cgroup/.../cpu.stat:nr_periods 3123`): each cgroup
is then its own series, keyed by its directory.
"""

from __future__ import annotations

import re
from typing import ClassVar

from ingest.base import Parser
from ingest.model import Format, Platform
from ingest.parsers.counters import CounterSamples
from ingest.parsers.pasted import number, sample_mark, unpaste

MAX_LINE = 1024
MAX_GROUPS = 50  # cgroups kept per block (a grep over a whole kubepods tree stops there)
# cpu.stat keys (v1 and v2); throttled_time and burst_time are nanoseconds, *_usec microseconds
_STAT_KEYS = frozenset(
    {
        "nr_periods",
        "nr_throttled",
        "throttled_time",
        "throttled_usec",
        "usage_usec",
        "user_usec",
        "system_usec",
        "nr_bursts",
        "burst_usec",
        "burst_time",
        "core_sched.force_idle_usec",
        "wait_sum",  # v1 with schedstats
    }
)
# names only cpu.stat prints: one of them opens a block
_OPENERS = frozenset(
    {"nr_periods", "nr_throttled", "throttled_time", "throttled_usec", "usage_usec"}
)
_STAT = re.compile(
    r"^\s*(?:(?P<path>[^\s:]{0,400}/)?(?:cpu\.stat|cpuacct\.stat)?:)?"
    r"(?P<name>[a-z_][a-z_.]{2,30})\s+(?P<value>\d[\d,.'\u00a0]{0,30})\s*$"
)
# `cpu.max` (v2): quota and period in us, or `max`; v1 quota/period files: one integer
_MAX = re.compile(
    r"^\s*(?:(?P<path>[^\s:]{0,400}/)?cpu\.max:)?(?P<quota>max|\d{1,12})\s+(?P<period>\d{1,9})\s*$"
)
_CFS = re.compile(
    r"^\s*(?:(?P<path>[^\s:]{0,400}/)?cpu\.cfs_(?P<which1>quota|period)_us:)?(?P<value>-?\d{1,12})\s*$"
)
_SYSTEMD = re.compile(
    r"^\s*CPUQuotaPerSecUSec=(?:(?P<inf>infinity)|(?P<value>\d+(?:\.\d+)?)(?P<unit>ms|us|s|min)?)\s*$"
)
# the command that printed the files: which file the bare numbers below it are, and `sleep N`
_COMMAND = re.compile(
    r"(?:^|[\s;|&(`$#])(?:cat|grep|egrep|head|tail|more|less)\s"
    r"(?P<args>[^;|&]{0,400}?(?P<file>cpu\.stat|cpu\.max|cpu\.cfs_quota_us|cpu\.cfs_period_us)\b)"
)
_SLEEP = re.compile(r"\bsleep\s+(?P<s>\d{1,5}(?:\.\d+)?)\b")
_PATH_IN = re.compile(
    r"(?P<dir>/[^\s$;|&()]*?)/(?:cpu\.stat|cpu\.max|cpu\.cfs_(?:quota|period)_us)\b"
)
_UNIT_CMD = re.compile(
    r"\bsystemctl\s+show\b[^;|&]*?CPUQuota\w*[^;|&]*?\s(?P<unit>[\w@.:-]{1,200}\.(?:service|slice|scope))\b"
)
_UNITS = {"us": 1e-6, "ms": 1e-3, "s": 1.0, "min": 60.0, None: 1e-6}


def _group(path: str | None) -> str:
    """The cgroup a path names: its directory under /sys/fs/cgroup (or as printed)."""
    if not path:
        return ""
    path = path.rstrip("/")
    for root in ("/sys/fs/cgroup/", "/cgroup/"):
        if root in path:
            path = path.split(root, 1)[1]
            break
    for controller in ("cpu,cpuacct/", "cpuacct,cpu/", "cpu/"):
        if path.startswith(controller):
            path = path[len(controller) :]
    return path or "/"


class CgroupCpuParser(Parser):
    format: ClassVar[Format] = "cgroup"
    platforms: ClassVar[tuple[str, ...]] = ("linux",)

    def __init__(self) -> None:
        super().__init__()
        # one series per cgroup: a `grep` of several groups, or a group pasted once after
        # another pasted twice, each keep their own sample count
        self.counters: dict[str, CounterSamples] = {}
        self.when: float | None = None  # the time of the last marker, for a group opened after it
        self.group = ""  # the cgroup the current bare lines belong to (from a command line)
        self.file = "cpu.stat"  # the file the current bare lines are
        self.sleep_s: float | None = None
        self.quota: dict[str, float] = {}  # cgroup -> CPUs allowed (quota / period); 0 = none
        self.cfs: dict[str, dict[str, float]] = {}
        self.groups: list[str] = []

    @classmethod
    def start_score(cls, line: str) -> int:
        if len(line) > MAX_LINE:
            return 0
        if "cpu.max" in line or "cpu.cfs_" in line or "cpu.stat" in line:
            text = unpaste(line)
            m = _STAT.match(text)
            if m is not None and m["name"] in _STAT_KEYS and ":" in text:
                return 2
            if _MAX.match(text) or (_CFS.match(text) and "cpu.cfs_" in text):
                return 2
            return 1 if _COMMAND.search(line) else 0
        if "CPUQuota" in line:
            if _SYSTEMD.match(unpaste(line)):
                return 2
            return 1 if _UNIT_CMD.search(line) else 0
        if not ("nr_" in line or "_usec" in line or "throttled" in line):
            return 0
        m = _STAT.match(unpaste(line))
        return 2 if m is not None and m["name"] in _OPENERS else 0

    def _group_key(self, group: str) -> str | None:
        group = group or "cgroup"
        if group not in self.groups:
            if len(self.groups) >= MAX_GROUPS:
                return None
            self.groups.append(group)
        return group

    def _series(self, group: str) -> CounterSamples:
        series = self.counters.get(group)
        if series is None:
            series = self.counters[group] = CounterSamples(max_keys=len(_STAT_KEYS))
            if self.when is not None:
                series.times[1] = self.when
        return series

    def feed(self, line: str) -> bool:
        if len(line) > MAX_LINE:
            return False
        text = unpaste(line, prompts=False)
        if not text.strip():
            return bool(self.lines)
        if (m := _STAT.match(text)) is not None and m["name"] in _STAT_KEYS:
            value = number(m["value"])
            group = self._group_key(_group(m["path"]) if m["path"] else self.group)
            if value is None:
                self.malformed += 1
            elif group is not None:
                self._series(group).set(m["name"], value)
            return True
        if (m := _SYSTEMD.match(text)) is not None:
            if (group := self._group_key(self.group)) is not None:
                self.quota[group] = 0.0 if m["inf"] else float(m["value"]) * _UNITS[m["unit"]]
            return True
        if (m := _MAX.match(text)) is not None and (m["path"] or self.file == "cpu.max"):
            group = self._group_key(_group(m["path"]) if m["path"] else self.group)
            period = float(m["period"])
            if group is not None and period > 0:
                self.quota[group] = 0.0 if m["quota"] == "max" else float(m["quota"]) / period
            return True
        if (m := _CFS.match(text)) is not None and (m["which1"] or self.file.startswith("cpu.cfs")):
            group = self._group_key(_group(m["path"]) if m["path"] else self.group)
            which = m["which1"] or ("quota" if "quota" in self.file else "period")
            if group is not None:
                self.cfs.setdefault(group, {})[which] = float(m["value"])
            return True
        command = unpaste(text, prompts=True)
        if (c := _COMMAND.search(text)) is not None:
            self.file = c["file"]
            where = _PATH_IN.search(c["args"])
            self.group = _group(where["dir"]) if where else ""
            if (s := _SLEEP.search(text)) is not None:
                self.sleep_s = float(s["s"])
            if self.file == "cpu.stat" and (series := self.counters.get(self.group or "cgroup")):
                series.new_sample()
            return True
        if (u := _UNIT_CMD.search(text)) is not None:
            self.group, self.file = u["unit"], "systemd"
            return True
        if (s := _SLEEP.search(command)) is not None and command.lstrip().startswith("sleep"):
            self.sleep_s = float(s["s"])
            return True
        if self.lines and text.strip()[:1].isalpha() or text.lstrip().startswith("zzz"):
            mark = sample_mark(text)
            if mark is not None:
                self.when = mark[1]
                for series in self.counters.values():
                    series.mark(mark[1])
                return True
        return False

    # -- facts -----------------------------------------------------------------------------------

    def _quotas(self) -> dict[str, float]:
        out = dict(self.quota)
        for group, v in self.cfs.items():
            quota, period = v.get("quota"), v.get("period", 100000.0)
            if quota is not None and period > 0:
                out.setdefault(group, 0.0 if quota < 0 else quota / period)
        return out

    def _interval(self, c: CounterSamples) -> tuple[float, str] | None:
        start, end = c.times.get(1), c.times.get(c.samples)
        if c.samples > 1 and start is not None and end is not None and end > start:
            return end - start, "timestamps"
        if c.samples > 1 and self.sleep_s:
            return self.sleep_s * (c.samples - 1), "sleep"
        return None

    def facts(self) -> tuple[dict, dict, list[str], Platform | None]:
        quotas = self._quotas()
        if not self.counters and not quotas:
            return {}, {}, [], None
        facts: dict = {}
        details: dict = {"groups": {}}
        throttled_pct: dict[str, float] = {}
        periods: dict[str, float] = {}
        throttled_s: dict[str, float] = {}
        used: dict[str, float] = {}
        intervals: list[float] = []
        for name, c in self.counters.items():
            v = c.values()
            shown: dict = dict(v, samples=c.samples)
            n_periods, throttled = v.get("nr_periods"), v.get("nr_throttled")
            if "throttled_usec" in v:
                wait_s = v["throttled_usec"] / 1e6
            elif "throttled_time" in v:
                wait_s = v["throttled_time"] / 1e9
            else:
                wait_s = None
            details["groups"][name] = shown
            if c.samples == 1:  # totals since the group was made: no rate, no fact
                if n_periods:
                    ratio = 100.0 * (throttled or 0) / n_periods
                    shown["throttled_pct_since_creation"] = round(ratio, 2)
                continue
            interval = self._interval(c)
            if interval is not None:
                intervals.append(interval[0])
                shown["interval_s"], shown["interval_from"] = round(interval[0], 3), interval[1]
            if n_periods and throttled is not None:
                throttled_pct[name] = round(100.0 * throttled / n_periods, 2)
                periods[name] = n_periods
            if interval is not None and wait_s is not None:
                throttled_s[name] = round(wait_s / interval[0], 4)
            if interval is not None and "usage_usec" in v:
                used[name] = round(v["usage_usec"] / 1e6 / interval[0], 3)
            if wait_s is not None and n_periods:
                shown["throttled_ms_per_period"] = round(1000.0 * wait_s / n_periods, 3)
        if self.counters:
            several = any(c.samples > 1 for c in self.counters.values())
            facts["os.since_boot"] = 0.0 if several else 1.0
        if intervals:
            facts["cgroup.interval_s"] = round(max(intervals), 3)
        if throttled_pct:
            facts["cgroup.throttled_periods_pct"] = throttled_pct
            worst = max(throttled_pct, key=lambda g: (throttled_pct[g], g))
            facts["cgroup.max_throttled_periods_pct"] = throttled_pct[worst]
            facts["cgroup.periods"] = periods[worst]
        if throttled_s:
            facts["cgroup.throttled_s_per_s"] = throttled_s
            facts["cgroup.max_throttled_s_per_s"] = max(throttled_s.values())
        if used:
            facts["cgroup.cpus_used"] = used
        if quotas:
            limited = {g: q for g, q in quotas.items() if q > 0}
            if limited:
                facts["cgroup.quota_cpus"] = limited
                facts["cgroup.min_quota_cpus"] = min(limited.values())
            details["quota_cpus"] = quotas
        identifiers = ["cpu.stat", "nr_throttled"] if self.counters else ["cpu.max"]
        return facts, details, identifiers, "linux"
