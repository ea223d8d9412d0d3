"""Triage: what the evidence says in a few plain sentences, and what to run next, for every paste.

Why: a match against a known incident is only half of an answer. A paste that matches nothing well
still says something (a socket call that ran to its timeout, millions of fast single-block reads,
one CPU flooded by interrupts), and a DBA mid-incident needs that said in words, with the next
command to run. So every analysis gets `findings`, matched or not:

- sentences read from the block facts (never from raw text): the top consumer and its share,
  unaccounted-for or think time, the slowest single call and what it waited on, idle against
  busy, per-CPU hot spots, and what looks normal. Numbers go through the fact catalogue
  (`ingest.facts.show`), the one number format;
- the next commands come from rules written as data (kb/rules/triage.yaml) in the signature
  language: a `when:` condition tree evaluated by kb/evaluate.py, commands whose placeholders
  are filled only by kb/command_fill.py. The rules are reviewed like entries, not hidden in code.
"""
# Annotations are evaluated here, not kept as strings (no `from __future__ import annotations`):
# pydantic compiled each string field annotation (typing.ForwardRef) on every start (issue #19).

import math
import re
from collections.abc import Iterable, Mapping
from functools import lru_cache
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from ingest.datafile import load_yaml
from ingest.facts import FACTS, number, show, spec_of
from ingest.model import Block, Evidence, new_dict, new_list
from ingest.oracle_events import is_idle as _oracle_idle
from kb import command_fill
from kb.evaluate import quick
from kb.models import Entry
from kb.platform import evidence_values, translate
from kb.results import Finding, Match, SuggestedCommand
from kb.signatures import Condition, Signature, Source

RULES_PATH = Path(__file__).with_name("rules") / "triage.yaml"
MAX_FINDINGS = 6  # sentences a person reads mid-incident; more is a report, not a triage
MAX_BLOCKS_DESCRIBED = 4  # distinct blocks whose facts are put into words
MAX_PER_BLOCK = 5  # sentences about one block (one block: it may fill the triage)
RULE_SENTENCES = 1  # places kept for what the rules say to do (the commands say the rest)
OS_PLATFORMS = ("solaris", "linux")

CommandPlatform = Literal["any", "solaris", "linux"]


def is_idle(event: str) -> bool:
    """An idle wait event: the session waits for work, not for the database (never query on it).
    The one list is ingest/oracle_events.py's."""
    return _oracle_idle(event)


# -- the rules, as data ---------------------------------------------------------------------------


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class RuleCommand(_Strict):
    platform: CommandPlatform
    command: str = Field(min_length=1, max_length=2000)
    why: str = Field(min_length=1, max_length=1000)


class FillFrom(_Strict):
    """Where a placeholder value comes from: one fact (a key of it for a table), or the key of a
    table with the largest value (`top_of`)."""

    fact: str | None = None
    key: str | None = None
    top_of: str | None = None
    at_least: float | None = Field(None, description="top_of: only a key whose value is this high")
    pattern: str | None = Field(
        None,
        max_length=200,
        description="a regex with one group that takes the value out of a string fact "
        "('oracle/1 (12077/1)' -> 12077)",
    )

    @model_validator(mode="after")
    def _one(self) -> "FillFrom":
        if (self.fact is None) == (self.top_of is None):
            raise ValueError("give exactly one of 'fact' or 'top_of'")
        name = self.fact or self.top_of
        if name not in FACTS:
            raise ValueError(f"unknown fact '{name}'")
        if self.top_of and not FACTS[self.top_of].keyed_by:
            raise ValueError(f"top_of needs a table fact; '{self.top_of}' is a single value")
        if self.pattern is not None and re.compile(self.pattern).groups != 1:
            raise ValueError("pattern needs exactly one group: the value")
        return self

    def value(self, facts: Mapping) -> object | None:
        found = self._value(facts)
        if self.pattern is None or found is None:
            return found
        m = re.search(self.pattern, str(found))
        return None if m is None else (int(m.group(1)) if m.group(1).isdigit() else m.group(1))

    def _value(self, facts: Mapping) -> object | None:
        if self.top_of is not None:
            table = facts.get(self.top_of)
            key = top_key(table, skip_idle=FACTS[self.top_of].keyed_by == "event")
            if key is not None and self.at_least is not None and isinstance(table, Mapping):
                return key if float(table[key]) >= self.at_least else None
            return key
        value = facts.get(self.fact)
        if self.key is not None:
            value = value.get(self.key) if isinstance(value, Mapping) else None
        if isinstance(value, float) and value.is_integer():
            return int(value)  # a pid or sid read as a number
        return value


class TriageRule(_Strict):
    name: str = Field(pattern=r"^[a-z0-9][a-z0-9-]*$", max_length=80)
    sources: list[Source] = Field(min_length=1)
    when: Condition | None = None
    finding: str = Field("", max_length=1000)
    fill: dict[str, FillFrom] = Field(default_factory=new_dict)
    commands: list[RuleCommand] = Field(default_factory=new_list)

    @model_validator(mode="after")
    def _checked(self) -> "TriageRule":
        if self.when is not None:
            # The signature language's own checks: facts known, facts fit the sources.
            Signature(name=self.name, sources=self.sources, when=self.when)
        for name, key in _FACT_PLACEHOLDER.findall(self.finding):
            if name not in FACTS and name not in self.fill:
                raise ValueError(f"rule {self.name}: finding names unknown fact '{name}'")
            if name in FACTS and bool(FACTS[name].keyed_by) != bool(key):
                raise ValueError(f"rule {self.name}: '{name}' in the finding needs a key iff keyed")
        return self


class SentenceRule(TriageRule):
    """A remark a describer adds when its condition holds (kb/rules/triage.yaml `sentences`):
    a threshold and a sentence, as data, instead of one more `if` in a describer."""

    follows: str = Field(description="the describer whose sentences this one follows")
    finding: str = Field(min_length=1, max_length=1000)

    @model_validator(mode="after")
    def _follows_a_describer(self) -> "SentenceRule":
        if self.follows not in {d.__name__.lstrip("_") for d in _DESCRIBERS}:
            raise ValueError(f"sentence {self.name}: no describer '{self.follows}'")
        return self


class RuleBook(_Strict):
    rules: list[TriageRule]
    sentences: list[SentenceRule] = Field(default_factory=new_list)
    baseline: TriageRule


@lru_cache(maxsize=4)
def load_rules(path: Path = RULES_PATH) -> RuleBook:
    """The triage rules, validated once (a broken rules file fails loudly at start, in tests).
    Every caller in perfkb passes the path, so one process validates the file once (lru_cache
    keys `load_rules()` and `load_rules(RULES_PATH)` apart)."""
    # parsed once per content (ingest/datafile.py; libyaml when PyYAML has it): parsing this
    # file took ~6 ms of every `perfkb analyze`, the pure-Python parser ~40 ms (issue #19)
    data = load_yaml(path)
    if isinstance(data, dict) and isinstance(data.get("baseline"), dict):
        data["baseline"].setdefault("sources", ["text"])
    return RuleBook.model_validate(data)


# -- results ----------------------------------------------------------------------------------------


class Command(BaseModel):
    command: str
    platform: str
    why: str
    rule: str


class Triage(BaseModel):
    findings: list[Finding] = Field(default_factory=new_list)
    commands: list[Command] = Field(default_factory=new_list)
    fired: list[str] = Field(default_factory=new_list, description="rules that held")


# -- helpers over facts -----------------------------------------------------------------------------


def _num(facts: Mapping, name: str, key: str | None = None) -> float | None:
    value = facts.get(name)
    if key is not None:
        value = value.get(key) if isinstance(value, Mapping) else None
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) else None


def _table(facts: Mapping, name: str) -> dict[str, float]:
    value = facts.get(name)
    if not isinstance(value, Mapping):
        return {}
    return {
        str(k): float(v)
        for k, v in value.items()
        if isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)
    }


def top_key(table: object, *, skip_idle: bool = False) -> str | None:
    """The key with the largest value (idle events passed over when asked)."""
    if not isinstance(table, Mapping):
        return None
    best: tuple[float, str] | None = None
    for k, v in table.items():
        if not isinstance(v, int | float) or not math.isfinite(v):
            continue
        if skip_idle and is_idle(str(k)):
            continue
        if best is None or v > best[0]:
            best = (float(v), str(k))
    return best[1] if best and best[0] > 0 else None


def _s(name: str, value: float) -> str:
    return show(name, value)


def _plural(n: float, word: str, plural: str | None = None) -> str:
    return f"{number(n)} {word if n == 1 else (plural or word + 's')}"


# -- sentences from facts ---------------------------------------------------------------------------


def _events(f: Mapping) -> list[str]:
    waited = _table(f, "event.waited_s")
    if not waited:
        return []
    out: list[str] = []
    busy = top_key(waited, skip_idle=True)
    idle_top = top_key(waited)
    report = "event.pct_of_db_time" in f  # a report ranks by DB time, where idle waits are noise
    bigger = busy is None or waited.get(idle_top or "", 0) > waited[busy]
    if idle_top and is_idle(idle_top) and bigger and not report:
        why = (
            "the session waiting for its client"
            if "from client" in idle_top.lower()
            else "the session sleeping or waiting for work"
        )
        out.append(
            f"'{idle_top}' has the most time ({_s('event.waited_s', waited[idle_top])}), but it "
            f"is an idle event: {why}, not for the database."
        )
    if busy:
        share = _num(f, "event.pct_of_db_time", busy)
        share_text = (
            f"{_s('event.pct_of_db_time', share)} of DB time"
            if share is not None
            else f"{_s('event.pct_of_waited', _num(f, 'event.pct_of_waited', busy) or 0)} "
            "of the waited time"
        )
        parts = [_s("event.waited_s", waited[busy])]
        count = _num(f, "event.count", busy)
        if count:
            parts.append(_plural(count, "wait"))
        avg = _num(f, "event.avg_ms", busy)
        if avg is not None:
            parts.append(f"{_s('event.avg_ms', avg)} on average")
        out.append(f"The top wait is '{busy}' with {share_text} ({', '.join(parts)}).")
        biggest = _num(f, "event.max_ms", busy)
        if biggest and avg and biggest >= 10 * avg and biggest >= 100:
            out.append(
                f"Its slowest single wait took {_s('event.max_ms', biggest)}, "
                "far above its average: a few outliers, not uniform slowness."
            )
    return out


def _tkprof(f: Mapping) -> list[str]:
    elapsed = _num(f, "tkprof.elapsed_s")
    if elapsed is None:
        return []
    cpu = _num(f, "tkprof.cpu_s") or 0.0
    waited = _num(f, "tkprof.waited_s") or 0.0
    n = _num(f, "tkprof.statements") or 0
    out = [
        f"The traced {_plural(n, 'statement')} took {_s('tkprof.elapsed_s', elapsed)}: "
        f"{_s('tkprof.cpu_s', cpu)} on CPU and {_s('tkprof.waited_s', waited)} in waits."
    ]
    return out  # then its `sentences` in kb/rules/triage.yaml


def _trace10046(f: Mapping) -> list[str]:
    r = _num(f, "trace10046.response_s")
    if r is None:
        return []
    out: list[str] = []
    profile = _table(f, "trace10046.profile_s")
    top = top_key(profile)
    if top and r > 0:
        pct = _num(f, "trace10046.profile_pct", top)
        share = f" ({_s('trace10046.profile_pct', pct)})" if pct is not None else ""
        out.append(
            f"Response time R is {_s('trace10046.response_s', r)}; the largest part is "
            f"{top}: {_s('trace10046.profile_s', profile[top])}{share}."
        )
    else:
        out.append(f"Response time R is {_s('trace10046.response_s', r)}.")
    return out  # then its `sentences` in kb/rules/triage.yaml


def _syscalls(f: Mapping) -> list[str]:
    counts = _table(f, "syscall.count")
    if not counts:
        return []
    out: list[str] = []
    calls = _num(f, "trace.calls") or sum(counts.values())
    shares = _table(f, "syscall.share_pct")
    top = top_key(shares) or top_key(counts)
    timed = (_num(f, "trace.syscall_ms") or 0) > 0
    if top:
        what = "of the syscall time" if timed else "of the calls"
        parts = [_plural(counts.get(top, 0), "call")]
        avg = _num(f, "syscall.avg_ms", top)
        if timed and avg is not None:
            parts.append(f"avg {_s('syscall.avg_ms', avg)}")
        out.append(
            f"Of {_plural(calls, 'syscall')}, {top} takes "
            f"{_s('syscall.share_pct', shares.get(top, 0))} {what} ({', '.join(parts)})."
        )
    slowest = top_key(_table(f, "syscall.max_ms"))
    if slowest:
        out.append(
            f"The slowest single call was {slowest} at "
            f"{_s('syscall.max_ms', _num(f, 'syscall.max_ms', slowest) or 0)}."
        )
    repeats = _table(f, "repeat.count")
    same = top_key(repeats)
    if same and repeats[same] >= 100:
        where = [
            f"{word} {number(v)}"
            for word, v in (
                ("fd", _num(f, "repeat.fd", same)),
                ("size", _num(f, "repeat.size", same)),
            )
            if v is not None
        ]
        text = f"{_plural(repeats[same], 'identical ' + same + ' call')}"
        text += f" ({', '.join(where)})" if where else ""
        out.append(text + ": the same small call in a loop, where one larger call would do.")
    errors = _num(f, "trace.errors")
    if errors:
        errno = top_key(_table(f, "errno.count"))
        out.append(
            f"{_plural(errors, 'call')} failed" + (f", most often with {errno}." if errno else ".")
        )
    return out


def _cpu(f: Mapping) -> list[str]:
    idle = _num(f, "cpu.idle_pct")
    if idle is None:
        return []
    parts = [
        f"{_s(name, v)} {word}"
        for name, word in (
            ("cpu.usr_pct", "user"),
            ("cpu.sys_pct", "system"),
            ("cpu.wait_pct", "I/O wait"),
            ("cpu.idle_pct", "idle"),
        )
        if (v := _num(f, name)) is not None
    ]
    n = _num(f, "cpu.count")
    where = f"Across {_plural(n, 'CPU')}" if n else "On average"
    return [f"{where} the time splits {', '.join(parts)}."]  # then its `sentences`


def _stack(f: Mapping, details: Mapping) -> list[str]:
    frames = _num(f, "stack.frames")
    if frames is None:
        return []
    stacks = _num(f, "stack.stacks") or 1
    out: list[str] = []
    top = top_key(_table(f, "frame.top"))
    text = f"{_plural(stacks, 'stack')} of {_plural(frames, 'frame')}"
    if top:
        text += f"; the innermost frame seen most is {top}"
    layers = _table(f, "layer.count")
    layer = top_key(layers)
    if layer:
        layers_detail = details.get("layers") if isinstance(details, Mapping) else None
        meaning = layers_detail.get(layer) if isinstance(layers_detail, Mapping) else None
        name = meaning.get("layer") if isinstance(meaning, Mapping) else None
        text += f", and most Oracle frames are in the {layer} ({name or 'kernel'}) layer"
    out.append(text[0].upper() + text[1:] + ".")
    samples, stable = _num(f, "stack.samples"), _num(f, "stack.stable_frames")
    if samples and samples > 1 and stable:
        out.append(
            f"{_plural(stable, 'frame')} stay in all {number(samples)} samples of the same "
            "process: it is stuck in (or looping through) that code."
        )
    return out


def _hang(f: Mapping) -> list[str]:
    sid = _num(f, "hang.blocker_sid")
    chains = _num(f, "hang.chains")
    if sid is None and not chains:
        return []
    out = [f"Hang analysis shows {_plural(chains or 0, 'wait chain')}."]
    if sid is not None:
        event = f.get("hang.blocker_event")
        text = f"The root blocker is session {number(sid)}"
        ospid = _num(f, "hang.blocker_ospid")
        if ospid is not None:
            text += f" (OS pid {number(ospid)})"
        if isinstance(event, str):
            text += f", waiting on '{event}'"
            if is_idle(event):
                text += ": it is idle, holding what others wait for (an open transaction)"
        out.append(text + ".")
    return out


def _lgwr(f: Mapping) -> list[str]:
    slow = _num(f, "lgwr.slow_writes")
    if not slow:
        return []
    text = f"LGWR warned of {_plural(slow, 'slow redo write')}"
    worst = _num(f, "lgwr.max_write_ms")
    if worst is not None:
        text += f", the slowest {_s('lgwr.max_write_ms', worst)}"
    per_mb = _num(f, "lgwr.ms_per_mb")
    if per_mb is not None:
        text += f" ({_s('lgwr.ms_per_mb', per_mb)})"
    return [text + "."]


def _dtrace(f: Mapping) -> list[str]:
    probes = _table(f, "probe.count")
    top = top_key(probes)
    out: list[str] = []
    if top:
        out.append(f"The most counted probe or function is {top} ({number(probes[top])}).")
    hist = _table(f, "hist.p50")
    for name, p50 in list(hist.items())[:1]:
        out.append(
            f"The histogram {name or ''} has its median at {number(p50)}.".replace("  ", " ")
        )
    return out


_REPORT_KIND = {"awr": "AWR report", "statspack": "Statspack report"}


def _report(f: Mapping) -> list[str]:
    """An AWR/Statspack report's header: how long, how busy."""
    db_time = _num(f, "report.db_time_s")
    elapsed = _num(f, "report.elapsed_s")
    if db_time is None or not elapsed:
        return []
    kind = _REPORT_KIND.get(str(f.get("report.kind") or "").lower(), "report")
    text = (
        f"The {kind} covers {_s('report.elapsed_s', elapsed)} with "
        f"{_s('report.db_time_s', db_time)} of DB time"
    )
    aas, cpus = _num(f, "report.aas"), _num(f, "report.cpus")
    if aas is not None:
        text += f": {number(aas)} sessions active on average"
        if cpus:
            text += f" on {_plural(cpus, 'CPU')}"
    return [text + "."]


def _report_detail(f: Mapping) -> list[str]:
    """What the report's DB time was made of: CPU and the top wait class, then the load."""
    out: list[str] = []
    db_time = _num(f, "report.db_time_s")
    cpu = _num(f, "report.db_cpu_s")
    parts = []
    if cpu is not None and db_time:
        parts.append(f"DB CPU is {number(100 * cpu / db_time)} % of DB time")
    classes = _table(f, "wait_class.pct_of_db_time")
    top = top_key({k: v for k, v in classes.items() if k not in ("DB CPU", "Idle")})
    if top:
        parts.append(f"the top wait class is {top} with {number(classes[top])} %")
    if parts:
        text = "; ".join(parts)
        out.append(text[0].upper() + text[1:] + ".")
    load = f.get("load.per_s")
    if isinstance(load, Mapping) and load:
        shown = [
            f"{k} {number(v)}" for k, v in list(load.items())[:4] if isinstance(v, int | float)
        ]
        if shown:
            out.append("Load Profile per second: " + ", ".join(shown) + ".")
    return out


def _report_sql(f: Mapping) -> list[str]:
    elapsed = _table(f, "sql.elapsed_s")
    top = top_key(elapsed)
    if not top:
        return []
    text = f"SQL {top} took the most elapsed time, {_s('sql.elapsed_s', elapsed[top])}"
    execs = _num(f, "sql.executions", top)
    if execs:
        each = _num(f, "sql.elapsed_per_exec_s", top)
        text += f" over {_plural(execs, 'execution')}"
        if each:
            text += f" ({_s('sql.elapsed_per_exec_s', each)} each)"
    return [text + "."]


def _time_model(f: Mapping) -> list[str]:
    pct = _num(f, "time_model.pct_of_db_time", "hard parse elapsed time")
    if pct is None or pct < 20:
        return []
    return [f"Hard parsing takes {number(pct)} % of DB time (Time Model)."]


def _ash(f: Mapping) -> list[str]:
    total = _num(f, "ash.total_s")
    top = f.get("ash.top_event")
    if total is None or not isinstance(top, str):
        return []
    pct = _num(f, "ash.top_pct")
    share = f" ({_s('ash.top_pct', pct)})" if pct is not None else ""
    out = [f"In {_s('ash.total_s', total)} of ASH samples, '{top}' has the most time{share}."]
    flags = _table(f, "ash.flag_seconds")
    busy = top_key({k: v for k, v in flags.items() if k not in ("IN_SQL_EXECUTION",)})
    if busy and flags[busy] >= 0.5 * total:
        out.append(f"{number(100 * flags[busy] / total)} % of that time is {busy}.")
    chain, chain_s = f.get("ash.top_chain"), _num(f, "ash.top_chain_s")
    if isinstance(chain, str) and chain_s:
        out.append(f"The longest wait chain is {chain} ({_s('ash.top_chain_s', chain_s)}).")
    return out


def _sessions(f: Mapping) -> list[str]:
    locks = _most_sessions(f, "lock.waiters", "lock.ctime_max_s", "requests", "a {} lock")
    waits = _most_sessions(f, "session.count", "session.seconds_in_wait_max", "waits", "on '{}'")
    if locks:
        locks += ": someone holds it and has not committed or rolled back"
    return [text + "." for text in (locks, waits) if text]


def _most_sessions(f: Mapping, counts: str, longest: str, verb: str, what: str) -> str:
    """'3 sessions wait on 'X', the longest for 12 s': the key most sessions are counted under
    (an idle event passed over), its verb agreeing with the count, and its longest time."""
    table = _table(f, counts)
    key = top_key(table, skip_idle=FACTS[counts].keyed_by == "event")
    if not key:
        return ""
    n = table[key]
    text = f"{_plural(n, 'session')} {verb if n == 1 else verb[:-1]} {what.format(key)}"
    most = _num(f, longest, key)
    return text + (f", the longest for {_s(longest, most)}" if most is not None else "")


_DESCRIBERS = (
    _report,
    _events,
    _report_detail,
    _report_sql,
    _time_model,
    _tkprof,
    _trace10046,
    _syscalls,
    _cpu,
    _hang,
    _lgwr,
    _dtrace,
    _ash,
    _sessions,
)


def _generic(block: Block) -> list[str]:
    """Facts no describer knows (a format newer than this module): the first few values as the
    catalogue labels them, and the largest entry of the first table."""
    shown: list[str] = []
    table_text = ""
    for name, value in block.facts.items():
        if name not in FACTS:
            continue
        spec = spec_of(name)
        if isinstance(value, Mapping):
            top = top_key(value) if not table_text else None
            if top is not None:
                what = f"{spec.label} ({spec.keyed_by})" if spec.keyed_by else spec.label
                table_text = f"{what} is highest for {top}: {spec.show(float(value[top]))}"
            continue
        if isinstance(value, float) and not math.isfinite(value):
            continue
        if len(shown) < 4:
            shown.append(f"{spec.label} {spec.show(value)}")
    out = []
    if shown:
        out.append(f"The {block.format} capture shows {', '.join(shown)}.")
    if table_text:
        out.append(table_text[0].upper() + table_text[1:] + ".")
    return out


def parser_sentences(block: Block) -> list[str]:
    """What the parser itself said in words (details['findings']: what a slow call was on, which
    CPU interrupts take over), as sentences. The parser knows things the facts do not carry (the
    file or peer behind an fd), so its words come first."""
    found = block.details.get("findings") if isinstance(block.details, Mapping) else None
    if not isinstance(found, list):
        return []
    out = []
    for item in found:
        words = str(item).strip().rstrip(".")
        if not words:
            continue
        first = words.split()[0]
        if first.isalpha() and first.islower():  # 'slowest call:', not 'oracle/1' or '%util'
            words = words[0].upper() + words[1:]
        out.append(words + ".")
    return out


def describe(block: Block) -> list[str]:
    """Sentences about one block: the parser's own words, then those read from its facts."""
    if block.format == "unknown" or not block.facts:
        return []
    out = parser_sentences(block)
    said_slowest = any(s.startswith("Slowest call:") for s in out)
    by_describer = _sentences_by_describer()
    for describer in _DESCRIBERS:
        said = describer(block.facts)
        if said:
            said += _rule_sentences(by_describer.get(describer.__name__.lstrip("_"), ()), block)
        out += [s for s in said if not (said_slowest and s.startswith("The slowest single call"))]
    out += _stack(block.facts, block.details) if block.format == "stack" else []
    return out or _generic(block)


# -- rules over facts -------------------------------------------------------------------------------

_FACT_PLACEHOLDER = re.compile(r"\{([a-z0-9_.]+)(?:\[([^\]{}]+)\])?\}")


def _finding_text(rule: TriageRule, facts: Mapping, values: Mapping[str, object]) -> str | None:
    """The rule's sentence with its placeholders shown; None when one cannot be filled (a
    sentence with a hole in it is worse than none)."""
    missing = False

    def one(m: re.Match[str]) -> str:
        nonlocal missing
        name, key = m.group(1), m.group(2)
        if name in FACTS:
            value = facts.get(name)
            if key is not None:
                value = value.get(key) if isinstance(value, Mapping) else None
            bad = isinstance(value, float) and not math.isfinite(value)
            if value is None or isinstance(value, Mapping) or bad:
                missing = True
                return ""
            return show(name, value)
        value = values.get(name)
        if value is None:
            missing = True
            return ""
        return str(value)

    text = _FACT_PLACEHOLDER.sub(one, rule.finding)
    return None if missing or not text.strip() else text


@lru_cache(maxsize=4)
def _sentences_by_describer(path: Path = RULES_PATH) -> dict[str, tuple[SentenceRule, ...]]:
    """The rules file's `sentences` by the describer they follow (read once, like the rules)."""
    out: dict[str, tuple[SentenceRule, ...]] = {}
    for rule in load_rules(path).sentences:
        out[rule.follows] = (*out.get(rule.follows, ()), rule)
    return out


def _rule_sentences(rules: Iterable[SentenceRule], block: Block) -> list[str]:
    """The `sentences` of the rules file that hold on the block, filled, in the file's order."""
    out = []
    for rule in rules:
        if block.format in rule.sources and _held(rule, block):
            own = {kind: source.value(block.facts) for kind, source in rule.fill.items()}
            text = _finding_text(rule, block.facts, own)  # None when a value is missing
            if text is not None:
                out.append(text)
    return out


def _blocks_for(rule: TriageRule, blocks: Iterable[Block]) -> Iterable[Block]:
    sources = set(rule.sources)
    return (b for b in blocks if b.format in sources)


def _held(rule: TriageRule, block: Block) -> bool:
    if rule.when is None:
        return False
    try:
        return quick(rule.when, block.facts, block.text)[0]
    except (TypeError, ValueError):
        return False


def targets(platform: str | None) -> tuple[str, ...]:
    """The OS platforms to show commands for: the known one; none for Windows (no command here
    runs there, the Oracle ones do); else (unknown, AIX, HP-UX) both, each labelled."""
    if platform in OS_PLATFORMS:
        return (platform,)
    return () if platform == "windows" else OS_PLATFORMS


def _rule_commands(
    rule: TriageRule, values: Mapping[str, object], platforms: tuple[str, ...], fill
) -> list[Command]:
    out: list[Command] = []
    by_platform = {p: [c for c in rule.commands if c.platform == p] for p in OS_PLATFORMS}
    for c in rule.commands:
        if c.platform == "any":
            out.append(
                Command(command=fill(c.command, values), platform="any", why=c.why, rule=rule.name)
            )
    for plat in platforms:
        own = by_platform[plat]
        if not own:
            other = [c for p in OS_PLATFORMS if p != plat for c in by_platform[p]]
            own = [c.model_copy(update={"command": translate(c.command, plat)}) for c in other]
        for c in own:
            out.append(
                Command(command=fill(c.command, values), platform=plat, why=c.why, rule=rule.name)
            )
    return out


def _needs_idle_event(rule: TriageRule, values: Mapping[str, object]) -> bool:
    """A rule whose commands filter on an event, when the event it would use is idle or unknown:
    ASH never samples idle waits, so such a query only ever returns nothing."""
    uses_event = any("{event" in c.command for c in rule.commands)
    event = values.get("event")
    return uses_event and (not isinstance(event, str) or is_idle(event))


_SQL_ID = re.compile(r"^[0-9a-z]{13}$")


def _items(details: Mapping, key: str) -> list:
    """details[key] when it is a list (a parser's details are read, never trusted)."""
    value = details.get(key)
    return value if isinstance(value, list) else []


_SESSION = re.compile(r"^(\d{1,10})\.(\d{1,10})$")
_PRSTAT_PID = re.compile(r"\((\d{1,10})/\d+\)")


def _top_sql_id(table: object) -> str | None:
    """The key with the largest value that is a sql_id (tables also hold old hash values and
    'cursor #...' names, which no command can use)."""
    if not isinstance(table, Mapping):
        return None
    ids = {k: v for k, v in table.items() if isinstance(k, str) and _SQL_ID.match(k)}
    return top_key(ids)


def block_values(block: Block) -> dict[str, object]:
    """Placeholder values one block supplies: a pstack/gdb header's pid, a 10046 trace's OS pid
    and SID.SERIAL, the statement that took the most time (tkprof, 10046, AWR, ASH)."""
    values: dict[str, object] = {}
    details = block.details if isinstance(block.details, Mapping) else {}
    for stack in _items(details, "stacks"):
        label = stack.get("label") if isinstance(stack, Mapping) else None
        m = _PID_LABEL.search(label if isinstance(label, str) else "")
        if m:
            values["pid"] = int(m.group(1))
            break
    pid = details.get("pid")
    if isinstance(pid, int | str) and str(pid).isdigit():
        values.setdefault("pid", int(pid))
    top = block.facts.get("proc.top_cpu")  # prstat: 'oracle/1 (12011/1)', the busiest process
    if isinstance(top, str) and (m := _PRSTAT_PID.search(top)):
        values.setdefault("pid", int(m.group(1)))
    session = details.get("session")
    if isinstance(session, str) and (m := _SESSION.match(session.strip())):
        values["sid"], values["serial"] = int(m.group(1)), int(m.group(2))
    sql_id = None
    for table in ("statement.elapsed_s", "sql.elapsed_s", "ash.sql_seconds"):
        sql_id = sql_id or _top_sql_id(block.facts.get(table))
    if sql_id is None:
        for st in _items(details, "statements"):
            candidate = st.get("sql_id") if isinstance(st, Mapping) else None
            if isinstance(candidate, str) and _SQL_ID.match(candidate):
                sql_id = candidate
                break
    flip = block.facts.get("plan.flip_sql_id")  # plan history: the statement whose plan changed
    if sql_id is None and isinstance(flip, str) and _SQL_ID.match(flip):
        sql_id = flip
    sql_id = sql_id or _top_sql_id(block.facts.get("plan.hashes"))  # DBMS_XPLAN output
    if sql_id:
        values["sql_id"] = sql_id
    device = _top_device(block.facts)
    if device:
        values["device"] = device
    return values


def _top_device(facts: Mapping) -> str | None:
    """The device a command should look at: the largest key of the block's first table keyed by
    device (in catalogue order, which lists latency before counts)."""
    for name in _device_facts():
        if name in facts:
            top = top_key(facts.get(name))
            if top:
                return top
    return None


@lru_cache(maxsize=1)
def _device_facts() -> tuple[str, ...]:
    """The catalogue's device-keyed facts, in its order. Read once: the catalogue does not change
    after it is loaded, and walking all of it for every block was ~10 % of a seed analysis."""
    return tuple(name for name, spec in FACTS.items() if spec.keyed_by == "device")


# The stack parser labels a stack from its header: 'pid 1234: cmd' (pstack, core), 'PID 1234 - x'
# (eu-stack). Other labels ('Thread 2', 'stack 1', 'lwp# 8') name no process.
_PID_LABEL = re.compile(r"^(?:pid|PID)\s+(\d{1,10})\b")


def evidence_fill_values(evidence: Evidence) -> dict[str, object]:
    """Values for placeholders from the whole evidence: the prose and traced processes
    (kb/platform.py), then what the blocks' headers carry, for what the prose did not name."""
    values = dict(evidence_values(evidence))
    for block in evidence.blocks:
        for k, v in block_values(block).items():
            values.setdefault(k, v)
    return values


def _richness(block: Block) -> tuple[bool, int]:
    """Which of two blocks of one format to put into words: the one ranking events by DB time,
    else the one with more facts."""
    return ("event.pct_of_db_time" in block.facts, len(block.facts))


def _described_blocks(blocks: list[Block]) -> list[Block]:
    """One block per format, in paste order: an AWR report is many event tables and the reader
    wants the one that ranks by DB time (Top Timed Events), not four tables in a row."""
    chosen: dict[str, Block] = {}
    for block in blocks:
        if block.format == "unknown" or not block.facts:
            continue
        best = chosen.get(block.format)
        if best is None or _richness(block) > _richness(best):
            chosen[block.format] = block
    return list(chosen.values())


def triage(evidence: Evidence, fill) -> Triage:
    """Findings and next commands for the evidence. `fill(template, values)` is the one placeholder
    filler (kb/command_fill.fill); it is passed in so this module does no quoting of its own."""
    book = load_rules(RULES_PATH)
    blocks = list(evidence.blocks)
    base_values = evidence_fill_values(evidence)
    platforms = targets(evidence.context.platform)
    result = Triage()
    seen_text: set[str] = set()
    seen_cmd: set[tuple[str, str]] = set()

    def add_finding(text: str, source: str, block: Block | None) -> None:
        if text in seen_text:
            return
        seen_text.add(text)
        result.findings.append(
            Finding(
                text=text,
                source=source,
                format=block.format if block else None,
                lines=f"{block.start_line}-{block.end_line}" if block else None,
            )
        )

    for block in _described_blocks(blocks)[:MAX_BLOCKS_DESCRIBED]:
        for s in describe(block)[:MAX_PER_BLOCK]:
            add_finding(s, "facts", block)

    rule_findings: list[tuple[str, str, Block]] = []
    for rule in book.rules:
        for block in _blocks_for(rule, blocks):
            if not _held(rule, block):
                continue
            values = dict(base_values)
            own = {kind: source.value(block.facts) for kind, source in rule.fill.items()}
            if any(v is None for v in own.values()):
                continue  # a rule's own values are part of its condition
            values.update(own)
            for k, v in block_values(block).items():
                values.setdefault(k, v)
            if _needs_idle_event(rule, values):
                continue
            result.fired.append(rule.name)
            text = _finding_text(rule, block.facts, values)
            if text:
                rule_findings.append((text, rule.name, block))
            for c in _rule_commands(rule, values, platforms, fill):
                if (c.command, c.platform) not in seen_cmd:
                    seen_cmd.add((c.command, c.platform))
                    result.commands.append(c)
            break  # each rule once: its first block that holds

    # Rule sentences say what to do; the fact sentences what was seen. Keep room for both.
    result.findings = result.findings[: MAX_FINDINGS - min(RULE_SENTENCES, len(rule_findings))]
    for text, name, block in rule_findings[: MAX_FINDINGS - len(result.findings)]:
        add_finding(text, name, block)

    if not result.fired:
        for c in _rule_commands(book.baseline, base_values, platforms, fill):
            result.commands.append(c)
    if not result.findings:
        add_finding(_nothing_read(evidence), "facts", None)
    elif not result.fired:
        add_finding(
            "None of perfkb's triage rules fired on these numbers: beyond what is said above, "
            "nothing crosses its thresholds; compare with a capture from a good or a bad moment.",
            "facts",
            None,
        )
    return result


def _nothing_read(evidence: Evidence) -> str:
    lines = evidence.total_lines or sum(
        max(b.end_line - b.start_line + 1, 0) for b in evidence.blocks
    )
    if not evidence.blocks or all(b.format == "unknown" for b in evidence.blocks):
        return (
            f"perfkb read {_plural(lines, 'line')} but recognised no capture it can measure in "
            "them (tkprof, 10046, AWR/Statspack wait tables, truss/strace, mpstat, pstack, "
            "DTrace...): paste one of those for numbers."
        )
    return "The recognised captures carry no numbers perfkb can put into words."


# at most this many next commands in an answer: the strong matches' own first, then the rules'
MAX_COMMANDS = 12


def next_commands(
    evidence: Evidence,
    matches: list[Match],
    entries: Mapping[str, Entry],
    found: Triage | None = None,
) -> list[SuggestedCommand]:
    """The strong matches' own commands for the platform, then (when nothing is high) the triage
    rules' (kb/rules/triage.yaml). Unknown platform: Oracle commands once as 'any', OS commands
    for Solaris and for Linux, each labelled."""
    os_targets = targets(evidence.context.platform)
    values = evidence_fill_values(evidence)
    out: list[SuggestedCommand] = []
    seen: set[tuple[str, str]] = set()

    def add(command: str, plat: str, why: str, source: str) -> None:
        if (command, plat) in seen or len(out) >= MAX_COMMANDS:
            return
        seen.add((command, plat))
        out.append(SuggestedCommand(command=command, platform=plat, why=why, source=source))

    strong = [m for m in matches if m.confidence in ("high", "medium") and not m.related_only][:3]
    for m in strong:
        entry = entries.get(m.id)
        if entry is None:
            continue
        for c in entry.next_commands:
            if c.platform == "any":
                add(command_fill.fill(c.command, values), "any", c.why_with_caveats(), entry.id)
        for plat in os_targets:
            own = [c for c in entry.next_commands if c.platform == plat]
            if not own:
                other = [c for c in entry.next_commands if c.platform not in (plat, "any")]
                own = [c.model_copy(update={"command": translate(c.command, plat)}) for c in other]
            for c in own:
                # The one place an entry's command is filled: kb/command_fill.py validates each
                # value for its kind and quotes it for where it stands (or leaves its name).
                add(command_fill.fill(c.command, values), plat, c.why_with_caveats(), entry.id)
    if found is None:
        found = triage(evidence, command_fill.fill)
    if not any(m.confidence == "high" for m in matches):
        for c in found.commands:
            add(c.command, c.platform, c.why, f"triage:{c.rule}")
    return out
