"""`perfkb --help` and `perfkb search` start without the heavy parts of perfkb (issue #19).

Start-up time is measured by `python -m benchmarks --only startup`, not here: CI boxes are too
noisy to time. What the test pins is the cause of a slow start, which does not vary: the modules
a command imports. A module-level import added to kb/cli.py (the parsers, numpy, whoosh, the
Slack libraries, pydantic) shows up here as a failure naming the module.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# Runs `perfkb ARGS` in this interpreter and prints the names of the modules loaded by the end.
PROBE = (
    "import json, runpy, sys\n"
    "sys.argv = ['perfkb', *sys.argv[1:]]\n"
    "try:\n"
    "    runpy.run_module('kb', run_name='__main__')\n"
    "except SystemExit as exc:\n"
    "    code = exc.code\n"
    "sys.stdout.flush()\n"
    "sys.stderr.write('\\nMODULES ' + json.dumps(sorted(sys.modules)) + '\\n')\n"
)


def _modules(tmp_path: Path, *args: str, bytecode: bool = False) -> tuple[set[str], str]:
    env = dict(os.environ, PERFKB_DATA_DIR=str(tmp_path / "data"), PERFKB_LOG_LEVEL="WARNING")
    if bytecode:  # as an installed perfkb runs: bytecode (and parsed data files) kept
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = str(tmp_path / "pycache")
    proc = subprocess.run(
        [sys.executable, "-c", PROBE, *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    marker = proc.stderr.rindex("MODULES ")
    return set(json.loads(proc.stderr[marker + len("MODULES ") :])), proc.stdout


def _loaded(modules: set[str], *packages: str) -> list[str]:
    return sorted(m for m in modules if m.split(".")[0] in packages or m in packages)


def test_help_imports_neither_the_parsers_nor_numpy_whoosh_slack_or_pydantic(tmp_path):
    modules, stdout = _modules(tmp_path, "--help")
    assert "analyze" in stdout and "search" in stdout  # the help really was printed
    assert "bot" in stdout  # plugin commands are still listed
    heavy = _loaded(modules, "numpy", "whoosh", "slack_bolt", "slack_sdk", "pydantic", "yaml")
    assert heavy == []
    assert [m for m in modules if m == "ingest" or m.startswith("ingest.")] == []
    assert [m for m in ("kb.store", "kb.matcher", "kb.models", "kb.index") if m in modules] == []


def test_help_is_plain_text_without_typers_rich_formatter_or_importlib_metadata(tmp_path):
    """typer.rich_utils (rich.markdown, markdown_it, pygments, rich.traceback) and
    importlib.metadata were a third of `perfkb --help`; the help is click's plain text and the
    plugins are found by reading entry_points.txt (kb/plugins.py)."""
    modules, stdout = _modules(tmp_path, "--help")
    assert _loaded(modules, "markdown_it", "pygments") == []
    assert [
        m for m in ("typer.rich_utils", "rich.markdown", "rich.traceback") if m in modules
    ] == []
    assert "importlib.metadata" not in modules
    assert "bot.plugin" in modules  # the plugin was still found and asked for its commands
    assert "╭" not in stdout  # no rich panel


def test_help_lists_every_command_and_every_option(tmp_path):
    """The plain help still names everything: each command the app has (plugins included) in
    `perfkb --help`, and each option of a command in `perfkb COMMAND --help`."""
    from typer.main import get_command

    from kb.cli import app

    group = get_command(app)
    _, stdout = _modules(tmp_path, "--help")
    listed = {line.split()[0] for line in stdout.split("Commands:")[1].splitlines() if line.strip()}
    assert listed == set(group.commands)
    assert "--data-dir" in stdout
    for name in ("search", "analyze", "import"):
        _, text = _modules(tmp_path, name, "--help")
        options = [o for p in group.commands[name].params for o in p.opts if o.startswith("-")]
        assert options and all(option in text for option in options), (name, options)


def test_search_imports_neither_the_parsers_nor_numpy_nor_slack(tmp_path):
    modules, stdout = _modules(tmp_path, "search", "shmdt")
    assert "kb.store" in modules  # it did search the store
    assert "whoosh" in modules
    assert _loaded(modules, "numpy", "slack_bolt", "slack_sdk", "yaml") == []
    assert [m for m in modules if m.startswith("ingest.parsers")] == []
    assert "kb.matcher" not in modules


def test_analyze_still_loads_what_it_needs_and_answers(tmp_path):
    capture = tmp_path / "one.txt"
    capture.write_text("15697: 1.5426 1.0901 0.0000 pollsys(0x10041CDA8, 2, 0x0, 0x0) = 1\n")
    modules, stdout = _modules(tmp_path, "analyze", "--json", str(capture))
    result = json.loads(stdout)
    assert [b["format"] for b in result["blocks"]] == ["truss"]
    assert "ingest.parsers" in modules and "kb.matcher" in modules
    # the matcher runs on numpy, but numpy.ma (~70 ms, what np.unique imports) is never needed
    assert "numpy" in modules and "numpy.ma" not in modules


def test_analyze_json_loads_neither_rich_nor_the_web_stack_nor_slack(tmp_path):
    """A JSON answer renders nothing: no rich, no markdown, no web framework, no Slack. (The
    first analysis in a new data directory loads the starter entries and says so on stderr with
    rich, so the KB is made first, as the benchmark does.)"""
    capture = tmp_path / "one.txt"
    capture.write_text("15697: 1.5426 1.0901 0.0000 pollsys(0x10041CDA8, 2, 0x0, 0x0) = 1\n")
    _modules(tmp_path, "init")
    modules, stdout = _modules(tmp_path, "analyze", "--json", str(capture))
    assert json.loads(stdout)["blocks"]
    heavy = ("rich", "markdown_it", "pygments", "fastapi", "starlette", "uvicorn", "jinja2")
    assert _loaded(modules, *heavy, "slack_bolt", "slack_sdk") == []


def test_the_triage_rules_read_the_same_with_libyaml_as_with_pure_python():
    """kb/triage.py reads its rules with libyaml's parser when PyYAML has it (~40 ms less per
    `perfkb analyze`); the validated rule book must be the one the pure-Python loader gives."""
    import yaml

    from kb import triage

    text = triage.RULES_PATH.read_text(encoding="utf-8")
    data = yaml.load(text, Loader=yaml.SafeLoader)
    data["baseline"].setdefault("sources", ["text"])
    triage.load_rules.cache_clear()
    assert triage.load_rules() == triage.RuleBook.model_validate(data)
    assert len(triage.load_rules().rules) > 10


def _one_line_capture(tmp_path: Path) -> Path:
    capture = tmp_path / "one.txt"
    capture.write_text("15697: 1.5426 1.0901 0.0000 pollsys(0x10041CDA8, 2, 0x0, 0x0) = 1\n")
    _modules(tmp_path, "init")
    return capture


def test_analyze_reads_settings_without_pydantic_settings(tmp_path):
    """kb/settings.py reads PERFKB_* itself: pydantic-settings' import (dotenv, its cloud and CLI
    sources, asyncio) cost ~55 ms CPU of every command (issue #19)."""
    capture = _one_line_capture(tmp_path)
    modules, stdout = _modules(tmp_path, "analyze", "--json", str(capture))
    assert json.loads(stdout)["blocks"]
    assert _loaded(modules, "pydantic_settings", "dotenv") == []


def test_analyze_builds_no_typer_type_adapter_but_bad_values_are_still_typers(tmp_path):
    """typer 0.2x coerces every parameter through a pydantic TypeAdapter (typer._adapters) built
    on first use, even for an option left out or a plain str; kb/cli.py hands those values back
    as they are and leaves everything else to typer, whose messages stay."""
    capture = _one_line_capture(tmp_path)
    modules, stdout = _modules(tmp_path, "analyze", "--json", str(capture))
    assert json.loads(stdout)["blocks"][0]["format"] == "truss"
    assert "typer._coercion" in modules  # the typer this runs on coerces through pydantic
    assert "typer._adapters" not in modules
    env = dict(os.environ, PERFKB_DATA_DIR=str(tmp_path / "data"), PERFKB_LOG_LEVEL="WARNING")

    def perfkb(*args: str) -> subprocess.CompletedProcess:
        argv = [sys.executable, "-m", "kb", *args]
        return subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)

    bad_page = perfkb("search", "--page", "x", "shmdt")
    assert bad_page.returncode == 2
    assert "Invalid value for '--page'" in bad_page.stderr and "integer" in bad_page.stderr
    a_file = perfkb("--data-dir", str(capture), "analyze", "--json", str(capture))
    assert a_file.returncode == 2 and "is a file" in a_file.stderr
    other_dir = perfkb("--data-dir", str(tmp_path / "other"), "analyze", "--json", str(capture))
    assert other_dir.returncode == 0, other_dir.stderr
    assert json.loads(other_dir.stdout)["blocks"][0]["format"] == "truss"
    assert (tmp_path / "other" / "perfkb.sqlite3").exists()  # the Path option reached the store


def test_analyze_parses_no_yaml_once_the_data_files_are_cached(tmp_path):
    """The fact catalogue and the triage rules are parsed once per content and kept beside the
    bytecode (ingest/datafile.py): from the second run on, no YAML parser is imported."""
    capture = _one_line_capture(tmp_path)
    first, out1 = _modules(tmp_path, "analyze", "--json", str(capture), bytecode=True)
    second, out2 = _modules(tmp_path, "analyze", "--json", str(capture), bytecode=True)
    assert "yaml" in first  # the first run parsed them
    assert _loaded(second, "yaml", "_yaml") == []
    drop = ("elapsed_ms",)
    one, two = json.loads(out1), json.loads(out2)
    assert {k: v for k, v in one.items() if k not in drop} == {
        k: v for k, v in two.items() if k not in drop
    }
    assert two["findings"] and two["next_commands"]  # the rules and the facts were used


# Runs `perfkb ARGS` and prints the pydantic models whose validators were built by the end.
BUILT_PROBE = (
    "import json, runpy, sys\n"
    "sys.argv = ['perfkb', *sys.argv[1:]]\n"
    "try:\n"
    "    runpy.run_module('kb', run_name='__main__')\n"
    "except SystemExit:\n"
    "    pass\n"
    "from pydantic import BaseModel\n"
    "def subclasses(c):\n"
    "    for s in c.__subclasses__():\n"
    "        yield s\n"
    "        yield from subclasses(s)\n"
    "built = {f'{c.__module__}.{c.__qualname__}': bool(c.__pydantic_complete__)\n"
    "         for c in subclasses(BaseModel)}\n"
    "builtin = sorted({f'{c.__module__}.{c.__qualname__}.{name}'\n"
    "                  for c in subclasses(BaseModel) if c.__pydantic_complete__\n"
    "                  for name, f in c.model_fields.items()\n"
    "                  if getattr(f.default_factory, '__module__', None) == 'builtins'})\n"
    "sys.stdout.flush()\n"
    "sys.stderr.write('\\nBUILT ' + json.dumps(built) + '\\n')\n"
    "sys.stderr.write('\\nBUILTIN_FACTORIES ' + json.dumps(builtin) + '\\n')\n"
)

# models `perfkb analyze` imports but never validates: defer_build, built on first use
DEFERRED = (
    "ingest.facts.BarChart",
    "ingest.facts.ChartNote",
    "ingest.facts.ChartPart",
    "ingest.facts.BlockChart",
    "ingest.facts.Finding",
    "kb.index_docs.IndexDoc",
    "kb.index_docs.SnippetPart",
    "kb.index_docs.SearchHit",
    "kb.index_docs.SearchPage",
    "kb.store.Revision",
    "kb.store.CheckReport",
)  # (kb.search_query's Filter and ParsedQuery are dataclasses now: nothing to build)


def _built(tmp_path: Path, *args: str) -> tuple[dict[str, bool], str]:
    proc = _run_built_probe(tmp_path, *args)
    return _marked(proc.stderr, "BUILT"), proc.stdout


def _run_built_probe(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PERFKB_DATA_DIR=str(tmp_path / "data"), PERFKB_LOG_LEVEL="WARNING")
    argv = [sys.executable, "-c", BUILT_PROBE, *args]
    return subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)


def _marked(stderr: str, marker: str):
    """The JSON a probe wrote on its line `MARKER ...`."""
    line = next(x for x in reversed(stderr.splitlines()) if x.startswith(f"{marker} "))
    return json.loads(line[len(marker) + 1 :])


def test_analyze_builds_no_validator_for_the_models_it_never_validates(tmp_path):
    """Building a pydantic model's validator is most of its cost; the search, chart and
    query models wait for their first use (defer_build), which analyze never makes."""
    capture = _one_line_capture(tmp_path)
    built, stdout = _built(tmp_path, "analyze", "--json", str(capture))
    assert json.loads(stdout)["blocks"]
    assert built["kb.results.AnalysisResult"] and built["ingest.model.Evidence"]
    # (False: imported, not built; None: not even imported)
    assert [name for name in DEFERRED if built.get(name)] == []
    searched, stdout = _built(tmp_path, "search", "--json", "shmdt")
    assert json.loads(stdout)["results"]
    # `perfkb search` answers from the search file without pydantic (builds none of them);
    # on first use they work
    assert [name for name in DEFERRED if searched.get(name)] == []
    from kb.index_docs import SearchPage

    assert SearchPage.model_validate(json.loads(stdout)).results


def test_the_models_analyze_builds_have_no_builtin_default_factory(tmp_path):
    """pydantic asks `inspect.signature` of each default factory of a model it builds; for a
    builtin (`list`, `dict`) that tokenizes its text signature, compiling tokenize's regex on
    the first one: 35 M instructions (2.7 %) of a 1-line `perfkb analyze`. ingest.model's
    new_list / new_dict are Python functions, read from their code."""
    capture = _one_line_capture(tmp_path)
    proc = _run_built_probe(tmp_path, "analyze", "--json", str(capture))
    assert json.loads(proc.stdout)["blocks"][0]["format"] == "truss"
    built = _marked(proc.stderr, "BUILT")
    assert built["kb.models.Entry"] and built["ingest.parsers.syscalls.SyscallDetails"]
    assert _marked(proc.stderr, "BUILTIN_FACTORIES") == []


def _run(tmp_path: Path, *args: str, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "kb", *args],
        cwd=ROOT,
        env=dict(os.environ, PERFKB_DATA_DIR=str(tmp_path / "data"), **env),
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_search_reads_the_search_file_without_pydantic_whoosh_or_numpy(tmp_path):
    """Once the KB exists, `perfkb search` answers from the search file the index keeps
    (kb/search_file.py): no pydantic (not even typer's parameter coercion), no whoosh, no
    numpy, no store. It prints what the store's answer prints: the same command made to go
    through the store (a PERFKB_SEARCH_* setting does that) prints the same bytes."""
    _modules(tmp_path, "init")
    for args in (
        ("search", "shmdt"),
        ("search", "disconnect", "storm", "--per-page", "3", "--page", "2"),
        ("search", "--json", "shmdt", "platform:solaris"),
        ("search", "--json", "tag:numa"),
    ):
        modules, stdout = _modules(tmp_path, *args)
        heavy = _loaded(modules, "pydantic", "pydantic_core", "whoosh", "numpy", "yaml")
        assert heavy == [], args
        assert [
            m for m in ("typer._adapters", "kb.store", "kb.index", "kb.models") if m in modules
        ] == []
        assert [m for m in modules if m == "ingest" or m.startswith("ingest.")] == []
        through_store = _run(tmp_path, *args, PERFKB_SEARCH_TIME_BUDGET="2")
        assert through_store.returncode == 0, through_store.stderr
        assert stdout == through_store.stdout and stdout.strip(), args
    # and what the store says, read in this process
    from kb.settings import Settings
    from kb.store import Store

    _, stdout = _modules(tmp_path, "search", "--json", "shmdt")
    with Store(Settings(data_dir=tmp_path / "data")) as store:
        assert json.loads(stdout) == store.search("shmdt", per_page=10).model_dump(mode="json")
    assert json.loads(stdout)["total"] >= 1


def test_search_keeps_typers_messages_for_bad_values(tmp_path):
    """The search command's values skip typer's pydantic coercion only when they are plain:
    a bad one still gets typer's own message, word for word."""
    _modules(tmp_path, "init")
    cases = {
        (
            "--per-page",
            "0",
        ): "Invalid value for '--per-page': Input should be greater than or equal to 1",
        (
            "--per-page",
            "101",
        ): "Invalid value for '--per-page': Input should be less than or equal to 100",
        ("--page", "x"): "Invalid value for '--page': Input should be a valid integer",
        ("--bogus",): "No such option: --bogus",
    }
    for args, message in cases.items():
        proc = _run(tmp_path, "search", "shmdt", *args)
        assert proc.returncode == 2 and message in proc.stderr, (args, proc.stderr)
    helped = _run(tmp_path, "search", "--help")
    assert helped.returncode == 0 and "--per-page" in helped.stdout and "1<=x<=100" in helped.stdout


def test_analyze_of_text_imports_no_html_reader_but_an_html_report_is_still_read(tmp_path):
    """ingest.detect imports ingest.html_report (lxml's etree, libxml2) only when an input has
    a "<" where a document could start: a text capture never needs it (issue #19). A saved AWR
    page given to the same command still goes through it."""
    capture = _one_line_capture(tmp_path)
    modules, stdout = _modules(tmp_path, "analyze", "--json", str(capture))
    assert json.loads(stdout)["blocks"][0]["format"] == "truss"
    readers = ("ingest.html_report", "lxml", "lxml.etree", "html.parser", "html.entities")
    assert [m for m in readers if m in modules] == []
    page = tmp_path / "awrrpt_1_2.html"
    page.write_text(
        "<!DOCTYPE html>\n<html><body><h3>Top 10 Foreground Events by Total Wait Time</h3>\n"
        "<table><tr><th>Event</th><th>Waits</th><th>Total Wait Time (sec)</th>"
        "<th>Wait Avg(ms)</th><th>% DB time</th><th>Wait Class</th></tr>\n"
        "<tr><td>log file sync</td><td>1,024</td><td>52.4</td><td>51.17</td><td>41.0</td>"
        "<td>Commit</td></tr></table></body></html>\n"
    )
    modules, stdout = _modules(tmp_path, "analyze", "--json", str(page))
    assert "ingest.html_report" in modules and "lxml.etree" in modules
    from ingest.detect import parse_stream

    with page.open("rb") as fh:
        expected = parse_stream(fh).model_dump(mode="json")
    assert json.loads(stdout)["blocks"] == expected["blocks"]
    assert "log file sync" in json.dumps(expected["blocks"])  # the table's text was read


# Runs `perfkb ARGS` with importlib.metadata.entry_points counted; prints the groups asked for.
ENTRY_POINTS_PROBE = (
    "import json, runpy, sys\n"
    "import importlib.metadata as md\n"
    "asked = []\n"
    "real = md.entry_points\n"
    "def counted(*a, **k):\n"
    "    asked.append(k.get('group', '*'))\n"
    "    return real(*a, **k)\n"
    "md.entry_points = counted\n"
    "sys.argv = ['perfkb', *sys.argv[1:]]\n"
    "try:\n"
    "    runpy.run_module('kb', run_name='__main__')\n"
    "except SystemExit:\n"
    "    pass\n"
    "sys.stdout.flush()\n"
    "sys.stderr.write('\\nASKED ' + json.dumps(asked) + '\\n')\n"
)


def _entry_point_groups(tmp_path: Path, *args: str, **env: str) -> tuple[list[str], str]:
    full = dict(os.environ, PERFKB_DATA_DIR=str(tmp_path / "data"), PERFKB_LOG_LEVEL="WARNING")
    full.pop("PYDANTIC_DISABLE_PLUGINS", None)
    full.update(env)
    proc = subprocess.run(
        [sys.executable, "-c", ENTRY_POINTS_PROBE, *args],
        cwd=ROOT,
        env=full,
        capture_output=True,
        text=True,
        timeout=120,
    )
    marker = proc.stderr.rindex("ASKED ")
    return json.loads(proc.stderr[marker + len("ASKED ") :]), proc.stdout


def test_analyze_does_not_scan_for_pydantic_plugins_unless_the_user_asks(tmp_path):
    """pydantic's plugin loader reads every installed distribution's metadata on the first
    model build; `perfkb` sets PYDANTIC_DISABLE_PLUGINS when the user has not (kb/cli.py), so
    an analysis makes no such scan. A user's own setting is left as it is: with it empty
    (every plugin allowed) the scan happens, as pydantic documents."""
    capture = _one_line_capture(tmp_path)
    groups, stdout = _entry_point_groups(tmp_path, "analyze", "--json", str(capture))
    assert json.loads(stdout)["blocks"][0]["format"] == "truss"
    assert "pydantic" not in groups
    groups, stdout = _entry_point_groups(
        tmp_path, "analyze", "--json", str(capture), PYDANTIC_DISABLE_PLUGINS=""
    )
    assert json.loads(stdout)["blocks"][0]["format"] == "truss"
    assert "pydantic" in groups


def test_analyze_freezes_what_it_imported_out_of_the_cyclic_gc(tmp_path):
    """`perfkb analyze` runs once and exits: it moves what it has imported into the GC's
    permanent generation before the analysis (44 ms less CPU on a seed snippet), so the full
    collections the analysis triggers do not walk pydantic's schemas and the parsers' tables."""
    capture = _one_line_capture(tmp_path)
    probe = (
        "import gc, runpy, sys\n"
        "sys.argv = ['perfkb', 'analyze', '--json', sys.argv[1]]\n"
        "try:\n"
        "    runpy.run_module('kb', run_name='__main__')\n"
        "except SystemExit:\n"
        "    pass\n"
        "sys.stdout.flush()\n"
        "sys.stderr.write('\\nFROZEN %d\\n' % gc.get_freeze_count())\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", probe, str(capture)],
        cwd=ROOT,
        env=dict(os.environ, PERFKB_DATA_DIR=str(tmp_path / "data")),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert json.loads(proc.stdout)["blocks"]
    frozen = int(proc.stderr.rsplit("FROZEN ", 1)[1])
    assert frozen > 10_000  # everything imported by then (42k objects on 2026-11-25): pydantic,
    # the models, the parsers, the matcher
