"""The postmortem form says what is wrong in words, and all of it at once: a YAML mistake in the
signatures box no longer hides the other fields' problems."""

from __future__ import annotations

import re

import httpx
import pytest

from kb.settings import Settings
from kb.web.devserver import running_server, seed_entries
from kb.web.forms import in_words

TOKEN_RE = re.compile(r'name="csrf_token" value="([^"]+)"')


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    settings = Settings(
        data_dir=tmp_path_factory.mktemp("words-data"),
        api_token=None,
        proxy_user_header=None,
        secret_key=None,
    )
    seed_entries(settings)
    with running_server(settings) as url:
        yield url


def _form(token: str, **kw) -> dict:
    """A postmortem form as a browser posts it; the wording is made up for the test."""
    data = {
        "csrf_token": token,
        "id": "words-entry",
        "title": "Commits wait on a slow redo device",
        "symptom": "log file sync high.",
        "root_cause": "Slow redo device.",
        "fix": "Move the redo logs.",
        "platforms": ["linux"],
        "signatures_yaml": "",
        "action": "save",
    }
    data.update(kw)
    return data


def test_every_problem_is_shown_at_once_in_words(server: str):
    with httpx.Client(base_url=server, timeout=30) as client:
        token = TOKEN_RE.search(client.get("/entries/new").text)[1]
        bad = _form(token, id="Bad Id", title="", platforms=[], signatures_yaml="- [unclosed")
        r = client.post("/entries/new", data=bad)
    assert r.status_code == 422
    errors = re.findall(r'<p class="fielderror" role="alert">([^<]*)</p>', r.text)
    text = " | ".join(errors)
    assert "YAML line" in text  # the signatures box
    assert "Use lower-case letters, digits and hyphens" in text  # the id
    assert "Write at least 3 characters." in text  # the title
    assert "Choose at least one." in text  # the platforms
    assert "String should" not in r.text and "List should" not in r.text


def test_messages_in_words():
    assert in_words("Field required", "title") == "This is required."
    assert in_words("String should have at least 3 characters", "title") == (
        "Write at least 3 characters."
    )
    assert in_words("String should have at most 200 characters", "title") == (
        "Too long: at most 200 characters."
    )
    assert in_words("unknown fact 'nope'", "signatures") == "unknown fact 'nope'"


def test_a_remote_reader_without_any_login_configured_is_told_what_they_can_do(tmp_path):
    """No token, no proxy: a teammate on another machine meets no dead end, but a plain account
    of what works from there and what the admin sets to open writes."""
    import asyncio

    from kb.web.app import create_app

    settings = Settings(data_dir=tmp_path, api_token=None, proxy_user_header=None, secret_key=None)
    seed_entries(settings)
    app = create_app(settings)
    evidence = "18.4807 shmdt(0x380000000) = 0\n18.5050 shmdt(0x390000000) = 0\n"

    async def run():
        transport = httpx.ASGITransport(app=app, client=("10.9.8.7", 51000))
        async with httpx.AsyncClient(transport=transport, base_url="http://perfkb.example") as c:
            refused = await c.get("/entries/new")
            assert refused.status_code == 401
            assert "no login set up" in refused.text and "PERFKB_API_TOKEN" in refused.text
            assert "proxy you are signed in automatically" not in refused.text
            form = await c.get("/analyze")
            token = TOKEN_RE.search(form.text)[1]
            r = await c.post("/analyze", data={"csrf_token": token, "text": evidence})
            assert r.status_code == 200
            assert "Not saved: this perfkb has no login set up" in r.text
            assert "an admin sets PERFKB_API_TOKEN" in r.text

    try:
        asyncio.run(run())
    finally:
        app.state.web.store.close()
