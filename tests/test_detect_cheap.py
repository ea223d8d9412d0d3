"""The detector's cheaper answers (issue 19, det2) against the reference, the detector as it
asked before: the prefilter's shapes searched in every line (`Prefilter(gates=False)`), runs left
for every line the memo had no answer for (`ANSWERS_IN_RUNS` off: the line took the per-line
path) and a block's first CONTEXT_LINES_PER_BLOCK lines fed one by one (`RUNS_FROM`). The
evidence must be byte-identical on the corpus, the fixtures, the seeds and captures of every
generator, each also pasted the ways forums mangle it (collapsed blanks, `# ` and `> ` prefixes,
CRLF, wrapped), and on mixed pastes where another format's header follows inside a tkprof
statement or an AWR report. The gates are also checked shape by shape on every line, and the
batch context against the line-by-line one; each check is shown able to fail."""

from __future__ import annotations

import io
import random
import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from ingest import detect
from ingest.context import ContextExtractor
from ingest.detect import Answers, Detector, Prefilter, _gate, parse_stream, parse_text
from ingest.parsers import all_parsers
from tests.test_awr_reader_fast import _collapsed, _prefixed, _wrapped
from tests.test_prefilter import _lines, _texts

ROOT = Path(__file__).resolve().parents[1]

GEN_BYTES = 48 * 1024


@contextmanager
def _reference(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    with monkeypatch.context() as m:
        m.setattr(detect, "ANSWERS_IN_RUNS", False)
        m.setattr(detect, "RUNS_FROM", detect.CONTEXT_LINES_PER_BLOCK)
        m.setattr(detect, "_PREFILTER", Prefilter(gates=False))
        yield


def _evidence(data: bytes, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    with monkeypatch.context() as m:  # chunk edges everywhere
        m.setattr(detect, "CHUNK", 4093)
        out = [parse_stream(io.BytesIO(data)).model_dump_json()]
    out.append(parse_text(data.decode("utf-8", errors="replace")).model_dump_json())
    return out


def _same(data: bytes, monkeypatch: pytest.MonkeyPatch) -> None:
    got = _evidence(data, monkeypatch)
    with _reference(monkeypatch):
        want = _evidence(data, monkeypatch)
    assert got == want


PASTES = {
    "as is": lambda text: text,
    "collapsed": _collapsed,
    "wrapped": _wrapped,
    "# ": lambda text: _prefixed(text, "# "),
    "> ": lambda text: _prefixed(text, "> "),
    "CRLF": lambda text: text.replace("\n", "\r\n"),
}


def _variants(text: str) -> list[str]:
    return [paste(text) for paste in PASTES.values()]


@pytest.fixture(scope="module")
def texts(tmp_path_factory) -> list[str]:
    import tests.test_prefilter as tp

    size = tp.GEN_BYTES
    tp.GEN_BYTES = GEN_BYTES  # smaller captures of every generator: each is parsed many times
    try:
        return _texts(tmp_path_factory.mktemp("cheap"))
    finally:
        tp.GEN_BYTES = size


# -- evidence ------------------------------------------------------------------------------------


@pytest.mark.parametrize("paste", PASTES)
def test_every_text_and_paste_gives_the_reference_evidence(texts, monkeypatch, paste):
    assert len(texts) > 400  # corpus, fixtures, seeds and every generator
    # each text as is; pasted, every other one (both halves over the parametrization)
    for i, text in enumerate(texts):
        if paste == "as is" or i % 2 == len(paste) % 2:
            _same(PASTES[paste](text).encode("utf-8", errors="replace"), monkeypatch)


def test_the_batch_path_gives_what_every_parser_asked_line_by_line(texts, monkeypatch):
    """The reference of the reference: a detector asking every parser about every line, line by
    line (no prefilter, no memo answers in runs, no runs), on the generated captures."""
    for text in texts[-40:]:
        want = Detector(parsers=all_parsers())
        want.feed_lines(text.splitlines(keepends=True))
        assert parse_text(text).model_dump_json() == want.finish().model_dump_json()


_OTHERS = [  # other formats' first lines, as pasted inside a statement or a report
    "procs -----------memory---------- ---swap-- -----io---- -system-- ------cpu-----",
    " r  b   swpd   free   buff  cache   si   so    bi    bo   in   cs us sy id wa st",
    "10:00:01 AM  CPU    %usr   %nice    %sys %iowait    %irq   %soft  %steal  %idle",
    "Device            r/s     w/s     rkB/s     wkB/s   rrqm/s   wrqm/s  %rrqm  %wrqm",
    " 10:00:01 up 3 days,  2:04,  2 users,  load average: 0.52, 0.58, 0.59",
    "WORKLOAD REPOSITORY report for",
    "TKPROF: Release 19.0.0.0.0 - Development on Tue Nov 24 10:00:00 2026",
    '15697: read(9, "abc", 512) = 512',
    'open("/etc/passwd", O_RDONLY) = 3',
    "   PID USERNAME  SIZE   RSS STATE  PRI NICE      TIME  CPU PROCESS/NLWP",
    "SQL> select event, total_waits from v$system_event;",
    "Call Stack Trace",
    "0.52 0.58 0.59 1/123 4567",
]


def _inserted(text: str, after: re.Pattern[str], others: list[str], every: int) -> str:
    """`text` with one of `others` after each `every`-th line matching `after`."""
    out, seen = [], 0
    for line in text.split("\n"):
        out.append(line)
        if after.search(line):
            seen += 1
            if seen % every == 0:
                out.append(others[seen // every % len(others)])
    return "\n".join(out)


@pytest.fixture(scope="module")
def oracle(tmp_path_factory) -> tuple[str, str]:
    from benchmarks import gen_awr, gen_oracle

    tmp = tmp_path_factory.mktemp("oracle")
    gen_oracle.generate_tkprof(GEN_BYTES, tmp / "tk.prf")
    gen_awr.generate_awr(GEN_BYTES, tmp / "awr.txt")
    return (tmp / "tk.prf").read_text(), (tmp / "awr.txt").read_text()


def test_other_formats_inside_tkprof_statements(oracle, monkeypatch):
    tkprof = oracle[0]
    sql = re.compile(r"^(?:SELECT|UPDATE|INSERT|DELETE|BEGIN|FROM|\s+[A-Z]+ )")
    for other in _OTHERS:  # after the first SQL text line of every statement, then of some
        _same(_inserted(tkprof, sql, [other], 1).encode(), monkeypatch)
    for every in (1, 3):  # each in turn (the second time: the memo's answer, not worked out)
        for variant in _variants(_inserted(tkprof, sql, _OTHERS, every)):
            _same(variant.encode(), monkeypatch)


def test_other_formats_inside_awr_reports(oracle, monkeypatch):
    awr = oracle[1]
    for after, every in (
        (re.compile(r"Top \d+ |Foreground Wait Events|Time Model"), 1),  # a block's first lines
        (re.compile(r"^\S.*\s\d[\d,.]*\s*$"), 3),  # rows anywhere
        (re.compile(r"^-{5}"), 5),  # after rulers
    ):
        text = _inserted(awr, after, _OTHERS, every)
        for variant in _variants(text):
            _same(variant.encode(), monkeypatch)
    for other in _OTHERS:  # each alone, in the first lines of every block
        _same(_inserted(awr, re.compile(r"Top \d+ "), [other], 1).encode(), monkeypatch)


def test_runs_are_not_left_and_start_early(oracle, monkeypatch):
    """The new paths ran: a tkprof statement's first SQL text line no longer leaves the run (far
    fewer lines through the per-line path), an AWR report's first lines are taken in runs and
    given to the context in batches."""
    counts: dict[str, int] = {"raw": 0, "batch": 0}
    raw, batch = Detector._raw, ContextExtractor.feed_evidence

    def counting_raw(self, line):
        counts["raw"] += 1
        return raw(self, line)

    def counting_batch(self, lines):
        counts["batch"] += 1
        return batch(self, lines)

    monkeypatch.setattr(Detector, "_raw", counting_raw)
    monkeypatch.setattr(ContextExtractor, "feed_evidence", counting_batch)
    for text in oracle:
        got = []
        for ref in (False, True):
            counts.update(raw=0, batch=0)
            if ref:
                with _reference(monkeypatch):
                    parse_text(text)
            else:
                parse_text(text)
            got.append(dict(counts))
        assert got[0]["raw"] * 3 < got[1]["raw"], got
        assert got[0]["batch"] > 0 and got[1]["batch"] == 0, got


# -- the prefilter's gates -----------------------------------------------------------------------


def _fuzz(n: int) -> list[str]:
    rng = random.Random(19)
    alphabet = list(" \t\r0123456789:()=%#.-_/`@$xXabcdefvCPUSETQLNOD,;") + [
        "CPU",
        "SQL",
        "0x",
        "  ",
        "\u00e9",
        "\u00a0",
        "\u212a",
        "\u0661",
    ]
    return ["".join(rng.choices(alphabet, k=rng.randrange(0, 24))) for _ in range(n)]


def _gate_misses(pre: Prefilter, lines: list[str]) -> list[tuple[str, str]]:
    """(shape, line) pairs where the shape matches the line but its gate turned it away."""
    misses = []
    for line in lines:
        allowed = pre._gates.allowed(line)
        for k, (search, _, _) in enumerate(pre._shapes):
            if not allowed >> k & 1 and search(line) is not None:
                misses.append((search.__self__.pattern, line))
    return misses


@pytest.fixture(scope="module")
def every_line(texts) -> list[str]:
    lines = _lines(texts)
    for text in texts[:: max(1, len(texts) // 60)]:
        lines |= _lines(_variants(text))
    return sorted(lines) + _fuzz(30_000)


def test_gates_turn_away_no_line_a_shape_matches(every_line):
    assert len(every_line) > 50_000
    pre = Prefilter()
    assert _gate_misses(pre, every_line) == []
    ref = Prefilter(gates=False)
    assert [x for x in every_line if pre.mask(x) != ref.mask(x)] == []
    # and they do turn lines away: most shapes are not searched in most lines
    turned = sum(bin(pre._gates.all & ~pre._gates.allowed(x)).count("1") for x in every_line)
    assert turned > len(every_line) * 3


def test_a_gate_too_tight_is_caught(every_line, monkeypatch):
    """The check above can fail: gates that forget blanks at a line's edges, or count one digit
    too many, turn away lines a shape matches."""

    def no_blank_edges(regex: str):
        first, last, digits = _gate(regex)
        drop = frozenset(" \t")
        return (
            first - drop if first is not None else None,
            last - drop if last is not None else None,
            digits,
        )

    monkeypatch.setattr(detect, "_gate", no_blank_edges)
    assert _gate_misses(Prefilter(), every_line)
    monkeypatch.setattr(detect, "_gate", lambda regex: (*_gate(regex)[:2], _gate(regex)[2] + 1))
    assert _gate_misses(Prefilter(), every_line)


@pytest.mark.parametrize(
    ("regex", "first", "last", "digits"),
    [
        (
            r"^\s*(?:0x)?[0-9a-fA-F]{6}",
            " \t\n\r\x0b\x0c\x1c\x1d\x1e\x1f0123456789abcdefABCDEF",
            None,
            0,
        ),
        (r"^ab|^c", "ac", None, 0),
        (r"^ab|c", None, None, 0),  # one branch unanchored
        (r"^a?", None, None, 0),  # may match nothing
        (r"^a?b", "ab", None, 0),
        (r"^a?b$", "ab", "b", 0),
        (r"\d{3}x$", None, "x", 3),
        (r"(?i)^k$", "kK", "kK", 0),
        (r"(?m)^a", None, None, 0),  # any line's start
        (r"^(a)\1", "a", None, 0),
        (r"^(?:\d\d|x\d)\s*$", "0123456789x", " \t\n\r\x0b\x0c\x1c\x1d\x1e\x1f0123456789", 1),
        (r"^(?=x)y", "y", None, 0),  # a lookahead is read as matching anything
        (r"\d(?:\D++\d++){3}", None, None, 4),
        (r"(", None, None, 0),  # not a regex: no gate
    ],
)
def test_gate_of_a_regex(regex, first, last, digits):
    got = _gate(regex)
    assert got[0] == (frozenset(first) if first is not None else None)
    assert got[1] == (frozenset(last) if last is not None else None)
    assert got[2] == digits


# -- the memo's answers --------------------------------------------------------------------------


def test_answers_work_out_what_they_do_not_hold(monkeypatch):
    asked: list[str] = []

    def answer(line, current):
        asked.append(line)
        return line.startswith("x")

    memo = Answers(answer)
    t = type(None)
    assert memo.known((t, "xa")) is None
    assert memo.get((t, "xa")) is True and memo.get((t, "b")) is False
    assert memo.known((t, "b")) is False and asked == ["xa", "b"]
    long = "x" * (detect.STRONG_MEMO_LINE + 1)
    assert memo.other(t, long) and memo.other(t, long) and asked.count(long) == 1
    assert (t, long) not in memo  # not remembered: the last answer only
    monkeypatch.setattr(detect, "ANSWERS_IN_RUNS", False)
    assert memo.get((t, "xc")) is None and memo.get((t, "b")) is False


# -- context in batches ----------------------------------------------------------------------------


def _state(c: ContextExtractor) -> tuple:
    return (c.versions, dict(c.platforms), c.platform_hints, c.ora_errors, c.processes, c.pids)


def _context_misses(texts: list[str], extra: list[str]) -> int:
    misses = 0
    rng = random.Random(7)
    for text in texts + extra:
        lines = text.split("\n")
        one, batch = ContextExtractor(), ContextExtractor()
        i = 0
        while i < len(lines):
            k = rng.randrange(1, 60)
            for line in lines[i : i + k]:
                one.feed(line, prose=False)
            batch.feed_evidence(lines[i : i + k])
            i += k
        misses += _state(one) != _state(batch)
    return misses


_CONTEXT = [
    "Oracle Database 19c Enterprise Edition Release 19.0.0.0.0 - Production\nversion 19.3",
    "upgraded\nto 19.3 on\n19.5 running on database v12.2.0.1 tested it on 11g r2",
    "running on\n19.3\nRelease\n12.1.0.2 on Linux el7 SunOS prstat",
    "ORA-00060: deadlock\nORA-\n04031 ora_pmon_ORCL oracleORCL (LOCAL=NO) tnslsnr",
    "x" * 5000 + " Release 19.3\nrelease 18c " + "y" * 3990 + " on 12c",
    "Solaris\n/dev/dsk/c0t0d0 /proc/self/fd [root@db1 ~]# HP-UX Windows AIX \u00e9 on 19.3",
]


def test_context_in_batches_is_the_context_line_by_line(texts):
    assert _context_misses(texts[::5], _CONTEXT) == 0


def test_context_check_can_fail(texts, monkeypatch):
    """A batch that loses the versions found across two lines' join (if it kept the joined
    text's matches) is caught."""
    real = ContextExtractor.feed_evidence

    def joined_only(self, lines):
        text = "\n".join(lines)
        for m in detect_context._VERSION_NEAR_WORD.finditer(text):
            self._add(self.versions, m.group(1).replace(" ", ""))
        real(self, [line for line in lines if not detect_context._DIGIT.search(line)])

    import ingest.context as detect_context

    monkeypatch.setattr(ContextExtractor, "feed_evidence", joined_only)
    assert _context_misses([], _CONTEXT) > 0


def test_a_parse_tree_the_gates_cannot_read_gives_no_gate(monkeypatch):
    """re's parse tree is private: a release that changes it must cost the gates, not the
    detector (no gate: every shape searched, as with gates off)."""

    def changed(regex, *args, **kwargs):
        raise AttributeError("a parse tree of another shape")

    monkeypatch.setattr(detect._sre_parser, "parse", changed)
    assert _gate(r"^\d+ procs") == (None, None, 0)
    lines = ["kthr      memory            page", "procs -----------memory----------", ""]
    with_gates = Prefilter()
    reference = Prefilter(gates=False)
    assert [with_gates.mask(x) for x in lines] == [reference.mask(x) for x in lines]
