"""The gradient_flow diagnostic on Keras's torch backend: torch.autograd, the fused layers, a whole run.

    KERAS_BACKEND=torch .venv/bin/python -m pytest -q tests/torch_backend/test_gradient_flow.py
"""

from __future__ import annotations

import pytest

pytest.importorskip("torch", reason="torch is not installed (pip install -r requirements.txt)")

import keras
import numpy as np
import pandas as pd
import torch

from seqkeras.backends.torch import fused_rnn
from seqkeras.evaluation import gradient_flow
from tests.helpers import run_with_and_without_gradient_flow
from tests.torch_backend.common import KERAS


def lessons_backward_pass(W: np.ndarray, x: np.ndarray) -> np.ndarray:
    """The lesson's hand derivation: h_t = tanh(W h_{t-1} + x_t), g <- W^T (g * (1 - h_t^2)), from g0."""
    d = W.shape[0]
    h, states = np.zeros(d), []
    for x_t in x:
        h = np.tanh(W @ h + x_t)
        states.append(h)
    g, norms = np.ones(d) / np.sqrt(d), []
    for h_t in reversed(states):
        norms.append(np.linalg.norm(g))
        g = W.T @ (g * (1 - h_t**2))
    return np.array(norms)


def test_torch_autograd_gives_the_lessons_backward_pass():
    rng = np.random.default_rng(0)
    d, steps = 16, 30
    W = rng.normal(size=(d, d))
    W *= 0.9 / max(abs(np.linalg.eigvals(W)))
    x = rng.normal(size=(steps, d)) * 0.5
    # float32, as the suite's models run (Keras's torch matmul computes a float64 layer in float32 anyway).
    layer = keras.layers.SimpleRNN(d, use_bias=False)
    layer.build((None, steps, d))
    layer.set_weights([np.eye(d), W.T])

    norms = gradient_flow.gradient_norms(layer, torch.tensor(x[None], dtype=torch.float32))
    np.testing.assert_allclose(norms, lessons_backward_pass(W, x), rtol=1e-4)


@pytest.mark.parametrize("kind", KERAS)
def test_the_unroll_is_the_fused_layers_computation(kind):
    """PyTorch's fused kernel (right padding) and the cell stepped one call at a time agree."""
    keras.utils.set_random_seed(0)
    tokens = np.array([[3, 1, 4, 1, 5, 9], [2, 7, 1, 8, 0, 0]], dtype="int32")
    ids = keras.Input(shape=(None,), dtype="int32")
    layer = fused_rnn.FUSED[KERAS[kind]](5)
    model = keras.Model(ids, layer(keras.layers.Embedding(10, 4, mask_zero=True)(ids)))
    inputs, mask = gradient_flow.layer_inputs(model, tokens)
    assert layer.fused_blocker() is None
    unrolled = keras.ops.convert_to_numpy(gradient_flow.unroll(layer, inputs, mask))
    np.testing.assert_allclose(unrolled, model.predict(tokens, verbose=0), atol=1e-5)


def test_a_torch_run_writes_the_curve_and_trains_as_without_it(write_spec, tmp_path, capsys):
    plain_run, run = run_with_and_without_gradient_flow(write_spec, capsys, tmp_path / "r", cell="lstm", lag=4,
                                                        n_train=48, args=("--backend", "torch"))
    assert (run / "history.csv").read_text() == (plain_run / "history.csv").read_text()
    curve = pd.read_csv(run / "gradient_flow.csv")
    assert list(curve.columns) == ["steps_back", "at_init", "trained"] and len(curve) == 5
    values = curve[["at_init", "trained"]].to_numpy()
    assert np.all(np.isfinite(values)) and np.all(values > 0)
    runs = pd.read_csv(tmp_path / "r" / "diagnosed" / "runs.csv")
    assert runs.loc[0, "backend"] == "torch" and np.isfinite(runs.loc[0, "gradient_drop_trained"])
