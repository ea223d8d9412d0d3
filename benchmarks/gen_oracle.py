"""Deterministic generators of Oracle report text for the streaming benchmark, in the style of
gen_trace10046.py: a tkprof report of many statements (sort=none over a long trace: SQL text,
call table, misses, parsing user, row source plan, wait table, then the OVERALL sections and the
trailer). Everything is drawn from random.Random(seed) and tallied, so the benchmark checks that
perfkb counted exactly what was written. The numbers are made up; the shapes follow the corpus
tkprof reports 15-19 (11g to 19c layouts).
"""

from __future__ import annotations

import random
import sys
from pathlib import Path

from pydantic import BaseModel

from benchmarks.capture_cache import cached
from benchmarks.gen_traces import DATA_DIR, MB, SEED, SIZES

GEN_VERSION = 1
# the grep -cE reference: a call-table row or a wait-table row
GREP_RE = {
    "tkprof": r"^(Parse|Execute|Fetch|total) +[0-9]+ +[0-9.]+ +[0-9.]+|^  [A-Za-z].* [0-9]+ +[0-9.]+ +[0-9.]+$",
}

STARS = "*" * 80
CALL_HEAD = (
    "call     count       cpu    elapsed       disk      query    current        rows\n"
    "------- ------  -------- ---------- ---------- ---------- ----------  ----------"
)
RULER = "------- ------  -------- ---------- ---------- ---------- ----------  ----------"
TK_HEADER = f"""TKPROF: Release 19.0.0.0.0 - Development on Tue Nov 24 10:00:00 2026

Copyright (c) 1982, 2019, Oracle and/or its affiliates.  All rights reserved.

Trace file: bench1_ora_4242.trc
Sort options: default

{STARS}
count    = number of times OCI procedure was executed
cpu      = cpu time in seconds executing
elapsed  = elapsed time in seconds executing
disk     = number of physical reads of buffers from disk
query    = number of buffers gotten for consistent read
current  = number of buffers gotten in current mode (usually for update)
rows     = number of rows processed by the fetch or execute call
{STARS}
"""
EVENTS = (
    "db file sequential read",
    "db file scattered read",
    "direct path read",
    "log file sync",
    "SQL*Net message to client",
    "SQL*Net message from client",
    "gc cr block 2-way",
    "latch: cache buffers chains",
    "enq: TX - row lock contention",
    "PGA memory operation",
)
TABLES = ("ORDERS", "ORDER_LINES", "CUSTOMERS", "ITEMS", "STOCK", "PAYMENTS")
SQL_ID_CHARS = "0123456789abcdfghjkmnpqrstuvwxyz"


class ExpectedOracle(BaseModel):
    kind: str
    seed: int
    gen_version: int = GEN_VERSION
    target_bytes: int
    bytes: int = 0
    lines: int = 0
    statements: int = 0  # statements with a call table
    executes: int = 0  # Execute count of the non-recursive statements (the OVERALL figure)
    waits: int = 0  # Times Waited summed over every wait row of the OVERALL sections


def _call_table(rows: list[tuple[str, int, int, int, int, int, int, int]]) -> list[str]:
    """rows: (kind, count, cpu_cs, ela_cs, disk, query, current, rows) -> the printed table."""
    out = [*CALL_HEAD.split("\n")]
    tot = [0] * 7
    for kind, *vals in rows:
        out.append(_call_row(kind, vals))
        tot = [a + b for a, b in zip(tot, vals, strict=True)]
    out.append(RULER)
    out.append(_call_row("total", tot))
    return out


def _call_row(kind: str, v: list[int]) -> str:
    return (
        f"{kind:<7} {v[0]:>6}  {v[1] / 100:>8.2f} {v[2] / 100:>10.2f} {v[3]:>10} {v[4]:>10}"
        f" {v[5]:>10}  {v[6]:>10}"
    )


def _wait_table(waits: dict[str, list[int]]) -> list[str]:
    out = [
        "",
        "Elapsed times include waiting on following events:",
        "  Event waited on                             Times   Max. Wait  Total Waited",
        "  ----------------------------------------   Waited  ----------  ------------",
    ]
    for name, (n, mx, tot) in waits.items():
        out.append(f"  {name:<40} {n:>8} {mx / 100:>11.2f} {tot / 100:>13.2f}")
    return out


def generate_tkprof(target_bytes: int, path: Path, seed: int = SEED) -> ExpectedOracle:
    rng = random.Random(seed)
    exp = ExpectedOracle(kind="tkprof", seed=seed, target_bytes=target_bytes)
    sums = {0: [[0] * 7 for _ in range(3)], 1: [[0] * 7 for _ in range(3)]}
    waits_by_depth: dict[int, dict[str, list[int]]] = {0: {}, 1: {}}
    users, internal = 0, 0
    size = 0
    with path.open("w", encoding="ascii", newline="\n") as fh:
        fh.write(TK_HEADER)
        size += len(TK_HEADER)
        exp.lines += TK_HEADER.count("\n")
        stmt = 0
        while size < target_bytes - 4096:
            stmt += 1
            depth = 1 if rng.random() < 0.3 else 0
            sql_id = "".join(rng.choice(SQL_ID_CHARS) for _ in range(13))
            table = rng.choice(TABLES)
            out = ["", f"SQL ID: {sql_id} Plan Hash: {rng.randrange(10**9, 4 * 10**9)}", ""]
            out.append(f"SELECT /* bench {stmt} */ ID, STATUS, AMOUNT")
            out.append("FROM")
            out.append(f" {table} WHERE ID = :B1 AND STATUS <> 'X'")
            if rng.random() < 0.3:
                out.append(f"   AND CREATED > SYSDATE - {rng.randrange(1, 90)}")
            out.append("")
            out.append("")
            calls = []
            for i, kind in enumerate(("Parse", "Execute", "Fetch")):
                count = rng.randrange(1, 5) if i == 0 else rng.randrange(1, 2000)
                cpu = rng.randrange(0, 300)
                vals = [
                    count,
                    cpu,
                    cpu + rng.randrange(0, 400),
                    rng.randrange(0, 5000),
                    rng.randrange(0, 90000),
                    rng.randrange(0, 50),
                    0 if i == 0 else rng.randrange(0, 20000),
                ]
                calls.append((kind, *vals))
                sums[depth][i] = [a + b for a, b in zip(sums[depth][i], vals, strict=True)]
            out += _call_table(calls)  # type: ignore[arg-type]
            out.append("")
            out.append(f"Misses in library cache during parse: {rng.randrange(0, 2)}")
            out.append("Optimizer mode: ALL_ROWS")
            if depth:
                out.append("Parsing user id: SYS   (recursive depth: 1)")
                internal += 1
            else:
                out.append(f"Parsing user id: {rng.randrange(80, 120)}")
                users += 1
            out.append("Number of plan statistics captured: 1")
            out.append("")
            out.append("Rows (1st) Rows (avg) Rows (max)  Row Source Operation")
            out.append(
                "---------- ---------- ----------  ---------------------------------------------------"
            )
            for level in range(rng.randrange(1, 5)):
                r = rng.randrange(0, 5000)
                out.append(
                    f"{r:>10} {r:>10} {r:>10}  {' ' * level}"
                    f"{'TABLE ACCESS BY INDEX ROWID' if level else 'SORT ORDER BY'} {table} "
                    f"(cr={rng.randrange(1, 900)} pr={rng.randrange(0, 50)} pw=0 "
                    f"time={rng.randrange(10, 99999)} us cost=3 size=98 card=7)"
                )
            waits: dict[str, list[int]] = {}
            for name in rng.sample(EVENTS, rng.randrange(1, 6)):
                n = rng.randrange(1, 4000)
                mx = rng.randrange(0, 90)
                waits[name] = [n, mx, mx + rng.randrange(0, 2000)]
                agg = waits_by_depth[depth].setdefault(name, [0, 0, 0])
                agg[0] += n
                agg[1] = max(agg[1], mx)
                agg[2] += waits[name][2]
            out += _wait_table(waits)
            out.append(STARS)
            exp.statements += 1
            chunk = "\n".join(out) + "\n"
            fh.write(chunk)
            size += len(chunk)
            exp.lines += len(out)
        out = []
        for depth, title in ((0, "NON-RECURSIVE"), (1, "RECURSIVE")):
            out += ["", f"OVERALL TOTALS FOR ALL {title} STATEMENTS", ""]
            out += _call_table(
                [(k, *sums[depth][i]) for i, k in enumerate(("Parse", "Execute", "Fetch"))]  # type: ignore[misc]
            )
            out.append("")
            out += _wait_table(waits_by_depth[depth])
            exp.waits += sum(v[0] for v in waits_by_depth[depth].values())
        exp.executes = sums[0][1][0]
        out += [
            "",
            f"{users:>5}  user  SQL statements in session.",
            f"{internal:>5}  internal SQL statements in session.",
            f"{users + internal:>5}  SQL statements in session.",
            STARS,
            "Trace file: bench1_ora_4242.trc",
            "Trace file compatibility: 12.2.0.0",
            "Sort options: default",
            "",
            "       1  session in tracefile.",
            f"{users:>8}  user  SQL statements in trace file.",
            f"{internal:>8}  internal SQL statements in trace file.",
            f"{users + internal:>8}  SQL statements in trace file.",
            f"{users + internal:>8}  unique SQL statements in trace file.",
            f"{stmt * 40:>8}  lines in trace file.",
            f"{stmt:>8}  elapsed seconds in trace file.",
        ]
        chunk = "\n".join(out) + "\n"
        fh.write(chunk)
        size += len(chunk)
        exp.lines += len(out)
    exp.bytes = size
    return exp


GENERATORS = {"tkprof": generate_tkprof}
SUFFIX = {"tkprof": "prf"}


def ensure(kind: str, size_label: str, *, data_dir: Path = DATA_DIR, seed: int = SEED):
    """The report of `kind` for `size_label` under data_dir, generated once and reused while
    its sidecar agrees with this generator version."""
    path = data_dir / f"{kind}-{size_label}-s{seed}-g{GEN_VERSION}.{SUFFIX[kind]}"
    return cached(
        path, ExpectedOracle, lambda: GENERATORS[kind](SIZES.get(size_label, 10 * MB), path, seed)
    )


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] not in GENERATORS or sys.argv[2] not in SIZES:
        sys.exit(f"usage: python -m benchmarks.gen_oracle {'|'.join(GENERATORS)} {'|'.join(SIZES)}")
    p, e = ensure(sys.argv[1], sys.argv[2])
    print(f"{p}: {e.model_dump_json()}")
