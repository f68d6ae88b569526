"""Every model kind of the catalog trains, predicts and is evaluated on Keras's JAX backend.

    KERAS_BACKEND=jax .venv/bin/python -m pytest -q tests/jax_backend/test_model_kinds_jax.py

One tiny run per case of tests/model_kind_specs.py (one epoch on a few dozen sequences) through
`seqkeras.run`, as a spec file would run: it finishes, and every metric it reports is a finite number.
"""

from __future__ import annotations

import pytest

pytest.importorskip("jax", reason="jax is not installed (pip install -r requirements.txt)")

import keras

import seqkeras
from tests.model_kind_specs import check_results, params, uncovered_kinds


def test_every_model_kind_has_a_tiny_spec():
    assert uncovered_kinds() == set(), "add a KindCase for each to tests/model_kind_specs.py"


@pytest.mark.parametrize("case", params("jax"))
def test_a_model_kind_trains_and_evaluates_on_jax(case, tmp_path):
    assert keras.backend.backend() == "jax"
    results = seqkeras.run(case.spec(), out=tmp_path, backend="jax")
    assert set(results.runs["backend"]) == {"jax"}
    check_results(case, results)
