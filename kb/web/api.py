"""JSON API under /api: search, entries (CRUD), analyze. Reads are open; writes need the bearer
token (see auth.py). Entry bodies are validated with kb.models.validate_entry so errors read
the same as everywhere else: one {loc, msg} per problem."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from fastapi import APIRouter, Body, HTTPException, Query, Request, Response
from pydantic import BaseModel, Field
from starlette.concurrency import run_in_threadpool

from ingest.detect import NOT_TEXT, binary_reason
from kb import analysis
from kb.models import Entry, EntryError, validate_entry
from kb.results import AnalysisResult
from kb.store import (
    EntryExists,
    EntryNotFound,
    Revision,
    SearchHit,
    StoreError,
    UnreadableEntry,
)
from kb.web.auth import require_api_writer
from kb.web.limits import analysis_slot, while_connected
from kb.web.pool import render_json
from kb.web.state import web

router = APIRouter(prefix="/api", tags=["api"])

MAX_QUERY = 500
ENTRY_BODY = {
    "requestBody": {
        "required": True,
        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Entry"}}},
    }
}
WRITE_ERRORS: dict[int | str, dict[str, Any]] = {
    401: {"description": "missing or wrong bearer token"},
    413: {"description": "body larger than PERFKB_MAX_BODY_BYTES"},
    415: {"description": "body is not application/json"},
    422: {"description": "the entry is not valid: detail lists {loc, msg} per problem"},
}


class SearchResponse(BaseModel):
    query: str
    total: int
    page: int
    per_page: int
    results: list[SearchHit]
    facets: dict[str, dict[str, int]]


class AnalyzeRequest(BaseModel):
    text: str = Field(description="pasted evidence: any mix of prose and tool output")


def _json_body(request: Request) -> None:
    """Writes take JSON only: a cross-site form cannot send it without a CORS preflight."""
    ctype = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if ctype != "application/json":
        raise HTTPException(415, "Send the body as JSON with 'Content-Type: application/json'.")


def _validate(data: Any, entry_id: str | None = None) -> Entry:
    if not isinstance(data, dict):
        raise HTTPException(422, [{"loc": "", "msg": "the body must be a JSON object (an entry)"}])
    if entry_id is not None and data.setdefault("id", entry_id) != entry_id:
        msg = f"the body's id '{data['id']}' differs from the URL's '{entry_id}'"
        raise HTTPException(422, [{"loc": "id", "msg": msg}])
    try:
        return validate_entry(data)
    except EntryError as exc:
        raise HTTPException(422, [{"loc": p, "msg": m} for p, m in exc.problems]) from None


def _now() -> datetime:
    return datetime.now(UTC).replace(microsecond=0)


def _not_found(entry_id: str) -> HTTPException:
    return HTTPException(404, f"no entry '{entry_id[:100]}'")


@router.get("/search", response_model=SearchResponse, summary="Search entries")
async def api_search(
    request: Request,
    q: str = Query(
        "",
        max_length=MAX_QUERY,
        description="free text plus platform:, source:, version:, tag:, product: filters",
    ),
    page: int = Query(1, ge=1, le=10_000),
    per_page: int = Query(20, ge=1, le=100),
) -> Any:
    store = web(request).store
    try:
        result = await while_connected(request, store.search, q, page=page, per_page=per_page)
    except (StoreError, ValueError) as exc:
        raise HTTPException(400, str(exc)) from None
    return result.model_dump()


@router.get("/entries", response_model=list[Entry], summary="List all live entries")
def api_list(request: Request) -> Any:
    return web(request).store.list_entries()


@router.get(
    "/entries/{entry_id}",
    response_model=Entry,
    summary="Get one entry",
    responses={404: {"description": "no such entry"}},
)
def api_get(request: Request, entry_id: str) -> Any:
    try:
        return web(request).store.get(entry_id)
    except UnreadableEntry as exc:  # stored but invalid: say which and how to remove it
        raise HTTPException(404, str(exc)[:600]) from None
    except EntryNotFound:
        raise _not_found(entry_id) from None


@router.get(
    "/entries/{entry_id}/history",
    response_model=list[Revision],
    summary="An entry's revisions, oldest first",
    responses={404: {"description": "no such entry"}},
)
def api_history(request: Request, entry_id: str) -> Any:
    try:
        return web(request).store.history(entry_id)
    except EntryNotFound:
        raise _not_found(entry_id) from None


@router.post(
    "/entries",
    response_model=Entry,
    status_code=201,
    summary="Create an entry",
    openapi_extra=ENTRY_BODY,
    responses={**WRITE_ERRORS, 409: {"description": "an entry with that id exists"}},
)
async def api_create(request: Request) -> Any:
    author = require_api_writer(request)
    _json_body(request)
    entry = _validate(await _read_json(request))
    try:
        return await run_in_threadpool(lambda: web(request).store.add(entry, author=author))
    except EntryExists:
        raise HTTPException(409, f"entry '{entry.id}' already exists: PUT to update it") from None


@router.put(
    "/entries/{entry_id}",
    response_model=Entry,
    summary="Replace an entry (new revision)",
    openapi_extra=ENTRY_BODY,
    responses={**WRITE_ERRORS, 404: {"description": "no entry"}},
)
async def api_update(request: Request, entry_id: str) -> Any:
    author = require_api_writer(request)
    _json_body(request)
    data = await _read_json(request)
    store = web(request).store
    try:
        current = await run_in_threadpool(store.get, entry_id)
    except EntryNotFound:
        raise _not_found(entry_id) from None
    if isinstance(data, dict):
        data.setdefault("created", current.created.isoformat())
        data["updated"] = _now().isoformat()
    entry = _validate(data, entry_id)
    try:
        return await run_in_threadpool(lambda: store.update(entry, author=author))
    except EntryNotFound:
        raise _not_found(entry_id) from None


@router.delete(
    "/entries/{entry_id}",
    status_code=204,
    summary="Delete an entry (soft)",
    responses={401: WRITE_ERRORS[401], 404: {"description": "no such entry"}},
)
async def api_delete(request: Request, entry_id: str) -> Response:
    author = require_api_writer(request)
    try:
        await run_in_threadpool(lambda: web(request).store.delete(entry_id, author=author))
    except EntryNotFound:
        raise _not_found(entry_id) from None
    return Response(status_code=204)


@router.post(
    "/analyze",
    response_model=AnalysisResult,
    summary="Analyze pasted evidence",
    description="Returns the same object as `perfkb analyze --json`.",
)
async def api_analyze(request: Request, body: AnalyzeRequest = Body(...)) -> Any:
    if reason := binary_reason(body.text):
        raise HTTPException(
            422, [{"loc": "body.text", "msg": f"not a text capture: {reason}. {NOT_TEXT}"}]
        )
    st = web(request)
    async with analysis_slot(st.analysis_slots, st.settings) as timing:
        if st.pool is not None:  # `perfkb serve`: the next free process renders the answer
            rendered = await st.pool.analyze_json(body.text)
        else:
            result = await while_connected(request, analysis.analyze_text, body.text, st.store)
            rendered = render_json(result)
    # the JSON as the response model would write it, without validating it once more
    headers = {"Server-Timing": timing.header()}
    return Response(rendered, media_type="application/json", headers=headers)


async def _read_json(request: Request) -> Any:
    raw = await request.body()
    try:
        return json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise HTTPException(422, [{"loc": "body", "msg": f"not valid JSON: {exc}"}]) from None
    except RecursionError:
        raise HTTPException(422, [{"loc": "body", "msg": "JSON nested too deeply"}]) from None
    except ValueError as exc:  # an integer of more than 4,300 digits (Python's int limit)
        msg = f"not valid JSON: {' '.join(str(exc).split(';')[0].split())}"
        raise HTTPException(422, [{"loc": "body", "msg": msg}]) from None
