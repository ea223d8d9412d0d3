"""Issue #20 item 10: login had no rate limit (~890 token guesses a second). Wrong tokens, on
the login form or as an API bearer token, are counted per client address; past the limit the
server answers 429 with Retry-After, before comparing the token, through the real HTTP server."""

from __future__ import annotations

import re

import httpx
import pytest

from kb.settings import Settings
from kb.web.auth import LOGIN_FAILURES_ALLOWED, LOGIN_WINDOW_S, LoginThrottle
from kb.web.devserver import running_server

pytestmark = pytest.mark.timeout(120)

TOKEN = "rate-limit-test-token-Zk3Pq8Wn2Lc"
TOKEN_RE = re.compile(r'name="csrf_token" value="([^"]+)"')


@pytest.fixture
def server(tmp_path):
    settings = Settings(data_dir=tmp_path / "data", api_token=TOKEN, secret_key=None)
    with running_server(settings) as url:
        yield url


def login(client: httpx.Client, token: str) -> httpx.Response:
    csrf = TOKEN_RE.search(client.get("/login").text)[1]
    return client.post("/login", data={"csrf_token": csrf, "name": "mallory", "token": token})


def test_login_guesses_get_429_with_retry_after(server):
    with httpx.Client(base_url=server, timeout=30) as client:
        for _ in range(LOGIN_FAILURES_ALLOWED):
            assert login(client, "wrong-guess").status_code == 401
        refused = login(client, "wrong-guess")
        assert refused.status_code == 429
        wait = int(refused.headers["retry-after"])
        assert 1 <= wait <= LOGIN_WINDOW_S
        assert "Too many wrong tokens" in refused.text
        # while refused, even the right token is not compared (a hit must look like a miss)
        right = login(client, TOKEN)
        assert right.status_code == 429 and "perfkb_session" not in right.headers.get(
            "set-cookie", ""
        )
        # bearer guesses from the same address are refused too
        api = client.post(
            "/api/entries", json={}, headers={"Authorization": "Bearer another-guess"}
        )
        assert api.status_code == 429 and api.headers["retry-after"]


def test_bearer_guesses_count_too_and_reads_stay_open(server):
    with httpx.Client(base_url=server, timeout=30) as client:
        bad = {"Authorization": "Bearer nope"}
        codes = [client.post("/api/entries", json={}, headers=bad).status_code for _ in range(12)]
        assert codes[:LOGIN_FAILURES_ALLOWED] == [401] * LOGIN_FAILURES_ALLOWED
        assert set(codes[LOGIN_FAILURES_ALLOWED:]) == {429}
        assert login(client, TOKEN).status_code == 429
        assert client.get("/").status_code == 200  # reading is never throttled
        assert client.get("/api/search", params={"q": "x"}).status_code == 200


def test_right_tokens_are_never_counted(server):
    with httpx.Client(base_url=server, timeout=30) as client:
        for _ in range(LOGIN_FAILURES_ALLOWED * 2):
            assert login(client, TOKEN).status_code == 303
        for _ in range(LOGIN_FAILURES_ALLOWED - 1):
            assert login(client, "wrong").status_code == 401
        assert login(client, TOKEN).status_code == 303


def test_the_window_slides_and_addresses_are_separate():
    now = [1000.0]
    throttle = LoginThrottle(allowed=3, window_s=60, tracked=2, clock=lambda: now[0])
    for _ in range(3):
        assert throttle.retry_after("10.0.0.1") == 0
        throttle.failed("10.0.0.1")
        now[0] += 10
    assert throttle.retry_after("10.0.0.1") == 30  # the first failure leaves at 1060
    assert throttle.retry_after("10.0.0.2") == 0
    now[0] = 1060.5
    assert throttle.retry_after("10.0.0.1") == 0
    throttle.failed("10.0.0.2")
    throttle.failed("10.0.0.3")  # only 2 addresses are remembered: the oldest goes
    assert throttle.retry_after("10.0.0.1") == 0
    assert len(throttle._failures) == 2
