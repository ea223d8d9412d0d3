"""The C core (ingest/_syscore_src/) against the pure-Python SyscallAggregator, the reference.

tests/test_detect_fast_path.py compares whole generated captures; here: the aggregator API driven
with random operations (hypothesis), capture shapes the generator does not print (strace -r,
[pid N], lines without a pid, truss signals without a name, non-ASCII text, values int() cannot
read), the caps, the detector's fence/control scan, and that the core is built at all (a broken
build would otherwise fall back to Python silently and only be slow).
"""

from __future__ import annotations

import io
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ingest import detect
from ingest.detect import Detector, parse_stream, parse_text
from ingest.parsers import syscalls
from ingest.parsers.strace import StraceParser
from ingest.parsers.syscalls import NativeAggregator, SyscallAggregator
from ingest.parsers.truss import TrussParser


def test_the_core_is_built_and_used():
    assert syscalls._syscore is not None, "ingest/_syscore_src/ was not built (pip install -e .)"
    assert syscalls.NATIVE
    assert isinstance(TrussParser().agg, NativeAggregator)
    assert isinstance(StraceParser().agg, NativeAggregator)
    assert detect._first_bad is not None


def _both(text: str, monkeypatch, max_blocks: int = 3) -> None:
    """Reference (pure Python, line by line) == C core (line by line and batched). The capture
    must stay in a few long blocks, or the scanners would hardly run."""
    lines = text.splitlines(keepends=True)
    monkeypatch.setattr(syscalls, "NATIVE", False)
    d = Detector()
    d.feed_lines(lines)
    ev = d.finish()
    assert len(ev.blocks) <= max_blocks
    want = ev.model_dump_json()
    monkeypatch.setattr(syscalls, "NATIVE", True)
    d = Detector()
    d.feed_lines(lines)
    assert d.finish().model_dump_json() == want
    assert parse_text(text).model_dump_json() == want
    # small reads: one non-Latin-1 character makes its whole chunk Python's, so most chunks here
    # are the scanners' while the odd ones still take the other path
    monkeypatch.setattr(detect, "CHUNK", 4093)
    assert parse_stream(io.BytesIO(text.encode())).model_dump_json() == want


# -- capture shapes -------------------------------------------------------------------------------

_STRACE_CALLS = [
    'read(15, "\\0\\25\\0\\0"..., 8208) = 21',
    "pread64(262, 0x7f, 8192, 10866745344) = 8192",
    'openat(AT_FDCWD, "/u01/rdbms/mesg/oraus.msb", O_RDONLY) = -1 ENOENT (No such file)',
    "poll([{fd=15, events=POLLIN}], 1, 0) = 0 (Timeout)",
    "mmap(NULL, 1052672, PROT_READ, MAP_PRIVATE, -1, 0) = 0x7f8e1a2b3000",
    "clone(child_stack=NULL, flags=CLONE_CHILD_SETTID|SIGCHLD) = 31000",
    "getppid() = 4242",
    "close(14</u01/oradata/users01.dbf>) = 0",
    "futex(0x7f, FUTEX_WAIT, 0, NULL) = ? ERESTARTSYS (To be restarted)",
    'write(1, "a) = 5", 6) = 6',
    "ioctl(3, TCGETS, 0x1) = -1 EX (one letter is no errno name)",
    # sizes that differ only after the 20 characters a repeat key keeps
    "readv(3, 0x1, 123456789012345678901) = 0",
    "readv(3, 0x1, 123456789012345678902) = 0",
]


def _strace_lines(rng: random.Random, prefix, n: int, durations: bool) -> list[str]:
    out = []
    for i in range(n):
        pid = rng.choice([4242, 4243, 4244, 31000])
        pfx = prefix(pid, i)
        r = rng.random()
        if r < 0.08:
            out.append(f"{pfx}futex(0x7f, FUTEX_WAIT_PRIVATE, 0, NULL <unfinished ...>")
            tail = f" <0.00{i % 10}1>" if durations else ""
            out.append(f"{prefix(pid, i)}<... futex resumed>) = 0{tail}")
        elif r < 0.09:  # split after a comma: the joined arguments key its repeats
            out.append(f"{pfx}semtimedop(98307, [{{sem_num=34, sem_op=-1}}], 1,  <unfinished ...>")
            tail = f" <0.0{i % 10}1>" if durations else ""
            out.append(f"{prefix(pid, i)}<... semtimedop resumed>{{tv_sec=0}}) = 0{tail}")
        elif r < 0.1:
            out.append(f"{pfx}--- SIGCHLD {{si_signo=SIGCHLD, si_pid={31000 + i}}} ---")
        elif r < 0.11:
            out.append(f"{pfx}+++ exited with {i % 3} +++")
        elif r < 0.115:
            out.append(f"{pfx}+++ killed by SIGKILL +++")
        else:
            tail = f" <0.{i % 1000:06d}>" if durations else ""
            out.append(f"{pfx}{rng.choice(_STRACE_CALLS)}{tail}")
    return out


@pytest.mark.parametrize(
    "shape", ["pid-brackets", "relative", "no-pid", "epoch", "clock-T", "detached"]
)
def test_strace_prefix_shapes(shape, monkeypatch):
    rng = random.Random(shape)

    def clock(i: int) -> str:
        s = 36000 + i * 0.013
        return f"{int(s // 3600):02d}:{int(s % 3600 // 60):02d}:{s % 60:09.6f}"

    prefixes = {
        "pid-brackets": lambda pid, i: f"[pid {pid}] {clock(i)} ",
        "relative": lambda pid, i: f"{pid}      0.{(i * 7919) % 1000000:06d} ",
        "no-pid": lambda pid, i: f"{clock(i)} ",
        "epoch": lambda pid, i: f"{pid} {1717000000 + i * 0.0137:.6f} ",
        "clock-T": lambda pid, i: f"{pid}  {clock(i)} ",
        "detached": lambda pid, i: f"{pid} {clock(i)} ",
    }
    head = ["strace: Process 4242 attached"] if shape == "no-pid" else []
    lines = head + _strace_lines(rng, prefixes[shape], 3000, durations=shape != "relative")
    if shape == "detached":
        lines.insert(1500, "4242 10:14:00.000000 read(15,  <detached ...>")
    _both("\n".join(lines) + "\n", monkeypatch)


def test_truss_shapes_the_generator_does_not_print(monkeypatch):
    rng = random.Random(5)
    lines = ["truss -f -d -D -E -p 100"]
    t = 0.0
    odd = [
        "fork1() = ²",  # isdigit() passes, int() raises: no child pid
        "fork1() = " + "9" * 40,
        "read(², 0x1, 8) = 8",
        'open("/u01/app/oracle/données/é.dbf", O_RDONLY) = 9',  # non-ASCII arguments
        'stat("/tmp/中文", 0x1) Err#2 ENOENT',
        "lwp_park(0x0, 0) Err#123456 EBIG",  # 6-digit errno: the regex reads no call here
        'write(1, "a) = 5", 6) = 6',
        "close(3)\t\t\t\t= 0 [0x1]",
        "pollsys(0x1, 1, 0x2, 0x0)\t\t= 1 [ 0x1 ]",
        "  read(3, 0x1, 8) = 8",
        "setcontext(0x1)",
        'execve("/bin/x", 0x1, 0x2)  argc = 2',
        "fork1()    (returning as child ...) = 100",
        "vfork() = 0",
        "read(3, 0x1, 8) = -1",
        "readv(3, 0x1, 123456789012345678901) = 0",  # the key keeps 20 characters of a size
        "readv(3, 0x1, 123456789012345678902) = 0",
        "writev(123456789012345678901, 0x1, 8) = 0",  # ...and of a descriptor
        "writev(123456789012345678902, 0x1, 8) = 0",
    ]
    for i in range(6000):
        t += rng.random() / 100
        pid = rng.choice(["100", "101/1", "/3", "103/4@2"])
        r = rng.random()
        if r < 0.001:  # 11 digits are no pid: a line no format reads (it ends the block)
            lines.append(f"12345678901: {t:.4f} 0.0010 0.0005 read(15, 0x1, 8208) = 21")
        elif r < 0.05:
            lines.append(f"{pid}: {t:.4f} 0.0001 0.0000     Received signal #{i % 40}")
        elif r < 0.07:
            lines.append(f"{pid}: {t:.4f} 0.0001 0.0000     Received signal #18, SIGCLD, in x()")
        elif r < 0.08:
            lines.append(f"{pid}:\t  siginfo: SIGCLD CLD_EXITED pid={i} status=0x0000")
        elif r < 0.085:
            lines.append(f"{pid}: Average:     CPU    %usr   %nice    %sys %iowait  %idle")
        elif r < 0.09:
            lines.append(f"{pid}: {t:.4f} 0.0001 0.0000     Incurred fault #6, FLTBOUNDS")
        elif r < 0.1:
            lines.append(f"{pid}: {t:.4f} 0.0010 0.0005 {rng.choice(odd)}")
        else:
            n = rng.choice([f"{t:.4f} 0.0010 0.0005 ", f"{t:.4f} ", ""])
            call = rng.choice(["read(15, 0x1, 8208) = 21", "times(0x1) = 12", "yield() = 0"])
            lines.append(f"{pid}: {n}{call}")
    _both("\n".join(lines) + "\n", monkeypatch, max_blocks=20)


def test_a_time_without_a_pid_is_no_pid(monkeypatch):
    """`4.5958 _lgrpsys(1, 0, ) = 42` (truss -d without -f) pasted into a -f capture: the
    digits before the '.' are a time, not pid 4, in the core as in the reference."""
    rng = random.Random(7)
    lines = ["truss -f -d -p 100"]
    t = 0.0
    for i in range(3000):
        t += rng.random() / 100
        if 1000 <= i < 1010:
            lines.append(f"{t:.4f} _lgrpsys(3, 0x00000000, 0x00000000)             = 19108")
        else:
            lines.append(f"100: {t:.4f} read(15, 0x1, 8208) = 21")
    _both("\n".join(lines) + "\n", monkeypatch)


def test_the_caps_hold_the_same_way(monkeypatch):
    """More processes, names and repeat keys than the aggregator keeps apart."""
    lines = []
    n = syscalls.MAX_PIDS + 300
    for i in range(n):
        lines.append(f"{i + 1}: {i * 0.001:.4f} 0.0001 0.0001 read({i % 50}, 0x1, {i}) = 1")
    for i in range(syscalls.MAX_SYSCALLS + 100):
        lines.append(f"7: {9 + i * 0.001:.4f} 0.0001 0.0002 call{i}(0x{i:x}) = 0")
    # one repeat key per line so far (distinct sizes, distinct names or arguments): fill the
    # table exactly, then a new key repeated once it is full counts nowhere
    for i in range(syscalls.MAX_REPEAT_KEYS - len(lines)):
        lines.append(f"8: {20 + i * 0.0001:.4f} 0.0001 0.0003 shmdt(0x5{i:07x}) = 0")
    monkeypatch.setattr(syscalls, "NATIVE", False)
    ref = TrussParser()  # the reference, to check the table really is full
    for line in lines:
        ref.feed(line)
    assert len(ref.agg.repeats) == syscalls.MAX_REPEAT_KEYS
    for i in range(50):
        lines.append(f"8: {30 + i * 0.001:.4f} 0.0001 0.0003 shmdt(0xdeadbeef) = 0")
    for i in range(syscalls.MAX_NAMES + 20):
        lines.append(f"9: {40 + i * 0.001:.4f} 0.0001 0.0001 open(0x1) Err#{i % 90} EBAD{i}")
    _both("\n".join(lines) + "\n", monkeypatch)


def test_a_pid_prefix_keeps_its_line_in_the_truss_block():
    """TrussParser.claims: behind `pid:` an mpstat header shape is a truss line; without the
    prefix the same header still starts an mpstat block."""
    calls = "".join(f"2915: 1.{i:04d} 0.0001 0.0001 read(3, 0x1, 8) = 8\n" for i in range(60))
    header = "Average:     CPU    %usr   %nice    %sys %iowait    %irq   %soft  %steal  %idle"
    ev = parse_text(calls + f"2915: {header}\n" + calls)
    assert [b.format for b in ev.blocks] == ["truss"]
    assert ev.blocks[0].details["continuation_lines"] == 1
    row = "Average:     all    2.51    0.00    9.80    0.10    0.00    0.20    0.00   87.39"
    ev = parse_text(calls + f"{header}\n{row}\n")
    assert [b.format for b in ev.blocks] == ["truss", "mpstat"]


# -- the aggregator API ------------------------------------------------------------------------------

_names = st.sampled_from(
    ["read", "pread", "pread64", "recvfrom", "fork1", "clone", "execve", "shmdt", "times"]
)
_text = st.text(alphabet="0123456789abx, <>/\t é²", max_size=30)
_pid = st.one_of(st.none(), st.integers(0, 6))
_ms = st.one_of(st.none(), st.floats(0, 5000, allow_nan=False))
_ts = st.one_of(st.none(), st.floats(0, 100, allow_nan=False))
_ret = st.one_of(st.none(), st.sampled_from(["0", "21", "4242", "²", "-1", "9" * 30]), _text)
_err = st.one_of(st.none(), st.sampled_from(["EAGAIN", "ETIME", "Err#9", "ÉRR"]))
_op = st.one_of(
    st.tuples(st.just("call"), _pid, _names, _ms, _ms, _ts, _ms, _err, _text, _ret),
    st.tuples(st.just("event"), _pid, _ts, _ms, st.sampled_from(["SIGCLD", "exit", "é"])),
    st.tuples(st.just("child"), _pid, _ret, _ts),
    st.tuples(st.just("signal"), _pid, st.sampled_from(["SIGALRM", "#18"]), _ts, _ms),
    st.tuples(st.just("exited"), _pid, st.just("exited with 0"), _ts),
    st.tuples(st.just("continuation"), _text),
    st.tuples(st.just("elide")),
    st.tuples(st.just("proc"), _pid),
)


def _apply(agg: SyscallAggregator, ops: list[tuple], first_line: int = 1) -> None:
    for line, op in enumerate(ops, first_line):
        kind, *a = op
        if kind == "call":
            pid, name, dur, delta, ts, gap, err, args, ret = a
            agg.call(pid, name, dur, delta, ts, gap, err, args, line, ret)
        elif kind == "event":
            agg.event(a[0], a[1], a[2], line, a[3])
        elif kind == "child":
            agg.child(a[0], a[1], line, a[2])
        elif kind == "signal":
            agg.signal(a[0], a[1], a[2], a[3], line)
        elif kind == "exited":
            agg.exited(a[0], a[1], line, a[2])
        elif kind == "continuation":
            agg.continuation(a[0])
        elif kind == "elide":
            agg.elide()
        else:
            agg.proc(a[0])


@settings(max_examples=300, deadline=None)
@given(gap=st.booleans(), ops=st.lists(_op, max_size=80), more=st.lists(_op, max_size=20))
def test_core_matches_the_reference_aggregator(gap, ops, more):
    ref, nat = SyscallAggregator(), NativeAggregator()
    ref.gap_timing = nat.gap_timing = gap
    _apply(ref, ops)
    _apply(nat, ops)
    for timing in ("E", "d", "none"):
        assert nat.result(timing) == ref.result(timing)
    # a snapshot goes on on its own (StraceParser.facts counts unfinished calls into one)
    ref_snap, nat_snap = ref.snapshot(), nat.snapshot()
    assert type(nat_snap) is SyscallAggregator
    _apply(ref_snap, more, len(ops) + 1)
    _apply(nat_snap, more, len(ops) + 1)
    assert nat_snap.result("d") == ref_snap.result("d")
    assert nat.result("d") == ref.result("d")  # the live one is untouched


def test_the_reservoir_and_top_lists_past_their_sizes():
    rng = random.Random(11)
    ref, nat = SyscallAggregator(), NativeAggregator()
    for agg in (ref, nat):
        r = random.Random(12)
        for i in range(5 * syscalls.RESERVOIR):
            name = r.choice(["read", "pread", "times"])
            dur = r.random() * 50 if r.random() < 0.9 else None
            agg.call(r.randrange(40), name, dur, None, i * 0.01, None, None, "3, 0x1, 8", i)
    assert nat.result("E") == ref.result("E")
    st_ref, st_nat = ref.state(), nat.state()
    assert [s.samples for s in st_nat.stats.values()] == [s.samples for s in st_ref.stats.values()]
    assert st_nat.slowest == st_ref.slowest and st_nat.gaps == st_ref.gaps
    assert rng  # (the two runs draw from their own Random(0), as the parsers' aggregators do)


# -- the detector's fence and control-character scan --------------------------------------------------


def test_first_bad_finds_what_the_regex_finds():
    rng = random.Random(1)
    alphabet = "ab`\n\t\r\x00\x01\x0b\x0c\x0e\x1f\x7f é"
    for _ in range(20_000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 30)))
        pos = rng.randint(0, len(text))
        m = detect._BAD(text, pos)
        assert detect._first_bad(text, pos) == (m.start() if m else len(text))
    for _ in range(3000):  # long runs of harmless text with a few suspects: the block loops
        text = "".join(rng.choice("ab\n\tx \r") for _ in range(rng.randint(0, 200)))
        for _ in range(rng.randint(0, 3)):
            k = rng.randint(0, len(text))
            text = text[:k] + rng.choice(["`", "``", "```", "\x01", "\x7f", "\x0b", "é"]) + text[k:]
        pos = rng.randint(0, len(text))
        m = detect._BAD(text, pos)
        assert detect._first_bad(text, pos) == (m.start() if m else len(text))
    assert detect._first_bad("中```", 0) == -1  # not 1-byte text: the regex decides
