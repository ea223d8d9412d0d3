"""Server-side SVG charts for evidence blocks: pictures where people would rather look than read.

Every function returns a complete inline <svg> as Markup. Text that came from the evidence
(syscall, event and CPU names) goes through `escape`, numbers through float formatting, so a
hostile paste cannot inject markup. Colours come from CSS classes (see static/perfkb.css).

This module knows how to draw each kind of chart and nothing about any format: which facts,
details, series, labels and thresholds each format's blocks draw is the fact catalogue's
`block_charts` table (ingest/data/facts.yaml), read through ingest.facts.block_charts.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

from markupsafe import Markup, escape

from ingest.facts import BlockChart, bar_charts, number
from ingest.facts import block_charts as catalogue_charts
from ingest.model import Block

W = 600  # viewBox width; the SVG scales to its container (text stays near 12 px on a laptop)
# The stacked parts of a CPU column (the catalogue's mpstat row says which parser columns make
# each: irq is %irq + %soft): a CPU that interrupts or the hypervisor take over shows as its own
# colour, not as a short bar
CPU_PARTS = ("usr", "sys", "irq", "steal", "wait", "idle")


def _num(v: Any) -> float | None:
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return f if math.isfinite(f) else None


def _fmt(v: float) -> str:
    """Chart labels in the one number format (ingest.facts.number)."""
    return number(v)


def _short(label: str, n: int = 24) -> str:
    return label if len(label) <= n else label[: n - 1] + "…"


def _svg(height: float, body: list[str], title: str) -> Markup:
    t = escape(title)
    return Markup(
        f'<svg class="chart" viewBox="0 0 {W} {height:.0f}" role="img" aria-label="{t}" '
        f'xmlns="http://www.w3.org/2000/svg"><title>{t}</title>{"".join(body)}</svg>'
    )


def _legend(items: Iterable[tuple[str, str]], y: float = 12) -> list[str]:
    out, x = [], 0.0
    for cls, label in items:
        out.append(
            f'<rect class="{cls}" x="{x:.0f}" y="{y - 9:.0f}" width="10" height="10" rx="2"/>'
        )
        out.append(f'<text class="legend" x="{x + 14:.0f}" y="{y:.0f}">{escape(label)}</text>')
        x += 22 + 7.5 * len(label)
    return out


# ---- primitives ---------------------------------------------------------------------------------


def hbars(
    items: Iterable[tuple[str, float]],
    *,
    title: str,
    unit: str = "",
    limit: int = 12,
    value_note: Mapping[str, str] | None = None,
) -> Markup | None:
    """Horizontal bars, largest first: time by syscall, share of time by event."""
    rows = [(str(k), v) for k, v in ((k, _num(v)) for k, v in items) if v is not None and v > 0]
    rows.sort(key=lambda kv: kv[1], reverse=True)
    hidden = len(rows) - limit
    rows = rows[:limit]
    if not rows:
        return None
    longest = max(len(_short(label, 34)) for label, _ in rows)
    label_w = min(230, max(70, 7 * longest + 12))  # room for the names, never most of the width
    value_w, bar_h, gap, top = 130, 18, 6, 6
    plot_w = W - label_w - value_w
    top_v = rows[0][1]
    body: list[str] = []
    for i, (label, v) in enumerate(rows):
        y = top + i * (bar_h + gap)
        w = max(1.0, plot_w * v / top_v)
        note = (value_note or {}).get(label, "")
        text = f"{_fmt(v)}{unit}" + (f" · {note}" if note else "")
        tip = escape(f"{label}: {text}")
        body.append(
            f'<text class="label" x="{label_w - 8}" y="{y + 13}" text-anchor="end">'
            f"{escape(_short(label, int((label_w - 12) / 7)))}</text>"
            f'<rect class="bar" x="{label_w}" y="{y}" width="{w:.1f}" height="{bar_h}" rx="2">'
            f"<title>{tip}</title></rect>"
            f'<text class="value" x="{label_w + w + 6:.1f}" y="{y + 13}">{escape(text)}</text>'
        )
    height = top + len(rows) * (bar_h + gap)
    if hidden > 0:
        body.append(f'<text class="note" x="{label_w}" y="{height + 10}">+ {hidden} more</text>')
        height += 16
    return _svg(height + 4, body, title)


def columns(buckets: list[tuple[str, float]], *, title: str, unit: str = "") -> Markup | None:
    """Vertical bars in the given order: a histogram."""
    vals = [(str(k), _num(v) or 0.0) for k, v in buckets]
    if not vals or max(v for _, v in vals) <= 0:
        return None
    left, bottom, top, h = 8, 34, 16, 150
    plot_w = W - 2 * left
    step = plot_w / len(vals)
    peak = max(v for _, v in vals)
    every = max(1, math.ceil(len(vals) / 12))
    body: list[str] = []
    for i, (label, v) in enumerate(vals):
        bh = h * v / peak
        x = left + i * step
        y = top + h - bh
        tip = escape(f"{label}: {_fmt(v)}{unit}")
        body.append(
            f'<rect class="bar" x="{x + step * 0.1:.1f}" y="{y:.1f}" width="{step * 0.8:.1f}" '
            f'height="{max(bh, 0.5):.1f}" rx="1"><title>{tip}</title></rect>'
        )
        if v > 0 and step >= 28:
            body.append(
                f'<text class="value" x="{x + step / 2:.1f}" y="{y - 3:.1f}" '
                f'text-anchor="middle">{_fmt(v)}</text>'
            )
        if i % every == 0:
            body.append(
                f'<text class="label" x="{x + step / 2:.1f}" y="{top + h + 16}" '
                f'text-anchor="middle">{escape(_short(label, 12))}</text>'
            )
    body.append(f'<line class="axis" x1="{left}" y1="{top + h}" x2="{W - left}" y2="{top + h}"/>')
    return _svg(top + h + bottom, body, title)


def cpu_columns(rows: list[tuple[str, Mapping[str, float]]], *, title: str) -> Markup | None:
    """Per-CPU usr/sys/wait/idle as stacked 0–100 % columns, one per CPU."""
    rows = [(label, parts) for label, parts in rows if parts]
    if not rows:
        return None
    left, top, h, bottom = 44, 26, 160, 26
    plot_w = W - left - 4
    step = plot_w / len(rows)
    every = max(1, math.ceil(len(rows) / 24))
    body = _legend([(f"cpu-{p}", p) for p in CPU_PARTS])
    for pct in (0, 50, 100):
        y = top + h - h * pct / 100
        body.append(f'<line class="grid" x1="{left}" y1="{y:.1f}" x2="{W - 4}" y2="{y:.1f}"/>')
        body.append(
            f'<text class="label" x="{left - 5}" y="{y + 4:.1f}" text-anchor="end">{pct}%</text>'
        )
    for i, (label, parts) in enumerate(rows):
        x = left + i * step
        total = sum(max(0.0, parts.get(p, 0.0)) for p in CPU_PARTS) or 100.0
        scale = 100.0 / max(total, 100.0)  # rounding can add to 101 %
        y = top + h
        tip = escape(
            f"CPU {label}: " + ", ".join(f"{p} {_fmt(parts.get(p, 0.0))}%" for p in CPU_PARTS)
        )
        for p in CPU_PARTS:
            v = max(0.0, parts.get(p, 0.0)) * scale
            if v <= 0:
                continue
            bh = h * v / 100
            y -= bh
            body.append(
                f'<rect class="cpu-{p}" x="{x + step * 0.08:.1f}" y="{y:.1f}" '
                f'width="{max(step * 0.84, 0.6):.1f}" height="{bh:.1f}"><title>{tip}</title></rect>'
            )
        if i % every == 0:
            body.append(
                f'<text class="label" x="{x + step / 2:.1f}" y="{top + h + 15}" '
                f'text-anchor="middle">{escape(_short(label, 6))}</text>'
            )
    return _svg(top + h + bottom, body, title)


def series_lines(
    series: list[tuple[str, list[float]]],
    *,
    title: str,
    threshold: float | None = None,
    threshold_label: str = "",
    unit: str = "",
) -> Markup | None:
    """Up to three series over the samples as lines (run queue and load over time, a device's
    latency over time), with an optional dashed threshold (the CPU count for a run queue)."""
    rows = [
        (str(label), [v for v in (_num(x) for x in values) if v is not None])
        for label, values in series[:3]
    ]
    rows = [(label, values) for label, values in rows if len(values) >= 2]
    if not rows:
        return None
    limit = _num(threshold)
    peak = max([max(values) for _, values in rows] + [limit or 0.0])
    if peak <= 0:
        return None
    left, top, h, bottom = 48, 26, 150, 12
    plot_w = W - left - 6
    body = _legend([(f"line-{i}", label) for i, (label, _) in enumerate(rows)])
    for frac in (0, 0.5, 1):
        y = top + h - h * frac
        body.append(f'<line class="grid" x1="{left}" y1="{y:.1f}" x2="{W - 6}" y2="{y:.1f}"/>')
        body.append(
            f'<text class="label" x="{left - 5}" y="{y + 4:.1f}" text-anchor="end">'
            f"{escape(_fmt(peak * frac))}</text>"
        )
    for i, (label, values) in enumerate(rows):
        step = plot_w / (len(values) - 1)
        points = " ".join(
            f"{left + j * step:.1f},{top + h - h * v / peak:.1f}" for j, v in enumerate(values)
        )
        tip = escape(
            f"{label}: min {_fmt(min(values))}{unit}, max {_fmt(max(values))}{unit}, "
            f"{len(values)} points"
        )
        body.append(f'<polyline class="line-{i}" points="{points}"><title>{tip}</title></polyline>')
    if limit is not None and limit > 0:
        y = top + h - h * limit / peak
        body.append(f'<line class="marker" x1="{left}" y1="{y:.1f}" x2="{W - 6}" y2="{y:.1f}"/>')
        body.append(
            f'<text class="note" x="{W - 8}" y="{y - 4:.1f}" text-anchor="end">'
            f"{escape(threshold_label)}</text>"
        )
    return _svg(top + h + bottom, body, title)


def split_bar(
    parts: list[tuple[str, str, float]], *, total: float, title: str, unit: str = " s"
) -> Markup | None:
    """One bar of `total` split into (css class, label, value) parts: cpu + waits + the rest."""
    vals = [(c, lab, _num(v) or 0.0) for c, lab, v in parts]
    total = _num(total) or 0.0
    span = max(total, sum(max(v, 0.0) for _, _, v in vals))
    if span <= 0:
        return None
    top, bh = 22, 30
    body = _legend([(c, f"{lab} {_fmt(v)}{unit}") for c, lab, v in vals])
    x = 0.0
    for cls, label, v in vals:
        if v <= 0:
            continue
        w = W * v / span
        pct = 100 * v / total if total else 0
        tip = escape(f"{label}: {_fmt(v)}{unit} ({_fmt(pct)}% of {_fmt(total)}{unit})")
        body.append(
            f'<rect class="{cls}" x="{x:.1f}" y="{top}" width="{w:.1f}" height="{bh}">'
            f"<title>{tip}</title></rect>"
        )
        if w > 60:
            body.append(
                f'<text class="inbar" x="{x + w / 2:.1f}" y="{top + 20}" text-anchor="middle">'
                f"{_fmt(pct)}%</text>"
            )
        x += w
    if total < span:  # cpu + waits exceed elapsed: mark where elapsed ends
        ex = W * total / span
        body.append(
            f'<line class="marker" x1="{ex:.1f}" y1="{top - 4}" x2="{ex:.1f}" y2="{top + bh + 4}"/>'
        )
    return _svg(top + bh + 6, body, title)


# ---- reading a block ------------------------------------------------------------------------------


def _table(block: Block, name: str) -> dict[str, float]:
    v = block.facts.get(name)
    return (
        {str(k): f for k, x in v.items() if (f := _num(x)) is not None}
        if isinstance(v, dict)
        else {}
    )


def _bound_label(bound: Any) -> str:
    b = _num(bound)
    if b is None:
        return str(bound)
    return f"≤{b * 1000:g}µs" if b < 1 else f"≤{b:g}ms"


def _power(value: float) -> str:
    """A histogram bucket as bpftrace and BCC print it: 1024 -> '1K'."""
    for size, suffix in ((1 << 30, "G"), (1 << 20, "M"), (1 << 10, "K")):
        if value >= size and value % size == 0:
            return f"{value / size:g}{suffix}"
    return _fmt(value)


# ---- the catalogue's charts (ingest/data/facts.yaml `block_charts`), one function per kind ------
Drawn = list[tuple[str, Markup | None]]


def _notes(block: Block, chart: BlockChart, keys: Iterable[str]) -> dict[str, str]:
    """Each key's note: the row's note texts with the key's values, joined; none left empty."""
    tables = [(_table(block, n.fact), n.text) for n in chart.notes]
    out = {}
    for k in keys:
        text = " · ".join(t.format(_fmt(table[k])) for table, t in tables if k in table)
        if text:
            out[k] = text
    return out


def _draw_hbars(block: Block, chart: BlockChart) -> Drawn:
    """Bars by key of the first keyed fact with values, or one bar per named scalar."""
    if chart.scalars:
        values = {n.split(".", 1)[-1]: v for n in chart.scalars if (v := _num(block.facts.get(n)))}
    else:
        values = next((t for n in chart.facts if (t := _table(block, n))), {})
        if not values and chart.share_of:  # each key's share of another table's sum
            base = _table(block, chart.share_of)
            s = sum(base.values()) or 1.0
            values = {k: 100 * v / s for k, v in base.items()}
    caption = chart.caption
    if chart.since_boot and block.facts.get("os.since_boot") == 1:
        caption += chart.since_boot
    notes = _notes(block, chart, values) if chart.notes else None
    svg = hbars(
        values.items(), title=chart.title, unit=chart.unit, limit=chart.limit, value_note=notes
    )
    return [(caption, svg)]


def _draw_columns(block: Block, chart: BlockChart) -> Drawn:
    """A parser's (upper bound ms, count) pairs as labelled buckets (the syscall latency)."""
    raw = block.details.get(chart.details)
    buckets: list[tuple[str, float]] = []
    for item in raw if isinstance(raw, list) else []:
        if isinstance(item, list | tuple) and len(item) == 2:
            buckets.append((_bound_label(item[0]), _num(item[1]) or 0.0))
    return [(chart.caption, columns(buckets, title=chart.title, unit=chart.unit))]


def _draw_cpu_columns(block: Block, chart: BlockChart) -> Drawn:
    """Per-CPU rows of the parser's details under the names the parser gives them (each part the
    sum of its columns: irq is %irq + %soft), labelled by the row's id."""
    raw = block.details.get(chart.details)
    rows: list[tuple[str, Mapping[str, float]]] = []
    for item in raw if isinstance(raw, list) else []:
        if not isinstance(item, Mapping):
            continue
        parts: dict[str, float] = {}
        for part, names in chart.columns.items():
            found = [v for n in names if (v := _num(item.get(n))) is not None]
            if found:
                parts[part] = sum(found)
        rows.append((str(item.get("id", len(rows))), parts))
    return [(chart.caption, cpu_columns(rows, title=chart.title))]


def _draw_series_lines(block: Block, chart: BlockChart) -> Drawn:
    """Named runs of points from the parser's details (vmstat, sar, iostat), legend-labelled."""
    raw = block.details.get(chart.details)
    lines: list[tuple[str, list[float]]] = []
    if isinstance(raw, Mapping):
        names = chart.series if chart.series is not None else {str(k): str(k) for k in raw}
        for name, label in names.items():
            values = raw.get(name)
            if isinstance(values, list):
                lines.append((label, values))
    limit = _num(block.facts.get(chart.threshold)) if chart.threshold else None
    mark = chart.threshold_label.format(_fmt(limit)) if limit else ""
    svg = series_lines(
        lines, title=chart.title, threshold=limit, threshold_label=mark, unit=chart.unit
    )
    return [(chart.caption, svg)]


def _draw_split_bar(block: Block, chart: BlockChart) -> Drawn:
    """One bar of a total split into scalar parts; the `rest` part is what the others leave."""
    f = block.facts
    for name, need in chart.requires.items():
        v = _num(f.get(name))
        if v is None or (need == "nonzero" and not v):
            return []
    values = {p.label: _num(f.get(p.fact)) or 0.0 for p in chart.parts if p.fact}
    total = (_num(f.get(chart.total)) or 0.0) if chart.total else sum(values.values())
    parts = []
    for p in chart.parts:
        v = max(total - sum(values.values()), 0.0) if p.rest else values[p.label]
        if not (p.optional and not v):
            parts.append((p.css, p.label, v))
    return [(chart.caption, split_bar(parts, total=total, title=chart.title, unit=chart.unit))]


def _draw_histograms(block: Block, chart: BlockChart) -> Drawn:
    """DTrace quantize, bpftrace hist() and BCC tables as columns, the way they are printed."""
    out: Drawn = []
    raw = block.details.get(chart.details)
    for hist in raw[: chart.limit] if isinstance(raw, list) else []:
        if not isinstance(hist, Mapping):
            continue
        buckets = []
        for b in hist.get("buckets") or []:
            if isinstance(b, Mapping) and (v := _num(b.get("value"))) is not None:
                buckets.append((_power(v), _num(b.get("count")) or 0.0))
        label = str(hist.get("label", ""))[:60]
        title = chart.title.format(label)
        out.append((chart.caption.format(label), columns(buckets, title=title)))
    return out


_KINDS = {
    "hbars": _draw_hbars,
    "columns": _draw_columns,
    "cpu_columns": _draw_cpu_columns,
    "series_lines": _draw_series_lines,
    "split_bar": _draw_split_bar,
    "histograms": _draw_histograms,
}


def _held(block: Block, fact: str) -> bool:
    """A row's `when` / `unless`: the keyed fact has a nonzero value in this block."""
    return any(_table(block, fact).values())


def block_charts(block: Block) -> list[tuple[str, Markup]]:
    """(caption, svg) pairs for one evidence block, as the catalogue's `block_charts` and
    `bar_charts` rows for its format say; empty when there is nothing to draw."""
    out: Drawn = []
    for chart in catalogue_charts(block.format):
        if chart.when and not _held(block, chart.when):
            continue
        if chart.unless and _held(block, chart.unless):
            continue
        out.extend(_KINDS[chart.kind](block, chart))
    for bar in bar_charts(block.format):  # the catalogue's: which keyed facts of the format
        values = _table(block, bar.fact)
        if any(values.values()):
            out.append(
                (bar.caption, hbars(values.items(), title=bar.caption, unit=bar.unit, limit=10))
            )
    return [(caption, svg) for caption, svg in out if svg is not None]
