"""What the Oracle parameter parser reads (issue 16): SQL*Plus `show parameter` listings and
pfile lines, the asynchronous I/O settings as facts (preconditions a signature pairs with a
symptom), numeric parameters, wrapped values; pastes read the same."""

from __future__ import annotations

import pytest

from ingest.detect import parse_text
from tests.parser_helpers import assert_facts_valid, fixture_lines

FIXTURE = "oracle/show_parameter_io.txt"


def _blocks(text: str) -> list:
    blocks = [b for b in parse_text(text).blocks if b.format == "oraparam"]
    for b in blocks:
        assert_facts_valid(b)
    return blocks


def _fixture_blocks() -> list:
    return _blocks("\n".join(fixture_lines(FIXTURE)) + "\n")


def test_show_parameter_listings_say_asynchronous_io_is_off():
    listing, _ = _fixture_blocks()
    f = listing.facts
    assert f["param.disk_asynch_io"] == 0 and f["param.filesystemio_async"] == 0
    assert f["param.async_io_off"] == 1
    assert f["param.number"] == {"db_writer_processes": 2, "dbwr_io_slaves": 0}
    # SQL*Plus wrapped the VALUE column: the second line continues it
    assert listing.details["parameters"]["diagnostic_dest"] == (
        "/u01/app/oracle/product/19.0.0/dbhome_1/diag"
    )


def test_pfile_lines_after_a_shell_prompt_are_a_block_of_their_own():
    _, pfile = _fixture_blocks()
    assert pfile.details["parameters"] == {
        "disk_asynch_io": "TRUE",
        "filesystemio_options": "SETALL",
    }
    assert pfile.facts["param.async_io_off"] == 0


@pytest.mark.parametrize(
    ("value", "off"),
    [("none", 1), ("directIO", 1), ("DIRECTIO", 1), ("asynch", 0), ("setall", 0)],
)
def test_filesystemio_options_values(value, off):
    (block,) = _blocks(f"*.filesystemio_options='{value}'\n*.db_name='ORCL'\n")
    assert block.facts["param.async_io_off"] == off
    assert "param.disk_asynch_io" not in block.facts


def test_a_listing_of_other_parameters_says_nothing_about_async_io():
    text = (
        "NAME                                 TYPE        VALUE\n"
        "------------------------------------ ----------- ------------------------------\n"
        "processes                            integer     1,200\n"
        "sga_target                           big integer 24G\n"
        "weird_one                            opaque      x\n"
    )
    (block,) = _blocks(text)
    assert "param.async_io_off" not in block.facts
    assert block.facts["param.number"] == {"processes": 1200}  # 24G is no plain number
    assert block.malformed_lines == 1  # a TYPE SQL*Plus does not print


def test_prose_with_an_equals_sign_is_no_pfile():
    assert not _blocks("we set filesystemio_options=none last year\nx.y = 3\n")


PASTES = {
    "collapsed whitespace": lambda line: " ".join(line.split()),
    "quoted with '# '": lambda line: "# " + line,
    "journal prefix": lambda line: "Nov 24 10:00:01 db01 dbcheck[811]: " + line,
}


@pytest.mark.parametrize("paste", sorted(PASTES))
def test_pasted_listings_read_the_same(paste):
    lines = fixture_lines(FIXTURE)
    expected = [b.facts for b in _blocks("\n".join(lines) + "\n")]
    pasted = "\n".join(PASTES[paste](line) for line in lines) + "\n"
    assert [b.facts for b in _blocks(pasted)] == expected
