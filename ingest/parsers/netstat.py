"""Network protocol counters: Linux `netstat -s` (sections `Ip:`, `Tcp:`, `Udp:`, `TcpExt:` with
`1234 segments retransmitted` or `Name: value` lines), `nstat` / `nstat -a` (`#kernel` then
`TcpRetransSegs  1234  0.0`) and Solaris `netstat -s` (`tcpRetransSegs = 1234` pairs).

Every counter is stored under its nstat name (netstat's sentences are mapped to them), so
signatures read one name whichever tool printed it. These counters only grow from boot: with
one sample they are totals over the uptime and are marked `os.since_boot` (never compared with
a threshold); when the same counter appears again (a second `netstat -s`), the difference
between the first and last sample is what is reported. `nstat` without -a prints increments
since its last run; when its command line shows that, the increments are summed instead.
"""

from __future__ import annotations

import re
from typing import ClassVar

from ingest.base import Parser
from ingest.model import Format, Platform
from ingest.parsers.counters import CounterSamples
from ingest.parsers.pasted import number, sample_mark, unpaste

MAX_LINE = 1024
MAX_KEYS = 2000
_SECTION = re.compile(
    r"^(?P<s>Ip|Icmp|IcmpMsg|Tcp|Udp|UdpLite|TcpExt|IpExt|MPTcpExt|Sctp|Ip6|Icmp6|Udp6|TCP|UDP|IPv4|IPv6|ICMPv4|ICMPv6|RAWIP|IGMP|SCTP):\s*$"
)
_SENTENCE = re.compile(r"^\s*(?P<n>\d[\d,]{0,20})\s+(?P<what>[A-Za-z].{2,120}?)\s*$")
_NAMED = re.compile(r"^\s*(?P<what>[A-Za-z][\w ]{1,60}):\s+(?P<n>\d[\d,]{0,20})\s*$")
_NSTAT = re.compile(
    r"^\s*(?P<name>(?:Ip|Icmp|IcmpMsg|Tcp|Udp|UdpLite|TcpExt|IpExt|MPTcpExt|Sctp|Ip6|Icmp6|Udp6|UdpLite6)[A-Z]\w{1,60})\s+(?P<n>\d{1,20})(?:\s+(?P<rate>\d+(?:[.,]\d+)?))?\s*$"
)
_SOLARIS = re.compile(
    r"(?P<name>(?:tcp|udp|ip|icmp|ipv6|icmpv6|rawip|sctp|igmp)[A-Z][A-Za-z0-9]{1,40})"
    r"\s*=\s*(?P<n>-?\d{1,20})"
)
_COMMAND = re.compile(
    r"^\s*(?:\S*[#$%>]\s*)?(?:sudo\s+)?(?:\S*/)?(?P<tool>netstat|nstat)\b(?P<opts>[^|]*)"
)
_NET_HINT = re.compile(
    r"#kernel|Ip|Tcp|Udp|Icmp|Sctp|netstat|nstat|zzz|(?:tcp|udp|ip|icmp|rawip|sctp|igmp)[A-Z]"
)
_SENTENCES = {
    ("Tcp", "active connection openings"): "TcpActiveOpens",
    ("Tcp", "active connections openings"): "TcpActiveOpens",
    ("Tcp", "passive connection openings"): "TcpPassiveOpens",
    ("Tcp", "failed connection attempts"): "TcpAttemptFails",
    ("Tcp", "connection resets received"): "TcpEstabResets",
    ("Tcp", "connections established"): "TcpCurrEstab",
    ("Tcp", "segments received"): "TcpInSegs",
    ("Tcp", "segments sent out"): "TcpOutSegs",
    ("Tcp", "segments send out"): "TcpOutSegs",
    ("Tcp", "segments retransmitted"): "TcpRetransSegs",
    ("Tcp", "segments retransmited"): "TcpRetransSegs",
    ("Tcp", "bad segments received"): "TcpInErrs",
    ("Tcp", "bad segments received."): "TcpInErrs",
    ("Tcp", "resets sent"): "TcpOutRsts",
    ("Udp", "packets received"): "UdpInDatagrams",
    ("Udp", "packets to unknown port received"): "UdpNoPorts",
    ("Udp", "packets to unknown port received."): "UdpNoPorts",
    ("Udp", "packet receive errors"): "UdpInErrors",
    ("Udp", "packets sent"): "UdpOutDatagrams",
    ("Udp", "receive buffer errors"): "UdpRcvbufErrors",
    ("Udp", "send buffer errors"): "UdpSndbufErrors",
    ("Ip", "total packets received"): "IpInReceives",
    ("Ip", "incoming packets discarded"): "IpInDiscards",
    ("Ip", "incoming packets delivered"): "IpInDelivers",
    ("Ip", "requests sent out"): "IpOutRequests",
    ("Ip", "outgoing packets dropped"): "IpOutDiscards",
    ("Ip", "fragments dropped after timeout"): "IpReasmTimeout",
    ("Ip", "packet reassemblies failed"): "IpReasmFails",
    ("Ip", "reassemblies required"): "IpReasmReqds",
    ("TcpExt", "times the listen queue of a socket overflowed"): "TcpExtListenOverflows",
    ("TcpExt", "SYNs to LISTEN sockets dropped"): "TcpExtListenDrops",
    ("TcpExt", "SYNs to LISTEN sockets ignored"): "TcpExtListenDrops",
    (
        "TcpExt",
        "packets pruned from receive queue because of socket buffer overrun",
    ): "TcpExtPruneCalled",
    (
        "TcpExt",
        "packets collapsed in receive queue due to low socket buffer",
    ): "TcpExtTCPRcvCollapsed",
    ("TcpExt", "other TCP timeouts"): "TcpExtTCPTimeouts",
    ("TcpExt", "fast retransmits"): "TcpExtTCPFastRetrans",
    ("TcpExt", "retransmits in slow start"): "TcpExtTCPSlowStartRetrans",
    ("TcpExt", "connections reset due to unexpected data"): "TcpExtTCPAbortOnData",
    ("TcpExt", "connections aborted due to timeout"): "TcpExtTCPAbortOnTimeout",
}
_SOLARIS_NAMES = {
    "tcpRetransSegs": "TcpRetransSegs",
    "tcpOutDataSegs": "TcpOutSegs",
    "tcpInSegs": "TcpInSegs",
    "tcpOutRsts": "TcpOutRsts",
    "tcpAttemptFails": "TcpAttemptFails",
    "tcpEstabResets": "TcpEstabResets",
    "tcpListenDrop": "TcpExtListenDrops",
    "tcpListenDropQ0": "TcpExtListenDropsQ0",
    "tcpActiveOpens": "TcpActiveOpens",
    "tcpPassiveOpens": "TcpPassiveOpens",
    "udpInErrors": "UdpInErrors",
    "udpInOverflows": "UdpRcvbufErrors",
    "udpInDatagrams": "UdpInDatagrams",
    "udpOutDatagrams": "UdpOutDatagrams",
}
_GAUGES = frozenset({"TcpCurrEstab"})


class NetstatParser(Parser):
    format: ClassVar[Format] = "netstat"

    def __init__(self) -> None:
        super().__init__()
        self.section = ""
        self.counters = CounterSamples(max_keys=MAX_KEYS, gauges=_GAUGES)
        self.tools: set[str] = set()
        self.solaris = False

    @classmethod
    def start_score(cls, line: str) -> int:
        if len(line) > MAX_LINE or not (
            "Ip" in line
            or "Tcp" in line
            or "Udp" in line
            or "Icmp" in line
            or "stat" in line
            or "#kernel" in line
            or "zzz" in line
            or (
                "=" in line
                and ("tcp" in line or "udp" in line or "icmp" in line or "ip" in line)
                and _NET_HINT.search(line)
            )
        ):
            return 0
        text = unpaste(line)
        if text.strip() == "#kernel" or _NSTAT.match(text):
            return 2
        if _SECTION.match(text.strip()) and text.strip()[:-1] in (
            "Ip",
            "Tcp",
            "TcpExt",
            "Udp",
            "Icmp",
            "IpExt",
        ):
            return 1
        if (m := _COMMAND.match(text)) and (m["tool"] == "nstat" or "-s" in m["opts"]):
            return 1
        if text.lstrip().startswith("zzz") and sample_mark(text):
            return 1  # OSWatcher's oswnetstat: the time of the first sample
        if len(_SOLARIS.findall(text)) >= 2:
            return 1
        return 0

    def feed(self, line: str) -> bool:
        if len(line) > MAX_LINE:
            return False
        text = unpaste(line)
        stripped = text.strip()
        if not stripped:
            return bool(self.lines)
        if (mark := sample_mark(stripped)) is not None:
            self.counters.mark(mark[1])
            return True
        if stripped == "#kernel":
            if self.counters.last and "nstat" not in self.tools:
                return False  # nstat after netstat -s: another tool's counters, another block
            self.counters.new_sample()
            self.tools.add("nstat")
            return True
        if m := _COMMAND.match(text):
            if self.counters.last and self.tools and m["tool"] not in self.tools:
                return False
            if m["tool"] == "nstat" and not re.search(r"-\w*a|--ignore", m["opts"]):
                self.counters.increments = True  # nstat without -a prints increments
            self.tools.add(m["tool"])
            self.counters.new_sample()
            return True
        if m := _SECTION.match(stripped):
            self.section = m["s"]
            if m["s"] == "Ip":
                self.counters.new_sample()
            self.tools.add("netstat")
            return True
        if m := _NSTAT.match(text):
            self._set(m["name"], m["n"])
            return True
        if self.section:
            if m := _NAMED.match(text):
                name = m["what"].replace(" ", "")
                self._set(name if name.startswith(self.section) else self.section + name, m["n"])
                return True
            if m := _SENTENCE.match(text):
                what = m["what"].rstrip(".")
                key = _SENTENCES.get((self.section, what)) or _SENTENCES.get(
                    (self.section, what + ".")
                )
                self._set(key or f"{self.section}: {what[:80]}", m["n"])
                return True
        pairs = _SOLARIS.findall(text)
        if pairs and (self.section or len(pairs) >= 2):
            self.solaris = True
            for name, n in pairs:
                self._set(_SOLARIS_NAMES.get(name, name), n)
            return True
        return False

    def _set(self, name: str, text: str) -> None:
        value = number(text)
        if value is None:
            self.malformed += 1
            return
        self.counters.set(name, value)

    def facts(self) -> tuple[dict, dict, list[str], Platform | None]:
        c = self.counters
        if not c.last:
            return {}, {}, [], None
        values = c.values()
        since_boot = c.since_boot
        facts: dict = {"net.counter": values, "net.samples": float(c.samples)}
        if (rate := c.rate(values)) is not None:
            facts["net.interval_s"], facts["net.per_s"] = rate
        facts["os.since_boot"] = 1.0 if since_boot else 0.0
        out = values.get("TcpOutSegs")
        if out and "TcpRetransSegs" in values:
            facts["tcp.retrans_pct"] = round(100 * values["TcpRetransSegs"] / out, 4)
        for counter, fact in (
            ("TcpExtListenOverflows", "tcp.listen_overflows"),
            ("TcpExtListenDrops", "tcp.listen_drops"),
            ("TcpOutRsts", "tcp.resets_sent"),
            ("TcpAttemptFails", "tcp.failed_opens"),
        ):
            if counter in values:
                facts[fact] = values[counter]
        if "UdpInErrors" in values or "UdpRcvbufErrors" in values:
            facts["udp.receive_errors"] = values.get("UdpInErrors", 0.0) + values.get(
                "UdpRcvbufErrors", 0.0
            )
        details = {
            "samples": c.samples,
            "since_boot": since_boot,
            "tools": sorted(self.tools),
            "mode": c.mode,
        }
        platform: Platform = "solaris" if self.solaris else "linux"
        return facts, details, [], platform
