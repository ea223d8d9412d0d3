"""General next steps keyed by what the evidence shows, for when no known incident matches well.

Each rule reads block facts (never raw text), and carries the command for Solaris and for Linux
with why it helps and what to look for. Rules are plain data so they are easy to review. Commands
are templates: `{pid}`, `{syscall:script}`, `{event:sql}` are filled (validated and quoted for where
they stand, or left as their name) only by kb/command_fill.py.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from pydantic import BaseModel

from ingest.model import Block


class Step(BaseModel):
    solaris: str
    linux: str
    why: str


class Rule(BaseModel):
    name: str
    finding: str  # what we saw, in words
    steps: list[Step]


def _f(block: Block, name: str, key: str | None = None) -> float:
    v = block.facts.get(name)
    if key is not None:
        v = v.get(key) if isinstance(v, Mapping) else None
    return float(v) if isinstance(v, int | float) else 0.0


_CPU_FORMATS = ("mpstat", "vmstat", "iostat", "sar")


def _now(block: Block) -> bool:
    """Not a since-boot average: vmstat's or iostat's only sample describes the uptime."""
    return not _f(block, "os.since_boot")


def _top_event(block: Block) -> str | None:
    v = block.facts.get("waits.top_event")
    return v if isinstance(v, str) else None


_UNACCOUNTED = Rule(
    name="unaccounted-time",
    finding="elapsed time far above cpu + waits: the time is spent where Oracle does not measure",
    steps=[
        Step(
            solaris="for i in 1 2 3 4 5; do pstack {pid}; sleep 1; done",
            linux="for i in 1 2 3 4 5; do eu-stack -p {pid}; sleep 1; done",
            why="Sample the server process's stack a few times: the frames that repeat show the code "
            "path the instrumentation misses (look up unknown prefixes: sl = OS calls, kge = errors).",
        ),
        Step(
            solaris="truss -c -f -p {pid}   # Ctrl-C after 10-20 s",
            linux="strace -c -f -p {pid}   # Ctrl-C after 10-20 s",
            why="Count the syscalls the process makes meanwhile: many identical reads or a slow call "
            "explain uninstrumented time.",
        ),
        Step(
            solaris="prstat -mL -p {pid} 1 5",
            linux="pidstat -u -w -t -p {pid} 1 5",
            why="LAT (Solaris) or high involuntary context switches (Linux) mean the process waits for "
            "a CPU: run-queue time also shows up as unaccounted.",
        ),
    ],
)
_HIGH_SYS = Rule(
    name="high-sys",
    finding="CPUs busy in system (kernel) mode",
    steps=[
        Step(
            solaris="prstat -mLc 1 5",
            linux="pidstat -u 1 5",
            why="Find the processes with the high SYS share first.",
        ),
        Step(
            solaris="dtrace -n 'syscall:::entry { @[execname, probefunc] = count(); } tick-10s { exit(0); }'",
            linux="perf trace -s -a -- sleep 10",
            why="Count syscalls system-wide by process: the hot syscall names the kernel work.",
        ),
        Step(
            solaris="truss -c -f -p {pid}",
            linux="strace -c -f -p {pid}",
            why="Per-process syscall counts and time for the busiest process.",
        ),
    ],
)
_MUTEX = Rule(
    name="mutex-spins",
    finding="many mutex spins (smtx) with high sys",
    steps=[
        Step(
            solaris="lockstat -C -D 20 sleep 10",
            linux="perf lock record -a -- sleep 10 && perf lock report",
            why="Shows which kernel locks are contended and who holds them.",
        )
    ],
)
_IOWAIT = Rule(
    name="io-wait",
    finding="CPUs waiting on I/O",
    steps=[
        Step(
            solaris="iostat -xnz 1 10",
            linux="iostat -xz 1 10",
            why="Per-device service times and queue lengths: one slow device stands out.",
        )
    ],
)
_INTERRUPTS = Rule(
    name="interrupt-skew",
    finding="one CPU takes most interrupts",
    steps=[
        Step(
            solaris="intrstat 1 5",
            linux="mpstat -I SUM -P ALL 1 5; cat /proc/interrupts",
            why="Which device's interrupts land on that CPU; consider spreading them.",
        )
    ],
)
_SOFTIRQ_HOT = Rule(
    name="softirq-hot-cpu",
    finding="one or more CPUs are taken over by interrupt and softirq work (%irq + %soft)",
    steps=[
        Step(
            solaris="intrstat 1 5",
            linux="mpstat -I SCPU -P ALL 1 5; cat /proc/softirqs",
            why="Which softirq (NET_RX, BLOCK, TIMER...) lands on the hot CPU: NET_RX on one CPU "
            "is a NIC queue (or RPS) pinned there.",
        ),
        Step(
            solaris="echo ::interrupts | mdb -k",
            linux="grep -E 'CPU|eth|ens|mlx|nvme' /proc/interrupts; ethtool -l IFACE",
            why="Which device's interrupt lines go to that CPU, and how many queues the NIC has "
            "to spread them (irqbalance, smp_affinity).",
        ),
    ],
)
_STEAL = Rule(
    name="cpu-steal",
    finding="the hypervisor gives the CPUs' time to other guests (%steal)",
    steps=[
        Step(
            solaris="mpstat 1 5",
            linux="vmstat 1 10   # the st column; then ask the hypervisor's owner",
            why="Steal is time this VM was runnable but the host ran someone else: the fix is on "
            "the host (overcommit, CPU caps), not in the guest.",
        )
    ],
)
_DNS_TIMEOUT = Rule(
    name="dns-timeout",
    finding="waits on a DNS server's socket (port 53) ran out",
    steps=[
        Step(
            solaris="cat /etc/resolv.conf; grep hosts /etc/nsswitch.conf; time getent hosts HOSTNAME",
            linux="cat /etc/resolv.conf; grep hosts /etc/nsswitch.conf; time getent hosts HOSTNAME",
            why="A name server that does not answer costs its full timeout (5 s by default) per "
            "try before the next one: fix or remove it, or resolve the name from /etc/hosts.",
        )
    ],
)
_SLOW_DEVICE = Rule(
    name="slow-device",
    finding="a device answers slowly (high await)",
    steps=[
        Step(
            solaris="iostat -xnz 1 10",
            linux="iostat -xz 1 10",
            why="Watch asvc_t/wsvc_t (Solaris) or r_await/w_await and aqu-sz (Linux) per device "
            "now: a queue growing with await is saturation; high await at a short queue is the "
            "device or the path behind it.",
        ),
        Step(
            solaris="dtrace -n 'io:::start { @[execname, args[1]->dev_statname] = count(); } "
            "tick-10s { exit(0); }'",
            linux="pidstat -d 1 10",
            why="Which processes issue the I/O to that device.",
        ),
    ],
)
_RUN_QUEUE = Rule(
    name="run-queue",
    finding="more runnable threads than CPUs (run queue or CPU latency)",
    steps=[
        Step(
            solaris="prstat -mLc 1 5",
            linux="pidstat -u -w 1 5",
            why="LAT (Solaris) or %wait and nvcswch/s (Linux) per thread: who waits for a CPU and "
            "who holds them.",
        ),
        Step(
            solaris="dtrace -n 'sched:::enqueue { @[cpu] = count(); } tick-10s { exit(0); }'",
            linux="perf sched record -- sleep 10 && perf sched latency --sort max",
            why="Scheduler latency per CPU or task: a few CPUs doing all the work points at "
            "binding or interrupts.",
        ),
    ],
)
_MEMORY = Rule(
    name="memory-pressure",
    finding="the system swaps or scans for free pages",
    steps=[
        Step(
            solaris="vmstat -p 1 5; echo ::memstat | mdb -k",
            linux="free -m; grep -E 'MemAvailable|Swap|Commit' /proc/meminfo",
            why="Anonymous page-ins/outs (api/apo) and who holds the memory (SGA, ZFS ARC, "
            "processes); on Linux MemAvailable and Committed_AS against the limit.",
        ),
        Step(
            solaris="prstat -s rss -n 10 1 1",
            linux="dmesg -T | grep -i -E 'oom|killed process'; ps -eo pid,rss,comm --sort=-rss | "
            "head",
            why="The largest processes, and whether the OOM killer already acted.",
        ),
    ],
)
_USER_LOCKS = Rule(
    name="user-locks",
    finding="threads wait on user-level locks (prstat LCK)",
    steps=[
        Step(
            solaris="plockstat -A -e 10 -p PID",
            linux="perf record -g -p PID -- sleep 10 && perf report --stdio",
            why="Which locks are contended and from where; pair it with a few stacks of the "
            "waiting threads.",
        ),
        Step(
            solaris="pstack PID/LWP",
            linux="eu-stack -p PID",
            why="The stack of the waiting thread names the lock's owner code.",
        ),
    ],
)
_RETRANSMITS = Rule(
    name="tcp-retransmits",
    finding="TCP retransmits a noticeable share of segments",
    steps=[
        Step(
            solaris="netstat -s -P tcp 1 5 | grep -i -E 'retrans|drop'",
            linux="nstat -az | grep -i -E 'retrans|drop|overflow'; ss -ti",
            why="Retransmits and drops per connection: one peer or one interface stands out.",
        )
    ],
)
_SLOW_CONNECT = Rule(
    name="slow-connect",
    finding="listener or connection handling shows slow accept/fork/exec",
    steps=[
        Step(
            solaris="truss -f -d -D -E -o /tmp/lsnr.truss -p {pid}",
            linux="strace -f -tt -T -o /tmp/lsnr.strace -p {pid}",
            why="Trace the listener with timestamps while connecting: time from accept() to the "
            "child's reply is the connect cost; look for slow fork, exec and name lookups.",
        ),
        Step(
            solaris="netstat -s -P tcp | grep -i listendrop",
            linux="nstat -az TcpExtListenDrops TcpExtListenOverflows",
            why="Listen queue drops mean connections arrive faster than the listener accepts them.",
        ),
    ],
)
_HOT_SYSCALL = Rule(
    name="hot-syscall",
    finding="one syscall dominates the traced time",
    steps=[
        Step(
            solaris="dtrace -n 'syscall::{syscall:script}:entry /pid == {pid:script}/ { @[ustack()] = count(); }'",
            linux="bpftrace -e 'tracepoint:syscalls:sys_enter_{syscall:script} /pid == {pid:script}/ { @[ustack] = count(); }'",
            why="The user stacks that make the hot syscall tell which code path to fix.",
        )
    ],
)
_STACK = Rule(
    name="oracle-stack",
    finding="an Oracle process stack",
    steps=[
        Step(
            solaris="for i in 1 2 3 4 5; do pstack {pid}; sleep 1; done",
            linux="for i in 1 2 3 4 5; do eu-stack -p {pid}; sleep 1; done",
            why="One stack is a snapshot; frames that stay on top across samples are the hot path.",
        )
    ],
)
# The event name comes from the evidence, so the SQL goes through a quoted heredoc (<<'EOF': the
# shell expands nothing in it) with the name as a SQL literal ({event:sql} doubles its quotes and
# refuses line breaks); `set define off` keeps SQL*Plus from reading '&' as a substitution variable.
_ASH_BY_EVENT = (
    "sqlplus -s / as sysdba <<'EOF'\n"
    "set define off\n"
    "select sql_id, count(*) from v$active_session_history where event = '{event:sql}'"
    " and sample_time > sysdate - 1/24 group by sql_id order by 2 desc;\n"
    "EOF"
)
_EVENT = Rule(
    name="dominant-event",
    finding="one wait event dominates",
    steps=[
        Step(
            solaris=_ASH_BY_EVENT,
            linux=_ASH_BY_EVENT,
            why="Which statements wait on the dominant event (ASH needs the Diagnostics Pack; Snapper "
            "works without it).",
        )
    ],
)
_BASELINE = Rule(
    name="baseline",
    finding="no strong finding",
    steps=[
        Step(
            solaris="mpstat 1 5; vmstat 1 5; prstat -mLc 1 5",
            linux="mpstat -P ALL 1 5; vmstat 1 5; pidstat -u -w 1 5",
            why="A first look at CPU, run queue and the busiest threads.",
        ),
        Step(
            solaris="sqlplus: exec dbms_monitor.session_trace_enable(SID, SERIAL, waits => true); "
            "then tkprof the trace",
            linux="sqlplus: exec dbms_monitor.session_trace_enable(SID, SERIAL, waits => true); "
            "then tkprof the trace",
            why="A 10046 trace with waits shows where a session's time goes; paste its tkprof here.",
        ),
    ],
)

# ---- OS profiles and Linux system files (lockstat, perf, memory, PSI, netstat, load) --------
_LOCK_HOT = Rule(
    name="kernel-lock-hot-spot",
    finding="one kernel lock takes a large share of the lock events",
    steps=[
        Step(
            solaris="lockstat -C -s 10 -D 10 sleep 5",
            linux="perf lock record -a -- sleep 10 && perf lock report",
            why="The stacks that take the hot lock (-s) say which code path to relieve; the "
            "caller column alone often names only a wrapper.",
        ),
        Step(
            solaris="lockstat -kIW -D 20 sleep 5",
            linux="perf record -a -g -- sleep 10 && perf report --stdio --no-children --sort symbol",
            why="Where the CPUs are meanwhile: mutex_vector_enter or a spin routine on top means "
            "the lock costs CPU, not only latency.",
        ),
    ],
)
_KERNEL_PROFILE = Rule(
    name="kernel-time-in-profile",
    finding="a CPU profile with much of its time in the kernel",
    steps=[
        Step(
            solaris="dtrace -n 'profile-997 /arg0/ { @[stack()] = count(); } tick-10s { exit(0); }'",
            linux="perf record -a -g -- sleep 10 && perf report --stdio --children --sort symbol",
            why="Kernel stacks show what the hot kernel functions serve (page faults, locks, "
            "syscalls of one process).",
        ),
        Step(
            solaris="prstat -mLc 1 5",
            linux="pidstat -u -w 1 5",
            why="Which processes the kernel time belongs to (SYS column).",
        ),
    ],
)
_SINCE_BOOT = Rule(
    name="counters-since-boot",
    finding="network or stall counters from one sample: totals since boot, not what happens now",
    steps=[
        Step(
            solaris="netstat -s -P tcp > /tmp/a; sleep 10; netstat -s -P tcp > /tmp/b; "
            "diff /tmp/a /tmp/b",
            linux="nstat -n; sleep 10; nstat",
            why="Two samples ten seconds apart give what grows now; paste both (or nstat's "
            "increments) here.",
        )
    ],
)
_LISTEN_DROPS = Rule(
    name="listen-queue-overflows",
    finding="connections dropped because a listen queue was full",
    steps=[
        Step(
            solaris="netstat -an -f inet | grep LISTEN; ndd -get /dev/tcp tcp_conn_req_max_q",
            linux="ss -lnt; sysctl net.core.somaxconn net.ipv4.tcp_max_syn_backlog",
            why="Which listener's queue is full (ss: Recv-Q against Send-Q) and the backlog limit; "
            "for the TNS listener also its QUEUESIZE.",
        )
    ],
)
_RETRANSMITS = Rule(
    name="tcp-retransmits",
    finding="TCP segments retransmitted (1 % or more of those sent)",
    steps=[
        Step(
            solaris="netstat -s -P tcp 10 3",
            linux="sar -n ETCP 1 10; ss -ti",
            why="Retransmits per second now, and per connection (ss -ti: retrans) to find the "
            "peer or interface that loses packets.",
        )
    ],
)
_MEMORY_SHORT = Rule(
    name="memory-short",
    finding="little memory available, or swap in use",
    steps=[
        Step(
            solaris="vmstat -p 1 10",
            linux="vmstat 1 10; sar -B 1 10",
            why="Is memory being paged now (si/so, api/apo, pgscan) or was it swapped out long ago?",
        ),
        Step(
            solaris="prstat -s rss -n 20 1 1",
            linux="ps -eo pid,rss,comm --sort=-rss | head -20",
            why="The largest resident processes.",
        ),
    ],
)
_PRESSURE = Rule(
    name="pressure-stalls",
    finding="tasks stalled on CPU, memory or I/O (PSI avg10 of 10 % or more)",
    steps=[
        Step(
            solaris="prstat -mLc 1 5; iostat -xnz 1 5",
            linux="vmstat 1 10; iostat -xz 1 10",
            why="Which resource: run queue (vmstat r), paging (si/so) or device latency.",
        )
    ],
)
_LOAD = Rule(
    name="load-above-cpus",
    finding="load average above the number of CPUs",
    steps=[
        Step(
            solaris="prstat -mLc 1 5",
            linux="vmstat 1 5; pidstat -u -w 1 5",
            why="Runnable threads waiting for a CPU (LAT; vmstat r) or, on Linux, tasks in "
            "uninterruptible sleep (vmstat b, state D) inflating the load.",
        )
    ],
)
_OS_RULES: list[tuple[Callable[[Block], bool], Rule]] = [
    (lambda b: b.format == "lockstat" and _f(b, "lock.top_pct") >= 20, _LOCK_HOT),
    (lambda b: b.format == "perf" and _f(b, "perf.kernel_pct") >= 30, _KERNEL_PROFILE),
    (
        lambda b: (
            b.format == "netstat"
            and _f(b, "os.since_boot") == 0
            and (_f(b, "tcp.listen_overflows") > 0 or _f(b, "tcp.listen_drops") > 0)
        ),
        _LISTEN_DROPS,
    ),
    (
        lambda b: b.format == "netstat" and _f(b, "tcp.retrans_pct") >= 1,
        _RETRANSMITS,
    ),
    (
        lambda b: b.format in ("netstat", "pressure", "procvmstat") and _f(b, "os.since_boot") == 1,
        _SINCE_BOOT,
    ),
    (
        lambda b: (
            b.format == "procvmstat"
            and _f(b, "os.since_boot") == 0
            and (_f(b, "vm.allocstall") > 0 or _f(b, "vm.direct_scan_pages") > 0)
        ),
        _MEMORY_SHORT,
    ),
    (
        lambda b: (
            b.format in ("meminfo", "free", "top")
            and (
                ("mem.available_pct" in b.facts and _f(b, "mem.available_pct") < 10)
                or _f(b, "mem.swap_used_pct") >= 20
            )
        ),
        _MEMORY_SHORT,
    ),
    (lambda b: b.format == "pressure" and _f(b, "psi.max_avg10_pct") >= 10, _PRESSURE),
    (lambda b: b.format in ("uptime", "top") and _f(b, "load.per_cpu") >= 1.5, _LOAD),
]

Predicate = Callable[[Block], bool]

RULES: list[tuple[Predicate, Rule]] = [
    (
        lambda b: (
            b.format == "tkprof"
            and _f(b, "tkprof.elapsed_s") >= 1
            and _f(b, "tkprof.unaccounted_pct") >= 50
        ),
        _UNACCOUNTED,
    ),
    (
        lambda b: (
            b.format == "mpstat"
            and (_f(b, "cpu.sys_pct") >= 30 or _f(b, "cpu.share_sys_over_50_pct") >= 50)
        ),
        _HIGH_SYS,
    ),
    (lambda b: b.format == "mpstat" and _f(b, "cpu.max_smtx") >= 500, _MUTEX),
    (lambda b: b.format in _CPU_FORMATS and _now(b) and _f(b, "cpu.wait_pct") >= 20, _IOWAIT),
    (
        lambda b: b.format in ("vmstat", "sar") and _now(b) and _f(b, "cpu.sys_pct") >= 30,
        _HIGH_SYS,
    ),
    (
        lambda b: b.format in ("iostat", "sar") and _now(b) and _f(b, "io.worst_await_ms") >= 20,
        _SLOW_DEVICE,
    ),
    (
        lambda b: (
            _f(b, "runq.per_cpu_max") > 1
            or _f(b, "runq.ldavg_per_cpu_max") > 1
            or _f(b, "proc.max_lat_pct") >= 10
        ),
        _RUN_QUEUE,
    ),
    (
        lambda b: (
            b.format in ("vmstat", "sar")
            and _now(b)
            and (
                _f(b, "swap.out_kbps_max") > 0
                or _f(b, "swap.out_pages_per_s_max") > 0
                or _f(b, "page.scan_rate_avg") >= 100
            )
        ),
        _MEMORY,
    ),
    (lambda b: b.format == "prstat" and _f(b, "proc.max_lck_pct") >= 10, _USER_LOCKS),
    (lambda b: b.format == "sar" and _f(b, "tcp.retrans_pct") >= 1, _RETRANSMITS),
    (lambda b: b.format == "mpstat" and _f(b, "cpu.intr_top_share_pct") >= 40, _INTERRUPTS),
    (lambda b: b.format == "mpstat" and _f(b, "cpu.max_irq_pct") >= 30, _SOFTIRQ_HOT),
    (lambda b: b.format == "mpstat" and _f(b, "cpu.max_steal_pct") >= 20, _STEAL),
    (lambda b: b.format in ("truss", "strace") and _f(b, "socket.dns_timeouts") > 0, _DNS_TIMEOUT),
    (
        lambda b: (
            b.format in ("truss", "strace")
            and (
                _f(b, "syscall.count", "accept") > 0
                or _f(b, "fork.avg_ms") >= 10
                or _f(b, "exec.avg_ms") >= 10
            )
        ),
        _SLOW_CONNECT,
    ),
    (
        lambda b: (
            b.format in ("truss", "strace")
            and max((v for v in (b.facts.get("syscall.share_pct") or {}).values()), default=0) >= 50
        ),
        _HOT_SYSCALL,
    ),
    (lambda b: b.format == "stack" and bool(b.facts.get("layer.count")), _STACK),
    (lambda b: b.format in ("waits", "tkprof") and _f(b, "waits.top_pct") >= 50, _EVENT),
    *_OS_RULES,
]


def hot_syscall(block: Block) -> str | None:
    shares = block.facts.get("syscall.share_pct")
    if isinstance(shares, Mapping) and shares:
        return max(shares.items(), key=lambda kv: kv[1])[0]
    return None


def suggestions(blocks: list[Block]) -> list[tuple[Rule, Block]]:
    """Rules that fire, in rule order, each once; the baseline when none does."""
    out: list[tuple[Rule, Block]] = []
    seen: set[str] = set()
    for predicate, rule in RULES:
        for block in blocks:
            try:
                fired = predicate(block)
            except (TypeError, ValueError):
                fired = False
            if fired and rule.name not in seen:
                seen.add(rule.name)
                out.append((rule, block))
                break
    if not out:
        out.append(
            (_BASELINE, blocks[0] if blocks else Block(format="unknown", start_line=0, end_line=0))
        )
    return out


def step_values(block: Block) -> dict[str, object]:
    """Placeholder values the block a rule fired on supplies ({syscall}, {event}); unchecked here:
    kb/command_fill.py validates and quotes every value when the command is filled."""
    values: dict[str, object] = {"syscall": hot_syscall(block) or "read"}
    event = _top_event(block)
    if event is not None:
        values["event"] = event
    return values


def render_step(
    step: Step, rule: Rule, block: Block, platform: str
) -> tuple[str, str, dict[str, object]]:
    """(command template, why, the block's placeholder values): the caller fills the template
    once, with these values and the evidence's own (pid, sid), through kb/command_fill.py."""
    command = step.solaris if platform == "solaris" else step.linux
    return command, f"{rule.finding}. {step.why}", step_values(block)
