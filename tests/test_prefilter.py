"""The detector's prefilter (ingest/parsers/__init__.py:REGISTRY, ingest/detect.py:Prefilter)
must be a necessary condition: a parser whose `start_score` gives a line more than 0 must be
admitted for it, or the detector would miss a block that format starts. This is the guard
against a parser change slipping past its prefilter: every line of every corpus snippet, every
fixture, the seeds and small captures of the benchmark generators goes through every parser.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks import gen_awr, gen_oracle, gen_os_tables, gen_stacks, gen_trace10046, gen_traces
from ingest import detect
from ingest.detect import Detector, Prefilter, prefilter
from ingest.html_report import SNIFF, html_lines, looks_like_html
from ingest.parsers import PARSERS, REGISTRY, load, parser_for
from ingest.parsers.uptime import UptimeParser

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"
CORPUS = SHARED / "corpus" / "snippets"
SEEDS = SHARED / "seeds"
GEN_BYTES = 96 * 1024  # a few thousand lines of each generated shape


def _texts(tmp: Path) -> list[str]:
    assert CORPUS.is_dir(), f"the corpus is missing: {CORPUS}"
    assert SEEDS.is_dir(), f"the seeds are missing: {SEEDS}"
    paths = [p for p in sorted(CORPUS.rglob("*")) if p.is_file()]
    paths += [p for p in sorted((ROOT / "tests" / "fixtures").rglob("*")) if p.is_file()]
    paths += [p for p in sorted(SEEDS.rglob("*")) if p.is_file()]
    texts = [p.read_text(encoding="utf-8", errors="replace") for p in paths]

    out = tmp / "gen"
    out.mkdir(parents=True, exist_ok=True)
    jobs = [
        lambda p: gen_awr.generate_awr(GEN_BYTES, p),
        lambda p: gen_oracle.generate_tkprof(GEN_BYTES, p),
    ]
    jobs.append(lambda p: gen_trace10046.generate(GEN_BYTES, p))
    jobs += [lambda p, k=k: gen_os_tables.generate(k, GEN_BYTES, p) for k in gen_os_tables.KINDS]
    jobs += [
        lambda p, r=r: gen_os_tables.generate("mpstat", GEN_BYTES, p, release=r)
        for r in gen_os_tables.MPSTAT_RELEASES
    ]
    jobs += [lambda p, k=k: gen_stacks.generate(k, GEN_BYTES, p) for k in gen_stacks.KINDS]
    for kind, modes in (("truss", gen_traces.TRUSS_MODES), ("strace", gen_traces.STRACE_MODES)):
        jobs += [lambda p, k=kind, m=m: gen_traces.generate(k, GEN_BYTES, p, mode=m) for m in modes]
    jobs.append(lambda p: gen_traces.generate_summary(GEN_BYTES, p))
    for i, job in enumerate(jobs):
        path = out / f"{i}.txt"
        job(path)
        texts.append(path.read_text(encoding="utf-8", errors="replace"))
    return texts


def _lines(texts: list[str]) -> set[str]:
    """Each line as the detector hands it to start_score: split at "\n" only, without its line
    end, cut at MAX_LINE, control characters replaced; each part of a line split at a ```
    fence on its own; an HTML report's lines as the text its tables lay out."""
    lines: set[str] = set()
    for text in texts:
        raws = text.split("\n")
        if looks_like_html(text[:SNIFF]):
            raws += [x.rstrip("\n") for x in html_lines([text])]
        for raw in raws:
            line = raw.rstrip("\r\n")[: detect.MAX_LINE]
            line = detect._CONTROL.sub(lambda m: " " if m[0] < "\ud800" else "\ufffd", line)
            lines.add(line)
            if "```" in line:
                lines.update(part for part in line.split("```") if part.strip())
    return lines


@pytest.fixture(scope="module")
def every_line(tmp_path_factory) -> list[str]:
    return sorted(_lines(_texts(tmp_path_factory.mktemp("prefilter"))))


def test_prefilter_admits_every_parser_that_scores_a_line(every_line):
    assert len(every_line) > 20_000  # the corpus, the fixtures and the generators were all read
    pre = Prefilter()
    missed: dict[str, list[str]] = {}
    scored = dict.fromkeys((p.format for p in PARSERS), 0)
    for line in every_line:
        admitted = tuple(pre.admitted(line))
        for ptype in PARSERS:
            if ptype.start_score(line) > 0:
                scored[ptype.format] += 1
                if ptype not in admitted:
                    missed.setdefault(ptype.format, []).append(line)
    assert {fmt: lines[:3] for fmt, lines in missed.items()} == {}
    # every format scored some line: the check above really ran for each of them
    assert [fmt for fmt, n in scored.items() if n == 0] == []


def test_prefilter_rejects_most_lines_for_most_parsers(every_line):
    """The filter does its job: on this mixed evidence, fewer than a third of the
    (line, parser) pairs are asked."""
    pre = prefilter()
    asked = sum(len(tuple(pre.admitted(line))) for line in every_line)
    assert asked < len(every_line) * len(REGISTRY) / 3


def test_pure_python_word_search_gives_the_automaton_s_answer(every_line, monkeypatch):
    fast = Prefilter()
    monkeypatch.setattr(detect, "ahocorasick_rs", None)
    slow = Prefilter()
    assert slow._find is None and slow._find_nocase is None
    assert fast._find is not None and fast._find_nocase is not None
    assert len(slow._short) > len(fast._short) > 0
    for line in every_line[::7]:
        assert fast.mask(line) == slow.mask(line), line


def test_words_that_ignore_case_admit_what_python_s_ignorecase_matches():
    pre = Prefilter()
    waits = parser_for("waits")
    for line in (
        "  INSTANCE ACTIVITY STATS",  # upper case, RE_TITLE's re.I
        "Instance Activity Stats",
        "İnstance Activity Stats",  # re.I matches İ to i
        "ſystem Events",  # and ſ to s
    ):
        assert re.match(r"(?i)\s*(?:instance|system)", line)
        assert waits in tuple(pre.admitted(line)), line


def test_registry_names_each_format_once_in_the_parsers_order():
    formats = [e.format for e in REGISTRY]
    assert len(set(formats)) == len(formats)
    assert [p.format for p in PARSERS] == formats
    for entry in REGISTRY:
        assert load(entry).format == entry.format
        assert parser_for(entry.format) is load(entry)
    with pytest.raises(KeyError):
        parser_for("no-such-format")


def test_detector_with_prefilter_gives_what_asking_every_parser_gives():
    """The same evidence, block for block, as a detector that asks every parser about every
    line, on every fixture."""
    for path in sorted((ROOT / "tests" / "fixtures").rglob("*.txt")):
        text = path.read_text(encoding="utf-8", errors="replace")
        out = []
        for det in (Detector(), Detector(PARSERS)):
            det.feed_text(text)
            out.append(det.finish().model_dump_json())
        assert out[0] == out[1], path


def test_lines_a_prefilter_words_cannot_start_are_not_asked():
    pre = Prefilter()
    # chat text: no digit, colon, parenthesis or tool name
    assert [p.format for p in pre.admitted("we restarted the instance and it is slow again")] == [
        "waits",
    ]
    assert [p.format for p in pre.admitted("nothing to see here")] == []
    truss = "15697: read(3, 0x1, 10) = 10"
    assert "truss" in [p.format for p in pre.admitted(truss)]
    assert "strace" in [p.format for p in pre.admitted(truss)]


def test_uptime_is_asked_about_slashes_only_in_lines_shaped_like_proc_loadavg():
    """uptime scores a `/` line only as /proc/loadavg's (`0.52 0.58 0.59 2/407 12345`): its
    shape's gate turns away SQL comments and paths, which the tkprof reader asks about for
    every statement. Every form uptime scores 2 (pasted, prefixed, padded) is still admitted."""
    pre = Prefilter()
    loadavg = [
        "0.52 0.58 0.59 2/407 12345",
        "  0.52 0.58 0.59 2/407 12345  ",
        "# 12.00 8.50 4.25 17/1203 998877",
        "> 0.00 0.01 0.05 1/123 4567",
        "Mar 14 09:12:44 db01 cat[123]: 0.52 0.58 0.59 2/407 12345",
        " 10:15:01 up 12 days,  3:04,  2 users,  load average: 0.52, 0.58, 0.59",
    ]
    for line in loadavg:
        assert UptimeParser.start_score(line) == 2, line
        assert UptimeParser in tuple(pre.admitted(line)), line
    for line in ("SELECT /* bench 1 */ ID, STATUS, AMOUNT", "Trace file: /u01/app/ora_42.trc"):
        assert UptimeParser.start_score(line) == 0
        assert UptimeParser not in tuple(pre.admitted(line)), line


# Runs `perfkb analyze --json FILE` in this interpreter and prints the modules loaded by the end.
PROBE = (
    "import json, runpy, sys\n"
    "sys.argv = ['perfkb', 'analyze', '--json', sys.argv[1]]\n"
    "try:\n"
    "    runpy.run_module('kb', run_name='__main__')\n"
    "except SystemExit:\n"
    "    pass\n"
    "sys.stdout.flush()\n"
    "sys.stderr.write('\\nMODULES ' + json.dumps(sorted(sys.modules)) + '\\n')\n"
)


def test_one_line_truss_analysis_imports_only_the_truss_parser(tmp_path):
    """The file benchmarks/startup.py times: its one line passes truss's and strace's
    prefilters, truss scores it 2 first, so only truss (and what it is built on) is imported,
    not the other 28 parser modules and their ~600 regexes."""
    tiny = tmp_path / "one-line.txt"
    tiny.write_text("15697: 1.5426 1.0901 0.0000 pollsys(0x10041CDA8, 2, 0x0, 0x0) = 1\n")
    env = dict(os.environ, PERFKB_DATA_DIR=str(tmp_path / "data"), PERFKB_LOG_LEVEL="WARNING")
    proc = subprocess.run(
        [sys.executable, "-c", PROBE, str(tiny)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert json.loads(proc.stdout)["blocks"][0]["format"] == "truss"
    marker = proc.stderr.rindex("MODULES ")
    modules = json.loads(proc.stderr[marker + len("MODULES ") :])
    parsers = sorted(m for m in modules if m.startswith("ingest.parsers."))
    assert parsers == ["ingest.parsers.syscalls", "ingest.parsers.truss"]
