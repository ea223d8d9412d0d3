"""Issue #20 item 1 and 6: no entry can break the KB. Every surface (JSON API, YAML through the
CLI, the Slack modal) refuses what cannot be stored and read back, the store itself refuses an
entry that does not round-trip (the one gate), and a KB that already holds a bad row (written
here with raw SQL, as an older perfkb or a hand edit could have) still serves every page, the
API, search, analyze, check, backup and export, names the row, and lets `perfkb delete` or
`perfkb check --repair` remove it."""

from __future__ import annotations

import json
import sqlite3
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from conftest import entry_data
from typer.testing import CliRunner

from kb.cli import app
from kb.models import MAX_TAGS, Entry, validate_entry
from kb.settings import Settings
from kb.signatures import MAX_CONDITION_DEPTH, FactCondition, Signature
from kb.store import Store, StoreError
from kb.web.devserver import running_server

pytestmark = pytest.mark.timeout(180)

TOKEN = "poison-test-token-7Hq2Lm9Xv4Rt"
AUTH = {"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"}
SEED = Path(__file__).parent / "fixtures" / "seeds" / "001_truss_shmdt.txt"
LEAF = {"fact": "syscall.count", "key": "shmdt", "op": ">=", "value": 5}


def nested(kind: str, levels: int) -> dict[str, Any]:
    node: dict[str, Any] = dict(LEAF)
    for _ in range(levels):
        node = {kind: [node]} if kind in ("all", "any") else {kind: node}
    return node


def body(entry_id: str, **overrides: Any) -> dict[str, Any]:
    data = json.loads(json.dumps(entry_data(entry_id), default=str))
    data.update(overrides)
    return data


def with_when(entry_id: str, when: Any) -> dict[str, Any]:
    data = body(entry_id)
    data["signatures"][0]["when"] = when
    return data


def settings_for(data_dir: Path, **kw: Any) -> Settings:
    base = {
        "data_dir": data_dir,
        "api_token": TOKEN,
        "proxy_user_header": None,
        "secret_key": None,
        "max_body_bytes": 4 * 1024 * 1024,
        "max_file_bytes": 1024 * 1024,
    }
    return Settings(**{**base, **kw})


# -- every surface refuses what cannot round-trip ---------------------------------------------


POISON = {
    "json-1e999": (
        lambda: json.dumps(with_when("p-inf", LEAF)).replace('"value": 5', '"value": 1e999'),
        "finite",
    ),
    "json-nan": (
        lambda: json.dumps(with_when("p-nan", LEAF)).replace('"value": 5', '"value": NaN'),
        "finite",
    ),
    "times-inf": (
        lambda: json.dumps(
            with_when(
                "p-times",
                {
                    "fact": "syscall.count",
                    "key": "shmdt",
                    "op": ">=",
                    "ref": {"fact": "syscall.count", "key": "semop", "times": 1e999},
                },
            )
        ),
        "finite",
    ),
    "all-150": (lambda: json.dumps(with_when("p-all", nested("all", 150))), "nest"),
    "any-120": (lambda: json.dumps(with_when("p-any", nested("any", 120))), "nest"),
    "not-250": (lambda: json.dumps(with_when("p-not", nested("not", 250))), "nest"),
    "many-conditions": (
        lambda: json.dumps(with_when("p-wide", {"any": [dict(LEAF) for _ in range(500)]})),
        "conditions",
    ),
    "many-signatures": (
        lambda: json.dumps(
            body(
                "p-sigs",
                signatures=[
                    {"name": f"s{i}", "sources": ["truss"], "when": dict(LEAF)} for i in range(60)
                ],
            )
        ),
        "signatures",
    ),
    "long-tag": (lambda: json.dumps(body("p-tag", tags=["9" * 5000])), "at most 64"),
    "huge-int-tag": (
        lambda: json.dumps(body("p-int", tags=["x"])).replace('["x"]', "[" + "9" * 5000 + "]"),
        "JSON",
    ),
    "author-escape": (lambda: json.dumps(body("p-author", author="eve\x1b[31m")), "control"),
    "title-newline": (lambda: json.dumps(body("p-title", title="two\nlines")), "line break"),
    "symptom-nul": (lambda: json.dumps(body("p-nul", symptom="a\x00b")), "control"),
    "long-prose": (lambda: json.dumps(body("p-prose", fix="x" * 60_000)), "at most"),
    "many-commands": (
        lambda: json.dumps(
            body(
                "p-cmds",
                next_commands=[{"command": "id", "platform": "linux", "why": "w"}] * 60,
            )
        ),
        "next commands",
    ),
}


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    settings = settings_for(tmp_path_factory.mktemp("poison-api"))
    with Store(settings) as store:
        store.add(validate_entry(entry_data("survivor")), author="seed")
    with running_server(settings) as url:
        yield url, settings


@pytest.mark.parametrize("name", sorted(POISON))
def test_the_api_refuses_poison_with_422_and_commits_nothing(server, name):
    url, settings = server
    make, needle = POISON[name]
    with httpx.Client(base_url=url, timeout=60) as client:
        r = client.post("/api/entries", content=make(), headers=AUTH)
        assert r.status_code == 422, r.text
        assert needle in json.dumps(r.json()), r.text
        # the KB is untouched and every read still works
        assert [e["id"] for e in client.get("/api/entries").json()] == ["survivor"]
        assert client.get("/").status_code == 200
        assert client.get("/search", params={"q": "shmdt"}).status_code == 200
        assert client.get("/entries/survivor").status_code == 200
    with sqlite3.connect(settings.db_path) as conn:
        assert conn.execute("SELECT COUNT(*) FROM revisions").fetchone() == (1,)


def test_200000_tags_are_refused_fast_everywhere(server, tmp_path):
    """The bounds catch quadratic work, not a slow box: a list scan per tag over 200,000 tags is
    2 x 10^10 comparisons (minutes). Measured 2026-12-02 at load 2-3.6 on 2 cores beside a CI
    run: the API refusal 0.5 s, the CLI's (YAML parse included) 5.7 s, over half the 10 s bound
    it had, so a busier box failed it; 30 s and 60 s still fail anything quadratic."""
    url, _ = server
    many = body("p-many-tags", tags=[f"t{i}" for i in range(200_000)])
    started = time.perf_counter()
    with httpx.Client(base_url=url, timeout=60) as client:
        r = client.post("/api/entries", content=json.dumps(many), headers=AUTH)
    assert r.status_code == 422 and f"at most {MAX_TAGS}" in r.text
    assert time.perf_counter() - started < 30
    # YAML through the CLI too
    path = tmp_path / "many-tags.yaml"
    path.write_text(
        "id: p-many-tags\ntitle: many tags\nsymptom: s\nroot_cause: r\nfix: f\n"
        "platforms: [linux]\ntags: [" + ", ".join(f"t{i}" for i in range(200_000)) + "]\n"
    )
    started = time.perf_counter()
    result = CliRunner().invoke(app, ["--data-dir", str(tmp_path / "d"), "add", str(path)])
    assert result.exit_code == 1
    assert f"200000 tags; at most {MAX_TAGS}" in result.stderr
    assert time.perf_counter() - started < 60


def test_tags_are_lowercased_and_deduplicated_in_first_seen_order():
    """The de-duplication is a dict now (it was a list scan per tag: quadratic)."""
    assert validate_entry(entry_data("dups", tags=["B", "a", " b ", "A", "c"])).tags == [
        "b",
        "a",
        "c",
    ]
    assert validate_entry(entry_data("dups", tags=["numa"] * MAX_TAGS)).tags == ["numa"]


def test_the_store_refuses_an_entry_that_does_not_read_back(settings):
    """The gate in Store._write, below every adapter: an Entry built without validation (as a
    bug in any surface could) that would not survive JSON is refused inside the transaction."""
    good = validate_entry(entry_data("gate"))
    bad_cond = FactCondition.model_construct(
        fact="syscall.count", key="shmdt", op=">=", value=float("inf"), ref=None
    )
    bad_sig = Signature.model_construct(**{**dict(good.signatures[0]), "when": bad_cond})
    bad = Entry.model_construct(**{**dict(good), "signatures": [bad_sig]})
    with Store(settings) as store:
        with pytest.raises(StoreError, match="cannot be stored"):
            store.add(bad, author="t")
        assert store.count() == 0 and store.data_version() == 0
        store.add(good, author="t")
        with pytest.raises(StoreError, match="cannot be stored"):
            store.update(bad, author="t")
        assert store.get("gate") == good
        assert [r.action for r in store.history("gate")] == ["create"]


def test_the_slack_modal_refuses_a_poison_signature():
    import tempfile

    from slack_stub import running_harness
    from test_bot_interactive import open_shortcut, seed, submit

    with tempfile.TemporaryDirectory() as tmp, running_harness(Path(tmp)) as bot:
        before = bot.store.data_version()
        view = open_shortcut(bot, "C0POISON", "1700000900.000100", seed("001_truss_shmdt.txt"))
        poison = (
            "- name: p\n  sources: [truss]\n"
            "  when: {fact: syscall.count, key: shmdt, op: '>=', value: .inf}\n"
        )
        resp = submit(
            bot,
            view,
            title="Poison by modal",
            symptom="s",
            root_cause="r",
            fix="f",
            signatures=poison,
        )
        assert resp.json()["response_action"] == "errors"
        assert "finite" in json.dumps(resp.json()["errors"])
        deep = "- name: p\n  sources: [truss]\n  when: " + json.dumps(nested("not", 40)) + "\n"
        resp = submit(
            bot,
            view,
            title="Deep by modal",
            symptom="s",
            root_cause="r",
            fix="f",
            signatures=deep,
        )
        assert resp.json()["response_action"] == "errors"
        assert f"more than {MAX_CONDITION_DEPTH} levels" in json.dumps(resp.json()["errors"])
        assert bot.store.data_version() == before  # nothing was written


# -- a KB that already holds bad rows ---------------------------------------------------------


def plant_bad_rows(db: Path) -> list[str]:
    """Two rows no perfkb would write now: a non-finite value stored as null (what JSON makes
    of inf) and a tree deeper than the JSON reader accepts."""
    rows = []
    inf_as_null = with_when("poison-null", dict(LEAF, value=None, ref=None))
    deep = with_when("poison-deep", nested("all", 150))
    with sqlite3.connect(db) as conn:
        for data in (inf_as_null, deep):
            text = json.dumps(data)
            conn.execute(
                "INSERT INTO entries (id, title, data, deleted, created, updated, rev)"
                " VALUES (?, ?, ?, 0, ?, ?, 1)",
                (data["id"], data["title"], text, data["created"], data["updated"]),
            )
            conn.execute(
                "INSERT INTO revisions (entry_id, rev, author, at, action, changed_fields,"
                " snapshot) VALUES (?, 1, 'sql', '2024-05-01T12:00:00+00:00', 'create', '[]', ?)",
                (data["id"], text),
            )
            rows.append(data["id"])
    return rows


@pytest.fixture
def poisoned(tmp_path) -> Settings:
    settings = settings_for(tmp_path / "data")
    with Store(settings) as store:
        store.add(validate_entry(entry_data("survivor")), author="seed")
    plant_bad_rows(settings.db_path)
    return settings


def test_the_web_app_and_api_still_work_and_name_the_bad_row(poisoned):
    with running_server(poisoned) as url, httpx.Client(base_url=url, timeout=60) as client:
        for path in ("/", "/search?q=shmdt", "/search?q=poison", "/entries/survivor", "/analyze"):
            assert client.get(path).status_code == 200, path
        assert [e["id"] for e in client.get("/api/entries").json()] == ["survivor"]
        found = client.get("/api/search", params={"q": "sample"}).json()
        assert [h["id"] for h in found["results"]] == ["survivor"]
        r = client.get("/api/entries/poison-null")
        assert r.status_code == 404
        assert "poison-null" in r.text and "perfkb delete poison-null" in r.text
        assert client.get("/entries/poison-deep").status_code == 404
        assert client.get("/api/entries/poison-deep/history").status_code == 200
        r = client.post("/api/analyze", json={"text": SEED.read_text()})
        assert r.status_code == 200 and "survivor" in r.text
        # the API's delete removes it too
        r = client.delete("/api/entries/poison-null", headers=AUTH)
        assert r.status_code == 204, r.text
        assert client.get("/api/entries/poison-null").status_code == 404


def cli(settings: Settings, *args: str):
    result = CliRunner().invoke(app, ["--data-dir", str(settings.data_dir), *args])
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    assert "internal error" not in result.stderr, result.stderr
    return result


def test_the_cli_works_reports_and_repairs(poisoned, tmp_path):
    assert cli(poisoned, "search", "sample").exit_code == 0
    assert "survivor" in cli(poisoned, "analyze", str(SEED)).stdout
    shown = cli(poisoned, "show", "poison-null")
    assert shown.exit_code == 1 and "perfkb delete poison-null" in shown.stderr

    report = cli(poisoned, "check", "--no-repair", "--json")
    assert report.exit_code == 1
    assert sorted(json.loads(report.stdout)["unreadable"]) == ["poison-deep", "poison-null"]

    backed = cli(poisoned, "backup", str(tmp_path / "b.sqlite3"))
    assert backed.exit_code == 0 and "poison-deep, poison-null" in backed.stderr
    exported = cli(poisoned, "export", str(tmp_path / "out"))
    assert exported.exit_code == 0
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["survivor.yaml"]

    assert cli(poisoned, "delete", "poison-deep").exit_code == 0
    repaired = cli(poisoned, "check", "--repair")
    assert repaired.exit_code == 0
    assert "unreadable entry poison-null" in repaired.stdout and "quarantined" in repaired.stdout
    clean = cli(poisoned, "check")
    assert clean.exit_code == 0 and "consistent" in clean.stdout
    again = cli(poisoned, "restore", "poison-null")  # a quarantined row cannot come back as is
    assert again.exit_code == 1 and "cannot be restored" in again.stderr
    # quarantine is a soft delete: history keeps the raw row, a new backup restores cleanly
    with Store(poisoned) as store:
        assert [e.id for e in store.list_entries()] == ["survivor"]
        assert store.history("poison-null")[-1].author == "perfkb check --repair"
    assert cli(poisoned, "backup", str(tmp_path / "c.sqlite3")).exit_code == 0
    assert cli(poisoned, "restore", str(tmp_path / "c.sqlite3")).exit_code == 0


def test_perfkb_serve_starts_on_a_poisoned_kb(poisoned):
    """The real command in a process of its own, as an operator would start it."""
    import os
    import subprocess
    import sys

    from kb.web.devserver import free_port

    port = free_port()
    env = {**os.environ, "PERFKB_DATA_DIR": str(poisoned.data_dir), "PERFKB_API_TOKEN": TOKEN}
    proc = subprocess.Popen(
        [sys.executable, "-m", "kb", "serve", "--host", "127.0.0.1", "--port", str(port)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                r = httpx.get(f"http://127.0.0.1:{port}/api/entries", timeout=5)
                break
            except httpx.TransportError:
                assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
                assert time.monotonic() < deadline
                time.sleep(0.2)
        assert r.status_code == 200 and [e["id"] for e in r.json()] == ["survivor"]
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_a_revision_author_with_control_characters_is_refused(tmp_path, monkeypatch):
    """PERFKB_USER (or any caller's author) ends up in `perfkb history`: no escape sequences."""
    path = tmp_path / "e.yaml"
    from kb.entry_yaml import dump_entry

    path.write_text(dump_entry(validate_entry(entry_data("authored"))))
    monkeypatch.setenv("PERFKB_USER", "eve\x1b]0;pwned\x07")
    result = CliRunner().invoke(app, ["--data-dir", str(tmp_path / "d"), "add", str(path)])
    assert result.exit_code == 1
    assert "author name contains a control character (U+001B)" in result.stderr
    with Store(settings_for(tmp_path / "d")) as store:
        assert store.count() == 0


def test_the_web_form_refuses_poison_and_the_pages_keep_working(tmp_path):
    from test_web_pages import csrf, entry_form

    settings = settings_for(tmp_path / "data", api_token=None)
    with Store(settings) as store:
        store.add(validate_entry(entry_data("survivor")), author="seed")
    poisons = {
        "inf": "- name: p\n  sources: [truss]\n"
        "  when: {fact: syscall.count, key: shmdt, op: '>=', value: .inf}\n",
        "deep": "- name: p\n  sources: [truss]\n  when: " + json.dumps(nested("not", 60)),
    }
    with running_server(settings) as url, httpx.Client(base_url=url, timeout=30) as client:
        for name, yaml_text in poisons.items():
            token = csrf(client, "/entries/new")
            r = client.post(
                "/entries/new", data=entry_form(token, id=f"form-{name}", signatures_yaml=yaml_text)
            )
            assert r.status_code == 422, (name, r.status_code)
            assert "The entry was not saved" in r.text
        assert client.get("/").status_code == 200
        assert client.get("/search", params={"q": "form"}).status_code == 200
    with Store(settings) as store:
        assert [e.id for e in store.list_entries()] == ["survivor"]
        assert not store.unreadable()
