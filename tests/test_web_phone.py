"""The web page on a phone and on a desktop, in real headless Chromium: no page is wider than the
screen (long commands scroll in their own box), a paste that is too big is refused in the browser
with the limit and the text kept; and over HTTP: /healthz, search export, what is saved."""

from __future__ import annotations

import csv
import io
import re
from pathlib import Path

import httpx
import pytest
from playwright.sync_api import Browser, Page, expect, sync_playwright

from kb.settings import Settings
from kb.web.devserver import running_server, seed_entries

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--no-sandbox", "--disable-background-networking", "--disable-gpu"]
TOKEN = "phone-test-token-0123456789"
ROOT = Path(__file__).resolve().parents[1]
ENTRIES = sorted(p.stem for p in (ROOT / "kb" / "entries").glob("*.yaml"))
CORPUS = ROOT.parent / "shared" / "corpus" / "snippets"
MAX_BODY = 2 * 1024 * 1024  # small, so the test need not paste tens of megabytes
WIDTHS = (1280, 390)


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    settings = Settings(
        data_dir=tmp_path_factory.mktemp("phone-data"),
        api_token=TOKEN,
        proxy_user_header=None,
        secret_key=None,
        max_body_bytes=MAX_BODY,
    )
    seed_entries(settings)
    with running_server(settings) as url:
        yield url


@pytest.fixture(scope="module")
def browser():
    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
        yield b
        b.close()


def _page(browser: Browser, server: str, width: int) -> Page:
    context = browser.new_context(base_url=server, viewport={"width": width, "height": 844})
    return context.new_page()


def _log_in(page: Page) -> None:
    page.goto("/login")
    page.fill("input[name=name]", "pat")
    page.fill("input[name=token]", TOKEN)
    page.click("form.stack button[type=submit]")
    expect(page.locator("nav.nav")).to_contain_text("Log out pat")


def _overflow(page: Page) -> int:
    """How many pixels the page is wider than the screen (0: no sideways scrolling)."""
    return page.evaluate(
        "Math.max(document.documentElement.scrollWidth, document.body.scrollWidth)"
        " - window.innerWidth"
    )


@pytest.mark.parametrize("width", WIDTHS)
def test_no_page_is_wider_than_the_screen(browser: Browser, server: str, width: int):
    assert ENTRIES, "no starter entries"
    page = _page(browser, server, width)
    paths = [
        "/",
        "/search?q=shmdt",
        "/search?q=nothing-matches-this-at-all",
        "/analyze",
        "/docs",
        "/login",
        "/entries/no-such-entry",
        *(f"/entries/{e}" for e in ENTRIES),
    ]
    wide = {}
    for path in paths:
        page.goto(path)
        if (extra := _overflow(page)) > 0:
            wide[path] = extra
    _log_in(page)
    for path in ("/entries/new", f"/entries/{ENTRIES[0]}/edit"):
        page.goto(path)
        if (extra := _overflow(page)) > 0:
            wide[path] = extra
    # an analysis with long commands (a heredoc SQL, an iostat line) on its permalink page
    page.goto("/analyze")
    awr = CORPUS / "02_awr-text_11201-linux-2cpu-db-file-sequential-read-184ms-log-file-sync.txt"
    page.fill("textarea[name=text]", awr.read_text())
    page.click("form.analyzeform button[type=submit]")
    page.wait_for_url(re.compile(r"/analyze/[a-z0-9]+$"))
    expect(page.locator("section.triage li").first).to_be_visible()
    if (extra := _overflow(page)) > 0:
        wide["analysis"] = extra
    assert wide == {}, f"wider than {width} px by: {wide}"
    page.context.close()


def test_a_paste_too_big_is_refused_in_the_browser_with_the_text_kept(
    browser: Browser, server: str
):
    page = _page(browser, server, 390)
    page.goto("/analyze")
    expect(page.locator("p.limits")).to_contain_text("Paste up to 2 MB of text")
    big = "x" * (MAX_BODY + 10)
    page.evaluate("t => { document.querySelector('textarea[name=text]').value = t; }", big)
    requests: list[str] = []
    page.on("request", lambda r: requests.append(r.method))
    page.click("form.analyzeform button[type=submit]")
    alert = page.locator("[data-size-error]")
    expect(alert).to_be_visible()
    expect(alert).to_contain_text("The pasted text is 2.0 MB")
    expect(alert).to_contain_text("Your text is still in the box")
    assert page.url.endswith("/analyze")
    assert "POST" not in requests  # nothing was sent
    kept = page.evaluate("document.querySelector('textarea[name=text]').value.length")
    assert kept == len(big)
    page.context.close()


def test_healthz_answers_with_the_store(server: str):
    r = httpx.get(f"{server}/healthz", timeout=10)
    assert r.status_code == 200
    assert r.json()["status"] == "ok" and r.json()["entries"] == len(ENTRIES)


def test_search_results_export_as_csv_and_json(server: str):
    as_json = httpx.get(f"{server}/search.json", params={"q": "shmdt"}, timeout=10).json()
    assert as_json["total"] >= 1
    ids = [r["id"] for r in as_json["results"]]
    assert "numa-shmdt-disconnect-storm" in ids
    assert as_json["results"][0]["url"].startswith(server)
    r = httpx.get(f"{server}/search.csv", params={"q": "shmdt"}, timeout=10)
    assert r.headers["content-type"].startswith("text/csv")
    rows = list(csv.reader(io.StringIO(r.text)))
    assert rows[0][:2] == ["id", "title"]
    assert [row[0] for row in rows[1:]] == ids
    everything = httpx.get(f"{server}/search.json", timeout=10).json()
    assert len(everything["results"]) == everything["total"] == len(ENTRIES)


def test_csv_cells_never_start_like_a_formula():
    from kb.web.pages import _csv_cell

    assert _csv_cell("=HYPERLINK(1)") == "'=HYPERLINK(1)"
    assert _csv_cell("-2+3") == "'-2+3"
    assert _csv_cell("log file sync") == "log file sync"


def test_prose_is_not_saved_and_a_remote_reader_is_told_what_to_do(server: str):
    # nothing in it is evidence: no permalink, whoever asks
    with httpx.Client(base_url=server, timeout=30) as client:
        form = client.get("/analyze")
        token = re.search(r'name="csrf_token" value="([^"]+)"', form.text)
        field = "csrf_token"
        if token is None:
            m = re.search(r'<input type="hidden" name="([^"]+)" value="([^"]+)"', form.text)
            assert m
            field, value = m.group(1), m.group(2)
        else:
            value = token.group(1)
        r = client.post(
            "/analyze",
            data={field: value, "text": "the batch got slow this morning, no capture yet"},
            follow_redirects=False,
        )
        assert r.status_code == 200  # a page, not a redirect to a saved permalink
        assert "Not saved: perfkb found no capture it can read in this input." in r.text
        assert "recognised no capture" in r.text  # the triage sentence


def test_search_sorts_by_recently_updated(server: str):
    entry_id = "tx-row-lock-contention"
    headers = {"Authorization": f"Bearer {TOKEN}"}
    with httpx.Client(base_url=server, timeout=30) as client:
        entry = client.get(f"/api/entries/{entry_id}").json()
        entry["fix"] += " Commit sooner."
        r = client.put(f"/api/entries/{entry_id}", json=entry, headers=headers)
        assert r.status_code == 200, r.text
        page = client.get("/search", params={"sort": "updated"}).text
        relevance = client.get("/search").text
    first = re.search(r'<article class="hit">\s*<h2><a href="/entries/([^"]+)"', page)
    assert first and first.group(1) == entry_id
    assert "recently updated</strong>" in page and "updated 20" in page
    assert re.search(r'<article class="hit">\s*<h2><a href="/entries/([^"]+)"', relevance)[1] != (
        entry_id
    )
