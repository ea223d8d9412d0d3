"""CSRF protection for the HTML forms: a signed double-submit token.

The browser holds a random nonce in an HttpOnly, SameSite=Lax cookie; every form carries the
nonce signed with the server secret. A cross-site page can make the browser send the cookie but
cannot read it or forge the signature, so a post whose field does not unsign to the cookie's
nonce is refused with 403.
"""

from __future__ import annotations

import hmac
import secrets

from fastapi import HTTPException, Request
from itsdangerous import BadSignature, URLSafeTimedSerializer
from starlette.datastructures import FormData
from starlette.responses import Response

from kb.web.state import web

COOKIE = "perfkb_csrf"
FIELD = "csrf_token"
MAX_AGE_S = 12 * 3600


def _serializer(request: Request) -> URLSafeTimedSerializer:
    return URLSafeTimedSerializer(web(request).secret, salt="perfkb-csrf")


def _nonce(request: Request) -> str:
    """The nonce for this browser: its cookie, or a fresh one set on the response."""
    nonce = getattr(request.state, "csrf_nonce", None)
    if nonce:
        return nonce
    nonce = request.cookies.get(COOKIE, "")
    if not (16 <= len(nonce) <= 100):
        nonce = secrets.token_urlsafe(24)
        request.state.csrf_new = True
    request.state.csrf_nonce = nonce
    return nonce


def token(request: Request) -> str:
    """The value to put in a form's hidden csrf_token field."""
    return _serializer(request).dumps(_nonce(request))


def set_cookie(request: Request, response: Response) -> None:
    """Send the nonce cookie if this request had to create one."""
    if getattr(request.state, "csrf_new", False):
        response.set_cookie(
            COOKIE,
            request.state.csrf_nonce,
            max_age=MAX_AGE_S,
            httponly=True,
            samesite="lax",
            secure=request.url.scheme == "https",
            path="/",
        )


def check(request: Request, form: FormData) -> None:
    """Refuse (403) a form post whose token is missing, expired or not this browser's."""
    cookie = request.cookies.get(COOKIE, "")
    sent = form.get(FIELD)
    if not cookie or not isinstance(sent, str) or not sent:
        raise HTTPException(
            403,
            "This form was sent without its security token (CSRF). Reload the page and try again.",
        )
    try:
        nonce = _serializer(request).loads(sent, max_age=MAX_AGE_S)
    except BadSignature:
        raise HTTPException(
            403, "This form's security token is invalid or expired. Reload the page and try again."
        ) from None
    if not isinstance(nonce, str) or not hmac.compare_digest(nonce, cookie):
        raise HTTPException(
            403, "This form's security token belongs to another session. Reload and try again."
        )
