"""The code that reads and writes whoosh's internals: the bulk rebuild's segment writer
(BulkWriter), the search file's writer (write_search_file: posting blocks and length columns read
straight out of whoosh's segments), the facet tables whoosh's own searches filter with.

This is the one module that reads whoosh's internals (the W3 codec's posting blocks and length
column, its matcher classes): it is written against whoosh-reloaded 2.7.5, the version pinned in
pyproject.toml, and a different whoosh must be checked against those tests before the pin moves.
Everything else reaches whoosh through its public API in kb/index.py."""

from __future__ import annotations

import gc
import json
import operator
import os
import re
import sqlite3
from array import array
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from itertools import accumulate, chain
from pathlib import Path
from pickle import dumps
from types import MethodType
from typing import Any
from zlib import compress

from whoosh import query
from whoosh.analysis import (
    CompositeAnalyzer,
    LowercaseFilter,
    RegexTokenizer,
    StopFilter,
    StripFilter,
)
from whoosh.analysis.morph import StemFilter
from whoosh.codec.whoosh3 import (
    LENGTHS_COLUMN,
    WHOOSH3_HEADER_MAGIC,
    W3FieldWriter,
    W3LeafMatcher,
    W3PostingsWriter,
    _lenfield,
)
from whoosh.collectors import TimeLimit, WrappingCollector
from whoosh.formats import Frequency, Positions
from whoosh.matching import (
    FilterMatcher,
)
from whoosh.scoring import BM25F
from whoosh.system import pack_uint
from whoosh.util.numeric import byte_to_length, length_to_byte
from whoosh.writing import SegmentWriter, UnknownFieldError

from kb.search_file import OPERATOR_WORDS, PLAIN_QUERY
from kb.search_query import Budget

__all__ = ["OPERATOR_WORDS", "PLAIN_QUERY", "Budget"]  # where kb/index.py has them from

# --------------------------------------------------------------------------------------------
# whoosh's side of a search: caches per searcher, the time budget, facet documents


class Unsupported(Exception):
    """A segment the search file's writer cannot read (not one of whoosh's own): no file is
    written, and whoosh answers every search."""


class SearchState:
    """Everything derived from one searcher (one index generation), dropped with it."""

    def __init__(self, searcher: Any) -> None:
        self.searcher = searcher
        self.facet_sets: dict[str, dict[str, frozenset[int]]] = {}
        self.version_map: dict[int, str] | None = None


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


class BudgetedQuery(query.WrappingQuery):
    """A leaf of a search's query that checks the budget before whoosh builds its matcher.

    Why: BudgetCollector checks between matches, but whoosh builds every matcher before the
    first one, and for wildcards that is most of the work: each Prefix or Wildcard opens the
    posting list of every index word it stands for and reads their first blocks into an array
    union. Profiled on the 3,000-entry KB of tests/test_search_limits.py (2026-12-02,
    `ti* re* sh* co* se* pa* lo* da*` with a 0.05 s budget): 0.65 s of CPU, all of it in
    whoosh's matcher building (56 wildcard leaves, ~10 ms each), so the budget cut nothing, and
    a client that hung up at once and asked again started another 0.65 s each time. Checked per
    leaf, the cut comes one leaf's matcher after the budget (or the hang-up)."""

    def __init__(self, child: Any, budget: Budget) -> None:
        super().__init__(child)
        self.budget = budget

    def _rewrap(self, child: Any) -> BudgetedQuery:
        return BudgetedQuery(child, self.budget)

    def matcher(self, searcher: Any, context: Any = None) -> Any:
        if self.budget.over():
            raise TimeLimit
        return self.child.matcher(searcher, context)


def budgeted(q: Any, budget: Budget) -> Any:
    """A copy of q whose every leaf is a BudgetedQuery (the unions binary, as binary_unions
    makes them: the copy is rebuilt, and whoosh's Or keeps no matcher_type through that)."""
    return binary_unions(
        q.accept(lambda node: BudgetedQuery(node, budget) if node.is_leaf() else node)
    )


def literal_prefix(text: str) -> int:
    """How many characters of a whoosh wildcard pattern come before its first * or ?."""
    cut = [i for i in (text.find("*"), text.find("?")) if i >= 0]
    return min(cut) if cut else len(text)


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


def binary_unions(q: Any) -> Any:
    """On indexes under 5,000 documents whoosh answers an OR of 3+ terms with an array matcher
    that zeroes a 2,048-slot array in Python for every segment, which made each search cost
    about 1 ms per segment; the plain union matcher is cheaper at our sizes."""
    if isinstance(q, query.Or):
        q.matcher_type = query.Or.DEFAULT_MATCHER
    for child in q.children():
        binary_unions(child)
    return q


# --------------------------------------------------------------------------------------------
# the bulk build: SearchIndex.rebuild's writer, the same segment in a fraction of the time
#
# whoosh's SegmentWriter.add_document runs each TEXT value through a generator chain (tokenizer,
# lowercase, stop words, stemmer: a Python call per token per stage), pickles each posting's
# positions, puts every posting as a 5-tuple in a pool that spills sorted runs to disk past
# 128 MB, sorts them all at commit, and reads each posting's field length back from the length
# column. Profiled on a 2,000-entry rebuild these were nearly all of the time. BulkWriter
# mirrors add_document for the chains the schema uses (one regex pass per value, each distinct
# word stemmed once, each position list encoded once), keeps the postings grouped per field and
# word (documents arrive in docnum order, so only the words need sorting), and feeds the segment
# writer exactly the postings, lengths and stored fields whoosh's own add_document and commit
# would: tests/test_index_build.py compares every posting, length and stored field of the two.


class _Words(dict):
    """token -> the word indexed for it (stemmed), or None for a stop word: each distinct token
    goes through the filters once per build, then is a dict lookup."""

    def __init__(self, stop: Any, stem: Any, ignore: frozenset[str]) -> None:
        super().__init__()
        self.stop, self.stem, self.ignore = stop, stem, ignore

    def __missing__(self, token: str) -> str | None:
        word: str | None = token
        if self.stop is not None:
            stops, minsize, maxsize, _ = self.stop
            n = len(token)
            if n < minsize or (maxsize is not None and n > maxsize) or token in stops:
                word = None
        if word is not None and self.stem is not None and token not in self.ignore:
            word = self.stem(token)
        self[token] = word
        return word


class _ChainSpec:
    """A field's analysis as _chain_spec reads it: RegexTokenizer (matching, not gaps), then
    optionally StripFilter, LowercaseFilter, optionally StopFilter and StemFilter, nothing
    else; and the field's format, Positions or Frequency."""

    def __init__(
        self,
        expression: re.Pattern[str],
        strip: bool,
        stop: tuple[frozenset[str], int, int | None, bool] | None,
        stem: Any,
        ignore: frozenset[str],
        positions: bool,
    ) -> None:
        self.finditer = expression.finditer
        self.findall = _findall(expression)
        self.strip = strip
        self.renumber = stop is not None and stop[3]
        self.words = _Words(stop, stem, ignore)
        self.positions = positions


def _findall(expression: re.Pattern[str]) -> Any:
    """findall with `expression`'s matches (its capturing groups made non-capturing, so findall
    returns whole matches; that does not change what matches), or None when the pattern cannot
    be rewritten so: the tokenizer's match objects are then used."""
    pattern = expression.pattern
    if not isinstance(pattern, str):
        return None
    if expression.groups:
        pattern = _non_capturing(pattern)
    compiled = re.compile(pattern, expression.flags)
    if compiled.groups:
        return None
    return compiled.findall


def _non_capturing(pattern: str) -> str:
    """`pattern` with each capturing '(' written '(?:' (not an escaped one, not one inside a
    character class, not '(?...' already)."""
    out = []
    i, n, in_class = 0, len(pattern), False
    while i < n:
        c = pattern[i]
        if c == "\\":
            out.append(pattern[i : i + 2])
            i += 2
            continue
        if in_class:
            if c == "]":
                in_class = False
        elif c == "[":
            in_class = True
            out.append(c)
            i += 1
            if pattern[i : i + 1] == "^":
                out.append("^")
                i += 1
            if pattern[i : i + 1] == "]":  # a ']' first in a class is a literal
                out.append("]")
                i += 1
            continue
        elif c == "(" and pattern[i + 1 : i + 2] != "?":
            out.append("(?:")
            i += 1
            continue
        out.append(c)
        i += 1
    return "".join(out)


def _chain_spec(field: Any) -> _ChainSpec | None:
    """The fast path's reading of `field`'s analysis, or None when the field is anything else
    (another format, a field boost, another tokenizer or filter): such fields go through
    whoosh's own field.index."""
    fmt = getattr(field, "format", None)
    ana = getattr(field, "analyzer", None)
    if type(fmt) not in (Positions, Frequency) or fmt.field_boost != 1.0:
        return None
    if type(ana) is not CompositeAnalyzer:
        return None
    items = list(ana.items)
    if type(items[0]) is not RegexTokenizer or items[0].gaps:
        return None
    rest = items[1:]
    strip = bool(rest) and type(rest[0]) is StripFilter
    if strip:
        rest.pop(0)
    if not rest or type(rest[0]) is not LowercaseFilter:
        return None
    rest.pop(0)
    stop = stem = None
    ignore: frozenset[str] = frozenset()
    if rest and type(rest[0]) is StopFilter:
        f = rest.pop(0)
        stop = (f.stops, f.min, f.max, f.renumber)
    if rest and type(rest[0]) is StemFilter:
        f = rest.pop(0)
        stem, ignore = f._stem, f.ignore
    if rest:
        return None
    return _ChainSpec(items[0].expression, strip, stop, stem, ignore, type(fmt) is Positions)


def _tokens(spec: _ChainSpec, value: str, lookup: Any) -> tuple[list[Any], Any]:
    """What `lookup` (a dict's __getitem__: the lowercased token -> its word, or None for a
    stop word) gives for the tokens of `value` that are kept, in token order, and their
    positions, as the analyzer's tokens carry them (StopFilter's renumbering included: the
    first kept token keeps its position, each later one takes the previous kept position + 1)."""
    if spec.findall is not None:
        tokens = spec.findall(value)
    else:
        tokens = [m.group(0) for m in spec.finditer(value)]
    if spec.strip:  # StripFilter, then LowercaseFilter, on each token
        tokens = map(str.strip, tokens)
    mapped = list(map(lookup, map(str.lower, tokens)))
    if None not in mapped:
        return mapped, range(len(mapped))
    kept = [w for w in mapped if w is not None]
    if spec.renumber:
        first = mapped.index(kept[0]) if kept else 0
        return kept, range(first, first + len(kept))
    return kept, [i for i, w in enumerate(mapped) if w is not None]


def _positions(spec: _ChainSpec, value: str) -> dict[str, list[int]]:
    """word -> its positions in `value`, as Positions.word_values collects them from the
    analyzer's tokens."""
    words, positions = _tokens(spec, value, spec.words.__getitem__)
    poses: dict[str, list[int]] = {}
    get = poses.get
    for pos, word in zip(positions, words, strict=True):
        found = get(word)
        if found is None:
            poses[word] = [pos]
        else:
            found.append(pos)
    return poses


def _encode_positions(poslist: list[int]) -> bytes:
    """whoosh's Positions.encode (2.7.5): the count, then the pickled list of deltas between
    positions, the same bytes with the deltas taken in C (its loop is a Python step per
    position: ~5 % of a 10k rebuild)."""
    return pack_uint(len(poslist)) + dumps(
        list(map(operator.sub, poslist, chain((0,), poslist))), 2
    )


class _Tails(dict):
    """position -> what Positions.encode([position]) writes after its 4-byte count."""

    def __init__(self, encode: Any) -> None:
        super().__init__()
        self.encode = encode

    def __missing__(self, pos: int) -> bytes:
        tail = self[pos] = self.encode([pos])[_UINT_SIZE:]
        return tail


_UINT_SIZE = len(pack_uint(0))
_ONE = pack_uint(1)


class _WordIds(dict):
    """One field's lowercased token -> the id of the word indexed for it (None for a stop
    word); `vocab` is the words by id."""

    def __init__(self, words: _Words) -> None:
        super().__init__()
        self.words = words
        self.vocab: list[str] = []
        self.of_word: dict[str, int] = {}

    def __missing__(self, token: str) -> int | None:
        word = self.words[token]
        wid = None
        if word is not None:
            wid = self.of_word.get(word)
            if wid is None:
                wid = self.of_word[word] = len(self.vocab)
                self.vocab.append(word)
        self[token] = wid
        return wid


class _HeldTokens:
    """A field's kept tokens (a field _chain_spec reads, text values, boost 1): each token's
    word id, and per value its docnum, token count and first position (the others follow one
    by one, as StopFilter renumbers them; a value whose positions have gaps keeps its list in
    `gaps`). The commit groups them into postings with one stable sort (_held_terms). ~8 bytes
    a token, where a tuple per posting with its encoded value cost ~70 bytes and a Python step
    per word of every value (with the per-token loop that grouped each value's positions, ~30 %
    of a 10k rebuild's CPU)."""

    def __init__(self, spec: _ChainSpec) -> None:
        self.ids = _WordIds(spec.words)
        self.words: list[int] = []
        self.docs = array("i")
        self.counts = array("i")
        self.firsts = array("i")
        self.gaps: list[tuple[int, list[int]]] = []  # (index of the first token, positions)

    def add(self, spec: _ChainSpec, value: str, docnum: int) -> int:
        """Holds the kept tokens of `value`; returns how many (the field length whoosh adds)."""
        wids, positions = _tokens(spec, value, self.ids.__getitem__)
        n = len(wids)
        if n:
            if type(positions) is not range:
                self.gaps.append((len(self.words), positions))
            self.words += wids
            self.docs.append(docnum)
            self.counts.append(n)
            self.firsts.append(positions[0])
        return n

    def columns(self) -> tuple[Any, Any, Any]:
        """Per token: word id, docnum, position (numpy arrays)."""
        import numpy as np

        words = np.array(self.words, np.int32)
        counts = np.frombuffer(self.counts, np.int32)
        docs = np.repeat(np.frombuffer(self.docs, np.int32), counts)
        # a value's k-th token is at its first position + k
        starts = np.cumsum(counts) - counts
        positions = np.arange(len(words), dtype=np.int32)
        positions -= np.repeat(
            (starts - np.frombuffer(self.firsts, np.int32)).astype(np.int32), counts
        )
        for at, listed in self.gaps:
            positions[at : at + len(listed)] = listed
        return words, docs, positions


def _held_terms(
    held: _HeldTokens, tails: _Tails | None
) -> Iterator[tuple[bytes, list[int], list[float], list[bytes]]]:
    """The postings of a field's held tokens, word by word in byte order: (word, docnums,
    weights, values), documents in docnum order, each value what the field's format encodes
    (a new bytes object per posting: whoosh pickles a block's values as a tuple, where an object
    met twice would be written as a back-reference), each weight the frequency (the sum of the
    tokens' boosts of 1.0). `tails` is the Positions format's (None: Frequency)."""
    import numpy as np  # here: the search CLI imports this module's importers without numpy

    n = len(held.words)
    if not n:
        return
    words, docs, positions = held.columns()
    vocab = held.ids.vocab
    order = sorted(range(len(vocab)), key=vocab.__getitem__)  # code point order = UTF-8 order
    rank = np.empty(len(vocab), np.int32)
    rank[order] = np.arange(len(vocab), dtype=np.int32)
    ranks = rank[words]
    # tokens arrive in docnum and position order: a stable sort by word keeps both
    idx = np.argsort(ranks, kind="stable")
    ranks = ranks[idx]
    docs = docs[idx]
    new = np.ones(n, bool)  # the first token of each (word, document): a posting
    np.not_equal(ranks[1:], ranks[:-1], out=new[1:])
    new[1:] |= docs[1:] != docs[:-1]
    starts = np.flatnonzero(new)
    freqs = np.diff(starts, append=n)
    ids = docs[starts].tolist()
    weights = freqs.astype(np.float64).tolist()
    if tails is not None:
        positions = positions[idx]
        values = list(map(_ONE.__add__, map(tails.__getitem__, positions[starts].tolist())))
        multi = np.flatnonzero(freqs > 1)
        if len(multi):
            plist = positions.tolist()
            for i, s, f in zip(
                multi.tolist(), starts[multi].tolist(), freqs[multi].tolist(), strict=True
            ):
                values[i] = _encode_positions(plist[s : s + f])
    else:  # Frequency.word_values's value: the frequency
        values = list(map(pack_uint, freqs.tolist()))
    bounds = np.flatnonzero(np.diff(ranks[starts], prepend=-1)).tolist()
    bounds.append(len(starts))
    for k, wid in enumerate(order):
        a, b = bounds[k], bounds[k + 1]
        yield vocab[wid].encode("utf-8"), ids[a:b], weights[a:b], values[a:b]


@contextmanager
def collector_off() -> Iterator[None]:
    """The cyclic GC off while a rebuild writes: it makes millions of small containers and no
    cycles, and the collector, left on, walks them again and again (~10% of a 10k build)."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if collecting:
            gc.enable()


# a rebuild's postings kept in memory for the search file: field -> word bytes -> (docnums,
# weights)
Held = dict[str, dict[bytes, tuple[Any, Any]]]


class BulkWriter:
    """Writes documents into a new, empty index as one segment, as whoosh's SegmentWriter would
    with add_document for each and commit(): `add` a document's fields, then `commit` (or
    `cancel`). Past `max_postings` tokens and postings held in memory, everything so far and
    everything after goes to whoosh's own pool, which spills sorted runs to disk, so memory
    stays bounded at any size (at whoosh's speed for that part).

    Held: the fields _chain_spec reads, their text values at boost 1 (all of SearchIndex's),
    as tokens (_HeldTokens, grouped into postings at commit); other fields as postings, field
    -> word bytes -> [(docnum, weight, value)] of whoosh's own tuples, in docnum order. A
    boosted or non-text value of a field held as tokens hands everything to the pool first (a
    field's postings are in one place)."""

    def __init__(self, writer: Any, max_postings: int) -> None:
        if type(writer) is not SegmentWriter or writer.segments or writer.docnum:
            raise ValueError("BulkWriter needs a fresh SegmentWriter on an empty index")
        for name, field in writer.schema.items():
            if field.separate_spelling() or field.vector:
                raise ValueError(f"BulkWriter writes no spelling words or vectors ({name})")
        self._w = writer
        self._schema = writer.schema
        # fields sharing an analyzer share its spec, so a token is filtered and stemmed once
        shared: dict[tuple[int, bool], _ChainSpec | None] = {}
        self._specs: dict[str, _ChainSpec | None] = {}
        for name, field in writer.schema.items():
            spec = _chain_spec(field)
            if spec is not None:
                spec = shared.setdefault((id(field.analyzer), spec.positions), spec)
            self._specs[name] = spec
        self._fields: dict[str, dict[Any, list[tuple[int, Any, Any]]]] = {}
        self._tokens: dict[str, _HeldTokens] = {}
        self._held = 0  # tokens and postings held
        self._max = max_postings
        self._pooled = False  # True once postings went to whoosh's pool
        self._tails: dict[int, _Tails] = {}  # per format object
        # field -> word -> (docnums, weights) of the fields named in keep_fields, kept from the
        # commit for the search file (write_search_file's `held`); None when any went to the pool
        self.keep_fields: frozenset[str] = frozenset()
        self.kept: Held | None = None
        # each document's stored fields by docnum, as whoosh stores them (kept when keep_fields
        # is set: the search file's documents without reading the stored column back)
        self.kept_stored: list[dict[str, Any]] = []
        self._freqs = [pack_uint(n) for n in range(64)]  # Frequency's value for n
        # the committed segment's id (the search file's name for it; None before a commit or
        # when there were no documents)
        self.segment_id: str | None = None

    def add(self, fields: dict[str, Any]) -> None:
        """SegmentWriter.add_document(**fields) (whoosh-reloaded 2.7.5), with the postings of
        the fields _chain_spec reads produced here and all postings grouped, not pooled."""
        w = self._w
        w._check_state()
        perdoc, schema, docnum = w.perdocwriter, self._schema, w.docnum
        docboost = w._doc_boost(fields)
        fieldnames = sorted(name for name in fields if not name.startswith("_"))
        for name in fieldnames:
            if name not in schema:
                raise UnknownFieldError(f"No field named {name!r} in {schema}")
        perdoc.start_doc(docnum)
        stored: dict[str, Any] = {}
        try:
            for name in fieldnames:
                value = fields.get(name)
                if value is None:
                    continue
                field = schema[name]
                length = 0
                if field.indexed:
                    fieldboost = w._field_boost(fields, name, docboost)
                    spec = self._specs[name]
                    text = spec is not None and isinstance(value, str)
                    if text and fieldboost == 1.0 and not self._pooled:
                        held = self._tokens.get(name)
                        if held is None:
                            held = self._tokens[name] = _HeldTokens(spec)
                        length = held.add(spec, value, docnum)
                        self._held += length
                        if self._held > self._max:
                            self._to_pool()
                        if not field.scorable:
                            length = 0
                    else:
                        if spec is not None and not self._pooled:
                            self._to_pool()
                        items = self._index(field, spec, value) if text else field.index(value)
                        scorable = field.scorable
                        for tbytes, freq, weight, vbytes in items:
                            weight *= fieldboost
                            if scorable:
                                length += freq
                            self._post(name, tbytes, docnum, weight, vbytes)
                customval = fields.get(f"_stored_{name}", value)
                perdoc.add_field(name, field, customval if field.stored else None, length)
                if field.stored and customval is not None:  # what add_field stores
                    stored[name] = customval
                column = field.column_type
                if column and customval is not None:
                    perdoc.add_column_value(name, column, field.to_column_value(customval))
        except Exception:
            perdoc.cancel_doc()
            raise
        perdoc.finish_doc()
        if self.keep_fields:
            self.kept_stored.append(stored)
        w._added = True
        w.docnum += 1

    def _value(self, field: Any, poslist: list[int]) -> bytes:
        """What the field's format writes for a word at these positions. A Positions value is a
        new object each time, as encode() makes: whoosh pickles a block's values as a tuple,
        and pickle writes an object met twice as a back-reference."""
        n = len(poslist)
        fmt = field.format
        if type(fmt) is Frequency:
            return self._freqs[n] if n < 64 else pack_uint(n)
        if n == 1:
            return _ONE + self._tails_of(fmt)[poslist[0]]
        return fmt.encode(poslist)

    def _index(
        self, field: Any, spec: _ChainSpec, value: str
    ) -> list[tuple[bytes, int, float, bytes]]:
        """field.index(value) for a field _chain_spec reads: (word bytes, frequency, weight,
        value); the weight is the sum of the tokens' boosts (1.0 each), so the frequency."""
        return [
            (word.encode("utf-8"), len(poslist), float(len(poslist)), self._value(field, poslist))
            for word, poslist in _positions(spec, value).items()
        ]

    def _post(self, name: str, tbytes: bytes, docnum: int, weight: float, vbytes: Any) -> None:
        if self._pooled:
            self._w.pool.add((name, tbytes, docnum, weight, vbytes))
            return
        terms = self._fields.get(name)
        if terms is None:
            terms = self._fields[name] = defaultdict(list)
        terms[tbytes].append((docnum, weight, vbytes))
        self._held += 1
        if self._held > self._max:
            self._to_pool()

    def _to_pool(self) -> None:
        """Hand every held posting to whoosh's pool (in order) and pool the rest from now on."""
        add = self._w.pool.add
        for name, terms in self._sorted_fields():
            for tbytes, ids, weights, values in terms:
                for docnum, weight, vbytes in zip(ids, weights, values, strict=True):
                    add((name, tbytes, docnum, weight, vbytes))
        self._fields.clear()
        self._tokens.clear()
        self._held = 0
        self._pooled = True

    def _sorted_fields(
        self,
    ) -> Iterator[tuple[str, Iterator[tuple[bytes, Any, Any, Any]]]]:
        """The held postings in the pool's order: field, word bytes, docnum (each document adds
        a word of a field once, in docnum order, so (field, word, docnum) never ties); per word
        (word bytes, docnums, weights, values)."""
        for name in sorted({*self._fields, *self._tokens}):
            held = self._tokens.get(name)
            if held is not None and not held.words:
                continue  # whoosh starts a field only for a posting
            if held is not None:
                field = self._schema[name]
                positions = type(field.format) is Positions
                tails = self._tails_of(field.format) if positions else None
                yield name, _held_terms(held, tails)
            else:
                terms = self._fields[name]
                yield name, ((key, *zip(*terms[key], strict=True)) for key in sorted(terms))

    def _tails_of(self, fmt: Any) -> _Tails:
        """The single positions' value tails of a format object."""
        tails = self._tails.get(id(fmt))
        if tails is None:
            tails = self._tails[id(fmt)] = _Tails(fmt.encode)
        return tails

    def commit(self, more: Callable[[], list[Any]] | None = None) -> None:
        """SegmentWriter.commit() for a writer that only added documents to an empty index.

        `more`, asked once this segment is written and before the commit lists it, returns
        segments another writer put into this index's directory (kb.index_part's second half):
        the commit lists them after this one."""
        w = self._w
        w._check_state()
        segments = []
        if w._added:
            w.perdocwriter.close()
            pdr = w.per_document_reader() if w.codec.length_stats else None
            try:
                if self._pooled:
                    w.fieldwriter.add_postings(self._schema, pdr, w.pool.iter_postings())
                else:
                    self._write_postings(pdr)
                w.fieldwriter.close()
            finally:
                if pdr:
                    pdr.close()
            w._close_segment()
            w._assemble_segment()
            segments.append(w.get_segment())
            self.segment_id = _segment_id_of(segments[0])
        else:
            w._close_segment()
        if more is not None:
            segments += more()
        w._commit_toc(segments)
        w._finish()

    def cancel(self) -> None:
        self._fields.clear()
        self._w.cancel()

    def _write_postings(self, pdr: Any) -> None:
        """FieldWriter.add_postings over the held postings: the same calls in the same order,
        each posting's field length read once per document and field, not once per posting,
        and whoosh's postings writer handed a block at a time (see _fill_blocks)."""
        fw, schema = self._w.fieldwriter, self._schema
        blocks = type(fw) is W3FieldWriter
        ndocs = self._w.docnum
        self.kept = {}
        for name, terms in self._sorted_fields():
            lengths = _doc_field_lengths(pdr, name, ndocs)
            fw.start_field(name, schema[name])
            add = fw.add
            kept = self.kept.setdefault(name, {}) if name in self.keep_fields else None
            for tbytes, ids, weights, values in terms:
                fw.start_term(tbytes)
                if kept is not None:
                    kept[tbytes] = (ids, weights)
                if None in values:  # whoosh's pool writes b"" for no value
                    values = [b"" if v is None else v for v in values]
                if not (blocks and _fill_blocks(fw._postwriter, ids, weights, values, lengths)):
                    for docnum, weight, vbytes in zip(ids, weights, values, strict=True):
                        add(docnum, weight, vbytes, lengths[docnum])
                fw.finish_term()
            fw.finish_field()
        self._fields.clear()
        self._tokens.clear()


_BYTE_LENGTH = [None, *(byte_to_length(b) for b in range(1, 256))]


def _doc_field_lengths(pdr: Any, name: str, ndocs: int) -> list[Any]:
    """[pdr.doc_field_length(d, name) for each docnum d] (what FieldWriter.add_postings asks
    for each posting), decoded from the length column's bytes in one go when it is the
    one-byte column whoosh writes, else asked document by document."""
    if pdr is None:
        return [0] * ndocs
    try:
        col = pdr._cached_reader(_lenfield(name), LENGTHS_COLUMN)
        if col is None:
            return [0] * ndocs  # no column: doc_field_length's default
        data = bytes(col._dbfile.get(col._basepos, col._count))
        if col._fixedlen == 1 and len(data) == col._count <= ndocs:
            data += bytes(ndocs - len(data))  # past the column's end: its default, 0
            return list(map(_BYTE_LENGTH.__getitem__, data))
    except Exception:  # another codec or column layout
        pass
    dfl = pdr.doc_field_length
    return [dfl(d, name) for d in range(ndocs)]


def _fill_blocks(pw: Any, ids: Any, weights: Any, values: list[bytes], lengths: list[Any]) -> bool:
    """What W3PostingsWriter.add_posting does for each posting of a term, a block at a time:
    every full block but the last is written as add_posting writes it when the next posting
    arrives; the last stays buffered for finish_postings (which inlines or writes it). False,
    having done nothing, for a writer this does not mirror."""
    if type(pw) is not W3PostingsWriter or pw._byteids or len(pw._ids):
        return False
    if "_write_block" not in pw.__dict__:  # finish_postings writes the last block with it too
        pw._write_block = MethodType(_write_block, pw)
    limit = pw._blocklimit
    for start in range(0, len(ids), limit):
        if start:
            _write_block(pw)
        chunk = ids[start : start + limit]
        pw._ids = array("I", chunk)
        w = weights[start : start + limit]
        pw._weights = array("f", w)
        top = max(w)
        pw._maxweight = top if top > 0 else 0
        # add_posting keeps only values and lengths that are not empty or 0 (filter: in C)
        pw._values = list(filter(None, values[start : start + limit]))
        lens = list(filter(None, map(lengths.__getitem__, chunk)))
        pw._minlength = min(lens) if lens else None
        pw._maxlength = max(lens) if lens else 0
    return True


_BYTE_OF_LENGTH: dict[Any, int] = {}


def _length_byte(length: Any) -> int:
    """whoosh's length_to_byte (a bisect per call), remembered per length."""
    found = _BYTE_OF_LENGTH.get(length)
    if found is None:
        found = _BYTE_OF_LENGTH[length] = length_to_byte(length)
    return found


def _write_block(pw: Any, last: bool = False) -> None:
    """W3PostingsWriter._write_block (whoosh-reloaded 2.7.5) for docnum ids, the same bytes:
    ids delta-encoded, weights minified, values as its _mini_values makes them, pickled
    (protocol 2), compressed at the writer's level, after the pickled block info. whoosh's own
    delta-encodes and checks the weights in Python generators, a step per posting (~10 % of a
    10k rebuild); here map, chain and array.count do it in C."""
    if not pw._blockcount:
        pw._postfile.write(WHOOSH3_HEADER_MAGIC)
    pw._terminfo.add_block(pw)
    ids, weights = pw._ids, pw._weights
    n = len(weights)
    if weights.count(1.0) == n:
        mini_weights: Any = None
    elif weights.count(weights[0]) == n:
        mini_weights = weights[0]
    else:
        mini_weights = tuple(weights)
    data = (tuple(map(operator.sub, ids, chain((0,), ids))), mini_weights, pw._mini_values())
    databytes = dumps(data, 2)
    comp = pw._compression
    if comp:
        databytes = compress(databytes, comp)
    infobytes = dumps(
        (
            len(ids),
            ids[-1],
            pw._maxweight,
            comp,
            _length_byte(pw._minlength),
            _length_byte(pw._maxlength),
        ),
        2,
    )
    blocklength = len(infobytes) + len(databytes)
    postfile = pw._postfile
    postfile.write_int(-blocklength if last else blocklength)
    postfile.write(infobytes)
    postfile.write(databytes)
    pw._blockcount += 1
    pw._new_block()


# --------------------------------------------------------------------------------------------
# the search file (kb/search_file.py reads it without whoosh)


def index_key(searcher: Any) -> str:
    """Which commit `searcher` reads: the generation and its segments' random ids (a rebuild
    starts the generation again in a new directory; the segment ids tell the two apart)."""
    reader = searcher.reader()
    ids = []
    for leaf, _offset in reader.leaf_readers():
        segment = leaf.segment() if hasattr(leaf, "segment") else None
        ids.append(segment.segment_id() if segment is not None else "-")
    return f"{reader.generation()}:{','.join(ids)}"


def _analyzer_spec(field: Any) -> dict[str, Any] | None:
    """A scored field's analysis as kb.search_file._Analyzer replays it, or None when the field
    is analysed some other way (no search file is then written: whoosh answers)."""
    from whoosh.lang.porter import stem as porter

    spec = _chain_spec(field)
    if spec is None:
        return None
    expression = field.analyzer.items[0].expression
    stop = spec.words.stop
    stem = spec.words.stem
    stemmers = [f for f in field.analyzer.items if type(f) is StemFilter]
    if stem is not None and (len(stemmers) != 1 or stemmers[0].stemfn is not porter):
        return None
    return {
        "pattern": expression.pattern,
        "flags": expression.flags,
        "strip": spec.strip,
        "stops": sorted(stop[0]) if stop is not None else None,
        "min": stop[1] if stop is not None else 0,
        "max": stop[2] if stop is not None else None,
        "stem": stem is not None,
        "ignore": sorted(spec.words.ignore),
    }


def _weighting_ok(weighting: Any) -> bool:
    """The file keeps what scores are made of and kb.search_file scores them with kb.bm25's
    copy of whoosh's BM25F: only whoosh's default BM25F (no per-field B) is replayed."""
    from kb import bm25

    return (
        type(weighting) is BM25F
        and weighting.B == bm25.B
        and weighting.K1 == bm25.K1
        and not weighting._field_B
    )


_SCHEMA_SQL = (
    "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    # the live documents, by whoosh segment id and docnum within that segment
    "CREATE TABLE IF NOT EXISTS docs (seg TEXT NOT NULL, local INTEGER NOT NULL, id TEXT NOT NULL,"
    " stored TEXT NOT NULL, PRIMARY KEY (seg, local)) WITHOUT ROWID",
    # per segment, field and word: every posting of the segment (deleted documents included,
    # as whoosh keeps them until a merge): docnums in the segment and weights as whoosh stores
    # them (32-bit floats); facets have docnums only
    "CREATE TABLE IF NOT EXISTS postings (seg TEXT NOT NULL, field TEXT NOT NULL,"
    " term TEXT NOT NULL, docs BLOB NOT NULL, weights BLOB NOT NULL,"
    " PRIMARY KEY (seg, field, term)) WITHOUT ROWID",
    # per segment and scored field: each document's field-length byte (whoosh's column)
    "CREATE TABLE IF NOT EXISTS lengths (seg TEXT NOT NULL, field TEXT NOT NULL,"
    " bytes BLOB NOT NULL, PRIMARY KEY (seg, field)) WITHOUT ROWID",
    # per segment: its deleted docnums
    "CREATE TABLE IF NOT EXISTS deleted (seg TEXT PRIMARY KEY, docs BLOB NOT NULL)",
)


def _segment_id(reader: Any) -> str:
    segment = reader.segment() if hasattr(reader, "segment") else None
    if segment is None:
        raise Unsupported("a reader that is not one whoosh segment")
    return _segment_id_of(segment)


def _segment_id_of(segment: Any) -> str:
    return str(segment.segment_id())


def _segment_readers(searcher: Any) -> list[Any]:
    """The readers of the commit's whoosh segments with documents, in docnum order (an empty
    index has one reader of no segment: none)."""
    out = []
    for sub, _offset in searcher.leaf_searchers():
        reader = sub.reader()
        if reader.doc_count_all() == 0:  # no documents, no rows (whoosh's EmptyReader)
            continue
        out.append(reader)
    return out


def write_search_file(
    searcher: Any,
    where: Path,
    stamp_json: str,
    held: Held | None = None,
    stored: list[dict[str, Any]] | None = None,
    held_segment: str | None = None,
    base: Path | None = None,
) -> bool:
    """Write kb.search_file's file for the commit `searcher` reads into the directory `where`.

    What a score is made of is kept, not the score (which changes with every document added
    anywhere): per posting its weight and its document's field-length byte, per field the
    summed length, per word (read at query time) its postings per segment. whoosh never
    rewrites a segment, only marks its deleted documents until a merge replaces it, so the file
    is kept by segment: an existing file of this index is updated in place (rows of segments
    that went away deleted, new segments' rows added, deletions and totals rewritten), which
    costs what the edit costs; otherwise it is written beside and renamed over the old one.
    False, with no file left, when the schema's analysis or the weighting is not one the reader
    replays.

    `held` (BulkWriter.kept, a rebuild's postings still in memory: field -> word -> (docnums,
    weights)) saves decoding every posting block again, and `stored` (BulkWriter.kept_stored,
    its documents' stored fields by docnum) reading the stored column back; both are of the
    segment `held_segment` (BulkWriter.segment_id). `base`, a file segment_rows wrote (a split
    rebuild's other segment, kb/index_part.py), becomes the new file: its segment's rows are
    not made again."""
    from kb.search_file import FIELD_BOOSTS, FILE_NAME, FORMAT

    path = where / FILE_NAME
    schema = searcher.schema
    specs = {}
    for name in FIELD_BOOSTS:
        spec = _analyzer_spec(schema[name]) if name in schema else None
        if spec is None:
            path.unlink(missing_ok=True)
            return False
        specs[name] = spec
    if not _weighting_ok(searcher.weighting):
        path.unlink(missing_ok=True)
        return False
    analyzers = json.dumps(specs, sort_keys=True)
    if path.is_file() and held is None and base is None:
        try:
            if _update_search_file(searcher, path, stamp_json, analyzers, FORMAT):
                return True
        except (sqlite3.Error, Unsupported, ValueError, KeyError):
            pass  # written whole below
    tmp = where / f".{FILE_NAME}.{os.getpid()}.tmp"
    if base is not None:
        os.replace(base, tmp)
    conn = _rows_file(tmp, fresh=base is None)
    try:
        conn.execute("BEGIN")
        done = set()
        if base is not None:
            done = {seg for (seg,) in conn.execute("SELECT DISTINCT seg FROM lengths")}
        for reader in _segment_readers(searcher):
            seg = _segment_id(reader)
            if seg in done:
                done.discard(seg)
                if not reader.has_deletions():
                    continue
                _delete_segment(conn, seg)
            fresh = held is not None and seg == held_segment and not reader.has_deletions()
            _insert_segment(conn, reader, held if fresh else None, stored if fresh else None)
        for seg in done:  # in the base and not in this commit (none in a split rebuild)
            _delete_segment(conn, seg)
        _write_totals(conn, searcher, stamp_json, analyzers, FORMAT)
        conn.execute("COMMIT")
    except Unsupported:  # a segment this cannot read: no file (whoosh answers)
        conn.close()
        tmp.unlink(missing_ok=True)
        path.unlink(missing_ok=True)
        return False
    except BaseException:
        conn.close()
        tmp.unlink(missing_ok=True)
        raise
    conn.close()
    os.replace(tmp, path)
    return True


def _rows_file(path: Path, *, fresh: bool) -> sqlite3.Connection:
    """A connection to the search file being written at `path` (created anew when `fresh`),
    its tables made; nothing else reads it until it is renamed into place, so no journal."""
    if fresh:
        path.unlink(missing_ok=True)
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA journal_mode = OFF")
    conn.execute("PRAGMA synchronous = OFF")
    for sql in _SCHEMA_SQL:
        conn.execute(sql)
    return conn


def segment_rows(
    path: Path,
    searcher: Any,
    held: Held | None,
    stored: list[dict[str, Any]] | None,
) -> None:
    """The search file's rows of the one segment `searcher` reads (`held` and `stored` as
    write_search_file takes them), in a new file at `path` without totals: a split rebuild's
    second process writes them, and the index's file starts from them (its `base`)."""
    conn = _rows_file(path, fresh=True)
    try:
        conn.execute("BEGIN")
        for reader in _segment_readers(searcher):
            _insert_segment(conn, reader, held, stored)
        conn.execute("COMMIT")
    finally:
        conn.close()


def _update_search_file(
    searcher: Any, path: Path, stamp_json: str, analyzers: str, fmt: int
) -> bool:
    """The file at `path` brought up to `searcher`'s commit in place, in one transaction
    (readers see the old commit or the new, never half); False when it is not a file this can
    update (another format or analysis: written whole)."""
    conn = sqlite3.connect(path, timeout=30.0, isolation_level=None)
    try:
        conn.execute("BEGIN IMMEDIATE")
        meta = dict(conn.execute("SELECT key, value FROM meta").fetchall())
        if int(meta.get("format", -1)) != fmt or meta.get("analyzers") != analyzers:
            conn.execute("ROLLBACK")
            return False
        old = {seg for seg, _count in json.loads(meta["segments"])}
        old_deleted = {
            seg: set(_unpack_ids(blob))
            for seg, blob in conn.execute("SELECT seg, docs FROM deleted")
        }
        now = set()
        for reader in _segment_readers(searcher):
            seg = _segment_id(reader)
            now.add(seg)
            if seg not in old:
                _insert_segment(conn, reader, None, None)
                continue
            gone = set(reader.deleted_docs_set) - old_deleted.get(seg, set())
            if gone:
                conn.executemany(
                    "DELETE FROM docs WHERE seg = ? AND local = ?", ((seg, d) for d in gone)
                )
        for seg in old - now:
            _delete_segment(conn, seg)
        _write_totals(conn, searcher, stamp_json, analyzers, fmt)
        conn.execute("COMMIT")
        return True
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
    finally:
        conn.close()


def _delete_segment(conn: Any, seg: str) -> None:
    for table in ("docs", "postings", "lengths", "deleted"):
        conn.execute(f"DELETE FROM {table} WHERE seg = ?", (seg,))


def _write_totals(conn: Any, searcher: Any, stamp_json: str, analyzers: str, fmt: int) -> None:
    """The small rows every commit changes: stamp, which commit, the segments in order with
    their document counts and deletions, each scored field's summed length (whoosh's
    avg_field_length is it over the document count, deleted documents included)."""
    from kb.search_file import SCORED_FIELDS

    reader = searcher.reader()
    segments = []
    conn.execute("DELETE FROM deleted")
    for r in _segment_readers(searcher):
        seg = _segment_id(r)
        segments.append((seg, r.doc_count_all()))
        if r.has_deletions():
            deleted = array("I", sorted(r.deleted_docs_set)).tobytes()
            conn.execute("INSERT INTO deleted VALUES (?, ?)", (seg, deleted))
    lengths = {name: int(reader.field_length(name)) for name in SCORED_FIELDS}
    conn.executemany(
        "INSERT OR REPLACE INTO meta VALUES (?, ?)",
        [
            ("format", str(fmt)),
            ("stamp", stamp_json),
            ("index_key", index_key(searcher)),
            ("analyzers", analyzers),
            ("segments", json.dumps(segments)),
            ("field_lengths", json.dumps(lengths)),
        ],
    )


def _unpack_ids(blob: bytes) -> array:
    out = array("I")
    out.frombytes(blob)
    return out


def _insert_segment(
    conn: Any,
    reader: Any,
    held: Held | None,
    stored: list[dict[str, Any]] | None,
) -> None:
    """Rows of one whoosh segment: its live documents' stored fields, every posting of every
    scored field (docnum and weight) and the field's length bytes, every facet value's
    documents."""
    from kb.search_file import SCORED_FIELDS
    from kb.search_query import FACETS

    seg = _segment_id(reader)
    deleted = reader.deleted_docs_set if reader.has_deletions() else frozenset()
    if stored is None or len(stored) != reader.doc_count_all():
        docs: Any = reader.iter_docs()
    else:
        docs = enumerate(stored)
    conn.executemany(
        "INSERT INTO docs VALUES (?, ?, ?, ?)",
        (
            (
                seg,
                docnum,
                fields_["id"],
                json.dumps({k: v for k, v in fields_.items() if k != "digest"}),
            )
            for docnum, fields_ in docs
            if docnum not in deleted
        ),
    )
    for name in SCORED_FIELDS:
        lengths = _segment_lengths(reader, name)
        if lengths is None:  # no column (no document has the field) or another codec
            lengths = bytes(
                length_to_byte(reader.doc_field_length(d, name, 0))
                for d in range(reader.doc_count_all())
            )
        conn.execute("INSERT INTO lengths VALUES (?, ?, ?)", (seg, name, lengths))
        if held is not None and name in held:
            terms: Any = held[name].items()
        else:
            terms = ((t, _raw_postings(reader, name, t)) for t in reader.lexicon(name))
        conn.executemany(
            "INSERT INTO postings VALUES (?, ?, ?, ?, ?)",
            (
                (
                    seg,
                    name,
                    tbytes.decode("utf-8"),
                    array("I", ids).tobytes(),
                    array("f", weights).tobytes(),  # as the block stores them: 32-bit
                )
                for tbytes, (ids, weights) in terms
            ),
        )
    for name in FACETS:
        if held is not None and name in held:  # a rebuild's, still in memory
            docs_of: Any = ((t, ids) for t, (ids, _w) in held[name].items())
        else:
            docs_of = ((t, _raw_postings(reader, name, t)[0]) for t in reader.lexicon(name))
        conn.executemany(
            "INSERT INTO postings VALUES (?, ?, ?, ?, '')",
            (
                (seg, name, tbytes.decode("utf-8"), array("I", ids).tobytes())
                for tbytes, ids in docs_of
            ),
        )


def _raw_postings(reader: Any, name: str, tbytes: bytes) -> tuple[list[int], list[float]]:
    """Every posting of a word in one segment, deleted documents included: (docnums,
    weights), a block at a time for whoosh's own posting lists."""
    m = reader.postings(name, tbytes)
    if type(m) is FilterMatcher and m._exclude:
        m = m.child
    ids: list[int] = []
    weights: list[float] = []
    if type(m) is W3LeafMatcher:
        while m.is_active():
            if m._ids is None:
                if m._data is None:
                    m._read_data()
                m._ids = m._data[0] if m._byteids else tuple(accumulate(m._data[0]))
            if m._weights is None:
                m._read_weights()
            ids += m._ids[m._i :]
            weights += m._weights[m._i :]
            m._i = m._blocklength
            m._next_block()
        return ids, weights
    while m.is_active():
        ids.append(m.id())
        weights.append(m.weight())
        m.next()
    return ids, weights


def _segment_lengths(reader: Any, fieldname: str) -> bytes | None:
    """A segment's field-length bytes (one per docnum) read in one go, or None (another codec
    or whoosh version: the caller then drains posting by posting)."""
    try:
        col = reader._perdoc._cached_reader(_lenfield(fieldname), LENGTHS_COLUMN)
        data = bytes(col._dbfile.get(col._basepos, col._count)) if col else None
        ok = data is not None and col._fixedlen == 1 and len(data) == col._count
        # docnums past the column's end read as its default, 0
        pad = bytes(max(0, reader.doc_count_all() - len(data or b"")))
        return data + pad if ok and data is not None else None
    except Exception:
        return None
