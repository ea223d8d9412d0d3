"""The C row reader of the sysstat tables (ingest/_syscore_src/table.c, ostable.native_table)
against the Python readers, the reference: the evidence must be identical with the core on and
off (ostable.NATIVE), on every corpus snippet and OS fixture, on generated captures of every
mpstat release and sar, and on captures whose rows were made hostile the ways pastes and odd
locales make them (NaN, huge numbers, more digits than a double holds, decimal commas, a row cut
mid-way, tabs, non-ASCII blanks, lower-case am, one-digit hours, impossible clocks, percentages
out of range, an ISO stamp's `T`, journal prefixes, repeated headers and Average rows).

mpstat hands its rows to the core only once MAX_INTERVALS interval summaries are made (they are
made in Python); the tests lower it (for both sides) so the core reads most of a small capture,
and they check that it did read rows, so a core that silently never ran would fail them.
"""

from __future__ import annotations

import io
import random
import re
from pathlib import Path

import pytest

from benchmarks import gen_os_tables
from ingest import detect
from ingest.detect import Detector, parse_stream, parse_text
from ingest.parsers import iostat, mpstat, ostable, sar

ROOT = Path(__file__).resolve().parents[1]
CORPUS = Path(__file__).resolve().parents[1].parent / "shared" / "corpus" / "snippets"
OS_FIXTURES = sorted((ROOT / "tests" / "fixtures" / "os").glob("*.txt"))

SIZE = 96 * 1024


@pytest.fixture(autouse=True)
def _early_core(monkeypatch):
    """mpstat's core starts after 3 summaries instead of 500 (both sides see the same cap)."""
    monkeypatch.setattr(mpstat, "MAX_INTERVALS", 3)


def counting_tables(monkeypatch, *modules) -> list[int]:
    """Count the lines the C tables' run() took, for the tables `modules` make through
    ostable.native_table ([0]: the core never ran); one counter for every C-table test file."""
    count = [0]
    real = ostable.native_table

    class Counting:
        def __init__(self, table) -> None:
            self.table = table

        def run(self, text, pos, endpos):
            got = self.table.run(text, pos, endpos)
            count[0] += got[1]
            return got

        def __getattr__(self, name):
            return getattr(self.table, name)

    def counting(*args, **kw):
        table = real(*args, **kw)
        return None if table is None else Counting(table)

    for module in modules:
        monkeypatch.setattr(module, "native_table", counting)
    return count


@pytest.fixture
def rows_read(monkeypatch):
    """How many lines the C tables' run() took, across the parsers (0: the core never ran)."""
    return counting_tables(monkeypatch, mpstat, sar, iostat)


def _evidence(data: bytes, monkeypatch, native: bool) -> list[str]:
    """The evidence of every path: line by line, streamed in two read sizes, and as one text."""
    monkeypatch.setattr(ostable, "NATIVE", native)
    d = Detector()
    d.feed_lines(line.decode("utf-8", errors="replace") for line in io.BytesIO(data))
    out = [d.finish().model_dump_json()]
    for chunk in (1024 * 1024, 4093):
        monkeypatch.setattr(detect, "CHUNK", chunk)
        out.append(parse_stream(io.BytesIO(data)).model_dump_json())
    out.append(parse_text(data.decode("utf-8", errors="replace")).model_dump_json())
    return out


def _same(data: bytes, monkeypatch) -> str:
    want = _evidence(data, monkeypatch, False)
    assert len(set(want)) == 1, "the Python readers disagree among themselves"
    got = _evidence(data, monkeypatch, True)
    for g in got:
        assert g == want[0]
    return want[0]


def _capture(kind: str, tmp_path: Path, release: str = "12") -> bytes:
    path = tmp_path / f"{kind}-{release}.txt"
    gen_os_tables.generate(kind, SIZE, path, **({"release": release} if kind == "mpstat" else {}))
    return path.read_bytes()


def test_the_core_is_built_and_on():
    assert ostable.NATIVE, "ingest/_syscore_src/table.c was not built (pip install -e .)"
    section = sar._Section(0, ["CPU", "%user", "%idle"])
    assert section.core is not None


@pytest.mark.parametrize("release", list(gen_os_tables.MPSTAT_RELEASES))
def test_generated_mpstat(tmp_path, monkeypatch, rows_read, release):
    want = _same(_capture("mpstat", tmp_path, release), monkeypatch)
    assert '"format":"mpstat"' in want
    assert rows_read[0] > 500


def test_generated_sar(tmp_path, monkeypatch, rows_read):
    want = _same(_capture("sar", tmp_path), monkeypatch)
    assert '"format":"sar"' in want
    assert rows_read[0] > 500


def test_every_os_fixture_and_corpus_snippet(monkeypatch):
    """(Most are shorter than the context the detector reads before a fast path may run: this
    guards the core from changing them at all; the tests below make it run.)"""
    assert CORPUS.is_dir(), f"the shared corpus is missing at {CORPUS}"
    snippets = sorted(CORPUS.glob("*.txt"))
    assert len(snippets) > 40 and OS_FIXTURES
    for path in [*OS_FIXTURES, *snippets]:
        _same(path.read_bytes(), monkeypatch)


def test_corpus_mpstat_and_sar_repeated_into_long_captures(monkeypatch, rows_read):
    """Each real mpstat/sar snippet's table, its rows repeated with later clocks, so it is long
    enough for the batch path and the core reads rows of every real layout."""
    for path in sorted(CORPUS.glob("*.txt")):
        if not re.match(r"\d+_(mpstat|sar)", path.name):
            continue
        lines = path.read_text(errors="replace").splitlines()
        body = "\n".join(lines)
        more = [
            re.sub(r"^(\d\d):", lambda m, k=k: f"{(int(m[1]) + k) % 12 + 1:02d}:", ln)
            for k in range(6)
            for ln in lines
            if ln[:1].isdigit()
        ]
        _same((body + "\n" + "\n".join(more) + "\n").encode(), monkeypatch)
    assert rows_read[0] > 0


# -- hostile rows -----------------------------------------------------------------------------

_VALUE = re.compile(r"\b\d+\.\d\d\b")


def _hostile(line: str, rng: random.Random) -> list[str]:
    """One row made odd in one of the ways pastes, locales and broken tools make rows odd."""
    r = rng.randrange(22)
    sub = lambda new: _VALUE.sub(new, line, count=1)  # noqa: E731
    if r == 0:
        return [sub("nan")]
    if r == 1:
        return [sub("123456789012345678901.5")]  # past 1e18: not a number to sar
    if r == 2:
        return [sub("1234567890123")]  # 13 digits: past mpstat's 12
    if r == 3:
        return [sub("1234567.123456789")]  # more digits than the exact path reads
    if r == 4:
        return [line.replace(".", ",")]  # a decimal comma
    if r == 5:
        return [line[: rng.randrange(len(line) + 1)]]  # cut mid-way
    if r == 6:
        return [line.replace("  ", "\t")]
    if r == 7:
        return [line.replace(" ", "\u00a0", 3)]  # no-break spaces: blanks to str.split
    if r == 8:
        return [line + " °"]
    if r == 9:
        return [sub("-1.00")]
    if r == 10:
        return [sub("100.40")]  # fine for sar (<= 100.5), out of range for mpstat
    if r == 11:
        return [sub("-0.00")]
    if r == 12:
        return [line.replace(" AM ", " am ").replace(" PM ", " pm ")]
    if r == 13:
        return [line.replace(" AM ", " Am ", 1)]
    if r == 14:
        return [re.sub(r"^0(\d):", r"\1:", line)]  # a one-digit hour
    if r == 15:
        return [re.sub(r"^\d\d:", "25:", line)]  # no such hour
    if r == 16:
        return ["  " + line + "   "]
    if r == 17:
        return [f"Nov 25 00:00:{rng.randrange(60):02d} db07 sysstat[812]: {line}"]
    if r == 18:
        return [line, line]  # the same row twice: a new interval for mpstat
    if r == 19:
        return [line[:30], line[30:]]  # wrapped
    if r == 20:
        return [re.sub(r"^(\S+ +\S+) +", r"\1  T", line, count=1)]  # a `T` where ISO has one
    return [line + " 1.00"]  # one value too many


def _make_hostile(data: bytes, seed: int, share: float) -> bytes:
    rng = random.Random(seed)
    out: list[str] = []
    for line in data.decode().split("\n"):
        if line[:1].isdigit() and rng.random() < share:
            out += _hostile(line, rng)
        else:
            out.append(line)
    return "\n".join(out).encode()


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("kind", ["mpstat-12", "mpstat-9", "mpstat-7", "sar"])
def test_hostile_rows(tmp_path, monkeypatch, rows_read, kind, seed):
    name, _, release = kind.partition("-")
    data = _capture(name, tmp_path, release or "12")[: 48 * 1024]
    _same(_make_hostile(data, seed, 0.05), monkeypatch)
    assert rows_read[0] > 100


@pytest.mark.parametrize("seed", range(6))
def test_every_kind_of_hostile_row_often(tmp_path, monkeypatch, rows_read, seed):
    """Half the rows odd: the core stops and starts again around nearly every row."""
    data = _capture("mpstat" if seed % 2 else "sar", tmp_path)[: 24 * 1024]
    _same(_make_hostile(data, seed, 0.5), monkeypatch)


def test_average_rows_and_a_second_table_after_the_core_ran(monkeypatch, rows_read):
    header = "CPU    %usr   %nice    %sys %iowait    %irq   %soft  %steal  %guest  %gnice   %idle"
    lines = ["Linux 5.14.0 (db07)  11/25/2026  _x86_64_  (2 CPU)"]
    for sec in range(40):
        clock = f"10:00:{sec:02d}"
        lines += ["", f"{clock}  {header}"]
        for cpu in ("all", "0", "1"):
            lines.append(
                f"{clock}  {cpu:>4}  "
                + "  ".join(f"{(sec * 7 + len(cpu)) % 50:.2f}" for _ in range(9))
                + "  50,00"
            )
    lines += ["", f"Average:  {header}"]
    lines += [
        f"Average:  {c:>4}  " + "  ".join(["1.00"] * 9) + "  91.00" for c in ("all", "0", "1")
    ]
    lines += ["", "10:01:00  NODE  %usr %nice %sys %iowait %irq %soft %steal %guest %gnice %idle"]
    lines += ["10:01:00   all  1.00 0.00 1.00 0.00 0.00 0.00 0.00 0.00 0.00 98.00"]
    lines += [
        "",
        "sar -u 600",
        "",
        "12:00:01 AM     CPU     %user     %nice   %system   %iowait    %steal     %idle",
    ]
    for i in range(60):
        lines.append(
            f"12:{i:02d}:01 AM     all     {i}.5      0.00     1.00      0.50      0.00     {90 - i % 50}.00"
        )
    lines += ["Average:        all      5.50      0.00      1.00      0.50      0.00     85.00"]
    want = _same(("\n".join(lines) + "\n").encode(), monkeypatch)
    assert '"format":"mpstat"' in want and '"format":"sar"' in want
    assert rows_read[0] > 30


def test_an_interval_label_the_core_cannot_hold(monkeypatch, rows_read):
    """A row whose label (the tokens before the CPU) is long non-ASCII text: the Python reader
    takes it; the core must then decline the interval it opened (the label is too long for it in
    UTF-8), not fail, and read the rows after it."""
    header = "CPU    %usr   %nice    %sys %iowait    %irq   %idle"
    lines = []
    for sec in range(30):
        clock = f"10:00:{sec:02d}"
        lines += ["", f"{clock}  {header}"]
        for cpu in ("all", "0", "1"):
            lines.append(f"{clock}  {cpu:>4}  {sec}.25  0.00  2.00  1.00  0.00  {96 - sec}.75")
        if sec == 12:
            lines.append(f"{clock} {'é' * 30}  1  3.00  0.00  2.00  1.00  0.00  94.00")
    want = _same(("\n".join(lines) + "\n").encode(), monkeypatch)
    assert '"format":"mpstat"' in want
    assert rows_read[0] > 30


def test_sar_under_a_decimal_comma_locale(tmp_path, monkeypatch, rows_read):
    """sysstat under de_DE prints `21,97`: the core reads those as pasted.number does, and leaves
    the rows holding a `2,210` (one comma before exactly three digits: a thousands group to
    pasted.number) to the Python reader."""
    rng = random.Random(5)
    lines = []
    for line in _capture("sar", tmp_path).decode().split("\n"):
        if line[:1].isdigit():
            line = line.replace(".", ",")
            if rng.random() < 0.05:
                line = re.sub(r"\b\d+,\d\d\b", "2,210", line, count=1)
            elif rng.random() < 0.05:
                line = re.sub(r"\b\d+,\d\d\b", "1234,567", line, count=1)
        lines.append(line)
    want = _same("\n".join(lines).encode(), monkeypatch)
    assert '"format":"sar"' in want
    assert rows_read[0] > 500


# -- iostat: device rows in the core's rows mode -----------------------------------------------

# the device headers of the iostat family (sysstat 7-12 plain, -k, -m, -x of 9, 10, 11 and 12,
# with discard and flush columns; Solaris -x; Solaris -xn, where the device comes last and the
# Python reader keeps every row)
_IOSTAT_LAYOUTS = {
    "plain": "Device:            tps   Blk_read/s   Blk_wrtn/s   Blk_read   Blk_wrtn",
    "k": "Device             tps    kB_read/s    kB_wrtn/s    kB_dscd/s    kB_read    kB_wrtn    kB_dscd",
    "m": "Device             tps    MB_read/s    MB_wrtn/s    MB_read    MB_wrtn",
    "x9": "Device:         rrqm/s   wrqm/s     r/s     w/s   rsec/s   wsec/s avgrq-sz avgqu-sz   await  svctm  %util",
    "x10": "Device:         rrqm/s   wrqm/s     r/s     w/s    rkB/s    wkB/s avgrq-sz avgqu-sz   await r_await w_await  svctm  %util",
    "x12": "Device            r/s     rkB/s   rrqm/s  %rrqm r_await rareq-sz     w/s     wkB/s   wrqm/s  %wrqm w_await wareq-sz     d/s     dkB/s   drqm/s  %drqm d_await dareq-sz     f/s f_await  aqu-sz  %util",
    "xm": "Device            r/s     w/s     rMB/s     wMB/s   rrqm/s   wrqm/s  %rrqm  %wrqm r_await w_await aqu-sz rareq-sz wareq-sz  svctm  %util",
    "solx": "device       r/s    w/s   kr/s   kw/s wait actv  svc_t  %w  %b",
    "solxn": "    r/s    w/s   kr/s   kw/s wait actv wsvc_t asvc_t  %w  %b device",
}
_IOSTAT_DEVICES = ["sda", "sdb1", "nvme0n1", "dm-0", "md127", "rbd0", "emcpowera"]
_NFS = ["db07:/export/oradata", "nfs1:/vol/u02/", "sd3,a", "/dev/dsk/c0t0d0s0", "ssd@1"]


def _iostat_capture(layout: str, reports: int, seed: int, *, cpu: bool = True) -> str:
    """`reports` reports of one layout, values drawn from `seed` (invented, in iostat's shape)."""
    rng = random.Random(seed)
    header = _IOSTAT_LAYOUTS[layout]
    solaris = layout.startswith("sol")
    devices = (_NFS + _IOSTAT_DEVICES[:3]) if solaris else _IOSTAT_DEVICES
    ncols = len(header.split()) - 1
    out = [] if solaris else ["Linux 5.14.0 (db07)  11/25/2026  _x86_64_  (16 CPU)", ""]
    for r in range(reports):
        if solaris:
            out.append("                    extended device statistics")
        else:
            out.append(f"11/25/2026 10:{r // 60 % 60:02d}:{r % 60:02d} AM")
            if cpu:
                w = rng.uniform(0, 30)
                out += [
                    "avg-cpu:  %user   %nice %system %iowait  %steal   %idle",
                    f"          12.50    0.00    3.25    {w:.2f}    0.00   {84.25 - w:.2f}",
                    "",
                ]
        out.append(header)
        for dev in devices:
            if layout == "x12" and rng.random() < 0.3:
                continue  # -z: idle devices left out
            vals = [f"{rng.uniform(0, 400):.2f}" for _ in range(ncols)]
            if "%util" in header or "%b" in header:
                vals[-1] = f"{rng.uniform(0, 100):.2f}"
            row = "  ".join(vals)
            out.append(f"{row}  {dev}" if layout == "solxn" else f"{dev:<14}{row}")
        out.append("")
    return "\n".join(out) + "\n"


def test_iostat_core_on_generated_sysstat12_xt(tmp_path, monkeypatch, rows_read):
    want = _same(_capture("iostat", tmp_path), monkeypatch)
    assert '"format":"iostat"' in want
    assert rows_read[0] > 300


@pytest.mark.parametrize("layout", sorted(_IOSTAT_LAYOUTS))
def test_iostat_every_layout(monkeypatch, rows_read, layout):
    """Each header of the family, with and without avg-cpu, read the same with the core on;
    the core reads the rows of every device-first layout."""
    for cpu in (True, False):
        want = _same(_iostat_capture(layout, 40, 7, cpu=cpu).encode(), monkeypatch)
        assert '"format":"iostat"' in want
    assert (rows_read[0] > 100) == (layout != "solxn")


def test_iostat_layout_changes_and_snapshots(monkeypatch, rows_read):
    """A second layout after the core ran (its sums go back to the Python reader), OSWatcher
    `zzz` snapshots (each one's first report since boot), devices repeated without a header."""
    text = _iostat_capture("x10", 30, 1)
    text += "zzz ***Wed Nov 25 10:30:00 UTC 2026\n" + _iostat_capture("x10", 20, 2)
    text += _iostat_capture("k", 20, 3)
    text += "zzz ***Wed Nov 25 11:00:00 UTC 2026\n" + _iostat_capture("x12", 20, 4)
    rows = [ln for ln in _iostat_capture("x10", 30, 5, cpu=False).split("\n") if ln[:2] == "sd"]
    text += _IOSTAT_LAYOUTS["x10"] + "\n" + "\n".join(rows) + "\n"  # sda, sdb1, sda, ...
    want = _same(text.encode(), monkeypatch)
    assert '"format":"iostat"' in want
    assert rows_read[0] > 300


def _hostile_device_row(line: str, rng: random.Random) -> list[str]:
    r = rng.randrange(16)
    sub = lambda new: _VALUE.sub(new, line, count=1)  # noqa: E731
    if r == 0:
        return [sub("nan")]
    if r == 1:
        return [sub("123456789012345678901.5")]
    if r == 2:
        return [sub("1234567.123456789")]
    if r == 3:
        return [line.replace(".", ",")]  # a decimal comma
    if r == 4:
        return [sub("2,210")]  # a thousands group to pasted.number
    if r == 5:
        return [line[: rng.randrange(len(line) + 1)]]  # cut mid-way
    if r == 6:
        return [line.replace("  ", "\t")]
    if r == 7:
        return [line.replace(" ", "\u00a0", 2)]
    if r == 8:
        return [line + " °"]
    if r == 9:
        return [sub("-1.00")]
    if r == 10:
        return [re.sub(r"\S+$", "180.00", line)]  # %util past 150.5
    if r == 11:
        return [f"[oracle@db07 ~]$ {line}", f"# {line}", f"db07n1: {line}"][rng.randrange(3)]
    if r == 12:
        return [line, line]  # the same device again: a new report
    if r == 13:
        return [line[:20], line[20:]]  # wrapped
    if r == 14:
        return [f"Nov 25 10:00:0{rng.randrange(10)} db07 iostat[77]: {line}"]
    return [re.sub(r"^\S+", rng.choice(["sd:", "9", "-x", "dévice", "sdevice1", "a" * 130]), line)]


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("layout", ["x12", "x10", "plain", "solx"])
def test_iostat_hostile_rows(monkeypatch, rows_read, layout, seed):
    rng = random.Random(seed)
    out: list[str] = []
    for line in _iostat_capture(layout, 60, seed).split("\n"):
        if line[:1].isalpha() and line[:1] not in "Dda" and rng.random() < 0.2:
            out += _hostile_device_row(line, rng)
        else:
            out.append(line)
    want = _same("\n".join(out).encode(), monkeypatch)
    assert '"format":"iostat"' in want
    assert rows_read[0] > 100


def test_corpus_iostat_repeated_into_long_captures(monkeypatch, rows_read):
    """Each real iostat snippet repeated ten times: long enough for the fast path, so the core
    reads the rows of every real layout (or leaves them, Solaris -xn, to the Python reader)."""
    paths = [p for p in sorted(CORPUS.glob("*.txt")) if "iostat" in p.name]
    paths += [p for p in OS_FIXTURES if "iostat" in p.name]
    assert len(paths) >= 6
    for path in paths:
        lines = path.read_text(errors="replace").rstrip("\n").split("\n")
        # from the first header on (a banner or command line again would start a new block)
        at = next((i for i, ln in enumerate(lines) if "evice" in ln or "avg-cpu" in ln), len(lines))
        body = "\n".join(lines[:at] + lines[at:] * 10) + "\n"
        _same(body.encode(), monkeypatch)
    assert rows_read[0] > 50
