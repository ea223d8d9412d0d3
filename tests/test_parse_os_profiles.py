"""Unit tests of the OS profile parsers: lockstat, perf, meminfo, free, pressure, netstat/nstat,
uptime and top, on fixtures under tests/fixtures/os_profiles (invented numbers in the tools' real
shapes; each file's first line says so). What every parser owes (random, damaged and hostile
input, refusals that leave no trace) is checked on these fixtures by tests/test_parser_contract.py."""

from __future__ import annotations

import pytest

from ingest.detect import parse_text
from ingest.parsers.free import FreeParser
from ingest.parsers.netstat import NetstatParser
from ingest.parsers.perf import PerfParser
from ingest.parsers.pressure import PressureParser
from ingest.parsers.procvmstat import ProcVmstatParser
from ingest.parsers.top import TopParser
from ingest.parsers.uptime import UptimeParser
from tests.parser_helpers import (
    assert_facts_valid,
    drive_parser,
    fixture_lines,
)

FILES = (
    "lockstat_variants.txt",
    "perf_variants.txt",
    "memory.txt",
    "pressure_netstat.txt",
    "top_linux.txt",
    "top_old_solaris.txt",
    "bcc_biolatency.txt",
    "perf_callgraph.txt",
    "perf_stat_variants.txt",
    "lockstat_stacks.txt",
    "oswnetstat.txt",
    "perf_old_and_top.txt",
    "proc_vmstat.txt",
)


def _blocks(name: str) -> list:
    evidence = parse_text("\n".join(fixture_lines(f"os_profiles/{name}")) + "\n")
    for b in evidence.blocks:
        assert_facts_valid(b)
    return [b for b in evidence.blocks if b.format != "unknown"]


def test_lockstat_block_spin_and_profiling_sections_behind_hash_marks():
    (b,) = _blocks("lockstat_variants.txt")
    f = b.facts
    assert b.format == "lockstat" and b.malformed_lines == 0
    assert f["lockstat.block_events"] == 500 and f["lockstat.spin_events"] == 9000
    assert f["lockstat.profile_events"] == 4000
    assert f["lock.time_ms"]["0x30001234560"] == pytest.approx(400 * 2.5)
    assert "cpu[2]+0x90" not in f["lock.time_ms"]  # a spin count is not a time
    assert f["lock.max_block_ms"] == pytest.approx(2.5)
    assert f["lockstat.top_profile_caller"] == "mutex_vector_enter"
    assert f["caller.count"]["mutex_vector_enter"] == 2400
    assert "cpu[3]" not in f["lock.count"]  # -I rows name CPUs, not locks


def test_lockstat_stack_output_with_a_header_per_row():
    (b,) = _blocks("lockstat_stacks.txt")
    f = b.facts
    assert b.start_line == 1 and b.malformed_lines == 0
    assert f["lock.count"] == {
        "0xffffff01c8fcb180": 5,
        "ufs_hash_lock": 2,
        "shm_lock": 1800,
        "as_lock": 1200,
    }
    assert f["caller.count"]["shmdt"] == 1800
    assert "shm_lock" not in f["lock.time_ms"]  # the old 'spin' column counts spins, not ns
    assert f["lock.time_ms"]["ufs_hash_lock"] == pytest.approx(2 * 1026 / 1e6)
    assert b.details["stack_histogram_lines"] == 6  # 2 headers, 2 rows, 2 more frames


def test_perf_children_report_stat_and_folded_stacks():
    (b,) = _blocks("perf_variants.txt")
    f = b.facts
    assert set(b.details["kinds"]) == {"report", "stat", "folded"}
    assert f["perf.top_symbol"] == "kcbgtcr" and f["perf.top_pct"] == 30
    assert f["symbol.children_pct"]["opiodr"] == 60
    assert f["perf.kernel_pct"] == 12 and f["perf.top_dso"] == "oracle"
    assert b.details["callgraph_lines"] == 3
    assert f["perf.counter"]["cycles"] == 30e9 and f["perf.counter"]["task-clock"] == 10012.5
    assert f["perf.ipc"] == 0.5 and f["perf.cpus_utilized"] == pytest.approx(1.001)
    assert f["perf.unsupported"] == 1 and f["perf.elapsed_s"] == pytest.approx(10.002345678)
    # folded stacks: leaf last, weights, kernel frames marked _[k]
    assert f["frame.top"] == {"kcbzib": 300, "kcbgtcr": 200, "do_semtimedop": 100}
    assert f["stack.stacks"] == 3 and f["layer.count"]["kcb"] == 800


def test_perf_folded_count_in_superscript_digits_is_not_a_count():
    # "²" is a digit to str.isdigit() but not a number to float(): the parser raised on it
    # (found by test_parser_contract's random input); now the line is simply not a folded stack
    parser = PerfParser()
    assert parser.feed("opiodr;kksfbc;do_semtimedop_[k] 12") is True
    assert parser.feed("opiodr;kksfbc;do_semtimedop_[k] \u00b2") is False
    assert parser.facts()[0]["stack.stacks"] == 1


def test_perf_report_with_caller_call_graphs_keeps_reading_rows():
    (b,) = _blocks("perf_callgraph.txt")
    f = b.facts
    assert b.start_line == 1 and b.malformed_lines == 0  # the command and perf's remarks too
    assert f["perf.samples"] == 3000 and f["perf.event"] == "cpu-clock:pppH"
    assert f["perf.top_symbol"] == "extract_crng" and f["perf.top_pct"] == pytest.approx(43.1)
    assert f["symbol.children_pct"]["entry_SYSCALL_64_after_hwframe"] == pytest.approx(99.72)
    assert f["symbol.self_pct"]["__memmove_avx_unaligned_erms"] == pytest.approx(1.5)  # (inlined)
    assert b.details["callgraph_lines"] >= 15


def test_perf_stat_interval_and_csv():
    interval, csv = _blocks("perf_stat_variants.txt")
    assert interval.facts["perf.counter"]["cycles"] == 5.0e9  # two 1 s intervals added up
    assert interval.facts["perf.ipc"] == 0.5
    assert interval.facts["perf.elapsed_s"] == pytest.approx(2.002345)
    assert csv.facts["perf.counter"] == {"cycles": 12e9, "instructions": 6e9}
    assert csv.facts["perf.unsupported"] == 1 and csv.facts["perf.ipc"] == 0.5


def test_perf_2_6_events_header_and_a_perf_top_screen():
    report, top = _blocks("perf_old_and_top.txt")
    assert report.facts["perf.samples"] == 10000 and report.facts["perf.event"] == "cycles"
    assert report.facts["comm.pct"] == {"oracle": pytest.approx(35.77)}  # right-aligned command
    assert report.facts["layer.pct"] == {"kcb": 20.52, "qer": 5}
    assert top.facts["perf.event"] == "cycles" and "top" in top.details["kinds"]
    assert top.facts["perf.top_symbol"] == "_raw_spin_lock_irqsave"
    assert top.facts["layer.pct"] == {"ksl": 12}


def test_perf_top_rows_without_a_header():
    lines = [
        "  25.10%  [kernel]            [k] _raw_spin_lock_irqsave",
        "  10.00%  oracle              [.] kslgetl",
        "   5.05%  libc-2.17.so        [.] __memset_sse2",
    ]
    block, rejected = drive_parser(PerfParser(), lines)
    assert rejected == []
    f = block.facts
    assert f["perf.top_symbol"] == "_raw_spin_lock_irqsave"
    assert f["perf.kernel_pct"] == pytest.approx(25.1) and f["layer.pct"] == {"ksl": 10}
    assert all(PerfParser.start_score(line) == 2 for line in lines)


def test_meminfo_huge_pages_commit_and_both_free_layouts():
    meminfo, new_free, old_free = _blocks("memory.txt")
    m = meminfo.facts
    assert meminfo.format == "meminfo"
    assert m["mem.hugepages_mb"] == 5200 * 2 and m["mem.hugepages_unused_pct"] == pytest.approx(
        100 * 2500 / 5200, abs=0.01
    )
    assert m["mem.committed_pct"] == pytest.approx(150.01, abs=0.01)
    assert m["mem.available_mb"] == pytest.approx(3456789 / 1024, abs=0.1)
    assert m["mem.pagetables_mb"] == 500
    assert new_free.format == old_free.format == "free"
    assert new_free.facts["mem.available_mb"] == 3375  # free -m: MB from the command line
    assert new_free.details["unit"] == "from the command line"
    # old procps: available is the -/+ buffers/cache free column, in kB
    assert old_free.facts["mem.available_mb"] == pytest.approx(3357468 / 1024, abs=0.1)
    assert old_free.facts["mem.swap_used_pct"] == pytest.approx(25, abs=0.01)


def test_free_human_units_and_guessed_units():
    human = [
        "               total        used        free      shared  buff/cache   available",
        "Mem:            15Gi        11Gi       228Mi       120Mi       3.5Gi       3.3Gi",
        "Swap:          8.0Gi       2.0Gi       6.0Gi",
    ]
    block, rejected = drive_parser(FreeParser(), human)
    assert rejected == [] and block.facts["mem.total_mb"] == 15 * 1024
    assert block.facts["mem.swap_used_pct"] == 25
    gb = [
        "              total        used        free      shared  buff/cache   available",
        "Mem:            251         120          10           2         121         128",
    ]
    block, _ = drive_parser(FreeParser(), gb)
    assert block.facts["mem.total_mb"] == 251 * 1024 and "guessed" in block.details["unit"]


def test_pressure_since_boot_with_one_sample_and_growth_with_two():
    pressure, netstat, nstat = _blocks("pressure_netstat.txt")
    assert pressure.facts["psi.avg10_pct"]["cpu some"] == pytest.approx(35.2)
    assert pressure.facts["psi.max_avg10_pct"] == pytest.approx(35.2)
    assert pressure.facts["os.since_boot"] == 1 and "psi.stall_ms" not in pressure.facts
    lines = [
        "==> /proc/pressure/io <==",
        "some avg10=5.00 avg60=4.00 avg300=3.00 total=1000000",
        "full avg10=2.00 avg60=1.00 avg300=0.50 total=400000",
        "some avg10=6.00 avg60=4.50 avg300=3.10 total=1600000",
        "full avg10=3.00 avg60=1.20 avg300=0.60 total=700000",
    ]
    block, rejected = drive_parser(PressureParser(), lines)
    assert rejected == []
    assert block.facts["psi.stall_ms"] == {"io some": 600, "io full": 300}
    assert block.facts["os.since_boot"] == 0


def test_netstat_two_samples_give_differences_and_nstat_one_is_since_boot():
    _, netstat, nstat = _blocks("pressure_netstat.txt")
    f = netstat.facts
    assert f["net.samples"] == 2 and f["os.since_boot"] == 0
    assert f["net.counter"]["TcpRetransSegs"] == 5000 and f["net.counter"]["TcpOutSegs"] == 100000
    assert f["tcp.retrans_pct"] == 5 and f["tcp.listen_overflows"] == 40
    assert f["net.counter"]["TcpExtTCPLostRetransmit"] == 2
    assert f["net.counter"]["TcpCurrEstab"] == 41  # a gauge: its last value, not a difference
    n = nstat.facts
    assert n["os.since_boot"] == 1 and n["tcp.retrans_pct"] == pytest.approx(0.3)
    assert n["udp.receive_errors"] == 44


def test_oswatcher_netstat_samples_give_rates_per_second():
    (b,) = _blocks("oswnetstat.txt")
    f = b.facts
    assert b.start_line == 1 and f["net.samples"] == 2 and f["os.since_boot"] == 0
    assert f["net.interval_s"] == 30
    assert f["net.per_s"]["TcpRetransSegs"] == 20 and f["net.per_s"]["TcpOutSegs"] == 1000
    assert f["tcp.retrans_pct"] == 2  # 600 of 30,000 segments in those 30 s
    assert f["tcp.listen_overflows"] == 60


def test_nstat_without_a_prints_increments_that_add_up():
    lines = [
        "$ nstat",
        "#kernel",
        "TcpOutSegs                      1000               0.0",
        "TcpRetransSegs                  30                 0.0",
        "$ nstat",
        "#kernel",
        "TcpOutSegs                      3000               0.0",
        "TcpRetransSegs                  10                 0.0",
    ]
    block, rejected = drive_parser(NetstatParser(), lines)
    assert rejected == []
    f = block.facts
    assert f["os.since_boot"] == 0 and block.details["mode"] == "increments"
    assert f["net.counter"] == {"TcpOutSegs": 4000, "TcpRetransSegs": 40}
    assert f["tcp.retrans_pct"] == 1


def test_perf_unresolved_addresses_are_one_unknown_symbol():
    lines = [
        "# Overhead  Command  Shared Object  Symbol",
        "    40.00%  java     [unknown]      [.] 0x00007f3c2a1b4e8a",
        "    20.00%  java     [unknown]      [.] 0x00007f3c2a1b4f00",
        "    10.00%  java     libjvm.so      [.] SpinPause",
    ]
    block, rejected = drive_parser(PerfParser(), lines)
    assert rejected == []
    assert block.facts["symbol.self_pct"] == {"[unknown]": 60, "SpinPause": 10}


def test_proc_vmstat_two_samples_show_direct_reclaim_now():
    (b,) = _blocks("proc_vmstat.txt")
    f = b.facts
    assert b.format == "procvmstat" and f["os.since_boot"] == 0
    assert f["vm.direct_scan_pages"] == 50000 and f["vm.allocstall"] == 300  # zones added up
    assert f["vm.swap_pages"] == 600 + 4000 and f["vm.thp_fallback"] == 50
    assert f["vm.counter"]["nr_free_pages"] == 20480  # a gauge: its last value


def test_proc_vmstat_one_sample_is_since_boot():
    lines = ["nr_free_pages 51200", "pgscan_direct 10000", "allocstall 40", "oom_kill 2"]
    block, rejected = drive_parser(ProcVmstatParser(), lines)
    assert rejected == []
    assert block.facts["os.since_boot"] == 1 and block.facts["vm.oom_kill"] == 2
    assert ProcVmstatParser.start_score("pgscan_direct 10000") == 2
    assert ProcVmstatParser.start_score("some_word 12") == 0


def test_solaris_netstat_pairs():
    lines = [
        "TCP     tcpRtoAlgorithm     =     4     tcpRtoMin           =   400",
        "        tcpOutDataSegs      = 80000     tcpRetransSegs      =  4000",
        "        tcpListenDrop       =    17     tcpListenDropQ0     =     0",
    ]
    block, rejected = drive_parser(NetstatParser(), lines)
    assert rejected == [] and block.platform == "solaris"
    assert block.facts["tcp.retrans_pct"] == 5 and block.facts["tcp.listen_drops"] == 17


def test_uptime_variants_and_loadavg():
    lines = [
        " 14:23:01 up 10 days,  3:04,  2 users,  load average: 8.12, 7.50, 6.90",
        "  2:23pm  up 12 day(s),  3:04,  2 users,  load average: 1.23, 1.45, 1.67",
        "14:23  up 3 days, 2:04, 3 users, load averages: 2,10 1,98 1,75",
    ]
    block, rejected = drive_parser(UptimeParser(), lines)
    assert rejected == []
    assert block.facts["load.avg1"] == pytest.approx(2.1) and block.facts[
        "uptime.days"
    ] == pytest.approx(3 + 124 / 1440, abs=0.001)
    assert block.details["max_avg1"] == pytest.approx(8.12)
    block, _ = drive_parser(UptimeParser(), ["12.50 8.00 4.00 9/1234 56789"])
    assert block.facts["load.avg15"] == 4 and block.details["runnable"] == 9
    assert (
        UptimeParser.start_score("top - 14:23:01 up 1 day,  2 users,  load average: 1, 1, 1") == 0
    )


def test_top_linux_per_cpu_lines_give_load_per_cpu_and_process_table():
    (b,) = _blocks("top_linux.txt")
    f = b.facts
    assert b.format == "top" and b.platform == "linux"
    assert f["load.avg1"] == pytest.approx(8.12) and f["load.per_cpu"] == pytest.approx(2.03)
    assert f["cpu.usr_pct"] == 65 and f["cpu.irq_pct"] == 2.5
    assert f["mem.swap_used_mb"] == 2048 and f["mem.available_mb"] == pytest.approx(3375.7)
    assert f["proc.top_command"] == "oracle_4242_orcl" and f["proc.top_cpu_pct"] == 99.7
    assert f["top.state_count"] == {"R": 2, "D": 1}


def test_top_old_procps_and_solaris_are_separate_blocks():
    old, sol = _blocks("top_old_solaris.txt")
    assert old.platform == "linux" and sol.platform == "solaris"
    assert old.facts["load.avg1"] == 1.5 and old.facts["top.zombie"] == 2
    assert old.facts["mem.total_mb"] == pytest.approx(8000000 / 1024, abs=0.1)
    assert sol.facts["load.avg1"] == pytest.approx(3.1) and sol.facts["uptime.days"] == 12
    assert sol.facts["cpu.sys_pct"] == 10 and sol.facts["mem.swap_used_mb"] == 4096
    assert sol.facts["proc.cpu_pct"] == {"oracle": 12.5} and sol.facts["proc.top_cpu_pct"] == 18.75


def test_top_h_threads_add_up_by_command():
    lines = [
        "Threads: 900 total,   3 running, 897 sleeping,   0 stopped,   0 zombie",
        "  PID USER      PR  NI    VIRT    RES    SHR S  %CPU  %MEM     TIME+ COMMAND",
        " 5001 oracle    20   0 4000000 900000 800000 R  95.0   5.5   1:00.00 java",
        " 5002 oracle    20   0 4000000 900000 800000 R  90.0   5.5   1:00.00 java",
        " 5003 oracle    20   0 4000000 900000 800000 S   1.0   5.5   1:00.00 GC Thread#0",
    ]
    block, rejected = drive_parser(TopParser(), lines)
    assert rejected == []
    assert block.facts["proc.cpu_pct"] == {"java": 95, "GC": 1}  # the busiest thread of each
    assert block.facts["proc.top_command"] == "java" and block.facts["proc.top_cpu_pct"] == 185
    assert block.facts["top.tasks"] == 900


def test_bcc_histograms_per_disk_share_the_dtrace_histogram_facts():
    (b,) = _blocks("bcc_biolatency.txt")
    f = b.facts
    assert b.format == "dtrace" and b.platform == "linux" and b.malformed_lines == 0
    assert f["hist.count"] == {"disk sda usecs": 387, "disk nvme0n1 usecs": 601}
    assert f["hist.p50"]["disk sda usecs"] == 128 and f["hist.p90"]["disk sda usecs"] == 2048
    assert f["hist.modes"] == {"disk sda usecs": 2, "disk nvme0n1 usecs": 1}
    assert f["hist.max"]["disk nvme0n1 usecs"] == 32


def test_counters_since_boot_are_flagged_for_signatures():
    from ingest.facts import FACTS

    assert {"netstat", "pressure", "procvmstat"} <= set(FACTS["os.since_boot"].sources)
    assert "top" in FACTS["cpu.sys_pct"].sources and "mpstat" in FACTS["cpu.sys_pct"].sources


# How pastes damage lines: every OS fixture must read the same after each (the BCC fixture is
# the DTrace parser's, which reads only collapsed whitespace; lockstat_variants is quoted already)
PASTES = {
    "collapsed whitespace": lambda line: " ".join(line.split()),
    "quoted with '# '": lambda line: "# " + line,
    "journal prefix": lambda line: "Mar 14 09:12:44 db01 oswatcher[4242]: " + line,
    "tabs for blanks": lambda line: line.replace("  ", "\t"),
}
_NOT_PASTED = {
    ("lockstat_variants.txt", "quoted with '# '"),
    ("bcc_biolatency.txt", "quoted with '# '"),
    ("bcc_biolatency.txt", "journal prefix"),
}


def _formats_and_facts(lines: list[str]) -> list:
    evidence = parse_text("\n".join(lines) + "\n")
    return [(b.format, b.facts) for b in evidence.blocks if b.format != "unknown"]


@pytest.mark.parametrize(
    ("name", "paste"),
    [
        (name, paste)
        for name in FILES
        for paste in sorted(PASTES)
        if (name, paste) not in _NOT_PASTED
    ],
)
def test_pasted_captures_read_the_same(name, paste):
    lines = fixture_lines(f"os_profiles/{name}")
    expected = _formats_and_facts(lines)
    assert expected
    assert _formats_and_facts([PASTES[paste](line) for line in lines]) == expected


def test_paste_helpers_numbers_prefixes_and_sample_marks():
    from ingest.parsers.pasted import number, sample_mark, scaled, unpaste

    assert number("1,234,567") == 1234567 and number("0,95") == 0.95 and number("12.5%") == 12.5
    assert number("2,210") == 2210  # one comma and three digits: a thousands separator
    assert number("1,5") == 1.5 and number("abc") is None and number("1.2.3") is None
    assert scaled("28K") == 28000 and scaled("1.5M") == 1.5e6
    assert unpaste("Mar 14 09:12:44 db01 oswatcher[42]: MemTotal: 1 kB") == "MemTotal: 1 kB"
    assert unpaste("# Count indv") == "Count indv" and unpaste("#kernel") == "#kernel"
    assert sample_mark("zzz ***Mon Mar 14 09:12:44 UTC 2024") == (True, 1710407564.0)
    assert sample_mark("zzz ***unreadable") == (True, None)
    assert sample_mark("Tcp:") is None
