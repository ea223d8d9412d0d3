"""The server-rendered pages, through the real app under uvicorn (real SQLite + whoosh in
tmp_path): search, entry pages, the postmortem form with CSRF, analysis with charts and
permalinks, escaping, size caps and error pages. Remote clients (for the login and proxy
identity paths) go through httpx's ASGITransport with a non-local client address."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import httpx
import pytest

from ingest.model import Block
from kb.settings import Settings
from kb.web.app import create_app
from kb.web.charts import block_charts, cpu_columns, hbars
from kb.web.devserver import running_server, seed_entries

SEEDS = Path(__file__).parent / "fixtures" / "seeds"
TOKEN_RE = re.compile(r'name="csrf_token" value="([^"]+)"')


def settings_for(data_dir: Path, **kw) -> Settings:
    base = {
        "data_dir": data_dir,
        "api_token": None,
        "proxy_user_header": None,
        "secret_key": None,
        "max_body_bytes": 512 * 1024,
        "max_file_bytes": 2 * 1024 * 1024,
    }
    return Settings(**{**base, **kw})


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    settings = settings_for(tmp_path_factory.mktemp("pages-data"))
    seed_entries(settings)
    with running_server(settings) as url:
        yield url


@pytest.fixture()
def client(server):
    with httpx.Client(base_url=server, timeout=30) as c:
        yield c


def csrf(client: httpx.Client, path: str) -> str:
    page = client.get(path)
    assert page.status_code == 200, page.text
    return TOKEN_RE.search(page.text)[1]


def entry_form(token: str, **kw) -> dict:
    """A postmortem form as a browser posts it; the numbers are made up for the test."""
    data = {
        "csrf_token": token,
        "id": "form-made-entry",
        "title": "Futex storm found in a form test",
        "symptom": "High sys CPU in futex.",
        "root_cause": "Lock convoy in a test.",
        "fix": "Shorter critical sections.",
        "platforms": ["linux"],
        "versions-0-product": "oracle",
        "versions-0-introduced": "19.3",
        "versions-0-fixed": "19.14, 21.5",
        "tags": "futex, form-test",
        "references": "https://example.com/futex",
        "commands-0-platform": "linux",
        "commands-0-command": "strace -c -f -p PID",
        "commands-0-why": "count futex calls",
        "signatures_yaml": (
            "- name: futex-heavy\n  sources: [strace]\n  weight: 0.6\n"
            "  when: {fact: syscall.count, key: futex, op: '>=', value: 1000}\n"
        ),
        "action": "save",
    }
    data.update(kw)
    return data


# ---- search -------------------------------------------------------------------------------------


def test_home_lists_entries_with_facets_and_the_localhost_banner(client):
    r = client.get("/")
    assert r.status_code == 200
    assert "changes are accepted only from localhost" in r.text
    assert (
        'href="/entries/' in r.text
    )  # the first page of entries (the starter KB has more than one page)
    assert 'href="/search?q=platform%3Asolaris"' in r.text  # a facet is a clickable filter
    assert r.headers["content-security-policy"].startswith("default-src 'self'")


def test_search_highlights_and_filters(client):
    r = client.get("/search", params={"q": "shmdt"})
    assert r.status_code == 200
    first = r.text.index('class="hit"')
    assert "/entries/numa-shmdt-disconnect-storm" in r.text[first : first + 400]
    assert "<mark>" in r.text
    chip = client.get("/search", params={"q": "shmdt platform:solaris"})
    assert 'class="chip" href="/search?q=shmdt"' in chip.text


def test_search_empty_state_and_bad_filter(client):
    r = client.get("/search", params={"q": "zzqqxxnothing"})
    assert "Nothing matched" in r.text
    assert "/search?q=shmdt" in r.text  # example queries
    bad = client.get("/search", params={"q": "platform:vms"})
    assert bad.status_code == 200
    assert "unknown platform" in bad.text


def test_search_paginates(tmp_path):
    settings = settings_for(tmp_path)
    app = create_app(settings)
    store = app.state.web.store
    from kb.models import validate_entry

    for i in range(23):
        store.add(
            validate_entry(
                {
                    "id": f"paged-{i:02d}",
                    "title": f"Paged entry number {i}",
                    "symptom": "pagination marker",
                    "root_cause": "r",
                    "fix": "f",
                    "platforms": ["any"],
                }
            ),
            author="test",
        )

    async def run():
        transport = httpx.ASGITransport(app=app, client=("127.0.0.1", 5000))
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as c:
            p1 = await c.get("/search", params={"q": "pagination"})
            p2 = await c.get("/search", params={"q": "pagination", "page": 2})
            p9 = await c.get("/search", params={"q": "pagination", "page": 9})
            return p1.text, p2.text, p9.text

    try:
        p1, p2, p9 = asyncio.run(run())
    finally:
        store.close()
    assert "23 entries" in p1 and "page 1 of 2" in p1
    assert 'rel="next"' in p1 and "page=2" in p1
    assert p1.count('class="hit"') == 20 and p2.count('class="hit"') == 3
    assert p9.count('class="hit"') == 3 and "page 2 of 2" in p9


# ---- entry pages --------------------------------------------------------------------------------


def test_entry_page_shows_every_part(client):
    r = client.get("/entries/numa-shmdt-disconnect-storm")
    assert r.status_code == 200
    text = r.text
    for part in (
        "Symptom",
        "Root cause",
        "Fix",
        "Signatures",
        "Next commands",
        "Versions",
        "References",
        "History",
        "feedback",
    ):
        assert part in text
    assert "syscall.avg_ms[shmdt]" in text  # a readable condition
    assert 'data-copy="ipcs -ma"' in text  # copy button for a next command
    assert 'href="/entries/numa-shmdt-disconnect-storm/edit"' in text
    assert "https://www.pythian.com/" in text


def test_missing_entry_is_a_friendly_404(client):
    r = client.get("/entries/no-such-thing")
    assert r.status_code == 404
    assert "no entry &#39;no-such-thing&#39;" in r.text and "Traceback" not in r.text
    assert "<html" in r.text


# ---- the postmortem form ------------------------------------------------------------------------


def test_create_then_edit_keeps_two_revisions(client):
    token = csrf(client, "/entries/new")
    r = client.post("/entries/new", data=entry_form(token))
    assert r.status_code == 303, r.text
    assert r.headers["location"] == "/entries/form-made-entry"
    page = client.get("/entries/form-made-entry").text
    assert "Futex storm found in a form test" in page
    assert "19.14, 21.5" in page
    assert "syscall.count[futex] ≥ 1000" in page

    edit = client.get("/entries/form-made-entry/edit")
    assert 'value="Futex storm found in a form test"' in edit.text
    base_rev = re.search(r'name="base_rev" value="(\d+)"', edit.text)[1]
    token = TOKEN_RE.search(edit.text)[1]
    changed = entry_form(token, title="Futex storm, edited", base_rev=base_rev)
    r = client.post("/entries/form-made-entry/edit", data=changed)
    assert r.status_code == 303, r.text
    page = client.get("/entries/form-made-entry").text
    assert "Futex storm, edited" in page
    assert page.count('class="rev"') == 2
    assert '<span class="add">+title: Futex storm, edited</span>' in page

    stale = client.post("/entries/form-made-entry/edit", data={**changed, "title": "Stale edit"})
    assert stale.status_code == 409
    assert "someone else" in stale.text


def test_form_errors_are_shown_next_to_their_fields(client):
    token = csrf(client, "/entries/new")
    bad = entry_form(
        token,
        id="Bad Id",
        tags="OK, Not!Valid",
        platforms=[],
        signatures_yaml="- name: x\n  sources: [truss]\n  when: {fact: nope, op: '>', value: 1}",
    )
    r = client.post("/entries/new", data=bad)
    assert r.status_code == 422
    assert "The entry was not saved" in r.text
    for field in ("f-id", "f-tags", "f-signatures"):
        after = r.text[r.text.index(f'id="{field}"') :]
        assert after.index('class="fielderror"') < after.index("<label")
    assert "unknown fact" in r.text
    yaml_err = client.post("/entries/new", data=entry_form(token, signatures_yaml="- [unclosed"))
    assert yaml_err.status_code == 422 and "YAML line" in yaml_err.text
    dup = client.post("/entries/new", data=entry_form(token, id="numa-shmdt-disconnect-storm"))
    assert dup.status_code == 409 and "already exists" in dup.text


def test_propose_and_preview_from_pasted_evidence(client):
    token = csrf(client, "/entries/new")
    evidence = (SEEDS / "001_truss_shmdt.txt").read_text()
    r = client.post(
        "/entries/new",
        data=entry_form(token, action="propose", evidence=evidence, signatures_yaml=""),
    )
    assert r.status_code == 200
    assert "Proposed signature" in r.text
    assert "shmdt" in r.text.split('id="f-signatures"')[1].split("</textarea>")[0]
    proposed = re.search(r'id="f-signatures"(?:[^>"]|"[^"]*")*>(.*?)</textarea>', r.text, re.S)[1]
    import html

    preview = client.post(
        "/entries/new",
        data=entry_form(
            token, action="preview", evidence=evidence, signatures_yaml=html.unescape(proposed)
        ),
    )
    assert preview.status_code == 200, preview.text
    assert 'id="preview"' in preview.text and 'data-match="form-made-entry"' in preview.text
    assert client.get("/entries/form-made-entry").status_code in (200, 404)  # preview saves nothing


def test_post_without_or_with_a_foreign_csrf_token_is_refused(client, server):
    token = csrf(client, "/entries/new")
    form = entry_form(token, id="csrf-less-entry")
    del form["csrf_token"]
    r = client.post("/entries/new", data=form)
    assert r.status_code == 403 and "security token" in r.text
    with httpx.Client(base_url=server) as other:  # another browser's token does not fit ours
        foreign = csrf(other, "/entries/new")
    r = client.post("/entries/new", data={**form, "csrf_token": foreign})
    assert r.status_code == 403
    assert client.get("/entries/csrf-less-entry").status_code == 404
    assert client.post("/analyze", data={"text": "x"}).status_code == 403


def test_stored_markup_is_rendered_as_text(client):
    token = csrf(client, "/entries/new")
    hostile = entry_form(
        token,
        id="xss-entry",
        title="<script>alert(1)</script> title",
        symptom='<img src=x onerror="alert(2)">',
        tags="xss",
    )
    assert client.post("/entries/new", data=hostile).status_code == 303
    page = client.get("/entries/xss-entry").text
    assert "<script>alert(1)" not in page and "<img src=x" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    found = client.get("/search", params={"q": "xss-entry alert"}).text
    assert "<script>alert" not in found and "<img src=x" not in found


def test_delete_from_the_entry_page(client):
    token = csrf(client, "/entries/new")
    assert client.post("/entries/new", data=entry_form(token, id="to-delete")).status_code == 303
    token = csrf(client, "/entries/to-delete")
    r = client.post("/entries/to-delete/delete", data={"csrf_token": token})
    assert r.status_code == 303
    assert client.get("/entries/to-delete").status_code == 404


# ---- analyze ------------------------------------------------------------------------------------


def test_analyze_page_shows_findings_escaped(client):
    """The strace parser's finding (what the slow call was on) is on the page, its evidence
    text escaped."""
    token = csrf(client, "/analyze")
    text = (
        '[pid 9] 10:00:00.000001 openat(AT_FDCWD, "/tmp/<b>x</b>", O_RDONLY) = 5 <0.000010>\n'
        '[pid 9] 10:00:00.000100 read(5, "z", 1) = 1 <2.000000>\n'
        '[pid 9] 10:00:02.000200 read(5, "z", 1) = 1 <0.000010>\n'
    )
    r = client.post("/analyze", data={"csrf_token": token, "text": text})
    page = client.get(r.headers["location"])
    assert page.status_code == 200
    assert (
        '<ul class="findings"><li>Slowest call: read 2,000 ms on /tmp/&lt;b&gt;x&lt;/b&gt;'
        in page.text
    )


def test_analyze_paste_redirects_to_a_permalink(client):
    token = csrf(client, "/analyze")
    text = (SEEDS / "000_pstack_122.txt").read_text()
    r = client.post("/analyze", data={"csrf_token": token, "text": text})
    assert r.status_code == 303
    # the wait for an analysis slot and the time holding it, as POST /api/analyze says them
    timing = r.headers["server-timing"]
    assert re.fullmatch(r"queue;dur=\d+\.\d, analyze;dur=\d+\.\d", timing), timing
    link = r.headers["location"]
    assert re.fullmatch(r"/analyze/[a-z0-9]+", link)
    page = client.get(link)
    assert page.status_code == 200
    first = page.text.index('class="match ')
    assert 'data-match="oraus-msb-exception-reads"' in page.text[first : first + 200]
    assert "What perfkb read" in page.text and "stack" in page.text

    vote = {"csrf_token": token, "entry_id": "oraus-msb-exception-reads", "verdict": "right"}
    r = client.post(f"{link}/feedback", data=vote)
    assert r.status_code == 303 and r.headers["location"] == f"{link}?feedback=saved"
    assert "1 right, 0 wrong" in client.get(link).text
    entry = client.get("/entries/oraus-msb-exception-reads").text
    assert "1 right</span>" in entry
    bad = client.post(f"{link}/feedback", data={**vote, "entry_id": "numa-shmdt-disconnect-storm"})
    assert bad.status_code == 400
    assert client.post(f"{link}/feedback", data={**vote, "csrf_token": ""}).status_code == 403
    assert client.get("/analyze/doesnotexist").status_code == 404


def test_analyze_upload_draws_charts(client):
    token = csrf(client, "/analyze")
    capture = (
        (SEEDS / "001_mpstat.txt").read_text() + "\n" + (SEEDS / "001_truss_shmdt.txt").read_text()
    )
    files = {"file": ("capture.txt", capture.encode(), "text/plain")}
    r = client.post("/analyze", data={"csrf_token": token, "text": ""}, files=files)
    assert r.status_code == 303
    page = client.get(r.headers["location"]).text
    assert page.count("<svg") >= 2
    assert 'class="cpu-sys"' in page  # per-CPU stacked bars
    assert "shmdt" in page and 'data-match="numa-shmdt-disconnect-storm"' in page


def test_analyze_a_raw_10046_trace_shows_its_profile_chart(client):
    token = csrf(client, "/analyze")
    trace = Path(__file__).parent / "fixtures" / "oracle" / "trace10046_19c_pasted.txt"
    r = client.post("/analyze", data={"csrf_token": token, "text": trace.read_text()})
    assert r.status_code == 303
    page = client.get(r.headers["location"]).text
    assert "Response-time profile" in page and "<svg" in page
    assert "trace10046.profile_pct" in page and "db file sequential read" in page


def test_analyze_empty_and_oversized_input(client):
    token = csrf(client, "/analyze")
    empty = client.post("/analyze", data={"csrf_token": token, "text": "   "})
    assert empty.status_code == 400 and "Paste some evidence" in empty.text
    huge = client.post("/analyze", data={"csrf_token": token, "text": "x" * (3 * 1024 * 1024)})
    assert huge.status_code == 413 and "larger than this server accepts" in huge.text
    form_cap = client.post("/entries/new", data={"csrf_token": token, "symptom": "y" * 600_000})
    assert form_cap.status_code == 413
    # within the upload cap but over the text-field cap: told to upload it as a file
    pasted = client.post(
        "/analyze",
        data={"csrf_token": token, "text": "z" * 600_000},
        files={"file": ("", b"", "application/octet-stream")},
    )
    assert pasted.status_code == 413 and "Upload a large capture as a file" in pasted.text


def test_binary_garbage_is_refused_without_a_crash(client):
    token = csrf(client, "/analyze")
    files = {
        "file": ("junk.bin", bytes(range(256)) * 200 + b"\x00" * 5000, "application/octet-stream")
    }
    r = client.post("/analyze", data={"csrf_token": token}, files=files)
    assert r.status_code == 415  # binary data is refused with the reason (issue 9)
    assert "junk.bin is not a text capture: it contains NUL bytes" in r.text


# ---- identity: login with the token, and a trusted proxy header --------------------------------


def _remote(app) -> httpx.AsyncClient:
    transport = httpx.ASGITransport(app=app, client=("10.9.8.7", 51000))
    return httpx.AsyncClient(transport=transport, base_url="http://perfkb.example")


def test_login_with_the_token_opens_writes(tmp_path):
    app = create_app(settings_for(tmp_path, api_token="page-token-0123456789abcdef"))

    async def run():
        async with _remote(app) as c:
            home = await c.get("/")
            assert "changes are accepted only from localhost" not in home.text
            assert 'href="/login' in home.text
            assert (await c.get("/entries/new")).status_code == 401
            token = TOKEN_RE.search((await c.get("/login")).text)[1]
            wrong = await c.post("/login", data={"csrf_token": token, "name": "ann", "token": "no"})
            assert wrong.status_code == 401 and "not right" in wrong.text
            ok = await c.post(
                "/login",
                data={
                    "csrf_token": token,
                    "name": "ann",
                    "token": "page-token-0123456789abcdef",
                    "next": "//evil.example/",
                },
            )
            assert ok.status_code == 303 and ok.headers["location"] == "/"
            form = await c.get("/entries/new")
            assert form.status_code == 200 and "Log out ann" in form.text
            token = TOKEN_RE.search(form.text)[1]
            made = await c.post("/entries/new", data=entry_form(token, id="by-ann"))
            assert made.status_code == 303
            page = await c.get("/entries/by-ann")
            assert "by ann" in page.text

    try:
        asyncio.run(run())
    finally:
        app.state.web.store.close()


def test_proxy_header_names_the_user_and_nobody_else_writes(tmp_path):
    app = create_app(settings_for(tmp_path, proxy_user_header="X-Forwarded-User"))

    async def run():
        async with _remote(app) as c:
            token = TOKEN_RE.search((await c.get("/analyze")).text)[1]
            anon = await c.post("/entries/new", data=entry_form(token, id="anon-entry"))
            assert anon.status_code == 401
            # an anonymous analysis still works, it is just not saved (and says how to get saved)
            evidence = (SEEDS / "000_pstack_122.txt").read_text()
            result = await c.post("/analyze", data={"csrf_token": token, "text": evidence})
            assert result.status_code == 200
            assert "Not saved: sign in through your team&#39;s login proxy" in result.text
            c.headers["X-Forwarded-User"] = "bob@example.com"
            made = await c.post("/entries/new", data=entry_form(token, id="by-bob"))
            assert made.status_code == 303
            history = (await c.get("/entries/by-bob")).text
            assert "by bob@example.com" in history

    try:
        asyncio.run(run())
    finally:
        app.state.web.store.close()


# ---- charts -------------------------------------------------------------------------------------


def test_chart_text_is_escaped():
    svg = hbars([('<script>alert("x")</script>', 5.0), ("read", 2.0)], title="<b>t</b>")
    assert "<script>" not in svg and "&lt;script&gt;" in svg
    assert "<b>" not in svg
    cols = cpu_columns([("<i>0</i>", {"usr": 10, "sys": 80, "wait": 0, "idle": 10})], title="c")
    assert "<i>" not in cols and 'class="cpu-sys"' in cols


def test_block_charts_for_each_format():
    truss = Block(
        format="truss",
        start_line=1,
        end_line=2,
        facts={"syscall.total_ms": {"shmdt": 240.0, "close": 1.0}},
    )
    waits = Block(
        format="waits",
        start_line=1,
        end_line=2,
        facts={"event.waited_s": {"control file parallel write": 3.86, "direct path sync": 1.25}},
    )
    tkprof = Block(
        format="tkprof",
        start_line=1,
        end_line=2,
        facts={"tkprof.elapsed_s": 10.0, "tkprof.cpu_s": 2.0, "tkprof.waited_s": 3.0},
    )
    assert "Time by syscall" in [c for c, _ in block_charts(truss)]
    assert "control file parallel write" in block_charts(waits)[0][1]
    captions = [c for c, _ in block_charts(tkprof)]
    assert any("unaccounted" in c for c in captions)
    assert "50%" in dict(block_charts(tkprof))[captions[-1]]  # 5 of 10 s unaccounted
    assert block_charts(Block(format="unknown", start_line=1, end_line=1)) == []
    trace = Block(
        format="trace10046",
        start_line=1,
        end_line=2,
        facts={
            "trace10046.profile_s": {
                "CPU service (dep=0 calls)": 1.5,
                "db file sequential read": 0.5,
            },
            "trace10046.profile_pct": {
                "CPU service (dep=0 calls)": 75.0,
                "db file sequential read": 25.0,
            },
        },
    )
    caption, svg = block_charts(trace)[0]
    assert caption.startswith("Response-time profile")
    assert "db file sequential read" in svg and "0.5 s" in svg


def test_internal_errors_render_a_friendly_page(tmp_path):
    app = create_app(settings_for(tmp_path))

    def boom() -> None:
        raise RuntimeError("secret internals")

    app.add_api_route("/boom", boom)
    app.add_api_route("/api/boom", boom)
    bad_id = app.state.web.store.save_analysis("text", "this is not a result")

    async def run():
        transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as c:
            page = await c.get("/boom")
            api = await c.get("/api/boom")
            gone = await c.get(f"/analyze/{bad_id}")
            return page, api, gone

    try:
        page, api, gone = asyncio.run(run())
    finally:
        app.state.web.store.close()
    assert page.status_code == 500 and "internal error" in page.text
    assert "secret internals" not in page.text and "Traceback" not in page.text
    assert api.status_code == 500 and "secret internals" not in api.text
    assert gone.status_code == 410 and "cannot be shown" in gone.text


def test_entry_page_shows_look_alikes_and_command_caveats(client):
    """Issue 16: the look-alikes and each command's conditions (licence, intrusive) are on the page."""
    r = client.get("/entries/sequential-read-bad-plan")
    assert r.status_code == 200
    assert "Look-alikes" in r.text and 'href="/entries/io-latency-one-device"' in r.text
    assert "needs the Diagnostics Pack" in r.text and "intrusive:" in r.text
