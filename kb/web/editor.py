"""The postmortem form: create and edit entries, propose a signature from evidence, and preview
what a draft would match before saving. Saving an edit keeps the previous revision."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from fastapi import APIRouter, HTTPException, Request
from fastapi.responses import RedirectResponse, Response
from starlette.concurrency import run_in_threadpool

from ingest.detect import parse_text
from kb import analysis
from kb.entry_yaml import dump_signatures
from kb.models import PLATFORMS, Entry, EntryError, validate_entry
from kb.proposal import propose_signatures
from kb.store import EntryExists, EntryNotFound, StoreError
from kb.web.auth import page_identity
from kb.web.forms import (
    CommandRow,
    EntryForm,
    VersionRow,
    problems_by_field,
    read_writer_form,
)
from kb.web.render import render
from kb.web.state import web

router = APIRouter(include_in_schema=False)

BLANK_ROWS = 2


def _page(
    request: Request,
    form: EntryForm,
    *,
    editing: bool,
    errors: dict[str, list[str]] | None = None,
    proposal: list[Any] | None = None,
    proposal_replaced: bool = False,
    preview: Any = None,
    previewed: bool = False,
    status: int = 200,
) -> Response:
    ctx = {
        "form": form,
        "editing": editing,
        "action": f"/entries/{form.id}/edit" if editing else "/entries/new",
        "errors": errors or {},
        "platforms": PLATFORMS,
        "version_rows": form.versions + [VersionRow() for _ in range(BLANK_ROWS)],
        "command_rows": form.commands + [CommandRow() for _ in range(BLANK_ROWS)],
        "proposal": proposal,
        "proposal_replaced": proposal_replaced,
        "preview": preview if previewed else None,
        "saved_message": None,
    }
    if previewed and preview is None:
        ctx["preview"] = False
    return render(request, "edit.html", ctx, status)


def _login_first(request: Request) -> None:
    """Send people who cannot write to log in before they type a whole postmortem."""
    if not page_identity(request).can_write:
        raise HTTPException(401, "You need to log in to add or edit entries.")


@router.get("/entries/new")
def new_entry(request: Request) -> Response:
    _login_first(request)
    return _page(request, EntryForm(platforms=[]), editing=False)


@router.get("/entries/{entry_id}/edit")
def edit_entry(request: Request, entry_id: str) -> Response:
    _login_first(request)
    try:
        entry = web(request).store.get(entry_id)
    except EntryNotFound:
        raise HTTPException(404, f"There is no entry '{entry_id[:100]}'.") from None
    form = EntryForm.from_entry(entry)
    form.base_rev = str(web(request).store.current_rev(entry_id))
    return _page(request, form, editing=True)


@router.post("/entries/new")
async def create_entry(request: Request) -> Response:
    return await _submit(request, None)


@router.post("/entries/{entry_id}/edit")
async def update_entry(request: Request, entry_id: str) -> Response:
    return await _submit(request, entry_id)


async def _submit(request: Request, entry_id: str | None) -> Response:
    raw, user = await read_writer_form(request)
    store = web(request).store
    form = EntryForm.from_form(raw)
    editing = entry_id is not None
    current: Entry | None = None
    if editing:
        try:
            current = await run_in_threadpool(store.get, entry_id)
        except EntryNotFound:
            raise HTTPException(404, f"There is no entry '{entry_id[:100]}'.") from None
        form.id = current.id  # the id is the URL: it cannot change in an edit
    action = str(raw.get("action") or "save")

    if action == "propose":
        return await _propose(request, form, editing)

    author = current.author if current else user
    data, problems = form.to_data(author=author, created=current.created if current else None)
    if action == "preview":
        return await _preview(request, form, data, problems, editing)

    data["updated"] = datetime.now(UTC).replace(microsecond=0)
    entry, problems = _validate(data, problems)
    if entry is None:
        errors = problems_by_field(problems)
        return _page(request, form, editing=editing, errors=errors, status=422)

    try:
        if current is not None:
            expected = int(form.base_rev) if form.base_rev.isdigit() else None
            await run_in_threadpool(lambda: store.update(entry, author=user, expected_rev=expected))
        else:
            await run_in_threadpool(lambda: store.add(entry, author=user))
    except EntryExists:
        errors = {"id": [f"An entry '{entry.id}' already exists: pick another id, or edit it."]}
        return _page(request, form, editing=editing, errors=errors, status=409)
    except StoreError as exc:
        message = str(exc)
        if current is not None and "someone else" in message:
            form.base_rev = str(await run_in_threadpool(store.current_rev, current.id))
            message += ". Save again to replace their version with yours (both stay in history)."
        return _page(request, form, editing=editing, errors={"": [message]}, status=409)
    return RedirectResponse(f"/entries/{entry.id}", status_code=303)


def _validate(
    data: dict[str, Any], problems: list[tuple[str, str]]
) -> tuple[Entry | None, list[tuple[str, str]]]:
    """The entry the form's data makes, or every problem that stops it: those the form found
    itself and the model's, all at once."""
    if problems:
        # The form's own problems (a YAML error in the signatures box) must not hide the rest:
        # validate everything else too, so a person fixes all of it in one round.
        try:
            validate_entry({**data, "signatures": []})
        except EntryError as exc:
            problems = [*problems, *(p for p in exc.problems if not p[0].startswith("signatures"))]
        return None, problems
    try:
        return validate_entry(data), []
    except EntryError as exc:
        return None, exc.problems


async def _propose(request: Request, form: EntryForm, editing: bool) -> Response:
    if not form.evidence.strip():
        errors = {"evidence": ["Paste the incident's evidence first, then ask for a signature."]}
        return _page(request, form, editing=editing, errors=errors, status=422)
    evidence = await run_in_threadpool(parse_text, form.evidence)
    proposal = await run_in_threadpool(propose_signatures, evidence)
    replaced = bool(form.signatures_yaml.strip()) and bool(proposal)
    if proposal:
        form.signatures_yaml = dump_signatures(proposal)
    return _page(request, form, editing=editing, proposal=proposal, proposal_replaced=replaced)


async def _preview(
    request: Request,
    form: EntryForm,
    data: dict[str, Any],
    problems: list[tuple[str, str]],
    editing: bool,
) -> Response:
    if not form.evidence.strip():
        problems = [*problems, ("evidence", "Paste evidence to preview what the entry matches.")]
    entry, problems = _validate(data, problems)
    if entry is None:
        errors = problems_by_field(problems)
        return _page(request, form, editing=editing, errors=errors, status=422)
    match = await run_in_threadpool(analysis.preview_matches, entry, form.evidence)
    return _page(request, form, editing=editing, preview=match, previewed=True)
