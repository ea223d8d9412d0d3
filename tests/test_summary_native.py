"""The C reader of strace -c rows and rulers (strace_summary_rows, ingest/_syscore_src/summary.c)
and feed_run's direct reading of the lines between tables (StraceParser._between) must give the
evidence of the Python reader (strace.NATIVE = False) and of the line-by-line path (no feed_run):
on generated monitoring logs, on the corpus's and fixtures' tables, on the tables of other strace
releases and flags (old 4.x widths, -w, -S, -f, a total row, no errors column written), on
pastes (collapsed blanks, tabs, CRLF, decimal commas) and on rows at each bound the C reader
checks (15/16 digits, 9/10 decimals, 2 to 6 numbers, names beyond ASCII, lines over MAX_LINE,
more names than are held, a 4-number layout not yet named)."""

from __future__ import annotations

import io
import random
from pathlib import Path

import pytest

from benchmarks import gen_traces
from ingest import detect
from ingest.base import MAX_LINE
from ingest.detect import Detector, parse_stream, parse_text
from ingest.parsers import strace

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT.parent / "shared" / "corpus" / "snippets"

HEAD = (
    "% time     seconds  usecs/call     calls    errors syscall\n"
    "------ ----------- ----------- --------- --------- ----------------\n"
)
RULER = "------ ----------- ----------- --------- --------- ----------------\n"
# A table of 60 rows first: what follows is past the block's first CONTEXT_LINES_PER_BLOCK lines
PAD = HEAD + " 45.32    0.123456          12     10000       100 read\n" * 60 + RULER + "\n"


def _by_lines(data: bytes) -> str:
    d = Detector()
    d.feed_lines(line.decode("utf-8", errors="replace") for line in io.BytesIO(data))
    return d.finish().model_dump_json()


def _alike(data: bytes, monkeypatch, native_lines: int = 0) -> str:
    """The evidence with the C reader on and off, by parse_stream (two read sizes) and
    parse_text, all equal to the line-by-line path's; returns it. The C reader must have taken
    at least `native_lines` lines (a block's first CONTEXT_LINES_PER_BLOCK lines go one by one,
    without feed_run: the lines under test must come after them)."""
    want = _by_lines(data)
    text = data.decode("utf-8", errors="replace")
    taken = [0]
    real = strace._c_summary_rows

    def counted(*args):
        pos, k = real(*args)
        taken[0] += k
        return pos, k

    monkeypatch.setattr(strace, "_c_summary_rows", counted)
    for native in (True, False):
        monkeypatch.setattr(strace, "NATIVE", native)
        for chunk in (1024 * 1024, 4093):
            monkeypatch.setattr(detect, "CHUNK", chunk)
            assert parse_stream(io.BytesIO(data)).model_dump_json() == want, (native, chunk)
        assert parse_text(text).model_dump_json() == want, native
    assert taken[0] >= native_lines
    return want


def test_the_c_reader_is_built():
    assert strace._c_summary_rows is not None, "ingest._syscore lacks strace_summary_rows"
    assert strace.NATIVE


@pytest.fixture(scope="module")
def log(tmp_path_factory) -> bytes:
    path = tmp_path_factory.mktemp("gen") / "strace-c.txt"
    gen_traces.generate_summary(120 * 1024, path, seed=23)
    return path.read_bytes()


def test_generated_log(log, monkeypatch):
    want = _alike(log, monkeypatch)
    assert want.count('"format":"strace"') == 1


def test_the_c_reader_takes_the_rows(log, monkeypatch):
    """Not a path that never runs: on a generated log the C reader takes nearly every row and
    ruler, and the lines between tables never reach feed_one."""
    calls: list[int] = []
    real = strace._c_summary_rows

    def counted(*args):
        pos, k = real(*args)
        calls.append(k)
        return pos, k

    monkeypatch.setattr(strace, "_c_summary_rows", counted)
    one = []
    real_one = strace.StraceParser.feed_one

    def feed_one(self, *args):
        one.append(args[1])
        return real_one(self, *args)

    monkeypatch.setattr(strace.StraceParser, "feed_one", feed_one)
    block = parse_text(log.decode()).blocks[0]
    tables = log.count(b"% time")
    assert sum(calls) > 0.7 * block.lines
    # blank lines between tables still go through feed_one (the detector's memo decides them)
    assert len(one) <= tables + 20


@pytest.mark.parametrize("seed", range(4))
def test_damaged_logs(log, monkeypatch, seed):
    rng = random.Random(seed)
    out: list[bytes] = []
    for line in log.splitlines(keepends=True)[:1500]:
        r = rng.random()
        if r < 0.03:
            out.append(line[: len(line) // 2] + b"\n")
        elif r < 0.05:
            out.append(b'4242  read(3, "x", 1) = 1 <0.000010>\n')
        elif r < 0.06:
            out.append(line.replace(b".", b","))
        elif r < 0.07:
            out.append(line.rstrip(b"\n") + b"\r\n")
        elif r < 0.08:
            out.append(line.replace(b" ", b"\t", 3))
        elif r < 0.09:
            out.append(b"strace: Process 77 attached Err#9\n")
        elif r < 0.10:
            out.append(b"\xc3\xa9" + line)
        elif r < 0.11:
            continue
        out.append(line)
    _alike(b"".join(out), monkeypatch)


def _variants(text: str) -> dict[str, str]:
    lines = text.splitlines()
    return {
        "collapsed": "".join(" ".join(line.split()) + "\n" for line in lines),
        "tabs": "".join(line.replace("  ", "\t") + "\n" for line in lines),
        "crlf": text.replace("\n", "\r\n"),
        "comma": text.replace(".", ","),
        "indented": "".join("   " + line + "\n" for line in lines),
        "no final newline": text.rstrip("\n"),
    }


@pytest.mark.parametrize(
    "variant", ["collapsed", "tabs", "crlf", "comma", "indented", "no final newline"]
)
def test_pasted_logs(log, monkeypatch, variant):
    text = log[: 30 * 1024].decode().rsplit("\n", 1)[0] + "\n"
    _alike(_variants(text)[variant].encode(), monkeypatch)


def test_corpus_and_fixture_tables(monkeypatch):
    assert CORPUS.is_dir(), f"the shared corpus is missing at {CORPUS}"
    paths = sorted(CORPUS.glob("3[56]_strace-*.txt"))
    assert len(paths) == 2
    paths += [
        ROOT / "tests" / "fixtures" / "linux" / "strace_c_decimal_comma.txt",
        ROOT / "tests" / "fixtures" / "seeds" / "000_strace_c_19c.txt",
        ROOT / "tests" / "fixtures" / "kb" / "logon-storm" / "healthy-strace-c-server.txt",
    ]
    for path in paths:
        data = path.read_bytes().rstrip(b"\n") + b"\n"
        for times in (1, 4):
            _alike(data * times, monkeypatch)


# Tables as strace releases and flags print them (numbers invented, shapes from strace's
# summary code: 4.x's narrower cells, 5.x+'s wider name column, -w (wall time: same columns),
# -S calls (another order), -f (one table for all processes), a total row with and without
# errors, and rows whose errors cell is blank).
OLD_4X = (
    "% time     seconds  usecs/call     calls    errors syscall\n"
    "------ ----------- ----------- --------- --------- ----------------\n"
    " 62.50    0.000050          25         2           munmap\n"
    " 37.50    0.000030           3        10         4 open\n"
    "------ ----------- ----------- --------- --------- ----------------\n"
    "100.00    0.000080                    12         4 total\n"
)
NEW_6X_W_S = (
    "% time     seconds  usecs/call     calls    errors syscall\n"
    "------ ----------- ----------- --------- --------- ------------------\n"
    " 91.03    2.904513       29045       100           epoll_pwait\n"
    "  8.12    0.259120          51      5012      5010 recvmsg\n"
    "  0.85    0.027104           5      5012           futex\n"
    "------ ----------- ----------- --------- --------- ------------------\n"
    "100.00    3.190737         314     10124      5010 total\n"
)
THREE_CELLS = (
    "% time     seconds  usecs/call     calls    errors syscall\n"
    "------ ----------- ----------- --------- --------- ----------------\n"
    " 99.99    1.000000                   4           select\n"
    "  0.01    0.000100                   1           total\n"
)


@pytest.mark.parametrize("table", [OLD_4X, NEW_6X_W_S, THREE_CELLS])
def test_releases_and_flags(monkeypatch, table):
    attach = "strace: Process 4242 attached\n"
    detach = "^Cstrace: Process 4242 detached\n"
    want = _alike(((attach + detach + table + "\n") * 8).encode(), monkeypatch, native_lines=5)
    assert '"format":"strace"' in want
    # -f: calls of several processes, then the table
    calls = "".join(f'{4242 + i % 3}  read(3, "x", 1) = 1\n' for i in range(40))
    _alike((calls + table).encode(), monkeypatch)


def _row(*cells: str) -> str:
    return "  " + "    ".join(cells) + "\n"


@pytest.mark.parametrize(
    "row",
    [
        _row("1.00", "0.000001", "1", "1", "1", "read"),  # 5 numbers
        _row("1.00", "0.000001", "1", "1", "read"),  # 4
        _row("1.00", "0.000001", "1", "read"),  # 3
        _row("1.00", "0.000001", "read"),  # 2: not a row
        _row("1.00", "0.000001", "1", "1", "1", "1", "read"),  # 6: not a row
        _row("1.00", "0.000001", "9" * 15, "read"),  # 15 digits
        _row("1.00", "0.000001", "9" * 16, "read"),  # 16: not a number
        _row("1.00", "0." + "1" * 9, "1", "read"),  # 9 decimals
        _row("1.00", "0." + "1" * 10, "1", "read"),  # 10: not a number
        _row("1.00", "0.", "1", "read"),  # no decimals
        _row("1,00", "0,000001", "1", "1", "read"),  # decimal comma
        _row("1.00", "0.000001", "1", "1", "caf\u00e9"),  # a name beyond ASCII (Latin-1)
        _row("1.00", "0.000001", "1", "1", "\u0663"),  # beyond Latin-1
        _row("1.00", "0.000001", "1", "1", "9read"),
        _row("1.00", "0.000001", "1", "1", "read", "x"),
        _row("1.00", "0.000001", "1", "1", "read()"),
        _row("1.00", "0.000001", "\u0663", "1", "read"),  # an Arabic-Indic digit
        "\t1.00\t0.000001\t1\t1\tread\t\r\n",
        " 1.00 0.000001 1 1 read" + " " * (MAX_LINE + 10) + "\n",  # longer than MAX_LINE
        "------ -- -----------\n",
        "------\n",
        "  ------   -----------   \r\n",
        "------ -----------x\n",
        "\n",
        "strace: Process 9 detached\n",
        "% time     seconds  usecs/call     calls    errors syscall\n",
        "%  time seconds usecs/call calls errors syscall\n",  # a header of another layout
    ],
)
def test_rows_at_the_bounds(monkeypatch, row):
    good = " 45.32    0.123456          12     10000       100 read\n" * 5
    good4 = " 45.32    0.123456          12     10000           write\n" * 5
    blob = HEAD + good + row + good4 + row + RULER + good + "\n" + HEAD + row + good4
    # text beyond Latin-1 is not a 1-byte str: the C reader leaves all of it to Python
    need = 10 if max(map(ord, row), default=0) < 256 else 0
    _alike((PAD + blob).encode("utf-8"), monkeypatch, native_lines=need)


def test_more_names_than_are_held(monkeypatch):
    names = [f"call_{i}" for i in range(strace._HELD_MAX + 50)]
    rows = "".join(
        f"  0.{i % 100:02d}    0.{i:06d}    {i + 1:8d}   {i + 7:7d}           {n}\n"
        for i, n in enumerate(names)
    )
    _alike((HEAD + rows + RULER + "\n" + HEAD + rows[:4000]).encode(), monkeypatch, 2000)


def test_four_number_layouts_named_once_per_header(monkeypatch):
    """Rows whose blank cell moves (errors blank, usecs/call blank) under two header layouts:
    the C reader stops at a layout not yet named and reads on once _add_row named it."""
    wide = "% time       seconds   usecs/call       calls      errors syscall\n"
    rows = (
        " 10.00    0.100000          10        10           read\n"
        " 10.00    0.100000                    10         3 write\n"
        " 10.00    0.100000          10        10         3 open\n"
    )
    wide_rows = "".join("   " + r for r in rows.splitlines(keepends=True))
    blob = (HEAD + rows * 3 + "\n" + wide + RULER + wide_rows * 3 + "\n") * 3
    _alike((PAD + blob).encode(), monkeypatch, native_lines=20)
