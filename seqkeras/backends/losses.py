"""The suite's softmax loss and accuracy as the running backend computes them cheapest.

training/losses.py defines the loss and accuracy the suite's softmax models
compile with and decides, backend-neutrally, which to use; what differs between
backends is here:

- Keras's own sparse crossentropy on TensorFlow already computes from the
  logits the softmax keeps (`_keras_logits`), so there the suite compiles
  Keras's own loss and metric (`keras_loss_reads_logits`);
- on torch the loss from the logits and the accuracy are backends/torch/losses.py's,
  which pass over the (tokens, vocabulary) softmax fewer times;
- elsewhere they are Keras's own (`from_logits=True`, `sparse_categorical_accuracy`).

Each backend's module is imported inside the function, only on its own backend.
"""

from __future__ import annotations

import keras

# The names Keras's registry knows the suite's loss and accuracy by (training/losses.py registers
# them): the torch lean loop looks them up there, as backends/ may not import training/.
SUITE_LOSS, SUITE_ACCURACY = "seqkeras>softmax_crossentropy", "seqkeras>sparse_accuracy"
# What Keras calls the function each computes, as a compile argument: what the suite compiles with on
# TensorFlow (training/losses.py), and what a kept model's compile config names (kept/plain_keras.py).
KERAS_EQUIVALENTS = {SUITE_LOSS: "sparse_categorical_crossentropy", SUITE_ACCURACY: "accuracy"}


def keras_loss_reads_logits() -> bool:
    """Whether Keras's own sparse crossentropy on this backend computes from a softmax output's logits."""
    return keras.backend.backend() == "tensorflow"


def crossentropy_from_logits(y_true, y_pred, logits, *, reuse_probabilities: bool = False):
    """Per-token sparse crossentropy of softmax probabilities y_pred, computed from their `logits`.

    reuse_probabilities (torch only, ignored elsewhere): the backward pass may write the logits'
    gradient over y_pred's values (see training/losses.py for who may ask it).
    """
    if keras.backend.backend() != "torch":
        return keras.losses.sparse_categorical_crossentropy(y_true, logits, from_logits=True)
    from seqkeras.backends.torch import losses

    return losses.crossentropy_from_logits(y_true, y_pred, logits, reuse_probabilities)


def sparse_accuracy(y_true, y_pred):
    """Keras's sparse_categorical_accuracy (argmax == target, ties to the first index), per token."""
    if keras.backend.backend() != "torch":
        return keras.metrics.sparse_categorical_accuracy(y_true, y_pred)
    from seqkeras.backends.torch import losses

    return losses.sparse_accuracy(y_true, y_pred)


def suite_function(name: str):
    """The function Keras's registry holds under `name` (SUITE_LOSS, SUITE_ACCURACY), or None before it is
    registered (training/losses.py not imported: no model can be compiled with it then)."""
    return keras.saving.get_registered_object(name)
