"""Login with the API token (for pages, when no reverse proxy names the user) and logout."""

from __future__ import annotations

import hmac

from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse, Response

from kb.web import csrf
from kb.web.auth import (
    SESSION_COOKIE,
    SESSION_MAX_AGE_S,
    check_login_rate,
    clean_name,
    login_failed,
    login_serializer,
    safe_next,
    token_tag,
)
from kb.web.forms import read_form
from kb.web.render import render
from kb.web.state import web

router = APIRouter()


@router.get("/login", include_in_schema=False)
async def login_page(request: Request, next: str = "/") -> Response:
    return render(request, "login.html", {"next": safe_next(next), "error": None})


@router.post("/login", include_in_schema=False)
async def login(request: Request) -> Response:
    from kb.web.forms import read_form

    settings = web(request).settings
    form = await read_form(request)
    csrf.check(request, form)
    check_login_rate(request)
    target = safe_next(str(form.get("next", "/")))
    name = clean_name(str(form.get("name", "")))
    sent = str(form.get("token", ""))
    error = None
    if not settings.api_token:
        error = "Login with a token is not configured on this server (PERFKB_API_TOKEN)."
    elif not name:
        error = "Give your name: it goes into the revision history of what you change."
    elif not hmac.compare_digest(sent.encode(), settings.api_token.encode()):
        error = "That token is not right."
        login_failed(request)
    if error:
        return render(request, "login.html", {"next": target, "error": error, "name": name}, 401)
    response = RedirectResponse(target, status_code=303)
    cookie = login_serializer(request).dumps({"u": name, "t": token_tag(settings.api_token)})
    response.set_cookie(
        SESSION_COOKIE,
        cookie,
        max_age=SESSION_MAX_AGE_S,
        httponly=True,
        samesite="lax",
        secure=request.url.scheme == "https",
        path="/",
    )
    return response


@router.post("/logout", include_in_schema=False)
async def logout(request: Request) -> Response:
    form = await read_form(request)
    csrf.check(request, form)
    response = RedirectResponse("/", status_code=303)
    response.delete_cookie(SESSION_COOKIE, path="/")
    return response
