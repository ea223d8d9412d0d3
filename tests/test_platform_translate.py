"""kb/platform.translate: an entry's command for the other OS, through the tool pairs in
kb/rules/translate.yaml (commands invented in the shape the entries carry)."""

from __future__ import annotations

import pytest

from kb.platform import _rules, translate


@pytest.mark.parametrize(
    ("command", "to", "want"),
    [
        ("truss -c -p {pid}", "linux", "strace -c -f -p {pid}"),
        ("truss -f -d -D -E -p {pid}", "linux", "strace -f -tt -T -p {pid}"),
        ("pstack {pid}", "linux", "eu-stack -p {pid}"),
        ("pfiles 4711", "linux", "ls -l /proc/4711/fd"),
        ("iostat -xnz 5 3", "linux", "iostat -xz 5 3"),
        ("strace -c -f -p {pid}", "solaris", "truss -c -f -p {pid}"),
        ("strace -f -tt -T -p {pid}", "solaris", "truss -f -d -D -E -p {pid}"),
        ("eu-stack -p {pid}", "solaris", "pstack {pid}"),
        ("ls -l /proc/{pid}/fd", "solaris", "pfiles {pid}"),
        ("numactl --hardware", "solaris", "lgrpinfo -a"),
    ],
)
def test_the_usual_pairs(command: str, to: str, want: str) -> None:
    assert translate(command, to) == want


def test_other_platforms_and_unknown_commands_stay_as_they_are() -> None:
    assert translate("truss -c -p 1", "aix") == "truss -c -p 1"
    assert translate("sqlplus / as sysdba", "linux") == "sqlplus / as sysdba"


def test_every_rule_file_entry_is_read() -> None:
    rules = _rules()
    assert set(rules) == {"linux", "solaris"}
    assert len(rules["linux"]) >= 10 and len(rules["solaris"]) >= 10
