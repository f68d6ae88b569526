"""Recurrent layers that train on PyTorch's fused kernels when they can, Keras's own loop when not.

`FusedSimpleRNN`, `FusedLSTM` and `FusedGRU` are Keras's SimpleRNN, LSTM and
GRU with one method replaced, `inner_loop`, the part that runs the cell over
the sequence, and a shorter `call` around it where the fused path applies and
no initial state is given (RNN.call's work, done directly on torch tensors).
Everything else is inherited, so the weights (names, shapes,
gate order), the config, dropout on the inputs, return_sequences /
return_state, Bidirectional (which copies the layer with go_backwards=True)
and stacking behave as in Keras, and a weights file moves between the two 1:1.

The fused path runs on the torch backend (PyTorch's CPU kernels, cuDNN on a
GPU) for the standard cell: tanh / sigmoid, a bias, no recurrent dropout, not
unrolled, not stateful, a reset_after GRU, and a mask that is right padding
(or none). Anywhere else the layer calls Keras's own inner loop, which gives
the same numbers more slowly, and says so once per reason and process.

A model saved on torch names these classes in its config (`seqkeras>FusedLSTM`);
loaded on another backend (with seqkeras imported) each is Keras's own layer,
the torch path never reached.

`layer_class(cell_class)` is what the model builders get (through
`seqkeras.backends.layer_classes`): on the torch
backend the fused subclass, on the others Keras's own class (TensorFlow uses
cuDNN on a GPU by itself; on a CPU the note names `--backend torch`).
"""

from __future__ import annotations

import keras
from keras import activations

from seqkeras.backends.runtime import note_once
from seqkeras.backends.serializable import keras_serializable


def _backend_reason() -> str | None:
    """Why no layer can take the fused path on this backend (None on torch)."""
    backend = keras.backend.backend()
    if backend == "torch":
        return None
    if backend == "tensorflow":
        import tensorflow as tf

        if tf.config.list_logical_devices("GPU"):
            return None  # Keras's own LSTM/GRU use cuDNN on a GPU: nothing to say
    return f"recurrent layers step Keras's loop on the {backend} backend (--backend torch uses PyTorch's fused kernels)"


class FusedRNNMixin:
    """The replaced `inner_loop`; the class it is mixed into is Keras's layer for `KIND`."""

    KIND = ""

    def fused_blocker(self) -> str | None:
        """Why this layer's configuration cannot take the fused path (None when it can)."""
        if keras.backend.backend() != "torch":
            return f"on the {keras.backend.backend()} backend"
        checks = [
            (self.unroll, "unroll=True"),
            (self.stateful, "stateful=True"),
            (getattr(self, "use_cudnn", "auto") is False, "use_cudnn=False"),
        ]
        reason = next((reason for blocked, reason in checks if blocked), None) or cell_blocker(self.cell)
        return f"with {reason}" if reason else None

    def call(self, sequences, initial_state=None, mask=None, training=False):
        """RNN.call, with less around the kernel when the fused path applies and no state is given.

        Keras's RNN.call makes the zero states, converts and casts them and the outputs
        through `keras.ops` and tree maps: about a fifth of an eager call of a tiny layer
        on the torch backend (issue 9), paid every training step. Here the states are zeros of the
        compute dtype made directly, the outputs come out of the kernel in that dtype
        already, and the dropout masks are drawn and reset exactly as RNN.call does.
        """
        if initial_state is not None or self.fused_blocker() is not None:
            return super().call(sequences, initial_state=initial_state, mask=mask, training=training)
        import torch

        cell = self.cell
        sizes = cell.state_size if isinstance(cell.state_size, (list, tuple)) else [cell.state_size]
        dtype = getattr(torch, cell.compute_dtype)
        states = [torch.zeros((sequences.shape[0], size), dtype=dtype, device=sequences.device) for size in sizes]
        self._maybe_config_dropout_masks(cell, sequences[:, 0, :], states)
        last_output, outputs, states = self.inner_loop(sequences, states, mask, training=training, checked=True)
        if outputs.dtype != dtype:  # a float64 kernel in a float32 layer: RNN.call's casts
            last_output, outputs = last_output.to(dtype), outputs.to(dtype)
            states = [s if s is None else s.to(dtype) for s in states]
        self._maybe_reset_dropout_masks(cell)
        output = outputs if self.return_sequences else last_output
        return (output, *states) if self.return_state else output

    def inner_loop(self, sequences, initial_state, mask, training=False, *, checked=False):
        """The fused kernel over the sequence, or Keras's loop where it cannot apply.

        `checked`: the caller (this class's `call`) has found `fused_blocker()` None
        already, so this step does not work it out twice; and it reads the final states only with
        `return_state` (Keras's RNN.call, which a given initial state takes, casts them all).
        """
        if keras.backend.backend() != "torch":  # a model saved on torch, loaded on another backend: Keras's layer
            return super().inner_loop(sequences, initial_state, mask=mask, training=training)
        from seqkeras.backends.torch import rnn_kernels  # imports torch: only reached on the torch backend

        reason = None if checked else self.fused_blocker()
        if reason is None:
            if isinstance(mask, (list, tuple)):
                mask = mask[0]
            lengths, reason = rnn_kernels.right_padded_lengths(mask)
        if reason is not None:
            note_once(f"{self.KIND} layers {reason} step Keras's loop, not PyTorch's fused kernel")
            return super().inner_loop(sequences, initial_state, mask=mask, training=training)

        cell = self.cell
        if training and cell.dropout:
            # The same mask at every step, as the cell applies it (RNN.call drew it already).
            sequences = sequences * cell.get_dropout_mask(sequences[:, 0, :])[:, None, :]
        weights = [w.value for w in (cell.kernel, cell.recurrent_kernel, cell.bias)]  # the variables' own tensors
        states = list(initial_state) if isinstance(initial_state, (list, tuple)) else [initial_state]
        return rnn_kernels.fused_rnn(
            self.KIND,
            sequences.to(weights[0].dtype),  # the embedding's output, or int inputs: the kernel's dtype
            states,
            weights,
            lengths,
            go_backwards=self.go_backwards,
            zero_output_for_mask=self.zero_output_for_mask,
            final_states=self.return_state or not checked,
        )


def cell_blocker(cell) -> str | None:
    """Why PyTorch's fused kernel cannot compute Keras's recurrent `cell` exactly (None when it can)."""
    checks = [
        (cell.recurrent_dropout > 0, "recurrent_dropout > 0"),
        (not cell.use_bias, "use_bias=False"),
        (cell.activation is not activations.tanh, "an activation other than tanh"),
        (getattr(cell, "recurrent_activation", activations.sigmoid) is not activations.sigmoid,
         "a recurrent_activation other than sigmoid"),
        (not getattr(cell, "reset_after", True), "reset_after=False"),
        (cell.compute_dtype not in ("float32", "float64"), f"compute dtype {cell.compute_dtype}"),
    ]
    return next((reason for blocked, reason in checks if blocked), None)


CELL_KINDS = {keras.layers.SimpleRNNCell: "simple_rnn", keras.layers.LSTMCell: "lstm", keras.layers.GRUCell: "gru"}


def cell_over_sequence(cell, like):
    """`run(inputs, states)` → (outputs [B, T, units], final states): Keras's `cell` stepped over every step of
    `inputs` [B, T, features] from `states` (no mask), in one call of PyTorch's fused kernel, the numbers a loop of
    the cell's calls gives. None where the kernel cannot give them: off torch, a cell not yet built, one with input
    dropout or another blocker (`cell_blocker`), or tensors like `like` without values (Keras's symbolic build on
    torch's meta device).

    For a model that steps cells itself (an encoder-decoder's decoder) where no step reads what an earlier one
    computed beyond the cell's own state: teacher forcing without input feeding."""
    if (keras.backend.backend() != "torch" or type(cell) not in CELL_KINDS or not cell.built or cell.dropout
            or cell_blocker(cell) is not None or like.device.type == "meta"):
        return None
    from seqkeras.backends.torch import rnn_kernels  # imports torch: only reached on the torch backend

    kind = CELL_KINDS[type(cell)]

    def run(inputs, states):
        weights = [w.value for w in (cell.kernel, cell.recurrent_kernel, cell.bias)]
        _, outputs, final = rnn_kernels.fused_rnn(kind, inputs.to(weights[0].dtype), list(states), weights, None,
                                                  go_backwards=False, zero_output_for_mask=False)
        return outputs, final

    return run


@keras_serializable
class FusedSimpleRNN(FusedRNNMixin, keras.layers.SimpleRNN):
    """keras.layers.SimpleRNN on PyTorch's fused rnn_tanh kernel where it applies."""

    KIND = "simple_rnn"


@keras_serializable
class FusedLSTM(FusedRNNMixin, keras.layers.LSTM):
    """keras.layers.LSTM on PyTorch's fused LSTM kernel where it applies."""

    KIND = "lstm"


@keras_serializable
class FusedGRU(FusedRNNMixin, keras.layers.GRU):
    """keras.layers.GRU (reset_after=True) on PyTorch's fused GRU kernel (cuDNN) or cpu_gru's where it applies."""

    KIND = "gru"


FUSED = {keras.layers.SimpleRNN: FusedSimpleRNN, keras.layers.LSTM: FusedLSTM, keras.layers.GRU: FusedGRU}


def layer_class(cell_class: type) -> type:
    """The class a model builder should instantiate for Keras's `cell_class` on this backend."""
    reason = _backend_reason()
    if reason is not None:
        note_once(reason)
        return cell_class
    return FUSED[cell_class] if keras.backend.backend() == "torch" else cell_class
