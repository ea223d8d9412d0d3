"""Linux `perf` as people paste it: `perf report --stdio` (and `perf top` screens), folded stacks
(`stackcollapse-perf.pl` / `perf script report flamegraph` output, the input of flame graphs)
and `perf stat` counters.

perf report: the `# Samples: 28K of event 'cycles'` and `# Event count` header, then a column
header (`# Overhead  Samples  Command  Shared Object  Symbol`, or `# Children  Self ...` with
--children, or any --sort order) read by name. Rows are split by meaning, not by position: the
percentages and counts the header announces come first, the `[.]` / `[k]` marker starts the
symbol (which may hold spaces), and what lies between is the command and the shared object
(a command with a space in it gives its extra words to the command). Call-graph lines (`|`,
`---`, `--12.5%--`) are taken and counted, not read. Only the first event's table feeds the
shares, so two events never add up to more than 100 %.

Folded stacks (`outer;inner;leaf 123`) feed the same FunctionStats as stack and DTrace, so the
frame.*, layer.* and stack.* facts mean the same thing here; perf report symbols with a Samples
column count as frames seen that often. Oracle functions get their layer from
ingest/oracle_layers.py through FunctionStats and `layer_of`.

`perf script` (a sample header line and its call chain) is a stack format and stays with the
stack parser: one home for call stacks.
"""

from __future__ import annotations

import heapq
import re
from typing import ClassVar

from ingest.base import Parser
from ingest.model import Format, Platform
from ingest.oracle_layers import layer_of
from ingest.parsers.functions import MAX_FRAMES, Frame, FunctionStats
from ingest.parsers.pasted import number, scaled, unpaste

MAX_KEYS = 5000
MAX_LINE = 8192
TOP_ROWS = 50
MAX_EVENTS = 20

_MARKER = re.compile(r"(?:^|\s)\[(?P<m>[.kgjuHi])\]\s+(?P<symbol>\S.*?)\s*$")
_SAMPLES = re.compile(
    r"^#?\s*Samples:?\s+(?P<n>\d[\d,.]*[KMG]?)\s+of\s+event\s+'?(?P<event>[^',]+)'?"
    r"(?:.*?Event count \(approx\.\):\s*(?P<count>\d[\d,]*))?"
)
# perf 2.6.32 to 3.x: '# Events: 10K cycles'
_EVENTS_OLD = re.compile(r"^#\s*Events:\s+(?P<n>\d[\d,.]*[KMG]?)\s+(?P<event>\S+)\s*$")
# perf top's screen: '   PerfTop:  1234 irqs/sec  kernel:55.0%  exact: 0.0% [4000Hz cycles],  (all, 8 CPUs)'
_PERFTOP = re.compile(
    r"^\s*PerfTop:\s+(?P<rate>\d[\d,.]*)\s+irqs/sec\s+kernel:\s*(?P<kernel>\d+(?:[.,]\d+)?)%"
    r"(?:.*?\[(?:\d+\s*Hz\s+)?(?P<event>[^\],]+)\])?"
)
_EVENT_COUNT = re.compile(r"^#?\s*Event count \(approx\.\):\s*(?P<n>\d[\d,]*)\s*$")
_META = re.compile(r"^#\s*(?:[a-z][\w ]{1,30}\s*:|=+\s*$|\s*$|[A-Z_]{4,}\b|Total Lost|Captured)")
# every line any start below scores holds one of these (checked first: most lines hold none)
_PERF_HINT = re.compile(
    r"%|;|Samples|Events:|PerfTop|Event count|Overhead|Children|Period|Performance counter|elapsed|<not |"
    r"counts|perf|captured on|nrcpus|cmdline|total memory|cpudesc"
)
# perf report's header (perf record's session info), printed only by perf
_PERF_HEADER = re.compile(
    r"^#\s*(?:captured on|perf version|nrcpus online|nrcpus avail|cmdline|total memory|cpudesc)\s*:"
)
_HEX = re.compile(r"^0x[0-9a-fA-F]+$")
_PCT = re.compile(r"^-?\d{1,3}(?:[.,]\d+)?%$")
_CALLGRAPH = re.compile(r"^\s*(?:[|`-]|--\d|\d+(?:[.,]\d+)?%\s*$|\S.*--\d+(?:\.\d+)?%--)")
_INDENTED = re.compile(r"^\s{4,}\S+\s*$")
# a frame of a call graph whose indentation the paste collapsed: one symbol, maybe (inlined)
_GRAPH_FRAME = re.compile(r"^\s*[A-Za-z_.$][\w.$:@<>~-]*(?:\s\(inlined\))?\s*$")
_FOLDED_ONE = re.compile(r"^(?P<stack>[A-Za-z_$.][\w$.:<>~@-]*)\s+(?P<n>\d{1,15})\s*$")
_STAT_TITLE = re.compile(r"^\s*Performance counter stats for\b")
_STAT_ELAPSED = re.compile(r"^\s*(?P<s>\d+(?:[.,]\d+)?)\s+seconds\s+time\s+elapsed\b")
_STAT_USERSYS = re.compile(r"^\s*(?P<s>\d+(?:[.,]\d+)?)\s+seconds\s+(?P<what>user|sys)\s*$")
_STAT_ROW = re.compile(
    r"^\s*(?:(?P<ts>\d+\.\d+)\s+)?(?:(?P<cpu>CPU\d+|S\d+-D\d+-C\d+|N\d+)\s+(?:\d+\s+)?)?"
    r"(?P<value><not (?:supported|counted)>|\d[\d,.]*)\s+(?:(?P<unit>msec|usec|nsec|ms|us|ns|"
    r"Joules|MiB|GB/s|MB/s|W)\s+)?(?P<event>[A-Za-z][\w\-:/.=,@]*(?:\s\((?:msec|usec)\))?)"
    r"(?:\s+#\s*(?P<note>.*?))?(?:\s+\((?P<mux>\d+(?:\.\d+)?)%\))?\s*$"
)
_STAT_INTERVAL_HEADER = re.compile(
    r"^#\s+time\s+(?:CPU\s+|core\s+|socket\s+)?counts\s+unit\s+events\s*$"
)
# perf stat -x, : value,unit,event,run time,run %[,metric value,metric unit]
_STAT_CSV = re.compile(
    r"^(?:(?P<ts>\d+\.\d+),)?(?P<value>\d+(?:\.\d+)?|<not (?:supported|counted)>),(?P<unit>[^,]{0,10}),"
    r"(?P<event>[A-Za-z][\w\-:/.=@]{0,80}),[^,]*,[^,]*(?:,(?P<metric>[^,]*),(?P<mname>[^,]*))?\s*$"
)
_IPC_NOTE = re.compile(r"(?P<v>\d+(?:[.,]\d+)?)\s+insn\s+per\s+cycle")
_CPUS_NOTE = re.compile(r"(?P<v>\d+(?:[.,]\d+)?)\s+CPUs\s+utilized")
_STAT_HINT = re.compile(r"CPUs utilized|insn per cycle|[KMG]/sec|GHz|of all |stalled cycles")
_COMMAND = re.compile(
    r"^\s*(?:\[[^\]]{0,80}\][#$]\s*|\S*[#$%>]\s*)?(?:sudo\s+)?(?:\S*/)?perf\s+(?P<sub>report|top|stat|script|record)\b"
)

# report column names (after the '#'), longest first so 'Shared Object' beats a word
_COLUMNS = (
    "Shared Object",
    "Source:Line",
    "guest sys",
    "guest usr",
    "Children",
    "Overhead",
    "Samples",
    "Command",
    "Period",
    "Symbol",
    "Self",
    "Pid",
    "Tid",
    "CPU",
    "sys",
    "usr",
)
_NUMERIC = {
    "Children",
    "Overhead",
    "Self",
    "Samples",
    "Period",
    "sys",
    "usr",
    "guest sys",
    "guest usr",
}


def _report_header(line: str) -> list[str] | None:
    """`# Overhead  Samples  Command  Shared Object  Symbol` -> column names, or None."""
    text = line.strip()
    if text.startswith("#"):
        text = text[1:]
    words = text.split()
    if not words or words[0] not in ("Overhead", "Children", "Samples", "Period"):
        return None
    names: list[str] = []
    i = 0
    while i < len(words):
        two = " ".join(words[i : i + 2])
        if two in _COLUMNS:
            names.append(two)
            i += 2
        elif words[i] in _COLUMNS:
            names.append(words[i])
            i += 1
        else:
            names.append(words[i])  # a sort key we do not know (e.g. 'Trace output'): kept
            i += 1
    return names if len(names) >= 2 else None


def _is_kernel(dso: str, marker: str | None) -> bool:
    if marker is not None:
        return marker in "kg" and marker != "."
    d = dso.lower()
    return d.startswith(("[kernel", "[vmlinux", "vmlinux", "[guest.kernel")) or d.endswith(".ko")


class _Report:
    """The first event's table: shares by symbol, DSO, command and kernel/user."""

    def __init__(self) -> None:
        self.self_pct: dict[str, float] = {}
        self.children_pct: dict[str, float] = {}
        self.dso: dict[str, float] = {}
        self.comm: dict[str, float] = {}
        self.layer: dict[str, float] = {}
        self.kernel = 0.0
        self.user = 0.0
        self.rows = 0
        self.samples = 0.0
        self.top: list[tuple[float, int, dict]] = []
        self.dropped = 0


def _add(table: dict[str, float], key: str, value: float) -> bool:
    if key not in table and len(table) >= MAX_KEYS:
        return False
    table[key] = table.get(key, 0.0) + value
    return True


class PerfParser(Parser):
    format: ClassVar[Format] = "perf"

    def __init__(self) -> None:
        super().__init__()
        self.columns: list[str] | None = None
        self.events: list[dict] = []  # {"event", "samples", "event_count"}
        self.report = _Report()
        self.reading_first = True  # rows belong to the first event's table
        self.callgraph_lines = 0
        self.meta: list[str] = []
        self.stats = FunctionStats()
        self.folded = 0
        self.folded_samples = 0.0
        self.folded_kernel = 0.0
        self.counters: dict[str, float] = {}
        self.counter_units: dict[str, str] = {}
        self.unsupported = 0
        self.ipc: float | None = None
        self.cpus: float | None = None
        self.elapsed: float | None = None
        self.user_sys: dict[str, float] = {}
        self.stat_title: str | None = None
        self.kinds: set[str] = set()
        self.in_graph = False  # the last line taken was part of a call graph
        self.quoted = False  # every line of the paste has a '# ' before it

    # -- detection ------------------------------------------------------------------------------

    @classmethod
    def start_score(cls, line: str) -> int:
        if len(line) > MAX_LINE or not _PERF_HINT.search(line):
            return 0
        text = unpaste(line, marks=False)
        score = cls._score(text)
        if not score and text[:2] in ("# ", "#\t"):
            score = cls._score(text[2:])
        return score

    @classmethod
    def _score(cls, text: str) -> int:
        if ";" in text and text.rstrip()[-1:].isdigit() and (folded := _split_folded(text)):
            frames = folded[0].split(";")
            if all(f and " " not in f for f in frames):
                return 2 if len(frames) >= 3 else 1
        if _SAMPLES.match(text) or _EVENT_COUNT.match(text) or _report_header(text):
            return 2
        if _EVENTS_OLD.match(text) or _PERFTOP.match(text):
            return 2
        if _PERF_HEADER.match(text):
            return 2
        if (
            _STAT_TITLE.match(text)
            or _STAT_ELAPSED.match(text)
            or _STAT_INTERVAL_HEADER.match(text)
        ):
            return 2
        if _STAT_CSV.match(text.strip()):
            return 1
        if "<not supported>" in text or "<not counted>" in text:
            return 2 if _STAT_ROW.match(text) else 0
        if "%" in text and "[" in text and _MARKER.search(text) and _row_shape(text):
            return 2
        if _STAT_ROW.match(text) and _STAT_HINT.search(text):
            return 2
        if m := _COMMAND.match(text):
            # `perf stat ...` above its output; `perf script` prints stacks (the stack parser's)
            return 1 if m["sub"] == "script" else 2
        return 0

    # -- feeding --------------------------------------------------------------------------------

    def feed(self, line: str) -> bool:
        if len(line) > MAX_LINE:
            return False
        text = unpaste(line, marks=False)
        # a paste quoted with '# ' before every line: perf prints '#' lines of its own, so the
        # mark is taken off first only once the paste showed it ('# # Samples', or a line that
        # read only without it); otherwise only when the line does not read with it
        marked = text[:2] in ("# ", "#\t")
        first = marked and (self.quoted or text[2:].lstrip().startswith("#"))
        if first and self._feed(text[2:]):
            self.quoted = True
            return True
        if self._feed(text):
            return True
        if marked and self._feed(text[2:]):
            self.quoted = True
            return True
        return False

    def _feed(self, text: str) -> bool:
        stripped = text.strip()
        if self.folded and ";" in stripped and self._folded(stripped):
            return True  # a long run of folded stacks: straight to them
        if not stripped:
            return bool(self.lines)
        if m := _SAMPLES.match(stripped):
            self._event(m["event"].strip(), scaled(m["n"]), number(m["count"] or ""))
            return True
        if m := _EVENTS_OLD.match(stripped):
            self._event(m["event"], scaled(m["n"]), None)
            return True
        if m := _PERFTOP.match(stripped):
            if self.report.rows or self.counters or self.folded:
                return False  # a perf top screen after other output: a block of its own
            self.kinds.add("top")
            self._event((m["event"] or "").strip() or None, None, None)
            if len(self.meta) < 30:
                self.meta.append(stripped[:200])
            return True
        if set(stripped) == {"-"} and len(stripped) >= 10 and self.lines:
            return True  # perf top's rule under its summary line
        if m := _EVENT_COUNT.match(stripped):
            if self.events and self.events[-1].get("event_count") is None:
                self.events[-1]["event_count"] = number(m["n"])
            else:
                self._event(None, None, number(m["n"]))
            return True
        if (cols := _report_header(stripped)) is not None:
            self.columns = cols
            self.kinds.add("report")
            return True
        if _STAT_INTERVAL_HEADER.match(stripped):
            self.kinds.add("stat")
            return True
        if stripped.startswith("#"):
            if stripped.lstrip("#").strip().startswith("...") or _META.match(stripped):
                if len(self.meta) < 30 and len(stripped) > 2:
                    self.meta.append(stripped[:200])
                return True
            if self.lines and stripped.lstrip("#").strip().startswith("."):
                return True  # the dotted rule under the column header
            # perf's own remarks in its header ('# To display the perf.data header info...')
            return bool(self.lines) and not self.report.rows and "stat" not in self.kinds
        if m := _COMMAND.match(stripped):
            if self.report.rows or self.counters or self.unsupported or self.folded:
                return False  # the next command's output: a block of its own
            if m["sub"] == "stat":
                self.kinds.add("stat")
            if len(self.meta) < 30:
                self.meta.append(stripped[:200])
            return True
        if self._stat(text, stripped):
            return True
        if (self.columns is not None or self.kinds & {"report"}) or _MARKER.search(text):
            if self._report_row(stripped):
                self.in_graph = False
                return True
            if self.columns is not None and (
                _CALLGRAPH.match(text)
                or _INDENTED.match(text)
                or (self.in_graph and _GRAPH_FRAME.match(text))
            ):
                self.callgraph_lines += 1
                self.in_graph = True
                return True
        return self._folded(stripped)

    def _event(self, event: str | None, samples: float | None, count: float | None) -> None:
        if self.events:
            self.reading_first = False if self.report.rows else self.reading_first
        if len(self.events) < MAX_EVENTS:
            self.events.append({"event": event, "samples": samples, "event_count": count})

    # -- perf report ----------------------------------------------------------------------------

    def _report_row(self, text: str) -> bool:
        tokens = text.split()
        cols = self.columns or _default_columns(text)
        if not tokens or cols is None:
            return False
        numeric = [c for c in cols if c in _NUMERIC]
        values: dict[str, float] = {}
        i = 0
        for name in numeric:
            if i >= len(tokens):
                return False
            value = number(tokens[i])
            if value is None:
                return False
            if name in ("Children", "Overhead", "Self", "sys", "usr") and not _PCT.match(tokens[i]):
                return False
            values[name] = value
            i += 1
        if not values or not any(n in values for n in ("Overhead", "Self", "Children")):
            return False
        rest = " ".join(tokens[i:])
        marker = None
        symbol = None
        m = _MARKER.search(" " + rest)
        if m:
            marker = m["m"]
            symbol = m["symbol"]
            rest = (" " + rest)[: m.start()].strip()
        middle_names = [c for c in cols if c not in _NUMERIC and c != "Symbol"]
        words = rest.split()
        middle: dict[str, str] = {}
        if middle_names and words:
            if len(words) > len(middle_names):
                extra = len(words) - len(middle_names) + 1
                words = [" ".join(words[:extra])] + words[extra:]
            for name, word in zip(reversed(middle_names), reversed(words), strict=False):
                middle[name] = word
        if "Symbol" in cols and symbol is None and not words and not middle:
            return False
        self._add_row(values, middle, marker, symbol)
        return True

    def _add_row(
        self,
        values: dict[str, float],
        middle: dict[str, str],
        marker: str | None,
        symbol: str | None,
    ) -> None:
        r = self.report
        self.kinds.add("report")
        if not self.reading_first:
            return
        share = values.get("Self", values.get("Overhead", 0.0))
        children = values.get("Children")
        dso = middle.get("Shared Object", "")
        comm = middle.get("Command", "")
        r.rows += 1
        samples = values.get("Samples")
        if samples is not None:
            r.samples += samples
        if symbol:
            symbol = symbol.removesuffix(" (inlined)")
            if _HEX.match(symbol):
                symbol = (
                    "[unknown]"  # an address perf could not resolve: one bucket, as flame graphs do
                )
            if not _add(r.self_pct, symbol, share):
                r.dropped += 1
            if children is not None:
                _add(r.children_pct, symbol, children)
            hit = layer_of(symbol, dso or None)
            if hit is not None:
                _add(r.layer, hit.prefix, share)
            if samples is not None:
                self.stats.add_counted(symbol, samples, dso or None)
        if dso:
            _add(r.dso, dso, share)
        if comm:
            _add(r.comm, comm, share)
        if symbol or dso:
            if _is_kernel(dso, marker):
                r.kernel += share
            else:
                r.user += share
        item = {
            "symbol": symbol,
            "self_pct": share,
            "children_pct": children,
            "samples": samples,
            "command": comm or None,
            "dso": dso or None,
            "kernel": _is_kernel(dso, marker),
        }
        key = (share, -r.rows, item)
        if len(r.top) < TOP_ROWS:
            heapq.heappush(r.top, key)
        elif key[:2] > r.top[0][:2]:
            heapq.heapreplace(r.top, key)

    # -- folded stacks --------------------------------------------------------------------------

    def _folded(self, text: str) -> bool:
        folded = _split_folded(text)
        if folded is None:
            if not self.folded or not (one := _FOLDED_ONE.match(text)):
                return False
            folded = (one["stack"], one["n"])
        elif ";" not in folded[0] and (not self.folded or not _FOLDED_ONE.match(text)):
            return False  # a one-frame stack only within a run of folded stacks
        stack, count = folded
        names = stack.split(";")
        if len(names) > MAX_FRAMES:
            names = names[-MAX_FRAMES:]
        weight = float(count)
        frames: list[Frame] = []
        kernel = False
        for name in reversed(names):  # folded stacks are outermost first
            name = name.strip()
            if name.endswith(("_[k]", "_[j]", "_[i]")):
                kernel = kernel or not frames
                name = name[:-4]
            if not name or name in ("[unknown]", "[[stack truncated]]"):
                frames.append(Frame(function=None))
            else:
                frames.append(Frame(function=name))
        self.kinds.add("folded")
        self.folded += 1
        self.folded_samples += weight
        if kernel:
            self.folded_kernel += weight
        self.stats.add_stack(frames, weight, label=f"{names[-1]} x{count}")
        return True

    # -- perf stat ------------------------------------------------------------------------------

    def _stat(self, text: str, stripped: str) -> bool:
        if _STAT_TITLE.match(text):
            self.kinds.add("stat")
            self.stat_title = stripped[:200]
            return True
        if _STAT_INTERVAL_HEADER.match(stripped):
            self.kinds.add("stat")
            return True
        if m := _STAT_CSV.match(stripped):
            self.kinds.add("stat")
            self._counter(m["event"], m["value"], m["unit"] or None, m["ts"])
            if m["mname"] and "insn per cycle" in m["mname"]:
                self.ipc = number(m["metric"] or "")
            elif m["mname"] and "CPUs utilized" in m["mname"]:
                self.cpus = number(m["metric"] or "")
            return True
        if m := _STAT_ELAPSED.match(text):
            self.kinds.add("stat")
            self.elapsed = number(m["s"])
            return True
        if m := _STAT_USERSYS.match(text):
            if "stat" in self.kinds:
                self.user_sys[m["what"]] = number(m["s"]) or 0.0
                return True
            return False
        if "stat" not in self.kinds and not (
            "<not " in text or _STAT_HINT.search(text) or self.counters
        ):
            return False
        m = _STAT_ROW.match(text)
        if m is None:
            return False
        event = m["event"].replace(" (msec)", "").replace(" (usec)", "")
        self.kinds.add("stat")
        self._counter(event, m["value"], m["unit"], m["ts"])
        note = m["note"] or ""
        if n := _IPC_NOTE.search(note):
            self.ipc = number(n["v"])
        if n := _CPUS_NOTE.search(note):
            self.cpus = number(n["v"])
        return True

    def _counter(self, event: str, text: str, unit: str | None, ts: str | None) -> None:
        if text.startswith("<"):
            self.unsupported += 1
            return
        value = number(text)
        if value is None:
            self.malformed += 1
            return
        if event in self.counters or len(self.counters) < MAX_KEYS:
            # -I interval and -A per-CPU rows add up to the run's total
            self.counters[event] = self.counters.get(event, 0.0) + value
            if unit:
                self.counter_units[event] = unit
            if ts:
                self.elapsed = max(self.elapsed or 0.0, float(ts))

    # -- results --------------------------------------------------------------------------------

    def facts(self) -> tuple[dict, dict, list[str], Platform | None]:
        facts: dict = {}
        details: dict = {"kinds": sorted(self.kinds)}
        r = self.report
        first = self.events[0] if self.events else {}
        if first.get("samples") is not None:
            facts["perf.samples"] = first["samples"]
        elif r.samples:
            facts["perf.samples"] = r.samples
        elif self.folded_samples:
            facts["perf.samples"] = self.folded_samples
        if first.get("event_count") is not None:
            facts["perf.event_count"] = first["event_count"]
        if first.get("event"):
            facts["perf.event"] = first["event"]
        if r.self_pct:
            facts["symbol.self_pct"] = {k: round(v, 4) for k, v in r.self_pct.items()}
            top, pct = max(r.self_pct.items(), key=lambda kv: (kv[1], kv[0]))
            facts["perf.top_symbol"] = top
            facts["perf.top_pct"] = round(pct, 4)
        if r.children_pct:
            facts["symbol.children_pct"] = {k: round(v, 4) for k, v in r.children_pct.items()}
        if r.rows and (r.kernel or r.user):
            facts["perf.kernel_pct"] = round(r.kernel, 4)
            facts["perf.user_pct"] = round(r.user, 4)
        elif self.folded_samples:
            facts["perf.kernel_pct"] = round(100 * self.folded_kernel / self.folded_samples, 4)
        if r.dso:
            facts["dso.pct"] = {k: round(v, 4) for k, v in r.dso.items()}
            facts["perf.top_dso"] = max(r.dso.items(), key=lambda kv: (kv[1], kv[0]))[0]
        if r.comm:
            facts["comm.pct"] = {k: round(v, 4) for k, v in r.comm.items()}
        if r.layer:
            facts["layer.pct"] = {k: round(v, 4) for k, v in r.layer.items()}
        facts.update(self.stats.facts())
        if self.counters:
            facts["perf.counter"] = dict(self.counters)
        if "stat" in self.kinds:
            if self.unsupported:
                facts["perf.unsupported"] = float(self.unsupported)
            ipc = self.ipc
            cycles = self.counters.get("cycles") or self.counters.get("cpu-cycles")
            if ipc is None and cycles and "instructions" in self.counters:
                ipc = self.counters["instructions"] / cycles
            if ipc is not None:
                facts["perf.ipc"] = round(ipc, 4)
            if self.cpus is not None:
                facts["perf.cpus_utilized"] = self.cpus
            if self.elapsed is not None:
                facts["perf.elapsed_s"] = self.elapsed
        if r.top:
            details["top_symbols"] = [i for _, _, i in sorted(r.top, key=lambda t: (-t[0], -t[1]))]
        if self.events:
            details["events"] = self.events
        if self.columns:
            details["columns"] = self.columns
        if self.callgraph_lines:
            details["callgraph_lines"] = self.callgraph_lines
        if self.meta:
            details["header"] = self.meta
        if self.folded:
            details.update(self.stats.details())
            details["folded_stacks"] = self.folded
        if self.counters:
            details["counters"] = [
                {"event": k, "value": v, "unit": self.counter_units.get(k)}
                for k, v in self.counters.items()
            ][:200]
            if self.user_sys:
                details["user_sys_s"] = self.user_sys
            if self.stat_title:
                details["title"] = self.stat_title
        if r.dropped:
            details["dropped"] = {"symbols": r.dropped}
        identifiers = [
            k for k, _ in sorted(r.self_pct.items(), key=lambda kv: -kv[1])[:100] if " " not in k
        ]
        identifiers += [n for n in self.stats.identifiers(100) if n not in identifiers]
        identifiers += [k for k in list(self.counters)[:50] if k not in identifiers]
        return facts, details, identifiers, "linux"


def _split_folded(text: str) -> tuple[str, str] | None:
    """`outer;inner;leaf 123` -> ('outer;inner;leaf', '123'), without a regex (a flame graph's
    input has millions of these lines); None when the line does not end in a count."""
    text = text.strip()
    cut = max(text.rfind(" "), text.rfind("\t"))
    if cut <= 0:
        return None
    count = text[cut + 1 :]
    if not count.isdecimal() or len(count) > 15:  # isdigit() takes "²", float() does not
        return None
    stack = text[:cut].rstrip()
    if not stack or stack[0] in "; \t":
        return None
    return stack, count


def _row_shape(text: str) -> bool:
    """A perf report/top row without a header: a percentage first, a [.]/[k] marker later."""
    tokens = text.split()
    return bool(tokens) and bool(_PCT.match(tokens[0]))


def _default_columns(text: str) -> list[str] | None:
    """Columns of a headerless row (perf top, or a paste that left the header out)."""
    if not _row_shape(text):
        return None
    tokens = text.split()
    cols = ["Overhead"]
    if len(tokens) > 1 and _PCT.match(tokens[1]):
        cols = ["Children", "Self"]
    n = len(cols)
    if len(tokens) > n and tokens[n].isdigit():
        cols.append("Samples")
    m = _MARKER.search(text)
    if m is None:
        return None
    between = text[: m.start()].split()[len(cols) :]
    if len(between) >= 2:
        cols += ["Command", "Shared Object"]
    elif between:
        cols.append("Shared Object")
    return cols + ["Symbol"]
