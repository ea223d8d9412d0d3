"""Deterministic generator of process stack dumps for the streaming benchmark, in the style of
gen_trace10046.py: many snapshots concatenated, as a loop of `pstack PID; sleep 1` collects them.
Three layouts: Linux pstack / gdb `thread apply all bt` (a `Thread N (Thread 0x... (LWP n)):`
header, `#k  0x... in func () from lib` frames), Solaris pstack (`pid:  command`, an
`-----  lwp# n / thread# n  -----` header, `addr func (args) + off` frames) and `perf script`
call chains (a `comm pid [cpu] time: period event:` sample line, tab-indented
`addr func+0xoff (module)` frames, a blank line), and a DTrace `@[ustack()] = count()`
aggregation as printed at ^C (`module`func+0xoff` frames, the count, a blank line). Everything is drawn
from random.Random(seed) and tallied (stacks, frames), so the benchmark checks that perfkb counted
exactly what was written. The function names are Oracle kernel and libc names in the shapes of
the corpus stacks 27-28; the addresses and arguments are made up.
"""

from __future__ import annotations

import random
import sys
from pathlib import Path

from pydantic import BaseModel

from benchmarks.capture_cache import cached
from benchmarks.gen_traces import DATA_DIR, MB, SEED, SIZES

GEN_VERSION = 1
KINDS = ("gdb", "solaris", "perf", "dtrace")
# the grep -cE reference: a frame line of either layout
GREP_RE = {
    "gdb": r"^#[0-9]+ +0x[0-9a-f]+ in [A-Za-z_]",
    "solaris": r"^ [0-9a-f]+ [A-Za-z_][^ ]* \(",
    "perf": r"^\s+[0-9a-f]+ [^ ]+ \([/[]",
    "dtrace": r"^ +[A-Za-z0-9_.+-]+`",
}
# innermost first: a wait, the call, the user call, the dispatcher down to main
WAITS = (
    ("semtimedop", "/lib64/libc.so.6"),
    ("__read_nocancel", "/lib64/libpthread.so.0"),
    ("io_getevents", "/lib64/libaio.so.1"),
    ("__pread_nocancel", "/lib64/libpthread.so.0"),
)
MIDDLE = (
    "sskgpwwait",
    "skgpwwait",
    "ksliwat",
    "kslwaitctx",
    "ksqcmi",
    "ksqgtlctx",
    "ktuGetTxForXid",
    "kdtInsRow",
    "kdusru",
    "qerupFetch",
    "kcbgtcr",
    "kdstf110010100001km",
    "kdsttgr",
    "qertbFetch",
    "opifch2",
    "kpoal8",
)
BOTTOM = ("opiodr", "ttcpip", "opitsk", "opiino", "opiodr", "opidrv", "sou2o", "opimai_real")


class ExpectedStacks(BaseModel):
    kind: str
    seed: int
    gen_version: int = GEN_VERSION
    target_bytes: int
    bytes: int = 0
    lines: int = 0
    stacks: int = 0
    frames: int = 0


def _frames(rng: random.Random) -> list[tuple[str, str | None]]:
    wait = rng.choice(WAITS)
    middle = rng.sample(MIDDLE, rng.randrange(3, 10))
    return [wait, *((f, None) for f in middle), *((f, None) for f in BOTTOM), ("main", None)]


def generate(kind: str, target_bytes: int, path: Path, seed: int = SEED) -> ExpectedStacks:
    if kind not in KINDS:
        raise ValueError(f"unknown stack layout {kind!r}: one of {', '.join(KINDS)}")
    rng = random.Random(seed)
    exp = ExpectedStacks(kind=kind, seed=seed, target_bytes=target_bytes)
    size = 0
    snapshot = 0
    with path.open("w", encoding="ascii", newline="\n") as fh:
        while size < target_bytes:
            snapshot += 1
            pid = 4000 + snapshot % 7
            out: list[str] = []
            threads = rng.randrange(1, 5)
            if snapshot == 1 and kind == "dtrace":
                out += [
                    "# dtrace -n 'profile-997 /pid == $target/ { @[ustack()] = count(); }' -p 4001",
                    "dtrace: description 'profile-997 ' matched 1 probe",
                    "^C",
                    "",
                ]
            if kind == "dtrace":
                for _ in range(threads):
                    frames = _frames(rng)
                    for name, lib in frames:
                        module = (lib or "oracle").rsplit("/", 1)[-1]
                        out.append(f"              {module}`{name}+0x{rng.randrange(1, 4096):x}")
                    out.append(f"             {rng.randrange(1, 99999)}")
                    out.append("")
                    exp.stacks += 1
                    exp.frames += len(frames)
                threads = 0
            if kind == "perf":
                for t in range(threads):
                    usec = snapshot * 10_101 + t
                    out.append(
                        f"oracle {pid} [{t:03d}] {666_000 + usec // 1_000_000}."
                        f"{usec % 1_000_000:06d}:   10101010 cpu-clock: "
                    )
                    frames = _frames(rng)
                    for name, lib in frames:
                        addr = rng.randrange(0x400000, 0x7FFFFFFFFFFF)
                        module = lib or "/u01/app/oracle/product/19.0.0/dbhome_1/bin/oracle"
                        out.append(f"\t    {addr:x} {name}+0x{rng.randrange(1, 4096):x} ({module})")
                    out.append("")
                    exp.stacks += 1
                    exp.frames += len(frames)
                threads = 0
            if kind == "solaris":
                out.append(f"{pid}:\tora_j00{snapshot % 10}_BENCH")
            for t in range(threads, 0, -1):
                frames = _frames(rng)
                if kind == "gdb":
                    out.append(
                        f"Thread {t} (Thread 0x7f{rng.randrange(16**10):010x} (LWP {pid + t})):"
                    )
                    for i, (name, lib) in enumerate(frames):
                        addr = rng.randrange(0x400000, 0x7FFFFFFFFFFF)
                        tail = f" from {lib}" if lib else ""
                        out.append(f"#{i:<2} 0x{addr:016x} in {name} (){tail}")
                else:
                    out.append(f"-----------------  lwp# {t} / thread# {t}  --------------------")
                    for name, _ in frames:
                        addr = rng.randrange(0x10000, 0xFFFFFFFF)
                        args = ", ".join(f"{rng.randrange(16**6):x}" for _ in range(6))
                        out.append(f" {addr:08x} {name} ({args}) + {rng.randrange(4, 2000):x}")
                exp.stacks += 1
                exp.frames += len(frames)
            if kind not in ("perf", "dtrace"):
                out.append("")
            chunk = "\n".join(out) + "\n"
            fh.write(chunk)
            size += len(chunk)
            exp.lines += len(out)
    exp.bytes = size
    return exp


def ensure(kind: str, size_label: str, *, data_dir: Path = DATA_DIR, seed: int = SEED):
    """The dump of `kind` for `size_label` under data_dir, generated once and reused while its
    sidecar agrees with this generator version."""
    path = data_dir / f"stack-{kind}-{size_label}-s{seed}-g{GEN_VERSION}.txt"
    return cached(
        path, ExpectedStacks, lambda: generate(kind, SIZES.get(size_label, 10 * MB), path, seed)
    )


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] not in KINDS or sys.argv[2] not in SIZES:
        sys.exit(f"usage: python -m benchmarks.gen_stacks {'|'.join(KINDS)} {'|'.join(SIZES)}")
    p, e = ensure(sys.argv[1], sys.argv[2])
    print(f"{p}: {e.model_dump_json()}")
