"""Context from prose and headers: which Oracle version and platform the user runs, ORA- errors,
process names and ids. These steer version demotion, platform rendering and placeholder filling."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence

from ingest.model import Context

_VERSION_NEAR_WORD = re.compile(
    r"\b(?:oracle|release|version|database|rdbms|db|ru|patch(?:ed)?|upgraded?\s+to|running|tested"
    r"\s+(?:it\s+)?on|on)\s+(?:database\s+)?v?"
    r"(\d{1,2}(?:\.\d{1,2}){1,4}|\d{1,2}\s?[cgi](?:\s?r\d)?)\b",
    re.IGNORECASE,
)
# Only real release names: a bare "4c" is a hex offset in a stack frame ("kgebem () + 4c").
_MARKETING = re.compile(
    r"(?<![+\w.])(8i|9i|1[01]g(?:R\d)?|12c(?:R\d)?|18c|19c|2[1-9]c|23ai)\b", re.I
)
_LONG_VERSION = re.compile(r"\b(\d{1,2}\.\d\.\d\.\d(?:\.\d{1,2})?)\b")
# (platform, regex, needles): every match of the regex contains one of its needles (the regexes
# are case-sensitive), so a line holding none is not searched. Why: each regex was searched on
# every line of a paste (a leading \b or look-behind defeats re's literal prefix scan), ~2 us a
# line each, the largest part of reading a paste's prose; a substring test is ~50x cheaper.
# tests/test_context_gates.py checks, on the corpus, that the gates change nothing.
_PLATFORM_HINTS: tuple[tuple[str, re.Pattern[str], tuple[str, ...]], ...] = (
    (
        "solaris",
        re.compile(r"\b(SunOS|Solaris|illumos|SPARC|sparcv9|pstack|truss|prstat|mdb)\b"),
        ("SunOS", "Solaris", "illumos", "SPARC", "sparcv9", "pstack", "truss", "prstat", "mdb"),
    ),
    (
        "linux",
        re.compile(r"\b(Linux|GNU/Linux|el[6789]|RHEL|Red Hat|Oracle Linux|Ubuntu|strace)\b"),
        ("Linux", "el6", "el7", "el8", "el9", "RHEL", "Red Hat", "Ubuntu", "strace"),
    ),
    ("aix", re.compile(r"\b(AIX)\b"), ("AIX",)),
    # what a capture's own lines say: RHEL's bash prompt, Linux-only paths and devices
    (
        "linux",
        re.compile(
            r"(\[[\w.-]{1,32}@[\w.-]{1,64} [^\]]{0,64}\][#$])"
            r"|(?<![\w/])(/proc/self/(?:fd|maps|status|mountinfo|cgroup)|/sys/(?:fs|devices|block|"
            r"kernel)/|/dev/(?:sd[a-z]|nvme\d|dm-\d|mapper/|shm/)|/lib64/|/etc/ld\.so\.)"
        ),
        ("@", "/proc/self/", "/sys/", "/dev/", "/lib64/", "/etc/ld.so."),
    ),
    (
        "solaris",
        re.compile(
            r"(?<![\w/])(/devices/|/dev/r?dsk/c\d|/platform/|/usr/lib/sparcv9|/lib/libc\.so\.1\b"
            r"|/var/run/door/)"
        ),
        (
            "/devices/",
            "/dev/",
            "/platform/",
            "/usr/lib/sparcv9",
            "/lib/libc.so.1",
            "/var/run/door/",
        ),
    ),
    ("hpux", re.compile(r"\b(HP-UX)\b"), ("HP-UX",)),
    ("windows", re.compile(r"\b(Windows)\b"), ("Windows",)),
)
_ORA = re.compile(r"\bORA-\d{5}\b")
_PROCESS = re.compile(
    r"\b(tnslsnr|ora_[a-z0-9]{3,5}_\w+|ora_[a-z0-9]{3,5}\b|oracle[A-Z0-9_]+|sqlplus|rman|lsnrctl)\b"
)
_PID = re.compile(r"(?:\bpid[ =:]+|-p\s+|\bprocess\s+|\bspid[ =:]+)(\d{2,9})\b", re.IGNORECASE)
_SID = re.compile(r"\bsid[ =:]+(\d{1,6})\b", re.IGNORECASE)
# Needles of the case-sensitive _PROCESS and _ORA (as for _PLATFORM_HINTS); every other regex
# here needs a digit. _PID and _SID ignore case, so their needles are tested on ASCII lines only
# (re's case-blind matching also folds a few non-ASCII letters, such as U+017F, onto s).
_PROCESS_NEEDLES = ("tnslsnr", "ora_", "oracle", "sqlplus", "rman", "lsnrctl")
_PID_NEEDLES = ("pid", "-p", "process")
_DIGIT = re.compile(r"\d")
# What every match of the three version regexes holds: a digit, then a dot and a digit (19.3,
# 10.2.0.4) or a release letter, maybe after one blank (19c, 11 g, 9i, 23ai); searched first,
# case-blind as they are. Why: half of the lines with a digit have neither, and this one search
# (~1.6 us on the corpus's lines) stood for the three searches (~22 us) each of them made.
_VERSIONISH = re.compile(r"\d(?:\.\d|\s?[cgia])", re.IGNORECASE)

try:  # every needle of _scan found in one pass (Aho-Corasick, in Rust)
    import ahocorasick_rs
except ImportError:  # pragma: no cover - the same answer from one `in` test per needle
    ahocorasick_rs = None


class _Needles:
    """Which of _scan's searches a line calls for, from one automaton pass over every needle
    (the platform hints', ORA- and the process names'): bit k for _PLATFORM_HINTS[k], then one
    bit for ORA- and one for the process names. Why: testing each hint's needles with `in`
    (~35 tests a line) took ~4.4 us of every prose line; the pass takes ~0.4 us."""

    ORA = 1 << len(_PLATFORM_HINTS)
    PROCESS = ORA << 1

    def __init__(self) -> None:
        masks: dict[str, int] = {}
        for k, (_, _, needles) in enumerate(_PLATFORM_HINTS):
            for n in needles:
                masks[n] = masks.get(n, 0) | 1 << k
        masks["ORA-"] = masks.get("ORA-", 0) | self.ORA
        for n in _PROCESS_NEEDLES:
            masks[n] = masks.get(n, 0) | self.PROCESS
        words = sorted(masks)
        self._masks = [masks[w] for w in words]
        self._find = ahocorasick_rs.AhoCorasick(words).find_matches_as_indexes

    def bits(self, line: str) -> int | None:
        """The searches `line` calls for, or None when the automaton cannot take it."""
        try:
            found = self._find(line, overlapping=True)
        except (UnicodeError, ValueError):  # a string Rust cannot take (a lone surrogate)
            return None
        bits = 0
        masks = self._masks
        for index, _, _ in found:
            bits |= masks[index]
        return bits


_NEEDLES = _Needles() if ahocorasick_rs is not None else None

PROSE_CAP = 16 * 1024
# Prose scanned for context at most: people write a few KB around their evidence; megabytes of
# lines no parser claims are noise (or hostile), and the regexes below cost ~1 s per MB of it.
PROSE_SCAN_CAP = 256 * 1024
MAX_ITEMS = 20


class ContextExtractor:
    """Incremental: feed lines (prose, and the first lines of each block), then build()."""

    def __init__(self) -> None:
        self.versions: list[str] = []
        self.platforms: Counter[str] = Counter()
        self.platform_hints: list[str] = []
        self.ora_errors: list[str] = []
        self.processes: list[str] = []
        self.pids: list[int] = []
        self.sids: list[int] = []
        self._prose: list[str] = []
        self._prose_len = 0
        self._scanned = 0

    @staticmethod
    def _add(items: list, value, cap: int = MAX_ITEMS) -> None:
        if value not in items and len(items) < cap:
            items.append(value)

    def feed(self, line: str, *, prose: bool) -> None:
        if len(line) > 4000:
            line = line[:4000]
        if prose and self._prose_len < PROSE_CAP and line.strip():
            self._prose.append(line)
            self._prose_len += len(line) + 1
        if prose:
            if self._scanned >= PROSE_SCAN_CAP:
                return
            self._scanned += len(line) + 1
        digit = _DIGIT.search(line) is not None
        if digit and _VERSIONISH.search(line) is not None:
            for m in _VERSION_NEAR_WORD.finditer(line):
                self._add(self.versions, m.group(1).replace(" ", ""))
            if prose:  # inside evidence, only versions next to a word like Release count
                for rx in (_LONG_VERSION, _MARKETING):
                    for m in rx.finditer(line):
                        self._add(self.versions, m.group(1))
        self._scan(line, digit, _PLATFORM_HINTS, True, True)
        if prose and digit:
            low = line.lower() if line.isascii() else None
            if low is None or any(map(low.__contains__, _PID_NEEDLES)):
                for m in _PID.finditer(line):
                    self._add(self.pids, int(m.group(1)))
            if low is None or "sid" in low:
                for m in _SID.finditer(line):
                    self._add(self.sids, int(m.group(1)))

    def feed_evidence(self, lines: list[str]) -> None:
        """`feed(line, prose=False)` for each of `lines` in order (a block's first lines that a
        run took at once), with each test asked of all of them joined first: a needle found in
        the joined text lies in one line (none holds a newline), so a needle absent there skips
        its regex for every line. Versions are read from the joined text when no match spans
        two lines (then each match is one a line alone gives, in the same order; a span across
        a newline sends every line through its own search). Why: ~17 us a line through `feed`,
        a tenth of an AWR archive's CPU (each report's first 50 lines), most of it the version
        regex and the platform needles tried line by line."""
        lines = [line[:4000] if len(line) > 4000 else line for line in lines]
        text = "\n".join(lines)
        has = text.__contains__
        if _VERSIONISH.search(text) is not None:
            found = list(_VERSION_NEAR_WORD.finditer(text))
            if any("\n" in m.group(0) for m in found):
                found = [m for line in lines for m in _VERSION_NEAR_WORD.finditer(line)]
            for m in found:
                self._add(self.versions, m.group(1).replace(" ", ""))
        hints = [hint for hint in _PLATFORM_HINTS if any(map(has, hint[2]))]
        ora = "ORA-" in text
        processes = any(map(has, _PROCESS_NEEDLES))
        if not (hints or ora or processes):
            return
        for line in lines:
            self._scan(line, None, hints, ora, processes)

    def _scan(
        self,
        line: str,
        digit: bool | None,
        hints: Sequence[tuple[str, re.Pattern[str], tuple[str, ...]]],
        ora: bool,
        processes: bool,
    ) -> None:
        """Platform hints, ORA- errors and process names of one line: `hints`, `ora`,
        `processes` say which of them may be there at all (the needle automaton, when built,
        tells that for the line itself: a needle of the line is one of the text it came in).
        `digit`: whether the line holds a digit, None if not looked for yet (ORA- errors need
        one)."""
        bits = _NEEDLES.bits(line) if _NEEDLES is not None else None
        if bits is not None:  # the needles each search needs, all found at once
            if not bits:
                return
            for k, (name, rx, _) in enumerate(_PLATFORM_HINTS):
                if bits >> k & 1:
                    self._hint(name, rx.search(line))
            ora = ora and bool(bits & _Needles.ORA)
            processes = processes and bool(bits & _Needles.PROCESS)
        else:
            has = line.__contains__  # any(map(has, needles)): no generator frame per needle
            for name, rx, needles in hints:
                if any(map(has, needles)):
                    self._hint(name, rx.search(line))
            ora = ora and "ORA-" in line
            processes = processes and any(map(has, _PROCESS_NEEDLES))
        if ora and (digit or digit is None and _DIGIT.search(line)):
            for m in _ORA.finditer(line):
                self._add(self.ora_errors, m.group(0))
        if processes:
            for m in _PROCESS.finditer(line):
                self._add(self.processes, m.group(1))

    def _hint(self, name: str, m: re.Match[str] | None) -> None:
        if m:
            self.platforms[name] += 1
            self._add(self.platform_hints, next(g for g in m.groups() if g))

    def leaning(self) -> str | None:
        """The platform the hints so far point to, if one leads."""
        top = self.platforms.most_common(2)
        if not top or (len(top) == 2 and top[0][1] == top[1][1]):
            return None
        return top[0][0]

    def build(self, block_platforms: list[str | None]) -> Context:
        platform = None
        if self.platforms:
            platform = self.platforms.most_common(1)[0][0]
        votes = Counter(p for p in block_platforms if p and p != "any")
        if votes:
            best, n = votes.most_common(1)[0]
            # evidence formats outvote a passing mention in prose
            if platform is None or n >= self.platforms.get(platform, 0):
                platform = best
        return Context(
            versions=self.versions,
            platform=platform,
            platform_hints=self.platform_hints,
            ora_errors=self.ora_errors,
            processes=self.processes,
            pids=self.pids,
            sids=self.sids,
            prose="\n".join(self._prose),
        )
