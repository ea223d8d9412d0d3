"""The batch path (Detector.feed_text / parse_stream / parse_text, which hands runs of a truss or
strace block to Parser.feed_run, and with the C core to its scanners) must give exactly the
evidence of the line-by-line path (Detector.feed_lines) with the pure-Python aggregator, the
reference: same blocks, boundaries, facts, details and kept text. Checked on generated captures
of every mode, cut, damaged and mixed with other formats, with CRLF line ends, fences, control
characters, an unterminated last line and small read sizes (so chunk edges fall everywhere)."""

from __future__ import annotations

import io
import random
from pathlib import Path

import pytest

from benchmarks import gen_traces
from ingest import detect
from ingest.detect import Detector, parse_stream, parse_text
from ingest.parsers import syscalls

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures"
OTHERS = sorted(FIXTURES.rglob("*.txt"))

MODES = [("truss", m) for m in gen_traces.TRUSS_MODES] + [
    ("strace", m) for m in gen_traces.STRACE_MODES
]
SIZE = 420 * 1024  # past TEXT_CAP, so runs are taken both before and after the text is full


def _by_lines(data: bytes) -> str:
    d = Detector()
    d.feed_lines(line.decode("utf-8", errors="replace") for line in io.BytesIO(data))
    return d.finish().model_dump_json()


def _by_stream(data: bytes, chunk: int, monkeypatch) -> str:
    monkeypatch.setattr(detect, "CHUNK", chunk)
    return parse_stream(io.BytesIO(data)).model_dump_json()


def _same(data: bytes, monkeypatch) -> None:
    monkeypatch.setattr(syscalls, "NATIVE", False)
    want = _by_lines(data)  # the reference: line by line, pure Python
    monkeypatch.setattr(syscalls, "NATIVE", syscalls._syscore is not None)
    assert _by_lines(data) == want
    assert _by_stream(data, 1024 * 1024, monkeypatch) == want
    assert _by_stream(data, 4093, monkeypatch) == want
    assert parse_text(data.decode("utf-8", errors="replace")).model_dump_json() == want


@pytest.fixture(scope="module")
def captures(tmp_path_factory) -> dict[tuple[str, str], bytes]:
    out = {}
    for kind, mode in MODES:
        path = tmp_path_factory.mktemp("gen") / f"{kind}-{mode}.txt"
        gen_traces.generate(kind, SIZE, path, mode=mode)
        out[(kind, mode)] = path.read_bytes()
    return out


@pytest.mark.parametrize(("kind", "mode"), MODES)
def test_batch_path_gives_the_line_by_line_evidence(captures, monkeypatch, kind, mode):
    data = captures[(kind, mode)]
    _same(data, monkeypatch)
    _same(data[: len(data) * 2 // 3], monkeypatch)  # a capture cut in the middle of a line
    _same(data.replace(b"\n", b"\r\n"), monkeypatch)  # CRLF


@pytest.mark.parametrize(("kind", "mode"), MODES)
def test_batch_path_with_other_formats_prose_fences_and_damage(captures, monkeypatch, kind, mode):
    rng = random.Random(f"{kind}{mode}")
    data = captures[(kind, mode)]
    lines = data.splitlines(keepends=True)
    out: list[bytes] = []
    for i, line in enumerate(lines):
        r = rng.random()
        if i > 2000 and r < 0.0008:  # another format starts mid-way, then the capture resumes
            out.append(rng.choice(OTHERS).read_bytes())
        elif r < 0.002:
            out.append(b"some prose about it\n")
        elif r < 0.003:
            out.append(b"```\n")
        elif r < 0.004:
            out.append(line.replace(b" ", b"\x01", 1))  # a control character
        elif r < 0.006:
            out.append(line[: rng.randrange(len(line))] + b"\n")  # a line cut short
        elif r < 0.007:
            out.append(b"\xff\xfe" + line)  # bytes that are not UTF-8
        elif r < 0.008:
            out.append(line.rstrip(b"\n") + b"   \r\r\n")
        elif r < 0.009:
            out.append(b"\n")
        elif r < 0.010:
            out.append(b"  " + line)
        elif r < 0.011:
            out.append(line.replace(b"(", b"((", 1))
        out.append(line)
    _same(b"".join(out), monkeypatch)


def test_two_captures_back_to_back_and_a_long_line(captures, monkeypatch):
    truss = captures[("truss", "dDE")]
    strace = captures[("strace", "ttT")]
    _same(truss + strace, monkeypatch)
    _same(strace + truss, monkeypatch)
    mid = truss.index(b"\n", len(truss) // 2) + 1
    long_line = truss[:mid].splitlines()[-1][:-1] + b"x" * 70_000 + b") = 0\n"
    _same(truss[:mid] + long_line + truss[mid:], monkeypatch)


def test_mixed_pid_prefixes_and_lwps(monkeypatch):
    rng = random.Random(3)
    lines = ["truss -f -d -D -E -p 100"]
    t = 0.0
    for i in range(20_000):
        t += rng.random() / 100
        pid = rng.choice(["100", "101/1", "101/2", "/3", "102@1", "103/4@2"])
        call = rng.choice(
            [
                'read(15, "x", 8208) = 21',
                "pread(261, 0x3B080000, 8192, 0x657E6000) = 8192",
                "lwp_park(0x00000000, 0)\t\tErr#62 ETIME",
                "times(0xFFFFFFFF7FFFB1D0) = 1230691",
                "_exit(0)",
                "fork1() = 104",
                "fork1()    (returning as child ...) = 100",
                "pollsys(0x1, 1, 0x2, 0x0) (sleeping...)",
                'execve("/bin/x", 0x1, 0x2)  argc = 2',
            ]
        )
        lines.append(f"{pid}: {t:.4f} 0.0010 0.0005 {call}")
        if rng.random() < 0.2:
            lines.append(f"{pid}:\tfd={i % 30} ev=POLLIN rev=0")
        if rng.random() < 0.01:
            lines.append(f"{pid}: {t:.4f} 0.0001 0.0000     Received signal #18, SIGCLD [caught]")
    _same("\n".join(lines).encode(), monkeypatch)


def test_the_fast_path_is_really_taken(captures, monkeypatch):
    from ingest.parsers.strace import StraceParser
    from ingest.parsers.truss import TrussParser

    taken: dict[str, int] = {}
    for cls in (TrussParser, StraceParser):

        def counting(self, *args, _orig=cls.feed_run, _name=cls.__name__):
            pos, n = _orig(self, *args)
            taken[_name] = taken.get(_name, 0) + n
            return pos, n

        monkeypatch.setattr(cls, "feed_run", counting)
    for kind in ("truss", "strace"):
        data = captures[(kind, gen_traces.default_mode(kind))]
        ev = parse_stream(io.BytesIO(data))
        lines = ev.blocks[0].lines
        name = "TrussParser" if kind == "truss" else "StraceParser"
        assert taken[name] > 0.8 * lines


def test_strace_clock_past_midnight_and_changing_minutes(monkeypatch):
    lines = []
    t = 23 * 3600 + 58 * 60 + 30.0
    for i in range(3000):
        t += 0.037 + (i % 7) * 0.001
        s = t % 86400
        clock = f"{int(s // 3600):02d}:{int(s % 3600 // 60):02d}:{s % 60:09.6f}"
        if i % 500 == 250:
            clock = clock[1:] if clock[0] == "0" else clock  # a one-digit hour
        if i % 400 == 100:
            clock = clock[:8]  # -t: whole seconds
        pid = 4242 + i % 3
        lines.append(f'{pid} {clock} read(15, "x"..., 8208) = 240 <0.000{i % 10}11>')
        if i % 9 == 0:
            lines.append(f"{pid} {clock} futex(0x7f, FUTEX_WAIT, 0, NULL <unfinished ...>")
            lines.append(f"{pid} {clock} <... futex resumed>) = 0 <0.00{i % 10}>")
    _same("\n".join(lines).encode(), monkeypatch)


def test_stream_decodes_like_line_by_line_across_chunk_edges(monkeypatch):
    seed = (FIXTURES / "seeds" / "001_truss_shmdt.txt").read_bytes()
    prose = "café → naïve 日本語 🙂 résumé\n".encode()
    broken = b"caf\xc3 \xe2\x82\n\xf0\x9f\x99\n"  # sequences cut short, one at a line end
    data = prose + seed + broken + prose * 3 + seed + b"no newline at the end \xc3"
    want = _by_lines(data)
    for chunk in (1, 2, 3, 5, 7, 64, 4096):
        assert _by_stream(data, chunk, monkeypatch) == want


def test_a_write_the_output_split_is_closed_by_a_run_of_calls(monkeypatch):
    """strace on the terminal the traced program writes to: `write(1, "hello\\n", 6hello` stays
    open until `) = 6`, but a whole call line in between means the write never got its value
    (feed closes it), so a later `) = 6` is not the write's. The batch reader once left it open.
    Lines invented in the shape strace prints."""
    lines = ['execve("/bin/echo", ["echo", "hi"], 0x7ffd /* 20 vars */) = 0']
    lines += ["brk(NULL) = 0x55d0c2a4e000"] * 60  # past the detector's context lines
    lines.append('write(1, "hello\\n", 6hello')
    lines += [
        f'[pid 100] 10:00:{i // 100:02d}.{i % 100:02d}0001 read(3, "x", 1) = 1' for i in range(300)
    ]
    lines += [") = 6", "exit_group(0) = ?"]
    _same("\n".join(lines).encode(), monkeypatch)


def test_aix_calls_in_a_run_say_aix(monkeypatch):
    """AIX truss (`pid: tid:` prefixes, kread/kwrite) read by the batch path and the C scanner
    names the platform as feed does. Lines invented in the shape AIX truss prints."""
    lines = ["truss -f -d -D -E -p 7340"]
    t = 0.0
    for i in range(400):
        t += 0.0013
        call = "kread(5, 0x0FFFFFFFFFFF6F40, 8192) = 8192" if i % 50 == 49 else "getpid() = 7340"
        lines.append(f"7340: 1234567: {t:.4f} 0.0013 0.0002 {call}")
    data = "\n".join(lines).encode()
    _same(data, monkeypatch)
    assert parse_text(data.decode()).blocks[0].platform == "aix"
