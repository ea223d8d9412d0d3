"""python -m benchmarks [--quick|--full] [--only NAME[,NAME]] — run, print a table, write JSON."""

from __future__ import annotations

import argparse
import importlib
import os
import sys
import time
import traceback

from rich.console import Console

from benchmarks.report import Figure, Run, machine, now, print_table, write_json

BENCHES = ("startup", "streaming", "onepath", "latency", "gcpause", "scale", "search", "bot", "web")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__)
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--quick", action="store_true", help="under 3 minutes on 2 cores (default)")
    group.add_argument("--full", action="store_true", help="1 GB captures, 100k entries, 30 s web")
    parser.add_argument(
        "--only", action="append", default=[], metavar="NAME", help=f"one of {', '.join(BENCHES)}"
    )
    parser.add_argument("--no-write", action="store_true", help="do not write results/*.json")
    args = parser.parse_args(argv)
    only = [n.strip() for item in args.only for n in item.split(",") if n.strip()]
    unknown = [n for n in only if n not in BENCHES]
    if unknown:
        parser.error(f"unknown benchmark {', '.join(unknown)} (choose from {', '.join(BENCHES)})")
    names = only or list(BENCHES)
    full = bool(args.full)
    console = Console(stderr=True)
    run = Run(mode="full" if full else "quick", started=now(), machine=machine())
    started = time.perf_counter()
    for name in names:
        console.print(f"[bold]{name}[/] ({run.mode}) …")
        t0 = time.perf_counter()
        try:
            module = importlib.import_module(f"benchmarks.{name}")
            figures: list[Figure] = module.run(full)
        except KeyboardInterrupt:
            raise
        except Exception as exc:  # one broken benchmark must not hide the others' figures
            message = f"{name}: {type(exc).__name__}: {exc}"
            run.errors.append(message)
            console.print(f"[red]{message}[/]")
            if os.environ.get("PERFKB_BENCH_DEBUG"):
                traceback.print_exc()
            continue
        run.figures += figures
        console.print(f"  {len(figures)} figures in {time.perf_counter() - t0:.1f} s")
    run.seconds = round(time.perf_counter() - started, 1)
    run.machine.load_after = [round(x, 2) for x in os.getloadavg()]
    print_table(run, Console(width=max(150, Console().width)))
    if not args.no_write:
        path = write_json(run)
        console.print(f"results: {path} (and latest.json) in {run.seconds:.0f} s")
    return 1 if run.errors else 0


if __name__ == "__main__":
    sys.exit(main())
