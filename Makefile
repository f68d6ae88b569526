# make run   — the lesson suite: every number of the lesson, reproduced and checked
# make test  — what to run after every change (minutes): the tests not marked `system`, in three pytest
#              processes: tests/ on torch (the default backend), then those marked tensorflow on TensorFlow
#              beside tests/jax_backend/ on JAX
# make test-fast — the same three, without the tests marked slow either
# make test-system — the tests marked `system` alone: a wheel installed into a fresh virtualenv, Ray clusters,
#              killed process groups, a real full disk (tmpfs), the report in a headless browser, the benchmarks
# make lint — ruff (also the first step of make test)
# make bench — throughput and scaling measurements (not timed tests)
# make gpu-wheels — the pure-Python wheels the GPU machine lacks, into .whl/ (benchmarks/gpu_check.sh installs them)
# make generate — rewrite every generated file: the schema, docs/components.md, the command line's tables in the docs
PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: run test test-fast test-system lint bench gpu-wheels validate clean-venv browser generate

$(STAMP): requirements.txt requirements-nodeps.txt pyproject.toml
	@command -v $(PYTHON) >/dev/null 2>&1 || { echo "$(PYTHON) not found; set PYTHON=python3"; exit 1; }
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -r requirements.txt
	$(BIN)/python -m pip install --quiet --no-deps -r requirements-nodeps.txt
	touch $(STAMP)

# The lesson is recomputed (--force) into a scratch folder that git ignores, then each experiment is
# checked against its committed results/lesson-* (the reference, rewritten only on purpose).
# Fails when a claim does not hold or an experiment differs from its reference. Each lesson spec
# names TensorFlow (`backend:`), the backend its reference was computed on.
LESSON_OUT := .lesson-run

run: $(STAMP)
	$(BIN)/seqkeras run experiments/lesson --force --out $(LESSON_OUT) --reference results

# Keras picks its backend once per process: the tests run in a pytest process per backend (tests/conftest.py).
# tests/ and tests/torch_backend/ on torch, the suite's default; the tests marked `tensorflow` (an experiment
# computed on TensorFlow, TensorFlow's own path) on TensorFlow; tests/jax_backend/ on JAX. All three must pass.
TENSORFLOW_TESTS = KERAS_BACKEND=tensorflow $(BIN)/python -m pytest -q -n $(PYTEST_WORKERS) --dist worksteal
JAX_TESTS = KERAS_BACKEND=jax $(BIN)/python -m pytest -q -n $(PYTEST_WORKERS) --dist loadfile tests/jax_backend

# Ruff's rules are in pyproject.toml ([tool.ruff]); the code is kept clean under them.
lint: $(STAMP)
	$(BIN)/ruff check seqkeras tests benchmarks

# `--durations=20` prints the slowest tests: the tier's goal is 8 minutes on 2 idle cores. The torch process's
# tests are spread over one pytest worker per core (pytest-xdist; PYTEST_WORKERS=0 runs them in this process).
# The TensorFlow and JAX processes then run side by side, each over the workers (JAX's a file at a time: each
# worker compiles its own files' programs), JAX's from the second run on loading its programs from JAX's
# persistent cache (tests/jax_backend/conftest.py). JAX's output comes as it comes, TensorFlow's once both are
# done. Both must pass.
PYTEST_WORKERS ?= auto
OTHER_BACKENDS = tensorflow_log=$$(mktemp); \
	$(TENSORFLOW_TESTS) $(1) >$$tensorflow_log 2>&1 & tensorflow=$$!; \
	$(JAX_TESTS) $(1); jax=$$?; \
	wait $$tensorflow; tensorflow_status=$$?; echo "--- the TensorFlow tests:"; cat $$tensorflow_log; \
	rm -f $$tensorflow_log; test $$jax -eq 0 && test $$tensorflow_status -eq 0

test: $(STAMP) $(VENV)/.tracking $(VENV)/.export lint
	$(BIN)/python -m pytest -q -n $(PYTEST_WORKERS) --dist worksteal --durations=20
	@$(call OTHER_BACKENDS,--durations=10)

test-fast: $(STAMP) $(VENV)/.tracking $(VENV)/.export lint
	$(BIN)/python -m pytest -q -n $(PYTEST_WORKERS) --dist worksteal -m "not slow"
	@$(call OTHER_BACKENDS,-m "not slow")

# The tests marked `system` (tests/conftest.py deselects them unless --system is given). They are all in
# tests/ (the torch and JAX folders hold none), one at a time: several start process groups, clusters or a
# browser and take the cores they find. Those also marked `tensorflow` run in a TensorFlow process after
# (pytest's status 5: none is so marked now).
test-system: $(STAMP) $(VENV)/.ray $(VENV)/.tracking $(VENV)/.export browser
	$(BIN)/python -m pytest -q --system -m system --durations=10
	KERAS_BACKEND=tensorflow $(BIN)/python -m pytest -q --system -m system --durations=10 || test $$? -eq 5

# Ray is optional for users; the tests check the Ray executor, so they install it.
$(VENV)/.ray: requirements-ray.txt $(STAMP)
	$(BIN)/python -m pip install --quiet -r requirements-ray.txt
	touch $@

# TensorBoard and MLflow are optional for users (train.tensorboard, run --track mlflow); the tests
# read what the suite writes with their own readers, so they install them.
$(VENV)/.tracking: requirements-tracking.txt $(STAMP)
	$(BIN)/python -m pip install --quiet -r requirements-tracking.txt
	touch $@

# ONNX export is optional for users (export-model --format onnx); the tests export and run ONNX graphs.
$(VENV)/.export: requirements-export.txt $(STAMP)
	$(BIN)/python -m pip install --quiet -r requirements-export.txt
	touch $@

# The HTML report is tested in a real headless browser: Debian's chromium, installed
# here when missing (needs apt-get as root, or passwordless sudo). Without it the
# browser test skips and says why; with chromium present this step does nothing.
browser:
	@if command -v chromium >/dev/null 2>&1; then :; \
	elif command -v apt-get >/dev/null 2>&1 && { [ "$$(id -u)" = 0 ] || sudo -n true 2>/dev/null; }; then \
	  SUDO=$$([ "$$(id -u)" = 0 ] || echo sudo -n); \
	  echo "installing chromium for the browser test (apt-get)"; \
	  { $$SUDO apt-get update -qq && $$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
	      --no-install-recommends chromium >/dev/null; } \
	    || echo "warning: could not install chromium; the browser test will skip"; \
	else echo "note: no chromium and no apt-get as root to install it; the browser test will skip"; fi

bench: $(STAMP)
	$(BIN)/python benchmarks/run_all.py

# The GPU machine (benchmarks/gpu_check.sh) has Python 3.12, PyTorch, JAX, pandas, SciPy and matplotlib,
# but no Keras, keras-hub or pydantic, and no network: these wheels, pinned as in requirements.txt,
# travel with the working tree (about 10 MB of the 64 MiB it may carry). Binary ones (optree,
# pydantic-core) are CPython 3.12 manylinux builds. Left out: TensorFlow and tensorflow-text (no
# use there), seqeval (a source archive only; the tagging metrics are not measured there).
GPU_WHEELS := keras==3.15.1 keras-hub==0.32.0 kagglehub==1.0.2 kagglesdk==0.1.28 namex==0.1.0 optree==0.20.0 \
	pydantic==2.14.4 pydantic-core==2.50.5 annotated-types==0.8.0 typing-inspection==0.4.5
GPU_PLATFORMS := $(foreach n,2_28 2_27 2_24 2_17,--platform manylinux_$(n)_x86_64) --platform manylinux2014_x86_64

gpu-wheels: $(STAMP)
	$(BIN)/python -m pip download --quiet --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
	  $(GPU_PLATFORMS) -d .whl $(GPU_WHEELS)
	@ls .whl

validate: $(STAMP)
	$(BIN)/seqkeras validate experiments

# seqkeras/generated_files/ lists them; tests/test_generated_files.py fails while one is stale.
generate: $(STAMP)
	$(BIN)/python -m seqkeras.generated_files

clean-venv:
	rm -rf $(VENV)
