"""Stack parser (pstack, gdb, eu-stack, backtick frames, kernel and perf stacks) and the Oracle
kernel prefix table it classifies functions with."""

from __future__ import annotations

import pytest
from parser_helpers import (
    assert_rejected_without_trace,
    drive_parser,
    fixture_lines,
)

from ingest.model import Block
from ingest.oracle_layers import TABLE_PATH, PrefixTableError, layer_of, load_prefixes
from ingest.parsers.functions import MAX_FRAMES
from ingest.parsers.stack import StackParser


def run(lines: list[str]) -> tuple[Block, list[int]]:
    """Drive the parser as the detector does; return the block and the rejected line numbers."""
    return drive_parser(StackParser(), lines, numbered=True)


# -- seed and fixtures ----------------------------------------------------------------------------


def test_seed_000_pstack_top_frame_skips_libc_read():
    block, rejected = run(fixture_lines("seeds/000_pstack_122.txt"))
    f = block.facts
    assert (block.format, block.platform, rejected, block.malformed_lines) == (
        "stack",
        "solaris",
        [],
        0,
    )
    assert f["frame.top"] == {"slmsrd": 1}
    assert f["frame.count"]["slmsrd"] == 1 and f["frame.count"]["__read"] == 1
    assert f["layer.count"]["kge"] >= 2  # kgebse, kgebem
    assert f["layer.count"] == {"sl": 1, "lms": 3, "kge": 2, "kse": 1, "opi": 1}
    assert (f["stack.stacks"], f["stack.frames"]) == (1, 9)
    stack = block.details["stacks"][0]
    assert (stack["innermost"], stack["top"]) == ("__read", "slmsrd")
    kge = next(r for r in block.details["functions"] if r["function"] == "kgebse")
    assert kge["prefix"] == "kge" and "error" in kge["meaning"]
    assert "slmsrd" in block.identifiers and "kge" in block.identifiers


def test_gdb_bt_of_oracle_in_semtimedop():
    block, rejected = run(fixture_lines("os/gdb_bt_oracle_semtimedop.txt"))
    f = block.facts
    assert block.platform == "linux" and rejected == [] and block.malformed_lines == 0
    assert f["frame.top"] == {"sskgpwwait": 1}
    assert f["frame.count"]["semtimedop"] == 1 and f["frame.count"]["opiodr"] == 2
    assert f["layer.count"]["ksl"] == 2 and f["layer.count"]["opi"] == 7
    assert f["stack.frames"] == 24
    assert block.details["stacks"][0]["innermost"] == "semtimedop"


def test_gdb_thread_apply_all_bt():
    block, rejected = run(fixture_lines("os/gdb_threads_tnslsnr.txt"))
    f = block.facts
    assert f["stack.stacks"] == 2
    assert block.details["threads"] == ["Thread 2 (LWP 2291)", "Thread 1 (LWP 2290)"]
    # libpthread nanosleep and the wrapped `from /lib64/libc.so.6` epoll frame are skipped
    assert f["frame.top"] == {"sltstsleep": 1, "sntevepoll": 1}
    assert f["layer.count"]["ns"] == 3
    assert rejected == [2]  # only the blank line before the first thread


def test_eu_stack():
    block, _ = run(fixture_lines("os/eu_stack_oracle.txt"))
    f = block.facts
    assert block.platform == "linux"
    assert f["frame.top"] == {"sskgpwwait": 1}
    assert f["layer.count"]["ksl"] == 3
    assert block.details["threads"] == ["PID 4242 - process", "TID 4242"]


def test_solaris_pstack_threads_and_unnamed_frames():
    block, rejected = run(fixture_lines("os/pstack_solaris_threads.txt"))
    f = block.facts
    assert rejected == [] and block.platform == "solaris"
    assert f["stack.stacks"] == 2 and f["stack.frames"] == 14
    assert f["frame.top"] == {"sntevpoll": 1, "nsgltmr": 1}
    assert "????????" not in f["frame.count"]
    assert block.details["stacks"][0]["frames"][-1] == "?"


def test_backtick_frames_without_count_and_count_line_rejected():
    frames = fixture_lines("seeds/002_dtrace_ustack.txt")[:20]
    p = StackParser()
    for line in frames:
        assert p.feed(line)
    assert p.feed("1000002") is False  # a DTrace count: that block belongs to the dtrace parser
    facts, details, _, platform = p.facts()
    assert platform == "solaris"
    assert facts["frame.top"] == {"kgiPinObject": 1}
    assert facts["layer.count"]["kgi"] == 1 and facts["layer.count"]["pfr"] == 3
    assert details["stacks"][0]["frames"][-1] == "oracle`?"


def test_linux_kernel_stack_and_call_trace():
    lines = [
        "[<0>] futex_wait_queue_me+0xc4/0x120",
        "[<0>] futex_wait+0x10a/0x250",
        "[<0>] do_futex+0x365/0x4f0",
        "[<0>] __x64_sys_futex+0x14a/0x1d0",
        "[<0>] do_syscall_64+0x5b/0x1b0",
        "[<0>] entry_SYSCALL_64_after_hwframe+0x65/0xca",
        "",
        "Call Trace:",
        " schedule+0x3c/0xa0",
        " ? ktime_get+0x3c/0xa0",
        " io_schedule+0x16/0x40 [xfs]",
    ]
    block, rejected = run(lines)
    f = block.facts
    assert rejected == [] and block.platform == "linux"
    assert f["stack.stacks"] == 2
    assert f["frame.top"] == {"futex_wait_queue_me": 1, "schedule": 1}
    assert "layer.count" not in f  # kernel code is never an Oracle layer (ktime_ is not kt)


def test_perf_script_call_chains():
    lines = [
        "oracle_4242_orc 4242 [003] 81234.567890:     250000 cpu-clock:",
        "\t    7f6a1c8e2a1a semtimedop+0xa (/usr/lib64/libc-2.28.so)",
        "\t        12b1a4c5 sskgpwwait+0xc1 (/u01/app/oracle/product/19.0.0/dbhome_1/bin/oracle)",
        "\t        12b16f1e skgpwwait+0xbb (/u01/app/oracle/product/19.0.0/dbhome_1/bin/oracle)",
        "",
        "oracle_4243_orc 4243 [001] 81234.568001:     250000 cpu-clock:",
        "\t        11f2b6a1 kcbgtcr+0x51 (/u01/app/oracle/product/19.0.0/dbhome_1/bin/oracle)",
        "\t        12a56b3e [unknown] (/u01/app/oracle/product/19.0.0/dbhome_1/bin/oracle)",
    ]
    block, rejected = run(lines)
    f = block.facts
    assert rejected == [] and block.platform == "linux"
    assert f["frame.top"] == {"sskgpwwait": 1, "kcbgtcr": 1}
    assert f["layer.count"] == {"sskgp": 1, "skgp": 1, "kcb": 1}
    assert "[unknown]" not in f["frame.count"]


def test_several_gdb_backtraces_without_thread_headers():
    lines = [
        "#0  0x00007f00 in semtimedop () from /lib64/libc.so.6",
        "#1  0x00000001 in sskgpwwait ()",
        "#0  0x00007f00 in __read_nocancel () from /lib64/libc.so.6",
        "#1  0x00000002 in snttread ()",
        "#2  0x00000003 in nttrd ()",
    ]
    block, _ = run(lines)
    assert block.facts["stack.stacks"] == 2
    assert block.facts["frame.top"] == {"sskgpwwait": 1, "snttread": 1}


def test_malformed_frames_counted():
    lines = [
        "#0  0x00007f00 in semtimedop () from /lib64/libc.so.6",
        "#1  %%% garbage",
        " 00000000a1f32b3c slmsrd",
        "#2  0x00000001 in sskgpwwait ()",
    ]
    block, rejected = run(lines)
    assert rejected == [] and block.malformed_lines == 2
    assert block.facts["stack.frames"] == 2


def test_deep_stack_is_bounded():
    lines = [f"#{i}  0x{i:016x} in func{i} ()" for i in range(MAX_FRAMES + 300)]
    block, _ = run(lines)
    assert block.facts["stack.frames"] == MAX_FRAMES
    assert block.details["frames_dropped"] == 300
    assert len(block.details["stacks"][0]["frames"]) == 64


@pytest.mark.parametrize(
    ("line", "score"),
    [
        (" ffff80ffbcf9298a __read () + a", 2),
        ("-----------------  lwp# 1 / thread# 1  --------------------", 2),
        ("#0  0x00007f6a1c8e2a1a in semtimedop () from /lib64/libc.so.6", 2),
        ("#3  0x000000000c8d3f5a in kslwtbctx ()", 2),
        ("Thread 2 (Thread 0x7f3a4c1ff700 (LWP 2291)):", 2),
        ("#0  0x00007f6a1c8e2a1a semtimedop", 2),
        ("TID 4242:", 2),
        ("[<0>] futex_wait_queue_me+0xc4/0x120", 2),
        ("oracle`kgiPinObject+0xb8", 1),
        (" do_syscall_64+0x5b/0x1a0", 1),
        ("12345:  oracleORCL (LOCAL=NO)", 0),  # also heads pfiles/pmap: never opens a block
        ("8197: 1.7153 0.0001 0.0000 cladm(CL_INITIALIZE, CL_GET_BOOTFLAG, 0xFFFF) = 0", 0),
        ("1234:  read(10, 0x1000, 8192) = 8192", 0),
        ("we looked at the stack of the process", 0),
        ("  kgecss          2", 0),
        ("", 0),
    ],
)
def test_start_score(line, score):
    assert StackParser.start_score(line) == score


def test_rejected_lines_leave_state_unchanged():
    p = StackParser()
    for line in fixture_lines("seeds/000_pstack_122.txt"):
        p.feed(line)
    before = assert_rejected_without_trace(
        p, ("then the process exited", "1000002", "  kgecss   2")
    )
    assert p.feed("") is True  # closes the pending stack
    assert p.feed("") is False  # a second blank has nothing to close
    assert p.facts()[0] == before[0]


# -- the prefix table -----------------------------------------------------------------------------


def test_prefix_table_has_enough_documented_rows():
    table = load_prefixes()
    assert len(table) >= 40
    for required in ("opi", "kks", "kgl", "kge", "ksl", "kcb", "pfr", "pevm", "sl", "lms", "kgi"):
        assert required in table
    assert all(row.layer and row.meaning for row in table.values())
    head = TABLE_PATH.read_text(encoding="utf-8").splitlines()[:8]
    assert any("morganslibrary" in line for line in head)


@pytest.mark.parametrize(
    ("function", "module", "prefix"),
    [
        ("kgiPinObject", None, "kgi"),
        ("kglpnp", None, "kgl"),
        ("kglPinSetContext", "oracle", "kgl"),
        ("slmsrd", None, "sl"),
        ("sskgpwwait", None, "sskgp"),
        ("skgpwwait", None, "skgp"),
        ("kslwtbctx", None, "ksl"),
        ("pevm_CHK_INST", None, "pevm"),
        ("kss_get_owner", "oracle", "kss"),
        ("nsopen", "/u01/app/oracle/product/19.0.0/dbhome_1/bin/oracle", "ns"),
        ("nss_search", None, None),
        ("nsopen", "libc.so.1", None),
        ("sleep", None, None),
        ("semtimedop", None, None),
        ("main", None, None),
        ("", None, None),
    ],
)
def test_longest_prefix_lookup(function, module, prefix):
    hit = layer_of(function, module)
    assert (hit.prefix if hit else None) == prefix


def test_bad_prefix_table_is_a_clear_error(tmp_path):
    bad = tmp_path / "prefixes.tsv"
    bad.write_text("# header\nprefix\tlayer\tmeaning\nkge\tgeneric\n", encoding="utf-8")
    with pytest.raises(PrefixTableError, match="line 3"):
        load_prefixes(bad)
    with pytest.raises(PrefixTableError, match="cannot read"):
        load_prefixes(tmp_path / "missing.tsv")
