"""The OS profile formats (lockstat, perf, memory, PSI, netstat, top) as the CLI, the Slack reply
and the web page show them: charts where a person would rather look, and counters since boot
said to be totals."""

from __future__ import annotations

from typer.testing import CliRunner

from bot.render import describe_block
from ingest.detect import parse_text
from kb.analysis import analyze_text
from kb.cli import app
from kb.triage import describe
from kb.web.charts import block_charts
from tests.parser_helpers import FIXTURES, fixture_lines


def _blocks(name: str) -> dict:
    text = "\n".join(fixture_lines(f"os_profiles/{name}")) + "\n"
    return {b.format: b for b in parse_text(text).blocks}


def test_web_charts_for_perf_lockstat_top_memory_and_pressure():
    perf = _blocks("perf_variants.txt")["perf"]
    charts = dict(block_charts(perf))
    assert (
        "kcbgtcr" in charts["Hottest functions"] and "children 60%" in charts["Hottest functions"]
    )
    assert "Kernel and user time" in charts
    lock = dict(block_charts(_blocks("lockstat_variants.txt")["lockstat"]))
    assert "0x30001234560" in lock["Hottest locks"] and "mutex_vector_enter" in lock["Callers"]
    top = dict(block_charts(_blocks("top_linux.txt")["top"]))
    assert "oracle_4242_orcl" in top["CPU by command"] and "available" in top["Memory"]
    mem = dict(block_charts(_blocks("memory.txt")["meminfo"]))
    assert "huge pages" in mem["Memory"]
    psi = dict(block_charts(_blocks("pressure_netstat.txt")["pressure"]))
    assert "cpu some" in psi["Time stalled (last 10 s)"]
    vm = dict(block_charts(_blocks("proc_vmstat.txt")["procvmstat"]))
    assert "direct_scan_pages" in vm["Reclaim, swap and faults"]
    hist = dict(block_charts(_blocks("bcc_biolatency.txt")["dtrace"]))
    assert "2K: 90" in hist["Histogram disk sda usecs"]  # the second mode, as BCC labels it


def test_slack_line_says_counters_since_boot_and_the_triage_names_hot_keys():
    blocks = parse_text("\n".join(fixture_lines("os_profiles/pressure_netstat.txt")) + "\n").blocks
    nstat = [b for b in blocks if b.format == "netstat"][-1]
    assert "counters since boot" in describe_block(nstat)
    netstat = [b for b in blocks if b.format == "netstat"][0]
    assert "since boot" not in describe_block(netstat)  # two samples: differences
    # the hot keys are said in the triage's sentences (no fact names), from the catalogue
    perf = _blocks("perf_variants.txt")["perf"]
    assert any("kcbgtcr" in s for s in describe(perf))
    text = "\n".join(fixture_lines("os_profiles/lockstat_variants.txt")) + "\n"
    hot = [b for b in parse_text(text).blocks if (b.facts.get("lock.top_pct") or 0) >= 20]
    said = " ".join(f.text for f in analyze_text(text).findings)
    assert hot and f"Kernel lock {hot[0].facts['lock.top_lock']} takes" in said


def test_cli_analyze_titles_since_boot_blocks(settings, tmp_path):
    capture = tmp_path / "nstat.txt"
    capture.write_text(
        "#kernel\nTcpOutSegs   500000   0.0\nTcpRetransSegs   1500   0.0\n", encoding="utf-8"
    )
    result = CliRunner().invoke(
        app, ["--data-dir", str(settings.data_dir), "analyze", str(capture)]
    )
    assert result.exit_code == 0, result.output
    assert "block 1: netstat" in result.stdout
    assert "counters since boot" in result.stdout
    assert FIXTURES.is_dir()


def _rules(name: str) -> dict[str, list[str]]:
    """The triage rules (kb/rules/triage.yaml) that fire on each block, by format."""
    from ingest.model import Evidence
    from kb import command_fill
    from kb.triage import triage

    text = "\n".join(fixture_lines(f"os_profiles/{name}")) + "\n"
    out: dict[str, list[str]] = {}
    for b in parse_text(text).blocks:
        fired = triage(Evidence(blocks=[b]), command_fill.fill).fired
        out.setdefault(b.format, []).extend(fired)
    return out


def test_next_steps_for_the_os_formats_when_no_entry_matches():
    assert _rules("lockstat_variants.txt")["lockstat"] == ["kernel-lock-hot-spot"]
    assert _rules("perf_old_and_top.txt")["perf"] == ["kernel-time-in-profile"]
    pressure = _rules("pressure_netstat.txt")
    assert pressure["pressure"] == ["counters-since-boot", "pressure-stalls"]
    # two netstat -s samples: overflows grew and 5 % retransmitted; one nstat -a: since boot
    assert sorted(pressure["netstat"]) == [
        "counters-since-boot",
        "listen-queue-overflows",
        "tcp-retransmits",
    ]
    assert _rules("top_linux.txt")["top"] == ["memory-short", "load-above-cpus"]
    assert _rules("proc_vmstat.txt")["procvmstat"] == ["memory-short"]


def test_next_step_commands_per_platform(settings, tmp_path):
    capture = tmp_path / "lockstat.txt"
    capture.write_text(
        "\n".join(fixture_lines("os_profiles/lockstat_variants.txt")) + "\n", encoding="utf-8"
    )
    result = CliRunner().invoke(
        app, ["--data-dir", str(settings.data_dir), "analyze", "--json", str(capture)]
    )
    assert result.exit_code == 0, result.output
    import json

    commands = [c["command"] for c in json.loads(result.stdout)["next_commands"]]
    assert "lockstat -C -s 10 -D 10 sleep 5" in commands


def test_the_format_lists_people_read_come_from_the_registry(settings, tmp_path):
    from ingest.detect import NOT_TEXT

    assert "lockstat" in NOT_TEXT and "meminfo" in NOT_TEXT and "unknown" not in NOT_TEXT
    empty = tmp_path / "empty.txt"
    empty.write_text("\n", encoding="utf-8")
    result = CliRunner().invoke(app, ["--data-dir", str(settings.data_dir), "analyze", str(empty)])
    assert result.exit_code == 0, result.output
    assert "No evidence perfkb can read was found" in result.stdout and "perf" in result.stdout
