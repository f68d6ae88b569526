"""The training controls on JAX: the same checks as on TensorFlow, imported from their modules and run in this
process (the scorer's agreement with the evaluator is backend-neutral code, checked on TensorFlow and torch; on
JAX every decoded batch shape compiles anew, which costs half a minute).

    KERAS_BACKEND=jax .venv/bin/python -m pytest -q tests/jax_backend/test_training_controls_jax.py

A learning-rate schedule and reduce-on-plateau (the rate each epoch ends with), class weights, evaluations every N
steps (the same model as every epoch), and decoded validation scores watched by early stopping.
"""

from __future__ import annotations

import pytest

pytest.importorskip("jax", reason="jax is not installed (pip install -r requirements.txt)")

from tests.test_class_weights import (  # noqa: E402,F401  (collected here: run on JAX)
    test_a_weighted_run_trains_and_a_label_the_data_has_not_fails_it_in_one_line,
)
from tests.test_schedules import (  # noqa: E402,F401
    test_a_scheduled_run_records_the_rate_its_schedule_gives_after_each_epoch,
    test_reduce_on_plateau_lowers_the_rate_after_patience_epochs_without_improvement,
)
from tests.test_step_budget import (  # noqa: E402,F401
    test_evaluating_every_five_steps_trains_the_same_model_as_every_epoch,
)
from tests.test_validation_decoding import (  # noqa: E402,F401
    test_early_stopping_watches_val_bleu_decoded_every_second_epoch,
)
