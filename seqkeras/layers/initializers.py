"""Initializers the suite's models need beyond Keras's own."""

from __future__ import annotations

import keras
from keras import ops


@keras.saving.register_keras_serializable(package="seqkeras")
class ForgetGateBias(keras.initializers.Initializer):
    """LSTM bias: zeros, except the forget gate's slice set to `value`.

    Keras's `unit_forget_bias=True` fixes that value at 1.0; the lesson discusses
    1, 2, 5 and 10 (a bias b keeps a fraction sigmoid(b) of the cell per step),
    so it is a number here. Keras orders the LSTM gates input, forget, cell, output.
    """

    def __init__(self, value: float = 1.0):
        self.value = float(value)

    def __call__(self, shape, dtype=None):
        units = shape[0] // 4
        return ops.concatenate(
            [
                ops.zeros((units,), dtype=dtype),
                ops.full((units,), self.value, dtype=dtype),
                ops.zeros((2 * units,), dtype=dtype),
            ]
        )

    def get_config(self):
        return {"value": self.value}
