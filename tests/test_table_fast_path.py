"""The batch path for OS table formats (Detector.feed_text / parse_stream / parse_text, which
hands runs of rows an open table block claims to its Parser.feed_run) must give exactly the
evidence of the line-by-line path (Detector.feed_lines), the reference: same blocks, boundaries,
facts, details and kept text. Checked on generated captures of every kind (mpstat of three
sysstat releases), on every OS fixture and corpus snippet, and on captures damaged the way pastes
damage them: CRLF ends, cut and junk lines, decimal commas, out-of-range values, fences, control
characters, `#` before every line, an unterminated last line and small read sizes. strace -c
summary tables (runs of rows and rulers StraceParser claims once the table's header is read) are
checked the same way."""

from __future__ import annotations

import io
import random
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from benchmarks import gen_os_tables, gen_traces
from ingest import detect
from ingest.detect import Detector, parse_stream, parse_text
from ingest.parsers import mpstat, ostable, pidstat, prstat, sar, top
from ingest.parsers.strace import StraceParser

ROOT = Path(__file__).resolve().parent.parent
CORPUS = Path(__file__).resolve().parents[1].parent / "shared" / "corpus" / "snippets"
OS_FIXTURES = sorted((ROOT / "tests" / "fixtures" / "os").rglob("*.txt"))

SIZE = 160 * 1024
TABLE_FORMATS = ("mpstat", "vmstat", "iostat", "sar", "pidstat", "prstat", "top")


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
    tops = sorted((ROOT / "tests" / "fixtures" / "os_profiles").glob("top_*.txt"))
    assert tops
    for path in [*OS_FIXTURES, *tops, *snippets]:
        data = path.read_bytes()
        _same(data, monkeypatch)
        if any(f in path.name for f in TABLE_FORMATS):  # long enough for a run: repeat it
            _same(data.rstrip(b"\n") + b"\n" + data, monkeypatch)


@pytest.mark.parametrize(
    ("kind", "parser", "share"),
    [
        ("mpstat", mpstat.MpstatParser, 0.9),
        ("sar", sar.SarParser, 0.9),
        ("pidstat", pidstat.PidstatParser, 0.8),
        ("prstat", prstat.PrstatParser, 0.9),
        ("top", top.TopParser, 0.7),
    ],
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


# -- strace -c summary tables -------------------------------------------------------------------


@pytest.fixture(scope="module")
def summary(tmp_path_factory) -> tuple[bytes, gen_traces.ExpectedSummary]:
    path = tmp_path_factory.mktemp("gen") / "strace-c.txt"
    exp = gen_traces.generate_summary(SIZE, path)
    return path.read_bytes(), exp


def test_strace_c_tables_batch_path_gives_the_line_by_line_evidence(summary, monkeypatch):
    data, exp = summary
    _same(data, monkeypatch)
    evidence = parse_text(data.decode())
    assert [b.format for b in evidence.blocks] == ["strace"]
    facts = evidence.blocks[0].facts
    # the last table's total row, and the last row printed for each syscall
    assert facts["trace.calls"] == exp.calls
    assert facts["trace.errors"] == exp.errors
    assert facts["syscall.count"] == {k: float(v) for k, v in exp.syscalls.items()}
    assert evidence.blocks[0].lines == exp.lines  # every line, the blanks between tables too


@pytest.mark.parametrize("seed", range(3))
def test_strace_c_tables_batch_path_on_damaged_captures(summary, monkeypatch, seed):
    _same(_damage(summary[0][: 60 * 1024], seed), monkeypatch)


def _variants(text: str) -> dict[str, str]:
    """The same tables as other strace releases, locales and pastes print them."""
    lines = text.splitlines()
    return {
        "decimal comma": text.replace(".", ","),
        "crlf": text.replace("\n", "\r\n"),
        "hash prefix": "".join("# " + line + "\n" for line in lines),
        "collapsed blanks": "".join(" ".join(line.split()) + "\n" for line in lines),
        # strace 4.5 (no errors cell written when none) with tabs: 3-4 numbers
        "tabs": "".join(line.replace("  ", "\t") + "\n" for line in lines),
        # -C: calls before and after each table, so runs switch between the two readers
        "with calls": "".join(
            line
            + "\n"
            + (
                f'4242  10:14:{i % 60:02d}.000100 read(5, "x", 1) = 1 <0.000010>\n'
                if line.startswith("^C")
                else ""
            )
            for i, line in enumerate(lines)
        ),
    }


@pytest.mark.parametrize(
    "variant", ["decimal comma", "crlf", "hash prefix", "collapsed blanks", "tabs", "with calls"]
)
def test_strace_c_tables_as_other_releases_and_pastes_print_them(summary, monkeypatch, variant):
    text = summary[0][: 40 * 1024].decode().rsplit("\n", 1)[0] + "\n"
    want = _same(_variants(text)[variant].encode(), monkeypatch)
    # strace's parser takes no `#` before its lines (main's neither): that variant checks the
    # two paths agree on text no block claims
    assert ('"format":"strace"' in want) == (variant != "hash prefix")


def test_strace_c_corpus_tables_repeated(monkeypatch):
    snippets = sorted(CORPUS.glob("3[56]_strace-*.txt"))
    assert len(snippets) == 2
    fixture = ROOT / "tests" / "fixtures" / "linux" / "strace_c_decimal_comma.txt"
    for path in [*snippets, fixture]:
        data = path.read_bytes().rstrip(b"\n") + b"\n"
        _same(data * 3, monkeypatch)


def test_strace_c_fast_path_is_really_taken(summary, monkeypatch):
    taken: list[int] = []
    fed: list[str] = []  # lines the detector fed one by one, outside feed_run
    inside = [False]
    real_run, real_feed = StraceParser.feed_run, StraceParser.feed

    def counted(self, text, pos, endpos, plain):
        inside[0] = True
        end, n = real_run(self, text, pos, endpos, plain)
        inside[0] = False
        taken.append(n)
        return end, n

    def feed(self, line):
        if not inside[0]:
            fed.append(line)
        return real_feed(self, line)

    monkeypatch.setattr(StraceParser, "feed_run", counted)
    monkeypatch.setattr(StraceParser, "feed", feed)
    block = parse_text(summary[0].decode()).blocks[0]
    assert sum(taken) + len(fed) == block.lines
    # all but the first lines (the context a block needs before its runs) came in runs: rows,
    # rulers and what is between tables
    assert len(fed) <= detect.CONTEXT_LINES_PER_BLOCK + 1
    assert len(taken) < 20  # a few runs, not one a table


def test_no_other_format_starts_on_a_line_strace_claims(summary):
    """claims lets a -c table's rows and rulers skip asking the other formats: that changes no
    evidence only because none of them starts a block on such a line. Checked on generated
    tables, the corpus's and a fixture's, and on their decimal-comma and tab variants."""
    others = [p for p in Detector().parser_types if p is not StraceParser]
    texts = [summary[0].decode()[: 40 * 1024]]
    texts += [p.read_text() for p in sorted(CORPUS.glob("3[56]_strace-*.txt"))]
    texts.append((ROOT / "tests" / "fixtures" / "linux" / "strace_c_decimal_comma.txt").read_text())
    texts += [v for t in texts[:1] for v in _variants(t).values()]
    claimed = 0
    for text in texts:
        parser = StraceParser()
        for line in text.splitlines():
            if parser.claims(line):
                claimed += 1
                assert not [p for p in others if p.start_score(line) == 2], line
            parser.feed(line)
    assert claimed > 1000


_ROW_TOKEN = st.one_of(
    st.from_regex(r"\d{1,16}(?:[.,]\d{1,10})?", fullmatch=True),
    st.sampled_from(["read", "total", "_x", "9a", "-", "---", "----------", "\t", " ", "٣"]),
)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.lists(_ROW_TOKEN, min_size=0, max_size=7), min_size=1, max_size=12))
def test_drawn_rows_inside_a_strace_c_table_parse_alike_on_both_paths(rows):
    head = (
        "% time     seconds  usecs/call     calls    errors syscall\n"
        "------ ----------- ----------- --------- --------- ----------------\n"
    )
    good = " 45.32    0.123456          12     10000       100 read\n" * 25
    drawn = "".join(" ".join(r) + "\n" for r in rows)
    blob = (head + good + drawn + good).encode()
    want = _by_lines(blob)
    assert parse_stream(io.BytesIO(blob)).model_dump_json() == want
    assert parse_text(blob.decode()).model_dump_json() == want


@pytest.mark.parametrize(
    ("kind", "parser", "glob"),
    [
        ("pidstat", pidstat.PidstatParser, "pidstat*.txt"),
        ("pidstat", pidstat.PidstatParser, "*_pidstat_*.txt"),
        ("prstat", prstat.PrstatParser, "prstat*.txt"),
        ("prstat", prstat.PrstatParser, "*_prstat-*.txt"),
        ("top", top.TopParser, "top_*.txt"),
    ],
)
def test_no_other_format_starts_on_a_row_a_table_claims(captures, kind, parser, glob):
    """pidstat, prstat and top claim their rows once a header is read: that changes no evidence
    only because no other format starts a block on a row their feed takes (when feed refuses a
    line the detector closes the block whoever else starts on it)."""
    others = [p for p in Detector().parser_types if p is not parser]
    fixtures = ROOT / "tests" / "fixtures"
    paths = [*(fixtures / "os").glob(glob), *(fixtures / "os_profiles").glob(glob)]
    paths += CORPUS.glob(glob)
    assert paths
    texts = [p.read_text() for p in paths] + [captures[kind].decode()[:60000]]
    claimed = 0
    for text in texts:
        reader = parser()
        for line in text.splitlines():
            row = reader.claims(line) and not ostable.banner_line(line)  # the banner: as before
            if reader.feed(line) and row:
                claimed += 1
                assert not [p for p in others if p.start_score(line) == 2], line
    assert claimed > 100
