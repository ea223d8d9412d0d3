"""Fetch an uploaded Slack file as a stream of text, whole lines at a time, safely.

The bot token goes only to Slack's file host or to the host of the configured Web API URL (a
self-hosted stub or proxy): a `url_private` naming any other host is refused before a byte is
sent, and so is a redirect leaving the allow-list, so a crafted event cannot make the bot call
internal services (SSRF) or leak its token. The body is read in chunks and decoded
incrementally, so a 50 MB capture never sits in memory; the size cap holds even when the server
does not announce a length.
"""

from __future__ import annotations

import codecs
from collections.abc import Iterator
from urllib.parse import urljoin, urlsplit

import httpx

from bot.escape import code

SLACK_FILE_HOSTS = frozenset({"files.slack.com"})
MAX_REDIRECTS = 3
CHUNK = 64 * 1024
MAX_LINE = 1024 * 1024  # the parsers cut lines far shorter; this only bounds memory
TIMEOUT_S = 30.0


class DownloadError(Exception):
    """A file could not be fetched; str(e) is a short message fit to show the user."""


class FileTooLarge(DownloadError):
    pass


def human_size(n: int) -> str:
    size = float(n)
    for unit in ("bytes", "KB", "MB", "GB"):
        if size < 1024 or unit == "GB":
            return f"{size:.0f} {unit}" if unit == "bytes" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{n} bytes"  # pragma: no cover - loop always returns


def too_large_message(name: str, size: int | None, cap: int) -> str:
    seen = f"is {human_size(size)}" if size else "is larger than that"
    return (
        f"`{name}` {seen}; perfkb reads files up to {human_size(cap)} "
        "(PERFKB_MAX_FILE_BYTES). Trim the capture to the interesting part, or ask an admin "
        "to raise the limit."
    )


def allowed_url(url: str, api_url: str) -> bool:
    """True when `url` may receive the bot token: https on Slack's file host, or the scheme and
    host of the configured Web API URL."""
    try:
        parts = urlsplit(url)
        api = urlsplit(api_url)
        port = parts.port  # raises ValueError on a malformed port
    except ValueError:
        return False
    if parts.username or parts.password or not parts.hostname:
        return False
    host = parts.hostname.lower()
    if parts.scheme == "https" and host in SLACK_FILE_HOSTS and port in (None, 443):
        return True
    api_host = (api.hostname or "").lower()
    return bool(api_host) and (parts.scheme, host, port) == (api.scheme, api_host, api.port)


def iter_text(
    url: str,
    *,
    token: str,
    api_url: str,
    max_bytes: int,
    name: str = "file",
    expect_html: bool = False,
) -> Iterator[str]:
    """Yield the file's text as it arrives, in pieces of whole lines (each ending in "\n" but
    the file's last line, CRLF read as LF, a line longer than MAX_LINE cut there): what
    kb.analysis.analyze_chunks takes.

    Raises DownloadError (or FileTooLarge) with a message for people. The generator must be
    consumed or closed for the connection to be released; closing it early is fine.
    """
    if not allowed_url(url, api_url):
        host = urlsplit(url).hostname or "?"
        raise DownloadError(f"`{name}` is hosted on `{code(host)}`, which is not Slack's file host")
    headers = {"Authorization": f"Bearer {token}"}
    with httpx.Client(timeout=TIMEOUT_S, follow_redirects=False) as client:
        for _ in range(MAX_REDIRECTS + 1):
            try:
                with client.stream("GET", url, headers=headers) as resp:
                    if resp.is_redirect:
                        target = urljoin(url, resp.headers.get("location", ""))
                        if not allowed_url(target, api_url):
                            raise DownloadError(
                                f"Slack redirected the download of `{name}` off its file host"
                            )
                        url = target
                        continue
                    _check_response(resp, name, max_bytes, expect_html)
                    yield from decode_text(resp.iter_bytes(CHUNK), name, max_bytes)
                    return
            except httpx.HTTPError as exc:
                raise DownloadError(
                    f"could not download `{name}` from Slack ({type(exc).__name__})"
                ) from None
    raise DownloadError(f"too many redirects while downloading `{name}`")


def _check_response(resp: httpx.Response, name: str, max_bytes: int, expect_html: bool) -> None:
    if resp.status_code in (401, 403):
        raise DownloadError(
            f"Slack refused the download of `{name}` (HTTP {resp.status_code}): "
            "the bot needs the files:read scope"
        )
    if resp.status_code != 200:
        raise DownloadError(f"Slack answered HTTP {resp.status_code} for `{name}`")
    length = resp.headers.get("content-length", "")
    if length.isdigit() and int(length) > max_bytes:
        raise FileTooLarge(too_large_message(name, int(length), max_bytes))
    ctype = resp.headers.get("content-type", "").lower()
    if "text/html" in ctype and not expect_html:
        # Slack serves its login page instead of the file when the token lacks access.
        raise DownloadError(
            f"Slack sent a web page instead of `{name}`: the bot cannot read this file "
            "(files:read scope, or the file is not shared where the bot is)"
        )


def decode_text(chunks: Iterator[bytes], name: str, max_bytes: int) -> Iterator[str]:
    """Decoded chunks as pieces of whole lines: the lines a chunk ends are handed on in one
    piece, so memory stays bounded by the chunk size plus the line still open, which keeps
    its first MAX_LINE characters only. Why pieces, not lines: splitting a 10 MB capture into
    its 138k lines here, and joining them again for the batch parser, took ~70 ms of CPU, half
    of what analysing it takes."""
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    received = 0
    head: list[str] = []  # pieces of the line still open
    head_len = 0
    first = True
    for chunk in chunks:
        received += len(chunk)
        if received > max_bytes:
            raise FileTooLarge(too_large_message(name, None, max_bytes))
        if first and b"\x00" in chunk[:8192]:
            raise DownloadError(f"`{name}` looks like a binary file; perfkb reads text captures")
        first = False
        text = decoder.decode(chunk)
        end = text.find("\n")
        if end < 0:
            head_len = _grow(head, head_len, text)
            continue
        _grow(head, head_len, text[:end])
        last = text.rfind("\n")
        middle = text[end : last + 1]  # the lines this chunk holds whole, after the open one
        if len(middle) > MAX_LINE:  # a chunk longer than a line may be: cut each line
            middle = "\n".join(line[:MAX_LINE] for line in middle.split("\n"))
        piece = "".join(head) + middle
        yield piece.replace("\r\n", "\n") if "\r" in piece else piece
        head = []
        head_len = _grow(head, 0, text[last + 1 :])
    head_len = _grow(head, head_len, decoder.decode(b"", final=True))
    tail = "".join(head)
    if tail:
        yield tail.removesuffix("\r")


def _grow(head: list[str], head_len: int, piece: str) -> int:
    """Add `piece` to the open line `head` (`head_len` characters so far) up to MAX_LINE
    characters; the open line's new length."""
    if head_len < MAX_LINE and piece:
        head.append(piece[: MAX_LINE - head_len])
        head_len += len(head[-1])
    return head_len
