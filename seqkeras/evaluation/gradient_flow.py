"""Diagnostic `gradient_flow`: the lesson's vanishing-gradient curve, measured on a run's own recurrent layer.

The probe `gradient_flow` (seqkeras.probes.gradient_flow) follows a unit
gradient back through a hand-built tanh RNN. This diagnostic
(`evaluate: {diagnostics: [gradient_flow]}`) takes the same measurement on the
model a run trains, once when it is built and once after training, so that the
gated cells' "gradient highway" shows beside the SimpleRNN's vanishing:

    norms[k] = mean over the batch of |d(g0 . h_{T-1}) / d s_{T-1-k}|,  k = 0 .. T-1,
    g0 = ones(d) / sqrt(d)                                   (so norms[0] = 1)

where s_t is the cell's whole state at step t: h for a SimpleRNN or a GRU,
(h, c) for an LSTM.

for the model's first recurrent layer (of a bidirectional layer its forward
direction, of a stack the bottom layer), over its real inputs: the first
`BATCH` test sequences through the model's own layers before it (the
embedding). The layer's cell is unrolled step by step in Python, called as
Keras's RNN loop calls it; a perturbation eps_t (zeros) is added to the state
after each step, and the gradient of the loss with respect to eps_t is
dL/ds_t, the total derivative through every later step (for the lesson's tanh
RNN, its `g` after k backward steps). The gradient comes from the running backend's
autodiff (`seqkeras.backends.autodiff`).

- LSTM: the state is (h, c), and eps is added to both: the norm is that of the
  gradient with respect to (h_t, c_t) together. The cell c is the LSTM's
  "gradient highway" (c_{t+1} = f * c_t + i * g: with the forget gate near 1 the
  gradient passes back almost unchanged); the gradient with respect to h alone
  would miss exactly that path.
- Padding: the sequences are used as they are, padding included, with the mask
  the model's layers give the recurrent layer, applied as Keras's RNN applies
  it: at a padded step the state is carried over unchanged, so that step passes
  the gradient on unchanged. T is the test set's padded length, and k counts
  padded steps as steps (on tasks of one length, such as delayed_recall, there
  are none).
- Inference mode: no dropout, and nothing here draws a random number, so a
  measurement before training leaves the weights and the training batches as
  they would have been without it.
"""

from __future__ import annotations

import contextlib
import math
from typing import TYPE_CHECKING, Any

import numpy as np

from seqkeras.backends.autodiff import gradients
from seqkeras.backends.precision import float64_computation

if TYPE_CHECKING:
    import keras
    import pandas as pd

    from seqkeras.tasks.base import SequenceData

NAME = "gradient_flow"  # as `evaluate.diagnostics` names it
CURVE = "gradient_flow"  # the run folder's gradient_flow.csv, and its plot
COLUMNS = ("steps_back", "at_init", "trained")
# The first 32 test sequences: the norms of single sequences spread over orders of
# magnitude, and 32 give a stable mean, while a Python loop over T steps of a
# batch of 32 stays well under a second for the suite's sizes.
BATCH = 32
# What a run that asks for the diagnostic adds to each of its rows (spec.outputs declares them).
METRICS = ("gradient_drop_init", "gradient_drop_trained", "gradient_at_start_init", "gradient_at_start_trained")


def measure(model: keras.Model, data: SequenceData) -> np.ndarray:
    """norms[k] for the model's first recurrent layer, over the first `BATCH` test sequences."""
    return model_gradient_norms(model, data.x_test[:BATCH])


def model_gradient_norms(model: keras.Model, x: Any) -> np.ndarray:
    """norms[k] for the model's first recurrent layer, over the model inputs x."""
    layer, _ = first_recurrent_layer(model)
    inputs, mask = layer_inputs(model, x)
    return gradient_norms(layer, inputs, mask)


def first_recurrent_layer(model: keras.Model) -> tuple[keras.layers.Layer, keras.Model]:
    """The model's first recurrent layer (an RNN or a Bidirectional), and the functional model whose graph holds it.

    A model made of models (the CRF tagger: an encoder and a CRF) is searched in
    the order of its layers.
    """
    import keras

    def search(owner):
        for layer in owner.layers:  # a functional model lists its layers in graph order
            if isinstance(layer, (keras.layers.RNN, keras.layers.Bidirectional)):
                return layer, owner
            if isinstance(layer, keras.Model):
                found = search(layer)
                if found:
                    return found
        return None

    found = search(model)
    if found is None:
        raise ValueError(f"model {model.name!r} has no recurrent layer to follow the gradient through")
    return found


def layer_inputs(model: keras.Model, x: Any) -> tuple[Any, Any]:
    """What the model's own layers give its first recurrent layer for the model inputs x: (inputs, mask or None).

    Read from the layer's (first) call in the model's graph: its sequence argument, and the
    mask Keras passed it (the embedding's, for token ids; none for the regressor's features).
    """
    import keras

    layer, owner = first_recurrent_layer(model)
    # Keras keeps no public record of a call's arguments; its nodes do (backends/torch/layer_chain reads them too).
    call = layer._inbound_nodes[0].arguments
    sequences, mask = call.args[0], call.kwargs.get("mask")
    if mask is None and any(sequences is tensor for tensor in owner.inputs):  # the regressor: the features themselves
        return keras.ops.convert_to_tensor(x, dtype=sequences.dtype), None
    before = keras.Model(owner.input, [sequences] if mask is None else [sequences, mask])
    outputs = before(x, training=False)
    return outputs[0], None if mask is None else outputs[1]


def gradient_norms(layer: keras.layers.Layer, inputs: Any, mask: Any = None) -> np.ndarray:
    """norms[k] = mean over the batch of |d(g0 . h_{T-1}) / d s_{T-1-k}| for the recurrent `layer` over
    inputs [B, T, F].

    `mask` [B, T] (True at real steps) is applied as the layer applies it.
    """
    import keras
    from keras import ops

    rnn = forward_direction(layer)
    units = rnn.cell.units
    dtype = rnn.cell.compute_dtype
    batch, steps = int(ops.shape(inputs)[0]), int(ops.shape(inputs)[1])
    g0 = ops.ones((units,), dtype=dtype) / math.sqrt(units)
    width = units * len(_as_list(rnn.cell.state_size))  # h, or an LSTM's h and c side by side
    zeros = [ops.zeros((batch, width), dtype=dtype) for _ in range(steps)]

    def loss(perturbations):
        # A sum over the batch: the sequences do not interact, so each one's gradient is its own.
        return ops.sum(unroll(rnn, inputs, mask, perturbations) * g0)

    # A float64 layer (the lesson's probe maps its RNN onto one) is followed in float64 on every backend: Keras
    # on torch and JAX computes some float64 operations in float32 unless asked (backends.precision).
    with float64_computation() if dtype == "float64" else contextlib.nullcontext():
        per_step = gradients(loss, zeros)  # index t: d loss / d s_t, in the order the cell read the steps
    norms = np.stack([np.linalg.norm(keras.ops.convert_to_numpy(g).astype(np.float64), axis=-1) for g in per_step])
    return norms.mean(axis=1)[::-1].copy()  # index k = steps back from the last state


def forward_direction(layer: keras.layers.Layer) -> keras.layers.RNN:
    """The RNN layer whose cell is followed: a Bidirectional layer's forward one, else the layer itself."""
    import keras

    return layer.forward_layer if isinstance(layer, keras.layers.Bidirectional) else layer


def unroll(rnn: keras.layers.RNN, inputs: Any, mask: Any = None, perturbations: list[Any] | None = None) -> Any:
    """The last output state h of `rnn` over inputs [B, T, F], calling its cell once per step as Keras's loop does.

    perturbations[t] (if given, [B, units × states]) is added to the state after the t-th step the cell
    reads: its first `units` columns to h, the next to an LSTM's c;
    `mask` [B, T] keeps the state unchanged at padded steps, as Keras's RNN does.
    """
    from keras import ops

    cell = rnn.cell
    inputs = ops.cast(inputs, cell.compute_dtype)
    steps = int(ops.shape(inputs)[1])
    order = range(steps - 1, -1, -1) if rnn.go_backwards else range(steps)
    states = _as_list(cell.get_initial_state(batch_size=ops.shape(inputs)[0]))
    for index, t in enumerate(order):
        _, new_states = cell(inputs[:, t], states, training=False)
        new_states = _as_list(new_states)
        if mask is not None:
            real = ops.expand_dims(ops.cast(mask[:, t], "bool"), -1)
            new_states = [ops.where(real, new, old) for new, old in zip(new_states, states)]
        if perturbations is not None:
            units = cell.units
            # In the state's dtype, as TensorFlow converts a NumPy operand (torch would not add one to a tensor
            # that records its gradient).
            new_states = [state + ops.convert_to_tensor(perturbations[index][:, i * units:(i + 1) * units], state.dtype)
                          for i, state in enumerate(new_states)]
        states = new_states
    return states[0]


def curve(at_init: np.ndarray, trained: np.ndarray) -> pd.DataFrame:
    """gradient_flow.csv: steps_back, at_init, trained."""
    import pandas as pd

    return pd.DataFrame({"steps_back": np.arange(len(at_init)), "at_init": at_init, "trained": trained},
                        columns=list(COLUMNS))


def summary(at_init: np.ndarray, trained: np.ndarray) -> dict[str, float]:
    """The metrics: orders of magnitude the gradient falls across the sequence, and what reaches its start."""
    found = {"gradient_drop_init": drop(at_init), "gradient_drop_trained": drop(trained),
             "gradient_at_start_init": float(at_init[-1]), "gradient_at_start_trained": float(trained[-1])}
    return {name: found[name] for name in METRICS}


def drop(norms: np.ndarray) -> float:
    """log10(norms[0] / norms[T-1]): the lesson's "falls by about 12 orders of magnitude"."""
    first, last = float(norms[0]), float(norms[-1])
    if last <= 0:  # underflowed to zero: the gradient vanished beyond what float can show
        return math.inf
    return math.log10(first / last)


def _as_list(states: Any) -> list[Any]:
    return list(states) if isinstance(states, (list, tuple)) else [states]
