"""Entry <-> YAML: stable order, readable conditions, byte-identical round trips, and errors that
name the file, the entry and the field."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

import kb
from kb.entry_yaml import (
    FIELD_ORDER,
    EntryFileError,
    dump_entry,
    load_entries,
    load_entry,
    read_entries,
    write_entry,
)
from kb.store import Store

SEED_DIR = Path(kb.__file__).parent / "entries"


def _tricky(make_entry):
    """An entry exercising every shape the writer has to get right."""
    return make_entry(
        "tricky-entry",
        title="Title with: a colon, 'quotes', \"double quotes\" and # hash",
        symptom="Line one.\n  indented line two\n\n- not a list",
        root_cause="x" * 30 + " " + "long single line " * 12 + "ending here.",
        fix="ünïcødé — em dash, tab\there, a % sign\nand trailing spaces   \nhere",
        affected_versions=[
            {"product": "oracle", "introduced": "12.2.0.1", "fixed": ["19.10", "21.4"]},
            {"product": "solaris", "note": "any release with NUMA lgroups: " + "n" * 80},
        ],
        platforms=["solaris", "linux"],
        tags=["numa", "19c", "12.2+"],
        next_commands=[
            {
                "command": "dtrace -n 'pid$target::kgiPinObject:entry { @[ustack(5)] = count(); }'"
                " -p PID",
                "platform": "solaris",
                "why": "a why that is long enough to be folded over more than one line " * 3,
            },
            {"command": "echo 'a'\necho 'b'", "platform": "linux", "why": "two lines"},
        ],
        signatures=[
            {
                "name": "tree",
                "description": "All kinds of nodes.",
                "sources": ["truss", "strace", "text"],
                "weight": 0.35,
                "specific": False,
                "when": {
                    "all": [
                        {"fact": "syscall.count", "key": "shmdt", "op": ">=", "value": 5},
                        {"fact": "syscall.avg_ms", "key": "shmdt", "op": ">", "value": 4.5},
                        {"not": {"text": "ENOENT: no such file", "case_sensitive": True}},
                        {
                            "any": [
                                {"regex": r"read\(\d+, .*, 512\)", "min_count": 100},
                                {
                                    "fact": "repeat.count",
                                    "key": "read",
                                    "op": ">=",
                                    "ref": {"fact": "trace.calls", "times": 0.5},
                                },
                            ]
                        },
                    ]
                },
            },
            {
                "name": "ratio",
                "sources": ["tkprof"],
                "when": {
                    "fact": "tkprof.elapsed_s",
                    "op": ">=",
                    "ref": {
                        "fact": "tkprof.cpu_s",
                        "times": 3,
                        "plus": [{"fact": "tkprof.waited_s"}],
                    },
                },
            },
            {
                "name": "string-fact",
                "sources": ["waits"],
                "when": {"fact": "waits.top_event", "op": "==", "value": "enq: CF - contention"},
            },
        ],
        created=datetime(2023, 2, 3, 4, 5, 6, tzinfo=UTC),
        updated=datetime(2024, 2, 3, 4, 5, 6, 789000, tzinfo=UTC),
    )


def test_fields_come_in_the_documented_order(make_entry):
    text = dump_entry(_tricky(make_entry))
    top_keys = [line.split(":", 1)[0] for line in text.splitlines() if line[:1].isalpha()]
    assert tuple(top_keys) == FIELD_ORDER


def test_dump_load_dump_is_identical(make_entry):
    entry = _tricky(make_entry)
    text = dump_entry(entry)
    again = load_entry(text, "tricky.yaml")
    assert again == entry
    assert dump_entry(again) == text


def test_conditions_are_compact_and_prose_is_block_style(make_entry):
    text = dump_entry(_tricky(make_entry))
    assert "- {fact: syscall.count, key: shmdt, op: '>=', value: 5}" in text
    assert "not: {text: 'ENOENT: no such file', case_sensitive: true}" in text
    assert "symptom: |" in text
    assert "root_cause: >-" in text
    assert "fixed: ['19.10', '21.4']" in text
    assert "- command: dtrace -n 'pid$target::kgiPinObject:entry" in text  # one line
    assert "created: 2023-02-03T04:05:06Z" in text
    # defaults stay out of the file
    assert not re.search(r"min_count: 1\b", text) and "case_sensitive: false" not in text
    assert "specific: true" not in text


def test_versions_written_as_numbers_are_read_as_written(raw_entry):
    data = raw_entry("v-entry")
    data["affected_versions"] = [{"product": "oracle", "introduced": "12.2", "fixed": ["19.10"]}]
    data.pop("created"), data.pop("updated")
    text = yaml.safe_dump(data, sort_keys=False)
    text = text.replace("'12.2'", "12.2").replace("'19.10'", "19.10")
    assert "introduced: 12.2" in text and "- 19.10" in text
    entry = load_entry(text, "v.yaml")
    assert entry.affected_versions[0].introduced == "12.2"
    assert entry.affected_versions[0].fixed == ["19.10"]  # not 19.1


def test_export_import_export_is_byte_identical(settings, tmp_path, make_entry):
    from kb.settings import Settings

    first = Store(settings)
    entries = [_tricky(make_entry)]
    for path in sorted(SEED_DIR.glob("*.yaml")):
        entries += read_entries(path)
    with first.bulk():  # one index commit for all of them
        for entry in entries:
            first.add(entry, author="t")
    out1, out2 = tmp_path / "export1", tmp_path / "export2"
    out1.mkdir()
    out2.mkdir()
    for entry in first.list_entries():
        write_entry(entry, out1)
    first.close()

    second = Store(Settings(data_dir=tmp_path / "other"))
    with second.bulk():
        for path in sorted(out1.glob("*.yaml")):
            for entry in read_entries(path):
                assert second.upsert(entry, author="t")[1] == "created"
    for entry in second.list_entries():
        write_entry(entry, out2)
    second.close()

    names = sorted(p.name for p in out1.iterdir())
    assert names == sorted(p.name for p in out2.iterdir())
    assert len(names) == len(entries)
    for name in names:
        assert (out1 / name).read_bytes() == (out2 / name).read_bytes(), name


def test_several_entries_per_file(make_entry):
    a, b = make_entry("a-1"), make_entry("b-2")
    as_list = yaml.safe_dump([yaml.safe_load(dump_entry(a)), yaml.safe_load(dump_entry(b))])
    assert [e.id for e in load_entries(as_list, "list.yaml")] == ["a-1", "b-2"]
    as_docs = dump_entry(a) + "---\n" + dump_entry(b)
    assert [e.id for e in load_entries(as_docs, "docs.yaml")] == ["a-1", "b-2"]
    with pytest.raises(EntryFileError, match="entry 'a-1' appears twice"):
        load_entries(dump_entry(a) + "---\n" + dump_entry(a), "twice.yaml")


def test_validation_errors_name_file_entry_and_field(make_entry):
    text = dump_entry(make_entry("bad-one")).replace("syscall.avg_ms", "syscall.avg_msec")
    with pytest.raises(EntryFileError) as info:
        load_entry(text, "entries/bad-one.yaml")
    message = str(info.value)
    assert message.startswith("entries/bad-one.yaml: entry 'bad-one': ")
    assert "signatures[0].when.all[1]" in message
    assert "unknown fact 'syscall.avg_msec' (did you mean 'syscall.avg_ms'?)" in message
    assert "\n" not in message


def test_unknown_field_is_named(make_entry):
    text = dump_entry(make_entry("x-1")) + "severity: high\n"
    with pytest.raises(EntryFileError, match=r"x.yaml: entry 'x-1': severity: Extra inputs"):
        load_entry(text, "x.yaml")


def test_yaml_syntax_error_has_a_line_number():
    with pytest.raises(
        EntryFileError,
        match=r"broken.yaml: line \d+, column \d+: YAML error: .*expected ',' or ']'",
    ):
        load_entry("id: a\ntitle: b\nsymptom: [unclosed\n", "broken.yaml")


def test_aliases_are_refused():
    text = "a: &x [1, 2]\nb: *x\n"
    with pytest.raises(EntryFileError, match="aliases"):
        load_entries(text, "alias.yaml")


def test_not_a_mapping_and_empty_files():
    with pytest.raises(EntryFileError, match="expected an entry .* found str"):
        load_entries("just a sentence", "s.yaml")
    with pytest.raises(EntryFileError, match="no entry in the file"):
        load_entries("# only a comment\n", "c.yaml")


def test_read_entries_explains_file_problems(tmp_path):
    with pytest.raises(EntryFileError, match="no such file"):
        read_entries(tmp_path / "missing.yaml")
    with pytest.raises(EntryFileError, match="is a directory"):
        read_entries(tmp_path)
    latin1 = tmp_path / "latin1.yaml"
    latin1.write_bytes("title: caf\xe9\n".encode("latin-1"))
    with pytest.raises(EntryFileError, match="not UTF-8"):
        read_entries(latin1)


def test_written_files_are_named_by_id(tmp_path, make_entry):
    path = write_entry(make_entry("named-by-id"), tmp_path)
    assert path == tmp_path / "named-by-id.yaml"
    assert read_entries(path)[0].id == "named-by-id"
    assert [p.name for p in tmp_path.iterdir()] == ["named-by-id.yaml"]


# every character an entry accepts: control characters other than tab and line breaks are
# refused at validation (kb/signatures.py:reject_controls), so they are not generated here
prose = st.text(
    alphabet=st.characters(blacklist_categories=("Cs", "Cc"), whitelist_characters="\t\n\r"),
    min_size=1,
    max_size=300,
).filter(lambda s: s.strip())


@hsettings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(symptom=prose, fix=prose, why=prose)
def test_any_text_survives_the_round_trip(make_entry, symptom, fix, why):
    command = {"command": "pstack PID", "platform": "solaris", "why": why}
    entry = make_entry("prop-entry", symptom=symptom, fix=fix, next_commands=[command])
    text = dump_entry(entry)
    again = load_entry(text, "prop.yaml")
    assert again == entry
    assert dump_entry(again) == text
