"""The probes on Keras's JAX backend: the committed TensorFlow numbers, in float64, and no TensorFlow.

    KERAS_BACKEND=jax .venv/bin/python -m pytest -q tests/jax_backend/test_probes_jax.py

Every expected number comes from results/ (computed on TensorFlow), read by tests/probe_checks.py.
"""

from __future__ import annotations

import pytest

pytest.importorskip("jax", reason="jax is not installed (pip install -r requirements.txt)")

import jax
import keras
import numpy as np
from keras.src.backend.common import dtypes

from tests.probe_checks import (
    differences,
    lesson_probe_cases,
    linear_recurrence_gradient_path,
    probe_cases,
    run_case,
    tensorflow_imported_by_every_probe,
)

LESSON_CASES = lesson_probe_cases()
ORDER_CASES = probe_cases("recurrence-vs-attention", only=["probe.measure.name=order"])


@pytest.mark.parametrize("case", LESSON_CASES, ids=[case.id for case in LESSON_CASES])
def test_a_lesson_probe_on_jax_gives_the_committed_tensorflow_numbers(case):
    assert case.expected, "a case with nothing to compare"
    assert differences(case, run_case(case)) == []


def test_every_lesson_probe_has_a_case():
    assert {case.probe for case in LESSON_CASES} == {"decoding", "gradient_flow", "memory", "ngram_counts", "unroll"}


def test_a_number_outside_the_reference_tolerance_is_a_difference():
    case = next(case for case in LESSON_CASES if case.probe == "memory")
    measured = dict(case.expected, cell=case.expected["cell"] * (1 + 2e-6))
    assert differences(case, case.expected) == []
    assert [line.split(":")[0] for line in differences(case, measured)] == [f"{case.id} cell"]


def test_float64_is_scoped_to_the_probe():
    """x64 and Keras's float64 promotion are on only while a probe runs: later runs keep JAX's defaults."""
    from seqkeras.probes import memory

    memory.run(memory.Params(steps=3), seed=0)
    assert not jax.config.jax_enable_x64
    assert keras.ops.convert_to_tensor(np.ones(1)).dtype == "float32"
    assert dtypes.BIT64_TO_BIT32_DTYPE["float64"] == "float32"


def test_the_gradient_path_through_jax_matches_its_closed_form():
    norms, expected = linear_recurrence_gradient_path()
    np.testing.assert_allclose(norms, expected, rtol=1e-5)


@pytest.mark.slow
@pytest.mark.parametrize("case", ORDER_CASES, ids=[case.id for case in ORDER_CASES])
def test_recurrence_vs_attention_on_jax_has_the_committed_sizes_and_order_blindness(case):
    """The lesson-sized layers (width 64) have the committed weight counts, and attention without positions is
    order-blind (zero to rounding) exactly where the committed run is; the sensitivities themselves depend on
    the backend's random initialisation."""
    measured = run_case(case)
    assert measured["body_parameters"] == case.expected["body_parameters"]
    assert (measured["order_sensitivity"] < 1e-5) == (case.expected["order_sensitivity"] < 1e-5)


@pytest.mark.slow
def test_no_probe_imports_tensorflow_on_jax():
    assert tensorflow_imported_by_every_probe("jax") == "tensorflow imported: False"
