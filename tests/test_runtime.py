"""Process set-up (seqkeras/backends/runtime.py): the backend auto picks, freed memory kept for reuse on the torch
backend, a lighter Keras import."""

from __future__ import annotations

import ctypes
import functools
import importlib.util
import os
import subprocess
import sys

import pytest

from tests.conftest import REPO
from tests.helpers import process_backend

# In a process of its own: the setting is for the life of the process, and pytest's should keep glibc's defaults.
PAGE_FAULTS = """
import resource
import numpy as np
from seqkeras.backends.torch.memory import reuse_freed_memory

def page_faults():
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for _ in range(20):
        np.ones(8 << 20).sum()  # 64 MB allocated, written, freed: as a training step's big tensors
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before

default = page_faults()
reuse_freed_memory()
page_faults()  # the heap grows to hold the block once
print(default, page_faults())
"""


@pytest.mark.skipif(not hasattr(ctypes.CDLL(None), "mallopt"), reason="not glibc: no mallopt")
def test_freed_memory_is_reused_instead_of_faulted_in_again():
    result = subprocess.run([sys.executable, "-c", PAGE_FAULTS], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    default, kept = map(int, result.stdout.split())
    # glibc's default maps 64 MB fresh from the OS every time: at least one fault per 2 MB page, 20 × 32.
    assert default >= 500
    assert kept <= default / 20


# In a process of its own: pytest's process has imported Keras already.
KERAS_WITHOUT_EXTRAS = """
import sys
from seqkeras.backends.runtime import select_backend
select_backend(sys.argv[1])
import keras
skipped = [name for name in ("sklearn", "matplotlib") if name in sys.modules]
import matplotlib.figure, sklearn.exceptions  # importable afterwards (plots, seqeval)
layer = keras.layers.Dense(2)
print(skipped, tuple(layer(keras.ops.ones((1, 3))).shape))
"""

# The torch backend's fresh process checks both: Keras started without its extras (KERAS_WITHOUT_EXTRAS), then
# TensorFlow imported late (as a lesson probe imports it in a torch worker, long after select_backend) says nothing
# on stderr. One process per TF_CPP_MIN_LOG_LEVEL the user may set (None: not set), shared by the tests below: each
# process imports torch, Keras and TensorFlow, seconds of CPU.
LATE_TENSORFLOW = """
import os
print("level", os.environ["TF_CPP_MIN_LOG_LEVEL"])
import tensorflow as tf  # as a lesson probe imports it in a torch worker, long after select_backend
print(int(tf.reduce_sum(tf.constant([1, 2]))))  # the first op: where the CUDA probe logs its failure
"""


@functools.cache
def torch_then_tensorflow(level: str | None) -> subprocess.CompletedProcess:
    """KERAS_WITHOUT_EXTRAS on torch, then LATE_TENSORFLOW, in a fresh process, with $TF_CPP_MIN_LOG_LEVEL set
    to `level` (None: unset)."""
    environment = {key: value for key, value in os.environ.items() if key != "TF_CPP_MIN_LOG_LEVEL"}
    if level is not None:
        environment["TF_CPP_MIN_LOG_LEVEL"] = level
    return subprocess.run([sys.executable, "-c", KERAS_WITHOUT_EXTRAS + LATE_TENSORFLOW, "torch"], cwd=REPO,
                          env=environment, capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize("backend", ["tensorflow", "torch"])
def test_keras_starts_without_its_scikit_learn_and_matplotlib_integrations(backend):
    """1.3 s of a 4.3 s start on TensorFlow, in every training process and `--jobs N` worker."""
    pytest.importorskip(backend)
    if backend == "torch":
        pytest.importorskip("tensorflow")  # the torch process goes on to import it (the test below)
        result = torch_then_tensorflow(None)
        assert result.returncode == 0, result.stderr[-2000:]
        assert result.stdout.splitlines()[0] == "[] (1, 2)"
        return
    result = subprocess.run([sys.executable, "-c", KERAS_WITHOUT_EXTRAS, backend], cwd=REPO,
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.split("\n")[-2] == "[] (1, 2)"


# In a process of its own, without $KERAS_BACKEND: pytest's process has imported Keras already.
AUTO_CHOICE = """
from seqkeras.backends.runtime import resolve_backend, select_backend
print(resolve_backend(None), resolve_backend("auto"), resolve_backend("tensorflow"), select_backend(None, load=False))
"""


@pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="torch is not installed")
def test_auto_picks_torch_unless_keras_backend_is_set():
    env = {key: value for key, value in os.environ.items() if key != "KERAS_BACKEND"}
    result = subprocess.run([sys.executable, "-c", AUTO_CHOICE], cwd=REPO, env=env, capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.split() == ["torch", "torch", "tensorflow", "torch"]
    result = subprocess.run([sys.executable, "-c", AUTO_CHOICE], cwd=REPO, env={**env, "KERAS_BACKEND": "tensorflow"},
                            capture_output=True, text=True, timeout=120)
    assert result.stdout.split() == ["tensorflow", "torch", "tensorflow", "tensorflow"]


def test_a_process_that_imported_keras_keeps_its_backend():
    from seqkeras.backends.runtime import resolve_backend
    from seqkeras.errors import SpecError

    here = process_backend()  # conftest chose it
    assert resolve_backend(None) == resolve_backend("auto") == here
    with pytest.raises(SpecError, match=f"already imported in this process with backend '{here}'"):
        resolve_backend("jax" if here != "jax" else "torch")


def test_a_misspelt_backend_is_named():
    from seqkeras.backends.runtime import select_backend
    from seqkeras.errors import SpecError

    with pytest.raises(SpecError, match="unknown Keras backend 'tensorflw'. Allowed: auto, tensorflow, jax, torch"):
        select_backend("tensorflw", load=False)


@pytest.mark.parametrize(
    "requested, runs, cores, memory_gib, expected",
    [
        (None, 12, 2, 20, (2, "the default: one per core")),
        (None, 1, 2, 20, (1, "the default: one per run")),
        (None, 3, 16, 20, (3, "the default: one per run")),
        (8, 12, 2, 20, (2, "--jobs 8, capped at this machine's 2 cores")),
        (2, 12, 1, 20, (2, "--jobs 2")),  # two stay allowed on one core
        (None, 64, 16, 5.5, (2, "the default: one per core, capped at 2: 5.5 GiB of memory available, "
                                "about 2 GiB per worker")),
    ],
)
def test_jobs_are_one_per_core_by_default_and_never_more_than_cores_or_memory_allow(
        monkeypatch, requested, runs, cores, memory_gib, expected):
    from seqkeras.execution import executors

    monkeypatch.setattr(executors.os, "cpu_count", lambda: cores)
    monkeypatch.setattr(executors, "available_memory", lambda: int(memory_gib * 2**30))
    assert executors.choose_jobs(requested, runs) == expected


def test_a_bad_seqkeras_jobs_is_named(monkeypatch, tmp_path, capsys):
    from tests.helpers import run_cli

    monkeypatch.setenv("SEQKERAS_JOBS", "two")
    spec = tmp_path / "s.yaml"
    spec.write_text("version: 1\nname: s\ntask: {name: delayed_recall}\nmodel: {kind: classifier}\n")
    done = run_cli(capsys, "run", spec, "--out", tmp_path / "out")
    assert done.code == 2 and "$SEQKERAS_JOBS='two': expected a whole number" in done.err


def _experiment(name, backend):
    from types import SimpleNamespace

    return SimpleNamespace(spec=SimpleNamespace(name=name, backend=backend), source=f"{name}.yaml")


@pytest.mark.tensorflow  # this process's Keras is on TensorFlow, as a lesson experiment's
def test_an_experiments_backend_key_decides_under_auto_and_refuses_another(monkeypatch):
    from seqkeras.execution.sweep import choose_backend
    from seqkeras.errors import SpecError

    monkeypatch.delenv("KERAS_BACKEND")  # as a user's shell; this process's Keras is on TensorFlow
    lesson, free = _experiment("lesson", "tensorflow"), _experiment("free", None)
    assert choose_backend(None, [free, lesson]) == ("tensorflow", "backend: tensorflow in the spec of lesson")
    assert choose_backend("auto", [lesson]) == ("tensorflow", "backend: tensorflow in the spec of lesson")
    assert choose_backend("tensorflow", [lesson, free]) == ("tensorflow", None)  # the user's choice: nothing said
    with pytest.raises(SpecError) as error:
        choose_backend("torch", [free, lesson])
    assert (error.value.file, error.value.path) == ("lesson.yaml", "backend")
    assert "computed on 'tensorflow', not on 'torch'" in error.value.message
    with pytest.raises(SpecError, match="run them in separate commands"):
        choose_backend(None, [lesson, _experiment("other", "torch")])


@pytest.mark.tensorflow  # this process's Keras is on TensorFlow, as a lesson experiment's
def test_keras_backend_in_the_environment_is_the_users_choice_too(monkeypatch):
    from seqkeras.execution.sweep import choose_backend
    from seqkeras.errors import SpecError

    monkeypatch.setenv("KERAS_BACKEND", "tensorflow")
    assert choose_backend(None, [_experiment("free", None)]) == ("tensorflow", None)
    with pytest.raises(SpecError, match="not on 'tensorflow'"):
        choose_backend(None, [_experiment("gpu", "torch")])


@pytest.mark.parametrize("level", [None, "0"])
def test_tensorflow_imported_late_says_nothing_unless_the_user_asks_for_its_logs(level):
    """TensorFlow's C++ notices (I0000 … oneDNN, E0000 … cuInit) stay off stderr in a process the suite set up,
    wherever TensorFlow is first imported; a TF_CPP_MIN_LOG_LEVEL the user sets is left as it is."""
    done = torch_then_tensorflow(level)  # select_backend("torch"), Keras on torch, then `import tensorflow`
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["[]", "(1,", "2)", "level", level or "3", "3"]
    assert "I0000" not in done.stderr and "oneDNN custom operations" not in done.stderr
    if level is None:
        assert "E0000" not in done.stderr and "cuInit" not in done.stderr


# In a process of its own: this one is frozen already (tests/conftest.py).
FROZEN_AFTER = """
import gc
from seqkeras.backends.runtime import freeze_what_is_loaded
before = gc.get_freeze_count()
freeze_what_is_loaded()
print(before, gc.get_freeze_count() > 0)
"""


def test_a_worker_freezes_what_its_imports_loaded_before_any_run(monkeypatch):
    """Keras's clear_session collects in full at each run's start; the objects a worker loaded before its first run
    are out of that walk (0.2 s a run in a fresh process): a worker is the suite's process, so its import of the
    backend freezes them."""
    from seqkeras.backends import runtime
    from seqkeras.execution import workers

    done = subprocess.run([sys.executable, "-c", FROZEN_AFTER], cwd=REPO, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0 and done.stdout.split() == ["0", "True"], done.stderr[-2000:]
    calls = []
    monkeypatch.setattr(runtime, "_ALL_OURS", False)
    monkeypatch.setattr(workers, "select_backend",
                        lambda backend: calls.append(f"select {backend} {runtime._ALL_OURS}"))
    monkeypatch.setattr(workers, "configure_process", lambda backend, threads: calls.append("threads"))
    workers.setup_worker("tensorflow", 1)
    assert calls == ["select tensorflow True", "threads"]  # claimed before its backend is imported


def test_the_collector_is_paused_inside_the_block_and_as_it_was_after():
    import gc

    from seqkeras.backends.runtime import collector_paused

    assert gc.isenabled()
    with pytest.raises(RuntimeError), collector_paused():
        assert not gc.isenabled()
        raise RuntimeError("an import that fails")
    assert gc.isenabled()  # back on, even after an error
    gc.disable()
    try:
        with collector_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()  # a caller who had it off keeps it off
    finally:
        gc.enable()


# In a process of its own: this one has imported Keras already. argv[1]: "claimed" for the command line's process.
IMPORTED_WITH_COLLECTOR = """
import gc, sys
seen = {}

class Watch:  # notes whether the collector was on when torch and Keras were imported; imports nothing itself
    def find_spec(self, name, path=None, target=None):
        if name in ("torch", "keras"):
            seen[name] = gc.isenabled()

sys.meta_path.insert(0, Watch())
from seqkeras.backends import runtime
if sys.argv[1] == "claimed":
    runtime.claim_this_process()
runtime.select_backend("torch")
import keras
frozen = gc.get_freeze_count()
made_since = [{} for _ in range(1000)]
runtime.select_backend("torch")  # Keras is imported: nothing more is frozen
print(seen["torch"], seen["keras"], keras.backend.backend(), gc.isenabled(), frozen > 100_000,
      gc.get_freeze_count() == frozen)
"""


@pytest.mark.parametrize("process", ["claimed", "a caller's"])
def test_keras_is_imported_with_the_collector_paused_and_frozen_in_the_suites_own_process(process):
    """Importing Keras on torch made collections that walked a growing heap and found nothing: 0.9 s of a 4.2 s
    import. The collector is off while Keras and its backend import, and on again after. In the suite's own
    process (the command line's, a worker's) what the import loaded is frozen, out of every later collection's
    walk (8 small runs in the command line's process: 6.8 s instead of 10.1 s), once, when Keras is first
    imported; a caller's process (a notebook's) is never frozen."""
    done = subprocess.run([sys.executable, "-c", IMPORTED_WITH_COLLECTOR, process], cwd=REPO, capture_output=True,
                          text=True, timeout=120, env={**os.environ, "KERAS_BACKEND": ""})
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["False", "False", "torch", "True", str(process == "claimed"), "True"]


def test_the_command_line_claims_its_process(monkeypatch):
    from seqkeras import cli
    from seqkeras.backends import runtime

    monkeypatch.setattr(runtime, "_ALL_OURS", False)
    assert cli.main(["list"]) == 0
    assert runtime._ALL_OURS
