"""What Oracle calls idle: the one list every Oracle parser asks.

A wait in the Idle class is a session waiting for work (the client's next call, a background
process's timer), not for a resource. Added into a total it drowns the waits that matter: a whole
AWR report's 'log file sync' at 41 % of DB time becomes 1.5 % of "waited time" once rdbms ipc
message and SQL*Net message from client are in the base. So no percentage base includes them.

The names are those of V$EVENT_NAME's Idle wait class across 9i..23ai (9i has no wait classes,
so its idle events are named here too); a row whose printed Wait Class is 'Idle' is idle whatever
its name. 'PL/SQL lock timer' is Idle in AWR (DBMS_LOCK.SLEEP) even though tkprof counts it inside
the call it sleeps in.
"""

from __future__ import annotations

IDLE_EVENTS: frozenset[str] = frozenset(
    {
        "SQL*Net message from client",
        "SQL*Net vector message from client",
        "SQL*Net message from dblink",
        "rdbms ipc message",
        "PL/SQL lock timer",
        "pmon timer",
        "smon timer",
        "pipe get",
        "jobq slave wait",
        "Streams AQ: waiting for messages in the queue",
        "Streams AQ: qmn slave idle wait",
        "Streams AQ: qmn coordinator idle wait",
        "Streams AQ: waiting for time management or cleanup tasks",
        "Streams AQ: emn coordinator idle wait",
        "Space Manager: slave idle wait",
        "DIAG idle wait",
        "dispatcher timer",
        "virtual circuit wait",
        "virtual circuit next request",
        "shared server idle wait",
        "class slave wait",
        "wait for unread message on broadcast channel",
        "wait for unread message on multiple broadcast channels",
        "gcs remote message",
        "ges remote message",
        "ASM background timer",
        "VKTM Logical Idle Wait",
        "VKRM Idle",
        "heartbeat monitor sleep",
        "GCR sleep",
        "LGWR worker group idle",
        "lreg timer",
        "watchdog main loop",
        "pool server timer",
        "AQPC idle",
        "PX Idle Wait",
        "PX Deq: Execution Msg",
        "PX Deq: Table Q Normal",
        "PX Deq: Execute Reply",
        "PX Deque wait",
        "Data Guard: Gap Manager",
        "Data Guard: Timer",
        "fbar timer",
        "single-task message",
        "null event",
        "OFS idle",
        "cell worker idle",
        "EMON slave idle wait",
        "Emon coordinator main loop",
        "MRP redo arrival",
        "LNS ASYNC end of log",
        "parallel recovery slave idle wait",
        "SGA: MMAN sleep for component shrink",
        "JS external job",
        "wakeup time manager",
    }
)

# AWR's full event tables cut names at the column width ('SQL*Net message from clien'), and
# Statspack at its own: a cut name still counts as idle
_IDLE_PREFIXES = tuple(sorted(n for n in IDLE_EVENTS if len(n) >= 20))


def is_idle(event: str, wait_class: str | None = None) -> bool:
    """Is this wait a session waiting for work rather than for a resource?"""
    if wait_class is not None and wait_class.strip().lower() == "idle":
        return True
    name = " ".join(event.split())
    if name in IDLE_EVENTS:
        return True
    return len(name) >= 18 and any(p.startswith(name) for p in _IDLE_PREFIXES)
