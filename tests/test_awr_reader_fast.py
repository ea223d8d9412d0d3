"""The AWR / Statspack reader's shortcuts (awrfast3) must give exactly the evidence of the reader
before them, kept here as the reference: `_feed` asking every regex of every line, `section_of`
trying its titles one by one, the ruler cells chosen with `min`, and nothing cached (columns,
labels, SQL columns). Compared on every corpus snippet and fixture that holds a report (text and
HTML), a generated archive of five releases' layouts, and the same text pasted the ways forums
and chats mangle it (collapsed spaces, wrapped lines, '#' and prompt prefixes, CRLF), plus lines
whose first letter is one a case-insensitive title matches beyond ASCII."""

from __future__ import annotations

import io
import re
from pathlib import Path

import pytest

from benchmarks import gen_awr
from ingest.detect import parse_stream
from ingest.parsers import awr_report, waits
from ingest.parsers.awr_report import _SECTIONS, RE_MINUTES, RE_SNAP, section_of
from ingest.parsers.waits import (
    _TITLE_FIRST,
    RE_INTERVAL,
    RE_MULTI_RULER,
    RE_NOTE,
    RE_PAGE_HEADER,
    RE_SINGLE_RULER,
    RE_TILDES,
    RE_TITLE,
    RE_TOP_TITLE,
    WaitsParser,
    _is_header,
    _read_columns,
)

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT.parent / "shared" / "corpus" / "snippets"
FIXTURES = ROOT / "tests" / "fixtures"

# -- the reference: the reader as it was before these shortcuts ------------------------------------


def _section_of_each(line: str) -> str | None:
    s = line.strip()
    if not s or s[0] not in awr_report._SECTION_INITIALS or len(s) > 200:
        return None
    for rx, kind in _SECTIONS:
        if rx.match(s):
            return kind
    return None


def _cells_min(line: str, spans: list[tuple[int, int]]) -> list[str]:
    out = [""] * len(spans)
    for m in re.finditer(r"\S+", line):
        a, b = m.start(), m.end()
        best = min(
            range(len(spans)),
            key=lambda i: (
                0
                if spans[i][0] <= b - 1 < spans[i][1] + 1 or spans[i][0] <= a < spans[i][1]
                else 1,
                abs(spans[i][1] - b),
            ),
        )
        out[best] = f"{out[best]} {m.group()}".strip()
    return out


def _feed_every_regex(self: WaitsParser, s: str) -> bool:
    if self._started and RE_PAGE_HEADER.match(s):
        self._header = self._stash
        if not self._header and self._table is None and self._last_table is not None:
            self._table = self._last_table
        self._page_break = True
        return True
    if self._page_break:
        self._page_break = False
        if RE_SINGLE_RULER.match(s):
            return True
    if self._events_top and RE_TOP_TITLE.match(s):
        return False
    section = awr_report.section_of(s)
    if section is not None:
        self._end_table()
        if section == "tables":
            self._section = None
            self._title = " ".join(s.split())[:120]
            return True
        self._section = section
        self._report.title(s, section)
        if section in ("header", "load", "efficiency", "timemodel"):
            self._in_report = True
        if section in ("wait_class", "timemodel"):
            self._title = " ".join(s.split())[:120]
        return True
    if RE_SNAP.match(s) or RE_MINUTES.search(s):
        self._report.snapshot_line(s)
        return True
    if self._section in ("header", "load", "efficiency", "sql", "latch", "segments", "skip"):
        if RE_TOP_TITLE.match(s) or RE_TITLE.match(s):
            self._section = None
        elif self._section == "skip" or self._started:
            return self._report.feed(s, self._section)
    if RE_MULTI_RULER.match(s):
        self._open_table(s)
        return True
    if RE_SINGLE_RULER.match(s):
        self._end_table()
        return True
    if RE_NOTE.match(s):
        return self._started
    m = RE_INTERVAL.match(s)
    if m:
        self._set_interval(m.group(1), m.group(2) or "s")
        return True
    m = RE_TOP_TITLE.match(s) or RE_TITLE.match(s)
    if m:
        self._end_table()
        self._section = None
        self._scope = "bg" if m.group().lstrip().lower().startswith("background") else "fg"
        self._title = " ".join(m.group().split())[:120]
        rest = " " * m.end() + s[m.end() :]
        self._header = [rest] if rest.strip() else []
        return True
    if RE_TILDES.search(s) and not RE_TILDES.sub("", s).strip(" ~"):
        return True
    if self._table is not None:
        return self._table_line(s)
    if RE_TILDES.search(s) or _is_header(s):
        self._header = (self._header + [s])[-3:]
        return True
    return self._loose_row(s)


def _labels_uncached(header: list[str], spans: list[tuple[int, int]]) -> list[str]:
    return list(awr_report._labels_of.__wrapped__(tuple(header), tuple(spans)))


def _evidence(data: bytes) -> str:
    return parse_stream(io.BytesIO(data)).model_dump_json()


def _same(data: bytes, monkeypatch) -> str:
    """The evidence of `data` is the reference's; returns it."""
    with monkeypatch.context() as m:
        m.setattr(WaitsParser, "_feed", _feed_every_regex)
        m.setattr(awr_report, "section_of", _section_of_each)
        m.setattr(waits, "section_of", _section_of_each)
        m.setattr(awr_report, "_cells", _cells_min)
        m.setattr(awr_report, "_labels", _labels_uncached)
        m.setattr(awr_report, "_sql_columns", awr_report._sql_columns.__wrapped__)
        m.setattr(waits, "_build_columns", _read_columns)
        m.setattr(awr_report.ReportReader, "snapshot_line", _snapshot_every_line)
        want = _evidence(data)
    assert _evidence(data) == want
    return want


_snapshot_line = awr_report.ReportReader.snapshot_line


def _snapshot_every_line(self, line: str) -> bool:
    """snapshot_line, checking its ':' shortcut: a line without ':' matches none of the three
    regexes the shortcut spares it."""
    if ":" not in line:
        assert not RE_SNAP.match(line)
        assert not RE_MINUTES.search(line)
        assert not awr_report.RE_AAS.search(line)
    return _snapshot_line(self, line)


# -- inputs --------------------------------------------------------------------------------------


def _report_files() -> list[Path]:
    files = sorted(CORPUS.glob("*")) + sorted(p for p in FIXTURES.rglob("*") if p.is_file())
    assert len(files) > 100, "the corpus (../shared/corpus) and fixtures must be present"
    keep = []
    for path in files:
        text = path.read_bytes().decode("utf-8", errors="replace")
        if re.search(r"WORKLOAD REPOSITORY|STATSPACK|Top \d+ |Wait Events|Load Profile", text):
            keep.append(path)
    return keep


def generated_archive(tmp_path_factory, size: int, seed: int) -> bytes:
    """A gen_awr archive of `size` bytes (every layout), written once for a test module."""
    path = tmp_path_factory.mktemp("gen") / "awr.txt"
    gen_awr.generate_awr(size, path, seed=seed)
    return path.read_bytes()


@pytest.fixture(scope="module")
def archive(tmp_path_factory) -> bytes:
    return generated_archive(tmp_path_factory, 200 * 1024, seed=31)


def _collapsed(text: str) -> str:
    return re.sub(r"[ \t]{2,}", " ", text)


def _wrapped(text: str, width: int = 64) -> str:
    out = []
    for line in text.split("\n"):
        while len(line) > width:
            cut = line.rfind(" ", 0, width)
            cut = width if cut <= 0 else cut
            out.append(line[:cut])
            line = line[cut:].lstrip()
        out.append(line)
    return "\n".join(out)


def _prefixed(text: str, prefix: str) -> str:
    return "\n".join(prefix + line for line in text.split("\n"))


# -- tests ---------------------------------------------------------------------------------------


def test_corpus_and_fixture_reports_read_alike(monkeypatch):
    files = _report_files()
    assert any(p.suffix == ".html" for p in files)
    seen = 0
    for path in files:
        want = _same(path.read_bytes(), monkeypatch)
        seen += '"format":"waits"' in want
    assert seen >= 10, seen


def test_pasted_reports_read_alike(monkeypatch):
    """Forum and chat pastes of every text report: spaces collapsed, lines wrapped, '# ' and
    'SQL> ' prefixes, CRLF."""
    waits_blocks = 0
    for path in _report_files():
        if path.suffix == ".html":
            continue
        text = path.read_bytes().decode("utf-8", errors="replace")
        for variant in (
            _collapsed(text),
            _wrapped(text),
            _prefixed(text, "# "),
            _prefixed(text, "SQL> "),
            text.replace("\n", "\r\n"),
        ):
            waits_blocks += '"format":"waits"' in _same(variant.encode(), monkeypatch)
    assert waits_blocks >= 30, waits_blocks


def test_generated_archive_reads_alike(archive, monkeypatch):
    want = _same(archive, monkeypatch)
    assert want.count('"format":"waits"') > 20
    text = archive.decode()
    _same(_collapsed(text).encode(), monkeypatch)
    _same(_wrapped(text, 72).encode(), monkeypatch)
    _same(archive[: len(archive) // 3], monkeypatch)  # cut inside a report


def test_first_letters_beyond_ascii_still_ask(monkeypatch):
    """Titles matched case-insensitively also match 'ſ' (s), 'ı' and 'İ' (i), 'K' (k): a line
    starting with a character beyond ASCII must still be asked every question."""
    assert RE_TITLE.match("ſystem events")
    assert RE_INTERVAL.match("ınterval:- 60 s")
    assert not ("ſ" in _TITLE_FIRST or "ı" in _TITLE_FIRST)
    head = (
        "Top 5 Timed Events\n~~~~~~~~~~~~~~~~~~\n"
        "Event                                 Waits    Time (s)   (ms)   Time\n"
        "------------------------------ ------------ ----------- ------ ------\n"
        "db file sequential read              12,345         234     19   45.1\n"
        "\n"
    )
    tails = (
        "ſystem events\n"
        "Event                  Waits   Time_outs   Time (s)\n"
        "---------------------- ------- ----------- ---------\n"
        "log file sync          1,234   0           56\n",
        "ınterval:- 15 minutes\n",
        "İnterval:- 30 s\n",
        "  # not a title\nſession waits\nEvent  Waits  Time (s)\n",
    )
    for tail in tails:
        want = _same((head + tail).encode(), monkeypatch)
        assert '"format":"waits"' in want


def test_section_of_answers_as_each_title_in_order():
    lines = []
    for path in _report_files():
        lines += path.read_bytes().decode("utf-8", errors="replace").splitlines()
    lines += [
        "Instance Activity Stats - Absolute Values",
        "Instance Activity Stats",
        "Wait Class DB/Inst: X/x1 Snaps: 1-2",
        "Wait Classes by Total Wait Time",
        "Background Wait Class",
        "init.ora Parameters",
        "Latch Activity",
        "Latch Sleep breakdown",
        "Segments by Logical Reads",
        "SQL ordered by CPU Time",
    ]
    hits = 0
    for line in lines:
        assert section_of(line) == _section_of_each(line), line
        hits += section_of(line) is not None
    assert hits > 50


def test_cells_answer_as_min():
    spans_of = [
        [(0, 10), (11, 20), (21, 30)],
        [(4, 8), (8, 12), (20, 40)],
        [(0, 3)],
        [(5, 6), (30, 31), (10, 12), (2, 40)],
    ]
    lines = [
        "abc def   12345 x",
        "   7      88     999   1000000 extra words",
        "a" * 50,
        " x y z 1 2 3 4 5 6 7 8 9 ",
        "",
    ]
    for path in _report_files()[:10]:
        lines += path.read_bytes().decode("utf-8", errors="replace").splitlines()[:200]
    for spans in spans_of:
        for line in lines:
            assert awr_report._cells(line, spans) == _cells_min(line, spans)


def test_cached_columns_are_fresh_objects():
    """The parser marks the name column on the columns it gets: a cached table's columns must
    not carry that mark into the next report's."""
    header = ["Event                             Waits   Time (s)"]
    ruler = "------------------------------ -------- ---------"
    a = waits._build_columns(header, ruler)
    a[0].kind = "changed"
    b = waits._build_columns(header, ruler)
    assert b[0].kind != "changed"
    assert [(c.label, c.start, c.end, c.kind, c.unit) for c in b] == [
        (c.label, c.start, c.end, c.kind, c.unit) for c in _read_columns(header, ruler)
    ]


def test_to_float_and_split_row_answer_as_before():
    """to_float's digit test and _split_row's walk from the end give what reading every token
    gave, on every report line and on tokens at the edges of what they accept."""
    from ingest.parsers.waits import RE_NAME_TAIL, _Cell, _split_row, _tokens, parse_number

    def to_float_before(token: str) -> float | None:
        t = token.strip().rstrip("%")
        if not t or not awr_report.RE_NUM.match(t) or not any(c.isdigit() for c in t):
            return None
        scale = 1.0
        if t[-1] in "KMGT":
            scale = {"K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12}[t[-1]]
            t = t[:-1]
        if "," in t and "." in t and t.rfind(",") > t.rfind("."):
            t = t.replace(".", "").replace(",", ".")
        elif "," in t and re.fullmatch(r"-?\d+,\d{1,2}|-?\d+,\d{4,}|-?,\d+", t):
            t = t.replace(",", ".")
        else:
            t = t.replace(",", "")
        try:
            return float(t) * scale
        except ValueError:
            return None

    def split_before(line: str):
        toks = _tokens(line)
        values = [parse_number(t[2]) for t in toks]
        cells = [v is not None or t[2] in ("-", "N/A") for t, v in zip(toks, values, strict=True)]
        end = len(toks)
        while end > 0 and not cells[end - 1]:
            end -= 1
        start = end
        while start > 0 and cells[start - 1]:
            start -= 1
        while start < end and values[start] is None:
            start += 1
        if start == end:
            return None
        name = line[: toks[start][0]].rstrip()
        if name.endswith(("-", "N/A")):
            name = RE_NAME_TAIL.sub("", name)
        nums = [_Cell(toks[i][0], toks[i][1], values[i]) for i in range(start, end)]
        return (line, name.strip(), nums, [t[2] for t in toks[end:]])

    tokens = ["-", ",", ".", "-.", "K", "-K", "1K", ",5", "1,234", "1.234,5", "٣", "12.5%", ""]
    lines = [
        "db file sequential read  - 1 - 2 s N/A",
        "latch: cache buffers chains   12   3.4 ms  -  N/A  Concurrency",
        "- - -",
        "N/A 12 N/A",
        "a  52.86 s  3 s s  7\tms",
        "gc cr block 2-way       1,234      5",
    ]
    for path in _report_files():
        lines += path.read_bytes().decode("utf-8", errors="replace").splitlines()
    for line in lines:
        tokens += line.split()[:3]
        split = _split_row(line)
        assert (None if split is None else tuple(split)) == split_before(line), line
    for token in tokens:
        assert awr_report.to_float(token) == to_float_before(token), token


def test_report_rows_claimed_are_no_other_formats_header(archive):
    """The Load Profile, Instance Efficiency and SQL rows and the page titles the waits parser
    claims inside a report are lines no other format starts on (what makes claiming them safe),
    and the block reads them as it did (the archive reads alike with claims switched off)."""
    from ingest.parsers import all_parsers

    parser = WaitsParser()
    claimed = []
    for line in archive.decode().splitlines():
        parser.feed(line)
        if parser._section in ("load", "efficiency", "sql") and parser.claims(line):
            claimed.append(line)
    shapes = {re.sub(r"\d", "9", line)[:12] for line in claimed}
    assert len(claimed) > 200 and len(shapes) > 10
    others = [p for p in all_parsers() if p is not WaitsParser]
    for line in claimed:
        assert not [p.format for p in others if p.start_score(line) == 2], line
    with pytest.MonkeyPatch.context() as m:
        m.setattr(WaitsParser, "claims", lambda self, line: False)
        m.setattr(WaitsParser, "fast", False)
        want = _evidence(archive)
    assert _evidence(archive) == want


def test_caches_keep_no_long_keys():
    """Hostile 64 KB lines must not be kept in the reader's caches (each holds thousands of
    entries): long headers, labels and event names are worked out without them."""
    long_header = ["Event " + "x" * 5000 + "   Waits   Time (s)"]
    ruler = "-" * 5000 + " ------- ---------"
    label = "Executes " + "y" * 5000
    event = "db file sequential read " + "z" * 5000
    before = (
        waits._column_shapes.cache_info().currsize,
        awr_report._norm_key_cached.cache_info().currsize,
        waits._idle_cached.cache_info().currsize,
        awr_report._labels_of.cache_info().currsize,
    )
    assert waits._build_columns(long_header, ruler) == _read_columns(long_header, ruler)
    assert awr_report.norm_key(label) == awr_report._norm_key(label)
    assert waits._idle(event, None) is False
    assert awr_report._labels(long_header, [(0, 5000), (5001, 5008)])
    after = (
        waits._column_shapes.cache_info().currsize,
        awr_report._norm_key_cached.cache_info().currsize,
        waits._idle_cached.cache_info().currsize,
        awr_report._labels_of.cache_info().currsize,
    )
    assert after == before
    awr_report.norm_key("Executes:")
    assert awr_report._norm_key_cached.cache_info().currsize >= 1
