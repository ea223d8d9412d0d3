"""kb/settings.py reads PERFKB_* (and the bot's SLACK_*) itself since pydantic-settings was dropped
for start-up time (issue #19). These pin what pydantic-settings did that perfkb relies on: each
field from its variable in any case, the SLACK_ aliases in order, what `Settings(...)` is given
over the environment (by alias or by name, in any case), unknown variables ignored, bad values
rejected with pydantic's message, and the environment read when settings are made."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from kb.settings import Settings


@pytest.fixture(autouse=True)
def _clean_environment(monkeypatch):
    import os

    for name in list(os.environ):
        if name.upper().startswith(("PERFKB_", "SLACK_")):
            monkeypatch.delenv(name)


def test_defaults_without_environment():
    s = Settings()
    assert s.data_dir == Path("data")
    assert (s.port, s.workers, s.warm_start, s.api_token) == (8000, 1, False, None)
    assert s.slack_api_url == "https://slack.com/api/"


def test_each_field_from_its_variable_converted_and_in_any_case(monkeypatch):
    monkeypatch.setenv("PERFKB_DATA_DIR", "/srv/kb")
    monkeypatch.setenv("PERFKB_PORT", "9001")
    monkeypatch.setenv("perfkb_host", "0.0.0.0")
    monkeypatch.setenv("Perfkb_Warm_Start", "yes")
    monkeypatch.setenv("PERFKB_SEARCH_TIME_BUDGET", "0.5")
    monkeypatch.setenv("PERFKB_API_TOKEN", "")  # set but empty: the empty string, not None
    s = Settings()
    assert s.data_dir == Path("/srv/kb")
    assert (s.port, s.host, s.warm_start, s.search_time_budget) == (9001, "0.0.0.0", True, 0.5)
    assert s.api_token == ""


def test_slack_aliases_first_choice_first(monkeypatch):
    monkeypatch.setenv("PERFKB_SLACK_BOT_TOKEN", "second")
    assert Settings().slack_bot_token == "second"
    monkeypatch.setenv("SLACK_BOT_TOKEN", "first")
    assert Settings().slack_bot_token == "first"
    monkeypatch.setenv("PERFKB_SLACK_BOT_TOKEN", "x")
    monkeypatch.setenv("slack_signing_secret", "lower-case name")
    assert Settings().slack_signing_secret == "lower-case name"
    assert Settings().slack_bot_token == "first"


def test_values_given_win_over_the_environment_by_alias_or_name_in_any_case(monkeypatch):
    monkeypatch.setenv("PERFKB_DATA_DIR", "/from/env")
    monkeypatch.setenv("SLACK_BOT_TOKEN", "env-token")
    assert Settings(data_dir="/given").data_dir == Path("/given")
    assert Settings(DATA_DIR="/upper").data_dir == Path("/upper")
    assert Settings(SLACK_BOT_TOKEN="alias").slack_bot_token == "alias"
    assert Settings(slack_bot_token="name").slack_bot_token == "name"
    assert Settings(PERFKB_SLACK_BOT_TOKEN="second alias").slack_bot_token == "second alias"
    # None given is None, not the environment's value
    assert Settings(SLACK_BOT_TOKEN=None).slack_bot_token is None


def test_unknown_variables_and_arguments_are_ignored(monkeypatch):
    monkeypatch.setenv("PERFKB_NO_SUCH_SETTING", "1")
    monkeypatch.setenv("PERFKB_WORKERS", "3")
    s = Settings(nonsense=1)
    assert s.workers == 3
    assert not hasattr(s, "nonsense") and not hasattr(s, "no_such_setting")


@pytest.mark.parametrize(
    ("variable", "value", "field"),
    [
        ("PERFKB_PORT", "abc", "port"),
        ("PERFKB_WORKERS", "0", "workers"),
        ("PERFKB_WARM_START", "maybe", "warm_start"),
    ],
)
def test_a_bad_value_is_pydantics_error_naming_the_field(monkeypatch, variable, value, field):
    monkeypatch.setenv(variable, value)
    with pytest.raises(ValidationError) as caught:
        Settings()
    assert caught.value.title == "Settings"
    assert [e["loc"] for e in caught.value.errors()] == [(field,)]
    assert caught.value.errors()[0]["input"] == value


def test_the_environment_is_read_when_settings_are_made(monkeypatch):
    first = Settings()
    monkeypatch.setenv("PERFKB_MAX_HEADERS", "12")
    assert (first.max_headers, Settings().max_headers) == (100, 12)
