"""Match parsed evidence against the knowledge base: which known incidents fit, why, how sure we
are, and what to run next. The scoring is documented in docs/matching.md; keep the two in step.

score = 0.80 * held + 0.10 * near + 0.10 * similarity + feedback, then x0.5 when the user's
version is outside the entry's affected range.
  held        noisy-or of the weights of signatures that held: 1 - prod(1 - w)
  near        best partial signature: weight x share of its conditions that held
  similarity  share of the entry's identifiers (IDF-weighted) present in the evidence, averaged
              with whoosh's BM25 over the identifiers field when a store is given
  feedback    +0.10 per "right cause" (max 2) for this evidence fingerprint; each "wrong cause"
              (max 2) halves the score, so two people saying "wrong" bury a confident match
confidence  high   score >= 0.60 and a specific signature held and no version demotion
            medium score >= 0.30, or a high candidate held back by the rules above
            low    everything else (related only)
"""

from __future__ import annotations

import hashlib
import io
import math
import re
import threading
import time
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from ingest.detect import parse_lines
from ingest.model import Block, Evidence
from kb.evaluate import evaluate, quick
from kb.models import Entry
from kb.platform import fill, translate
from kb.playbook import render_step, suggestions
from kb.results import AnalysisResult, Match, SignatureOutcome, SuggestedCommand
from kb.signatures import AllOf, Signature, TextCondition, walk

HIGH, MEDIUM = 0.60, 0.30
MIN_SCORE = 0.05
MAX_MATCHES = 10
MAX_COMMANDS = 12
W_HELD, W_NEAR, W_SIM = 0.80, 0.10, 0.10


@dataclass
class _Sig:
    entry: int
    sig: Signature
    sources: frozenset[str]
    required: frozenset[str]
    leaves: int
    probe: str | None = None  # lowercase literal the text must contain for the signature to hold


@dataclass
class _Tried:
    """A candidate signature's verdict on its best view; the outcome is built only for shown
    matches."""

    cs: _Sig
    held: bool
    view: tuple[list[Block], Mapping, str]


@dataclass
class _EntryScore:
    held: list[_Tried] = field(default_factory=list)
    tried: list[_Tried] = field(default_factory=list)
    near: float = 0.0


class Matcher:
    """Compiled form of a set of entries: signatures grouped by source, with the identifiers
    each requires, so analysis touches only signatures that can possibly hold."""

    def __init__(self, entries: list[Entry]) -> None:
        self.entries = list(entries)
        self.by_source: dict[str, list[_Sig]] = defaultdict(list)
        self.entry_terms: list[set[str]] = []
        df: dict[str, int] = defaultdict(int)
        probed: list[_Sig] = []
        for i, entry in enumerate(self.entries):
            terms = {t.lower() for t in entry.searchable_identifiers()}
            self.entry_terms.append(terms)
            for t in terms:
                df[t] += 1
            for sig in entry.signatures:
                compiled = _Sig(
                    entry=i,
                    sig=sig,
                    sources=frozenset(sig.sources),
                    required=frozenset(k.lower() for k in sig.required_identifiers()),
                    leaves=sum(1 for _ in walk(sig.when)),
                    probe=_probe(sig.when),
                )
                for source in sig.sources:
                    if source == "text" and compiled.probe is not None:
                        probed.append(compiled)
                    else:
                        self.by_source[source].append(compiled)
        self.position = {e.id: i for i, e in enumerate(self.entries)}
        n = max(1, len(self.entries))
        self.idf = {t: math.log(1 + n / c) for t, c in df.items()}
        self.entry_idf_total = [sum(self.idf[t] for t in terms) for terms in self.entry_terms]
        self.term_entries: dict[str, list[int]] = defaultdict(list)
        for i, terms in enumerate(self.entry_terms):
            for t in terms:
                self.term_entries[t].append(i)
        # Text signatures with a required literal, indexed by its rarest trigram: an analysis
        # looks only at those whose trigram occurs in the text, so a big KB of text signatures
        # costs a set intersection instead of one evaluation per signature.
        gram_df: dict[str, int] = defaultdict(int)
        for cs in probed:
            for g in _grams(cs.probe or ""):
                gram_df[g] += 1
        self.text_by_gram: dict[str, list[_Sig]] = defaultdict(list)
        self.entry_probed: dict[int, list[_Sig]] = defaultdict(list)
        for cs in probed:
            key = min(_grams(cs.probe or ""), key=lambda g: (gram_df[g], g))
            self.text_by_gram[key].append(cs)
            self.entry_probed[cs.entry].append(cs)

    # -- evaluation -----------------------------------------------------------------------------

    def _probed(self, full_text: str) -> list[_Sig]:
        """Text signatures whose required literal occurs in the text (checked exactly)."""
        if not self.text_by_gram:
            return []
        low = full_text.casefold()
        found = set(self.text_by_gram)
        if len(low) < 4 * len(found):
            found &= _grams(low)
        return [cs for g in found for cs in self.text_by_gram[g] if (cs.probe or "") in low]

    @staticmethod
    def _keys(evidence: Evidence) -> dict[str, set[str]]:
        keys_by_format: dict[str, set[str]] = defaultdict(set)
        for block in evidence.blocks:
            keys = keys_by_format[block.format]
            for value in block.facts.values():
                if isinstance(value, Mapping):
                    keys.update(k.lower() for k in value)
        return keys_by_format

    @staticmethod
    def _has_required(cs: _Sig, keys_by_format: Mapping[str, set[str]]) -> bool:
        if not cs.required:
            return True
        present = set().union(*(keys_by_format.get(s, set()) for s in cs.sources))
        return cs.required <= present

    def _candidates(self, evidence: Evidence, full_text: str = "") -> dict[int, list[_Sig]]:
        keys_by_format = self._keys(evidence)
        formats = set(keys_by_format) | {"text"}
        out: dict[int, list[_Sig]] = defaultdict(list)
        seen: set[int] = set()
        probed = self._probed(full_text)
        for fmt in [*formats, None]:
            for cs in self.by_source.get(fmt, ()) if fmt is not None else probed:
                if id(cs) in seen:
                    continue
                seen.add(id(cs))
                if self._has_required(cs, keys_by_format):
                    out[cs.entry].append(cs)
        return out

    def _skipped(self, i: int, es: _EntryScore, evidence: Evidence, full_text: str) -> list:
        """Entry i's text signatures the literal index left out (they cannot hold): evaluated
        for a shown match, so its explanation still lists them as tried."""
        tried = {id(t.cs) for t in es.tried}
        keys = self._keys(evidence)
        out = []
        for cs in self.entry_probed.get(i, ()):
            if id(cs) not in tried and self._has_required(cs, keys):
                found = self._eval_sig(cs, evidence, full_text)
                if found is not None:
                    out.append(found[0])
        return out

    @staticmethod
    def _views(
        cs: _Sig, evidence: Evidence, full_text: str
    ) -> list[tuple[list[Block], Mapping, str]]:
        blocks = [b for b in evidence.blocks if b.format in cs.sources]
        views: list[tuple[list[Block], Mapping, str]] = [([b], b.facts, b.text) for b in blocks]
        formats = {b.format for b in blocks}
        if len(blocks) > 1 and (len(formats) > 1 or "text" in cs.sources):
            merged: dict = {}
            for b in blocks:
                for name, value in b.facts.items():
                    if isinstance(value, Mapping):
                        table = merged.setdefault(name, {})
                        if isinstance(table, dict):
                            for k, v in value.items():
                                table[k] = max(table.get(k, v), v)
                    else:
                        merged.setdefault(name, value)
            views.append((blocks, merged, "\n".join(b.text for b in blocks)))
        if "text" in cs.sources:
            views.append(([], {}, full_text))
        return views

    def _eval_sig(self, cs: _Sig, evidence: Evidence, full_text: str) -> tuple[_Tried, int] | None:
        """The signature on its best view (held first, then most held leaves; the first view
        wins ties), and how many leaves held there."""
        best: tuple[tuple[bool, int], tuple[list[Block], Mapping, str]] | None = None
        for view in self._views(cs, evidence, full_text):
            held, n_held, _ = quick(cs.sig.when, view[1], view[2])
            rank = (held, n_held)
            if best is None or rank > best[0]:
                best = (rank, view)
        if best is None:
            return None
        return _Tried(cs=cs, held=best[0][0], view=best[1]), best[0][1]

    @staticmethod
    def _outcome(t: _Tried) -> SignatureOutcome:
        blocks, facts, text = t.view
        held, outcomes = evaluate(t.cs.sig.when, facts, text)
        return SignatureOutcome(
            name=t.cs.sig.name,
            weight=t.cs.sig.weight,
            held=held,
            specific=t.cs.sig.specific,
            block_formats=sorted({b.format for b in blocks}) or ["text"],
            conditions=outcomes,
        )

    def similarity(
        self, evidence: Evidence, bm25: Mapping[str, float] | None = None
    ) -> dict[int, float]:
        """IDF-weighted share of each entry's identifiers seen in the evidence; with a store,
        averaged with whoosh's BM25 over the same identifiers (`bm25`, entry id -> 0..1)."""
        gained: dict[int, float] = defaultdict(float)
        for t in evidence_terms(evidence):
            for i in self.term_entries.get(t, ()):
                gained[i] += self.idf[t]
        sims = {
            i: g / self.entry_idf_total[i] for i, g in gained.items() if self.entry_idf_total[i]
        }
        for entry_id, score in (bm25 or {}).items():
            i = self.position.get(entry_id)
            if i is not None:
                sims[i] = (sims.get(i, 0.0) + score) / 2
        return sims

    def match(
        self,
        evidence: Evidence,
        *,
        full_text: str = "",
        feedback: Mapping[str, Mapping[str, int]] | None = None,
        bm25: Mapping[str, float] | None = None,
    ) -> list[Match]:
        feedback = feedback or {}
        sims = self.similarity(evidence, bm25)
        scores: dict[int, _EntryScore] = defaultdict(_EntryScore)
        for i, sigs in self._candidates(evidence, full_text).items():
            es = scores[i]
            for cs in sigs:
                found = self._eval_sig(cs, evidence, full_text)
                if found is None:
                    continue
                tried, n_held = found
                es.tried.append(tried)
                if tried.held:
                    es.held.append(tried)
                else:
                    share = n_held / max(1, cs.leaves)
                    es.near = max(es.near, cs.sig.weight * share)
        versions = evidence.context.versions
        ranked: list[tuple[float, str, int, str, list[str], dict]] = []
        for i in set(scores) | set(sims):
            entry = self.entries[i]
            es = scores.get(i, _EntryScore())
            miss = 1.0
            for t in es.held:
                miss *= 1 - t.cs.sig.weight
            held_part = 1 - miss if es.held else 0.0
            sim = sims.get(i, 0.0)
            score = W_HELD * held_part + W_NEAR * es.near + W_SIM * sim
            votes = feedback.get(entry.id, {})
            score += 0.10 * min(votes.get("right", 0), 2)
            score *= 0.5 ** min(votes.get("wrong", 0), 2)
            verdicts, excluded = _version_verdicts(entry, versions)
            if excluded:
                score *= 0.5
            score = max(0.0, min(1.0, score))
            if score < MIN_SCORE and not es.held:
                continue
            specific = any(t.cs.sig.specific for t in es.held)
            if score >= HIGH and specific and not excluded:
                confidence = "high"
            elif score >= MEDIUM or (score >= HIGH and es.held):
                confidence = "medium"
            else:
                confidence = "low"
            ranked.append((round(score, 4), entry.id, i, confidence, verdicts, dict(votes)))
        ranked.sort(key=lambda r: (-r[0], r[1]))
        matches: list[Match] = []
        for score, entry_id, i, confidence, verdicts, votes in ranked[:MAX_MATCHES]:
            es = scores.get(i, _EntryScore())
            es.tried += self._skipped(i, es, evidence, full_text)
            outcomes = {id(t): self._outcome(t) for t in es.tried}
            evidence_lines: list[str] = []
            for t in es.held:
                for c in outcomes[id(t)].conditions:
                    if c.held and c.observed not in evidence_lines:
                        evidence_lines.append(c.observed)
            tried = [outcomes[id(t)] for t in es.tried]
            matches.append(
                Match(
                    id=entry_id,
                    title=self.entries[i].title,
                    score=score,
                    confidence=confidence,
                    evidence=evidence_lines[:10],
                    versions=verdicts,
                    signatures=sorted(tried, key=lambda o: (not o.held, -o.weight)),
                    related_only=not es.held,
                    feedback=votes,
                )
            )
        return matches


def _grams(text: str) -> set[str]:
    return {text[i : i + 3] for i in range(len(text) - 2)}


_REGEX_META = set("\\.^$*+?{}[]()|")
_PLAIN_ESCAPES = set("dDwWsSbBAznrtfv")
_FLAGS = re.compile(r"\(\?([^:)]*)").findall  # escapes that take no argument: a run just ends there


def _skip_class(regex: str, i: int) -> int:
    """Index just past the character class that opens at regex[i] == '['."""
    j = i + 1
    if regex[j : j + 1] == "^":
        j += 1
    if regex[j : j + 1] == "]":
        j += 1
    while j < len(regex) and regex[j] != "]":
        if regex[j] == "\\":
            j += 2
        elif regex.startswith("[:", j):
            end = regex.find(":]", j + 2)
            j = len(regex) if end < 0 else end + 2
        else:
            j += 1
    return j + 1


def _skip_group(regex: str, i: int) -> int:
    """Index just past the group that opens at regex[i] == '('."""
    depth, j = 0, i
    while j < len(regex):
        c = regex[j]
        if c == "\\":
            j += 2
            continue
        if c == "[":
            j = _skip_class(regex, j)
            continue
        depth += c == "("
        depth -= c == ")"
        j += 1
        if depth == 0:
            break
    return j


def _literal_runs(regex: str) -> list[str]:
    """Literal stretches every match of `regex` must contain, read conservatively: none when the
    pattern has a top-level alternation, flags or an escape with an argument (\\x41, \\p{L});
    groups and classes are skipped whole; a run ends at any other metacharacter and loses its
    last character before a quantifier that may skip it."""
    for flags in _FLAGS(regex):
        if set(flags) - set("imsU-"):  # x (verbose) changes what the pattern's text means
            return []
    runs: list[str] = []
    cur: list[str] = []
    i = 0
    while i < len(regex):
        c = regex[i]
        if c == "|":
            return []
        if c in "([":
            runs.append("".join(cur))
            cur = []
            i = _skip_group(regex, i) if c == "(" else _skip_class(regex, i)
            continue
        if c == "\\":
            nxt = regex[i + 1 : i + 2]
            if nxt.isalnum() or not nxt:
                if nxt not in _PLAIN_ESCAPES:
                    return []
                runs.append("".join(cur))
                cur, i = [], i + 2
                continue
            lit, i = nxt, i + 2  # an escaped metacharacter stands for itself
        elif c in _REGEX_META:
            runs.append("".join(cur))
            cur = []
            if c == "{":  # a counted repetition: its digits are not text
                end = regex.find("}", i)
                i = len(regex) if end < 0 else end + 1
            else:
                i += 1
            continue
        else:
            lit, i = c, i + 1
        if regex[i : i + 1] in ("?", "*", "{"):
            runs.append("".join(cur))  # this character may be absent
            cur = []
            continue
        cur.append(lit)
    runs.append("".join(cur))
    return [r for r in runs if r]


def _probe(cond) -> str | None:
    """The longest literal (3+ characters, lowercase) a text condition reached through all-nodes
    only must find in the text for the condition tree to hold; None when there is none."""
    best = ""
    if isinstance(cond, AllOf):
        for c in cond.all:
            p = _probe(c) or ""
            best = p if len(p) > len(best) else best
    elif isinstance(cond, TextCondition):
        if cond.text is not None:
            best = cond.text.lower()
        elif cond.regex is not None:
            best = max(_literal_runs(cond.regex), key=len, default="").lower()
    # ASCII only: lower-casing it is exact, and the text is case-folded, which never loses an
    # ASCII letter RE2's case folding would match (K for k, ſ for s)
    ok = len(best) >= 3 and best.isascii() and "\n" not in best
    return best if ok else None


def evidence_terms(evidence: Evidence) -> set[str]:
    """Names the evidence shows (syscalls, functions, events, layers), lowercased."""
    terms = {t.lower() for b in evidence.blocks for t in b.identifiers}
    for b in evidence.blocks:
        for value in b.facts.values():
            if isinstance(value, Mapping):
                terms.update(k.lower() for k in value)
    return terms


def _version_verdicts(entry: Entry, versions: list[str]) -> tuple[list[str], bool]:
    """Verdict lines per named version, and whether every named version is outside the range."""
    if not versions or not entry.affected_versions:
        return [], False
    lines: list[str] = []
    any_affected = False
    for rng in entry.affected_versions:
        if rng.product.lower() not in ("oracle", "oracle database", "rdbms"):
            continue
        for v in versions:
            affected, why = rng.verdict(v)
            any_affected |= affected
            if why not in lines:
                lines.append(why)
    if not lines:
        return [], False
    return lines, not any_affected


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


def next_commands(
    evidence: Evidence, matches: list[Match], entries: Mapping[str, Entry]
) -> list[SuggestedCommand]:
    platform = evidence.context.platform
    targets = [platform] if platform in ("solaris", "linux") else ["solaris", "linux"]
    out: list[SuggestedCommand] = []
    seen: set[str] = set()

    def add(command: str, plat: str, why: str, source: str) -> None:
        command = fill(command, evidence)
        if command in seen or len(out) >= MAX_COMMANDS:
            return
        seen.add(command)
        out.append(SuggestedCommand(command=command, platform=plat, why=why, source=source))

    strong = [m for m in matches if m.confidence in ("high", "medium") and not m.related_only][:3]
    for m in strong:
        entry = entries.get(m.id)
        if entry is None:
            continue
        for plat in targets:
            own = [c for c in entry.next_commands if c.platform in (plat, "any")]
            if not own:
                other = [c for c in entry.next_commands if c.platform not in (plat, "any")]
                own = [c.model_copy(update={"command": translate(c.command, plat)}) for c in other]
            for c in own:
                add(c.command, plat if c.platform != "any" else "any", c.why, entry.id)
    if not any(m.confidence == "high" for m in matches):
        for rule, block in suggestions(evidence.blocks):
            for step in rule.steps:
                for plat in targets:
                    command, why = render_step(step, rule, block, plat)
                    add(command, plat, why, "playbook")
    return out


# -- public API ---------------------------------------------------------------------------------

_cache_lock = threading.Lock()
_cache: dict[tuple[int, int], Matcher] = {}


def matcher_for(store) -> Matcher:
    """One compiled matcher per store state: rebuilt only when entries changed."""
    key = (id(store), store.data_version())
    with _cache_lock:
        m = _cache.get(key)
        if m is None:
            for k in [k for k in _cache if k[0] == id(store)]:
                del _cache[k]
            m = Matcher(store.list_entries())
            _cache[key] = m
        return m


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
    bm25 = store.similar(sorted(evidence_terms(evidence))) if store is not None else None
    matches = matcher.match(evidence, full_text=_full_text(evidence), feedback=feedback, bm25=bm25)
    wanted = {m.id for m in matches}
    by_id = {e.id: e for e in matcher.entries if e.id in wanted}
    commands = next_commands(evidence, matches, by_id)
    return AnalysisResult(
        blocks=evidence.blocks,
        context=evidence.context,
        matches=matches,
        next_commands=commands,
        platform=evidence.context.platform,
        fingerprint=fp,
        elapsed_ms=round((time.perf_counter() - started) * 1000, 3),
    )


def analyze_lines(lines: Iterable[str], store=None, **kwargs) -> AnalysisResult:
    started = time.perf_counter()
    result = analyze_evidence(parse_lines(lines), store, **kwargs)
    result.elapsed_ms = round((time.perf_counter() - started) * 1000, 3)
    return result


def analyze_text(text: str, store=None, **kwargs) -> AnalysisResult:
    return analyze_lines(io.StringIO(text), store, **kwargs)


def preview_matches(entry: Entry, text: str) -> Match | None:
    """What a draft entry would say about this evidence, before it is saved."""
    result = analyze_text(text, entries=[entry])
    return next((m for m in result.matches if m.id == entry.id), None)


def propose_signature(evidence: Evidence) -> list[Signature]:
    """Signatures a new entry could start from (see kb/proposal.py)."""
    from kb.proposal import propose_signatures

    return propose_signatures(evidence)
