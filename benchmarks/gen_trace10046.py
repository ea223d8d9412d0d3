"""Deterministic generator of raw 10046 level-12 traces for the streaming benchmark, in the style
of gen_traces.py: a 19c header, then sessions of dep=0 queries whose FETCH calls are separated by
'SQL*Net message from client' think time, with single-block reads inside the fetches, recursive
dep=1 SQL, STAT lines, BINDS blocks, `*** ` timestamps and commits. Everything is drawn from
random.Random(seed) and tallied (calls, waits, fetches), so the benchmark checks perfkb counted
exactly what was written. The numbers are made up; the shapes follow the corpus traces 20-24.
"""

from __future__ import annotations

import random
from pathlib import Path

from pydantic import BaseModel

from benchmarks.capture_cache import cached
from benchmarks.gen_traces import DATA_DIR, MB, SEED, SIZES

GEN_VERSION = 1
# the grep -cE reference: a WAIT or database call line
GREP_RE = r"^(WAIT|PARSE|EXEC|FETCH|CLOSE) #[0-9]+: ?(nam=|c=)"

HEADER = """Trace file /u01/app/oracle/diag/rdbms/bench/bench1/trace/bench1_ora_4242.trc
Oracle Database 19c Enterprise Edition Release 19.0.0.0.0 - Production
Version 19.21.0.0.0
Build label:    RDBMS_19.21.0.0.0DBRU_LINUX.X64_231004
ORACLE_HOME:    /u01/app/oracle/product/19.0.0/dbhome_1
System name:\tLinux
Node name:\tbenchdb01
Machine:\tx86_64
Instance name: bench1
Redo thread mounted by this instance: 1
Oracle process number: 61
Unix process pid: 4242, image: oracle@benchdb01


*** 2026-11-24T10:00:00.000000+00:00 (PDB1(3))
*** SESSION ID:(1197.4242) 2026-11-24T10:00:00.000001+00:00
*** MODULE NAME:(bench.pl) 2026-11-24T10:00:00.000002+00:00
"""


class Expected10046(BaseModel):
    seed: int
    gen_version: int = GEN_VERSION
    target_bytes: int
    bytes: int = 0
    lines: int = 0
    calls: int = 0
    fetches: int = 0
    waits: int = 0


def generate(target_bytes: int, path: Path, seed: int = SEED) -> Expected10046:
    rng = random.Random(seed)
    exp = Expected10046(seed=seed, target_bytes=target_bytes)
    tim = 7_783_247_002_784
    out: list[str] = []
    size = 0
    with path.open("w", encoding="ascii", newline="\n") as fh:
        fh.write(HEADER)
        size = len(HEADER)
        exp.lines = HEADER.count("\n")
        stmt = 0
        while size < target_bytes:
            stmt += 1
            cur = 140_483_983_000_000 + rng.randrange(1000) * 8
            sqlid = "".join(rng.choice("0123456789abcdfghjkmnpqrstuvwxyz") for _ in range(13))
            hard = rng.random() < 0.1
            out.append("=====================")
            out.append(
                f"PARSING IN CURSOR #{cur} len=44 dep=0 uid=108 oct=3 lid=108 tim={tim} "
                f"hv={rng.randrange(1 << 32)} ad='9d37bed8' sqlid='{sqlid}'"
            )
            out.append(f"select id, data from bench_t{stmt % 50} where id > :1")
            out.append("END OF STMT")
            e = rng.randrange(20, 900)
            tim += e
            out.append(
                f"PARSE #{cur}:c={e - 5},e={e},p=0,cr=0,cu=0,mis={int(hard)},r=0,dep=0,og=1,"
                f"plh=1636480816,tim={tim}"
            )
            out.append(f"BINDS #{cur}:")
            out.append(" Bind#0")
            out.append("  oacdty=02 mxl=22(22) mxlc=00 mal=00 scl=00 pre=00")
            out.append(f"  value={rng.randrange(100000)}")
            exp.calls += 1
            if hard:
                rcur = cur + 8
                for _ in range(rng.randrange(1, 4)):
                    e = rng.randrange(20, 300)
                    tim += e + 3
                    out.append(
                        f"EXEC #{rcur}:c={e},e={e},p=0,cr=3,cu=0,mis=0,r=1,dep=1,og=4,"
                        f"plh=2191121161,tim={tim}"
                    )
                    exp.calls += 1
            e = rng.randrange(20, 200)
            tim += e + 5
            out.append(
                f"EXEC #{cur}:c={e},e={e},p=0,cr=0,cu=0,mis=0,r=0,dep=0,og=1,plh=1636480816,"
                f"tim={tim}"
            )
            exp.calls += 1
            for _ in range(rng.randrange(5, 60)):
                ela = rng.randrange(1, 4)
                tim += ela + 2
                out.append(
                    f"WAIT #{cur}: nam='SQL*Net message to client' ela= {ela} driver id=1952673792 "
                    f"#bytes=1 p3=0 obj#=-1 tim={tim}"
                )
                exp.waits += 1
                inside = 0
                for _ in range(rng.choice((0, 0, 1, 2, 5))):
                    ela = rng.randrange(80, 9000)
                    tim += ela + 4
                    inside += ela + 4
                    out.append(
                        f"WAIT #{cur}: nam='db file sequential read' ela= {ela} "
                        f"file#={rng.randrange(1, 40)} block#={rng.randrange(1 << 22)} blocks=1 "
                        f"obj#={73000 + stmt % 50} tim={tim}"
                    )
                    exp.waits += 1
                c = rng.randrange(10, 400)
                tim += c + 7
                out.append(
                    f"FETCH #{cur}:c={c},e={c + inside + 7},p={inside // 1000},cr={rng.randrange(1, 40)},"
                    f"cu=0,mis=0,r=100,dep=0,og=1,plh=1636480816,tim={tim}"
                )
                exp.calls += 1
                exp.fetches += 1
                ela = rng.randrange(300, 9000)
                tim += ela + 3
                out.append(
                    f"WAIT #{cur}: nam='SQL*Net message from client' ela= {ela} "
                    f"driver id=1952673792 #bytes=1 p3=0 obj#=-1 tim={tim}"
                )
                exp.waits += 1
            out.append(
                f"STAT #{cur} id=1 cnt=100 pid=0 pos=1 obj=73001 op='TABLE ACCESS FULL BENCH_T "
                f"(cr=40 pr=0 pw=0 str=1 time=120 us cost=2 size=300 card=100)'"
            )
            tim += 11
            out.append(f"CLOSE #{cur}:c=5,e=6,dep=0,type=1,tim={tim}")
            exp.calls += 1
            if stmt % 20 == 0:
                out.append("XCTEND rlbk=0, rd_only=1, tim=" + str(tim + 1))
                out.append("")
                out.append(f"*** 2026-11-24T10:{stmt // 1000 % 60:02d}:00.000000+00:00")
            chunk = "\n".join(out) + "\n"
            fh.write(chunk)
            size += len(chunk)
            exp.lines += len(out)
            out = []
    exp.bytes = size
    return exp


def ensure(size_label: str, *, data_dir: Path = DATA_DIR, seed: int = SEED):
    """The trace for `size_label` under data_dir, generated once and reused (keyed by seed and
    generator version)."""
    path = data_dir / f"trace10046-{size_label}-s{seed}-g{GEN_VERSION}.trc"
    return cached(path, Expected10046, lambda: generate(SIZES.get(size_label, 10 * MB), path, seed))
