# make run   — the lesson suite: every number of the lesson, reproduced and checked
# make test  — the test suite (fast; slow tests are marked and included)
# make bench — throughput and scaling measurements (not timed tests)
PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: run test bench validate clean-venv

$(STAMP): requirements.txt pyproject.toml
	@command -v $(PYTHON) >/dev/null 2>&1 || { echo "$(PYTHON) not found; set PYTHON=python3"; exit 1; }
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -r requirements.txt
	touch $(STAMP)

run: $(STAMP)
	$(BIN)/seqkeras run experiments/lesson

test: $(STAMP)
	$(BIN)/python -m pytest -q

bench: $(STAMP)
	$(BIN)/python benchmarks/run_all.py

validate: $(STAMP)
	$(BIN)/seqkeras validate experiments

clean-venv:
	rm -rf $(VENV)
