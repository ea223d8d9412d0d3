"""Read pages: search, entry detail with history, and analysis of pasted or uploaded evidence."""

from __future__ import annotations

import difflib
import io
import math
import re
from functools import lru_cache
from typing import Any

from fastapi import APIRouter, HTTPException, Query, Request
from fastapi.responses import JSONResponse, RedirectResponse, Response
from jinja2.utils import url_quote
from pydantic import ValidationError
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import UploadFile

from ingest.detect import BINARY_SAMPLE, NOT_TEXT, binary_reason
from kb import analysis
from kb.entry_yaml import dump_entry
from kb.results import AnalysisResult
from kb.store import EntryNotFound, StoreError
from kb.web import csrf
from kb.web.auth import auth_configured, page_identity
from kb.web.forms import read_form, read_writer_form
from kb.web.limits import analysis_slot, while_connected
from kb.web.render import qs, render
from kb.web.state import web

router = APIRouter(include_in_schema=False)

PER_PAGE = 20
MAX_QUERY = 500
SHOWN_TEXT_CAP = 200 * 1024  # what a page shows of the input
BLOCKS_IN_DETAIL = 40  # blocks an analysis page shows with facts, charts and raw text
BLOCKS_LISTED = 200  # blocks after those, one table row each
BLOCK_TEXT_SHOWN = 8 * 1024  # raw text shown per block
PAGE_TEXT_SHOWN = 128 * 1024  # raw text shown over all blocks
EXAMPLES = (
    "shmdt",
    "oraus.msb",
    "fork1 tnslsnr",
    "control file parallel write",
    "tag:numa",
    "platform:solaris source:truss",
)
FACET_TITLES = {
    "platform": "Platform",
    "source": "Evidence",
    "product": "Product",
    "version": "Version",
    "tag": "Tags",
}
_FILTER = re.compile(r'(?<!\S)(platform|source|version|tag|product):("[^"]*"|\S+)', re.I)


# ---- search ---------------------------------------------------------------------------------------


def _chips(q: str) -> list[dict[str, str]]:
    out = []
    for m in _FILTER.finditer(q):
        without = (q[: m.start()] + q[m.end() :]).strip()
        out.append({"token": m.group(0), "without": re.sub(r"\s{2,}", " ", without)})
    return out


@lru_cache(maxsize=4096)
def _filter_token(field: str, value: str) -> str:
    return f'{field}:"{value}"' if re.search(r"[\s,\"]", value) else f"{field}:{value}"


def _facet_groups(q: str, facets: dict[str, dict[str, int]]) -> list[dict[str, Any]]:
    """Each facet with its values, most entries first, and the link that adds the value as a
    filter to `q` (the same link as urlencode(q + " " + token), without quoting q each time)."""
    words = set(q.split())
    quoted_q = url_quote(q)
    groups = []
    for field, counts in facets.items():
        if not counts:
            continue
        items = []
        for value, n in sorted(counts.items(), key=lambda kv: kv[1], reverse=True):
            token = _filter_token(field, value)
            added = f"{quoted_q}%20{qs(token)}" if q else qs(token)
            items.append((value, n, quoted_q if token in words else added))
        groups.append({"title": FACET_TITLES.get(field, field), "items": items})
    return groups


def _page_numbers(page: int, pages: int) -> list[int]:
    """1 … 4 5 [6] 7 8 … 20, with 0 for a gap."""
    keep = {1, pages, *range(page - 2, page + 3)}
    out: list[int] = []
    for p in range(1, pages + 1):
        if p in keep:
            out.append(p)
        elif out and out[-1] != 0:
            out.append(0)
    return out


SORTS = ("relevance", "updated")
SORT_MAX = 1000  # hits ordered by date at most; past that, relevance decides what is shown


def _by_updated(store: Any, q: str, page: int, first: Any) -> tuple[Any, dict[str, str]]:
    """The search's hits, most recently updated first (SORT_MAX of them at most), as the page
    `page` of a SearchPage like the store's; and each shown hit's updated date."""
    hits = list(first.results)
    n = 2
    while len(hits) < min(first.total, SORT_MAX):
        more = store.search(q, page=n, per_page=100)
        if not more.results:
            break
        hits += more.results
        n += 1
    times = store.updated_times([h.id for h in hits])
    hits.sort(key=lambda h: times.get(h.id, ""), reverse=True)
    pages = max(1, math.ceil(len(hits) / PER_PAGE))
    page = min(page, pages)
    shown = hits[(page - 1) * PER_PAGE : page * PER_PAGE]
    result = first.model_copy(update={"results": shown, "page": page, "per_page": PER_PAGE})
    return result, {h.id: times.get(h.id, "")[:10] for h in shown}


def _search(request: Request, q: str, page: int, sort: str = "relevance") -> Response:
    store = web(request).store
    q = q.strip()[:MAX_QUERY]
    sort = sort if sort in SORTS else "relevance"
    error = None
    updated: dict[str, str] = {}
    per_page = 100 if sort == "updated" else PER_PAGE
    try:
        result = store.search(q, page=1 if sort == "updated" else page, per_page=per_page)
    except (StoreError, ValueError) as exc:
        error = f"{exc} — showing everything instead."
        q = ""
        result = store.search("", page=1, per_page=per_page)
    if sort == "updated":
        result, updated = _by_updated(store, q, page, result)
    shown_total = min(result.total, SORT_MAX) if sort == "updated" else result.total
    pages = max(1, math.ceil(shown_total / PER_PAGE))
    if page > pages and result.total and sort != "updated":
        result = store.search(q, page=pages, per_page=PER_PAGE)  # an old link past the end
    ctx = {
        "sort": sort,
        "updated": updated,
        "q": q,
        "error": error,
        "results": result.results,
        "total": result.total,
        "facet_groups": _facet_groups(q, result.facets),
        "chips": _chips(q),
        "page": result.page,
        "pages": pages,
        "page_numbers": _page_numbers(result.page, pages),
        "examples": EXAMPLES,
    }
    return render(request, "search.html", ctx)


EXPORT_MAX = 1000  # rows in one export: a KB-wide dump is `perfkb export`, not a web download
_CSV_FORMULA = ("=", "+", "-", "@", "\t", "\r")


def _csv_cell(value: str) -> str:
    """A cell a spreadsheet will not run: text starting like a formula gets a leading quote."""
    return "'" + value if value.startswith(_CSV_FORMULA) else value


def _export_rows(request: Request, q: str) -> tuple[list[dict[str, Any]], int]:
    store = web(request).store
    q = q.strip()[:MAX_QUERY]
    rows: list[dict[str, Any]] = []
    page, total = 1, 0
    base = str(request.base_url).rstrip("/")
    while len(rows) < EXPORT_MAX:
        found = store.search(q, page=page, per_page=100)
        total = found.total
        for hit in found.results:
            rows.append(
                {
                    "id": hit.id,
                    "title": hit.title,
                    "score": round(hit.score, 4),
                    "platforms": hit.platforms,
                    "sources": hit.sources,
                    "tags": hit.tags,
                    "url": f"{base}/entries/{url_quote(hit.id)}",
                }
            )
        if not found.results or page * 100 >= total:
            break
        page += 1
    return rows[:EXPORT_MAX], total


@router.get("/search.json")
async def search_json(request: Request, q: str = "") -> Response:
    """The search's results as JSON (every page, up to EXPORT_MAX rows)."""
    try:
        rows, total = await while_connected(request, _export_rows, request, q)
    except (StoreError, ValueError) as exc:
        return JSONResponse({"detail": str(exc)}, status_code=400)
    return JSONResponse({"query": q, "total": total, "results": rows})


@router.get("/search.csv")
async def search_csv(request: Request, q: str = "") -> Response:
    """The search's results as CSV for a spreadsheet (every page, up to EXPORT_MAX rows)."""
    import csv

    try:
        rows, _ = await while_connected(request, _export_rows, request, q)
    except (StoreError, ValueError) as exc:
        return Response(f"{exc}\n", status_code=400, media_type="text/plain")
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(["id", "title", "score", "platforms", "sources", "tags", "url"])
    for r in rows:
        writer.writerow(
            [
                _csv_cell(r["id"]),
                _csv_cell(r["title"]),
                r["score"],
                _csv_cell(" ".join(r["platforms"])),
                _csv_cell(" ".join(r["sources"])),
                _csv_cell(" ".join(r["tags"])),
                r["url"],
            ]
        )
    return Response(
        buffer.getvalue(),
        media_type="text/csv; charset=utf-8",
        headers={"Content-Disposition": 'attachment; filename="perfkb-search.csv"'},
    )


@router.get("/")
async def home(
    request: Request, q: str = "", page: int = Query(1, ge=1, le=10_000), sort: str = ""
) -> Response:
    return await while_connected(request, _search, request, q, page, sort)


@router.get("/search")
async def search(
    request: Request, q: str = "", page: int = Query(1, ge=1, le=10_000), sort: str = ""
) -> Response:
    return await while_connected(request, _search, request, q, page, sort)


# ---- entries --------------------------------------------------------------------------------------


def _diff(before: str, after: str) -> list[tuple[str, str]]:
    lines = difflib.unified_diff(before.splitlines(), after.splitlines(), lineterm="", n=2)
    out = []
    for line in list(lines)[2:]:  # drop the ---/+++ file headers
        cls = {"+": "add", "-": "del", "@": "hunk"}.get(line[:1], "ctx")
        out.append((cls, line))
    return out


def revisions_with_diffs(revisions: list[Any]) -> list[dict[str, Any]]:
    """Newest first, each with the diff of its YAML against the revision before it."""
    out, previous = [], ""
    for rev in revisions:
        current = dump_entry(rev.entry) if rev.entry is not None else ""
        diff = _diff(previous, current) if rev.rev > 1 else []
        out.append({**rev.model_dump(exclude={"entry"}), "diff": diff})
        previous = current
    return out[::-1]


@router.get("/entries/{entry_id}")
def entry_page(request: Request, entry_id: str) -> Response:
    store = web(request).store
    try:
        entry = store.get(entry_id)
    except EntryNotFound as exc:
        raise HTTPException(404, str(exc)[:300]) from None
    ctx = {
        "entry": entry,
        "revisions": revisions_with_diffs(store.history(entry_id)),
        "feedback": store.feedback_counts(entry_id),
    }
    return render(request, "entry.html", ctx)


@router.post("/entries/{entry_id}/delete")
async def delete_entry(request: Request, entry_id: str) -> Response:
    _, user = await read_writer_form(request)
    store = web(request).store
    try:
        await run_in_threadpool(store.delete, entry_id, author=user)
    except EntryNotFound:
        raise HTTPException(404, f"There is no entry '{entry_id[:100]}'.") from None
    return RedirectResponse("/", status_code=303)


# ---- analyze --------------------------------------------------------------------------------------


def _analyze_page(request: Request, error: str | None = None, text: str = "", status: int = 200):
    settings = web(request).settings
    # The browser checks these before it sends anything (perfkb.js), so a paste that is too big
    # is refused in words, at once, with the text still in the box.
    text_bytes = settings.max_body_bytes - 64 * 1024  # the form's other fields and boundaries
    file_bytes = max(settings.max_file_bytes, settings.max_body_bytes)
    ctx = {
        "error": error,
        "text": text,
        "max_file_mb": file_bytes // 2**20,
        "max_text_mb": settings.max_body_bytes // 2**20,
        "max_text_bytes": text_bytes,
        "max_file_bytes": file_bytes,
    }
    return render(request, "analyze.html", ctx, status)


@router.get("/analyze")
def analyze_form(request: Request) -> Response:
    return _analyze_page(request)


UPLOAD_BLOCK = 1024 * 1024  # characters read from an upload at a time


def _upload_chunks(upload: UploadFile, keep: list[str], cap: int):
    """An uploaded file in blocks, decoded leniently with universal newlines (as reading it
    line by line did), while keeping for the permalink the lines that start within the first
    `cap` characters (Settings.saved_text_bytes; the store then cuts at that many bytes)."""
    upload.file.seek(0)
    stream = io.TextIOWrapper(upload.file, encoding="utf-8", errors="replace", newline=None)
    kept = 0
    keeping = True
    while chunk := stream.read(UPLOAD_BLOCK):
        if keeping:
            keep.append(chunk)
            kept += len(chunk)
            if kept >= cap:
                text = "".join(keep)
                end = text.find("\n", cap - 1)
                keep[:] = [text if end < 0 else text[: end + 1]]
                keeping = end < 0  # the line crossing the cap has not ended yet
        yield chunk
    stream.detach()


@router.post("/analyze")
async def analyze_post(request: Request) -> Response:
    st = web(request)
    form = await read_form(request)  # text fields up to the body cap; files up to the file cap
    csrf.check(request, form)
    text = form.get("text")
    text = text.replace("\r\n", "\n") if isinstance(text, str) else ""
    upload = form.get("file")
    has_file = isinstance(upload, UploadFile) and bool(upload.filename) and (upload.size or 0) > 0
    if not has_file and not text.strip():
        return _analyze_page(request, "Paste some evidence or choose a file first.", status=400)
    if has_file:
        head = await upload.read(BINARY_SAMPLE)
        await upload.seek(0)
        if reason := binary_reason(head):
            msg = f"{upload.filename} is not a text capture: {reason}. {NOT_TEXT}."
            return _analyze_page(request, msg, status=415)
    elif reason := binary_reason(text):
        msg = f"The pasted text is not a text capture: {reason}. {NOT_TEXT}."
        return _analyze_page(request, msg, status=422)
    async with analysis_slot(st.analysis_slots, st.settings) as timing:
        if has_file:
            kept: list[str] = []
            result = await while_connected(
                request,
                lambda: analysis.analyze_chunks(
                    _upload_chunks(upload, kept, st.settings.saved_text_bytes), st.store
                ),
            )
            text = "".join(kept)
        elif st.pool is not None:  # `perfkb serve`: the next free process (kb/web/pool.py)
            result = await st.pool.analyze(text)
        else:
            result = await while_connected(request, analysis.analyze_text, text, st.store)
    response = await _analyzed(request, result, text)
    response.headers["Server-Timing"] = timing.header()  # as POST /api/analyze
    return response


async def _analyzed(request: Request, result: AnalysisResult, text: str) -> Response:
    """The answer to a finished analysis: the result page, or a redirect to its saved copy."""
    if not any(b.format != "unknown" for b in result.blocks):
        # prose only: nothing to share, and a saved copy would only fill the store
        note = "Not saved: perfkb found no capture it can read in this input."
        return _result_page(request, result, text, None, not_saved=note)
    ident = page_identity(request)
    if not ident.can_write:
        return _result_page(request, result, text, None, not_saved=_not_saved_note(request))
    analysis_id = await run_in_threadpool(
        web(request).store.save_analysis, text, result.model_dump_json()
    )
    return RedirectResponse(f"/analyze/{analysis_id}", status_code=303)


def _not_saved_note(request: Request) -> str:
    """Why a reader's analysis got no permalink, and what to do about it, in plain words."""
    settings = web(request).settings
    if settings.api_token:
        return "Not saved: log in (top right) to get a permalink you can share."
    if auth_configured(settings):
        return "Not saved: sign in through your team's login proxy to get a permalink to share."
    return (
        "Not saved: this perfkb has no login set up, so only its own machine can save. From "
        "here you can search, read entries and analyze evidence; to save and share, an admin "
        "sets PERFKB_API_TOKEN (people then log in with it) or PERFKB_PROXY_USER_HEADER "
        "(behind a login proxy) and restarts perfkb."
    )


@router.get("/healthz")
def healthz(request: Request) -> Response:
    """Liveness and readiness for compose and orchestrators: the store answers a query."""
    try:
        entries = web(request).store.count()
    except Exception as exc:  # noqa: BLE001 - any failure means not ready, said as such
        return JSONResponse({"status": "error", "detail": type(exc).__name__}, status_code=503)
    return JSONResponse({"status": "ok", "entries": entries})


def _result_page(
    request: Request,
    result: AnalysisResult,
    text: str,
    analysis_id: str | None,
    not_saved: str | None = None,
) -> Response:
    ctx = {
        **_block_views(result),
        "feedback_saved": request.query_params.get("feedback") == "saved",
        "result": result,
        "analysis_id": analysis_id,
        "not_saved": not_saved,
        "text": text[:SHOWN_TEXT_CAP],
        "text_capped": len(text) > SHOWN_TEXT_CAP,
    }
    return render(request, "analysis.html", ctx)


def _block_views(result: AnalysisResult) -> dict[str, Any]:
    """What the page shows of the blocks. A paste cut into thousands of blocks rendered every
    one with 20 KB of its raw text (a 5 MB mixed paste made a 16.5 MB page): the first
    BLOCKS_IN_DETAIL blocks are shown in full, with at most BLOCK_TEXT_SHOWN characters of raw
    text each and PAGE_TEXT_SHOWN in all; the next BLOCKS_LISTED get one table row; the page
    says how many more there are and where to get them (the JSON answer has every block)."""
    detail: list[tuple[Any, str, int]] = []
    budget = PAGE_TEXT_SHOWN
    for block in result.blocks[:BLOCKS_IN_DETAIL]:
        text = block.text or ""
        shown = text[: min(BLOCK_TEXT_SHOWN, budget)]
        budget -= len(shown)
        detail.append((block, shown, len(text) - len(shown)))
    listed = result.blocks[BLOCKS_IN_DETAIL : BLOCKS_IN_DETAIL + BLOCKS_LISTED]
    hidden = max(0, len(result.blocks) - BLOCKS_IN_DETAIL - BLOCKS_LISTED)
    return {"detail_blocks": detail, "listed_blocks": listed, "hidden_blocks": hidden}


@router.get("/analyze/{analysis_id}")
def analysis_page(request: Request, analysis_id: str) -> Response:
    store = web(request).store
    try:
        text, result_json = store.get_analysis(analysis_id[:100])
    except StoreError:
        raise HTTPException(404, "There is no saved analysis with that link.") from None
    try:
        result = AnalysisResult.model_validate_json(result_json)
    except ValidationError:
        raise HTTPException(
            410, "This saved analysis was made by another perfkb version and cannot be shown."
        ) from None
    if result.fingerprint:  # votes cast since the analysis was saved
        votes = store.feedback_for(result.fingerprint)
        for m in result.matches:
            m.feedback = votes.get(m.id, {})
    return _result_page(request, result, text, analysis_id)


@router.post("/analyze/{analysis_id}/feedback")
async def analysis_feedback(request: Request, analysis_id: str) -> Response:
    """'Right cause' / 'wrong cause' on a saved analysis: one vote per user, entry and evidence."""
    form, user = await read_writer_form(request)
    store = web(request).store
    try:
        _, result_json = await run_in_threadpool(store.get_analysis, analysis_id[:100])
        result = AnalysisResult.model_validate_json(result_json)
    except (StoreError, ValidationError):
        raise HTTPException(404, "There is no saved analysis with that link.") from None
    entry_id = str(form.get("entry_id", ""))
    verdict = str(form.get("verdict", ""))
    if verdict not in ("right", "wrong") or entry_id not in {m.id for m in result.matches}:
        raise HTTPException(400, "Feedback needs one of this analysis' matches and right or wrong.")
    try:
        await run_in_threadpool(
            lambda: store.record_feedback(entry_id, result.fingerprint, verdict, user)  # type: ignore[arg-type]
        )
    except StoreError as exc:
        raise HTTPException(409, str(exc)) from None
    return RedirectResponse(f"/analyze/{analysis_id}?feedback=saved", status_code=303)
