"""BM25 similarity of the KB's entries to the evidence over their identifiers, from statistics
kept in the compiled KB (kb.matcher), without the search index.

Why: an analysis needs one number per entry, "how much do this entry's identifiers overlap the
evidence's", and used to ask whoosh for it (`SearchIndex.similar`). Importing whoosh and opening
its index cost ~100 ms of a 1-line `perfkb analyze`, and ~170 MB at 10,000 entries. The
statistics BM25F reads over one field are small: per entry, each identifier key's frequency and
the field's length; over the KB, the document count and the summed length. They are kept here,
built with the matcher and layered with it on an edit, and give whoosh's scores (the index
stays the oracle: tests/test_bm25.py compares the two entry by entry).

What whoosh does that this mirrors exactly (whoosh-reloaded 2.7.5, `scoring.BM25F`):
  idf   = log(N / (df + 1)) + 1          N counts every document, df those with the key
  score = idf * tf * (K1 + 1) / (tf + K1 * ((1 - B) + B * fl / avgfl))
  avgfl = (sum of every document's exact field length) / N
  fl    = the document's field length as whoosh stores it: one byte, rounded up to the next
          value of a logarithmic table (exact up to 10, then 12, 13, 14, 16 ...)
and an `Or` of one term per distinct key sums the terms' scores. One difference: whoosh counts
documents an update deleted until their segment is merged; these statistics count the live
entries, as a freshly rebuilt index does.
"""

from __future__ import annotations

import math
from bisect import bisect_left
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # numpy is imported where used: kb.search_file reads the constants and the
    # scoring function below with the standard library only. The keys come from the caller
    # (kb.index_docs.entry_keys / query_keys, through kb.matcher): kb.index_docs imports
    # kb.search_file, which imports this module, so importing it here would be a cycle.
    import numpy as np

# whoosh's BM25F defaults and the `identifiers` field's boost (kb/index.py's schema)
B = 0.75
K1 = 1.2
FIELD_BOOST = 1.0


# whoosh.util.numeric's length table: round((1.033 ** n - 1) * 27) for each byte n
_LENGTHS = [int(round((1.033**n - 1) * 27)) for n in range(256)]


def bm25(idf: float, tf: float, fl: int, avgfl: float) -> float:
    """whoosh.scoring.bm25 with the default B and K1, the same operations in the same order
    (so the same float): kb.search_file scores the search file's postings with it."""
    return idf * ((tf * (K1 + 1)) / (tf + K1 * ((1 - B) + B * fl / avgfl)))


def idf(doc_count_all: int, doc_frequency: int) -> float:
    """whoosh's WeightingModel.idf: every document counts, deleted ones included."""
    return math.log(doc_count_all / (doc_frequency + 1)) + 1


def stored_length(length: int) -> int:
    """A field length as whoosh reads it back from its one-byte column."""
    if length >= 106374:
        return _LENGTHS[255]
    return _LENGTHS[bisect_left(_LENGTHS, length)]


class IdentifierStats:
    """Per-key postings (the entries naming a key, with its frequency there) and per-entry
    field lengths of one set of entries, as arrays that are saved with the compiled KB and read
    back memory-mapped. Keys are sorted, so a lookup is a bisection (no dict built at load)."""

    __slots__ = ("vocab", "ptr", "docs", "tf", "flen", "exact")

    def __init__(
        self,
        vocab: Sequence[str],
        ptr: np.ndarray,
        docs: np.ndarray,
        tf: np.ndarray,
        flen: np.ndarray,
        exact: np.ndarray,
    ) -> None:
        self.vocab = vocab
        self.ptr, self.docs, self.tf, self.flen, self.exact = ptr, docs, tf, flen, exact

    @classmethod
    def build(cls, keys_per_entry: Sequence[Sequence[str]]) -> IdentifierStats:
        import numpy as np

        postings: dict[str, list[tuple[int, int]]] = {}
        exact = []
        for i, keys in enumerate(keys_per_entry):
            counts: dict[str, int] = {}
            for k in keys:
                counts[k] = counts.get(k, 0) + 1
            for k, c in counts.items():
                postings.setdefault(k, []).append((i, c))
            exact.append(len(keys))
        vocab = sorted(postings)
        flat = [p for k in vocab for p in postings[k]]
        ptr = np.cumsum([0] + [len(postings[k]) for k in vocab], dtype=np.int64)
        return cls(
            vocab,
            ptr,
            np.array([d for d, _ in flat], dtype=np.int64),
            np.array([c for _, c in flat], dtype=np.float64),
            np.array([stored_length(n) for n in exact], dtype=np.float64),
            np.array(exact, dtype=np.int64),
        )

    def parts(self) -> tuple[dict[str, np.ndarray], list[str]]:
        """What Matcher.save writes: arrays, and the sorted keys (JSON)."""
        arrays = {"ptr": self.ptr, "docs": self.docs, "tf": self.tf}
        arrays.update({"flen": self.flen, "exact": self.exact})
        return arrays, list(self.vocab)

    @classmethod
    def from_parts(cls, arrays: dict[str, np.ndarray], vocab: list[str]) -> IdentifierStats:
        stats = cls(vocab, *(arrays[k] for k in ("ptr", "docs", "tf", "flen", "exact")))
        if len(stats.ptr) != len(vocab) + 1 or len(stats.docs) != len(stats.tf):
            raise ValueError("saved identifier statistics do not add up")
        return stats

    def postings(self, key: str) -> tuple[np.ndarray, np.ndarray] | None:
        """(entries, frequencies) of one key, or None."""
        k = bisect_left(self.vocab, key)
        if k == len(self.vocab) or self.vocab[k] != key:
            return None
        a, b = int(self.ptr[k]), int(self.ptr[k + 1])
        return self.docs[a:b], self.tf[a:b]


def similar(
    layers: Sequence[tuple[IdentifierStats, int]],
    live: np.ndarray | None,
    ids: Sequence[str],
    terms: Sequence[str],
    *,
    limit: int = 50,
) -> dict[str, float]:
    """entry id -> 0..1: the BM25 scores of the `limit` best entries (ties by id, the order of a
    rebuilt index), divided by the best. `layers` are statistics with the position of their
    first entry in `ids` (a saved KB, then an update's changed entries); `live` marks the
    entries that count (None: all); `terms` are the evidence's keys (index_docs.query_keys)."""
    import numpy as np

    if not terms or not ids:
        return {}
    n_docs = len(ids) if live is None else int(live.sum())
    total = 0
    for stats, off in layers:
        if live is None:
            total += int(stats.exact.sum())
        else:
            total += int(stats.exact[live[off : off + len(stats.exact)]].sum())
    avgfl = total / (n_docs or 1) or 1
    found_docs: list[np.ndarray] = []
    found_scores: list[np.ndarray] = []
    for term in terms:
        hits = []
        for stats, off in layers:
            got = stats.postings(term)
            if got is None:
                continue
            docs, tf = got
            flen = stats.flen[docs]
            docs = docs + off
            if live is not None:
                keep = live[docs]
                docs, tf, flen = docs[keep], tf[keep], flen[keep]
            if len(docs):
                hits.append((docs, tf, flen))
        df = sum(len(h[0]) for h in hits)
        if not df:
            continue
        term_idf = idf(n_docs, df)
        for docs, tf, flen in hits:
            found_docs.append(docs)
            found_scores.append(bm25(term_idf, tf * FIELD_BOOST, flen, avgfl))  # arrays: per entry
    if not found_docs:
        return {}
    scores = np.bincount(
        np.concatenate(found_docs), weights=np.concatenate(found_scores), minlength=len(ids)
    )
    hit = np.flatnonzero(scores > 0)
    if len(hit) > 4 * limit > 0:  # only those that can reach the top `limit` are sorted
        kth = np.partition(scores[hit], len(hit) - limit)[len(hit) - limit]
        hit = hit[scores[hit] >= kth]
    ranked = sorted((-float(scores[i]), ids[i]) for i in hit.tolist())[:limit]
    if not ranked:
        return {}
    best = -ranked[0][0]
    return {entry_id: -neg / best for neg, entry_id in ranked}
