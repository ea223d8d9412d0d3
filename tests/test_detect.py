"""Detection: finding every evidence block in what people actually paste."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ingest.detect import parse_lines, parse_text
from ingest.model import Evidence

SEEDS = Path(__file__).parent / "fixtures" / "seeds"
# The seed write-ups live in ../shared beside the checkout (CI clones main with shared/ beside it).
SHARED_SEEDS = Path(__file__).resolve().parents[2] / "shared" / "seeds"

EXPECTED_FORMAT = {
    "000_tkprof_122.txt": "tkprof",
    "000_pstack_122.txt": "stack",
    "000_dtrace_counts_122.txt": "dtrace",
    "000_dtrace_counts_121.txt": "dtrace",
    "000_truss_read.txt": "truss",
    "000_strace_c_19c.txt": "strace",
    "001_mpstat.txt": "mpstat",
    "001_truss_shmdt.txt": "truss",
    "001_truss_lgrp.txt": "truss",
    "002_dtrace_flat.txt": "dtrace",
    "002_dtrace_ustack.txt": "dtrace",
    "003_waits_basicfile.txt": "waits",
    "003_waits_securefile.txt": "waits",
    "003_waits_write_complete.txt": "waits",
    "004_truss_accept.txt": "truss",
    "004_truss_listener.txt": "truss",
    "004_truss_fork_child.txt": "truss",
    "004_truss_cladm.txt": "truss",
    "004_dtrace_cladm_ustack.txt": "dtrace",
    "004_dtrace_lquantize.txt": "dtrace",
}


def _formats(ev: Evidence) -> list[str]:
    return [b.format for b in ev.blocks]


@pytest.mark.parametrize("name,fmt", sorted(EXPECTED_FORMAT.items()))
def test_each_seed_snippet_is_one_block_of_its_format(name, fmt):
    ev = parse_text((SEEDS / name).read_text())
    formats = [f for f in _formats(ev) if f != "unknown"]
    assert formats == [fmt], f"{name}: {_formats(ev)}"
    block = next(b for b in ev.blocks if b.format == fmt)
    assert block.facts, f"{name}: no facts"


def test_slack_message_with_prose_and_fences():
    shmdt = (SEEDS / "001_truss_shmdt.txt").read_text()
    mpstat = (SEEDS / "001_mpstat.txt").read_text()
    msg = (
        "we see a CPU spike in sys on SunOS 5.10 when the app disconnects, pid 4306:\n"
        f"```{shmdt}```\n"
        "and mpstat at the same time\n"
        f"```text\n{mpstat}```\n"
        "any idea? Oracle 10.2.0.4"
    )
    ev = parse_text(msg)
    assert _formats(ev) == ["truss", "mpstat"]
    assert ev.context.platform == "solaris"
    assert "10.2.0.4" in ev.context.versions
    assert ev.context.pids == [4306]
    assert "any idea?" in ev.context.prose


def test_shell_prompt_and_mixed_outputs_in_one_file():
    tkprof = (SEEDS / "000_tkprof_122.txt").read_text()
    truss = (SEEDS / "000_truss_read.txt").read_text()
    text = f"$ tkprof ora_5522.trc out.txt\n{tkprof}\n\nthen:\n\n{truss}"
    ev = parse_text(text)
    assert [f for f in _formats(ev) if f != "unknown"] == ["tkprof", "truss"]


@pytest.mark.parametrize(
    "seed,formats",
    [
        ("000_ff51ab31543e7bef.txt", {"tkprof", "stack", "dtrace", "truss", "strace"}),
        ("001_191b638ca290df8a.txt", {"mpstat", "truss"}),
        ("002_60d2c86645a1d331.txt", {"dtrace"}),
        ("003_acb1a95e0e406927.txt", {"waits"}),
        ("004_170e21390805488d.txt", {"truss", "dtrace"}),
    ],
)
def test_whole_seed_write_ups(seed, formats):
    """The seeds are blog posts: prose with evidence between paragraphs."""
    ev = parse_text((SHARED_SEEDS / seed).read_text())
    assert formats <= set(_formats(ev)), _formats(ev)


def test_seed_000_context():
    ev = parse_text((SHARED_SEEDS / "000_ff51ab31543e7bef.txt").read_text())
    assert "12.2" in ev.context.versions and "19.14" in ev.context.versions
    assert ev.context.platform == "solaris"


def test_unknown_text_is_an_unknown_block_not_an_error():
    ev = parse_text("the database is slow since this morning, users complain")
    assert _formats(ev) == ["unknown"]
    assert parse_text("").blocks == []


def test_streaming_input_and_binary_garbage():
    lines = ('5522:   read(9, "x", 512)      = 512\n' for _ in range(20000))
    ev = parse_lines(lines)
    assert _formats(ev) == ["truss"]
    assert ev.blocks[0].facts["syscall.count"]["read"] == 20000
    noisy = parse_text("\x00\x01\x02 garbage \xff\n" * 50 + "x" * 200_000)
    assert isinstance(noisy, Evidence)


def _finite(ev: Evidence) -> bool:
    for b in ev.blocks:
        for v in b.facts.values():
            vals = v.values() if isinstance(v, dict) else [v]
            for x in vals:
                if isinstance(x, float) and not math.isfinite(x):
                    return False
    return True


_snippets = [p.read_text() for p in sorted(SEEDS.glob("*.txt"))]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(
        st.one_of(
            st.sampled_from(_snippets).map(lambda s: s[: len(s) // 2]),
            st.sampled_from(_snippets),
            st.text(max_size=200),
        ),
        max_size=4,
    )
)
def test_detector_never_raises_on_mixed_and_truncated_input(parts):
    ev = parse_text("\n".join(parts))
    assert _finite(ev)
    Evidence.model_validate(ev.model_dump())


def test_versions_come_from_prose_and_headers_not_hex_offsets():
    assert parse_text((SEEDS / "000_pstack_122.txt").read_text()).context.versions == []
    assert parse_text("we run 11gR2 and 19c").context.versions == ["11gR2", "19c"]
    header = "TKPROF: Release 12.2.0.1.0 - Development on Tue Jan 9 10:01:02 2018"
    assert parse_text(header).context.versions == ["12.2.0.1.0"]
    assert parse_text("upgraded to 19.16 last week").context.versions == ["19.16"]


def test_a_command_line_without_its_output_is_prose():
    ev = parse_text("we ran\n\ntruss -p  -d -o /tmp/truss.log\n\nbut the file is empty")
    assert _formats(ev) == ["unknown"]
    assert "truss -p" in ev.context.prose
