"""What the slow calls were on: the fd table built from open/socket/connect/accept/close/dup
lines (strace -y's inline targets too), poll/select/epoll waits that ran out with their timeout
and the socket they waited on (port 53 is DNS), zero-timeout busy polling, futex churn, and the
slowest call's share of the trace. The C scanners hand these calls to the Python path, so the
native and pure-Python aggregators must agree, on the fast path and line by line."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from parser_helpers import assert_facts_valid

from ingest.detect import parse_lines, parse_text
from ingest.model import Block
from ingest.parsers import syscalls
from ingest.parsers.syscalls import FdTargets, describe_peer

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "linux" / "strace_dns_timeout_fttT.txt"


def _block(text: str, fmt: str = "strace") -> Block:
    ev = parse_text(text)
    (block,) = [b for b in ev.blocks if b.format == fmt]
    assert_facts_valid(block)
    return block


def test_dns_poll_timeouts_name_the_server() -> None:
    block = _block(FIXTURE.read_text())
    f = block.facts
    assert f["timeout.count"] == {"poll": 2.0, "select": 1.0}
    assert f["timeout.max_ms"] == {"poll": 5000.0, "select": 2000.0}
    assert f["socket.connects"] == {"10.0.0.53:53 (DNS)": 1.0}
    assert f["socket.dns_timeouts"] == 2.0
    first = block.details["timeouts"][0]
    assert first["syscall"] == "poll" and first["pid"] == 4711 and first["fds"] == [5]
    assert first["targets"] == ["socket to 10.0.0.53:53 (DNS)"]
    assert first["ms"] == pytest.approx(5004.1)


def test_slowest_calls_carry_their_target_and_share_of_the_span() -> None:
    block = _block(FIXTURE.read_text())
    slow = block.details["slowest"]
    assert slow[0]["syscall"] == "poll" and slow[0]["target"] == "socket to 10.0.0.53:53 (DNS)"
    pread = next(s for s in slow if s["syscall"] == "pread64")
    assert pread["target"] == "/dev/mapper/vg01-lv_data (O_DIRECT)" and pread["ms"] == 250.0
    span_ms = block.facts["trace.span_s"] * 1000
    assert block.facts["trace.slowest_share_pct"] == pytest.approx(100 * 5004.1 / span_ms, abs=0.01)


def test_busy_polling_and_futex_churn() -> None:
    f = _block(FIXTURE.read_text()).facts
    assert f["poll.zero_timeout"] == {"epoll_pwait": 30.0}
    assert f["futex.error_pct"] == 100.0
    assert f["futex.calls_per_s"] == pytest.approx(30 / f["trace.span_s"], rel=1e-3)


def test_native_and_python_aggregators_agree(monkeypatch: pytest.MonkeyPatch) -> None:
    body = "".join(FIXTURE.read_text().splitlines(keepends=True)[1:])  # without the comment
    text = body * 3  # long enough for the fast path (and the C scanner) to run
    native = parse_text(text).model_dump()
    by_line = parse_lines(text.splitlines(keepends=True)).model_dump()
    monkeypatch.setattr(syscalls, "NATIVE", False)
    python = parse_text(text).model_dump()
    assert native == python == by_line
    (block,) = [b for b in native["blocks"] if b["format"] == "strace"]
    assert block["facts"]["timeout.count"] == {"poll": 6.0, "select": 3.0}


def test_strace_y_targets_and_reused_fds() -> None:
    text = (
        '[pid 10] 10:00:00.000001 openat(AT_FDCWD, "/nfs/app/a.dat", O_RDONLY) = 5 <0.000100>\n'
        '[pid 10] 10:00:00.000200 read(5, "x", 1) = 1 <1.500000>\n'
        "[pid 10] 10:00:01.600000 close(5) = 0 <0.000010>\n"
        '[pid 10] 10:00:01.700000 openat(AT_FDCWD, "/dev/sdb", O_RDONLY) = 5 <0.000100>\n'
        '[pid 10] 10:00:01.800000 read(5, "x", 1) = 1 <0.900000>\n'
        '[pid 10] 10:00:02.800000 write(9</u01/redo01.log>, "x", 512) = 512 <0.700000>\n'
    )
    slow = {s["ms"]: s.get("target") for s in _block(text).details["slowest"]}
    # fd 5 meant the NFS file before the close and the device after it
    assert slow[1500.0] == "/nfs/app/a.dat"
    assert slow[900.0] == "/dev/sdb"
    assert slow[700.0] == "/u01/redo01.log"


def test_epoll_wait_that_ran_out_names_the_registered_sockets() -> None:
    text = (
        "[pid 7] 10:00:00.000001 socket(AF_INET, SOCK_STREAM, IPPROTO_TCP) = 9 <0.000010>\n"
        '[pid 7] 10:00:00.000100 connect(9, {sa_family=AF_INET, sin_port=htons(1521), sin_addr=inet_addr("192.0.2.7")}, 16) = -1 EINPROGRESS (Operation now in progress) <0.000050>\n'
        "[pid 7] 10:00:00.000200 epoll_create1(EPOLL_CLOEXEC) = 4 <0.000010>\n"
        "[pid 7] 10:00:00.000300 epoll_ctl(4, EPOLL_CTL_ADD, 9, {events=EPOLLOUT, data={u32=9, u64=9}}) = 0 <0.000010>\n"
        "[pid 7] 10:00:00.000400 epoll_wait(4, [], 16, 3000) = 0 <3.000100>\n"
    )
    block = _block(text)
    assert block.facts["timeout.count"] == {"epoll_wait": 1.0}
    assert block.details["timeouts"][0]["targets"] == ["socket to 192.0.2.7:1521 (Oracle listener)"]
    assert "socket.connect_errors" not in block.facts  # EINPROGRESS is how non-blocking starts


def test_truss_pollsys_that_returned_zero_is_a_timeout() -> None:
    text = (
        "2331/2:\t 0.0020\tpollsys(0xFFFFFFFF7EDFBE60, 1, 0xFFFFFFFF7EDFBDF0, 0x00000000) = 0\n"
        "2331/2:\t 5.0031\tpollsys(0xFFFFFFFF7EDFBE60, 1, 0xFFFFFFFF7EDFBDF0, 0x00000000) = 0\n"
        "2331/1:\t 5.0040\tread(9, 0xFFBFF8A0, 8192) = 8192\n"
    )
    f = _block(text, "truss").facts
    assert f["timeout.count"] == {"pollsys": 2.0}


@pytest.mark.parametrize(
    ("args", "peer"),
    [
        (
            '5, {sa_family=AF_INET, sin_port=htons(53), sin_addr=inet_addr("8.8.8.8")}, 16',
            "8.8.8.8:53 (DNS)",
        ),
        (
            '5, {sa_family=AF_INET6, sin6_port=htons(443), sin6_flowinfo=htonl(0), inet_pton(AF_INET6, "2001:db8::1", &sin6_addr), sin6_scope_id=0}, 28',
            "[2001:db8::1]:443",
        ),
        (
            '4, {sa_family=AF_UNIX, sun_path="/var/run/nscd/socket"}, 110',
            "unix:/var/run/nscd/socket",
        ),
        ("5, 0xFFBFF8A0, 16, SOV_DEFAULT", None),
    ],
)
def test_describe_peer(args: str, peer: str | None) -> None:
    assert describe_peer(args) == peer


@settings(max_examples=80, deadline=None)
@given(
    ops=st.lists(
        st.tuples(st.sampled_from(["open", "dup"]), st.integers(0, 40), st.integers(0, 40)),
        max_size=200,
    )
)
def test_property_fd_table_is_bounded_and_consistent(ops) -> None:
    """Whatever the order of opens and dups, the table stays within its caps, an fd names the
    last file opened (or duplicated) onto it, and at any earlier line the file it had then."""
    t = FdTargets()
    last: dict[int, str] = {}
    seen: list[tuple[int, int, str]] = []  # (line, fd, target from then on)
    for line, (op, fd, other) in enumerate(ops, 1):
        if op == "open":
            t.call(1, "openat", f'AT_FDCWD, "/f{line}", O_RDONLY', str(fd), None, None, line)
            last[fd] = f"/f{line}"
            seen.append((line, fd, last[fd]))
        elif fd in last:
            t.call(1, "dup2", f"{fd}, {other}", str(other), None, None, line)
            last[other] = last[fd]
            seen.append((line, other, last[other]))
    assert len(t.fds) <= syscalls.MAX_FDS
    assert all(len(h) <= syscalls.MAX_FD_HISTORY for h in t.fds.values())
    for fd, path in last.items():
        assert t.target(1, fd) == path
    for line, fd, target in seen[-3:]:
        assert t.target(1, fd, line) == target


def test_failed_calls_are_counted_by_their_target() -> None:
    text = "".join(
        f'4722  open("/dev/random", O_RDONLY|O_NONBLOCK) = 7\n'
        f"4722  read(7, 0x160dc7b{i}, 1) = -1 EAGAIN (Resource temporarily unavailable)\n"
        f"4722  close(7) = 0\n"
        for i in range(3)
    )
    f = _block(text).facts
    assert f["fd.errors"] == {"/dev/random (O_NONBLOCK) read: EAGAIN": 3.0}


def test_truss_lwps_asleep_and_the_signals_table() -> None:
    text = (
        "/1:\tread(0, 0xFFFFFD7FFFDFECAC, 1)  (sleeping...)\n"
        "/5:\tlwp_park(0x00000000, 0)\t\t(sleeping...)\n"
        "/6:\tlwp_park(0x00000000, 0)\t\t(sleeping...)\n"
        "/2:\tpollsys(0xFFFFFD7FFE7FDE30, 1, 0xFFFFFD7FFE7FDEE0, 0x00000000) = 0\n"
    )
    block = _block(text, "truss")
    assert block.facts["trace.asleep"] == {"read": 1.0, "lwp_park": 2.0}
    assert {a["lwp"] for a in block.details["asleep"]} == {"1", "5", "6"}
    summary = "signals ------------\nSIGALRM            1\ntotal:             1\n\nsyscall   seconds   calls  errors\nread         2.04  138822\n"
    block = _block(summary, "truss")
    assert block.facts["trace.signals"] == 1.0 and block.facts["syscall.count"]["read"] == 138822


def test_getpeername_names_a_socket_opened_before_the_trace() -> None:
    text = (
        '[pid 3] 10:00:00.000001 getpeername(22, {sa_family=AF_INET, sin_port=htons(1521), sin_addr=inet_addr("10.9.8.7")}, [16]) = 0 <0.000005>\n'
        '[pid 3] 10:00:00.000100 read(22, "\\0\\0", 8208) = 2 <3.000000>\n'
        '[pid 3] 10:00:03.000200 read(22, "\\0\\0", 8208) = 2 <0.000010>\n'
    )
    slow = _block(text).details["slowest"][0]
    assert slow["target"] == "socket to 10.9.8.7:1521 (Oracle listener)" and slow["fd"] == 22
