"""How vmstat, iostat, sar, pidstat and prstat blocks are shown: the web page's charts (run queue
over time, device latency, processes), the Slack summary's first sentences and the CLI's rows,
and the next steps (triage rules, kb/rules/triage.yaml) their facts call for."""

from __future__ import annotations

from parser_helpers import fixture_lines

from bot.render import render_analysis
from ingest.detect import parse_text
from ingest.model import Block, Evidence
from kb import command_fill
from kb.analysis import analyze_text
from kb.cli import _fact_summary
from kb.triage import triage
from kb.web.charts import block_charts, series_lines


def block(name: str) -> Block:
    [b] = parse_text("\n".join(fixture_lines(name))).blocks
    return b


def test_vmstat_run_queue_chart_marks_the_cpu_count():
    b = block("os/vmstat_aix.txt")
    charts = dict(block_charts(b))
    assert "Run queue over time" not in charts  # one interval: nothing to draw over time
    b = block("os/vmstat_linux_swapping_SM.txt")
    charts = dict(block_charts(b))
    svg = charts["Run queue over time"]
    assert "<polyline" in svg and "run queue (r)" in svg and "blocked (b)" in svg
    assert "CPU over time" in charts


def test_sar_load_chart_has_the_cpu_line():
    charts = dict(block_charts(block("os/sar_u_q_r_restart.txt")))
    svg = charts["Run queue and load over time"]
    assert 'class="marker"' in svg and "4 CPUs" in svg


def test_device_latency_bars_carry_util_and_queue():
    charts = dict(block_charts(block("os/iostat_sysstat11_xt_nvme.txt")))
    svg = charts["Device latency (await)"]
    assert "sda" in svg and "util" in svg and "queue" in svg
    assert "<polyline" in charts["Device latency over time"]


def test_process_charts_for_pidstat_and_prstat():
    assert "CPU by process" in dict(block_charts(block("os/pidstat_u_wait_12h.txt")))
    captions = [c for c, _ in block_charts(block("os/prstat_mL_screens.txt"))]
    assert "Lock wait (LCK) by thread" in captions and "CPU latency (LAT) by thread" in captions


def test_evidence_names_in_charts_are_escaped():
    hostile = Block(
        format="iostat",
        start_line=1,
        end_line=2,
        facts={"dev.await_ms": {"<script>x</script>": 9.0}},
        details={"series": {"<b>d</b>": [1.0, 2.0]}},
    )
    for _, svg in block_charts(hostile):
        assert "<script>" not in svg and "<b>" not in svg
    assert series_lines([("x", [1.0])], title="t") is None  # one point is not a line


def _slack_head(name: str) -> str:
    result = analyze_text("\n".join(fixture_lines(name)))
    return render_analysis(result, base_url="http://kb.test").blocks[0]["text"]["text"]


def test_slack_summary_leads_with_the_worst_device():
    head = _slack_head("os/iostat_sysstat11_xt_nvme.txt")
    lines = head.splitlines()[1:4]  # the first sentences, after the '*Evidence:*' line
    assert any(line.startswith("•  Slowest device sda: await 95.55 ms") for line in lines)
    assert "io.worst" not in head  # sentences, not fact names


def test_cli_rows_lead_with_the_headline_and_carry_units():
    b = block("os/prstat_mL_screens.txt")
    from ingest.facts import HEADLINE

    rows = _fact_summary(b.facts, first=HEADLINE["prstat"])
    assert rows[0] == ("proc.top_cpu", "oracle/1 (12011/1)")
    assert ("proc.max_lck_pct", "68 %") in rows


def _fired(name: str) -> set[str]:
    return set(triage(Evidence(blocks=[block(name)]), command_fill.fill).fired)


def test_findings_give_os_next_steps():
    assert {"io-wait", "high-sys", "memory-pressure"} <= _fired("os/vmstat_linux_swapping_SM.txt")
    assert "user-locks" in _fired("os/prstat_mL_screens.txt")
    assert "tcp-retransmits" in _fired("os/sar_net_tcp_edev.txt")
    assert "slow-device" in _fired("os/iostat_solaris_xnz_T.txt")


def test_postmortem_form_proposes_a_signature_from_os_findings():
    from kb.proposal import propose_signatures

    evidence = parse_text("\n".join(fixture_lines("os/iostat_sysstat11_xt_nvme.txt")))
    [sig] = propose_signatures(evidence)
    assert sig.sources == ["iostat"]
    text = sig.model_dump_json()
    assert "io.max_await_ms" in text and "cpu.wait_pct" in text
    since_boot = parse_text("\n".join(fixture_lines("os/iostat_sysstat11_xt_nvme.txt")[:12]))
    assert propose_signatures(since_boot) == []


def test_findings_are_plain_sentences_on_every_surface():
    b = block("os/iostat_sysstat11_xt_nvme.txt")
    found = b.details["findings"]
    assert "slowest device sda: await 95.55 ms, 99 % util, queue 19.45" in found
    assert any(f.startswith("%util near 100 on nvme0n1") for f in found)
    assert "Slowest device sda" in _slack_head("os/iostat_sysstat11_xt_nvme.txt")
    swapping = block("os/vmstat_linux_swapping_SM.txt").details["findings"]
    assert "swapping: up to 542,720 KiB/s in, 716,800 KiB/s out" in swapping
    assert "run queue up to 19" in swapping
    locks = block("os/prstat_mL_screens.txt").details["findings"]
    assert "oracle/1 (12077/1): 68 % waiting on user locks (LCK)" in locks
    assert block("os/sar_net_tcp_edev.txt").details["findings"] == [
        "TCP retransmits 2 % of segments sent"
    ]
