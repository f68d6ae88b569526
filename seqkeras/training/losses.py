"""Loss and accuracy for the suite's softmax outputs, computed the cheap way on each backend.

Every trained model of the suite ends in `Dense(..., activation="softmax")` and is
compiled with sparse categorical crossentropy and accuracy. On a language model
the softmax covers (batch, length, vocabulary) numbers, 4 million per step at the
benchmark's size, and each extra pass over them costs as much as a tenth of the
LSTM. Keras's TensorFlow backend already computes the loss from the logits the
softmax keeps (`_keras_logits`); the torch backend instead renormalizes, clips and
takes the log of the probabilities, and its accuracy runs torch's slow argmax.

On the torch backend, this module gives the same numbers with fewer passes:
- the loss is −log p[target] from the probabilities the model computed anyway,
  and its gradient with respect to the logits is p − onehot(target): one pass
  instead of log_softmax, a zero-filled gradient and log_softmax's backward
  (the math of a crossentropy from logits; rows whose p[target] underflows take
  logsumexp(logits) − logit[target] instead, so the loss stays finite); a caller
  that reads the probabilities no more after the backward pass can let that
  gradient overwrite them (`reuse_probabilities`) instead of allocating another
  (tokens, classes) tensor, whose fresh pages cost more than the pass itself;
- accuracy compares p[target] with the row's maximum (a cheap reduction) and,
  where they are equal, checks that no earlier index holds the maximum too, so
  that a tie goes to the first maximal index exactly as in Keras's
  `sparse_categorical_accuracy` (torch's argmax is several times slower).

The TensorFlow backend keeps Keras's own loss and metric (`training/trainer.py` decides).
"""

from __future__ import annotations

import keras


@keras.saving.register_keras_serializable(package="seqkeras")
def softmax_crossentropy(y_true, y_pred, *, reuse_probabilities: bool = False):
    """Keras's sparse categorical crossentropy for a softmax output, via its logits when it kept them.

    reuse_probabilities (torch only): the backward pass writes the logits' gradient over
    y_pred's values. Only for a caller that reads y_pred no more once it has called
    `backward`, and whose loss reaches y_pred by no other path (the softmax's own backward,
    which needs them, must not run): the lean loop (backends/torch/lean_loop.py), which computes its
    accuracy before. Keras's `train_step` computes its metrics from y_pred after the
    backward pass, so the compiled loss keeps the default.
    """
    logits = getattr(y_pred, "_keras_logits", None)
    if logits is None:
        return keras.losses.sparse_categorical_crossentropy(y_true, y_pred)
    if keras.backend.backend() != "torch":
        return keras.losses.sparse_categorical_crossentropy(y_true, logits, from_logits=True)
    from seqkeras.backends.torch import softmax

    target, probabilities = softmax.flat(y_true, y_pred)
    loss = softmax.SoftmaxCrossEntropy.apply(logits.reshape(probabilities.shape), probabilities.detach(), target,
                                               reuse_probabilities)
    return loss.reshape(y_pred.shape[:-1])


@keras.saving.register_keras_serializable(package="seqkeras")
def sparse_accuracy(y_true, y_pred):
    """Keras's sparse_categorical_accuracy (argmax == target, ties to the first index), without a full argmax."""
    if keras.backend.backend() != "torch":
        return keras.metrics.sparse_categorical_accuracy(y_true, y_pred)
    import torch

    from seqkeras.backends.torch import softmax

    with torch.no_grad():
        target, probabilities = softmax.flat(y_true, y_pred)
        best = probabilities.amax(dim=1)
        hit = probabilities.gather(1, target[:, None])[:, 0] == best
        # A row whose target holds the maximum is still wrong when an earlier index holds it
        # too (argmax takes the first): check the hits' earlier columns, two cheap passes
        # where torch's argmax (or a count of the maxima) costs several times more.
        rows = hit.nonzero()[:, 0]
        columns = torch.arange(probabilities.shape[1], device=probabilities.device)
        earlier = torch.where(columns[None, :] < target[rows, None], probabilities[rows], -torch.inf)
        hit[rows] = earlier.amax(dim=1) < best[rows]
        return hit.to(probabilities.dtype).reshape(y_pred.shape[:-1])
