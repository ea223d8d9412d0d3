"""The web editor holds every field of every starter entry: each entry's edit page, posted back
as a browser would post it (text inputs lose line breaks, textareas send CRLF), saves the same
entry; and the new fields (look-alikes, 'seen gone in', command conditions) are edited there."""

from __future__ import annotations

import html
import re
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import urlencode

import httpx
import pytest

from kb.settings import Settings
from kb.web.devserver import running_server, seed_entries


class BrowserForm(HTMLParser):
    """The fields of the page's entry form as a browser submits them (HTML's form data set):
    checked boxes only, the selected option, a text input's value without CR/LF (the value
    sanitization of <input type=text>), a textarea's text with its first newline dropped and
    line ends sent as CRLF."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.fields: list[tuple[str, str]] = []
        self._in_form = False
        self._textarea: str | None = None
        self._text: list[str] = []
        self._select: str | None = None
        self._options: list[tuple[str, bool]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        if tag == "form":
            self._in_form = "entryform" in a.get("class", "").split()
        if not self._in_form or (not a.get("name") and tag != "option"):
            return
        if tag == "input":
            kind = a.get("type", "text").lower()
            if kind in ("checkbox", "radio") and "checked" not in a:
                return
            if kind in ("submit", "button", "file"):
                return
            value = a.get("value", "")
            if kind in ("text", "hidden", "search", "url", ""):
                value = value.replace("\r", "").replace("\n", "")
            self.fields.append((a["name"], value))
        elif tag == "textarea":
            self._textarea, self._text = a["name"], []
        elif tag == "select":
            self._select, self._options = a["name"], []
        elif tag == "option" and self._select is not None:
            self._options.append((a.get("value", ""), "selected" in a))

    def handle_data(self, data: str) -> None:
        if self._textarea is not None:
            self._text.append(data)

    def handle_endtag(self, tag: str) -> None:
        if tag == "textarea" and self._textarea is not None:
            text = "".join(self._text)
            text = text[1:] if text.startswith("\n") else text
            self.fields.append((self._textarea, text.replace("\n", "\r\n")))
            self._textarea = None
        elif tag == "select" and self._select is not None:
            chosen = [v for v, sel in self._options if sel] or [v for v, _ in self._options[:1]]
            self.fields.append((self._select, chosen[0] if chosen else ""))
            self._select = None
        elif tag == "form":
            self._in_form = False


def form_of(page: str) -> list[tuple[str, str]]:
    parser = BrowserForm()
    parser.feed(page)
    return parser.fields


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    settings = Settings(
        data_dir=tmp_path_factory.mktemp("edit-roundtrip"),
        api_token=None,
        proxy_user_header=None,
        secret_key=None,
    )
    seed_entries(settings)
    with running_server(settings) as url:
        yield url


def comparable(entry: dict) -> dict:
    return {k: v for k, v in entry.items() if k not in ("author", "created", "updated")}


def save(client: httpx.Client, entry_id: str, **changes: str) -> httpx.Response:
    page = client.get(f"/entries/{entry_id}/edit")
    assert page.status_code == 200, page.text
    fields = [(k, changes.pop(k)) if k in changes else (k, v) for k, v in form_of(page.text)]
    fields += list(changes.items())
    fields.append(("action", "save"))
    return client.post(
        f"/entries/{entry_id}/edit",
        content=urlencode(fields),
        headers={"content-type": "application/x-www-form-urlencoded"},
    )


def test_every_starter_entry_saves_unchanged_from_its_edit_page(server):
    with httpx.Client(base_url=server, timeout=60) as client:
        ids = [e["id"] for e in client.get("/api/entries").json()]
        assert len(ids) >= 84
        for entry_id in ids:
            before = client.get(f"/api/entries/{entry_id}").json()
            r = save(client, entry_id)
            assert r.status_code in (200, 303), (entry_id, r.status_code)
            assert 'class="fielderror"' not in r.text, (entry_id, r.text[:2000])
            after = client.get(f"/api/entries/{entry_id}").json()
            assert comparable(after) == comparable(before), entry_id


def test_new_fields_are_edited_from_the_page(server):
    with httpx.Client(base_url=server, timeout=60) as client:
        entry_id = "log-file-sync-commit-per-row"
        changes = {
            "differential": "slow-redo-log-parallel-write: log file parallel write near log "
            "file sync\n  (both slow: the disk, not the commits)",
            "versions-0-observed_fixed": "19.20",
            "commands-0-min_version": "10.2",
            "commands-0-licence": "Diagnostics Pack",
            "commands-0-free_alternative": "Statspack",
            "commands-0-intrusive_why": "",
        }
        r = save(client, entry_id, **changes)
        assert r.status_code in (200, 303)
        after = client.get(f"/api/entries/{entry_id}").json()
        assert after["differential"] == [
            {
                "entry": "slow-redo-log-parallel-write",
                "check": "log file parallel write near log file sync\n"
                "(both slow: the disk, not the commits)",
            }
        ]
        assert after["affected_versions"][0]["observed_fixed"] == ["19.20"]
        first = after["next_commands"][0]
        assert (first["min_version"], first["licence"], first["free_alternative"]) == (
            "10.2",
            "Diagnostics Pack",
            "Statspack",
        )
        bad = save(
            client, entry_id, **{"commands-0-free_alternative": "x", "commands-0-licence": ""}
        )
        assert bad.status_code == 422
        assert "free_alternative is given but no licence" in html.unescape(bad.text)


def test_textarea_first_line_break_rule_is_what_the_parser_emulates():
    """The emulation itself: a browser drops one newline after <textarea> and strips line
    breaks from text inputs (so the round trip above tests what a browser would post)."""
    page = (
        '<form method="post" class="entryform"><textarea name="a">\n\nx</textarea>'
        '<input name="b" value="p&#10;q"><input type="checkbox" name="c" value="1"></form>'
    )
    assert form_of(page) == [("a", "\r\nx"), ("b", "pq")]
    assert re.fullmatch(r"[^\n]*", dict(form_of(page))["b"])
    assert Path(__file__).exists()
