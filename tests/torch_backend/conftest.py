"""The torch process: Keras on PyTorch, on the CPU, for seqkeras/backends/torch against Keras's own.

    KERAS_BACKEND=torch .venv/bin/python -m pytest -q tests/torch_backend

The main pytest process has Keras on TensorFlow and leaves this folder out
(tests/conftest.py). Without torch installed, every module here skips.
"""

from __future__ import annotations

import importlib.util
import os
import sys

import pytest

if "keras" in sys.modules and sys.modules["keras"].backend.backend() != "torch":
    raise pytest.UsageError(
        "tests/torch_backend needs Keras on torch, and this process has it on "
        f"{sys.modules['keras'].backend.backend()}: KERAS_BACKEND=torch .venv/bin/python -m pytest tests/torch_backend"
    )

TORCH = importlib.util.find_spec("torch") is not None
if TORCH:
    os.environ["KERAS_BACKEND"] = "torch"
    os.environ["KERAS_TORCH_DEVICE"] = "cpu"

    from seqkeras.backends.runtime import select_backend

    select_backend("torch")

    import torch

    torch.set_num_threads(1)  # small tensors: threads only add noise (and the CPU is shared)


def pytest_sessionfinish(session, exitstatus):
    # Without torch every module skips at import, which pytest counts as no tests collected (exit 5).
    if not TORCH and exitstatus == pytest.ExitCode.NO_TESTS_COLLECTED:
        session.exitstatus = pytest.ExitCode.OK
