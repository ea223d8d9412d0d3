"""All configuration comes from PERFKB_* environment variables (and SLACK_* for the bot).

Why a pydantic model that reads the environment itself rather than pydantic-settings'
BaseSettings: that package's import (its sources: dotenv, asyncio, the CLI and cloud providers,
importlib.metadata) cost ~55 ms CPU of every `perfkb` command, a quarter of the 0.2 s an
`analyze` of a one-line paste may take (issue #19), for the one thing perfkb asks of it. What it
did is kept: PERFKB_<FIELD> (any case) for each field, the SLACK_* aliases of the bot's fields
(first choice first), values given to `Settings(...)` over the environment, unknown variables
ignored, defaults validated; a bad value is the same pydantic ValidationError.
"""
# Annotations are evaluated here, not kept as strings (no `from __future__ import annotations`):
# pydantic compiled each string field annotation (typing.ForwardRef) on every start (issue #19).

import os
from functools import lru_cache
from pathlib import Path
from typing import Any

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, model_validator

from kb.search_query import SearchLimits

ENV_PREFIX = "PERFKB_"


def _names(name: str, alias: object) -> list[str]:
    """The names a field is given by, first the key the model validates it under: each of an
    AliasChoices' names (the bot's SLACK_* settings), else the field's own name."""
    if isinstance(alias, AliasChoices):
        return [c for c in alias.choices if isinstance(c, str)]
    return [alias] if isinstance(alias, str) else [name]


class Settings(BaseModel):
    model_config = ConfigDict(extra="ignore", validate_default=True)

    data_dir: Path = Path("./data")
    base_url: str = "http://127.0.0.1:8000"
    host: str = "127.0.0.1"
    port: int = 8000
    workers: int = Field(1, ge=1, le=64, description="`perfkb serve` worker processes")
    api_token: str | None = None
    proxy_user_header: str | None = Field(
        None, description="trusted reverse-proxy identity header, e.g. X-Forwarded-User"
    )
    secret_key: str | None = Field(None, description="signs CSRF tokens and login cookies")
    max_body_bytes: int = 10 * 1024 * 1024
    max_file_bytes: int = 50 * 1024 * 1024
    # an application/x-www-form-urlencoded body (the editor's pasted evidence included)
    max_form_bytes: int = 5 * 1024 * 1024
    # what a saved analysis (its permalink) keeps of the evidence text, the same for the web
    # page, the API and Slack (kb/store.py save_analysis cuts at this many UTF-8 bytes and says so)
    saved_text_bytes: int = Field(1024 * 1024, ge=1024)
    # analyses the web app runs at once per process (page and API), and how long a request
    # waits for one before 503 (kb/web/limits.py analysis_slot)
    web_analyses: int = Field(2, ge=1)
    # processes that run those analyses (kb/web/pool.py), at most web_analyses; `perfkb serve`
    # defaults it to the CPUs it may use, 0 analyses in the server's own threads
    analysis_processes: int = Field(0, ge=0, le=64)
    analyze_queue_seconds: float = Field(30.0, gt=0)
    # request heads (kb/web/server.py): bytes up to the blank line, and header lines (431)
    max_header_bytes: int = Field(32 * 1024, ge=1024)
    max_headers: int = Field(100, ge=10)
    log_level: str = "INFO"
    # what one search may cost (kb.search_query.SearchLimits; docs/security.md)
    search_min_wildcard_prefix: int = Field(2, ge=1)
    search_max_expansions: int = Field(1000, ge=1)
    search_max_words: int = Field(64, ge=1)
    search_time_budget: float = Field(2.0, gt=0, description="seconds")
    warm_start: bool = Field(
        False,
        description="build and compile the matcher at start-up and freeze it out of the cyclic "
        "GC (kb.analysis.warm); `perfkb serve` turns it on for its workers",
    )

    slack_bot_token: str | None = Field(
        None, validation_alias=AliasChoices("SLACK_BOT_TOKEN", "PERFKB_SLACK_BOT_TOKEN")
    )
    slack_app_token: str | None = Field(
        None, validation_alias=AliasChoices("SLACK_APP_TOKEN", "PERFKB_SLACK_APP_TOKEN")
    )
    slack_signing_secret: str | None = Field(
        None,
        validation_alias=AliasChoices("SLACK_SIGNING_SECRET", "PERFKB_SLACK_SIGNING_SECRET"),
    )
    slack_api_url: str = Field(
        "https://slack.com/api/",
        validation_alias=AliasChoices("SLACK_API_URL", "PERFKB_SLACK_API_URL"),
    )

    @model_validator(mode="before")
    @classmethod
    def _from_environment(cls, data: Any) -> Any:
        """Each field from what `Settings(...)` was given, else from its environment variable,
        read when the settings are made. As pydantic-settings matched them: names without case,
        a field's aliases before its name (a value given wins over the environment whichever it
        is given by), the environment variable PERFKB_<NAME>, or each alias for the SLACK_ ones."""
        if not isinstance(data, dict):
            return data
        given: dict[str, Any] = {}
        for key, value in data.items():
            given.setdefault(str(key).lower(), value)
        environ = {k.lower(): v for k, v in os.environ.items()}
        out: dict[str, Any] = {}
        for name, field in cls.model_fields.items():
            names = _names(name, field.validation_alias)
            for candidate in (*names, name):
                if candidate.lower() in given:
                    out[names[0]] = given[candidate.lower()]
                    break
            else:
                aliased = names != [name]
                for key in names:
                    variable = (key if aliased else ENV_PREFIX + key).lower()
                    if variable in environ:
                        out[key] = environ[variable]
                        break
        return out

    def search_limits(self) -> SearchLimits:
        return SearchLimits(
            min_wildcard_prefix=self.search_min_wildcard_prefix,
            max_expansions=self.search_max_expansions,
            max_words=self.search_max_words,
            time_budget=self.search_time_budget,
        )

    @property
    def db_path(self) -> Path:
        return self.data_dir / "perfkb.sqlite3"

    @property
    def index_dir(self) -> Path:
        return self.data_dir / "index"


@lru_cache
def get_settings() -> Settings:
    return Settings()


def usable_cpus() -> int:
    """CPUs this process may run on (its affinity, which a container's cpuset narrows): what
    `perfkb serve` sizes its analysis processes to (kb/web/pool.py)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)
