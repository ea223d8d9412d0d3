"""The sections of an AWR or Statspack report that are not wait-event tables.

The waits parser reads a whole report (9i Statspack .. 23ai AWR, text or the text a rendered
HTML report gives): its event, enqueue and statistics tables are the tables it always read, and
this module reads the rest, so that no part of a report is mistaken for a table of events (the
header's `Begin Snap:` rows and the Load Profile's `Redo size:` rows look like `name  number`).

Sections are named by their titles (`Load Profile`, `Time Model Statistics`, `SQL ordered by
Elapsed Time`, ...), which every release prints on a line of their own; a title the parser does
not read opens a section whose lines are accepted and ignored, so an IO Profile or a Wait Event
Histogram never becomes events. Values are read by their labels (`DB Time(s):`), the header's
cells by the ruler under their names, so collapsed whitespace and any release's column set work.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache

try:  # the C core's cells of a ruled row (ingest/_syscore_src/awr.c); optional
    from ingest._syscore import awr_cells as _c_cells
except ImportError:  # pragma: no cover - the pure-Python path is the reference
    _c_cells = None
# False: `_cells` in Python (the reference the tests compare the C function with)
NATIVE = _c_cells is not None

MAX_SQL = 2000  # statements kept per report (a report lists at most a few hundred)
CACHED_KEY = 200  # characters of a label kept in a cache (headers: ten times that)
MAX_SQL_NOISE = 400  # lines of SQL text / module names in a row before a SQL section ends

# (regex, section) in the order tried; matched against the stripped line
_SECTIONS: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(p), kind)  # titles are printed in one case: 'cell single block ...' is a row
    for p, kind in (
        (r"^WORKLOAD REPOSITORY (?:PDB |CDB )?report\b", "header"),
        (r"^STATSPACK (?:Statistics )?report for\b", "header"),
        (r"^(?:DB Name|Database)\s+DB Id\b", "header"),
        (r"^Host\s*Name\s+Platform\b", "header"),
        (r"^(?:Snapshot\s+)?Snap Id\s+Snap Time\b", "header"),
        (r"^Instance\s+Inst Num\b", "header"),
        (r"^Container DB Id\b", "header"),
        (r"^Load Profile\b", "load"),
        (r"^Instance Efficiency (?:Percentages|Indicators)\b", "efficiency"),
        (r"^Time Model (?:Statistics|System Stats)\b", "timemodel"),
        (
            r"^(?:(?:Foreground|Background)\s+)?Wait Class(?:es by Total Wait Time)?"
            r"(?:\s+(?:DB/Inst:|Snaps:).*)?$",
            "wait_class",
        ),
        (r"^SQL ordered by\b", "sql"),
        (r"^Latch (?:Activity|Sleep [Bb]reakdown)\b", "latch"),
        (r"^Segments by\b", "segments"),
        (r"^(?:Key |Other )?Instance Activity Stats(?! - )", "tables"),
        (
            r"^(?:Cache Sizes|Shared Pool Statistics|Host CPU|Instance CPU|IO Profile"
            r"|Memory Statistics|Operating System Statistics|OS Statistics|Wait Event Histogram"
            r"|Wait Events? Histogram|Service Statistics|Service Wait Class"
            r"|Latch (?:Activity|Sleep|Miss|Statistics)|Buffer Pool|Buffer Wait|Buffer Cache"
            r"|Undo Segment|Undo Stat|Tablespace IO|File IO|IOStat|Dictionary Cache"
            r"|Library Cache|PGA |PGA$|SGA |SGA$|init\.ora|Resource Limit|Process Memory"
            r"|Top SQL with|Top Blocking|Top Sessions|Report Summary|Main Report"
            r"|Global Cache|Global Enqueue|Interconnect|Streams|Ping Statistics"
            r"|Dynamic Remastering|Checkpoint Activity|Instance Recovery|MTTR Advisory"
            r"|Advisory Statistics|Mutex Sleep|Parent Latch|Child Latch|Rollback Segment"
            r"|Shared Servers|Persistent Queues|Replication|Wait Statistics|In-Memory"
            r"|Instance Activity Stats - "
            r"|Database Summary|Top ADDM|ADDM |Top Timed Background|Top Event P1"
            r"|Top SQL Command|Top PL/SQL|Top Java|Top Call Types|Top Phases|Top DB Objects"
            r"|Top DB Files|Top Latches|Activity Over Time|Top Service|Top Client"
            r"|Complete List of SQL|SQL Statistics|IO Stat|Modules|End of Report"
            r"|Back to |Exadata |Cell |Flash Cache|Resource Manager|RM Stats|Data Guard)",
            "skip",
        ),
    )
)
_SECTION_INITIALS = frozenset("WSDHILTFBCROPMEAKGNUVQXi")


def section_of(line: str) -> str | None:
    """The section a title line opens, or None when the line is no known title."""
    s = line.strip()
    if not s or s[0] not in _SECTION_INITIALS or len(s) > 200:
        return None
    m = _SECTION_ONE.match(s)
    return None if m is None else _SECTION_KIND[m.lastgroup or ""]


# _SECTIONS as one regex: an alternation is tried left to right at the line's start, so it
# answers what trying each title in order answers (the first that matches), in one call instead
# of up to 17; the waits parser asks this of every line of a report
_SECTION_ONE = re.compile(
    "|".join(f"(?P<s{i}>{rx.pattern.removeprefix('^')})" for i, (rx, _) in enumerate(_SECTIONS))
)
_SECTION_KIND = {f"s{i}": kind for i, (_, kind) in enumerate(_SECTIONS)}


RE_SNAP = re.compile(
    r"^\s*(Begin|End)\s+Snap:\s+(\d+)\s+(\d{1,2}-\w{3}-\d{2,4}\s+\d{1,2}:\d{2}(?::\d{2})?)"
    r"(?:\s+([\d.,]+))?(?:\s+([\d.,]+))?",
    re.I,
)
RE_MINUTES = re.compile(
    r"\b(Elapsed|DB\s+time|DB\s+CPU):\s+([\d.,]+)\s*\((mins?|secs?|hrs?|hours?|minutes?)\)", re.I
)
RE_AAS = re.compile(r"Av(?:g)?\s+Act(?:ive)?\s+Sess(?:ions)?:\s+([\d.,]+)", re.I)
RE_RULER = re.compile(r"^[\s~]*-[-\s~]*$")
RE_KV_NUMS = re.compile(r"^\s*(?P<label>[^:]*[A-Za-z%)][^:]*?)\s*:\s+(?P<nums>[-\d.,KMGT\s]+)$")
RE_PAIR = re.compile(r"([%A-Za-z][^:]*?)\s*:\s*(-?[\d][\d.,]*|-?\.\d+)(?=\s|$)")
RE_WORD = re.compile(r"\S+")
RE_SQL_ID = re.compile(r"^[0-9a-z]{13}$")
RE_HASH = re.compile(r"^\d{5,10}$")
RE_NUM = re.compile(r"^-?(?:\d{1,3}(?:,\d{3})+|\d+)?(?:[.,]\d+)?[KMGT]?$")
_SCALE = {"K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12}
_UNIT_S = {"sec": 1.0, "secs": 1.0, "min": 60.0, "mins": 60.0, "minute": 60.0, "minutes": 60.0}
_UNIT_S |= {"hr": 3600.0, "hrs": 3600.0, "hour": 3600.0, "hours": 3600.0}

_HEADER_KEYS = {
    "db name": "db_name",
    "database": "db_name",
    "db id": "db_id",
    "instance": "instance",
    "inst num": "inst_num",
    "startup time": "startup_time",
    "release": "release",
    "rac": "rac",
    "cluster": "rac",
    "host": "host",
    "host name": "host",
    "platform": "platform",
    "cpus": "cpus",
    "cores": "cores",
    "sockets": "sockets",
    "memory(gb)": "memory_gb",
    "memory (gb)": "memory_gb",
    "memory (g)": "memory_gb",
    "edition": "edition",
    "container name": "container",
    "db role": "db_role",
}
_HEADER_NUMBERS = frozenset({"cpus", "cores", "sockets", "memory_gb", "inst_num"})
_LOAD_ALIASES = {
    "logical reads": "logical read",
    "physical reads": "physical read",
    "physical writes": "physical write",
    "redo size": "redo size",
    "w/a mb processed": "sql work area",
}


def to_float(token: str) -> float | None:
    """'1,234.5' -> 1234.5; '45,6' (a decimal comma) -> 45.6; '1.234,5' -> 1234.5; '12.5K'."""
    t = token.strip().rstrip("%")
    # RE_NUM lets through digits and '-,.KMGT' only, so a digit is what stripping those leaves
    if not t or not RE_NUM.match(t) or not t.strip("-,.KMGT"):
        return None
    scale = 1.0
    if t[-1] in _SCALE:
        scale = _SCALE[t[-1]]
        t = t[:-1]
    if "," in t and "." in t and t.rfind(",") > t.rfind("."):
        t = t.replace(".", "").replace(",", ".")  # 1.234,5
    elif "," in t and re.fullmatch(r"-?\d+,\d{1,2}|-?\d+,\d{4,}|-?,\d+", t):
        t = t.replace(",", ".")  # a decimal comma: 45,6 (three digits after it read as thousands)
    else:
        t = t.replace(",", "")
    try:
        return float(t) * scale
    except ValueError:
        return None


def norm_key(label: str) -> str:
    """'  Logical read (blocks):' -> 'logical read'; 'DB Time(s):' -> 'db time'."""
    # the same labels in every report: one key string for them all (a cache of short labels
    # only, so hostile 64 KB lines cannot fill it with megabytes)
    return _norm_key_cached(label) if len(label) <= CACHED_KEY else _norm_key(label)


def _norm_key(label: str) -> str:
    low = re.sub(r"\([^)]*\)", " ", label.lower())
    low = " ".join(low.replace(":", " ").replace("%", " ").split())
    return _LOAD_ALIASES.get(low, low)


_norm_key_cached = lru_cache(maxsize=4096)(_norm_key)


def _cells(line: str, spans: list[tuple[int, int]]) -> list[str]:
    """Split a row into the cells of the ruler's columns: each token goes to the column whose
    span holds its end (values are left- or right-aligned in their column). The C core's
    `awr_cells` answers for a line of printable ASCII (`_py_cells` is the reference)."""
    if _c_cells is not None and NATIVE:
        got = _c_cells(line, spans)
        if got is not None:
            return got
    return _py_cells(line, spans)


def _py_cells(line: str, spans: list[tuple[int, int]]) -> list[str]:
    out = [""] * len(spans)
    for m in RE_WORD.finditer(line):
        a, b = m.span()
        # the first span holding the token, else the first whose end is nearest (what `min`
        # over (outside, distance) gives; a plain loop, as this runs for every cell of a row)
        best, key = 0, (2, 0)
        for i, (lo, hi) in enumerate(spans):
            k = (0 if lo <= b - 1 < hi + 1 or lo <= a < hi else 1, abs(hi - b))
            if k < key:
                best, key = i, k
        out[best] = f"{out[best]} {m.group()}".strip()
    return out


def _spans(ruler: str) -> list[tuple[int, int]]:
    return [(m.start(), m.end()) for m in re.finditer(r"[-~]+", ruler)]


def _labels(header: list[str], spans: list[tuple[int, int]]) -> list[str]:
    """The words of each column's header lines (cached: every report prints the same few)."""
    key = tuple(header)
    if sum(map(len, key)) > CACHED_KEY * 10:
        return list(_labels_of.__wrapped__(key, tuple(spans)))
    return list(_labels_of(key, tuple(spans)))


@lru_cache(maxsize=512)
def _labels_of(header: tuple[str, ...], spans: tuple[tuple[int, int], ...]) -> tuple[str, ...]:
    words: list[list[str]] = [[] for _ in spans]
    for line in header:
        for m in re.finditer(r"\S+", line):
            centre = (m.start() + m.end()) / 2
            best = min(
                range(len(spans)),
                key=lambda i: (
                    0 if spans[i][0] <= centre <= spans[i][1] else 1,
                    min(abs(centre - spans[i][0]), abs(centre - spans[i][1])),
                ),
            )
            words[best].append(m.group())
    return tuple(" ".join(w) for w in words)


def _sql_column(label: str) -> str | None:
    low = " ".join(label.lower().split())
    if not low:
        return None
    if "sql id" in low or low == "sql_id":
        return "id"
    if "hash value" in low or low in ("hash", "old hash value"):
        return "hash"
    if "per exec" in low or "elap per" in low:
        if "elap" in low or low in ("per exec (s)", "per exec", "exec (s)"):
            return "elapsed_per_exec_s"
        return None
    if "%" in low or "pct" in low:
        return "pct_total" if "total" in low else None
    if "version" in low:  # SQL ordered by Version Count
        return "version_count"
    if "elapsed" in low:
        return "elapsed_s"
    if "cpu" in low:
        return "cpu_s"
    if "execution" in low:
        return "executions"
    if "buffer gets" in low or low == "gets":
        return "gets"
    if "physical reads" in low or low == "reads":
        return "reads"
    if "parse calls" in low:
        return "parse_calls"
    return None


@lru_cache(maxsize=256)
def _sql_columns(labels: tuple[str, ...]) -> tuple[str | None, ...]:
    """The SQL columns of a table's labels: asked for every row, the same few tables a report."""
    return tuple(_sql_column(lbl) for lbl in labels)


@dataclass
class ReportReader:
    """Header, Load Profile, Instance Efficiency and SQL sections of one report."""

    kind: str | None = None  # awr | statspack
    header: dict[str, str | float] = field(default_factory=dict)
    load: dict[str, dict[str, float]] = field(default_factory=dict)  # column -> key -> value
    efficiency: dict[str, float] = field(default_factory=dict)
    ratios: dict[str, float] = field(default_factory=dict)
    sql: dict[str, dict[str, float | str]] = field(default_factory=dict)
    sql_sections: list[str] = field(default_factory=list)
    _hdr_lines: list[str] = field(default_factory=list)
    _spans: list[tuple[int, int]] | None = None
    _labels: list[str] = field(default_factory=list)
    _load_cols: list[str] = field(default_factory=list)
    _sql_title: str = ""
    _sql_noise: int = 0
    latches: dict[str, dict[str, float]] = field(default_factory=dict)
    segments: dict[str, float] = field(default_factory=dict)  # 'metric: OWNER.OBJECT' -> % total
    _pending: str = ""  # a latch name on its own line (Latch Sleep Breakdown, 11g+)
    _metric: str = ""

    def title(self, line: str, section: str) -> None:
        """A section title: reset the section's reading state."""
        s = line.strip()
        low = s.lower()
        if section == "header":
            if low.startswith("workload repository"):
                self.kind = "awr"
            elif low.startswith("statspack"):
                self.kind = "statspack"
        self._spans = None
        self._labels = []
        self._hdr_lines = [line] if section in ("header", "load", "sql") else []
        if section == "load":
            self._load_cols = self._load_columns(line)
        if section in ("latch", "segments"):
            self._hdr_lines = []
            self._pending = ""
            self._metric = " ".join(s.split("DB/Inst:")[0].split()[2:])[:40] or "segments"
        if section == "sql":
            self._sql_title = " ".join(s.split()[:6])
            self._hdr_lines = []
            self._sql_noise = 0
            if self._sql_title not in self.sql_sections and len(self.sql_sections) < 30:
                self.sql_sections.append(self._sql_title)

    @staticmethod
    def _load_columns(line: str) -> list[str]:
        low = line.lower()
        found = [
            (low.find(word), name)
            for word, name in (
                ("per second", "per_s"),
                ("per transaction", "per_txn"),
                ("per trans", "per_txn"),
                ("per exec", "per_exec"),
                ("per call", "per_call"),
            )
            if word in low
        ]
        cols = [name for _, name in sorted(found)]
        return list(dict.fromkeys(cols))

    # -- lines ----------------------------------------------------------------------------------

    def snapshot_line(self, line: str) -> bool:
        """`Begin Snap:` / `End Snap:` / `Elapsed:` / `DB Time:` lines, in any section."""
        if ":" not in line:
            return False  # each of the three regexes reads a label ending in ':'
        m = RE_SNAP.match(line)
        if m:
            which = m.group(1).lower()
            self.header[f"{which}_snap"] = float(m.group(2))
            self.header[f"{which}_time"] = " ".join(m.group(3).split())
            if m.group(4):
                v = to_float(m.group(4))
                if v is not None:
                    self.header[f"sessions_{which}"] = v
            return True
        hit = False
        for m2 in RE_MINUTES.finditer(line):
            v = to_float(m2.group(2))
            if v is None:
                continue
            unit = _UNIT_S.get(m2.group(3).lower(), 60.0)
            name = m2.group(1).lower().replace(" ", "_").replace("\t", "_")
            name = re.sub(r"_+", "_", name)
            self.header[f"{name}_s"] = v * unit
            hit = True
        m3 = RE_AAS.search(line)
        if m3:
            v = to_float(m3.group(1))
            if v is not None:
                self.header["aas"] = v
                hit = True
        return hit

    def feed(self, line: str, section: str) -> bool:
        """One line of a non-table section; True when it belongs to it."""
        if self.snapshot_line(line):
            return True
        if section == "header":
            return self._header_line(line)
        if section == "load":
            return self._load_line(line)
        if section == "efficiency":
            return self._efficiency_line(line)
        if section == "sql":
            return self._sql_line(line)
        if section in ("latch", "segments"):
            return self._ruled_line(line, section)
        return True  # a section read for its title only

    def _header_line(self, line: str) -> bool:
        if RE_RULER.match(line) and len(_spans(line)) >= 2:
            self._spans = _spans(line)
            self._labels = _labels(self._hdr_lines[-2:], self._spans)
            return True
        if self._spans is None:
            self._hdr_lines = (self._hdr_lines + [line])[-3:]
            return True
        cells = _cells(line, self._spans)
        for label, cell in zip(self._labels, cells, strict=True):
            key = _HEADER_KEYS.get(" ".join(label.lower().split()))
            if key is None or not cell:
                continue
            if key in _HEADER_NUMBERS:
                v = to_float(cell)
                if v is not None:
                    self.header[key] = v
            else:
                self.header[key] = cell[:80]
        self._spans = None
        self._hdr_lines = []
        return True

    def _load_line(self, line: str) -> bool:
        if not self._load_cols and "per" in line.lower():
            self._load_cols = self._load_columns(line)
            return True
        m = RE_KV_NUMS.match(line)
        if m:
            values = [to_float(t) for t in m.group("nums").split()]
            if values and all(v is not None for v in values):
                self.load_row(m.group("label"), values)  # type: ignore[arg-type]
                return True
        pairs = RE_PAIR.findall(line)
        for label, value in pairs:
            v = to_float(value)
            if v is not None:
                self.ratios[norm_key(label)] = v
        return True

    def load_row(self, label: str, values: list[float] | tuple[float, ...]) -> None:
        """A Load Profile row `label:  values` (what `_load_line` and the C core's
        `awr_lines` read), its values under the section's columns."""
        key = norm_key(label)
        if not key:
            return
        cols = self._load_cols or ["per_s", "per_txn", "per_exec", "per_call"]
        for col, v in zip(cols, values, strict=False):
            self.load.setdefault(col, {})[key] = v

    def _efficiency_line(self, line: str) -> bool:
        for label, value in RE_PAIR.findall(line):
            v = to_float(value)
            key = norm_key(label)
            if v is not None and key:
                self.efficiency[key] = v
        return True

    def _sql_line(self, line: str) -> bool:
        if RE_RULER.match(line) and len(_spans(line)) >= 2:
            self._spans = _spans(line)
            self._labels = _labels(self._hdr_lines[-3:], self._spans)
            self._hdr_lines = []
            return True
        if self._spans is None:
            if line.strip() and not line.lstrip().startswith("->"):
                self._hdr_lines = (self._hdr_lines + [line])[-3:]
            return True
        cols = self._sql_cols()
        if "id" not in cols and "hash" not in cols:
            return True
        toks = line.split()
        if len(toks) < 2:
            return self._sql_text()
        cells = _cells(line, self._spans) if "  " in line.strip() else None
        row: dict[str, float | str] = {}
        if cells is not None:
            for col, cell in zip(cols, cells, strict=True):
                if col is None or not cell:
                    continue
                if col in ("id", "hash"):
                    first = cell.split()[0]
                    if RE_SQL_ID.match(first) or RE_HASH.match(first):
                        row[col] = first
                    continue
                v = to_float(cell.split()[-1])
                if v is not None:
                    row[col] = v
        else:  # collapsed: numbers in the order of the numeric columns, then the id
            numeric = [c for c in cols if c not in ("id", "hash")]
            ident = next((t for t in toks if RE_SQL_ID.match(t)), None)
            nums = []
            for t in toks:
                if t == ident:
                    break
                nums.append(to_float(t))
            if ident and all(v is not None for v in nums):
                row["id"] = ident
                for col, v in zip(numeric, nums, strict=False):
                    if col is not None and v is not None:
                        row[col] = v
        key = row.get("id") or row.get("hash")
        if not isinstance(key, str) or len(row) < 2:
            return self._sql_text()
        self._sql_noise = 0
        if key not in self.sql and len(self.sql) >= MAX_SQL:
            return True
        entry = self.sql.setdefault(key, {})
        for k, v in row.items():
            if k not in ("id", "hash"):
                entry.setdefault(k, v)
        return True

    def _sql_cols(self) -> tuple[str | None, ...]:
        labels = tuple(self._labels)
        if sum(map(len, labels)) > CACHED_KEY * 10:
            return _sql_columns.__wrapped__(labels)
        return _sql_columns(labels)

    def sql_keyed(self) -> bool:
        """Does `_sql_line` read rows now (a ruler seen, a SQL Id or hash column under it)? Then
        a line with no SQL Id in it is SQL text: noise (`sql_noise`)."""
        if self._spans is None:
            return False
        cols = self._sql_cols()
        return "id" in cols or "hash" in cols

    def sql_noise(self) -> bool:
        """A line of SQL text taken when `_sql_line` would take it (the C core's `awr_lines`):
        False, nothing changed, when it would end the section instead."""
        if self._sql_noise >= MAX_SQL_NOISE:
            return False
        self._sql_noise += 1
        return True

    def _ruled_line(self, line: str, section: str) -> bool:
        """A row of Latch Activity / Latch Sleep Breakdown / Segments by ...: cells by the ruler."""
        if RE_RULER.match(line) and len(_spans(line)) >= 1:
            spans = _spans(line)
            if self._spans is not None and len(spans) > 1 and self._pending == "":
                # a second ruler: the 11g sleep breakdown prints the name, then the numbers
                self._spans, self._labels = spans, _labels(self._hdr_lines[-2:], spans)
            elif self._spans is None or len(spans) > 1:
                self._spans, self._labels = spans, _labels(self._hdr_lines[-3:], spans)
            self._hdr_lines = []
            return True
        if self._spans is None or len(self._spans) < 2:
            if line.strip() and not line.lstrip().startswith("->"):
                self._hdr_lines = (self._hdr_lines + [line])[-3:]
            return True
        if not any(c.isdigit() for c in line):
            if section == "latch" and line.strip():
                self._pending = " ".join(line.split())[:80]
            return True
        cells = _cells(line, self._spans)
        labels = [" ".join(lbl.lower().split()) for lbl in self._labels]
        if section == "latch":
            name = self._pending
            values: dict[str, float] = {}
            for label, cell in zip(labels, cells, strict=True):
                if "latch name" in label or label == "name":
                    name = name or cell
                    continue
                v = to_float(cell.split()[-1]) if cell else None
                if v is None or "nowait" in label:
                    continue
                if "get requests" in label or label == "gets":
                    values["gets"] = v
                elif label == "misses":
                    values["misses"] = v
                elif label == "sleeps":
                    values["sleeps"] = v
                elif "wait time" in label:
                    values["wait_s"] = v
            self._pending = ""
            if name and values and (name in self.latches or len(self.latches) < MAX_SQL):
                self.latches.setdefault(name, {}).update(values)
            return True
        owner = obj = ""
        pct = None
        for label, cell in zip(labels, cells, strict=True):
            if label == "owner":
                owner = cell
            elif label in ("object name", "object"):
                obj = cell
            elif "%total" in label.replace(" ", "") and cell:
                pct = to_float(cell)
        if owner and obj and pct is not None and len(self.segments) < MAX_SQL:
            self.segments[f"{self._metric}: {owner}.{obj}"] = pct
        return True

    def _sql_text(self) -> bool:
        self._sql_noise += 1
        return self._sql_noise <= MAX_SQL_NOISE

    # -- results --------------------------------------------------------------------------------

    def db_time_s(self, time_model: dict[str, float]) -> float | None:
        v = self.header.get("db_time_s")
        if isinstance(v, float) and v > 0:
            return v
        tm = time_model.get("DB time") or time_model.get("DB Time")
        if tm:
            return tm
        per_s = self.load.get("per_s", {}).get("db time")
        el = self.header.get("elapsed_s")
        if per_s is not None and isinstance(el, float):
            return per_s * el
        return None

    def facts(self, time_model: dict[str, float]) -> tuple[dict, dict]:
        facts: dict = {}
        details: dict = {}
        if self.kind:
            facts["report.kind"] = self.kind
        for key, value in self.header.items():
            facts[f"report.{key}"] = value
        db_time = self.db_time_s(time_model)
        if db_time is not None:
            facts["report.db_time_s"] = db_time
        cpu = self.header.get("db_cpu_s")
        if not isinstance(cpu, float):
            cpu = time_model.get("DB CPU")
        if isinstance(cpu, float):
            facts["report.db_cpu_s"] = cpu
        el = self.header.get("elapsed_s")
        if isinstance(el, float) and el > 0 and db_time is not None and "aas" not in self.header:
            facts["report.aas"] = round(db_time / el, 3)
        for col, table in self.load.items():
            if table:
                facts[f"load.{col}"] = dict(table)
        if self.efficiency:
            facts["efficiency.pct"] = dict(self.efficiency)
        if self.ratios:
            details["load_ratios"] = dict(self.ratios)
        if self.sql:
            for name in ("elapsed_s", "cpu_s", "executions", "elapsed_per_exec_s", "gets"):
                table = {k: v[name] for k, v in self.sql.items() if isinstance(v.get(name), float)}
                if table:
                    facts[f"sql.{name}"] = table
            for name in ("reads", "parse_calls", "version_count"):
                table = {k: v[name] for k, v in self.sql.items() if isinstance(v.get(name), float)}
                if table:
                    facts[f"sql.{name}"] = table
            versions = facts.get("sql.version_count")
            if versions:
                facts["sql.max_version_count"] = max(versions.values())
            details["sql"] = [{"sql": k, **v} for k, v in list(self.sql.items())[:100]]
            details["sql_sections"] = list(self.sql_sections)
        for name in ("gets", "misses", "sleeps", "wait_s"):
            table = {k: v[name] for k, v in self.latches.items() if name in v}
            if table:
                facts[f"latch.{name}"] = table
        if self.segments:
            facts["segment.pct_of_total"] = dict(self.segments)
        if self.header:
            details["report"] = {"kind": self.kind, **self.header}
        return facts, details
