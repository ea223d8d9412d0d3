"""A rebuild's second half, written by another process as a segment of its own.

Why: a rebuild is Python from end to end (analysis, whoosh's pickling of posting blocks, zlib),
and one process uses one core. The 10k benchmark's rebuild took 11-17 s in one process on this
2-core box (2026-12-03) while the other core idled; split in two, 6.9-7.8 s (0.59x the one
process in the same run), 2,000 documents 1.9-2.2 s against 3.0 s.

The split keeps what a rebuild answers. The parent writes the first half of the documents as
one segment, a child process the second half as another (both with kb.index_fast.BulkWriter,
each segment byte for byte the one whoosh's own writer makes of those documents), and the index
lists the parent's segment first, so docnums are the order the documents came in. whoosh's
BM25F and the search file score with the totals of all segments, so every score is the one the
single segment gave, to the last bits or nearly: whoosh adds a document's per-field scores in an
order it picks per segment from the posting counts, so two documents that tie exactly in one
segment can differ in the 16th digit when they are in two and swap places, as they do after any
edit that adds a segment (tests/test_index_part.py compares the answers run of ties by run of
ties, and the search file with whoosh exactly). The child also writes its segment's rows of the
search file (kb.index_fast.segment_rows), which the parent's file starts from: reading a
5,000-document segment back for them cost 1.9 s.

The child gets its documents and the schema as a pickle in a private directory of the build
(mkdtemp's 0700), not through a pipe, so neither process waits for the other to read. A child
that fails to start or to finish (killed, out of memory, a missing interpreter) is logged and
its half written in this process instead, the same function, so a rebuild never depends on a
second process: a document that cannot be written fails the rebuild here as it would without
the split. Small rebuilds are not split: a child's start-up (an interpreter, whoosh's imports:
~0.4 s of CPU) costs more than it saves below PART_MIN_DOCS documents.

This module is also the child's entry point: `python -m kb.index_part DIR`."""

from __future__ import annotations

import logging
import os
import pickle
import shutil
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from whoosh import index
from whoosh.index import TOC

from kb.index_fast import BulkWriter, collector_off, segment_rows
from kb.search_file import SCORED_FIELDS
from kb.search_query import FACETS

log = logging.getLogger("perfkb.index")

# Below this many documents a rebuild is written by one process: a child's start-up is ~0.4 s of
# CPU, and 2,000 documents took 3.0 s in one process against 1.9-2.2 s split (2026-12-03).
PART_MIN_DOCS = 2_000
INPUT = "documents.pickle"  # the child's documents and schema
ROWS = "rows.sqlite3"  # the child's segment's rows of the search file
STDERR = "stderr.txt"
# what the search file is made of: the fields BulkWriter keeps from its commit
KEEP_FIELDS = frozenset((*SCORED_FIELDS, *FACETS))


def cores() -> int:
    """The cores this process may run on (a container's limit, not the machine's count)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def split_at(count: int, min_docs: int = PART_MIN_DOCS) -> int:
    """Where a rebuild of `count` documents is split (the child writes from here on), or
    `count` when it is written in one process (too few documents, or one core)."""
    if count < max(2, min_docs) or cores() < 2:
        return count
    return count // 2


def write_part(where: Path, schema: Any, fields: Sequence[dict[str, Any]], bulk: int) -> None:
    """An index of `fields` (documents as whoosh fields) in the empty directory `where`, as one
    segment, and that segment's search-file rows in `where / ROWS`: what the child does, and
    what the parent does instead when the child fails."""
    ix = index.create_in(str(where), schema)
    writer = BulkWriter(ix.writer(), bulk)
    writer.keep_fields = KEEP_FIELDS
    with collector_off():
        try:
            for doc in fields:
                writer.add(doc)
        except BaseException:
            writer.cancel()
            raise
        writer.commit()
        searcher = ix.searcher()
        try:
            segment_rows(where / ROWS, searcher, writer.kept, writer.kept_stored)
        finally:
            searcher.close()


class Part:
    """The second half of a rebuild, being written by a child process in `where` (a directory
    inside the new index's, whose name starts with a dot: whoosh's file listing and clean-up
    pass over it). `finish` waits for it and moves its segment into the index."""

    def __init__(
        self, where: Path, schema: Any, fields: Sequence[dict[str, Any]], bulk: int
    ) -> None:
        self.where = where
        self._schema = schema
        self._fields = fields
        self._bulk = bulk
        where.mkdir()
        with open(where / INPUT, "wb") as f:
            pickle.dump((schema, list(fields), bulk), f, protocol=pickle.HIGHEST_PROTOCOL)
        self._proc: subprocess.Popen[bytes] | None = None
        self.rows: Path | None = None  # set by finish
        try:
            with open(where / STDERR, "wb") as err:
                self._proc = subprocess.Popen(
                    child_command(where),
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.DEVNULL,
                    stderr=err,
                    env=_child_env(),
                )
        except OSError as exc:
            log.warning("index rebuild: no second process (%s); writing it all here", exc)

    def __len__(self) -> int:
        return len(self._fields)

    def finish(self, into: Path) -> list[Any]:
        """Wait for the child; its segment, moved into the index directory `into` (`rows` is
        then its search-file rows). When the child failed, its half is written here first."""
        code = self._proc.wait() if self._proc is not None else None
        if code != 0:
            if code is not None:
                log.warning(
                    "index rebuild: the second process ended with %s (%s); writing its half here",
                    code,
                    _tail(self.where / STDERR),
                )
            for stale in self.where.iterdir():
                if stale.name not in (INPUT, STDERR):
                    _remove(stale)
            write_part(self.where, self._schema, self._fields, self._bulk)
        segments = index.open_dir(str(self.where))._segments()
        ids = {s.segment_id() for s in segments}
        pattern = TOC._segment_pattern(index._DEF_INDEX_NAME)
        for name in os.listdir(self.where):
            m = pattern.match(name)
            if m and m.group(1) in ids:
                os.replace(self.where / name, into / name)
        self.rows = self.where / ROWS
        return segments

    def close(self) -> None:
        """Stop the child if it still runs (the rebuild failed or was interrupted)."""
        if self._proc is not None and self._proc.poll() is None:
            self._proc.kill()
            self._proc.wait()


def child_command(where: Path) -> list[str]:
    return [sys.executable, "-m", "kb.index_part", str(where)]


def _child_env() -> dict[str, str]:
    """This environment, with the directory kb is imported from first on the child's path (a
    checkout run without installing, a test run from the root)."""
    env = dict(os.environ)
    root = str(Path(__file__).resolve().parent.parent)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH", "")) if p)
    return env


def _tail(path: Path, limit: int = 2_000) -> str:
    try:
        text = path.read_bytes()[-limit:].decode("utf-8", "replace").strip()
    except OSError:
        return "no error output"
    return text.splitlines()[-1] if text else "no error output"


def _remove(path: Path) -> None:
    if path.is_dir():
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)


def main(argv: list[str]) -> int:
    """The child: write the part described in DIR/documents.pickle into DIR."""
    where = Path(argv[0])
    with open(where / INPUT, "rb") as f:
        schema, fields, bulk = pickle.load(f)
    write_part(where, schema, fields, bulk)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
