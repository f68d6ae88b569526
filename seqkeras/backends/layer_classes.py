"""Which layer class a model builder instantiates on the running backend: Keras's own, or the torch backend's
subclass of it that computes the same numbers faster (backends/torch/fused_rnn.py, fused_dense.py).

The subclasses keep Keras's weights, names and config, so a model's weights file
moves between backends as it is; off torch, Keras's own class is given (with a
note, once, where a faster backend exists for recurrent layers). The torch
modules make the choice themselves (tests replace it there to train the generic
layers on torch); this module is how the model stage asks for it.
"""

from __future__ import annotations

from seqkeras.backends.torch import fused_dense, fused_rnn


def recurrent(cell_class: type) -> type:
    """The class to instantiate for Keras's recurrent layer `cell_class` (keras.layers.LSTM, GRU, SimpleRNN)."""
    return fused_rnn.layer_class(cell_class)


def dense() -> type:
    """The class to instantiate for a keras.layers.Dense output layer."""
    return fused_dense.layer_class()
