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
from collections.abc import Callable
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


class BenchRun(BaseModel):
    """One bench of a run: when it started, how long it took and the machine's load average
    (1, 5, 15 min) before and after it, so a figure measured while other work ran says so."""

    name: str
    started: datetime
    seconds: float = 0.0
    load_before: list[float]
    load_after: list[float] = Field(default_factory=list)
    figures: int = 0
    error: str = ""


class IssueCheck(BaseModel):
    """One condition of an issue row as a run met it (benchmarks/issue19.py): the figure that
    decides it (the one missing its bound, else the one closest to it), its reference and ratio,
    the target, and the figures that missed it."""

    label: str = ""
    target: str
    figures: int = 0
    case: str = ""
    metric: str = ""
    value: float | None = None
    unit: str = ""
    reference: str = ""
    ref_value: float | None = None
    ratio: float | None = None
    met: bool | None = None
    missed: list[str] = Field(default_factory=list)


class IssueRow(BaseModel):
    """A row of issue 19's table: met when every check holds, None when not measured."""

    row: str
    met: bool | None = None
    checks: list[IssueCheck] = Field(default_factory=list)
    note: str = ""


class Run(BaseModel):
    mode: str
    started: datetime
    seconds: float = 0.0
    machine: Machine
    benches: list[BenchRun] = Field(default_factory=list)
    figures: list[Figure] = Field(default_factory=list)
    errors: list[str] = Field(default_factory=list)
    issue19: list[IssueRow] = Field(default_factory=list)

    def summary(self) -> list[IssueRow]:
        """The Issue 19 rows: as written into the file, or read from its figures (a file from
        before the summary existed, or one a run left when it was stopped)."""
        if self.issue19:
            return self.issue19
        from benchmarks.issue19 import summarise

        return summarise(self.figures, self.mode)


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


def fmt(v: float | None, unit: str = "") -> str:
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
        ref = f"{f.reference} {fmt(f.ref_value, f.unit)}".strip() if f.reference else ""
        table.add_row(
            f.bench,
            f.case,
            f.metric,
            fmt(f.value, f.unit),
            ref,
            f"{f.ratio:.2f}×" if f.ratio is not None else "",
            f.target,
            met,
        )
    console.print(table)
    if run.benches:
        benches = Table(
            title="benches: when, how long, load average (1 5 15 min)", title_justify="left"
        )
        for col in (
            "bench",
            "started (UTC)",
            "seconds",
            "load before",
            "load after",
            "figures",
            "error",
        ):
            benches.add_column(col, overflow="fold")
        for b in run.benches:
            benches.add_row(
                b.name,
                f"{b.started:%H:%M:%S}",
                f"{b.seconds:.0f}",
                _load(b.load_before),
                _load(b.load_after),
                str(b.figures),
                b.error,
            )
        console.print(benches)
    for f in run.figures:
        if f.note:
            console.print(f"[dim]{f.bench}/{f.case}/{f.metric}: {f.note}[/]")
    for e in run.errors:
        console.print(f"[red]error:[/] {e}")


def _met(met: bool | None, markup: bool) -> str:
    if markup:
        return {True: "[green]yes[/]", False: "[red]NO[/]", None: "[yellow]not measured[/]"}[met]
    return {True: "yes", False: "**no**", None: "not measured"}[met]


def issue19_cells(row: IssueRow, markup: bool = False) -> list[str]:
    """A summary row's cells: row, measured, reference (same run), ratio, target, met. A row of
    several checks joins them with '; ', each named by its label; a check that read several
    figures (every format at 1 GB) names the case of the one shown (the worst)."""
    measured, refs, ratios, targets = [], [], [], []
    if all(c.value is None and c.ratio is None for c in row.checks):
        targets = list(dict.fromkeys(c.target for c in row.checks))
        note = f" ({row.note})" if row.note else ""
        return [row.row, "–", "", "", "; ".join(targets), _met(row.met, markup) + note]
    for c in row.checks:
        name = c.label
        if c.figures > 1 and c.case:
            name = f"{name} {c.case}".strip()
        head = f"{name}: " if name and len(row.checks) + (c.figures > 1) > 1 else ""
        if c.value is None and c.ratio is None:
            measured.append(f"{head}–")
            continue
        measured.append(head + fmt(c.value, c.unit))
        refs.append(f"{c.reference} {fmt(c.ref_value, c.unit)}".strip() if c.reference else "–")
        ratios.append(f"{c.ratio:.2f}×" if c.ratio is not None else "–")
        targets.append(c.target)
    targets = list(dict.fromkeys(targets or [c.target for c in row.checks]))
    met = _met(row.met, markup)
    missed = [m for c in row.checks for m in c.missed]
    if missed:
        met += f" ({', '.join(missed)})"
    if row.note:
        met += f" ({row.note})"
    return [
        row.row,
        "; ".join(measured),
        "; ".join(dict.fromkeys(refs)),
        "; ".join(ratios),
        "; ".join(targets),
        met.rstrip(": "),
    ]


ISSUE19_COLUMNS = ("issue 19 row", "measured", "reference (same run)", "ratio", "target", "met")


def print_issue19(run: Run, console: Console | None = None) -> None:
    """The Issue 19 summary as a rich table (the end of every run)."""
    console = console or Console()
    rows = run.summary()
    met = sum(r.met is True for r in rows)
    table = Table(
        title=f"Issue 19 ({run.mode} mode): {met} of {len(rows)} rows met",
        title_justify="left",
    )
    for col in ISSUE19_COLUMNS:
        table.add_column(col, overflow="fold")
    for r in rows:
        table.add_row(*issue19_cells(r, markup=True))
    console.print(table)


def issue19_markdown(run: Run) -> str:
    """The Issue 19 summary as the Markdown table docs/benchmarks.md reports."""
    rows = run.summary()
    met = sum(r.met is True for r in rows)
    lines = [
        f"Issue 19, {run.mode} mode, {run.started:%Y-%m-%d %H:%M} UTC: {met} of {len(rows)} rows "
        "met.",
        "",
        "| " + " | ".join(ISSUE19_COLUMNS) + " |",
        "|" + "---|" * len(ISSUE19_COLUMNS),
    ]
    for r in rows:
        cells = [c.replace("|", "\\|") for c in issue19_cells(r)]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _load(values: list[float]) -> str:
    return " ".join(f"{v:.2f}" for v in values) if values else "?"


def benches_markdown(run: Run) -> str:
    """When each bench ran, how long it took and the load average (1, 5, 15 min) around it."""
    lines = [
        "| bench | started (UTC) | seconds | load before | load after | figures | error |",
        "|---|---|---|---|---|---|---|",
    ]
    for b in run.benches:
        lines.append(
            f"| {b.name} | {b.started:%H:%M:%S} | {b.seconds:.0f} | {_load(b.load_before)} | "
            f"{_load(b.load_after)} | {b.figures} | {b.error.replace('|', '/')} |"
        )
    return "\n".join(lines)


_SINK: list[Callable[[list[Figure]], None]] = []


def progress(message: str) -> None:
    """A line on stderr stamped with the UTC time and the load average: a long run shows where
    it is and what shares the box, and a run stopped early still says what it measured."""
    stamp = datetime.now(UTC).strftime("%H:%M:%S")
    print(f"[{stamp} load {os.getloadavg()[0]:.1f}] {message}", file=sys.stderr, flush=True)


def emit(figures: list[Figure]) -> list[Figure]:
    """Figures a bench has finished before it returns (streaming's captures, one by one): each
    with a target is printed as a progress line, and `python -m benchmarks` writes them to the
    results file at once (on_figures), so a run stopped in a long bench keeps them."""
    for f in figures:
        if f.target or f.metric.startswith("throughput"):
            ratio_s = f", {f.ratio:.2f}× {f.reference}" if f.ratio is not None else ""
            met = {True: " met", False: " NOT met", None: ""}[f.met]
            goal = f" ({f.target}{met})" if f.target else ""
            progress(f"  {f.case}: {f.metric} {fmt(f.value, f.unit)}{ratio_s}{goal}")
    for sink in _SINK:
        sink(figures)
    return figures


def on_figures(sink: Callable[[list[Figure]], None] | None) -> None:
    """Where emit() hands figures (None: nowhere)."""
    _SINK.clear()
    if sink is not None:
        _SINK.append(sink)


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


def markdown(run: Run, summary_only: bool = False) -> str:
    """The Issue 19 summary, when and under what load each bench ran, and every figure, as
    Markdown (docs/benchmarks.md is written from this)."""
    m = run.machine
    head = (
        f"Run: {run.mode} mode, {run.started:%Y-%m-%d %H:%M} UTC, {run.seconds:.0f} s, "
        f"commit {m.git_commit or '?'}; load average {m.load_before[0]:.1f} before, "
        f"{(m.load_after or [float('nan')])[0]:.1f} after."
    )
    lines = [head, "", issue19_markdown(run)]
    if summary_only:
        return "\n".join(lines)
    if run.benches:
        lines += ["", benches_markdown(run)]
    lines += [
        "",
        "| bench | case | metric | value | reference | ratio | target | met |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for f in run.figures:
        ref = f"{f.reference} {fmt(f.ref_value, f.unit)}".strip() if f.reference else ""
        met = {True: "yes", False: "**no**", None: ""}[f.met]
        ratio_s = f"{f.ratio:.2f}×" if f.ratio is not None else ""
        lines.append(
            f"| {f.bench} | {f.case} | {f.metric} | {fmt(f.value, f.unit)} | {ref} | "
            f"{ratio_s} | {f.target} | {met} |".replace("|  |", "| |")
        )
    notes = [f"- {f.bench} / {f.case} / {f.metric}: {f.note}" for f in run.figures if f.note]
    if notes:
        lines += ["", *notes]
    if run.errors:
        lines += ["", *[f"- error: {e}" for e in run.errors]]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """python -m benchmarks.report [--summary] [FILE]: a results file as Markdown."""
    import argparse

    ap = argparse.ArgumentParser(prog="python -m benchmarks.report", description=main.__doc__)
    ap.add_argument("file", nargs="?", type=Path, default=RESULTS_DIR / "latest.json")
    ap.add_argument("--summary", action="store_true", help="only the Issue 19 table")
    args = ap.parse_args(argv)
    try:
        run = Run.model_validate_json(args.file.read_text())
    except (OSError, ValueError) as exc:
        print(f"cannot read {args.file}: {exc}", file=sys.stderr)
        return 1
    print(markdown(run, summary_only=args.summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
