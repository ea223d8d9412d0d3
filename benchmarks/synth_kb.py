"""Synthetic knowledge bases of any size, shaped like the real entries in kb/entries/.

Entry i (past the real ones) copies real entry i mod R: same fields, same signature trees (all,
any, not, fact, ref and text conditions, sources, weights). Its keyed facts keep the template's
key half of the time and otherwise take another name of the same kind (syscall, wait event,
kernel function, statistic, enqueue...) drawn from the real entries' keys plus common names;
numeric thresholds move by a factor between 0.5 and 2; regexes get an entry-specific branch that
never matches (a real KB's patterns are all different: compiled-pattern caches must cope); titles and prose get a few words from
the vocabulary and a ticket number. So a big KB has many entries about `read` or `log file sync`
that the matcher must actually evaluate, as a team's real KB would, not 10,000 unrelated ones.
The real entries are always included unchanged, first.
"""

from __future__ import annotations

import copy
import random
from functools import cache
from pathlib import Path

import yaml

from ingest.facts import FACTS
from kb.index_docs import IndexDoc, doc_from_entry
from kb.models import Entry, validate_entry

SEED = 8
ENTRIES_DIR = Path(__file__).resolve().parent.parent / "kb" / "entries"


def _names(text: str) -> list[str]:
    return text.split()


_EXTRA: dict[str, list[str]] = {
    "syscall": _names(
        """pread pwrite pread64 pwrite64 read write readv writev semtimedop semop pollsys
        poll epoll_wait io_submit io_getevents kaio lseek open openat close stat fstat access mmap
        munmap shmat shmdt brk times getrusage ioctl fcntl futex lwp_park yield nanosleep fdsync
        fsync fdatasync sendmsg recvmsg sendto recvfrom accept connect getsockname getpeername
        setsockopt fork1 vfork clone execve waitid wait4 sigaction rt_sigaction lwp_sigmask
        rt_sigprocmask setcontext mprotect madvise memcntl getdents getdents64"""
    ),
    "event": [
        "db file sequential read",
        "db file scattered read",
        "db file parallel read",
        "direct path read",
        "direct path write temp",
        "log file sync",
        "log file parallel write",
        "control file sequential read",
        "control file parallel write",
        "buffer busy waits",
        "read by other session",
        "free buffer waits",
        "write complete waits",
        "latch: cache buffers chains",
        "latch: shared pool",
        "latch free",
        "library cache lock",
        "library cache pin",
        "library cache: mutex X",
        "cursor: pin S wait on X",
        "cursor: mutex X",
        "row cache lock",
        "enq: TX - row lock contention",
        "enq: TX - index contention",
        "enq: TM - contention",
        "enq: HW - contention",
        "enq: SQ - contention",
        "enq: CF - contention",
        "gc buffer busy acquire",
        "gc cr block 2-way",
        "gc current block 2-way",
        "gc cr grant 2-way",
        "SQL*Net message from client",
        "SQL*Net more data to client",
        "resmgr:cpu quantum",
        "log buffer space",
        "log file switch completion",
        "PX Deq: Execute Reply",
    ],
    "function": _names(
        """kcbgtcr kcbgcur kcbzib kcbrls kslgetl kslfre ksqgtl ksqrcl kglpin kglget kglpnp
        kgiPinObject kgxSharedExamine kgxExclusive kksfbc kkspsc0 opiexe opifch2 opiodr qerhjFetch
        qertbFetch kdstf00000010000kmP kdsttgr ktbgcl ktuchg kturbk kqrpre kqrget skgfqio sskgpwwait
        skgpwwait semtimedop slmsrd lmsfsk pfrinstr_XCAL pevm_EXECC psdnal kpoal8 ttcpip nsbasic_brc
        ntpread snttread"""
    ),
    "statistic": [
        "parse count (hard)",
        "parse count (total)",
        "user commits",
        "user calls",
        "execute count",
        "session logical reads",
        "physical reads",
        "physical writes direct (lob)",
        "redo size",
        "logons cumulative",
        "leaf node splits",
        "messages sent",
        "table scan rows gotten",
        "sorts (disk)",
        "bytes received via SQL*Net from client",
    ],
    "enqueue": _names("TX TM CF SQ HW ST US RO KO CI TT JQ"),
    "errno": _names("ENOENT EAGAIN EINTR ETIME ENOTCONN EBADF EACCES"),
}
_WORDS = _names(
    """latency spike stall storm contention saturation queue backlog timeout retry fork socket
    listener session commit redo undo segment datafile tablespace index cursor mutex latch pool
    numa lgroup scheduler interrupt paging swap compaction hugepages semaphore slow burst nightly
    batch failover interconnect cluster standby archiver checkpoint writer reader"""
)


@cache
def real_entries() -> tuple[Entry, ...]:
    out = []
    for path in sorted(ENTRIES_DIR.glob("*.yaml")):
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
        out.append(validate_entry(data, source=path.name))
    return tuple(out)


@cache
def vocabulary() -> dict[str, tuple[str, ...]]:
    vocab: dict[str, list[str]] = {k: list(v) for k, v in _EXTRA.items()}
    for entry in real_entries():
        for sig in entry.model_dump(mode="json", by_alias=True)["signatures"]:
            for node in _fact_nodes(sig["when"]):
                kind = FACTS[node["fact"]].keyed_by
                if kind and node.get("key") and node["key"] not in vocab.setdefault(kind, []):
                    vocab[kind].append(node["key"])
    return {k: tuple(v) for k, v in vocab.items()}


def _fact_nodes(node):
    if isinstance(node, dict):
        if "fact" in node:
            yield node
            if node.get("ref"):
                yield node["ref"]
                yield from node["ref"].get("plus", [])
        for k in ("all", "any"):
            for child in node.get(k, []):
                yield from _fact_nodes(child)
        if "not" in node:
            yield from _fact_nodes(node["not"])


def _text_nodes(node):
    if isinstance(node, dict):
        if "regex" in node or "text" in node:
            yield node
        for k in ("all", "any"):
            for child in node.get(k, []):
                yield from _text_nodes(child)
        if "not" in node:
            yield from _text_nodes(node["not"])


def _mutate_signatures(sigs: list[dict], rng: random.Random, i: int) -> None:
    vocab = vocabulary()
    renamed: dict[str, str] = {}
    for sig in sigs:
        for node in _text_nodes(sig["when"]):
            if node.get("regex"):
                # every entry writes its own pattern: a KB of 10,000 entries holds thousands of
                # distinct regexes, not 30 copies (the extra branch never matches real evidence)
                node["regex"] = f"{node['regex']}(?:zq{i}zq)?"
        for node in _fact_nodes(sig["when"]):
            kind = FACTS[node["fact"]].keyed_by
            key = node.get("key")
            if key and kind in vocab:
                if key not in renamed:
                    renamed[key] = key if rng.random() < 0.5 else rng.choice(vocab[kind])
                node["key"] = renamed[key]
            value = node.get("value")
            if isinstance(value, int | float) and not isinstance(value, bool) and value:
                node["value"] = round(value * rng.uniform(0.5, 2.0), 3)


def _words(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(_WORDS) for _ in range(n))


def synthetic_data(i: int, template: Entry, rng: random.Random) -> dict:
    data = copy.deepcopy(template.model_dump(mode="json", by_alias=True, exclude_none=True))
    data["id"] = f"{template.id}-s{i}"[:100]
    data["title"] = f"{template.title} ({_words(rng, 2)} #{i})"[:200]
    data["symptom"] = f"{data['symptom']} Seen again as {_words(rng, 4)} (INC{100000 + i})."
    data["root_cause"] = f"{data['root_cause']} Here: {_words(rng, 3)}."
    data["fix"] = f"{data['fix']} {_words(rng, 2).capitalize()}."
    data["tags"] = list(dict.fromkeys([*data.get("tags", []), rng.choice(_WORDS)]))
    _mutate_signatures(data.get("signatures", []), rng, i)
    return data


def synthetic_entries(n: int, seed: int = SEED) -> list[Entry]:
    """n validated entries: the real ones, then synthetic ones derived from them."""
    real = list(real_entries())
    rng = random.Random(seed)
    out = real[:n]
    for i in range(len(out), n):
        out.append(validate_entry(synthetic_data(i, real[i % len(real)], rng)))
    return out


def synthetic_docs(n: int, seed: int = SEED) -> list[IndexDoc]:
    """Index documents for n entries, built like synthetic_entries but without validating each
    (100,000 pydantic validations would dominate the search benchmark's setup)."""
    real = list(real_entries())
    templates = [doc_from_entry(e) for e in real]
    rng = random.Random(seed)
    vocab = vocabulary()
    docs = templates[:n]
    for i in range(len(docs), n):
        t = templates[i % len(real)]
        idents = [
            x if rng.random() < 0.5 else rng.choice(vocab["syscall" if i % 3 else "event"])
            for x in t.identifiers
        ]
        docs.append(
            t.model_copy(
                update={
                    "id": f"{t.id}-s{i}"[:100],
                    "title": f"{t.title} ({_words(rng, 2)} #{i})",
                    "symptom": f"{t.symptom} Seen again as {_words(rng, 4)} (INC{100000 + i}).",
                    "root_cause": f"{t.root_cause} Here: {_words(rng, 3)}.",
                    "fix": f"{t.fix} {_words(rng, 2).capitalize()}.",
                    "identifiers": list(dict.fromkeys(idents)),
                    "tags": list(dict.fromkeys([*t.tags, rng.choice(_WORDS)])),
                }
            )
        )
    return docs
