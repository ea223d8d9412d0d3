"""Issue #20 item 1, as a property: whatever raw entry data arrives (hostile numbers, deep or
wide condition trees, control characters, long lists), validation either refuses it with an
EntryError or accepts an entry that survives every way perfkb stores and moves it: the store's
JSON (the gate in Store._write), YAML export and import, and the JSON API's parse. Generated
data only; no fixture."""

from __future__ import annotations

import json
from typing import Any

import pytest
from conftest import entry_data
from hypothesis import HealthCheck, given
from hypothesis import settings as hsettings
from hypothesis import strategies as st
from pydantic import ValidationError

from kb.entry_yaml import dump_entry, load_entry
from kb.errors import EntryError
from kb.models import Entry, validate_entry
from kb.store import _from_json, _to_json

pytestmark = pytest.mark.timeout(300)

HOSTILE_FLOATS = st.sampled_from(
    [float("inf"), float("-inf"), float("nan"), 1e308, -1e308, 5e-324, 0.0, -0.0, 1e15, 2.5]
)
NUMBERS = st.one_of(HOSTILE_FLOATS, st.floats(), st.integers(-(10**20), 10**20))
TEXT = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",)), min_size=0, max_size=30
) | st.sampled_from(["\x1b[2J", "a\x00b", "line\nbreak", "x\u2028y", "9" * 1200, ""])

KEYED = ["syscall.count", "syscall.avg_ms", "syscall.total_ms"]


def mostly(good: st.SearchStrategy[Any], hostile: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """Usually a good value, sometimes a hostile one: so that many entries are accepted and the
    round trip is exercised, and the hostile values are still tried in every position."""
    return st.integers(0, 9).flatmap(lambda n: hostile if n == 0 else good)


def leaf() -> st.SearchStrategy[dict[str, Any]]:
    fact = st.fixed_dictionaries(
        {
            "fact": st.sampled_from(KEYED),
            "key": mostly(st.sampled_from(["shmdt", "semop", "read", "é\t"]), TEXT),
            "op": mostly(st.sampled_from([">", ">=", "<", "<=", "==", "!="]), st.just("=>")),
            "value": mostly(NUMBERS, st.one_of(TEXT, st.none())),
        }
    )
    ref = st.fixed_dictionaries(
        {
            "fact": st.sampled_from(KEYED),
            "key": st.just("shmdt"),
            "op": st.just(">="),
            "ref": st.fixed_dictionaries(
                {"fact": st.just("syscall.count"), "key": st.just("semop"), "times": NUMBERS}
            ),
        }
    )
    text = st.fixed_dictionaries(
        {
            "text": mostly(st.sampled_from(["shmdt", "ORA-04031", "x"]), TEXT),
            "min_count": mostly(st.integers(1, 3), st.integers(-1, 0)),
        }
    )
    return st.one_of(fact, ref, text)


def trees() -> st.SearchStrategy[Any]:
    def extend(children: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
        return st.one_of(
            st.lists(children, min_size=0, max_size=6).map(lambda c: {"all": c}),
            st.lists(children, min_size=1, max_size=6).map(lambda c: {"any": c}),
            children.map(lambda c: {"not": c}),
        )

    wide = st.recursive(leaf(), extend, max_leaves=40)
    chain = st.tuples(
        leaf(),
        mostly(st.integers(0, 12), st.integers(13, 160)),
        st.sampled_from(["all", "any", "not"]),
    ).map(lambda t: _chain(*t))
    return st.one_of(wide, chain)


def _chain(node: dict[str, Any], depth: int, kind: str) -> dict[str, Any]:
    for _ in range(depth):
        node = {kind: node} if kind == "not" else {kind: [node]}
    return node


def raw_entries() -> st.SearchStrategy[dict[str, Any]]:
    return st.builds(
        lambda when, tags, author, title, weight: entry_data(
            "fuzzed-entry",
            tags=tags,
            author=author,
            title=title,
            signatures=[
                {
                    "name": "s",
                    "sources": ["truss", "strace", "text"],
                    "weight": weight,
                    "when": when,
                }
            ],
        ),
        trees(),
        mostly(
            st.lists(st.sampled_from(["numa", "NUMA", " shm", "a" * 64]), max_size=50),
            st.lists(TEXT, max_size=70),
        ),
        mostly(st.sampled_from(["fuzzer", "Zoë Ünïcode"]), TEXT),
        mostly(st.just("A fuzzed title"), TEXT),
        mostly(st.floats(0.01, 1), NUMBERS),
    )


def _json_text(raw: dict[str, Any]) -> str:
    return json.dumps(raw, default=str, allow_nan=True)


@hsettings(
    max_examples=300,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(raw=raw_entries())
def test_accepted_entries_survive_every_storage_path(raw):
    try:
        entry = validate_entry(raw)
    except EntryError:
        accepted = None
    else:
        accepted = entry
    # the JSON API parses text, not Python objects: it must agree with validation
    try:
        via_json = Entry.model_validate_json(_json_text(raw))
    except ValidationError:
        via_json = None
    assert (via_json is None) == (accepted is None)
    if accepted is None:
        return
    assert via_json == accepted
    stored = _to_json(accepted)  # raises StoreError if it would not read back
    assert _from_json(stored, accepted.id) == accepted
    assert load_entry(dump_entry(accepted), "fuzz.yaml") == accepted
