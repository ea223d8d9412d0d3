"""The catalogue of fact names: the contract between parsers (which produce them) and signatures
(which test them). A signature naming a fact that is not here, or a fact its sources never
produce, fails validation. Keyed facts are tables: `syscall.avg_ms` keyed by `shmdt`.

Units are in the name where there is one (`_ms`, `_s`, `_pct`). Percentages are 0..100.
The catalogue also says how each fact is shown to a person (its label and unit, `show`), and
`number` is the one way a number is printed: the explanations, the CLI, the web page and the
Slack reply all read them from here, so a fact reads the same wherever it appears.
truss and strace produce the same syscall facts under the same names, so one signature covers
both; tkprof and waits share the `event.*` facts for the same reason.

The facts themselves are data, ingest/data/facts.yaml: a table per family (its sources and key
are its facts' defaults), so adding a fact is adding a row there.
"""
# Annotations are evaluated here, not kept as strings (no `from __future__ import annotations`):
# pydantic compiled each string field annotation (typing.ForwardRef) on every start (issue #19).

import math
from collections.abc import Iterator, Mapping
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from ingest.model import new_dict

SYSCALL_SOURCES = ("truss", "strace")
EVENT_SOURCES = ("tkprof", "waits", "trace10046")
FUNCTION_SOURCES = ("stack", "dtrace", "perf")
# OS samplers: the CPU split, run queue, memory and paging read the same from each of them
CPU_SOURCES = ("mpstat", "vmstat", "iostat", "sar")
DEVICE_SOURCES = ("iostat", "sar")
PROC_SOURCES = ("pidstat", "prstat")


_UNIT_SUFFIXES = (("_ms", "ms"), ("_s", "s"), ("_pct", "%"))


def _unit_from_name(name: str) -> str:
    for suffix, unit in _UNIT_SUFFIXES:
        if name.endswith(suffix):
            return unit
    return "%" if ".pct_" in name else ""  # event.pct_of_waited


def _label_from_name(name: str) -> str:
    """'syscall.avg_ms' -> 'avg': the part after the group, without its unit suffix. Read after
    the key it qualifies ('shmdt avg 12 ms'); a spec gives `label` where this reads badly."""
    tail = name.split(".", 1)[-1]
    for suffix, _ in _UNIT_SUFFIXES:
        if tail.endswith(suffix) and tail != suffix.lstrip("_"):
            tail = tail[: -len(suffix)]
    return tail.replace("_", " ")


def number(value: float) -> str:
    """The one way a number is printed: thousands separators from 100 up and for whole numbers,
    two decimals at most from 1 up, three significant digits below (never an exponent)."""
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if abs(value) >= 100 or float(value).is_integer():
        return f"{value:,.0f}"
    if abs(value) >= 1:
        return f"{value:.2f}".rstrip("0").rstrip(".")
    # three significant digits, written out: '0.000123', never '1.23e-04'
    decimals = 2 - math.floor(math.log10(abs(value)))
    return f"{value:.{decimals}f}".rstrip("0").rstrip(".")


class FactSpec(BaseModel):
    name: str
    sources: tuple[str, ...]
    keyed_by: str | None = None  # what the key is ("syscall", "event", ...); None for scalars
    kind: str = "number"  # number | string
    doc: str
    label: str = ""  # how an observation names it; default: the name without group and unit
    unit: str = ""  # ms, s, %, ... ; default: from the name's suffix

    @model_validator(mode="after")
    def _defaults(self) -> "FactSpec":
        if not self.label:
            self.label = _label_from_name(self.name)
        if not self.unit:
            self.unit = _unit_from_name(self.name)
        return self

    def show(self, value: object) -> str:
        """A value as a person reads it: '12.5 ms', '41 %', '1,234'; strings as they are."""
        if isinstance(value, str) or not isinstance(value, int | float):
            return str(value)
        return f"{number(value)} {self.unit}" if self.unit else number(value)


# The catalogue itself is data: ingest/data/facts.yaml, a table per family of facts.
CATALOGUE_PATH = Path(__file__).with_name("data") / "facts.yaml"


@lru_cache(maxsize=1)
def _catalogue() -> dict:
    """ingest/data/facts.yaml as read, once, when a fact is first looked up (not at import:
    `perfkb search` imports this module but reads no fact); parsed once per content
    (ingest/datafile.py)."""
    from ingest.datafile import load_yaml

    return load_yaml(CATALOGUE_PATH)


def _specs() -> list[FactSpec]:
    """Every fact of the catalogue file, in its order (renderers list facts in this order). A
    family's `sources` and `keyed_by` are its facts' defaults; `sources` may name a source group
    of this module (SYSCALL for SYSCALL_SOURCES)."""
    groups = {
        name.removesuffix("_SOURCES"): value
        for name, value in globals().items()
        if name.endswith("_SOURCES") and isinstance(value, tuple)
    }
    data = _catalogue()
    out: list[FactSpec] = []
    for family in data["families"]:
        defaults = {k: family[k] for k in ("sources", "keyed_by") if k in family}
        for row in family["facts"]:
            fields = {**defaults, **row}
            sources = fields["sources"]
            fields["sources"] = groups[sources] if isinstance(sources, str) else tuple(sources)
            out.append(FactSpec(**fields))
    return out


# ---- OS profiles and Linux system files (issue 15: lockstat, perf, /proc, netstat, free, top) ----
LOCK_SOURCES = ("lockstat",)
PERF_SOURCES = ("perf",)
MEMORY_SOURCES = ("meminfo", "free", "top")
LOAD_SOURCES = ("uptime", "top")
# formats whose counters only grow from boot: one sample is never compared with a threshold
SINCE_BOOT_SOURCES = ("netstat", "pressure", "procvmstat", "cgroup", "nfsiostat")
# facts other formats already produce that these formats produce too, under the same name
EXTRA_SOURCES = {
    "os.since_boot": SINCE_BOOT_SOURCES,
    "tcp.retrans_pct": ("netstat",),
    "proc.cpu_pct": ("top",),
    "cpu.usr_pct": ("top",),
    "cpu.sys_pct": ("top",),
    "cpu.wait_pct": ("top",),
    "cpu.idle_pct": ("top",),
    "cpu.steal_pct": ("top",),
    "cpu.irq_pct": ("top",),
}


def _all_specs() -> list[FactSpec]:
    specs = _specs()
    out = []
    for spec in specs:
        extra = EXTRA_SOURCES.get(spec.name)
        if extra:
            spec = spec.model_copy(update={"sources": spec.sources + extra})
        out.append(spec)
    return out


class _Catalogue(Mapping[str, FactSpec]):
    """FACTS: name -> FactSpec, in catalogue order, read from the catalogue file when first
    used. Importing this module reads nothing, so a command that names no fact (`perfkb search`
    loads kb.signatures for its models) starts without a YAML parser."""

    __slots__ = ("_facts",)

    def __init__(self) -> None:
        self._facts: dict[str, FactSpec] | None = None

    def _load(self) -> dict[str, FactSpec]:
        if self._facts is None:
            self._facts = {s.name: s for s in _all_specs()}
        return self._facts

    def __getitem__(self, name: str) -> FactSpec:
        return (self._facts or self._load())[name]

    def __contains__(self, name: object) -> bool:
        return name in (self._facts or self._load())

    def get(self, name: str, default: Any = None) -> Any:
        return (self._facts or self._load()).get(name, default)

    def __iter__(self) -> Iterator[str]:
        return iter(self._facts or self._load())

    def __len__(self) -> int:
        return len(self._facts or self._load())


FACTS: Mapping[str, FactSpec] = _Catalogue()


@lru_cache(maxsize=4096)
def spec_of(name: str) -> FactSpec:
    """The catalogue's spec, or one made from the name's rules for a name it does not hold."""
    spec = FACTS.get(name)
    return spec if spec is not None else FactSpec(name=name, sources=(), doc="")


def show(name: str, value: object) -> str:
    return spec_of(name).show(value)


def facts_for(source: str) -> set[str]:
    return {name for name, spec in FACTS.items() if source in spec.sources}


# The facts a person reads first from each OS sampler, in that order: renderers show these
# before the rest of the catalogue order (a Slack reply has room for a handful).
HEADLINE: dict[str, tuple[str, ...]] = {
    "vmstat": (
        "os.since_boot",
        "runq.max",
        "runq.per_cpu_max",
        "cpu.usr_pct",
        "cpu.sys_pct",
        "cpu.wait_pct",
        "swap.out_kbps_max",
        "page.scan_rate_max",
        "sys.cs_per_s_max",
        "mem.free_kb_min",
    ),
    "iostat": (
        "os.since_boot",
        "io.worst_device",
        "io.worst_await_ms",
        "io.worst_util_pct",
        "io.util_caveat",
        "io.max_queue",
        "cpu.wait_pct",
    ),
    "sar": (
        "runq.max",
        "runq.ldavg_per_cpu_max",
        "runq.ldavg_1_max",
        "cpu.count",
        "cpu.wait_pct",
        "io.worst_device",
        "io.worst_await_ms",
        "tcp.retrans_pct",
        "mem.used_pct_max",
        "page.scan_rate_max",
    ),
    "pidstat": (
        "proc.top_cpu",
        "proc.max_cpu_pct",
        "proc.top_io",
        "proc.max_io_kb_per_s",
        "proc.top_wait",
        "proc.max_wait_pct",
        "cpu.count",
    ),
    "prstat": (
        "proc.top_cpu",
        "proc.max_cpu_pct",
        "proc.top_lck",
        "proc.max_lck_pct",
        "proc.top_lat",
        "proc.max_lat_pct",
        "runq.ldavg_1_max",
    ),
}


def chart_unit(fact: str) -> str:
    """A fact's unit as a chart writes it after a number: '41%', '12/s', '3 KiB/s', '12 ms'."""
    unit = spec_of(fact).unit
    return unit if not unit or unit == "%" or unit.startswith("/") else " " + unit


class BarChart(BaseModel):
    """A keyed fact the web page draws as bars by key for the blocks of some formats."""

    # built on first use: `perfkb analyze` never validates one (issue #19)
    model_config = ConfigDict(defer_build=True)

    fact: str
    formats: tuple[str, ...]
    caption: str

    @property
    def unit(self) -> str:
        """The fact's unit as a chart writes it after a number: '41%', '12/s', '3 KiB/s'."""
        return chart_unit(self.fact)


class ChartNote(BaseModel):
    """Text after a bar's value, from another keyed fact for the same key ('{}' is its value)."""

    # built on first use: `perfkb analyze` never validates one (issue #19)
    model_config = ConfigDict(defer_build=True)

    fact: str
    text: str


class ChartPart(BaseModel):
    """One part of a split bar: a scalar fact, or (`rest`) the total less the other parts."""

    # built on first use: `perfkb analyze` never validates one (issue #19)
    model_config = ConfigDict(defer_build=True)

    css: str = Field(alias="class")
    label: str
    fact: str | None = None
    rest: bool = False
    optional: bool = False  # left out of the bar (and its legend) when zero

    @model_validator(mode="after")
    def _one_source(self) -> "ChartPart":
        if (self.fact is None) == (not self.rest):
            raise ValueError(f"part {self.label!r}: give a fact or rest: true, not both")
        return self


ChartKind = Literal["hbars", "columns", "cpu_columns", "series_lines", "split_bar", "histograms"]
# the kinds that read the parser's details rather than facts
_DETAILS_KINDS = ("columns", "cpu_columns", "series_lines", "histograms")


class BlockChart(BaseModel):
    """One chart of the web page for the blocks of some formats: which facts or details it draws
    and how it is captioned, as data (ingest/data/facts.yaml `block_charts`), so the renderer
    (kb/web/charts.py) knows how to draw each kind and nothing about any format."""

    # built on first use: `perfkb analyze` never validates one (issue #19)
    model_config = ConfigDict(extra="forbid", defer_build=True)

    formats: tuple[str, ...]
    kind: ChartKind
    caption: str
    title: str
    facts: tuple[str, ...] = ()  # hbars: the first of these keyed facts with values
    scalars: tuple[str, ...] = ()  # hbars: one bar per scalar fact
    share_of: str | None = None
    notes: tuple[ChartNote, ...] = ()
    unit_: str | None = Field(default=None, alias="unit")
    limit: int = 12
    when: str | None = None
    unless: str | None = None
    requires: dict[str, Literal["number", "nonzero"]] = Field(default_factory=new_dict)
    details: str = ""
    series: dict[str, str] | None = None
    threshold: str | None = None
    threshold_label: str = ""
    columns: dict[str, tuple[str, ...]] = Field(default_factory=new_dict)
    total: str | None = None
    parts: tuple[ChartPart, ...] = ()
    since_boot: str = ""

    @model_validator(mode="after")
    def _whole(self) -> "BlockChart":
        """A row that cannot draw anything is a mistake in the file, found when it is read."""
        if self.kind == "hbars" and not (self.facts or self.scalars):
            raise ValueError(f"{self.caption!r}: hbars needs facts or scalars")
        if self.kind in _DETAILS_KINDS and not self.details:
            raise ValueError(f"{self.caption!r}: {self.kind} reads a details key")
        if self.kind == "cpu_columns" and not self.columns:
            raise ValueError(f"{self.caption!r}: cpu_columns needs its columns")
        if self.kind == "split_bar" and not self.parts:
            raise ValueError(f"{self.caption!r}: split_bar needs parts")
        if sum(p.rest for p in self.parts) > 1:
            raise ValueError(f"{self.caption!r}: one rest part at most")
        return self

    @property
    def unit(self) -> str:
        """What follows each value: the row's `unit`, else the first fact's catalogue unit."""
        if self.unit_ is not None:
            return self.unit_
        first = (self.facts or self.scalars or ("",))[0]
        return chart_unit(first) if first else ""

    def fact_names(self) -> list[str]:
        """Every fact the row names (the catalogue test checks each exists)."""
        names = [*self.facts, *self.scalars, *(n.fact for n in self.notes)]
        names += [p.fact for p in self.parts if p.fact]
        names += [
            n for n in (self.share_of, self.when, self.unless, self.threshold, self.total) if n
        ]
        return names + list(self.requires)


@lru_cache(maxsize=256)
def block_charts(fmt: str) -> tuple[BlockChart, ...]:
    """The catalogue's charts for a format's blocks, in the order they are drawn (once per
    format: the web page asks for every block it shows)."""
    return tuple(c for c in _block_charts() if fmt in c.formats)


@lru_cache(maxsize=1)
def _block_charts() -> tuple[BlockChart, ...]:
    return tuple(BlockChart.model_validate(c) for c in _catalogue().get("block_charts", ()))


class Finding(BaseModel):
    """A fact a proposed signature may be built on, from the value at which it is a finding."""

    # built on first use: `perfkb analyze` never validates one (issue #19)
    model_config = ConfigDict(defer_build=True)

    fact: str
    from_: float = Field(alias="from")


def bar_charts(fmt: str) -> list[BarChart]:
    """The catalogue's bar charts for a format's blocks, in the catalogue's order."""
    return [c for c in _bar_charts() if fmt in c.formats]


@lru_cache(maxsize=1)
def _bar_charts() -> tuple[BarChart, ...]:
    return tuple(BarChart.model_validate(c) for c in _catalogue().get("bar_charts", ()))


@lru_cache(maxsize=1)
def findings() -> tuple[Finding, ...]:
    """The facts a signature proposed from an OS sampler block is built on, in order."""
    return tuple(Finding.model_validate(f) for f in _catalogue().get("findings", ()))
