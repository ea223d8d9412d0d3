"""mpstat in every layout: sysstat's `all` row kept as printed, every per-CPU column, softirq /
irq / steal hot spots, `mpstat -I SUM|SCPU|CPU` tables (decimal commas), Solaris processor sets
(`mpstat -a`), 12-hour clocks, and pastes with `#` or `host: ` before every line.

The tables below are written for these tests in sysstat's and Solaris's layouts; the numbers
are invented (chosen so that the expected values are easy to check by hand)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from parser_helpers import assert_facts_valid, drive_parser

from ingest.detect import parse_text
from ingest.model import Block
from ingest.parsers.mpstat import MpstatParser

P_ALL = """\
Linux 5.14.0-284.el9.x86_64 (db01) 03/14/2024 _x86_64_ (4 CPU)

02:10:01 PM  CPU    %usr   %nice    %sys %iowait    %irq   %soft  %steal  %guest  %gnice   %idle
02:10:02 PM  all   20.00    1.00   10.00    2.00    1.00   16.00    0.00    0.00    0.00   50.00
02:10:02 PM    0   10.00    0.00    8.00    1.00    4.00   62.00    0.00    0.00    0.00   15.00
02:10:02 PM    1   30.00    2.00   12.00    3.00    0.00    1.00    0.00    0.00    0.00   52.00
02:10:02 PM    2   20.00    1.00   10.00    2.00    0.00    1.00    0.00    0.00    0.00   66.00
02:10:02 PM    3   20.00    1.00   10.00    2.00    0.00    0.00   40.00    0.00    0.00   27.00
"""


def run(text: str) -> Block:
    lines = [line for line in text.splitlines() if line.strip()]  # the detector skips blanks
    block, rejected = drive_parser(MpstatParser(), lines)
    assert rejected == []
    assert_facts_valid(block)
    return block


def test_all_row_is_kept_not_recomputed() -> None:
    f = run(P_ALL).facts
    # the all row says 20 / 10 / 2 / 50; the mean of the CPU rows would be 20 / 10 / 2 / 40
    assert (f["cpu.usr_pct"], f["cpu.sys_pct"], f["cpu.wait_pct"], f["cpu.idle_pct"]) == (
        20.0,
        10.0,
        2.0,
        50.0,
    )
    assert f["cpu.softirq_pct"] == 16.0 and f["cpu.hardirq_pct"] == 1.0
    assert f["cpu.irq_pct"] == 17.0 and f["cpu.nice_pct"] == 1.0
    assert f["cpu.count"] == 4


def test_every_per_cpu_column_is_kept() -> None:
    block = run(P_ALL)
    f = block.facts
    assert f["cpu.usr"] == {"0": 10.0, "1": 30.0, "2": 20.0, "3": 20.0}
    assert f["cpu.softirq"]["0"] == 62.0 and f["cpu.hardirq"]["0"] == 4.0
    assert f["cpu.steal"]["3"] == 40.0 and f["cpu.idle"]["2"] == 66.0
    cpu0 = block.details["cpus"][0]
    assert {k: cpu0[k] for k in ("nice", "irq", "soft", "steal", "guest", "gnice")} == {
        "nice": 0.0,
        "irq": 4.0,
        "soft": 62.0,
        "steal": 0.0,
        "guest": 0.0,
        "gnice": 0.0,
    }


def test_softirq_and_steal_hot_spots() -> None:
    block = run(P_ALL)
    f = block.facts
    assert f["cpu.max_softirq_pct"] == 62.0
    assert f["cpu.max_irq_pct"] == 66.0  # CPU 0: 4 irq + 62 soft
    assert f["cpu.irq_hot_cpus"] == 1 and f["cpu.steal_hot_cpus"] == 1
    assert f["cpu.max_steal_pct"] == 40.0 and f["cpu.min_idle_pct"] == 15.0
    hot = {(h["cpu"], h["metric"]) for h in block.details["hot_cpus"]}
    assert {("0", "irq+soft"), ("3", "steal")} <= hot
    assert "softirq" in block.identifiers and "steal" in block.identifiers


def test_a_single_report_is_flagged_as_possibly_since_boot() -> None:
    block = run(P_ALL)
    assert any("since boot" in n for n in block.details["notes"])


INTR_SUM = """\
11:20:57     CPU    intr/s
11:21:00     all   1880,00
11:21:00       0 395027,00
11:21:00       1 399987,33
"""


def test_intr_sum_with_decimal_commas_and_an_overflowed_all_row() -> None:
    block = run(INTR_SUM)
    f = block.facts
    assert f["cpu.intr_per_s"] == 1880.0
    assert f["cpu.intr"] == {"0": 395027.0, "1": 399987.33}
    assert f["cpu.intr_cpu_sum_per_s"] == pytest.approx(795014.33)
    assert any("overflow" in n for n in block.details["notes"])


INTR_SCPU = """\
10:00:01 AM  CPU       HI/s    TIMER/s   NET_TX/s   NET_RX/s    BLOCK/s  TASKLET/s    SCHED/s  HRTIMER/s      RCU/s
10:00:02 AM    0       0.00     250.00       1.00   48000.00       0.00       0.00     100.00       0.00     300.00
10:00:02 AM    1       0.00     250.00       1.00     500.00      20.00       0.00     100.00       0.00     300.00
10:00:02 AM    2       0.00     250.00       1.00     500.00      20.00       0.00     100.00       0.00     300.00
Average:       0       0.00     250.00       1.00   48000.00       0.00       0.00     100.00       0.00     300.00
"""


def test_softirq_table_names_the_cpu_that_takes_net_rx() -> None:
    block = run(INTR_SCPU)
    f = block.facts
    assert f["cpu.softirq_per_s"]["NET_RX"] == 49000.0
    assert f["cpu.softirq_per_s"]["TIMER"] == 750.0
    hot = block.details["softirq_hot"]
    assert {"name": "NET_RX", "cpu": "0", "share_pct": pytest.approx(98.0, abs=0.1)} in hot


INTR_CPU = """\
10:00:01     CPU        0/s        1/s       24/s      NMI/s      LOC/s
10:00:02       0       1.00       0.00    9000.00       0.00    1000.00
10:00:02       1       0.00       0.00       0.00       0.00    1000.00
"""


def test_per_interrupt_table() -> None:
    f = run(INTR_CPU).facts
    assert f["cpu.irq_per_s"]["24"] == 9000.0 and f["cpu.irq_per_s"]["LOC"] == 2000.0


SOLARIS_SETS = """\
SET minf mjf xcal intr ithr  csw icsw migr smtx  srw syscl  usr sys  wt idl sze
  0    3   0  100  200  100   10    0    0    0    0    40    1   1   0  98   1
  1   20   5  500  300  200   60    1    0    2    0   700    5   2   0  93   4
SET minf mjf xcal intr ithr  csw icsw migr smtx  srw syscl  usr sys  wt idl sze
  0    1   0  200  400  300   50    0    0   10    0    20    0  10   0  90   1
  1    0  50 1500  250  200  300   30    3   60    8  6000   40  20   0  40   4
"""


def test_solaris_processor_sets() -> None:
    block = run(SOLARIS_SETS)
    f = block.facts
    assert block.platform == "solaris"
    assert f["cpu.sets"] == 2 and f["cpu.count"] == 5  # sze 1 + 4
    assert f["cpu.intervals"] == 1  # the first (since boot) table is dropped
    assert f["cpu.syscl"] == {"set 0": 20.0, "set 1": 6000.0}
    assert f["cpu.usr"]["set 1"] == 40.0 and f["cpu.idle"]["set 1"] == 40.0
    assert f["cpu.max_smtx"] == 60.0 and f["cpu.max_xcal"] == 1500.0
    # the machine's usr %: each set's average weighed by its size, (0 * 1 + 40 * 4) / 5
    assert f["cpu.usr_pct"] == 32.0 and f["cpu.idle_pct"] == (90 + 40 * 4) / 5


@pytest.mark.parametrize("prefix", ["# ", "#", "node008: ", "db-01.example.com:  "])
def test_pasted_prefix_before_every_line(prefix: str) -> None:
    plain = run(P_ALL).facts
    text = "".join(prefix + line + "\n" for line in P_ALL.splitlines() if line)
    ev = parse_text("what we saw:\n\n" + text)
    blocks = [b for b in ev.blocks if b.format == "mpstat"]
    assert len(blocks) == 1
    assert blocks[0].facts == plain


def test_twelve_hour_clock_intervals() -> None:
    text = P_ALL + P_ALL.split("\n", 2)[2].replace("02:10:02 PM", "02:10:03 PM").replace(
        "02:10:01 PM", "02:10:02 PM"
    )
    block = run(text)
    assert block.facts["cpu.intervals"] == 2
    assert [i["label"] for i in block.details["intervals"]] == ["02:10:02 PM", "02:10:03 PM"]


_PCT = st.integers(0, 2500).map(lambda v: v / 100)


@settings(max_examples=40, deadline=None)
@given(
    rows=st.lists(st.tuples(_PCT, _PCT, _PCT, _PCT), min_size=1, max_size=8),
    all_row=st.tuples(_PCT, _PCT, _PCT, _PCT),
    prefix=st.sampled_from(["", "# ", "node01: "]),
    comma=st.booleans(),
)
def test_property_all_row_wins_and_prefixes_do_not_change_facts(rows, all_row, prefix, comma):
    def fmt(v: float) -> str:
        s = f"{v:.2f}"
        return s.replace(".", ",") if comma else s

    def line(cpu: str, usr: float, sys: float, soft: float, steal: float) -> str:
        idle = max(0.0, 100 - usr - sys - soft - steal)
        cols = [usr, 0, sys, 0, 0, soft, steal, 0, 0, idle]
        return f"{prefix}10:00:01     {cpu:>3} " + " ".join(f"{fmt(c):>7}" for c in cols)

    header = (
        f"{prefix}10:00:00     CPU    %usr   %nice    %sys %iowait    %irq   %soft  %steal"
        "  %guest  %gnice   %idle"
    )
    lines = [header, line("all", *all_row)] + [line(str(i), *r) for i, r in enumerate(rows)]
    ev = parse_text("\n".join(lines) + "\n")
    (block,) = [b for b in ev.blocks if b.format == "mpstat"]
    f = block.facts
    assert f["cpu.usr_pct"] == pytest.approx(all_row[0])
    assert f["cpu.softirq_pct"] == pytest.approx(all_row[2])
    assert f["cpu.softirq"] == {str(i): pytest.approx(r[2]) for i, r in enumerate(rows)}
    assert f["cpu.max_irq_pct"] == pytest.approx(max(r[2] for r in rows))
    assert f["cpu.irq_hot_cpus"] == sum(r[2] >= 30 for r in rows)


def test_numa_node_rows() -> None:
    text = (
        "10:00:00 AM NODE    %usr   %nice    %sys %iowait    %irq   %soft  %steal  %guest  %gnice   %idle\n"
        "10:00:01 AM  all   20.00    0.00    5.00    0.00    0.00    1.00    0.00    0.00    0.00   74.00\n"
        "10:00:01 AM    0   30.00    0.00    5.00    0.00    0.00    2.00    0.00    0.00    0.00   63.00\n"
        "10:00:01 AM    1   10.00    0.00    5.00    0.00    0.00    0.00    0.00    0.00    0.00   85.00\n"
    )
    block = run(text)
    assert block.facts["cpu.usr"] == {"node 0": 30.0, "node 1": 10.0}
    assert block.facts["cpu.usr_pct"] == 20.0 and "cpu.count" not in block.facts
    assert any("NUMA" in n for n in block.details["notes"])


def test_mpstat_i_all_tables_in_one_block() -> None:
    text = INTR_SUM + "\n" + INTR_CPU + "\n" + INTR_SCPU
    blocks = [b for b in parse_text(text).blocks if b.format == "mpstat"]
    assert len(blocks) == 1
    f = blocks[0].facts
    assert f["cpu.intr_per_s"] == 1880.0
    assert f["cpu.irq_per_s"]["24"] == 9000.0
    assert f["cpu.softirq_per_s"]["NET_RX"] == 49000.0


@settings(max_examples=40, deadline=None)
@given(
    rates=st.lists(st.integers(0, 10**8).map(lambda v: v / 100), min_size=1, max_size=16),
    comma=st.booleans(),
)
def test_property_intr_sum_reads_every_cpu(rates, comma) -> None:
    def fmt(v: float) -> str:
        s = f"{v:.2f}"
        return s.replace(".", ",") if comma else s

    lines = ["11:20:57     CPU    intr/s"]
    lines += [f"11:21:00     {i:>3} {fmt(v):>12}" for i, v in enumerate(rates)]
    f = run("\n".join(lines)).facts
    assert f["cpu.intr"] == {str(i): pytest.approx(v) for i, v in enumerate(rates)}
    assert f["cpu.intr_per_s"] == pytest.approx(sum(rates))  # no all row: the CPUs' sum
