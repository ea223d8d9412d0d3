"""Generated captures: how a generator writes one (CaptureWriter) and the one rule by which it is
made once and reused (cached), which every generator's `ensure` follows.

A 1 GB capture takes minutes to write, so each generator keeps the file under benchmarks/data/
with a sidecar holding what it tallied (its `Expected...` model). The file is reused while the
sidecar reads back, names the same seed, generator version and target size (when the model
records them), and the file still has the size the sidecar says; otherwise it is written again.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Protocol, TextIO, TypeVar


class CaptureWriter:
    """Buffers lines and writes them in large chunks, counting bytes and lines, until the
    capture reaches its target size (`full`). Generators write ASCII only: characters are bytes."""

    def __init__(self, fh: TextIO, target: int) -> None:
        self.fh = fh
        self.target = target
        self.buf: list[str] = []
        self.size = 0
        self.lines = 0

    def add(self, line: str) -> None:
        self.buf.append(line)
        self.size += len(line) + 1
        self.lines += 1
        if len(self.buf) >= 8192:
            self.flush()

    def flush(self) -> None:
        if self.buf:
            self.fh.write("\n".join(self.buf) + "\n")
            self.buf = []

    @property
    def full(self) -> bool:
        return self.size >= self.target


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
