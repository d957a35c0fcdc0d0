# The two commands of the README: `make run` and `make test`. Each sets up .venv first.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
SCENARIO ?= scenarios/game-renewal.toml
OUT ?= reports/game-renewal

.PHONY: setup brokers postgres run test test-nightly bench notebooks notebook-html clean

setup: $(VENV)/.installed postgres

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $@

run: setup
	$(BIN)/acksim run $(SCENARIO) --out $(OUT)

# The real brokers of `acksim live` (Debian packages; apt-get as root, only when missing).
brokers:
	@./tools/install-brokers.sh

# The PostgreSQL of `stores.backend = "postgres"` (Debian's postgresql; apt-get as root, only when missing).
postgres:
	@./tools/install-postgres.sh

# Live tests skip when a broker is missing (one line at the end says which, and how to install);
# ACKSIM_REQUIRE_LIVE=1 (.ci/run) makes them fail instead. PostgreSQL tests likewise skip
# without PostgreSQL, and fail with ACKSIM_REQUIRE_POSTGRES=1 (.ci/run) or ACKSIM_REQUIRE_LIVE=1. The suite runs on every core
# (pytest-xdist, one worker per logical CPU: about 9.5 minutes on 2 cores, 19 on one);
# TEST_JOBS=0 runs it in this one process.
TEST_JOBS ?= logical
test: setup brokers postgres
	$(BIN)/python -m pytest -q -n $(TEST_JOBS)

# The nightly strength: Hypothesis's large profile and the long queueing-theory runs (the M/M/c runs alone take about 17 minutes on 2 cores).
test-nightly: setup
	HYPOTHESIS_PROFILE=nightly $(BIN)/python -m pytest -q -s

bench: setup
	$(BIN)/python benchmarks/throughput.py
	$(BIN)/python benchmarks/ceiling.py
	$(BIN)/python benchmarks/check_speed.py
	$(BIN)/python benchmarks/startup.py

# Opens the capacity-planning and design-review notebooks in Jupyter (installed on first use).
notebooks: setup
	$(BIN)/python -m pip install --quiet notebook
	cd notebooks && ../$(BIN)/jupyter notebook

# Executes a notebook with no browser and writes it as HTML to reports/notebooks/NB.html:
#   make notebook-html NB=capacity_planning            (full size)
#   make notebook-html NB=design_review SMALL=1        (the small settings the test suite runs)
NB ?= capacity_planning
SMALL ?= 0
notebook-html: setup
	ACKSIM_NOTEBOOK_SMALL=$(SMALL) $(BIN)/jupyter nbconvert --to html --execute --ExecutePreprocessor.timeout=3600 \
		notebooks/$(NB).ipynb --output-dir reports/notebooks

clean:
	rm -rf $(VENV) reports/game-renewal .pytest_cache .hypothesis
