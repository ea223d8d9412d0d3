"""An entry as YAML for revision diffs: the same canonical form `perfkb export` writes."""

from __future__ import annotations

from kb.entry_yaml import dump_entry
from kb.models import Entry


def entry_yaml(entry: Entry) -> str:
    return dump_entry(entry)
