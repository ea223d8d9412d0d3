"""The batch path for OS table formats (Detector.feed_text / parse_stream / parse_text, which
hands runs of rows an open table block claims to its Parser.feed_run) must give exactly the
evidence of the line-by-line path (Detector.feed_lines), the reference: same blocks, boundaries,
facts, details and kept text. Checked on generated captures of every kind (mpstat of three
sysstat releases), on every OS fixture and corpus snippet, and on captures damaged the way pastes
damage them: CRLF ends, cut and junk lines, decimal commas, out-of-range values, fences, control
characters, `#` before every line, an unterminated last line and small read sizes."""

from __future__ import annotations

import io
import random
import re
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ingest import detect
from ingest.detect import Detector, parse_stream, parse_text
from ingest.parsers import mpstat, sar

ROOT = Path(__file__).resolve().parent.parent
CORPUS = Path(__file__).resolve().parents[1].parent / "shared" / "corpus" / "snippets"
OS_FIXTURES = sorted((ROOT / "tests" / "fixtures" / "os").rglob("*.txt"))

if str(ROOT) not in sys.path:  # benchmarks/ is not an installed package: run from the checkout
    sys.path.insert(0, str(ROOT))
from benchmarks import gen_os_tables  # noqa: E402

SIZE = 160 * 1024
TABLE_FORMATS = ("mpstat", "vmstat", "iostat", "sar")


def _by_lines(data: bytes) -> str:
    d = Detector()
    d.feed_lines(line.decode("utf-8", errors="replace") for line in io.BytesIO(data))
    return d.finish().model_dump_json()


def _same(data: bytes, monkeypatch) -> str:
    want = _by_lines(data)  # the reference: one line at a time, no feed_run
    for chunk in (1024 * 1024, 4093):
        monkeypatch.setattr(detect, "CHUNK", chunk)
        assert parse_stream(io.BytesIO(data)).model_dump_json() == want
    assert parse_text(data.decode("utf-8", errors="replace")).model_dump_json() == want
    return want


@pytest.fixture(scope="module")
def captures(tmp_path_factory) -> dict[str, bytes]:
    out = {}
    tmp = tmp_path_factory.mktemp("gen")
    for kind in gen_os_tables.KINDS:
        gen_os_tables.generate(kind, SIZE, tmp / f"{kind}.txt")
        out[kind] = (tmp / f"{kind}.txt").read_bytes()
    for release in gen_os_tables.MPSTAT_RELEASES:
        path = tmp / f"mpstat-{release}.txt"
        gen_os_tables.generate("mpstat", SIZE, path, release=release)
        out[f"mpstat-{release}"] = path.read_bytes()
    return out


def test_corpus_is_there():
    assert CORPUS.is_dir(), f"the shared corpus is missing at {CORPUS}"
    assert OS_FIXTURES


@pytest.mark.parametrize("name", [*gen_os_tables.KINDS, "mpstat-7", "mpstat-9"])
def test_batch_path_gives_the_line_by_line_evidence(captures, monkeypatch, name):
    want = _same(captures[name], monkeypatch)
    assert '"format":"' + name.split("-")[0] + '"' in want


def _damage(data: bytes, seed: int) -> bytes:
    """The capture as a paste may leave it: junk and cut lines, decimal commas, values out of
    range, a fence, a control character, CRLF ends here and there, no final newline."""
    rng = random.Random(seed)
    lines = data.decode().split("\n")
    out: list[str] = []
    for line in lines:
        r = rng.random()
        if r < 0.01:
            out.append("some words someone typed in between")
        elif r < 0.02:
            line = line[: rng.randint(0, len(line))]
        elif r < 0.03:
            line = line.replace(".", ",")
        elif r < 0.035:
            line = re.sub(r"\d+\.\d\d\b", "142.00", line, count=1)
        elif r < 0.037:
            out.append("```")
        elif r < 0.039:
            line = line + "\x07"
        elif r < 0.05:
            line = line + "\r"
        elif r < 0.052:
            line = line + " " * 1100 + "1.00"
        out.append(line)
    return "\n".join(out).rstrip("\n").encode()


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("kind", gen_os_tables.KINDS)
def test_batch_path_on_damaged_captures(captures, monkeypatch, kind, seed):
    _same(_damage(captures[kind][: 60 * 1024], seed), monkeypatch)


def test_batch_path_with_a_prefix_on_every_line_and_other_formats_around(captures, monkeypatch):
    mp = captures["mpstat"][: 40 * 1024].decode()
    hashed = "".join("# " + line + "\n" for line in mp.splitlines()[:300])
    pdsh = "".join("db07: " + line + "\n" for line in mp.splitlines()[:300])
    text = (
        "here is what mpstat said:\n"
        + mp
        + "\nand vmstat:\n"
        + captures["vmstat"][:20000].decode().rsplit("\n", 1)[0]
        + "\n"
        + hashed
        + pdsh
        + captures["sar"][:30000].decode()
    )
    want = _same(text.encode(), monkeypatch)
    for kind in ("mpstat", "vmstat", "sar"):
        assert f'"format":"{kind}"' in want


def test_every_os_fixture_and_corpus_snippet(monkeypatch):
    snippets = sorted(CORPUS.glob("*.txt"))
    assert len(snippets) > 40
    for path in [*OS_FIXTURES, *snippets]:
        data = path.read_bytes()
        _same(data, monkeypatch)
        if any(f in path.name for f in TABLE_FORMATS):  # long enough for a run: repeat it
            _same(data.rstrip(b"\n") + b"\n" + data, monkeypatch)


@pytest.mark.parametrize(
    ("kind", "parser", "share"), [("mpstat", mpstat.MpstatParser, 0.9), ("sar", sar.SarParser, 0.9)]
)
def test_the_fast_path_is_really_taken(captures, monkeypatch, kind, parser, share):
    calls: list[int] = []
    real = parser.feed_run

    def counted(self, text, pos, endpos, plain):
        end, taken = real(self, text, pos, endpos, plain)
        calls.append(taken)
        return end, taken

    monkeypatch.setattr(parser, "feed_run", counted)
    evidence = parse_text(captures[kind].decode())
    block = evidence.blocks[0]
    assert sum(calls) > share * block.lines  # rows (and mpstat's headers) came in runs
    assert sum(calls) < block.lines


_VALUE = st.one_of(
    st.from_regex(r"-?\d{1,12}(?:[.,]\d{1,6})?", fullmatch=True),
    st.sampled_from(["0.00", "100.00", "1,5", "-3", "1e5", "inf", "1.", ".5", "1_0", "--1", "٣.٥"]),
    st.text(alphabet="0123456789.,-e+x_", min_size=1, max_size=16),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(_VALUE, min_size=1, max_size=14))
def test_memo_of_read_values_is_each_value_checked_and_read(values):
    """_values (a memo of tokens read) says what _NUMBER and _num say about each token, the
    first time and when the memo already holds it."""
    want = (
        [mpstat._num(v) for v in values] if all(mpstat._NUMBER.match(v) for v in values) else None
    )
    assert mpstat._values(values) == want
    assert mpstat._values(values) == want


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=600))
def test_any_bytes_after_a_table_parse_alike_on_both_paths(data):
    head = b"Linux 5.4 (h) 01/01/2026 _x86_64_ (2 CPU)\n\n"
    rows = b"".join(
        b"10:00:%02d  all  1.00 0.00 2.00 0.00 0.00 0.00 0.00 0.00 0.00 97.00\n" % (i % 60)
        for i in range(60)
    )
    header = b"10:00:00  CPU  %usr %nice %sys %iowait %irq %soft %steal %guest %gnice %idle\n"
    blob = head + header + rows + data + b"\n" + rows
    want = _by_lines(blob)
    assert parse_stream(io.BytesIO(blob)).model_dump_json() == want
    assert parse_text(blob.decode("utf-8", errors="replace")).model_dump_json() == want


def test_a_cpu_whose_columns_change_keeps_every_sum(monkeypatch):
    """The running sums per CPU start as a list aligned to the first row's columns; a later
    header with other columns (sysstat 12's %gnice, then 9's without it; invented numbers) turns
    them into a dict without losing a value, on both paths."""
    head12 = "10:00:00  CPU  %usr %nice %sys %iowait %irq %soft %steal %guest %gnice %idle"
    head9 = "10:01:00  CPU  %usr %nice %sys %iowait %irq %soft %steal %guest %idle"
    lines = ["Linux 5.4 (h) 01/01/2026 _x86_64_ (1 CPU)", ""]
    for i in range(30):
        lines += ["", head12.replace("10:00:00", f"10:00:{i:02d}")]
        lines += [f"10:00:{i:02d}  0  10.00 0.00 5.00 0.00 0.00 0.00 0.00 0.00 1.00 84.00"]
    for i in range(30):
        lines += ["", head9.replace("10:01:00", f"10:01:{i:02d}")]
        lines += [f"10:01:{i:02d}  0  30.00 0.00 5.00 0.00 0.00 0.00 0.00 0.00 65.00"]
    data = ("\n".join(lines) + "\n").encode()
    _same(data, monkeypatch)
    block = parse_text(data.decode()).blocks[0]
    assert block.facts["cpu.intervals"] == 60
    facts = block.facts
    assert facts["cpu.usr"] == {"0": 20.0}
    assert facts["cpu.idle"] == {"0": 74.5}
    # guest + gnice per row, over the 60 rows: the 30 that had %gnice gave 1.00 each
    assert facts["cpu.guest_pct"] == pytest.approx(0.5)
