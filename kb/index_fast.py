"""Searches answered from per-word posting tables read straight out of whoosh's segments, with
the same scores as whoosh's own matcher tree (tests/test_search_fast.py checks page for page).

This is the one module that reads whoosh's internals (the W3 codec's posting blocks and length
column, its matcher classes): it is written against whoosh-reloaded 2.7.5, the version pinned in
pyproject.toml, and a different whoosh must be checked against those tests before the pin moves.
Everything else reaches whoosh through its public API in kb/index.py."""

from __future__ import annotations

import re
import threading
import time
from collections import OrderedDict
from collections.abc import Iterable, Iterator
from itertools import accumulate
from typing import TYPE_CHECKING, Any

from whoosh import query
from whoosh.codec.whoosh3 import LENGTHS_COLUMN, W3LeafMatcher, _lenfield
from whoosh.collectors import TimeLimit, WrappingCollector
from whoosh.matching import (
    FilterMatcher,
    IntersectionMatcher,
    NullMatcherClass,
    UnionMatcher,
    WrappingMatcher,
)
from whoosh.scoring import WeightLengthScorer
from whoosh.util import make_weighted_tree

from kb.search_query import (
    QueryError,
    SearchCancelled,
)

# --------------------------------------------------------------------------------------------
# the in-memory evaluator

if TYPE_CHECKING:
    from kb.index import SearchIndex


class Unsupported(Exception):
    """A query shape the evaluator does not mirror exactly; whoosh answers it instead."""


class SearchState:
    """Everything derived from one searcher (one index generation), dropped with it."""

    def __init__(self, searcher: Any, budget: int) -> None:
        self.searcher = searcher
        self.postings = _PostingsCache(budget)  # per-word tables
        self.lengths: dict[Any, bytes | None] = {}  # (segment, field) -> field-length bytes
        self.facet_sets: dict[str, dict[str, frozenset[int]]] = {}
        self.facet_masks: dict[str, dict[str, int]] = {}
        self.version_map: dict[int, str] | None = None
        self.id_order: list[int] | None = None
        self.all_mask: int | None = None


class _Table:
    """The matches of a (sub)query in one segment: segment docnum -> whoosh's score, whoosh's size
    estimate for it, the class of the matcher whoosh would build for it (see _tree), and (made
    when first needed) the docnums as a frozenset and as a bit mask."""

    __slots__ = ("scores", "est", "nbits", "kind", "_keys", "_mask")

    def __init__(
        self,
        scores: dict[int, float],
        est: int,
        nbits: int,
        kind: type,
        keys: frozenset[int] | None = None,
        mask: int | None = None,
    ) -> None:
        self.scores, self.est, self.nbits, self.kind = scores, est, nbits, kind
        self._keys, self._mask = keys, mask

    @property
    def keys(self) -> frozenset[int]:
        if self._keys is None:
            self._keys = frozenset(self.scores)
        return self._keys

    @property
    def mask(self) -> int:
        if self._mask is None:
            self._mask = mask_of(self.scores, self.nbits)
        return self._mask

    def complete(self) -> _Table:
        """Make keys and mask now (before the table is shared through the cache)."""
        _ = self.keys, self.mask
        return self


class _PostingsCache:
    """(segment, term or per-word group) -> _Table, for one index generation; the least recently
    used are dropped first once the tables hold more than `budget` postings in all."""

    def __init__(self, budget: int) -> None:
        self.budget = budget
        self._items: OrderedDict[Any, _Table] = OrderedDict()
        self._size = 0
        self._lock = threading.Lock()

    def get(self, key: Any) -> _Table | None:
        with self._lock:
            item = self._items.get(key)
            if item is not None:
                self._items.move_to_end(key)
            return item

    def put(self, key: Any, item: _Table) -> None:
        with self._lock:
            old = self._items.pop(key, None)
            if old is not None:
                self._size -= len(old.scores)
            self._items[key] = item
            self._size += len(item.scores)
            while self._size > self.budget and len(self._items) > 1:
                _, dropped = self._items.popitem(last=False)
                self._size -= len(dropped.scores)

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
            self._size = 0

    @property
    def postings(self) -> int:
        return self._size

    def __len__(self) -> int:
        return len(self._items)


class Evaluator:
    """Evaluates the And/Or/Term trees our parsers produce the way whoosh's matchers do, over
    posting tables in memory instead of decoding postings in Python for every query.

    For each segment whoosh builds the same huffman-like tree of Union/Intersection matchers
    (weighted by its size estimates), a union scores a document with the sum of its children
    that contain it, an intersection with the sum of both, a boost multiplies; float addition is
    commutative, so following the same tree gives bit-identical scores. A term's table is
    (segment docnum -> the score whoosh's scorer gives that posting); the OR of one word over the
    fields (what MultifieldParser makes of each word: Terms on distinct fields) is kept as one
    table. An AND first intersects its children's docnum sets (in C), then sums scores along the
    tree for those documents only. Anything else (phrases, wildcards, NOT, an Or with a
    coordination scale, a custom weighting) raises Unsupported: whoosh answers those."""

    def __init__(self, owner: SearchIndex, searcher: Any, budget: Budget | None = None) -> None:
        self.budget = budget
        state = owner._state_for(searcher)
        self.cache = state.postings
        self.schema = searcher.schema
        self.weighting = searcher.weighting
        if self.weighting.use_final:
            raise Unsupported
        self.segments = searcher.leaf_searchers()
        self.lengths = state.lengths

    def run(self, q: Any) -> tuple[dict[int, float], int]:
        """(top-level docnum -> score, bit mask of those docnums) of every match of q."""
        if len(self.segments) == 1 and self.segments[0][1] == 0:
            table = self._node(0, self.segments[0][0], q)
            return table.scores, table.mask
        scores: dict[int, float] = {}
        mask = 0
        for n, (sub, offset) in enumerate(self.segments):
            table = self._node(n, sub, q)
            scores.update((d + offset, sc) for d, sc in table.scores.items())
            mask |= table.mask << offset
        return scores, mask

    def _node(self, seg: int, sub: Any, q: Any) -> _Table:
        cls = type(q)
        if cls is query.Term:
            key = (seg, q.fieldname, q.text, q.boost)
            item = self.cache.get(key)
            if item is None:
                if self.budget is not None:
                    self.budget.check()
                item = self._term(sub, q).complete()
                self.cache.put(key, item)
            return item
        if cls is not query.Or and cls is not query.And:
            raise Unsupported
        subs = q.subqueries
        if not subs:
            raise Unsupported
        if cls is query.Or and (
            q.minmatch or q.scale or q.matcher_type != query.Or.DEFAULT_MATCHER
        ):
            raise Unsupported
        if len(subs) == 1:  # whoosh uses the child's matcher as it is (no boost)
            return self._node(seg, sub, subs[0])
        group = None
        # one word over several fields (its text may differ per field: stemmed or not)
        one_word = all(type(c) is query.Term for c in subs) and len(
            {c.fieldname for c in subs}
        ) == len(subs)
        if cls is query.Or and one_word:
            group = (seg, tuple((c.fieldname, c.text, c.boost) for c in subs), q.boost)
            item = self.cache.get(group)
            if item is not None:
                return item
        if group is not None:
            children = [self._term(sub, c) for c in subs]  # not cached one by one
        else:
            children = [self._node(seg, sub, c) for c in subs]
        nbits = children[0].nbits
        if cls is query.Or:
            est = min(sum(c.est for c in children), sub.reader().doc_count())
            scores = _tree(UnionMatcher, _union, [(c.est, c) for c in children])
            mask: int | None = None  # made from the scores when needed, unless it is cheap now
            if all(c._mask is not None for c in children):
                mask = 0
                for c in children:
                    mask |= c.mask
            keys = None
            kind: type = UnionMatcher
        else:
            est = min(c.est for c in children)
            ordered = sorted(children, key=lambda c: len(c.scores))
            keys = ordered[0].keys
            mask = ordered[0].mask
            for c in ordered[1:]:
                keys &= c.keys
                mask &= c.mask

            def both(a: dict[int, float], b: dict[int, float]) -> dict[int, float]:
                return {d: a[d] + b[d] for d in keys}

            scores = _tree(IntersectionMatcher, both, [(0 - c.est, c) for c in children])
            kind = IntersectionMatcher
        if q.boost != 1.0:
            boost = q.boost
            scores = {d: sc * boost for d, sc in scores.items()}
            kind = WrappingMatcher
        item = _Table(scores, est, nbits, kind, keys, mask)
        if group is not None:
            self.cache.put(group, item.complete())
        return item

    def _lengths(self, sub: Any, fieldname: str) -> bytes | None:
        """The segment's field-length bytes (one per docnum), read in one go, or None."""
        key = (id(sub), fieldname)
        if key not in self.lengths:
            try:
                col = sub.reader()._perdoc._cached_reader(_lenfield(fieldname), LENGTHS_COLUMN)
                data = bytes(col._dbfile.get(col._basepos, col._count)) if col else None
                ok = data is not None and col._fixedlen == 1 and len(data) == col._count
                # docnums past the column's end read as its default, 0
                pad = bytes(max(0, sub.reader().doc_count_all() - len(data or b"")))
                self.lengths[key] = data + pad if ok and data is not None else None
            except Exception:  # another codec or whoosh version: drain posting by posting
                self.lengths[key] = None
        return self.lengths[key]

    def _term(self, sub: Any, q: Any) -> _Table:
        """One term's postings in one segment as docnum -> score (boost applied), and whoosh's
        size estimate (its document frequency)."""
        if q.minquality:
            raise Unsupported
        reader = sub.reader()
        nbits = reader.doc_count_all()
        fieldname = q.fieldname
        if fieldname not in self.schema:
            return _Table({}, 0, nbits, NullMatcherClass)
        try:
            text = self.schema[fieldname].to_bytes(q.text)
        except ValueError:
            return _Table({}, 0, nbits, NullMatcherClass)
        est = reader.doc_frequency(fieldname, text)
        if (fieldname, text) not in reader:
            return _Table({}, est, nbits, NullMatcherClass)
        m = sub.postings(fieldname, text, weighting=self.weighting)
        kind: type = type(m)
        boost = q.boost
        if boost != 1.0:
            kind = WrappingMatcher  # whoosh wraps the posting list to multiply its scores
        scores = _drain_blocks(m, self._lengths(sub, fieldname), boost)
        if scores is None:
            scores = _drain(m)
            if boost != 1.0:
                scores = {d: sc * boost for d, sc in scores.items()}
        return _Table(scores, est, nbits, kind)


class Budget:
    """What one search may still spend: until a monotonic deadline, and only while whoever
    asked still waits (the event kb.search_query.search_cancelled carries, when set)."""

    __slots__ = ("seconds", "deadline", "cancel")

    def __init__(self, seconds: float, cancel: threading.Event | None) -> None:
        self.seconds = seconds
        self.deadline = time.monotonic() + seconds
        self.cancel = cancel

    def over(self) -> bool:
        return time.monotonic() > self.deadline or (
            self.cancel is not None and self.cancel.is_set()
        )

    def check(self) -> None:
        if self.over():
            raise self.error()

    def error(self) -> QueryError:
        if self.cancel is not None and self.cancel.is_set():
            return SearchCancelled("the search was cancelled: nobody waits for it any more")
        return QueryError(
            f"the search took longer than {self.seconds:g} s and was stopped: use longer "
            "prefixes before * or ?, fewer words, or a filter such as platform: or tag:"
        )


class BudgetCollector(WrappingCollector):
    """Raises whoosh's TimeLimit once the budget is spent, checked between matches (inside
    any FilterCollector, which iterates its child's matches itself). whoosh's
    own TimeLimitCollector starts a timer thread per search (and SIGALRM, which only the main
    thread may use); a clock read per match costs nothing by comparison."""

    def __init__(self, child: Any, budget: Budget) -> None:
        super().__init__(child)
        self.budget = budget

    def matches(self) -> Iterator[int]:
        over = self.budget.over
        for sub_docnum in self.child.matches():
            if over():
                raise TimeLimit
            yield sub_docnum


def literal_prefix(text: str) -> int:
    """How many characters of a whoosh wildcard pattern come before its first * or ?."""
    cut = [i for i in (text.find("*"), text.find("?")) if i >= 0]
    return min(cut) if cut else len(text)


def _drain_blocks(m: Any, lengths: bytes | None, boost: float) -> dict[int, float] | None:
    """_drain for whoosh's own on-disk posting lists, a block at a time: a BM25F score depends
    only on the posting's weight and the document's field-length byte, so each distinct pair is
    scored once, by whoosh's scorer (times the term's boost), and reused. A segment with
    deletions wraps the list in a FilterMatcher that skips deleted documents: those are dropped
    afterwards. None (nothing read) when the matcher or scorer is not the kind this knows."""
    deleted: Any = ()
    if type(m) is FilterMatcher and m._exclude and m.boost == 1.0:
        m, deleted = m.child, m._ids
    scorer = getattr(m, "scorer", None)
    if (
        lengths is None
        or type(m) is not W3LeafMatcher
        or not isinstance(scorer, WeightLengthScorer)
        or type(scorer).score is not WeightLengthScorer.score
    ):
        return None
    score, dfl = scorer._score, scorer.dfl
    memo: dict[tuple[float, int], float] = {}
    get, length = memo.get, lengths.__getitem__
    out: dict[int, float] = {}
    while m.is_active():
        if m._ids is None:  # what _read_ids does, with the delta decoding in C
            if m._data is None:
                m._read_data()
            m._ids = m._data[0] if m._byteids else tuple(accumulate(m._data[0]))
        if m._weights is None:
            m._read_weights()
        start = m._i
        ids, weights = (m._ids[start:], m._weights[start:]) if start else (m._ids, m._weights)
        keys = list(zip(weights, map(length, ids), strict=True))
        scores = list(map(get, keys))
        if None in scores:
            for i, sc in enumerate(scores):
                if sc is None:
                    key = keys[i]
                    sc = get(key)
                    if sc is None:
                        sc = score(key[0], dfl(ids[i]))
                        if boost != 1.0:
                            sc = sc * boost  # as whoosh's WrappingMatcher does, per posting
                        memo[key] = sc
                    scores[i] = sc
        out.update(zip(ids, scores, strict=True))
        m._i = m._blocklength
        m._next_block()
    for d in deleted:
        out.pop(d, None)
    return out


def term_docs(searcher: Any, field: str, term: bytes) -> frozenset[int] | None:
    """The live documents with `term` in `field`, read a block at a time (no scoring), or None
    when a posting list is not whoosh's own on-disk kind (the caller asks whoosh instead)."""
    out: set[int] = set()
    for sub, offset in searcher.leaf_searchers():
        reader = sub.reader()
        if (field, term) not in reader:
            continue
        m = reader.postings(field, term)
        deleted: Any = ()
        if type(m) is FilterMatcher and m._exclude:
            m, deleted = m.child, m._ids
        if type(m) is not W3LeafMatcher:
            return None
        docs: set[int] = set()
        while m.is_active():
            if m._ids is None:
                if m._data is None:
                    m._read_data()
                m._ids = m._data[0] if m._byteids else tuple(accumulate(m._data[0]))
            docs.update(m._ids[m._i :])
            m._i = m._blocklength
            m._next_block()
        docs.difference_update(deleted)
        out.update((d + offset for d in docs) if offset else docs)
    return frozenset(out)


def _drain(m: Any) -> dict[int, float]:
    out: dict[int, float] = {}
    while m.is_active():
        out[m.id()] = m.score()
        m.next()
    return out


def _tree(joined: type, fn: Any, items: list[tuple[int, _Table]]) -> dict[int, float]:
    """Combine the children's scores along the tree whoosh.util.make_weighted_tree builds for
    their matchers. Its order depends on comparing (weight, matcher) tuples, and at equal weights
    on the matchers' own comparisons, which depend on their classes (a WrappingMatcher sorts
    before a FilterMatcher, its subclass, and never-less otherwise), so stand-ins of the same
    classes go through whoosh's own function."""

    def join(a: Any, b: Any) -> Any:
        return _stand_in(joined, fn(a.perfkb_scores, b.perfkb_scores))

    root = make_weighted_tree(join, [(w, _stand_in(t.kind, t.scores)) for w, t in items])
    return root.perfkb_scores


def _stand_in(kind: type, scores: dict[int, float]) -> Any:
    obj = kind.__new__(kind)  # never initialised or used as a matcher: compared, and carries scores
    obj.perfkb_scores = scores
    return obj


def _union(a: dict[int, float], b: dict[int, float]) -> dict[int, float]:
    if not b or not a:  # tables are never changed in place, so one can stand for the union
        return a or b
    out = a | b
    for d in a.keys() & b.keys():  # only documents in both need a Python step
        out[d] = a[d] + b[d]
    return out


# plain text for SearchIndex._plain_query: words of these characters separated by single spaces
PLAIN_QUERY = re.compile(r"[\w.$#-]+(?: [\w.$#-]+)*", re.ASCII)
OPERATOR_WORDS = frozenset({"AND", "OR", "NOT", "ANDNOT", "ANDMAYBE", "REQUIRE"})


def binary_unions(q: Any) -> Any:
    """On indexes under 5,000 documents whoosh answers an OR of 3+ terms with an array matcher
    that zeroes a 2,048-slot array in Python for every segment, which made each search cost
    about 1 ms per segment; the plain union matcher is cheaper at our sizes."""
    if isinstance(q, query.Or):
        q.matcher_type = query.Or.DEFAULT_MATCHER
    for child in q.children():
        binary_unions(child)
    return q


_BIT = tuple(1 << i for i in range(8))


def mask_of(docs: Iterable[int], size: int) -> int:
    """A set of docnums as an int with bit n set for docnum n (counting is then & and
    bit_count, both in C)."""
    buf = bytearray((size >> 3) + 1)
    for d in docs:
        buf[d >> 3] |= _BIT[d & 7]
    return int.from_bytes(buf, "little")
