"""The JAX process: Keras on JAX, on the CPU, for the probes (and whatever else must hold on JAX).

    KERAS_BACKEND=jax .venv/bin/python -m pytest -q tests/jax_backend

The TensorFlow and torch pytest processes leave this folder out (tests/conftest.py).
Without jax installed, every module here skips.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

import pytest

if "keras" in sys.modules and sys.modules["keras"].backend.backend() != "jax":
    raise pytest.UsageError(
        "tests/jax_backend needs Keras on jax, and this process has it on "
        f"{sys.modules['keras'].backend.backend()}: KERAS_BACKEND=jax .venv/bin/python -m pytest tests/jax_backend"
    )

JAX = importlib.util.find_spec("jax") is not None
if JAX:
    os.environ["KERAS_BACKEND"] = "jax"
    # The CPU only, as the other processes (tests/conftest.py hides CUDA devices): without this JAX
    # also probes for GPU and TPU plugins at its first array and warns that it found none.
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    # The tests' programs are tiny and most run a few times: compiling them costs more than running them (the
    # seq2seq cases spend two thirds of their time in XLA's compiler). Without LLVM's optimization passes
    # they compile in about half the time and run the same operations; nothing here times them. Set XLA_FLAGS
    # to test another setting.
    os.environ.setdefault("XLA_FLAGS", "--xla_backend_optimization_level=0")
    # JAX's persistent compilation cache, kept beside pytest's own cache: the tests' programs are the same from
    # one `make test` to the next, so a developer's second run loads them instead of compiling them again (the
    # tier took 57 s instead of 93 s on 2 cores). Programs that take no time to compile are kept too: nearly all
    # of them are that small. JAX keys each entry by the program, its XLA flags and JAX's version, so a changed
    # model compiles again. A fresh clone (CI) fills it; deleting .pytest_cache empties it.
    os.environ.setdefault("JAX_COMPILATION_CACHE_DIR",
                          str(Path(__file__).resolve().parents[2] / ".pytest_cache" / "jax-compilation"))
    os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", "0")
    os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES", "0")

    from seqkeras.backends.runtime import select_backend

    select_backend("jax")


def pytest_sessionfinish(session, exitstatus):
    # Without jax every module skips at import, which pytest counts as no tests collected (exit 5).
    if not JAX and exitstatus == pytest.ExitCode.NO_TESTS_COLLECTED:
        session.exitstatus = pytest.ExitCode.OK
