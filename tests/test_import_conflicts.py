"""Issue #20 item 9: `perfkb import` never overwrites a newer local revision silently. A
hand-written file without `updated` is of unknown age, not newer than everything; conflicts are
reported and the local version kept unless --force; `created` is never reset. Entries are our
own invention in the starter KB's shape."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from conftest import entry_data
from typer.testing import CliRunner

from kb.cli import app
from kb.entry_yaml import dump_entry
from kb.models import validate_entry
from kb.settings import Settings
from kb.store import Store

pytestmark = pytest.mark.timeout(120)

CREATED = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)
HAND_WRITTEN = (
    "id: imported-entry\n"
    "title: Sample incident imported-entry\n"
    "symptom: Every CPU spends its time in %sys while sessions disconnect.\n"
    "root_cause: Detaching a shared memory segment spread across locality groups is slow.\n"
    "fix: A fix somebody typed by hand.\n"
    "platforms: [solaris]\n"
)


def run(data_dir: Path, *args: str):
    result = CliRunner().invoke(app, ["--data-dir", str(data_dir), *args])
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    assert "internal error" not in result.stderr
    return result


@pytest.fixture
def kb(tmp_path) -> Path:
    """A KB whose entry was imported, then edited here (a newer local revision)."""
    data = tmp_path / "data"
    with Store(Settings(data_dir=data)) as store:
        store.upsert(validate_entry(entry_data("imported-entry")), author="import")
        local = store.get("imported-entry").model_copy(update={"fix": "Our own, newer fix."})
        store.update(local, author="alice")
    return data


def stored(data: Path):
    with Store(Settings(data_dir=data)) as store:
        return store.get("imported-entry"), store.history("imported-entry")


def test_a_file_without_updated_does_not_overwrite_a_local_edit(kb, tmp_path):
    path = tmp_path / "hand.yaml"
    path.write_text(HAND_WRITTEN)
    before, _ = stored(kb)
    result = run(kb, "import", str(path))
    assert result.exit_code == 0
    assert "conflict: imported-entry" in result.stderr and "--force" in result.stderr
    assert "1 conflict\n" in result.stdout  # the CLI says counts with correct plurals
    after, history = stored(kb)
    assert after == before and after.fix == "Our own, newer fix."
    assert after.created == CREATED
    assert [r.action for r in history] == ["import", "update"]


def test_an_older_export_does_not_overwrite_either(kb, tmp_path):
    older = validate_entry(entry_data("imported-entry", fix="An older exported fix."))
    (tmp_path / "old.yaml").write_text(dump_entry(older))
    result = run(kb, "import", str(tmp_path / "old.yaml"))
    assert result.exit_code == 0 and "conflict: imported-entry" in result.stderr
    assert stored(kb)[0].fix == "Our own, newer fix."


def test_force_overwrites_keeps_created_and_the_local_version_in_history(kb, tmp_path):
    path = tmp_path / "hand.yaml"
    path.write_text(HAND_WRITTEN)
    local, _ = stored(kb)
    result = run(kb, "import", "--force", str(path))
    assert result.exit_code == 0 and "conflict" not in result.stderr
    after, history = stored(kb)
    assert after.fix == "A fix somebody typed by hand."
    assert after.created == CREATED  # never reset to the file's default (now)
    assert after.updated >= local.updated
    assert [r.action for r in history] == ["import", "update", "import"]
    assert history[1].entry is not None and history[1].entry.fix == "Our own, newer fix."


def test_a_newer_file_still_replaces_and_keeps_the_earlier_created(kb, tmp_path):
    later = datetime.now(UTC).replace(microsecond=0) + timedelta(days=1)
    newer = validate_entry(
        entry_data("imported-entry", fix="A fix from a newer export.", created=later, updated=later)
    )
    (tmp_path / "new.yaml").write_text(dump_entry(newer))
    result = run(kb, "import", str(tmp_path / "new.yaml"))
    assert result.exit_code == 0 and "conflict" not in result.stderr
    after, _ = stored(kb)
    assert after.fix == "A fix from a newer export." and after.updated == later
    assert after.created == CREATED


def test_the_same_content_without_timestamps_is_unchanged_not_a_conflict(kb, tmp_path):
    local, _ = stored(kb)
    text = dump_entry(local)
    text = "\n".join(ln for ln in text.splitlines() if not ln.startswith(("created", "updated")))
    (tmp_path / "same.yaml").write_text(text + "\n")
    result = run(kb, "import", str(tmp_path / "same.yaml"))
    assert result.exit_code == 0 and "conflict" not in result.stderr
    assert "1 unchanged" in result.stdout
    assert stored(kb)[0] == local


def test_a_new_entry_without_timestamps_is_created(tmp_path):
    (tmp_path / "hand.yaml").write_text(HAND_WRITTEN)
    result = run(tmp_path / "data", "import", str(tmp_path / "hand.yaml"))
    assert result.exit_code == 0 and "1 created" in result.stdout
