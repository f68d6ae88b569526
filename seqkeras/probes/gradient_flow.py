"""Probe `gradient_flow`: vanishing and exploding gradients through time, measured by Keras.

The lesson unrolls a 64-unit tanh RNN for 60 steps and backpropagates a unit
gradient from the last state by hand, printing its norm 1, 10, 30 and 59 steps
back for spectral radii 0.8, 1.0 and 1.2. This probe runs the same recurrence
through a `keras.layers.SimpleRNNCell` (float64) and lets the running
backend's autodiff do the backward pass (`seqkeras.backends.autodiff`), so the
table is a measurement of what Keras actually computes rather than a
re-derivation of it.

Mapping the lesson onto the cell:

    lesson:  h_t = tanh(W @ h_{t-1} + x_t)
    Keras:   h_t = activation(x_t @ kernel + h_{t-1} @ recurrent_kernel)

so kernel = identity (the input is added unchanged), recurrent_kernel = W.T
(Keras multiplies the state from the left), and no bias. With
loss = g0 . h_{T-1} and g0 = ones(d) / sqrt(d), the gradient of the loss with
respect to h_{T-1-k} is exactly the lesson's vector `g` after k backward steps.
"""

from __future__ import annotations

import math
from typing import Literal

import numpy as np
import pandas as pd
from pydantic import Field, model_validator

from seqkeras.backends.autodiff import gradients
from seqkeras.backends.precision import float64_computation
from seqkeras.probes.base import ProbeResult
from seqkeras.registry import Params as BaseParams


class Params(BaseParams):
    units: int = Field(
        64,
        ge=1,
        description="Size d of the hidden state (and of each input vector). The lesson uses 64.",
    )
    steps: int = Field(
        60,
        ge=1,
        description="Number of time steps T the RNN is unrolled for. The lesson uses 60, "
        "so the gradient can be followed up to 59 steps back.",
    )
    spectral_radius: float = Field(
        1.0,
        gt=0,
        description="Largest eigenvalue magnitude of the recurrent matrix W; the random W is "
        "rescaled to it. It largely decides whether gradients vanish (<1) or explode (>1). "
        "The lesson compares 0.8, 1.0 and 1.2.",
    )
    activation: Literal["tanh", "linear", "relu"] = Field(
        "tanh",
        description="Nonlinearity of the recurrence. tanh is the lesson's network: its derivative "
        "is at most 1 and pushes gradients towards vanishing; linear shows the pure exponential "
        "growth or decay set by the spectral radius.",
    )
    input_scale: float = Field(
        0.5,
        ge=0,
        description="Standard deviation of the random inputs x_t (standard normal draws times "
        "this factor). Larger inputs saturate tanh sooner, which shrinks gradients. The lesson "
        "uses 0.5.",
    )
    draw: int = Field(
        0,
        ge=0,
        description="Which (W, x) pair of the seeded generator to use: pairs are drawn one after "
        "another from numpy default_rng(seed), W first, then x. The lesson draws, with seed 0, "
        "pair 0 for radius 0.8, pair 1 for 1.0 and pair 2 for 1.2.",
    )
    report_steps: list[int] = Field(
        default_factory=lambda: [1, 10, 30, 59],
        min_length=1,
        description="How many steps back to report the gradient norm (each becomes a metric "
        "grad_norm_<k>). Each must be smaller than steps. The lesson prints 1, 10, 30 and 59.",
    )
    linear_reference: bool = Field(
        True,
        description="Also run the same W through a linear RNN and report its gradient norm at the "
        "largest report step (linear_grad_norm_<k>), as the lesson prints 'linear RNN after 59 "
        "steps'; it shows what the spectral radius alone would do without saturation.",
    )

    @model_validator(mode="after")
    def _report_steps_fit(self) -> "Params":
        bad = [k for k in self.report_steps if k < 0 or k >= self.steps]
        if bad:
            raise ValueError(
                f"report_steps {bad} must each be between 0 and steps - 1 = {self.steps - 1}, "
                f"because a {self.steps}-step sequence can only be followed back that far."
            )
        return self


def draw_weights(params: Params, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """The lesson's W (rescaled to the spectral radius) and inputs x for pair `params.draw`."""
    d, T = params.units, params.steps
    rng = np.random.default_rng(seed)
    # Earlier pairs are drawn and discarded, exactly as the lesson's loop consumes them.
    for _ in range(params.draw + 1):
        W = rng.normal(0, 1, (d, d))
        x = rng.normal(0, 1, (T, d))
    W = W * (params.spectral_radius / max(abs(np.linalg.eigvals(W))))
    return W, x * params.input_scale


def gradient_norms(W: np.ndarray, x: np.ndarray, activation: str) -> np.ndarray:
    """norms[k] = |d loss / d h_{T-1-k}| for loss = g0 . h_{T-1}, computed by the backend's autodiff in float64."""
    with float64_computation():
        return _gradient_norms(W, x, activation)


def _gradient_norms(W: np.ndarray, x: np.ndarray, activation: str) -> np.ndarray:
    import keras
    from keras import ops

    T, d = x.shape
    cell = keras.layers.SimpleRNNCell(d, activation=activation, use_bias=False, dtype="float64")
    cell.build((None, d))
    cell.set_weights([np.eye(d), W.T])  # x_t @ I + h @ W.T  ==  (W h + x_t) as a row vector

    inputs = ops.convert_to_tensor(x[:, None, :], dtype="float64")  # (T, batch=1, d)
    g0 = ops.convert_to_tensor(np.ones((1, d)) / np.sqrt(d), dtype="float64")

    def loss(perturbations):
        # eps_t (zeros) is added to the state after step t and fed forward with it, so d loss / d eps_t
        # is d loss / d h_t through every later step. (torch.autograd.grad and jax.grad differentiate
        # with respect to a function's inputs only, not to the states it computes on the way.)
        h = ops.zeros((1, d), dtype="float64")
        for t in range(T):
            _, new_state = cell(inputs[t], [h])
            h = new_state[0] + perturbations[t]
        return ops.sum(g0 * h)

    grads = gradients(loss, [ops.zeros((1, d), dtype="float64") for _ in range(T)])
    norms = [float(np.linalg.norm(ops.convert_to_numpy(g))) for g in grads]
    return np.array(norms[::-1])  # index k = steps back from the last state


def metric_names(params: Params) -> list[str]:
    """The metrics `run` reports for these parameters, known before it runs (tables and claims are checked
    against them)."""
    names = [f"grad_norm_{k}" for k in sorted(set(params.report_steps))] + ["decay_per_step", "log10_grad_drop"]
    return names + ([f"linear_grad_norm_{max(params.report_steps)}"] if params.linear_reference else [])


def run(params: Params, seed: int) -> ProbeResult:
    W, x = draw_weights(params, seed)
    norms = gradient_norms(W, x, params.activation)

    metrics: dict[str, float | int | str] = {}
    for k in sorted(set(params.report_steps)):
        metrics[f"grad_norm_{k}"] = float(norms[k])

    last = params.steps - 1
    if last > 0 and norms[0] > 0:
        ratio = norms[last] / norms[0]
        # Geometric mean of the per-step shrink factor over the whole sequence.
        metrics["decay_per_step"] = float(ratio ** (1.0 / last))
        # The lesson's "falls by about 12 orders of magnitude over 59 steps".
        metrics["log10_grad_drop"] = float(-math.log10(ratio)) if ratio > 0 else math.inf
    else:
        metrics["decay_per_step"] = math.nan
        metrics["log10_grad_drop"] = math.nan

    curve = pd.DataFrame({"steps_back": np.arange(params.steps), "grad_norm": norms})
    if params.linear_reference:
        linear = gradient_norms(W, x, "linear")
        k_max = max(params.report_steps)
        metrics[f"linear_grad_norm_{k_max}"] = float(linear[k_max])
        curve["linear_grad_norm"] = linear

    return ProbeResult(metrics=metrics, curves={"gradient_norms": curve})
