"""The renderers show what a slow call was on and which CPUs interrupts took over: the parsers'
plain-sentence findings (escaped on every surface) and the per-CPU irq / steal bars."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from bot.render import render_analysis
from ingest.detect import parse_text
from ingest.model import Block
from kb.analysis import analyze_text
from kb.cli import app
from kb.web.charts import block_charts

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "linux" / "strace_dns_timeout_fttT.txt"

HOSTILE = (
    '[pid 9] 10:00:00.000001 openat(AT_FDCWD, "/tmp/<b>[bold]x*y*</b>", O_RDONLY) = 5 <0.000010>\n'
    '[pid 9] 10:00:00.000100 read(5, "z", 1) = 1 <2.000000>\n'
    '[pid 9] 10:00:02.000200 read(5, "z", 1) = 1 <0.000010>\n'
)


def _strace(text: str) -> Block:
    (block,) = [b for b in parse_text(text).blocks if b.format == "strace"]
    return block


def test_findings_name_the_target() -> None:
    findings = _strace(FIXTURE.read_text()).details["findings"]
    assert findings[0].startswith("slowest call: poll 5,004 ms on socket to 10.0.0.53:53 (DNS)")
    assert findings[1] == (
        "poll returned 0 (timed out) 2 times after its 5,000 ms timeout waiting on "
        "socket to 10.0.0.53:53 (DNS)"
    )


def test_bot_reply_carries_a_finding_escaped() -> None:
    message = render_analysis(analyze_text(HOSTILE), base_url="http://kb.test")
    head = message.blocks[0]["text"]["text"]
    assert "Slowest call: read 2,000 ms on /tmp/" in head  # the parser's words, in the triage
    assert "<b>" not in head  # Slack control characters escaped


def test_cli_prints_findings_without_markup(settings, tmp_path: Path) -> None:
    path = tmp_path / "trace.txt"
    path.write_text(HOSTILE)
    runner = CliRunner()
    result = runner.invoke(app, ["--data-dir", str(settings.data_dir), "analyze", str(path)])
    assert result.exit_code == 0, result.stderr
    assert "Slowest call: read 2,000 ms on /tmp/<b>[bold]x*y*</b>" in result.stdout


MPSTAT = """\
10:00:00     CPU    %usr   %nice    %sys %iowait    %irq   %soft  %steal  %guest  %gnice   %idle
10:00:01     all   10.00    0.00    5.00    0.00    1.00   20.00    5.00    0.00    0.00   59.00
10:00:01       0   10.00    0.00    5.00    0.00    4.00   70.00    0.00    0.00    0.00   11.00
10:00:01       1   10.00    0.00    5.00    0.00    0.00    1.00   20.00    0.00    0.00   64.00
"""


def test_mpstat_chart_stacks_irq_and_steal_and_findings_name_the_cpu() -> None:
    (block,) = [b for b in parse_text(MPSTAT).blocks if b.format == "mpstat"]
    assert "CPU 0: irq+soft 74 %" in block.details["findings"][0]
    ((caption, svg),) = block_charts(block)
    assert "irq" in caption
    assert 'class="cpu-irq"' in str(svg) and 'class="cpu-steal"' in str(svg)


def test_triage_next_steps_for_softirq_steal_and_dns() -> None:
    result = analyze_text(MPSTAT)
    commands = " ".join(c.command for c in result.next_commands)
    assert "mpstat -I SCPU -P ALL 1 5" in commands and "vmstat 1 10" in commands
    result = analyze_text(FIXTURE.read_text())
    assert any("/etc/resolv.conf" in c.command for c in result.next_commands)
    assert {c.platform for c in result.next_commands} <= {"linux", "any"}
