"""ASGI middleware: request body caps (413 with a clear message) and security headers; and
`while_connected`, which lets a search stop when its client hangs up."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any, TypeVar

import anyio
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from kb.search_query import SearchCancelled, search_cancelled
from kb.settings import Settings

T = TypeVar("T")

# Pages that accept file uploads get the larger file cap; everything else the body cap.
UPLOAD_PATHS = ("/analyze",)
URLENCODED = b"application/x-www-form-urlencoded"

CSP = (
    "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; "
    "object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)


class BodyTooLarge(HTTPException):
    """Raised from receive() while a route reads the body; an HTTPException so that FastAPI's
    body parsing passes it through instead of turning it into a 400."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        super().__init__(413, too_large_message(limit))


def too_large_message(limit: int) -> str:
    return (
        f"The request is larger than this server accepts ({limit / 1048576:.1f} MB). "
        "Trim the capture to the interesting part, or upload it as a file on /analyze."
    )


class BodyLimit:
    """Refuse bodies over the cap: at once from Content-Length, or while streaming."""

    def __init__(self, app: ASGIApp, settings: Settings) -> None:
        self.app = app
        self.settings = settings

    def limit_for(self, path: str, content_type: bytes = b"") -> int:
        if content_type.split(b";", 1)[0].strip().lower() == URLENCODED:
            # decoded all at once (kb/web/forms.py): no upload ever comes this way
            return min(self.settings.max_form_bytes, self.settings.max_body_bytes)
        if path in UPLOAD_PATHS:
            return max(self.settings.max_file_bytes, self.settings.max_body_bytes)
        return self.settings.max_body_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = dict(scope.get("headers") or [])
        limit = self.limit_for(scope["path"], headers.get(b"content-type", b""))
        declared = headers.get(b"content-length")
        if declared is not None:
            try:
                too_big = int(declared) > limit
            except ValueError:
                too_big = False
            if too_big:
                await _refuse(scope, send, limit)
                return
        received = 0

        async def capped_receive() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > limit:
                    raise BodyTooLarge(limit)
            return message

        await self.app(scope, capped_receive, send)


async def _refuse(scope: Scope, send: Send, limit: int) -> None:
    msg = too_large_message(limit)
    wants_json = scope["path"].startswith("/api") or scope["path"].startswith("/slack")
    if wants_json:
        body, ctype = json.dumps({"detail": msg}).encode(), b"application/json"
    else:
        from markupsafe import escape

        body = (
            "<!doctype html><meta charset=utf-8><title>Too large · perfkb</title>"
            f"<link rel=stylesheet href=/static/perfkb.css><main class=narrow><h1>Too large</h1>"
            f"<p>{escape(msg)}</p><p><a href=/analyze>Back to analyze</a></p></main>"
        ).encode()
        ctype = b"text/html; charset=utf-8"
    await send(
        {
            "type": "http.response.start",
            "status": 413,
            "headers": [
                (b"content-type", ctype),
                (b"content-length", str(len(body)).encode()),
                (b"connection", b"close"),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


class SecurityHeaders:
    """CSP without inline script or style, no framing, no MIME sniffing, same-origin referrers."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers") or [])
                names = {k.lower() for k, _ in headers}
                for k, v in (
                    (b"content-security-policy", CSP.encode()),
                    (b"x-content-type-options", b"nosniff"),
                    (b"x-frame-options", b"DENY"),
                    (b"referrer-policy", b"same-origin"),
                ):
                    if k not in names:
                        headers.append((k, v))
                message["headers"] = headers
            await send(message)

        await self.app(scope, receive, send_with_headers)


async def while_connected(request: Request, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """fn(*args, **kwargs) in a worker thread, with kb.search_query.search_cancelled set to an event
    that is set when the client disconnects: a search whose client left (one that hung up
    while it queued behind others, too) stops at its next check instead of finishing for
    nobody. A thread cannot be killed; without this, clients that hang up at once could pile
    up searches faster than the server finishes them."""
    cancel = threading.Event()
    error: Exception | None = None
    token = search_cancelled.set(cancel)

    def unless_gone() -> T:
        if cancel.is_set():  # the client left while this request waited for a thread or slot
            raise SearchCancelled("the client went away before the work started")
        return fn(*args, **kwargs)

    try:
        async with anyio.create_task_group() as tasks:

            async def watch() -> None:
                while True:
                    message = await request.receive()
                    if message["type"] == "http.disconnect":
                        cancel.set()
                        return

            tasks.start_soon(watch)
            await anyio.sleep(0)  # let the watcher see a disconnect that already happened
            try:
                result = await run_in_threadpool(unless_gone)
            except Exception as exc:  # raised outside the task group, not as an ExceptionGroup
                error = exc
            finally:
                tasks.cancel_scope.cancel()
    finally:
        search_cancelled.reset(token)
    if isinstance(error, SearchCancelled) or (error is not None and cancel.is_set()):
        # nobody is there to read the answer (a page's fallback search is cancelled too)
        raise HTTPException(400, "The request was cancelled: the client went away.")
    if error is not None:
        raise error
    return result


@dataclass
class SlotTiming:
    """How long a request waited for an analysis slot and then held it (seconds).

    Why: under concurrent clients a POST's latency is mostly the wait for a slot (analysis is
    CPU-bound and one process runs Python on one core at a time), not the analysis itself;
    the Server-Timing header built from this lets a client (benchmarks/scale.py) split the
    two without profiling the server."""

    queued: float = 0.0
    held: float = 0.0

    def header(self) -> str:
        """A Server-Timing value (W3C Server Timing; durations in milliseconds)."""
        return f"queue;dur={self.queued * 1000:.1f}, analyze;dur={self.held * 1000:.1f}"


@asynccontextmanager
async def analysis_slot(
    limiter: anyio.CapacityLimiter, settings: Settings
) -> AsyncIterator[SlotTiming]:
    """Hold one of the app's analysis slots (PERFKB_WEB_ANALYSES, and with analysis processes
    one more per process: WebState.use_pool) for the block. Analysis is
    CPU-bound (about 1 MB/s of evidence; a 49 MB upload cost 25 s of CPU) and open to anyone,
    so without a bound a few uploads took every core from everyone else. Requests wait for a
    slot up to PERFKB_ANALYZE_QUEUE_SECONDS, then get 503 saying so (and Retry-After). Yields
    the wait and, once the block ends, how long the slot was held."""
    timing = SlotTiming()
    asked = time.perf_counter()
    with anyio.move_on_after(settings.analyze_queue_seconds) as waited:
        await limiter.acquire()
    if waited.cancelled_caught:
        raise HTTPException(
            503,
            f"perfkb is busy: it analyses at most {settings.web_analyses} capture(s) at a time "
            f"and none finished within {settings.analyze_queue_seconds:g} s. Try again in a "
            "minute, or run `perfkb analyze FILE` on your own machine.",
            headers={"Retry-After": "30"},
        )
    got = time.perf_counter()
    timing.queued = got - asked
    try:
        yield timing
    finally:
        limiter.release()
        timing.held = time.perf_counter() - got
