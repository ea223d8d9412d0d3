"""The one way to analyse evidence: text, chunks of an upload or a download's lines go through the
batch parser (ingest.detect), the KB's compiled matcher (kb.matcher, one per store state), the
triage (kb.triage: sentences and next commands) and come back as one AnalysisResult. The CLI, the
web page, the API and the Slack bot call these and render; none of them analyses on its own.
"""

from __future__ import annotations

import gc
import hashlib
import logging
import threading
import time
import weakref
from collections.abc import Iterable
from pathlib import Path

from ingest.detect import CHUNK, line_chunks, load_readers, parse_chunks
from ingest.model import Evidence
from kb import command_fill
from kb.errors import EntryNotFound, UnreadableEntry
from kb.matcher import Matcher, evidence_terms
from kb.models import Entry
from kb.results import AnalysisResult, Match
from kb.triage import next_commands, triage

log = logging.getLogger(__name__)


def fingerprint(evidence: Evidence) -> str:
    """Stable id for 'this kind of evidence', so feedback on one paste helps the next similar one."""
    parts = sorted(
        f"{b.format}:{','.join(sorted(t.lower() for t in b.identifiers[:8]))}"
        for b in evidence.blocks
        if b.format != "unknown"
    )
    return hashlib.sha256("|".join(parts).encode()).hexdigest()[:16]


def _full_text(evidence: Evidence) -> str:
    return "\n".join([evidence.context.prose, *(b.text for b in evidence.blocks)])


_cache_lock = threading.Lock()
_cache: dict[tuple[int, int], Matcher] = {}
# stores of long-lived processes (see warm()): their rebuilt matchers are compiled and frozen
_long_lived: weakref.WeakSet = weakref.WeakSet()


def matcher_for(store) -> Matcher:
    """One compiled matcher per store state: rebuilt only when entries changed."""
    key = (id(store), store.data_version())
    with _cache_lock:
        m = _cache.get(key)
        if m is None:
            previous = None
            for k in [k for k in _cache if k[0] == id(store)]:
                previous = _cache.pop(k)
            m = _load_or_build(store, previous)
            if store in _long_lived:
                m.index.compile_all()
                _freeze()
            _cache[key] = m
        return m


COMPILED_NAME = "compiled-kb.arrays"


def compiled_path(store) -> Path:
    """Where a store's compiled KB is saved: beside its SQLite database."""
    return store.settings.data_dir / COMPILED_NAME


def _load_or_build(store, previous: Matcher | None = None) -> Matcher:
    """The compiled KB saved for the store's current state (key: Store.state_key, read from
    an index without touching any entry's JSON); when the saved one is of an earlier state of
    the same store and few entries changed since, that one with the changed entries layered
    on (Matcher.updated: only they are read and compiled); otherwise (absent, damaged, another
    store, many changes) one built from the validated entries and saved for the next process.

    Why: a 10,000-entry KB is 50 MB of JSON; validating it and compiling its signatures took
    4-6 s in every `perfkb analyze`, and again after every edit in `perfkb serve`. A saved KB
    loads its arrays and reads an entry (by id and revision, from SQLite) only for a match
    that is shown or a version that is judged."""
    key = store.state_key()
    path = compiled_path(store)
    # the saved KB this process already holds (its programs compiled, its RE2 sets too in a
    # warm process): changes since are layered on it without reading the file again
    base = getattr(previous, "_base", None) or previous
    if base is not None and getattr(base, "saved", None) and _layerable(store, base):
        layered = _layer_changes(store, base)
        if layered is not None:
            return layered
    m = Matcher.load(path, None, store.entry_at)
    if m is not None and m.saved.get("key") == key:
        store._warn_unreadable(m.unreadable)
        return m
    if m is not None and _layerable(store, m):
        layered = _layer_changes(store, m)
        if layered is not None:
            return layered
    entries, state, bad = store.list_entries_with_state()
    m = Matcher(entries)
    m.unreadable = bad
    try:  # compiles every program (aside: see SignatureIndex._pending)
        m.save(
            path,
            key,
            [rev for rev, _ in state],
            [checksum for _, checksum in state],
            store.store_id,
        )
    except OSError as exc:  # a read-only data dir: answer anyway, unsaved
        log.warning("the compiled KB could not be saved to %s (%s)", path, exc)
    return m


def _layerable(store, saved: Matcher) -> bool:
    """Whether changes can be layered on `saved`: this store's, and its document whole."""
    doc = saved.saved
    try:
        return doc["store_id"] == store.store_id and len(doc["ids"]) == len(doc["revs"]) == len(
            doc["checksums"]
        )
    except (KeyError, TypeError):
        return False


def _layer_changes(store, saved: Matcher) -> Matcher | None:
    """`saved` updated with the entries changed since it was saved (a new revision, a row
    edited behind perfkb's back, a row not verified since), read and validated one by one;
    None when more than MAX_LAYERED changed (a rebuild then costs little more)."""
    doc = saved.saved
    then = {i: (r, c) for i, r, c in zip(doc["ids"], doc["revs"], doc["checksums"], strict=True)}
    now = store.live_state()
    changed = [i for i, st in now.items() if then.get(i) != st or st[1] is None]
    removed = [i for i in then if i not in now]
    if len(changed) + len(removed) > max(MAX_LAYERED, len(now) // 50):
        return None
    entries, bad = [], {}
    for entry_id in sorted(changed):
        try:
            entries.append(store.get(entry_id))
        except UnreadableEntry as exc:
            bad[entry_id] = exc.problem
            removed.append(entry_id)
        except EntryNotFound:  # deleted in between
            removed.append(entry_id)
    store._warn_unreadable(bad)
    m = saved.updated(entries, removed)
    m.unreadable = bad
    return m


MAX_LAYERED = 64


def _freeze() -> None:
    """Move every object alive now into the GC's permanent generation.

    Why: a 10,000-entry KB is ~770k long-lived objects (entries, signature trees, programs);
    every full collection walked all of them, 0.6-0.75 s with every request stalled behind it.
    Frozen objects are never scanned again; they are still freed by reference counting when a
    rebuilt matcher replaces them. The collect first keeps the build's garbage cycles out of
    the permanent generation (this one pause happens here, during the load, not in a request).
    """
    gc.collect()
    gc.freeze()


def warm(store, *, searches: bool = True) -> Matcher:
    """For long-lived processes (`perfkb serve`, `perfkb bot`): build the matcher for the
    store's current state, compile all its programs and freeze the result (and everything
    imported so far) out of the cyclic GC, so the first analysis after start costs what any
    other does and no request waits for a full collection. Later rebuilds (after an edit) are
    compiled and frozen the same way. A process that `searches` opens the search index here
    too (analyses never open it; its first search would otherwise pay for it); the server's
    analysis processes (kb/web/pool.py) only analyse, and leave whoosh unimported."""
    _long_lived.add(store)
    m = matcher_for(store)
    with _cache_lock:  # built by someone else before the flag was set: compile and freeze it
        m.index.compile_all()
    if searches:
        store.open_index()
    # Every reader imported and one small paste analysed here, before any request: the
    # first analysis after start otherwise paid for importing the parsers its paste needs (their
    # regexes compiled, their models built) and for the detector's prefilter, the fact catalogue
    # and triage's rules, which are read on first use. Measured on the starter KB, one process
    # (this box, 2026-12-02): the first analysis of seed 000 took 345 ms, the next ones 19-23 ms,
    # and each of `perfkb serve`'s pool processes paid it again on its first paste; warmed so,
    # the first one takes 30 ms.
    load_readers()
    analyze_evidence(parse_chunks([WARM_UP]), store, matcher=m)
    _freeze()
    return m


# A line of Solaris `truss -dDE` output (pid, timestamps, call, result), written for this warm-up.
WARM_UP = "15697: 1.5426 1.0901 0.0000 pollsys(0x10041CDA8, 2, 0x0, 0x0) = 1\n"


def analyze_evidence(
    evidence: Evidence,
    store=None,
    *,
    entries: list[Entry] | None = None,
    matcher: Matcher | None = None,
) -> AnalysisResult:
    started = time.perf_counter()
    if matcher is None:
        if entries is not None:
            matcher = Matcher(entries)
        elif store is not None:
            matcher = matcher_for(store)
        else:
            matcher = Matcher([])
    fp = fingerprint(evidence)
    feedback = store.feedback_for(fp) if store is not None else {}
    # BM25 over the identifiers from the compiled KB's statistics (what the search index would
    # answer, kb.bm25): an analysis neither imports whoosh nor opens the index
    bm25 = matcher.similar(sorted(evidence_terms(evidence))) if store is not None else None
    matches = matcher.match(evidence, full_text=_full_text(evidence), feedback=feedback, bm25=bm25)
    by_id = {m.id: matcher.entries[matcher.position[m.id]] for m in matches}
    found = triage(evidence, command_fill.fill)
    commands = next_commands(evidence, matches, by_id, found)
    return AnalysisResult(
        blocks=evidence.blocks,
        context=evidence.context,
        findings=found.findings,
        matches=matches,
        next_commands=commands,
        platform=evidence.context.platform,
        fingerprint=fp,
        elapsed_ms=round((time.perf_counter() - started) * 1000, 3),
    )


# Every surface (CLI, web paste and upload, API, Slack messages and files) parses through the
# batch path (`Detector.feed_text`): `perfkb analyze` reads a file with ingest.detect.parse_stream,
# the others hand their text, chunks or lines to one of these three.


def analyze_chunks(chunks: Iterable[str], store=None, **kwargs) -> AnalysisResult:
    """Text arriving in pieces cut anywhere (an upload read in blocks)."""
    started = time.perf_counter()
    result = analyze_evidence(parse_chunks(chunks), store, **kwargs)
    result.elapsed_ms = round((time.perf_counter() - started) * 1000, 3)
    return result


def analyze_lines(lines: Iterable[str], store=None, **kwargs) -> AnalysisResult:
    """Lines (a download's, with or without their newline), batched into chunks."""
    return analyze_chunks(line_chunks(lines), store, **kwargs)


def analyze_text(text: str, store=None, **kwargs) -> AnalysisResult:
    """A paste, in blocks of CHUNK characters as `perfkb analyze` reads a file (one 10 MB
    string at once is slower: the batch path's per-chunk scans run over all of it)."""
    return analyze_chunks(
        (text[i : i + CHUNK] for i in range(0, len(text), CHUNK)), store, **kwargs
    )


def preview_matches(entry: Entry, text: str) -> Match | None:
    """What a draft entry would say about this evidence, before it is saved."""
    result = analyze_text(text, entries=[entry])
    return next((m for m in result.matches if m.id == entry.id), None)
