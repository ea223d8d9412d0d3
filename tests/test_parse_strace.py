"""StraceParser: the seed's strace -c, the linux/ fixtures (-f -tt -T with unfinished/resumed
pairs and signals, -c with decimal commas, -f -r with a bare pid prefix), line shapes, rejection
of foreign lines, and robustness."""

from __future__ import annotations

import pytest
from parser_helpers import (
    FIXTURES,
    assert_facts_valid,
    assert_rejected_without_trace,
    drive_parser,
)

from ingest.model import Block
from ingest.parsers.strace import StraceParser
from ingest.parsers.truss import TrussParser

SEEDS = FIXTURES / "seeds"
LINUX = FIXTURES / "linux"


def parse(lines: list[str], start_line: int = 1) -> tuple[Block, list[str]]:
    return drive_parser(StraceParser(), lines, start_line=start_line)


def parse_fixture(name: str) -> tuple[Block, list[str], list[str]]:
    """Parse a linux/ fixture whose first line is its provenance comment (the block starts on
    line 2, as the detector would have it)."""
    lines = (LINUX / name).read_text().splitlines()
    assert lines[0].startswith("# perfkb fixture")
    block, rejected = parse(lines[1:], start_line=2)
    return block, rejected, lines


def check_valid(block: Block) -> None:
    assert_facts_valid(block, "strace", number=float)


# -- seed ---------------------------------------------------------------------------------------


def test_strace_c_seed_19c():
    block, rejected = parse((SEEDS / "000_strace_c_19c.txt").read_text().splitlines())
    f = block.facts
    assert rejected == [] and block.malformed_lines == 0
    assert block.format == "strace" and block.platform == "linux"
    assert f["syscall.count"] == {"getrusage": 284.0, "read": 1.0, "write": 1.0}
    assert f["trace.calls"] == 286
    assert f["syscall.share_pct"]["getrusage"] == pytest.approx(83.81)
    assert f["syscall.total_ms"]["read"] == pytest.approx(0.015)
    assert f["syscall.avg_ms"]["getrusage"] == pytest.approx(0.088 / 284, abs=1e-4)
    assert f["syscall.errors"] == {"getrusage": 0.0, "read": 0.0, "write": 0.0}
    assert f["trace.syscall_ms"] == pytest.approx(0.105)
    assert block.details["summary"] is True
    assert block.identifiers[0] == "getrusage"
    check_valid(block)


# -- own fixtures -------------------------------------------------------------------------------


def test_oracle_commit_f_tt_T():
    block, rejected, lines = parse_fixture("strace_oracle_commit_fttT.txt")
    f, d = block.facts, block.details
    assert rejected == [] and block.malformed_lines == 0
    assert d["timing"] == "T"
    # pread64: four single-block reads of fd 257, 8 KB each
    assert f["syscall.count"]["pread64"] == 4
    assert f["syscall.total_ms"]["pread64"] == pytest.approx(4.871 + 0.412 + 6.218 + 11.037)
    assert f["syscall.max_ms"]["pread64"] == pytest.approx(11.037)
    assert (f["repeat.count"]["pread64"], f["repeat.fd"]["pread64"]) == (4, 257)
    assert f["repeat.size"]["pread64"] == 8192
    assert f["syscall.max_ms"]["io_getevents"] == pytest.approx(14.633)
    # stitched pairs: the client read (3.32 s), LGWR woken after 218 ms, the fg's log file sync
    assert f["syscall.max_ms"]["read"] == pytest.approx(3322.611)
    semtimedop = {s["ms"]: s for s in d["slowest"] if s["syscall"] == "semtimedop"}
    assert semtimedop[218.28]["pid"] == 4702
    assert semtimedop[3000.874]["err"] == "EAGAIN"
    assert f["syscall.p50_ms"]["semtimedop"] == pytest.approx(218.28)  # 3000.874, 218.28, 2.394
    # calls still running at detach are counted, untimed
    assert f["syscall.count"]["semtimedop"] == 4
    assert f["syscall.count"]["read"] == 2
    assert f["syscall.avg_ms"]["read"] == pytest.approx(3322.611)
    assert f["errno.count"] == {"EAGAIN": 1.0, "ENOENT": 1.0}
    assert d["signals"] == {"SIGALRM": 1} and f["trace.signals"] == 1
    assert f["trace.processes"] == 2
    assert {p["pid"] for p in d["processes"]} == {4711, 4702}
    # line numbers point into the file
    first = d["slowest"][0]
    assert first["syscall"] == "read"
    assert lines[first["line"] - 1].endswith("read(17,  <unfinished ...>")
    check_valid(block)


def test_c_summary_with_decimal_commas():
    block, rejected, _ = parse_fixture("strace_c_decimal_comma.txt")
    f = block.facts
    assert rejected == []
    assert f["syscall.count"]["pread64"] == 18342
    assert f["syscall.total_ms"]["pread64"] == pytest.approx(2514.108)
    assert f["syscall.share_pct"]["pread64"] == pytest.approx(76.98)
    assert f["syscall.avg_ms"]["pread64"] == pytest.approx(2514.108 / 18342, abs=1e-4)
    assert f["syscall.errors"]["semtimedop"] == 31
    assert f["syscall.errors"]["openat"] == 2
    assert f["trace.calls"] == 81522 and f["trace.errors"] == 33
    assert f["trace.syscall_ms"] == pytest.approx(3265.913)
    assert "errno.count" not in f  # a -c table does not name errnos
    check_valid(block)


def test_listener_fork_r_with_bare_pids():
    block, rejected, _ = parse_fixture("strace_listener_fork_r.txt")
    f, d = block.facts, block.details
    assert rejected == [] and block.malformed_lines == 0
    assert d["timing"] == "d"
    assert f["trace.processes"] == 3
    # epoll_wait is charged the gap to pid 1432's next line (-r values accumulated)
    assert f["syscall.total_ms"]["epoll_wait"] == pytest.approx(812.455)
    assert f["syscall.delta_ms"]["accept"] == pytest.approx(812.455)  # its own -r value
    # clone: unfinished/resumed gives exactly 1.842 ms in the parent
    assert f["syscall.count"]["clone"] == 2
    assert f["fork.max_ms"] == pytest.approx(1.842)
    assert f["exec.avg_ms"] == pytest.approx(2.691)
    assert d["exits"] == [{"pid": 5119, "status": "exited with 0", "line": 16}]
    assert d["signals"] == {"SIGCHLD": 1}
    assert {"pid": 5119, "parent": 1432, "line": 9} in d["children"]
    assert f["errno.count"] == {"ENOENT": 1.0}
    assert "write" not in f["syscall.total_ms"]  # each pid's last call has no next line
    assert f["trace.span_s"] == pytest.approx(0.8456, abs=1e-4)
    check_valid(block)


# -- line shapes --------------------------------------------------------------------------------


def test_t_seconds_and_midnight_rollover():
    lines = [
        '23:59:59.900000 read(3, "x", 1) = 1',
        '00:00:00.100000 write(4, "x", 1) = 1',
        "00:00:00.150000 close(4) = 0",
    ]
    block, _ = parse(lines)
    f = block.facts
    assert f["syscall.total_ms"]["read"] == pytest.approx(200.0)
    assert f["syscall.total_ms"]["write"] == pytest.approx(50.0)
    assert f["trace.span_s"] == pytest.approx(0.25)


def test_ttt_epoch_and_bare_lines():
    block, _ = parse(
        [
            '1700000000.000100 openat(AT_FDCWD, "/etc/hosts", O_RDONLY) = 3',
            '1700000000.000400 read(3, "127.0.0.1"..., 4096) = 221',
            "1700000000.000500 close(3) = 0",
        ]
    )
    assert block.facts["syscall.total_ms"]["openat"] == pytest.approx(0.3)
    assert block.details["timing"] == "d"
    plain, _ = parse(["close(3) = 0", "close(4) = 0", "getpid() = 12"])
    assert plain.details["timing"] == "none"
    assert plain.facts["syscall.share_pct"]["close"] == pytest.approx(66.6667)
    assert "syscall.total_ms" not in plain.facts


def test_special_returns_errors_and_fd_paths():
    lines = [
        '[pid  7] read(3</u01/oradata/ORCL/users01.dbf>, "\\6\\242"..., 8192) = 8192 <0.000312>',
        '[pid  7] read(3</u01/oradata/ORCL/users01.dbf>, "\\6\\242"..., 8192) = 8192 <0.000201>',
        "[pid  7] semtimedop(98307, [{sem_num=5, sem_op=-1, sem_flg=0}], 1, {tv_sec=3, tv_nsec=0})"
        " = ? ERESTARTSYS (To be restarted if SA_RESTART is set) <1.250000>",
        "[pid  7] poll([{fd=17, events=POLLIN}], 1, 0) = 0 (Timeout) <0.000004>",
        "[pid  7] exit_group(0) = ?",
        "[pid  7] +++ killed by SIGKILL +++",
        "[pid  8] <... futex resumed>) = ? <unavailable>",
        "[pid  9] --- stopped by SIGSTOP ---",
    ]
    block, rejected = parse(lines)
    f = block.facts
    assert rejected == [] and block.malformed_lines == 0
    assert (f["repeat.count"]["read"], f["repeat.fd"]["read"], f["repeat.size"]["read"]) == (
        2,
        3,
        8192,
    )
    assert f["errno.count"] == {"ERESTARTSYS": 1.0}
    assert f["syscall.errors"]["poll"] == 0
    assert f["syscall.count"]["futex"] == 1  # resumed without its start: counted once
    assert "exit_group" not in f["syscall.total_ms"]
    assert block.details["exits"][0]["status"] == "killed by SIGKILL"
    assert block.details["signals"] == {"SIGSTOP": 1}


def test_c_table_with_blank_usecs_column_in_the_total_row():
    """Older strace left usecs/call blank in the total row; the header's column positions
    say which number is which."""
    lines = [
        "% time     seconds  usecs/call     calls    errors syscall",
        "------ ----------- ----------- --------- --------- ----------------",
        " 66,75    0,002000          40        50         5 open",
        " 33,25    0,001000           4       250           read",
        "------ ----------- ----------- --------- --------- ----------------",
        "100.00    0.003000                   300         5 total",
    ]
    block, rejected = parse(lines)
    f = block.facts
    assert rejected == []
    assert f["trace.calls"] == 300 and f["trace.errors"] == 5
    assert f["syscall.share_pct"] == {"open": 66.75, "read": 33.25}
    assert f["syscall.errors"]["open"] == 5


def test_unfinished_call_interrupted_by_a_signal_keeps_waiting():
    lines = [
        "[pid 11] 10:00:00.000000 read(5,  <unfinished ...>",
        "[pid 12] 10:00:00.100000 --- SIGALRM {si_signo=SIGALRM, si_code=SI_KERNEL} ---",
        "[pid 11] 10:00:00.200000 <... read resumed> <unfinished ...>)",
        '[pid 11] 10:00:00.500000 <... read resumed>"abc", 100) = 3',
        "[pid 11] 10:00:00.600000 close(5) = 0",
    ]
    block, rejected = parse(lines)
    assert rejected == [] and block.malformed_lines == 0
    assert block.facts["syscall.count"]["read"] == 1
    assert block.facts["syscall.total_ms"]["read"] == pytest.approx(500.0)


def test_k_stack_frames_attach_to_their_call():
    lines = [
        '[pid 5] pread64(257, "\\6\\242"..., 8192, 4096) = 8192 <0.030000>',
        " > /usr/lib64/libc-2.28.so(__pread_nocancel+0x2a) [0xf6d3a]",
        " > /u01/app/oracle/product/19.0.0/dbhome_1/bin/oracle(skgfqio+0x3c1) [0x12f4a11]",
        "[pid 5] getrusage(RUSAGE_SELF, {...}) = 0 <0.000010>",
    ]
    block, rejected = parse(lines)
    assert rejected == [] and block.facts["trace.calls"] == 2
    assert block.details["continuation_lines"] == 2
    assert block.details["slowest"][0]["notes"][1].endswith("(skgfqio+0x3c1) [0x12f4a11]")


def test_truncated_call_is_counted_malformed():
    block, rejected = parse(
        ['[pid 5] read(3, "x", 1) = 1 <0.000010>', '[pid 5] pread64(257, "\\6\\242\\0']
    )
    assert rejected == [] and block.malformed_lines == 1
    assert block.facts["trace.calls"] == 1


def test_foreign_lines_are_rejected_and_leave_no_trace():
    p = StraceParser()
    for line in (LINUX / "strace_listener_fork_r.txt").read_text().splitlines()[1:]:
        assert p.feed(line)
    foreign = [
        "15697: 1.5426 1.0901 0.0000 pollsys(0x10041CDA8, 2, 0x0, 0x0) = 1",
        '5522:   read(9, "x".., 512)      = 512',
        'access("/x", F_OK) Err#2 ENOENT',
        "# perfkb fixture: a comment",
        "Linux 5.4.17-2136.307.3.1.el7uek.x86_64 (db01)  11/22/2026  _x86_64_  (8 CPU)",
        "The commit waits on semtimedop until LGWR posts it.",
        "% time     seconds  usecs/call     calls",
    ]
    assert_rejected_without_trace(p, foreign)


def test_start_scores():
    s = StraceParser.start_score
    assert s("[pid  4711] 10:14:08.701362 getrusage(RUSAGE_SELF, {...}) = 0 <0.000011>") == 2
    assert s("1432      0.000054 getsockname(15, {...}, [16]) = 0") == 2
    assert s("10:14:05.378690 read(17,  <unfinished ...>") == 2
    assert s("<... semtimedop resumed>) = 0 <0.002394>") == 2
    assert s('open("/x", O_RDONLY) = -1 ENOENT (No such file or directory)') == 2
    assert s("% time     seconds  usecs/call     calls    errors syscall") == 2
    assert s("strace: Process 4711 attached") == 2
    assert s("sudo /bin/strace  -p 3924265 -c") == 2
    assert s("+++ exited with 0 +++") == 2
    assert s("close(10) = 0") == 1
    assert s("15697: 1.5426 1.0901 0.0000 pollsys(0x1, 2, 0x0, 0x0) = 1") == 0
    assert s("18.4807 shmdt(0x380000000)                              = 0") == 0
    assert s("nothing to see here") == 0


def test_truss_and_strace_fill_the_same_fact_names():
    """One signature covers both: the listener story on Solaris and on Linux yields the same
    fact names (bar delta_ms, which needs -D / -r)."""
    truss = TrussParser()
    for line in (FIXTURES / "solaris" / "truss_listener_all_pids.txt").read_text().splitlines():
        truss.feed(line)
    linux, _, _ = parse_fixture("strace_listener_fork_r.txt")
    solaris_names = set(truss.finish(1, 1).facts)
    assert set(linux.facts) == solaris_names
