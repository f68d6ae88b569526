"""The suite's softmax loss and accuracy on the torch backend, with fewer passes over the softmax.

Keras's loss on the torch backend renormalizes, clips and takes −log of the
softmax's output, and lets autograd run back through the log and the softmax:
several passes over the (tokens, vocabulary) probabilities. Its accuracy runs
torch's slow argmax. Here (training/losses.py says when they are used):

- `crossentropy_from_logits` is −log p[target] from the probabilities the model
  computed anyway, and its gradient with respect to the logits is
  p − one_hot(target), written in one pass (`SoftmaxCrossEntropy`) instead of
  log_softmax, a zero-filled gradient and log_softmax's backward (the math of a
  crossentropy from logits; rows whose p[target] underflows take
  logsumexp(logits) − logit[target] instead, so the loss stays finite). A caller
  that reads the probabilities no more after the backward pass can let that
  gradient overwrite them (`reuse_probabilities`) instead of allocating another
  (tokens, classes) tensor, whose fresh pages cost more than the pass itself.
- `sparse_accuracy` compares p[target] with the row's maximum (a cheap
  reduction) and, where they are equal, checks that no earlier index holds the
  maximum too, so that a tie goes to the first maximal index exactly as in
  Keras's `sparse_categorical_accuracy` (torch's argmax is several times slower).

This module imports torch: import it only on the torch backend.
"""

from __future__ import annotations

import torch

# Below this, float32 −log p loses digits; such rows get the loss from the logits.
TINY = 1e-30


class SoftmaxCrossEntropy(torch.autograd.Function):
    """Per-token −log softmax(logits)[target], reusing the softmax's probabilities."""

    @staticmethod
    def forward(ctx, logits, probabilities, target, reuse_probabilities):
        picked = probabilities.gather(1, target[:, None])[:, 0]
        loss = -torch.log(picked.clamp_min(TINY))
        tiny = picked < TINY
        if bool(tiny.any()):  # p[target] underflowed: the loss from the logits, for those rows
            rows = tiny.nonzero()[:, 0]
            exact = torch.logsumexp(logits[rows], dim=1) - logits[rows, target[rows]]
            loss = loss.index_put((rows,), exact)
        ctx.save_for_backward(probabilities, target)
        ctx.reuse_probabilities = reuse_probabilities
        return loss

    @staticmethod
    def backward(ctx, grad):
        probabilities, target = ctx.saved_tensors
        if ctx.reuse_probabilities:
            gradient = probabilities.mul_(grad[:, None])
        else:
            gradient = probabilities * grad[:, None]
        gradient.scatter_add_(1, target[:, None], -grad[:, None])
        return gradient, None, None, None


def flat(y_true, y_pred):
    """(tokens,) integer targets and (tokens, classes) predictions, whatever the leading axes."""
    classes = y_pred.shape[-1]
    return torch.as_tensor(y_true).reshape(-1).long(), y_pred.reshape(-1, classes)


def crossentropy_from_logits(y_true, y_pred, logits, reuse_probabilities: bool):
    """Per-token −log y_pred[target] for softmax probabilities y_pred of `logits`, shaped as y_pred[..., 0]."""
    target, probabilities = flat(y_true, y_pred)
    loss = SoftmaxCrossEntropy.apply(logits.reshape(probabilities.shape), probabilities.detach(), target,
                                     reuse_probabilities)
    return loss.reshape(y_pred.shape[:-1])


def sparse_accuracy(y_true, y_pred):
    """1.0 where argmax(y_pred) == target (ties to the first index), else 0.0, without a full argmax."""
    with torch.no_grad():
        target, probabilities = flat(y_true, y_pred)
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
