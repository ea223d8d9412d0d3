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

Every signature is evaluated at once by kb.sigindex (arrays, not one tree walk per signature),
the three score parts are computed for every entry as vectors, and only the entries that can
still reach the top ten get the exact score above, their version verdicts and their
explanations: so a KB of 10,000 entries costs about what one of 100 does.
"""

from __future__ import annotations

import json
import math
import mmap
import os
import threading
import weakref
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ingest.model import Block, Evidence
from kb.bm25 import IdentifierStats
from kb.bm25 import similar as _bm25_similar
from kb.evaluate import evaluate, quick
from kb.index_docs import entry_keys, query_keys
from kb.literals import grams, probe, rarest_grams
from kb.models import Entry
from kb.results import ConditionOutcome, Match, SignatureOutcome
from kb.sigindex import HELD, SignatureIndex, View
from kb.sigindex import select as _select
from kb.signatures import Signature, walk

HIGH, MEDIUM = 0.60, 0.30
MIN_SCORE = 0.05
MAX_MATCHES = 10
W_HELD, W_NEAR, W_SIM = 0.80, 0.10, 0.10
# Vector scores may differ from the exact ones in the last bits (other summation order):
# an entry is passed over only when even this much more could not bring it into the top ten.
_SLACK = 1e-9


def combine(held_part, near, sim):
    """The score before feedback and versions, from its three parts (numbers or arrays alike):
    the vector upper bounds and the exact scores of the shown entries are made by this one
    formula (the module docstring)."""
    return W_HELD * held_part + W_NEAR * near + W_SIM * sim


def partial_credit(weight, n_held, leaves):
    """A signature that did not hold counts by its weight times the share of leaves that held."""
    return weight * (n_held / leaves)


def with_feedback(score: float, votes: Mapping[str, int]) -> float:
    """+0.10 per 'right cause' (two at most); each 'wrong cause' (two at most) halves it."""
    score += 0.10 * min(votes.get("right", 0), 2)
    return score * 0.5 ** min(votes.get("wrong", 0), 2)


@dataclass
class _Sig:
    entry: int
    gid: int  # position in the signature index
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
    # evaluate()'s leaf outcomes on `view` when choosing the view already built them
    outcomes: list[ConditionOutcome] | None = None


@dataclass
class _EntryScore:
    held: list[_Tried] = field(default_factory=list)
    tried: list[_Tried] = field(default_factory=list)


@dataclass
class _Scores:
    """One analysis's verdicts: what the exact scores and the explanations read."""

    tried: np.ndarray  # per signature: tried (eligible, and a view applied)
    best: np.ndarray  # per signature: HELD if held on its best view, plus leaves held there
    order: dict[str, int]  # evidence term -> its place in the one iteration order used
    bm25: Mapping[str, float]
    keys: Mapping[str, set[str]]  # identifiers per evidence format, lowercased

    def verdict(self, g: int) -> tuple[bool, int]:
        rank = int(self.best[g])
        return (True, rank - HELD) if rank >= HELD else (False, rank)


def _merge_facts(blocks: list[Block]) -> dict:
    """Facts of several blocks as one view: tables merged key by key (larger value wins)."""
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
    return merged


class Matcher:
    """Compiled form of a set of entries: every signature in a SignatureIndex, identifiers
    indexed for similarity, so analysis costs little more with 10,000 entries than with 100."""

    def __init__(self, entries: list[Entry]) -> None:
        self.entries = list(entries)
        self.unreadable: dict[str, str] = {}  # rows left out (saved with a compiled KB)
        self.sigs: list[_Sig] = []
        self.entry_sigs: list[range] = []
        self.entry_terms: list[set[str]] = []
        df: dict[str, int] = defaultdict(int)
        for i, entry in enumerate(self.entries):
            terms = {t.lower() for t in entry.searchable_identifiers()}
            self.entry_terms.append(terms)
            for t in terms:
                df[t] += 1
            start = len(self.sigs)
            for sig in entry.signatures:
                self.sigs.append(
                    _Sig(
                        entry=i,
                        gid=len(self.sigs),
                        sig=sig,
                        sources=frozenset(sig.sources),
                        required=frozenset(k.lower() for k in sig.required_identifiers()),
                        leaves=sum(1 for _ in walk(sig.when)),
                        probe=probe(sig.when),
                    )
                )
            self.entry_sigs.append(range(start, len(self.sigs)))
        self.ids = [e.id for e in self.entries]
        self.position = {e: i for i, e in enumerate(self.ids)}
        n = max(1, len(self.entries))
        self.idf = {t: math.log(1 + n / c) for t, c in df.items()}
        self.entry_idf_total = np.array(
            [sum(self.idf[t] for t in terms) for terms in self.entry_terms], dtype=float
        )
        term_entries: dict[str, list[int]] = defaultdict(list)
        for i, terms in enumerate(self.entry_terms):
            for t in terms:
                term_entries[t].append(i)
        self.term_entries = {t: np.array(ix, dtype=np.int64) for t, ix in term_entries.items()}
        # the same as a CSR over a vocabulary: what is saved, and what an update recounts
        self.vocab = sorted(self.idf)
        term_ix = {t: k for k, t in enumerate(self.vocab)}
        self.term_flat = np.array(
            [term_ix[t] for terms in self.entry_terms for t in sorted(terms)], dtype=np.int64
        )
        self.term_ptr = np.cumsum([0] + [len(t) for t in self.entry_terms], dtype=np.int64)
        # the statistics of the BM25 similarity (kb.bm25): the index's answer without the index
        self.bm25 = IdentifierStats.build([entry_keys(e) for e in self.entries])
        self.bm25_layers: list[tuple[IdentifierStats, int]] = [(self.bm25, 0)]
        self.bm25_live: np.ndarray | None = None
        self.sig_dead: np.ndarray | None = None  # signatures of entries an update replaced
        self.sig_specific = np.array([cs.sig.specific for cs in self.sigs], dtype=bool)
        self.sig_probed = np.array(
            [("text" in cs.sources and cs.probe is not None) for cs in self.sigs], dtype=bool
        )
        self.index = SignatureIndex([cs.sig for cs in self.sigs])
        self.sig_entry = np.array([cs.entry for cs in self.sigs], dtype=np.int64)
        self.sig_weight = np.array([cs.sig.weight for cs in self.sigs], dtype=float)
        self.sig_leaves = np.array([max(1, cs.leaves) for cs in self.sigs], dtype=float)
        with np.errstate(divide="ignore"):
            self.sig_log_miss = np.log1p(-self.sig_weight)  # weight 1 -> -inf -> held part 1
        self.format_mask = {
            fmt: _mask(len(self.sigs), gids) for fmt, gids in self.index.by_format.items()
        }
        # Which signatures could be tried at all, as before the index: one of their sources is in
        # the evidence (text only when the literal it requires is there) and the identifiers they
        # require are present. Required keys per source set, as flat arrays for one reduction.
        # Required keys per signature (CSR over signature positions), and which source set it
        # reads them from: checked only for signatures some view applied to.
        self.req_ids: dict[str, int] = {}
        self.req_sets: list[frozenset[str]] = sorted({cs.sources for cs in self.sigs}, key=sorted)
        set_of = {sources: k for k, sources in enumerate(self.req_sets)}
        self.sig_set = np.array([set_of[cs.sources] for cs in self.sigs], dtype=np.int64)
        self.sig_req_len = np.array([len(cs.required) for cs in self.sigs], dtype=np.int64)
        self.sig_req_ptr = np.concatenate([[0], np.cumsum(self.sig_req_len)]).astype(np.int64)
        self.sig_req_flat = np.array(
            [
                self.req_ids.setdefault(k, len(self.req_ids))
                for cs in self.sigs
                for k in sorted(cs.required)
            ],
            dtype=np.int64,
        )
        self.text_free = np.array(
            [("text" in cs.sources and cs.probe is None) for cs in self.sigs], dtype=bool
        )
        # Text signatures with a required literal, indexed by its rarest trigram: only those whose
        # trigram occurs in the text can be tried.
        probed = [cs for cs in self.sigs if "text" in cs.sources and cs.probe is not None]
        by_gram: dict[str, dict[str, list[int]]] = defaultdict(lambda: defaultdict(list))
        for cs, key in zip(probed, rarest_grams([cs.probe for cs in probed]), strict=True):
            by_gram[key or ""][cs.probe or ""].append(cs.gid)
        self.text_by_gram: dict[str, dict[str, np.ndarray]] = {
            g: {lit: np.array(gids, dtype=np.int64) for lit, gids in lits.items()}
            for g, lits in by_gram.items()
        }

    # -- which signatures are tried, and their verdicts ------------------------------------

    def _probed_gids(self, full_text: str) -> list[np.ndarray]:
        """Text signatures whose required literal occurs in the text (checked exactly, once per
        distinct literal), as arrays of signature positions."""
        if not self.text_by_gram:
            return []
        low = full_text.casefold()
        found = set(self.text_by_gram)
        if len(low) < 4 * len(found):
            found &= grams(low)
        return [
            gids for g in found for literal, gids in self.text_by_gram[g].items() if literal in low
        ]

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

    def _eligible(
        self, seen: np.ndarray, keys_by_format: Mapping[str, set[str]], full_text: str
    ) -> np.ndarray:
        """Which of the `seen` signatures may be tried: a source of theirs is in the evidence (a
        text source counts when the literal they require occurs) and the identifiers they
        require are there."""
        ok = self.text_free[seen]
        for fmt in keys_by_format:
            mask = self.format_mask.get(fmt)
            if mask is not None:
                ok |= mask[seen]
        probed = self._probed_gids(full_text)
        if probed:
            hit = np.zeros(len(self.sigs), dtype=bool)
            for gids in probed:
                hit[gids] = True
            ok |= hit[seen]
        need = self.sig_req_len[seen] > 0
        sigs = seen[need]
        if len(sigs):
            req_of = {
                fmt: [j for j in (self.req_ids.get(k) for k in keys) if j is not None]
                for fmt, keys in keys_by_format.items()
            }
            present = np.zeros((len(self.req_sets), len(self.req_ids)), dtype=np.int64)
            for k, sources in enumerate(self.req_sets):
                for fmt in sources:
                    present[k, req_of.get(fmt, [])] = 1
            lens = self.sig_req_len[sigs]
            pos = _select(self.sig_req_ptr, sigs)
            found = present[np.repeat(self.sig_set[sigs], lens), self.sig_req_flat[pos]]
            ok[need] &= np.add.reduceat(found, np.cumsum(lens) - lens) == lens
        return ok

    def _views(self, evidence: Evidence, full_text: str) -> list[tuple[tuple, list[int], View]]:
        """Every view an analysis evaluates, with the signatures each applies to: each block
        alone, the blocks of one source set together, and the whole text."""
        index = self.index
        out: list[tuple[tuple, list[int], View]] = []
        blocks = evidence.blocks
        for b in blocks:
            members = index.by_format.get(b.format)
            if members:
                out.append((("format", b.format), members, index.view(b.facts, b.text)))
        for sources, members in index.by_set.items():
            chosen = [b for b in blocks if b.format in sources]
            if len(chosen) > 1 and (len({b.format for b in chosen}) > 1 or "text" in sources):
                view = index.view(_merge_facts(chosen), "\n".join(b.text for b in chosen))
                out.append((("set", sources), members, view))
        members = index.by_format.get("text")
        if members:
            out.append((("format", "text"), members, index.view({}, full_text)))
        return out

    def _tried(
        self, evidence: Evidence, full_text: str, keys: Mapping[str, set[str]]
    ) -> tuple[np.ndarray, np.ndarray]:
        """(positions of the signatures tried, in order; every signature's best rank)."""
        best = self.index.evaluate(self._views(evidence, full_text))
        if self.sig_dead is not None:
            best[self.sig_dead] = -1  # an older version of an entry an update replaced
        seen = np.flatnonzero(best >= 0)
        return seen[self._eligible(seen, keys, full_text)], best

    def verdicts(self, evidence: Evidence, full_text: str) -> dict[int, tuple[bool, int]]:
        """Signature position -> (held, leaves held) on its best view, for each one tried."""
        tried, best = self._tried(evidence, full_text, self._keys(evidence))
        s = _Scores(tried=tried, best=best, order={}, bm25={}, keys={})
        return {g: s.verdict(g) for g in tried.tolist()}

    # -- explanations for the shown matches ---------------------------------------------------

    def _skipped(
        self, i: int, es: _EntryScore, evidence: Evidence, full_text: str, keys: Mapping
    ) -> list:
        """Entry i's text signatures the literal index left out (they cannot hold): evaluated
        for a shown match, so its explanation still lists them as tried."""
        tried = {t.cs.gid for t in es.tried}
        out = []
        for g in self.entry_sigs[i]:
            if not self.sig_probed[g] or g in tried:
                continue
            cs = self.sigs[g]
            if self._has_required(cs, keys):
                found = self._eval_sig(cs, evidence, full_text)
                if found is not None:
                    out.append(found[0])
        return out

    @staticmethod
    def _sig_views(
        cs: _Sig, evidence: Evidence, full_text: str
    ) -> list[tuple[list[Block], Mapping, str]]:
        blocks = [b for b in evidence.blocks if b.format in cs.sources]
        views: list[tuple[list[Block], Mapping, str]] = [([b], b.facts, b.text) for b in blocks]
        formats = {b.format for b in blocks}
        if len(blocks) > 1 and (len(formats) > 1 or "text" in cs.sources):
            views.append((blocks, _merge_facts(blocks), "\n".join(b.text for b in blocks)))
        if "text" in cs.sources:
            views.append(([], {}, full_text))
        return views

    def _eval_sig(
        self,
        cs: _Sig,
        evidence: Evidence,
        full_text: str,
        known: tuple[bool, int] | None = None,
    ) -> tuple[_Tried, int] | None:
        """The signature on its best view (held first, then most held leaves; the first view
        wins ties), and how many leaves held there: the view its explanation is built from.
        With the index's verdict `known`, the first view reaching it is the one.

        The first view is evaluated in full (evaluate(), whose leaf outcomes the explanation
        needs) rather than only ranked (quick()): it is the chosen view most of the time, and
        its outcomes are then kept instead of being evaluated a second time by _outcome. The
        rank is the same either way (evaluate's held leaves, negation applied, are quick's
        count: tests/test_matcher_prefilter.py). The outcomes are made here, per analysis,
        and never cached: nothing is shared between two analyses."""
        views = self._sig_views(cs, evidence, full_text)
        if known is not None and len(views) == 1:
            return _Tried(cs=cs, held=known[0], view=views[0]), known[1]
        best: tuple[tuple[bool, int], tuple[list[Block], Mapping, str]] | None = None
        first: list[ConditionOutcome] | None = None
        for k, view in enumerate(views):
            if k == 0:
                held, first = evaluate(cs.sig.when, view[1], view[2])
                n_held = sum(1 for o in first if o.held)
            else:
                held, n_held, _ = quick(cs.sig.when, view[1], view[2])
            rank = (held, n_held)
            if best is None or rank > best[0]:
                best = (rank, view)
            if rank == known:
                break
        if best is None:
            return None
        kept = first if best[1] is views[0] else None
        return _Tried(cs=cs, held=best[0][0], view=best[1], outcomes=kept), best[0][1]

    @staticmethod
    def _outcome(t: _Tried) -> SignatureOutcome:
        blocks, facts, text = t.view
        if t.outcomes is not None:
            held, outcomes = t.held, t.outcomes
        else:
            held, outcomes = evaluate(t.cs.sig.when, facts, text)
        return SignatureOutcome(
            name=t.cs.sig.name,
            weight=t.cs.sig.weight,
            held=held,
            specific=t.cs.sig.specific,
            block_formats=sorted({b.format for b in blocks}) or ["text"],
            conditions=outcomes,
        )

    def _identifiers(self, i: int) -> tuple[tuple[str, str], ...]:
        """Entry i's searchable identifiers with their lowercase forms, for the mentions of a
        shown match: walked once per entry and kept (they depend on the entry alone, which this
        matcher never changes: an edit makes a new matcher), since walking every signature
        tree of ten entries was a tenth of explaining them. A saved matcher is made without
        __init__, hence the lazy dict."""
        cache = self.__dict__.get("_ident_cache")
        if cache is None:
            cache = self.__dict__.setdefault("_ident_cache", {})
        found = cache.get(i)
        if found is None:
            found = tuple((k, k.lower()) for k in self.entries[i].searchable_identifiers())
            cache[i] = found
        return found

    # -- scoring ------------------------------------------------------------------------------

    def _vector_scores(
        self,
        tried: np.ndarray,
        best: np.ndarray,
        terms: Iterable[str],
        feedback: Mapping[str, Mapping[str, int]],
        bm25: Mapping[str, float],
    ) -> tuple[np.ndarray, np.ndarray]:
        """(entries that may rank, their scores before version demotion), best first: every
        entry a tried signature, an evidence identifier or BM25 points at, scored as vectors."""
        ranks = best[tried]
        held = ranks >= HELD
        sig_entry = self.sig_entry[tried]
        hits = [self.term_entries[t] for t in terms if t in self.term_entries]
        idf = [self.idf[t] for t in terms if t in self.term_entries]
        bm_ix = [self.position[e] for e in bm25 if e in self.position]
        bm_score = [bm25[e] for e in bm25 if e in self.position]
        marked = np.zeros(len(self.entries), dtype=bool)
        for ix in (sig_entry, *hits, bm_ix):
            marked[ix] = True
        pool = np.flatnonzero(marked)
        size = len(pool)
        place = np.zeros(len(self.entries), dtype=np.int64)  # entry -> its position in pool
        place[pool] = np.arange(size)
        at = place[sig_entry]
        log_miss = np.bincount(at[held], weights=self.sig_log_miss[tried[held]], minlength=size)
        any_held = np.zeros(size, dtype=bool)
        any_held[at[held]] = True
        held_part = np.where(any_held, 1.0 - np.exp(log_miss), 0.0)
        near = np.zeros(size)
        partial = tried[~held]
        credit = partial_credit(self.sig_weight[partial], ranks[~held], self.sig_leaves[partial])
        np.maximum.at(near, at[~held], credit)
        gained = np.zeros(size)
        if hits:
            lens = [len(h) for h in hits]
            gained = np.bincount(
                place[np.concatenate(hits)],
                weights=np.repeat(idf, lens),
                minlength=size,
            )
        total = self.entry_idf_total[pool]
        sim = np.divide(gained, total, out=np.zeros(size), where=total > 0)
        if bm_ix:
            at_bm = place[bm_ix]
            sim[at_bm] = (sim[at_bm] + np.array(bm_score)) / 2
        score = combine(held_part, near, sim)
        for entry_id, votes in feedback.items():
            i = self.position.get(entry_id)
            if i is not None and marked[i]:
                k = int(place[i])
                score[k] = with_feedback(float(score[k]), votes)
        score = np.clip(score, 0.0, 1.0)
        # an entry with nothing held is shown only from MIN_SCORE up, and exact <= vector score
        keep = any_held | (score >= MIN_SCORE - _SLACK)
        pool, score = pool[keep], score[keep]
        order = np.argsort(-score, kind="stable")
        return pool[order], score[order]

    def _exact(self, i: int, s: _Scores) -> tuple[float, bool, bool]:
        """(score before feedback and versions, any signature held, a specific one held), with
        the same operations in the same order as the formula in the module docstring."""
        miss, near, any_held, specific = 1.0, 0.0, False, False
        for g in self.entry_sigs[i]:
            if not s.tried[g]:
                continue
            weight = float(self.sig_weight[g])
            held, n_held = s.verdict(g)
            if held:
                miss *= 1 - weight
                any_held = True
                specific |= bool(self.sig_specific[g])
            else:
                near = max(near, partial_credit(weight, n_held, int(self.sig_leaves[g])))
        common = sorted((s.order[t], t) for t in self.entry_terms[i] if t in s.order)
        sim = None
        if common and self.entry_idf_total[i]:
            gained = 0.0
            for _, t in common:
                gained += self.idf[t]
            sim = gained / float(self.entry_idf_total[i])
        entry_id = self.ids[i]
        if entry_id in s.bm25:
            sim = ((sim or 0.0) + s.bm25[entry_id]) / 2
        held_part = 1 - miss if any_held else 0.0
        return combine(held_part, near, sim or 0.0), any_held, specific

    def match(
        self,
        evidence: Evidence,
        *,
        full_text: str = "",
        feedback: Mapping[str, Mapping[str, int]] | None = None,
        bm25: Mapping[str, float] | None = None,
    ) -> list[Match]:
        if not self.entries:
            return []
        feedback = feedback or {}
        bm25 = bm25 or {}
        terms = list(evidence_terms(evidence))
        keys = self._keys(evidence)
        tried, best = self._tried(evidence, full_text, keys)
        tried_mask = np.zeros(len(self.sigs), dtype=bool)
        tried_mask[tried] = True
        s = _Scores(
            tried=tried_mask,
            best=best,
            order={t: k for k, t in enumerate(terms)},
            bm25=bm25,
            keys=keys,
        )
        candidates, upper = self._vector_scores(tried, best, terms, feedback, bm25)
        versions = evidence.context.versions
        ranked: list[tuple[float, str, int, str, list[str], dict, bool]] = []
        floor, floor_id = -1.0, ""  # the tenth of the top ten so far
        for i, top in zip(candidates.tolist(), upper.tolist(), strict=True):
            entry_id = self.ids[i]
            if len(ranked) >= MAX_MATCHES:
                bound = round(top + _SLACK, 4)
                if bound < floor:
                    break  # no entry further down can reach the top ten
                if bound == floor and entry_id > floor_id:
                    continue  # at best a tie with the tenth, which wins on its id
            score, any_held, specific = self._exact(i, s)
            votes = feedback.get(entry_id, {})
            score = with_feedback(score, votes)
            # the entry itself is read only when a version must be judged (a saved KB reads
            # it from SQLite by id)
            verdict_lines, excluded = (
                _version_verdicts(self.entries[i], versions) if versions else ([], False)
            )
            if excluded:
                score *= 0.5
            score = max(0.0, min(1.0, score))
            if score < MIN_SCORE and not any_held:
                continue
            if score >= HIGH and specific and not excluded:
                confidence = "high"
            elif score >= MEDIUM or (score >= HIGH and any_held):
                confidence = "medium"
            else:
                confidence = "low"
            ranked.append(
                (round(score, 4), entry_id, i, confidence, verdict_lines, dict(votes), excluded)
            )
            if len(ranked) >= MAX_MATCHES:
                ranked.sort(key=lambda r: (-r[0], r[1]))
                del ranked[MAX_MATCHES:]
                floor, floor_id = ranked[-1][0], ranked[-1][1]
        ranked.sort(key=lambda r: (-r[0], r[1]))
        return [self._shown(r, s, evidence, full_text) for r in ranked[:MAX_MATCHES]]

    def _shown(self, r: tuple, s: _Scores, evidence: Evidence, full_text: str) -> Match:
        """A ranked entry with its explanation: each tried signature on its best view."""
        score, entry_id, i, confidence, verdict_lines, votes, excluded = r
        es = _EntryScore()
        for g in self.entry_sigs[i]:
            if s.tried[g]:
                found = self._eval_sig(self.sigs[g], evidence, full_text, s.verdict(g))
                if found is not None:
                    es.tried.append(found[0])
                    if found[0].held:
                        es.held.append(found[0])
        es.tried += self._skipped(i, es, evidence, full_text, s.keys)
        outcomes = {id(t): self._outcome(t) for t in es.tried}
        evidence_lines: list[str] = []
        for t in es.held:
            for c in outcomes[id(t)].conditions:
                if c.held and c.observed not in evidence_lines:
                    evidence_lines.append(c.observed)
        tried = [outcomes[id(t)] for t in es.tried]
        mentions = [k for k, low in self._identifiers(i) if low in s.order][:6]
        return explained(
            Match(
                id=entry_id,
                title=self.entries[i].title,
                score=score,
                confidence=confidence,
                evidence=evidence_lines[:10],
                versions=verdict_lines,
                signatures=sorted(tried, key=lambda o: (not o.held, -o.weight)),
                related_only=not es.held,
                feedback=votes,
                mentions=mentions,
            ),
            demoted=excluded,
        )

    # -- a compiled KB saved beside the database ----------------------------------------------

    _ARRAYS = [
        "sig_entry",
        "sig_weight",
        "sig_leaves",
        "sig_log_miss",
        "sig_specific",
        "sig_probed",
        "sig_set",
        "sig_req_len",
        "sig_req_ptr",
        "sig_req_flat",
        "text_free",
        "entry_idf_total",
    ]

    def save(
        self,
        path: Path,
        key: str,
        revs: Sequence[int],
        checksums: Sequence[str | None] = (),
        store_id: str = "",
    ) -> None:
        """Write this matcher (every program compiled so far, call index.compile_all first) to
        `path` for the KB state `key`, entry i being revision revs[i] of its id. numpy arrays
        and one JSON document in an .npz, no pickle; written beside and renamed into place, so
        a reader sees the old file or the new one."""
        arrays = {f"m_{name}": getattr(self, name) for name in self._ARRAYS}
        index_arrays, index_doc = self.index.parts()
        arrays.update({f"i_{name}": a for name, a in index_arrays.items()})
        if self.sig_dead is not None:
            raise ValueError("an updated matcher is not saved: build one from the entries")
        vocab = self.vocab
        arrays["m_entry_terms"] = self.term_flat
        arrays["m_entry_terms_ptr"] = self.term_ptr
        arrays["m_idf"] = np.array([self.idf[t] for t in vocab], dtype=float)
        arrays["m_entry_sig_ptr"] = np.array(
            [0] + [r.stop for r in self.entry_sigs], dtype=np.int64
        )
        bm25_arrays, bm25_vocab = self.bm25.parts()
        arrays.update({f"b_{name}": a for name, a in bm25_arrays.items()})
        # ids, revisions and checksums as arrays, not JSON: decoding them (and the rest of the
        # header) was ~60 ms of every `perfkb analyze` at 50,000 entries (_SavedDoc)
        if any("\n" in i for i in self.ids):
            raise ValueError("an entry id holds a newline")
        arrays["m_ids"] = np.frombuffer("\n".join(self.ids).encode(), dtype=np.uint8)
        arrays["m_revs"] = np.array([int(r) for r in revs], dtype=np.int64)
        sums = [(c or "").encode() for c in (list(checksums) or [None] * len(self.ids))]
        arrays["m_checksums"] = np.array(sums, dtype=f"S{max(map(len, sums), default=1) or 1}")
        doc = {
            "format": SAVED_FORMAT,
            "key": key,
            "store_id": store_id,
            "vocab": vocab,
            "bm25_vocab": bm25_vocab,
            "req_ids": sorted(self.req_ids, key=self.req_ids.__getitem__),
            "req_sets": [sorted(x) for x in self.req_sets],
            "text_by_gram": {
                g: {lit: gids.tolist() for lit, gids in lits.items()}
                for g, lits in self.text_by_gram.items()
            },
            "index": index_doc,
            "unreadable": self.unreadable,
        }
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
        try:
            with open(tmp, "wb") as f:
                _write_arrays(f, arrays, doc)
            os.replace(tmp, path)
        finally:
            with suppress(FileNotFoundError):
                tmp.unlink()

    @classmethod
    def load(
        cls, path: Path, key: str | None, fetch: Callable[[str, int], Entry]
    ) -> Matcher | None:
        """The matcher `save` wrote for state `key` (None: whatever state it was saved for, its
        `saved` document says which); None if the file is absent, for another state, or
        unreadable in any way (the caller rebuilds it). Entries are not read: `fetch`
        (id, rev) reads one when a shown match is explained or a version judged."""
        try:
            arrays, doc = _read_arrays(path)
            if doc.get("format") != SAVED_FORMAT or (key is not None and doc.get("key") != key):
                return None
            return cls._from_saved(arrays, doc, fetch)
        except Exception:  # noqa: BLE001 - our own file, but a damaged one is only a cache miss
            return None

    @classmethod
    def _from_saved(cls, arrays: dict, doc: dict, fetch: Callable[[str, int], Entry]) -> Matcher:
        m = cls.__new__(cls)
        for name in cls._ARRAYS:
            setattr(m, name, arrays[f"m_{name}"])
        doc = _SavedDoc(doc, arrays)
        ids, revs = doc["ids"], arrays["m_revs"]
        if len(ids) != len(revs) or len(m.entry_idf_total) != len(ids):
            raise ValueError("saved KB does not add up")
        m.ids = ids
        m.unreadable = dict(doc.get("unreadable", {}))
        m.position = {e: i for i, e in enumerate(ids)}
        m.entries = _Lazy(len(ids), lambda i: fetch(ids[i], int(revs[i])))
        ptr = arrays["m_entry_sig_ptr"].tolist()
        m.entry_sigs = [range(a, b) for a, b in zip(ptr[:-1], ptr[1:], strict=True)]
        vocab = doc["vocab"]
        m.idf = dict(zip(vocab, arrays["m_idf"].tolist(), strict=True))
        m.vocab, m.term_flat, m.term_ptr = (
            vocab,
            arrays["m_entry_terms"],
            arrays["m_entry_terms_ptr"],
        )
        m.entry_terms = _csr_terms(m.term_flat, m.term_ptr, vocab)
        m.term_entries = _term_entries(m.term_flat, m.term_ptr, vocab, None)
        m.sig_dead = None
        m.bm25 = IdentifierStats.from_parts(
            {k[2:]: a for k, a in arrays.items() if k.startswith("b_")}, doc["bm25_vocab"]
        )
        if len(m.bm25.exact) != len(ids):
            raise ValueError("saved KB does not add up")
        m.bm25_layers, m.bm25_live = [(m.bm25, 0)], None
        m.saved = doc
        m.req_ids = {k: j for j, k in enumerate(doc["req_ids"])}
        m.req_sets = [frozenset(x) for x in doc["req_sets"]]
        m.text_by_gram = {
            g: {lit: np.array(gids, dtype=np.int64) for lit, gids in lits.items()}
            for g, lits in doc["text_by_gram"].items()
        }
        me = weakref.ref(m)  # no cycle through the lazy lists: frozen matchers must be freed
        m.sigs = _Lazy(len(m.sig_entry), lambda g: me()._saved_sig(g))
        index_arrays = {k[2:]: a for k, a in arrays.items() if k.startswith("i_")}
        m.index = SignatureIndex.from_parts(
            _Lazy(len(m.sig_entry), lambda g: me().sigs[g].sig), index_arrays, doc["index"]
        )
        m.format_mask = {
            fmt: _mask(len(m.sig_entry), gids) for fmt, gids in m.index.by_format.items()
        }
        return m

    def updated(self, changed: Sequence[Entry], removed: Iterable[str]) -> Matcher:
        """This matcher with `changed` entries added or replaced and `removed` ids gone, as a
        new matcher; only the changed entries are compiled (a small matcher of their own,
        evaluated beside this one's programs, which are shared, not copied). The entries they
        replace stay in the arrays, marked dead: none of their signatures is tried, no term or
        BM25 hit reaches them. Document frequencies, idf and the per-entry idf totals are
        recounted over the live entries (vectorised), so the similarity part is the one a
        rebuild would compute (up to the order of a float sum).

        Why: an edit to a 10,000-entry KB rebuilt the whole matcher, 4 s before the next
        analysis; layered on the saved one it costs milliseconds. Updates always layer on the
        original (saved) base: a second update recompiles every entry changed since it."""
        base = self._base if getattr(self, "_base", None) is not None else self
        delta = dict(getattr(self, "_delta", {}))
        gone = set(getattr(self, "_gone", set()))
        for entry_id in removed:
            delta.pop(entry_id, None)
            if entry_id in base.position:
                gone.add(entry_id)
        for entry in changed:
            delta[entry.id] = entry
            gone.discard(entry.id)
        return _layered(base, delta, gone)

    def similar(self, identifiers: Iterable[str], *, limit: int = 50) -> dict[str, float]:
        """entry id -> 0..1 BM25 similarity of its identifiers to these: what
        `SearchIndex.similar` answers for a freshly built index of these entries, computed from
        the statistics compiled here (kb.bm25), so an analysis neither imports whoosh nor opens
        the index."""
        terms = query_keys(identifiers)
        return _bm25_similar(self.bm25_layers, self.bm25_live, self.ids, terms, limit=limit)

    def _saved_sig(self, g: int) -> _Sig:
        """Signature g of a saved matcher, from its entry (read by id when first needed)."""
        i = int(self.sig_entry[g])
        sig = self.entries[i].signatures[g - self.entry_sigs[i].start]
        return _Sig(
            entry=i,
            gid=g,
            sig=sig,
            sources=frozenset(sig.sources),
            required=frozenset(k.lower() for k in sig.required_identifiers()),
            leaves=sum(1 for _ in walk(sig.when)),
            probe=probe(sig.when),
        )


def _mask(n: int, gids) -> np.ndarray:
    """n booleans, True at gids: linear (np.isin over an arange sorts both, per format)."""
    out = np.zeros(n, dtype=bool)
    out[np.asarray(gids, dtype=np.int64)] = True
    return out


def _csr_terms(flat: np.ndarray, ptr: np.ndarray, vocab: list[str]) -> _Lazy:
    return _Lazy(len(ptr) - 1, lambda i: {vocab[t] for t in flat[ptr[i] : ptr[i + 1]].tolist()})


def _term_entries(
    flat: np.ndarray, ptr: np.ndarray, vocab: list[str], live: np.ndarray | None
) -> dict[str, np.ndarray]:
    """term -> the (live) entries naming it, ascending, from the entry -> terms CSR."""
    owner = np.repeat(np.arange(len(ptr) - 1, dtype=np.int64), np.diff(ptr))
    if live is not None:
        keep = live[owner]
        owner, flat = owner[keep], flat[keep]
    order = np.argsort(flat, kind="stable")
    owner = owner[order]
    bounds = np.searchsorted(flat[order], np.arange(len(vocab) + 1))
    return {
        t: owner[bounds[k] : bounds[k + 1]]
        for k, t in enumerate(vocab)
        if bounds[k + 1] > bounds[k]
    }


def _layered(base: Matcher, delta: dict[str, Entry], gone: set[str]) -> Matcher:
    """`base` with the `delta` entries appended (compiled on their own) and the base entries
    they replace or that were removed marked dead (see Matcher.updated)."""
    d = Matcher(list(delta.values()))
    m = Matcher.__new__(Matcher)
    m._base, m._delta, m._gone = base, delta, gone
    m.unreadable = base.unreadable
    n0, s0 = len(base.ids), len(base.sig_entry)
    dead_entries = sorted(base.position[i] for i in set(delta) | gone if i in base.position)
    m.ids = list(base.ids) + d.ids
    live = np.ones(len(m.ids), dtype=bool)
    live[dead_entries] = False
    m.position = {e: i for i, e in enumerate(m.ids) if live[i]}
    m.entries = _Lazy(len(m.ids), lambda i: base.entries[i] if i < n0 else d.entries[i - n0])
    m.entry_sigs = list(base.entry_sigs) + [range(r.start + s0, r.stop + s0) for r in d.entry_sigs]

    def shifted(g: int) -> _Sig:
        if g < s0:
            return base.sigs[g]
        cs = d.sigs[g - s0]
        return _Sig(
            entry=cs.entry + n0,
            gid=cs.gid + s0,
            sig=cs.sig,
            sources=cs.sources,
            required=cs.required,
            leaves=cs.leaves,
            probe=cs.probe,
        )

    m.sigs = _Lazy(s0 + len(d.sig_entry), shifted)
    for name in ("sig_weight", "sig_leaves", "sig_log_miss", "sig_specific", "sig_probed"):
        setattr(m, name, np.concatenate([getattr(base, name), getattr(d, name)]))
    m.text_free = np.concatenate([base.text_free, d.text_free])
    m.sig_entry = np.concatenate([base.sig_entry, d.sig_entry + n0])
    m.sig_dead = ~live[m.sig_entry]
    m.bm25_layers, m.bm25_live = [(base.bm25, 0), (d.bm25, n0)], live
    # required identifiers: the delta's keys and source sets numbered after the base's
    m.req_ids = dict(base.req_ids)
    d_keys = sorted(d.req_ids, key=d.req_ids.__getitem__)
    key_map = np.array([m.req_ids.setdefault(k, len(m.req_ids)) for k in d_keys], dtype=np.int64)
    m.req_sets = list(base.req_sets)
    set_ix = {x: k for k, x in enumerate(m.req_sets)}
    set_map = []
    for x in d.req_sets:
        if x not in set_ix:
            set_ix[x] = len(m.req_sets)
            m.req_sets.append(x)
        set_map.append(set_ix[x])
    m.sig_set = np.concatenate(
        [base.sig_set, np.array(set_map, dtype=np.int64)[d.sig_set] if len(d.sig_set) else []]
    ).astype(np.int64)
    m.sig_req_len = np.concatenate([base.sig_req_len, d.sig_req_len]).astype(np.int64)
    m.sig_req_ptr = np.concatenate([[0], np.cumsum(m.sig_req_len)]).astype(np.int64)
    m.sig_req_flat = np.concatenate(
        [base.sig_req_flat, key_map[d.sig_req_flat] if len(d.sig_req_flat) else []]
    ).astype(np.int64)
    m.text_by_gram = {g: dict(lits) for g, lits in base.text_by_gram.items()}
    for g, lits in d.text_by_gram.items():
        mine = m.text_by_gram.setdefault(g, {})
        for lit, gids in lits.items():
            old = mine.get(lit)
            mine[lit] = gids + s0 if old is None else np.concatenate([old, gids + s0])
    # terms: one vocabulary, the delta's new terms after the base's; df and idf recounted
    m.vocab = list(base.vocab)
    vocab_ix = {t: k for k, t in enumerate(m.vocab)}
    for t in d.vocab:
        if t not in vocab_ix:
            vocab_ix[t] = len(m.vocab)
            m.vocab.append(t)
    d_map = np.array([vocab_ix[t] for t in d.vocab], dtype=np.int64)
    m.term_flat = np.concatenate(
        [base.term_flat, d_map[d.term_flat] if len(d.term_flat) else []]
    ).astype(np.int64)
    m.term_ptr = np.concatenate([base.term_ptr, d.term_ptr[1:] + base.term_ptr[-1]]).astype(
        np.int64
    )
    owner = np.repeat(np.arange(len(m.ids), dtype=np.int64), np.diff(m.term_ptr))
    df = np.bincount(m.term_flat[live[owner]], minlength=len(m.vocab))
    n = max(1, int(live.sum()))
    idf = np.zeros(len(m.vocab))
    m.idf = {}
    for k, c in enumerate(df.tolist()):
        if c:
            idf[k] = m.idf[m.vocab[k]] = math.log(1 + n / c)
    m.entry_idf_total = np.bincount(owner, weights=idf[m.term_flat], minlength=len(m.ids))
    m.entry_terms = _csr_terms(m.term_flat, m.term_ptr, m.vocab)
    m.term_entries = _term_entries(m.term_flat, m.term_ptr, m.vocab, live)
    m.index = _Layers(base.index, d.index, s0)
    m.format_mask = {fmt: _mask(len(m.sig_entry), gids) for fmt, gids in m.index.by_format.items()}
    return m


class _Layers:
    """Two signature indexes evaluated as one: the base's programs and an update's, whose
    signatures are numbered after the base's. Each keeps its own slot table, so neither is
    recompiled; a view is built once per layer."""

    def __init__(self, base: SignatureIndex, delta: SignatureIndex, offset: int) -> None:
        self.layers = [(base, 0), (delta, offset)]
        self.n = offset + len(delta)
        self.by_format: dict[str, list[int]] = defaultdict(list)
        self.by_set: dict[frozenset[str], list[int]] = defaultdict(list)
        for index, off in self.layers:
            for fmt, gids in index.by_format.items():
                self.by_format[fmt] += [g + off for g in gids]
            for sources, gids in index.by_set.items():
                self.by_set[sources] += [g + off for g in gids]

    def __len__(self) -> int:
        return self.n

    @property
    def _programs(self) -> dict:
        """View key -> its compiled program in each layer that has signatures for it: only
        keys every such layer has compiled (as SignatureIndex._programs lists compiled keys)."""
        out = {}
        for key in {("format", f) for f in self.by_format} | {("set", x) for x in self.by_set}:
            progs = []
            for index, _ in self.layers:
                kind, what = key
                if (index.by_format if kind == "format" else index.by_set).get(what):
                    found = index._programs.get(key)
                    if found is None:
                        break
                    progs.append(found[1])
            else:
                out[key] = tuple(progs)
        return out

    def compile_all(self) -> None:
        for index, _ in self.layers:
            index.compile_all()

    def view(self, facts: Mapping, text: str) -> list[View]:
        return [index.view(facts, text) for index, _ in self.layers]

    def evaluate(self, views: list[tuple[tuple, list[int], list[View]]]) -> np.ndarray:
        best = np.full(self.n, -1, dtype=np.int64)
        for k, (index, off) in enumerate(self.layers):
            mine = []
            for key, _, layer_views in views:
                kind, what = key
                members = (index.by_format if kind == "format" else index.by_set).get(what)
                if members:
                    mine.append((key, members, layer_views[k]))
            best[off : off + len(index)] = index.evaluate(mine)
        return best


# bumped whenever what `Matcher.save` writes changes: an older file is then rebuilt
SAVED_FORMAT = 5
_MAGIC = b"PERFKBC1"
_ALIGN = 16


def _write_arrays(f, arrays: Mapping[str, np.ndarray], doc: Mapping) -> None:
    """One file: magic, header length, a JSON header (each array's dtype, shape and offset,
    and `doc`), then the arrays' raw bytes, aligned. Read back with np.memmap, so a process
    pages in only the arrays (and the parts of them) an analysis touches."""
    layout: dict[str, list] = {}
    offset = 0
    for name, a in arrays.items():
        a = np.ascontiguousarray(a)
        if a.dtype.hasobject:
            raise ValueError(f"array {name} holds objects")
        layout[name] = [a.dtype.str, list(a.shape), offset]
        offset += -(-a.nbytes // _ALIGN) * _ALIGN
    header = json.dumps({"arrays": layout, "doc": doc}).encode()
    start = -(-(len(_MAGIC) + 8 + len(header)) // _ALIGN) * _ALIGN
    f.write(_MAGIC + len(header).to_bytes(8, "little") + header)
    f.write(b"\0" * (start - len(_MAGIC) - 8 - len(header)))
    for a in arrays.values():
        data = np.ascontiguousarray(a).tobytes()
        f.write(data + b"\0" * (-(-len(data) // _ALIGN) * _ALIGN - len(data)))


def _read_arrays(path: Path) -> tuple[dict[str, np.ndarray], dict]:
    """What _write_arrays wrote: read-only views into the mapped file, and the document."""
    # Plain ndarrays over one read-only mapping (each array keeps it alive as its base), not
    # np.memmap: the subclass's hooks ran on every index and slice of every array an analysis
    # reads (~2 us each, thousands per analysis at 10,000 entries); the pages are still read
    # on demand. One np.ndarray call per array, at its offset, with the dtypes parsed once:
    # slicing the mapping, np.prod of the shape, view and reshape per array were four numpy
    # calls each for the starter KB's 1,334 arrays (~3 % of a 1-line `perfkb analyze`).
    with open(path, "rb") as f:
        mm = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    head = len(_MAGIC) + 8
    if mm[: len(_MAGIC)] != _MAGIC:
        raise ValueError("not a saved KB")
    size = int.from_bytes(mm[len(_MAGIC) : head], "little")
    header = json.loads(mm[head : head + size])
    start = -(-(head + size) // _ALIGN) * _ALIGN
    dtypes: dict[str, np.dtype] = {}
    arrays = {}
    for name, (dtype, shape, offset) in header["arrays"].items():
        dt = dtypes.get(dtype)
        if dt is None:
            dt = dtypes[dtype] = np.dtype(dtype)
            if dt.hasobject:
                raise ValueError("object arrays are never read")
        begin = start + offset
        if begin + math.prod(shape) * dt.itemsize > len(mm):
            raise ValueError("saved KB is cut short")
        arrays[name] = np.ndarray(shape, dt, buffer=mm, offset=begin)
    return arrays, header["doc"]


class _SavedDoc(dict):
    """A saved KB's JSON document, plus "ids", "revs" and "checksums" read from its arrays
    (the ids on load, the others only when changes are layered on it: kb.analysis)."""

    def __init__(self, doc: Mapping, arrays: Mapping[str, np.ndarray]) -> None:
        super().__init__(doc)
        raw = arrays["m_ids"].tobytes().decode()
        self["ids"] = raw.split("\n") if raw else []
        self.arrays = arrays

    def __missing__(self, key: str):
        if key == "revs":
            value = self.arrays["m_revs"].tolist()
        elif key == "checksums":
            value = [c.decode() or None for c in self.arrays["m_checksums"].tolist()]
        else:
            raise KeyError(key)
        self[key] = value
        return value


class _Lazy(Sequence):
    """A list whose items are made on first access (entries read by id, their signatures)."""

    def __init__(self, n: int, make: Callable[[int], object]) -> None:
        self.n, self.make, self.done = n, make, {}

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i):  # type: ignore[override]
        if isinstance(i, slice):
            return [self[k] for k in range(*i.indices(self.n))]
        if i < 0:
            i += self.n
        if not 0 <= i < self.n:
            raise IndexError(i)
        found = self.done.get(i)
        if found is None:
            found = self.done[i] = self.make(i)
        return found


MAX_NEAR_MISSES = 3


def explained(m: Match, demoted: bool = False) -> Match:
    """The match with its confidence said in one line, and its near misses: the conditions
    that kept a signature from holding, when only one or two did (a signature that missed on
    everything is not near)."""
    held = [sig for sig in m.signatures if sig.held]
    specific = [sig for sig in held if sig.specific]
    wrong = m.feedback.get("wrong", 0)
    score = f"score {m.score:.2f}"
    if m.confidence == "high":
        sig = specific[0] if specific else held[0]
        m.reason = (
            f"high: signature '{sig.name}' held ({len(held)} of {len(m.signatures)}), {score} ≥ "
            f"{HIGH:.2f}"
        )
    elif held and demoted:
        m.reason = f"{m.confidence}: signatures held, but your Oracle version is outside the "
        m.reason += "entry's affected range, so its score was halved"
    elif held and wrong:
        m.reason = f"{m.confidence}: signatures held, but {wrong} 'wrong cause' vote(s) halved it"
    elif held and not specific and m.score >= HIGH:
        m.reason = f"{m.confidence}: only generic signatures held ('{held[0].name}'); "
        m.reason += "a generic symptom alone is never called high"
    elif held:
        needed = HIGH if m.confidence == "medium" else MEDIUM
        m.reason = (
            f"{m.confidence}: '{held[0].name}' held, but its weight gives {score} "
            f"(needs ≥ {needed:.2f} for {'high' if m.confidence == 'medium' else 'medium'})"
        )
    elif m.mentions:
        m.reason = f"low: no signature held; the evidence only names {', '.join(m.mentions)}"
    else:
        m.reason = f"{m.confidence}: no signature held; related by its text ({score})"
    near: list[str] = []
    for sig in m.signatures:
        if sig.held:
            continue
        missed = [c for c in sig.conditions if not c.held]
        if not missed or len(missed) > 2 or not all(c.wanted for c in missed):
            continue
        near.append("would match if " + " and ".join(c.wanted for c in missed))
        if len(near) >= MAX_NEAR_MISSES:
            break
    m.near_misses = near
    return m


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
