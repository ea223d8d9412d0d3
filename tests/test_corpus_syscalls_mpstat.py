"""The corpus's syscall traces and mpstat samples (snippets 30-45 in ../shared/corpus): each is
detected as its format (strace vs truss right, the platform right or honestly unsure), and the
facts a person reads off it (labels.yaml's spot checks, and reading the snippets) are in the
facts. Fails on any miss; fails, not skips, when the corpus is missing."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from ingest.detect import parse_lines, parse_text
from ingest.facts import facts_for
from ingest.model import Block, Evidence
from kb.analysis import analyze_text

CORPUS = Path(__file__).resolve().parents[1].parent / "shared" / "corpus"
SNIPPETS = CORPUS / "snippets"


def _labels() -> dict[int, dict]:
    entries = yaml.safe_load((CORPUS / "labels.yaml").read_text())
    return {int(Path(e["file"]).name[:2]): e for e in entries}


def _snippet(n: int) -> Path:
    (path,) = SNIPPETS.glob(f"{n:02d}_*")
    return path


def _evidence(n: int) -> Evidence:
    text = _snippet(n).read_text(errors="replace")
    ev = parse_text(text)
    # the fast path and the line-by-line path read the same
    assert ev.model_dump() == parse_lines(text.splitlines(keepends=True)).model_dump()
    return ev


def _blocks(ev: Evidence, fmt: str) -> list[Block]:
    return [b for b in ev.blocks if b.format == fmt]


def _only(ev: Evidence, fmt: str) -> Block:
    (block,) = _blocks(ev, fmt)
    for name in block.facts:
        assert name in facts_for(fmt), name
    return block


def test_the_corpus_is_there() -> None:
    assert SNIPPETS.is_dir(), f"corpus missing: {SNIPPETS}"
    labels = _labels()
    assert all(n in labels for n in range(30, 46))


# (snippet, format perfkb must give, the block's platform, the context's platform)
DETECTED = [
    (30, "strace", "linux", "linux"),
    (31, "strace", "linux", "linux"),
    (32, "strace", "linux", "linux"),
    (33, "strace", "linux", "linux"),
    (34, "strace", "linux", "linux"),
    (35, "strace", "linux", "linux"),
    (36, "strace", "linux", "linux"),
    (37, "truss", "solaris", "solaris"),
    (38, "truss", "aix", "aix"),
    (39, "truss", "solaris", "solaris"),
    (40, "mpstat", "linux", "linux"),
    (41, "mpstat", "linux", "linux"),
    (42, "mpstat", "linux", "linux"),
    (43, "mpstat", "linux", "linux"),
    (44, "mpstat", "linux", "linux"),
    (45, "mpstat", "solaris", "solaris"),
]


@pytest.mark.parametrize(("n", "fmt", "platform", "context"), DETECTED)
def test_detected_as_its_format(n: int, fmt: str, platform: str, context: str) -> None:
    labels = _labels()
    assert labels[n]["format"].split("_")[0] == fmt  # strace_c / truss_c are the same parsers
    ev = _evidence(n)
    found = [b for b in ev.blocks if b.format != "unknown"]
    assert found, f"snippet {n}: nothing detected"
    ours = {"strace", "truss", "mpstat"}
    assert {b.format for b in found if b.format in ours} == {fmt}, [b.format for b in found]
    assert all(b.platform == platform for b in _blocks(ev, fmt))
    assert ev.context.platform == context


def test_next_commands_follow_the_platform() -> None:
    for n, want in ((30, "linux"), (32, "linux"), (33, "linux"), (37, "solaris")):
        result = analyze_text(_snippet(n).read_text(errors="replace"))
        platforms = {c.platform for c in result.next_commands}
        assert platforms and platforms <= {want, "any"}, (n, platforms)


def _s30(ev: Evidence) -> None:
    b = _only(ev, "strace")
    f = b.facts
    assert f["syscall.max_ms"]["read"] == pytest.approx(7092.805)  # the idle client socket read
    assert f["syscall.max_ms"]["semtimedop"] == pytest.approx(0.338)
    assert f["syscall.p50_ms"]["write"] <= 0.01  # each trace write costs a few microseconds
    assert f["trace.slowest_share_pct"] > 99
    slow = b.details["slowest"][0]
    assert (slow["syscall"], slow["pid"], slow["fd"]) == ("read", 5390, 22)
    targets = {t["target"] for t in b.details["fd_targets"]}
    assert "/u01/app/oracle/diag/rdbms/cdb/cdb1/trace/cdb1_ora_5390.trc" in targets
    assert f["poll.zero_timeout"] == {"epoll_wait": 1.0}


def _s31(ev: Evidence) -> None:
    b = _only(ev, "strace")
    assert b.facts["errno.count"] == {"EAGAIN": 3.0}
    assert b.facts["fd.errors"] == {"/dev/random (O_NONBLOCK) read: EAGAIN": 3.0}
    assert [p["pid"] for p in b.details["processes"]] == [4722]


def _s32(ev: Evidence) -> None:
    b = _only(ev, "strace")
    assert b.facts["repeat.size"]["pread"] == 1032192
    assert b.facts["syscall.count"]["pread"] == 3
    assert b.details["repeat_targets"]["pread"] == "/u01/oradata/CDB1A/PDB/users01.dbf (O_DSYNC)"


def _s33(ev: Evidence) -> None:
    f = _only(ev, "strace").facts
    assert f["syscall.max_ms"]["futex"] == pytest.approx(17.491)
    assert f["errno.count"]["EAGAIN"] >= 2
    assert f["poll.zero_timeout"]["epoll_pwait"] >= 1
    assert f["futex.error_pct"] > 0 and f["futex.calls_per_s"] > 100


def _s34(ev: Evidence) -> None:
    b = _only(ev, "strace")
    f = b.facts
    assert f["trace.processes"] == 3
    assert {p["pid"] for p in b.details["processes"]} == {944513, 944514, 944547}
    assert f["errno.count"] == {"ETIMEDOUT": 1.0}
    assert f["timeout.max_ms"]["epoll_pwait"] == 19.0
    assert f["poll.zero_timeout"]["epoll_pwait"] >= 1
    assert f["syscall.count"]["nanosleep"] >= 1


def _s35(ev: Evidence) -> None:
    f = _only(ev, "strace").facts
    assert f["syscall.count"]["poll"] == 2060 and f["syscall.share_pct"]["poll"] == 26.83
    assert f["syscall.avg_ms"]["wait4"] == pytest.approx(11.253)
    assert (f["syscall.count"]["futex"], f["syscall.errors"]["futex"]) == (5330, 457)
    assert (f["syscall.count"]["recvmsg"], f["syscall.errors"]["recvmsg"]) == (5142, 4944)


def _s36(ev: Evidence) -> None:
    blocks = _blocks(ev, "strace")
    # the program's output splits its write(1, ...) line: still one capture, nothing malformed
    assert len(blocks) == 1 and blocks[0].malformed_lines == 0
    summary = next(b for b in blocks if b.details["summary"])
    f = summary.facts
    assert (f["trace.calls"], f["trace.errors"]) == (61, 15)
    assert f["trace.syscall_ms"] == pytest.approx(0.112)
    assert (f["syscall.count"]["openat"], f["syscall.errors"]["openat"]) == (10, 7)
    assert (f["syscall.count"]["stat"], f["syscall.errors"]["stat"]) == (8, 7)
    assert f["syscall.share_pct"]["access"] == 20.54
    trace = next(b for b in blocks if "socket.connects" in b.facts)
    assert trace.facts["socket.connects"] == {"unix:/var/run/nscd/socket": 1.0}
    assert any(x["status"] == "exited with 0" for b in blocks for x in b.details["exits"])


def _s37(ev: Evidence) -> None:
    b = _only(ev, "truss")
    assert b.facts["trace.asleep"] == {"lwp_park": 4.0, "read": 1.0, "pollsys": 1.0}
    assert {a["lwp"] for a in b.details["asleep"] if a["call"].startswith("lwp_park")} == {
        "5",
        "6",
        "7",
        "8",
    }
    assert b.facts["timeout.count"]["pollsys"] >= 10  # LWP 2's pollsys returns 0 over and over


def _s38(ev: Evidence) -> None:
    b = _only(ev, "truss")
    f = b.facts
    assert f["syscall.count"]["thread_twakeup"] == 6 and f["syscall.count"]["thread_tsleep"] == 4
    assert f["syscall.count"]["_pollset_poll"] == 2 and f["syscall.count"]["kread"] == 2
    assert [p["pid"] for p in b.details["processes"]] == [56361298]


def _s39(ev: Evidence) -> None:
    f = _only(ev, "truss").facts
    assert f["syscall.count"]["read"] == 138822
    assert f["syscall.total_ms"]["read"] == pytest.approx(2040.0)
    assert f["trace.signals"] == 1


def _s40(ev: Evidence) -> None:
    f = _only(ev, "mpstat").facts
    assert (f["cpu.usr_pct"], f["cpu.sys_pct"], f["cpu.wait_pct"], f["cpu.idle_pct"]) == (
        0.23,
        0.37,
        0.01,
        99.39,
    )
    assert f["cpu.count"] == 1


def _first_all(b: Block) -> dict:
    return b.details["intervals"][0]


def _s41(ev: Evidence) -> None:
    b = _only(ev, "mpstat")
    assert _first_all(b) == {
        "label": "10:57:54 AM",
        "cpus": 4,
        "usr": 52.82,
        "sys": 42.22,
        "wait": 0.09,
        "idle": 3.76,
    }
    assert b.facts["cpu.count"] == 4 and b.facts["cpu.intervals"] == 3


def _s42(ev: Evidence) -> None:
    b = _only(ev, "mpstat")
    first = _first_all(b)
    assert (first["usr"], first["sys"], first["wait"], first["idle"]) == (
        29.95,
        27.79,
        10.88,
        30.13,
    )
    assert b.facts["cpu.max_softirq_pct"] == pytest.approx((3.89 + 2.77 + 3.09) / 3, abs=0.01)
    assert b.facts["cpu.softirq"]["3"] > b.facts["cpu.softirq"]["0"]
    assert b.facts["cpu.wait_pct"] > 10


def _s43(ev: Evidence) -> None:
    b = _only(ev, "mpstat")
    f = b.facts
    assert f["cpu.intr_per_s"] == 1880.0
    assert f["cpu.intr"] == {"0": 395027.0, "1": 399987.33, "2": 365727.0, "3": 303783.33}
    assert any("overflow" in n for n in b.details["notes"])


def _s44(ev: Evidence) -> None:
    b = _only(ev, "mpstat")
    f = b.facts
    assert (f["cpu.usr_pct"], f["cpu.sys_pct"], f["cpu.idle_pct"]) == (2.09, 0.0, 97.91)
    assert b.details["intervals"][0]["label"] == "11:19:24"
    assert any("since boot" in n for n in b.details["notes"])


def _s45(ev: Evidence) -> None:
    b = _only(ev, "mpstat")
    f = b.facts
    assert f["cpu.sets"] == 4 and f["cpu.intervals"] == 1  # the since-boot table dropped
    assert f["cpu.syscl"]["set 1"] == 7086 and f["cpu.usr"]["set 1"] == 34
    assert f["cpu.idle"]["set 1"] == 19 and f["cpu.idle"]["set 3"] == 100
    assert f["cpu.max_smtx"] == 54 and f["cpu.max_xcal"] == 1955
    assert f["cpu.wait"] == {"set 0": 0.0, "set 1": 0.0, "set 2": 0.0, "set 3": 0.0}


READ_OFF: dict[int, Callable[[Evidence], None]] = {
    30: _s30,
    31: _s31,
    32: _s32,
    33: _s33,
    34: _s34,
    35: _s35,
    36: _s36,
    37: _s37,
    38: _s38,
    39: _s39,
    40: _s40,
    41: _s41,
    42: _s42,
    43: _s43,
    44: _s44,
    45: _s45,
}


@pytest.mark.parametrize("n", sorted(READ_OFF))
def test_the_facts_a_person_reads_off_it(n: int) -> None:
    READ_OFF[n](_evidence(n))
