"""vmstat through the C row reader (table.c's sheet mode, vmstat.VmstatParser.feed_run) against
the Python reader, the reference: the evidence must be identical with the core on and off
(ostable.NATIVE), line by line, streamed in two read sizes and as one text, on the generated
OSWatcher archive, on long captures of every vmstat layout the parser knows (Linux procps plain,
-a, -w, -S M, -t; Solaris with disk columns and -p; AIX; FreeBSD sizes), on the vmstat corpus
snippets and fixtures repeated into long captures, and on captures whose rows (and -t's dates
and times), markers and headers were made hostile. Each test that should make the core run checks that it read lines, so
a core that silently never ran fails them.

The captures below are invented in vmstat's shapes (the numbers come from a seeded generator).
"""

from __future__ import annotations

import random
import re

import pytest

from ingest.parsers import ostable, vmstat
from tests.test_table_core import CORPUS, OS_FIXTURES, _capture, _same, counting_tables


@pytest.fixture
def core_lines(monkeypatch):
    """How many lines vmstat's C table took in run() (0: the core never ran)."""
    return counting_tables(monkeypatch, vmstat)


def test_the_sheet_core_is_built_and_made_at_the_header():
    assert ostable.NATIVE, "ingest/_syscore_src/table.c was not built (pip install -e .)"
    p = vmstat.VmstatParser()
    assert p.feed(
        " r  b   swpd   free   buff  cache   si   so    bi    bo   in   cs us sy id wa st"
    )
    assert p.core is not None
    t = vmstat.VmstatParser()
    assert t.feed(
        " r  b   swpd   free   buff  cache   si   so    bi    bo   in   cs us sy id wa st  UTC"
    )
    assert t.core is not None  # -t: the rows end in their date and time


def test_generated_oswatcher_archive(tmp_path, monkeypatch, core_lines):
    want = _same(_capture("vmstat", tmp_path), monkeypatch)
    assert '"format":"vmstat"' in want
    assert core_lines[0] > 2000


def test_every_os_fixture_and_corpus_snippet_unchanged(monkeypatch):
    assert CORPUS.is_dir(), f"the shared corpus is missing at {CORPUS}"
    paths = [p for p in OS_FIXTURES if "vmstat" in p.name]
    paths += sorted(CORPUS.glob("*vmstat*.txt"))
    assert len(paths) >= 8
    for path in paths:
        _same(path.read_bytes(), monkeypatch)


def _long(lines: list[str], times: int, rng: random.Random) -> list[str]:
    """The capture with its data rows repeated `times` times (values nudged, so sums move)."""
    out: list[str] = []
    for line in lines:
        out.append(line)
        if line.strip()[:1].isdigit() and not line.lstrip().startswith(("2026-", "2021-")):
            for _ in range(times):
                out.append(re.sub(r"\b(\d)\b", lambda m: str(rng.randrange(10)), line, count=2))
    return out


def test_corpus_and_fixtures_repeated_into_long_captures(monkeypatch, core_lines):
    """Each real and fixture vmstat, its rows repeated, so it is long enough for the batch path:
    the core reads rows of Solaris (disk columns, a prompt above), AIX, procps -S M, -a -t, -w -t
    and the OSWatcher layout."""
    rng = random.Random(3)
    paths = [p for p in OS_FIXTURES if "vmstat" in p.name]
    paths += sorted(CORPUS.glob("*vmstat*.txt"))
    for path in paths:
        lines = path.read_text(errors="replace").splitlines()
        _same(("\n".join(_long(lines, 12, rng)) + "\n").encode(), monkeypatch)
    assert core_lines[0] > 500


# -- the family ---------------------------------------------------------------------------------

_LINUX = " r  b   swpd   free   buff  cache   si   so    bi    bo   in   cs us sy id wa st"
_GROUPS = {
    "linux": "procs -----------memory---------- ---swap-- -----io---- -system-- ------cpu-----",
    "solaris": " kthr      memory            page            disk          faults      cpu",
    "aix": "kthr    memory              page              faults              cpu",
    "bsd": "procs    memory    page                      disks     faults       cpu",
}
_HEADERS = {
    "linux": _LINUX,
    "linux-a": " r  b   swpd   free  inact active   si   so    bi    bo   in   cs us sy id wa st",
    "linux-w": "   r    b         swpd         free         buff        cache   si   so    bi    bo   in   cs  us  sy  id  wa  st  gu",
    "linux-t": _LINUX + "                 UTC",
    "solaris": " r b w   swap  free  re  mf pi po fr de sr s0 s1 s2 s3   in   sy   cs us sy id",
    "solaris-p": "     swap  free  re  mf  fr  de  sr  epi  epo  epf  api  apo  apf  fpi  fpo  fpf",
    "aix": " r  b   avm   fre  re  pi  po  fr   sr  cy  in   sy  cs us sy id wa    pc    ec",
    "bsd": " r b w  avm   fre   flt  re  pi  po    fr   sr ad0 ad1   in    sy    cs us sy id",
}


def _row(layout: str, rng: random.Random) -> str:
    names = _HEADERS[layout].split()
    if layout == "linux-t":
        names = names[:-1]
    vals: list[str] = []
    us = rng.randrange(0, 70)
    sy = rng.randrange(0, 100 - us)
    for i, name in enumerate(names):
        if name == "us":
            vals.append(str(us))
        elif name == "sy" and "us" in names[:i]:
            vals.append(str(sy))
        elif name == "id":
            vals.append(str(100 - us - sy))
        elif name in ("wa", "st", "gu"):
            vals.append("0")
        elif name in ("pc", "ec"):
            vals.append(f"{rng.uniform(0, 4):.2f}")
        elif name in ("avm", "fre") and layout == "bsd" and rng.random() < 0.3:
            vals.append(f"{rng.uniform(1, 9):.1f}G")  # FreeBSD prints sizes
        else:
            vals.append(str(rng.randrange(0, 10 ** rng.randrange(1, 8))))
    row = " ".join(v.rjust(len(n) + 1) for v, n in zip(vals, names, strict=True))
    if layout == "linux-t":
        row += f" 2026-11-25 03:{rng.randrange(60):02d}:{rng.randrange(60):02d}"
    return row


def _family(layout: str, rows: int, seed: int, every: int = 10, zzz: bool = False) -> str:
    rng = random.Random(seed)
    group = (
        _GROUPS[layout.split("-")[0]]
        if layout != "solaris-p"
        else ("     memory           page          executable      anonymous      filesystem")
    )
    out = [f"$ vmstat {'-S M ' if layout == 'linux' else ''}5"]
    for i in range(rows):
        if i % every == 0:
            if zzz:
                out.append(f"zzz ***Wed Nov 25 03:{i // 60 % 60:02d}:{i % 60:02d} UTC 2026")
            out += [group, _HEADERS[layout]]
        out.append(_row(layout, rng))
    return "\n".join(out) + "\n"


@pytest.mark.parametrize("zzz", [False, True])
@pytest.mark.parametrize("layout", list(_HEADERS))
def test_every_layout_of_the_family(monkeypatch, core_lines, layout, zzz):
    want = _same(_family(layout, 400, 7, every=9, zzz=zzz).encode(), monkeypatch)
    assert '"format":"vmstat"' in want
    assert core_lines[0] > 300


# -- hostile lines ----------------------------------------------------------------------------

_NUM = re.compile(r"(?<=\s)\d+(?=\s)")


def _hostile(line: str, rng: random.Random) -> list[str]:
    """One line of a capture (a row, a marker or a header) made odd the ways pastes make it."""
    stamp = re.search(r" (2026-11-25) (\d\d:\d\d:\d\d)$", line)
    if stamp and rng.random() < 0.5:  # a -t row's date and time made odd
        day, clock = stamp.groups()
        head = line[: stamp.start()]
        return [
            rng.choice(
                [
                    f"{head} {day}T{clock}",
                    f"{head} {clock}",
                    f"{head} 25/11/2026 {clock}",
                    f"{head} {day} {clock[1:]}",
                    f"{head} {day} {clock}.5",
                    f"{head} {day} {clock} CET",
                    f"{head}  {day}\t{clock}  ",
                    f"{head} {day} {clock[:-3]}",
                    f"{head} 2026-1-25 {clock}",
                ]
            )
        ]
    r = rng.randrange(30)
    sub = lambda new: _NUM.sub(new, line, count=1)  # noqa: E731
    if r == 0:
        return [sub("nan")]
    if r == 1:
        return [sub("1234567890123456789012")]  # past 1e18: no number to pasted.number
    if r == 2:
        return [sub("12345678901234567")]  # more digits than the core reads
    if r == 3:
        return [sub("2,210")]  # a thousands group
    if r == 4:
        return [sub("0,5")]  # a decimal comma
    if r == 5:
        return [line[: rng.randrange(len(line) + 1)]]  # cut
    if r == 6:
        return [line.replace("  ", "\t")]
    if r == 7:
        return [line.replace(" ", "\u00a0", 2)]
    if r == 8:
        return [line + " °"]
    if r == 9:
        return [sub("-3")]
    if r == 10:
        return [re.sub(r"\d+(\s+\d+\s+\d+\s+\d+\s+\d+)$", r"101\1", line)]  # us out of range
    if r == 11:
        return [sub("-0")]
    if r == 12:
        return ["   " + line + "  \r"]
    if r == 13:
        return [f"Nov 25 03:00:{rng.randrange(60):02d} db07 oswatcher[812]: {line}"]
    if r == 14:
        return ["# " + line]
    if r == 15:
        return ["[oracle@db07 ~]$ " + line]
    if r == 16:
        return [line, line]
    if r == 17:
        return [line[:25], line[25:]]  # wrapped
    if r == 18:
        return [line + " 7"]  # one column too many
    if r == 19:
        return [sub("1.4G")]
    if r == 20:
        return ["zzz"]  # a marker with nothing after it
    if r == 21:
        return ["zzz \t***  " + "Wednesday " * 6 + " ***"]  # a label past 40 characters
    if r == 22:
        return [rng.choice(["zzz ***Mi 25 Nov 2026 03:00:00 CET é", "zzz ***" + "日本語" * 20])]
    if r == 23:
        return ["----- ----------- ------------------------"]  # an AIX rule
    if r == 24:
        return [_LINUX.replace("  ", " ")]  # the header as another paste spaced it
    if r == 25:
        return [_GROUPS["solaris"]]  # another family's group line
    if r == 26:
        return [" 1 2 3"]  # too short to be claimed
    if r == 27:
        return [sub("5.")]
    if r == 28:
        return ["", line]
    return [sub("+4")]


def _make_hostile(text: str, seed: int, share: float) -> bytes:
    rng = random.Random(seed)
    out: list[str] = []
    for line in text.split("\n"):
        if line and rng.random() < share:
            out += _hostile(line, rng)
        else:
            out.append(line)
    return "\n".join(out).encode()


@pytest.mark.parametrize("seed", range(5))
def test_hostile_lines_in_the_generated_archive(tmp_path, monkeypatch, core_lines, seed):
    data = _capture("vmstat", tmp_path)[: 48 * 1024].decode()
    _same(_make_hostile(data, seed, 0.05), monkeypatch)
    assert core_lines[0] > 100


@pytest.mark.parametrize("seed", range(4))
def test_half_the_lines_hostile(tmp_path, monkeypatch, seed):
    """The core stops and starts again around nearly every line."""
    data = _capture("vmstat", tmp_path)[: 16 * 1024].decode()
    _same(_make_hostile(data, seed, 0.5), monkeypatch)


@pytest.mark.parametrize("layout", ["linux", "linux-t", "solaris", "aix", "bsd"])
def test_hostile_lines_in_each_family(monkeypatch, layout):
    text = _family(layout, 300, 11, every=20, zzz=layout == "linux")
    _same(_make_hostile(text, 2, 0.1), monkeypatch)


def test_a_plain_vmstat_keeps_its_since_boot_row(monkeypatch, core_lines):
    """`vmstat 5` without markers: the first row is the since-boot average the parser holds
    apart (the core leaves it to the Python reader); the rows after it count."""
    text = _family("linux", 200, 5, every=1000)
    want = _same(text.encode(), monkeypatch)
    assert '"since_boot"' in want and '"cpu.intervals":199.0' in want
    assert core_lines[0] > 150
