"""Deterministic generator of long vmstat, iostat and sar captures: what an OSWatcher or
ExaWatcher archive, a `iostat -xt 1` left running for days, or a year of `sar -A` text holds.

vmstat: OSWatcher-style snapshots (`zzz ***date` markers, procps group and column headers, three
rows per snapshot, the first of each a fresh vmstat's since-boot row). iostat: sysstat 12 `-xt`
reports (a stamp, the avg-cpu block and eight devices, the first report since boot). sar: a
`sar -u -q -d` day per file section, with the sysstat banner, 12 h clocks and Average rows.

Everything is drawn from `random.Random(seed)`, so (kind, size, seed) always yields the same
bytes, and the generator tallies what it wrote (samples counted, the largest run queue, the
slowest device) in an `Expected` record the streaming benchmark checks perfkb's facts against.
The numbers are made up; their shapes follow tests/fixtures/os/ and the corpus snippets 46-54.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from pathlib import Path
from typing import Literal

from pydantic import BaseModel

from benchmarks.capture_cache import CaptureWriter, cached
from benchmarks.gen_traces import SIZES

GEN_VERSION = 2  # 2: iostat awaits tallied from the printed (rounded) values
DATA_DIR = Path(__file__).resolve().parent / "data"
SEED = 8

Kind = Literal["vmstat", "iostat", "sar", "mpstat", "pidstat", "prstat", "top"]
KINDS: tuple[Kind, ...] = ("vmstat", "iostat", "sar", "mpstat", "pidstat", "prstat", "top")

# One regular expression for "a data row" per format: the grep -cE reference.
GREP_RE: dict[str, str] = {
    "vmstat": r"^ *[0-9]+ +[0-9]+ +[0-9]+ +[0-9]+ +[0-9]+ +[0-9]+ +[0-9]+ +[0-9]+ ",
    "iostat": r"^(sd|nvme|dm-)[a-z0-9-]* +[0-9]",
    "sar": r"^[0-9]{2}:[0-9]{2}:[0-9]{2} [AP]M +[^ ]+ +[0-9.]+ ",
    "mpstat": r"^[0-9]{2}:[0-9]{2}:[0-9]{2}( [AP]M)? +(all|[0-9]+) +[0-9.]+ ",
    "pidstat": r"^[0-9]{2}:[0-9]{2}:[0-9]{2} [AP]M +[0-9]+ +[0-9]+ +[0-9.]+ ",
    "prstat": r"^ *[0-9]+ +[a-z]+ +[0-9.]+ .*/[0-9]+$",
    "top": r"^ *[0-9]+ +[a-z]+ +[0-9rt-]+ +-?[0-9]+ ",
}

_DEVICES = ("sda", "sdb", "sdc", "sdd", "nvme0n1", "nvme1n1", "dm-0", "dm-1")


class Expected(BaseModel):
    """What a generated capture holds, tallied while writing it."""

    kind: Kind
    seed: int
    gen_version: int = GEN_VERSION
    target_bytes: int
    bytes: int = 0
    lines: int = 0
    samples: int = 0  # samples that count (since-boot rows and reports left out)
    runq_max: float = 0.0
    worst_await_ms: float = 0.0
    mean_wait_pct: float = 0.0  # mpstat: the mean %iowait of the intervals' `all` rows
    processes: int = 0  # pidstat, prstat: the processes (prstat -L: threads) its rows name
    last_load: float = (
        0.0  # top: the last frame's 1-minute load average (its facts are that frame's)
    )


def _vmstat(rng: random.Random, out: CaptureWriter, exp: Expected) -> None:
    out.add("Linux OSWbb v8.3.2 exadb01")
    day, sec = 0, 0
    while not out.full:
        sec += 30
        h, m, s = (sec // 3600) % 24, (sec // 60) % 60, sec % 60
        out.add(f"zzz ***Tue Nov {1 + day % 28:02d} {h:02d}:{m:02d}:{s:02d} UTC 2026")
        out.add("procs -----------memory---------- ---swap-- -----io---- -system-- ------cpu-----")
        out.add(" r  b   swpd   free   buff  cache   si   so    bi    bo   in   cs us sy id wa st")
        busy = rng.random() < 0.1
        for i in range(3):
            r = rng.randint(8, 40) if busy and i else rng.randint(0, 6)
            us = rng.randint(60, 85) if busy and i else rng.randint(2, 30)
            sy = rng.randint(5, 15)
            wa = rng.randint(0, 5)
            idle = max(0, 100 - us - sy - wa)
            out.add(
                f"{r:2d} {rng.randint(0, 3):2d} {rng.randint(0, 9000):6d} "
                f"{rng.randint(200000, 9000000):7d} {rng.randint(1000, 90000):6d} "
                f"{rng.randint(900000, 20000000):8d} {0:4d} {0:4d} {rng.randint(0, 9000):5d} "
                f"{rng.randint(0, 20000):5d} {rng.randint(300, 30000):5d} "
                f"{rng.randint(500, 90000):5d} {us:2d} {sy:2d} {idle:2d} {wa:2d}  0"
            )
            if i:
                exp.samples += 1
                exp.runq_max = max(exp.runq_max, float(r))
        if sec >= 86400:
            day, sec = day + 1, 0


def _iostat(rng: random.Random, out: CaptureWriter, exp: Expected) -> None:
    out.add(
        "Linux 5.14.0-427.13.1.el9_4.x86_64 (ora19db)   11/01/2026      _x86_64_        (32 CPU)"
    )
    out.add("")
    header = (
        "Device            r/s     w/s     rkB/s     wkB/s   rrqm/s   wrqm/s  %rrqm  %wrqm "
        "r_await w_await aqu-sz rareq-sz wareq-sz  svctm  %util"
    )
    sec, report = 0, 0
    while not out.full:
        sec += 1
        h = (sec // 3600) % 24
        out.add(
            f"11/01/2026 {h % 12 or 12:02d}:{(sec // 60) % 60:02d}:{sec % 60:02d} {'AM' if h < 12 else 'PM'}"
        )
        out.add("avg-cpu:  %user   %nice %system %iowait  %steal   %idle")
        us, sy, wa = rng.uniform(5, 60), rng.uniform(1, 15), rng.uniform(0, 20)
        out.add(
            f"          {us:6.2f}    0.00  {sy:6.2f}  {wa:6.2f}    0.00  {100 - us - sy - wa:6.2f}"
        )
        out.add("")
        out.add(header)
        for dev in _DEVICES:
            # rounded as printed, so the tally is what a reader of the file computes
            r, w = round(rng.uniform(0, 900), 2), round(rng.uniform(0, 600), 2)
            ra, wa_ = round(rng.uniform(0.1, 12), 2), round(rng.uniform(0.05, 30), 2)
            if rng.random() < 0.001:
                wa_ = round(rng.uniform(100, 900), 2)  # a rare stall
            util = min(100.0, (r + w) * 0.05)
            out.add(
                f"{dev:<12} {r:8.2f} {w:7.2f} {r * 16:9.2f} {w * 32:9.2f} {0:8.2f} {0:8.2f} "
                f"{0:6.2f} {0:6.2f} {ra:7.2f} {wa_:7.2f} {rng.uniform(0, 8):6.2f} "
                f"{16:8.2f} {32:8.2f} {0.1:6.2f} {util:6.2f}"
            )
            if report:
                awaits = (ra * r + wa_ * w) / (r + w) if r + w > 0 else max(ra, wa_)
                exp.worst_await_ms = max(exp.worst_await_ms, round(awaits, 3))
        out.add("")
        if report:
            exp.samples += 1
        report += 1


def _sar(rng: random.Random, out: CaptureWriter, exp: Expected) -> None:
    day = 0
    while not out.full:
        day += 1
        date = f"11/{1 + day % 28:02d}/2026"
        out.add(f"Linux 3.10.0-1160.el7.x86_64 (app03)    {date}      _x86_64_        (16 CPU)")
        out.add("")
        clocks = []
        for minute in range(0, 24 * 60, 10):
            h, m = divmod(minute, 60)
            clocks.append(f"{h % 12 or 12:02d}:{m:02d}:01 {'AM' if h < 12 else 'PM'}")
        out.add(f"{clocks[0]}     CPU     %user     %nice   %system   %iowait    %steal     %idle")
        for clock in clocks[1:]:
            us, sy, wa = rng.uniform(5, 70), rng.uniform(1, 20), rng.uniform(0, 9)
            out.add(
                f"{clock}     all {us:9.2f}      0.00 {sy:9.2f} {wa:9.2f}      0.00 "
                f"{100 - us - sy - wa:9.2f}"
            )
        out.add("")
        out.add(f"{clocks[0]}   runq-sz  plist-sz   ldavg-1   ldavg-5  ldavg-15   blocked")
        for clock in clocks[1:]:
            runq = rng.randint(0, 30)
            exp.runq_max = max(exp.runq_max, float(runq))
            out.add(
                f"{clock} {runq:9d} {rng.randint(300, 900):9d} {rng.uniform(0, 30):9.2f} "
                f"{rng.uniform(0, 25):9.2f} {rng.uniform(0, 20):9.2f} {rng.randint(0, 4):9d}"
            )
        exp.samples += len(clocks) - 1
        out.add("")
        out.add(
            f"{clocks[0]}       DEV       tps     rkB/s     wkB/s   areq-sz    aqu-sz     await     %util"
        )
        for clock in clocks[1:]:
            for dev in ("dev8-0", "dev8-16", "dev253-0"):
                a = rng.uniform(0.2, 40)
                out.add(
                    f"{clock} {dev:>9} {rng.uniform(1, 900):9.2f} {rng.uniform(0, 9000):9.2f} "
                    f"{rng.uniform(0, 9000):9.2f} {rng.uniform(4, 64):9.2f} "
                    f"{rng.uniform(0, 9):9.2f} {a:9.2f} {rng.uniform(0, 100):9.2f}"
                )
                exp.worst_await_ms = max(exp.worst_await_ms, round(a, 2))
        out.add("")


# mpstat -P ALL headers of three sysstat generations: (header after the clock, 12 h clock?)
MPSTAT_RELEASES: dict[str, tuple[str, bool]] = {
    # sysstat 10-12 (RHEL 7-9, Ubuntu 18+): %gnice, a 12 h clock under en_US
    "12": (
        "CPU    %usr   %nice    %sys %iowait    %irq   %soft  %steal  %guest  %gnice   %idle",
        True,
    ),
    # sysstat 9 (RHEL 6): no %gnice, a 24 h clock under LC_TIME=C
    "9": ("CPU    %usr   %nice    %sys %iowait    %irq   %soft  %steal  %guest   %idle", False),
    # sysstat 7 (RHEL 5): %user and intr/s at the end
    "7": ("CPU   %user   %nice    %sys %iowait    %irq   %soft  %steal   %idle    intr/s", True),
}
MPSTAT_CPUS = 8


def _mpstat(rng: random.Random, out: CaptureWriter, exp: Expected, release: str = "12") -> None:
    """`mpstat -P ALL 1` left running: a banner, then per interval a blank line, the header
    (behind the interval's clock), the `all` row and one row per CPU; the Average rows at the
    end. Every interval counts (sysstat prints no since-boot report with an interval given)."""
    header, twelve = MPSTAT_RELEASES[release]
    names = header.split()[1:]
    out.add(f"Linux 4.18.0-553.el8_10.x86_64 (dbhost07)  11/02/2026  _x86_64_  ({MPSTAT_CPUS} CPU)")
    sec, wait_sum = 0, 0.0
    while not out.full:
        sec += 1
        h, m, s_ = (sec // 3600) % 24, (sec // 60) % 60, sec % 60
        if twelve:
            clock = f"{h % 12 or 12:02d}:{m:02d}:{s_:02d} {'AM' if h < 12 else 'PM'}"
        else:
            clock = f"{h:02d}:{m:02d}:{s_:02d}"
        out.add("")
        out.add(f"{clock}  {header}")
        for cpu in ("all", *(str(c) for c in range(MPSTAT_CPUS))):
            usr, sy = round(rng.uniform(0, 70), 2), round(rng.uniform(0, 15), 2)
            wa = (
                round(rng.uniform(0, 12), 2) if rng.random() < 0.9 else round(rng.uniform(0, 60), 2)
            )
            wa = min(wa, round(100 - usr - sy, 2))
            idle = round(max(0.0, 100 - usr - sy - wa), 2)
            vals = {"%usr": usr, "%user": usr, "%sys": sy, "%iowait": wa, "%idle": idle}
            cells = []
            for name in names:
                if name == "intr/s":
                    cells.append(f"{rng.uniform(100, 9000):9.2f}")
                else:
                    cells.append(f"{vals.get(name, 0.0):7.2f}")
            out.add(f"{clock}  {cpu:>4} " + " ".join(cells))
            if cpu == "all":
                wait_sum += wa
        exp.samples += 1
    exp.mean_wait_pct = round(wait_sum / exp.samples, 3) if exp.samples else 0.0
    out.add("")
    out.add(f"Average:  {header}")
    for cpu in ("all", *(str(c) for c in range(MPSTAT_CPUS))):
        cells = ["   0.00" if n != "%idle" else " 100.00" for n in names]
        out.add(f"Average:  {cpu:>4} " + " ".join(cells))


# pidstat's three reports per interval (sysstat 11/12 `pidstat -u -d -r 5`): header columns
_PIDSTAT_REPORTS = (
    "UID       PID    %usr %system  %guest   %wait    %CPU   CPU  Command",
    "UID       PID   kB_rd/s   kB_wr/s kB_ccwr/s iodelay  Command",
    "UID       PID  minflt/s  majflt/s     VSZ     RSS   %MEM  Command",
)
_PIDSTAT_PROCS = (
    *(f"ora_{n}_orcl" for n in ("pmon", "lgwr", "dbw0", "dbw1", "ckpt", "smon", "lreg", "mmon")),
    *(f"oracle_{8800 + i}_orcl" for i in range(22)),
    "tnslsnr",
    "sssd_nss",
)


def _pidstat(rng: random.Random, out: CaptureWriter, exp: Expected) -> None:
    """`pidstat -u -d -r 5` left running on a database host: the banner, then per interval
    three reports (CPU, I/O, memory), each a header behind the interval's 12 h clock and a row
    per process that did something in it, a blank line after each."""
    out.add("Linux 4.18.0-553.el8_10.x86_64 (dbhost07)  11/02/2026  _x86_64_  (16 CPU)")
    pids = {name: 2000 + 37 * i for i, name in enumerate(_PIDSTAT_PROCS)}
    seen: set[str] = set()
    sec = 0
    while not out.full:
        sec += 5
        h, m, s_ = (sec // 3600) % 24, (sec // 60) % 60, sec % 60
        clock = f"{h % 12 or 12:02d}:{m:02d}:{s_:02d} {'AM' if h < 12 else 'PM'}"
        for report in _PIDSTAT_REPORTS:
            out.add("")
            out.add(f"{clock}  {report}")
            for name in rng.sample(_PIDSTAT_PROCS, rng.randrange(3, 12)):
                seen.add(name)
                head = f"{clock}  {54321:>5} {pids[name]:>9}"
                if report.startswith("UID       PID    %usr"):
                    usr, sy = rng.uniform(0, 60), rng.uniform(0, 20)
                    cells = f"{usr:7.2f} {sy:7.2f}    0.00 {rng.uniform(0, 30):7.2f} "
                    cells += f"{usr + sy:7.2f} {rng.randrange(16):5d}"
                elif "kB_rd/s" in report:
                    cells = f"{rng.uniform(0, 9000):9.2f} {rng.uniform(0, 60000):9.2f} "
                    cells += f"{0.0:9.2f} {rng.randrange(100):7d}"
                else:
                    rss = rng.randrange(50_000, 4_000_000)
                    cells = f"{rng.uniform(0, 500):9.2f} {rng.uniform(0, 5):9.2f} "
                    cells += f"{rss + 900_000:7d} {rss:7d} {rss / 1_600_000:6.2f}"
                out.add(f"{head} {cells}  {name}")
        exp.samples += 1
    exp.processes = len(seen)


def _prstat(rng: random.Random, out: CaptureWriter, exp: Expected) -> None:
    """`prstat -mLc 5` left running on a Solaris database host: per screen the -mL header
    (microstates per thread), a row per busy thread, then the `Total:` line with the load
    averages (the largest is tallied as the run queue's)."""
    header = "   PID USERNAME USR SYS TRP TFL DFL LCK SLP LAT VCX ICX SCL SIG PROCESS/LWPID"
    threads = [(12000 + 11 * i, "oracle", "oracle", 1) for i in range(40)]
    threads += [(1733, "root", "nscd", lwp) for lwp in range(1, 9)]
    threads += [(4410, "oracle", "java", lwp) for lwp in range(1, 30)]
    seen: set[tuple[int, int]] = set()

    def pct(hi: float) -> str:
        v = rng.uniform(0, hi)
        return f"{v:3.1f}" if v < 10 else f"{v:3.0f}"

    while not out.full:
        out.add(header)
        for pid, user, name, lwp in rng.sample(threads, rng.randrange(6, 30)):
            seen.add((pid, lwp))
            usr, sy, lck, lat = pct(60), pct(30), pct(40), pct(20)
            slp = f"{max(0.0, 100 - sum(float(x) for x in (usr, sy, lck, lat))):3.0f}"
            vcx, icx = rng.randrange(1000), rng.randrange(1000)
            scl = f"{rng.randrange(1, 90)}K" if rng.random() < 0.5 else str(rng.randrange(999))
            out.add(
                f"{pid:>6} {user:<8} {usr:>3} {sy:>3} 0.0 0.0 0.0 {lck:>3} {slp:>3} {lat:>3} "
                f"{vcx:>3} {icx:>3} {scl:>3}   0 {name}/{lwp}"
            )
        load = round(rng.uniform(0.5, 40), 2)
        exp.runq_max = max(exp.runq_max, load)
        out.add(f"Total: 182 processes, 1210 lwps, load averages: {load:.2f}, 15.10, 11.90")
        exp.samples += 1
    exp.processes = len(seen)


def _top(rng: random.Random, out: CaptureWriter, exp: Expected) -> None:
    """`top -b -d 5` (procps-ng 3.3) left running: per frame the summary lines (uptime and load,
    tasks, %Cpu(s), MiB Mem and Swap), a blank line, the process table's header and a row per
    process; a blank line between frames."""
    procs = [(2000 + 37 * i, n) for i, n in enumerate(_PIDSTAT_PROCS)]
    procs += [(900 + i, f"kworker/{i}:1-events") for i in range(10)]
    sec = 0
    while not out.full:
        sec += 5
        h, m, s_ = 14 + (sec // 3600) % 10, (sec // 60) % 60, sec % 60
        load = round(rng.uniform(0.5, 30), 2)
        if sec > 5:
            out.add("")  # between two frames
        out.add(
            f"top - {h:02d}:{m:02d}:{s_:02d} up 10 days,  3:04,  2 users,  load average: "
            f"{load:.2f}, 7.50, 6.90"
        )
        out.add("Tasks: 312 total,   5 running, 307 sleeping,   0 stopped,   0 zombie")
        usr, sy = rng.uniform(0, 70), rng.uniform(0, 20)
        out.add(
            f"%Cpu(s): {usr:4.1f} us, {sy:4.1f} sy,  0.0 ni, {100 - usr - sy:4.1f} id,  "
            "0.0 wa,  0.0 hi,  0.3 si,  0.0 st"
        )
        out.add("MiB Mem :  64263.9 total,   1234.5 free,  40123.4 used,  22906.0 buff/cache")
        out.add("MiB Swap:   8192.0 total,   8000.0 free,    192.0 used.  20345.6 avail Mem")
        out.add("")
        out.add("    PID USER      PR  NI    VIRT    RES    SHR S  %CPU  %MEM     TIME+ COMMAND")
        for pid, name in rng.sample(procs, rng.randrange(8, 30)):
            user = "root" if name.startswith("kworker") else "oracle"
            cpu = rng.uniform(0, 99)
            out.add(
                f"{pid:>7} {user:<8}  20   0 {rng.randrange(10**5, 10**7):>7} "
                f"{rng.randrange(10**4, 10**6):>6} {rng.randrange(10**3, 10**5):>6} "
                f"{'R' if cpu > 50 else 'S'} {cpu:5.1f} {rng.uniform(0, 9):5.1f} "
                f"{rng.randrange(100):>4}:{rng.randrange(60):02d}.{rng.randrange(100):02d} {name}"
            )
        exp.samples += 1
        exp.last_load = load


_GENERATORS: dict[str, Callable[[random.Random, CaptureWriter, Expected], None]] = {
    "vmstat": _vmstat,
    "iostat": _iostat,
    "sar": _sar,
    "mpstat": _mpstat,
    "pidstat": _pidstat,
    "prstat": _prstat,
    "top": _top,
}


def generate(
    kind: Kind, target_bytes: int, path: Path, *, seed: int = SEED, release: str = "12"
) -> Expected:
    """Write a capture of at least `target_bytes` to `path`; return what it holds. `release`
    picks mpstat's sysstat generation (MPSTAT_RELEASES); the other kinds have one shape."""
    rng = random.Random(f"{kind}:{seed}")
    exp = Expected(kind=kind, seed=seed, target_bytes=target_bytes)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="ascii", newline="\n") as fh:
        out = CaptureWriter(fh, target_bytes)
        if kind == "mpstat":
            _mpstat(rng, out, exp, release)
        else:
            _GENERATORS[kind](rng, out, exp)
        out.flush()
    exp.bytes, exp.lines = out.size, out.lines
    return exp


def ensure(
    kind: Kind, size_label: str, *, data_dir: Path = DATA_DIR, seed: int = SEED
) -> tuple[Path, Expected]:
    """The capture for (kind, size) under data_dir, generated once and reused
    (benchmarks/capture_cache.py)."""
    target = SIZES[size_label]
    path = data_dir / f"{kind}-{size_label}.txt"
    return cached(
        path,
        Expected,
        lambda: generate(kind, target, path, seed=seed),
        gen_version=GEN_VERSION,
        seed=seed,
        target_bytes=target,
    )


if __name__ == "__main__":  # python -m benchmarks.gen_os_tables KIND SIZE
    import sys

    if len(sys.argv) != 3 or sys.argv[1] not in KINDS or sys.argv[2] not in SIZES:
        sys.exit(f"usage: python -m benchmarks.gen_os_tables {'|'.join(KINDS)} {'|'.join(SIZES)}")
    p, e = ensure(sys.argv[1], sys.argv[2])  # type: ignore[arg-type]
    print(f"{p}: {e.bytes:,} bytes, {e.lines:,} lines, {e.samples:,} samples")
