"""The output layer, with its matmul and bias add as one GEMM on the torch backend.

Keras's Dense computes `matmul(x, kernel)` and then `add(x, bias)` into a second
tensor. For a language model's output that tensor is (batch, length,
vocabulary), 16 MB at the benchmark's size: allocating it and passing over it
cost about a tenth of an LSTM language model's training step on the CPU.
`torch.nn.functional.linear` folds the bias into the GEMM (addmm), as PyTorch's
own nn.Linear does. Same weights, names and config as keras.layers.Dense; on the
other backends, or with LoRA or quantization, it is Keras's Dense unchanged.
"""

from __future__ import annotations

import keras

from seqkeras.backends.serializable import keras_serializable


@keras_serializable
class FusedDense(keras.layers.Dense):
    """keras.layers.Dense whose matmul and bias add are one addmm on the torch backend."""

    def call(self, inputs, training=None):
        if keras.backend.backend() != "torch" or self.bias is None or self.lora_enabled or self.quantization_mode:
            return super().call(inputs, training=training)
        from torch.nn.functional import linear

        kernel, bias = self.kernel.value, self.bias.value  # the variables' own tensors
        x = linear(keras.ops.convert_to_tensor(inputs, dtype=kernel.dtype), kernel.T, bias)
        return self.activation(x) if self.activation is not None else x


# Keras's class → the subclass that stands in for it on torch (a kept model holds Keras's: backends/layer_classes.py).
FUSED = {keras.layers.Dense: FusedDense}


def layer_class() -> type:
    """The Dense class a model builder should instantiate on this backend."""
    return FusedDense if keras.backend.backend() == "torch" else keras.layers.Dense
