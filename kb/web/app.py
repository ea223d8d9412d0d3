"""The FastAPI application: pages, JSON API, static files, error pages, and the Slack endpoint
when the bot package is installed. `perfkb serve` runs `create_app` as a uvicorn factory."""

from __future__ import annotations

import asyncio
import logging
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from fastapi.staticfiles import StaticFiles
from starlette.exceptions import HTTPException as StarletteHTTPException

from kb.plugins import register_routes
from kb.settings import Settings, get_settings
from kb.web import api, apidocs, editor, login, pages
from kb.web.limits import BodyLimit, SecurityHeaders
from kb.web.pool import AnalysisPool, pool_size
from kb.web.render import TEMPLATE_HELPERS, render
from kb.web.state import WebState, load_secret, template_env

log = logging.getLogger("perfkb.web")
STATIC_DIR = Path(__file__).parent / "static"

STATUS_TITLES = {
    400: "Bad request",
    401: "Log in to continue",
    403: "Not allowed",
    404: "Not found",
    405: "Method not allowed",
    409: "Conflict",
    410: "Gone",
    413: "Too large",
    415: "Unsupported media type",
    422: "Invalid input",
    500: "Something went wrong",
    503: "Unavailable",
}


def create_app(settings: Settings | None = None) -> FastAPI:
    from kb.store import Store

    settings = settings or get_settings()
    store = Store(settings)

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        pool = AnalysisPool(settings, size) if (size := pool_size(settings)) else None
        try:
            # `perfkb serve`: analyses on every core (kb/web/pool.py), its processes warming
            # while this one does
            started = asyncio.ensure_future(pool.start()) if pool is not None else None
            if settings.warm_start:  # `perfkb serve`: the first analysis costs what any other does
                from kb.analysis import warm

                await anyio.to_thread.run_sync(warm, store)
            if pool is not None and started is not None:
                try:
                    await started
                    app.state.web.use_pool(pool)
                except Exception:  # a process that cannot start: analyse here, as without one
                    log.exception("the analysis processes did not start; analysing in-process")
            yield
        finally:
            app.state.web.use_pool(None)
            if pool is not None:
                await anyio.to_thread.run_sync(pool.close)
            store.close()

    app = FastAPI(
        title="perfkb",
        summary="Known Oracle and OS performance incidents, matched against your evidence.",
        version="0.1.0",
        docs_url=None,  # Swagger UI and ReDoc load from a CDN: /docs is served locally instead
        redoc_url=None,
        lifespan=lifespan,
    )
    app.state.web = WebState(
        settings=settings,
        store=store,
        secret=load_secret(settings),
        env=template_env(TEMPLATE_HELPERS),
        analysis_slots=anyio.CapacityLimiter(settings.web_analyses),
    )
    app.add_middleware(BodyLimit, settings=settings)
    app.add_middleware(SecurityHeaders)
    app.mount("/static", StaticFiles(directory=STATIC_DIR), name="static")
    for module in (editor, pages, login, api, apidocs):  # /entries/new before /entries/{id}
        app.include_router(module.router)
    _add_error_handlers(app)
    register_routes(app, store, settings)  # the Slack bot's /slack/events (kb/plugins.py)
    return app


def _wants_json(request: Request) -> bool:
    path = request.url.path
    return path.startswith("/api") or path.startswith("/slack") or path == "/openapi.json"


def _error(request: Request, status: int, detail: object, headers: dict | None = None) -> Response:
    if _wants_json(request):
        return JSONResponse({"detail": detail}, status_code=status, headers=headers)
    message = detail if isinstance(detail, str) else STATUS_TITLES.get(status, "Error")
    ctx = {"status": status, "title": STATUS_TITLES.get(status, "Error"), "message": message}
    try:
        response = render(request, "error.html", ctx, status)
    except Exception:  # the error page itself must never fail
        log.exception("error page failed")
        response = Response(f"{status} {message}", status_code=status, media_type="text/plain")
    for k, v in (headers or {}).items():
        if k.lower() != "www-authenticate" or _wants_json(request):
            response.headers[k] = v
    return response


def _add_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> Response:
        return _error(request, exc.status_code, exc.detail, exc.headers)

    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, exc: RequestValidationError) -> Response:
        problems = [
            {"loc": ".".join(str(p) for p in e.get("loc", ())), "msg": e.get("msg", "")}
            for e in exc.errors()
        ]
        if _wants_json(request):
            return JSONResponse({"detail": problems}, status_code=422)
        text = "; ".join(f"{p['loc']}: {p['msg']}" for p in problems)
        return _error(request, 422, text)

    @app.exception_handler(Exception)
    async def crashed(request: Request, exc: Exception) -> Response:
        log.exception("unhandled error on %s %s", request.method, request.url.path)
        return _error(
            request,
            500,
            "perfkb hit an internal error and logged it. Your input was not lost: go back and "
            "try again, or report it with the time it happened.",
        )
