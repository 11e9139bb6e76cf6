# The two commands of the README: `make demo` and `make test`. Everything else supports them.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.synclog-installed
DBT_VENV := .venv-dbt
DBT_STAMP := $(DBT_VENV)/.synclog-dbt-installed
PLUGINS := $(wildcard plugins/*)
EXAMPLES := $(wildcard examples/*)

DIST ?= dist
BUILD_VENV := .venv-build
BUILD_PYTHON ?= $(BUILD_VENV)/bin/python

.PHONY: demo test lint bench faults soak scale mutants install dbt-install clean dist docs

$(STAMP): pyproject.toml testing/pyproject.toml $(wildcard plugins/*/pyproject.toml) $(wildcard examples/*/pyproject.toml)
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e ".[dev]" -e ./testing $(foreach p,$(PLUGINS) $(EXAMPLES),-e "./$(p)[test]")
	@touch $(STAMP)

install: $(STAMP)  ## create .venv and install synclog, its test kit (synclog-testing), every plugin, the examples and the dev tools

$(DBT_STAMP): dbt/requirements.txt
	@test -x $(DBT_VENV)/bin/python || $(PYTHON) -m venv $(DBT_VENV)
	$(DBT_VENV)/bin/python -m pip install -q --upgrade pip
	$(DBT_VENV)/bin/python -m pip install -q -r dbt/requirements.txt
	@touch $(DBT_STAMP)

dbt-install: $(DBT_STAMP)  ## create .venv-dbt: dbt and an adapter per warehouse, for the dbt package's tests (dbt/)

demo: $(STAMP)  ## simulate ten days of syncs into synclog-demo.duckdb and answer the seeds' questions
	rm -f synclog-demo.duckdb  # every demo is a fresh ten days up to now: its runs would be older than the last demo's
	$(BIN)/synclog demo

test: $(STAMP) $(DBT_STAMP)  ## set up what the suite needs (Java, PostgreSQL, dbt) and run all of it
	./scripts/system-deps.sh
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --quiet
	$(BIN)/lint-imports
	$(BIN)/mypy
	$(BIN)/python -m pytest -m "not dbt_all" --ignore=examples/synclog-sqlite/tests  # that one runs from its wheels, in tests/test_dist.py

docs: $(STAMP)  ## write the generated reference pages, then serve the docs site on http://127.0.0.1:8001/
	$(BIN)/python -m synclog.docs_gen
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs serve --dev-addr 127.0.0.1:8001

bench: $(STAMP) $(DBT_STAMP)  ## Postgres writeback vs plain COPY, Spark JDBC and dlt, small runs cold and warm, the dbt package's build on the demo, a sync engine's overhead and batch latency, a fleet of 1-16 engines with one loader (bench/RESULTS.md); hightouch diff of a 1M-row model; swap seconds against table size
	./scripts/system-deps.sh
	$(BIN)/python -m pip install -q -e "./plugins/postgres[bench]"
	$(BIN)/python bench/postgres_bench.py
	$(BIN)/python bench/small_runs.py
	$(BIN)/python bench/dbt_bench.py
	$(BIN)/python bench/engine_bench.py
	$(BIN)/python bench/fleet_bench.py
	$(BIN)/python bench/diff_bench.py
	$(BIN)/python bench/swap_bench.py

faults: $(STAMP)  ## injected faults on every target (the clouds on their stand-ins), loaders killed while they load, and eight concurrent writers (bench/FAULTS.md); a crash at every statement boundary of every target (bench/CRASHES.md; CRASH_ARGS="--targets duckdb --part 1/4 --add" for a part)
	./scripts/system-deps.sh
	$(BIN)/python bench/faults.py $(FAULTS_ARGS)
	$(BIN)/python bench/crash_sweep.py $(CRASH_ARGS)

soak: $(STAMP)  ## the model tests at length: 2,000 random sequences each on DuckDB, PostgreSQL, the lake, DuckDB without transactions and SQLite, 200 on each cloud stand-in (bench/SOAK.md); SOAK_ARGS="--targets duckdb --sequences 100 --add" for a part
	./scripts/system-deps.sh
	$(BIN)/python bench/soak.py $(SOAK_ARGS)

scale: $(STAMP)  ## bytes of row data through the driver: a 1M-record write_run into every target on a standalone cluster, storage on moto S3 (bench/SCALE.md); SCALE_ARGS="--records 2000" for a small run
	./scripts/system-deps.sh
	$(BIN)/python bench/scale.py $(SCALE_ARGS)

mutants: $(STAMP)  ## curated one-line bugs (bench/mutants.toml) against the fast suite, each restored after (bench/MUTANTS.md); MUTANTS_ARGS="--only ID,ID --timeout 600" for a part
	$(BIN)/python bench/mutants.py $(MUTANTS_ARGS)

$(BUILD_VENV)/bin/python:
	$(PYTHON) -m venv $(BUILD_VENV)

dist: $(if $(filter $(BUILD_VENV)/bin/python,$(BUILD_PYTHON)),$(BUILD_VENV)/bin/python)  ## wheels of the core, the test kit, every plugin and the examples, into $(DIST)/ (pip wheel with setuptools in $(BUILD_PYTHON); no dev install)
	rm -rf $(DIST) $(foreach p,. testing $(PLUGINS) $(EXAMPLES),./$(p)/build/lib ./$(p)/build/bdist.*)  # no file of an earlier build in a wheel
	$(BUILD_PYTHON) -m pip install -q "setuptools>=77"
	$(BUILD_PYTHON) -m pip wheel -q --no-deps --no-build-isolation --wheel-dir $(DIST) $(foreach p,. testing $(PLUGINS) $(EXAMPLES),./$(p)) >/dev/null
	@ls $(DIST)

lint: $(STAMP)
	$(BIN)/ruff check . && $(BIN)/ruff format --check . && $(BIN)/lint-imports && $(BIN)/mypy

clean:
	rm -rf $(VENV) $(DBT_VENV) $(BUILD_VENV) .cache .synclog synclog-demo.duckdb $(DIST) build/site
