"""A local stand-in for Slack, for the bot's end-to-end tests.

`SlackStub` is a stdlib HTTP server on 127.0.0.1 (free port) that plays the Web API at
`{url}/api/`: it records every call (HTTP method, path, headers, query/form/JSON body), answers
ok:true with plausible payloads, serves uploaded files that require a bot token, takes
response_url posts, and can be told to answer one call with 429 + Retry-After or an error.

`BotServer` runs a FastAPI app with uvicorn on a free port, and `signed_post` sends requests
signed the way Slack signs them. Nothing here reaches the network.
"""

from __future__ import annotations

import json
import shutil
import socket
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import httpx
import uvicorn
import yaml
from slack_sdk.signature import SignatureVerifier

TEAM = "T0TEST"
BOT_USER = "UBOT0001"
BOT_ID = "BBOT0001"


@dataclass
class Call:
    http_method: str
    path: str
    headers: dict[str, str]
    body: dict[str, Any]
    status: int = 200
    response: dict[str, Any] = field(default_factory=dict)

    @property
    def api(self) -> str | None:
        """'chat.postMessage' for /api/chat.postMessage, else None."""
        return self.path.removeprefix("/api/") if self.path.startswith("/api/") else None


@dataclass
class StubFile:
    id: str
    name: str
    content: bytes
    mimetype: str = "text/plain"
    filetype: str = "text"
    channel: str = ""
    ts: str = ""
    send_length: bool = True
    redirect_to: str = ""
    extra: dict[str, Any] = field(default_factory=dict)


class SlackStub:
    def __init__(self) -> None:
        self.calls: list[Call] = []
        self.files: dict[str, StubFile] = {}
        self.threads: dict[tuple[str, str], list[dict[str, Any]]] = {}
        self._ratelimit: dict[str, int] = {}
        self._fail: dict[str, str] = {}
        self._cond = threading.Condition()
        self._ts = 0
        stub = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:  # keep test output quiet
                pass

            def do_GET(self) -> None:
                stub._handle(self)

            def do_POST(self) -> None:
                stub._handle(self)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.api_url = self.url + "/api/"
        self._thread = threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    # -- lifecycle -------------------------------------------------------------------------------

    def start(self) -> SlackStub:
        self._thread.start()
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def __enter__(self) -> SlackStub:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- test controls ---------------------------------------------------------------------------

    def ratelimit_once(self, api: str, retry_after: int = 0) -> None:
        """The next call of `api` gets HTTP 429 with this Retry-After."""
        self._ratelimit[api] = retry_after

    def fail_once(self, api: str, error: str) -> None:
        """The next call of `api` answers ok:false with `error`."""
        self._fail[api] = error

    def add_file(self, name: str, content: bytes, **kwargs: Any) -> dict[str, Any]:
        """Register an uploaded file; returns its Slack file object (as files.info gives it)."""
        f = StubFile(id="F" + uuid.uuid4().hex[:10].upper(), name=name, content=content, **kwargs)
        self.files[f.id] = f
        return self.file_object(f)

    def file_object(self, f: StubFile) -> dict[str, Any]:
        obj: dict[str, Any] = {
            "id": f.id,
            "name": f.name,
            "title": f.name,
            "mimetype": f.mimetype,
            "filetype": f.filetype,
            "size": len(f.content),
            "mode": "hosted",
            "url_private": f"{self.url}/files-pri/{TEAM}-{f.id}/{f.name}",
            "url_private_download": f"{self.url}/files-pri/{TEAM}-{f.id}/download/{f.name}",
            "shares": {},
        }
        if f.channel and f.ts:
            kind = "private" if f.channel.startswith(("G", "D")) else "public"
            obj["shares"] = {kind: {f.channel: [{"ts": f.ts, "channel_name": "incidents"}]}}
        obj.update(f.extra)
        return obj

    def set_thread(self, channel: str, ts: str, messages: list[dict[str, Any]]) -> None:
        self.threads[(channel, ts)] = messages

    def response_url(self, name: str = "cmd") -> str:
        return f"{self.url}/response/{name}"

    # -- inspection ------------------------------------------------------------------------------

    def api_calls(self, api: str) -> list[Call]:
        with self._cond:
            return [c for c in self.calls if c.api == api and c.status == 200]

    def wait_for(
        self,
        api: str | None = None,
        where: Callable[[Call], bool] | None = None,
        *,
        path_prefix: str | None = None,
        count: int = 1,
        timeout: float = 15.0,
    ) -> list[Call]:
        """Block until `count` recorded calls satisfy the filters; AssertionError on timeout."""

        def matching() -> list[Call]:
            return [
                c
                for c in self.calls
                if (api is None or c.api == api)
                and (path_prefix is None or c.path.startswith(path_prefix))
                and c.status == 200
                and (where is None or where(c))
            ]

        deadline = time.monotonic() + timeout
        with self._cond:
            while len(found := matching()) < count:
                left = deadline - time.monotonic()
                if left <= 0:
                    seen = [(c.http_method, c.path) for c in self.calls]
                    raise AssertionError(
                        f"waited {timeout}s for {count}× {api or path_prefix}; saw {seen}"
                    )
                self._cond.wait(left)
            return found

    # -- serving ---------------------------------------------------------------------------------

    def _record(self, call: Call) -> None:
        with self._cond:
            self.calls.append(call)
            self._cond.notify_all()

    def _next_ts(self) -> str:
        with self._cond:
            self._ts += 1
            return f"{1_800_000_000 + self._ts}.{self._ts:06d}"

    def _handle(self, h: BaseHTTPRequestHandler) -> None:
        parts = urlsplit(h.path)
        length = int(h.headers.get("content-length") or 0)
        raw = h.rfile.read(length) if length else b""
        body: dict[str, Any] = dict(parse_qsl(parts.query))
        ctype = h.headers.get("content-type", "")
        if raw and "json" in ctype:
            body.update(json.loads(raw))
        elif raw:
            body.update(parse_qsl(raw.decode()))
        headers = {k.lower(): v for k, v in h.headers.items()}
        call = Call(h.command, parts.path, headers, body)

        if parts.path.startswith("/files-pri/"):
            return self._serve_file(h, call)
        if parts.path.startswith("/response/"):
            self._record(call)
            return self._send(h, 200, b"ok", "text/plain")
        api = call.api or ""
        if api in self._ratelimit:
            retry_after = self._ratelimit.pop(api)
            call.status = 429
            self._record(call)
            payload = json.dumps({"ok": False, "error": "ratelimited"}).encode()
            return self._send(h, 429, payload, extra={"Retry-After": str(retry_after)})
        auth = headers.get("authorization", "")
        if not auth.startswith(("Bearer xox", "Bearer xapp-")):
            self._record(call)
            return self._json(h, {"ok": False, "error": "not_authed"})
        if api in self._fail:
            call.response = {"ok": False, "error": self._fail.pop(api)}
        else:
            call.response = self._answer(api, body)
        self._record(call)
        return self._json(h, call.response)

    def _answer(self, api: str, body: dict[str, Any]) -> dict[str, Any]:
        if api == "auth.test":
            return {
                "ok": True,
                "url": "https://perfkb-test.slack.com/",
                "team": "perfkb-test",
                "user": "perfkb",
                "team_id": TEAM,
                "user_id": BOT_USER,
                "bot_id": BOT_ID,
                "is_enterprise_install": False,
            }
        if api == "chat.postMessage":
            ts = self._next_ts()
            message = {"type": "message", "user": BOT_USER, "bot_id": BOT_ID, "ts": ts}
            message.update({k: body[k] for k in ("text", "blocks", "thread_ts") if k in body})
            return {"ok": True, "channel": body.get("channel"), "ts": ts, "message": message}
        if api == "chat.update":
            return {"ok": True, "channel": body.get("channel"), "ts": body.get("ts")}
        if api == "chat.postEphemeral":
            return {"ok": True, "message_ts": self._next_ts()}
        if api in ("views.open", "views.update", "views.push"):
            view = body.get("view")
            view = json.loads(view) if isinstance(view, str) else (view or {})
            return {"ok": True, "view": {"id": "V" + uuid.uuid4().hex[:8].upper(), **view}}
        if api == "files.info":
            f = self.files.get(str(body.get("file")))
            if f is None:
                return {"ok": False, "error": "file_not_found"}
            return {"ok": True, "file": self.file_object(f)}
        if api in ("conversations.replies", "conversations.history"):
            key = (str(body.get("channel")), str(body.get("ts", "")))
            return {"ok": True, "messages": self.threads.get(key, []), "has_more": False}
        return {"ok": True}

    def _serve_file(self, h: BaseHTTPRequestHandler, call: Call) -> None:
        self._record(call)
        if not call.headers.get("authorization", "").startswith("Bearer xoxb-"):
            page = b"<!DOCTYPE html><html><body>Sign in to Slack</body></html>"
            return self._send(h, 200, page, "text/html; charset=utf-8")
        file_id = call.path.split("/")[2].removeprefix(f"{TEAM}-")
        f = self.files.get(file_id)
        if f is None:
            return self._send(h, 404, b"not found", "text/plain")
        if f.redirect_to:
            return self._send(h, 302, b"", "text/plain", extra={"Location": f.redirect_to})
        if f.send_length:
            return self._send(h, 200, f.content, f.mimetype)
        # No Content-Length: the body runs until the connection closes.
        h.send_response(200)
        h.send_header("Content-Type", f.mimetype)
        h.send_header("Connection", "close")
        h.end_headers()
        h.close_connection = True
        with suppress(BrokenPipeError, ConnectionResetError):  # the client stopped at its cap
            h.wfile.write(f.content)

    def _json(self, h: BaseHTTPRequestHandler, payload: dict[str, Any]) -> None:
        self._send(h, 200, json.dumps(payload).encode(), "application/json; charset=utf-8")

    def _send(
        self,
        h: BaseHTTPRequestHandler,
        status: int,
        payload: bytes,
        ctype: str = "application/json; charset=utf-8",
        extra: dict[str, str] | None = None,
    ) -> None:
        h.send_response(status)
        h.send_header("Content-Type", ctype)
        h.send_header("Content-Length", str(len(payload)))
        for k, v in (extra or {}).items():
            h.send_header(k, v)
        h.end_headers()
        with suppress(BrokenPipeError, ConnectionResetError):
            h.wfile.write(payload)


# -- signed requests to the app under test ----------------------------------------------------------


def signed_headers(secret: str, body: str, *, timestamp: int | None = None) -> dict[str, str]:
    ts = str(int(time.time()) if timestamp is None else timestamp)
    return {
        "X-Slack-Request-Timestamp": ts,
        "X-Slack-Signature": SignatureVerifier(secret).generate_signature(timestamp=ts, body=body),
    }


def event_payload(event: dict[str, Any], event_id: str | None = None) -> dict[str, Any]:
    return {
        "token": "legacy-verification-token",
        "team_id": TEAM,
        "api_app_id": "A0TEST",
        "type": "event_callback",
        "event_id": event_id or "Ev" + uuid.uuid4().hex[:12].upper(),
        "event_time": int(time.time()),
        "event": event,
        "authorizations": [{"team_id": TEAM, "user_id": BOT_USER, "is_bot": True}],
    }


def free_socket() -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    return sock


class BotServer:
    """A FastAPI app served by uvicorn in a thread, plus helpers to talk to it like Slack."""

    def __init__(self, app: Any, secret: str) -> None:
        self.app = app
        self.secret = secret
        self._sock = free_socket()
        self.url = f"http://127.0.0.1:{self._sock.getsockname()[1]}"
        config = uvicorn.Config(app, log_level="warning", lifespan="on")
        self.server = uvicorn.Server(config)
        self._thread = threading.Thread(
            target=self.server.run, kwargs={"sockets": [self._sock]}, daemon=True
        )
        self.http = httpx.Client(base_url=self.url, timeout=30)

    def __enter__(self) -> BotServer:
        self._thread.start()
        deadline = time.monotonic() + 15
        while not self.server.started:
            if time.monotonic() > deadline or not self._thread.is_alive():
                raise RuntimeError("uvicorn did not start")
            time.sleep(0.01)
        return self

    def __exit__(self, *exc: object) -> None:
        self.http.close()
        self.server.should_exit = True
        self._thread.join(timeout=15)
        self._sock.close()

    def post_signed(
        self,
        body: str,
        content_type: str,
        *,
        secret: str | None = None,
        timestamp: int | None = None,
        headers: dict[str, str] | None = None,
        path: str = "/slack/events",
    ) -> httpx.Response:
        all_headers = {"Content-Type": content_type}
        all_headers.update(signed_headers(secret or self.secret, body, timestamp=timestamp))
        all_headers.update(headers or {})
        return self.http.post(path, content=body.encode(), headers=all_headers)

    def send_event(
        self, event: dict[str, Any], *, event_id: str | None = None, **kwargs: Any
    ) -> httpx.Response:
        body = json.dumps(event_payload(event, event_id))
        return self.post_signed(body, "application/json", **kwargs)

    def send_form(self, fields: dict[str, str], **kwargs: Any) -> httpx.Response:
        return self.post_signed(
            httpx.QueryParams(fields).__str__(), "application/x-www-form-urlencoded", **kwargs
        )

    def send_interaction(self, payload: dict[str, Any], **kwargs: Any) -> httpx.Response:
        return self.send_form({"payload": json.dumps(payload)}, **kwargs)


# -- the whole thing: stub Slack + the real web app with the bot mounted ----------------------------

TOKEN = "xoxb-0000000000-1111111111-perfkbtesttoken"
SECRET = "8f742231b10e8888abcd99yyyzzz85a5"
ENTRIES_DIR = Path(__file__).resolve().parent.parent / "kb" / "entries"


@dataclass
class Harness:
    stub: SlackStub
    server: BotServer
    settings: Any
    app: Any

    @property
    def store(self) -> Any:
        return self.app.state.web.store

    @property
    def bolt(self) -> Any:
        return self.app.state.slack_app

    def drain(self) -> None:
        """Wait until every lazy listener started so far has finished (ends the bot's pool)."""
        self.bolt.listener_runner.listener_executor.shutdown(wait=True)

    def replies(self, channel: str, thread_ts: str | None = None) -> list[Call]:
        return [
            c
            for c in self.stub.api_calls("chat.postMessage")
            if c.body.get("channel") == channel
            and (thread_ts is None or c.body.get("thread_ts") == thread_ts)
        ]

    def wait_reply(self, channel: str, thread_ts: str | None = None, **kw: Any) -> Call:
        def hit(c: Call) -> bool:
            return c.body.get("channel") == channel and (
                thread_ts is None or c.body.get("thread_ts") == thread_ts
            )

        return self.stub.wait_for("chat.postMessage", hit, **kw)[0]


def seed_entries(store: Any) -> list[str]:
    """The packaged seed entries, as `perfkb init` would load them."""
    from kb.models import validate_entry

    ids = []
    with store.bulk():
        for path in sorted(ENTRIES_DIR.glob("*.yaml")):
            data = yaml.safe_load(path.read_text(encoding="utf-8"))
            entry = validate_entry(data, source=path.name)
            store.upsert(entry, author="seed")
            ids.append(entry.id)
    return ids


def make_settings(data_dir: Path, stub: SlackStub | None, **overrides: Any) -> Any:
    from kb.settings import Settings

    values: dict[str, Any] = {
        "data_dir": data_dir,
        "base_url": "http://kb.test",
        "SLACK_BOT_TOKEN": TOKEN,
        "SLACK_SIGNING_SECRET": SECRET,
        "SLACK_APP_TOKEN": None,
        "SLACK_API_URL": stub.api_url if stub else "https://slack.com/api/",
    }
    values.update(overrides)
    return Settings(**values)


_template: Path | None = None
_template_lock = threading.Lock()


def seeded_data_dir(dest: Path) -> Path:
    """A data dir holding the seeded store: built once per test session, then copied (seeding
    indexes every entry, copying is a few file copies)."""
    global _template
    from kb.store import Store

    with _template_lock:
        if _template is None:
            template = Path(tempfile.mkdtemp(prefix="perfkb-bot-seeded-"))
            store = Store(make_settings(template, None))
            try:
                seed_entries(store)
            finally:
                store.close()
            _template = template
    shutil.copytree(_template, dest, dirs_exist_ok=True)
    return dest


@contextmanager
def running_harness(data_dir: Path, **overrides: Any) -> Iterator[Harness]:
    """Stub Slack, the seeded store, and kb.web.app.create_app (bot mounted) under uvicorn."""
    from kb.web.app import create_app

    with SlackStub() as stub:
        settings = make_settings(seeded_data_dir(data_dir), stub, **overrides)
        app = create_app(settings)
        with BotServer(app, SECRET) as server:
            harness = Harness(stub, server, settings, app)
            try:
                yield harness
            finally:
                if harness.bolt is not None:
                    harness.drain()
