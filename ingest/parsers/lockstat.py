"""Solaris / illumos / FreeBSD `lockstat`: contention (-C, the default), hold (-H) and profiling
(-I) tables, with their section titles and optional -s stack histograms.

    Adaptive mutex spin: 2210 events in 5.055 seconds (437 events/sec)

    Count indv cuml rcnt     nsec Lock                Caller
    -------------------------------------------------------------------
      269  12%  12% 1.00     2160 service_queue       background+0xdc

Each section title says what was measured (`Adaptive mutex spin`, `Adaptive mutex block`,
`Spin lock spin`, `R/W writer blocked by readers`, `Adaptive mutex hold`, `Profiling interrupt`)
and over how long. Columns are read from the header line under it (`nsec`, `spin` or `usec`
for the time column; `Lock`, `CPU+PIL`, `Hottest` as printed), never by position. The time
column is the average per event, so Count x time is the time the lock cost: spinning burns
CPU (a smtx storm in mpstat), blocking puts threads to sleep. Memory is bounded: sums per
lock and per caller (capped), and the heaviest rows for display.
"""

from __future__ import annotations

import heapq
import re
from typing import ClassVar

from ingest.base import Parser
from ingest.model import Format, Platform
from ingest.parsers.pasted import number, unpaste

MAX_KEYS = 5000
TOP_ROWS = 40
MAX_SECTIONS = 200
MAX_LINE = 2048

_TITLE = re.compile(
    r"^\s*(?P<title>[A-Za-z][A-Za-z/ +-]{2,60}?)\s*:\s+(?P<events>[\d,]{1,15})\s+events?\s+in\s+"
    r"(?P<secs>\d{1,9}(?:[.,]\d{1,9})?)\s+seconds?\s*"
    r"(?:\(\s*(?P<rate>[\d,]{1,15}(?:\.\d+)?)\s+events?/sec\s*\))?\s*$"
)
_COMMAND = re.compile(
    r"^\s*(?:\[[^\]]{0,80}\][#$]\s*|\S*[#$%>]\s*)?(?:pfexec\s+|sudo\s+)?(?:\S*/)?lockstat(?:\s+(?:-|sleep\b).*)?\s*$"
)
_RULE = re.compile(r"^\s*-{10,}\s*$")
_ELISION = re.compile(r"^\s*(?:\[\s*\.\.\.\s*\]|\.\.\.)\s*$")
_HIST_HEADER = re.compile(r"^\s*(?:nsec|usec|spin|ns|us)\s+-+\s*Time Distribution\s*-+\s+count")
_HIST_ROW = re.compile(r"^\s*\d{1,15}\s+\|[@ ]*\|?\s*\d{1,15}(?:\s+\S+)?\s*$")
_STACK_FRAME = re.compile(r"^\s{20,}[A-Za-z_.$][\w.$`]*(?:\+0x[0-9a-fA-F]+)?\s*$")
_BARE_FRAME = re.compile(r"^\s*[A-Za-z_.$][\w.$`]*\+0x[0-9a-fA-F]+\s*$")
_OFFSET = re.compile(r"\+(?:0x[0-9a-fA-F]+|\d+)$")
_TIME_COLUMNS = {"nsec": 1e-6, "usec": 1e-3, "spin": 0.0, "time": 1e-6}


def _kind(title: str) -> str:
    t = title.lower()
    if "profil" in t:
        return "profile"
    if "hold" in t:
        return "hold"
    if "block" in t or "sleep" in t:
        return "block"
    if "spin" in t:
        return "spin"
    return "other"


def _header(line: str) -> list[str] | None:
    tokens = line.split()
    if len(tokens) < 4 or tokens[0] != "Count" or tokens[-1] != "Caller":
        return None
    lowered = [t.lower() for t in tokens]
    if "indv" not in lowered and "genr" not in lowered:  # -g prints genr
        return None
    return tokens


def _function(caller: str) -> str:
    """`background+0xdc` -> `background`; `ufs`ufs_iget+0x198` -> `ufs_iget`."""
    name = _OFFSET.sub("", caller)
    return name.rsplit("`", 1)[-1]


class _Section:
    __slots__ = ("title", "kind", "events", "seconds", "rate", "rows")

    def __init__(self, title: str, events: float, seconds: float, rate: float | None) -> None:
        self.title = title
        self.kind = _kind(title)
        self.events = events
        self.seconds = seconds
        self.rate = rate if rate is not None else (events / seconds if seconds else 0.0)
        self.rows = 0


class LockstatParser(Parser):
    format: ClassVar[Format] = "lockstat"

    def __init__(self) -> None:
        super().__init__()
        self.sections: list[_Section] = []
        self.section: _Section | None = None
        self.columns: list[str] | None = None
        self.lock_count: dict[str, float] = {}
        self.lock_ms: dict[str, float] = {}
        self.lock_share: dict[str, float] = {}
        self.caller_count: dict[str, float] = {}
        self.keys_dropped = 0
        self.top: list[tuple[float, int, dict]] = []
        self.rows = 0
        self.hist_lines = 0
        self.max_avg: tuple[float, str, str, str] | None = None  # (ms, lock, caller, section)
        self.commands: list[str] = []
        self.in_stack = False  # the last line was part of a -s stack histogram

    # -- detection ------------------------------------------------------------------------------

    @classmethod
    def start_score(cls, line: str) -> int:
        if len(line) > MAX_LINE or not ("events" in line or "Count" in line or "lockstat" in line):
            return 0
        text = unpaste(line)
        if _TITLE.match(text) or _header(text) is not None:
            return 2
        if _COMMAND.match(text):
            return 2  # nothing else runs lockstat; a command with no table after it is prose
        return 0

    # -- feeding --------------------------------------------------------------------------------

    def feed(self, line: str) -> bool:
        if len(line) > MAX_LINE:
            return False
        text = unpaste(line)
        if not text.strip():
            return bool(self.lines)
        if m := _TITLE.match(text):
            self._title(m)
            return True
        if (cols := _header(text)) is not None:
            self.columns = cols
            return True
        if _RULE.match(text) or _ELISION.match(text):
            return bool(self.lines)
        if _COMMAND.match(text) and not self.rows:
            if len(self.commands) < 5:
                self.commands.append(text.strip()[:200])
            return True
        if _HIST_HEADER.match(text) or (
            self.rows
            and (
                _HIST_ROW.match(text)
                or _STACK_FRAME.match(text)
                or (self.in_stack and _BARE_FRAME.match(text))
            )
        ):
            self.hist_lines += 1
            self.in_stack = True
            return True
        self.in_stack = False
        if self.columns is None:
            return False
        tokens = text.split()
        if not tokens or number(tokens[0]) is None:
            return False
        if not self._row(tokens):
            self.malformed += 1
        return True

    def _title(self, m: re.Match) -> None:
        events = number(m["events"]) or 0.0
        seconds = number(m["secs"]) or 0.0
        rate = number(m["rate"]) if m["rate"] else None
        section = _Section(" ".join(m["title"].split()), events, seconds, rate)
        if len(self.sections) < MAX_SECTIONS:
            self.sections.append(section)
        self.section = section
        self.columns = None

    def _row(self, tokens: list[str]) -> bool:
        cols = self.columns
        assert cols is not None
        if len(tokens) < len(cols):
            if len(tokens) < 3:
                return False
            # a missing middle column (Lock left blank): Caller is always the last
            names = cols[: len(tokens) - 1] + [cols[-1]]
        else:
            # a name with spaces (rare): everything from the last column on is the caller
            names = cols
            tokens = tokens[: len(cols) - 1] + [" ".join(tokens[len(cols) - 1 :])]
        row = {n.lower(): t for n, t in zip(names, tokens, strict=True)}
        count = number(row.get("count", ""))
        if count is None:
            return False
        caller = row.get("caller", "")
        lock = row.get("lock") or row.get("cpu+pil") or row.get("hottest") or ""
        time_col = next((n for n in ("nsec", "usec", "spin", "time") if n in row), None)
        avg = number(row[time_col]) if time_col else None
        indv = number(row.get("indv", ""))
        section = self.section
        title = section.title if section else "lockstat"
        kind = section.kind if section else "other"
        avg_ms = avg * _TIME_COLUMNS[time_col] if (avg is not None and time_col) else None
        self.rows += 1
        if section:
            section.rows += 1
        if lock and kind != "profile":
            self._add(self.lock_count, lock, count)
            if avg_ms is not None and time_col != "spin":
                self._add(self.lock_ms, lock, count * avg_ms)
                if kind == "block" and (self.max_avg is None or avg_ms > self.max_avg[0]):
                    self.max_avg = (avg_ms, lock, caller, title)
            if indv is not None and (lock in self.lock_share or len(self.lock_share) < MAX_KEYS):
                self.lock_share[lock] = max(self.lock_share.get(lock, 0.0), indv)
        if caller:
            self._add(self.caller_count, _function(caller), count)
        item = {
            "section": title,
            "kind": kind,
            "count": count,
            "pct": indv,
            "avg_ms": avg_ms,
            "lock": lock or None,
            "caller": caller,
        }
        key = (count, -self.rows, item)
        if len(self.top) < TOP_ROWS:
            heapq.heappush(self.top, key)
        elif key[:2] > self.top[0][:2]:
            heapq.heapreplace(self.top, key)
        return True

    def _add(self, table: dict[str, float], key: str, value: float) -> None:
        if key not in table and len(table) >= MAX_KEYS:
            self.keys_dropped += 1
            return
        table[key] = table.get(key, 0.0) + value

    # -- results --------------------------------------------------------------------------------

    def facts(self) -> tuple[dict, dict, list[str], Platform | None]:
        facts: dict = {}
        events: dict[str, float] = {}
        rates: dict[str, float] = {}
        by_kind: dict[str, float] = {}
        for s in self.sections:
            events[s.title] = events.get(s.title, 0.0) + s.events
            rates[s.title] = max(rates.get(s.title, 0.0), s.rate)
            by_kind[s.kind] = by_kind.get(s.kind, 0.0) + s.events
        if events:
            facts["lockstat.events"] = events
            facts["lockstat.events_per_s"] = rates
            facts["lockstat.interval_s"] = max(s.seconds for s in self.sections)
        for kind in ("spin", "block", "hold", "profile"):
            if kind in by_kind:
                facts[f"lockstat.{kind}_events"] = by_kind[kind]
        if self.lock_count:
            facts["lock.count"] = dict(self.lock_count)
        if self.lock_share:
            facts["lock.share_pct"] = dict(self.lock_share)
        if self.lock_ms:
            facts["lock.time_ms"] = {k: round(v, 6) for k, v in self.lock_ms.items()}
        if self.caller_count:
            facts["caller.count"] = dict(self.caller_count)
        ranked = [item for _, _, item in sorted(self.top, key=lambda t: (-t[0], -t[1]))]
        contention = [r for r in ranked if r["kind"] != "profile" and r["lock"]]
        if contention:
            first = contention[0]
            facts["lock.top_lock"] = first["lock"]
            facts["lock.top_caller"] = first["caller"]
            if first["pct"] is not None:
                facts["lock.top_pct"] = first["pct"]
        profile = [r for r in ranked if r["kind"] == "profile"]
        if profile:
            facts["lockstat.top_profile_caller"] = profile[0]["caller"]
        if self.max_avg is not None:
            facts["lock.max_block_ms"] = round(self.max_avg[0], 6)
        details: dict = {
            "sections": [
                {
                    "title": s.title,
                    "kind": s.kind,
                    "events": s.events,
                    "seconds": s.seconds,
                    "events_per_s": s.rate,
                    "rows": s.rows,
                }
                for s in self.sections
            ],
            "top_rows": ranked,
        }
        if self.max_avg is not None:
            ms, lock, caller, title = self.max_avg
            details["longest_block"] = {"ms": ms, "lock": lock, "caller": caller, "section": title}
        if self.commands:
            details["commands"] = self.commands
        if self.hist_lines:
            details["stack_histogram_lines"] = self.hist_lines
        if self.keys_dropped:
            details["dropped"] = {"keys": self.keys_dropped}
        identifiers: list[str] = []
        for name in sorted(self.caller_count, key=lambda k: -self.caller_count[k])[:100]:
            identifiers.append(name)
        for name in sorted(self.lock_count, key=lambda k: -self.lock_count[k])[:50]:
            if not name.startswith("0x") and name not in identifiers:
                identifiers.append(name)
        return facts, details, identifiers, "solaris"
