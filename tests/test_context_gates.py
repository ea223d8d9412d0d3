"""ingest/context.py searches each prose regex only on lines holding a needle the regex needs (a
substring of every match, a digit, or a lowercase word for the case-blind ones on ASCII lines).
These tests check that property itself, on every line of the corpus and the seed fixtures plus
lines written here to reach each alternative: if someone adds an alternative to a regex and
forgets its needle, the gate would silently drop those hints, and this fails."""

from __future__ import annotations

import re
from pathlib import Path

from ingest import context as ctx

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT.parent / "shared" / "corpus" / "snippets"

# Lines of my own invention, each reaching at least one alternative of some regex.
HANDMADE = [
    "SunOS db01 5.11 11.4.42.111.0 sun4v sparc sparcv9 Solaris illumos SPARC",
    "pstack 4306; truss -c -p 4306; prstat -mL; echo ::memstat | mdb -k",
    "Linux db02 4.18.0-372.el8.x86_64 GNU/Linux RHEL Red Hat Oracle Linux Ubuntu strace el6 el7",
    "AIX 7.2 and HP-UX 11.31 and Windows Server",
    "[oracle@db02 ~]$ ls /proc/self/fd /sys/block/sda /dev/sdb /dev/nvme0 /dev/dm-3 /lib64/x",
    "cat /etc/ld.so.conf /dev/mapper/vg /dev/shm/x",
    "/devices/pci@0 /dev/rdsk/c0t0d0s2 /dev/dsk/c1t0 /platform/sun4v /usr/lib/sparcv9/x",
    "/lib/libc.so.1 /var/run/door/x",
    "ORA-04031 and ORA-00600 from ora_pmon_ORCL ora_dbw0 oracleORCL tnslsnr sqlplus rman lsnrctl",
    "Oracle Database 19c Release 19.0.0.0.0, running 12.2.0.1 on 11g R2, RDBMS 10.2.0.4, 23ai",
    "patched to 19.21, upgraded to 21c, tested it on 18c, db 12c, RU 19.3, version 8i 9i",
    "pid 4306 process 77 -p 123 spid=999 sid: 12 PID=55 SID 7 -P 8 Process 9",
    "\u017fid 12 and p\u0131d 13 and Kelvin \u212a 14",  # non-ASCII case folds: gates step aside
]


def _lines() -> list[str]:
    assert CORPUS.is_dir(), f"corpus missing: {CORPUS}"
    files = sorted(CORPUS.glob("*")) + sorted((ROOT / "tests" / "fixtures" / "seeds").glob("*"))
    out = list(HANDMADE)
    for path in files:
        if path.is_file():
            out += path.read_text(encoding="utf-8", errors="replace").splitlines()
    return [line[:4000] for line in out]


def _needs(rx: re.Pattern[str], line: str, needles: tuple[str, ...]) -> None:
    if rx.search(line) is not None:
        assert any(n in line for n in needles), (rx.pattern, line)


def test_every_platform_hint_match_holds_one_of_its_needles():
    lines = _lines()
    hit = [0] * len(ctx._PLATFORM_HINTS)
    for line in lines:
        for k, (_, rx, needles) in enumerate(ctx._PLATFORM_HINTS):
            _needs(rx, line, needles)
            hit[k] += rx.search(line) is not None
    assert all(hit), hit  # every regex was reached: the check above is not vacuous


def test_process_ora_pid_sid_and_versions_hold_their_needles():
    lines = _lines()
    digit_rx = (ctx._VERSION_NEAR_WORD, ctx._LONG_VERSION, ctx._MARKETING, ctx._ORA)
    seen = dict.fromkeys(("process", "ora", "pid", "sid", *(r.pattern for r in digit_rx)), 0)
    for line in lines:
        _needs(ctx._PROCESS, line, ctx._PROCESS_NEEDLES)
        _needs(ctx._ORA, line, ("ORA-",))
        seen["process"] += ctx._PROCESS.search(line) is not None
        seen["ora"] += ctx._ORA.search(line) is not None
        for rx in (*digit_rx, ctx._PID, ctx._SID):
            if rx.search(line) is not None:
                assert ctx._DIGIT.search(line), (rx.pattern, line)
                seen[rx.pattern] = seen.get(rx.pattern, 0) + 1
        if line.isascii():
            low = line.lower()
            _needs(ctx._PID, low, ctx._PID_NEEDLES)
            _needs(ctx._SID, low, ("sid",))
        seen["pid"] += ctx._PID.search(line) is not None
        seen["sid"] += ctx._SID.search(line) is not None
    assert all(seen.values()), seen


def test_non_ascii_case_folds_still_reach_the_case_blind_regexes():
    """re's IGNORECASE matches U+017F to s: such a line skips the ASCII needle test."""
    e = ctx.ContextExtractor()
    e.feed("\u017fid 12 and pid 13", prose=True)
    assert e.sids == [12] and e.pids == [13]
    e = ctx.ContextExtractor()
    e.feed("Linux box, pid 99, sid=4, ORA-01555, ora_smon_X, 19.3.0.0", prose=True)
    assert (e.platforms["linux"], e.pids, e.sids, e.ora_errors, e.processes) == (
        1,
        [99],
        [4],
        ["ORA-01555"],
        ["ora_smon_X"],
    )
    assert e.versions == ["19.3.0.0"]


def test_every_version_match_holds_what_the_version_gate_searches_for():
    lines = _lines()
    seen = 0
    for line in lines:
        for rx in (ctx._VERSION_NEAR_WORD, ctx._LONG_VERSION, ctx._MARKETING):
            for m in rx.finditer(line):
                # the gate finds a match inside the regex's own match
                assert ctx._VERSIONISH.search(m.group(0)), (rx.pattern, line)
                seen += 1
    assert seen > 20


def _context(lines: list[str]) -> dict:
    c = ctx.ContextExtractor()
    for k, line in enumerate(lines):
        c.feed(line, prose=k % 3 != 0)  # prose and a block's first lines
    c.feed_evidence(lines[:400])
    return c.build([]).model_dump()


def test_the_needle_automaton_reads_what_one_test_per_needle_reads(monkeypatch):
    lines = _lines()
    chunks = [lines[i : i + 50] for i in range(0, len(lines), 50)]
    assert ctx._NEEDLES is not None  # ahocorasick_rs is a dependency: the automaton is built
    with_automaton = [_context(chunk) for chunk in chunks]
    monkeypatch.setattr(ctx, "_NEEDLES", None)
    assert [_context(chunk) for chunk in chunks] == with_automaton
    found = [c for c in with_automaton if c["platform_hints"] or c["processes"] or c["ora_errors"]]
    assert len(found) > 10  # the comparison is not between empty contexts
