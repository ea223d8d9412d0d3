"""Every signature of a KB compiled into arrays, so one analysis evaluates them all at once.

Why: a team's KB holds many entries about the same syscalls and wait events, and each of those
signatures really has to be evaluated against a paste that shows them. Walking each condition tree
in Python made an analysis cost grow with the KB (60x from 100 to 10,000 entries). Here a
*program* holds the signatures one view can apply to (a block of one format, the merged blocks of
a source set, the whole text); fact leaves are compared in bulk with numpy, text leaves go through
a literal prefilter or RE2 sets, and the trees are reduced level by level. The verdicts are
kb.evaluate.quick()'s, leaf for leaf: both apply kb/conditions.py's rules, here elementwise
(tests/test_sigindex.py checks every signature of the starter KB and of a synthetic KB).
"""

from __future__ import annotations

import json
import math
import threading
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import re2

from kb.conditions import OPS, fact_held, needle_of, numbers_compare, operands, text_held
from kb.literals import any_probe, grams, rarest_grams
from kb.literals import probe as literal_probe
from kb.signatures import FactCondition, TextCondition, walk

# A view's verdict on a signature packed in one integer, so "best view" is a max:
# held first, then the number of leaves that held (as quick() counts them).
HELD = 1 << 20
SET_CHUNK = 128  # patterns per RE2 set: keeps each set's DFA small
SET_MAX_MEM = 64 << 20

_AND, _OR, _NOT = 0, 1, 2
_KIND = {"all": _AND, "any": _OR, "not": _NOT}


@dataclass
class View:
    """What one view gives every leaf: fact values by slot, string facts apart, and the text."""

    facts: Mapping
    text: str
    values: np.ndarray  # float64 per slot, NaN where the view has no number for it
    strings: list[int]  # slots holding a string (compared in Python, as evaluate does)
    present: set[int]  # slots the view has any value for
    present_ix: np.ndarray  # the same, as an array
    lowered: str = ""  # casefolded text, for the literal prefilter
    grams: set[str] | None = None
    lower: str | None = None  # text.lower(), as evaluate counts case-blind needles
    data: bytes | None = None  # UTF-8 text, as evaluate matches regexes


@dataclass
class _Bucket:
    """Text leaves sharing one trigram of their required literal (see Program._compile_texts)."""

    probes: set[str] | None  # the literals; None: no literal, always scanned
    needles: dict[tuple[str, bool], list[tuple[int, int]]] = field(
        default_factory=lambda: defaultdict(list)
    )
    # each set with its members by pattern index (None: matches the empty string, counted alone)
    sets: list[tuple[re2.Set, list[tuple[int, TextCondition] | None]]] = field(default_factory=list)


class Slots:
    """(fact, key) -> slot number, shared by all programs of one index."""

    def __init__(self) -> None:
        self.ids: dict[tuple[str, str | None], int] = {}

    def get(self, fact: str, key: str | None) -> int:
        return self.ids.setdefault((fact, key), len(self.ids))

    def view(self, facts: Mapping, text: str) -> View:
        # one spare slot at the end holds 0.0: padding for the operand lists of `ref` leaves
        values = np.full(len(self.ids) + 1, np.nan)
        values[-1] = 0.0
        strings: list[int] = []
        present: set[int] = set()
        ids = self.ids
        for name, value in facts.items():
            if isinstance(value, Mapping):
                for k, v in value.items():
                    slot = ids.get((name, k))
                    if slot is not None:
                        present.add(slot)
                        _put(values, strings, slot, v)
            else:
                slot = ids.get((name, None))
                if slot is not None:
                    present.add(slot)
                    _put(values, strings, slot, value)
        return View(
            facts=facts,
            text=text,
            values=values,
            strings=strings,
            present=present,
            present_ix=np.array(sorted(present), dtype=np.int64),
        )


def _put(values: np.ndarray, strings: list[int], slot: int, v) -> None:
    if isinstance(v, str):
        strings.append(slot)
    elif isinstance(v, int | float):
        try:
            values[slot] = float(v)
        except OverflowError:
            values[slot] = math.inf  # not finite: holds for no comparison, as in evaluate
    # anything else (None, lists) holds for no comparison: the slot stays NaN


class Program:
    """The signatures one kind of view applies to, flattened. Flat signatures (one leaf, or one
    all/any of leaves: most of them) are scored from the held leaves alone; nested trees are
    reduced level by level. Fact leaves are indexed by the slot they read, so a view touches
    only the leaves of facts it has."""

    def __init__(self, conds: Sequence, slots: Slots) -> None:
        leaves: list = []
        inner: list[tuple[int, list[tuple[str, int]]]] = []  # (kind, children as refs)
        leaf_flat: list[int] = []  # per leaf: the flat signature it belongs to, or -1

        def add(cond) -> tuple[str, int]:
            if cond.children:
                refs = [add(c) for c in cond.children]
                inner.append((_KIND[cond.kind], refs))
                return ("i", len(inner) - 1)
            leaves.append(cond)
            leaf_flat.append(-1)
            return ("l", len(leaves) - 1)

        flat_pos, flat_need, nested_pos, nested_roots = [], [], [], []
        for pos, cond in enumerate(conds):
            # flat: a lone leaf (it holds when its one leaf does), or one all/any of leaves
            kids = (cond,) if not cond.children else cond.children
            if cond.kind != "not" and not any(c.children for c in kids):
                for c in kids:
                    leaves.append(c)
                    leaf_flat.append(len(flat_pos))
                flat_pos.append(pos)
                flat_need.append(len(kids) if cond.kind == "all" else 1)
            else:
                nested_pos.append(pos)
                nested_roots.append(add(cond))
        n_leaves = len(leaves)
        self.n_sigs = len(conds)
        self.n_leaves = n_leaves
        self.size = n_leaves + len(inner)
        self.leaf_flat = np.array(leaf_flat, dtype=np.int64)
        self.flat_pos = np.array(flat_pos, dtype=np.int64)
        self.flat_need = np.array(flat_need, dtype=np.int64)
        self.nested_pos = np.array(nested_pos, dtype=np.int64)

        def node(ref: tuple[str, int]) -> int:
            return ref[1] if ref[0] == "l" else n_leaves + ref[1]

        self.roots = np.array([node(r) for r in nested_roots], dtype=np.int64)
        leafcount = np.ones(self.size, dtype=np.int32)
        height = [0] * len(inner)
        steps: dict[tuple[int, int], list[tuple[int, list[int]]]] = defaultdict(list)
        for k, (kind, refs) in enumerate(inner):  # children come before their parent
            kids = [node(r) for r in refs]
            height[k] = 1 + max((height[r[1]] if r[0] == "i" else 0) for r in refs)
            leafcount[n_leaves + k] = int(sum(leafcount[c] for c in kids))
            steps[(height[k], kind)].append((n_leaves + k, kids))
        self.leafcount = leafcount
        self.steps: list[tuple[int, np.ndarray, np.ndarray, np.ndarray]] = []
        for (_, kind), group in sorted(steps.items()):
            nodes = np.array([n for n, _ in group], dtype=np.int64)
            flat = np.array([c for _, kids in group for c in kids], dtype=np.int64)
            offsets = np.cumsum([0] + [len(kids) for _, kids in group[:-1]], dtype=np.int64)
            self.steps.append((kind, nodes, flat, offsets))
        self._compile_leaves(leaves, slots)

    def _compile_leaves(self, leaves: list, slots: Slots) -> None:
        cmp: list[tuple[int, int, float, int]] = []  # (slot, leaf, threshold, op)
        ref: list[tuple[int, int, list[int], float, int]] = []  # (slot, leaf, operands, times, op)
        self.python_leaves: list[tuple[int, FactCondition, list[int]]] = []
        self.by_slot: dict[int, list[int]] = defaultdict(list)  # fact leaves per slot they read
        self.leaf_conds = leaves
        texts: list[tuple[int, TextCondition]] = []
        for i, cond in enumerate(leaves):
            if isinstance(cond, TextCondition):
                texts.append((i, cond))
                continue
            read = [slots.get(cond.fact, cond.key)]
            if cond.ref is not None:
                operand_slots = [slots.get(f, k) for f, k in operands(cond.ref)]
                read += operand_slots
                ref.append((read[0], i, operand_slots, cond.ref.times, OPS.index(cond.op)))
            elif isinstance(cond.value, str):
                self.python_leaves.append((i, cond, read))
            else:
                cmp.append((read[0], i, float(cond.value), OPS.index(cond.op)))
            for s in set(read):
                self.by_slot[s].append(i)
        n_slots = len(slots.ids)
        cmp.sort(key=lambda c: (c[0], c[1]))
        ref.sort(key=lambda r: (r[0], r[1]))
        self.cmp_ptr = _pointers([c[0] for c in cmp], n_slots)
        self.cmp_slot = np.array([c[0] for c in cmp], dtype=np.int64)
        self.cmp_leaf = np.array([c[1] for c in cmp], dtype=np.int64)
        self.cmp_right = np.array([c[2] for c in cmp], dtype=float)
        self.cmp_op = np.array([c[3] for c in cmp], dtype=np.int8)
        width = max((len(r[2]) for r in ref), default=0)
        self.ref_ptr = _pointers([r[0] for r in ref], n_slots)
        self.ref_leaf = np.array([r[1] for r in ref], dtype=np.int64)
        self.ref_slot = np.array([r[0] for r in ref], dtype=np.int64)
        # operand lists padded with the view's spare 0.0 slot (index -1): adding 0.0 keeps sums
        self.ref_operands = np.array(
            [r[2] + [-1] * (width - len(r[2])) for r in ref], dtype=np.int64
        ).reshape(len(ref), width)
        self.ref_times = np.array([r[3] for r in ref], dtype=float)
        self.ref_op = np.array([r[4] for r in ref], dtype=np.int8)
        self._compile_texts(texts)

    def _compile_texts(self, texts: list[tuple[int, TextCondition]]) -> None:
        """Text leaves in buckets keyed by the rarest trigram of the literal they require (None:
        no such literal), so a paste skips every bucket whose literal it lacks. In a bucket,
        plain texts are counted once per distinct needle and regexes go through RE2 sets (one
        scan for many patterns); patterns matching the empty string, or that a set refuses, are
        evaluated one by one."""
        self.always: list[tuple[int, TextCondition]] = []
        keyed = [(literal_probe(cond), i, cond) for i, cond in texts]
        members: dict[str | None, list[tuple[str | None, int, TextCondition]]] = defaultdict(list)
        for item, key in zip(keyed, rarest_grams([p for p, _, _ in keyed]), strict=True):
            members[key].append(item)
        self.buckets: dict[str | None, _Bucket] = {
            key: self._bucket(items) for key, items in members.items()
        }

    def _bucket(self, items: list[tuple[str | None, int, TextCondition]]) -> _Bucket:
        bucket = _Bucket(probes={p for p, _, _ in items if p is not None} or None)
        regexes: dict[bool, list[tuple[int, TextCondition]]] = defaultdict(list)
        for _, i, cond in items:
            if cond.text is not None:
                bucket.needles[(needle_of(cond), cond.case_sensitive)].append((i, cond.min_count))
            else:
                regexes[cond.case_sensitive].append((i, cond))
        for case_sensitive, leaves in regexes.items():
            for start in range(0, len(leaves), SET_CHUNK):
                options = re2.Options()
                options.case_sensitive = case_sensitive
                options.log_errors = False
                options.max_mem = SET_MAX_MEM
                rset = re2.Set.SearchSet(options)
                added: list[tuple[int, TextCondition]] = []
                for i, cond in leaves[start : start + SET_CHUNK]:
                    try:
                        rset.Add(cond.regex)
                    except re2.error:
                        self.always.append((i, cond))
                        continue
                    added.append((i, cond))
                if added:
                    rset.Compile()
                    # a pattern that matches the empty string matches everywhere: counted alone
                    empty = set(rset.Match(b"") or ())
                    self.always += [added[j] for j in sorted(empty)]
                    bucket.sets.append(
                        (rset, [None if j in empty else a for j, a in enumerate(added)])
                    )
        return bucket

    # -- persistence (kb.matcher saves a compiled KB beside the database) --------------------

    _ARRAYS = [
        "leaf_flat",
        "flat_pos",
        "flat_need",
        "nested_pos",
        "roots",
        "leafcount",
        "cmp_ptr",
        "cmp_slot",
        "cmp_leaf",
        "cmp_right",
        "cmp_op",
        "ref_ptr",
        "ref_leaf",
        "ref_slot",
        "ref_operands",
        "ref_times",
        "ref_op",
    ]
    # every array name and document key `parts` writes and `from_parts` reads, here beside
    # them: a saved KB's load checks them before any program is made (on first use)
    SAVED_ARRAYS = frozenset(
        [
            *_ARRAYS,
            "step_kind",
            *(f"step_{name}{ptr}" for name in ("nodes", "flat", "offsets") for ptr in ("", "_ptr")),
            "by_slot_slot",
            "by_slot_leaf",
            "leaf_blob",
            "leaf_ptr",
            "bucket_blob",
            "bucket_ptr",
        ]
    )
    SAVED_DOC = frozenset(["n_sigs", "n_leaves", "size", "python_leaves", "always", "bucket_keys"])

    def parts(self) -> tuple[dict[str, np.ndarray], dict]:
        """(arrays, JSON-able document) holding everything evaluation reads. The RE2 sets are
        kept as their patterns, in the order they were added, and compiled again on first use."""
        arrays = {name: getattr(self, name) for name in self._ARRAYS}
        kinds = [kind for kind, _, _, _ in self.steps]
        arrays["step_kind"] = np.array(kinds, dtype=np.int64)
        for name, k in (("nodes", 1), ("flat", 2), ("offsets", 3)):
            pieces = [step[k] for step in self.steps]
            arrays[f"step_{name}"] = np.concatenate(pieces) if pieces else np.zeros(0, np.int64)
            arrays[f"step_{name}_ptr"] = np.cumsum([0] + [len(p) for p in pieces]).astype(np.int64)
        pairs = sorted((slot, i) for slot, leaves in self.by_slot.items() for i in leaves)
        arrays["by_slot_slot"] = np.array([p[0] for p in pairs], dtype=np.int64)
        arrays["by_slot_leaf"] = np.array([p[1] for p in pairs], dtype=np.int64)
        blob, ptr = _blob([_leaf_json(c) for c in self.leaf_conds])
        arrays["leaf_blob"], arrays["leaf_ptr"] = blob, ptr
        # each bucket's JSON apart, parsed when a paste reaches the bucket (_SavedBuckets)
        keys = list(self.buckets)
        blob, ptr = _blob([json.dumps(_bucket_json(self.buckets[key])) for key in keys])
        arrays["bucket_blob"], arrays["bucket_ptr"] = blob, ptr
        doc = {
            "n_sigs": self.n_sigs,
            "n_leaves": self.n_leaves,
            "size": self.size,
            "python_leaves": [[i, read] for i, _, read in self.python_leaves],
            "always": [i for i, _ in self.always],
            "bucket_keys": keys,
        }
        return arrays, doc

    @classmethod
    def from_parts(cls, arrays: Mapping[str, np.ndarray], doc: Mapping) -> Program:
        """The program `parts` saved, without compiling anything (see parts)."""
        prog = cls.__new__(cls)
        for name in cls._ARRAYS:
            setattr(prog, name, arrays[name])
        prog.n_sigs, prog.n_leaves, prog.size = doc["n_sigs"], doc["n_leaves"], doc["size"]
        steps = []
        for k, kind in enumerate(arrays["step_kind"].tolist()):
            part = []
            for name in ("nodes", "flat", "offsets"):
                ptr = arrays[f"step_{name}_ptr"]
                part.append(arrays[f"step_{name}"][ptr[k] : ptr[k + 1]])
            steps.append((kind, part[0], part[1], part[2]))
        prog.steps = steps
        prog.leaf_conds = _LazyLeaves(arrays["leaf_blob"], arrays["leaf_ptr"])
        prog.by_slot = _CsrMap(arrays["by_slot_slot"], arrays["by_slot_leaf"])
        prog.python_leaves = [(i, prog.leaf_conds[i], read) for i, read in doc["python_leaves"]]
        prog.always = [(i, prog.leaf_conds[i]) for i in doc["always"]]
        prog.buckets = _SavedBuckets(
            doc["bucket_keys"], arrays["bucket_blob"], arrays["bucket_ptr"], prog.leaf_conds
        )
        return prog

    def prepare(self) -> None:
        """Compile now what a saved program compiles on first use (its RE2 sets)."""
        for bucket in self.buckets.values():
            for found in bucket.sets:
                if isinstance(found, _LazySet):
                    found.compiled()

    # -- evaluation -------------------------------------------------------------------------

    def _text_leaves(self, view: View, held: np.ndarray) -> None:
        text = view.text
        for i, cond in self.always:
            held[i] = text_held(cond, text)
        if not text:
            return  # no needle or non-empty match fits in an empty text
        keyed = [k for k in self.buckets if k is not None]
        if keyed and view.grams is None and len(view.lowered) < 4 * len(keyed):
            view.grams = grams(view.lowered)
        if view.grams is not None:
            keyed = [k for k in keyed if k in view.grams]
        for key in [None, *keyed] if None in self.buckets else keyed:
            bucket = self.buckets[key]
            if bucket.probes is not None and not any(p in view.lowered for p in bucket.probes):
                continue
            for (needle, case_sensitive), leaves in bucket.needles.items():
                if not case_sensitive and view.lower is None:
                    view.lower = text.lower()
                count = (text if case_sensitive else view.lower or "").count(needle)
                for i, min_count in leaves:
                    held[i] = count >= min_count
            for found in bucket.sets:
                got = found.compiled_for(view.lowered) if isinstance(found, _LazySet) else found
                if got is None:
                    continue  # none of its patterns can match this text
                rset, added = got
                if view.data is None:
                    view.data = text.encode("utf-8", "replace")
                for j in rset.Match(view.data) or ():
                    member = added[j]
                    if member is not None:
                        i, cond = member
                        held[i] = cond.min_count == 1 or text_held(cond, text)

    def leaf_verdicts(self, view: View) -> np.ndarray:
        values = view.values
        held = np.zeros(self.n_leaves, dtype=bool)
        present = view.present_ix
        idx = select(self.cmp_ptr, present)
        if len(idx):
            left = values[self.cmp_slot[idx]]
            right = self.cmp_right[idx]
            held[self.cmp_leaf[idx]] = _compare_by_code(self.cmp_op[idx], left, right)
        idx = select(self.ref_ptr, present)
        if len(idx):
            left = values[self.ref_slot[idx]]
            operands = self.ref_operands[idx]
            total = np.zeros(len(idx))
            for k in range(operands.shape[1]):
                total = total + values[operands[:, k]]
            right = total * self.ref_times[idx]
            held[self.ref_leaf[idx]] = _compare_by_code(self.ref_op[idx], left, right)
        # strings and string thresholds: evaluate's own rules, leaf by leaf (rare)
        for slot in view.strings:
            for i in self.by_slot.get(slot, ()):
                held[i] = fact_held(self.leaf_conds[i], view.facts)
        for i, cond, read in self.python_leaves:
            if read[0] in view.present:
                held[i] = fact_held(cond, view.facts)
        self._text_leaves(view, held)
        return held

    def ranks(self, view: View) -> np.ndarray:
        """Per signature: HELD if it holds on this view, plus the number of leaves that held."""
        out = np.zeros(self.n_sigs, dtype=np.int64)
        if not self.n_leaves:
            return out
        leaf = self.leaf_verdicts(view)
        if len(self.flat_pos):
            sig = self.leaf_flat[np.flatnonzero(leaf)]
            counts = np.bincount(sig[sig >= 0], minlength=len(self.flat_pos))
            out[self.flat_pos] = (counts >= self.flat_need) * HELD + counts
        if len(self.nested_pos):
            held = np.zeros(self.size, dtype=bool)
            count = np.zeros(self.size, dtype=np.int32)
            held[: self.n_leaves] = leaf
            count[: self.n_leaves] = leaf
            for kind, nodes, flat, offsets in self.steps:
                if kind == _NOT:
                    held[nodes] = ~held[flat]
                    count[nodes] = self.leafcount[nodes] - count[flat]
                else:
                    reduce = np.logical_and if kind == _AND else np.logical_or
                    held[nodes] = reduce.reduceat(held[flat], offsets)
                    count[nodes] = np.add.reduceat(count[flat], offsets)
            roots = self.roots
            out[self.nested_pos] = held[roots].astype(np.int64) * HELD + count[roots]
        return out


def _leaf_json(cond) -> str:
    return json.dumps([cond.kind, cond.model_dump(mode="json", by_alias=True, exclude_unset=True)])


def _blob(texts: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """Many strings as one byte array and its CSR pointers (no pickle in a saved KB)."""
    data = [t.encode("utf-8", "surrogatepass") for t in texts]
    ptr = np.cumsum([0] + [len(d) for d in data]).astype(np.int64)
    return np.frombuffer(b"".join(data), dtype=np.uint8).copy(), ptr


def _set_case(members: list) -> bool:
    return next((m[1].case_sensitive for m in members if m is not None), False)


def _bucket_json(bucket: _Bucket) -> dict:
    return {
        "probes": sorted(bucket.probes) if bucket.probes is not None else None,
        "needles": [
            [needle, cs, [list(x) for x in leaves]]
            for (needle, cs), leaves in bucket.needles.items()
        ],
        "sets": [
            [
                _set_case(members),
                [
                    None if m is None else [m[0], m[1].regex, m[1].min_count, any_probe(m[1])]
                    for m in members
                ],
            ]
            for _, members in bucket.sets
        ],
    }


class _SavedBuckets(Mapping):
    """A saved program's text buckets by key, each read from its JSON when a paste first
    reaches it. Why: the buckets (their literals, needles and RE2 patterns) were most of the
    saved KB's JSON header, 10 MB at 50,000 entries, decoded in full by every process that
    loaded it (~60 ms of a `perfkb analyze`), while a paste reaches a few of them."""

    def __init__(self, keys: list, blob: np.ndarray, ptr: np.ndarray, leaves: _LazyLeaves):
        self.keys_, self.blob, self.ptr, self.leaves = keys, blob, ptr, leaves
        self.at = {key: k for k, key in enumerate(keys)}
        self.done: dict[str | None, _Bucket] = {}

    def __len__(self) -> int:
        return len(self.keys_)

    def __iter__(self):
        return iter(self.keys_)

    def __contains__(self, key) -> bool:
        return key in self.at

    def __getitem__(self, key) -> _Bucket:
        bucket = self.done.get(key)
        if bucket is None:
            k = self.at[key]
            raw = (
                self.blob[self.ptr[k] : self.ptr[k + 1]].tobytes().decode("utf-8", "surrogatepass")
            )
            b = json.loads(raw)
            bucket = _Bucket(probes=set(b["probes"]) if b["probes"] is not None else None)
            for needle, cs, leaves in b["needles"]:
                bucket.needles[(needle, cs)] = [(i, n) for i, n in leaves]
            bucket.sets = [_LazySet(cs, members, self.leaves) for cs, members in b["sets"]]
            self.done[key] = bucket
        return bucket


class _LazyLeaves:
    """A saved program's leaf conditions, each read from its JSON when evaluation needs it
    (string facts, string thresholds, text leaves counted more than once): most never are."""

    def __init__(self, blob: np.ndarray, ptr: np.ndarray) -> None:
        self.blob, self.ptr = blob, ptr
        self.done: dict[int, object] = {}

    def __len__(self) -> int:
        return len(self.ptr) - 1

    def __getitem__(self, i: int):
        cond = self.done.get(i)
        if cond is None:
            raw = (
                self.blob[self.ptr[i] : self.ptr[i + 1]].tobytes().decode("utf-8", "surrogatepass")
            )
            kind, data = json.loads(raw)
            model = TextCondition if kind == "text" else FactCondition
            cond = self.done[i] = model.model_validate(data)
        return cond


class _CsrMap:
    """slot -> leaves, over the saved sorted (slot, leaf) pairs: `by_slot` of a saved program."""

    def __init__(self, slots: np.ndarray, leaves: np.ndarray) -> None:
        self.slots, self.leaves = slots, leaves

    def get(self, slot: int, default=()):
        lo = int(np.searchsorted(self.slots, slot, "left"))
        hi = int(np.searchsorted(self.slots, slot, "right"))
        return self.leaves[lo:hi].tolist() if hi > lo else default


class _LazySet:
    """A saved RE2 set: its patterns added again in the saved order, compiled on first scan (a
    paste reaches few buckets). Members are (leaf, regex, min_count, literals one of which
    every match contains, or None); None matched the empty string when saved and is counted
    with `always`."""

    MAX_SUBSETS = 4  # then the whole set, compiled once, serves every text

    def __init__(self, case_sensitive: bool, members: list, leaves: _LazyLeaves) -> None:
        self.case_sensitive, self.members, self.leaves = case_sensitive, members, leaves
        self.done: tuple | None = None
        self.subsets: dict[tuple[int, ...], tuple] = {}

    def compiled(self) -> tuple:
        if self.done is None:
            self.done = self._compile(range(len(self.members)))
        return self.done

    def compiled_for(self, lowered: str) -> tuple | None:
        """The set to scan `lowered`'s text with: only the patterns that can match it (those
        with none of their alternatives' literals in it cannot), None when no pattern can.
        Why: compiling was most of a seed paste's cost at 50,000 synthetic entries (10,232
        patterns in 82 sets, ~90 ms), and 6,256 of them were alternations of phrases absent
        from the paste. A long-lived process compiles the whole set (warm, or after
        MAX_SUBSETS different subsets) and scans with it."""
        if self.done is not None:
            return self.done
        seen: dict[tuple[str, ...], bool] = {}
        possible = []
        for j, m in enumerate(self.members):
            if m is None:
                continue
            gate = m[3] if len(m) > 3 else None
            if gate is not None:
                key = tuple(gate)
                ok = seen.get(key)
                if ok is None:
                    ok = seen[key] = any(p in lowered for p in gate)
                if not ok:
                    continue
            possible.append(j)
        if not possible:
            return None
        if len(possible) == sum(m is not None for m in self.members):
            return self.compiled()
        key = tuple(possible)
        found = self.subsets.get(key)
        if found is None:
            if len(self.subsets) >= self.MAX_SUBSETS:
                return self.compiled()
            found = self.subsets[key] = self._compile(possible)
        return found

    def _compile(self, which) -> tuple:
        """A set of the members at positions `which` (all of them: indices kept, a None
        member added as an empty pattern evaluated with `always`), and its members by index."""
        options = re2.Options()
        options.case_sensitive = self.case_sensitive
        options.log_errors = False
        options.max_mem = SET_MAX_MEM
        rset = re2.Set.SearchSet(options)
        added: list = []
        for j in which:
            m = self.members[j]
            if m is None:
                rset.Add("(?:)")  # keeps the indices; its leaf is evaluated with `always`
                added.append(None)
            else:
                rset.Add(m[1])
                added.append(_SavedLeaf(m[0], m[2], self.leaves))
        rset.Compile()
        return (rset, added)


class _SavedLeaf(tuple):
    """(leaf, condition) as _text_leaves unpacks a set member; the condition read only when a
    pattern must be counted more than once."""

    def __new__(cls, i: int, min_count: int, leaves: _LazyLeaves):
        return super().__new__(cls, (i, _MinCount(i, min_count, leaves)))


class _MinCount:
    def __init__(self, i: int, min_count: int, leaves: _LazyLeaves) -> None:
        self.i, self.min_count, self.leaves = i, min_count, leaves

    def __getattr__(self, name: str):
        return getattr(self.leaves[self.i], name)


def _pointers(sorted_slots: list[int], n_slots: int) -> np.ndarray:
    """CSR pointers: the items of slot s are [ptr[s], ptr[s + 1])."""
    counts = np.bincount(np.array(sorted_slots, dtype=np.int64), minlength=n_slots)
    return np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)


def select(ptr: np.ndarray, slots: np.ndarray) -> np.ndarray:
    """Positions of every item whose slot is in `slots`."""
    if not len(slots) or ptr[-1] == 0:
        return np.zeros(0, dtype=np.int64)
    starts, ends = ptr[slots], ptr[slots + 1]
    lens = ends - starts
    total = int(lens.sum())
    if not total:
        return np.zeros(0, dtype=np.int64)
    shift = np.repeat(starts - (np.cumsum(lens) - lens), lens)
    return np.arange(total, dtype=np.int64) + shift


def _compare_by_code(ops: np.ndarray, left: np.ndarray, right: np.ndarray) -> np.ndarray:
    """Each leaf's own comparison (kb/conditions.py), only between finite numbers."""
    out = np.zeros(len(ops), dtype=bool)
    # sorted(set()), not np.unique: np.unique imports numpy.ma on first call, ~70 ms of every
    # short `perfkb analyze` for a handful of operator codes (issue #19)
    for code in sorted(set(ops.tolist())):
        mask = ops == code
        out[mask] = numbers_compare(OPS[code], left[mask], right[mask], np.maximum)
    return out & np.isfinite(left) & np.isfinite(right)


# a saved program: what Program.from_parts reads, and its signatures' ids
_SAVED_NAMES = Program.SAVED_ARRAYS | {"gids"}


class SignatureIndex:
    """Programs per view kind, compiled on first use and kept for the life of the KB state."""

    def __init__(self, signatures: Sequence) -> None:
        self.signatures = list(signatures)  # kb.signatures.Signature, in matcher order
        self.slots = Slots()
        self.sources = [frozenset(s.sources) for s in self.signatures]
        self._programs: dict[tuple, tuple[np.ndarray, Program]] = {}
        # compiled for a save or read from one, not used yet: moved to _programs on first use
        self._pending: dict[tuple, tuple[np.ndarray, Program]] = {}
        # a saved index's programs not made yet: their arrays and document (see from_parts)
        self._saved: dict[tuple, tuple[Mapping[str, np.ndarray], Mapping]] = {}
        self._lock = threading.Lock()
        # compile the slot table up front so views built before a program exists see every slot
        for sig in self.signatures:
            self._slots_of(sig.when)
        self.by_format: dict[str, list[int]] = defaultdict(list)
        self.by_set: dict[frozenset[str], list[int]] = defaultdict(list)
        for g, sources in enumerate(self.sources):
            for s in sources:
                self.by_format[s].append(g)
            self.by_set[sources].append(g)

    def __len__(self) -> int:
        return len(self.signatures)

    def _slots_of(self, cond) -> None:
        for leaf in walk(cond):
            if leaf.kind != "fact":
                continue
            self.slots.get(leaf.fact, leaf.key)
            if leaf.ref is not None:
                for fact, key in operands(leaf.ref):
                    self.slots.get(fact, key)

    def program(self, key: tuple, members: list[int]) -> tuple[np.ndarray, Program]:
        found = self._programs.get(key)
        if found is None:
            with self._lock:
                found = self._programs.get(key)
                if found is None:
                    found = self._take_pending(key) or self._compile(members)
                    self._programs[key] = found
        return found

    def _take_pending(self, key: tuple) -> tuple[np.ndarray, Program] | None:
        """The program compiled aside or saved for `key`, if any (a saved one is made now)."""
        found = self._pending.pop(key, None)
        if found is None and key in self._saved:
            arrays, doc = self._saved.pop(key)
            found = (arrays["gids"], Program.from_parts(arrays, doc))
        return found

    def _compile(self, members: list[int]) -> tuple[np.ndarray, Program]:
        prog = Program([self.signatures[g].when for g in members], self.slots)
        return (np.array(members, dtype=np.int64), prog)

    def _all_keys(self) -> list[tuple[tuple, list[int]]]:
        return [(("format", fmt), m) for fmt, m in self.by_format.items()] + [
            (("set", sources), m) for sources, m in self.by_set.items()
        ]

    def compile_all(self) -> None:
        """Compile every program now (each block format, each source set): a long-lived
        process calls this after loading the KB, so no analysis pays a compile."""
        for key, members in self._all_keys():
            self.program(key, members)[1].prepare()

    def parts(self) -> tuple[dict[str, np.ndarray], dict]:
        """(arrays, JSON-able document) of the index and all its programs."""
        arrays: dict[str, np.ndarray] = {}
        programs = []
        with self._lock:  # every program, the ones not used yet compiled aside (_pending)
            for key in list(self._saved):
                self._pending[key] = self._take_pending(key)  # type: ignore[assignment]
            for key, members in self._all_keys():
                if key not in self._programs and key not in self._pending:
                    self._pending[key] = self._compile(members)
            every = {**self._pending, **self._programs}
        for k, (key, (gids, prog)) in enumerate(sorted(every.items(), key=_key_order)):
            p_arrays, p_doc = prog.parts()
            arrays[f"p{k}_gids"] = gids
            arrays.update({f"p{k}_{name}": a for name, a in p_arrays.items()})
            programs.append({"key": _key_json(key), "doc": p_doc})
        doc = {
            "n": len(self.signatures),
            "slots": [[fact, key] for (fact, key) in self.slots.ids],
            "by_format": self.by_format,
            "by_set": [[sorted(s), gids] for s, gids in self.by_set.items()],
            "programs": programs,
        }
        return arrays, doc

    @classmethod
    def from_parts(
        cls, signatures: Sequence, arrays: Mapping[str, np.ndarray], doc: Mapping
    ) -> SignatureIndex:
        """The index `parts` saved; `signatures` (in order) are read only to compile a program
        that was not saved."""
        index = cls.__new__(cls)
        index.signatures = signatures
        index.slots = Slots()
        index.slots.ids = {(fact, key): n for n, (fact, key) in enumerate(doc["slots"])}
        index._lock = threading.Lock()
        index.by_format = defaultdict(list, doc["by_format"])
        index.by_set = defaultdict(list, {frozenset(s): gids for s, gids in doc["by_set"]})
        index._programs = {}
        index._pending = {}
        # each program's arrays in one pass over the names ("p12_gids": program 12's "gids");
        # a pass over every name per program was 46 x 1,334 prefix tests with the starter KB
        # (~5 ms CPU of every `perfkb analyze`, issue #19). A program is made from its arrays
        # when first used (_take_pending): an analysis of one block format uses one or two of
        # the 46 (starter KB), and making all of them was ~2 % of a 1-line `perfkb analyze`.
        per_program: dict[str, dict[str, np.ndarray]] = defaultdict(dict)
        for name, a in arrays.items():
            head, _, rest = name.partition("_")
            per_program[head][rest] = a
        index._saved = {}
        for k, p in enumerate(doc["programs"]):
            mine = per_program[f"p{k}"]
            # what making it would read, checked now: a damaged file is a cache miss at load
            # (Matcher.load), not an error in the middle of an analysis
            if not mine.keys() >= _SAVED_NAMES or not p["doc"].keys() >= Program.SAVED_DOC:
                raise ValueError(f"saved program {k} is incomplete")
            index._saved[_key_from_json(p["key"])] = (mine, p["doc"])
        return index

    def view(self, facts: Mapping, text: str) -> View:
        v = self.slots.view(facts, text)
        v.lowered = text.casefold()
        return v

    def evaluate(self, views: list[tuple[tuple, list[int], View]]) -> np.ndarray:
        """Best rank of every signature over the views that apply to it (-1: none applied)."""
        best = np.full(len(self), -1, dtype=np.int64)
        for key, members, view in views:
            if not members:
                continue
            gids, prog = self.program(key, members)
            best[gids] = np.maximum(best[gids], prog.ranks(view))
        return best


def _key_json(key: tuple) -> list:
    kind, what = key
    return [kind, sorted(what) if kind == "set" else what]


def _key_from_json(raw: list) -> tuple:
    kind, what = raw
    return (kind, frozenset(what) if kind == "set" else what)


def _key_order(item: tuple) -> str:
    return json.dumps(_key_json(item[0]))
