"""The web app's analyses in a pool of processes, one queue for every core.

Why: `perfkb serve --workers 2` served 0.8-1.7x the analyses of one worker on a 2-core box,
never 2x. uvicorn's workers each accept their own connections and a keep-alive client stays on
the worker that accepted it, so 8 clients' work was split 73:27 or 16:84 between two workers
(each worker's CPU over the same 80 requests) and one core idled while the other queued. Within one process, two analysis
threads share one interpreter lock, so a second slot adds no CPU either. A pool of processes
behind the HTTP process is one queue: whichever process is free takes the next analysis,
whatever connection it came on, so both cores work whenever two analyses wait.

Each pool process opens its own Store on the data dir (SQLite and the index lock are shared
across processes already, as by uvicorn's workers) and warms it (kb.analysis.warm: the compiled
KB loaded, compiled and frozen out of the cyclic GC; the search index left closed, since it never
searches) before it takes work; it sees edits made
by any process because kb.analysis.matcher_for checks the store's data version on every
analysis. It renders the API's JSON itself, so the HTTP process only moves the bytes.

`perfkb serve` sizes the pool to the CPUs it may use (PERFKB_ANALYSIS_PROCESSES, at most
PERFKB_WEB_ANALYSES, which caps the analyses running at once anyway); 0 keeps analyses in the
server's own threads (the test client, an app embedded elsewhere).
"""

from __future__ import annotations

import asyncio
import logging
import multiprocessing
import os
import threading
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kb.results import AnalysisResult
    from kb.settings import Settings
    from kb.store import Store

log = logging.getLogger("perfkb.web")

# -- in a pool process ------------------------------------------------------------------------

_store: Store | None = None
_all_started: Any = None  # the executor's barrier (multiprocessing.Barrier, size parties)
START_TIMEOUT = 600.0  # seconds a process waits for the others to warm (a 50k KB loads)


def _start(settings: Settings, all_started: Any) -> None:
    """The pool process's initializer: its own store, warmed before it takes any work."""
    global _store, _all_started
    from kb.analysis import warm
    from kb.store import Store

    logging.basicConfig(level=settings.log_level.upper())
    _all_started = all_started
    _store = Store(settings)
    warm(_store, searches=False)  # it only analyses: no whoosh, no index (~90 MB at 10k)


def _ready() -> int:
    """Held until every process of the pool holds one (so `size` of them answer from `size`
    processes, each past its initializer); its pid."""
    _all_started.wait(START_TIMEOUT)
    return os.getpid()


def _analyze(text: str) -> AnalysisResult:
    from kb.analysis import analyze_text

    return analyze_text(text, _store)


def _analyze_json(text: str) -> bytes:
    """The answer POST /api/analyze sends: the same bytes FastAPI wrote from the result's
    dict (response_model AnalysisResult), which the HTTP process no longer re-validates."""
    return render_json(_analyze(text))


def render_json(result: AnalysisResult) -> bytes:
    """An analysis as the API's JSON body: model_dump_json is byte for byte what FastAPI's
    response_model serialisation of `result.model_dump(mode="json")` wrote (compact, UTF-8
    unescaped; tests/test_web_pool.py compares them on every seed), at a third of the CPU."""
    return result.model_dump_json().encode()


# -- in the HTTP process ----------------------------------------------------------------------


class AnalysisPool:
    """`size` spawned processes analysing pastes for one HTTP process; restarted whole when one
    dies (a crash or the OOM killer), so the next request finds a working pool."""

    def __init__(self, settings: Settings, size: int) -> None:
        self.settings = settings
        self.size = size
        self._lock = threading.Lock()
        self._executor = self._new_executor()

    def _new_executor(self) -> ProcessPoolExecutor:
        # spawn, not fork: the server has threads and an event loop that a fork would copy
        context = multiprocessing.get_context("spawn")
        return ProcessPoolExecutor(
            self.size,
            mp_context=context,
            initializer=_start,
            initargs=(self.settings, context.Barrier(self.size)),  # inherited, not pickled
        )

    async def start(self) -> list[int]:
        """Start every process and wait until each has warmed its store: `size` tasks submitted
        together make the executor spawn `size` processes (it starts one per task while none is
        idle), a task runs only after its process's initializer, and each waits for the others
        at the barrier, so no process runs two. The pids. (A pool restarted after a crash
        spawns its processes as work arrives; each warms before its first analysis.)"""
        return sorted(set(await asyncio.gather(*(self._run(_ready) for _ in range(self.size)))))

    async def analyze(self, text: str) -> AnalysisResult:
        return await self._run(_analyze, text)

    async def analyze_json(self, text: str) -> bytes:
        return await self._run(_analyze_json, text)

    async def _run(self, fn: Any, *args: Any) -> Any:
        with self._lock:
            executor = self._executor
        try:
            return await asyncio.wrap_future(executor.submit(fn, *args))
        except BrokenProcessPool:
            self._replace(executor)
            log.error("an analysis process died; the pool was restarted")
            raise

    def _replace(self, broken: ProcessPoolExecutor) -> None:
        with self._lock:
            if self._executor is broken:
                self._executor = self._new_executor()
        broken.shutdown(wait=False, cancel_futures=True)

    def close(self) -> None:
        with self._lock:
            executor = self._executor
        executor.shutdown(wait=True, cancel_futures=True)


def pool_size(settings: Settings) -> int:
    """Processes for this server's pool: PERFKB_ANALYSIS_PROCESSES, no more than the analyses
    allowed at once (PERFKB_WEB_ANALYSES); 0 means none."""
    return min(settings.analysis_processes, settings.web_analyses)
