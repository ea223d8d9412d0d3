"""strace or truss? Bare syscall lines (no pid, no time) are read by their shape and by the
context around them; lines both tools print alike leave the platform unsure (None) instead of
guessing, and the next commands follow from that through the real analysis."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ingest.detect import parse_lines, parse_text
from ingest.parsers.syscalls import dialect
from kb.analysis import analyze_text


def _syscall_blocks(text: str) -> list[tuple[str, str | None]]:
    ev = parse_text(text)
    assert ev.model_dump() == parse_lines(text.splitlines(keepends=True)).model_dump()
    return [(b.format, b.platform) for b in ev.blocks if b.format in ("strace", "truss")]


@pytest.mark.parametrize(
    ("line", "said"),
    [
        ("clock_gettime(CLOCK_MONOTONIC, {tv_sec=5123, tv_nsec=77}) = 0", "strace"),
        ('pread64(12, "...", 8192, 1048576) = 8192', "strace"),
        ('open("/etc/x", O_RDONLY) = -1 ENOENT (No such file or directory)', "strace"),
        ('read(3, "abc"..., 4096) = 4096', "strace"),
        ("mmap(NULL, 8192, PROT_READ, MAP_PRIVATE, -1, 0) = 0x7f190ca6a000", "strace"),
        ('openat(AT_FDCWD, "/etc/passwd", O_RDONLY) = 3', "strace"),
        ('open("/etc/x", O_RDONLY) Err#2 ENOENT', "truss"),
        ("read(9, 0xFFBFF8A0, 8192) = 8192", "truss"),
        ("pollsys(0x10041CDA8, 2, 0x00000000, 0x00000000) = 1", "truss"),
        ("lwp_park(0x00000000, 0) (sleeping...)", "truss"),
        ('kread(16, "\\0\\0".., 1024) = 1', "aix"),
        ("thread_tsleep(0, 0x09001000A1B57A60, 0x0000000000000000) = 1073741824", "aix"),
        ('read(9, "", 8192) = 0', None),
        ('open("/u01/oradata/users01.dbf", O_RDWR|O_DSYNC) = 9', None),
        ("close(9) = 0", None),
    ],
)
def test_dialect_from_shape(line: str, said: str | None) -> None:
    assert dialect(line) == said


def test_bare_strace_lines_are_strace_on_linux_with_linux_commands() -> None:
    text = (
        "clock_gettime(CLOCK_MONOTONIC, {tv_sec=5123, tv_nsec=77}) = 0\n"
        'pread64(12, "\\0\\0\\0", 8192, 1048576) = 8192\n'
        'pread64(12, "\\0\\0\\0", 8192, 1056768) = 8192\n'
    )
    assert _syscall_blocks(text) == [("strace", "linux")]
    result = analyze_text(text)
    assert result.platform == "linux"
    assert result.next_commands
    assert {c.platform for c in result.next_commands} <= {"linux", "any"}


def test_bare_truss_lines_are_truss_on_solaris_with_solaris_commands() -> None:
    text = (
        "read(9, 0xFFBFF8A0, 8192)\t\t\t= 8192\n"
        "times(0xFFBFFA10)\t\t\t\t= 1754133\n"
        "read(9, 0xFFBFF8A0, 8192)\t\t\t= 8192\n"
    )
    assert _syscall_blocks(text) == [("truss", "solaris")]
    result = analyze_text(text)
    assert result.platform == "solaris"
    assert {c.platform for c in result.next_commands} <= {"solaris", "any"}


def test_lines_both_print_alike_leave_the_platform_unsure() -> None:
    text = 'open("/tmp/a", O_RDONLY) = 3\nread(3, "", 8192) = 0\nclose(3) = 0\n'
    blocks = _syscall_blocks(text)
    assert len(blocks) == 1 and blocks[0][1] is None
    result = analyze_text(text)
    assert result.platform is None
    # unsure: both platforms' commands are offered, not only Solaris ones
    assert {"solaris", "linux"} <= {c.platform for c in result.next_commands}


def test_ambiguous_opening_then_a_strace_shape_is_one_strace_block() -> None:
    text = (
        'open("/u01/oradata/users01.dbf", O_RDWR|O_DSYNC) = 9\n'
        "fcntl(9, F_SETFD, FD_CLOEXEC)           = 0\n"
        "fcntl(9, F_DUPFD, 256)                  = 258\n"
        "...\n"
        'pread(258, "\\6\\242"..., 1032192, 10502144) = 1032192\n'
    )
    assert _syscall_blocks(text) == [("strace", "linux")]


def test_ambiguous_opening_then_a_truss_shape_is_one_truss_block() -> None:
    text = (
        'open("/u01/oradata/users01.dbf", O_RDWR|O_DSYNC) = 9\n'
        "close(9) = 0\n"
        'open("/u01/oradata/users01.dbf", O_RDWR|O_DSYNC) = 9\n'
        'open("/etc/nope", O_RDONLY) Err#2 ENOENT\n'
    )
    assert _syscall_blocks(text) == [("truss", "solaris")]


@pytest.mark.parametrize(
    ("before", "fmt", "platform"),
    [
        ("[root@db01 ~]# cat trace.out", "strace", "linux"),
        ("Linux db01 4.18.0-372.el8.x86_64 #1 SMP x86_64 GNU/Linux", "strace", "linux"),
        ("SunOS db01 5.11 11.4.42.111.0 sun4v sparc sun4v", "truss", "solaris"),
    ],
)
def test_context_breaks_the_tie(before: str, fmt: str, platform: str) -> None:
    text = f'{before}\nopen("/tmp/a", O_RDONLY) = 3\nread(3, "", 8192) = 0\nclose(3) = 0\n'
    ev = parse_text(text)
    assert [b.format for b in ev.blocks if b.format in ("strace", "truss")] == [fmt]
    assert ev.context.platform == platform


@pytest.mark.parametrize(
    "prefix",
    [
        "Mar 14 09:12:44 ",
        "Mar  4 09:12:44 db01 strace[4711]: ",
        "2024-03-14T09:12:44.123456+01:00 db01 strace[4711]: ",
        "2024-03-14T09:12:44Z db01 ",
    ],
)
def test_strace_lines_behind_syslog_or_journal_prefixes(prefix: str) -> None:
    lines = [
        "recvfrom(7, 0x7ffd2a1c, 4096, 0, NULL, NULL) = -1 EAGAIN (Resource temporarily unavailable)",
        "poll([{fd=7, events=POLLIN}], 1, 5000) = 0 (Timeout)",
        "recvfrom(7, 0x7ffd2a1c, 4096, 0, NULL, NULL) = -1 EAGAIN (Resource temporarily unavailable)",
    ]
    text = "".join(prefix + line + "\n" for line in lines)
    ev = parse_text(text)
    blocks = [b for b in ev.blocks if b.format != "unknown"]
    assert [(b.format, b.platform) for b in blocks] == [("strace", "linux")]
    assert blocks[0].facts["syscall.count"] == {"recvfrom": 2.0, "poll": 1.0}
    assert blocks[0].facts["errno.count"] == {"EAGAIN": 2.0}


def test_aix_truss_with_thread_ids() -> None:
    text = (
        "56361298: 83624347: thread_twakeup(63242633, 1073741824)        = 0\n"
        '56361298: 83624347: kwrite(17, "\\0", 1)                 = 1\n'
        "56361298: 63242633: thread_tsleep(0, 0x09001000A1B57A60, 0x0000000000000000) = 1\n"
    )
    ev = parse_text(text)
    (block,) = [b for b in ev.blocks if b.format != "unknown"]
    assert (block.format, block.platform) == ("truss", "aix")
    assert block.facts["syscall.count"] == {
        "thread_twakeup": 1.0,
        "kwrite": 1.0,
        "thread_tsleep": 1.0,
    }
    assert block.facts["trace.processes"] == 1.0


_NAMES = st.sampled_from(["read", "write", "close", "lseek", "fsync", "ioctl"])
_ARGS = st.lists(st.integers(0, 99999), min_size=1, max_size=4).map(
    lambda xs: ", ".join(map(str, xs))
)


@settings(max_examples=60, deadline=None)
@given(
    calls=st.lists(st.tuples(_NAMES, _ARGS, st.integers(0, 9999)), min_size=1, max_size=12),
    strace_shape=st.sampled_from(
        [
            " = -1 EAGAIN (Resource temporarily unavailable)",
            " = 0 <0.000123>",
        ]
    ),
    at=st.integers(0, 12),
)
def test_property_one_strace_shape_makes_the_block_strace_on_linux(calls, strace_shape, at):
    """However many ambiguous bare lines surround it, one strace-only line makes every block
    strace/linux, and no truss block appears."""
    lines = [f"{n}({a}) = {r}" for n, a, r in calls]
    at = min(at, len(lines))
    lines.insert(at, "read(5, 0x1000, 10)" + strace_shape)
    blocks = _syscall_blocks("\n".join(lines) + "\n")
    assert blocks and all(b == ("strace", "linux") for b in blocks)


@settings(max_examples=60, deadline=None)
@given(
    calls=st.lists(st.tuples(_NAMES, _ARGS, st.integers(0, 9999)), min_size=1, max_size=12),
    at=st.integers(0, 12),
)
def test_property_one_truss_shape_makes_the_block_truss_on_solaris(calls, at):
    lines = [f"{n}({a}) = {r}" for n, a, r in calls]
    at = min(at, len(lines))
    lines.insert(at, 'open("/x", O_RDONLY) Err#2 ENOENT')
    blocks = _syscall_blocks("\n".join(lines) + "\n")
    assert blocks and all(b == ("truss", "solaris") for b in blocks)


def test_program_output_inside_a_write_line_keeps_one_block() -> None:
    text = (
        'openat(AT_FDCWD, "/etc/hosts", O_RDONLY|O_CLOEXEC) = -1 ENOENT (No such file or directory)\n'
        'write(1, "line one\\nline two\\n", 18line one\n'
        "line two\n"
        ") = 18\n"
        "exit_group(0)                           = ?\n"
        "+++ exited with 0 +++\n"
    )
    (block,) = [b for b in parse_text(text).blocks if b.format != "unknown"]
    assert (block.format, block.malformed_lines) == ("strace", 0)
    assert block.facts["syscall.count"] == {"openat": 1.0, "write": 1.0, "exit_group": 1.0}


def test_a_split_write_that_never_ends_does_not_swallow_what_follows() -> None:
    text = (
        'openat(AT_FDCWD, "/etc/hosts", O_RDONLY) = -1 ENOENT (No such file or directory)\n'
        'write(1, "abc", 3abc\n'
        "close(3) = 0\n"
        "So the lookup never happened on Oracle 19.12 here.\n"
    )
    ev = parse_text(text)
    assert "19.12" in ev.context.versions
    (block,) = [b for b in ev.blocks if b.format == "strace"]
    assert block.end_line == 3


_PREFIXES = st.sampled_from(
    [
        "Mar 14 09:12:44 ",
        "Nov  2 23:01:07 db01 strace[77]: ",
        "2024-03-14T09:12:44.123456+01:00 db01 strace[77]: ",
        "2024-03-14 09:12:44,5 host ",
    ]
)


@settings(max_examples=50, deadline=None)
@given(
    calls=st.lists(
        st.tuples(
            _NAMES,
            _ARGS,
            st.sampled_from([" = 0", " = -1 EAGAIN (Resource temporarily unavailable)"]),
        ),
        min_size=1,
        max_size=10,
    ),
    prefix=_PREFIXES,
)
def test_property_a_log_prefix_changes_nothing(calls, prefix) -> None:
    """strace lines behind any syslog/journal stamp give the facts the bare lines give."""
    lines = [f"{n}({a}){r}" for n, a, r in calls]
    lines.append("read(3, 0x7ffd1000, 16) = -1 EINTR (Interrupted system call)")
    bare = parse_text("\n".join(lines) + "\n")
    logged = parse_text("".join(prefix + line + "\n" for line in lines))
    (b1,) = [b for b in bare.blocks if b.format != "unknown"]
    (b2,) = [b for b in logged.blocks if b.format != "unknown"]
    assert (b2.format, b2.platform) == ("strace", "linux")
    assert b2.facts == b1.facts
