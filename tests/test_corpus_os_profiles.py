"""The published lockstat, perf and bpftrace snippets of the shared corpus: each is detected as its
format and the numbers a person reads off it are in the facts (compare labels.yaml). Fails, never
skips, when the corpus is missing."""

from __future__ import annotations

from pathlib import Path

import pytest

from ingest.detect import parse_text
from tests.parser_helpers import assert_facts_valid

CORPUS = Path(__file__).resolve().parents[1].parent / "shared" / "corpus" / "snippets"


def _blocks(prefix: str, fmt: str):
    files = sorted(CORPUS.glob(f"{prefix}_*"))
    assert files, f"corpus snippet {prefix} missing under {CORPUS}"
    evidence = parse_text(files[0].read_text(encoding="utf-8"))
    blocks = [b for b in evidence.blocks if b.format == fmt]
    assert len(blocks) == 1, [b.format for b in evidence.blocks]
    assert_facts_valid(blocks[0])
    return blocks[0]


def test_57_lockstat_contention_and_reader_blocks():
    b = _blocks("57", "lockstat")
    f = b.facts
    assert b.platform == "solaris"
    assert f["lockstat.events"] == {"Adaptive mutex spin": 2210, "R/W reader blocked by writer": 76}
    assert f["lockstat.events_per_s"]["Adaptive mutex spin"] == 437
    assert f["lockstat.interval_s"] == pytest.approx(5.055)
    assert f["lockstat.spin_events"] == 2210 and f["lockstat.block_events"] == 76
    assert f["lock.top_lock"] == "service_queue" and f["lock.top_caller"] == "background+0xdc"
    assert f["lock.top_pct"] == 12
    # service_queue's rows in the spin section: 269 + 249 + 228 + 18
    assert f["lock.count"]["service_queue"] == 764
    assert f["caller.count"]["ufs_dirlook"] == 23
    assert f["lock.max_block_ms"] == pytest.approx(22.590137)
    assert b.details["longest_block"]["caller"] == "ufs_dirlook+0xd0"


def test_58_perf_report_oracle_plsql_insert():
    b = _blocks("58", "perf")
    f = b.facts
    assert b.platform == "linux"
    assert f["perf.samples"] == 28000 and f["perf.event"] == "cpu-cycles"
    assert f["perf.event_count"] == 18991352213
    assert f["perf.top_symbol"] == "kdiins0" and f["perf.top_pct"] == pytest.approx(13.11)
    assert f["symbol.self_pct"]["lnxadd"] == pytest.approx(3.43)
    assert f["symbol.self_pct"]["native_apic_mem_write"] == pytest.approx(0.94)
    assert f["frame.count"]["kdiins0"] == 3763
    assert f["perf.kernel_pct"] == pytest.approx(0.94)
    assert f["perf.top_dso"] == "oracle"
    # Oracle layers through oracle_layers: index (kdi), PL/SQL runtime (pfr), NUMBER (lnx)
    assert {"kdi", "pfr", "lnx"} <= set(f["layer.pct"])
    assert f["layer.pct"]["kdi"] == pytest.approx(13.11)


def test_59_perf_report_kernel_context_switch_profile():
    b = _blocks("59", "perf")
    f = b.facts
    assert f["perf.top_symbol"] == "finish_task_switch.isra.0"
    assert f["symbol.self_pct"]["__switch_to_asm"] == pytest.approx(7.09)
    assert f["symbol.self_pct"]["native_queued_spin_lock_slowpath"] == pytest.approx(4.67)
    assert f["perf.user_pct"] == 0 and f["perf.kernel_pct"] == pytest.approx(51.59)
    assert f["comm.pct"] == {"hackbench": pytest.approx(51.59)}


def test_60_perf_script_is_read_as_stacks():
    # perf script call chains stay with the stack parser: one home for call stacks
    b = _blocks("60", "stack")
    f = b.facts
    assert b.platform == "linux"
    assert f["stack.stacks"] == 11
    assert f["frame.count"]["vfs_write"] == 4 and f["frame.count"]["fsnotify"] == 4
    assert f["frame.top"]["__srcu_read_unlock"] == 3
    perf = b.details["perf_script"]  # what the sample lines say: dd, cpu-clock, 0.1 s
    assert perf["commands"] == {"dd 29776": 11} and perf["events"] == {"cpu-clock": 11}
    assert perf["first_time"] == 666709.771979 and perf["last_time"] == 666709.872987
    assert perf["period"] == 11 * 10101010


def test_61_bpftrace_biolatency_histogram():
    # bpftrace histograms stay with the DTrace parser: one home for histograms
    b = _blocks("61", "dtrace")
    f = b.facts
    assert b.platform == "linux"
    assert f["hist.count"]["@usecs"] == 883
    assert f["hist.p50"]["@usecs"] == 2048  # the [2K, 4K) bucket holds the median I/O
    assert f["hist.max"]["@usecs"] == 128 * 1024  # the 10 outliers of [128K, 256K)
    # the author reads two modes (1-2 ms cache hits, 8-16 ms misses) and an outlier tail
    assert f["hist.modes"]["@usecs"] == 2
    assert b.details["histograms"][0]["mode_values"] == [1024, 8192]
    assert f["hist.p99"]["@usecs"] == 128 * 1024
    rows = {r["value"]: r["count"] for r in b.details["histograms"][0]["buckets"]}
    assert rows[1024] == 426 and rows[8192] == 128 and rows[131072] == 10
