"""Issue #20 item 10 (entry side): hostile or careless input to `perfkb add`, `perfkb import`
and `perfkb search` ends in one line that says what is wrong, never "internal error". The
entries here are our own invention in the shape of the starter KB's."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest
from typer.testing import CliRunner

from kb.cli import app
from kb.settings import Settings
from kb.web.devserver import running_server

pytestmark = pytest.mark.timeout(120)

BASE = (
    "id: careless-entry\n"
    "title: A careless entry\n"
    "symptom: Sessions wait on semop.\n"
    "root_cause: Too few semaphores.\n"
    "fix: Raise semmns.\n"
    "platforms: [linux]\n"
)
DIGITS = "9" * 5000


def run(data_dir: Path, *args: str):
    result = CliRunner().invoke(app, ["--data-dir", str(data_dir), *args])
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result


def add(tmp_path: Path, text: str):
    path = tmp_path / "entry.yaml"
    path.write_text(text, encoding="utf-8")
    return run(tmp_path / "data", "add", str(path))


def one_error(result, *needles: str) -> str:
    assert result.exit_code == 1, result.stdout
    line = result.stderr.strip()
    assert line.startswith("perfkb: error: ") and "\n" not in line, result.stderr
    assert "internal error" not in line and "Traceback" not in line
    for needle in needles:
        assert needle in line, line
    return line


@pytest.mark.parametrize(
    ("extra", "needles"),
    [
        ("created: 2020-13-45\n", ("line 7", "'2020-13-45' is not a valid date")),
        ("updated: 2024-02-30T10:00:00Z\n", ("line 7", "not a valid date")),
        (f"tags: [{DIGITS}]\n", ("tags", "5000 characters long; at most 64")),
        (
            f"affected_versions: [{{introduced: {DIGITS}}}]\n",
            ("introduced", "at most 40 characters"),
        ),
        ("fix: Raise semmsl.\n", ("line 7", "duplicate key 'fix'")),
        ('author: "eve\\x1b[2J"\n', ("author", "control character (U+001B)")),
        ('affected_versions: [{product: "ora\\u2028cle"}]\n', ("product", "line break")),
        (
            "signatures:\n- name: s\n  sources: [strace]\n"
            "  when: {fact: syscall.count, key: semop, op: '>=', value: .nan}\n",
            ("finite number",),
        ),
    ],
)
def test_add_explains_what_is_wrong(tmp_path, extra, needles):
    one_error(add(tmp_path, BASE + extra), *needles)


def test_duplicate_keys_are_refused_at_every_level(tmp_path):
    nested = BASE + (
        "signatures:\n- name: s\n  sources: [strace]\n"
        "  when: {fact: syscall.count, key: semop, op: '>=', value: 5, value: 50}\n"
    )
    one_error(add(tmp_path, nested), "line 10", "duplicate key 'value'")
    assert "careless-entry" in add(tmp_path, BASE).stdout  # the same file without it is fine


def test_search_with_a_huge_version_says_so(tmp_path):
    run(tmp_path / "data", "init")
    one_error(run(tmp_path / "data", "search", f"version:{DIGITS}"), "too long for a version")
    one_error(run(tmp_path / "data", "search", f"semop version:19.{DIGITS}"), "version")
    assert run(tmp_path / "data", "search", "version:19.3").exit_code == 0


def test_the_api_says_so_too(tmp_path):
    settings = Settings(data_dir=tmp_path / "data", api_token=None, secret_key=None)
    with running_server(settings) as url, httpx.Client(base_url=url, timeout=30) as client:
        r = client.get("/api/search", params={"q": "version:" + "9" * 400})
        assert r.status_code == 400 and "too long for a version" in r.text
        r = client.get("/search", params={"q": "version:" + "9" * 400})
        assert r.status_code in (200, 400) and "too long for a version" in r.text


SIGNATURE_YAML_MISTAKES = {
    "- name: 2020-13-45\n  sources: [truss]\n  when: {text: x}\n": "not a valid date",
    "- name: s\n  name: t\n  sources: [truss]\n  when: {text: x}\n": "duplicate key 'name'",
    f"- name: s\n  sources: [truss]\n  when: {{text: {DIGITS}}}\n": "at most 1000",
}


def test_the_web_form_explains_signature_yaml_mistakes(tmp_path):
    from test_web_pages import csrf, entry_form

    settings = Settings(data_dir=tmp_path / "data", api_token=None, secret_key=None)
    with running_server(settings) as url, httpx.Client(base_url=url, timeout=30) as client:
        for text, needle in SIGNATURE_YAML_MISTAKES.items():
            token = csrf(client, "/entries/new")
            r = client.post("/entries/new", data=entry_form(token, signatures_yaml=text))
            assert r.status_code == 422, (needle, r.status_code)
            assert needle in r.text.replace("&#39;", "'"), needle


def test_the_slack_modal_explains_signature_yaml_mistakes(tmp_path):
    from slack_stub import running_harness
    from test_bot_interactive import open_shortcut, seed, submit

    with running_harness(tmp_path) as bot:
        view = open_shortcut(bot, "C0YAML", "1700000950.000100", seed("001_truss_shmdt.txt"))
        for text, needle in SIGNATURE_YAML_MISTAKES.items():
            resp = submit(
                bot,
                view,
                title="Mistaken YAML",
                symptom="s",
                root_cause="r",
                fix="f",
                signatures=text,
            )
            assert resp.status_code == 200 and resp.json()["response_action"] == "errors"
            assert needle in json.dumps(resp.json()["errors"], ensure_ascii=False), needle
