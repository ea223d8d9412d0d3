"""What one request may cost the real server (`python -m kb serve`): request heads are capped
(431 with the limit, before the parser buffers them), urlencoded form bodies are capped before
they are read and decoded in memory linear in their size (they are parsed before any login or
CSRF check), measured from the server's own /proc figures."""

from __future__ import annotations

import contextlib
import re
import socket
import threading
import time
from pathlib import Path

import httpx
import pytest
from server_helpers import cpu_seconds, rss_kb, serve, server_timing

from kb.settings import Settings
from kb.web.devserver import running_server
from kb.web.forms import parse_urlencoded
from kb.web.server import CappedH11Protocol

DEFAULTS = Settings()


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with serve(tmp_path_factory.mktemp("limits") / "kb") as srv:
        yield srv


def _raw(server, head: bytes, *, timeout: float = 30) -> bytes:
    """Send `head` on a fresh connection and read the answer until the server closes it."""
    with socket.create_connection(("127.0.0.1", server.port), timeout=timeout) as sock:
        sock.sendall(head)
        chunks = []
        while chunk := sock.recv(65536):
            chunks.append(chunk)
    return b"".join(chunks)


def _get(extra: list[tuple[str, str]]) -> bytes:
    lines = ["GET /api/search?q=shmdt HTTP/1.1", "Host: 127.0.0.1", "Connection: close"]
    lines += [f"{k}: {v}" for k, v in extra]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def test_an_oversized_request_head_is_refused_with_431(server):
    limit = DEFAULTS.max_header_bytes
    ok = _raw(server, _get([("Cookie", "c=" + "x" * (limit // 2))]))
    assert ok.startswith(b"HTTP/1.1 200"), ok[:200]
    one_big = _raw(server, _get([("X-Big", "x" * (limit + 1))]))
    assert one_big.startswith(b"HTTP/1.1 431"), one_big[:200]
    assert f"{limit // 1024} KB".encode() in one_big
    many = _raw(server, _get([(f"X-H{i}", "1") for i in range(DEFAULTS.max_headers + 5)]))
    assert many.startswith(b"HTTP/1.1 431"), many[:200]
    assert f"{DEFAULTS.max_headers} header lines".encode() in many
    near = _raw(server, _get([(f"X-H{i}", "1") for i in range(DEFAULTS.max_headers - 10)]))
    assert near.startswith(b"HTTP/1.1 200"), near[:200]


def test_each_request_on_a_kept_alive_connection_gets_its_own_head_budget(server):
    limit = DEFAULTS.max_header_bytes
    head = (
        "GET /api/search?q=shmdt HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        f"X-Fill: {'y' * (limit * 2 // 3)}\r\n\r\n"
    ).encode()
    with socket.create_connection(("127.0.0.1", server.port), timeout=30) as sock:
        for _ in range(3):  # together three times the cap, each under it
            sock.sendall(head)
            answer = b""
            while b"\r\n\r\n" not in answer:
                answer += sock.recv(65536)
            assert answer.startswith(b"HTTP/1.1 200"), answer[:200]
            length = int(answer.lower().split(b"content-length: ")[1].split(b"\r\n")[0])
            body = answer.split(b"\r\n\r\n", 1)[1]
            while len(body) < length:
                body += sock.recv(65536)


def test_a_huge_header_is_cut_off_early_and_costs_the_server_nothing(server):
    """The probe's 200 MB header: the server answers 431 and hangs up after the cap, so the
    client cannot even send most of it, and the server's memory does not move."""
    before = rss_kb(server.proc.pid)
    sent = 0
    chunk = b"y" * 65536
    refused = b""
    with socket.create_connection(("127.0.0.1", server.port), timeout=30) as sock:
        sock.sendall(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Huge: ")
        try:
            while sent < 200 * 1024 * 1024:
                sock.sendall(chunk)
                sent += len(chunk)
        except (BrokenPipeError, ConnectionResetError):
            pass
        with contextlib.suppress(ConnectionResetError):
            refused = sock.recv(65536)
    assert sent < 50 * 1024 * 1024, sent  # cut off long before the 200 MB were taken in
    assert not refused or refused.startswith(b"HTTP/1.1 431"), refused[:100]
    assert rss_kb(server.proc.pid) - before < 20 * 1024
    assert httpx.get(server.url + "/api/search?q=shmdt", timeout=10).status_code == 200


def test_a_large_percent_encoded_form_is_refused_before_it_is_read(server):
    """10 MB of `%7B` to /login: starlette decoded it with unquote_plus into ~90 times its size
    before any check. Now: 413 at once from Content-Length, or while streaming without one."""
    body = b"name=" + b"%7B" * (10 * 1024 * 1024 // 3)
    form = {"content-type": "application/x-www-form-urlencoded"}
    cpu = cpu_seconds(server.proc.pid)
    peak = rss_kb(server.proc.pid, "VmHWM")
    started = time.monotonic()
    r = httpx.post(server.url + "/login", content=body, headers=form, timeout=60)
    assert r.status_code == 413 and "MB" in r.text
    assert time.monotonic() - started < 5

    def stream():  # no Content-Length: the cap is counted while reading
        for i in range(0, len(body), 65536):
            yield body[i : i + 65536]

    r = httpx.post(server.url + "/entries/new", content=stream(), headers=form, timeout=60)
    assert r.status_code == 413
    # just under the form cap: read, decoded and answered (no login token configured: 401
    # or the login page), with memory near the body's own size
    under = b"name=" + b"%7B" * ((DEFAULTS.max_form_bytes - 100) // 3)
    r = httpx.post(server.url + "/login", content=under, headers=form, timeout=60)
    assert r.status_code in (401, 403), (r.status_code, r.text[:200])
    grown = rss_kb(server.proc.pid, "VmHWM") - peak
    assert grown < 80 * 1024, f"peak RSS grew by {grown // 1024} MB"
    assert cpu_seconds(server.proc.pid) - cpu < 10


def test_the_linear_form_decoder_agrees_with_urllib():
    from urllib.parse import parse_qsl, urlencode

    cases = [
        b"a=1&b=%7B%7d+x&c=&&d",
        b"x=%E2%82%AC%FF%2&y=%",
        b"%41=%&=%3D",
        urlencode({"t": "é" * 70_000 + "%&+ =€" * 30_000, "u": "x"}).encode(),  # escapes
        # cross the 64 KB slices at every offset of an escape
        b"v=" + b"a" * 65_534 + b"%41%42" + b"b" * 10,
        b"v=" + b"a" * 65_535 + b"%41%42" + b"b" * 10,
        b"v=" + b"a" * 65_536 + b"%41%42" + b"b" * 10,
    ]
    for body in cases:
        form = parse_urlencoded(body, max_fields=10, max_field_bytes=10**7)
        assert list(form.multi_items()) == parse_qsl(body.decode(), keep_blank_values=True)
    with pytest.raises(Exception, match="at most 3"):
        parse_urlencoded(b"a=1&b=2&c=3&d=4", max_fields=3, max_field_bytes=100)
    with pytest.raises(Exception, match="larger than"):
        parse_urlencoded(b"a=" + b"x" * 200, max_fields=3, max_field_bytes=100)


def test_limits_are_settings(tmp_path: Path, monkeypatch):
    monkeypatch.setenv("PERFKB_MAX_HEADER_BYTES", "4096")
    monkeypatch.setenv("PERFKB_MAX_FORM_BYTES", "1000")
    s = Settings()
    assert (s.max_header_bytes, s.max_form_bytes) == (4096, 1000)


SEEDS = Path(__file__).parent / "fixtures" / "seeds"
TOKEN_RE = re.compile(r'name="csrf_token" value="([^"]+)"')


def _mixed_paste(size: int) -> str:
    """The seed captures, each fenced, over and over: many small blocks of every format."""
    seeds = sorted(SEEDS.glob("0*.txt"))
    parts: list[str] = []
    total = 0
    while total < size:
        for path in seeds:
            part = f"```\n{path.read_text()}\n```\nprose between two captures\n"
            parts.append(part)
            total += len(part)
    return "".join(parts)


def test_an_analysis_page_shows_a_bounded_part_of_a_huge_paste(server):
    """1.5 MB of mixed captures (~1,300 blocks) made a 7.6 MB page: every block with its facts,
    charts and up to 20 KB of raw text. Now the first blocks in detail, then a list, then a
    count of the rest; the JSON answer still has every block."""
    text = _mixed_paste(1_500_000)
    with httpx.Client(base_url=server.url, timeout=120, follow_redirects=True) as client:
        token = TOKEN_RE.search(client.get("/analyze").text)[1]
        page = client.post(
            "/analyze",
            data={"csrf_token": token},
            files={"file": ("mixed.txt", text.encode(), "text/plain")},
        )
        assert page.status_code == 200, page.text[:300]
        assert len(page.content) < 1024 * 1024, len(page.content)
        assert page.text.count('<details class="block"') == 40
        answer = client.post("/api/analyze", json={"text": text}).json()
    blocks = len(answer["blocks"])
    assert blocks > 300
    assert f"the first 40 of {blocks} blocks in detail" in page.text
    assert f"{blocks - 240} further blocks are not shown" in page.text
    assert "perfkb analyze --json" in page.text


def test_analyses_queue_for_a_bounded_number_of_slots(tmp_path):
    """At most PERFKB_WEB_ANALYSES analyses run at once, and `perfkb serve`'s pool (one process
    here) admits one more per process, which waits in its queue (kb/web/state.py use_pool): it
    is answered once the running one ends, without a wait for a slot. A request beyond those
    that cannot get a slot within PERFKB_ANALYZE_QUEUE_SECONDS gets 503 saying the limit, and
    the slots free."""
    heavy = _mixed_paste(3_000_000)
    env = {
        "PERFKB_WEB_ANALYSES": "1",
        "PERFKB_ANALYSIS_PROCESSES": "1",
        "PERFKB_ANALYZE_QUEUE_SECONDS": "0.5",
    }
    small = {"text": (SEEDS / "001_truss_shmdt.txt").read_text()}
    with serve(tmp_path / "kb", env) as srv:
        outcome: dict[str, httpx.Response] = {}

        def post(name: str, body: dict) -> None:
            outcome[name] = httpx.post(srv.url + "/api/analyze", json=body, timeout=300)

        running = threading.Thread(target=post, args=("heavy", {"text": heavy}))
        waiting = threading.Thread(target=post, args=("beside", small))
        cpu = cpu_seconds(srv.proc.pid)
        running.start()
        time.sleep(0.3)
        waiting.start()
        time.sleep(0.2)
        busy = httpx.post(srv.url + "/api/analyze", json=small, timeout=60)
        running.join()
        waiting.join()
        assert outcome["heavy"].status_code == 200
        beside = outcome["beside"]
        assert beside.status_code == 200, beside.text[:300]
        timing = server_timing(beside)
        assert timing["queue"] < 250, timing  # ms: admitted at once, then waited its turn
        assert busy.status_code == 503, busy.text[:300]
        assert "at most 1 capture" in busy.json()["detail"]
        assert busy.headers["retry-after"] == "30"
        assert httpx.post(srv.url + "/api/analyze", json=small, timeout=60).status_code == 200
        assert cpu_seconds(srv.proc.pid) - cpu > 0.5  # the heavy analysis did run


def _read_response(sock: socket.socket, buf: bytearray) -> tuple[bytes, bytearray]:
    """One HTTP/1.1 response (head and Content-Length body) off a keep-alive socket."""
    while b"\r\n\r\n" not in buf:
        chunk = sock.recv(65536)
        assert chunk, f"the server closed the connection: {bytes(buf[:200])!r}"
        buf += chunk
    head, _, rest = bytes(buf).partition(b"\r\n\r\n")
    length = int(re.search(rb"(?i)content-length: *(\d+)", head).group(1))
    while len(rest) < length:
        chunk = sock.recv(65536)
        assert chunk, "the server closed the connection mid-body"
        rest += chunk
    return head, bytearray(rest[length:])


@pytest.fixture(scope="module", params=["httptools", "h11"])
def small_body_port(request, tmp_path_factory):
    """A server with a 256 KB body cap, so a streamed upload is refused while it is still coming
    in: `perfkb serve` itself (httptools), and in process with uvicorn's h11 fallback protocol."""
    cap = 256 * 1024
    data_dir = tmp_path_factory.mktemp(f"small-body-{request.param}") / "kb"
    if request.param == "httptools":
        with serve(data_dir, {"PERFKB_MAX_BODY_BYTES": str(cap)}) as srv:
            yield srv.port
    else:
        settings = Settings(data_dir=data_dir, max_body_bytes=cap)
        with running_server(settings, http=CappedH11Protocol) as url:
            yield int(url.rsplit(":", 1)[1])


def test_the_rest_of_a_refused_chunked_body_is_not_read_as_the_next_head(small_body_port):
    """The server answers 413 while a chunked upload is still coming in; the client finishes the
    body and sends its next request on the same keep-alive connection. The rest of that body
    (larger than the head cap, with no blank line in it) belongs to the refused request, so the
    next request must be served, not refused with 431 as if it were an oversized head."""
    limit = DEFAULTS.max_header_bytes
    chunk = b"x" * 16_000
    framed = b"%x\r\n%s\r\n" % (len(chunk), chunk)
    head = (
        b"POST /api/analyze HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        b"Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
    )
    rest = framed * (2 * limit // len(chunk) + 2)  # more than the head cap, no blank line
    # the body is a JSON object whose text runs to 640 KB, over the body cap
    sent: list[BaseException] = []

    def send_all(sock: socket.socket) -> None:
        # in a thread: the server answers before it has read the body, so a sender that waits
        # for all of it to be taken would never get to read the answer
        try:
            opening = b'{"text": "'
            sock.sendall(head + b"%x\r\n%s\r\n" % (len(opening), opening) + framed * 40)
            sock.sendall(rest + b"0\r\n\r\n")
            sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        except OSError as exc:
            sent.append(exc)

    with socket.create_connection(("127.0.0.1", small_body_port), timeout=30) as sock:
        sender = threading.Thread(target=send_all, args=(sock,))
        sender.start()
        first, buf = _read_response(sock, bytearray())
        assert first.startswith(b"HTTP/1.1 413"), first[:200]
        second, _ = _read_response(sock, buf)
        sender.join(30)
    assert second.startswith(b"HTTP/1.1 200"), second[:200]
    assert not sent, sent
