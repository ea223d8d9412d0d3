"""Scoring, confidence, versions, feedback and next commands, on evidence built by hand so these
tests pin the matcher's own rules independently of the parsers. Fact values mirror seed 001's
shmdt capture and seed 000's tkprof (see tests/fixtures/seeds/README.md)."""

from __future__ import annotations

from ingest.model import Block, Context, Evidence
from kb.analysis import analyze_evidence, fingerprint
from kb.matcher import HIGH, MEDIUM
from kb.models import Entry
from kb.store import Store


def _entry(entry_id: str, signatures: list[dict], **extra) -> Entry:
    data = {
        "id": entry_id,
        "title": f"Incident {entry_id}",
        "symptom": "s",
        "root_cause": "r",
        "fix": "f",
        "platforms": ["solaris", "linux"],
        "signatures": signatures,
        "next_commands": [
            {"command": "truss -c -p PID", "platform": "solaris", "why": "count calls"},
            {"command": "strace -c -p PID", "platform": "linux", "why": "count calls"},
        ],
    }
    data.update(extra)
    return Entry.model_validate(data)


SHMDT = _entry(
    "shmdt-storm",
    [
        {
            "name": "slow-shmdt",
            "sources": ["truss", "strace"],
            "weight": 0.8,
            "when": {
                "all": [
                    {"fact": "syscall.count", "key": "shmdt", "op": ">=", "value": 5},
                    {"fact": "syscall.avg_ms", "key": "shmdt", "op": ">=", "value": 5},
                ]
            },
        }
    ],
    affected_versions=[{"product": "oracle", "introduced": "10.2", "fixed": ["12.1"]}],
)
UNACCOUNTED = _entry(
    "unaccounted",
    [
        {
            "name": "elapsed-vs-accounted",
            "sources": ["tkprof"],
            "weight": 0.3,
            "specific": False,
            "when": {
                "fact": "tkprof.elapsed_s",
                "op": ">=",
                "ref": {"fact": "tkprof.accounted_s", "times": 3},
            },
        }
    ],
)


def _truss(avg_ms: float, count: int = 10) -> Block:
    return Block(
        format="truss",
        platform="solaris",
        start_line=1,
        end_line=11,
        facts={
            "syscall.count": {"shmdt": count, "close": 1},
            "syscall.avg_ms": {"shmdt": avg_ms, "close": 17.7},
            "syscall.share_pct": {"shmdt": 92.0, "close": 8.0},
        },
        identifiers=["shmdt", "close"],
        details={"processes": [{"pid": 4306, "calls": 11}]},
    )


def _tkprof() -> Block:
    return Block(
        format="tkprof",
        start_line=1,
        end_line=15,
        facts={
            "tkprof.elapsed_s": 12.49,
            "tkprof.cpu_s": 2.25,
            "tkprof.waited_s": 0.0,
            "tkprof.accounted_s": 2.25,
            "tkprof.unaccounted_pct": 82.0,
        },
    )


def _ev(*blocks: Block, versions: list[str] | None = None, platform=None) -> Evidence:
    return Evidence(
        blocks=list(blocks), context=Context(versions=versions or [], platform=platform)
    )


def test_specific_signature_gives_high_confidence_with_observed_values():
    result = analyze_evidence(_ev(_truss(24.2)), entries=[SHMDT, UNACCOUNTED])
    top = result.matches[0]
    assert top.id == "shmdt-storm"
    assert top.confidence == "high" and top.score >= HIGH
    assert "shmdt: avg 24.2 ms ≥ 5 ms" in top.evidence
    assert "shmdt: calls 10 ≥ 5" in top.evidence


def test_near_miss_surfaces_only_as_low_related():
    result = analyze_evidence(_ev(_truss(0.5)), entries=[SHMDT])
    top = result.matches[0]
    assert top.id == "shmdt-storm"
    assert top.related_only and top.confidence == "low"
    failed = [c for s in top.signatures for c in s.conditions if not c.held]
    assert failed[0].observed == "shmdt: avg 0.5 ms (needs ≥ 5 ms)"


def test_generic_symptom_alone_is_never_high():
    entry = UNACCOUNTED.model_copy(
        update={
            "signatures": [
                UNACCOUNTED.signatures[0].model_copy(update={"weight": 1.0}),
            ]
        }
    )
    result = analyze_evidence(_ev(_tkprof()), entries=[entry])
    top = result.matches[0]
    assert top.score >= HIGH
    assert top.confidence == "medium"
    assert "tkprof: elapsed 12.49 s ≥ 3 × accounted 2.25 s = 6.75 s" in top.evidence


def test_blocks_combine_and_unrelated_evidence_matches_nothing():
    result = analyze_evidence(_ev(_tkprof(), _truss(24.2)), entries=[SHMDT, UNACCOUNTED])
    assert [m.id for m in result.matches][:2] == ["shmdt-storm", "unaccounted"]
    nothing = analyze_evidence(
        _ev(Block(format="mpstat", start_line=1, end_line=2, facts={"cpu.sys_pct": 3.0})),
        entries=[SHMDT, UNACCOUNTED],
    )
    assert nothing.matches == []


def test_version_outside_range_is_demoted_with_reason():
    affected = analyze_evidence(_ev(_truss(24.2), versions=["11.2"]), entries=[SHMDT])
    fixed = analyze_evidence(_ev(_truss(24.2), versions=["19.16"]), entries=[SHMDT])
    assert affected.matches[0].confidence == "high"
    demoted = fixed.matches[0]
    assert demoted.score < affected.matches[0].score
    assert demoted.confidence != "high"
    assert "fixed in 12.1 and later releases; you run 19.16" in demoted.versions


def test_feedback_in_the_store_moves_ranking(settings):
    store = Store(settings)
    try:
        for entry in (SHMDT, UNACCOUNTED):
            store.add(entry, author="test")
        ev = _ev(_tkprof(), _truss(24.2))
        before = analyze_evidence(ev, store)
        assert before.matches[0].id == "shmdt-storm"
        fp = before.fingerprint
        for user in ("ann", "bob"):
            store.record_feedback("unaccounted", fp, "right", user)
            store.record_feedback("shmdt-storm", fp, "wrong", user)
        after = analyze_evidence(ev, store)
        assert after.matches[0].id == "unaccounted"
        assert (
            after.matches[0].feedback == {"right": 2, "wrong": 0}
            or after.matches[0].feedback.get("right") == 2
        )
        # other evidence (another fingerprint) is not affected by these votes
        other = analyze_evidence(_ev(_truss(24.2)), store)
        assert other.matches[0].id == "shmdt-storm"
    finally:
        store.close()


def test_store_similarity_uses_the_index(settings):
    store = Store(settings)
    try:
        store.add(SHMDT, author="test")
        sims = store.similar(["shmdt", "close"])
        assert sims == {"shmdt-storm": 1.0}
        assert store.similar(["nothing-like-it"]) == {}
    finally:
        store.close()


def test_next_commands_follow_platform_and_fill_pid():
    sol = analyze_evidence(_ev(_truss(24.2), platform="solaris"), entries=[SHMDT])
    lin = analyze_evidence(_ev(_truss(24.2), platform="linux"), entries=[SHMDT])
    assert sol.next_commands[0].command == "truss -c -p 4306"
    assert {c.platform for c in sol.next_commands} == {"solaris"}
    assert lin.next_commands[0].command == "strace -c -p 4306"
    assert {c.platform for c in lin.next_commands} == {"linux"}


def test_triage_rules_when_nothing_matches_well():
    result = analyze_evidence(_ev(_tkprof(), platform="linux"), entries=[])
    commands = [c.command for c in result.next_commands]
    assert any(c.startswith("for i in 1 2 3 4 5; do eu-stack") for c in commands)
    assert any(c.startswith("strace -c -f -p") for c in commands)
    assert all(c.source.startswith("triage:") for c in result.next_commands)


def test_fingerprint_is_stable_and_format_sensitive():
    assert fingerprint(_ev(_truss(24.2))) == fingerprint(_ev(_truss(30.0)))
    assert fingerprint(_ev(_truss(24.2))) != fingerprint(_ev(_tkprof()))
    assert MEDIUM < HIGH
