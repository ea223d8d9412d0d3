"""Fuzz every parser, the detector, the matcher, the entry path and the next-command filler.

    .venv/bin/python fuzz/run_fuzz.py                        # 100,000 inputs per target
    .venv/bin/python fuzz/run_fuzz.py --examples 2000        # a quick look
    .venv/bin/python fuzz/run_fuzz.py --only detector truss  # some targets
    .venv/bin/python fuzz/run_fuzz.py --atheris 120          # plus 120 s of atheris per target
    .venv/bin/python fuzz/run_fuzz.py --only entry-yaml entry-json commands --seconds 6
                                                             # the bounded run `make test` makes

The long run is a benchmark-style run, not part of CI; the entry targets and the command filler
(fuzz/kb_targets.py, issue 20) also run for a few seconds each in `make test`.

Inputs come from hypothesis: the committed fixtures (every format) damaged by a few random
mutations (hostile numbers such as nan, inf, -1 and 1e309; deleted, repeated, swapped, cut and
spliced lines; control characters, NUL, U+FFFD, latin-1 mojibake, huge tokens, CRLF), plus
arbitrary unicode and soups of the tokens the formats are made of. atheris, when installed, adds
coverage-guided byte inputs starting from the same fixtures.

Each input must hold the contracts in ingest/base.py and ingest/model.py, not just "not crash":
start_score is 0, 1 or 2; a line feed() rejects leaves the parser's facts unchanged; facts are
catalogued (ingest/facts.py) for the block's format, numeric and finite; blocks lie inside the
input; text stays within TEXT_CAP; Evidence and AnalysisResult survive a JSON round trip; and no
input takes more than --slow CPU seconds. A failure is written to --out with its input and
traceback, and the run goes on. The exit status is 1 when anything failed.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import hashlib
import json
import math
import multiprocessing
import os
import platform
import random
import re
import subprocess
import sys
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))
import kb_targets  # noqa: E402  (fuzz/kb_targets.py: entries and the next-command filler)

FIXTURES = ROOT / "tests" / "fixtures"
MAX_FIXTURE_LINES = 120

HOSTILE_NUMBERS = [
    "nan", "NaN", "-nan", "inf", "-inf", "Infinity", "-1", "-0", "0", "1e309", "-1e309",
    "99999999999999999999999999", "0x7fffffff", "1,2,3", "1.2.3", "٣", "١٢٣", "", "-", ".",
    "1e-400", "12.5%", "%", "3K", "2.1M", "4G", "5ms", "7us", "NaNms", "+", "--1", "1/0",
]  # fmt: skip
TOKENS = [
    "=", "(", ")", "<", ">", "|", "@", "[", "]", ":", "->", "+", "0x", "...", "#", "*", "-----",
    "call", "count", "cpu", "elapsed", "disk", "query", "current", "rows", "Parse", "Execute",
    "Fetch", "total", "Event", "Waits", "Time", "(s)", "Avg", "wait", "%DB", "Class", "CPU",
    "%usr", "%sys", "%idle", "usr", "sys", "idl", "minf", "mjf", "xcal", "intr", "smtx",
    "read", "write", "shmdt", "semop", "semtimedop", "pread64", "futex", "clone", "fork1",
    "ERR#4", "EINTR", "ENOENT", "<unfinished ...>", "<... read resumed>", "+++ exited", "---",
    "SIGCHLD", "#0", "0x00007f", "in", "from", "libc.so.6", "oracle`kslwtb", "kghalo",
    "opiodr", "ttcpip", "Thread", "LWP", "-----------------", "db file sequential read",
    "log file sync", "enq: TX - row lock contention", "CPU", "TKPROF:", "Release", "19.0.0.0.0",
    "********************************************************************************",
    "Elapsed", "times", "include", "waiting", "Times", "Waited", "Max.", "Total", "Waited",
    "value", "------------- Distribution -------------", "@@@@@@@@", "|@@@@", "dtrace:",
    "probe", "matched", "Linux", "SunOS", "12:00:01", "AM", "PM", "all", "1", "12", "0.00",
    "100.00", "3.5", "1234567", "-1", "nan", "inf", "\t", "  ", "\x00", "\ufffd", "é", "ö",
]  # fmt: skip


# -- inputs -------------------------------------------------------------------------------------


def fixture_texts() -> list[str]:
    texts = []
    for path in sorted(FIXTURES.rglob("*.txt")):
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
        texts.append("\n".join(lines[:MAX_FIXTURE_LINES]))
    if not texts:
        raise SystemExit(f"no fixtures under {FIXTURES}")
    return texts


def mutate(text: str, rng: random.Random, others: list[str], steps: int) -> str:
    """Damage `text` the ways pasted captures get damaged."""
    lines = text.split("\n") or [""]
    for _ in range(steps):
        i = rng.randrange(len(lines))
        line = lines[i]
        kind = rng.randrange(14)
        if kind == 0:  # a number becomes something hostile
            words = line.split(" ")
            numeric = [k for k, w in enumerate(words) if any(c.isdigit() for c in w)]
            if numeric:
                words[rng.choice(numeric)] = rng.choice(HOSTILE_NUMBERS)
                lines[i] = " ".join(words)
        elif kind == 1 and len(lines) > 1:
            del lines[i]
        elif kind == 2:
            lines.insert(i, line)
        elif kind == 3:
            j = rng.randrange(len(lines))
            lines[i], lines[j] = lines[j], lines[i]
        elif kind == 4:
            lines[i] = line[: rng.randrange(len(line) + 1)]
        elif kind == 5:
            lines = lines[: i + 1]
            lines[-1] = lines[-1][: rng.randrange(len(lines[-1]) + 1)]
        elif kind == 6:
            other = rng.choice(others).split("\n")
            lines.insert(i, rng.choice(other))
        elif kind == 7:
            pos = rng.randrange(len(line) + 1)
            junk = "".join(rng.choice(TOKENS) for _ in range(rng.randrange(1, 4)))
            lines[i] = line[:pos] + junk + line[pos:]
        elif kind == 8:
            lines[i] = line.replace("  ", "\t") if rng.random() < 0.5 else " ".join(line.split())
        elif kind == 9:
            pos = rng.randrange(len(line) + 1)
            lines[i] = (
                line[:pos] + rng.choice(["\x00", "\r", "\x1b[31m", "\ufffd", "\u2028"]) + line[pos:]
            )
        elif kind == 10:  # a latin-1 file read as UTF-8, or the other way round
            lines[i] = line.encode("utf-8", "replace").decode("latin-1")
        elif kind == 11:
            lines[i] = line + " " + rng.choice(TOKENS) * rng.choice([100, 3000, 20000])
        elif kind == 12:
            lines[i] = line.upper() if rng.random() < 0.5 else line.lower()
        else:
            fence = rng.choice(["```", "```text", "> ", "$ truss -p 1234", ""])
            lines.insert(i, fence)
    joiner = "\r\n" if rng.random() < 0.05 else "\n"
    return joiner.join(lines)


# Long runs of one short chunk: what makes a regex with nested or adjacent repeats backtrack
# (a 64 KB line of '#' once took 17 s). Detection cuts lines at 64 KB, so that is the length.
RUN_CHUNKS = ["#", "%", "$", ">", "->", "a#", "ERR#4", "@", "|@", "@@", "ms", "a()", "read(", "(",
              " ", "\t", "0", "0.", "1 ", "e1", "0x", "a", "a.", ":", "`", "a`b", "=", "= ", "<",
              "[", "[pid ", "+0x", "-", "- ", "/", "x/", "\\", '"', "'", ",", "...", "*"]  # fmt: skip


ROW_PREFIX = "Fetch        1      0.00       0.00          0          3          0  "


def long_line(head: str, chunk: str, length: int = 65536, prefix: str = "") -> str:
    """A format's first lines (so the line lands inside a block), then one huge line, maybe
    after the start of a table row (so the run is one token among many)."""
    return head + "\n" + prefix + (chunk * (length // len(chunk) + 1))[:length]


def token_soup(rng: random.Random) -> str:
    rows = []
    for _ in range(rng.randrange(1, 40)):
        row = [rng.choice(TOKENS) for _ in range(rng.randrange(1, 12))]
        rows.append((" " * rng.randrange(0, 6)) + rng.choice([" ", "  ", "\t"]).join(row))
    return "\n".join(rows)


def strategy(texts: list[str]):
    """A hypothesis strategy of inputs: mostly damaged fixtures, some unicode and token soup."""
    from hypothesis import strategies as st

    damaged = st.builds(
        lambda seed, i, steps, j: (
            mutate(texts[i % len(texts)], random.Random(seed), texts, steps)
            if j
            else texts[i % len(texts)]
        ),
        st.integers(0, 2**32 - 1),
        st.integers(0, len(texts) - 1),
        st.integers(0, 8),
        st.integers(0, 9),
    )
    soup = st.integers(0, 2**32 - 1).map(lambda s: token_soup(random.Random(s)))
    unicode = st.text(max_size=3000)
    runs = st.builds(
        lambda i, lines, chunk, n, row: long_line(
            "\n".join(texts[i % len(texts)].split("\n")[:lines]),
            chunk,
            n,
            ROW_PREFIX if row else "",
        ),
        st.integers(0, len(texts) - 1),
        st.integers(0, 12),
        st.sampled_from(RUN_CHUNKS),
        st.sampled_from([300, 5000, 65536]),
        st.booleans(),
    )
    return st.one_of(damaged, damaged, damaged, soup, unicode, runs)


# -- checks -------------------------------------------------------------------------------------


class ContractError(AssertionError):
    pass


def _need(ok: bool, message: str) -> None:
    if not ok:
        raise ContractError(message)


def _finite(value: Any) -> bool:
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, dict):
        return all(_finite(v) for v in value.values())
    if isinstance(value, list | tuple):
        return all(_finite(v) for v in value)
    return True


def check_block(block: Any, total_lines: int) -> None:
    from ingest.facts import FACTS
    from ingest.model import TEXT_CAP

    _need(
        1 <= block.start_line <= block.end_line, f"line range {block.start_line}-{block.end_line}"
    )
    _need(block.end_line <= max(total_lines, 1), f"end_line {block.end_line} > {total_lines}")
    _need(len(block.text.encode("utf-8", "replace")) <= TEXT_CAP + 4, "block text over TEXT_CAP")
    _need(block.malformed_lines >= 0, "negative malformed_lines")
    _need(_finite(block.details), "a non-finite number in details")
    for name, value in block.facts.items():
        spec = FACTS.get(name)
        _need(spec is not None, f"fact {name} is not in the catalogue")
        assert spec is not None
        _need(block.format in spec.sources, f"fact {name} from {block.format}, not a source")
        values = value.values() if isinstance(value, dict) else [value]
        for v in values:
            if isinstance(v, bool):
                raise ContractError(f"fact {name} is a bool")
            if isinstance(v, float):
                _need(math.isfinite(v), f"fact {name} = {v}")
            elif spec.kind == "number":
                _need(isinstance(v, int | float), f"fact {name} = {v!r}, not a number")


def check_detector(text: str) -> None:
    from ingest.detect import parse_text
    from ingest.model import Evidence

    evidence = parse_text(text)
    for block in evidence.blocks:
        check_block(block, evidence.total_lines)
    dumped = evidence.model_dump_json()
    again = Evidence.model_validate_json(dumped)  # details' tuples come back as lists
    _need(again.model_dump_json() == dumped, "Evidence does not survive a JSON round trip")


def parser_check(parser_type: Any) -> Callable[[str], None]:
    """Drive one parser the way the detector does: open on a non-zero score, feed until a
    non-blank line is rejected (a rejected blank line is skipped), finish, look again."""

    def check(text: str) -> None:
        parser, start = None, 0
        lines = [line.rstrip("\r") for line in text.split("\n")]
        compare = len(lines) <= 60  # facts() after every rejection is quadratic
        for n, line in enumerate(lines, 1):
            score = parser_type.start_score(line)
            _need(score in (0, 1, 2), f"start_score {score!r}")
            if parser is not None:
                before = parser.facts() if compare else None
                accepted = parser.feed(line)
                _need(isinstance(accepted, bool), f"feed returned {accepted!r}")
                if accepted:
                    parser.lines += 1
                    parser.keep(line)
                    continue
                if before is not None:
                    _need(parser.facts() == before, f"a rejected line changed the facts: {line!r}")
                if not line.strip():
                    continue
                check_block(parser.finish(start, n - 1), len(lines))
                parser = None
            if score:
                parser, start = parser_type(), n
                if parser.feed(line):
                    parser.lines += 1
                    parser.keep(line)
                else:
                    parser = None
        if parser is not None:
            check_block(parser.finish(start, len(lines)), len(lines))

    return check


_MATCHER: Any = None


def check_matcher(text: str) -> None:
    global _MATCHER
    from kb.analysis import analyze_evidence
    from kb.matcher import Matcher
    from kb.results import AnalysisResult

    if _MATCHER is None:
        from kb.entry_yaml import read_entries

        entries = [
            e for p in sorted((ROOT / "kb" / "entries").glob("*.yaml")) for e in read_entries(p)
        ]
        _MATCHER = Matcher(entries)
    from ingest.detect import parse_text

    result = analyze_evidence(parse_text(text), matcher=_MATCHER)
    for m in result.matches:
        _need(0.0 <= m.score <= 1.0, f"score {m.score} for {m.id}")
    AnalysisResult.model_validate_json(result.model_dump_json())


def targets() -> dict[str, Callable[[str], None]]:
    from ingest.parsers import PARSERS

    out: dict[str, Callable[[str], None]] = {"detector": check_detector}
    out.update({p.format: parser_check(p) for p in PARSERS})
    out["matcher"] = check_matcher
    out["entry-yaml"] = kb_targets.check_entry_yaml
    out["entry-json"] = kb_targets.check_entry_json
    out["commands"] = kb_targets.check_command_value
    return out


def target_strategy(name: str, texts: list[str]):
    """The inputs for one target: evidence-like text for the parsers, the detector and the
    matcher; damaged entries for the entry targets; hostile values for the command filler."""
    if name == "entry-yaml":
        return kb_targets.entry_strategy(False, mutate)
    if name == "entry-json":
        return kb_targets.entry_strategy(True, mutate)
    if name == "commands":
        return kb_targets.command_strategy()
    return strategy(texts)


# -- running ------------------------------------------------------------------------------------


@dataclass
class Outcome:
    target: str
    engine: str
    inputs: int = 0
    failures: int = 0
    slow: int = 0
    seconds: float = 0.0
    slowest_ms: float = 0.0
    kinds: dict[str, int] = field(default_factory=dict)


def confirmed_cpu(check: Callable[[str], None], text: str, first: float, limit: float) -> float:
    """A slow input is run again after a garbage collection: a full collection of the fuzzer's
    own heap can land inside any one input, so only a slow second run counts."""
    if first <= limit:
        return first
    gc.collect()
    started = time.process_time()
    with contextlib.suppress(Exception):
        check(text)
    return min(first, time.process_time() - started)


def record(
    out_dir: Path, target: str, text: str | bytes, exc: BaseException | None, why: str
) -> str:
    raw = text.encode("utf-8", "surrogatepass") if isinstance(text, str) else text
    digest = hashlib.sha256(raw).hexdigest()[:12]
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / f"{target}-{digest}.input").write_bytes(raw)
    detail = "".join(traceback.format_exception(exc)) if exc else why
    (out_dir / f"{target}-{digest}.txt").write_text(f"{why}\n\n{detail}", encoding="utf-8")
    if exc is None:
        return why
    frame = traceback.extract_tb(exc.__traceback__)[-1] if exc.__traceback__ else None
    where = f"{Path(frame.filename).name}:{frame.lineno}" if frame else "?"
    return f"{type(exc).__name__} at {where}: {str(exc)[:80]}"


class _OutOfTime(Exception):
    """Raised inside the hypothesis test to end a run bounded by --seconds."""


def run_hypothesis(
    name: str, examples: int, slow_s: float, out_dir: Path, seed: int, seconds: float = 0.0
) -> Outcome:
    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis import seed as hseed

    check = targets()[name]
    outcome = Outcome(name, "hypothesis")
    texts = fixture_texts()
    deadline = math.inf  # set after the warm-up below: --seconds is time spent fuzzing

    @hseed(seed)
    @settings(
        max_examples=examples,
        deadline=None,
        database=None,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @given(target_strategy(name, texts))
    def fuzz(text: str) -> None:
        # the first input always runs: a bounded run that checked nothing would pass for a run
        # (CI 2026-12-02 at load 5-7 on 2 cores failed "every target ran inputs" at 1 s a target)
        if outcome.inputs and time.perf_counter() > deadline:
            raise _OutOfTime
        outcome.inputs += 1
        started = time.process_time()  # CPU: a busy machine must not make an input look slow
        try:
            check(text)
        except Exception as exc:  # recorded, and the run goes on
            kind = record(out_dir, name, text, exc, "failed")
            outcome.failures += 1
            outcome.kinds[kind] = outcome.kinds.get(kind, 0) + 1
        elapsed = confirmed_cpu(check, text, time.process_time() - started, slow_s)
        outcome.slowest_ms = max(outcome.slowest_ms, elapsed * 1000)
        if elapsed > slow_s:
            outcome.slow += 1
            kind = record(out_dir, name, text, None, f"slow: {elapsed:.2f} s for {len(text)} chars")
            outcome.kinds["slow"] = outcome.kinds.get("slow", 0) + 1

    check("")  # warm up: the first call builds the matcher and compiles regexes
    started = time.perf_counter()
    if seconds:
        deadline = started + seconds
    with contextlib.suppress(_OutOfTime):
        fuzz()
    outcome.seconds = time.perf_counter() - started
    return outcome


def atheris_seeds(name: str) -> list[str]:
    """atheris's starting corpus: the starter entries for the entry targets, hostile values for
    the command filler, the evidence fixtures for everything else."""
    if name in ("entry-yaml", "entry-json"):
        from kb.entry_yaml import dump_entry

        return [
            json.dumps(d) if name == "entry-json" else dump_entry(e)
            for d, e in kb_targets.starter_pairs()
        ]
    if name == "commands":
        return list(kb_targets.SHELL_HOSTILE) + list(kb_targets.SENTINELS.values())
    return fixture_texts()


def run_atheris(name: str, seconds: int, slow_s: float, out_dir: Path) -> Outcome:
    """A child process runs libFuzzer (it exits the process when done); failures are recorded
    by the child exactly like the hypothesis ones."""
    corpus = out_dir / "atheris-corpus" / name
    corpus.mkdir(parents=True, exist_ok=True)
    for n, text in enumerate(atheris_seeds(name)):
        (corpus / f"seed-{n:03d}").write_bytes(text.encode()[:4096])
    stats = out_dir / f"atheris-{name}.json"
    cmd = [
        sys.executable, __file__, "--atheris-child", name, "--out", str(out_dir),
        "--slow", str(slow_s), "--", f"-max_total_time={seconds}", "-max_len=4096",
        f"-timeout={max(10, int(slow_s * 10))}", "-rss_limit_mb=2048", str(corpus),
    ]  # fmt: skip
    started = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    outcome = Outcome(name, "atheris", seconds=time.perf_counter() - started)
    if stats.exists():  # saved by the child on every failure and every 500 inputs
        data = json.loads(stats.read_text())
        for key in ("inputs", "failures", "slow", "slowest_ms", "kinds"):
            setattr(outcome, key, data[key])
    done = re.search(r"Done (\d+) runs", proc.stderr)
    if done:  # libFuzzer's own count is exact (the child's last save may be behind)
        outcome.inputs = int(done.group(1))
    if proc.returncode not in (0,) and "Done" not in proc.stderr:
        outcome.failures += 1
        tail = proc.stderr.strip().splitlines()[-3:]
        outcome.kinds[f"libFuzzer stopped: {' | '.join(tail)[:160]}"] = 1
    return outcome


def atheris_child(name: str, out_dir: Path, slow_s: float, argv: list[str]) -> None:
    import atheris

    with atheris.instrument_imports():
        import ingest.detect  # noqa: F401
        import ingest.parsers  # noqa: F401
        import kb.command_fill  # noqa: F401
        import kb.entry_yaml  # noqa: F401
        import kb.evaluate  # noqa: F401
        import kb.matcher  # noqa: F401
        import kb.models  # noqa: F401
        import kb.store  # noqa: F401
    check = targets()[name]
    outcome = Outcome(name, "atheris")
    stats = out_dir / f"atheris-{name}.json"

    def save() -> None:
        stats.write_text(json.dumps(outcome.__dict__))

    def one(data: bytes) -> None:
        text = data.decode("utf-8", errors="replace")
        outcome.inputs += 1
        started = time.process_time()  # CPU: a busy machine must not make an input look slow
        try:
            check(text)
        except Exception as exc:
            kind = record(out_dir, name, data, exc, "failed")
            outcome.failures += 1
            outcome.kinds[kind] = outcome.kinds.get(kind, 0) + 1
            save()
        elapsed = confirmed_cpu(check, text, time.process_time() - started, slow_s)
        outcome.slowest_ms = max(outcome.slowest_ms, elapsed * 1000)
        if elapsed > slow_s:
            outcome.slow += 1
            record(out_dir, name, data, None, f"slow: {elapsed:.2f} s for {len(data)} bytes")
            outcome.kinds["slow"] = outcome.kinds.get("slow", 0) + 1
        if outcome.inputs % 500 == 0:
            save()

    atheris.Setup([sys.argv[0], *argv], one)
    atheris.Fuzz()


def _worker(args: tuple[str, int, float, str, int, float]) -> Outcome:
    name, examples, slow_s, out, seed, seconds = args
    return run_hypothesis(name, examples, slow_s, Path(out), seed, seconds)


def report(outcomes: list[Outcome], wall: float) -> str:
    head = f"{'target':10} {'engine':10} {'inputs':>9} {'failed':>6} {'slow':>5} {'in/s':>7} {'slowest':>9}"
    lines = [head, "-" * len(head)]
    for o in outcomes:
        rate = o.inputs / o.seconds if o.seconds else 0
        lines.append(
            f"{o.target:10} {o.engine:10} {o.inputs:9,} {o.failures:6} {o.slow:5} "
            f"{rate:7.0f} {o.slowest_ms:7.0f} ms"
        )
        for kind, n in sorted(o.kinds.items()):
            lines.append(f"    {n} x {kind}")
    total = sum(o.inputs for o in outcomes)
    lines.append(f"{total:,} inputs in {wall:.0f} s wall on {os.cpu_count()} CPUs "
                 f"({platform.python_implementation()} {platform.python_version()})")  # fmt: skip
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--examples", type=int, default=100_000, help="hypothesis inputs per target"
    )
    parser.add_argument("--only", nargs="*", help="targets (default: all)")
    parser.add_argument(
        "--seconds", type=float, default=0.0, help="stop each hypothesis target after S seconds"
    )
    parser.add_argument("--atheris", type=int, default=0, metavar="S", help="seconds per target")
    parser.add_argument("--slow", type=float, default=2.0, help="CPU seconds one input may take")
    parser.add_argument("--out", default="/tmp/perfkb-fuzz", help="where failures are written")
    parser.add_argument("--seed", type=int, default=20261122)
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--json", help="also write the outcomes here")
    parser.add_argument("--atheris-child", help=argparse.SUPPRESS)
    args, rest = parser.parse_known_args()
    out_dir = Path(args.out)
    sys.path.insert(0, str(ROOT))
    if args.atheris_child:
        atheris_child(args.atheris_child, out_dir, args.slow, [a for a in rest if a != "--"])
        return 0

    names = args.only or list(targets())
    unknown = set(names) - set(targets())
    if unknown:
        parser.error(f"unknown targets: {', '.join(sorted(unknown))}; have {', '.join(targets())}")
    started = time.perf_counter()
    jobs = [(n, args.examples, args.slow, str(out_dir), args.seed, args.seconds) for n in names]
    if args.jobs > 1 and len(jobs) > 1:
        with multiprocessing.get_context("spawn").Pool(args.jobs) as pool:
            outcomes = pool.map(_worker, jobs, chunksize=1)
    else:
        outcomes = [_worker(j) for j in jobs]
    if args.atheris:
        try:
            import atheris  # noqa: F401
        except ImportError:
            print("atheris is not installed: pip install atheris (Linux x86_64 wheels)")
        else:
            outcomes += [run_atheris(n, args.atheris, args.slow, out_dir) for n in names]
    text = report(outcomes, time.perf_counter() - started)
    print(text)
    if args.json:
        Path(args.json).write_text(json.dumps([o.__dict__ for o in outcomes], indent=1))
    if any(o.failures or o.slow for o in outcomes):
        print(f"failures and their inputs are in {out_dir}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
