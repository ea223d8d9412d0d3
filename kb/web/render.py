"""Rendering pages: one place that adds the identity, the auth banner and the CSRF token, and
the few helpers templates need (signature trees, highlighted snippets, number formats)."""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from fastapi import Request
from fastapi.responses import HTMLResponse
from jinja2.utils import url_quote
from markupsafe import Markup, escape

from ingest.facts import number
from kb.web import csrf
from kb.web.auth import auth_banner, page_identity
from kb.web.charts import block_charts
from kb.web.state import web


def render(
    request: Request, name: str, ctx: dict[str, Any] | None = None, status: int = 200
) -> HTMLResponse:
    st = web(request)
    base = {
        "request": request,
        "identity": page_identity(request),
        "auth_banner": auth_banner(request),
        "login_available": bool(st.settings.api_token),
        "proxy_login": bool(st.settings.proxy_user_header),
        "csrf_field": csrf.FIELD,
        "csrf_token": _LazyToken(request),
        "path": request.url.path,
    }
    html = st.env.get_template(name).render(**base, **(ctx or {}))
    response = HTMLResponse(html, status_code=status)
    csrf.set_cookie(request, response)
    return response


class _LazyToken:
    """The CSRF token, signed only if the page has a form that prints it (the search page has
    none unless someone is logged in); the nonce cookie is then set as before."""

    __slots__ = ("_request", "_value")

    def __init__(self, request: Request) -> None:
        self._request = request
        self._value: str | None = None

    def __str__(self) -> str:
        if self._value is None:
            self._value = csrf.token(self._request)
        return self._value

    def __html__(self) -> str:
        return str(escape(str(self)))


@lru_cache(maxsize=4096)
def qs(value: str) -> str:
    """Jinja's `urlencode` of a string, remembered: for filter tokens (`tag:numa`,
    `platform:linux`), which the search page quotes dozens of times per request."""
    return url_quote(value)


def snippet(parts: list) -> Markup:
    """A hit's fragment as HTML: every part escaped, the query's words in <mark>."""
    return Markup(
        "".join(
            f"<mark>{escape(p.text)}</mark>" if p.hit else str(escape(p.text)) for p in parts or ()
        )
    )


def condition_tree(cond: Any) -> dict[str, Any]:
    """A signature's condition as nested {'op', 'items'} / {'text'} for the template."""
    if not cond.children:
        return {"text": cond.describe()}
    op = {"all": "all of", "any": "any of", "not": "not"}[cond.kind]
    return {"op": op, "items": [condition_tree(c) for c in cond.children]}


def num(v: Any) -> str:
    """A value on the page: numbers through ingest.facts.number, the one number format (the CLI
    and the Slack reply print the same digits)."""
    if isinstance(v, bool) or not isinstance(v, int | float):
        return str(v)
    return number(v)


def split_facts(facts: dict[str, Any]) -> tuple[list[tuple[str, Any]], list[tuple[str, list]]]:
    """Scalar facts, and keyed tables with their rows largest first (top 15)."""
    scalars, tables = [], []
    for name, value in sorted(facts.items()):
        if isinstance(value, dict):
            rows = sorted(value.items(), key=lambda kv: _sort_key(kv[1]), reverse=True)
            tables.append(
                (name, rows[:15] + ([("…", f"{len(rows) - 15} more")] if len(rows) > 15 else []))
            )
        else:
            scalars.append((name, value))
    return scalars, tables


def _sort_key(v: Any) -> float:
    try:
        return float(v)
    except (TypeError, ValueError):
        return 0.0


PLATFORM_LABELS = {"any": "Oracle (any platform)", "solaris": "Solaris", "linux": "Linux"}


def group_commands(commands: list[Any]) -> list[tuple[str, list[Any]]]:
    """Next commands grouped under a label per platform: Oracle ('any') first, then Solaris and
    Linux (both, each labelled, when the platform is unknown); others in order of appearance."""
    groups: dict[str, list[Any]] = {}
    for c in commands:
        groups.setdefault(c.platform, []).append(c)
    order = list(PLATFORM_LABELS)
    keys = sorted(groups, key=lambda p: order.index(p) if p in order else len(order))
    return [(PLATFORM_LABELS.get(p, p), groups[p]) for p in keys]


TEMPLATE_HELPERS = {
    "snippet": snippet,
    "qs": qs,
    "condition_tree": condition_tree,
    "num": num,
    "split_facts": split_facts,
    "group_commands": group_commands,
    "block_charts": block_charts,
    "escape": escape,
}
