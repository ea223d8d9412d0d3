"""`oradebug dump hanganalyze N` / `oradebug hanganalyze N` (and the same section in a
systemstate or an incident trace) -> who waits on what, behind whom, for how long.

A DBA reads a hanganalyze for one thing: the root blocker (the last session of a chain, the one
nobody blocks) and what it is doing. An idle root blocker ('SQL*Net message from client') holds
what the others want: an uncommitted transaction. A root blocker 'not in wait' is on CPU. So the
parser follows each `Chain N:` as printed: sessions in order, each `is waiting for '<event>'`
with its `time in wait`, linked by `and is blocked by`; a session `blocked by '...os id: N,
session id: M'` that belongs to another chain points at that chain's session.

Memory is bounded: at most MAX_CHAINS chains and MAX_SESSIONS sessions per chain are kept.
"""

from __future__ import annotations

import re
from typing import ClassVar

from ingest.base import MAX_LINE, Parser
from ingest.model import Format, Platform

MAX_CHAINS = 200
MAX_SESSIONS = 100

_START = re.compile(
    r"^\s*(?:\*\*\*\s*)?(?:HANG ANALYSIS:|Chains most likely to have caused the hang:"
    r"|Chain \d+ Signature:|Non-intersecting chains:|Intersecting chains:|END OF HANG ANALYSIS"
    r"|Open chains found:|Other chains found:|Chain \d+\s*:\s*<cnode/)"
)
# 10g / 11.1 layout: `Chain 1 : <cnode/sid/sess_srno/proc_ptr/ospid/wait_event> :` then one
# `<0/122/5/0x7c8a1e10/24180/enq: TX - row lock contention>` per session, the waiter first and
# each session it waits behind on a ` -- <...>` line below it
_CHAIN_OLD = re.compile(r"^\s*Chain (\d+)\s*:\s*<cnode/")
_NODE_OLD = re.compile(
    r"^\s*(?:--\s*)?<(\d{1,4})/(\d{1,9})/(\d{1,9})/(0x[0-9a-fA-F]{1,16})/(\d{1,12})/([^>]{0,160})>\s*$"
)
_CHAIN = re.compile(r"^\s*Chain (\d+):\s*$")
_SESSION_START = re.compile(r"Oracle session identified by:")
_FIELD = re.compile(r"^\s*(instance|os id|process id|session id|session serial #)\s*:\s*(\S+)")
_WAITING = re.compile(r"\b(?:is|which is) waiting for '([^']{1,120})'")
_NOT_WAITING = re.compile(r"\b(?:is|which is) (not in a wait|on CPU|not in wait)\b")
_TIME_IN_WAIT = re.compile(r"^\s*time in wait:\s*(.+?)\s*$")
_SINCE_LAST_WAIT = re.compile(r"^\s*time since last wait:\s*(.+?)\s*$")
_BLOCKING = re.compile(r"^\s*blocking:\s*(\d+)\s+sessions?")
_BLOCKED_BY_REF = re.compile(r"is blocked by\s+'.*?os id:\s*(\d+).*?session id:\s*(\d+)'")
_SIGNATURE = re.compile(r"^\s*(?:\[\w\]\s+)?Chain (\d+) Signature:\s*(.+?)\s*$")
_SIG_HASH = re.compile(r"^\s*(?:\[\w\]\s+)?Chain (\d+) Signature Hash:\s*(0x[0-9a-fA-F]+)")
_END = re.compile(r"^\s*END OF HANG ANALYSIS\s*$")
_AFTER_END = re.compile(
    r"^\s*(?:=+|\*\*\* .*|HANG ANALYSIS DUMPS:|oradebug_node_dump_level:.*)\s*$"
)
_DURATION = re.compile(
    r"(\d+(?:\.\d+)?)\s*(days?|hours?|hrs?|min(?:ute)?s?|sec(?:ond)?s?|ms|msecs?)\b"
)
_UNIT_S = {"d": 86400.0, "h": 3600.0, "m": 60.0, "s": 1.0}


def duration_s(text: str) -> float | None:
    """'1 min 29 sec' -> 89.0; '0.000218 sec' -> 0.000218; '2 hours 5 min' -> 7500."""
    total = 0.0
    found = False
    for number, unit in _DURATION.findall(text):
        found = True
        u = unit.lower()
        if u.startswith("ms"):
            total += float(number) / 1000.0
        elif u.startswith("min"):
            total += float(number) * 60.0
        else:
            total += float(number) * _UNIT_S.get(u[0], 1.0)
    return total if found else None


class _Session:
    __slots__ = ("sid", "ospid", "serial", "instance", "event", "wait_s", "blocking", "ref")

    def __init__(self) -> None:
        self.sid: int | None = None
        self.ospid: int | None = None
        self.serial: int | None = None
        self.instance: str | None = None
        self.event: str | None = None
        self.wait_s: float | None = None
        self.blocking: int | None = None
        self.ref: tuple[int, int] | None = None  # (ospid, sid) of a blocker in another chain

    def as_dict(self) -> dict:
        return {
            "sid": self.sid,
            "serial": self.serial,
            "ospid": self.ospid,
            "instance": self.instance,
            "event": self.event,
            "time_in_wait_s": self.wait_s,
            "blocking": self.blocking,
        }


class HanganalyzeParser(Parser):
    format: ClassVar[Format] = "hanganalyze"

    def __init__(self) -> None:
        super().__init__()
        self.chains: dict[int, list[_Session]] = {}
        self.chain: list[_Session] | None = None
        self.session: _Session | None = None
        self.in_history = False
        self.signatures: dict[int, str] = {}
        self.hashes: dict[int, str] = {}
        self.ended = False

    @classmethod
    def start_score(cls, line: str) -> int:
        if len(line) > MAX_LINE:
            return 0
        return 2 if _START.match(line) else 0

    def feed(self, line: str) -> bool:
        if len(line) > MAX_LINE:
            return False
        if self.ended:
            return bool(line.strip()) and bool(_AFTER_END.match(line))
        if not line.strip():
            return True
        if _END.match(line):
            self.ended = True
            return True
        if m := _NODE_OLD.match(line):
            if self.chain is not None and len(self.chain) < MAX_SESSIONS:
                node = _Session()
                node.instance = m.group(1)
                node.sid = int(m.group(2))
                node.serial = int(m.group(3))
                node.ospid = int(m.group(5))
                node.event = m.group(6).strip() or None
                self.chain.append(node)
            self.session = None
            return True
        if m := _CHAIN.match(line) or _CHAIN_OLD.match(line):
            n = int(m.group(1))
            if n in self.chains or len(self.chains) < MAX_CHAINS:
                self.chain = self.chains.setdefault(n, [])
            else:
                self.chain = None
            self.session = None
            return True
        if m := _SIGNATURE.match(line):
            if len(self.signatures) < MAX_CHAINS:
                self.signatures.setdefault(int(m.group(1)), m.group(2)[:300])
            return True
        if m := _SIG_HASH.match(line):
            if len(self.hashes) < MAX_CHAINS:
                self.hashes.setdefault(int(m.group(1)), m.group(2))
            return True
        if _SESSION_START.search(line):
            s = _Session()
            if self.chain is None:
                self.chain = (
                    self.chains.setdefault(0, []) if len(self.chains) < MAX_CHAINS else None
                )
            if self.chain is not None and len(self.chain) < MAX_SESSIONS:
                self.chain.append(s)
            self.session = s
            self.in_history = False
            return True
        s = self.session
        if s is not None:
            if "wait history:" in line:
                self.in_history = True
                return True
            if (m := _WAITING.search(line)) and "event:" not in line:
                s.event = m.group(1)
                self.in_history = False
                return True
            if m := _NOT_WAITING.search(line):
                s.event = "not in wait"
                self.in_history = False
                return True
            if m := _BLOCKED_BY_REF.search(line):
                s.ref = (int(m.group(1)), int(m.group(2)))
                return True
            if not self.in_history:
                if m := _FIELD.match(line):
                    key, value = m.group(1), m.group(2).rstrip(",")
                    num = int(value) if value.isdecimal() else None
                    if key == "session id":
                        s.sid = num
                    elif key == "os id":
                        s.ospid = num
                    elif key == "session serial #":
                        s.serial = num
                    elif key == "instance":
                        s.instance = value
                    return True
                if m := _TIME_IN_WAIT.match(line):
                    s.wait_s = duration_s(m.group(1))
                    return True
                if m := _SINCE_LAST_WAIT.match(line):
                    if s.wait_s is None:
                        s.wait_s = duration_s(m.group(1))
                    return True
                if m := _BLOCKING.match(line):
                    s.blocking = int(m.group(1))
                    return True
        return True  # everything between the start and END OF HANG ANALYSIS is part of it

    def facts(self) -> tuple[dict, dict, list[str], Platform | None]:
        chains = {n: c for n, c in self.chains.items() if c}
        if not chains:
            if self.signatures:
                n = min(self.signatures)
                return (
                    {
                        "hang.chains": float(len(self.signatures)),
                        "hang.signature": self.signatures[n],
                    },
                    {"signatures": self.signatures, "hashes": self.hashes},
                    [],
                    None,
                )
            return {}, {}, [], None
        # the root blocker: the last session of the longest chain (first such chain)
        longest = max(chains.items(), key=lambda kv: (len(kv[1]), -kv[0]))
        root = longest[1][-1]
        waiters: set[tuple] = set()
        events: dict[str, float] = {}
        max_wait = None
        waiter_event = None
        for _, sessions in sorted(chains.items()):
            for i, s in enumerate(sessions):
                if s.event:
                    events[s.event] = events.get(s.event, 0.0) + 1.0
                blocked = i < len(sessions) - 1 or s.ref is not None
                if blocked:
                    waiters.add((s.instance, s.sid, s.ospid))
                    if s.wait_s is not None and (max_wait is None or s.wait_s > max_wait):
                        max_wait = s.wait_s
                    if waiter_event is None and s.event:
                        waiter_event = s.event
        facts: dict = {
            "hang.chains": float(len(chains)),
            "hang.waiters": float(len(waiters)),
        }
        if root.sid is not None:
            facts["hang.blocker_sid"] = float(root.sid)
        if root.ospid is not None:
            facts["hang.blocker_ospid"] = float(root.ospid)
        if root.event:
            facts["hang.blocker_event"] = root.event
        if root.wait_s is not None:
            facts["hang.blocker_wait_s"] = root.wait_s
        if root.blocking is not None:
            facts["hang.blocking_sessions"] = float(root.blocking)
        if waiter_event:
            facts["hang.waiter_event"] = waiter_event
        if max_wait is not None:
            facts["hang.max_waiter_wait_s"] = max_wait
        if events:
            facts["hang.event_count"] = events
        if self.signatures:
            facts["hang.signature"] = self.signatures[min(self.signatures)]
        details = {
            "chains": [
                {
                    "chain": n,
                    "signature": self.signatures.get(n),
                    "hash": self.hashes.get(n),
                    "sessions": [s.as_dict() for s in sessions],
                    "blocked_by_other_chain": (
                        {"ospid": sessions[-1].ref[0], "sid": sessions[-1].ref[1]}
                        if sessions[-1].ref
                        else None
                    ),
                }
                for n, sessions in sorted(chains.items())
            ],
            "root_blocker": root.as_dict(),
        }
        identifiers = list(events)
        return facts, details, identifiers, None
