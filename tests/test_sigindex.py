"""The signature index (kb/sigindex.py) and the vector ranking in kb/matcher.py must say exactly
what evaluating each signature on its own says: same signatures tried, same verdicts, same held
leaf counts, and the same ranked matches as the documented formula (docs/matching.md) applied
entry by entry. The reference here is the plain per-signature path (Matcher._eval_sig, which runs
kb.evaluate.quick on every view; tests/test_matcher_prefilter.py checks quick against evaluate).

Evidence: every fixture under tests/fixtures (real-shaped captures; provenance in their READMEs)
and hand-made blocks whose numbers are chosen to sit on each comparison's edge.
"""

from __future__ import annotations

import math
from collections import defaultdict
from pathlib import Path

import pytest

from benchmarks.synth_kb import synthetic_entries
from ingest.detect import parse_text
from ingest.model import Block, Context, Evidence
from kb import sigindex
from kb.analysis import _full_text
from kb.matcher import (
    HIGH,
    MAX_MATCHES,
    MEDIUM,
    MIN_SCORE,
    W_HELD,
    W_NEAR,
    W_SIM,
    Matcher,
    _version_verdicts,
    evidence_terms,
)
from kb.models import Entry

FIXTURES = Path(__file__).resolve().parent / "fixtures"


def _fixture_texts() -> list[tuple[str, str]]:
    out = []
    for path in sorted(FIXTURES.rglob("*")):
        if path.is_file() and path.suffix != ".md":
            try:
                out.append((str(path.relative_to(FIXTURES)), path.read_text(encoding="utf-8")))
            except UnicodeDecodeError:
                continue
    return out


def _reference_tried(cs, keys: dict[str, set[str]], full_text: str) -> bool:
    """The candidate rule, written out: a source of the signature is in the evidence (a text
    source when the literal it requires occurs), and the identifiers it requires are present."""
    by_block = any(s in keys for s in cs.sources if s != "text")
    by_text = "text" in cs.sources and (cs.probe is None or cs.probe in full_text.casefold())
    present = set().union(*(keys.get(s, set()) for s in cs.sources))
    return (by_block or by_text) and cs.required <= present


def _reference_verdicts(m: Matcher, evidence: Evidence, full_text: str) -> dict[int, tuple]:
    out = {}
    keys = m._keys(evidence)
    for cs in m.sigs:
        if _reference_tried(cs, keys, full_text):
            found = m._eval_sig(cs, evidence, full_text)
            if found is not None:
                out[cs.gid] = (found[0].held, found[1])
    return out


def _reference_ranking(
    m: Matcher,
    evidence: Evidence,
    full_text: str,
    feedback: dict | None = None,
    bm25: dict | None = None,
) -> list[tuple[str, float, str]]:
    """docs/matching.md's score, entry by entry, over every entry that could rank."""
    feedback, bm25 = feedback or {}, bm25 or {}
    verdicts = _reference_verdicts(m, evidence, full_text)
    inverted: dict[str, list[int]] = defaultdict(list)
    for i, terms in enumerate(m.entry_terms):
        for t in terms:
            inverted[t].append(i)
    gained: dict[int, float] = defaultdict(float)
    for t in evidence_terms(evidence):
        for i in inverted.get(t, ()):
            gained[i] += m.idf[t]
    sims = {i: g / m.entry_idf_total[i] for i, g in gained.items() if m.entry_idf_total[i]}
    for entry_id, score in bm25.items():
        i = m.position[entry_id]
        sims[i] = (sims.get(i, 0.0) + score) / 2
    ranked = []
    for i in {m.sigs[g].entry for g in verdicts} | set(sims):
        entry = m.entries[i]
        mine = [(m.sigs[g], verdicts[g]) for g in m.entry_sigs[i] if g in verdicts]
        held = [cs for cs, (h, _) in mine if h]
        miss = 1.0
        for cs in held:
            miss *= 1 - cs.sig.weight
        near = max(
            (cs.sig.weight * (n / max(1, cs.leaves)) for cs, (h, n) in mine if not h), default=0.0
        )
        score = W_HELD * (1 - miss if held else 0.0) + W_NEAR * near + W_SIM * sims.get(i, 0.0)
        votes = feedback.get(entry.id, {})
        score += 0.10 * min(votes.get("right", 0), 2)
        score *= 0.5 ** min(votes.get("wrong", 0), 2)
        _, excluded = _version_verdicts(entry, evidence.context.versions)
        score = max(0.0, min(1.0, score * (0.5 if excluded else 1.0)))
        if score < MIN_SCORE and not held:
            continue
        specific = any(cs.sig.specific for cs in held)
        if score >= HIGH and specific and not excluded:
            confidence = "high"
        elif score >= MEDIUM or (score >= HIGH and held):
            confidence = "medium"
        else:
            confidence = "low"
        ranked.append((entry.id, round(score, 4), confidence))
    ranked.sort(key=lambda r: (-r[1], r[0]))
    return ranked[:MAX_MATCHES]


def _check(m: Matcher, evidence: Evidence, label: str, **kwargs) -> None:
    full_text = _full_text(evidence)
    got = m.verdicts(evidence, full_text)
    assert got == _reference_verdicts(m, evidence, full_text), label
    matches = m.match(evidence, full_text=full_text, **kwargs)
    assert [(x.id, x.score, x.confidence) for x in matches] == _reference_ranking(
        m, evidence, full_text, **kwargs
    ), label
    for x in matches:  # the explanation agrees with the verdicts the ranking used
        i = m.position[x.id]
        assert x.related_only == (not any(got.get(g, (False, 0))[0] for g in m.entry_sigs[i]))


@pytest.fixture(scope="module")
def kbs() -> dict[str, Matcher]:
    return {
        "starter": Matcher(synthetic_entries(0)),
        "synthetic-1500": Matcher(synthetic_entries(1500)),
    }


def test_every_fixture_gets_the_reference_verdicts_and_ranking(kbs):
    texts = _fixture_texts()
    assert len(texts) > 70
    for name, m in kbs.items():
        for label, text in texts:
            _check(m, parse_text(text), f"{name}: {label}")


def test_versions_feedback_and_bm25_rank_as_the_formula_says(kbs):
    m = kbs["synthetic-1500"]
    seeds = sorted((FIXTURES / "seeds").glob("0*.txt"))
    assert seeds
    for path in seeds:
        evidence = parse_text("Oracle 19.16 on Solaris 11.4\n" + path.read_text())
        assert evidence.context.versions
        ids = [e.id for e in m.entries]
        feedback = {ids[0]: {"right": 2}, ids[1]: {"wrong": 1}, ids[7]: {"right": 1, "wrong": 2}}
        bm25 = {ids[3]: 0.9, ids[900]: 0.4, ids[1400]: 0.0}
        _check(m, evidence, path.name, feedback=feedback, bm25=bm25)


def _entry(entry_id: str, sources: list[str], when: dict, weight: float = 0.8) -> Entry:
    return Entry.model_validate(
        {
            "id": entry_id,
            "title": f"Edge case {entry_id}",
            "symptom": "s",
            "root_cause": "r",
            "fix": "f",
            "platforms": ["any"],
            "signatures": [{"name": "s", "sources": sources, "weight": weight, "when": when}],
        }
    )


def _block(fmt: str, facts: dict, text: str = "") -> Block:
    return Block(format=fmt, start_line=1, end_line=1, facts=facts, text=text)


EDGE_ENTRIES = [
    # strings compare case-blind, only with == and != (waits.top_event is the one string fact)
    _entry("top-eq", ["waits"], {"fact": "waits.top_event", "op": "==", "value": "Log File Sync"}),
    _entry("top-ne", ["waits"], {"fact": "waits.top_event", "op": "!=", "value": "db cpu"}),
    # == is math.isclose (0.1 + 0.2 is not 0.3 to the bit)
    _entry("close", ["truss"], {"fact": "syscall.avg_ms", "key": "read", "op": "==", "value": 0.3}),
    _entry(
        "ref-missing",
        ["truss"],
        {
            "fact": "syscall.total_ms",
            "key": "read",
            "op": ">",
            "ref": {
                "fact": "syscall.total_ms",
                "key": "write",
                "times": 2,
                "plus": [{"fact": "syscall.total_ms", "key": "pread"}],
            },
        },
    ),
    _entry(
        "ref-held",
        ["truss"],
        {
            "fact": "syscall.total_ms",
            "key": "read",
            "op": ">=",
            "ref": {"fact": "syscall.total_ms", "key": "write", "times": 1.5},
        },
    ),
    _entry("inf", ["truss"], {"fact": "syscall.max_ms", "key": "read", "op": "!=", "value": 1}),
    _entry(
        "not-absent",
        ["truss"],
        {"not": {"fact": "syscall.count", "key": "shmdt", "op": ">", "value": 0}},
    ),
    _entry(
        "any-one",
        ["truss"],
        {
            "any": [
                {"fact": "syscall.count", "key": "shmdt", "op": ">", "value": 0},
                {"all": [{"fact": "syscall.count", "key": "read", "op": ">=", "value": 3}]},
            ]
        },
    ),
    _entry("case-sensitive", ["text"], {"text": "ORA-04031", "case_sensitive": True}),
    _entry("case-blind", ["text"], {"text": "ORA-04031"}),
    _entry("thrice", ["text"], {"regex": r"oraus\.msb", "min_count": 3}),
    _entry("twice", ["text"], {"regex": r"oraus\.msb", "min_count": 2}),
    _entry("empty-match", ["text"], {"regex": r"x*", "min_count": 2}),
    _entry("non-ascii", ["text"], {"text": "Straße"}),
    _entry("short", ["text"], {"text": "ab"}),
]


def test_edge_cases_of_each_leaf_kind():
    m = Matcher(EDGE_ENTRIES)
    truss = _block(
        "truss",
        {
            "syscall.avg_ms": {"read": 0.1 + 0.2},
            "syscall.total_ms": {"read": 30.0, "write": 20.0},
            "syscall.max_ms": {"read": math.inf},
            "syscall.count": {"read": 3},
        },
        "read(3)\n",
    )
    waits = _block("waits", {"waits.top_event": "log file sync"})
    prose = "ora-04031 seen; oraus.msb, oraus.msb; Straße; ab; é"
    evidence = Evidence(blocks=[truss, waits], context=Context(prose=prose))
    _check(m, evidence, "edge cases")
    full_text = _full_text(evidence)
    held = {
        m.entries[m.sigs[g].entry].id for g, v in m.verdicts(evidence, full_text).items() if v[0]
    }
    assert held == {
        "top-eq",
        "top-ne",
        "close",
        "ref-held",
        "not-absent",
        "any-one",
        "case-blind",
        "twice",
        "empty-match",
        "non-ascii",
        "short",
    }


def test_regexes_without_a_literal_spread_over_several_sets(monkeypatch):
    """Alternations give the literal prefilter nothing: they go through RE2 sets. Each must still
    be told apart: the text holds exactly the numbers 5 and 17 of 300 patterns."""
    monkeypatch.setattr(sigindex, "SET_CHUNK", 64)
    entries = [
        _entry(f"alt-{k}", ["text"], {"regex": rf"\bw\d{{{k}}}\b|never{k}x"}) for k in range(1, 301)
    ]
    m = Matcher(entries)
    text = "w" + "1" * 5 + " and w" + "2" * 17 + "\n"
    evidence = parse_text(text)
    full_text = _full_text(evidence)
    verdicts = m.verdicts(evidence, full_text)
    program = m.index._programs[("format", "text")][1]
    assert sum(len(b.sets) for b in program.buckets.values()) >= 300 // 64
    held = {m.entries[m.sigs[g].entry].id for g, v in verdicts.items() if v[0]}
    assert held == {"alt-5", "alt-17"}
    _check(m, evidence, "alternations")


def test_an_empty_kb_and_a_kb_without_signatures_rank_nothing():
    assert Matcher([]).match(parse_text("read(3) = 1\n")) == []
    bare = Entry.model_validate(
        {
            "id": "bare",
            "title": "Bare entry",
            "symptom": "s",
            "root_cause": "r",
            "fix": "f",
            "platforms": ["any"],
        }
    )
    evidence = parse_text("shmdt(0xffffffff7c000000) = 0\n")
    assert Matcher([bare]).match(evidence, full_text=_full_text(evidence)) == []
