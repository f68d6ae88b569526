"""Probe `memory`: how long a one-unit SimpleRNN or LSTM remembers a single signal.

The lesson feeds a single 1.0 at step 0 and then silence for 100 steps:

    simple RNN:  h = tanh(w * h + 2 x)             -> forgets (w = 0.9) or saturates (w = 1.5)
    LSTM:        f = sigmoid(forget_bias)            (input-independent)
                 i = sigmoid(-4 + 8 x)               (opens only when x = 1)
                 g = tanh(2 x),  c = f c + i g,  h = sigmoid(4) tanh(c)

Here the same weights are loaded into a one-unit `keras.layers.SimpleRNN` or
`keras.layers.LSTM` (float64, on whichever backend Keras runs), and the
numbers are read off what the layer returns. The forget gate is measured as
c_t / c_{t-1} during the silence (where the input gate writes tanh(0) = 0),
not copied from sigmoid(forget_bias).
"""

from __future__ import annotations

import math
from typing import Literal

import numpy as np
import pandas as pd
from pydantic import Field, model_validator

from seqkeras.backends.precision import float64_computation
from seqkeras.probes.base import ProbeResult
from seqkeras.registry import Params as BaseParams


class Params(BaseParams):
    cell: Literal["simple_rnn", "lstm"] = Field(
        "simple_rnn",
        description="Which recurrent layer holds the memory: simple_rnn (one tanh unit) or lstm "
        "(one unit with a cell state and gates).",
    )
    steps: int = Field(
        100,
        ge=2,
        description="How many steps the sequence lasts: the signal at step 0, then silence. "
        "The memory is read after the last step. The lesson uses 100.",
    )
    recurrent_weight: float = Field(
        0.9,
        description="simple_rnn only: the recurrent weight w in h = tanh(w h + input_weight x). "
        "Below 1 the signal fades (lesson: 1.48e-05 left after 100 steps at w = 0.9); above 1 "
        "the unit saturates and holds a value forever (lesson: 0.859 at w = 1.5).",
    )
    input_weight: float = Field(
        2.0,
        description="Weight of the input: the simple RNN adds input_weight * x, the LSTM's "
        "candidate is tanh(input_weight * x). The lesson uses 2.0.",
    )
    forget_bias: float = Field(
        5.0,
        description="lstm only: bias of the forget gate, which here has no input weight, so "
        "f = sigmoid(forget_bias) at every step. The lesson compares 2, 5 and 10 "
        "(f = 0.88080, 0.99331, 0.99995).",
    )
    input_gate_bias: float = Field(
        -4.0,
        description="lstm only: bias of the input gate i = sigmoid(input_gate_bias + "
        "input_gate_weight * x). The lesson's -4 keeps the gate nearly shut during silence.",
    )
    input_gate_weight: float = Field(
        8.0,
        description="lstm only: input weight of the input gate. The lesson's 8 opens the gate "
        "(sigmoid(4) = 0.98) when the signal x = 1 arrives.",
    )
    output_gate_bias: float = Field(
        4.0,
        description="lstm only: bias of the output gate o = sigmoid(output_gate_bias), which "
        "scales how much of the cell is exposed as h. The lesson uses 4.0.",
    )


    @model_validator(mode="after")
    def _parameters_of_the_chosen_cell(self) -> "Params":
        # Only what the user wrote counts: a parameter of the other cell would be ignored silently.
        other = LSTM_ONLY if self.cell == "simple_rnn" else SIMPLE_RNN_ONLY
        misplaced = sorted(self.model_fields_set & other)
        if misplaced:
            raise ValueError(f"{', '.join(misplaced)} does not apply to cell {self.cell!r}")
        return self


SIMPLE_RNN_ONLY = {"recurrent_weight"}
LSTM_ONLY = {"forget_bias", "input_gate_bias", "input_gate_weight", "output_gate_bias"}


def _signal(steps: int) -> np.ndarray:
    """A single 1.0 at step 0, then zeros; shape (batch=1, steps, features=1)."""
    x = np.zeros((1, steps, 1))
    x[0, 0, 0] = 1.0
    return x


def _half_life(decay: float) -> float:
    """Steps for a geometric decay by `decay` per step to halve the memory.

    inf when the memory never shrinks (decay >= 1, e.g. a saturated unit);
    NaN when the per-step ratio is not a decay at all (zero or sign-flipping).
    """
    if not math.isfinite(decay) or decay <= 0:
        return math.nan
    if decay >= 1:
        return math.inf
    return math.log(0.5) / math.log(decay)


def _ratio(now: float, before: float) -> float:
    return float(now) / float(before) if before != 0 else math.nan


def _run_simple_rnn(params: Params) -> ProbeResult:
    import keras
    from keras import ops

    layer = keras.layers.SimpleRNN(
        1, use_bias=False, return_sequences=True, return_state=True, dtype="float64"
    )
    layer.build((None, params.steps, 1))
    layer.set_weights([np.array([[params.input_weight]]), np.array([[params.recurrent_weight]])])

    sequence, final = layer(ops.convert_to_tensor(_signal(params.steps), dtype="float64"))
    h = ops.convert_to_numpy(sequence)[0, :, 0]
    memory = float(ops.convert_to_numpy(final)[0, 0])
    # During silence h_t = tanh(w h_{t-1}); the last step's ratio is the current decay factor.
    decay = _ratio(h[-1], h[-2])
    metrics = {
        "memory": memory,
        "decay_per_step": decay,
        "half_life_steps": _half_life(decay),
    }
    curve = pd.DataFrame({"step": np.arange(1, params.steps + 1), "value": h})
    return ProbeResult(metrics=metrics, curves={"memory": curve})


def _run_lstm(params: Params) -> ProbeResult:
    import keras
    from keras import ops

    layer = keras.layers.LSTM(
        1, return_sequences=True, return_state=True, dtype="float64", unit_forget_bias=False
    )
    layer.build((None, params.steps, 1))
    # Keras orders the four gates i, f, c (candidate), o along the last axis.
    kernel = np.array([[params.input_gate_weight, 0.0, params.input_weight, 0.0]])
    recurrent_kernel = np.zeros((1, 4))  # the lesson's gates ignore h
    bias = np.array([params.input_gate_bias, params.forget_bias, 0.0, params.output_gate_bias])
    layer.set_weights([kernel, recurrent_kernel, bias])

    x = _signal(params.steps)
    inputs = ops.convert_to_tensor(x, dtype="float64")
    h_seq, h_final, c_final = layer(inputs)
    # The layer returns only the last cell state, so measure c_{T-1} by running the same layer
    # one step shorter; the ratio is the forget gate as the layer applies it during silence.
    _, _, c_before = layer(ops.convert_to_tensor(x[:, :-1], dtype="float64"))
    c_last = _scalar(c_final)
    forget_gate = _ratio(c_last, _scalar(c_before))

    # The whole cell-state trajectory (for the curve) comes from the layer's own cell, stepped.
    c_curve = []
    h = c = ops.zeros((1, 1), dtype="float64")
    for t in range(params.steps):
        _, (h, c) = layer.cell(inputs[:, t], [h, c])
        c_curve.append(_scalar(c))
    if not np.isclose(c_curve[-1], c_last, rtol=1e-9, atol=1e-300):
        raise RuntimeError("stepping the LSTM cell disagrees with the LSTM layer")

    metrics = {
        "forget_gate": forget_gate,
        "cell": c_last,
        "hidden": _scalar(h_final),
        # The lesson's rule of thumb: a fraction f**T of the stored value survives T steps.
        "retention": forget_gate**params.steps if math.isfinite(forget_gate) else math.nan,
        "half_life_steps": _half_life(forget_gate),
    }
    curve = pd.DataFrame(
        {"step": np.arange(1, params.steps + 1), "c": c_curve, "h": ops.convert_to_numpy(h_seq)[0, :, 0]}
    )
    return ProbeResult(metrics=metrics, curves={"memory": curve})


def _scalar(tensor) -> float:
    """The one number of a (1, 1) state, read through Keras (a torch tensor that tracks gradients included)."""
    from keras import ops

    return float(ops.convert_to_numpy(tensor)[0, 0])


def metric_names(params: Params) -> list[str]:
    """The metrics `run` reports for these parameters, known before it runs (tables and claims are checked
    against them)."""
    if params.cell == "lstm":
        return ["forget_gate", "cell", "hidden", "retention", "half_life_steps"]
    return ["memory", "decay_per_step", "half_life_steps"]


def run(params: Params, seed: int) -> ProbeResult:
    # Every weight is fixed by the parameters; the seed has nothing to draw.
    del seed
    with float64_computation():
        if params.cell == "lstm":
            return _run_lstm(params)
        return _run_simple_rnn(params)
