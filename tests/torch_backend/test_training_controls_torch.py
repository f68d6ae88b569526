"""The training controls on torch, where a run trains on the lean loop (tests/training_controls.py lists them).

    KERAS_BACKEND=torch .venv/bin/python -m pytest -q tests/torch_backend/test_training_controls_torch.py
"""

import pytest

pytest.importorskip("torch", reason="torch is not installed (pip install -r requirements.txt)")

from tests.training_controls import *  # noqa: E402,F401,F403  (collected here: run on torch)
