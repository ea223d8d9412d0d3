"""The same paste gives the same evidence on every run: nothing in a parser's output may follow
Python's hash randomisation (iterating a set of ASH flags could reorder the keys of an ASH table
between runs, so `perfkb analyze --json` was not byte-identical). Interpreters with different
hash seeds parse every fixture and every corpus snippet; their Evidence JSON must be equal."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT.parent / "shared" / "corpus" / "snippets"

SCRIPT = """
import hashlib, sys
from pathlib import Path
from ingest.detect import parse_text
for name in sys.argv[1:]:
    text = Path(name).read_text(encoding="utf-8", errors="replace")
    digest = hashlib.sha256(parse_text(text).model_dump_json().encode()).hexdigest()
    print(name, digest)
"""


def _digests(files: list[str], seed: str) -> str:
    env = {**os.environ, "PYTHONHASHSEED": seed}
    run = subprocess.run(
        [sys.executable, "-c", SCRIPT, *files],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    return run.stdout


def test_evidence_does_not_depend_on_the_hash_seed():
    assert CORPUS.is_dir(), f"the development corpus is missing: {CORPUS}"
    files = sorted(
        str(p)
        for p in [*(ROOT / "tests" / "fixtures").rglob("*"), *CORPUS.iterdir()]
        if p.is_file() and p.suffix in (".txt", ".html", ".log", ".trc", "")
    )
    assert len(files) > 100
    first, second = _digests(files, "1"), _digests(files, "2")
    differing = [
        a.split()[0] for a, b in zip(first.splitlines(), second.splitlines(), strict=True) if a != b
    ]
    assert not differing, f"evidence differs between runs for {sorted(differing)}"
