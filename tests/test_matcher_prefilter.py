"""The matcher's text prefilter (a text signature is evaluated only when the literal it requires
occurs in the paste) and the text evaluation's caches: they must never change what matches.
The evidence lines echo seed 000 (oraus.msb re-read by truss read() calls) and seed 003
(enq: CF - contention in an AWR table); see tests/fixtures/seeds/README.md."""

from __future__ import annotations

import pytest

from kb.analysis import analyze_text
from kb.evaluate import eval_text
from kb.literals import any_probe as _any_probe
from kb.literals import literal_runs as _literal_runs
from kb.literals import probe as _probe
from kb.matcher import Matcher
from kb.models import Entry
from kb.signatures import TextCondition


def _text_entry(entry_id: str, when: dict) -> Entry:
    return Entry.model_validate(
        {
            "id": entry_id,
            "title": f"Incident {entry_id}",
            "symptom": "s",
            "root_cause": "r",
            "fix": "f",
            "platforms": ["any"],
            "signatures": [{"name": "t", "sources": ["text"], "weight": 0.9, "when": when}],
        }
    )


@pytest.mark.parametrize(
    ("regex", "runs"),
    [
        (r"oraus\.msb", ["oraus.msb"]),
        (r"ab?cde", ["a", "cde"]),  # b may be absent
        (r"ab+cd", ["ab", "cd"]),  # abbcd has no 'abcd'
        (r"(foo|bar)baz", ["baz"]),  # groups are skipped whole
        (r"(?:ab)?cde", ["cde"]),
        (r"[]a]bcd", ["bcd"]),
        (r"[[:alpha:]]xyz", ["xyz"]),
        (r"a{300}bcd", ["bcd"]),  # repetition counts are not text
        (r"(?m)^compact_stall\s+\d", ["compact_stall"]),
        (r"\bshmdt\(", ["shmdt("]),
        (r"foo|bar", []),  # top-level alternation: nothing is required
        (r"x\x41yz", []),  # escapes with arguments: give up
        (r"ab\p{L}cd", []),
        (r"(?x) a b c", []),  # verbose mode: spaces are not text
        (r"(?P<n>ab)cde", []),
    ],
)
def test_literal_runs_are_only_what_every_match_contains(regex, runs):
    assert _literal_runs(regex) == runs


def test_probe_comes_from_all_nodes_only_and_is_long_ascii():
    def cond(when):
        return _text_entry("x", when).signatures[0].when

    assert _probe(cond({"all": [{"text": "ab"}, {"regex": r"Oraus\.MSB"}]})) == "oraus.msb"
    assert _probe(cond({"any": [{"text": "oraus.msb"}, {"text": "slmsrd"}]})) is None
    assert _probe(cond({"not": {"text": "oraus.msb"}})) is None
    assert _probe(cond({"text": "ab"})) is None  # too short to index
    assert _probe(cond({"text": "Straße wait"})) is None  # non-ASCII: case folding is not exact


@pytest.mark.parametrize(
    ("regex", "literals"),
    [
        (r"htons\(53\)|port = 53\b|\.53:", [".53:", "htons(53)", "port = 53"]),
        (r"Htons\(53\)|\.5?3:", None),  # '.' then '3:': no 3-character run in the second
        (r"(?m)poll\(\d+\)\s+= 0|pollsys\(", ["poll(", "pollsys("]),
        (r"abc|de", None),  # an alternative without a 3-character literal: no gate
        (r"abc|", None),  # the empty alternative matches anywhere
        (r"(abc|xyz)", None),  # no top-level alternation: `probe`'s case
        (r"abc", None),
        (r"[|]abc|defg", ["abc", "defg"]),  # a class and an escape are not alternations
        (r"abc\|def|ghij", ["abc|def", "ghij"]),
        (r"(?i)ABC|Def", ["abc", "def"]),  # lowercase: the text is case-folded
        (r"abc|d\x41ef", None),  # an escape with an argument: give up on that alternative
        (r"Straße|wait", None),  # non-ASCII: case folding is not exact
    ],
)
def test_any_probe_is_one_literal_per_alternative(regex, literals):
    cond = _text_entry("x", {"regex": regex}).signatures[0].when
    assert _any_probe(cond) == literals


def test_saved_sets_skip_alternations_absent_from_the_text_and_answer_the_same(tmp_path):
    """A saved program compiles only the RE2 patterns that can match a text (an alternation
    none of whose literals is there cannot), and answers as the matcher built in memory."""
    from kb import sigindex

    entries = [
        _text_entry(f"alt{i}", {"regex": rf"htons\(53\)|port = 53\b|\.53:(?:zq{i}zq)?"})
        for i in range(150)
    ] + [
        _text_entry(f"poll{i}", {"regex": rf"poll\(\d+\)|pollsys\((?:zq{i}zq)?", "min_count": 2})
        for i in range(150)
    ]
    entries += [_text_entry("free", {"regex": r"\d+ +\d+"})]
    built = Matcher(entries)
    built.save(tmp_path / "kb.arrays", "k", [1] * len(entries))
    texts = ["nothing here 12  34", "poll(3) poll(4) htons(53)", "pollsys(9)", "PORT = 53 x", ""]
    for text in texts:
        saved = Matcher.load(
            tmp_path / "kb.arrays", "k", lambda i, r: built.entries[built.position[i]]
        )
        a = analyze_text(text, matcher=built)
        b = analyze_text(text, matcher=saved)
        assert a.model_dump(exclude={"elapsed_ms"}) == b.model_dump(exclude={"elapsed_ms"}), text
        lazy = [
            found
            for _, prog in saved.index._programs.values()
            for bucket in prog.buckets.values()
            for found in bucket.sets
        ]
        assert all(isinstance(x, sigindex._LazySet) for x in lazy)
        compiled = sum(
            len(added)
            for x in lazy
            for _, added in [*x.subsets.values(), *([x.done] if x.done else [])]
        )
        low = text.casefold()
        alt = any(p in low for p in ("htons(53)", ".53:", "port = 53"))
        poll = "poll(" in low or "pollsys(" in low
        want = (1 + 150 * poll + 150 * alt) if text else 0  # "": nothing scanned
        assert compiled == want, text


def test_prefilter_skips_absent_literals_and_keeps_present_ones():
    entries = [
        _text_entry("msb", {"regex": r"oraus\.msb", "min_count": 2}),
        _text_entry("cf", {"text": "enq: CF - contention"}),
        _text_entry("alt", {"regex": r"ORA-0?4031|ORA-04030"}),  # no probe: always evaluated
    ]
    m = Matcher(entries)
    assert sorted(literal for g in m.text_by_gram.values() for literal in g) == [
        "enq: cf - contention",
        "oraus.msb",
    ]
    text = (
        '15697: 0.0012 read(14, "...", 8192) = 8192  /u01/app/oracle/rdbms/mesg/ORAUS.MSB\n'
        "15697: 0.0013 read(14, 0x1, 8192) = 8192  oraus.msb\n"
    )
    assert [m.sigs[g].entry for gids in m._probed_gids(text) for g in gids] == [0]
    result = analyze_text(text, entries=entries)
    held = {x.id for x in result.matches if not x.related_only}
    assert held == {"msb"}
    assert analyze_text("nothing to see", entries=entries).matches == []


def test_prefilter_changes_nothing_against_evaluating_every_signature():
    entries = [
        _text_entry("msb", {"all": [{"regex": r"oraus\.msb"}, {"text": "read("}]}),
        _text_entry("cf", {"all": [{"text": "enq: CF - contention"}, {"regex": r"\d+"}]}),
        _text_entry("flagged", {"regex": r"(?i)^\s*ENQ: cf - CONTENTION"}),
    ]
    texts = [
        "Event  Waits\nenq: CF - contention 1,204\n",
        "read(14) oraus.msb\nread(14) oraus.msb",
        "ENQ: Cf - Contention\nread(",
        "",
    ]
    fast = Matcher(entries)
    slow = Matcher(entries)
    slow.text_by_gram.clear()  # every text signature is tried, whatever the text holds
    slow.text_free[:] = [("text" in cs.sources) for cs in slow.sigs]
    for text in texts:
        a = analyze_text(text, matcher=fast)
        b = analyze_text(text, matcher=slow)
        assert [(x.id, x.score, x.confidence) for x in a.matches] == [
            (x.id, x.score, x.confidence) for x in b.matches
        ], text


def test_eval_text_counts_the_same_on_bytes_and_with_multibyte_text():
    text = "café oraus.msb — oraus.msb\nÜber oraus.msb"
    assert (
        eval_text(TextCondition(regex=r"oraus\.msb"), text).observed == "/oraus\\.msb/ seen 3 times"
    )
    # a pattern that matches the empty string keeps the character path
    out = eval_text(TextCondition(regex=r"x*"), "é")
    assert out.observed == "/x*/ seen 2 times"
    # a new text (not the cached one) is encoded afresh
    assert eval_text(TextCondition(regex="msb"), "no match here").held is False


def test_quick_agrees_with_evaluate_on_every_seed_and_entry():
    """The matcher ranks with quick() and explains with evaluate(): same verdicts, same counts."""
    from pathlib import Path

    import yaml

    from ingest.detect import parse_text
    from kb.evaluate import evaluate, quick
    from kb.models import validate_entry

    root = Path(__file__).resolve().parent.parent
    entries = [
        validate_entry(yaml.safe_load(p.read_text()), source=p.name)
        for p in sorted((root / "kb" / "entries").glob("*.yaml"))
    ]
    not_entry = _text_entry(
        "negated", {"all": [{"not": {"any": [{"text": "shmdt"}, {"text": "read("}]}}]}
    )
    checked = 0
    for path in sorted((root / "tests" / "fixtures" / "seeds").glob("0*.txt")):
        text = path.read_text()
        views = [(b.facts, b.text) for b in parse_text(text).blocks] + [({}, text)]
        for entry in [*entries, not_entry]:
            for sig in entry.signatures:
                for facts, view_text in views:
                    held, outcomes = evaluate(sig.when, facts, view_text)
                    q = quick(sig.when, facts, view_text)
                    assert q == (held, sum(o.held for o in outcomes), len(outcomes)), (
                        path.name,
                        entry.id,
                        sig.name,
                    )
                    checked += 1
    assert checked > 1000
