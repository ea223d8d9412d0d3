"""Function, layer and stack aggregation shared by the stack and DTrace parsers.

Both parsers produce the same frame.*, layer.* and stack.* facts through this one class, so a
signature written against a pstack also matches a DTrace ustack() or a DTrace function-count
table of the same incident. Memory is bounded: at most MAX_FUNCTIONS distinct names, at most
MAX_FRAMES frames held for the stack being read, and only the TOP_STACKS heaviest stacks kept
for display.
"""

from __future__ import annotations

import heapq
import re
from collections.abc import Sequence
from dataclasses import dataclass

from ingest.oracle_layers import OraclePrefix, layer_of
from ingest.parsers.syscalls import _syscore

# The C frame reader (ingest/_syscore_src/stacks.c): stack.py's and dtrace.py's `feed_run` read
# runs of frame lines through it while this is True; the Python readers stay the reference (the
# tests set it False and compare the evidence).
NATIVE = _syscore is not None and hasattr(_syscore, "stack_frames")
stack_frames = _syscore.stack_frames if NATIVE else None

# One frame as Solaris pstack and DTrace ustack() print it, `module`func+offset`, with pstack's
# arguments when they are shown:
#   libc.so.1`_cladm+0x4   |  oracle`0x6e80c2b   |  libc.so.1`__pollsys+0xa(ffbffa88, 1)
TICK_FRAME = re.compile(
    r"^\s*(?P<module>[\w.+-]+)`(?P<func>[^+\s(`]+)(?:\+(?:0x[0-9a-fA-F]+|\d+))?(?:\(.*\))?\s*$"
)

MAX_FUNCTIONS = 5000
MAX_FRAMES = 1024
TOP_STACKS = 20
FRAMES_SHOWN = 64

# libc entry points that only wrap a system call: the interesting frame is the caller.
SYSCALL_WRAPPERS = frozenset(
    {
        "read",
        "_read",
        "__read",
        "__libc_read",
        "__read_nocancel",
        "pread",
        "_pread",
        "__pread",
        "pread64",
        "__pread64",
        "__libc_pread64",
        "write",
        "_write",
        "__write",
        "__libc_write",
        "pwrite",
        "__pwrite",
        "pwrite64",
        "__pwrite64",
        "readv",
        "writev",
        "semop",
        "semtimedop",
        "__semtimedop",
        "_semtimedop",
        "poll",
        "__poll",
        "_poll",
        "__pollsys",
        "_pollsys",
        "pollsys",
        "select",
        "__select",
        "epoll_wait",
        "__epoll_wait_nocancel",
        "recv",
        "__recv",
        "__libc_recv",
        "recvmsg",
        "__recvmsg",
        "__libc_recvmsg",
        "_so_recv",
        "_so_recvmsg",
        "send",
        "__send",
        "__libc_send",
        "sendmsg",
        "__sendmsg",
        "_so_send",
        "_so_sendmsg",
        "accept",
        "_so_accept",
        "ioctl",
        "_ioctl",
        "__ioctl",
        "nanosleep",
        "__nanosleep",
        "_nanosleep",
        "__lwp_park",
        "_lwp_park",
        "___lwp_cond_wait",
        "_lwp_cond_wait",
        "__lwp_sema_timedwait",
        "syscall",
        "_syscall6",
        "__syscall6",
        "cladm",
        "_cladm",
        "__cladm",
        "waitid",
        "_waitid",
        "__waitid",
        "times",
        "_times",
        "__times",
        "io_getevents",
        "io_submit",
        "sigtimedwait",
        "__sigtimedwait",
        "_portfs",
        "shmdt",
        "_shmdt",
        "shmat",
        # blocking primitives that end in a syscall: the caller says what is awaited
        "cond_wait",
        "_cond_wait",
        "__cond_wait",
        "cond_wait_queue",
        "cond_wait_common",
        "cond_timedwait",
        "_cond_timedwait",
        "cond_reltimedwait",
        "pthread_cond_wait",
        "pthread_cond_timedwait",
        "__pthread_cond_wait",
        "__pthread_cond_timedwait",
        "sema_wait",
        "sem_wait",
        "fork1",
        "_fork1",
        "__fork1",
        "fork",
        "__fork",
        "__libc_fork",
    }
)
_GLIBC_ALIAS = re.compile(r"^__GI_+|^__libc_")
_LIBC_MODULE = re.compile(r"^(?:libc[.-]|libpthread[.-]|libaio[.-]|libsocket[.-]|\[vdso\])")


@dataclass(frozen=True, slots=True)
class Frame:
    """One stack frame. `function` is the name as printed without its offset; None when the frame
    is a bare address (stripped binary, JIT code)."""

    function: str | None
    module: str | None = None

    @property
    def label(self) -> str:
        if self.function is None:
            return f"{self.module}`?" if self.module else "?"
        return self.function


def module_base(module: str | None) -> str | None:
    if not module:
        return None
    return module.rsplit("/", 1)[-1]


def is_libc_frame(frame: Frame) -> bool:
    """A frame whose caller is the interesting one: libc code or a bare syscall wrapper."""
    base = module_base(frame.module)
    if base is not None and _LIBC_MODULE.match(base):
        return True
    if frame.function is None:
        return False
    name = frame.function
    return name in SYSCALL_WRAPPERS or _GLIBC_ALIAS.sub("", name) in SYSCALL_WRAPPERS


# is_libc_frame by (function, module): a dump repeats the same frames in every stack, and the
# answer (a regex substitution and a module match) cost more than the rest of a stack's top
_LIBC_MEMO: dict[tuple[str | None, str | None], bool] = {}
_LIBC_MEMO_MAX = 8192


def pick_top(frames: Sequence[Frame]) -> Frame | None:
    """Innermost named frame that is not libc, or the innermost named frame if all are libc."""
    first_named: Frame | None = None
    memo = _LIBC_MEMO
    for frame in frames:
        if frame.function is None:
            continue
        if first_named is None:
            first_named = frame
        key = (frame.function, frame.module)
        libc = memo.get(key)
        if libc is None:
            libc = is_libc_frame(frame)
            if len(memo) >= _LIBC_MEMO_MAX:
                memo.clear()
            memo[key] = libc
        if not libc:
            return frame
    return first_named


class _StackView:
    """What is kept of one stack for display."""

    __slots__ = ("label", "weight", "frames", "innermost", "top", "depth")

    def __init__(self, label: str, weight: float, frames: Sequence[Frame], top: Frame | None):
        self.label = label
        self.weight = weight
        self.frames = [f.label for f in frames[:FRAMES_SHOWN]]
        self.depth = len(frames)
        self.innermost = frames[0].label if frames else None
        self.top = top.function if top else None

    def as_dict(self) -> dict:
        return {
            "label": self.label,
            "weight": self.weight,
            "depth": self.depth,
            "innermost": self.innermost,
            "top": self.top,
            "frames": self.frames,
        }


class FunctionStats:
    """Accumulates frames and counted functions; produces the shared facts."""

    def __init__(self) -> None:
        self.stacks = 0
        self.frames = 0
        self._stack_frames: dict[str, float] = {}
        self._table_frames: dict[str, float] = {}
        self._top: dict[str, float] = {}
        self._layer: dict[str, OraclePrefix | None] = {}
        self._heaviest: list[tuple[float, int, _StackView]] = []
        self.functions_dropped = 0

    # -- feeding ---------------------------------------------------------------------------------

    def _known(self, function: str, module: str | None) -> bool:
        """Register a function name; False when the name cap is reached (the name is dropped)."""
        if function in self._layer:
            return True
        if len(self._layer) >= MAX_FUNCTIONS:
            self.functions_dropped += 1
            return False
        self._layer[function] = layer_of(function, module)
        return True

    def add_stack(self, frames: Sequence[Frame], weight: float = 1.0, label: str = "") -> None:
        """One stack, innermost frame first, seen `weight` times (a DTrace count, else 1)."""
        if not frames:
            return
        self.stacks += 1
        self.frames += len(frames)
        # per frame this is the hot loop of a large dump: a name already known skips _known
        layer = self._layer
        counts = self._stack_frames
        for frame in frames:
            name = frame.function
            if name is not None and (name in layer or self._known(name, frame.module)):
                counts[name] = counts.get(name, 0.0) + weight
        top = pick_top(frames)
        if top is not None and top.function is not None and self._known(top.function, top.module):
            self._top[top.function] = self._top.get(top.function, 0.0) + weight
        # what is kept for display is built only for a stack that enters the heaviest
        heap = self._heaviest
        if len(heap) < TOP_STACKS:
            view = _StackView(label or f"stack {self.stacks}", weight, frames, top)
            heapq.heappush(heap, (weight, -self.stacks, view))
        elif (weight, -self.stacks) > heap[0][:2]:
            view = _StackView(label or f"stack {self.stacks}", weight, frames, top)
            heapq.heapreplace(heap, (weight, -self.stacks, view))

    def add_counted(self, function: str, count: float, module: str | None = None) -> None:
        """A function counted N times by a DTrace aggregation: like a frame seen N times.

        Repeated names (the same table printed twice, or two aggregations) keep the larger count:
        adding them would count the same calls twice."""
        if self._known(function, module):
            self._table_frames[function] = max(self._table_frames.get(function, 0.0), count)

    # -- results ---------------------------------------------------------------------------------

    def frame_counts(self) -> dict[str, float]:
        counts = dict(self._table_frames)
        for name, value in self._stack_frames.items():
            counts[name] = max(counts.get(name, 0.0), value)
        return counts

    def facts(self) -> dict[str, float | dict[str, float]]:
        counts = self.frame_counts()
        facts: dict[str, float | dict[str, float]] = {}
        if counts:
            facts["frame.count"] = counts
            layers: dict[str, float] = {}
            for name, value in counts.items():
                hit = self._layer.get(name)
                if hit is not None:
                    layers[hit.prefix] = layers.get(hit.prefix, 0.0) + value
            if layers:
                facts["layer.count"] = layers
        if self._top:
            facts["frame.top"] = dict(self._top)
        if self.stacks:
            facts["stack.stacks"] = float(self.stacks)
            facts["stack.frames"] = float(self.frames)
        return facts

    def details(self, top_functions: int = 30) -> dict:
        counts = self.frame_counts()
        ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:top_functions]
        functions = []
        for name, value in ranked:
            hit = self._layer.get(name)
            functions.append(
                {
                    "function": name,
                    "count": value,
                    "top": self._top.get(name, 0.0),
                    "prefix": hit.prefix if hit else None,
                    "layer": hit.layer if hit else None,
                    "meaning": hit.meaning if hit else None,
                }
            )
        layers: dict[str, dict] = {}
        for name, value in counts.items():
            hit = self._layer.get(name)
            if hit is None:
                continue
            row = layers.setdefault(
                hit.prefix, {"layer": hit.layer, "meaning": hit.meaning, "count": 0.0}
            )
            row["count"] += value
        stacks = [v.as_dict() for _, _, v in sorted(self._heaviest, key=lambda t: (-t[0], -t[1]))]
        out: dict = {"functions": functions, "layers": layers}
        if stacks:
            out["stacks"] = stacks
            out["stacks_total"] = self.stacks
        if self.functions_dropped:
            out["functions_dropped"] = self.functions_dropped
        return out

    def identifiers(self, limit: int = 200) -> list[str]:
        counts = self.frame_counts()
        names = [n for n, _ in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:limit]]
        prefixes = sorted({h.prefix for n in names if (h := self._layer.get(n)) is not None})
        return names + [p for p in prefixes if p not in counts]
