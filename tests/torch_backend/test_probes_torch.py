"""The probes on Keras's torch backend: the committed TensorFlow numbers, in float64, and no TensorFlow.

    KERAS_BACKEND=torch .venv/bin/python -m pytest -q tests/torch_backend/test_probes_torch.py

Every expected number comes from results/ (computed on TensorFlow), read by tests/probe_checks.py.
"""

from __future__ import annotations

import pytest

pytest.importorskip("torch", reason="torch is not installed (pip install -r requirements.txt)")

import keras
import numpy as np
from keras.src.backend.common import dtypes

from tests.probe_checks import (
    differences,
    lesson_probe_cases,
    linear_recurrence_gradient_path,
    probe_cases,
    run_case,
)
from tests.torch_backend.fresh_process import fresh_torch_checks

LESSON_CASES = lesson_probe_cases()
ORDER_CASES = probe_cases("recurrence-vs-attention", only=["probe.measure.name=order"])


@pytest.mark.parametrize("case", LESSON_CASES, ids=[case.id for case in LESSON_CASES])
def test_a_lesson_probe_on_torch_gives_the_committed_tensorflow_numbers(case):
    assert case.expected, "a case with nothing to compare"
    assert differences(case, run_case(case)) == []


def test_every_lesson_probe_has_a_case():
    assert {case.probe for case in LESSON_CASES} == {"decoding", "gradient_flow", "memory", "ngram_counts", "unroll"}


def test_float64_promotion_is_scoped_to_the_probe():
    """Keras maps float64 to float32 in its type promotion off TensorFlow; a probe lifts that only while it runs."""
    from seqkeras.probes import memory

    memory.run(memory.Params(steps=3), seed=0)
    assert dtypes.BIT64_TO_BIT32_DTYPE["float64"] == "float32"
    one = keras.ops.convert_to_tensor(np.ones((1, 1)), dtype="float64")
    assert keras.backend.standardize_dtype(keras.ops.matmul(one, one).dtype) == "float32"  # Keras's own, again


def test_nested_float64_blocks_keep_float64_until_the_outermost_closes():
    from seqkeras.backends.precision import float64_computation

    with float64_computation():
        with float64_computation():
            pass
        assert dtypes.BIT64_TO_BIT32_DTYPE["float64"] == "float64"
    assert dtypes.BIT64_TO_BIT32_DTYPE["float64"] == "float32"


def test_the_gradient_path_through_torch_matches_its_closed_form():
    norms, expected = linear_recurrence_gradient_path()
    np.testing.assert_allclose(norms, expected, rtol=1e-5)


@pytest.mark.parametrize("case", ORDER_CASES, ids=[case.id for case in ORDER_CASES])
def test_recurrence_vs_attention_on_torch_has_the_committed_sizes_and_order_blindness(case):
    """The lesson-sized layers (width 64) have the committed weight counts, and attention without positions is
    order-blind (zero to rounding) exactly where the committed run is; the sensitivities themselves depend on
    the backend's random initialisation."""
    measured = run_case(case)
    assert measured["body_parameters"] == case.expected["body_parameters"]
    assert (measured["order_sensitivity"] < 1e-5) == (case.expected["order_sensitivity"] < 1e-5)


@pytest.mark.slow
def test_no_probe_imports_tensorflow_on_torch():
    """In a fresh process: another test of this process may have imported TensorFlow. keras-hub imports it
    whenever it is installed, unless imported through runtime's import hook (select_backend installs it)."""
    # tests/probe_checks.py's EVERY_PROBE_WITHOUT_TENSORFLOW, the first step of the tier's one fresh torch process
    assert fresh_torch_checks().verdict("probes") == "tensorflow imported: False"
