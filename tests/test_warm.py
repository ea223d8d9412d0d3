"""kb.analysis.warm: a long-lived process compiles the whole KB at start and keeps it out of the
cyclic garbage collector, and the matcher rebuilt after an edit is treated the same (issue #19).

Every test that freezes unfreezes again, so the rest of the suite runs with a normal GC.
"""

from __future__ import annotations

import asyncio
import gc

import pytest

from kb import matcher as matcher_mod
from kb.analysis import analyze_text, matcher_for, warm
from kb.store import Store

TRUSS = "15697: 1.5426 1.0901 0.0000 shmdt(0xFFFFFFFF70000000) = 0\n" * 3


@pytest.fixture
def unfrozen():
    yield
    gc.unfreeze()


def _all_keys(m) -> set[tuple]:
    return {("format", f) for f in m.index.by_format} | {("set", s) for s in m.index.by_set}


def test_warm_compiles_every_program_and_freezes(settings, make_entry, unfrozen):
    with Store(settings) as store:
        store.add(make_entry("warm-one"), author="t")
        m = warm(store)
        assert m is matcher_for(store)
        assert set(m.index._programs) == _all_keys(m) != set()
        assert gc.get_freeze_count() > 0
        # analysing compiles nothing more and answers as a cold matcher does
        before = dict(m.index._programs)
        warm_result = analyze_text(TRUSS, store)
        assert m.index._programs == before
    cold = matcher_mod.Matcher(m.entries)
    assert cold.index._programs == {}
    cold_result = analyze_text(TRUSS, entries=m.entries)
    assert [x.id for x in warm_result.matches] == [x.id for x in cold_result.matches]


def test_a_rebuild_after_an_edit_is_compiled_and_frozen_too(settings, make_entry, unfrozen):
    with Store(settings) as store:
        store.add(make_entry("warm-one"), author="t")
        warm(store)
        gc.unfreeze()
        store.add(make_entry("warm-two", title="Another sample incident"), author="t")
        m = matcher_for(store)
        assert [e.id for e in m.entries] == ["warm-one", "warm-two"]
        assert set(m.index._programs) == _all_keys(m)
        assert gc.get_freeze_count() > 0


def test_other_stores_keep_compiling_on_first_use(settings, make_entry, tmp_path):
    with Store(settings) as store:
        store.add(make_entry("lazy-one"), author="t")
        m = matcher_for(store)
        assert m.index._programs == {}
        assert gc.get_freeze_count() == 0


def test_the_web_app_warms_when_asked(settings, make_entry, unfrozen):
    from kb.web.app import create_app

    with Store(settings) as store:
        store.add(make_entry("web-warm"), author="t")
    app = create_app(settings.model_copy(update={"warm_start": True}))
    store = app.state.web.store

    async def start_and_stop() -> None:
        async with app.router.lifespan_context(app):
            m = matcher_for(store)
            assert set(m.index._programs) == _all_keys(m) != set()

    asyncio.run(start_and_stop())
    assert gc.get_freeze_count() > 0


def test_warm_opens_the_search_index_only_for_a_process_that_searches(
    settings, make_entry, unfrozen
):
    with Store(settings) as writer:
        writer.add(make_entry("warm-one"), author="t")  # a write opens the writer's index
    with Store(settings) as analyses_only:
        warm(analyses_only, searches=False)
        assert not analyses_only.index_opened
        assert [m.id for m in analyze_text(TRUSS, analyses_only).matches] == ["warm-one"]
        assert not analyses_only.index_opened
    with Store(settings) as serving:
        warm(serving)
        assert serving.index_opened


# Run in a fresh interpreter: this suite's other tests have imported parsers already.
_FIRST_ANALYSIS = """
import sys
from pathlib import Path
from kb.analysis import analyze_text, warm
from kb.settings import Settings
from kb.store import Store
from kb.triage import load_rules
import ingest.detect as detect

store = Store(Settings(data_dir=Path(sys.argv[1])))
warm(store, searches=False)
before = set(sys.modules)
assert detect._PREFILTER is not None, "the detector's prefilter is built on the first request"
assert load_rules.cache_info().currsize, "the triage rules are read on the first request"
texts = [p.read_text(errors="replace") for p in sorted(Path(sys.argv[2]).glob("*.txt"))]
texts.append("<html><body><table><tr><td>x</td></tr></table></body></html>\\n")
formats = set()
for text in texts:
    formats |= {b.format for b in analyze_text(text, store).blocks}
print(len(formats), sorted(m for m in set(sys.modules) - before))
"""


def test_the_first_analysis_after_warm_imports_no_reader(settings, tmp_path):
    """warm() imports every reader and analyses a paste before the first request: in `perfkb
    serve` the first paste each pool process saw used to import its parsers (345 ms for seed
    000 against ~20 ms for the next one, on the starter KB)."""
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).parent.parent
    seeds = root / "tests" / "fixtures" / "seeds"
    # the starter KB, as `perfkb serve` finds it (settings exported PERFKB_DATA_DIR)
    subprocess.run([sys.executable, "-m", "kb", "init"], cwd=root, check=True, capture_output=True)
    proc = subprocess.run(
        [sys.executable, "-c", _FIRST_ANALYSIS, str(settings.data_dir), str(seeds)],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    count, imported = proc.stdout.split(" ", 1)
    assert int(count) >= 8  # the seeds span that many formats, each a reader to import
    assert imported.strip() == "[]"
