# Two commands for a fresh machine: `make run` and `make test`.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: run test install lint bench bench-prepare bench-full bench-report fuzz clean

$(STAMP): pyproject.toml setup.py $(wildcard ingest/_syscore_src/*.[ch])  # the C core is built by pip install
	$(PY) -m venv $(VENV)
	bash scripts/ensure-compiler.sh $(PY)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $(STAMP)

install: $(STAMP)

run: $(STAMP)
	$(BIN)/perfkb init
	$(BIN)/perfkb serve

test: $(STAMP)
	bash scripts/ensure-chromium.sh
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports
	# issue 20: a bounded fuzz run of the entry path and the next-command filler (~25 s), before pytest so its summary closes the run
	$(BIN)/python fuzz/run_fuzz.py --only entry-yaml entry-json commands --seconds 8 --jobs 2
	$(BIN)/pytest -q

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports

bench: $(STAMP)
	$(BIN)/python -m benchmarks --quick

# the captures first (~17 GB under benchmarks/data, generated once, untimed), then the timed
# run (~47 minutes here; its JSON is rewritten as it goes, so a stopped run keeps its figures)
bench-prepare: $(STAMP)
	$(BIN)/python -m benchmarks --full --prepare

bench-full: bench-prepare
	$(BIN)/python -m benchmarks --full

# the latest run's issue 19 summary, bench loads and figures, as Markdown for docs/benchmarks.md
bench-report: $(STAMP)
	$(BIN)/python -m benchmarks.report

fuzz: $(STAMP)
	$(BIN)/python fuzz/run_fuzz.py --atheris 180

clean:
	rm -rf $(VENV) data .pytest_cache .ruff_cache build ingest/*.so
