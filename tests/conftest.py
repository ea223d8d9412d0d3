"""Shared, generic fixtures: a settings object on a temporary data dir and an entry factory."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pytest

from kb.models import Entry, validate_entry
from kb.settings import Settings


@pytest.fixture
def settings(tmp_path, monkeypatch) -> Settings:
    """Settings whose data dir is a fresh temporary directory (also exported as
    PERFKB_DATA_DIR, so code that reads the environment agrees)."""
    data_dir = tmp_path / "data"
    monkeypatch.setenv("PERFKB_DATA_DIR", str(data_dir))
    return Settings(data_dir=data_dir)


def entry_data(entry_id: str = "sample-entry", **overrides: Any) -> dict[str, Any]:
    """A small valid entry as raw data. The numbers echo seed 001 (shmdt averaging ~24 ms
    over 10 calls on a Solaris NUMA box); the wording is ours."""
    data: dict[str, Any] = {
        "id": entry_id,
        "title": f"Sample incident {entry_id}",
        "symptom": "Every CPU spends its time in %sys for several seconds while sessions "
        "disconnect at once.",
        "root_cause": "Detaching a shared memory segment spread across locality groups is slow.",
        "fix": "Keep the SGA in one locality group, or disconnect sessions gradually.",
        "affected_versions": [{"product": "oracle", "introduced": "12.2", "fixed": ["19.14"]}],
        "platforms": ["solaris"],
        "tags": ["numa", "shm"],
        "references": ["https://example.org/postmortem"],
        "next_commands": [
            {"command": "truss -d -p PID", "platform": "solaris", "why": "time each system call"}
        ],
        "signatures": [
            {
                "name": "slow-shmdt",
                "sources": ["truss", "strace"],
                "weight": 0.7,
                "when": {
                    "all": [
                        {"fact": "syscall.count", "key": "shmdt", "op": ">=", "value": 5},
                        {"fact": "syscall.avg_ms", "key": "shmdt", "op": ">=", "value": 5},
                    ]
                },
            }
        ],
        "author": "tester",
        "created": datetime(2024, 5, 1, 12, 0, tzinfo=UTC),
        "updated": datetime(2024, 5, 1, 12, 0, tzinfo=UTC),
    }
    data.update(overrides)
    return data


@pytest.fixture
def make_entry() -> Callable[..., Entry]:
    """make_entry("some-id", title=..., ...) -> a validated Entry."""

    def make(entry_id: str = "sample-entry", **overrides: Any) -> Entry:
        return validate_entry(entry_data(entry_id, **overrides))

    return make


@pytest.fixture
def raw_entry() -> Callable[..., dict[str, Any]]:
    """raw_entry("some-id", ...) -> the raw dict make_entry would validate (for YAML and API
    tests that need to change it before validation)."""
    return entry_data
