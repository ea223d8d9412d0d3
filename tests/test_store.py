"""The SQLite store: round trips, revisions, soft deletes, imports, feedback, saved analyses."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime, timedelta

import pytest

from kb.migrations import LATEST
from kb.settings import Settings
from kb.store import EntryExists, EntryNotFound, Store, StoreError


@pytest.fixture
def store(settings):
    s = Store(settings)
    yield s
    s.close()


def test_add_get_round_trip(store, make_entry):
    entry = make_entry("numa-shmdt")
    saved = store.add(entry, author="alice")
    assert saved == entry
    assert store.get("numa-shmdt") == entry
    assert [e.id for e in store.list_entries()] == ["numa-shmdt"]
    # a second Store on the same files reads the same entry back from disk
    again = Store(store.settings)
    try:
        assert again.get("numa-shmdt").model_dump() == entry.model_dump()
    finally:
        again.close()


def test_database_is_wal_with_numbered_migrations(store):
    conn = sqlite3.connect(store.settings.db_path)
    try:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        versions = [v for (v,) in conn.execute("SELECT version FROM schema_version")]
    finally:
        conn.close()
    assert versions == list(range(1, LATEST + 1))


def test_reopening_does_not_reapply_migrations(settings):
    Store(settings).close()
    Store(settings).close()
    conn = sqlite3.connect(settings.db_path)
    try:
        (rows,) = conn.execute("SELECT COUNT(*) FROM schema_version").fetchone()
    finally:
        conn.close()
    assert rows == LATEST


def test_newer_schema_is_refused_with_a_clear_message(settings):
    Store(settings).close()
    conn = sqlite3.connect(settings.db_path)
    conn.execute("INSERT INTO schema_version VALUES (999, 'future', '2030-01-01')")
    conn.commit()
    conn.close()
    with pytest.raises(StoreError, match="schema version 999.*upgrade perfkb"):
        Store(settings)


def test_a_file_that_is_not_a_database_is_refused(settings):
    settings.data_dir.mkdir(parents=True)
    settings.db_path.write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(StoreError, match="not a usable perfkb database"):
        Store(settings)


def test_add_existing_id_is_refused(store, make_entry):
    store.add(make_entry("a-1"), author="alice")
    with pytest.raises(EntryExists, match="'a-1' already exists"):
        store.add(make_entry("a-1"), author="bob")


def test_update_keeps_the_previous_text_in_history(store, make_entry):
    original = make_entry("a-1", symptom="First description of the symptom.")
    store.add(original, author="alice")
    edited = original.model_copy(
        update={"symptom": "Second, better description.", "created": datetime.now(UTC)}
    )
    saved = store.update(edited, author="bob")
    assert saved.symptom == "Second, better description."
    assert saved.created == original.created  # created never moves
    assert saved.updated > original.updated  # updated does
    history = store.history("a-1")
    assert [(r.rev, r.action, r.author) for r in history] == [
        (1, "create", "alice"),
        (2, "update", "bob"),
    ]
    assert history[0].entry.symptom == "First description of the symptom."
    assert history[1].entry.symptom == "Second, better description."
    assert history[1].changed_fields == ["symptom"]
    assert "symptom" in history[0].changed_fields and "title" in history[0].changed_fields


def test_update_without_changes_writes_no_revision(store, make_entry):
    entry = store.add(make_entry("a-1"), author="alice")
    assert store.update(entry, author="bob") == entry
    assert len(store.history("a-1")) == 1


def test_update_of_missing_entry(store, make_entry):
    with pytest.raises(EntryNotFound, match="no entry 'ghost'"):
        store.update(make_entry("ghost"), author="alice")


def test_update_with_stale_expected_revision_is_refused(store, make_entry):
    entry = store.add(make_entry("a-1"), author="alice")
    opened_at = store.current_rev("a-1")
    store.update(entry.model_copy(update={"fix": "Someone else's fix."}), author="bob")
    with pytest.raises(StoreError, match="changed by someone else"):
        store.update(
            entry.model_copy(update={"fix": "My fix."}), author="alice", expected_rev=opened_at
        )
    assert store.get("a-1").fix == "Someone else's fix."


def test_delete_is_soft_and_restore_brings_it_back(store, make_entry):
    store.add(make_entry("a-1", title="Disconnect storm in shmdt"), author="alice")
    store.add(make_entry("a-2"), author="alice")
    store.delete("a-1", author="bob")

    with pytest.raises(EntryNotFound, match="was deleted"):
        store.get("a-1")
    assert store.get("a-1", include_deleted=True).title == "Disconnect storm in shmdt"
    assert [e.id for e in store.list_entries()] == ["a-2"]
    assert store.search("storm").total == 0
    with pytest.raises(EntryNotFound):
        store.delete("a-1", author="bob")

    history = store.history("a-1")
    assert [r.action for r in history] == ["create", "delete"]
    assert history[-1].entry is None

    store.restore("a-1", author="carol")
    assert store.get("a-1").title == "Disconnect storm in shmdt"
    assert store.search("storm").results[0].id == "a-1"
    assert [r.action for r in store.history("a-1")] == ["create", "delete", "restore"]


def test_adding_a_deleted_id_again_is_a_restore(store, make_entry):
    store.add(make_entry("a-1"), author="alice")
    store.delete("a-1", author="alice")
    store.add(make_entry("a-1", title="A new start"), author="bob")
    assert store.get("a-1").title == "A new start"
    assert [r.action for r in store.history("a-1")] == ["create", "delete", "restore"]


def test_history_of_unknown_entry(store):
    with pytest.raises(EntryNotFound):
        store.history("nothing-here")


def test_changes_need_an_author(store, make_entry):
    with pytest.raises(StoreError, match="author"):
        store.add(make_entry("a-1"), author="  ")


def test_naive_timestamps_are_stored_as_utc(store, make_entry):
    naive = datetime(2024, 1, 2, 3, 4, 5)
    saved = store.add(make_entry("a-1", created=naive, updated=naive), author="alice")
    assert saved.created == datetime(2024, 1, 2, 3, 4, 5, tzinfo=UTC)
    assert store.get("a-1").updated.tzinfo is not None


# -- upsert (what init and import use) --------------------------------------------------------


def _at(days: int) -> datetime:
    return datetime(2024, 1, 1, tzinfo=UTC) + timedelta(days=days)


def test_upsert_statuses(store, make_entry):
    v1 = make_entry("a-1", fix="Fix as shipped.", updated=_at(1))
    assert store.upsert(v1, author="init")[1] == "created"
    assert store.upsert(v1, author="init")[1] == "unchanged"

    v2 = make_entry("a-1", fix="Fix as shipped, revised.", updated=_at(2))
    assert store.upsert(v2, author="init")[1] == "updated"
    assert store.get("a-1").fix == "Fix as shipped, revised."
    assert store.get("a-1").updated == _at(2)  # the file's timestamp is kept

    older = make_entry("a-1", fix="An old copy.", updated=_at(0))
    assert store.upsert(older, author="init")[1] == "kept-newer"
    assert store.get("a-1").fix == "Fix as shipped, revised."
    assert [r.action for r in store.history("a-1")] == ["import", "import"]


def test_upsert_keeps_an_entry_edited_here(store, make_entry):
    store.upsert(make_entry("a-1", updated=_at(1)), author="init")
    store.update(store.get("a-1").model_copy(update={"fix": "Our own fix."}), author="alice")
    shipped_later = make_entry("a-1", fix="Shipped fix.", updated=datetime.now(UTC) + timedelta(1))

    _, status = store.upsert(shipped_later, author="init")
    assert status == "kept-newer"
    assert store.get("a-1").fix == "Our own fix."

    # an explicit import of a newer file does replace it
    _, status = store.upsert(shipped_later, author="bob", keep_local_edits=False)
    assert status == "updated"
    assert store.get("a-1").fix == "Shipped fix."


def test_upsert_leaves_deleted_entries_deleted_unless_asked(store, make_entry):
    entry = make_entry("a-1")
    store.upsert(entry, author="init")
    store.delete("a-1", author="alice")
    assert store.upsert(entry, author="init")[1] == "kept-newer"
    with pytest.raises(EntryNotFound):
        store.get("a-1")
    assert store.upsert(entry, author="bob", restore_deleted=True)[1] == "created"
    assert store.get("a-1") == entry


def test_data_version_moves_with_every_entry_change(store, make_entry):
    v0 = store.data_version()
    store.add(make_entry("a-1"), author="alice")
    v1 = store.data_version()
    store.delete("a-1", author="alice")
    v2 = store.data_version()
    assert v0 < v1 < v2


# -- feedback ---------------------------------------------------------------------------------


def test_feedback_is_one_vote_per_user_entry_and_fingerprint(store, make_entry):
    store.add(make_entry("a-1"), author="alice")
    store.add(make_entry("a-2"), author="alice")
    store.record_feedback("a-1", "fp1", "right", "u1")
    store.record_feedback("a-1", "fp1", "right", "u2")
    store.record_feedback("a-1", "fp1", "wrong", "u1")  # u1 changes their mind
    store.record_feedback("a-1", "fp2", "right", "u1")
    store.record_feedback("a-2", "fp1", "wrong", "u3")

    assert store.feedback_counts("a-1") == {"right": 2, "wrong": 1}
    assert store.feedback_counts("a-2") == {"right": 0, "wrong": 1}
    assert store.feedback_for("fp1") == {
        "a-1": {"right": 1, "wrong": 1},
        "a-2": {"right": 0, "wrong": 1},
    }
    assert store.feedback_for("unknown") == {}


def test_feedback_is_validated(store, make_entry):
    store.add(make_entry("a-1"), author="alice")
    with pytest.raises(StoreError, match="'right' or 'wrong'"):
        store.record_feedback("a-1", "fp", "maybe", "u1")  # type: ignore[arg-type]
    with pytest.raises(EntryNotFound):
        store.record_feedback("nope", "fp", "right", "u1")
    with pytest.raises(StoreError, match="fingerprint"):
        store.record_feedback("a-1", "", "right", "u1")


def test_feedback_does_not_change_the_data_version(store, make_entry):
    store.add(make_entry("a-1"), author="alice")
    before = store.data_version()
    store.record_feedback("a-1", "fp", "right", "u1")
    assert store.data_version() == before


# -- saved analyses ---------------------------------------------------------------------------


def test_saved_analysis_round_trip(store):
    analysis_id = store.save_analysis("shmdt(0xFFFF) = 0", '{"matches": []}')
    assert analysis_id.isalnum() and len(analysis_id) <= 12
    assert store.get_analysis(analysis_id) == ("shmdt(0xFFFF) = 0", '{"matches": []}')
    assert store.save_analysis("x", "{}") != analysis_id


def test_saved_analysis_text_is_capped(store):
    cap = store.settings.saved_text_bytes  # one cap for the web page, the API and Slack
    assert cap == 1024 * 1024
    big = "é" * cap  # two bytes each in UTF-8
    text, _ = store.get_analysis(store.save_analysis(big, "{}"))
    assert len(text.encode()) < cap + 200
    assert text.startswith("éé") and "kept the first" in text


def test_the_saved_text_cap_is_a_setting(tmp_path):
    s = Store(Settings(data_dir=tmp_path / "kb", saved_text_bytes=4096))
    try:
        text, _ = s.get_analysis(s.save_analysis("x" * 10_000, "{}"))
    finally:
        s.close()
    assert text.startswith("x" * 4096) and not text.startswith("x" * 4097)
    assert "kept the first 4096 of 10000 bytes" in text


def test_unknown_analysis(store):
    with pytest.raises(StoreError, match="no saved analysis"):
        store.get_analysis("zzzz")


def test_data_dir_that_is_a_file(tmp_path):
    from kb.settings import Settings

    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(StoreError, match="data directory"):
        Store(Settings(data_dir=blocker))


def test_a_locked_index_costs_only_the_index_update(store, make_entry):
    """whoosh's writer lock held by someone else: the write is in SQLite, the message says the
    index was not updated (whoosh's LockError stays inside kb/index.py), and the next write
    after the lock is free catches the index up."""
    from whoosh import index as whoosh_index

    store._index._write_timeout = 0.2
    holder = whoosh_index.open_dir(str(store.settings.index_dir)).writer()
    try:
        with pytest.raises(StoreError, match="saved, but the search index was not updated"):
            store.add(
                make_entry("locked-index-entry", title="Semaphore storm while locked"), author="t"
            )
    finally:
        holder.cancel()
    assert store.get("locked-index-entry").title == "Semaphore storm while locked"
    store.add(make_entry("after-the-lock", title="Another entry"), author="t")
    assert {h.id for h in store.search("locked").results} >= {"locked-index-entry"}
