"""A run's `params`: the parameters its training sets."""

from __future__ import annotations

import math


def trained_parameters(model) -> int:
    """The sizes of a Keras model's trainable weights (a fixed one-hot input table, `input_encoding: one_hot`, is
    not trained, so not counted); a counted model's (the n-gram LM's) own count."""
    weights = getattr(model, "trainable_weights", None)
    if weights is None:
        return int(model.count_params())
    return sum(math.prod(int(size) for size in weight.shape) for weight in weights)
