"""What every route needs (settings, store, signing secret, templates), kept on app.state."""

from __future__ import annotations

import os
import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
import jinja2
from fastapi import Request

from kb.settings import Settings

if TYPE_CHECKING:
    from kb.store import Store
    from kb.web.pool import AnalysisPool

SECRET_FILE = "web_secret_key"


@dataclass
class WebState:
    settings: Settings
    store: Store
    secret: str
    env: jinja2.Environment
    analysis_slots: anyio.CapacityLimiter  # kb/web/limits.py analysis_slot
    # the processes that run pasted analyses once started (kb/web/pool.py); None: this process
    pool: AnalysisPool | None = None

    def use_pool(self, pool: AnalysisPool | None) -> None:
        """Pasted analyses go to `pool` from now on (None: this process's own threads).

        With a pool the slots admit, beside the PERFKB_WEB_ANALYSES analyses that run, one more
        per process, which waits in the pool's queue: a process that finishes an analysis then
        starts the next at once. With the slots equal to the processes it idled instead while
        the answer went back through this process's event loop, the slot was released and the
        next request submitted its paste (measured, 8 clients posting the seed documents to a
        2-process pool on this 2-core box, five alternating rounds of 1,000 requests: 1.81
        cores busy, 98 requests/s, p99 116 ms; with the extra slots 1.93 cores, 115/s, p99 99
        ms). The processes still bound the analyses that run at once, and the slots the
        requests admitted; a request beyond them still waits for a slot, then gets 503."""
        self.pool = pool
        ahead = pool.size if pool is not None else 0
        self.analysis_slots.total_tokens = self.settings.web_analyses + ahead


def web(request: Request) -> WebState:
    return request.app.state.web


def load_secret(settings: Settings) -> str:
    """The key that signs CSRF tokens and login cookies: PERFKB_SECRET_KEY, else a random key
    kept in the data dir so cookies survive restarts and every worker process agrees on it."""
    if settings.secret_key:
        return settings.secret_key
    path = Path(settings.data_dir) / SECRET_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.exists():
        # write a temp file, then link it into place: the key appears whole or not at all,
        # and when two processes race the first link wins and both read the same key
        tmp = path.with_name(f".{SECRET_FILE}.{os.getpid()}.{secrets.token_hex(4)}")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(secrets.token_urlsafe(48))
        try:
            os.link(tmp, path)
        except FileExistsError:
            pass
        finally:
            tmp.unlink(missing_ok=True)
    key = path.read_text(encoding="utf-8").strip()
    if len(key) < 32:
        raise RuntimeError(f"{path} holds no usable key: delete it or set PERFKB_SECRET_KEY")
    return key


def template_env(extra_globals: dict[str, Any] | None = None) -> jinja2.Environment:
    """Jinja with autoescape on for every template, whatever its extension."""
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("kb.web", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        auto_reload=False,  # templates ship with the package: no stat() per page to re-check
    )
    env.globals.update(extra_globals or {})
    return env
