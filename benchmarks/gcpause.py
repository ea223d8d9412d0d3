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
  reported, without and with the freeze. Each answer is kept as `perfkb serve`'s analysis
  processes send it (kb.web.pool.render_json: JSON bytes, which the collector never walks),
  the last 500 of them. The same is measured keeping the last 500 answers as `model_dump()`
  dicts, a stress case no perfkb process has (the web app and the bot send each answer and
  store it in SQLite as JSON): after the freeze the collector's full collections walk
  whatever lives outside the frozen KB, and those dicts are ~150 containers an answer at
  10,000 entries, so that figure measures the machine's memory (~125 ns an element here),
  not the KB (docs/benchmarks.md, "Issue 19: a full run on a faster machine");
- first analysis: the slowest analysis of the first pass over the seed snippets right after
  the matcher is built (its programs compile on first use), against the same after
  `compile_all()` (whose own CPU time is in the JSON: it moves to the process's start).

Pauses and analyses are CPU times (thread and process), steadier than the wall clock here.
"""

from __future__ import annotations

import gc
import time
from collections import deque
from collections.abc import Callable

from benchmarks.latency import snippets
from benchmarks.report import Figure, ratio
from benchmarks.synth_kb import synthetic_entries
from ingest.detect import parse_text
from kb.analysis import analyze_evidence
from kb.matcher import Matcher
from kb.results import AnalysisResult
from kb.web.pool import render_json

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


def _dicts(result: AnalysisResult) -> dict:
    return result.model_dump()


def _analyses(
    matcher: Matcher,
    evidence: list,
    rounds: int,
    keep: Callable[[AnalysisResult], object] = render_json,
) -> float:
    """Analyse each snippet `rounds` times and keep the last 500 answers as `keep` makes them:
    the response bytes a server sends (render_json), or dicts (_dicts, the stress case)."""
    kept: deque = deque(maxlen=500)
    started = time.process_time()
    for _ in range(rounds):
        for ev in evidence:
            kept.append(keep(analyze_evidence(ev, matcher=matcher)))
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
    with _Pauses() as unfrozen_dicts:
        _analyses(matcher, evidence, rounds, _dicts)
    gc.collect()  # the dicts kept above are garbage now: not frozen with the KB
    gc.freeze()
    try:
        t = time.perf_counter()
        gc.collect()
        full_frozen = time.perf_counter() - t
        with _Pauses() as frozen:
            _analyses(matcher, evidence, rounds)
        with _Pauses() as frozen_dicts:
            _analyses(matcher, evidence, rounds, _dicts)
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
            note="the last 500 answers kept as the response bytes a server sends",
        ),
        Figure(
            bench=BENCH,
            case=case,
            metric="longest GC pause, 500 answers kept as dicts, frozen",
            value=round(frozen_dicts.longest * 1000, 2),
            unit="ms",
            reference="not frozen",
            ref_value=round(unfrozen_dicts.longest * 1000, 2),
            ratio=ratio(frozen_dicts.longest, unfrozen_dicts.longest),
            extra=extra
            | {"collections": frozen_dicts.count, "collections_unfrozen": unfrozen_dicts.count},
            note="a stress case no perfkb process has: each answer's ~150 containers walked",
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
