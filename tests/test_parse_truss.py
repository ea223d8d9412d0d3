"""TrussParser: the facts a person reads off Solaris truss captures (seeds 000, 001, 004 and the
solaris/ fixtures), the time-column decisions, rejection of foreign lines, and robustness."""

from __future__ import annotations

from pathlib import Path

import pytest
from parser_helpers import (
    FIXTURES,
    assert_facts_valid,
    assert_rejected_without_trace,
    drive_parser,
)

from ingest.model import Block
from ingest.parsers import syscalls
from ingest.parsers.truss import TrussParser

SEEDS = FIXTURES / "seeds"
SOLARIS = FIXTURES / "solaris"


def parse(lines: list[str], start_line: int = 1) -> tuple[Block, list[str]]:
    """Drive the parser the way the detector does; return the block and the rejected lines."""
    return drive_parser(TrussParser(), lines, start_line=start_line)


def parse_file(path: Path) -> tuple[Block, list[str]]:
    return parse(path.read_text().splitlines())


def row(block: Block, name: str) -> dict:
    return next(r for r in block.details["syscalls"] if r["syscall"] == name)


def check_valid(block: Block) -> None:
    """Facts only from the catalogue, finite numbers, JSON-clean details."""
    assert_facts_valid(block, "truss", number=float)


# -- seeds --------------------------------------------------------------------------------------


def test_shmdt_seed_ten_calls_about_24ms_apart():
    """Seed 001 (truss -d): each shmdt is charged the gap to the next line, as the author read it
    (18.5053 - 18.4807 = 24.6 ms); the last shmdt of the capture has no next line: untimed."""
    block, rejected = parse_file(SEEDS / "001_truss_shmdt.txt")
    f = block.facts
    assert rejected == [] and block.malformed_lines == 0
    assert block.format == "truss" and block.platform == "solaris"
    assert f["syscall.count"]["shmdt"] == 10
    assert f["syscall.p50_ms"]["shmdt"] == pytest.approx(24.2, abs=0.05)
    assert f["syscall.max_ms"]["shmdt"] == pytest.approx(24.7, abs=0.05)
    assert f["syscall.avg_ms"]["shmdt"] >= 5
    assert f["syscall.total_ms"]["shmdt"] == pytest.approx(194.6, abs=0.05)  # 9 timed calls
    assert f["syscall.total_ms"]["close"] == pytest.approx(17.7, abs=0.05)
    assert f["trace.span_s"] == pytest.approx(0.2123, abs=1e-4)
    assert block.details["timing"] == "d"
    assert block.identifiers[0] == "shmdt"
    check_valid(block)


def test_read_seed_repeats_grouped_by_fd_and_size_not_pid():
    """Seed 000: nine read(9, .., 512). Its first line says pid 5222, a typo for 5522 (the
    command traced -p 5522). We report what is printed (two pids, 8 reads at most per process),
    but repeats are keyed by (syscall, fd, size) regardless of pid, so all nine group."""
    block, rejected = parse_file(SEEDS / "000_truss_read.txt")
    f = block.facts
    assert rejected == []
    assert f["syscall.count"] == {"read": 9.0}
    assert f["repeat.count"]["read"] == 9
    assert f["repeat.size"]["read"] == 512
    assert f["repeat.fd"]["read"] == 9
    assert f["trace.processes"] == 2
    assert f["syscall.max_per_process"]["read"] == 8
    assert block.details["timing"] == "none"
    assert f["syscall.share_pct"]["read"] == 100  # untimed: share of calls
    assert "syscall.total_ms" not in f
    check_valid(block)


def test_listener_seed_in_call_times_deltas_errors_and_continuations():
    block, rejected = parse_file(SEEDS / "004_truss_listener.txt")
    f, d = block.facts, block.details
    assert rejected == [] and block.malformed_lines == 0
    assert d["timing"] == "E"  # the flags line says -d -ED: abs, delta, in-call
    # fork1: 0.0299 s in the call (-E), 0.0300 s since the previous line (-D)
    assert f["syscall.total_ms"]["fork1"] == pytest.approx(29.9)
    assert f["syscall.delta_ms"]["fork1"] == pytest.approx(30.0)
    assert f["fork.max_ms"] == pytest.approx(29.9)
    # waitid blocks 54.2 ms (-D) while -E shows 0: the time is waiting, not in-kernel work
    assert f["syscall.delta_ms"]["waitid"] == pytest.approx(54.2)
    assert f["syscall.total_ms"]["waitid"] == 0
    assert f["errno.count"] == {"ENOTCONN": 1.0, "ENOENT": 2.0}
    assert f["syscall.errors"]["getpeername"] == 1
    assert f["trace.errors"] == 3
    # 38 calls; the 13 -v lines (fd=9 ev=..., AF_INET name = ..., new:/old:, siginfo:) are not
    assert f["trace.calls"] == 38
    assert d["continuation_lines"] == 13
    assert f["syscall.count"]["pollsys"] == 3
    assert [p["pid"] for p in d["processes"]] == [15697]
    assert d["processes"][0]["calls"] == 38
    slow = d["slowest"][0]
    assert (slow["syscall"], slow["pid"], slow["ms"]) == ("fork1", 15697, 29.9)
    assert slow["line"] == 33  # 1-based line of `15697: 1.5798 0.0300 0.0299 fork1() = 8195`
    accept = next(s for s in d["slowest"] if s["syscall"] == "accept")
    assert accept["notes"] == ["AF_INET name = 10.44.29.32 port = 41612"]
    assert {g["ms"] for g in d["gaps"]} >= {54.2, 66.6, 129.8, 802.1}
    assert f["trace.max_gap_ms"] == pytest.approx(802.1)
    assert all(s["ms"] > 0 for s in d["slowest"])
    check_valid(block)


def test_cladm_seed_75_calls_in_one_process():
    block, rejected = parse_file(SEEDS / "004_truss_cladm.txt")
    f = block.facts
    assert rejected == [] and block.malformed_lines == 0
    assert f["syscall.count"]["cladm"] == 75  # the author counted 75 too
    assert f["syscall.max_per_process"]["cladm"] == 75
    assert f["syscall.avg_ms"]["cladm"] == pytest.approx(1.517, abs=0.01)
    assert f["syscall.total_ms"]["cladm"] == pytest.approx(113.8, abs=0.05)  # "about .11s"
    assert f["exec.avg_ms"] == pytest.approx(13.7)
    # `[...]` cuts and the author's bracketed notes are accepted and counted, never as calls
    assert block.details["elisions"] == 5
    assert block.details["continuation_lines"] == 3  # bootflags=..., nodeid=64, nodeid=2
    check_valid(block)


def test_fork_child_seed_child_line_is_not_a_second_fork():
    block, rejected = parse_file(SEEDS / "004_truss_fork_child.txt")
    f, d = block.facts, block.details
    assert rejected == [] and block.malformed_lines == 0
    assert f["syscall.count"]["fork1"] == 1  # `(returning as child ...)` is the parent's fork
    assert f["fork.max_ms"] == pytest.approx(24.6)
    assert f["trace.calls"] == 7
    assert {"pid": 8195, "parent": 15697, "line": 2} in d["children"]
    assert {"pid": 8197, "parent": 8195, "line": 7} in d["children"]
    # the child line's -D (1.5798 s since the trace began) is no gap
    assert f["trace.max_gap_ms"] == pytest.approx(24.7)
    check_valid(block)


@pytest.mark.parametrize("name", ["001_truss_lgrp.txt", "004_truss_accept.txt"])
def test_other_seed_snippets_parse_cleanly(name):
    block, rejected = parse_file(SEEDS / name)
    assert rejected == [] and block.malformed_lines == 0
    assert block.facts["trace.calls"] >= 1
    check_valid(block)


def test_lgrp_seed_counts():
    block, _ = parse_file(SEEDS / "001_truss_lgrp.txt")
    assert block.facts["syscall.count"]["_lgrpsys"] == 4
    assert block.facts["syscall.count"]["pset_info"] == 2
    assert block.details["timing"] == "d"


# -- own fixtures -------------------------------------------------------------------------------


def test_listener_all_pids_per_process_breakdown():
    block, rejected = parse_file(SOLARIS / "truss_listener_all_pids.txt")
    f, d = block.facts, block.details
    assert len(rejected) == 1 and rejected[0].startswith("# perfkb fixture")
    procs = {p["pid"]: p for p in d["processes"]}
    assert set(procs) == {15697, 8195, 8197}
    assert procs[15697]["calls"] == 38 and procs[15697]["errors"] == 3
    assert procs[8195]["calls"] == 7 and procs[8195]["time_ms"] == pytest.approx(24.6)
    assert procs[8197]["calls"] == 79
    assert procs[8197]["top"][0] == ("cladm", 75) or procs[8197]["top"][0] == ["cladm", 75]
    assert f["trace.processes"] == 3
    assert f["syscall.count"]["fork1"] == 2  # 15697's and 8195's; the child lines are not calls
    assert f["fork.avg_ms"] == pytest.approx((29.9 + 24.6) / 2)
    assert f["fork.max_ms"] == pytest.approx(29.9)
    assert f["syscall.max_per_process"]["cladm"] == 75
    assert f["syscall.max_per_process"]["write"] == 4
    assert f["syscall.count"]["write"] == 7
    assert d["processes"][0]["pid"] == 8197  # most syscall time: the cladm loop
    check_valid(block)


def test_c_summary_fills_the_same_facts():
    block, rejected = parse_file(SOLARIS / "truss_c_listener.txt")
    f, d = block.facts, block.details
    assert len(rejected) == 1
    assert d["summary"] is True
    assert f["syscall.count"]["cladm"] == 75
    assert f["syscall.total_ms"]["cladm"] == pytest.approx(114.0)
    assert f["syscall.avg_ms"]["cladm"] == pytest.approx(1.52)
    assert f["syscall.errors"]["access"] == 2
    assert f["trace.calls"] == 124  # from `sys totals:`
    assert f["trace.errors"] == 3
    assert f["syscall.share_pct"]["cladm"] == pytest.approx(100 * 114 / 184, abs=0.01)
    assert d["summary_extra"] == {"elapsed_s": 1.102}
    check_valid(block)


def test_two_columns_without_flags_line_are_d_and_D_per_lwp():
    """No command line in the paste: the first column never goes back per LWP (-d), the second
    equals its per-LWP difference (-D); (sleeping...) lines are not calls, signals are counted."""
    block, rejected = parse_file(SOLARIS / "truss_dD_lwp_signal.txt")
    f, d = block.facts, block.details
    assert len(rejected) == 1
    assert d["timing"] == "D"
    assert f["syscall.count"]["semtimedop"] == 2  # the 3 (sleeping...) lines are not calls
    assert f["syscall.total_ms"]["semtimedop"] == pytest.approx(3000.6)
    assert f["errno.count"] == {"EAGAIN": 1.0, "EINTR": 1.0}
    assert f["trace.signals"] == 1 and d["signals"] == {"SIGALRM": 1}
    assert f["repeat.count"]["kaio"] == 2  # kaio(AIOWAIT, 0xFFFFFFFF7FFFE0A0) twice
    assert f["syscall.max_ms"]["kaio"] == pytest.approx(13.0)
    assert f["trace.processes"] == 1  # 2331/1 and 2331/2 are LWPs of one process
    assert f["trace.span_s"] == pytest.approx(4.5112, abs=1e-4)
    check_valid(block)


# -- time columns -------------------------------------------------------------------------------


def test_flags_line_decides_columns_over_the_heuristics():
    # both columns happen to grow, which alone would read as -d; the command line says -D -E
    lines = [
        "# truss -D -E -p 4242",
        "4242:\t 0.0010 0.0005\tread(3, 0x1000, 8192)\t\t= 8192",
        "4242:\t 0.0020 0.0015\tread(3, 0x1000, 8192)\t\t= 8192",
        "4242:\t 0.0300 0.0290\tread(3, 0x1000, 8192)\t\t= 8192",
    ]
    block, rejected = parse(lines)
    assert rejected == []
    assert block.details["timing"] == "E"
    assert block.facts["syscall.total_ms"]["read"] == pytest.approx(31.0)
    assert block.facts["syscall.delta_ms"]["read"] == pytest.approx(33.0)
    assert "trace.span_s" not in block.facts  # no absolute column


def test_two_columns_d_and_E_by_consistency():
    lines = [
        "4242:\t 1.0000 0.0001\tread(3, 0x1000, 8192)\t\t= 8192",
        "4242:\t 1.0500 0.0002\tread(3, 0x1000, 8192)\t\t= 8192",
        "4242:\t 1.0900 0.0300\tread(3, 0x1000, 8192)\t\t= 8192",
    ]
    block, _ = parse(lines)
    assert block.details["timing"] == "E"
    assert block.facts["syscall.max_ms"]["read"] == pytest.approx(30.0)
    assert block.facts["trace.span_s"] == pytest.approx(0.09)


def test_one_column_going_backwards_is_D():
    lines = ["0.0123 pollsys(0x1, 1, 0x2, 0x0) = 1", "0.0004 read(5, 0x1, 100) = 10"] * 3
    block, _ = parse(lines)
    assert block.details["timing"] == "D"
    assert block.facts["syscall.total_ms"]["pollsys"] == pytest.approx(36.9)


def test_elision_stops_gap_timing():
    lines = [
        "1.0000 read(3, 0x1, 10) = 10",
        "1.0100 read(3, 0x1, 10) = 10",
        "[...]",
        "9.0000 write(4, 0x1, 10) = 10",
        "9.0020 close(4) = 0",
    ]
    block, _ = parse(lines)
    f = block.facts
    assert f["syscall.total_ms"]["read"] == pytest.approx(10.0)  # the 2nd read spans the cut
    assert f["syscall.total_ms"]["write"] == pytest.approx(2.0)
    assert "close" not in f["syscall.total_ms"]
    assert f["trace.max_gap_ms"] == pytest.approx(10.0)


def test_many_lines_decide_after_the_buffer_and_stay_consistent():
    lines = [f"{1.0 + i * 0.002:.4f} read(3, 0x1, 10) = 10" for i in range(200)]
    block, _ = parse(lines)
    assert block.details["timing"] == "d"
    assert block.facts["syscall.count"]["read"] == 200
    assert block.facts["syscall.p50_ms"]["read"] == pytest.approx(2.0)


# -- line shapes --------------------------------------------------------------------------------


def test_c_summary_signal_section_and_totals():
    lines = [
        "signals ------------",
        "SIGCLD             2",
        "total:             2",
        "",
        "syscall               seconds   calls  errors",
        "read                     .004     215",
        "open                     .001      19      4",
        "                     --------  ------   ----",
        "sys totals:              .005     234      4",
        "usr time:                .027",
        "elapsed:                2.640",
    ]
    block, rejected = parse(lines)
    assert rejected == []
    f = block.facts
    assert f["trace.signals"] == 2
    assert f["syscall.count"] == {"read": 215.0, "open": 19.0}
    assert f["syscall.errors"]["open"] == 4
    assert f["trace.calls"] == 234 and f["trace.errors"] == 4
    assert block.details["summary_extra"] == {"usr_time_s": 0.027, "elapsed_s": 2.64}


def test_return_shapes_and_calls_without_return():
    lines = [
        "/1:\tpipe()\t\t\t\t\t= 14 [15]",
        "/1:\tlseek(3, 0, SEEK_CUR)\t\t\t= 0x06919427",
        '/1:\topen("/etc/shadow", O_RDONLY)\t\tErr#13 EACCES [file_dac_read]',
        "/1:\tread(0, 0x1, 1)\t\t\t\tErr#4",
        '/1:\texecve("/usr/bin/ls", 0xFFBFFC5C, 0xFFBFFC64)  argc = 1',
        "/1:\t_exit(0)",
        "/1:\t*** process killed ***",
    ]
    block, rejected = parse(lines)
    assert rejected == [] and block.malformed_lines == 0
    f = block.facts
    assert f["trace.calls"] == 6
    assert f["errno.count"] == {"EACCES": 1.0, "Err#4": 1.0}
    assert f["syscall.count"]["execve"] == 1 and f["syscall.count"]["_exit"] == 1


def test_single_process_signals_and_indented_continuations():
    lines = [
        "waitid(P_PID, 8195, 0xFFBFF9C8, WEXITED|WTRAPPED) (sleeping...)",
        "    Received signal #18, SIGCLD, in waitid() [caught]",
        "      siginfo: SIGCLD CLD_EXITED pid=8195 status=0x0000",
        "waitid(P_PID, 8195, 0xFFBFF9C8, WEXITED|WTRAPPED)     = 0",
        "\tsiginfo: SIGCLD CLD_EXITED pid=8195 status=0x0000",
        "    Incurred fault #6, FLTBOUNDS  %pc = 0x0001F2A4",
        "      siginfo: SIGSEGV SEGV_MAPERR addr=0x00000000",
        "    Received signal #11, SIGSEGV [default]",
    ]
    block, rejected = parse(lines)
    assert rejected == [] and block.malformed_lines == 0
    assert block.facts["trace.calls"] == 1
    assert block.details["signals"] == {"SIGCLD": 1, "SIGSEGV": 1}
    assert block.facts["trace.signals"] == 2
    assert block.details["faults"] == {"FLTBOUNDS": 1}
    assert block.details["continuation_lines"] == 3


def test_truncated_call_is_counted_malformed_not_fatal():
    lines = [
        "15697: 1.5440 0.0014 0.0000 getsockname(12, 0xFFFFFFFF7FFF889C) = 0",
        "15697: 1.5442 0.0002 0.0000 getpeername(12, 0xFFFFFFFF7FF",
        "15697: 1.5463 0.0021 0.0020 accept(12, 0x1, 0x2, SOV_DEFAULT) = 13",
    ]
    block, rejected = parse(lines)
    assert rejected == []
    assert block.malformed_lines == 1
    assert block.facts["trace.calls"] == 2


def test_foreign_lines_are_rejected_and_leave_no_trace():
    p = TrussParser()
    for line in (SEEDS / "004_truss_fork_child.txt").read_text().splitlines():
        assert p.feed(line)
    foreign = [
        "[pid  4711] 10:14:08.701362 read(17, 0x1, 8208) = 263 <0.000011>",
        'open("/etc/x", O_RDONLY) = -1 ENOENT (No such file or directory)',
        '     0.000123 read(3, "x", 1) = 1',
        "10:14:08.701362 close(3) = 0",
        "--- SIGCHLD {si_signo=SIGCHLD} ---",
        "strace: Process 4711 attached",
        "exit_group(0) = ?",
        "The listener forks twice for every connection.",
        "CPU minf mjf xcal  intr ithr  csw icsw migr smtx  srw syscl  usr sys  wt idl",
        "# mpstat 5 2",
    ]
    assert_rejected_without_trace(p, foreign)


def test_start_scores():
    s = TrussParser.start_score
    assert s("15697: 1.5426 1.0901 0.0000 pollsys(0x10041CDA8, 2, 0x0, 0x0) = 1") == 2
    assert s('5522:   read(9, "x".., 512)      = 512') == 2
    assert s("18.4807 shmdt(0x380000000)                              = 0") == 2
    assert s('access("/x", F_OK) Err#2 ENOENT') == 2
    assert s("# truss -o /tmp/milek6 -d -f -v all -ED -p 15697") == 2
    assert s("truss -f -tread -p 5522") == 2
    assert s("syscall               seconds   calls  errors") == 2
    assert s("close(10) = 0") == 1  # strace could print this too
    assert s("[pid  4711] read(17, 0x1, 10) = 10") == 0
    assert s('open("/x", O_RDONLY) = -1 ENOENT (No such file or directory)') == 0
    assert s("I decided to use truss utility on the listener") == 0
    assert s("") == 0


def test_finish_reports_input_line_numbers():
    lines = (SEEDS / "004_truss_listener.txt").read_text().splitlines()
    block, _ = parse(lines, start_line=101)
    assert block.details["slowest"][0]["line"] == 133
    assert block.start_line == 101


# -- bounded memory -----------------------------------------------------------------------------


def test_state_stays_bounded_on_many_pids_names_and_calls():
    p = TrussParser()
    n = syscalls.MAX_PIDS + 500
    for i in range(n):
        p.feed(f"{i + 1}: {i * 0.001:.4f} 0.0001 0.0001 read({i % 50}, 0x1, {i}) = 1")
    for i in range(3 * syscalls.RESERVOIR):
        p.feed(f"7: {n * 0.001 + i * 0.001:.4f} 0.0010 {(i % 100) / 10000:.4f} times(0x1) = 1")
    for i in range(syscalls.MAX_SYSCALLS + 200):
        p.feed(f"7: {9000 + i * 0.001:.4f} 0.0001 0.0001 call{i}(0x{i:x}) = 0")
    for i in range(syscalls.MAX_NAMES + 50):
        p.feed(f"7: {9100 + i * 0.001:.4f} 0.0001 0.0001 open(0x1, 0) Err#{i % 150} EBAD{i}")
    agg = p.agg.state()
    assert len(agg.errnos) <= syscalls.MAX_NAMES
    assert len(agg.procs) <= syscalls.MAX_PIDS and agg.procs_capped
    assert len(agg.stats) <= syscalls.MAX_SYSCALLS
    assert len(agg.repeats) <= syscalls.MAX_REPEAT_KEYS
    assert all(len(s.samples) <= syscalls.RESERVOIR for s in agg.stats.values())
    block = p.finish(1, 1)
    f = block.facts
    assert f["syscall.count"]["read"] == n  # counts stay exact past the caps
    assert f["syscall.count"][syscalls.OTHER] >= 200
    # the median of 0.0..9.9 ms from a 512-value sample of 1536 calls
    assert 3.5 <= f["syscall.p50_ms"]["times"] <= 6.5
    assert len(block.identifiers) <= syscalls.MAX_IDENTIFIERS
    assert len(block.details["syscalls"]) <= syscalls.MAX_ROWS
    check_valid(block)


def test_fork_values_int_cannot_read_are_no_child_pid():
    """`²` passes str.isdigit() and 5,000 digits pass the regex; int() raises on both, which used
    to abort the whole analysis. Neither is a pid; a plain number still is."""
    lines = [f"123: 1.{i:04d} 0.0001 0.0001 read(3, 0x1, 8) = 8" for i in range(60)]
    lines += [
        "123: 2.0000 1.0000 0.1000 fork1() = ²",
        "123: 2.1000 0.1000 0.1000 fork1() = " + "9" * 5000,
        "124: 2.2000 0.1000 0.1000 read(², 0x1, 8) = 8",
        "124: 2.3000 0.1000 0.1000 read(², 0x1, 8) = 8",
        "123: 2.4000 0.3000 0.1000 fork1() = 456",
    ]
    block, rejected = parse(lines)
    assert rejected == []
    assert block.facts["syscall.count"]["fork1"] == 3
    assert block.details["children"] == [{"pid": 456, "parent": 123, "line": 65}]
