"""The YAML data files perfkb ships (the fact catalogue, the triage rules, the command
translations), parsed once per content rather than once per process.

Why: `perfkb analyze` of a one-line paste reads all three before it answers, and importing a
YAML parser and parsing ~115 KB with it (libyaml included) was ~30 ms CPU of a 0.2 s budget
(issue #19), for files that change only with perfkb. The parsed data is kept as JSON beside
Python's bytecode (`__pycache__` next to the file, or under PYTHONPYCACHEPREFIX), keyed by the
SHA-256 of the file's bytes: an edited file is parsed again, whatever its time stamps. The cache
is written only where Python would write bytecode (not under PYTHONDONTWRITEBYTECODE) and only
when JSON gives back exactly what the YAML parser gave (no dates, sets, NaN, non-string keys);
a missing, stale, unreadable or damaged cache file is parsed around, never an error. It holds
data only: nothing in it is executed.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import sys
from pathlib import Path
from typing import Any

FORMAT = 1  # bump when what is stored changes


def load_yaml(path: Path) -> Any:
    """The file's YAML document as `yaml.load(text, CSafeLoader)` gives it (libyaml when PyYAML
    has it, else the pure-Python SafeLoader: the same documents). A YAML error is raised."""
    raw = path.read_bytes()
    digest = hashlib.sha256(raw).hexdigest()
    cache = cache_path(path)
    if cache is not None:
        found = _read(cache, digest)
        if found is not None:
            return found[0]
    data = _parse(raw)
    if cache is not None and not sys.dont_write_bytecode:
        _write(cache, digest, data, path.stat().st_mode & 0o666)
    return data


def cache_path(path: Path) -> Path | None:
    """Where the parsed `path` is kept: the bytecode directory Python would use for a module
    beside it (honours PYTHONPYCACHEPREFIX); None where Python keeps no bytecode."""
    try:
        pyc = importlib.util.cache_from_source(str(path.with_suffix(".py")))
    except (NotImplementedError, ValueError):
        return None
    return Path(pyc).parent / f"{path.name}.json"


def _parse(raw: bytes) -> Any:
    import yaml  # here: a cached file needs no parser

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml when built: 10x faster
    # as Path.read_text gave it: UTF-8, universal newlines
    text = raw.decode("utf-8").replace("\r\n", "\n").replace("\r", "\n")
    return yaml.load(text, Loader=loader)


def _read(cache: Path, digest: str) -> tuple[Any] | None:
    """(data,) from a cache file of this content, else None."""
    try:
        stored = json.loads(cache.read_bytes())
    except (OSError, ValueError):
        return None
    if (
        not isinstance(stored, dict)
        or stored.get("format") != FORMAT
        or stored.get("sha256") != digest
        or "data" not in stored
    ):
        return None
    return (stored["data"],)


def _write(cache: Path, digest: str, data: Any, mode: int) -> None:
    """Keeps `data` for the next process when JSON carries it exactly, readable by whoever may
    read the file itself (`mode`, as Python writes bytecode); a failure to write (read-only
    install, full disk) only means parsing next time."""
    import tempfile

    try:
        text = json.dumps(
            {"format": FORMAT, "sha256": digest, "data": data},
            ensure_ascii=False,
            allow_nan=False,
        )
    except (TypeError, ValueError):
        return  # a date, a set, bytes, NaN: not JSON
    if json.loads(text)["data"] != data:
        return  # e.g. a number as a mapping key would come back as a string
    try:
        cache.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=cache.parent, prefix=f".{cache.name}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                fh.write(text)
            os.chmod(tmp, mode)
            os.replace(tmp, cache)  # whole or not at all, for a reader in another process
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
    except OSError:
        return
