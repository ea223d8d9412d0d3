"""All configuration comes from PERFKB_* environment variables (and SLACK_* for the bot)."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from pydantic import AliasChoices, Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from kb.search_query import SearchLimits


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="PERFKB_", extra="ignore")

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
