"""The training controls on JAX (tests/training_controls.py lists them).

    KERAS_BACKEND=jax .venv/bin/python -m pytest -q tests/jax_backend/test_training_controls_jax.py

All but the scorer's agreement with the evaluator, backend-neutral code checked on TensorFlow and torch: on JAX
each decoded batch shape compiles its own programs, which costs seconds.
"""

import pytest

pytest.importorskip("jax", reason="jax is not installed (pip install -r requirements.txt)")

from tests.training_controls import *  # noqa: E402,F401,F403  (collected here: run on JAX)

del test_the_seq2seq_scorer_gives_the_evaluators_greedy_scores_on_the_same_pairs  # noqa: F405,F821
