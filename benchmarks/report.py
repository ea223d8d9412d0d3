"""Figures, the machine they were measured on, the rich table and the JSON files.

Every figure carries its reference from the same run (grep, wc, the smallest KB, FTS5, a static
file...) and the ratio between the two, so a slow or busy machine shows in both columns instead of
silently making perfkb look slow or fast.
"""

from __future__ import annotations

import os
import platform
import statistics
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

from pydantic import BaseModel, Field
from rich.console import Console
from rich.table import Table

RESULTS_DIR = Path(__file__).resolve().parent / "results"
REPO = Path(__file__).resolve().parent.parent


class Figure(BaseModel):
    """One measured number next to its reference."""

    bench: str
    case: str
    metric: str
    value: float | None
    unit: str = ""
    reference: str = ""
    ref_value: float | None = None
    ratio: float | None = Field(None, description="value / ref_value")
    target: str = ""
    met: bool | None = None
    note: str = ""
    extra: dict = Field(default_factory=dict)


class Machine(BaseModel):
    nproc: int
    cpu_model: str
    memory: str
    python: str
    platform: str
    load_before: list[float]
    load_after: list[float] = Field(default_factory=list)
    git_commit: str = ""
    locale: str = ""


class Run(BaseModel):
    mode: str
    started: datetime
    seconds: float = 0.0
    machine: Machine
    figures: list[Figure] = Field(default_factory=list)
    errors: list[str] = Field(default_factory=list)


def ratio(value: float | None, ref: float | None) -> float | None:
    if value is None or ref is None or ref == 0:
        return None
    return round(value / ref, 3)


def pct(samples: list[float], q: float) -> float:
    """Percentile by linear interpolation (q in 0..100); the samples need not be sorted."""
    if not samples:
        return float("nan")
    if len(samples) == 1:
        return samples[0]
    return statistics.quantiles(sorted(samples), n=100, method="inclusive")[int(q) - 1]


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.lower().startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _free_h() -> str:
    try:
        out = subprocess.run(["free", "-h"], capture_output=True, text=True, timeout=5).stdout
        mem = next(line for line in out.splitlines() if line.startswith("Mem:"))
        return "total " + mem.split()[1]
    except (OSError, StopIteration, subprocess.SubprocessError):
        return "unknown"


def _git_commit() -> str:
    try:
        out = subprocess.run(
            ["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            timeout=5,
        )
        return out.stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""


def machine() -> Machine:
    return Machine(
        nproc=os.cpu_count() or 0,
        cpu_model=_cpu_model(),
        memory=_free_h(),
        python=sys.version.split()[0],
        platform=platform.platform(),
        load_before=[round(x, 2) for x in os.getloadavg()],
        git_commit=_git_commit(),
        locale=os.environ.get("LC_ALL") or os.environ.get("LANG") or "C",
    )


def _fmt(v: float | None, unit: str = "") -> str:
    if v is None:
        return "–"
    if abs(v) >= 1000:
        s = f"{v:,.0f}"
    elif abs(v) >= 100:
        s = f"{v:.0f}"
    elif abs(v) >= 10:
        s = f"{v:.1f}"
    else:
        s = f"{v:.3g}"
    return f"{s} {unit}".strip()


def print_table(run: Run, console: Console | None = None) -> None:
    console = console or Console()
    m = run.machine
    title = (
        f"perfkb benchmarks ({run.mode}) — {m.nproc} CPUs {m.cpu_model}, {m.memory}, "
        f"Python {m.python}, load {m.load_before[0]:.1f}→"
        f"{m.load_after[0] if m.load_after else float('nan'):.1f}"
    )
    table = Table(title=title, title_justify="left", show_lines=False)
    for col in ("bench", "case", "metric", "value", "reference", "ratio", "target", "met"):
        table.add_column(col, overflow="fold")
    for f in run.figures:
        met = {True: "[green]yes[/]", False: "[red]NO[/]", None: ""}[f.met]
        ref = f"{f.reference} {_fmt(f.ref_value, f.unit)}".strip() if f.reference else ""
        table.add_row(
            f.bench,
            f.case,
            f.metric,
            _fmt(f.value, f.unit),
            ref,
            f"{f.ratio:.2f}×" if f.ratio is not None else "",
            f.target,
            met,
        )
    console.print(table)
    for f in run.figures:
        if f.note:
            console.print(f"[dim]{f.bench}/{f.case}/{f.metric}: {f.note}[/]")
    for e in run.errors:
        console.print(f"[red]error:[/] {e}")


def write_json(run: Run, results_dir: Path = RESULTS_DIR) -> Path:
    results_dir.mkdir(parents=True, exist_ok=True)
    stamp = run.started.strftime("%Y%m%dT%H%M%SZ")
    path = results_dir / f"{stamp}.json"
    data = run.model_dump_json(indent=1)
    path.write_text(data)
    (results_dir / "latest.json").write_text(data)
    return path


def now() -> datetime:
    return datetime.now(UTC).replace(microsecond=0)


def markdown(run: Run) -> str:
    """The figures as a Markdown table (docs/benchmarks.md is written from this)."""
    m = run.machine
    lines = [
        f"Run: {run.mode} mode, {run.started:%Y-%m-%d %H:%M} UTC, {run.seconds:.0f} s, "
        f"commit {m.git_commit or '?'}; load average {m.load_before[0]:.1f} before, "
        f"{(m.load_after or [float('nan')])[0]:.1f} after.",
        "",
        "| bench | case | metric | value | reference | ratio | target | met |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for f in run.figures:
        ref = f"{f.reference} {_fmt(f.ref_value, f.unit)}".strip() if f.reference else ""
        met = {True: "yes", False: "**no**", None: ""}[f.met]
        ratio_s = f"{f.ratio:.2f}×" if f.ratio is not None else ""
        lines.append(
            f"| {f.bench} | {f.case} | {f.metric} | {_fmt(f.value, f.unit)} | {ref} | "
            f"{ratio_s} | {f.target} | {met} |".replace("|  |", "| |")
        )
    notes = [f"- {f.bench} / {f.case} / {f.metric}: {f.note}" for f in run.figures if f.note]
    if notes:
        lines += ["", *notes]
    if run.errors:
        lines += ["", *[f"- error: {e}" for e in run.errors]]
    return "\n".join(lines)


if __name__ == "__main__":  # python -m benchmarks.report [results/FILE.json]: Markdown table
    import sys as _sys

    src = Path(_sys.argv[1]) if len(_sys.argv) > 1 else RESULTS_DIR / "latest.json"
    try:
        print(markdown(Run.model_validate_json(src.read_text())))
    except (OSError, ValueError) as exc:
        _sys.exit(f"cannot read {src}: {exc}")
