"""Three pytest processes, one per Keras backend, each imported once, quietly, on the CPU.

    .venv/bin/python -m pytest -q                                        # tests/, Keras on TensorFlow
    KERAS_BACKEND=torch .venv/bin/python -m pytest -q tests/torch_backend  # Keras on PyTorch
    KERAS_BACKEND=jax .venv/bin/python -m pytest -q tests/jax_backend      # Keras on JAX

A process cannot switch backends once Keras is imported, so the main process
leaves tests/torch_backend/ and tests/jax_backend/ out, and a process started
with KERAS_BACKEND=torch or jax leaves out the files here, which expect
TensorFlow, and the other backend's folder (tests/torch_backend/conftest.py
selects torch, tests/jax_backend/conftest.py jax). `make test` runs all three.

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

# The folder of tests that runs in its own process, per backend other than TensorFlow.
BACKEND_FOLDERS = {"torch": "torch_backend", "jax": "jax_backend"}
PROCESS_BACKEND = os.environ.get("KERAS_BACKEND")
if PROCESS_BACKEND in BACKEND_FOLDERS:
    collect_ignore_glob = ["test_*.py"]
    collect_ignore = [folder for backend, folder in BACKEND_FOLDERS.items() if backend != PROCESS_BACKEND]
else:
    select_backend("tensorflow")
    collect_ignore = list(BACKEND_FOLDERS.values())

REPO = Path(__file__).resolve().parent.parent


def pytest_addoption(parser):
    parser.addoption("--system", action="store_true",
                     help="also run the tests marked system (installs, clusters, browsers): make test-system")


def pytest_collection_modifyitems(config, items):
    """Without --system, the tests marked `system` are deselected (not skipped: they are not this tier's).

    The modules holding a test marked `slow` go first, each whole (its module-scoped fixtures are made once),
    in their usual order: pytest-xdist's workers then end on short tests, not one on a 30-second test while
    the other waits with nothing left to take."""
    if not config.getoption("--system"):
        system = [item for item in items if item.get_closest_marker("system")]
        if system:
            config.hook.pytest_deselected(items=system)
            items[:] = [item for item in items if not item.get_closest_marker("system")]
    slow_modules = {getattr(item, "module", None) for item in items if item.get_closest_marker("slow")} - {None}
    items.sort(key=lambda item: getattr(item, "module", None) not in slow_modules)  # stable: each group keeps its order


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
