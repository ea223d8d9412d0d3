"""/docs: the API's endpoints as a plain local page built from the OpenAPI schema (FastAPI's
Swagger UI and ReDoc load scripts from a CDN, which many sites cannot reach)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import Response

from kb.web.render import render

router = APIRouter(include_in_schema=False)

_METHODS = ("get", "post", "put", "patch", "delete")


def endpoints(schema: dict[str, Any]) -> list[dict[str, Any]]:
    out = []
    for path, ops in schema.get("paths", {}).items():
        for method in _METHODS:
            op = ops.get(method)
            if not op:
                continue
            params = [
                f"{p['name']}" + ("" if p.get("required") else "?")
                for p in op.get("parameters", [])
                if p.get("in") == "query"
            ]
            responses = [
                (code, r.get("description", ""))
                for code, r in op.get("responses", {}).items()
                if code != "422" or method != "get"
            ]
            out.append(
                {
                    "method": method.upper(),
                    "path": path,
                    "summary": op.get("summary", ""),
                    "description": op.get("description", ""),
                    "params": params,
                    "responses": responses,
                }
            )
    return out


@router.get("/docs")
def docs(request: Request) -> Response:
    return render(request, "docs.html", {"endpoints": endpoints(request.app.openapi())})
