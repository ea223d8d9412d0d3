"""DTrace / bpftrace parser: count tables, flattened pastes, ustack aggregations, histograms,
printf result lines."""

from __future__ import annotations

import math
import time

import pytest
from parser_helpers import (
    assert_rejected_without_trace,
    drive_parser,
    fixture_lines,
)

from ingest.model import Block
from ingest.parsers.dtrace import MAX_KEYS, DtraceParser


def run(lines: list[str]) -> tuple[Block, list[int]]:
    """Drive the parser as the detector does; return the block and the rejected line numbers."""
    return drive_parser(DtraceParser(), lines, numbered=True)


# -- count tables ---------------------------------------------------------------------------------


def test_seed_000_counts_122():
    block, rejected = run(fixture_lines("seeds/000_dtrace_counts_122.txt"))
    f = block.facts
    assert (block.format, block.platform, rejected, block.malformed_lines) == (
        "dtrace",
        "solaris",
        [],
        0,
    )
    assert f["probe.count"]["slmsrd"] == 20000 and f["probe.count"]["kgegec"] == 80000
    assert f["probe.max_count"] == 80000
    # the counted functions double as frames, so stack signatures can read the same facts
    assert f["frame.count"]["slmsrd"] == 20000
    assert f["layer.count"]["sl"] == 20000 and f["layer.count"]["lms"] == 7 * 20000
    assert f["layer.count"]["kge"] == 2 + 12 * 20000 + 2 * 40000 + 80000
    assert "stack.stacks" not in f and "frame.top" not in f


def test_seed_000_counts_121():
    block, _ = run(fixture_lines("seeds/000_dtrace_counts_121.txt"))
    assert block.facts["probe.count"]["kgegec"] == 50000
    assert block.facts["probe.count"]["kgecss"] == 1


def test_seed_002_flattened_two_outputs_on_one_line():
    lines = fixture_lines("seeds/002_dtrace_flat.txt")
    assert len(lines) == 1 and DtraceParser.start_score(lines[0]) == 2
    block, rejected = run(lines)
    f = block.facts
    assert rejected == []
    assert f["probe.count"]["kgiPinObject"] == 1000002
    assert f["probe.count"]["kss_get_type"] == 1000028
    assert f["probe.count"]["memset"] == 1200 and f["probe.count"]["pfrinstr_CALL"] == 1000000
    # lnxmin is 1000000 in the first output and 1000001 in the second: the larger is kept
    assert f["probe.count"]["lnxmin"] == 1000001
    assert len(f["probe.count"]) == 29
    outputs = block.details["outputs"]
    assert [o["rows"] for o in outputs] == [20, 20]
    assert outputs[0]["command"] == "tail -20 fcalls_proc_fun.out"
    assert outputs[1]["command"] == "tail -20 fcalls_pkg.out"
    memset = next(p for p in block.details["probes"] if p["name"] == "memset")
    assert memset["module"] == "libc.so.1"
    assert f["layer.count"]["kgi"] == 1000002 and "memset" not in f.get("layer.count", {})


def test_flattened_name_count_pairs():
    line = "  ".join(f"kge{i} {100 + i}" for i in range(10))
    block, _ = run([line])
    assert block.facts["probe.count"]["kge9"] == 109
    assert block.facts["layer.count"]["kge"] == sum(100 + i for i in range(10))


def test_three_column_table_and_module_backtick_counts():
    lines = [
        "  oracle        kslwtbctx          1200",
        "  oracle        kslwtectx          1198",
        "  libc.so.1     memcpy               40",
        "  oracle`kcbgtcr                   5120",
        "  libc.so.1`_read+0x8               33",
    ]
    block, rejected = run(lines)
    f = block.facts
    assert rejected == []
    assert f["probe.count"] == {
        "kslwtbctx": 1200,
        "kslwtectx": 1198,
        "memcpy": 40,
        "kcbgtcr": 5120,
        "_read": 33,
    }
    assert f["layer.count"] == {"ksl": 2398, "kcb": 5120}


def test_a_second_table_repeating_names_ends_the_block():
    first = fixture_lines("seeds/000_dtrace_counts_122.txt")
    second = fixture_lines("seeds/000_dtrace_counts_121.txt")
    p = DtraceParser()
    assert all(p.feed(line) for line in [*first, ""])
    assert p.feed("") is False  # nothing left to close
    assert p.feed(second[0]) is False  # `kgecss 1` again: the 12.1 output, a new block
    assert p.facts()[0]["probe.count"]["kgegec"] == 80000
    assert p.feed("  kgegbc     10000") is True  # a new name after the blank still belongs


def test_seed_000_write_up_gives_one_dtrace_block_per_version(tmp_path):
    from ingest.detect import parse_lines

    text = "\n".join(
        [
            "As for the next step, compare the number of function calls in both versions.",
            "",
            *fixture_lines("seeds/000_dtrace_counts_122.txt"),
            "",
            "",
            *fixture_lines("seeds/000_dtrace_counts_121.txt"),
            "",
            "Twice as many calls in 12.2.",
        ]
    )
    path = tmp_path / "writeup.txt"
    path.write_text(text, encoding="utf-8")
    with path.open(encoding="utf-8") as handle:
        evidence = parse_lines(handle)
    dtrace = [b for b in evidence.blocks if b.format == "dtrace"]
    assert [b.facts["probe.count"]["kgegec"] for b in dtrace] == [80000, 50000]


def test_statistics_lines_are_not_a_dtrace_table():
    assert DtraceParser.start_score("redo size                              1,647,276") == 0
    assert DtraceParser.start_score("  kgecss                             2") == 1
    assert DtraceParser.start_score("  oracle  kgiPinObject   1000002") == 1
    block, rejected = run(["  kgecss   2", "redo size   1,647,276"])
    assert rejected == [2]


# -- ustack aggregations -----------------------------------------------------------------------


def test_seed_002_ustacks_and_printf_lines():
    block, rejected = run(fixture_lines("seeds/002_dtrace_ustack.txt"))
    f = block.facts
    assert rejected == [] and block.format == "dtrace" and block.malformed_lines == 0
    assert f["frame.top"]["kgiPinObject"] == 1000002
    # the stacks under each probe add up to the printf 'executed N times' counts
    assert f["frame.top"] == {
        "kgiPinObject": 1000002,
        "kglpnp": 1000006,
        "kglPinSetContext": 1000004,
    }
    assert f["probe.count"]["kgiPinObject"] == 1000002
    assert f["probe.time_ms"] == {
        "kgiPinObject": 19482,
        "kglpnp": 3532,
        "kglPinSetContext": 3676,
        "plsql_run": 24380,
    }
    assert f["stack.stacks"] == 7
    assert f["frame.count"]["opiodr"] == 2 * (1000002 + 2 + 2 + 1000002 + 1 + 2 + 1000001)
    assert block.details["stacks"][0]["top"] in ("kgiPinObject", "kglpnp", "kglPinSetContext")
    assert "kgiPinObject+kglpnp+kglPinSetContext = 26692 ms" in block.details["notes"]


def test_seed_004_cladm_ustack():
    block, rejected = run(fixture_lines("seeds/004_dtrace_cladm_ustack.txt"))
    f = block.facts
    assert rejected == [] and block.format == "dtrace" and block.platform == "solaris"
    # names are kept as printed: the libc entry point is `_cladm`, not the syscall `cladm`
    assert f["frame.count"]["_cladm"] == 64
    assert f["frame.count"]["gethostbyname_r"] == 64
    assert "cladm" not in f["frame.count"]
    # libc frames and bare nss_cluster addresses are skipped for the top frame
    assert f["frame.top"] == {"_switch_gethostbyname_r": 64}
    assert f["layer.count"]["nt"] == 3 * 64 and f["layer.count"]["ns"] == 5 * 64
    assert "nss_search" in f["frame.count"] and f["layer.count"].get("nss") is None
    assert block.details["notes"][0].startswith("# dtrace -n syscall::cladm:entry")


def test_ustack_without_any_count_is_reported_as_a_stack():
    frames = fixture_lines("seeds/004_dtrace_cladm_ustack.txt")[2:22]
    block, _ = run(frames)
    assert block.format == "stack" and block.facts["stack.stacks"] == 1
    counted, _ = run([*frames, "64"])
    assert counted.format == "dtrace"


# -- histograms -----------------------------------------------------------------------------------


def test_seed_004_lquantize_two_histograms_per_label():
    block, _ = run(fixture_lines("seeds/004_dtrace_lquantize.txt"))
    f = block.facts
    assert block.malformed_lines == 0
    assert f["hist.max"]["tnslsnr 15697"] == 14
    assert f["hist.count"]["tnslsnr 15697"] == 419
    assert f["hist.p50"]["tnslsnr 15697"] == 9  # 206 zeros, then 1 at 8 and 10 at 9 pass 209.5
    assert f["hist.max"]["tnslsnr 15697 #2"] == 6
    assert f["hist.count"]["tnslsnr 25351"] == 320 and f["hist.max"]["tnslsnr 25351"] == 3
    assert f["hist.max"]["tnslsnr 25351 #2"] == 0
    assert set(f["hist.count"]) == {
        "tnslsnr 25351",
        "tnslsnr 15697",
        "tnslsnr 25351 #2",
        "tnslsnr 15697 #2",
    }
    assert "probe.count" not in f  # the label lines are not table rows
    assert block.details["histograms"][0]["buckets"][0] == {"value": -1, "count": 0}  # `< 0`


def test_quantize_with_single_token_label_and_bad_row():
    lines = [
        "CPU     ID                    FUNCTION:NAME",
        "  0  52112                     :tick-10s",
        "",
        "  read",
        "           value  ------------- Distribution ------------- count",
        "            1024 |                                         0",
        "            2048 |@@@@@@@@@@@@@@@@@@@@                     40",
        "            4096 |@@@@@@@@@@                               20",
        "            8192 |@@@@@@@@@@@@                             24  extra",
        "           16384 |                                         0",
    ]
    block, rejected = run(lines)
    assert rejected == [3]  # a blank line with nothing open is left to the detector
    assert block.facts["hist.count"] == {"read": 60}  # the unreadable 8192 row is not counted
    assert block.facts["hist.p50"] == {"read": 2048}
    assert block.malformed_lines == 1


# -- bpftrace -------------------------------------------------------------------------------------


def test_bpftrace_maps_stacks_and_hist():
    block, _ = run(fixture_lines("os/bpftrace_oracle_semtimedop.txt"))
    f = block.facts
    assert block.platform == "linux" and block.malformed_lines == 0
    assert f["probe.count"] == {"oracle": 2152}
    assert "oracle" not in f["frame.count"]  # a map key is not a frame
    assert f["frame.top"] == {"sskgpwwait": 2152}
    assert f["frame.count"]["semtimedop"] == 2152 and f["frame.count"]["ksbrdp"] == 312
    assert f["layer.count"]["kcr"] == 1840
    assert f["hist.count"] == {"@usecs": 348}
    assert f["hist.p50"] == {"@usecs": 8} and f["hist.max"] == {"@usecs": 1024}


def test_bpftrace_simple_maps():
    lines = ["Attaching 1 probe...", "@[semtimedop]: 5", "@[pread64]: 12", "@total: 17"]
    block, _ = run(lines)
    assert block.facts["probe.count"] == {"semtimedop": 5, "pread64": 12, "total": 17}
    assert block.platform == "linux"


# -- printf lines and line shapes -------------------------------------------------------------


def test_printf_time_units_are_converted():
    lines = [
        "kcbgtcr executed 5000 times, waited in us: 2500",
        "kslwtbctx executed 10 times, waited in s: 2",
        "opiexe executed 7 times",
    ]
    block, _ = run(lines)
    assert block.facts["probe.time_ms"] == {"kcbgtcr": 2.5, "kslwtbctx": 2000}
    assert block.facts["probe.count"]["opiexe"] == 7


@pytest.mark.parametrize(
    ("line", "score"),
    [
        ("           value  ------------- Distribution ------------- count", 2),
        ("# dtrace -n syscall::cladm:entry'{@[ustack()]=count();}'", 2),
        ("[root@db ~]# bpftrace -e 'kprobe:do_sys_open { @[comm] = count(); }'", 2),
        ("dtrace: description 'syscall::read:entry' matched 1 probe", 2),
        ("CPU     ID                    FUNCTION:NAME", 2),
        ("18 92927 :tick-5s", 2),
        ("kgiPinObject executed 1000002 times, waited in ms: 19482", 2),
        ("  oracle`kcbgtcr                   5120", 2),
        ("@[semtimedop]: 5", 2),
        ("Attaching 2 probes...", 2),
        ("oracle`kgiPinObject+0xb8", 1),
        ("  kgecss                          2", 1),
        ("pfiles 5522", 0),  # unindented: a shell command more often than a printa() row
        ("        CHUNK      32768", 0),  # a SQL storage clause, not a function name
        ("#!/usr/sbin/dtrace -qs", 0),  # a D script, not its output
        ("the listener took 12", 0),
        ("1000002", 0),
        ("", 0),
    ],
)
def test_start_score(line, score):
    assert DtraceParser.start_score(line) == score


def test_rejected_lines_leave_state_unchanged():
    p = DtraceParser()
    for line in fixture_lines("seeds/000_dtrace_counts_122.txt"):
        p.feed(line)
    assert_rejected_without_trace(
        p, ("Looking at the output above, we see", "redo size  1,647,276", "|||")
    )


def test_facts_midway_do_not_disturb_parsing():
    lines = fixture_lines("seeds/002_dtrace_ustack.txt")
    p = DtraceParser()
    for line in lines:
        p.feed(line)
        p.facts()  # settles a copy; the open stack keeps growing
    assert p.facts()[0] == run(lines)[0].facts


def test_many_distinct_names_stay_bounded_and_fast():
    lines = [f"  fn_{i:06d}   {i + 1}" for i in range(MAX_KEYS + 3000)]
    start = time.perf_counter()
    block, _ = run(lines)
    elapsed = time.perf_counter() - start
    assert len(block.facts["probe.count"]) == MAX_KEYS
    assert block.details["dropped"]["keys"] == 3000
    assert elapsed < 10


def test_huge_numbers_stay_finite():
    block, _ = run(
        ["  kgecss   " + "9" * 400, "  kgeade   5", "x executed " + "9" * 400 + " times"]
    )
    for value in block.facts.values():
        values = value.values() if isinstance(value, dict) else [value]
        assert all(math.isfinite(v) for v in values)
