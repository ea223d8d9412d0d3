"""The web page in real headless Chromium (Debian's /usr/bin/chromium, driven by Playwright):
search, analyze, the postmortem form with login and revisions, escaping of hostile entries,
CSRF refusal and API auth. One browser for the module; a fresh context (cookies) per test."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, expect, sync_playwright

from kb.settings import Settings
from kb.web.devserver import running_server, seed_entries

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--no-sandbox", "--disable-background-networking", "--disable-gpu"]
TOKEN = "browser-test-token-0123456789"
SEEDS = Path(__file__).parent / "fixtures" / "seeds"


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    settings = Settings(
        data_dir=tmp_path_factory.mktemp("browser-data"),
        api_token=TOKEN,
        proxy_user_header=None,
        secret_key=None,
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


@pytest.fixture()
def page(browser: Browser, server: str):
    context = browser.new_context(base_url=server, viewport={"width": 1280, "height": 900})
    p = context.new_page()
    dialogs: list[str] = []
    p.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    p.dialogs = dialogs  # type: ignore[attr-defined]
    yield p
    context.close()


def log_in(page: Page, name: str = "pat") -> None:
    page.goto("/login")
    page.fill("input[name=name]", name)
    page.fill("input[name=token]", TOKEN)
    page.click("form.stack button[type=submit]")
    expect(page.locator("nav.nav")).to_contain_text(f"Log out {name}")


def test_search_shmdt_shows_the_numa_entry(page: Page):
    page.goto("/analyze")
    page.keyboard.press("/")  # keyboard-friendly: '/' focuses the search box from any page
    page.keyboard.type("shmdt")
    page.keyboard.press("Enter")
    page.wait_for_url(re.compile(r"/search\?q=shmdt"))
    first = page.locator("article.hit").first
    expect(first.locator("h2 a")).to_have_attribute("href", "/entries/numa-shmdt-disconnect-storm")
    expect(first.locator("mark").first).to_have_text(re.compile("shmdt", re.I))


def test_pasted_pstack_puts_the_oraus_entry_first(page: Page):
    log_in(page)
    page.goto("/analyze")
    page.fill("textarea[name=text]", (SEEDS / "000_pstack_122.txt").read_text())
    page.click("form.analyzeform button[type=submit]")
    page.wait_for_url(re.compile(r"/analyze/[a-z0-9]+$"))
    expect(page.locator("article.match").first).to_have_attribute(
        "data-match", "oraus-msb-exception-reads"
    )
    expect(page.locator(".permalink")).to_contain_text("/analyze/")
    page.context.grant_permissions(["clipboard-read", "clipboard-write"])
    copy = page.locator(".next button.copy").first
    copy.click()
    expect(copy).to_have_text("Copied")
    command = page.locator(".next .cmdline code").first.inner_text()
    assert page.evaluate("navigator.clipboard.readText()") == command


def test_create_find_edit_and_see_two_revisions(page: Page):
    log_in(page)
    page.goto("/entries/new")
    page.fill("#f-id", "browser-made-entry")
    page.fill("#f-title", "Semaphore convoy seen from a browser test")
    page.fill("#f-symptom", "Sessions pile up in semtimedop.")
    page.fill("#f-root_cause", "A made-up cause for the browser test.")
    page.fill("#f-fix", "A made-up fix.")
    page.check("input[name=platforms][value=linux]")
    page.fill("#f-tags", "semtimedop, browser-test")
    page.click("button[value=save]")
    page.wait_for_url("**/entries/browser-made-entry")
    expect(page.locator("h1")).to_have_text("Semaphore convoy seen from a browser test")

    page.fill("input[data-search-box]", "semtimedop convoy")
    page.keyboard.press("Enter")
    link = page.locator("article.hit h2 a").first
    expect(link).to_have_attribute("href", "/entries/browser-made-entry")
    link.click()
    page.click("a.button:text('Edit')")
    page.fill("#f-title", "Semaphore convoy, edited in the browser")
    page.click("button[value=save]")
    page.wait_for_url("**/entries/browser-made-entry")
    expect(page.locator("h1")).to_have_text("Semaphore convoy, edited in the browser")
    expect(page.locator("li.rev")).to_have_count(2)
    expect(page.locator("li.rev").first).to_contain_text("update by pat")
    expect(page.locator("pre.diff .add").first).to_contain_text("edited in the browser")


def test_hostile_text_renders_as_text(page: Page, server: str):
    entry = {
        "id": "hostile-entry",
        "title": "<script>window.__pwned = 1; alert('t')</script> hostile",
        "symptom": "<img src=x onerror=\"window.__pwned = 2; alert('s')\"> in the symptom",
        "root_cause": "<b>bold?</b>",
        "fix": "</textarea><script>alert('f')</script>",
        "platforms": ["any"],
        "tags": ["hostile"],
    }
    r = page.request.post(
        f"{server}/api/entries",
        data=json.dumps(entry),
        headers={"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"},
    )
    assert r.status == 201, r.text()
    for path in ("/entries/hostile-entry", "/search?q=hostile", "/entries/hostile-entry/edit"):
        if path.endswith("/edit"):
            log_in(page)
        page.goto(path)
        assert page.locator("main script, main img, main [onerror]").count() == 0
        assert page.locator("main b", has_text="bold?").count() == 0
        assert page.evaluate("window.__pwned") is None
    page.goto("/entries/hostile-entry")
    expect(page.locator("h1")).to_contain_text("<script>window.__pwned")
    expect(page.locator(".prose")).to_contain_text('<img src=x onerror="window.__pwned = 2')
    assert page.dialogs == []  # type: ignore[attr-defined]


def test_form_post_without_csrf_token_is_refused(page: Page):
    log_in(page)
    page.goto("/entries/new")
    page.fill("#f-id", "no-csrf-entry")
    page.fill("#f-title", "Should never be saved")
    page.evaluate("document.querySelector('form.entryform input[name=csrf_token]').remove()")
    page.click("button[value=save]")
    expect(page.locator("h1")).to_have_text("Not allowed")
    expect(page.locator("main")).to_contain_text("security token")
    assert page.request.get("/api/entries/no-csrf-entry").status == 404


def test_unauthenticated_api_write_gets_401(page: Page, server: str):
    body = {
        "id": "anon-api",
        "title": "anonymous",
        "symptom": "s",
        "root_cause": "r",
        "fix": "f",
        "platforms": ["any"],
    }
    r = page.request.post(
        f"{server}/api/entries", data=json.dumps(body), headers={"Content-Type": "application/json"}
    )
    assert r.status == 401
    assert "Bearer" in r.json()["detail"]
    assert page.request.get(f"{server}/api/entries/anon-api").status == 404
