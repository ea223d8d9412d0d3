"""ingest/datafile.py: the shipped YAML files parsed once per content, kept as JSON beside the
bytecode (issue #19). What it gives must be what the YAML parser gives, whatever the cache holds."""

from __future__ import annotations

import sys

import pytest
import yaml

from ingest import datafile
from ingest.facts import CATALOGUE_PATH
from kb.platform import TRANSLATIONS_PATH
from kb.triage import RULES_PATH


@pytest.fixture
def pycache(tmp_path, monkeypatch):
    """Bytecode (and so the parsed files) under a prefix of this test's own, written."""
    prefix = tmp_path / "pycache"
    monkeypatch.setattr(sys, "pycache_prefix", str(prefix))
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    return prefix


def _no_parser(raw: bytes):
    raise AssertionError("parsed, though the cache holds this content")


@pytest.mark.parametrize("path", [CATALOGUE_PATH, RULES_PATH, TRANSLATIONS_PATH])
def test_the_shipped_files_read_as_the_pure_python_parser_reads_them(pycache, monkeypatch, path):
    expected = yaml.load(path.read_text(encoding="utf-8"), Loader=yaml.SafeLoader)
    assert datafile.load_yaml(path) == expected  # parsed, and kept
    assert datafile.cache_path(path).is_file()
    assert str(datafile.cache_path(path)).startswith(str(pycache))
    monkeypatch.setattr(datafile, "_parse", _no_parser)
    assert datafile.load_yaml(path) == expected  # from the cache


def test_an_edited_file_is_parsed_again(pycache, tmp_path):
    path = tmp_path / "rules.yaml"
    path.write_text("threshold: 5\nnames: [a, b]\n")
    assert datafile.load_yaml(path) == {"threshold": 5, "names": ["a", "b"]}
    path.write_text("threshold: 7\nnames: [a, b]\n")  # same size, maybe the same time stamp
    assert datafile.load_yaml(path) == {"threshold": 7, "names": ["a", "b"]}


@pytest.mark.parametrize(
    "damage",
    [b"", b"{not json", b"[1, 2]", b'{"format": 1, "sha256": "0", "data": {"x": 1}}'],
)
def test_a_damaged_or_stale_cache_is_parsed_around(pycache, tmp_path, damage):
    path = tmp_path / "rules.yaml"
    path.write_text("a: 1\n")
    datafile.load_yaml(path)
    datafile.cache_path(path).write_bytes(damage)
    assert datafile.load_yaml(path) == {"a": 1}
    assert datafile.cache_path(path).read_bytes() != damage  # and written afresh


def test_what_json_cannot_carry_is_parsed_every_time(pycache, tmp_path):
    path = tmp_path / "odd.yaml"
    path.write_text("when: 2026-11-25\n1: one\nnan: .nan\n")
    first = datafile.load_yaml(path)
    assert str(first["when"]) == "2026-11-25" and first[1] == "one"
    assert not datafile.cache_path(path).exists()
    path.write_text("1: one\n")  # an int key would come back from JSON as "1"
    assert datafile.load_yaml(path) == {1: "one"}
    assert not datafile.cache_path(path).exists()


def test_nothing_is_written_where_python_writes_no_bytecode(pycache, tmp_path, monkeypatch):
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    path = tmp_path / "rules.yaml"
    path.write_text("a: 1\n")
    assert datafile.load_yaml(path) == {"a": 1}
    assert not datafile.cache_path(path).exists()


def test_an_unwritable_cache_directory_only_means_parsing(tmp_path, monkeypatch):
    blocker = tmp_path / "pycache"
    blocker.write_text("a file where the directory would go")
    monkeypatch.setattr(sys, "pycache_prefix", str(blocker))
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    path = tmp_path / "rules.yaml"
    path.write_text("a: [1, 2.5, true, null, 'x']\n")
    assert datafile.load_yaml(path) == {"a": [1, 2.5, True, None, "x"]}


def test_a_yaml_error_is_raised_and_crlf_reads_as_lf(pycache, tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text("a: [1, 2\n")
    with pytest.raises(yaml.YAMLError):
        datafile.load_yaml(path)
    crlf = tmp_path / "crlf.yaml"
    crlf.write_bytes(b"text: |\r\n  two\r\n  lines\r\n")
    assert datafile.load_yaml(crlf) == {"text": "two\nlines\n"}
    assert datafile.load_yaml(crlf) == {"text": "two\nlines\n"}  # cached the same
