"""Deterministic archive of AWR and Statspack text reports for the streaming benchmark: what a
week of hourly reports spooled into one file looks like. Each report has a header (DB Name,
Snap Id lines, Elapsed, DB Time), Load Profile, Instance Efficiency, the release's Top N table
(10g/11g "Top 5 Timed Events", 11.2 "Top 5 Timed Foreground Events", 12c "Top 10 Foreground
Events by Total Wait Time" in 12.1 and 12.2+/19c layouts; Statspack's "Top 5 Timed Events"),
Time Model Statistics, Foreground and Background Wait Events, SQL ordered by Elapsed Time,
Instance Activity Stats and init.ora parameters. Everything is drawn from random.Random(seed)
and tallied, so the benchmark checks that perfkb counted exactly what was written. The numbers
are made up; the shapes follow the corpus AWR and Statspack snippets (01, 02, 05, 06).
"""

from __future__ import annotations

import random
import sys
from pathlib import Path

from pydantic import BaseModel

from benchmarks.capture_cache import cached
from benchmarks.gen_traces import DATA_DIR, MB, SEED, SIZES

GEN_VERSION = 1
# the grep -cE reference: a wait-event row (a name, then a run of numbers)
GREP_RE = r"^[a-zA-Z][a-zA-Z :*/()-]+ +[0-9][0-9,]* +[0-9-]"
LAYOUTS = ("10g", "11g", "12.1", "19c", "statspack")

FG_EVENTS = (
    ("db file sequential read", "User I/O"),
    ("log file sync", "Commit"),
    ("db file scattered read", "User I/O"),
    ("direct path read", "User I/O"),
    ("read by other session", "User I/O"),
    ("enq: TX - row lock contention", "Application"),
    ("latch: cache buffers chains", "Concurrency"),
    ("library cache: mutex X", "Concurrency"),
    ("gc cr block 2-way", "Cluster"),
    ("SQL*Net message to client", "Network"),
    ("SQL*Net more data to client", "Network"),
    ("control file sequential read", "System I/O"),
)
BG_EVENTS = (
    ("log file parallel write", "System I/O"),
    ("db file parallel write", "System I/O"),
    ("control file parallel write", "System I/O"),
    ("os thread startup", "Concurrency"),
)
LOAD = ("DB Time(s)", "DB CPU(s)", "Redo size", "Logical reads", "Block changes",
        "Physical reads", "Physical writes", "User calls", "Parses", "Hard parses",
        "Logons", "Executes", "Rollbacks", "Transactions")  # fmt: skip
STATS = ("consistent gets", "db block changes", "execute count", "parse count (hard)",
         "physical read total IO requests", "redo size", "session logical reads",
         "user commits", "user calls", "table scans (long tables)")  # fmt: skip
PARAMS = ("db_block_size", "db_cache_size", "processes", "sessions", "sga_target",
          "pga_aggregate_target", "cursor_sharing", "open_cursors")  # fmt: skip
RULER7 = "-------------------------- ------------ ----- ---------- ------- -------- ------"


class ExpectedAwr(BaseModel):
    kind: str = "awr"
    seed: int
    gen_version: int = GEN_VERSION
    target_bytes: int
    bytes: int = 0
    lines: int = 0
    reports: int = 0  # reports written (one block each)
    waits: int = 0  # Waits summed over every Foreground and Background Wait Events row
    by_layout: dict[str, int] = {}


def _n(x: float | int) -> str:
    return f"{x:,}" if isinstance(x, int) else f"{x:,.1f}"


def _top_table(layout: str, rows: list[tuple[str, str, int, int, float]]) -> list[str]:
    """rows: (event, class, waits, time_s, pct) -> the release's Top N table."""
    out: list[str] = []
    if layout in ("10g", "statspack"):
        out += [
            "Top 5 Timed Events                                         Avg %Total",
            "~~~~~~~~~~~~~~~~~~                                        wait   Call",
            "Event                                 Waits    Time (s)   (ms)   Time Wait Class",
            "------------------------------ ------------ ----------- ------ ------ ----------",
        ]
        for name, cls, waits, t, pct in rows[:5]:
            avg = round(t * 1000 / waits)
            out.append(f"{name:<30} {_n(waits):>12} {_n(t):>11} {avg:>6} {pct:>6.1f} {cls}")
    elif layout == "11g":
        out += [
            "Top 5 Timed Foreground Events",
            "~~~~~~~~~~~~~~~~~~~~~~~~~~~~~",
            "                                                           Avg",
            "                                                          wait   % DB",
            "Event                                 Waits     Time(s)   (ms)   time Wait Class",
            "------------------------------ ------------ ----------- ------ ------ ----------",
        ]
        for name, cls, waits, t, pct in rows[:5]:
            avg = round(t * 1000 / waits)
            out.append(f"{name:<30} {_n(waits):>12} {_n(t):>11} {avg:>6} {pct:>6.1f} {cls}")
    elif layout == "12.1":
        out += [
            "Top 10 Foreground Events by Total Wait Time",
            "~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~",
            "                                           Total Wait       Wait   % DB Wait",
            "Event                                Waits Time (sec)    Avg(ms)   time Class",
            "------------------------------ ----------- ---------- ---------- ------ --------",
        ]
        for name, cls, waits, t, pct in rows[:10]:
            avg = t * 1000 / waits
            out.append(f"{name:<30} {_n(waits):>11} {_n(t):>10} {avg:>10.2f} {pct:>6.1f} {cls}")
    else:  # 12.2+ / 19c: averages with their unit
        out += [
            "Top 10 Foreground Events by Total Wait Time",
            "~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~",
            "                                           Total Wait       Avg   % DB Wait",
            "Event                                Waits Time (sec)      Wait   time Class",
            "------------------------------ ----------- ---------- --------- ------ --------",
        ]
        for name, cls, waits, t, pct in rows[:10]:
            avg_ms = t * 1000 / waits
            avg = f"{avg_ms:.2f}ms" if avg_ms >= 1 else f"{avg_ms * 1000:.2f}us"
            out.append(f"{name:<30} {_n(waits):>11} {_n(t):>10} {avg:>9} {pct:>6.1f} {cls:<8}")
    return out


def _report(rng: random.Random, layout: str, snap: int, exp: ExpectedAwr) -> list[str]:
    hour = snap % 24
    day = 16 + snap // 24
    db_time = rng.randint(600, 20_000)
    statspack = layout == "statspack"
    out = ["STATSPACK report for", ""] if statspack else ["WORKLOAD REPOSITORY report for", ""]
    out += [
        "DB Name         DB Id    Instance     Inst Num Startup Time    Release     RAC",
        "------------ ----------- ------------ -------- --------------- ----------- ---",
        f"BENCH          1234567890 bench1              1 15-Nov-26 06:00 "
        f"{ {'10g': '10.2.0.5.0', '11g': '11.2.0.4.0', '12.1': '12.1.0.2.0'}.get(layout, '19.0.0.0.0') }  NO",
        "",
        "              Snap Id      Snap Time      Sessions Curs/Sess",
        "            --------- ------------------- -------- ---------",
        f"Begin Snap:     {snap:>5} {day:02d}-Nov-26 {hour:02d}:00:04  {rng.randint(50, 400):>7}       1.6",
        f"  End Snap:     {snap + 1:>5} {day:02d}-Nov-26 {hour:02d}:59:58  {rng.randint(50, 400):>7}       1.7",
        "   Elapsed:               59.90 (mins)",
        f"   DB Time:            {db_time / 60:>8.2f} (mins)",
        "",
        "Load Profile              Per Second    Per Transaction   Per Exec   Per Call",
        "~~~~~~~~~~~~         ---------------    --------------- ---------- ----------",
    ]
    for name in LOAD:
        ps = rng.uniform(0.1, 90_000)
        out.append(f"{name + ':':>20} {ps:>18,.1f} {ps / 25:>18,.1f}")
    out += [
        "",
        "Instance Efficiency Percentages (Target 100%)",
        "~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~",
        f"            Buffer Nowait %:   {rng.uniform(98, 100):6.2f}       Redo NoWait %:  100.00",
        f"            Buffer  Hit   %:   {rng.uniform(80, 100):6.2f}    In-memory Sort %:  100.00",
        "",
    ]
    # the foreground events of this hour: waits and time, the busiest first
    chosen = rng.sample(FG_EVENTS, rng.randint(6, len(FG_EVENTS)))
    rows = []
    for name, cls in chosen:
        waits = rng.randint(10, 3_000_000)
        rows.append((name, cls, waits, max(1, waits * rng.randint(1, 20) // 1000)))
    rows.sort(key=lambda r: -r[3])
    top = [(n, c, w, t, round(100 * t / max(db_time, 1), 1)) for n, c, w, t in rows]
    out += _top_table(layout, top)
    out += [
        "",
        "Time Model Statistics                        DB/Inst: BENCH/bench1  "
        f"Snaps: {snap}-{snap + 1}",
        f"-> Total time in database user-calls (DB Time): {db_time:.1f}s",
        "",
        "Statistic Name                                       Time (s) % of DB Time",
        "------------------------------------------ ------------------ ------------",
        f"sql execute elapsed time                   {db_time * 0.9:>18,.1f} {90.0:>12.1f}",
        f"DB CPU                                     {db_time * 0.3:>18,.1f} {30.0:>12.1f}",
        f"DB time                                    {db_time:>18,.1f}",
        "",
        "Foreground Wait Events                       DB/Inst: BENCH/bench1  "
        f"Snaps: {snap}-{snap + 1}",
        "-> s  - second, ms - millisecond -    1000th of a second",
        "-> ordered by wait time desc, waits desc (idle events last)",
        "",
        "                                                             Avg",
        "                                        %Time Total Wait    wait    Waits   % DB",
        "Event                             Waits -outs   Time (s)    (ms)     /txn   time",
        RULER7,
    ]
    for name, _cls, waits, t, pct in top:
        avg = round(t * 1000 / waits)
        out.append(
            f"{name[:26]:<26} {_n(waits):>12} {0:>5} {_n(t):>10} {avg:>7} {waits / 9000:>8.1f}"
            f" {pct:>6.1f}"
        )
        exp.waits += waits
    out += [
        "",
        "Background Wait Events                       DB/Inst: BENCH/bench1  "
        f"Snaps: {snap}-{snap + 1}",
        "-> ordered by wait time desc, waits desc (idle events last)",
        "",
        "                                                             Avg",
        "                                        %Time Total Wait    wait    Waits   % bg",
        "Event                             Waits -outs   Time (s)    (ms)     /txn   time",
        RULER7,
    ]
    for name, _cls in BG_EVENTS:
        waits = rng.randint(100, 200_000)
        t = max(1, waits // 500)
        exp.waits += waits
        out.append(
            f"{name[:26]:<26} {_n(waits):>12} {0:>5} {_n(t):>10} {round(t * 1000 / waits):>7}"
            f" {waits / 9000:>8.1f} {rng.uniform(1, 40):>6.1f}"
        )
    out += [
        "",
        "SQL ordered by Elapsed Time                  DB/Inst: BENCH/bench1  "
        f"Snaps: {snap}-{snap + 1}",
        f"-> Captured SQL account for   91.2% of Total DB Time (s):{db_time:>12,}",
        "",
        "        Elapsed                  Elapsed Time",
        "        Time (s)    Executions  per Exec (s)  %Total   %CPU    %IO    SQL Id",
        "---------------- -------------- ------------- ------ ------ ------ -------------",
    ]
    for _ in range(rng.randint(3, 8)):
        ela = rng.uniform(1, db_time / 2)
        execs = rng.randint(1, 500_000)
        sql_id = "".join(rng.choice("0123456789abcdfghjkmnpqrstuvwxyz") for _ in range(13))
        out += [
            f"{ela:>16,.1f} {execs:>14,} {ela / execs:>13.4f} {100 * ela / db_time:>6.1f}"
            f" {rng.uniform(0, 100):>6.1f} {rng.uniform(0, 100):>6.1f} {sql_id}",
            f"Module: JDBC Thin Client{' ' * 3}",
            f"SELECT ID, STATUS FROM ORDERS WHERE CUSTOMER_ID = :{rng.randint(1, 9)}",
            "",
        ]
    out += [
        "Instance Activity Stats                      DB/Inst: BENCH/bench1  "
        f"Snaps: {snap}-{snap + 1}",
        "",
        "Statistic                                     Total     per Second     per Trans",
        "-------------------------------- ------------------ -------------- -------------",
    ]
    for name in STATS:
        total = rng.randint(0, 10**9)
        out.append(f"{name:<32} {total:>18,} {total / 3594:>14,.1f} {total / 9000:>13,.1f}")
    out += [
        "",
        "init.ora Parameters                          DB/Inst: BENCH/bench1  "
        f"Snaps: {snap}-{snap + 1}",
        "",
        "                                                                End value",
        "Parameter Name                Begin value                       (if different)",
        "----------------------------- --------------------------------- --------------",
    ]
    for name in PARAMS:
        out.append(f"{name:<29} {rng.choice(['8192', '2000', 'EXACT', '4G', '300']):<33}")
    out += ["", "          -------------------------------------------------------------", ""]
    if statspack:
        out.append("End of Report ( /tmp/sp_bench.lst )")
        out.append("")
    return out


def generate_awr(target_bytes: int, path: Path, seed: int = SEED) -> ExpectedAwr:
    """Reports one after another (each release's layout in turn, hourly snapshots) until the
    archive holds `target_bytes`; returns the tally."""
    rng = random.Random(seed)
    exp = ExpectedAwr(seed=seed, target_bytes=target_bytes)
    size = lines = 0
    snap = 100
    with path.open("w", encoding="ascii", newline="\n") as f:
        while size < target_bytes:
            layout = LAYOUTS[exp.reports % len(LAYOUTS)]
            text = "\n".join(_report(rng, layout, snap, exp)) + "\n"
            f.write(text)
            size += len(text)
            lines += text.count("\n")
            exp.reports += 1
            exp.by_layout[layout] = exp.by_layout.get(layout, 0) + 1
            snap += 1
    exp.bytes = size
    exp.lines = lines
    return exp


def ensure(size_label: str, *, data_dir: Path = DATA_DIR, seed: int = SEED):
    """The archive for `size_label` under data_dir, generated once and reused while its sidecar
    agrees with this generator version."""
    path = data_dir / f"awr-{size_label}-s{seed}-g{GEN_VERSION}.txt"
    return cached(
        path, ExpectedAwr, lambda: generate_awr(SIZES.get(size_label, 10 * MB), path, seed)
    )


if __name__ == "__main__":
    if len(sys.argv) != 2 or sys.argv[1] not in SIZES:
        sys.exit(f"usage: python -m benchmarks.gen_awr {'|'.join(SIZES)}")
    p, e = ensure(sys.argv[1])
    print(f"{p}: {e.model_dump_json()}")
