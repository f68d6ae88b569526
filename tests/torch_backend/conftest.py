"""The torch process: Keras on PyTorch, on the CPU, for seqkeras/backends/torch against Keras's own.

    .venv/bin/python -m pytest -q tests/torch_backend

The default pytest process has Keras on torch and runs this folder with tests/ (tests/conftest.py);
the TensorFlow and JAX processes leave it out. torch is required (requirements.txt): that process runs on it.
"""

from __future__ import annotations

import sys

import pytest

if "keras" in sys.modules and sys.modules["keras"].backend.backend() != "torch":
    raise pytest.UsageError(
        "tests/torch_backend needs Keras on torch, and this process has it on "
        f"{sys.modules['keras'].backend.backend()}: .venv/bin/python -m pytest tests/torch_backend"
    )

# tests/conftest.py has selected torch for this process (one thread, the CPU), as for tests/.
