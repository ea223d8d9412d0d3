"""Who may write. Reads are open; every write needs an identity:

- API: `Authorization: Bearer $PERFKB_API_TOKEN`.
- Pages: a trusted reverse-proxy header (PERFKB_PROXY_USER_HEADER, e.g. X-Forwarded-User from
  oauth2-proxy) or a login with the API token, kept in a signed cookie.
- Nothing configured: writes only from this machine (127.0.0.1 / ::1), and the pages say so.
"""

from __future__ import annotations

import hashlib
import hmac
import math
import re
import threading
import time
from collections import OrderedDict, deque
from typing import Literal
from urllib.parse import urlsplit

from fastapi import HTTPException, Request
from itsdangerous import BadSignature, URLSafeTimedSerializer
from pydantic import BaseModel

from kb.settings import Settings
from kb.web.state import web

SESSION_COOKIE = "perfkb_session"
SESSION_MAX_AGE_S = 12 * 3600
LOCAL_HOSTS = {"127.0.0.1", "::1", "::ffff:127.0.0.1"}
_UNSAFE_NAME = re.compile(r"[\x00-\x1f\x7f]")

# Wrong tokens (login form or API bearer) allowed per client address in a sliding window;
# beyond that, 429 with Retry-After until the oldest failure leaves the window. Without it a
# client could try ~890 tokens a second. Per worker process, kept in memory (docs/security.md).
LOGIN_FAILURES_ALLOWED = 10
LOGIN_WINDOW_S = 60.0
LOGIN_TRACKED_CLIENTS = 10_000  # addresses remembered at once (oldest forgotten first)


class LoginThrottle:
    """Failed token attempts per client address, in a sliding window. Only failures count, so
    people who log in correctly are never slowed; a client over the limit is refused before
    its token is even compared (a right guess must not be told apart from a wrong one)."""

    def __init__(
        self,
        allowed: int = LOGIN_FAILURES_ALLOWED,
        window_s: float = LOGIN_WINDOW_S,
        tracked: int = LOGIN_TRACKED_CLIENTS,
        clock=time.monotonic,
    ) -> None:
        self.allowed, self.window_s, self.tracked, self.clock = allowed, window_s, tracked, clock
        self._failures: OrderedDict[str, deque[float]] = OrderedDict()
        self._mutex = threading.Lock()

    def retry_after(self, client: str) -> int:
        """Seconds the client must wait before its next attempt (0: it may try now)."""
        now = self.clock()
        with self._mutex:
            times = self._failures.get(client)
            if not times:
                return 0
            while times and times[0] <= now - self.window_s:
                times.popleft()
            if len(times) < self.allowed:
                return 0
            return max(1, math.ceil(times[0] + self.window_s - now))

    def failed(self, client: str) -> None:
        now = self.clock()
        with self._mutex:
            times = self._failures.pop(client, None) or deque(maxlen=self.allowed)
            times.append(now)
            self._failures[client] = times  # most recent last
            while len(self._failures) > self.tracked:
                self._failures.popitem(last=False)


def _client(request: Request) -> str:
    return request.client.host if request.client else "?"


def _throttle(request: Request) -> LoginThrottle:
    throttle = getattr(request.app.state, "login_throttle", None)
    if throttle is None:
        throttle = request.app.state.login_throttle = LoginThrottle()
    return throttle


def check_login_rate(request: Request) -> None:
    """429 with Retry-After if this client has sent too many wrong tokens lately."""
    wait = _throttle(request).retry_after(_client(request))
    if wait:
        raise HTTPException(
            429,
            f"Too many wrong tokens from your address: try again in {wait} s.",
            headers={"Retry-After": str(wait)},
        )


def login_failed(request: Request) -> None:
    _throttle(request).failed(_client(request))


class Identity(BaseModel):
    user: str | None = None
    can_write: bool = False
    method: Literal["proxy", "login", "token", "localhost", "none"] = "none"


def auth_configured(settings: Settings) -> bool:
    return bool(settings.api_token or settings.proxy_user_header)


def is_local(request: Request) -> bool:
    """A loopback client that also addressed us by a loopback name (or PERFKB_BASE_URL's host):
    the Host check stops DNS rebinding, where a web page makes the browser on this machine
    talk to 127.0.0.1 under the attacker's own host name."""
    if request.client is None or request.client.host not in LOCAL_HOSTS:
        return False
    host = request.headers.get("host", "").lower()
    host = host[1 : host.find("]")] if host.startswith("[") else host.rsplit(":", 1)[0]
    allowed = {"127.0.0.1", "localhost", "::1", urlsplit(web(request).settings.base_url).hostname}
    return host in allowed


def clean_name(raw: str) -> str:
    """A user name fit for revision history: no control characters, bounded length."""
    return _UNSAFE_NAME.sub("", raw).strip()[:200]


def login_serializer(request: Request) -> URLSafeTimedSerializer:
    return URLSafeTimedSerializer(web(request).secret, salt="perfkb-login")


def token_tag(token: str) -> str:
    """Bound into login cookies so changing PERFKB_API_TOKEN logs everybody out."""
    return hashlib.sha256(token.encode()).hexdigest()[:16]


def _login_user(request: Request) -> str | None:
    settings = web(request).settings
    raw = request.cookies.get(SESSION_COOKIE)
    if not raw or not settings.api_token:
        return None
    try:
        data = login_serializer(request).loads(raw, max_age=SESSION_MAX_AGE_S)
    except BadSignature:
        return None
    if not isinstance(data, dict) or data.get("t") != token_tag(settings.api_token):
        return None
    user = clean_name(str(data.get("u", "")))
    return user or None


def page_identity(request: Request) -> Identity:
    cached = getattr(request.state, "identity", None)
    if cached is not None:
        return cached
    settings = web(request).settings
    ident = Identity()
    header = settings.proxy_user_header
    proxy_user = clean_name(request.headers.get(header, "")) if header else ""
    if proxy_user:
        ident = Identity(user=proxy_user, can_write=True, method="proxy")
    elif user := _login_user(request):
        ident = Identity(user=user, can_write=True, method="login")
    elif not auth_configured(settings) and is_local(request):
        ident = Identity(user="localhost", can_write=True, method="localhost")
    request.state.identity = ident
    return ident


def require_page_writer(request: Request) -> str:
    ident = page_identity(request)
    if not ident.can_write or not ident.user:
        raise HTTPException(401, "You need to log in to make changes.")
    return ident.user


def require_api_writer(request: Request) -> str:
    """The author name for an API write, or 401."""
    settings = web(request).settings
    if settings.api_token:
        scheme, _, sent = request.headers.get("authorization", "").partition(" ")
        if scheme.lower() == "bearer" and sent:
            check_login_rate(request)  # guessing bearer tokens is guessing the login token
        if scheme.lower() == "bearer" and hmac.compare_digest(
            sent.strip().encode(), settings.api_token.encode()
        ):
            return clean_name(request.headers.get("x-perfkb-user", "")) or "api"
        if scheme.lower() == "bearer" and sent:
            login_failed(request)
        raise HTTPException(
            401,
            "API writes need 'Authorization: Bearer <PERFKB_API_TOKEN>'.",
            headers={"WWW-Authenticate": "Bearer"},
        )
    if not auth_configured(settings) and is_local(request):
        return clean_name(request.headers.get("x-perfkb-user", "")) or "localhost"
    raise HTTPException(
        401,
        "API writes are closed: set PERFKB_API_TOKEN on the server and send it as a bearer token"
        + ("" if auth_configured(settings) else " (without it, only localhost may write)."),
        headers={"WWW-Authenticate": "Bearer"},
    )


def auth_banner(request: Request) -> str | None:
    if auth_configured(web(request).settings):
        return None
    where = "this machine" if is_local(request) else "the server's own machine"
    return (
        "No authentication is configured: changes are accepted only from localhost "
        f"({where}). Set PERFKB_API_TOKEN or PERFKB_PROXY_USER_HEADER to let your team edit."
    )


def safe_next(target: str | None) -> str:
    """Only local paths, so the login form cannot be used to redirect elsewhere."""
    if target and target.startswith("/") and not target.startswith("//") and "\\" not in target:
        return target
    return "/"
