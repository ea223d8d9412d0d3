"""Security review of the web and bot surfaces, as tests (docs/security.md says what each proves):
every route that writes needs an identity and every form a CSRF token; what a user typed is
escaped wherever it is shown (HTML and Slack mrkdwn); bodies are capped before any route runs;
the bot sends its token to Slack's file host or the configured API host only; and no token or
secret ever reaches a log line."""

from __future__ import annotations

import asyncio
import json
import logging
import re
import sqlite3
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from conftest import entry_data
from slack_stub import SECRET, TOKEN, Harness, SlackStub, running_harness

from bot.download import allowed_url
from bot.render import render_analysis, render_search
from kb.analysis import analyze_text
from kb.index_docs import SnippetPart
from kb.models import validate_entry
from kb.settings import Settings
from kb.store import Store
from kb.web.app import create_app

pytestmark = pytest.mark.timeout(120)

API_TOKEN = "security-review-api-token-q8Zr4LkT2mWx"
APP_TOKEN = "xapp-1-A0TEST-0000-securityreviewapptoken"
PROXY = "X-Forwarded-User"
TOKEN_RE = re.compile(r'name="csrf_token" value="([^"]+)"')
SEEDS = Path(__file__).parent / "fixtures" / "seeds"
REMOTE = ("10.9.8.7", 51000)

# Every non-GET route is one of these two kinds; a new route fails the first test until it is
# classified here (and, if it writes, protected).
NEEDS_IDENTITY = {
    ("POST", "/api/entries"),
    ("PUT", "/api/entries/{entry_id}"),
    ("DELETE", "/api/entries/{entry_id}"),
    ("POST", "/entries/new"),
    ("POST", "/entries/{entry_id}/edit"),
    ("POST", "/entries/{entry_id}/delete"),
    ("POST", "/analyze/{analysis_id}/feedback"),
}
OPEN_ON_PURPOSE = {
    ("POST", "/slack/events"): "Bolt verifies Slack's request signature",
    ("POST", "/login"): "the login form itself (CSRF-checked)",
    ("POST", "/logout"): "only drops the caller's own cookie (CSRF-checked)",
    ("POST", "/analyze"): "analyses; keeps a permalink only for someone who may write",
    ("POST", "/api/analyze"): "analyses; writes nothing",
}


def make_settings(data_dir: Path, **overrides: Any) -> Settings:
    values: dict[str, Any] = {
        "data_dir": data_dir,
        "api_token": API_TOKEN,
        "proxy_user_header": PROXY,
        "secret_key": None,
        "max_body_bytes": 256 * 1024,
        "max_file_bytes": 512 * 1024,
        "SLACK_BOT_TOKEN": TOKEN,
        "SLACK_SIGNING_SECRET": SECRET,
        "SLACK_APP_TOKEN": APP_TOKEN,
        "SLACK_API_URL": "http://127.0.0.1:9/api/",  # nothing here calls Slack
    }
    values.update(overrides)
    return Settings(**values)


@pytest.fixture
def app(tmp_path):
    settings = make_settings(tmp_path / "data")
    with Store(settings) as store:
        store.add(validate_entry(entry_data("target-entry")), author="setup")
    application = create_app(settings)
    yield application
    application.state.web.store.close()


def run(app, client_addr: tuple[str, int], fn: Callable[[httpx.AsyncClient], Awaitable[Any]]):
    async def go():
        transport = httpx.ASGITransport(app=app, client=client_addr)
        async with httpx.AsyncClient(transport=transport, base_url="http://perfkb.example") as c:
            return await fn(c)

    return asyncio.run(go())


def counts(db: Path) -> tuple[int, ...]:
    with sqlite3.connect(db) as conn:
        return tuple(
            conn.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0]
            for table in ("entries", "revisions", "feedback", "analyses")
        )


def all_routes(app) -> set[tuple[str, str]]:
    """(method, path) of every route, including those of included routers (FastAPI keeps them
    inside wrapper objects, not flattened into app.routes)."""
    found: set[tuple[str, str]] = set()

    def walk(routes: list[Any], prefix: str) -> None:
        for route in routes:
            inner = getattr(route, "original_router", None)
            if inner is not None:
                walk(inner.routes, prefix + route.include_context.prefix)
                continue
            for method in getattr(route, "methods", None) or ():
                found.add((method, prefix + route.path))

    walk(app.routes, "")
    return found


def write_routes(app) -> set[tuple[str, str]]:
    return {(m, p) for m, p in all_routes(app) if m not in ("GET", "HEAD")}


def entry_json(entry_id: str = "target-entry") -> dict:
    data = entry_data(entry_id, title="Replaced by an intruder")
    return {k: (v.isoformat() if hasattr(v, "isoformat") else v) for k, v in data.items()}


def test_every_non_get_route_is_classified(app):
    routes = all_routes(app)
    assert {("GET", "/search"), ("GET", "/api/entries/{entry_id}")} <= routes  # the walk works
    assert write_routes(app) == NEEDS_IDENTITY | set(OPEN_ON_PURPOSE)


def test_every_write_route_refuses_a_caller_without_identity(app):
    settings = app.state.web.settings
    store = app.state.web.store
    analysis_id = store.save_analysis("x", analyze_text("x").model_dump_json())
    before = counts(settings.db_path)
    paths = {
        "/api/entries": "/api/entries",
        "/api/entries/{entry_id}": "/api/entries/target-entry",
        "/entries/new": "/entries/new",
        "/entries/{entry_id}/edit": "/entries/target-entry/edit",
        "/entries/{entry_id}/delete": "/entries/target-entry/delete",
        "/analyze/{analysis_id}/feedback": f"/analyze/{analysis_id}/feedback",
    }

    async def attempts(c: httpx.AsyncClient) -> dict[str, list[int]]:
        token = TOKEN_RE.search((await c.get("/analyze")).text)[1]
        form = {
            "csrf_token": token,
            **{k: str(v) for k, v in entry_json().items() if isinstance(v, str)},
            "id": "target-entry",
            "entry_id": "target-entry",
            "verdict": "right",
            "action": "save",
        }
        out: dict[str, list[int]] = {}
        for method, template in sorted(NEEDS_IDENTITY):
            url = paths[template]
            key = f"{method} {template}"
            if template.startswith("/api/"):
                body = json.dumps(entry_json()).encode()
                codes = []
                for auth in (None, "Bearer wrong-token", f"Basic {API_TOKEN}", API_TOKEN):
                    headers = {"Content-Type": "application/json"}
                    if auth:
                        headers["Authorization"] = auth
                    codes.append(
                        (await c.request(method, url, content=body, headers=headers)).status_code
                    )
                # a spoofed proxy header is not an identity for the API
                spoofed = {"Content-Type": "application/json", PROXY: "mallory"}
                codes.append(
                    (await c.request(method, url, content=body, headers=spoofed)).status_code
                )
                out[key] = codes
            else:
                with_csrf = (await c.request(method, url, data=form)).status_code
                without = (
                    await c.request(method, url, data={**form, "csrf_token": ""})
                ).status_code
                out[key] = [with_csrf, without]
        return out

    # the proxy header is trusted only when the app is behind that proxy: here it is not set
    # on these requests, and the remote client has no login cookie
    results = run(app, REMOTE, attempts)
    for key, codes in results.items():
        if key.split()[1].startswith("/api/"):
            assert codes == [401] * 5, (key, codes)
        else:
            assert codes == [401, 403], (key, codes)
    assert counts(settings.db_path) == before
    assert store.get("target-entry").title != "Replaced by an intruder"


def test_no_auth_configured_means_loopback_only_and_dns_rebinding_is_refused(tmp_path):
    settings = make_settings(tmp_path / "data", api_token=None, proxy_user_header=None)
    app = create_app(settings)
    try:
        body = json.dumps(entry_json("made-locally")).encode()
        headers = {"Content-Type": "application/json"}

        async def post(c: httpx.AsyncClient, host: str | None = None) -> int:
            extra = {"Host": host} if host else {}
            r = await c.post("/api/entries", content=body, headers={**headers, **extra})
            return r.status_code

        local = ("127.0.0.1", 40000)
        assert run(app, REMOTE, post) == 401
        assert run(app, local, lambda c: post(c, "attacker.example:8000")) == 401
        assert run(app, local, lambda c: post(c, "127.0.0.1:8000")) == 201
    finally:
        app.state.web.store.close()


def test_read_only_posts_write_nothing_for_an_anonymous_caller(app):
    settings = app.state.web.settings
    before = counts(settings.db_path)
    evidence = (SEEDS / "001_truss_shmdt.txt").read_text()

    async def calls(c: httpx.AsyncClient):
        token = TOKEN_RE.search((await c.get("/analyze")).text)[1]
        page = await c.post("/analyze", data={"csrf_token": token, "text": evidence})
        api = await c.post("/api/analyze", json={"text": evidence})
        no_csrf = await c.post("/analyze", data={"text": evidence})
        logout = await c.post("/logout", data={})
        login = await c.post("/login", data={"csrf_token": token, "name": "m", "token": "nope"})
        slack = await c.post(
            "/slack/events",
            content=b'{"type": "event_callback"}',
            headers={"X-Slack-Signature": "v0=00", "X-Slack-Request-Timestamp": "1"},
        )
        return page, api, no_csrf, logout, login, slack

    page, api, no_csrf, logout, login, slack = run(app, REMOTE, calls)
    assert page.status_code == 200 and "Not saved: log in" in page.text
    assert api.status_code == 200 and api.json()["matches"]
    assert no_csrf.status_code == 403
    assert logout.status_code == 403
    assert login.status_code == 401 and "perfkb_session" not in login.headers.get("set-cookie", "")
    assert slack.status_code == 401
    assert counts(settings.db_path) == before


def test_csrf_guards_every_form_even_for_an_identified_user(app):
    store = app.state.web.store
    analysis_id = store.save_analysis("x", analyze_text("x").model_dump_json())

    async def attempts(c: httpx.AsyncClient):
        c.headers[PROXY] = "alice@example.com"  # behind the proxy: alice is identified
        urls = ["/entries/new", "/entries/target-entry/edit", "/entries/target-entry/delete"]
        urls += [f"/analyze/{analysis_id}/feedback", "/logout", "/login", "/analyze"]
        missing = [(await c.post(u, data={"title": "x"})).status_code for u in urls]
        # a token minted for another browser (another nonce cookie) does not pass
        async with httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app, client=REMOTE), base_url="http://perfkb.example"
        ) as other:
            foreign = TOKEN_RE.search((await other.get("/analyze")).text)[1]
        await c.get("/analyze")  # our own nonce cookie
        crossed = [(await c.post(u, data={"csrf_token": foreign})).status_code for u in urls]
        forged = (await c.post(urls[2], data={"csrf_token": "forged.token.value"})).status_code
        own = TOKEN_RE.search((await c.get("/entries/target-entry/edit")).text)[1]
        done = await c.post("/entries/target-entry/delete", data={"csrf_token": own})
        return missing, crossed, forged, done

    missing, crossed, forged, done = run(app, REMOTE, attempts)
    assert missing == [403] * 7
    assert crossed == [403] * 7
    assert forged == 403
    assert done.status_code == 303  # the same request with its own token goes through
    assert store.history("target-entry")[-1].author == "alice@example.com"


def test_a_login_cookie_does_not_authorise_the_api(app):
    async def attempts(c: httpx.AsyncClient):
        token = TOKEN_RE.search((await c.get("/login")).text)[1]
        login = await c.post(
            "/login", data={"csrf_token": token, "name": "bob", "token": API_TOKEN}
        )
        body = json.dumps(entry_json("via-cookie")).encode()
        api = await c.post(
            "/api/entries", content=body, headers={"Content-Type": "application/json"}
        )
        as_form = await c.post(
            "/api/entries",
            data=entry_json("via-form"),
            headers={"Authorization": f"Bearer {API_TOKEN}"},
        )
        return login, api, as_form

    login, api, as_form = run(app, REMOTE, attempts)
    assert login.status_code == 303
    assert "httponly" in login.headers["set-cookie"].lower()
    assert "samesite=lax" in login.headers["set-cookie"].lower()
    assert api.status_code == 401
    assert as_form.status_code == 415  # a cross-site HTML form cannot send JSON


XSS = '<script>alert("x")</script><img src=x onerror=alert(1)>'


def test_what_users_typed_is_escaped_in_every_page(app):
    store = app.state.web.store
    hostile = validate_entry(
        entry_data(
            "hostile-entry",
            title=f"Title {XSS}",
            symptom=f"Symptom {XSS} shmdt",
            root_cause=f"Cause {XSS}",
            fix=f"Fix {XSS}",
            tags=["numa", "x-tag"],
            next_commands=[{"command": f"truss {XSS}", "platform": "solaris", "why": XSS}],
        )
    )
    store.add(hostile, author=f"mallory {XSS}")
    awr = (
        Path(__file__).parent / "fixtures" / "oracle" / "awr_19c_top10_db_file_sequential_read.txt"
    )
    paste = f"prose {XSS}\n" + awr.read_text().replace("log file sync      ", "<script>x</script>")
    analysis_id = store.save_analysis(paste, analyze_text(paste).model_dump_json())

    async def pages(c: httpx.AsyncClient):
        c.headers[PROXY] = "alice@example.com"
        urls = [
            "/entries/hostile-entry",
            "/entries/hostile-entry/edit",
            f"/search?q={XSS}",
            "/search?q=shmdt",
            f"/analyze/{analysis_id}",
            f"/entries/{XSS}",
            f"/login?next=javascript:alert(1)//{XSS}",
        ]
        return {u: await c.get(u) for u in urls}

    shown = run(app, REMOTE, pages)
    for url, page in shown.items():
        assert "<script>" not in page.text.replace('<script src="/static/', ""), url
        assert "<img src=x" not in page.text, url
        assert "javascript:alert" not in page.text, url  # no open redirect target either
        assert page.headers["content-security-policy"].startswith("default-src 'self'")
        assert page.headers["x-frame-options"] == "DENY"
    escaped = "&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;&lt;img src=x onerror=alert(1)&gt;"
    for url in list(shown)[:3] + [f"/analyze/{analysis_id}"]:
        assert escaped in shown[url].text, url  # shown, as text
    assert "&lt;script&gt;x&lt;/script&gt;" in shown[f"/analyze/{analysis_id}"].text
    assert shown[f"/entries/{XSS}"].status_code == 404
    assert 'name="next" value="/"' in shown[list(shown)[-1]].text


def test_slack_markup_in_entries_and_snippets_is_escaped_for_the_bot():
    entry = validate_entry(
        entry_data(
            "slack-markup",
            title="Storm <!channel> <https://evil.example|click me> & more",
            symptom="shmdt <@U0BOSS> slow",
        )
    )
    evidence = (SEEDS / "001_truss_shmdt.txt").read_text()
    result = analyze_text(evidence, entries=[entry])
    assert result.matches and result.matches[0].id == "slack-markup"
    message = render_analysis(result, base_url="http://kb.test", analysis_id="abc")
    wire = message.text + json.dumps(message.blocks)
    assert "<!channel>" not in wire and "<https://evil.example" not in wire
    assert "&lt;!channel&gt;" in wire and "&amp; more" in wire

    class Page:
        query, total, page, per_page, facets = "shmdt", 1, 1, 20, {}
        results = [
            type(
                "Hit",
                (),
                {
                    "id": "slack-markup",
                    "title": entry.title,
                    "score": 1.0,
                    "snippet": [
                        SnippetPart(text="x <!here> "),
                        SnippetPart(text="shmdt", hit=True),
                        SnippetPart(text=" <@U0BOSS>"),
                    ],
                    "platforms": ["solaris"],
                    "sources": ["truss"],
                    "tags": [],
                    "products": [],
                },
            )()
        ]

    search = render_search(Page(), "http://kb.test")
    wire = search.text + json.dumps(search.blocks)
    assert "<!here>" not in wire and "<!channel>" not in wire and "<@U0BOSS>" not in wire


def test_bodies_over_the_cap_are_refused_before_any_route_runs(app):
    cap = app.state.web.settings.max_body_bytes
    before = counts(app.state.web.settings.db_path)

    async def attempts(c: httpx.AsyncClient):
        out = {}
        for method, template in sorted(NEEDS_IDENTITY | set(OPEN_ON_PURPOSE)):
            url = template.replace("{entry_id}", "target-entry").replace("{analysis_id}", "x")
            size = 1024 * 1024 + 1 if url == "/slack/events" else cap + 1
            if url == "/analyze":
                size = app.state.web.settings.max_file_bytes + 1
            r = await c.request(method, url, content=b"a" * size)
            out[f"{method} {url}"] = r.status_code

        async def chunks():
            for _ in range(cap // 65536 + 2):
                yield b"b" * 65536

        form = {"Content-Type": "application/x-www-form-urlencoded"}  # no length: streamed
        r = await c.post("/entries/new", content=chunks(), headers=form)
        out["streamed"] = r.status_code
        return out

    results = run(app, REMOTE, attempts)
    assert {k: v for k, v in results.items() if v != 413} == {}
    assert counts(app.state.web.settings.db_path) == before


HOSTILE_URLS = [
    "https://files.slack.com/files-pri/T1-F1/a.txt",
    "https://FILES.SLACK.COM/files-pri/T1-F1/a.txt",
    "https://files.slack.com:443/x",
    "https://files.slack.com\\@evil.example/x",
    "https://evil.example\\@files.slack.com/x",
    "https://evil.example#@files.slack.com/x",
    "https://evil.example?@files.slack.com/",
    "https://files.slack.com:443@evil.example/x",
    "https://files.slack.com%2eevil.example/x",
    "https://files.slack.com./x",
    "https://files.slack.com.evil.example/x",
    "http://files.slack.com/x",
    "https://[::ffff:127.0.0.1]/x",
    "http://169.254.169.254/latest/meta-data/",
    "http://2130706433:8080/x",
    "http://127.0.0.1:8080@evil.example/x",
    "http://127.0.0.1:8080/files-pri/x",
    "http://127.0.0.1:08080/files-pri/x",
    "http://127.0.0.1:8081/files-pri/x",
    "//files.slack.com/x",
    "https:files.slack.com/x",
    "file:///etc/passwd",
    "gopher://files.slack.com/x",
]


@pytest.mark.parametrize("url", HOSTILE_URLS)
def test_a_url_the_allow_list_accepts_is_the_host_httpx_connects_to(url):
    """No parser differential: whatever allowed_url says yes to, httpx sends to an allowed host."""
    api = "http://127.0.0.1:8080/api/"
    if not allowed_url(url, api):
        return
    target = httpx.URL(url)
    assert (target.scheme, target.host, target.port) in {
        ("https", "files.slack.com", None),
        ("https", "files.slack.com", 443),
        ("http", "127.0.0.1", 8080),
    }


def test_the_bot_token_is_never_sent_to_another_host(tmp_path):
    with running_harness(tmp_path) as bot, SlackStub() as internal:
        api_host = bot.stub.url.removeprefix("http://")
        sneaky = [
            f"{internal.url}/latest/meta-data",
            f"http://{api_host}@{internal.url.removeprefix('http://')}/x",
            f"{internal.url}#@{api_host}/x",
        ]
        for n, url in enumerate(sneaky):
            file = bot.stub.add_file(f"ssrf{n}.txt", b"x")
            file["url_private"] = url
            file.pop("url_private_download")
            ts = f"1700005000.{n:06d}"
            event = {
                "type": "message",
                "subtype": "file_share",
                "channel": f"C0SSRF{n}",
                "channel_type": "channel",
                "user": "U0MALLORY",
                "text": "",
                "ts": ts,
                "files": [file],
            }
            assert bot.server.send_event(event).status_code == 200
            reply = bot.wait_reply(f"C0SSRF{n}", ts)
            assert "not Slack's file host" in reply.body["text"]
        bot.drain()
        assert internal.calls == []


def test_tokens_and_secrets_never_reach_the_logs(tmp_path, caplog, capfd):
    caplog.set_level(logging.DEBUG)
    secrets = [TOKEN, SECRET, API_TOKEN]
    evidence = (SEEDS / "001_truss_shmdt.txt").read_text()
    with running_harness(tmp_path, api_token=API_TOKEN) as bot:
        _exercise_the_bot(bot, evidence)
        http = bot.server.http
        token = TOKEN_RE.search(http.get("/login").text)[1]
        http.post("/login", data={"csrf_token": token, "name": "bob", "token": API_TOKEN})
        http.post("/login", data={"csrf_token": token, "name": "bob", "token": TOKEN})
        body = entry_json("logged-entry")
        auth = {"Authorization": f"Bearer {API_TOKEN}"}
        assert http.post("/api/entries", json=body, headers=auth).status_code == 201
        http.post("/api/entries", json=body, headers={"Authorization": f"Bearer {TOKEN}"})
        bot.drain()
    out, err = capfd.readouterr()
    logged = caplog.text + out + err
    assert len(caplog.records) > 50  # the flows above really logged, at DEBUG, including the
    # Web API client and the HTTP layer that carry the token in their requests
    assert {"perfkb.bot", "perfkb.bot.webapi", "httpcore.http11"} <= {
        r.name for r in caplog.records
    }
    for secret in secrets:
        assert secret not in logged
        assert secret.split("-")[-1] not in logged  # not even the tail


def _exercise_the_bot(bot: Harness, evidence: str) -> None:
    """Messages, files, failures and refusals: every path that logs something."""
    n = iter(range(1, 1000))

    def message(channel: str, text: str, **extra: Any) -> str:
        ts = f"1700006000.{next(n):06d}"
        event = {"type": "message", "channel": channel, "channel_type": "channel",
                 "user": "U0ALICE", "text": text, "ts": ts, **extra}  # fmt: skip
        bot.server.send_event(event)
        return ts

    bot.wait_reply("C0LOG1", message("C0LOG1", f"```\n{evidence}```"))
    bot.stub.fail_once("chat.postMessage", "invalid_auth")
    message("C0LOG2", f"```\n{evidence}```")
    bot.stub.ratelimit_once("chat.postMessage", 0)
    bot.wait_reply("C0LOG3", message("C0LOG3", f"```\n{evidence}```"))
    good = bot.stub.add_file("ok.txt", evidence.encode())
    bot.wait_reply("C0LOG4", message("C0LOG4", "", subtype="file_share", files=[good]))
    binary = bot.stub.add_file("core.txt", b"\x00" * 100)
    bot.wait_reply("C0LOG5", message("C0LOG5", "", subtype="file_share", files=[binary]))
    with SlackStub() as elsewhere:
        away = bot.stub.add_file("away.txt", b"x", redirect_to=f"{elsewhere.url}/steal")
        bot.wait_reply("C0LOG6", message("C0LOG6", "", subtype="file_share", files=[away]))
    event = {"type": "file_shared", "file_id": "F0MISSING", "user_id": "U0ALICE"}
    bot.server.send_event({**event, "channel_id": "C0LOG7", "event_ts": "1700006999.1"})
    bot.wait_reply("C0LOG7")
    bad_signature = bot.server.send_event({"type": "message"}, secret="not-the-secret")
    assert bad_signature.status_code == 401
