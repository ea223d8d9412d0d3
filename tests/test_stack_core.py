"""The C frame reader (ingest/_syscore_src/stacks.c, `functions.stack_frames`) against the Python
readers of stack.py and dtrace.py, the reference: the evidence must be identical with the C core
on and off (`functions.NATIVE`) on every corpus snippet and fixture, on generated dumps of every
layout (whole, small chunks, CRLF) and on hostile lines (C++ templates, `??`, very long frames,
text beyond ASCII, truncated lines) mixed into them; and the core must be built and really used,
or a broken build would only be slow."""

from __future__ import annotations

import io
import random
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from benchmarks import gen_stacks
from ingest import detect
from ingest.detect import parse_stream, parse_text
from ingest.parsers import functions

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT.parent / "shared" / "corpus" / "snippets"
FIXTURES = ROOT / "tests" / "fixtures"


def _read(data: bytes, chunk: int) -> str:
    with pytest.MonkeyPatch.context() as m:
        m.setattr(detect, "CHUNK", chunk)
        return parse_stream(io.BytesIO(data)).model_dump_json()


def _alike(data: bytes, monkeypatch, chunks=(1024 * 1024, 4093)) -> str:
    """The evidence of `data` with the C reader and without it (the Python reader), through
    parse_stream in large and small chunks and parse_text; returns it."""
    text = data.decode("utf-8", errors="replace")
    with monkeypatch.context() as m:
        m.setattr(functions, "NATIVE", False)
        want = [_read(data, c) for c in chunks] + [parse_text(text).model_dump_json()]
    got = [_read(data, c) for c in chunks] + [parse_text(text).model_dump_json()]
    assert got == want
    return want[0]


def test_the_core_is_built_and_used(monkeypatch):
    assert functions.NATIVE, "ingest/_syscore_src/stacks.c was not built (pip install -e .)"
    calls = []
    real = functions.stack_frames

    def spy(*args):
        out = real(*args)
        calls.append(out[1])
        return out

    monkeypatch.setattr(functions, "stack_frames", spy)
    head = "".join(f"#{i}  0x{i:016x} in f{i} () from /lib64/libc.so.6\n" for i in range(200))
    ev = parse_text(head)
    assert ev.blocks[0].facts["stack.frames"] == 200.0
    # all but the lines the detector reads before the block's context is complete (50)
    assert sum(calls) >= 140


@pytest.fixture(scope="module")
def dumps(tmp_path_factory) -> dict[str, bytes]:
    out = {}
    for kind in gen_stacks.KINDS:
        path = tmp_path_factory.mktemp("gen") / f"{kind}.txt"
        gen_stacks.generate(kind, 300 * 1024, path, seed=31)
        out[kind] = path.read_bytes()
    return out


def test_corpus_and_fixtures_read_alike(monkeypatch):
    files = sorted(CORPUS.glob("*")) + sorted(p for p in FIXTURES.rglob("*") if p.is_file())
    assert len(files) > 100, "the corpus (../shared/corpus) and fixtures must be present"
    seen = {"stack": 0, "dtrace": 0}
    for path in files:
        want = _alike(path.read_bytes(), monkeypatch, chunks=(1024 * 1024,))
        for fmt in seen:
            seen[fmt] += f'"format":"{fmt}"' in want
    assert min(seen.values()) >= 5, seen


# Lines a real dump holds beside the generator's: C++ frames, unresolved ones, cut and odd
# spacing, text beyond ASCII, near-misses of each fast shape (each must read as Python reads it).
HOSTILE = [
    "#0  0x00007f3c2a1b4e8a in std::vector<int, std::allocator<int> >::push_back () from /x.so",
    "#1  0x00007f3c2a1b4e8a in operator new () from /usr/lib64/libstdc++.so.6",
    "#2  0x00007f3c2a1b4e8a in ?? ()",
    "#3  0x00007f3c2a1b4e8a in ?? () from /lib64/libc.so.6",
    "#4  0x0000000009ed3e26 in deadbeef () from /lib64/libc.so.6",
    "#5  0x0000000009ed3e26 in kslwtbctx ()   \r",
    "#6  0x0000000009ed3e26 in kslwtbctx () from",
    "#7  0x0000000009ed3e26 in kslwtbctx () from lib:x",
    "#8  0x0000000009ed3e26 in kslwtbctx () from /lib/\u00e9t\u00e9.so",
    "#9  0x0000000009ed3e26 in k\u00e9ep ()",
    "#10 0x0000000009ed3e26 in kslwtbctx (a=1, b=0x2) at ../k.c:12",
    "#11 0x0000000009ed3e26 in kslwtbctx ()\tfrom\t/lib/x.so",
    "#12 0x in x ()",
    "#1234567890 0x0000000009ed3e26 in x ()",
    "#13 0x00000000",
    "#14  0x0000000009ed3e26 in " + "k" * 600 + " ()",
    "#15  0x0000000009ed3e26 in kslwtbctx () from /" + "l" * 600,
    "#16  0x0000000009ed3e26 in a$b.c ()",
    "#17  0x0000000009ed3e26 in main()",
    " ff2c57f8 _lwp_start (0, 0, 0, 0, 0, 0)",
    " ff2c57f8 _lwp_start ()",
    " ff2c57f8 std::map<int,int>::find (1, 2) + 4",
    " 0xff2c57f8 __pollsys (ffbffa88, 1) + 0x8",
    " 0xff2c57f8 __pollsys (ffbffa88, 1) + 0x",
    " ff2c57f8 ?? (1, 2)",
    " ff2c57f8 ~Dtor (1, 2) +  1a",
    " ff2c57f8 Stackwalker (0, 0) + 4",
    " ff2c57f8 __pollsys (/usr/lib/x) + 4",
    " ff2c57f8 f (" + "1, " * 800 + "2)",
    " ff2c57 f (1)",
    " ff2c57f8123456789 f (1)",
    " ff2c57f8 f(1)(2)",
    " ff2c57f8 caf\u00e9 (1)",
    "\t    7f3c2a1b4e8a semtimedop+0xa (/usr/lib64/libc-2.17.so)",
    "\t    7f3c2a1b4e8a std::run()+0xa (/usr/lib64/libx.so)",
    "\t    7f3c2a1b4e8a a+0x1+0x2 (/lib/a)",
    "\t    7f3c2a1b4e8a +0x2 (/lib/a)",
    "\t    7f3c2a1b4e8a f+0x ( /lib/a )",
    "\t    7f3c2a1b4e8a f+0xZ ([kernel.kallsyms])",
    "\t    7f3c2a1b4e8a \u00a0x+0xa (/lib/a)",
    "\t               0 [unknown] ([unknown])",
    "\t    7f3c2a1b4e8a f (/lib/a) trailing",
    "\t    7f3c2a1b4e8a " + "g" * 600 + "+0x1 (/lib/a)",
    "              libc.so.1`__pollsys+0xa",
    "              libc.so.1`__pollsys+0xa(ffbffa88, 1)",
    "              libc.so.1`__pollsys+0xa(ffbffa88, 1) junk",
    "              libc.so.1`__pollsys+12",
    "              libc.so.1`__pollsys+0xg",
    "              libc.so.1`0x7f2a",
    "              oracle`??",
    "              oracle`std::vector<int>::at+0x1",
    "              oracle`k\u00e9ep+0x1",
    "              a`b`c",
    "             91205",
    "             1234567890123456",
    "  value  ------------- Distribution ------------- count",
    "             8 |@@@@                                     12",
    "  read                                   1234",
    "dtrace: description 'x' matched 1 probe",
    "-----------------  lwp# 9 / thread# 9  --------------------",
    "Thread 7 (Thread 0x7f0000000001 (LWP 77)):",
    "dd 29776 666709.771979:   10101010 cpu-clock: ",
    "ksedsts()+244<-ksdxfstk()+58<-ksdxcb()+1876<-sspuser()+112<-__sighandler()",
    "26330:\t/usr/jdk/instances/jdk1.5.0/bin/java -Dx",
    "",
    "   ",
    "```",
]


def _mixed(data: bytes, seed: int, hostile=HOSTILE) -> bytes:
    rng = random.Random(seed)
    out: list[bytes] = []
    for line in data.splitlines(keepends=True)[:4000]:
        r = rng.random()
        if r < 0.04:
            out.append(rng.choice(hostile).encode() + b"\n")
        elif r < 0.05:
            out.append(line[: len(line) // 2] + b"\n")
        elif r < 0.06:
            out.append(line.replace(b" ", b"  ", 2))
        elif r < 0.065:
            continue
        out.append(line)
    return b"".join(out)


@pytest.mark.parametrize("kind", gen_stacks.KINDS)
def test_generated_dumps_read_alike(dumps, kind, monkeypatch):
    data = dumps[kind]
    want = _alike(data, monkeypatch)
    assert want.count('"format"') == 1
    _alike(data.replace(b"\n", b"\r\n"), monkeypatch)
    _alike(data[: len(data) // 3 - 7], monkeypatch)


@pytest.mark.parametrize("kind", gen_stacks.KINDS)
def test_hostile_lines_read_alike(dumps, kind, monkeypatch):
    for seed in range(3):
        _alike(_mixed(dumps[kind], seed), monkeypatch)


def test_frame_cap_and_gdb_numbering_alike(monkeypatch):
    """More frames than MAX_FRAMES in one stack (the rest only counted), numbers going back
    without a header (a new stack), a perf script chain, and counts closing ustack() stacks."""
    deep = "".join(f"#{i}  0x{i:016x} in f{i % 50} ()\n" for i in range(1500))
    back = "".join(
        f"#{i % 7}  0x{i:016x} in g{i % 5} () from /lib/l{i % 3}.so\n" for i in range(90)
    )
    perf = "".join(
        f"oracle 4242 [001] 66.{i:06d}:   10101 cpu-clock: \n"
        + "".join(f"\t    {j + 4096:x} fn{j}+0x{j:x} (/u01/bin/oracle)\n" for j in range(12))
        + "\n"
        for i in range(30)
    )
    ustack = "".join(
        "".join(f"              oracle`fn{j}+0x{j:x}\n" for j in range(i % 9 + 1))
        + f"             {i * 7}\n\n"
        for i in range(60)
    )
    deep_ustack = "".join(f"              oracle`fn{j % 40}+0x1\n" for j in range(1300)) + " 5\n"
    for text in (deep, back, perf, ustack, deep_ustack, deep + "\n" + back):
        _alike(text.encode(), monkeypatch)
    ev = parse_text(deep)
    assert ev.blocks[0].facts["stack.frames"] == float(functions.MAX_FRAMES)
    assert ev.blocks[0].details["frames_dropped"] == 1500 - functions.MAX_FRAMES


_PIECES = st.sampled_from(
    [
        "#",
        "#3",
        "0x",
        "7f3c2a",
        "deadbeef00",
        " ",
        "  ",
        "\t",
        " in ",
        "()",
        " ()",
        " () from ",
        "/lib64/libc.so.6",
        "(",
        ")",
        "+",
        "+0x1a",
        "+12",
        "`",
        "libc.so.1`",
        "oracle`",
        "kslwtbctx",
        "std::map<int, int>",
        "??",
        "[unknown]",
        "([kernel.kallsyms])",
        "\u00e9",
        "\u4e2d",
        "\r",
        ":",
        "<",
        "Stack",
        "12345",
    ]
)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    body=st.lists(st.lists(_PIECES, max_size=10).map("".join), max_size=40),
    layout=st.sampled_from(gen_stacks.KINDS),
)
def test_drawn_frame_lines_read_alike(body, layout):
    """Lines assembled from the pieces of every frame shape, after a run of real frames (so
    the block is open, its first 50 lines read, and its fast path runs)."""
    heads = {
        "gdb": [f"#{i}  0x00000000{i:08x} in f{i % 7} () from /lib/c.so" for i in range(70)],
        "solaris": [f" ff2c{i:04x} f{i % 7} (1, 2) + 4" for i in range(70)],
        "perf": ["oracle 1 [000] 1.000001:   1 cpu-clock: "]
        + [f"\t    {i + 4096:x} f{i % 7}+0x1 (/lib/c.so)" for i in range(70)],
        "dtrace": [f"              oracle`f{i % 7}+0x1" for i in range(70)],
    }
    lines = heads[layout] + body + heads[layout][-10:]
    data = "\n".join(lines).encode("utf-8", errors="replace")
    with pytest.MonkeyPatch.context() as mp:
        _alike(data, mp, chunks=(1024 * 1024, 509))
