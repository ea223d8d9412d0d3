"""Snippet latency and match scaling: one in-process analysis (detect, parse, match, rank, next
commands) of each seed snippet in tests/fixtures/seeds/ against synthetic KBs of 100, 1,000 and
10,000 entries (benchmarks/synth_kb.py). The matcher is compiled once per KB, as the web app and
the bot keep it (kb.analysis.matcher_for); its build time is reported separately. Each KB is
measured twice: the matcher alone, and through a Store holding the same entries, which adds the
feedback lookup and whoosh BM25 similarity the web app and the bot get.

References in the same run: parsing alone (the part that does not depend on the KB) and the
smallest KB (scaling ratios).
"""

from __future__ import annotations

import gc
import tempfile
import time
from pathlib import Path

from benchmarks.report import Figure, pct, ratio
from benchmarks.synth_kb import synthetic_entries
from ingest.detect import parse_text
from kb.analysis import analyze_text
from kb.matcher import Matcher

BENCH = "latency"
SEEDS = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "seeds"
TARGET_P50_MS_AT_1000 = 20.0
TARGET_SCALING = 2.0


def snippets() -> list[tuple[str, str]]:
    return [(p.name, p.read_text(encoding="utf-8")) for p in sorted(SEEDS.glob("0*.txt"))]


def _time_ms(fn, reps: int) -> list[float]:
    out = []
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        out.append((time.perf_counter() - t) * 1000)
    return out


def measure(sizes: list[int], reps: int, store_sizes: list[int]) -> dict[int, dict]:
    """Every KB size is built first and then timed round-robin, snippet by snippet, so a change
    in the machine's load during the run reaches every size alike (the scaling ratio compares
    them)."""
    texts = snippets()
    parse_samples: list[float] = []
    for _, text in texts:
        parse_text(text)  # warm-up: imports, regex compilation
        parse_samples += _time_ms(lambda text=text: parse_text(text), reps)
    results: dict[int, dict] = {"parse": {"samples": parse_samples}}  # type: ignore[dict-item]
    matchers: dict[int, Matcher] = {}
    for n in sizes:
        entries = synthetic_entries(n)
        t = time.perf_counter()
        matchers[n] = Matcher(entries)
        build_ms = (time.perf_counter() - t) * 1000
        gc.collect()
        t = time.perf_counter()
        top: dict[str, str | None] = {}
        for name, text in texts:  # the first analyses compile the index's programs
            result = analyze_text(text, matcher=matchers[n])
            top[name] = result.matches[0].id if result.matches else None
        first_ms = (time.perf_counter() - t) * 1000
        results[n] = {
            "samples": [],
            "build_ms": build_ms,
            "first_pass_ms": first_ms,
            "per_snippet": {name: [] for name, _ in texts},
            "top_match": top,
            "store_samples": _with_store(entries, texts, reps) if n in store_sizes else [],
        }
    gc.collect()
    for _ in range(reps):
        for name, text in texts:
            for n in sizes:
                m = matchers[n]
                sample = _time_ms(lambda text=text, m=m: analyze_text(text, matcher=m), 1)
                results[n]["samples"] += sample
                results[n]["per_snippet"][name] += sample
    for n in sizes:
        r = results[n]
        r["per_snippet_p50_ms"] = {k: round(pct(v, 50), 3) for k, v in r.pop("per_snippet").items()}
    return results


def _with_store(entries: list, texts: list[tuple[str, str]], reps: int) -> list[float]:
    """The same analyses the way the web app and the bot run them: with a Store holding the
    entries (feedback lookup, whoosh BM25 over identifiers, the store's cached matcher)."""
    from kb.settings import Settings
    from kb.store import Store

    with tempfile.TemporaryDirectory(prefix="perfkb-bench-latency-") as tmp:
        store = Store(Settings(data_dir=Path(tmp) / "data"))
        try:
            with store.bulk():
                for entry in entries:
                    store.add(entry, author="bench")
            samples: list[float] = []
            for _, text in texts:
                analyze_text(text, store)  # warm-up: compiles the store's matcher once
                samples += _time_ms(lambda text=text: analyze_text(text, store), reps)
            return samples
        finally:
            store.close()


def run(full: bool) -> list[Figure]:
    sizes = [100, 1000, 10000]
    reps = 20 if full else 5
    # a store of 10,000 entries takes about a minute to fill: full mode only
    res = measure(sizes, reps, store_sizes=sizes if full else [100, 1000])
    parse_p50 = pct(res["parse"]["samples"], 50)
    base = pct(res[sizes[0]]["samples"], 50)
    figures: list[Figure] = []
    for n in sizes:
        r = res[n]
        p50, p95 = pct(r["samples"], 50), pct(r["samples"], 95)
        target = f"≤ {TARGET_P50_MS_AT_1000:g} ms" if n == 1000 else ""
        figures += [
            Figure(
                bench=BENCH,
                case=f"{n:,} entries",
                metric="analysis p50",
                value=round(p50, 2),
                unit="ms",
                reference="parse only p50",
                ref_value=round(parse_p50, 2),
                ratio=ratio(p50, parse_p50),
                target=target,
                met=(p50 <= TARGET_P50_MS_AT_1000) if n == 1000 else None,
                extra={
                    "snippets": len(r["per_snippet_p50_ms"]),
                    "reps": reps,
                    "per_snippet_p50_ms": r["per_snippet_p50_ms"],
                    "top_match": r["top_match"],
                },
            ),
            Figure(
                bench=BENCH,
                case=f"{n:,} entries",
                metric="analysis p95",
                value=round(p95, 2),
                unit="ms",
                reference="parse only p95",
                ref_value=round(pct(res["parse"]["samples"], 95), 2),
                ratio=ratio(p95, pct(res["parse"]["samples"], 95)),
            ),
            Figure(
                bench=BENCH,
                case=f"{n:,} entries",
                metric="matcher build (once per KB change)",
                value=round(r["build_ms"], 1),
                unit="ms",
            ),
            Figure(
                bench=BENCH,
                case=f"{n:,} entries",
                metric="first pass after a build (all snippets once)",
                value=round(r["first_pass_ms"], 1),
                unit="ms",
                reference="the same snippets once, warm",
                ref_value=round(sum(r["per_snippet_p50_ms"].values()), 1),
                ratio=ratio(r["first_pass_ms"], sum(r["per_snippet_p50_ms"].values())),
                note="the signature index compiles a view kind's program on its first use",
            ),
        ]
        if r["store_samples"]:
            figures.append(
                Figure(
                    bench=BENCH,
                    case=f"{n:,} entries",
                    metric="analysis p50 with a store",
                    value=round(pct(r["store_samples"], 50), 2),
                    unit="ms",
                    reference="without a store p50",
                    ref_value=round(p50, 2),
                    ratio=ratio(pct(r["store_samples"], 50), p50),
                    target=target,
                    met=(pct(r["store_samples"], 50) <= TARGET_P50_MS_AT_1000)
                    if n == 1000
                    else None,
                    note="as the web app and the bot analyse: feedback lookup and whoosh BM25 "
                    "similarity over identifiers included",
                    extra={"p95_ms": round(pct(r["store_samples"], 95), 2)},
                )
            )
        if n != sizes[0]:
            figures.append(
                Figure(
                    bench=BENCH,
                    case=f"{n:,} entries",
                    metric=f"p50 scaling vs {sizes[0]:,}",
                    value=round(p50, 2),
                    unit="ms",
                    reference=f"{sizes[0]:,} entries p50",
                    ref_value=round(base, 2),
                    ratio=ratio(p50, base),
                    target=f"≤ {TARGET_SCALING:g}×" if n == 10000 else "",
                    met=(p50 <= TARGET_SCALING * base) if n == 10000 else None,
                )
            )
    return figures
