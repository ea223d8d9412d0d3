"""Generated captures are made once and reused: the one rule every generator's `ensure` follows.

A 1 GB capture takes minutes to write, so each generator keeps the file under benchmarks/data/
with a sidecar holding what it tallied (its `Expected...` model). The file is reused while the
sidecar reads back, names the same seed, generator version and target size (when the model
records them), and the file still has the size the sidecar says; otherwise it is written again.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Protocol, TypeVar


class Tallied(Protocol):
    bytes: int

    def model_dump_json(self) -> str: ...


M = TypeVar("M", bound=Tallied)


def cached(path: Path, model: type[M], make: Callable[[], M], **key: object) -> tuple[Path, M]:
    """(path, what it holds): the capture at `path`, made by `make()` unless a sidecar beside it
    (`<name>.expected.json`) says it is already there for these `key` fields."""
    sidecar = path.with_name(path.name + ".expected.json")
    try:
        exp = model.model_validate_json(sidecar.read_text())  # type: ignore[attr-defined]
        if all(getattr(exp, k) == v for k, v in key.items()) and path.stat().st_size == exp.bytes:
            return path, exp
    except (OSError, ValueError):
        pass
    path.parent.mkdir(parents=True, exist_ok=True)
    exp = make()
    sidecar.write_text(exp.model_dump_json())
    return path, exp
