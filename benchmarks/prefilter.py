"""Detector prefilter (issue #19): CPU of detection, in process, of text no parser claims, of a
tkprof, of an AWR report and of the 21 seed snippets one by one (what a server does per
paste), in this tree and in a reference tree (main before the prefilter), measured in the same
run, alternating, best of N each; and the imports of `python -X importtime -m kb analyze
--json` of the 1-line truss file benchmarks/startup.py times, in each tree.

    python -m benchmarks.prefilter /tmp/base-tree [--mb 10] [--lines 100000] [--reps 3]

Each tree runs in its own interpreter (its `ingest` imported from its own directory); both
read the same files, and the evidence each gives is compared by hash (the prefilter must
change no block). Prints one JSON line per input with the ratio reference / this tree.

`python -m benchmarks --only prefilter` (run() below) measures the same inputs in one process
against the reference that needs no second tree: a Detector given every parser class, which
asks each of them about every line (ingest/detect.py `_Everyone`, what tests/test_prefilter.py
compares the prefilter to), alternating the two, best of N, evidence compared by hash.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import re
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.report import Figure, ratio

REPO = Path(__file__).resolve().parents[1]

# Words of the SQL text and the chat around evidence: the lines no format claims.
_SQL = (
    "SELECT /*+ index(t i_orders) */ t.id, t.status, c.name FROM orders t, customers c",
    "WHERE t.customer_id = c.id AND t.created > SYSDATE - :b1 AND c.region = :b2",
    "UPDATE inventory SET qty = qty - :qty, updated_at = SYSTIMESTAMP WHERE sku = :sku",
    "INSERT INTO audit_log (who, what, at) VALUES (:who, :what, SYSDATE)",
    "GROUP BY c.name HAVING COUNT(*) > :n ORDER BY 2 DESC",
    "begin dbms_stats.gather_table_stats(ownname => 'APP', tabname => 'ORDERS'); end;",
)
_CHAT = (
    "we restarted the listener but the batch is still slow",
    "anyone seen this after the patch? the app team says nothing changed",
    "looks like the storage array was busy around then, checking with infra",
    "I will grab another capture when it happens again tonight",
    "thanks, that matches what the DBA saw in the alert log yesterday",
    "can you share the full report and not only the top section please",
)
_WORDS = [
    "order",
    "item",
    "batch",
    "queue",
    "session",
    "report",
    "table",
    "index",
    "cursor",
    "plan",
    "fetch",
]


def unclaimed(lines: int, seed: int = 19) -> str:
    """`lines` lines of SQL text and chat, each made unique by a changed word."""
    rng = random.Random(seed)
    out = []
    for i in range(lines):
        base = rng.choice(_SQL if i % 2 else _CHAT)
        words = base.split()
        words[rng.randrange(len(words))] = rng.choice(_WORDS) + rng.choice(_WORDS)
        out.append(" ".join(words))
    return "\n".join(out) + "\n"


# Run in the tree under test: times Detector.feed_text + finish over each file (each file of
# a directory on its own, 20 rounds: small pastes); every parser is imported first, so the
# figure is detection, not imports.
_CHILD = r"""
import hashlib, json, sys, time
from pathlib import Path
sys.path.insert(0, sys.argv[1])
from ingest.detect import Detector
from ingest.parsers import PARSERS
for path in sys.argv[3:]:
    p = Path(path)
    texts = [f.read_text(encoding="utf-8") for f in sorted(p.iterdir())] if p.is_dir() else [p.read_text(encoding="utf-8")]
    rounds = 20 if p.is_dir() else 1
    best = None
    for _ in range(int(sys.argv[2])):
        digest = hashlib.sha256()
        t = time.process_time()
        for r in range(rounds):
            for text in texts:
                d = Detector()
                d.feed_text(text)
                ev = d.finish()
                if r == 0:
                    digest.update(ev.model_dump_json().encode())
        cpu = (time.process_time() - t) / rounds
        best = cpu if best is None else min(best, cpu)
    print(json.dumps({"path": path, "cpu_s": round(best, 4), "evidence": digest.hexdigest()[:16]}))
"""


def _run(tree: Path, reps: int, paths: list[Path]) -> dict[str, dict]:
    proc = subprocess.run(
        [sys.executable, "-c", _CHILD, str(tree), str(reps), *map(str, paths)],
        cwd=tree,
        capture_output=True,
        text=True,
        check=True,
    )
    return {r["path"]: r for r in map(json.loads, proc.stdout.splitlines())}


ONE_LINE = "15697: 1.5426 1.0901 0.0000 pollsys(0x10041CDA8, 2, 0x0, 0x0) = 1\n"  # as startup.py
_IMPORT = re.compile(r"^import time:\s+(\d+) \|\s+(\d+) \| (\s*)(\S+)$")


def _startup(tree: Path, tmp: Path, reps: int) -> dict:
    """`python -X importtime -m kb analyze --json` of the 1-line file in `tree`: the smallest
    cumulative import time (ms) of ingest.detect, the number of ingest.parsers modules loaded,
    and the least CPU of the whole command (bytecode compiled beforehand, as startup.py does)."""
    tiny = tmp / "one-line.txt"
    tiny.write_text(ONE_LINE)
    env = dict(
        os.environ, PERFKB_DATA_DIR=str(tmp / f"data-{tree.name}"), PERFKB_LOG_LEVEL="WARNING"
    )
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = str(tmp / f"pycache-{tree.name}")
    argv = [sys.executable, "-X", "importtime", "-m", "kb", "analyze", "--json", str(tiny)]
    subprocess.run(argv, cwd=tree, env=env, capture_output=True, check=True)  # warm up
    detect_ms, cpu, parsers = [], [], 0
    for _ in range(reps):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        proc = subprocess.run(argv, cwd=tree, env=env, capture_output=True, text=True, check=True)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu.append(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
        names = {}
        for line in proc.stderr.splitlines():
            if m := _IMPORT.match(line):
                names[m[4]] = int(m[2]) / 1000
        detect_ms.append(names.get("ingest.detect", 0.0))
        parsers = sum(1 for n in names if n.startswith("ingest.parsers."))
    return {"detect_import_ms": min(detect_ms), "parser_modules": parsers, "cpu_s": min(cpu)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("base", type=Path, help="the reference tree (main before the prefilter)")
    ap.add_argument("--mb", type=float, default=10.0, help="size of the tkprof and AWR files")
    ap.add_argument("--lines", type=int, default=100_000, help="lines of unclaimed text")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--dir", type=Path, default=Path("/tmp/perfkb-bench-prefilter"))
    ap.add_argument("--startup-reps", type=int, default=7)
    args = ap.parse_args()
    sys.path.insert(0, str(REPO))
    from benchmarks.gen_awr import generate_awr
    from benchmarks.gen_oracle import generate_tkprof

    args.dir.mkdir(parents=True, exist_ok=True)
    size = int(args.mb * 1024 * 1024)
    files = {
        f"unclaimed {args.lines} lines": args.dir / f"unclaimed-{args.lines}.txt",
        f"tkprof {args.mb:g} MB": args.dir / f"tkprof-{args.mb:g}.txt",
        f"AWR {args.mb:g} MB": args.dir / f"awr-{args.mb:g}.txt",
        "21 seed snippets, one by one": REPO / "tests" / "fixtures" / "seeds",
    }
    paths = list(files.values())
    if not paths[0].exists():
        paths[0].write_text(unclaimed(args.lines), encoding="utf-8")
    if not paths[1].exists():
        generate_tkprof(size, paths[1])
    if not paths[2].exists():
        generate_awr(size, paths[2])
    base: dict[str, list[float]] = {str(p): [] for p in paths}
    this: dict[str, list[float]] = {str(p): [] for p in paths}
    digests: dict[str, set[str]] = {str(p): set() for p in paths}
    for _ in range(2):  # alternate the trees so a change of load hits both
        for tree, into in ((args.base, base), (REPO, this)):
            for path, r in _run(tree, args.reps, paths).items():
                into[path].append(r["cpu_s"])
                digests[path].add(r["evidence"])
    for name, path in files.items():
        key = str(path)
        b, t = min(base[key]), min(this[key])
        print(
            json.dumps(
                {
                    "input": name,
                    "MB": round(path.stat().st_size / 1e6, 2),
                    "reference_cpu_s": b,
                    "prefilter_cpu_s": t,
                    "speedup": round(b / t, 2),
                    "same_evidence": len(digests[key]) == 1,
                }
            )
        )
    with tempfile.TemporaryDirectory(prefix="perfkb-bench-prefilter-") as tmp:
        runs = {}
        for _ in range(2):
            for label, tree in (("reference", args.base), ("prefilter", REPO)):
                got = _startup(tree, Path(tmp), args.startup_reps)
                old = runs.get(label)
                runs[label] = got if old is None or got["cpu_s"] < old["cpu_s"] else old
        print(json.dumps({"input": "perfkb analyze --json, 1-line truss file", **runs}))


BENCH = "prefilter"
NO_PREFILTER = "no prefilter: every parser asked about every line"


def _detect(texts: list[str], parsers: tuple | None, rounds: int) -> tuple[float, str]:
    """(CPU seconds a round, evidence hash) of detecting each text with its own Detector."""
    from ingest.detect import Detector

    digest = hashlib.sha256()
    t = time.process_time()
    for r in range(rounds):
        for text in texts:
            d = Detector(parsers)
            d.feed_text(text)
            ev = d.finish()
            if r == 0:
                digest.update(ev.model_dump_json().encode())
    return (time.process_time() - t) / rounds, digest.hexdigest()[:16]


def run(full: bool) -> list[Figure]:
    """Detection CPU of each input with the prefilter (Detector()) against the same Detector
    asking every parser (Detector(PARSERS)), in this process, alternating, best of reps; the
    10 MB tkprof and AWR captures are the streaming bench's (cached in benchmarks/data)."""
    from benchmarks.gen_awr import ensure as ensure_awr
    from benchmarks.gen_oracle import ensure as ensure_oracle
    from ingest.parsers import PARSERS

    lines = 100_000 if full else 20_000
    reps = 3 if full else 1
    seeds = REPO / "tests" / "fixtures" / "seeds"
    inputs = {
        f"unclaimed text, {lines:,} lines": ([unclaimed(lines)], 1),
        "tkprof 10MB": ([ensure_oracle("tkprof", "10MB")[0].read_text(encoding="utf-8")], 1),
        "21 seed snippets, one by one": (
            [f.read_text(encoding="utf-8") for f in sorted(seeds.iterdir()) if f.is_file()],
            20,
        ),
    }
    if full:  # ~14 s of CPU a round (its parser's own time, not detection's): full mode only
        inputs["awr 10MB"] = ([ensure_awr("10MB")[0].read_text(encoding="utf-8")], 1)
    figures = []
    for case, (texts, rounds) in inputs.items():
        best: dict[str, float] = {}
        digests: set[str] = set()
        for _ in range(reps):
            for side, parsers in (("reference", PARSERS), ("prefilter", None)):
                cpu, digest = _detect(texts, parsers, rounds)
                best[side] = min(best.get(side, cpu), cpu)
                digests.add(digest)
        same = len(digests) == 1
        r = ratio(best["prefilter"], best["reference"])
        figures.append(
            Figure(
                bench=BENCH,
                case=case,
                metric="detection CPU" + (" a round" if rounds > 1 else ""),
                value=round(best["prefilter"] * 1000, 1),
                unit="ms",
                reference=NO_PREFILTER,
                ref_value=round(best["reference"] * 1000, 1),
                ratio=r,
                target="≤ 1×, same evidence",
                met=same and r is not None and r <= 1.0,
                note="" if same else "the evidence differs from the reference's",
                extra={
                    "reps": reps,
                    "rounds": rounds,
                    "bytes": sum(len(t.encode()) for t in texts),
                    "same_evidence": same,
                },
            )
        )
    return figures


if __name__ == "__main__":
    main()
