"""The HTTP protocol `perfkb serve` runs: uvicorn's own, with a cap on request heads.

uvicorn's httptools protocol accepts request heads of any size (a 200 MB header was taken in
whole, the server grew by 390 MB and other clients froze for up to 17 s), and its h11 protocol
answers an over-long head with a bare 400. The cap has to act before the parser sees the bytes:
httptools accumulates a header in memory until it is complete, and an ASGI middleware only runs
once the whole head has been parsed. So `data_received` counts the bytes and lines of each
request head (up to the blank line that ends it) and answers 431 with the limit, then closes,
once the head is over PERFKB_MAX_HEADER_BYTES or has more than PERFKB_MAX_HEADERS lines.
The count starts again when the protocol's own parser says a request's *message* is complete
(httptools' on_message_complete; h11's state for the client back at IDLE or DONE), not when our
response is: a server may answer early (413 while a chunked upload is still coming in) and keep
the connection, and the rest of that body was then counted as the next request's head, which got
a 431 (tests/test_web_limits.py). Bodies are not counted here (kb/web/limits.py caps them); while a request is served uvicorn
stops reading the socket once 64 KB wait unread, so a client cannot slip a head past the count
by sending it early.
"""

from __future__ import annotations

import asyncio
from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

from kb.settings import Settings, get_settings

try:  # uvicorn's "auto" choice: httptools when it is installed, else h11
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
except ImportError:  # pragma: no cover - httptools is a dependency of uvicorn[standard]
    HttpToolsProtocol = None  # type: ignore[assignment,misc]

HEAD_END = b"\r\n\r\n"


def too_large_head_message(settings: Settings) -> str:
    return (
        f"The request's headers are larger than this server accepts (at most "
        f"{settings.max_header_bytes // 1024} KB and {settings.max_headers} header lines)."
    )


class HeadCap:
    """Mixed into a uvicorn HTTP protocol class ahead of it: counts each request head's bytes
    and lines before the protocol's parser sees them, and refuses an oversized one with 431."""

    transport: asyncio.Transport

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        settings = get_settings()
        self._max_head = settings.max_header_bytes
        self._max_lines = settings.max_headers + 1  # the request line
        self._head_message = too_large_head_message(settings)
        self._start_head()
        self._refused = False

    def _start_head(self) -> None:
        self._in_head = True
        self._head_bytes = 0
        self._head_lines = 0
        self._tail = b""  # the last bytes seen, so a blank line split across reads is found

    def data_received(self, data: bytes) -> None:
        if self._refused:
            return
        if self._in_head:
            seen = self._tail + data
            end = seen.find(HEAD_END)
            head = seen[len(self._tail) : end + len(HEAD_END)] if end >= 0 else data
            self._head_bytes += len(head)
            self._head_lines += head.count(b"\n")
            if self._head_bytes > self._max_head or self._head_lines > self._max_lines:
                self._refuse()
                return
            if end >= 0:
                self._in_head = False
            else:
                self._tail = seen[-(len(HEAD_END) - 1) :]
        super().data_received(data)  # type: ignore[misc]

    def _message_complete(self) -> None:
        """The parser has read the whole request, body included: what comes next is a head."""
        if not self._in_head:
            self._start_head()

    def _refuse(self) -> None:
        self._refused = True
        body = self._head_message.encode()
        self.transport.write(
            b"HTTP/1.1 431 Request Header Fields Too Large\r\n"
            b"content-type: text/plain; charset=utf-8\r\n"
            b"content-length: " + str(len(body)).encode() + b"\r\n"
            b"connection: close\r\n\r\n" + body
        )
        self.transport.close()


class CappedH11Protocol(HeadCap, H11Protocol):
    """uvicorn's h11 protocol with the head cap."""

    def handle_events(self) -> None:
        super().handle_events()
        if self.conn.their_state in (h11.IDLE, h11.DONE):
            self._message_complete()


if HttpToolsProtocol is not None:

    class CappedHttpToolsProtocol(HeadCap, HttpToolsProtocol):
        """uvicorn's httptools protocol with the head cap."""

        def on_message_complete(self) -> None:
            self._message_complete()
            super().on_message_complete()

    HTTP_PROTOCOL: type[asyncio.Protocol] = CappedHttpToolsProtocol
else:  # pragma: no cover
    HTTP_PROTOCOL = CappedH11Protocol
