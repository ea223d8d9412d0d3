"""python -m benchmarks [--quick|--full] [--only NAME[,NAME]] [--prepare] — run, print a table
and issue 19's summary, write JSON.

The benches run cheapest first, so a long run stopped early (or one whose last bench fails)
still holds most rows; each bench's start, duration and the load average around it are printed
and kept in the JSON, which is rewritten after every bench and whenever a bench reports figures
before it ends (streaming, capture by capture). `--prepare` writes every generated capture the
run would read (benchmarks/capture_cache.py keeps them) and times nothing: run it first, so the
timed run spends its minutes measuring.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
import time
import traceback

from rich.console import Console

from benchmarks.issue19 import summarise
from benchmarks.report import (
    BenchRun,
    Figure,
    Run,
    machine,
    now,
    on_figures,
    print_issue19,
    print_table,
    progress,
    write_json,
)

# cheapest first (full mode, this 2-core box, docs/benchmarks.md "One --full run"): a run
# stopped early has the most rows
BENCHES = (
    "startup",
    "onepath",
    "prefilter",
    "html_page",
    "gcpause",
    "bot",
    "latency",
    "web",
    "scale",
    "search",
    "streaming",
)


def _load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def prepare(full: bool) -> int:
    """Every generated capture of the run, written once (or found cached); nothing timed."""
    from benchmarks import streaming

    started = time.perf_counter()
    progress(f"preparing the {'full' if full else 'quick'} run's captures")
    made = streaming.prepare(full)
    for path, mb in made:
        progress(f"  {path} ({mb:,.1f} MB)")
    progress(f"{len(made)} captures ready in {time.perf_counter() - started:.0f} s")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__)
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--quick", action="store_true", help="under 3 minutes on 2 cores (default)")
    group.add_argument("--full", action="store_true", help="1 GB captures, 50k entries, 30 s web")
    parser.add_argument(
        "--only", action="append", default=[], metavar="NAME", help=f"one of {', '.join(BENCHES)}"
    )
    parser.add_argument("--no-write", action="store_true", help="do not write results/*.json")
    parser.add_argument(
        "--prepare", action="store_true", help="only write the generated captures, time nothing"
    )
    args = parser.parse_args(argv)
    only = [n.strip() for item in args.only for n in item.split(",") if n.strip()]
    unknown = [n for n in only if n not in BENCHES]
    if unknown:
        parser.error(f"unknown benchmark {', '.join(unknown)} (choose from {', '.join(BENCHES)})")
    full = bool(args.full)
    if args.prepare:
        return prepare(full)
    names = [n for n in BENCHES if n in only] if only else list(BENCHES)
    console = Console(stderr=True)
    run = Run(mode="full" if full else "quick", started=now(), machine=machine())
    started = time.perf_counter()
    pending: list[Figure] = []  # figures of the bench running, reported before it ended

    def save() -> None:
        if args.no_write:
            return
        snapshot = run.model_copy(update={"figures": run.figures + pending})
        snapshot.seconds = round(time.perf_counter() - started, 1)
        snapshot.issue19 = summarise(snapshot.figures, run.mode)
        write_json(snapshot)

    def reported(figures: list[Figure]) -> None:
        pending.extend(figures)
        save()

    on_figures(reported)
    try:
        for name in names:
            bench = BenchRun(name=name, started=now(), load_before=_load())
            run.benches.append(bench)
            progress(f"{name} ({run.mode}) …")
            t0 = time.perf_counter()
            try:
                module = importlib.import_module(f"benchmarks.{name}")
                figures: list[Figure] = module.run(full)
            except KeyboardInterrupt:
                bench.error = "stopped"
                raise
            except Exception as exc:  # one broken benchmark must not hide the others' figures
                message = f"{name}: {type(exc).__name__}: {exc}"
                run.errors.append(message)
                bench.error = message
                console.print(f"[red]{message}[/]")
                if os.environ.get("PERFKB_BENCH_DEBUG"):
                    traceback.print_exc()
                figures = list(pending)  # what it reported before it failed
            finally:
                bench.seconds = round(time.perf_counter() - t0, 1)
                bench.load_after = _load()
            run.figures += figures
            pending.clear()
            bench.figures = len(figures)
            progress(
                f"  {name}: {len(figures)} figures in {bench.seconds:.1f} s, load "
                f"{bench.load_before[0]:.1f} → {bench.load_after[0]:.1f}"
            )
            save()
    except KeyboardInterrupt:
        run.figures += pending
        pending.clear()
        run.errors.append("stopped (KeyboardInterrupt): the benches after it did not run")
    finally:
        on_figures(None)
    run.seconds = round(time.perf_counter() - started, 1)
    run.machine.load_after = _load()
    run.issue19 = summarise(run.figures, run.mode)
    wide = Console(width=max(150, Console().width))
    print_table(run, wide)
    print_issue19(run, wide)
    if not args.no_write:
        path = write_json(run)
        console.print(f"results: {path} (and latest.json) in {run.seconds:.0f} s")
    return 1 if run.errors else 0


if __name__ == "__main__":
    sys.exit(main())
