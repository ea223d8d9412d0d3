"""KB at scale in a long-lived process (`perfkb serve`, `perfkb bot`): garbage-collector pauses
and the first analysis after the KB is loaded, with and without kb.analysis.warm's treatment
(compile every signature program up front, then gc.freeze()).

One process, one synthetic KB (benchmarks/synth_kb.py: 2,000 entries quick, 10,000 full). Both
sides are measured on the same matcher in the same run:

- full collection: `gc.collect()` with the KB's objects in the tracked generations (what a
  server paid whenever the allocation counters triggered a generation-2 collection), and again
  after `gc.freeze()`;
- pauses during analyses: every seed snippet analysed round-robin for a few rounds, each
  collection the interpreter starts by itself timed through `gc.callbacks`; the longest is
  reported, without and with the freeze (each answer is dumped to a dict and the last 500
  kept, as a server's responses allocate);
- first analysis: the slowest analysis of the first pass over the seed snippets right after
  the matcher is built (its programs compile on first use), against the same after
  `compile_all()` (whose own CPU time is in the JSON: it moves to the process's start).

Pauses and analyses are CPU times (thread and process), steadier than the wall clock here.
"""

from __future__ import annotations

import gc
import time
from collections import deque

from benchmarks.latency import snippets
from benchmarks.report import Figure, ratio
from benchmarks.synth_kb import synthetic_entries
from ingest.detect import parse_text
from kb.analysis import analyze_evidence
from kb.matcher import Matcher

BENCH = "gcpause"
TARGET_PAUSE_MS = 20.0
TARGET_FIRST_S = 0.3


class _Pauses:
    """The longest collection the interpreter ran by itself while installed."""

    def __init__(self) -> None:
        self.longest = 0.0
        self.count = 0
        self._started = 0.0

    def __call__(self, phase: str, info: dict) -> None:
        # thread CPU time: on a shared box the wall clock would count other processes' turns
        if phase == "start":
            self._started = time.thread_time()
        else:
            self.longest = max(self.longest, time.thread_time() - self._started)
            self.count += 1

    def __enter__(self) -> _Pauses:
        gc.callbacks.append(self)
        return self

    def __exit__(self, *exc: object) -> None:
        gc.callbacks.remove(self)


def _analyses(matcher: Matcher, evidence: list, rounds: int) -> float:
    """Analyse each snippet `rounds` times; each answer is turned into a dict and the last 500
    are kept, as a server's responses and its cache of recent analyses allocate objects that
    live a while (an analysis alone allocates too few tracked objects to start a collection)."""
    kept: deque = deque(maxlen=500)
    started = time.process_time()
    for _ in range(rounds):
        for ev in evidence:
            kept.append(analyze_evidence(ev, matcher=matcher).model_dump())
    return time.process_time() - started


def _slowest(matcher: Matcher, evidence: list) -> float:
    """CPU seconds of the slowest single analysis in one pass over the snippets."""
    worst = 0.0
    for ev in evidence:
        t = time.process_time()
        analyze_evidence(ev, matcher=matcher)
        worst = max(worst, time.process_time() - t)
    return worst


def run(full: bool) -> list[Figure]:
    n = 10_000 if full else 2_000
    rounds = 20 if full else 10
    evidence = [parse_text(text) for _, text in snippets()]
    entries = synthetic_entries(n)
    matcher = Matcher(entries)
    del entries
    first_lazy = _slowest(matcher, evidence)  # programs compile during this pass
    second = _analyses(matcher, evidence, 1)
    fresh = Matcher(matcher.entries)
    t = time.process_time()
    fresh.index.compile_all()
    compile_s = time.process_time() - t
    first_warm = _slowest(fresh, evidence)
    del fresh
    gc.collect()
    t = time.perf_counter()
    gc.collect()
    full_unfrozen = time.perf_counter() - t
    with _Pauses() as unfrozen:
        _analyses(matcher, evidence, rounds)
    gc.freeze()
    try:
        t = time.perf_counter()
        gc.collect()
        full_frozen = time.perf_counter() - t
        with _Pauses() as frozen:
            _analyses(matcher, evidence, rounds)
    finally:
        gc.unfreeze()
    k = len(evidence)
    case = f"{n:,} entries"
    extra = {"entries": n, "snippets": k, "rounds": rounds}
    return [
        Figure(
            bench=BENCH,
            case=case,
            metric="full gc.collect(), KB frozen",
            value=round(full_frozen * 1000, 2),
            unit="ms",
            reference="the same collection, not frozen",
            ref_value=round(full_unfrozen * 1000, 2),
            ratio=ratio(full_frozen, full_unfrozen),
            target=f"≤ {TARGET_PAUSE_MS:g} ms",
            met=full_frozen * 1000 <= TARGET_PAUSE_MS,
            extra=extra | {"tracked_objects_after": len(gc.get_objects())},
        ),
        Figure(
            bench=BENCH,
            case=case,
            metric="longest GC pause during analyses, frozen",
            value=round(frozen.longest * 1000, 2),
            unit="ms",
            reference="not frozen",
            ref_value=round(unfrozen.longest * 1000, 2),
            ratio=ratio(frozen.longest, unfrozen.longest),
            target=f"≤ {TARGET_PAUSE_MS:g} ms",
            met=frozen.longest * 1000 <= TARGET_PAUSE_MS,
            extra=extra | {"collections": frozen.count, "collections_unfrozen": unfrozen.count},
        ),
        Figure(
            bench=BENCH,
            case=case,
            metric="slowest first analysis after compile_all() (CPU)",
            value=round(first_warm * 1000, 1),
            unit="ms",
            reference="programs compiled on first use",
            ref_value=round(first_lazy * 1000, 1),
            ratio=ratio(first_warm, first_lazy),
            target=f"≤ {TARGET_FIRST_S * 1000:g} ms",
            met=first_warm <= TARGET_FIRST_S,
            extra=extra
            | {
                "second_pass_all_snippets_cpu_ms": round(second * 1000, 1),
                "compile_all_cpu_ms": round(compile_s * 1000),
            },
        ),
    ]
