"""vmstat: Linux procps (`r b swpd free buff cache si so bi bo in cs us sy id wa st [gu]`, with
`-a` inact/active, `-w` wide, `-t` timestamps, `-S` units), Solaris/illumos (`kthr memory page
disk faults cpu`: `r b w swap free re mf pi po fr de sr <disks> in sy cs us sy id`, `-p` paging
classes), AIX and the BSDs (`avm fre`, `flt`, `pc ec`), and ExaWatcher/OSWatcher captures
(`zzz ***` markers between snapshots).

Columns are read by the names on the header line; `sy` means system calls after `in` and
system CPU % after `us`, and unknown names between `sr` and `in` are disk columns. vmstat's
first sample is the average since boot: the first row after a capture starts (and after each
OSWatcher marker, which is a fresh vmstat run) is marked and left out of averages and maxima
when later samples exist; a row after a repeated header is a real interval. Memory is bounded:
one Series per column and the last few rows.
"""

from __future__ import annotations

import re
from typing import ClassVar

from ingest.base import Parser
from ingest.model import Format, Platform
from ingest.parsers.ostable import (
    MAX_LINE,
    Series,
    clean,
    cleaned,
    command,
    findings,
    is_command_of,
    native_table,
    num,
    numeric,
    r3,
    series_of,
    size_kb,
)

# header names -> canonical names (the sy ambiguity is settled by position, below)
_NAMES = {
    **{n: n for n in ("r", "b", "w", "swpd", "free", "buff", "cache", "inact", "active")},
    **{n: n for n in ("si", "so", "bi", "bo", "in", "cs", "us", "id", "wa", "st", "gu")},
    **{n: n for n in ("swap", "re", "mf", "pi", "po", "fr", "de", "sr", "avm", "fre", "flt")},
    **{n: n for n in ("cy", "pc", "ec", "epi", "epo", "epf", "api", "apo", "apf", "fpi", "fpo")},
    **{n: n for n in ("fpf", "hr", "mi", "se", "hs", "ws")},
}
_GROUP_WORDS = ("procs", "kthr", "memory", "page", "faults", "cpu", "swap", "io", "system")
# a header, group line, command or banner holds one of these (checked before any regex)
_HINTS = ("procs", "kthr", " b ", "vmstat", "OSW", "lcpu=", "anonymous", "swap")
_ZZZ = re.compile(r"^zzz\s")
_OSW = re.compile(r"^(?:Linux|SunOS|AIX|HP-UX)\s+OSW\w*\s+v?\S+", re.IGNORECASE)
_AIX_CONFIG = re.compile(r"^System\s+configuration:.*\blcpu=(\d{1,5})\b")
_RULE = re.compile(r"^[-\s]+$")
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_TIME = re.compile(r"^\d{1,2}:\d{2}:\d{2}$")
_TZ = re.compile(r"^[A-Z]{2,5}(?:[+-]\d{1,4})?$|^[+-]\d{4}$")
_UNITS = {"k": 1000 / 1024, "K": 1.0, "m": 1e6 / 1024, "M": 1024.0}
_SINCE_BOOT_NOTE = "first sample is the average since boot: left out of averages and maxima"
ROWS_KEPT = 5  # the last rows, for display (table.c's SHEET_ROWS)
# the columns facts() charts: only their series keep chart points in the C core
_CHARTED = ("r", "b", "us", "sy_cpu", "wa", "id", "cs", "in", "free", "si", "so")
_PCT = ("us", "sy_cpu", "id", "wa", "st")  # a row with one of these outside 0-100 is malformed


def _header(tokens: list[str]) -> tuple[list[str], bool] | None:
    """(canonical column names, timestamp column present) for a vmstat column header."""
    if len(tokens) < 6 or tokens[:2] not in (["r", "b"], ["swap", "free"]):
        return None  # Solaris `vmstat -p` starts at swap free (no kthr columns)
    names: list[str] = []
    stamp = False
    seen_sr = seen_in = seen_us = False
    for i, tok in enumerate(tokens):
        if tok == "sy":
            names.append("sy_cpu" if seen_us else ("syscalls" if seen_in else "?"))
            continue
        canon = _NAMES.get(tok)
        if canon is None:
            if seen_sr and not seen_in and re.fullmatch(r"[\w-]{1,12}", tok):
                names.append(f"disk:{tok}")  # s0 cd m1 `--`: per-disk ops/s
                continue
            if i == len(tokens) - 1 and seen_us and _TZ.match(tok):
                stamp = True  # `-t`: the time zone heads the timestamp column
                continue
            return None
        seen_sr |= canon == "sr"
        seen_in |= canon == "in"
        seen_us |= canon == "us"
        names.append(canon)
    known = set(names)
    if not ({"us", "id"} <= known or {"free", "si"} <= known or {"api", "apo"} <= known):
        return None
    if "?" in names:
        return None
    return names, stamp


def _group_line(tokens: list[str]) -> bool:
    """`procs ---memory--- ---swap-- ...` / `kthr memory page disk faults cpu`."""
    if not tokens or not ("procs" in tokens[0] or "kthr" in tokens[0] or tokens[0] == "memory"):
        return False
    words = [re.sub(r"[^a-z]", "", t.lower()) for t in tokens]
    words = [w for w in words if w]
    if words[:1] == ["memory"] and "anonymous" in words:
        return True  # Solaris `vmstat -p`: memory page executable anonymous filesystem
    if len(words) < 3 or words[0] not in ("procs", "kthr"):
        return False
    return sum(w in _GROUP_WORDS or w in ("disk", "disks", "timestamp", "time") for w in words) >= 3


class VmstatParser(Parser):
    format: ClassVar[Format] = "vmstat"
    # the C core (table.c's sheet mode) reads the samples (with -t's date and time), `zzz`
    # markers and repeated headers (feed_run); anything else goes through feed, the reference
    fast = True

    def __init__(self) -> None:
        super().__init__()
        self.names: list[str] = []
        self.stamp = False
        self.kind: str | None = None  # linux | solaris | aix | bsd
        self.scale = 1.0  # KiB per memory unit (-S M, AIX pages)
        self.series: dict[str, Series] = {}
        self.since_boot: dict[str, float] | None = None  # the held first row
        self.boot_rows = 0  # since-boot rows seen (one per vmstat run)
        self.expect_boot = True  # the next row is a fresh run's first
        self.samples = 0
        self.rows: list[tuple[str, dict[str, float]]] = []
        self.snapshots = 0
        self.label = ""
        self.first_label = ""
        self.last_label = ""
        self.headers = 0
        self.group = ""  # `procs` (Linux, BSD) or `kthr` (Solaris, AIX)
        self.cpus: int | None = None  # AIX prints lcpu= above its table
        # the C core (ostable.native_table, sheet mode), made at the column header: from then on
        # the series live in it (the rows feed reads go in with add()), and feed_run reads runs
        # of rows, markers and the header lines feed has read once (`known`)
        self.core = None
        self.known = 0  # what feed's last line was: 1 a group line, 2 a column header, else 0

    # -- detection ------------------------------------------------------------------------------

    @classmethod
    def claims(cls, line: str) -> bool:
        """A row of numbers, or an OSWatcher `zzz` marker, continues a vmstat capture whatever
        else could start on it."""
        if (numeric(line) and len(line) > 20) or line.startswith("zzz "):
            return True
        # `-t`: numbers, then the date and time (no other format starts on such a row, and the
        # detector asked every one of them about each row of a `vmstat -t` capture)
        if len(line) <= 20 or ":" not in line:
            return False
        parts = line.rsplit(None, 2)
        return (
            len(parts) == 3
            and numeric(parts[0])
            and _DATE.match(parts[1]) is not None
            and _TIME.match(parts[2]) is not None
        )

    @classmethod
    def start_score(cls, line: str) -> int:
        if len(line) > MAX_LINE or not any(w in line for w in _HINTS):
            return 0
        text = clean(line)
        tokens = text.split()
        if not tokens:
            return 0
        if _group_line(tokens) or _header(tokens) or _OSW.match(text.strip()):
            return 2
        if _AIX_CONFIG.match(text):
            return 2
        if is_command_of(text, "vmstat"):
            return 2
        return 0

    # -- feeding --------------------------------------------------------------------------------

    def feed_run(self, text: str, pos: int, endpos: int, plain: dict) -> tuple[int, int]:
        """Parser.feed_lines, with runs read by the C core: it takes the lines it vouches for
        (rows, `zzz` markers, header lines feed has read once), each line it stops at goes
        through feed as before, and the header lines among them are made known to it."""
        core = self.core
        if core is None:
            return pos, 0  # line by line through the detector, as without the core
        taken = 0
        feed_one = self.feed_one
        while pos < endpos:
            core.state(self.expect_boot, self.since_boot is None and not self.samples, self.label)
            pos, n, _, _ = core.run(text, pos, endpos)
            if n:
                taken += n
                self._from_core()
            if pos >= endpos:
                break
            self.known = 0
            nxt = feed_one(text, pos, endpos, plain)
            if nxt < 0:
                break
            if self.known:  # a header line: the core takes it from now on, when the detector
                line = text[pos : nxt - 1].rstrip("\r")  # would hand it over by itself
                if self.start_score(line) == 2 or self.claims(line):
                    core.know(line, self.known - 1)
            pos = nxt
            taken += 1
        return pos, taken

    def _from_core(self) -> None:
        """What the core's run read, into the parser's counts, labels and last rows."""
        samples, boot, snaps, headers, expect, label, first, last, rows = self.core.sheet()  # type: ignore[union-attr]
        self.samples += samples
        self.boot_rows += boot
        self.snapshots += snaps
        self.headers += headers
        self.expect_boot = bool(expect)
        self.label = label
        if first:
            self.first_label = self.first_label or first
        if last:
            self.last_label = last
        if rows:
            names = self.names
            self.rows.extend((lab, dict(zip(names, vals, strict=True))) for lab, vals in rows)
            del self.rows[:-ROWS_KEPT]

    def feed(self, line: str) -> bool:
        got = cleaned(line)
        if got is None:
            return False
        text, tokens = got
        if self.names and text[0].isdigit():
            return self._row(tokens)  # the common line: a sample
        if cmd := command(text):
            if cmd[0] != "vmstat" or self.samples or self.since_boot is not None:
                return False
            args = cmd[1]
            for i, arg in enumerate(args):
                unit = arg[2:] if arg.startswith("-S") and len(arg) > 2 else None
                if arg == "-S" and i + 1 < len(args):
                    unit = args[i + 1]
                if unit in _UNITS:
                    self.scale = _UNITS[unit]
            return True
        if _OSW.match(text):
            return True
        if m := _AIX_CONFIG.match(text):
            self.cpus = int(m.group(1))
            return True
        if _RULE.match(text):
            return bool(self.names) or self.headers == 0
        if _ZZZ.match(text):
            self.snapshots += 1
            self.label = text[3:].strip(" *")[:40]
            self.expect_boot = True
            return True
        if _group_line(tokens):
            group = "procs" if "procs" in tokens[0] else "kthr"  # vmstat -p counts as kthr
            if self.group and group != self.group:
                return False  # Solaris/AIX vs Linux: another capture
            self.group = group
            self.known = 1
            return True
        if header := _header(tokens):
            names, stamp = header
            if self.names and names != self.names:
                return False  # another vmstat layout: a separate block
            first = not self.names
            self.names, self.stamp = names, stamp
            self.headers += 1
            if self.kind is None:
                self.kind = self._kind(names)
                if self.kind == "aix":
                    self.scale = 4.0  # avm and fre count 4 KiB pages
            if first:
                self.core = native_table(
                    names,
                    keyed=False,
                    bounds={c: (0.0, 100.0) for c in _PCT},
                    points=1,
                    max_keys=1,
                    sheet=([c in _CHARTED for c in names], stamp),
                )
            self.known = 2
            return True
        if not self.names:
            return False
        return self._row(tokens)

    @staticmethod
    def _kind(names: list[str]) -> str:
        if "swpd" in names or "si" in names:
            return "linux"
        if "mf" in names or "swap" in names or "api" in names:
            return "solaris"
        if "avm" in names and ("cy" in names or "pc" in names or "wa" in names):
            return "aix"
        return "bsd"

    def _row(self, tokens: list[str]) -> bool:
        n = len(self.names)
        stamp = ""
        if self.stamp and len(tokens) >= n + 2 and _DATE.match(tokens[-2]):
            stamp = f"{tokens[-2]} {tokens[-1]}"
            tokens = tokens[:-2]
        elif self.stamp and len(tokens) == n + 1 and _TIME.match(tokens[-1]):
            stamp = tokens[-1]
            tokens = tokens[:-1]
        if not tokens or num(tokens[0]) is None:
            return False  # not a row: prose or another table
        if len(tokens) != n:
            self.malformed += 1
            return True
        row: dict[str, float] = {}
        for name, tok in zip(self.names, tokens, strict=True):
            value = num(tok)
            if value is None and name in ("avm", "fre", "free"):
                value = size_kb(tok)  # FreeBSD prints 1.4G
                if value is not None:
                    value /= self.scale
            if value is None:
                self.malformed += 1
                return True
            row[name] = value
        if any(not 0 <= row.get(k, 0) <= 100 for k in ("us", "sy_cpu", "id", "wa", "st")):
            self.malformed += 1
            return True
        label = stamp or self.label
        if self.expect_boot:
            self.expect_boot = False
            self.boot_rows += 1
            if self.since_boot is None and not self.samples:
                self.since_boot = row  # kept apart: only counts if nothing else comes
            return True
        self._add(row, label)
        return True

    def _add(self, row: dict[str, float], label: str) -> None:
        self.samples += 1
        if label:
            self.last_label = label
            self.first_label = self.first_label or label
        if self.core is not None:
            self.core.add("", [row[n] for n in self.names])
        else:
            for name, value in row.items():
                series = self.series.get(name)
                if series is None:
                    series = self.series[name] = Series()
                series.add(value)
        self.rows.append((label, row))  # shaped for display only when facts are asked for
        if len(self.rows) > ROWS_KEPT:
            del self.rows[0]

    # -- results --------------------------------------------------------------------------------

    def _series(self) -> dict[str, Series]:
        """The series per column: the core's when it holds them (names order, as the Python
        store fills them: every row has every column)."""
        if self.core is None:
            return self.series
        names = self.names
        return {
            names[c]: series_of(st, names[c] in _CHARTED)
            for key, cols in self.core.export()[0]
            for c, st in cols
        }

    def facts(self) -> tuple[dict, dict, list[str], Platform | None]:
        series = self._series()
        notes: list[str] = []
        since_boot_only = False
        if not self.samples and self.since_boot is not None:
            series = {}
            for name, value in self.since_boot.items():
                series[name] = Series()
                series[name].add(value)
            since_boot_only = True
            notes.append("one sample only: it is vmstat's average since boot, not a current rate")
        elif self.boot_rows:
            notes.append(_SINCE_BOOT_NOTE)
        if self.snapshots:
            notes.append(f"{self.snapshots} OSWatcher/ExaWatcher snapshots")
        facts: dict = {}
        n = max((s.n for s in series.values()), default=0)
        if not n:
            return facts, {"notes": notes}, ["vmstat"], self._platform()
        facts["cpu.intervals"] = float(n)
        if self.cpus:
            facts["cpu.count"] = float(self.cpus)
        if since_boot_only:
            facts["os.since_boot"] = 1.0

        def put(fact: str, name: str, how: str, scale: float = 1.0) -> None:
            s = series.get(name)
            if s is None or not s.n:
                return
            value = {"avg": s.mean, "max": s.high, "min": s.low, "last": s.last}[how]
            if value is not None:
                facts[fact] = r3(value * scale)

        for key, col in (("usr", "us"), ("sys", "sy_cpu"), ("wait", "wa"), ("idle", "id")):
            put(f"cpu.{key}_pct", col, "avg")
        put("cpu.steal_pct", "st", "avg")
        put("cpu.max_wait_pct", "wa", "max")
        if (idle := series.get("id")) is not None and idle.n:
            facts["cpu.max_busy_pct"] = r3(100 - idle.low)
        put("runq.avg", "r", "avg")
        put("runq.max", "r", "max")
        if self.cpus and "r" in series and series["r"].n:
            facts["runq.per_cpu_max"] = r3(series["r"].high / self.cpus)
        put("runq.blocked_avg", "b", "avg")
        put("runq.blocked_max", "b", "max")
        put("sys.cs_per_s_avg", "cs", "avg")
        put("sys.cs_per_s_max", "cs", "max")
        put("sys.intr_per_s_avg", "in", "avg")
        put("sys.intr_per_s_max", "in", "max")
        put("sys.syscalls_per_s_avg", "syscalls", "avg")
        put("sys.syscalls_per_s_max", "syscalls", "max")
        free = "free" if "free" in series else "fre"
        put("mem.free_kb_min", free, "min", self.scale)
        put("mem.free_kb_avg", free, "avg", self.scale)
        if self.kind == "linux":
            put("mem.swap_used_kb_max", "swpd", "max", self.scale)
            put("swap.in_kbps_avg", "si", "avg", self.scale)
            put("swap.in_kbps_max", "si", "max", self.scale)
            put("swap.out_kbps_avg", "so", "avg", self.scale)
            put("swap.out_kbps_max", "so", "max", self.scale)
        elif self.kind == "solaris":
            put("mem.swap_avail_kb_min", "swap", "min")
            put("page.in_kbps_max", "pi", "max")
            put("page.out_kbps_max", "po", "max")
            put("swap.in_kbps_avg", "api", "avg")  # -p: anonymous (swap) page-ins
            put("swap.in_kbps_max", "api", "max")
            put("swap.out_kbps_avg", "apo", "avg")
            put("swap.out_kbps_max", "apo", "max")
        elif self.kind == "aix":  # pi/po: paging-space pages (4 KiB) per second
            put("swap.in_kbps_avg", "pi", "avg", 4.0)
            put("swap.in_kbps_max", "pi", "max", 4.0)
            put("swap.out_kbps_avg", "po", "avg", 4.0)
            put("swap.out_kbps_max", "po", "max", 4.0)
        if self.kind in ("solaris", "aix", "bsd"):
            put("page.scan_rate_avg", "sr", "avg")
            put("page.scan_rate_max", "sr", "max")
        details: dict = {
            "notes": notes,
            "columns": self.names,
            "samples": n,
            "rows": [
                {"label": label, **{k: v for k, v in row.items() if not k.startswith("disk:")}}
                for label, row in self.rows
            ],
            "series": {
                k: [round(v, 2) for v in series[k].chart()]
                for k in ("r", "b", "us", "sy_cpu", "wa", "id", "cs", "in", "free", "si", "so")
                if k in series
            },
        }
        if self.since_boot is not None:
            details["since_boot"] = {
                k: v for k, v in self.since_boot.items() if not k.startswith("disk:")
            }
        if self.first_label:
            details["span"] = [self.first_label, self.last_label]
        if self.scale != 1.0:
            details["memory_unit_kb"] = self.scale
        details["findings"] = findings(facts, notes)
        identifiers = ["vmstat"]
        return facts, details, identifiers, self._platform()

    def _platform(self) -> Platform | None:
        return {"linux": "linux", "solaris": "solaris", "aix": "aix"}.get(self.kind or "")  # type: ignore[return-value]
