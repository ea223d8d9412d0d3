"""What the nfsiostat parser reads (issue 16): both nfs-utils layouts by their column headers,
the first report of a mount (since mount) left out when later ones exist, the client queue as
exe - RTT, idle mounts kept out of the worst; pastes read the same."""

from __future__ import annotations

import pytest

from ingest.detect import parse_text
from tests.parser_helpers import assert_facts_valid, fixture_lines

FIXTURE = "os_profiles/nfsiostat_releases.txt"


def _blocks(text: str) -> list:
    blocks = [b for b in parse_text(text).blocks if b.format == "nfsiostat"]
    for b in blocks:
        assert_facts_valid(b)
    return blocks


def _fixture_blocks() -> list:
    return _blocks("\n".join(fixture_lines(FIXTURE)) + "\n")


def test_interval_reports_leave_the_since_mount_report_out():
    interval, _ = _fixture_blocks()
    f = interval.facts
    assert f["os.since_boot"] == 0
    assert f["nfs.exe_ms"] == {"/u02/oradata read": 36.0, "/u02/oradata write": 19.0}
    assert f["nfs.rtt_ms"]["/u02/oradata read"] == 31.0
    assert f["nfs.worst"] == "/u02/oradata read" and f["nfs.worst_exe_ms"] == 36.0
    assert f["nfs.worst_ops_per_s"] == 300.0
    assert f["nfs.worst_client_queue_ms"] == 5.0  # exe 36 - RTT 31
    assert f["nfs.max_retrans_pct"] == 0.2 and f["nfs.max_backlog"] == 1.2
    assert interval.details["mounts"]["/u02/oradata"]["device"] == "filer01:/vol/oradata"


def test_nfs_utils_1_layout_with_the_header_on_its_own_line_and_one_report():
    _, old = _fixture_blocks()
    f = old.facts
    assert f["os.since_boot"] == 1  # one report: averages since the mount
    assert f["nfs.worst"] == "/backup write" and f["nfs.worst_exe_ms"] == 140.0
    assert f["nfs.worst_client_queue_ms"] == 45.0
    # 0.1 reads per second is not where the time goes: no read maximum
    assert "nfs.max_read_exe_ms" not in f and f["nfs.exe_ms"]["/backup read"] == 4.1


def test_means_are_weighted_by_calls_over_the_interval_reports():
    report = (
        "srv:/v mounted on /d:\n\n"
        "read: ops/s kB/s kB/op retrans avg RTT (ms) avg exe (ms)\n"
        "{ops} 0 8 0 (0.0%) {rtt} {exe}\n"
    )
    text = "".join(
        report.format(ops=o, rtt=r, exe=e)
        for o, r, e in ((999, 1, 1), (100, 10, 10), (300, 30, 30))
    )
    (block,) = _blocks(text)
    # (100 x 10 + 300 x 30) / 400; the first report (999 calls at 1 ms) is since mount
    assert block.facts["nfs.exe_ms"]["/d read"] == 25.0
    assert block.facts["nfs.ops_per_s"]["/d read"] == 200.0


def test_a_row_that_does_not_fit_its_header_is_counted_not_fatal():
    text = (
        "srv:/v mounted on /d:\n"
        "read: ops/s kB/s kB/op retrans avg RTT (ms) avg exe (ms)\n"
        "10.0 80.0 8.0 0 (0.0%) 2.0 2.5\n"
        "write: ops/s kB/s kB/op retrans avg RTT (ms) avg exe (ms)\n"
        "12.0 garbage\n"
    )
    (block,) = _blocks(text)
    assert block.malformed_lines == 1
    assert block.facts["nfs.exe_ms"] == {"/d read": 2.5}


PASTES = {
    "collapsed whitespace": lambda line: " ".join(line.split()),
    "quoted with '# '": lambda line: "# " + line,
    "journal prefix": lambda line: "Nov 24 10:00:01 db01 nfsmon[811]: " + line,
    "tabs for blanks": lambda line: line.replace("  ", "\t"),
}
# no decimal commas: nfsiostat is Python and formats with `%`, which ignores the locale


@pytest.mark.parametrize("paste", sorted(PASTES))
def test_pasted_captures_read_the_same(paste):
    lines = fixture_lines(FIXTURE)
    expected = [b.facts for b in _blocks("\n".join(lines) + "\n")]
    pasted = "\n".join(PASTES[paste](line) for line in lines) + "\n"
    assert [b.facts for b in _blocks(pasted)] == expected
