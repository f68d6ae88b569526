"""The suite's softmax cross-entropy as a PyTorch autograd function: its gradient from the probabilities.

Keras's loss on the torch backend takes −log of the softmax's output and lets
autograd run back through the log and the softmax: several passes over the
(tokens, vocabulary) probabilities. This function's backward writes the
logits' gradient, p − one_hot(target), in one pass (see training/losses.py).
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
