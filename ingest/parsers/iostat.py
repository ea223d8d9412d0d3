"""iostat: sysstat (plain and `-x` of sysstat 9 to 12: await or r_await/w_await, avgqu-sz or
aqu-sz, rsec/s or rkB/s or rMB/s, avgrq-sz or rareq-sz/wareq-sz, svctm when present, discard
and flush columns, `-z`, `-p` partitions, `-t` stamps, the `avg-cpu:` block) and Solaris/illumos
(`-x`, `-xn`, `-xnz`, `-xnp`, `-xnM`: r/s w/s kr/s kw/s wait actv [wsvc_t asvc_t | svc_t] %w %b).

Columns are read by the names on each `Device` header, wherever the device column is. iostat's
first report is the average since boot: with several reports it is left out; alone, it is kept
and marked (`os.since_boot`) when the banner or the command line shows the capture's start.
Memory is bounded: one report's rows (at most MAX_DEVICES) and running sums per device.
"""

from __future__ import annotations

import re
from typing import ClassVar

from ingest.base import Parser, line_at
from ingest.model import Block, Format, Platform
from ingest.parsers.ostable import (
    MAX_LINE,
    Series,
    banner,
    banner_line,
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
    table_row,
)

MAX_DEVICES = 512

# header name -> (canonical name, factor to the canonical unit)
_LINUX = {
    "r/s": ("r_s", 1.0),
    "w/s": ("w_s", 1.0),
    "tps": ("tps", 1.0),
    "rkB/s": ("rkb_s", 1.0),
    "wkB/s": ("wkb_s", 1.0),
    "rMB/s": ("rkb_s", 1024.0),
    "wMB/s": ("wkb_s", 1024.0),
    "rsec/s": ("rkb_s", 0.5),
    "wsec/s": ("wkb_s", 0.5),
    "kB_read/s": ("rkb_s", 1.0),
    "kB_wrtn/s": ("wkb_s", 1.0),
    "MB_read/s": ("rkb_s", 1024.0),
    "MB_wrtn/s": ("wkb_s", 1024.0),
    "Blk_read/s": ("rkb_s", 0.5),
    "Blk_wrtn/s": ("wkb_s", 0.5),
    "r_await": ("r_await", 1.0),
    "w_await": ("w_await", 1.0),
    "d_await": ("d_await", 1.0),
    "f_await": ("f_await", 1.0),
    "await": ("await", 1.0),
    "avgqu-sz": ("queue", 1.0),
    "aqu-sz": ("queue", 1.0),
    "svctm": ("svctm", 1.0),
    "%util": ("util", 1.0),
    "rareq-sz": ("rareq_kb", 1.0),
    "wareq-sz": ("wareq_kb", 1.0),
    "avgrq-sz": ("avgrq_kb", 0.5),  # sectors
}
# names printed but not read (cumulative counters, merges, discards)
_LINUX_SKIP = frozenset(
    (
        "rrqm/s",
        "wrqm/s",
        "%rrqm",
        "%wrqm",
        "d/s",
        "dkB/s",
        "dMB/s",
        "drqm/s",
        "%drqm",
        "dareq-sz",
        "f/s",
        "kB_read",
        "kB_wrtn",
        "kB_dscd",
        "kB_dscd/s",
        "MB_read",
        "MB_wrtn",
        "MB_dscd",
        "MB_dscd/s",
        "Blk_read",
        "Blk_wrtn",
    )
)
_SOLARIS = {
    "r/s": ("r_s", 1.0),
    "w/s": ("w_s", 1.0),
    "kr/s": ("rkb_s", 1.0),
    "kw/s": ("wkb_s", 1.0),
    "Mr/s": ("rkb_s", 1024.0),
    "Mw/s": ("wkb_s", 1024.0),
    "wait": ("wait_q", 1.0),
    "actv": ("actv", 1.0),
    "wsvc_t": ("wsvc", 1.0),
    "asvc_t": ("asvc", 1.0),
    "svc_t": ("svc", 1.0),
    "%w": ("pct_w", 1.0),
    "%b": ("util", 1.0),
}
_SOLARIS_SKIP = frozenset(("s/w", "h/w", "trn", "tot"))
_CPU_NAMES = {
    "%user": "usr",
    "%usr": "usr",
    "%nice": "nice",
    "%system": "sys",
    "%sys": "sys",
    "%iowait": "wait",
    "%steal": "steal",
    "%idle": "idle",
}
# a header, command, banner or stamp holds one of these (checked before any regex)
_HINTS = ("evice", "avg-cpu", "iostat", "CPU)", ":")
_EXTENDED = re.compile(r"^extended\s+device\s+statistics\b", re.IGNORECASE)
_ERRORS_GROUP = re.compile(r"^-+\s*errors\s*-+$")
# the stamp `iostat -t` prints above each report (`11/01/2026 01:00:01 AM`, `2026-11-01
# 13:00:01`): a line of exactly this shape is one _STAMP matches, as pasted (feed_run's test)
_PLAIN_STAMP = re.compile(r"\d{2}/\d{2}/\d{2,4} \d{2}:\d{2}:\d{2}(?: [AP]M)?\Z")
_STAMP = re.compile(
    r"^(?:\d{1,4}[/.-]\d{1,2}[/.-]\d{2,4}[ T]\d{1,2}:\d{2}:\d{2}(?:\s?[AP]M)?"
    r"|\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\S*|\w{3}\s+\w{3}\s+\d{1,2}\s+\d{2}:\d{2}:\d{2}.*\d{4}"
    r"|\d{9,11})$"
)
# %util can be misleading: these serve requests in parallel, so 100 % busy is not saturated
_PARALLEL = re.compile(r"^(?:nvme|dm-|md\d|rbd|emcpower|mpath|c\d+t[0-9A-F]{16,}d)")
_DEV = re.compile(r"^[\w:/.@+~,-]{1,128}$")


def _device_header(tokens: list[str]) -> tuple[str, int, list[str | None], list[float]] | None:
    """(kind, device column, canonical names (None: skipped), factors) of a device header."""
    if len(tokens) < 3:
        return None
    lowered = [t.rstrip(":").lower() for t in tokens]
    if "device" not in lowered:
        return None
    at = lowered.index("device")
    names: list[str | None] = []
    factors: list[float] = []
    rest = [t for i, t in enumerate(tokens) if i != at]
    solaris = any(t in ("kr/s", "kw/s", "actv", "asvc_t", "svc_t", "%b") for t in rest)
    table, skip = (_SOLARIS, _SOLARIS_SKIP) if solaris else (_LINUX, _LINUX_SKIP)
    for tok in rest:
        if tok in table:
            name, factor = table[tok]
            names.append(name)
            factors.append(factor)
        elif tok in skip:
            names.append(None)
            factors.append(1.0)
        else:
            return None
    if not any(names):
        return None
    return ("solaris" if solaris else "linux"), at, names, factors


def _cpu_header(tokens: list[str]) -> list[str] | None:
    if not tokens or tokens[0] != "avg-cpu:":
        return None
    names = [_CPU_NAMES.get(t) for t in tokens[1:]]
    if not names or None in names or "idle" not in names:
        return None
    return [n for n in names if n is not None]


class _Report:
    __slots__ = ("label", "devices", "cpu", "boot", "counted", "native")

    def __init__(self, label: str, boot: bool = False, counted: bool = False) -> None:
        self.label = label
        self.boot = boot  # the first report of a fresh iostat (after an OSWatcher marker)
        # with the C core, a report known to be counted when it opens has its device rows
        # added to the sums as they are read: `native` rows read by the core, and rows the
        # Python reader read kept in `devices` as None (already added; the key still tells a
        # device seen twice)
        self.counted = counted
        self.native = 0
        self.devices: dict[str, dict[str, float] | None] = {}
        self.cpu: dict[str, float] | None = None

    def empty(self) -> bool:
        return not self.devices and self.cpu is None and not self.native


_DEV_KEYS = ("r_s", "w_s", "tps", "rkb_s", "wkb_s", "await", "r_await", "w_await", "queue")
_DEV_KEYS += ("util", "svctm", "rareq_kb", "wareq_kb", "avgrq_kb", "asvc", "wsvc", "actv")
_CHARTED = ("await", "util")  # the columns whose series keep chart points


def _native_layout(names: list[str | None]) -> tuple[list[str], list[tuple]] | None:
    """(the stored columns in the order IostatParser._derive leaves a row's keys, how table.c
    makes each from the printed values) for the C core's rows mode; None when a name repeats
    (the row would keep the last one: left to the Python reader). Mirrors _derive: the core
    tests compare the two on every layout of the fixtures and generated captures."""
    read = [n for n in names if n is not None]
    if len(set(read)) != len(read):
        return None
    at = {n: i for i, n in enumerate(names) if n is not None}

    def col(name: str) -> int:
        return at.get(name, -1)

    out: list[tuple[str, tuple]] = [(n, (0, at[n], -1, -1, -1)) for n in read]
    if "await" not in at:
        if "r_await" in at and "w_await" in at:
            out.append(("await", (1, at["r_await"], at["w_await"], col("r_s"), col("w_s"))))
        elif "asvc" in at:
            out.append(("await", (2, at["asvc"], col("wsvc"), -1, -1)))
        elif "svc" in at:
            out.append(("await", (3, at["svc"], -1, -1, -1)))
    if "queue" not in at and ("actv" in at or "wait_q" in at):
        out.append(("queue", (2, col("actv"), col("wait_q"), -1, -1)))
    if "svctm" not in at and "asvc" in at:
        out.append(("svctm", (3, at["asvc"], -1, -1, -1)))
    out = [(n, op) for n, op in out if n not in ("svc", "wait_q", "pct_w")]
    if not out or len(out) > 64 or len(names) > 64:
        return None
    return [n for n, _ in out], [op for _, op in out]


class IostatParser(Parser):
    format: ClassVar[Format] = "iostat"
    fast = True  # the C core reads a counted report's device rows (feed_run)

    def __init__(self) -> None:
        super().__init__()
        self.kind: str | None = None
        self.header: tuple[str, int, list[str | None], list[float]] | None = None
        self.cpu_names: list[str] | None = None
        self.in_cpu = False
        self.started = False  # banner or command line seen: the first report is since boot
        self.banner: dict | None = None
        self.current: _Report | None = None
        self.first: _Report | None = None  # held until a second report shows it was since boot
        self.reports = 0  # reports counted in the sums
        self.dropped_first = False
        self.boot_report: _Report | None = None
        self.partial: list[str] | None = None  # a device row's first part, wrapped
        self.snapshots = 0  # OSWatcher/ExaWatcher `zzz` markers: each starts a fresh iostat
        self.next_boot = False
        self.boot_reports = 0
        self.dev: dict[str, dict[str, Series]] = {}
        self.cpu: dict[str, Series] = {}
        self.pending_label = ""
        self.labels: list[str] = []
        # the C core (ostable.native_table, rows mode): made for the first device header; the
        # sums live in it while every header repeats that layout (another layout: they are
        # taken back into self.dev and the Python reader goes on alone)
        self.core = None
        self.core_header: tuple | None = None
        self.core_cols: list[str] = []
        self.core_done = False
        # header lines as pasted (raw) -> what _feed read them as: iostat prints the same
        # `avg-cpu:` and `Device` lines above every report, and reading them again (cleaning,
        # the command, banner and header tests) cost more than the core's rows; a line that
        # reached a header branch once reaches it again (every test before is pure)
        self.repeats: dict[str, tuple] = {}

    def feed_run(self, text: str, pos: int, endpos: int, plain: dict) -> tuple[int, int]:
        """Parser.feed_steps, with the device rows of a counted report read by the C core: each
        line it stops at (a header, a stamp, avg-cpu, anything odd) goes through feed as
        before, then the core reads on."""
        if self.core is None:
            return pos, 0  # line by line through the detector, as without the core
        return self.feed_steps(text, pos, endpos, plain)

    def run_step(self, text: str, pos: int, endpos: int, plain: dict) -> tuple[int, int, int]:
        """feed_run's step: the core's rows, then the lines feed would read as below without
        the detector's tests (feed_one for the rest)."""
        n = 0
        core = self.core
        cur = self.current
        if (
            core is not None
            and cur is not None
            and cur.counted
            and self.partial is None
            and not self.in_cpu
            and self.header is self.core_header
        ):
            pos, n, _, _ = core.run(text, pos, endpos)
            if n:
                cur.native += n
            if pos >= endpos:
                return pos, n, self.STEP_STOP
        end, line = line_at(text, pos, endpos)
        if (seen := self.repeats.get(line)) is not None:  # start_score said 2 for it (a header):
            # feed_one's test; with no wrapped row pending, feed's first step is _header
            if not (self._header(*seen) if self.partial is None else self.feed(line)):
                return pos, n, self.STEP_STOP
            return end + 1, n + 1, self.STEP_TOOK
        if not line or line.isspace():
            return pos, n, self.STEP_STOP  # feed refuses a blank line: the detector's
        if (
            self.partial is None
            and _PLAIN_STAMP.match(line)
            and (self.header is None or self.in_cpu or len(self.header[2]) > 2)
        ):
            # `-t`'s stamp as sysstat prints it: claims takes it and _feed reaches its
            # _STAMP branch (no device row of so few columns, no header, not numeric)
            self.pending_label = line[:40]
            return end + 1, n + 1, self.STEP_TOOK
        if self.in_cpu and self.cpu_names and self.partial is None and numeric(line):
            # the avg-cpu numbers: claims says yes (numeric), and _feed's second test
            # sends them to _cpu_row (its first needs `not in_cpu`)
            if len(line) > MAX_LINE or not self.feed(line):
                return pos, n, self.STEP_STOP
            return end + 1, n + 1, self.STEP_TOOK
        return pos, n, self.STEP_FEED

    def _use_header(self, header: tuple[str, int, list[str | None], list[float]]) -> None:
        """The C core for the first device header (device first: the rows iostat's claims
        vouch for); a later header of another layout ends it (its sums back into self.dev)."""
        if self.core is not None:
            if header[1:] == self.core_header[1:]:  # type: ignore[index]
                self.core_header = header
                return
            self._core_back()
        if self.core_done:
            return
        self.core_done = True
        _, at, names, factors = header
        layout = _native_layout(names) if at == 0 else None
        if layout is None:
            return
        cols, ops = layout
        util = names.index("util") if "util" in names else -1
        self.core = native_table(
            cols,
            keyed=True,
            bounds={},
            points=1,
            max_keys=MAX_DEVICES,
            rows=(
                [f if n is not None else None for n, f in zip(names, factors, strict=True)],
                util,
                ops,
                [c in _CHARTED for c in cols],
                MAX_DEVICES,
            ),
        )
        if self.core is not None:
            self.core_header = header
            self.core_cols = cols
            if self.current is not None and self.current.counted:
                self.core.report()

    def _core_back(self) -> None:
        """The core's sums as self.dev (before another layout's rows come)."""
        self.dev = self._core_series()
        self.core = None
        self.core_header = None

    def _core_series(self) -> dict[str, dict[str, Series]]:
        assert self.core is not None
        cols = self.core_cols
        return {
            dev: {cols[c]: series_of(st, cols[c] in _CHARTED) for c, st in sts}
            for dev, sts in self.core.export()[0]
        }

    # -- detection ------------------------------------------------------------------------------

    @classmethod
    def start_score(cls, line: str) -> int:
        got = cleaned(line, _HINTS)
        if got is None:
            return 0
        text, tokens = got
        if _device_header(tokens) or _cpu_header(tokens) or _EXTENDED.match(text):
            return 2
        if is_command_of(text, "iostat"):
            return 2
        if banner(text):
            return 1  # sysstat's banner: mpstat, sar and pidstat print it too
        if _STAMP.match(text):
            return 1  # `-t`: the time above each report
        return 0

    @classmethod
    def claims(cls, line: str) -> bool:
        """sysstat's banner continues this block even though mpstat would start on it: it is
        the top of this report (after its command line); feed refuses it once rows came. A
        device row (a name, then numbers), the avg-cpu numbers and `-t`'s stamp continue it
        too."""
        if numeric(line) or table_row(line, 1) or line.startswith("zzz "):
            return True
        if banner_line(line):
            return True
        # `-t`'s stamp above each report: no other format starts on a date alone, and asking
        # every one of them about each stamp was a third of a long capture's time
        return ":" in line and _STAMP.match(clean(line).strip()) is not None

    # -- feeding --------------------------------------------------------------------------------

    def feed(self, line: str) -> bool:
        # A refused line leaves the parser as it was (base.Parser.feed): a pending wrapped row,
        # the malformed count and the avg-cpu state are put back when the line is not ours.
        partial, malformed, in_cpu = self.partial, self.malformed, self.in_cpu
        if self._feed(line):
            return True
        self.partial, self.malformed, self.in_cpu = partial, malformed, in_cpu
        return False

    def _feed(self, line: str) -> bool:
        if self.partial is None and (seen := self.repeats.get(line)) is not None:
            return self._header(*seen)
        if not line or line.isspace():
            return False  # blank once cleaned (cleaned's None), without unpaste's regexes
        got = cleaned(line)
        if got is None:
            return False
        text, tokens = got
        header = self.header
        if self.partial is not None:  # the first part of a row a narrow terminal wrapped
            joined = self.partial + tokens
            self.partial = None
            if (
                header is not None
                and len(joined) == len(header[2]) + 1
                and all(num(t) is not None for t in tokens)
            ):
                return self._device_row(joined)
            self.malformed += 1  # it was a row cut short
        if (
            header is not None
            and not self.in_cpu
            and len(tokens) == len(header[2]) + 1
            and "evice" not in text
            and not text.startswith("avg-cpu")
        ):
            return self._device_row(tokens)  # the common line: a device row
        if self.in_cpu and self.cpu_names and len(tokens) > 1 and numeric(text):
            return self._cpu_row(tokens)  # what the tests below lead to for numbers only
        if cmd := command(text):
            if cmd[0] != "iostat" or self._has_data():
                return False
            self.started = True
            return True
        if b := banner(text):
            if self._has_data() or self.banner is not None:
                return False
            self.banner = b
            self.started = True
            return True
        if _EXTENDED.match(text):
            if self.kind == "linux":
                return False
            self.kind = "solaris"
            self._new_report()
            return True
        if _ERRORS_GROUP.match(text):
            return True
        if text.startswith("zzz "):
            self._commit()
            self.snapshots += 1
            self.next_boot = True
            self.pending_label = text[3:].strip(" *<>")[:40]
            return True
        if names := _cpu_header(tokens):
            if len(self.repeats) < 64:
                self.repeats[line] = ("cpu", names)
            return self._header("cpu", names)
        if header := _device_header(tokens):
            if len(self.repeats) < 64 and "evice" in text:
                self.repeats[line] = ("dev", header)
            return self._header("dev", header)
        if _STAMP.match(text):
            self.pending_label = text[:40]
            return True
        if self.in_cpu and self.cpu_names:
            return self._cpu_row(tokens)
        if self.header is not None:
            return self._device_row(tokens)
        return False

    def _header(self, kind: str, got) -> bool:
        """An `avg-cpu:` header (got: its names) or a device header (got: _device_header's)."""
        if kind == "cpu":
            if self.kind == "solaris":
                return False
            self.kind = "linux"
            self.cpu_names = got
            self.in_cpu = True
            self._new_report()
            return True
        if self.kind and got[0] != self.kind:
            return False
        self.kind = got[0]
        self.header = got
        self.in_cpu = False
        if self.current is None or self.current.devices or self.current.native:
            self._new_report()
        self._use_header(got)
        return True

    def _has_data(self) -> bool:
        return (
            self.reports > 0
            or self.first is not None
            or (self.current is not None and not self.current.empty())
        )

    def _new_report(self) -> None:
        self._commit()
        label = self.pending_label or f"report {len(self.labels) + 1}"
        self.pending_label = ""
        boot = self.next_boot
        # _commit adds this report to the sums unless it is a fresh iostat's first or the
        # capture's first (held until a second report shows it was since boot)
        counted = not boot and bool(
            self.snapshots or self.first is not None or self.dropped_first or self.reports
        )
        self.current = _Report(label, boot=boot, counted=counted)
        self.next_boot = False
        if counted and self.core is not None:
            self.core.report()

    def _commit(self) -> None:
        cur = self.current
        self.current = None
        if cur is None or cur.empty():
            return
        if cur.boot:
            self.boot_report = cur  # a fresh iostat's since-boot report: shown, not counted
            self.boot_reports += 1
            return
        if self.snapshots:
            self._add(cur)
            return
        if self.first is None and not self.dropped_first and not self.reports:
            self.first = cur  # since boot: counts only if no other report follows
            return
        if self.first is not None:
            self.boot_report = self.first  # kept for display: what the first lines said
            self.first = None
            self.dropped_first = True
        self._add(cur)

    def _add(self, report: _Report) -> None:
        self.reports += 1
        if len(self.labels) < 500:
            self.labels.append(report.label)
        core = self.core
        for dev, row in report.devices.items():
            if row is None:
                continue  # added as it was read
            if core is not None:
                core.add(dev, [row.get(c) for c in self.core_cols])
                continue
            stats = self.dev.get(dev)
            if stats is None:
                if len(self.dev) >= MAX_DEVICES:
                    continue
                stats = self.dev[dev] = {}
            for key, value in row.items():
                s = stats.get(key)
                if s is None:
                    s = stats[key] = Series(points=key in ("await", "util"))
                s.add(value)
        if report.cpu:
            for key, value in report.cpu.items():
                s = self.cpu.get(key)
                if s is None:
                    s = self.cpu[key] = Series()
                s.add(value)

    def _cpu_row(self, tokens: list[str]) -> bool:
        self.in_cpu = False
        assert self.cpu_names is not None
        values = [num(t) for t in tokens]
        if len(values) != len(self.cpu_names) or None in values:
            if values and values[0] is None:
                return False
            self.malformed += 1
            return True
        row: dict[str, float] = dict(zip(self.cpu_names, values, strict=True))  # type: ignore[arg-type]
        if min(row.values()) < 0 or max(row.values()) > 100.5:  # no None, no NaN (num)
            self.malformed += 1
            return True
        if self.current is None:
            self._new_report()
        assert self.current is not None
        self.current.cpu = row
        return True

    def _device_row(self, tokens: list[str]) -> bool:
        assert self.header is not None
        _, at, names, factors = self.header
        if len(tokens) != len(names) + 1:
            if (
                at == 0
                and 2 <= len(tokens) < len(names) + 1
                and num(tokens[0]) is None
                and _DEV.match(tokens[0])
                and all(num(t) is not None for t in tokens[1:])
            ):
                self.partial = tokens  # wrapped (or cut): the next line decides
                return True
            if len(tokens) > 2 and sum(num(t) is None for t in tokens) <= 1:
                self.malformed += 1  # numbers, but not as many as the header names
                return True
            return False
        device = tokens[at]
        if not _DEV.match(device) or num(device.rstrip(":")) is not None and at == 0:
            return False
        values = [t for i, t in enumerate(tokens) if i != at]
        row: dict[str, float] = {}
        for name, factor, tok in zip(names, factors, values, strict=True):
            value = num(tok)
            if value is None:
                self.malformed += 1
                return True
            if name is not None:
                row[name] = value * factor
        if not 0 <= row.get("util", 0) <= 100.5 + 50 or any(v < 0 for v in row.values()):
            self.malformed += 1
            return True
        self._derive(row)
        if self.current is None:
            self._new_report()
        assert self.current is not None
        cur = self.current
        if device in cur.devices or (cur.native and self.core.seen(device)):  # type: ignore[union-attr]
            self._new_report()  # same device again without a header: a new report
            cur = self.current
        if len(cur.devices) + cur.native < MAX_DEVICES:
            core = self.core
            if cur.counted and core is not None and self.header is self.core_header:
                core.add(device, [row.get(c) for c in self.core_cols])
                cur.devices[device] = None
            else:
                cur.devices[device] = row
        return True

    @staticmethod
    def _derive(row: dict[str, float]) -> None:
        """await and queue in one meaning whatever the layout printed."""
        if "await" not in row:
            if "r_await" in row and "w_await" in row:
                r, w = row.get("r_s", 0.0), row.get("w_s", 0.0)
                row["await"] = (
                    (row["r_await"] * r + row["w_await"] * w) / (r + w)
                    if r + w > 0
                    else max(row["r_await"], row["w_await"])
                )
            elif "asvc" in row:
                row["await"] = row["asvc"] + row.get("wsvc", 0.0)
            elif "svc" in row:
                row["await"] = row["svc"]
        if "queue" not in row and ("actv" in row or "wait_q" in row):
            row["queue"] = row.get("actv", 0.0) + row.get("wait_q", 0.0)
        if "svctm" not in row and "asvc" in row:
            row["svctm"] = row["asvc"]
        row.pop("svc", None)
        row.pop("wait_q", None)
        row.pop("pct_w", None)

    def finish(self, start_line: int, end_line: int) -> Block:
        if self.partial is not None:  # the capture ended inside a row
            self.partial = None
            self.malformed += 1
        return super().finish(start_line, end_line)

    # -- results --------------------------------------------------------------------------------

    def facts(self) -> tuple[dict, dict, list[str], Platform | None]:
        # a copy of the sums with the open report added, leaving the parser as it was
        saved = (
            self.current,
            self.first,
            self.reports,
            self.dropped_first,
            self.labels,
            self.boot_report,
            self.boot_reports,
        )
        saved_dev = {d: dict(s) for d, s in self.dev.items()}
        saved_cpu = dict(self.cpu)
        saved_core = self.core
        notes: list[str] = []
        try:
            self.labels = list(self.labels)
            if saved_core is not None:  # the core's sums, as new Series the commit may add to
                self.dev = self._core_series()
                self.core = None
            else:
                self.dev = {d: {k: _copy(s) for k, s in st.items()} for d, st in saved_dev.items()}
            self.cpu = {k: _copy(s) for k, s in saved_cpu.items()}
            self._commit()
            since_boot_only = False
            if self.first is not None:  # one report only
                only = self.first
                self.first = None
                self._add(only)
                if self.started:
                    since_boot_only = True
                    notes.append(
                        "one report only: it is iostat's average since boot, not current load"
                    )
                else:
                    notes.append("one report: if it is iostat's first, it is since boot")
            elif not self.reports and self.boot_report is not None:
                self._add(self.boot_report)  # only since-boot reports: shown, and marked
                since_boot_only = True
                notes.append("only since-boot reports: iostat's averages since boot")
            elif self.dropped_first:
                notes.append("first report (since boot) left out")
            if self.boot_reports and self.reports:
                notes.append(
                    f"{self.boot_reports} OSWatcher/ExaWatcher snapshots: each one's first "
                    "report (since boot) left out"
                )
            return self._facts(notes, since_boot_only)
        finally:
            (
                self.current,
                self.first,
                self.reports,
                self.dropped_first,
                self.labels,
                self.boot_report,
                self.boot_reports,
            ) = saved
            self.dev, self.cpu = saved_dev, saved_cpu
            self.core = saved_core

    def _facts(self, notes: list[str], since_boot_only: bool) -> tuple:
        facts: dict = {}
        details: dict = {"notes": notes, "reports": self.reports}
        if self.banner:
            details["banner"] = self.banner
            facts["cpu.count"] = float(self.banner["cpus"])
        if since_boot_only:
            facts["os.since_boot"] = 1.0
        if (boot := self.boot_report) is not None:
            details["since_boot"] = {
                "cpu": boot.cpu,
                "devices": {
                    d: {k: round(v, 2) for k, v in r.items()} for d, r in boot.devices.items()
                },
            }
        cpu = self.cpu
        if cpu:
            facts["cpu.intervals"] = float(max(s.n for s in cpu.values()))
            for key in ("usr", "sys", "wait", "idle", "steal"):
                if key in cpu and (m := cpu[key].mean) is not None:
                    facts[f"cpu.{key}_pct"] = r3(m)
            if "wait" in cpu:
                facts["cpu.max_wait_pct"] = r3(cpu["wait"].high)
            if "idle" in cpu:
                facts["cpu.max_busy_pct"] = r3(100 - cpu["idle"].low)
        devices: dict[str, dict[str, float]] = {}
        for dev, stats in self.dev.items():
            row = {k: s.mean for k, s in stats.items() if s.mean is not None}
            row["max_await"] = stats["await"].high if "await" in stats else 0.0
            row["max_util"] = stats["util"].high if "util" in stats else 0.0
            devices[dev] = row  # type: ignore[assignment]
        if devices:
            device_facts(devices, facts, details)
        details["devices"] = [
            {"device": d, **{k: round(v, 2) for k, v in row.items()}}
            for d, row in sorted(
                devices.items(), key=lambda kv: -(kv[1].get("await", 0) + kv[1].get("util", 0))
            )[:50]
        ]
        if devices:
            top = sorted(devices, key=lambda d: -devices[d].get("max_await", 0.0))[:6]
            details["series"] = {
                d: [round(v, 2) for v in self.dev[d]["await"].chart()]
                for d in top
                if "await" in self.dev[d]
            }
            details["labels"] = self.labels[:500]
        platform: Platform | None = {"linux": "linux", "solaris": "solaris"}.get(self.kind or "")  # type: ignore[assignment]
        details["findings"] = findings(facts, details["notes"])
        idents = ["iostat", *sorted(devices)[:20]]
        return facts, details, idents, platform


def device_facts(devices: dict[str, dict[str, float]], facts: dict, details: dict) -> None:
    """The per-device facts iostat and sar -d share, from one mean row per device (with
    `max_await` and `max_util`, the worst sample)."""

    def table(key: str) -> dict[str, float]:
        return {d: r3(r[key]) for d, r in devices.items() if key in r}

    for fact, key in (
        ("dev.r_per_s", "r_s"),
        ("dev.w_per_s", "w_s"),
        ("dev.tps", "tps"),
        ("dev.rkb_per_s", "rkb_s"),
        ("dev.wkb_per_s", "wkb_s"),
        ("dev.await_ms", "await"),
        ("dev.r_await_ms", "r_await"),
        ("dev.w_await_ms", "w_await"),
        ("dev.queue", "queue"),
        ("dev.util_pct", "util"),
        ("dev.svctm_ms", "svctm"),
        ("dev.max_await_ms", "max_await"),
    ):
        if values := table(key):
            facts[fact] = values
    worst = _worst(devices)
    facts["io.devices"] = float(len(devices))
    for fact, key in (
        ("io.max_await_ms", "max_await"),
        ("io.max_r_await_ms", "r_await"),
        ("io.max_w_await_ms", "w_await"),
        ("io.max_util_pct", "max_util"),
        ("io.max_queue", "queue"),
    ):
        values = [r[key] for r in devices.values() if key in r]
        if values:
            facts[fact] = r3(max(values))
    if worst is not None:
        row = devices[worst]
        facts["io.worst_device"] = worst
        if "await" in row:
            facts["io.worst_await_ms"] = r3(row["await"])
        if "util" in row:
            facts["io.worst_util_pct"] = r3(row["util"])
    caveat = [d for d, r in devices.items() if r.get("max_util", 0) >= 90 and _parallel(d, r)]
    facts["io.util_caveat"] = 1.0 if caveat else 0.0
    if caveat:
        details["notes"].append(
            "%util near 100 on "
            + ", ".join(sorted(caveat)[:5])
            + ": this device serves requests in parallel (NVMe, an array, device-mapper, or "
            "a queue far above 1 at low await), so %util measures time busy, not saturation;"
            " read await and the queue"
        )


def _copy(s: Series) -> Series:
    c = Series.__new__(Series)
    for slot in Series.__slots__:
        value = getattr(s, slot)
        setattr(c, slot, list(value) if isinstance(value, list) else value)
    return c


def _iops(row: dict[str, float]) -> float:
    return row.get("r_s", 0.0) + row.get("w_s", 0.0) or row.get("tps", 0.0)


def _worst(devices: dict[str, dict[str, float]]) -> str | None:
    """The device a person looks at first: the slowest among those doing real I/O (at least one
    request a second: the iostat man pages warn that service times at lower rates mean nothing),
    else the one with the highest %util, else the one with the most requests."""
    busy = [d for d, r in devices.items() if _iops(r) >= 1 and "await" in r]
    if busy:
        return max(busy, key=lambda d: (devices[d]["await"], devices[d].get("util", 0.0)))
    with_util = [d for d in devices if devices[d].get("util", 0.0) > 0]
    if with_util:
        return max(with_util, key=lambda d: devices[d]["util"])
    active = [d for d in devices if _iops(devices[d]) > 0]  # plain iostat: the busiest by tps
    return max(active, key=lambda d: _iops(devices[d])) if active else None


def _parallel(device: str, row: dict[str, float]) -> bool:
    return bool(_PARALLEL.match(device)) or (
        row.get("queue", 0.0) >= 2 and row.get("await", 99.0) <= 2
    )
