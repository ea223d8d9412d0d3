"""What the cgroup CPU parser reads off cpu.stat, cpu.max, cfs_quota_us and systemd's
CPUQuotaPerSecUSec (issue 16): rates between two samples only, never a total since the group
was made; v1 and v2 units; several cgroups in one `grep .`; pastes read the same."""

from __future__ import annotations

import pytest

from ingest.detect import parse_text
from tests.parser_helpers import assert_facts_valid, fixture_lines


def _cgroup(text: str):
    blocks = [b for b in parse_text(text).blocks if b.format == "cgroup"]
    for b in blocks:
        assert_facts_valid(b)
    assert len(blocks) == 1, [(b.format, b.start_line) for b in parse_text(text).blocks]
    return blocks[0]


def _fixture() -> str:
    return "\n".join(fixture_lines("os_profiles/cgroup_cpu_stat.txt")) + "\n"


def test_v2_loop_with_dates_gives_shares_and_rates_between_the_samples():
    block = _cgroup(_fixture())
    unit = "system.slice/oracle-db.service"
    f = block.facts
    assert f["os.since_boot"] == 0
    assert f["cgroup.interval_s"] == 10  # from the two `date` lines
    assert f["cgroup.throttled_periods_pct"][unit] == pytest.approx(62.0)  # 62 of 100 periods
    assert f["cgroup.periods"] == 100
    assert f["cgroup.throttled_s_per_s"][unit] == pytest.approx(0.62)  # 6.2 s of throttled_usec
    assert f["cgroup.cpus_used"][unit] == pytest.approx(2.0)  # 20 s of usage_usec in 10 s
    assert f["cgroup.quota_cpus"][unit] == 2.0  # cpu.max 200000 100000
    assert f["cgroup.quota_cpus"]["kubepods/burstable/pod4f1c"] == 0.5  # cfs 50000 / 100000
    assert f["cgroup.quota_cpus"]["oracle-db.service"] == 2.0  # CPUQuotaPerSecUSec=2s
    assert f["cgroup.min_quota_cpus"] == 0.5


def test_a_group_pasted_once_is_a_total_since_creation_kept_out_of_the_facts():
    block = _cgroup(_fixture())
    pod = block.details["groups"]["kubepods/burstable/pod4f1c"]
    assert pod["samples"] == 1 and pod["throttled_pct_since_creation"] == pytest.approx(7.46)
    assert "kubepods/burstable/pod4f1c" not in block.facts["cgroup.throttled_periods_pct"]


def test_one_v1_sample_is_marked_since_boot_and_gives_no_rate():
    text = (
        "$ cat /sys/fs/cgroup/cpu,cpuacct/docker/5d41/cpu.stat\n"
        "nr_periods 8812345\nnr_throttled 3301234\nthrottled_time 771234567890123\n"
    )
    block = _cgroup(text)
    assert block.facts == {"os.since_boot": 1.0}
    assert block.details["groups"]["docker/5d41"]["throttled_pct_since_creation"] == 37.46


def test_v1_nanoseconds_and_the_interval_from_sleep_without_dates():
    sample = "nr_periods {p}\nnr_throttled {t}\nthrottled_time {ns}\n"
    text = (
        "# for i in 1 2 3; do cat /sys/fs/cgroup/cpu/oracle/cpu.stat; sleep 5; done\n"
        + sample.format(p=1000, t=100, ns=5_000_000_000)
        + sample.format(p=1050, t=130, ns=6_500_000_000)
        + sample.format(p=1100, t=160, ns=8_000_000_000)
    )
    block = _cgroup(text)
    f = block.facts
    assert block.details["groups"]["oracle"]["samples"] == 3
    assert f["cgroup.interval_s"] == 10  # two sleeps of 5 s between three samples
    assert f["cgroup.throttled_periods_pct"]["oracle"] == 60.0  # 60 of 100 periods
    assert f["cgroup.throttled_s_per_s"]["oracle"] == 0.3  # 3 s of ns over 10 s


def test_cat_sleep_cat_on_separate_prompts_and_a_counter_reset():
    text = (
        "[root@db01 ~]# cat /sys/fs/cgroup/app.slice/cpu.stat\n"
        "usage_usec 500\nnr_periods 400\nnr_throttled 300\nthrottled_usec 900\n"
        "[root@db01 ~]# sleep 10\n"
        "[root@db01 ~]# cat /sys/fs/cgroup/app.slice/cpu.stat\n"
        "usage_usec 700\nnr_periods 40\nnr_throttled 2\nthrottled_usec 100\n"
    )
    f = _cgroup(text).facts
    # the counters went down (the group was recreated): the last values are the growth
    assert f["cgroup.throttled_periods_pct"]["app.slice"] == 5.0
    assert f["cgroup.interval_s"] == 10


@pytest.mark.parametrize(
    ("line", "cpus"),
    [
        ("CPUQuotaPerSecUSec=1.500000s", 1.5),
        ("CPUQuotaPerSecUSec=500ms", 0.5),
        ("CPUQuotaPerSecUSec=infinity", None),
    ],
)
def test_systemd_quota(line, cpus):
    text = f"$ systemctl show -p CPUQuotaPerSecUSec ora.service\n{line}\n"
    quotas = [b.facts.get("cgroup.quota_cpus") for b in parse_text(text).blocks]
    assert quotas == [{"ora.service": cpus} if cpus else None]


def test_no_limit_is_no_quota_and_bare_numbers_need_their_command():
    for text in (
        "$ cat cpu.max\nmax 100000\n",
        "$ cat /sys/fs/cgroup/cpu/x/cpu.cfs_quota_us\n-1\n",
    ):
        assert all("cgroup.quota_cpus" not in b.facts for b in parse_text(text).blocks)
    assert not [b for b in parse_text("200000 100000\n").blocks if b.format == "cgroup"]


PASTES = {
    "collapsed whitespace": lambda line: " ".join(line.split()),
    "quoted with '# '": lambda line: "# " + line,
    "journal prefix": lambda line: "Nov 24 10:00:01 db01 collect[811]: " + line,
    "thousands separators": lambda line: line.replace("81234567890", "81,234,567,890").replace(
        "81254567890", "81,254,567,890"
    ),
}


@pytest.mark.parametrize("paste", sorted(PASTES))
def test_pasted_captures_read_the_same(paste):
    lines = fixture_lines("os_profiles/cgroup_cpu_stat.txt")
    expected = _cgroup("\n".join(lines) + "\n").facts
    pasted = "\n".join(PASTES[paste](line) for line in lines) + "\n"
    assert _cgroup(pasted).facts == expected
