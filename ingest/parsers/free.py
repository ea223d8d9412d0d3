"""`free` from procps: the new layout (3.3.10+: `total used free shared buff/cache available`,
with -w `buffers cache` apart) and the old one (3.2: `buffers cached` and the
`-/+ buffers/cache:` line), in kB (default), -b, -k, -m, -g or -h (`15Gi`, `228Mi`), with -t's
`Total:` line and -s's repeated samples (the last one counts: the values are gauges).

Columns are read from the header line. The unit comes from the command line when it was pasted
(`free -m`), from the suffixes with -h, and otherwise from the size of the total (a kB count of
a server's memory is in the millions; an MB count in the thousands): the guess is said in
`details.unit`.
"""

from __future__ import annotations

import re
from typing import ClassVar

from ingest.base import Parser
from ingest.model import Format, Platform
from ingest.parsers.pasted import number, unpaste

MAX_LINE = 512
_COMMAND = re.compile(r"^\s*(?:\S*[#$%>]\s*)?(?:\S*/)?free(?P<opts>(?:\s+-{1,2}[\w=-]+)*)\s*$")
_ROW = re.compile(r"^\s*(?P<name>Mem|Swap|Total|Low|High|-/\+ buffers/cache)\s*:\s*(?P<rest>.*)$")
_HUMAN = re.compile(r"^(?P<n>\d+(?:[.,]\d+)?)(?P<u>[BKMGTP])i?$")
_HUMAN_MB = {"B": 1 / 1048576, "K": 1 / 1024, "M": 1.0, "G": 1024.0, "T": 1048576.0, "P": 1 << 30}
_OPT_MB = {"b": 1 / 1048576, "k": 1 / 1024, "m": 1.0, "g": 1024.0, "t": 1048576.0}
_OPT_MB.update({"bytes": 1 / 1048576, "kilo": 1 / 1024, "mega": 1.0, "giga": 1024.0})
_OPT_MB.update({"kibi": 1 / 1024, "mebi": 1.0, "gibi": 1024.0, "tebi": 1048576.0})
_HEADER_WORDS = {"total", "used", "free", "shared", "buffers", "cached", "cache", "buff/cache"}


def _header(text: str) -> list[str] | None:
    words = text.split()
    if len(words) >= 3 and words[0] == "total" and set(words) <= _HEADER_WORDS | {"available"}:
        return words
    return None


class FreeParser(Parser):
    format: ClassVar[Format] = "free"

    def __init__(self) -> None:
        super().__init__()
        self.columns: list[str] | None = None
        self.scale: float | None = None  # MB per printed unit, from the command line
        self.rows: dict[str, dict[str, float]] = {}
        self.old_avail: float | None = None
        self.human = False
        self.samples = 0

    @classmethod
    def start_score(cls, line: str) -> int:
        if len(line) > MAX_LINE or not ("total" in line or "free" in line):
            return 0
        text = unpaste(line)
        if _header(text) is not None:
            return 2
        if m := _COMMAND.match(text):
            return 2 if m["opts"].strip() else 1  # `free -m`: nothing else reads that line
        return 0

    def feed(self, line: str) -> bool:
        if len(line) > MAX_LINE:
            return False
        text = unpaste(line)
        if not text.strip():
            return bool(self.rows)
        if m := _COMMAND.match(text):
            if self.rows:
                return False
            self._options(m["opts"])
            return True
        if (cols := _header(text)) is not None:
            if self.rows and self.columns and "Mem" in self.rows:
                self.samples += 1  # -s: a new sample; its rows replace the last ones
            self.columns = cols
            return True
        m = _ROW.match(text)
        if m is None or self.columns is None:
            return False
        values = []
        for tok in m["rest"].split():
            h = _HUMAN.match(tok)
            if h:
                self.human = True
                values.append((number(h["n"]) or 0.0) * _HUMAN_MB[h["u"]])
                continue
            v = number(tok)
            if v is None:
                self.malformed += 1
                return True
            values.append(v if not self.human else v / 1048576)
        name = m["name"]
        if name.startswith("-/+"):
            if len(values) >= 2:
                self.old_avail = values[1]
            return True
        self.rows[name] = dict(zip(self.columns, values, strict=False))
        return True

    def _options(self, opts: str) -> None:
        for opt in opts.split():
            word = opt.lstrip("-")
            if word in _OPT_MB:
                self.scale = _OPT_MB[word]
            elif opt.startswith("-") and not opt.startswith("--"):
                for ch in word:
                    if ch in _OPT_MB:
                        self.scale = _OPT_MB[ch]
                    elif ch == "h":
                        self.human = True

    def _unit(self) -> tuple[float, str]:
        if self.human:
            return 1.0, "human (-h)"
        if self.scale is not None:
            return self.scale, "from the command line"
        total = self.rows.get("Mem", {}).get("total", 0.0)
        if total >= 4_000_000:
            return 1 / 1024, "kB (guessed from the size)"
        if total >= 4096:
            return 1.0, "MB (guessed from the size)"
        return 1024.0, "GB (guessed from the size)"

    def facts(self) -> tuple[dict, dict, list[str], Platform | None]:
        facts: dict = {}
        scale, how = self._unit()
        mem = self.rows.get("Mem", {})
        swap = self.rows.get("Swap", {})
        if "total" in mem:
            total = mem["total"] * scale
            facts["mem.total_mb"] = round(total, 1)
            avail = mem.get("available")
            if avail is not None:
                avail *= scale
            elif self.old_avail is not None:
                avail = self.old_avail * scale
            elif "free" in mem:
                avail = (mem["free"] + mem.get("buffers", 0.0) + mem.get("cached", 0.0)) * scale
            if avail is not None:
                facts["mem.available_mb"] = round(avail, 1)
                if total:
                    facts["mem.available_pct"] = round(100 * avail / total, 2)
            if "free" in mem:
                facts["mem.free_mb"] = round(mem["free"] * scale, 1)
            cache = sum(mem.get(k, 0.0) for k in ("buff/cache", "buffers", "cached", "cache"))
            if cache:
                facts["mem.cached_mb"] = round(cache * scale, 1)
        if "total" in swap:
            facts["mem.swap_total_mb"] = round(swap["total"] * scale, 1)
            if "used" in swap:
                facts["mem.swap_used_mb"] = round(swap["used"] * scale, 1)
                if swap["total"]:
                    facts["mem.swap_used_pct"] = round(100 * swap["used"] / swap["total"], 2)
        details = {
            "unit": how,
            "columns": self.columns or [],
            "rows": {k: dict(v) for k, v in self.rows.items()},
            "samples": self.samples + (1 if self.rows else 0),
        }
        return facts, details, [], "linux"
