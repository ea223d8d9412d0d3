"""The web app's analysis processes (kb/web/pool.py): the API's JSON is the same bytes the
response model wrote before; the pool's processes answer what the server's own thread answers,
see an edit another process made, and come back after one dies; and `perfkb serve` spreads
keep-alive clients' analyses over both processes (uvicorn's workers each kept their own
connections, so one core idled while the other queued)."""

from __future__ import annotations

import asyncio
import gc
import json
import os
import re
import signal
import subprocess
import threading
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path

import httpx
import pytest
from fastapi import FastAPI
from server_helpers import serve

from kb import analysis
from kb.results import AnalysisResult
from kb.settings import Settings
from kb.store import Store
from kb.web.devserver import seed_entries
from kb.web.pool import AnalysisPool, pool_size, render_json

SEEDS = Path(__file__).parent / "fixtures" / "seeds"
TOKEN_RE = re.compile(r'name="csrf_token" value="([^"]+)"')
SEED_TEXTS = {p.name: p.read_text(errors="replace") for p in sorted(SEEDS.glob("*.txt"))}


@pytest.fixture(scope="module")
def starter(tmp_path_factory) -> Settings:
    settings = Settings(data_dir=tmp_path_factory.mktemp("pool-kb"), api_token=None)
    seed_entries(settings)
    return settings


def _without_timing(raw: bytes) -> dict:
    body = json.loads(raw)
    body.pop("elapsed_ms")
    return body


def test_render_json_is_what_the_response_model_wrote(starter):
    """POST /api/analyze returned result.model_dump(mode="json") through FastAPI's
    response_model (validated again, then json.dumps); render_json must be the same bytes."""
    assert len(SEED_TEXTS) >= 20
    results: dict[str, AnalysisResult] = {}
    with Store(starter) as store:
        for name, text in SEED_TEXTS.items():
            results[name] = analysis.analyze_text(text, store)
    before = FastAPI()

    @before.get("/{name}", response_model=AnalysisResult)
    def old(name: str):
        return results[name].model_dump(mode="json")

    async def bodies() -> dict[str, httpx.Response]:
        # httpx's own ASGI transport: starlette's TestClient is deprecated over httpx
        transport = httpx.ASGITransport(app=before)
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
            return {name: await client.get(f"/{name}") for name in results}

    for name, old_body in asyncio.run(bodies()).items():
        assert old_body.status_code == 200, name
        assert old_body.headers["content-type"] == "application/json"
        assert render_json(results[name]) == old_body.content, name


def test_pool_size_is_capped_by_the_analyses_allowed_at_once(tmp_path):
    assert pool_size(Settings(data_dir=tmp_path)) == 0  # default: the server's own threads
    assert pool_size(Settings(data_dir=tmp_path, analysis_processes=4, web_analyses=2)) == 2
    assert pool_size(Settings(data_dir=tmp_path, analysis_processes=1, web_analyses=2)) == 1


def test_pool_answers_as_this_process_sees_edits_and_survives_a_dead_process(starter, tmp_path):
    names = ["000_pstack_122.txt", "001_truss_shmdt.txt", "003_waits_basicfile.txt"]
    with Store(starter) as store:
        here = {n: _without_timing(render_json(analysis.analyze_text(SEED_TEXTS[n], store)))
                for n in names}  # fmt: skip

    async def scenario() -> None:
        pool = AnalysisPool(starter, 2)
        try:
            pids = await pool.start()
            assert len(pids) == 2 and os.getpid() not in pids
            answers = await asyncio.gather(
                *(pool.analyze_json(SEED_TEXTS[n]) for n in names for _ in range(2))
            )
            for k, raw in enumerate(answers):
                assert _without_timing(raw) == here[names[k // 2]]
            result = await pool.analyze(SEED_TEXTS[names[0]])
            assert isinstance(result, AnalysisResult)
            assert result.matches[0].id == here[names[0]]["matches"][0]["id"]

            # an edit by another process: every pool process answers with the new title
            top = result.matches[0].id
            with Store(starter) as store:
                entry = store.get(top)
                store.update(
                    entry.model_copy(update={"title": entry.title + " (edited)"}), author="t"
                )
            seen = await asyncio.gather(*(pool.analyze(SEED_TEXTS[names[0]]) for _ in range(4)))
            assert all(r.matches[0].title.endswith(" (edited)") for r in seen)

            os.kill(pids[0], signal.SIGKILL)  # a process of this test's own pool
            with pytest.raises(BrokenProcessPool):
                for _ in range(4):
                    await pool.analyze(SEED_TEXTS[names[1]])
            again = await pool.analyze_json(SEED_TEXTS[names[1]])
            assert _without_timing(again) == here[names[1]]
        finally:
            pool.close()

    asyncio.run(scenario())


def _pool_pids(server_pid: int) -> list[int]:
    out = subprocess.run(["pgrep", "-P", str(server_pid)], capture_output=True, text=True).stdout
    return [int(p) for p in out.split()]


def _ticks(pid: int) -> int:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


def test_serve_spreads_keep_alive_clients_over_its_analysis_processes(tmp_path):
    """Four keep-alive clients send analyses for a while: both analysis processes work (with
    uvicorn's workers a connection's requests all went to the worker that accepted it); and
    the analyze page's paste, analysed in a pool process, is saved and shown as before."""
    env = {"PERFKB_ANALYSIS_PROCESSES": "2"}
    seed_entries(Settings(data_dir=tmp_path / "kb"))
    with serve(tmp_path / "kb", env) as srv:
        with httpx.Client(base_url=srv.url, timeout=60, follow_redirects=True) as c:
            token = TOKEN_RE.search(c.get("/analyze").text)[1]
            text = SEED_TEXTS["000_pstack_122.txt"]
            page = c.post("/analyze", data={"csrf_token": token, "text": text})
            assert page.status_code == 200 and "/analyze/" in str(page.url)
            first = page.text.index('class="match ')
            assert 'data-match="oraus-msb-exception-reads"' in page.text[first : first + 200]
        pids = [p for p in _pool_pids(srv.proc.pid) if b"spawn_main" in _cmdline(p)]
        assert len(pids) >= 2, pids
        before = {p: _ticks(p) for p in pids}
        text = SEED_TEXTS["004_truss_listener.txt"]
        errors: list[int] = []

        def client() -> None:
            with httpx.Client(base_url=srv.url, timeout=60) as c:
                for _ in range(12):
                    r = c.post("/api/analyze", json={"text": text})
                    if r.status_code != 200:
                        errors.append(r.status_code)

        threads = [threading.Thread(target=client) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert not errors
        used = sorted(_ticks(p) - before[p] for p in pids)
        assert used[-2] > 0, used  # the second busiest process did work too


def _cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def test_an_analysis_process_warms_its_store_without_the_search_index(starter):
    """The pool's initializer, run here: the compiled KB is ready, the index stays closed (each
    analysis process would otherwise hold whoosh and the index, ~90 MB at 10k entries)."""
    from kb.web import pool as pool_mod

    class _NoBarrier:
        def wait(self, timeout: float) -> None:
            return None

    try:
        pool_mod._start(starter, _NoBarrier())
        assert pool_mod._store is not None and not pool_mod._store.index_opened
        assert _without_timing(pool_mod._analyze_json(SEED_TEXTS["001_truss_shmdt.txt"]))
        assert not pool_mod._store.index_opened
    finally:
        if pool_mod._store is not None:
            pool_mod._store.close()
        pool_mod._store = None
        gc.unfreeze()
