"""pidstat and prstat rows read in C (table.c's proc mode, ostable.ProcTable's store) and top's
process rows (table.c's top mode, one store per frame) against the Python readers, the reference: the evidence must be identical with the core on and off
(ostable.NATIVE), line by line, streamed in two read sizes and as one text, on generated
captures, every fixture and corpus snippet of the two formats (also repeated into long
captures), the members of each family written here (pidstat -t threads with blanks in their
names, -l command lines, -h, old layouts without UID, 24 h clocks, Average rows; prstat plain
with sizes and `%`, -L, -m, -Z summaries; top of procps 3.2 and 3.3+, -H, -c and Solaris top)
and captures whose rows were made hostile the ways
pastes make them. Each test checks that the core read rows, so a core that silently never ran
fails them."""

from __future__ import annotations

import random
import re
from pathlib import Path

import pytest

from benchmarks import gen_os_tables
from ingest.parsers import ostable, top
from tests.test_table_core import _same

ROOT = Path(__file__).resolve().parents[1]
CORPUS = Path(__file__).resolve().parents[1].parent / "shared" / "corpus" / "snippets"
FIXTURES = ROOT / "tests" / "fixtures"

SIZE = 96 * 1024


@pytest.fixture
def rows_read(monkeypatch):
    """[0]: how many rows ProcTable.run took in C, and lines top's run took (its rows, blank
    lines, headers and summary lines) (0: the core never ran); [1]: top frames started in C."""
    count = [0, 0]
    real = ostable.ProcTable.run

    def counting(self, text, pos, endpos, label):
        got = real(self, text, pos, endpos, label)
        count[0] += got[1]
        return got

    monkeypatch.setattr(ostable.ProcTable, "run", counting)
    real_store = top.TopParser._store

    class Counting:  # top's frame store: count the lines its run() took
        def __init__(self, table) -> None:
            self.table = table

        def run(self, *args):
            got = self.table.run(*args)
            count[0] += got[1]
            count[1] += got[3]
            return got

        def __getattr__(self, name):
            return getattr(self.table, name)

    def store(self):
        got = real_store(self)
        if got is not None and not isinstance(got[0], Counting):
            self._tables = self.frame.core = got = (Counting(got[0]), got[1])
        return got

    monkeypatch.setattr(top.TopParser, "_store", store)
    return count


def _capture(kind: str, tmp_path: Path) -> bytes:
    path = tmp_path / f"{kind}.txt"
    gen_os_tables.generate(kind, SIZE, path)
    return path.read_bytes()


def _files() -> list[Path]:
    globs = ("*pidstat*.txt", "*prstat*.txt", "top_*.txt", "*_top.txt")
    paths = [p for g in globs for p in (FIXTURES / "os").glob(g)]
    paths += [p for g in globs for p in (FIXTURES / "os_profiles").glob(g)]
    paths += [p for g in globs for p in CORPUS.glob(g)]
    return sorted(set(paths))


def test_the_core_is_built_and_has_the_proc_mode():
    assert ostable.NATIVE, "ingest._syscore is not built (python setup.py build_ext --inplace)"
    assert ostable.ProcTable(("a",)).core is not None
    assert ostable.ProcTable().core is None  # no metrics: the Python store (pidstat's Average)


@pytest.mark.parametrize("kind", ["pidstat", "prstat", "top"])
def test_generated_captures(tmp_path, monkeypatch, rows_read, kind):
    data = _capture(kind, tmp_path)
    _same(data, monkeypatch)
    row = re.compile(r"^(\d\d:\d\d:\d\d [AP]M|\s*)\s+\d+\s.*(?<!Command)$")
    lines = data.decode().splitlines()
    rows = sum(1 for line in lines if row.match(line))
    assert rows > 500
    # three C passes (two read sizes, the text): most rows; top's: most lines (whole frames)
    assert rows_read[0] >= 0.9 * (len(lines) if kind == "top" else rows) * 3


def test_every_fixture_and_corpus_snippet(monkeypatch):
    paths = _files()
    assert CORPUS.is_dir(), f"the corpus is missing: {CORPUS}"
    assert len(paths) >= 9
    for path in paths:
        _same(path.read_bytes(), monkeypatch)


def test_fixtures_and_snippets_repeated_into_long_captures(monkeypatch, rows_read):
    """A long capture of each: the core reads from the first rows after the block's context."""
    for path in _files():
        lines = path.read_text().splitlines()
        while lines and lines[0].startswith("# "):  # the fixture's own comment
            lines.pop(0)
        top = [line for line in lines if ostable.banner_line(line) or line.startswith("$ ")]
        body = [line for line in lines if line not in top]
        text = "\n".join(top) + "\n" + ("\n".join(body) + "\n") * 40
        _same(text.encode(), monkeypatch)
    assert rows_read[0] > 1000


# Members of both families, written for these tests (invented numbers in the tools' layouts:
# sysstat 9-12 pidstat, Solaris 10/11 prstat).
PIDSTAT_T_L = """\
Linux 5.14.0-70.el9.x86_64 (db01)  11/25/2026  _x86_64_  (32 CPU)

10:00:01      UID      TGID       TID    %usr %system  %guest   %wait    %CPU   CPU  Command
10:00:02    54321      4410         -   12.00    3.00    0.00    0.50   15.00     3  /usr/java/bin/java -Xmx8g -jar app.jar
10:00:02    54321         -      4410    0.00    0.00    0.00    0.00    0.00     3  |__java
10:00:02    54321         -      4433    9.00    1.00    0.00    0.00   10.00     5  |__GC Thread#0
10:00:02    54321         -      4434    2.00    1.50    0.00    0.00    3.50     7  |__C2 CompilerThre
10:00:02    54321         -      4435    1.00    0.50    0.00    0.00    1.50     7  |__ VM Thread
10:00:02        0         1         -    0.00    0.00    0.00    0.00    0.00     0  systemd
"""
PIDSTAT_OLD = """\
Linux 2.6.32-431.el6.x86_64 (db02)  11/25/2026  _x86_64_  (16 CPU)

09:15:01 AM       PID    %usr %system  %guest    %CPU   CPU  Command
09:15:02 AM      2037   26.38    2.49    0.00   28.87     6  ora_lgwr_orcl
09:15:02 AM      2259   28.77   11.23    0.00   40.00     5  ora_mmon_orcl

09:15:01 AM       PID   cswch/s nvcswch/s  Command
09:15:02 AM      2037    812.00     10.00  ora_lgwr_orcl
09:15:02 AM      2259     12.00    440.00  ora_mmon_orcl

Average:          PID    %usr %system  %guest    %CPU   CPU  Command
Average:         2037   26.38    2.49    0.00   28.87     -  ora_lgwr_orcl
"""
PIDSTAT_H = """\
Linux 4.18.0-553.el8_10.x86_64 (db03)  11/25/2026  _x86_64_  (8 CPU)

#      Time   UID       PID    %usr %system  %guest   %wait    %CPU   CPU  minflt/s  majflt/s     VSZ     RSS   %MEM   kB_rd/s   kB_wr/s kB_ccwr/s iodelay  Command
 1764064801 54321      2037   26.38    2.49    0.00   17.64   28.87     6      1.00      0.00 2191022  904599   5.80      0.00   4401.00      0.00       3  ora_lgwr_orcl
 1764064801 54321      2074   23.85   16.75    0.00   22.79   40.61    12      2.00      0.00 1084804  923099   1.50      0.00  56450.00      0.00       7  ora_dbw0_orcl
"""
PRSTAT_PLAIN = """\
   PID USERNAME  SIZE   RSS STATE  PRI NICE      TIME  CPU PROCESS/NLWP
  2291 oracle     12G   11G cpu12    0    0  81:22:10  12% oracle/1
  2340 oracle     12G   11G sleep   59    0   2:01:33 0.4% oracle/258
   501 root      9600K 4200K sleep   59    0   0:10:12 0.1% nscd/31
   777 daemon    1.5M  900K sleep   59    0   0:00:01 0.0% rpcbind/1
Total: 200 processes, 2100 lwps, load averages: 3.10, 3.00, 2.95
"""
PRSTAT_L = """\
   PID USERNAME  SIZE   RSS STATE  PRI NICE      TIME  CPU PROCESS/LWPID
  4410 oracle   2048M 1575M cpu3    10    0   1:10:01 3.1% java/2
  4410 oracle   2048M 1575M sleep   59    0   0:10:01 1.0% java/14
  1733 root       12M 8000K sleep   59    0   0:00:09 0.2% nscd/4
Total: 182 processes, 1210 lwps, load averages: 9.19, 15.10, 11.90
"""
PRSTAT_M = """\
   PID USERNAME USR SYS TRP TFL DFL LCK SLP LAT VCX ICX SCL SIG PROCESS/NLWP
 12429 oracle    36 9.4 0.0 0.0 0.0 8.1  39 7.1 198  81 325   0 oracle/1
  4410 oracle    36  26 0.0 0.0 0.0  36   0  20  32 900 66K   0 java/40
  1733 root      45 1.6 0.0 0.0 0.0 4.0  38  11 897 905 1.2M   0 nscd/7
Total: 182 processes, 1210 lwps, load averages: 9.19, 15.10, 11.90
"""
TOP_PROCPS33_H = """\
top - 14:00:05 up 10 days,  3:04,  2 users,  load average: 17.76, 7.50, 6.90
Threads: 912 total,   5 running, 907 sleeping,   0 stopped,   0 zombie
%Cpu0  : 27.9 us, 10.8 sy,  0.0 ni, 61.3 id,  0.0 wa,  0.0 hi,  0.0 si,  0.0 st
%Cpu1  : 14.5 us, 17.2 sy,  0.0 ni, 68.3 id,  0.0 wa,  0.0 hi,  0.0 si,  0.0 st
MiB Mem :  64263.9 total,   1234.5 free,  40123.4 used,  22906.0 buff/cache
MiB Swap:   8192.0 total,   8000.0 free,    192.0 used.  20345.6 avail Mem

    PID USER      PR  NI    VIRT    RES    SHR S  %CPU  %MEM     TIME+ COMMAND
   4433 oracle    20   0 7106795 600457  49561 R  97.5   1.0   56:27.97 java -Xmx8g -jar app.jar
   4434 oracle    20   0 7106795 600457  49561 S  27.5   1.0   16:48.80 java -Xmx8g -jar app.jar
    908 root      20   0       0      0      0 I   0.3   0.0    0:27.97 [kworker/8:1-events]
   2037 oracle    -2   0 6676038 631385   4944 D   1.3   5.2   55:09.47 ora_lgwr_orcl
   2037 oracle    rt   0 6676038 631385   4944 S   0.0   5.2   55:09.47 ora_lgwr_orcl
"""
TOP_PROCPS32 = """\
top - 09:01:02 up 3 days,  1:02,  1 user,  load average: 1.50, 1.20, 1.00
Tasks: 120 total,   1 running, 119 sleeping,   0 stopped,   2 zombie
Cpu(s): 10.0%us,  5.0%sy,  0.0%ni, 80.0%id,  5.0%wa,  0.0%hi,  0.0%si,  0.0%st
Mem:   8000000k total,  7000000k used,  1000000k free,   200000k buffers
Swap:  2000000k total,   500000k used,  1500000k free,  3000000k cached

  PID USER      PR  NI  VIRT  RES  SHR S %CPU %MEM    TIME+  COMMAND
 3001 oracle    15   0 2100m 1.9g 1.8g R 99.9 24.0  10:01.00 oracle
 3002 oracle    15   0 2100m 1.9g 1.8g S  5.0 24.0   1:01.00 oracle
 3100 root      16   0     0    0    0 S  0.0  0.0   0:00.10 kswapd0
"""
TOP_SOLARIS = """\
last pid: 12345;  load avg:  3.10,  2.45,  1.67;  up 12+03:04:05   14:23:01
123 processes: 120 sleeping, 2 running, 1 on cpu
CPU states: 70.0% idle, 20.0% user, 10.0% kernel,  0.0% iowait,  0.0% swap
Memory: 32G phys mem, 4G free mem, 16G total swap, 12G free swap

   PID USERNAME LWP PRI NICE  SIZE   RES STATE    TIME    CPU COMMAND
  2001 oracle     1  59    0   10G  9.8G cpu/3   10:01 12.50% oracle
  2002 oracle     1  59    0   10G  9.8G sleep    5:01  6.25% oracle
"""
FAMILY = {
    "top procps 3.3 -H -c": TOP_PROCPS33_H,
    "top procps 3.2": TOP_PROCPS32,
    "top Solaris": TOP_SOLARIS,
    "pidstat -t -l": PIDSTAT_T_L,
    "pidstat old layout and Average": PIDSTAT_OLD,
    "pidstat -h": PIDSTAT_H,
    "prstat plain": PRSTAT_PLAIN,
    "prstat -L": PRSTAT_L,
    "prstat -m": PRSTAT_M,
}


def _repeat(text: str, times: int, tick: bool = True) -> str:
    """The table `times` times, the clocks of pidstat rows moved on a second each time."""
    head, _, body = text.partition("\n\n") if text.startswith("Linux") else ("", "", text)
    out = [head + "\n"] if head else []
    for i in range(times):
        part = body
        if tick:
            part = re.sub(r"^(\d\d):(\d\d):\d\d", rf"\1:\2:{i % 60:02d}", body, flags=re.M)
        out.append(part.rstrip("\n") + "\n\n")
    return "".join(out)


@pytest.mark.parametrize("name", sorted(FAMILY))
def test_every_member_of_the_families(monkeypatch, rows_read, name):
    _same(_repeat(FAMILY[name], 30).encode(), monkeypatch)
    if name not in ("pidstat -h", "top Solaris"):  # no clock; no %MEM: read in Python
        assert rows_read[0] > 0


def test_what_the_core_read_is_what_python_reads(monkeypatch):
    """The store's contents themselves (not only the facts made of them): means, names, key
    order and each key's column order."""
    stores = []
    for native in (False, True):
        monkeypatch.setattr(ostable, "NATIVE", native)
        from ingest.parsers.pidstat import PidstatParser
        from ingest.parsers.prstat import PrstatParser

        got = []
        for parser, part in ((PidstatParser(), 0), (PrstatParser(), 1)):
            body = _repeat(PIDSTAT_T_L, 5) if part == 0 else _repeat(PRSTAT_M, 5, tick=False)
            pos = 0
            lines = body.splitlines(keepends=True)
            for line in lines:  # the first lines through feed, then runs through feed_run
                if parser.names is None:
                    parser.feed(line.rstrip("\n"))
                    pos += len(line)
            while pos < len(body):
                new, _ = parser.feed_run(body, pos, len(body), {})
                nl = body.find("\n", new)
                end = len(body) if nl < 0 else nl
                parser.feed(body[new:end])
                pos = end + 1
            procs = parser.procs
            got.append((list(procs.rows), procs.means(), dict(procs.names), procs.dropped))
        stores.append(got)
    assert stores[0] == stores[1]
    assert [list(m) for m in stores[1][1][1].values()][0][-1] == "cpu_m"


_NOT_NUMBERS = ["nan", "inf", "1e5", "1,234", "1.234,5", "12,5", "0x10", "+3", "1_000", "."]


def _hostile_pidstat(line: str, rng: random.Random) -> list[str]:
    if not re.match(r"\d\d:\d\d:\d\d", line) or line.rstrip().endswith("Command"):
        return [line]
    tokens = line.split()
    if len(tokens) < 7:
        return [line]
    ampm = tokens[1] in ("AM", "PM")
    at = rng.randrange(3 + ampm, len(tokens) - 1)  # a value
    pick = rng.randrange(22)
    if pick == 0:
        tokens[at] = rng.choice(_NOT_NUMBERS)
    elif pick == 1:
        tokens[at] = "1" * rng.randrange(14, 22) + ".5"  # more digits than a double holds
    elif pick == 2:
        tokens[at] = "-" + tokens[at]
    elif pick == 3:
        tokens[-1] += " " + str(rng.randrange(100))  # a command ending in a number
    elif pick == 4:
        tokens[-1] = "j\u00e9ava"  # beyond ASCII
    elif pick == 5:
        return ["\t".join(tokens)]
    elif pick == 6:
        return [" ".join(tokens[: rng.randrange(2, len(tokens))])]  # cut
    elif pick == 7:
        return ["# " + " ".join(tokens)]
    elif pick == 8:
        return ["Nov 25 10:00:02 db01 pidstat[123]: " + " ".join(tokens)]
    elif pick == 9:
        return [line.replace(" AM ", " am ").replace(" PM ", " pm ")]
    elif pick == 10:
        return ["99" + line[2:], "24" + line[2:], "9" + line[2:], line[:6] + "61" + line[8:]]
    elif pick == 11:
        return [line[:10] + "T" + line[11:]]
    elif pick == 12:
        tokens[2 + ampm] = rng.choice(["-", "12a", "0x1f", "1" * 250])  # the pid
    elif pick == 13:
        tokens[-1] = "|__" + "x" * rng.randrange(190, 260) + " y"  # longer than kept
    elif pick == 14:
        tokens[-1] = "|__"  # no name: `?`
    elif pick == 15:
        tokens[rng.randrange(3 + ampm, len(tokens) - 2)] = "500000.00"  # beyond 4096 CPUs
    elif pick == 16:
        return [line + "\r"]
    elif pick == 17:
        return [line, line]  # the same row twice in one report
    elif pick == 18:
        return [line + "   "]
    elif pick == 19:
        return [line.replace(" ", "\u00a0", 3)]
    elif pick == 20:
        return [" ".join(tokens) + " " + " ".join(["7"] * 70)]  # more tokens than kept
    else:
        tokens.insert(rng.randrange(3, len(tokens)), "x")
    return [" ".join(tokens)]


def _hostile_prstat(line: str, rng: random.Random) -> list[str]:
    tokens = line.split()
    if len(tokens) < 4 or not tokens[0].isdigit() or "/" not in tokens[-1]:
        return [line]
    at = rng.randrange(2, len(tokens) - 1)
    pick = rng.randrange(18)
    if pick == 0:
        tokens[at] = rng.choice([*_NOT_NUMBERS, "12k", "12KB", "1.234%", "12%%", "5Q", "K"])
    elif pick == 1:
        tokens[at] = rng.choice(["101", "100.6", "-1", "100.5", "0"])
    elif pick == 2:
        tokens[-1] = rng.choice(["/5", "a/b/12", "oracle/", "oracle", "ora cle/3", "x/0"])
    elif pick == 3:
        tokens[0] = rng.choice(["12a", "1" * 230, "-1"])
    elif pick == 4:
        return [" ".join(tokens[: rng.randrange(2, len(tokens))])]
    elif pick == 5:
        return ["\t".join(tokens)]
    elif pick == 6:
        return ["# " + line]
    elif pick == 7:
        return ["$ " + line]
    elif pick == 8:
        return [line + "\r"]
    elif pick == 9:
        tokens[-1] = "\u4e2d/1"
    elif pick == 10:
        tokens[at] = "1" * 17
    elif pick == 11:
        tokens[at] = rng.choice(["1.5M", "2M", "14K", "3G", "1T", "2P", "7B", "1,5K"])
    elif pick == 12:
        return [line, line]
    elif pick == 13:
        return ["          " + line.strip()[:0] + "2024-01-01T10:00:00 " + line]
    elif pick == 14:
        return [line.replace(" ", "\u00a0", 2)]
    elif pick == 15:
        tokens[-1] = "x" * 300 + "/1"
    elif pick == 16:
        tokens.insert(rng.randrange(1, len(tokens)), "extra")
    else:
        return ["  " + " ".join(tokens) + "  "]
    return [" ".join(tokens)]


def _hostile_top(line: str, rng: random.Random) -> list[str]:
    tokens = line.split()
    if len(tokens) < 12 or not tokens[0].isdigit():
        return [line]
    pick = rng.randrange(14)
    if pick == 0:
        tokens[8] = rng.choice([*_NOT_NUMBERS, "1.234%", "12%", "-1", "1" * 17])  # %CPU
    elif pick == 1:
        tokens[9] = rng.choice([*_NOT_NUMBERS, "0,5"])  # %MEM
    elif pick == 2:
        return [" ".join(tokens[: rng.randrange(2, 11)])]
    elif pick == 3:
        tokens[1] = rng.choice(["54321", "processes:", "processes:x"])
    elif pick == 4:
        tokens[-1] = rng.choice(["x" * 300, "j\u00e9ava", "[kworker/0:1H]", "a b c"])
    elif pick == 5:
        return ["\t".join(tokens)]
    elif pick == 6:
        return ["# " + line]
    elif pick == 7:
        return [line + "\r"]
    elif pick == 8:
        return [line, line]
    elif pick == 9:
        return [line.replace(" ", "\u00a0", 2)]
    elif pick == 10:
        tokens[7] = rng.choice(["R", "S", "D", "Z", "I", "t"])
    elif pick == 11:
        tokens[0] = rng.choice(["12a", "-5"])
    elif pick == 12:
        return ["Nov 25 14:00:05 db01 top[77]: " + line]
    else:
        return ["  " + " ".join(tokens) + "  "]
    return [" ".join(tokens)]


def _make_hostile(data: bytes, hostile, seed: int, share: float) -> bytes:
    rng = random.Random(seed)
    out: list[str] = []
    for line in data.decode().splitlines():
        out += hostile(line, rng) if rng.random() < share else [line]
    return ("\n".join(out) + "\n").encode()


@pytest.mark.parametrize("share", [0.05, 0.2, 0.5])
@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("kind", ["pidstat", "prstat", "top"])
def test_hostile_rows(tmp_path, monkeypatch, rows_read, kind, seed, share):
    hostile = {"pidstat": _hostile_pidstat, "prstat": _hostile_prstat, "top": _hostile_top}[kind]
    data = _make_hostile(_capture(kind, tmp_path)[: 48 * 1024], hostile, seed, share)
    _same(data, monkeypatch)
    if share < 0.5:  # at one in two, prstat's blocks end before the detector's context is full
        assert rows_read[0] > 0


@pytest.mark.parametrize("seed", range(3))
def test_hostile_family_members(monkeypatch, rows_read, seed):
    for name, text in FAMILY.items():
        kind = name.split()[0]
        hostile = {"pidstat": _hostile_pidstat, "prstat": _hostile_prstat, "top": _hostile_top}[
            kind
        ]
        _same(_make_hostile(_repeat(text, 20).encode(), hostile, seed, 0.3), monkeypatch)
    assert rows_read[0] > 0


def test_more_processes_than_kept(tmp_path, monkeypatch, rows_read):
    """Past MAX_PROCS keys rows are counted as dropped, by the core as by the Python store (top:
    past MAX_KEYS commands a frame's rows are counted only)."""
    monkeypatch.setattr(ostable, "MAX_PROCS", 7)
    monkeypatch.setattr(top, "MAX_KEYS", 5)
    _same(_capture("top", tmp_path)[: 32 * 1024], monkeypatch)
    for kind in ("pidstat", "prstat"):
        want = _same(_capture(kind, tmp_path)[: 32 * 1024], monkeypatch)
        if kind == "pidstat":
            assert "rows of processes beyond the first 7" in want
    assert rows_read[0] > 0
