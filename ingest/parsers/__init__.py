"""The parser registry. Order is the tie-break when two formats claim the same lines: the more
specific shapes come first."""

from __future__ import annotations

import importlib

from ingest.base import Parser

_ORDER = (
    ("tkprof", "TkprofParser"),
    ("truss", "TrussParser"),
    ("strace", "StraceParser"),
    ("mpstat", "MpstatParser"),
    ("waits", "WaitsParser"),
    ("dtrace", "DtraceParser"),
    ("stack", "StackParser"),
)


def _load() -> tuple[type[Parser], ...]:
    # TRANSITIONAL: tolerate parsers that have not landed yet; made strict once all exist.
    out = []
    for module, cls in _ORDER:
        try:
            out.append(getattr(importlib.import_module(f"ingest.parsers.{module}"), cls))
        except (ImportError, AttributeError):
            continue
    return tuple(out)


PARSERS: tuple[type[Parser], ...] = _load()

__all__ = ["PARSERS"]
