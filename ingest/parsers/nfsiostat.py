"""Linux `nfsiostat` (nfs-utils): per NFS mount, the client's view of READ and WRITE calls.

    filer01:/vol/oradata mounted on /u02/oradata:

               ops/s       rpc bklog
             412.300           0.000

    read:              ops/s            kB/s           kB/op         retrans    avg RTT (ms)    avg exe (ms)  avg queue (ms)          errors
                     301.200        2409.600           8.000        0 (0.0%)          31.204          32.117           0.412        0 (0.0%)
    write:             ops/s            kB/s           kB/op         retrans    avg RTT (ms)    avg exe (ms)  avg queue (ms)          errors
                     110.100        7046.400          64.000        2 (0.0%)          18.310          19.004           0.233        0 (0.0%)

Releases differ: nfs-utils 1.x prints `read:` on its own line and the column header (tabs) on
the next; 2.x puts both on one line and adds `avg queue (ms)` and `errors`. The columns are
read from the header by name, so either order or a missing column reads the same. avg RTT is
the time the server (and the network) took; avg exe the whole call as the application waits
for it, queueing in the client included; their difference is time in the client's RPC queue
(slot table). `rpc bklog` is that queue's length.

`nfsiostat 5 3` prints every mount once per interval; the first report of a mount is averaged
over the time since it was mounted (as iostat's first is since boot): when a mount has later
reports its first is left out, when it has only that one the block is marked `os.since_boot`.
Means over the reports are weighted by the calls in each.
"""

from __future__ import annotations

import re
from typing import ClassVar

from ingest.base import Parser
from ingest.model import Format, Platform
from ingest.parsers.pasted import number, unpaste

MAX_LINE = 1024
MAX_MOUNTS = 200
MIN_OPS_PER_S = 1.0  # a mount with fewer calls per second is not where the time goes
_MOUNT = re.compile(r"^\s*(?P<dev>\S{1,400}:\S{0,400})\s+mounted\s+on\s+(?P<mnt>\S.{0,400}?):\s*$")
_COLUMNS = re.compile(
    r"ops?/s|kB/s|kB/op|retrans|avg\s+RTT\s+\(ms\)|avg\s+exe\s+\(ms\)|avg\s+queue\s+\(ms\)|errors"
    r"|rpc\s+bklog",
    re.IGNORECASE,
)
_OP = re.compile(r"^\s*(?P<op>[a-z][a-z_]{1,20}):(?:\s+(?P<rest>.*))?$", re.IGNORECASE)
_VALUE = re.compile(r"[\d.,']+\s*\(\s*[\d.,]+\s*%\s*\)|\S+")
# the sentences of `nfsiostat -a/-d/-p` (attribute cache, directory and page cache statistics)
_SENTENCE = re.compile(
    r"\d.*\b(?:revalidat\w*|hitting in cache|invalidat\w*|VFS|NFS|pages?|readdir\w*|lookups?|"
    r"getattr|attributes?|dentr\w*|inodes?|open\w*)\b",
    re.IGNORECASE,
)
_NAMES = {
    "ops/s": "ops_s",
    "op/s": "ops_s",  # nfs-utils 1.x's mount line
    "kb/s": "kb_s",
    "kb/op": "kb_op",
    "retrans": "retrans",
    "avg rtt (ms)": "rtt_ms",
    "avg exe (ms)": "exe_ms",
    "avg queue (ms)": "queue_ms",
    "errors": "errors",
    "rpc bklog": "bklog",
}


def _header(text: str) -> list[str] | None:
    """The column names of a header line (`ops/s kB/s ... avg exe (ms)`), or None."""
    cols = [_NAMES[" ".join(m.group(0).lower().split())] for m in _COLUMNS.finditer(text)]
    return cols if len(cols) >= 2 and cols[0] == "ops_s" else None


def _values(text: str, cols: list[str]) -> dict[str, float] | None:
    """One value row under `cols`: `12.300 ... 0 (0.0%) ...`; retrans and errors are counts
    with their share in brackets (the share is kept, as `_pct`)."""
    tokens = _VALUE.findall(text)
    if len(tokens) != len(cols):
        return None
    row: dict[str, float] = {}
    for col, token in zip(cols, tokens, strict=True):
        if "(" in token:
            count, share = token.split("(", 1)
            n, pct = number(count.strip()), number(share.strip(" )%"))
            if n is None or pct is None:
                return None
            row[col], row[f"{col}_pct"] = n, pct
            continue
        v = number(token)
        if v is None:
            return None
        row[col] = v
    return row


class NfsiostatParser(Parser):
    format: ClassVar[Format] = "nfsiostat"
    platforms: ClassVar[tuple[str, ...]] = ("linux",)

    def __init__(self) -> None:
        super().__init__()
        self.mount: str | None = None
        self.op: str | None = None  # the op whose header came on its own line (1.x)
        self.cols: list[str] | None = None  # the header the next value row is under
        self.reports: dict[str, int] = {}  # mount -> reports seen
        # (mount, op) -> [(report number, row)]
        self.rows: dict[tuple[str, str], list[tuple[int, dict[str, float]]]] = {}
        self.devices: dict[str, str] = {}

    @classmethod
    def start_score(cls, line: str) -> int:
        if len(line) > MAX_LINE or "mounted on" not in line:
            return 0
        return 2 if _MOUNT.match(unpaste(line)) else 0

    def feed(self, line: str) -> bool:
        if len(line) > MAX_LINE:
            return False
        text = unpaste(line)
        if not text.strip():
            return bool(self.lines)
        if (m := _MOUNT.match(text)) is not None:
            mount = m["mnt"].strip()
            if mount not in self.reports and len(self.reports) >= MAX_MOUNTS:
                self.mount = None
                return True
            self.mount = mount
            self.devices[mount] = m["dev"]
            self.reports[mount] = self.reports.get(mount, 0) + 1
            self.op, self.cols = None, None
            return True
        if self.mount is None and not self.lines:
            return False
        if (m := _OP.match(text)) is not None and not text.lstrip()[:1].isdigit():
            cols = _header(m["rest"] or "")
            if m["rest"] and cols is None:
                return False
            self.op, self.cols = m["op"].lower(), cols
            return True
        if (cols := _header(text)) is not None:
            self.cols = cols
            if "bklog" in cols:
                self.op = "mount"
            return True
        if self.cols is not None and self.op is not None:
            row = _values(text, self.cols)
            if row is None:
                self.malformed += 1
                return True
            if self.mount is not None:
                samples = self.rows.setdefault((self.mount, self.op), [])
                if len(samples) < 10_000:
                    samples.append((self.reports[self.mount], row))
            self.cols = None
            return True
        # the -a/-d/-p sections' sentences ("inode revalidations, hitting in cache 91% of the
        # time"): part of the report, nothing this parser reads
        return self.mount is not None and len(text) < 200 and _SENTENCE.search(text) is not None

    def _mean(self, mount: str, op: str) -> tuple[dict[str, float], int] | None:
        """Call-weighted means over the mount's reports of `op` (the first left out when later
        ones exist); and how many reports they are over."""
        samples = self.rows.get((mount, op))
        if not samples:
            return None
        if self.reports.get(mount, 1) > 1:
            later = [(n, r) for n, r in samples if n > 1]
            samples = later or samples
        ops = sum(r.get("ops_s", 0.0) for _, r in samples)
        out: dict[str, float] = {"ops_s": round(ops / len(samples), 3)}
        for col in ("rtt_ms", "exe_ms", "queue_ms", "kb_op", "kb_s"):
            vals = [(r[col], r.get("ops_s", 0.0)) for _, r in samples if col in r]
            if not vals:
                continue
            weight = sum(w for _, w in vals)
            mean = (
                sum(v * w for v, w in vals) / weight
                if weight
                else sum(v for v, _ in vals) / len(vals)
            )
            out[col] = round(mean, 3)
        retrans = [r["retrans_pct"] for _, r in samples if "retrans_pct" in r]
        if retrans:
            out["retrans_pct"] = max(retrans)
        backlog = [r["bklog"] for _, r in samples if "bklog" in r]
        if backlog:
            out["bklog"] = max(backlog)
        errors = [r["errors"] for _, r in samples if "errors" in r]
        if errors:
            out["errors"] = sum(errors)
        return out, len(samples)

    def facts(self) -> tuple[dict, dict, list[str], Platform | None]:
        if not self.rows:
            return {}, {}, [], None
        facts: dict = {}
        tables: dict[str, dict[str, float]] = {}
        mounts: dict[str, dict] = {}
        worst: tuple[float, str, dict[str, float]] | None = None
        bklog = 0.0
        for (mount, op), _ in sorted(self.rows.items()):
            got = self._mean(mount, op)
            if got is None:
                continue
            row, n = got
            mounts.setdefault(mount, {"device": self.devices.get(mount, ""), "reports_used": n})[
                op
            ] = row
            if op == "mount":
                bklog = max(bklog, row.get("bklog", 0.0))
                continue
            key = f"{mount} {op}"
            for col, fact in (
                ("exe_ms", "nfs.exe_ms"),
                ("rtt_ms", "nfs.rtt_ms"),
                ("ops_s", "nfs.ops_per_s"),
            ):
                if col in row:
                    tables.setdefault(fact, {})[key] = row[col]
            if op in ("read", "write") and row.get("ops_s", 0.0) >= MIN_OPS_PER_S:
                exe = row.get("exe_ms", row.get("rtt_ms"))
                if exe is not None and (worst is None or (exe, key) > (worst[0], worst[1])):
                    worst = (exe, key, row)
        facts.update(tables)
        for op in ("read", "write"):
            exe = [
                r[op]["exe_ms"]
                for r in mounts.values()
                if op in r and "exe_ms" in r[op] and r[op].get("ops_s", 0.0) >= MIN_OPS_PER_S
            ]
            if exe:
                facts[f"nfs.max_{op}_exe_ms"] = max(exe)
        if worst is not None:
            exe, key, row = worst
            facts["nfs.worst"] = key
            facts["nfs.worst_exe_ms"] = exe
            facts["nfs.worst_ops_per_s"] = row.get("ops_s", 0.0)
            if "rtt_ms" in row:
                facts["nfs.worst_rtt_ms"] = row["rtt_ms"]
                facts["nfs.worst_client_queue_ms"] = round(max(0.0, exe - row["rtt_ms"]), 3)
        retrans = [
            row["retrans_pct"]
            for per_op in mounts.values()
            for row in per_op.values()
            if isinstance(row, dict) and "retrans_pct" in row
        ]
        if retrans:
            facts["nfs.max_retrans_pct"] = max(retrans)
        facts["nfs.max_backlog"] = bklog
        facts["os.since_boot"] = 1.0 if all(n == 1 for n in self.reports.values()) else 0.0
        return facts, {"mounts": mounts}, ["nfsiostat"], "linux"
