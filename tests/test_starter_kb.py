"""The starter knowledge base (issue 7): every entry file validates, the starter entries are
complete, and each starter entry's fixture, run through the real parsers and matcher against the
whole knowledge base, ranks its own entry first with high confidence while no other entry (seed
or starter) rises above low. Discrimination between entries is the point: with ~40 entries, a
signature that fires on someone else's evidence shows up here."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path

import pytest
import yaml

from ingest.detect import parse_text
from kb.analysis import analyze_evidence
from kb.matcher import Matcher
from kb.models import Entry, validate_entry

ROOT = Path(__file__).resolve().parent.parent
ENTRIES_DIR = ROOT / "kb" / "entries"
FIXTURES = ROOT / "tests" / "fixtures" / "kb"
FIXTURE_README = FIXTURES / "README.md"
MIN_ENTRIES = 80  # issue 16: 80+ incidents
FIXED_TIME = datetime(2026, 11, 22, tzinfo=UTC)

SEED_IDS = frozenset(
    {
        "oraus-msb-exception-reads",
        "numa-shmdt-disconnect-storm",
        "standalone-plsql-pin-overhead",
        "nologging-lob-controlfile-writes",
        "listener-slow-fork-cladm",
        "securefile-cache-nologging-write-complete",
    }
)

# The incidents issue 7 asks for, each mapped to the entry (or entries) that covers it.
REQUIRED_TOPICS = {
    "log file sync from commit-per-row": ["log-file-sync-commit-per-row"],
    "slow redo writes": ["slow-redo-log-parallel-write"],
    "cursor: pin S wait on X": ["cursor-pin-s-wait-on-x"],
    "library cache lock / pin from DDL": ["library-cache-lock-invalidation-ddl"],
    "latch: shared pool, no binds": ["hard-parse-literals-shared-pool"],
    "latch: cache buffers chains": ["cbc-latch-hot-block"],
    "buffer busy / read by other session": ["buffer-busy-read-by-other-session"],
    "enq: TX - row lock contention": ["tx-row-lock-contention"],
    "enq: TX - index contention": ["tx-index-contention-right-growing"],
    "enq: HW - contention on LOBs": ["hw-contention-lob-segment"],
    "enq: SQ / row cache lock": ["sequence-cache-sq-row-cache"],
    "direct path read temp": ["direct-path-read-temp-small-pga"],
    "db file sequential read, bad plan": ["sequential-read-bad-plan"],
    "db file scattered read full scans": ["scattered-read-full-scans"],
    "free buffer waits": ["free-buffer-waits-slow-dbwr"],
    "log file switch": [
        "log-file-switch-checkpoint-incomplete",
        "log-file-switch-archiving-needed",
    ],
    "control file sequential read storms": ["control-file-sequential-read-storm"],
    "gc buffer busy and gc cr/current": [
        "rac-gc-buffer-busy",
        "rac-gc-cr-current-interconnect",
    ],
    "SQL*Net round trips": ["sqlnet-round-trips-row-by-row"],
    "no HugePages on Linux": ["linux-no-hugepages-page-tables"],
    "transparent huge pages": ["transparent-hugepages-stalls"],
    "swapping / paging": ["swapping-paging"],
    "CPU saturation, run queue": ["cpu-saturation-run-queue"],
    "TCP listen drops": ["tcp-listen-drops-listener-backlog"],
    "logon storms": ["logon-storm"],
    "parse CPU, no statement cache": ["parse-cpu-no-statement-cache"],
    "PL/SQL to SQL context switching": ["plsql-sql-context-switching"],
    "resmgr:cpu quantum": ["resmgr-cpu-quantum"],
    "I/O latency on one device": ["io-latency-one-device"],
}


def _load(path: Path) -> Entry:
    return validate_entry(yaml.safe_load(path.read_text(encoding="utf-8")), source=path.name)


ENTRY_FILES = sorted(ENTRIES_DIR.glob("*.yaml"))
ALL_ENTRIES = [_load(p) for p in ENTRY_FILES]
BY_ID = {e.id: e for e in ALL_ENTRIES}
STARTER_IDS = sorted(e.id for e in ALL_ENTRIES if e.id not in SEED_IDS)
FIXTURE_IDS = sorted(p.parent.name for p in FIXTURES.glob("*/positive.txt"))
MATCHER = Matcher(ALL_ENTRIES)  # compiled once: every fixture runs against the whole KB


# -- the whole knowledge base -------------------------------------------------------------------


def test_every_entry_file_validates_and_is_named_after_its_id() -> None:
    for path in ENTRY_FILES:
        assert _load(path).id == path.stem, path.name


def test_entry_ids_are_unique_and_the_kb_is_big_enough() -> None:
    ids = [e.id for e in ALL_ENTRIES]
    assert len(ids) == len(set(ids))
    assert len(ids) >= MIN_ENTRIES
    assert set(ids) >= SEED_IDS
    assert len(STARTER_IDS) >= 32


def test_every_required_topic_has_its_entry() -> None:
    missing = {t: ids for t, ids in REQUIRED_TOPICS.items() if not set(ids) <= set(BY_ID)}
    assert not missing


def test_every_starter_entry_has_a_fixture_and_every_fixture_an_entry() -> None:
    assert set(FIXTURE_IDS) >= set(STARTER_IDS)
    assert set(FIXTURE_IDS) <= set(BY_ID)


def test_fixture_readme_gives_provenance_for_every_fixture() -> None:
    readme = FIXTURE_README.read_text(encoding="utf-8")
    for fixture_id in FIXTURE_IDS:
        line = next((ln for ln in readme.splitlines() if f"`{fixture_id}/positive.txt`" in ln), "")
        assert "made up" in line, fixture_id


# -- each starter entry -------------------------------------------------------------------------


@pytest.mark.parametrize("entry_id", STARTER_IDS)
def test_starter_entry_is_complete(entry_id: str) -> None:
    entry = BY_ID[entry_id]
    assert entry.author == "perfkb"
    assert entry.created == FIXED_TIME and entry.updated == FIXED_TIME
    assert len(entry.symptom) > 200 and len(entry.root_cause) > 200
    assert "(1)" in entry.fix and "(2)" in entry.fix, "fix lists options with their trade-offs"
    assert entry.affected_versions, "affected versions, or an all-versions range with a note"
    assert all(r.introduced or r.fixed or r.note for r in entry.affected_versions)
    assert entry.platforms and entry.tags and entry.references
    assert all(r.startswith("https://") for r in entry.references)


@pytest.mark.parametrize("entry_id", STARTER_IDS)
def test_starter_entry_has_solaris_and_linux_next_commands(entry_id: str) -> None:
    platforms = {c.platform for c in BY_ID[entry_id].next_commands}
    assert {"solaris", "linux"} <= platforms


@pytest.mark.parametrize("entry_id", STARTER_IDS)
def test_starter_entry_signatures_follow_the_weight_rules(entry_id: str) -> None:
    signatures = BY_ID[entry_id].signatures
    assert any(s.specific for s in signatures), "at least one specific signature"
    for sig in signatures:
        assert sig.description, sig.name
        if not sig.specific:
            assert sig.weight <= 0.3, f"generic signature {sig.name} weighs {sig.weight}"


@pytest.mark.parametrize("entry_id", STARTER_IDS)
def test_starter_entry_names_events_the_way_oracle_prints_them(entry_id: str) -> None:
    """Event keys are matched exactly, so a typo silently never matches: catch the usual ones."""
    for sig in BY_ID[entry_id].signatures:
        for key in sig.identifiers():
            assert key == key.strip(), key
            assert not re.search(r"\s{2,}", key), key
            if key.startswith("enq:"):
                assert re.fullmatch(r"enq: [A-Z0-9]{2} - [A-Za-z0-9 ]+", key), (
                    key
                )  # allocate ITL entry


# -- each fixture against the whole knowledge base ----------------------------------------------


@pytest.mark.parametrize("entry_id", FIXTURE_IDS)
def test_fixture_ranks_its_own_entry_first_and_no_other_above_low(entry_id: str) -> None:
    text = (FIXTURES / entry_id / "positive.txt").read_text(encoding="utf-8")
    result = analyze_evidence(parse_text(text), matcher=MATCHER)
    assert result.matches, "nothing matched"
    top = result.matches[0]
    ranking = [(m.id, m.score, m.confidence) for m in result.matches[:4]]
    assert top.id == entry_id, ranking
    assert top.confidence == "high", ranking
    assert any(s.held and s.specific for s in top.signatures), "a specific signature held"
    raised = [(m.id, m.score, m.confidence) for m in result.matches[1:] if m.confidence != "low"]
    assert not raised, raised


@pytest.mark.parametrize("entry_id", FIXTURE_IDS)
def test_fixture_evidence_is_parsed_not_only_read_as_text(entry_id: str) -> None:
    """A fixture the parsers misread could still pass through text signatures alone: when the
    entry has signatures on parsed evidence, one of them must hold on the fixture."""
    text = (FIXTURES / entry_id / "positive.txt").read_text(encoding="utf-8")
    result = analyze_evidence(parse_text(text), matcher=MATCHER)
    own = next(m for m in result.matches if m.id == entry_id)
    if any(set(s.sources) - {"text"} for s in BY_ID[entry_id].signatures):
        parsed = [s.name for s in own.signatures if s.held and set(s.block_formats) - {"text"}]
        assert parsed, [(s.name, s.held, s.block_formats) for s in own.signatures]
