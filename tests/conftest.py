"""Three pytest processes, one per Keras backend, each imported once, quietly, on the CPU.

    .venv/bin/python -m pytest -q                                       # Keras on torch: tests/ and tests/torch_backend
    KERAS_BACKEND=tensorflow .venv/bin/python -m pytest -q -m tensorflow  # Keras on TensorFlow: the tests marked so
    KERAS_BACKEND=jax .venv/bin/python -m pytest -q tests/jax_backend     # Keras on JAX

A process cannot switch backends once Keras is imported. The tests run on the suite's
default backend, torch, what a user's run trains on, unless they are marked `tensorflow`:
they need Keras on TensorFlow in the test process (an experiment computed on TensorFlow,
as the lesson's are; TensorFlow's own code path: its traced train step, a SavedModel, its
distribution strategies). A torch process leaves those out and says how many; a process
started with KERAS_BACKEND=tensorflow runs them alone; one with KERAS_BACKEND=jax runs
tests/jax_backend. `make test` runs all three.

Tests in two tiers. `make test`, what a developer runs after every change, leaves out the
tests marked `system`: those that install packages into a fresh environment, start Ray
clusters, browsers or process groups to kill, mount file systems, or run the benchmarks.
`make test-system` runs those alone (`pytest --system -m system`), and CI runs both.
Trained runs that many tests start from are trained once per session (`trained_runs`).
"""

from __future__ import annotations

import os
import textwrap
from pathlib import Path

import pytest

os.environ["CUDA_VISIBLE_DEVICES"] = ""  # tests never rely on a GPU
# Runs in this process unless a test asks for workers: monkeypatched code must reach them, and
# each worker would import a backend again. Tests of the --jobs default remove it.
os.environ["SEQKERAS_JOBS"] = "1"

from seqkeras.backends.runtime import select_backend

# The backend of this process: the suite's default unless KERAS_BACKEND names another. Each backend's own folder
# runs only in its process; tests/*.py run on torch, and on TensorFlow those marked `tensorflow`.
BACKEND_FOLDERS = {"torch": "torch_backend", "jax": "jax_backend"}
PROCESS_BACKEND = os.environ.get("KERAS_BACKEND") or "torch"
if PROCESS_BACKEND == "jax":
    collect_ignore_glob = ["test_*.py"]
collect_ignore = [folder for backend, folder in BACKEND_FOLDERS.items() if backend != PROCESS_BACKEND]
if PROCESS_BACKEND == "torch":
    os.environ["KERAS_TORCH_DEVICE"] = "cpu"
if PROCESS_BACKEND != "jax":  # tests/jax_backend/conftest.py selects JAX itself
    select_backend(PROCESS_BACKEND)
if PROCESS_BACKEND == "torch":
    import torch

    torch.set_num_threads(1)  # small tensors: threads only add noise (and the CPU is shared)

REPO = Path(__file__).resolve().parent.parent


def pytest_addoption(parser):
    parser.addoption("--system", action="store_true",
                     help="also run the tests marked system (installs, clusters, browsers): make test-system")
    parser.addoption("--every-backend-test", action="store_true",
                     help="on TensorFlow, also the tests not marked tensorflow (they pass on any backend)")


def pytest_collection_modifyitems(config, items):
    """Without --system, the tests marked `system` are deselected (not skipped: they are not this tier's).

    The modules holding a test marked `slow` go first, each whole (its module-scoped fixtures are made once),
    in their usual order: pytest-xdist's workers then end on short tests, not one on a 30-second test while
    the other waits with nothing left to take.

    Tests marked `tensorflow` run only in a TensorFlow process, and only they run there (unless
    --every-backend-test): elsewhere they are deselected, and the summary says how many and how to run them
    (`pytest_terminal_summary`)."""
    if not config.getoption("--system"):
        deselect(config, items, lambda item: item.get_closest_marker("system"))
    if PROCESS_BACKEND != "tensorflow":
        config.stash[TENSORFLOW_LEFT_OUT] = deselect(config, items, lambda item: item.get_closest_marker("tensorflow"))
    elif not config.getoption("--every-backend-test"):
        deselect(config, items, lambda item: not item.get_closest_marker("tensorflow"))
    slow_modules = {getattr(item, "module", None) for item in items if item.get_closest_marker("slow")} - {None}
    items.sort(key=lambda item: getattr(item, "module", None) not in slow_modules)  # stable: each group keeps its order


TENSORFLOW_LEFT_OUT = pytest.StashKey[int]()


def deselect(config, items: list, left_out) -> int:
    """Leave out the items for which `left_out(item)` is true (counted as deselected); how many."""
    kept, gone = [], []
    for item in items:
        (gone if left_out(item) else kept).append(item)
    if gone:
        config.hook.pytest_deselected(items=gone)
        items[:] = kept
    return len(gone)


def pytest_terminal_summary(terminalreporter, config):
    if PROCESS_BACKEND == "tensorflow":
        return
    # pytest-xdist's workers collect, not this process: there the count is not known here.
    left_out = config.stash.get(TENSORFLOW_LEFT_OUT, None)
    if left_out != 0:
        terminalreporter.write_line(
            f"{'the' if left_out is None else left_out} test(s) marked tensorflow are left out on {PROCESS_BACKEND}: "
            "KERAS_BACKEND=tensorflow .venv/bin/python -m pytest runs them (make test does)")


@pytest.fixture(scope="session")
def trained_runs(tmp_path_factory):
    """Tiny runs trained once per session on this process's backend (tests/trained_runs.py)."""
    import keras

    from tests.trained_runs import TrainedRuns

    # pytest-xdist's workers each have a base folder under one shared parent: the runs go there, once for all.
    base = tmp_path_factory.getbasetemp()
    shared = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
    root = shared / f"trained-runs-{keras.backend.backend()}"
    root.mkdir(exist_ok=True)
    return TrainedRuns(root, keras.backend.backend())


@pytest.fixture(autouse=True)
def users_shell(monkeypatch):
    """In the torch process, each test starts without $KERAS_BACKEND, as a user's shell: the processes it starts
    run on what `auto` picks (TensorFlow for the lesson's experiments). Keras is imported on torch already, and a
    run in the test's own process sets the variable again (`select_backend`): undone after the test. The
    TensorFlow process keeps the one make test sets, as a user who asked for it would."""
    if PROCESS_BACKEND == "torch":
        monkeypatch.delenv("KERAS_BACKEND", raising=False)


@pytest.fixture
def write_spec(tmp_path):
    """Write a YAML spec (dedented) into tmp_path and return its path."""

    def write(text: str, name: str = "spec.yaml") -> Path:
        path = tmp_path / name
        path.write_text(textwrap.dedent(text), encoding="utf-8")
        return path

    return write


TINY_TRAINING_SPEC = """
    version: 1
    name: tiny
    description: a tiny end-to-end run
    task: {name: delayed_recall, lag: 3, n_train: 64, n_test: 32}
    model: {kind: classifier, cell: gru, units: 4, embedding_dim: 4}
    train: {epochs: 1, batch_size: 16, verbose: 0}
    matrix:
      model.cell: [simple_rnn, lstm]
    seeds: [0, 1]
    table: {rows: model.cell, value: accuracy}
    expect:
      - {claim: accuracy is a share, where: {model.cell: lstm}, metric: accuracy, at_least: 0.0, at_most: 1.0}
"""


@pytest.fixture
def tiny_spec(write_spec):
    return write_spec(TINY_TRAINING_SPEC)


def pytest_collection_finish(session):
    """Every module the tests import is loaded now (the backend, Keras, the suite, the test modules): out of the
    garbage collector's walk from here on, as in the suite's workers (`freeze_what_is_loaded`). Keras's
    clear_session, at each run's start, collects in full: 0.29 s a run in a test process, 0.06 s frozen."""
    from seqkeras.backends.runtime import freeze_what_is_loaded

    freeze_what_is_loaded()
