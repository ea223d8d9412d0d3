"""sar: sysstat (-u [ALL], -P, -q, -r, -B, -W, -S, -w, -d, -n DEV, -n EDEV, -n TCP, -n ETCP, any
mix of them in one report, `Average:` rows, 12 h clocks, `LINUX RESTART` lines, the banner with
the CPU count) and Solaris sar (-u `%usr %sys %wio %idle`, -q, -d `device %busy avque r+w/s
blks/s avwait avserv` with the time only on a group's first row, -w, -g).

Each section's header names its columns; rows are read by those names. sar reads history files,
so every row is an interval (no since-boot row); `Average:` rows are sar's own means and are
used only when a section has no timed rows. Device rows become the same `dev.*` / `io.*` facts
as iostat. Memory is bounded: a Series per (section, key, column), with keys and sections
capped.
"""

from __future__ import annotations

import re
from typing import ClassVar

from ingest.base import Parser
from ingest.model import Format, Platform
from ingest.parsers.iostat import device_facts
from ingest.parsers.ostable import (
    Series,
    banner,
    banner_line,
    cleaned,
    clock_row,
    command,
    findings,
    is_command_of,
    native_table,
    num,
    r3,
    series_of,
    split_clock,
)

MAX_KEYS = 512
MAX_SECTIONS = 32

# the columns that name a row's key rather than a value
_KEY_COLUMNS = {"CPU": "cpu", "DEV": "dev", "IFACE": "iface", "device": "dev", "INTR": "intr"}
_KNOWN_NAMES = (
    "%user %usr %nice %system %sys %iowait %steal %irq %soft %guest %gnice %idle %wio "
    "runq-sz plist-sz ldavg-1 ldavg-5 ldavg-15 blocked %runocc swpq-sz %swpocc "
    "kbmemfree kbavail kbmemused %memused kbbuffers kbcached kbcommit %commit kbactive kbinact "
    "kbdirty kbanonpg kbslab kbkstack kbpgtbl kbvmused freemem freeswap "
    "pgpgin/s pgpgout/s fault/s majflt/s pgfree/s pgscank/s pgscand/s pgsteal/s %vmeff "
    "pswpin/s pswpout/s kbswpfree kbswpused %swpused kbswpcad %swpcad proc/s cswch/s "
    "swpin/s bswin/s swpot/s bswot/s pswch/s tps rd_sec/s wr_sec/s rkB/s wkB/s dkB/s avgrq-sz "
    "areq-sz avgqu-sz aqu-sz await svctm %util %busy avque r+w/s blks/s avwait avserv "
    "rxpck/s txpck/s rxkB/s txkB/s rxcmp/s txcmp/s rxmcst/s %ifutil rxerr/s txerr/s coll/s "
    "rxdrop/s txdrop/s txcarr/s rxfram/s rxfifo/s txfifo/s active/s passive/s iseg/s oseg/s "
    "atmptf/s estres/s retrans/s isegerr/s orsts/s rtps wtps bread/s bwrtn/s intr/s "
    "pgout/s ppgout/s pgfree/s pgscan/s %ufs_ipf"
)
_KNOWN = frozenset(_KNOWN_NAMES.split())
_NAME = re.compile(r"^[%a-zA-Z][\w%/+.-]{0,20}$")
_MPSTAT_ORDER = ("%iowait", "%irq")  # mpstat prints %irq right after %iowait; sar -u ALL does not
_SOLARIS_BANNER = re.compile(r"^SunOS\s+\S+\s+\d+\.\d+\S*\s+\S+\s+\S+\s+\d{1,2}/\d{1,2}/\d{2,4}$")
# a section header, command or banner holds one of these (checked before any regex)
_HINTS = ("%", "/s", "-sz", "kb", "DEV", "IFACE", "device", "sar", "SunOS", "CPU)", "freemem")
_RESTART = re.compile(r"\bRESTART\b")
_CPUS = re.compile(r"\((\d{1,6})\s+CPU\)")
# sysstat -> one meaning for the device columns iostat also prints
_DEV_COLUMNS = {
    "tps": ("tps", 1.0),
    "r+w/s": ("tps", 1.0),
    "rd_sec/s": ("rkb_s", 0.5),
    "wr_sec/s": ("wkb_s", 0.5),
    "rkB/s": ("rkb_s", 1.0),
    "wkB/s": ("wkb_s", 1.0),
    "await": ("await", 1.0),
    "avgqu-sz": ("queue", 1.0),
    "aqu-sz": ("queue", 1.0),
    "avque": ("queue", 1.0),
    "svctm": ("svctm", 1.0),
    "avserv": ("svctm", 1.0),
    "%util": ("util", 1.0),
    "%busy": ("util", 1.0),
}


def _header(tokens: list[str]) -> tuple[int | None, list[str]] | None:
    """(index of the key column or None, column names) of a sar section header."""
    if not tokens or len(tokens) > 24:
        return None
    if any(t in ("PID", "TID", "TGID", "Command", "UID", "USER") for t in tokens):
        return None  # pidstat
    if not all(_NAME.match(t) for t in tokens):
        return None
    key = None
    for i, t in enumerate(tokens):
        if t in _KEY_COLUMNS:
            key = i
            break
    values = [t for i, t in enumerate(tokens) if i != key]
    if not values or not all(v in _KNOWN for v in values):
        return None
    if key is not None and tokens[key] == "CPU":
        # mpstat's table, not sar -u: %irq right after %iowait (sar -u ALL puts %steal there)
        if "%iowait" in values:
            at = values.index("%iowait")
            if at + 1 < len(values) and values[at + 1] == _MPSTAT_ORDER[1]:
                return None
        if any(v in ("intr/s",) for v in values):
            return None
    return key, tokens


class _Section:
    """One section's rows: per key and column a Series. With the C core the series live in a
    Table (ostable.native_table): its run() reads the common rows, and the rows the Python
    reader reads are added to the same store, so a section has one."""

    __slots__ = ("key", "names", "_stats", "average", "core", "_values")

    def __init__(self, key: int | None, names: list[str]) -> None:
        self.key = key
        self.names = names
        self._stats: dict[str, dict[str, Series]] = {}  # row key ("" when unkeyed) -> column
        self.average: dict[str, dict[str, float]] = {}
        self._values = [n for i, n in enumerate(names) if i != key]
        self.core = None
        if key in (None, 0) and len(set(names)) == len(names):
            self.core = native_table(
                self._values,
                keyed=key == 0,
                bounds={n: (0.0, 100.5) for n in self._values if _checked(n)},
                points=1 if key is None else 2,
                max_keys=MAX_KEYS,
                comma=2,  # sysstat under a European locale: `21,97` (pasted.number's reading)
            )

    @property
    def stats(self) -> dict[str, dict[str, Series]]:
        if self.core is None:
            return self._stats
        keys = self.core.export()[0]
        out: dict[str, dict[str, Series]] = {}
        for rowkey, cols in keys:
            points = self.key is None or rowkey in ("all", "-1")
            out[rowkey] = {self._values[c]: series_of(st, points) for c, st in cols}
        return out

    def add(self, rowkey: str, values: dict[str, float], average: bool) -> None:
        if average:
            if rowkey in self.average or len(self.average) < MAX_KEYS:
                self.average[rowkey] = values
            return
        if self.core is not None:
            self.core.add(rowkey, [values.get(n) for n in self._values])
            return
        cols = self._stats.get(rowkey)
        if cols is None:
            if len(self._stats) >= MAX_KEYS:
                return
            cols = self._stats[rowkey] = {}
        for name, value in values.items():
            s = cols.get(name)
            if s is None:
                s = cols[name] = Series(points=self.key is None or rowkey in ("all", "-1"))
            s.add(value)

    def rows(self) -> dict[str, dict[str, Series]]:
        """Per key and column: the timed rows, else sar's Average rows as one sample."""
        stats = self.stats
        if stats:
            return stats
        out: dict[str, dict[str, Series]] = {}
        for rowkey, values in self.average.items():
            cols = out[rowkey] = {}
            for name, value in values.items():
                cols[name] = Series()
                cols[name].add(value)
        return out


def _checked(name: str) -> bool:
    """A percentage column a row must keep within 0-100.5 (else the row is malformed)."""
    return name.startswith("%") and name != "%commit"


class SarParser(Parser):
    format: ClassVar[Format] = "sar"
    fast = True  # long runs of rows per section: Parser.feed_steps

    def __init__(self) -> None:
        super().__init__()
        self.kind: str | None = None  # linux | solaris
        self.banner: dict | None = None
        self.sections: dict[tuple[str, ...], _Section] = {}
        self.section: _Section | None = None
        self.first_label = ""
        self.last_label = ""
        self.restarts = 0
        self.days = 1  # reports (banners) of one host read as one capture
        self.restart_cpus: int | None = None
        self.twelve_hour = False

    feed_run = Parser.feed_steps

    def run_step(self, text: str, pos: int, endpos: int, plain: dict) -> tuple[int, int, int]:
        """Parser.feed_steps' step: the rows of the open section read by its C Table where there
        is one; the line the Table stops at (a header, an Average row, anything odd) goes
        through feed as before, then the Table reads on."""
        core = self.section.core if self.section is not None else None
        if core is None:
            return pos, 0, self.STEP_FEED
        pos, n, first, last = core.run(text, pos, endpos)
        if n:
            self.first_label = self.first_label or first
            self.last_label = last
        return pos, n, self.STEP_STOP if pos >= endpos else self.STEP_FEED

    # -- detection ------------------------------------------------------------------------------

    @classmethod
    def start_score(cls, line: str) -> int:
        got = cleaned(line, _HINTS)
        if got is None:
            return 0
        text, tokens = got
        _, _, rest = split_clock(tokens)
        if rest and rest[0].endswith(":"):
            return 0
        if _header(rest):
            return 2
        if _SOLARIS_BANNER.match(text):
            return 1
        if is_command_of(text, "sar"):
            return 2
        if banner(text):
            return 1
        return 0

    @classmethod
    def claims(cls, line: str) -> bool:
        """sysstat's banner continues this block even though mpstat would start on it: it is
        the top of this report (after its command line); feed refuses it once rows came."""
        if clock_row(line):
            return True  # `05:10:01 PM  0  361 ...`, `10:00:05  dev8-0  1.0 ...`
        return banner_line(line)

    # -- feeding --------------------------------------------------------------------------------

    def feed(self, line: str) -> bool:
        got = cleaned(line)
        if got is None:
            return False
        text, tokens = got
        if cmd := command(text):
            return cmd[0] == "sar" and not self.sections
        if b := banner(text):
            if self.banner is not None and b.get("host") == self.banner.get("host"):
                self.days += 1  # the next day's report of the same host: one capture
                return True
            if self.sections or self.banner is not None:
                return False
            self.banner = b
            self.kind = "linux"
            return True
        if _SOLARIS_BANNER.match(text):
            if self.sections or self.banner is not None:
                return False
            self.banner = {"host": tokens[1], "kernel": tokens[2]}
            self.kind = "solaris"
            return True
        label, secs, rest = split_clock(tokens)
        if self.section is not None and rest and num(rest[-1]) is not None:
            return self._row(label, secs, rest)  # the common line: headers end in a name
        if rest and _RESTART.search(" ".join(rest)):
            if not label:
                return False  # refused before anything is counted (base.Parser.feed: no trace)
            self.restarts += 1
            if m := _CPUS.search(text):
                self.restart_cpus = int(m.group(1))
            return True
        if header := _header(rest):
            key, names = header
            sig = tuple(names)
            section = self.sections.get(sig)
            if section is None:
                if len(self.sections) >= MAX_SECTIONS:
                    return False
                section = self.sections[sig] = _Section(key, names)
                if self.kind is None:
                    solaris = {"%wio", "%runocc", "avque", "avserv", "pswch/s", "freemem"}
                    self.kind = "solaris" if solaris & set(names) else "linux"
            self.section = section
            self.twelve_hour |= label.endswith(("AM", "PM", "am", "pm"))
            return True
        if self.section is None:
            return False
        return self._row(label, secs, rest)

    def _row(self, label: str, secs: int | None, rest: list[str]) -> bool:
        section = self.section
        assert section is not None
        if not rest:
            return False
        average = bool(label) and secs is None
        if not label and num(rest[-1]) is None:
            return False  # rows without a time (Solaris group rows, a paste that cut the time)
        short = self.kind == "solaris" and section.key is None and len(rest) < len(section.names)
        if short and all(num(t) is not None for t in rest):
            # Solaris leaves a column blank when it has nothing to say (sar -q swpq-sz %swpocc
            # when nothing is swapped out): the values present are the leftmost columns
            rest = rest + [""] * (len(section.names) - len(rest))
        elif len(rest) != len(section.names):
            if len(rest) > 1 and all(num(t) is not None for t in rest[1:]):
                self.malformed += 1
                return True
            return False
        rowkey = ""
        values: dict[str, float] = {}
        for i, (name, tok) in enumerate(zip(section.names, rest, strict=True)):
            if i == section.key:
                rowkey = tok
                continue
            if not tok:
                continue
            value = num(tok)
            if value is None:
                self.malformed += 1
                return True
            values[name] = value
        if any(_checked(n) and not 0 <= v <= 100.5 for n, v in values.items()):
            self.malformed += 1
            return True
        if secs is not None:
            self.last_label = label
            self.first_label = self.first_label or label
        section.add(rowkey, values, average)
        return True

    # -- results --------------------------------------------------------------------------------

    def _cpus(self) -> int | None:
        if self.banner and "cpus" in self.banner:
            return int(self.banner["cpus"])
        return self.restart_cpus

    def facts(self) -> tuple[dict, dict, list[str], Platform | None]:
        facts: dict = {}
        notes: list[str] = []
        details: dict = {"notes": notes, "sections": [], "series": {}}
        cpus = self._cpus()
        if cpus:
            facts["cpu.count"] = float(cpus)
        if self.banner:
            details["banner"] = self.banner
        if self.days > 1:
            notes.append(
                f"{self.days} daily reports of {self.banner.get('host') if self.banner else '?'}"
            )
        if self.restarts:
            notes.append(f"{self.restarts} restart lines: the counters started again there")
        devices: dict[str, dict[str, float]] = {}
        samples = 0
        for section in self.sections.values():
            rows = section.rows()
            if not section.stats and section.average:
                notes.append(f"only Average rows for {' '.join(section.names)[:60]}")
            details["sections"].append(" ".join(section.names))
            for rowkey, cols in rows.items():
                samples = max(samples, max((s.n for s in cols.values()), default=0))
                if section.key is None:
                    self._scalar_facts(cols, facts, details, cpus)
                elif section.names[section.key] == "CPU" and rowkey in ("all", "-1"):
                    self._cpu_facts(cols, facts, details)
                elif section.names[section.key] in ("DEV", "device"):
                    row = _device_row(cols)
                    if row and (rowkey in devices or len(devices) < MAX_KEYS):
                        devices[rowkey] = row
                elif section.names[section.key] == "IFACE":
                    self._net_facts(rowkey, cols, facts)
            if section.key is not None and section.names[section.key] == "CPU":
                per_cpu = {k: c for k, c in rows.items() if k not in ("all", "-1")}
                if per_cpu and "cpu.usr_pct" not in facts:
                    # -P with no `all` row: the mean of the CPUs
                    merged: dict[str, Series] = {}
                    for cols in per_cpu.values():
                        for name, s in cols.items():
                            m = merged.setdefault(name, Series())
                            if s.mean is not None:
                                m.add(s.mean)
                    self._cpu_facts(merged, facts, details)
        self._tcp_ratio(facts)
        if devices:
            device_facts(devices, facts, details)
            details["devices"] = [
                {"device": d, **{k: round(v, 2) for k, v in r.items()}}
                for d, r in sorted(devices.items(), key=lambda kv: -kv[1].get("await", 0.0))[:50]
            ]
        if samples:
            facts["sar.samples"] = float(samples)
        if self.first_label:
            details["span"] = [self.first_label, self.last_label]
        platform: Platform | None = {"linux": "linux", "solaris": "solaris"}.get(self.kind or "")  # type: ignore[assignment]
        details["findings"] = findings(facts, notes)
        return facts, details, ["sar"], platform

    @staticmethod
    def _put(facts: dict, fact: str, s: Series | None, how: str, scale: float = 1.0) -> None:
        if s is None or not s.n:
            return
        value = {"avg": s.mean, "max": s.high, "min": s.low, "last": s.last}[how]
        if value is not None:
            facts[fact] = r3(value * scale)

    def _cpu_facts(self, cols: dict[str, Series], facts: dict, details: dict) -> None:
        put = self._put
        for key, names in (
            ("usr", ("%user", "%usr")),
            ("sys", ("%system", "%sys")),
            ("wait", ("%iowait", "%wio")),
            ("idle", ("%idle",)),
            ("steal", ("%steal",)),
        ):
            for name in names:
                if name in cols:
                    put(facts, f"cpu.{key}_pct", cols[name], "avg")
                    if key == "wait":
                        put(facts, "cpu.max_wait_pct", cols[name], "max")
                    break
        if "%irq" in cols or "%soft" in cols:
            irq = sum((cols[n].mean or 0.0) for n in ("%irq", "%soft") if n in cols)
            facts["cpu.irq_pct"] = r3(irq)
        if "%idle" in cols:
            facts["cpu.max_busy_pct"] = r3(100 - cols["%idle"].low)
            facts["cpu.intervals"] = float(cols["%idle"].n)
            details["series"]["idle"] = [round(v, 2) for v in cols["%idle"].chart()]
        for name in ("%iowait", "%wio"):
            if name in cols:
                details["series"]["iowait"] = [round(v, 2) for v in cols[name].chart()]

    def _scalar_facts(
        self, cols: dict[str, Series], facts: dict, details: dict, cpus: int | None
    ) -> None:
        put = self._put
        g = cols.get
        if any(n in cols for n in ("%usr", "%user", "%wio")):
            self._cpu_facts(cols, facts, details)
        if (runq := g("runq-sz")) is not None:
            put(facts, "runq.avg", runq, "avg")
            put(facts, "runq.max", runq, "max")
            details["series"]["runq-sz"] = [round(v, 2) for v in runq.chart()]
            if cpus and runq.n:
                facts["runq.per_cpu_max"] = r3(runq.high / cpus)
        put(facts, "runq.blocked_avg", g("blocked"), "avg")
        put(facts, "runq.blocked_max", g("blocked"), "max")
        put(facts, "runq.plist_max", g("plist-sz"), "max")
        if (ld1 := g("ldavg-1")) is not None:
            put(facts, "runq.ldavg_1_max", ld1, "max")
            put(facts, "runq.ldavg_1_avg", ld1, "avg")
            put(facts, "runq.ldavg_1_last", ld1, "last")
            details["series"]["ldavg-1"] = [round(v, 2) for v in ld1.chart()]
            if cpus and ld1.n:
                facts["runq.ldavg_per_cpu_max"] = r3(ld1.high / cpus)
        put(facts, "runq.ldavg_15_last", g("ldavg-15"), "last")
        put(facts, "mem.free_kb_min", g("kbmemfree"), "min")
        put(facts, "mem.free_kb_avg", g("kbmemfree"), "avg")
        put(facts, "mem.avail_kb_min", g("kbavail"), "min")
        put(facts, "mem.used_pct_max", g("%memused"), "max")
        put(facts, "mem.commit_pct_max", g("%commit"), "max")
        put(facts, "swap.used_pct_max", g("%swpused"), "max")
        scan = [s for s in (g("pgscank/s"), g("pgscand/s"), g("pgscan/s")) if s is not None]
        if scan:
            facts["page.scan_rate_avg"] = r3(sum(s.mean or 0.0 for s in scan))
            facts["page.scan_rate_max"] = r3(sum(s.high for s in scan))
        put(facts, "page.majflt_per_s_max", g("majflt/s"), "max")
        for fact, name in (
            ("swap.in_pages_per_s", "pswpin/s"),
            ("swap.out_pages_per_s", "pswpout/s"),
            ("swap.in_pages_per_s", "swpin/s"),
            ("swap.out_pages_per_s", "swpot/s"),
        ):
            put(facts, f"{fact}_avg", g(name), "avg")
            put(facts, f"{fact}_max", g(name), "max")
        for name in ("cswch/s", "pswch/s"):
            put(facts, "sys.cs_per_s_avg", g(name), "avg")
            put(facts, "sys.cs_per_s_max", g(name), "max")
        for fact, name in (
            ("tcp.retrans_per_s", "retrans/s"),
            ("tcp.active_per_s", "active/s"),
            ("tcp.passive_per_s", "passive/s"),
            ("tcp.oseg_per_s", "oseg/s"),
            ("tcp.resets_per_s", "orsts/s"),
            ("tcp.failed_per_s", "atmptf/s"),
        ):
            put(facts, f"{fact}_avg", g(name), "avg")
            put(facts, f"{fact}_max", g(name), "max")

    @staticmethod
    def _tcp_ratio(facts: dict) -> None:
        """Retransmits per segment sent: the rate that means something (a count alone grows
        with traffic)."""
        retrans, oseg = facts.get("tcp.retrans_per_s_avg"), facts.get("tcp.oseg_per_s_avg")
        if retrans is not None and oseg:
            facts["tcp.retrans_pct"] = r3(100.0 * retrans / oseg)

    @staticmethod
    def _net_facts(iface: str, cols: dict[str, Series], facts: dict) -> None:
        for fact, name in (
            ("net.rx_kb_per_s", "rxkB/s"),
            ("net.tx_kb_per_s", "txkB/s"),
            ("net.rx_pkts_per_s", "rxpck/s"),
            ("net.tx_pkts_per_s", "txpck/s"),
            ("net.util_pct", "%ifutil"),
            ("net.rx_errors_per_s", "rxerr/s"),
            ("net.tx_errors_per_s", "txerr/s"),
            ("net.rx_drops_per_s", "rxdrop/s"),
            ("net.tx_drops_per_s", "txdrop/s"),
        ):
            s = cols.get(name)
            if s is not None and s.mean is not None:
                table = facts.setdefault(fact, {})
                if iface in table or len(table) < MAX_KEYS:
                    table[iface] = r3(s.mean)
        if (s := cols.get("%ifutil")) is not None and s.n:
            facts["net.max_util_pct"] = r3(max(facts.get("net.max_util_pct", 0.0), s.high))


def _device_row(cols: dict[str, Series]) -> dict[str, float]:
    """A sar -d device's columns in iostat's meanings (means, and the worst await and %util)."""
    row: dict[str, float] = {}
    for name, (canon, factor) in _DEV_COLUMNS.items():
        s = cols.get(name)
        if s is not None and s.mean is not None:
            row[canon] = s.mean * factor
    if "avwait" in cols and "avserv" in cols:  # Solaris: queue wait + service = await
        row["await"] = (cols["avwait"].mean or 0.0) + (cols["avserv"].mean or 0.0)
        row["max_await"] = cols["avwait"].high + cols["avserv"].high
    elif "await" in cols:
        row["max_await"] = cols["await"].high
    for name in ("%util", "%busy"):
        if name in cols:
            row["max_util"] = cols[name].high
    return row
