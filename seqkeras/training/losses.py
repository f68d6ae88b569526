"""The loss and accuracy the suite's softmax models compile with, and the choice of Keras's own instead.

Every trained model of the suite ends in `Dense(..., activation="softmax")` and is
compiled with sparse categorical crossentropy and accuracy. On a language model
the softmax covers (batch, length, vocabulary) numbers, 4 million per step at the
benchmark's size, and each extra pass over them costs as much as a tenth of the
LSTM. A backend whose Keras loss already computes from the logits the softmax
keeps (`_keras_logits`) gets Keras's own loss and metric (`loss_and_metrics`);
the others get `softmax_crossentropy` and `sparse_accuracy`, the same numbers
computed from the logits with fewer passes: how each backend computes them is
`seqkeras.backends.losses`'s (on torch, backends/torch/losses.py).
"""

from __future__ import annotations

import keras

from seqkeras.backends import losses as backend_losses
from seqkeras.backends.serializable import keras_serializable


def loss_and_metrics() -> dict:
    """What the suite's softmax models compile with: Keras's own loss and accuracy where they read the
    softmax's logits already (TensorFlow), the same numbers computed with fewer passes over the softmax
    on the other backends."""
    if backend_losses.keras_loss_reads_logits():
        equivalent = backend_losses.KERAS_EQUIVALENTS
        return {"loss": equivalent[backend_losses.SUITE_LOSS],
                "weighted_metrics": [equivalent[backend_losses.SUITE_ACCURACY]]}
    accuracy = keras.metrics.MeanMetricWrapper(sparse_accuracy, name="accuracy")
    return {"loss": softmax_crossentropy, "weighted_metrics": [accuracy]}


# Registered under the names backends.losses.SUITE_LOSS and SUITE_ACCURACY, by which the torch lean loop finds them.
@keras_serializable
def softmax_crossentropy(y_true, y_pred, *, reuse_probabilities: bool = False):
    """Keras's sparse categorical crossentropy for a softmax output, via its logits when it kept them.

    reuse_probabilities (torch only): the backward pass writes the logits' gradient over
    y_pred's values. Only for a caller that reads y_pred no more once it has called
    `backward`, and whose loss reaches y_pred by no other path (the softmax's own backward,
    which needs them, must not run): the torch backend's lean loop, which computes its
    accuracy before. Keras's `train_step` computes its metrics from y_pred after the
    backward pass, so the compiled loss keeps the default.
    """
    logits = getattr(y_pred, "_keras_logits", None)
    if logits is None:
        return keras.losses.sparse_categorical_crossentropy(y_true, y_pred)
    return backend_losses.crossentropy_from_logits(y_true, y_pred, logits, reuse_probabilities=reuse_probabilities)


@keras_serializable
def sparse_accuracy(y_true, y_pred):
    """Keras's sparse_categorical_accuracy (argmax == target, ties to the first index), without a full argmax."""
    return backend_losses.sparse_accuracy(y_true, y_pred)
