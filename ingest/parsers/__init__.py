"""The parser registry. Order is the tie-break when two formats claim the same lines: the more
specific shapes come first. sar comes before mpstat: `sar -u` prints a `CPU %user ...` header
mpstat also scores, and sar's header check leaves mpstat's own column order to mpstat."""

from __future__ import annotations

from ingest.base import Parser
from ingest.parsers.cgroup import CgroupCpuParser
from ingest.parsers.dtrace import DtraceParser
from ingest.parsers.free import FreeParser
from ingest.parsers.hanganalyze import HanganalyzeParser
from ingest.parsers.iostat import IostatParser
from ingest.parsers.lgwr import LgwrTraceParser
from ingest.parsers.lockstat import LockstatParser
from ingest.parsers.meminfo import MeminfoParser
from ingest.parsers.mpstat import MpstatParser
from ingest.parsers.netstat import NetstatParser
from ingest.parsers.nfsiostat import NfsiostatParser
from ingest.parsers.oraparam import OraParamParser
from ingest.parsers.perf import PerfParser
from ingest.parsers.pidstat import PidstatParser
from ingest.parsers.pressure import PressureParser
from ingest.parsers.procvmstat import ProcVmstatParser
from ingest.parsers.prstat import PrstatParser
from ingest.parsers.sar import SarParser
from ingest.parsers.stack import StackParser
from ingest.parsers.strace import StraceParser
from ingest.parsers.tkprof import TkprofParser
from ingest.parsers.top import TopParser
from ingest.parsers.trace10046 import Trace10046Parser
from ingest.parsers.truss import TrussParser
from ingest.parsers.uptime import UptimeParser
from ingest.parsers.vdollar import VdollarParser
from ingest.parsers.vmstat import VmstatParser
from ingest.parsers.waits import WaitsParser
from ingest.parsers.xplan import XplanParser

PARSERS: tuple[type[Parser], ...] = (
    TkprofParser,
    Trace10046Parser,
    HanganalyzeParser,
    LgwrTraceParser,
    TrussParser,
    StraceParser,
    VmstatParser,
    IostatParser,
    PidstatParser,
    PrstatParser,
    SarParser,
    MpstatParser,
    WaitsParser,
    VdollarParser,
    XplanParser,
    OraParamParser,
    LockstatParser,
    PerfParser,
    TopParser,
    UptimeParser,
    MeminfoParser,
    PressureParser,
    NetstatParser,
    ProcVmstatParser,
    CgroupCpuParser,
    NfsiostatParser,
    FreeParser,
    DtraceParser,
    StackParser,
)

__all__ = ["PARSERS"]
