"""Initializers the suite's models need beyond Keras's own."""

from __future__ import annotations

import keras
import numpy as np
from keras import ops

from seqkeras.backends.serializable import keras_serializable


# Keras stores each cell's gates side by side: recurrent kernels are (units, gates·units)
# and biases gates·units long, in the order LSTM (input, forget, candidate, output) and
# GRU (update, reset, candidate). The initializers below treat each gate's square block
# of a recurrent kernel on its own, as the lesson's constructions are per matrix.
GATES = {"simple_rnn": 1, "lstm": 4, "gru": 3}


def _blocks(shape) -> tuple[int, int]:
    units, width = int(shape[0]), int(shape[1])
    if width % units:
        raise ValueError(f"a recurrent kernel is (units, gates·units), got {tuple(shape)}")
    return units, width // units


@keras_serializable
class SpectralNormal(keras.initializers.Initializer):
    """N(0, 1) entries, each gate's block scaled so that its spectral radius is `spectral_radius`.

    The lesson's construction of a recurrent matrix: below 1 the linear part of the
    recurrence shrinks every state, above 1 it grows. (Keras's default, orthogonal,
    has every eigenvalue on the unit circle.)
    """

    def __init__(self, spectral_radius: float = 1.0, seed=None):
        self.spectral_radius = float(spectral_radius)
        self.seed = seed  # None: Keras's global generator, set by the run's seed

    def __call__(self, shape, dtype=None):
        units, gates = _blocks(shape)
        blocks = []
        for gate in range(gates):
            seed = None if self.seed is None else self.seed + gate
            drawn = np.asarray(ops.convert_to_numpy(keras.random.normal((units, units), seed=seed)), dtype="float64")
            radius = float(np.max(np.abs(np.linalg.eigvals(drawn))))
            blocks.append(drawn * (self.spectral_radius / radius if radius > 0 else 0.0))
        return ops.convert_to_tensor(np.concatenate(blocks, axis=1), dtype=dtype)

    def get_config(self):
        return {"spectral_radius": self.spectral_radius, "seed": self.seed}


@keras_serializable
class BlockIdentity(keras.initializers.Initializer):
    """`scale` times the identity in each gate's block (IRNN: Le, Jaitly & Hinton 2015).

    With a ReLU SimpleRNN and scale 1 the state is copied forward unchanged until
    inputs move it: no vanishing and no exploding at the start of training.
    """

    def __init__(self, scale: float = 1.0):
        self.scale = float(scale)

    def __call__(self, shape, dtype=None):
        units, gates = _blocks(shape)
        return ops.concatenate([self.scale * ops.eye(units, dtype=dtype)] * gates, axis=1)

    def get_config(self):
        return {"scale": self.scale}


@keras_serializable
class GateBias(keras.initializers.Initializer):
    """A cell's bias: zeros, except the gates named in `values`, which get a constant or chrono values.

    `values` maps a gate's index (Keras's order, see GATES) to a number, or to
    "chrono" / "-chrono": log U[1, max_lag − 1] per unit, or its negative (Tallec &
    Ollivier 2018, "Can recurrent neural networks warp time?"). A gate whose bias b
    keeps sigmoid(b) of the memory per step then keeps it for about e^b steps, so
    the units' memories spread over 1 … max_lag steps. For a GRU's (2, 3·units) bias
    (Keras's reset_after=True: an input and a recurrent bias per gate) the values go
    into the input row; the gate sees their sum.
    """

    def __init__(self, gates: int, values: dict, max_lag: int | None = None, seed=None):
        self.gates = int(gates)
        self.values = {int(k): v for k, v in values.items()}
        self.max_lag = max_lag
        self.seed = seed

    def __call__(self, shape, dtype=None):
        rows = int(shape[0]) if len(shape) == 2 else 1
        units = int(shape[-1]) // self.gates
        bias = np.zeros((rows, self.gates * units), dtype="float64")
        chrono = None
        if self.max_lag:  # drawn by Keras, so that the run's seed (keras.utils.set_random_seed) decides it
            lags = keras.random.uniform((units,), 1.0, max(self.max_lag - 1.0, 1.0 + 1e-6), seed=self.seed)
            chrono = np.log(np.asarray(ops.convert_to_numpy(lags), dtype="float64"))
        for gate, value in self.values.items():
            if value in ("chrono", "-chrono"):
                bias[0, gate * units:(gate + 1) * units] = chrono if value == "chrono" else -chrono
            else:
                bias[0, gate * units:(gate + 1) * units] = float(value)
        return ops.convert_to_tensor(bias if len(shape) == 2 else bias[0], dtype=dtype)

    def get_config(self):
        return {"gates": self.gates, "values": {str(k): v for k, v in self.values.items()},
                "max_lag": self.max_lag, "seed": self.seed}
