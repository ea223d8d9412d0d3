"""A shown match's explanation is built per analysis: nothing evaluated for one paste may reach
the answer for another. The matcher keeps per-matcher state (each entry's identifiers, the
compiled programs, a saved KB's arrays) and builds leaf outcomes while choosing a signature's
view; a cache keyed too loosely would show the previous paste's observed values. Two different
pastes in a row through one matcher must answer exactly as each does alone."""

from __future__ import annotations

from pathlib import Path

from benchmarks.synth_kb import synthetic_entries
from ingest.model import Block, Context, Evidence
from kb.analysis import analyze_text
from kb.matcher import Matcher
from kb.models import Entry

SEEDS = Path(__file__).resolve().parent / "fixtures" / "seeds"


def _dump(result) -> dict:
    return result.model_dump(exclude={"elapsed_ms"})


def _pastes() -> list[str]:
    paths = sorted(SEEDS.glob("0*.txt"))
    assert len(paths) >= 4
    return [p.read_text(encoding="utf-8") for p in paths]


def test_pastes_in_a_row_answer_as_each_alone_in_memory_and_saved(tmp_path):
    entries = synthetic_entries(300)
    texts = _pastes()
    alone = [_dump(analyze_text(t, matcher=Matcher(entries))) for t in texts]
    # the answers are worth comparing: several pastes show explained signatures
    explained = [a for a in alone if any(m["signatures"] for m in a["matches"])]
    assert len(explained) >= 3
    shared = Matcher(entries)
    path = tmp_path / "kb.arrays"
    shared.save(path, "k", [1] * len(entries))
    by_id = {e.id: e for e in entries}
    saved = Matcher.load(path, "k", lambda entry_id, rev: by_id[entry_id])
    assert saved is not None
    for m in (shared, saved):
        forward = [_dump(analyze_text(t, matcher=m)) for t in texts]
        backward = [_dump(analyze_text(t, matcher=m)) for t in reversed(texts)]
        assert forward == alone
        assert backward == alone[::-1]


SLOW_SHMDT = Entry.model_validate(
    {
        "id": "shmdt-storm",
        "title": "shmdt storm",
        "symptom": "s",
        "root_cause": "r",
        "fix": "f",
        "platforms": ["solaris", "linux"],
        "signatures": [
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
    }
)


def _calls(fmt: str, avg_ms: float) -> Block:
    # invented numbers in the shape of a `truss -c` / `strace -c` summary
    return Block(
        format=fmt,
        start_line=1,
        end_line=3,
        facts={
            "syscall.count": {"shmdt": 10, "close": 1},
            "syscall.avg_ms": {"shmdt": avg_ms, "close": 0.2},
        },
        identifiers=["shmdt", "close"],
    )


def _observed(m: Matcher, ev: Evidence) -> list[str]:
    (match,) = m.match(ev)
    return [c.observed for s in match.signatures for c in s.conditions]


def test_one_signature_on_two_pastes_keeps_each_pastes_values():
    """The signature reads two blocks (so its view is chosen among several, the path that keeps
    the first view's outcomes): its observed values follow the paste, in any order."""
    a = Evidence(blocks=[_calls("truss", 24.2), _calls("strace", 3.5)], context=Context())
    b = Evidence(blocks=[_calls("truss", 7.5), _calls("strace", 2.0)], context=Context())
    alone_a, alone_b = _observed(Matcher([SLOW_SHMDT]), a), _observed(Matcher([SLOW_SHMDT]), b)
    assert any("24.2" in o for o in alone_a) and any("7.5" in o for o in alone_b)
    m = Matcher([SLOW_SHMDT])
    assert [_observed(m, a), _observed(m, b), _observed(m, a)] == [alone_a, alone_b, alone_a]
    # the outcome objects themselves are new each time: a caller editing one edits no other
    first, second = m.match(a)[0], m.match(a)[0]
    assert first.signatures[0].conditions[0] is not second.signatures[0].conditions[0]
