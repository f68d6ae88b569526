"""Gradients with respect to chosen tensors, on whichever backend Keras runs.

Keras 3 has no backend-neutral op for a gradient: training hides it inside each
backend's trainer. A measurement that differentiates something other than a
loss with respect to the weights (the `gradient_flow` diagnostic and probe
differentiate with respect to perturbations of a recurrent state, the `unroll`
and `recurrence_vs_attention` probes with respect to a layer's inputs) calls
`gradients`, which uses the running backend's own autodiff: `tf.GradientTape`,
`torch.autograd.grad` or `jax.grad`. Each library is imported inside the
function, only on its own backend.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any


def gradients(function: Callable[[list[Any]], Any], tensors: Sequence[Any]) -> list[Any]:
    """d function(tensors) / d tensor, for each tensor; `function` returns a scalar.

    `function` must compute from the tensors it is given (on JAX they are tracers).
    A tensor the value does not depend on gets a zero gradient, not None.
    """
    import keras

    backend = keras.backend.backend()
    if backend == "tensorflow":
        import tensorflow as tf

        watched = [tf.convert_to_tensor(t) for t in tensors]
        with tf.GradientTape() as tape:
            tape.watch(watched)
            value = function(watched)
        return tape.gradient(value, watched, unconnected_gradients=tf.UnconnectedGradients.ZERO)
    if backend == "torch":
        import torch

        leaves = [torch.as_tensor(t).detach().requires_grad_(True) for t in tensors]
        value = function(leaves)
        return list(torch.autograd.grad(value, leaves, allow_unused=True, materialize_grads=True))
    if backend == "jax":
        import jax

        return list(jax.grad(function)(list(tensors)))
    raise ValueError(f"no gradient for Keras backend {backend!r} (tensorflow, torch and jax have one)")
