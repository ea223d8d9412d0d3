"""The formats are named once (ingest.model.FORMATS): the parser registry covers exactly them,
and what a signature may read (kb.signatures.Source) is derived from them."""

from __future__ import annotations

from typing import get_args

from ingest.model import FORMATS, Format
from ingest.parsers import PARSERS
from kb.signatures import Source


def test_every_format_has_one_parser_and_every_parser_a_format():
    parsed = [p.format for p in PARSERS]
    assert len(parsed) == len(set(parsed))
    assert set(parsed) == set(FORMATS) - {"unknown"}


def test_the_literals_are_the_list():
    assert get_args(Format) == FORMATS
    assert set(get_args(Source)) == (set(FORMATS) - {"unknown"}) | {"text"}
