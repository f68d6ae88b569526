"""Which layer class a model's layer is on the running backend: Keras's own, or the torch backend's subclass of
it that computes the same numbers faster (backends/torch/fused_rnn.py, fused_dense.py).

The subclasses keep Keras's weights, names and config and add no state of their own: only `call` (and a
recurrent layer's `inner_loop`) differ. So a layer moves between the two classes by changing its class,
nothing else:

- `recurrent` and `dense`: the class a model builder instantiates (the fused one on torch; off torch,
  Keras's own, with a note, once, where a faster backend exists for recurrent layers);
- `keras_classes(model)`: while a model is written (kept/saving.py), each fused layer is an instance of the
  Keras class it subclasses, so the file names `keras.layers.LSTM`, not `seqkeras>FusedLSTM`, and its weights
  sit under Keras's own paths (`layers/lstm/...`): any Keras, on any backend, loads it without the suite;
- `fused(model)`: a model read back on torch gets the fused classes again where its builder would have
  given them (recurrent layers, softmax outputs), so it predicts as fast as it trained.

The torch modules make the builders' choice themselves (tests replace it there to train the generic layers
on torch); this module is how the other stages ask for it.
"""

from __future__ import annotations

import contextlib

import keras

from seqkeras.backends.torch import fused_dense, fused_rnn

# Keras's class → the torch backend's subclass that stands in for it.
FUSED: dict[type, type] = {**fused_rnn.FUSED, **fused_dense.FUSED}
KERAS_CLASS_OF: dict[type, type] = {fused: keras_class for keras_class, fused in FUSED.items()}


def recurrent(cell_class: type) -> type:
    """The class to instantiate for Keras's recurrent layer `cell_class` (keras.layers.LSTM, GRU, SimpleRNN)."""
    return fused_rnn.layer_class(cell_class)


def cell_over_sequence(cell, like):
    """`run(inputs, states)` stepping Keras's recurrent `cell` over `inputs` [B, T, F] (tensors like `like`) in one
    fused kernel call (torch), or None where no such kernel gives the cell's numbers: the caller steps the cell
    itself (fused_rnn.py)."""
    return fused_rnn.cell_over_sequence(cell, like)


def dense() -> type:
    """The class to instantiate for a keras.layers.Dense output layer."""
    return fused_dense.layer_class()


def _every_layer(model) -> list:
    """The model's layers at any depth (a Bidirectional's two directions, a subclassed model's own layers)."""
    return model._flatten_layers(include_self=False, recursive=True)


def _become(layer, cls: type) -> None:
    # object's own __setattr__: Keras's (and torch.nn.Module's) would try to track the class as an attribute.
    object.__setattr__(layer, "__class__", cls)


@contextlib.contextmanager
def keras_classes(model):
    """Within the block, every fused layer of `model` is an instance of the Keras class it subclasses."""
    swapped = [(layer, type(layer)) for layer in _every_layer(model) if type(layer) in KERAS_CLASS_OF]
    for layer, fused_class in swapped:
        _become(layer, KERAS_CLASS_OF[fused_class])
    try:
        yield model
    finally:
        for layer, fused_class in swapped:
            _become(layer, fused_class)


def fused(model):
    """`model`, its layers given the torch backend's fused classes where a model builder gives them: each
    recurrent layer and each softmax output (`models.recurrent`), on torch; elsewhere nothing changes."""
    if keras.backend.backend() != "torch":
        return model
    for layer in _every_layer(model):
        kind = type(layer)
        if kind in fused_rnn.FUSED or (kind is keras.layers.Dense and layer.activation is keras.activations.softmax):
            _become(layer, FUSED[kind])
    return model
