"""Issue 19's table as data: which figures of `python -m benchmarks` answer each of its rows.

The issue is done when every row meets its target in one `python -m benchmarks --full`. The
benches measure far more than the rows (references, extras, the 10 MB and 100 MB sizes), so
this module says, for each row of docs/benchmarks.md's "Issue 19: where each row stands" table,
which figures to read (bench, case, metric and reference as glob patterns: `*` for the part a
run fills in, such as a seed's file name or the number of analysis processes), what to read
from each (its value or its ratio to the same run's reference) and the bound it must hold.
`summarise` turns a run's figures into one `IssueRow` a row: the figure that decides it (the
one that misses its bound, or the one closest to it), its reference, the ratio, the target and
met / not met / not measured (a run with `--only`, a quick run, a bench that failed).

The bounds are the issue's, not the benches' own `target` strings: a figure without a target
of its own (the OS table captures) is judged like the others, and met is computed here, from
the number, never copied.
"""

from __future__ import annotations

import operator
from collections.abc import Iterable
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Literal

from benchmarks.report import Figure, IssueCheck, IssueRow, fmt

_OPS = {"<=": operator.le, "<": operator.lt, ">=": operator.ge}
_SHOW = {"<=": "≤", "<": "<", ">=": "≥"}


@dataclass(frozen=True)
class Bound:
    """What a figure's reading must hold: `op limit`, on its value or on its ratio."""

    op: Literal["<=", "<", ">="]
    limit: float
    on: Literal["value", "ratio"] = "value"
    unit: str = ""

    def holds(self, x: float) -> bool:
        return bool(_OPS[self.op](x, self.limit))

    def text(self) -> str:
        unit = "×" if self.on == "ratio" else f" {self.unit}".rstrip()
        return f"{_SHOW[self.op]} {self.limit:g}{unit}"

    def margin(self, x: float) -> float:
        """How far inside its bound x is, as a fraction of the limit (negative: outside); the
        row shows its figure with the smallest margin."""
        if self.limit == 0:
            return x if self.op == ">=" else -x
        return (x - self.limit) / self.limit * (1 if self.op == ">=" else -1)


@dataclass(frozen=True)
class Pick:
    """Figures of one bench: glob patterns (fnmatch, case-sensitive) on case, metric and
    reference; `exclude`: case patterns left out (the syscall traces have a row of their own)."""

    bench: str
    case: str
    metric: str
    reference: str = "*"
    exclude: tuple[str, ...] = ()

    def matches(self, f: Figure) -> bool:
        return (
            f.bench == self.bench
            and fnmatchcase(f.case, self.case)
            and fnmatchcase(f.metric, self.metric)
            and fnmatchcase(f.reference, self.reference)
            and not any(fnmatchcase(f.case, x) for x in self.exclude)
        )


@dataclass(frozen=True)
class Check:
    """One condition of a row: every figure `pick` finds must hold `bound`; `label` names the
    condition in the summary line when a row has several (wall and CPU, time and RSS)."""

    pick: Pick
    bound: Bound
    label: str = ""


@dataclass(frozen=True)
class Row:
    """A row of the issue's table; `row` is its first cell in docs/benchmarks.md."""

    row: str
    checks: tuple[Check, ...]
    full_only: bool = False  # measured at its size only by --full


def _cpu_wall(bench: str, case: str, bound: Bound, reference: str = "*") -> tuple[Check, ...]:
    return (
        Check(Pick(bench, case, "CPU, median", reference), bound, "CPU"),
        Check(Pick(bench, case, "wall, median", reference), bound, "wall"),
    )


_TYPER = "import typer, rich"
_SERVE_10K = "10,000 entries, perfkb serve"
_MBPS = Bound(">=", 50.0, "value", "MB/s")
_ONE_GB = "* 1GB"

ROWS: tuple[Row, ...] = (
    Row(
        "`perfkb --help`", _cpu_wall("startup", "perfkb --help", Bound("<=", 1.5, "ratio"), _TYPER)
    ),
    Row(
        "`perfkb search shmdt`",
        _cpu_wall("startup", "perfkb search shmdt", Bound("<=", 1.5, "ratio"), _TYPER),
    ),
    Row(
        "`perfkb analyze`, 1-line file",
        _cpu_wall("startup", "perfkb analyze, 1-line file", Bound("<=", 200.0, "value", "ms")),
    ),
    Row(
        "analyze, 10k entries",
        _cpu_wall("scale", "perfkb analyze *, 10,000 entries", Bound("<=", 1.5, "ratio")),
    ),
    Row(
        "analyze, 50k entries",
        (
            *_cpu_wall("scale", "perfkb analyze *, 50,000 entries", Bound("<=", 2.0, "ratio")),
            Check(
                Pick("scale", "perfkb analyze *, 50,000 entries", "peak RSS"),
                Bound("<=", 300.0, "value", "MB"),
                "RSS",
            ),
        ),
        full_only=True,
    ),
    Row(
        "serve: first analysis after start / an edit, 10k",
        (
            Check(
                Pick("scale", _SERVE_10K, "first analysis after start"),
                Bound("<=", 300.0, "value", "ms"),
                "start",
            ),
            Check(
                Pick("scale", _SERVE_10K, "first analysis after an edit"),
                Bound("<=", 300.0, "value", "ms"),
                "edit",
            ),
        ),
    ),
    Row(
        "serve p99, 8 clients, 10k",
        (
            Check(
                Pick("scale", _SERVE_10K + " (* analysis processes)", "POST /api/analyze p99, *"),
                Bound("<=", 100.0, "value", "ms"),
            ),
        ),
    ),
    Row(
        "GC pause while serving",
        (
            Check(
                Pick("gcpause", "10,000 entries", "longest GC pause during analyses, frozen"),
                Bound("<=", 20.0, "value", "ms"),
                "during analyses",
            ),
            Check(
                Pick("gcpause", "10,000 entries", "full gc.collect(), KB frozen"),
                Bound("<=", 20.0, "value", "ms"),
                "full collection",
            ),
        ),
        full_only=True,
    ),
    Row(
        "whoosh build, 10k",
        (Check(Pick("search", "10k entries", "whoosh build"), Bound("<=", 10.0, "value", "s")),),
    ),
    Row(
        "search p95, 10k (this benchmark's own target)",
        (Check(Pick("search", "10k entries", "whoosh p95"), Bound("<=", 10.0, "value", "ms")),),
    ),
    Row(
        "mpstat vs `jc --mpstat`, 10,700 intervals",
        (
            Check(
                Pick("streaming", "mpstat 10MB", "CPU time vs jc --mpstat"),
                Bound("<", 1.0, "ratio"),
            ),
        ),
    ),
    Row(
        "truss / strace, 1 GB",
        (
            Check(Pick("streaming", "truss * 1GB", "throughput (wall)"), _MBPS, "truss"),
            Check(Pick("streaming", "strace -[!c]* 1GB", "throughput (wall)"), _MBPS, "strace"),
        ),
        full_only=True,
    ),
    Row(
        "other formats (MB/s of CPU)",
        (
            Check(
                Pick(
                    "streaming",
                    _ONE_GB,
                    "throughput (wall)",
                    exclude=("truss * 1GB", "strace -[!c]* 1GB"),
                ),
                _MBPS,
            ),
        ),
        full_only=True,
    ),
    Row(
        "web paste / API / Slack vs the CLI path",
        tuple(
            Check(Pick("onepath", "truss *", metric), Bound("<=", 1.5, "ratio"), label)
            for metric, label in (
                ("paste / API / Slack message: analyze_text", "paste"),
                ("upload: analyze_chunks, 1 MB blocks", "upload"),
                ("Slack file: decode_text, analyze_chunks", "Slack file"),
            )
        ),
    ),
)


def _reading(f: Figure, bound: Bound) -> float | None:
    return f.ratio if bound.on == "ratio" else f.value


def _check(check: Check, figures: list[Figure]) -> IssueCheck:
    found = [f for f in figures if check.pick.matches(f)]
    read = [(f, _reading(f, check.bound)) for f in found]
    read = [(f, x) for f, x in read if x is not None]
    out = IssueCheck(label=check.label, target=check.bound.text(), figures=len(found))
    if not found:
        return out
    if read:
        worst, _ = min(read, key=lambda fx: check.bound.margin(fx[1]))
    else:
        worst = found[0]
    out.case, out.metric = worst.case, worst.metric
    out.value, out.unit = worst.value, worst.unit
    out.reference, out.ref_value, out.ratio = worst.reference, worst.ref_value, worst.ratio
    out.missed = [
        f"{f.case if len(found) > 1 else check.label or f.metric} "
        + (fmt(v, f.unit) if check.bound.on == "value" else f"{v:.2f}×")
        for f, v in read
        if not check.bound.holds(v)
    ]
    out.met = not out.missed
    # a figure with no number (a tool missing, a format not run at 1 GB) is not a pass
    unread = [f for f in found if _reading(f, check.bound) is None]
    if unread:
        out.met = False
        out.missed += [f"{f.case} without a number" for f in unread]
    return out


def summarise(figures: Iterable[Figure], mode: str = "full") -> list[IssueRow]:
    """One IssueRow per row of ROWS, read from a run's figures: met when every check found its
    figures and all hold their bounds, not met when one does not, None (not measured) when a
    check found none."""
    figures = list(figures)
    rows = []
    for row in ROWS:
        checks = [_check(c, figures) for c in row.checks]
        if any(c.met is False for c in checks):
            met: bool | None = False
        elif all(c.met for c in checks):
            met = True
        else:
            met = None
        note = "full mode only" if met is None and row.full_only and mode != "full" else ""
        rows.append(IssueRow(row=row.row, met=met, checks=checks, note=note))
    return rows
