"""Server-side SVG charts for evidence blocks: pictures where people would rather look than read.

Every function returns a complete inline <svg> as Markup. Text that came from the evidence
(syscall, event and CPU names) goes through `escape`, numbers through float formatting, so a
hostile paste cannot inject markup. Colours come from CSS classes (see static/perfkb.css).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

from markupsafe import Markup, escape

from ingest.facts import bar_charts, number
from ingest.model import Block

W = 600  # viewBox width; the SVG scales to its container (text stays near 12 px on a laptop)
# irq is %irq + %soft and steal is %steal (Linux): a CPU that interrupts or the hypervisor take
# over shows as its own colour, not as a short bar
CPU_PARTS = ("usr", "sys", "irq", "steal", "wait", "idle")
_CPU_ALIASES = {
    "usr": ("usr", "user", "%usr", "us"),
    "sys": ("sys", "system", "%sys", "sy"),
    "wait": ("wait", "wt", "iowait", "%iowait", "wa"),
    "idle": ("idle", "idl", "%idle", "id"),
}


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


# ---- per-format charts ------------------------------------------------------------------------


def _table(block: Block, name: str) -> dict[str, float]:
    v = block.facts.get(name)
    return (
        {str(k): f for k, x in v.items() if (f := _num(x)) is not None}
        if isinstance(v, dict)
        else {}
    )


def _cpu_rows(block: Block) -> list[tuple[str, dict[str, float]]]:
    """Per-CPU averages from the mpstat parser's details, whatever it names the columns."""
    raw = block.details.get("per_cpu") or block.details.get("cpus") or []
    if isinstance(raw, Mapping):
        raw = [dict(v, cpu=k) if isinstance(v, Mapping) else {} for k, v in raw.items()]
    rows: list[tuple[str, dict[str, float]]] = []
    for item in raw if isinstance(raw, list) else []:
        if not isinstance(item, Mapping):
            continue
        parts: dict[str, float] = {}
        for part, names in _CPU_ALIASES.items():
            for n in names:
                if (v := _num(item.get(n))) is not None:
                    parts[part] = v
                    break
        irq = [v for n in ("irq", "soft") if (v := _num(item.get(n))) is not None]
        if irq:
            parts["irq"] = sum(irq)
        if (steal := _num(item.get("steal"))) is not None:
            parts["steal"] = steal
        label = str(item.get("cpu", item.get("id", len(rows))))
        rows.append((label, parts))
    return rows


def _bound_label(bound: Any) -> str:
    b = _num(bound)
    if b is None:
        return str(bound)
    return f"≤{b * 1000:g}µs" if b < 1 else f"≤{b:g}ms"


def _latency_buckets(block: Block) -> list[tuple[str, float]]:
    """The syscall parser's (upper bound ms, calls) pairs as labelled buckets."""
    raw = block.details.get("latency_histogram")
    out: list[tuple[str, float]] = []
    if isinstance(raw, list):
        for item in raw:
            if isinstance(item, list | tuple) and len(item) == 2:
                out.append((_bound_label(item[0]), _num(item[1]) or 0.0))
    return out


def _series(block: Block, *names: str) -> list[tuple[str, list[float]]]:
    """Named runs of points from a parser's details["series"] (vmstat, sar, iostat)."""
    raw = block.details.get("series")
    if not isinstance(raw, Mapping):
        return []
    out = []
    for name in names:
        values = raw.get(name)
        if isinstance(values, list):
            out.append((name, values))
    return out


_SERIES_LABELS = {"r": "run queue (r)", "b": "blocked (b)", "runq-sz": "runq-sz"}


def _os_charts(block: Block) -> list[tuple[str, Markup | None]]:
    """vmstat, sar, iostat, pidstat, prstat: what a person looks at first in each."""
    out: list[tuple[str, Markup | None]] = []
    fmt, f = block.format, block.facts
    cpus = _num(f.get("cpu.count"))
    mark = f"{_fmt(cpus)} CPUs" if cpus else ""
    if fmt == "vmstat":
        runq = [(_SERIES_LABELS[n], v) for n, v in _series(block, "r", "b")]
        out.append(
            (
                "Run queue over time",
                series_lines(runq, title="run queue", threshold=cpus, threshold_label=mark),
            )
        )
        cpu = _series(block, "us", "sy_cpu", "wa")
        named = [({"us": "user %", "sy_cpu": "system %", "wa": "iowait %"}[n], v) for n, v in cpu]
        out.append(("CPU over time", series_lines(named, title="CPU %", unit="%")))
    if fmt == "sar":
        load = _series(block, "runq-sz", "ldavg-1")
        out.append(
            (
                "Run queue and load over time",
                series_lines(
                    load, title="run queue and load", threshold=cpus, threshold_label=mark
                ),
            )
        )
        out.append(("CPU over time", series_lines(_series(block, "iowait", "idle"), title="CPU %")))
    if fmt in ("iostat", "sar"):
        await_ms = _table(block, "dev.await_ms")
        util = _table(block, "dev.util_pct")
        queue = _table(block, "dev.queue")
        notes = {
            d: " · ".join(
                part
                for part in (
                    f"{_fmt(util[d])}% util" if d in util else "",
                    f"queue {_fmt(queue[d])}" if d in queue else "",
                )
                if part
            )
            for d in await_ms
        }
        out.append(
            (
                "Device latency (await)",
                hbars(await_ms.items(), title="await by device", unit=" ms", value_note=notes),
            )
        )
        raw = block.details.get("series")
        if fmt == "iostat" and isinstance(raw, Mapping):
            lines = [(str(d), v) for d, v in raw.items() if isinstance(v, list)]
            out.append(("Device latency over time", series_lines(lines, title="await", unit=" ms")))
    for chart in bar_charts(fmt):  # the catalogue's: which keyed facts of the format
        values = _table(block, chart.fact)
        if any(values.values()):
            caption = chart.caption
            out.append((caption, hbars(values.items(), title=caption, unit=chart.unit, limit=10)))
    return out


def block_charts(block: Block) -> list[tuple[str, Markup]]:
    """(caption, svg) pairs for one evidence block; empty when there is nothing to draw."""
    out: list[tuple[str, Markup | None]] = []
    fmt = block.format
    if fmt == "mpstat":
        out.append(
            (
                "Per-CPU usr / sys / irq / steal / wait / idle",
                cpu_columns(_cpu_rows(block), title="CPU"),
            )
        )
    elif fmt in ("truss", "strace"):
        total = _table(block, "syscall.total_ms")
        if any(total.values()):
            share = _table(block, "syscall.share_pct")
            notes = {k: f"{_fmt(v)}%" for k, v in share.items()}
            out.append(
                (
                    "Time by syscall",
                    hbars(total.items(), title="ms by syscall", unit=" ms", value_note=notes),
                )
            )
        else:
            counts = _table(block, "syscall.count")
            out.append(("Calls by syscall", hbars(counts.items(), title="calls by syscall")))
        buckets = _latency_buckets(block)
        out.append(("Call latency", columns(buckets, title="calls by latency", unit=" calls")))
    elif fmt == "vdollar" and _table(block, "ash.seconds"):
        ash = _table(block, "ash.seconds")
        out.append(("ASH time by event", hbars(ash.items(), title="ASH seconds", unit=" s")))
    elif fmt in ("waits", "tkprof"):
        db_pct = _table(block, "event.pct_of_db_time")
        if db_pct:  # an AWR / Statspack report: what the DBA reads first
            out.append(
                (
                    "Top events, % of DB time",
                    hbars(db_pct.items(), title="% of DB time", unit="%", limit=10),
                )
            )
        waited = _table(block, "event.waited_s")
        pct = _table(block, "event.pct_of_waited")
        if not pct and waited:
            s = sum(waited.values()) or 1.0
            pct = {k: 100 * v / s for k, v in waited.items()}
        notes = {k: f"{_fmt(waited[k])} s" for k in pct if k in waited}
        out.append(
            (
                "Each event's share of waited time",
                hbars(pct.items(), title="share of waited time", unit="%", value_note=notes),
            )
        )
        if fmt == "tkprof":
            f = block.facts
            elapsed = _num(f.get("tkprof.elapsed_s")) or 0.0
            cpu = _num(f.get("tkprof.cpu_s")) or 0.0
            waited_s = _num(f.get("tkprof.waited_s")) or 0.0
            rest = elapsed - cpu - waited_s
            out.append(
                (
                    "Elapsed: cpu, waits and the unaccounted rest",
                    split_bar(
                        [
                            ("part-cpu", "cpu", cpu),
                            ("part-wait", "waits", waited_s),
                            ("part-rest", "unaccounted", max(rest, 0.0)),
                        ],
                        total=elapsed,
                        title="elapsed split",
                    ),
                )
            )
    elif fmt == "trace10046":
        # the Method R profile: each component's share of response time, largest first
        seconds = _table(block, "trace10046.profile_s")
        pct = _table(block, "trace10046.profile_pct")
        ranked = sorted(pct.items(), key=lambda kv: -abs(kv[1]))
        notes = {k: f"{_fmt(seconds[k])} s" for k, _ in ranked if k in seconds}
        out.append(
            (
                "Response-time profile (share of R)",
                hbars(ranked, title="share of response time", unit="%", value_note=notes),
            )
        )
    elif fmt in ("vmstat", "sar", "iostat", "pidstat", "prstat"):
        out.extend(_os_charts(block))
    elif fmt == "perf":
        out.extend(_perf_charts(block))
    elif fmt == "lockstat":
        count = _table(block, "lock.count")
        time_ms = _table(block, "lock.time_ms")
        notes = {k: f"{_fmt(v)} ms" for k, v in time_ms.items()}
        out.append(
            ("Hottest locks", hbars(count.items(), title="events by lock", value_note=notes))
        )
        callers = _table(block, "caller.count")
        out.append(("Callers", hbars(callers.items(), title="events by caller", limit=10)))
    elif fmt == "top":
        cpu = _table(block, "proc.cpu_pct")
        out.append(("CPU by command", hbars(cpu.items(), title="%CPU by command", unit="%")))
        out.append(_memory_chart(block))
    elif fmt in ("meminfo", "free"):
        out.append(_memory_chart(block))
    elif fmt == "procvmstat":
        names = ("vm.direct_scan_pages", "vm.allocstall", "vm.swap_pages", "vm.major_faults")
        names += ("vm.compact_stall", "vm.thp_fallback", "vm.oom_kill")
        shown = {n.removeprefix("vm."): v for n in names if (v := _num(block.facts.get(n)))}
        since = " (since boot)" if block.facts.get("os.since_boot") == 1 else ""
        out.append((f"Reclaim, swap and faults{since}", hbars(shown.items(), title="counters")))
    elif fmt == "pressure":
        avg10 = _table(block, "psi.avg10_pct")
        avg300 = _table(block, "psi.avg300_pct")
        notes = {k: f"avg300 {_fmt(avg300[k])}%" for k in avg10 if k in avg300}
        out.append(
            (
                "Time stalled (last 10 s)",
                hbars(avg10.items(), title="stalled, avg10", unit="%", value_note=notes),
            )
        )
    elif fmt in ("stack", "dtrace"):
        top = (
            _table(block, "probe.count")
            or _table(block, "frame.top")
            or _table(block, "frame.count")
        )
        out.append(("Most frequent functions", hbars(top.items(), title="functions", limit=10)))
        out.extend(_histograms(block))
    return [(caption, svg) for caption, svg in out if svg is not None]


def _perf_charts(block: Block) -> list[tuple[str, Markup | None]]:
    """perf: the hottest functions by self share (children noted), else folded-stack tops."""
    out: list[tuple[str, Markup | None]] = []
    share = _table(block, "symbol.self_pct")
    if share:
        children = _table(block, "symbol.children_pct")
        notes = {k: f"children {_fmt(children[k])}%" for k in share if k in children}
        out.append(
            (
                "Hottest functions",
                hbars(share.items(), title="self share", unit="%", value_note=notes, limit=15),
            )
        )
        f = block.facts
        kernel = _num(f.get("perf.kernel_pct")) or 0.0
        user = _num(f.get("perf.user_pct")) or 0.0
        if kernel or user:
            out.append(
                (
                    "Kernel and user time",
                    split_bar(
                        [("part-rest", "kernel", kernel), ("part-cpu", "user", user)],
                        total=kernel + user,
                        title="kernel vs user",
                        unit="%",
                    ),
                )
            )
    else:
        top = _table(block, "frame.top") or _table(block, "frame.count")
        out.append(("Most frequent functions", hbars(top.items(), title="functions", limit=10)))
    counters = _table(block, "perf.counter")
    if counters and not share:
        out.append(("Counters", hbars(counters.items(), title="perf stat counters")))
    return out


def _memory_chart(block: Block) -> tuple[str, Markup | None]:
    """Memory as a person weighs it: what is available against what is taken."""
    f = block.facts
    total = _num(f.get("mem.total_mb")) or 0.0
    avail = _num(f.get("mem.available_mb"))
    if not total or avail is None:
        return ("Memory", None)
    huge = _num(f.get("mem.hugepages_mb")) or 0.0
    used = max(total - avail - huge, 0.0)
    parts = [("part-rest", "in use", used)]
    if huge:
        parts.append(("part-wait", "huge pages", huge))
    parts.append(("part-cpu", "available", avail))
    return ("Memory", split_bar(parts, total=total, title="memory (MB)", unit=" MB"))


def _power(value: float) -> str:
    """A histogram bucket as bpftrace and BCC print it: 1024 -> '1K'."""
    for size, suffix in ((1 << 30, "G"), (1 << 20, "M"), (1 << 10, "K")):
        if value >= size and value % size == 0:
            return f"{value / size:g}{suffix}"
    return _fmt(value)


def _histograms(block: Block) -> list[tuple[str, Markup | None]]:
    """DTrace quantize, bpftrace hist() and BCC tables as columns, the way they are printed."""
    out: list[tuple[str, Markup | None]] = []
    raw = block.details.get("histograms")
    for hist in raw[:4] if isinstance(raw, list) else []:
        if not isinstance(hist, Mapping):
            continue
        buckets = []
        for b in hist.get("buckets") or []:
            if isinstance(b, Mapping) and (v := _num(b.get("value"))) is not None:
                buckets.append((_power(v), _num(b.get("count")) or 0.0))
        label = str(hist.get("label", ""))[:60]
        out.append((f"Histogram {label}", columns(buckets, title=f"histogram {label}")))
    return out
