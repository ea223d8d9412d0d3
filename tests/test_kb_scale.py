"""The KB at scale (issue #19): entries are validated when written and trusted on load (a
checksum beside each row, cleared by any edit made behind perfkb's back), and the compiled
matcher is saved beside the database for the KB's state, so a process loads arrays instead of
validating and compiling every entry. What a saved matcher answers must be what the matcher
built from the entries answers, match for match; a stale or damaged file is rebuilt, never
trusted; a row edited by hand is validated again and reported when bad.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from conftest import entry_data

from benchmarks.synth_kb import synthetic_entries
from ingest.detect import parse_text
from kb import analysis, sigindex
from kb.analysis import COMPILED_NAME, _full_text, analyze_text, matcher_for
from kb.matcher import Matcher, _read_arrays, _write_arrays
from kb.migrations import data_checksum
from kb.models import validate_entry
from kb.store import Store

FIXTURES = Path(__file__).resolve().parent / "fixtures"
CORPUS = Path(__file__).resolve().parents[1].parent / "shared" / "corpus" / "snippets"
TRUSS = "15697: 1.5426 1.0901 0.0000 shmdt(0xFFFFFFFF70000000) = 0\n" * 12


def _texts() -> list[tuple[str, str]]:
    assert CORPUS.is_dir(), f"the shared corpus is missing: {CORPUS}"
    paths = sorted(p for p in FIXTURES.rglob("*") if p.is_file() and p.suffix != ".md")
    paths = paths[::7] + sorted(CORPUS.iterdir())[::3]
    return [(p.name, p.read_text(errors="replace")) for p in paths] + [("truss", TRUSS)]


@pytest.fixture
def compiles(monkeypatch) -> list[int]:
    """The number of signature programs compiled, counted as they are."""
    count = [0]
    original = sigindex.Program.__init__

    def counting(self, conds, slots):
        count[0] += 1
        original(self, conds, slots)

    monkeypatch.setattr(sigindex.Program, "__init__", counting)
    return count


@pytest.fixture(autouse=True)
def fresh_cache():
    analysis._cache.clear()
    yield
    analysis._cache.clear()


def _rows(settings) -> dict[str, tuple[str, str | None]]:
    with sqlite3.connect(settings.db_path) as conn:
        return {i: (d, c) for i, d, c in conn.execute("SELECT id, data, checksum FROM entries")}


def _same(a, b) -> bool:
    x, y = a.model_dump(mode="json"), b.model_dump(mode="json")
    x.pop("elapsed_ms"), y.pop("elapsed_ms")
    return x == y


# -- validate on write, trust on load ---------------------------------------------------------


def test_every_write_stores_the_checksum_of_its_json(settings, make_entry):
    with Store(settings) as store:
        store.add(make_entry("one"), author="t")
        store.add(make_entry("two"), author="t")
        store.update(make_entry("two", title="Two, edited"), author="t")
        store.delete("one", author="t")
    rows = _rows(settings)
    assert set(rows) == {"one", "two"}
    for data, checksum in rows.values():
        assert checksum == data_checksum(data)


def test_an_edit_behind_perfkbs_back_clears_the_checksum_and_changes_the_state(
    settings, make_entry
):
    with Store(settings) as store:
        store.add(make_entry("one"), author="t")
        store.add(make_entry("two"), author="t")
        before = store.state_key()
        assert store.state_key() == before  # reading changes nothing
        data, _ = _rows(settings)["two"]
        with sqlite3.connect(settings.db_path) as conn:
            conn.execute(
                "UPDATE entries SET data = ? WHERE id = 'two'", (data.replace("Sample", "Hand"),)
            )
        assert _rows(settings)["two"][1] is None
        assert _rows(settings)["one"][1] is not None
        edited = store.state_key()
        assert edited != before
        with sqlite3.connect(settings.db_path) as conn:  # a second hand edit moves it again
            conn.execute(
                "UPDATE entries SET data = ? WHERE id = 'two'", (data.replace("Sample", "Pen"),)
            )
        assert store.state_key() not in (before, edited)
        store.update(make_entry("two", title="Fixed"), author="t")  # perfkb's write trusts it
        assert _rows(settings)["two"][1] == data_checksum(_rows(settings)["two"][0])


def test_the_state_key_moves_with_every_change_to_entries_and_only_then(settings, make_entry):
    """The key is the store id and the entries' stamp (migration 3's triggers write a new
    random one with every insert, update or delete of a row of `entries`, whoever makes it):
    each state of the entries gets a key no other state had, reads and writes to other tables
    keep it."""
    keys: list[str] = []
    with Store(settings) as store:

        def moved() -> None:
            key = store.state_key()
            assert key.startswith(store.store_id + ":")
            assert key not in keys
            keys.append(key)

        moved()
        for name in ("b-two", "a-one", "c-three"):
            store.add(make_entry(name), author="t")
            moved()
        store.update(make_entry("a-one", title="One, edited"), author="t")
        moved()
        store.delete("c-three", author="t")
        moved()
        store.restore("c-three", author="t")
        moved()
        store.list_entries()
        store.record_feedback("a-one", "fp", "right", "u")
        store.save_analysis("text", "{}")
        assert store.state_key() == keys[-1]
        behind_its_back = [
            "UPDATE entries SET data = replace(data, 'Sample', 'Hand') WHERE id = 'b-two'",
            "UPDATE entries SET title = 'x' WHERE id = 'a-one'",
            "DELETE FROM entries WHERE id = 'c-three'",
            "INSERT INTO entries (id, title, data, deleted, created, updated, rev)"
            " VALUES ('d', 'D', '{}', 0, '2024-01-01', '2024-01-01', 1)",
        ]
        for sql in behind_its_back:
            with sqlite3.connect(settings.db_path) as conn:
                conn.execute(sql)
            moved()
        with sqlite3.connect(settings.db_path) as conn:  # the same edit again: a new state too
            conn.execute(behind_its_back[1])
        moved()


def test_the_migration_gives_valid_old_rows_a_checksum_and_leaves_bad_ones_unverified(
    settings, make_entry
):
    with Store(settings) as store:
        store.add(make_entry("good"), author="t")
    with sqlite3.connect(settings.db_path) as conn:  # back to schema 1, plus a row no one checked
        conn.execute("DROP TRIGGER entries_unverified")
        for event in ("insert", "update", "delete"):
            conn.execute(f"DROP TRIGGER entries_stamp_{event}")
        conn.execute("DELETE FROM meta WHERE key = 'entries_stamp'")
        conn.execute("DROP INDEX entries_state")
        conn.execute("ALTER TABLE entries DROP COLUMN checksum")
        conn.execute("DELETE FROM schema_version WHERE version >= 2")
        conn.execute(
            "INSERT INTO entries (id, title, data, deleted, created, updated, rev)"
            " VALUES ('bad', 'Bad', '{\"id\": \"bad\"}', 0, '2024-01-01', '2024-01-01', 1)"
        )
    with Store(settings) as store:
        assert [e.id for e in store.list_entries()] == ["good"]
    rows = _rows(settings)
    assert rows["good"][1] == data_checksum(rows["good"][0])
    assert rows["bad"][1] is None


# -- the compiled KB saved beside the database ------------------------------------------------


def test_a_saved_matcher_answers_as_the_one_built_from_the_entries(tmp_path, compiles):
    entries = synthetic_entries(300)
    built = Matcher(entries)
    built.index.compile_all()
    path = tmp_path / "saved.kb"
    built.save(path, "state-1", [1] * len(entries))
    by_id = {e.id: e for e in entries}
    reads: list[str] = []

    def fetch(entry_id: str, rev: int):
        assert rev == 1
        reads.append(entry_id)
        return by_id[entry_id]

    compiled_before = compiles[0]
    loaded = Matcher.load(path, "state-1", fetch)
    assert loaded is not None
    reference = Matcher(entries)  # compiles on first use, as before this issue
    for name, text in _texts():
        evidence = parse_text(text)
        full = _full_text(evidence)
        assert loaded.verdicts(evidence, full) == reference.verdicts(evidence, full), name
        a = analyze_text(text, matcher=loaded)
        b = analyze_text(text, matcher=reference)
        assert _same(a, b), name
    assert compiles[0] - compiled_before == len(reference.index._programs)  # only the reference
    assert reads and len(set(reads)) < len(entries) // 2  # entries read for shown matches only


def test_a_loaded_kb_makes_only_the_programs_an_analysis_uses_and_checks_each_at_load(
    tmp_path, monkeypatch
):
    """A saved program is made from its arrays when an analysis first uses it (a 1-line truss
    file uses one or two of the starter KB's 46); what each one reads is still checked at load,
    so a damaged program is a cache miss (a rebuild), never an error in mid-analysis."""
    entries = synthetic_entries(200)
    built = Matcher(entries)
    path = tmp_path / "saved.kb"
    built.save(path, "s", [1] * len(entries))  # compiles every program
    by_id = {e.id: e for e in entries}
    made: list[int] = []
    original = sigindex.Program.from_parts.__func__

    def counting(cls, arrays, doc):
        made.append(doc["n_sigs"])
        return original(cls, arrays, doc)

    monkeypatch.setattr(sigindex.Program, "from_parts", classmethod(counting))
    loaded = Matcher.load(path, "s", lambda i, r: by_id[i])
    assert loaded is not None
    saved = len(loaded.index._saved)
    assert saved > 3 and not made and not loaded.index._programs
    assert _same(analyze_text(TRUSS, matcher=loaded), analyze_text(TRUSS, entries=entries))
    used = len(loaded.index._programs)
    assert 0 < len(made) == used < saved and len(loaded.index._saved) == saved - used
    arrays, doc = _read_arrays(path)
    for missing in [k for k in arrays if k.endswith("_leaf_blob")][:1] + ["i_p1_gids"]:
        damaged = tmp_path / "damaged.kb"
        with open(damaged, "wb") as f:
            _write_arrays(f, {k: a for k, a in arrays.items() if k != missing}, doc)
        assert Matcher.load(damaged, "s", lambda i, r: by_id[i]) is None, missing
    del doc["index"]["programs"][2]["doc"]["always"]
    with open(damaged, "wb") as f:
        _write_arrays(f, arrays, doc)
    assert Matcher.load(damaged, "s", lambda i, r: by_id[i]) is None


def test_what_a_load_checks_is_what_a_saved_program_holds():
    """Program.SAVED_ARRAYS / SAVED_DOC (checked at load) name exactly what `parts` writes."""
    index = Matcher(synthetic_entries(50)).index
    key, members = next(iter(index._all_keys()))
    arrays, doc = index._compile(members)[1].parts()
    assert (
        arrays.keys() == sigindex.Program.SAVED_ARRAYS and doc.keys() == sigindex.Program.SAVED_DOC
    )


def test_the_store_saves_the_compiled_kb_and_the_next_process_only_loads_it(
    settings, make_entry, compiles
):
    with Store(settings) as store:
        for i in range(5):
            store.add(make_entry(f"e-{i}", title=f"Sample {i}"), author="t")
        first = analyze_text(TRUSS, store)
        assert compiles[0] > 0
        assert (settings.data_dir / COMPILED_NAME).is_file()
        analysis._cache.clear()  # what a new process starts with
        built = compiles[0]
        again = analyze_text(TRUSS, store)
        assert compiles[0] == built  # nothing compiled: the saved programs were used
        m = matcher_for(store)
        assert m.index._programs and not hasattr(m.entries, "append")  # read lazily
        assert _same(first, again)
        assert [x.id for x in first.matches][:1] == ["e-0"]


def test_an_edit_compiles_only_that_entry_and_a_damaged_file_is_rebuilt(
    settings, make_entry, monkeypatch
):
    compiled: list[int] = []  # signatures per compiled program
    original = sigindex.Program.__init__

    def counting(self, conds, slots):
        compiled.append(len(conds))
        original(self, conds, slots)

    monkeypatch.setattr(sigindex.Program, "__init__", counting)
    path = settings.data_dir / COMPILED_NAME
    with Store(settings) as store:
        for i in range(30):
            store.add(make_entry(f"old-{i:02}", title=f"Sample {i}"), author="t")
        analyze_text(TRUSS, store)
        assert max(compiled) == 30  # the first build compiles every signature
        saved = path.read_bytes()
        compiled.clear()
        store.update(make_entry("old-07", title="Edited seven"), author="t")
        edited = analyze_text(TRUSS, store)
        assert compiled and max(compiled) == 1  # only the edited entry's one signature
        assert path.read_bytes() == saved  # layered on the saved KB, which stays as it was
        assert "Edited seven" in [x.title for x in edited.matches]
        assert _same(edited, analyze_text(TRUSS, entries=store.list_entries()))
        analysis._cache.clear()  # a new process: the saved KB plus the one change again
        compiled.clear()
        assert _same(analyze_text(TRUSS, store), edited)
        assert max(compiled) == 1
        for damage in (b"", b"PERFKBC1" + b"\xff" * 40, path.read_bytes()[:-100]):
            path.write_bytes(damage)
            analysis._cache.clear()
            compiled.clear()
            assert _same(analyze_text(TRUSS, store), edited)
            assert max(compiled) == 30  # rebuilt from every entry, not trusted
            assert path.read_bytes()[:8] == b"PERFKBC1"


def test_many_changes_rebuild_and_save(settings, make_entry, compiles):
    path = settings.data_dir / COMPILED_NAME
    with Store(settings) as store:
        store.add(make_entry("first"), author="t")
        analyze_text(TRUSS, store)
        saved = path.read_bytes()
        for i in range(analysis.MAX_LAYERED + 1):
            store.add(make_entry(f"more-{i:03}", title=f"More {i}"), author="t")
        result = analyze_text(TRUSS, store)
        assert path.read_bytes() != saved  # rebuilt and saved for the new state
        analysis._cache.clear()
        before = compiles[0]
        assert _same(analyze_text(TRUSS, store), result)
        assert compiles[0] == before


def test_updates_answer_as_a_rebuild_does(tmp_path):
    """Edits, additions and removals layered on a saved matcher, one after the other, against
    a matcher built from the resulting entries, on every text."""
    entries = synthetic_entries(240)
    built = Matcher(entries)
    path = tmp_path / "saved.kb"
    built.save(path, "s", [1] * len(entries))
    by_id = {e.id: e for e in entries}
    current = Matcher.load(path, "s", lambda i, r: by_id[i])
    live = dict(by_id)
    ids = sorted(by_id)
    steps = [
        ([entries[41].model_copy(update={"title": "Edited"})], []),
        ([], [ids[3], ids[100]]),
        (
            [
                e.model_copy(update={"id": f"zz-new-{k}", "title": f"New {k}"})
                for k, e in enumerate(entries[5:9])
            ],
            [ids[150]],
        ),
        ([entries[3]], []),  # a removed entry comes back
    ]
    texts = _texts()
    for changed, removed in steps:
        current = current.updated(changed, removed)
        for entry_id in removed:
            live.pop(entry_id)
        live.update({e.id: e for e in changed})
        reference = Matcher([live[i] for i in sorted(live)])
        for name, text in texts[::2]:
            a = analyze_text(text, matcher=current)
            b = analyze_text(text, matcher=reference)
            assert _same(a, b), name


def test_a_row_edited_by_hand_is_validated_again_and_reported_when_bad(settings, caplog):
    with Store(settings) as store:
        store.add(validate_entry(entry_data("keeper")), author="t")
        store.add(validate_entry(entry_data("victim", title="Victim incident")), author="t")
        assert {x.id for x in analyze_text(TRUSS, store).matches} == {"keeper", "victim"}
        with sqlite3.connect(settings.db_path) as conn:
            conn.execute("UPDATE entries SET data = '{\"id\": \"victim\"}' WHERE id = 'victim'")
        Store._warned.discard("victim")
        analysis._cache.clear()  # a new process (this one keys its matcher by revision)
        with caplog.at_level("WARNING"):
            result = analyze_text(TRUSS, store)
        assert [x.id for x in result.matches] == ["keeper"]
        assert "'victim' cannot be read" in caplog.text
        m = matcher_for(store)
        assert list(m.unreadable) == ["victim"]
        analysis._cache.clear()  # loaded from the saved KB: still named
        assert list(matcher_for(store).unreadable) == ["victim"]
