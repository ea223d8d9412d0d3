"""Propose signatures from evidence, so a postmortem author starts from what the trace showed
rather than a blank YAML box. Thresholds sit below what was observed (about half), so the
same incident with somewhat different numbers still matches."""

from __future__ import annotations

from collections.abc import Mapping

from ingest.facts import findings
from ingest.model import Block, Evidence
from kb.signatures import Signature

# Below these shares/values a fact is not distinctive enough to build a signature on.
MIN_SHARE_PCT = 20.0


def _top(table: object, n: int = 1) -> list[tuple[str, float]]:
    if not isinstance(table, Mapping):
        return []
    items = [(k, float(v)) for k, v in table.items() if isinstance(v, int | float)]
    return sorted(items, key=lambda kv: -kv[1])[:n]


def _num(x: float) -> float:
    """Round a threshold to something a person would write."""
    if x >= 100:
        return float(int(x // 10 * 10))
    if x >= 10:
        return float(int(x))
    return round(x, 1) if x >= 1 else round(x, 3)


def _cond(fact: str, key: str | None, op: str, value: float | str) -> dict:
    c: dict = {"fact": fact, "op": op, "value": value}
    if key is not None:
        c["key"] = key
    return c


def _syscalls(b: Block) -> dict | None:
    f = b.facts
    conds = []
    for name, share in _top(f.get("syscall.share_pct"), 2):
        if share < MIN_SHARE_PCT:
            continue
        count = (f.get("syscall.count") or {}).get(name, 0)
        avg = (f.get("syscall.avg_ms") or {}).get(name)
        sub = [_cond("syscall.count", name, ">=", _num(max(1.0, count / 2)))]
        if avg:
            sub.append(_cond("syscall.avg_ms", name, ">=", _num(avg / 2)))
        conds.append({"all": sub})
    for name, count in _top(f.get("repeat.count"), 1):
        if count >= 5:
            conds.append({"all": [_cond("repeat.count", name, ">=", _num(count / 2))]})
    if not conds:
        return None
    return {"sources": ["truss", "strace"], "when": conds[0] if len(conds) == 1 else {"all": conds}}


def _tkprof(b: Block) -> dict | None:
    f = b.facts
    conds = []
    if (f.get("tkprof.unaccounted_pct") or 0) >= 50:
        conds.append(
            {
                "fact": "tkprof.elapsed_s",
                "op": ">=",
                "ref": {"fact": "tkprof.accounted_s", "times": 2},
            }
        )
    for name, pct in _top(f.get("event.pct_of_waited"), 1):
        if pct >= MIN_SHARE_PCT:
            conds.append(_cond("event.pct_of_waited", name, ">=", _num(pct / 2)))
    if not conds:
        return None
    return {
        "sources": ["tkprof"],
        "when": conds[0] if len(conds) == 1 else {"all": conds},
        "specific": len(conds) > 1,
    }


def _waits(b: Block) -> dict | None:
    f = b.facts
    conds = []
    for name, pct in _top(f.get("event.pct_of_waited"), 1):
        if pct >= MIN_SHARE_PCT:
            conds.append(_cond("event.pct_of_waited", name, ">=", _num(pct / 2)))
    for name, req in _top(f.get("enqueue.requests"), 1):
        if req >= 100:
            conds.append(_cond("enqueue.requests", name, ">=", _num(req / 2)))
    if not conds:
        return None
    return {
        "sources": ["waits", "tkprof"] if len(conds) == 1 else ["waits"],
        "when": {"all": conds},
    }


def _mpstat(b: Block) -> dict | None:
    f = b.facts
    share = float(f.get("cpu.share_sys_over_50_pct") or 0)
    if share < 50:
        return None
    return {
        "sources": ["mpstat"],
        "when": _cond("cpu.share_sys_over_50_pct", None, ">=", _num(share / 2)),
        "specific": False,
    }


def _os_sampler(b: Block) -> dict | None:
    """vmstat, iostat, sar, pidstat, prstat: up to two of the catalogue's findings
    (ingest.facts.findings) the block shows (never from a since-boot sample, which describes the
    uptime, not the incident)."""
    f = b.facts
    if f.get("os.since_boot"):
        return None
    conds = []
    for finding in findings():  # the catalogue's, in its order
        value = f.get(finding.fact)
        if isinstance(value, int | float) and value >= finding.from_:
            # half of what the incident showed, as the other builders ask
            conds.append(_cond(finding.fact, None, ">=", _num(value / 2)))
    if not conds:
        return None
    return {
        "sources": [b.format],
        "when": conds[0] if len(conds) == 1 else {"all": conds[:2]},
        "specific": False,
    }


def _functions(b: Block) -> dict | None:
    f = b.facts
    conds = []
    for name, _ in _top(f.get("frame.top"), 1):
        conds.append(_cond("frame.count", name, ">=", 1.0))
    for layer, _ in _top(f.get("layer.count"), 2):
        conds.append(_cond("layer.count", layer, ">=", 1.0))
    for name, count in _top(f.get("probe.count"), 1):
        conds.append(_cond("probe.count", name, ">=", _num(count / 2)))
    if not conds:
        return None
    sources = ["stack", "dtrace"] if b.format == "stack" else ["dtrace"]
    if any(c["fact"].startswith("probe.") for c in conds):
        sources = ["dtrace"]
    return {"sources": sources, "when": {"all": conds}}


_BUILDERS = {
    "truss": _syscalls,
    "strace": _syscalls,
    "tkprof": _tkprof,
    "waits": _waits,
    "mpstat": _mpstat,
    **dict.fromkeys(("vmstat", "iostat", "sar", "pidstat", "prstat"), _os_sampler),
    "stack": _functions,
    "dtrace": _functions,
}


def propose_signatures(evidence: Evidence) -> list[Signature]:
    out: list[Signature] = []
    for i, block in enumerate(evidence.blocks):
        build = _BUILDERS.get(block.format)
        draft = build(block) if build else None
        if not draft:
            continue
        draft.setdefault("specific", True)
        name = f"{block.format}-{i + 1}"
        try:
            out.append(
                Signature.model_validate(
                    {
                        "name": name,
                        "description": f"proposed from the {block.format} evidence",
                        "weight": 0.7 if draft["specific"] else 0.3,
                        **draft,
                    }
                )
            )
        except ValueError:
            continue  # a proposal that does not validate is no help; skip it
    return out
