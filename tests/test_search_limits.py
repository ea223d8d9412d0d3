"""Searches are anonymous, so every query is bounded (kb.search_query.SearchLimits, enforced
in SearchIndex.search, which the web page, /api/search, the CLI and the bot all reach): a bare
`*` and wildcards with fewer than two letters before them are refused, the index words the
wildcards of one query stand for are capped, free text is capped in words, and a search that
runs past its time budget stops with a message instead of holding a core. Checked on a
synthetic 3,000-entry KB (built once for the module) through the real server and the CLI.

Before these limits, `*` on this KB listed all 3,000 entries at full whoosh scoring cost, and
ten one-letter prefixes held a core for seconds (108 s on a 10,000-entry KB)."""

from __future__ import annotations

import contextlib
import itertools
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import pytest
from server_helpers import REPO, cpu_seconds, serve

from benchmarks.synth_kb import synthetic_entries
from kb.index import SearchIndex
from kb.search_query import (
    QueryError,
    SearchCancelled,
    SearchLimits,
    parse_query,
    search_cancelled,
)
from kb.settings import Settings
from kb.store import Store

ENTRIES = 3000
# each has at least two letters before the *, and all of them together stand for fewer index
# words than the default cap, so only the time budget can stop them
HEAVY = "ti* re* sh* co* se* pa* lo* da*"
REFUSED = ("*", "a*", "*a*", "?", "s?", "*:*", "shmdt *", "a* b* c* d* e* f* g* h* i* j*")


@pytest.fixture(scope="module")
def big_kb(tmp_path_factory) -> Path:
    data = tmp_path_factory.mktemp("kb3k")
    with Store(Settings(data_dir=data)) as store, store.bulk():
        for entry in synthetic_entries(ENTRIES):
            store.add(entry, author="synth")
    return data


def _index(data: Path, **limits) -> SearchIndex:
    ix = SearchIndex(data / "index", data / "index.lock", limits=SearchLimits(**limits))
    assert ix.open() is None
    return ix


@pytest.mark.parametrize("fast", [True, False])
def test_the_index_refuses_what_would_touch_every_entry(big_kb, fast):
    ix = _index(big_kb)
    ix.fast = fast
    for q in REFUSED:
        started = time.monotonic()
        with pytest.raises(QueryError, match=r"\*|letters") as err:
            ix.search(parse_query(q))
        assert time.monotonic() - started < 0.5, q
        assert "2 letters" in str(err.value) or "empty" in str(err.value), (q, err.value)
    # what the limits allow still works, with the same answer on both paths
    page = ix.search(parse_query("shm*"))
    assert page.total > 0 and all(h.id for h in page.results)


def test_expansions_and_words_are_capped(big_kb):
    ix = _index(big_kb, max_expansions=50, max_words=5)
    with pytest.raises(QueryError, match="more than 50 indexed words"):
        ix.search(parse_query("re*"))
    assert ix.search(parse_query("shmd*")).total > 0  # a handful of words: fine
    with pytest.raises(QueryError, match="at most 5"):
        ix.search(parse_query("one two three four five six"))
    assert ix.search(parse_query("log file sync")).total > 0


def _whole_heavy_cpu(data: Path) -> float:
    """CPU seconds the heavy query takes when its budget lets it finish (it answers)."""
    roomy = _index(data, time_budget=60)
    started = time.process_time()
    assert roomy.search(parse_query(HEAVY)).total > 0
    return time.process_time() - started


@pytest.mark.parametrize("fast", [True, False])
def test_the_time_budget_stops_a_slow_search(big_kb, fast):
    """The budget cuts the search short of the work it would do, measured in CPU against the
    same query finishing in the same process (wall time was the box's: the fresh-clone CI at
    load 5-7 took 1.02 s against a 1 s bound). It is checked before whoosh builds each leaf's
    matcher as well as between matches: whoosh builds every matcher before the first match,
    and for these wildcards that was all of the work (2026-12-02: a 0.05 s budget cut at
    0.44-0.65 s of CPU, the whole search 0.52-1.30 s); checked per leaf, the cut came at
    0.052-0.057 s against 0.52-0.69 s for the whole search."""
    whole = _whole_heavy_cpu(big_kb)
    slow = _index(big_kb, time_budget=0.05)
    slow.fast = fast
    started = time.process_time()
    with pytest.raises(QueryError, match="longer than 0.05 s"):
        slow.search(parse_query(HEAVY))
    assert time.process_time() - started < 0.3 * whole, whole


@pytest.mark.parametrize("fast", [True, False])
def test_a_search_nobody_waits_for_stops_soon_after_they_leave(big_kb, fast):
    """The web app sets search_cancelled's event when the client hangs up; a search already
    building its matchers stops at the next leaf, not after them all (the hammering below
    relies on it: a client that hangs up and asks again must not pile up whole searches)."""
    whole = _whole_heavy_cpu(big_kb)
    ix = _index(big_kb, time_budget=60)
    ix.fast = fast
    left = threading.Event()
    token = search_cancelled.set(left)
    timer = threading.Timer(0.05, left.set)
    try:
        timer.start()
        started = time.process_time()
        with pytest.raises(SearchCancelled, match="nobody waits"):
            ix.search(parse_query(HEAVY))
        assert time.process_time() - started < 0.3 * whole, whole
    finally:
        timer.cancel()
        search_cancelled.reset(token)


def test_the_server_bounds_every_search_and_stays_responsive(big_kb):
    budget = 0.05
    with (
        serve(big_kb, {"PERFKB_SEARCH_TIME_BUDGET": str(budget)}) as server,
        httpx.Client(base_url=server.url, timeout=30) as client,
    ):
        for q in REFUSED:
            started = time.monotonic()
            r = client.get("/api/search", params={"q": q})
            assert r.status_code == 400, (q, r.status_code, r.text[:200])
            assert "2 letters" in r.text or "empty" in r.text
            assert time.monotonic() - started < 1.0, q
            page = client.get("/search", params={"q": q})  # the page says why
            assert page.status_code == 200 and "letters before" in page.text
        r = client.get("/api/search", params={"q": HEAVY})
        assert r.status_code == 400 and f"longer than {budget:g} s" in r.json()["detail"]
        assert client.get("/api/search", params={"q": "shm*"}).json()["total"] > 0
    log = server.proc.stderr.read().decode()
    assert "Traceback" not in log and "unhandled error" not in log, log[-2000:]


def test_a_cheap_search_answers_while_heavy_ones_hammer_the_server(big_kb):
    """Four clients hammer the heavy query, and some hang up at once; a cheap search keeps
    answering, and the server is idle soon after the last of them. The budget is 0.5 s here,
    not the 0.05 s above: the cheap search shares two cores with four heavy ones, so its wall
    time is theirs too (at 0.05 s `shmdt` itself was cut on a slower box, 2026-12-02 CI: 400).

    The bound is the time one heavy search takes on this server before its budget stops it,
    twice for each hammering client. The fixed 3 s bound this had failed on a slower box at load
    1 (3.28 s, 2026-12-02 fresh-clone CI; 3.68 s at load 5-7), when neither the budget nor a
    hang-up cut whoosh's matcher building (they do now, leaf by leaf: see the tests above); one
    heavy search took 0.52 s there, the worst cheap one 2.07 s in a later run. On a faster box
    the heavy query can finish just inside the 0.5 s (the whole search took ~0.5 s of CPU there
    on 2026-12-02, and a fresh-clone CI got 200), so either answer is taken: what is measured
    is how long it takes, whichever way it ends."""
    budget = 0.5
    with serve(big_kb, {"PERFKB_SEARCH_TIME_BUDGET": str(budget)}) as server:
        with httpx.Client(base_url=server.url, timeout=30) as client:
            started = time.monotonic()
            heavy = client.get("/api/search", params={"q": HEAVY})
            one_heavy = time.monotonic() - started
            assert heavy.status_code in (200, 400), heavy.text[:200]
            if heavy.status_code == 400:  # cut by the budget, and the message says so
                assert f"longer than {budget:g} s" in heavy.json()["detail"]
        stop = threading.Event()

        def hammer(hang_up: bool) -> None:
            with httpx.Client(base_url=server.url, timeout=0.01 if hang_up else 30) as c:
                for n in itertools.count():
                    if stop.is_set():
                        break
                    with contextlib.suppress(httpx.TimeoutException):  # the page and the API
                        c.get("/search" if n % 2 else "/api/search", params={"q": HEAVY})

        threads = [threading.Thread(target=hammer, args=(i % 2 == 0,)) for i in range(4)]
        for t in threads:
            t.start()
        try:
            time.sleep(0.5)
            worst = 0.0
            with httpx.Client(base_url=server.url, timeout=30) as client:
                for _ in range(5):
                    started = time.monotonic()
                    assert client.get("/api/search", params={"q": "shmdt"}).status_code == 200
                    worst = max(worst, time.monotonic() - started)
            assert worst < 2 * len(threads) * one_heavy, (worst, one_heavy)
        finally:
            stop.set()
            for t in threads:
                t.join()
        time.sleep(budget + 1.0)  # anything still running must have hit its budget by now
        before = cpu_seconds(server.proc.pid)
        time.sleep(1.0)
        assert cpu_seconds(server.proc.pid) - before < 0.2
    log = server.proc.stderr.read().decode()  # requests whose client left are no errors
    assert "Traceback" not in log and "unhandled error" not in log, log[-2000:]


def test_the_cli_says_why_a_search_is_refused(big_kb):
    result = subprocess.run(
        [sys.executable, "-m", "kb", "--data-dir", str(big_kb), "search", "a*"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 1
    assert "2 letters before the first * or ?" in result.stderr + result.stdout
    assert "Traceback" not in result.stderr


def test_slack_search_says_why_a_wildcard_is_refused(tmp_path):
    """The bot's /perfkb search reaches the same Store.search: a signed slash command with a
    bare wildcard gets the limit's message back through its response_url."""
    from slack_stub import TEAM, running_harness

    with running_harness(tmp_path / "slack") as bot:
        for i, (query, expected) in enumerate(
            (("*", "leave the search empty"), ("s* ab*", "2 letters before the first"))
        ):
            url = bot.stub.response_url(f"limits{i}")
            fields = {
                "team_id": TEAM,
                "channel_id": "C0CMD",
                "user_id": "U0ALICE",
                "user_name": "alice",
                "command": "/perfkb",
                "text": f"search {query}",
                "api_app_id": "A0TEST",
                "response_url": url,
                "trigger_id": f"{i}.trigger",
            }
            assert bot.server.send_form(fields).status_code == 200
            call = bot.stub.wait_for(where=lambda c, u=url: c.path == u.split(bot.stub.url)[1])[0]
            assert call.body["text"].startswith("Search failed:"), call.body
            assert expected in call.body["text"]
