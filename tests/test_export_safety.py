"""`perfkb export` into a directory someone else can write to never writes through a symbolic
link planted there: not as an entry's file, not as the temporary file it writes first (before,
`.<id>.yaml.tmp` was a fixed name, and a link there made export overwrite the link's target)."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

from conftest import entry_data
from server_helpers import REPO

from kb.entry_yaml import read_entries
from kb.models import validate_entry
from kb.settings import Settings
from kb.store import Store

IDS = ("export-one", "export-two")


def _kb(tmp_path: Path) -> Path:
    data = tmp_path / "kb"
    with Store(Settings(data_dir=data)) as store:
        for entry_id in IDS:
            store.add(validate_entry(entry_data(entry_id)), author="test")
    return data


def _export(data: Path, out: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "kb", "--data-dir", str(data), "export", str(out)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        env={k: v for k, v in os.environ.items() if not k.startswith("PERFKB_")},
    )


def _victim(tmp_path: Path) -> Path:
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    return victim


def test_a_link_planted_as_the_temporary_file_is_not_followed(tmp_path):
    data, out, victim = _kb(tmp_path), tmp_path / "out", _victim(tmp_path)
    out.mkdir()
    for entry_id in IDS:  # the names the old export wrote its temporary files under
        (out / f".{entry_id}.yaml.tmp").symlink_to(victim)
    result = _export(data, out)
    assert result.returncode == 0, result.stderr
    assert victim.read_text() == "precious\n"
    for entry_id in IDS:
        written = out / f"{entry_id}.yaml"
        assert stat.S_ISREG(written.lstat().st_mode)
        assert stat.S_IMODE(written.stat().st_mode) == 0o644
        assert [e.id for e in read_entries(written)] == [entry_id]
    leftovers = {p.name for p in out.iterdir()} - {f"{i}.yaml" for i in IDS}
    assert leftovers == {f".{i}.yaml.tmp" for i in IDS}  # the planted links, untouched


def test_a_link_planted_as_an_entry_file_is_refused(tmp_path):
    data, out, victim = _kb(tmp_path), tmp_path / "out", _victim(tmp_path)
    out.mkdir()
    (out / "export-two.yaml").symlink_to(victim)
    (out / "export-one.yaml").symlink_to(tmp_path / "does-not-exist-yet")  # dangling
    result = _export(data, out)
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "symbolic link" in lines[0], result.stderr
    assert "Traceback" not in result.stderr
    assert victim.read_text() == "precious\n"
    assert not (tmp_path / "does-not-exist-yet").exists()
    assert all(p.is_symlink() for p in out.iterdir())  # nothing written, links left as found
