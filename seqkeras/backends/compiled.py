"""A model's own method, compiled where the backend's eager operations are slow to run one by one.

    encode = compiled_method(model, "encode")   # then encode(source), as model.encode(source)

On JAX every eager operation is compiled for each new shape of its inputs, and a
recurrent layer's `lax.scan` for each call: decoding an encoder-decoder eagerly,
one step at a time with beams of changing sizes, compiled about 550 XLA programs
for an 8-sentence evaluation (18 s of 30). Compiled as one function, each step is
one program per shape of its inputs, reused by every later call on the same model
(the next epoch's validation decoding included): the model's variables are
arguments, read at each call, as Keras's own JAX trainer passes them
(`Layer.stateless_call`), so a trained-further model is never decoded with old
weights.

On TensorFlow and torch an eager call is already cheap and the method is returned
as it is: their compiled loops are another matter (the decoders' loop itself).
Dropout and other random layers are not compiled this way: the methods compiled
here run with training=False.

Rows: each new batch size is a new shape. A decoder's rows shrink as its outputs
end, so on JAX the functions here are given rows padded to a power of two
(`padded_rows`, `pad_rows`, `padded`, `predicted_on_padded_rows`); the rows added repeat
the first and their results are dropped.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np


def compiled_method(model, name: str) -> Callable[..., Any]:
    """model.<name>, compiled once per model on JAX (see the module docstring); the method itself elsewhere.

    The method takes tensors (nested in lists and dicts) as positional arguments and returns tensors.
    """
    import keras

    method = getattr(model, name)
    if keras.backend.backend() != "jax":
        return method
    return compiled_model_function(model, name, method)


def compiled_model_function(model, key, function: Callable[..., Any]) -> Callable[..., Any]:
    """`function` (of tensors, reading `model`'s variables, e.g. a whole decoding loop), compiled once per model and
    `key`: on JAX one jit whose arguments include the model's variables (see the module docstring), on TensorFlow
    a tf.function; on torch it runs eagerly, under no_grad (a loop's tensors would otherwise hold every step's
    autograd graph)."""
    import keras

    cache = model.__dict__.setdefault("_seqkeras_compiled", {})
    if key not in cache:
        backend = keras.backend.backend()
        if backend == "jax":
            cache[key] = _jax_stateless(model, function)
        elif backend == "tensorflow":
            import tensorflow as tf

            cache[key] = tf.function(function)
        elif backend == "torch":
            import torch

            cache[key] = torch.no_grad()(function)
        else:
            cache[key] = function
    return cache[key]


def compiled_function(function: Callable[..., Any]) -> Callable[..., Any]:
    """A function of tensors alone (no variables), compiled on JAX; the function itself elsewhere."""
    import keras

    if keras.backend.backend() != "jax":
        return function
    import jax

    return jax.jit(function)


def padded_rows(rows: int) -> int:
    """How many rows to give a compiled function that takes `rows`: the next power of two on JAX, where each
    new shape is compiled again (a decoder's rows shrink as its outputs end: 16, 15, 14... would each compile;
    16, 8, 4... compile once each); `rows` itself elsewhere."""
    import keras

    if keras.backend.backend() != "jax" or rows <= 1:
        return rows
    return 1 << (rows - 1).bit_length()


def pad_rows(array: np.ndarray, rows: int) -> np.ndarray:
    """`array` with its first row repeated until it has `rows` rows (rows that are computed and dropped)."""
    missing = rows - len(array)
    if missing <= 0:
        return array
    return np.concatenate([array, np.repeat(array[:1], missing, axis=0)], axis=0)


def padded(array: np.ndarray) -> np.ndarray:
    """`array` with its rows padded to `padded_rows` (by `pad_rows`): as it is off JAX."""
    return pad_rows(array, padded_rows(len(array)))


def predicted_on_padded_rows(model, inputs):
    """model.predict_on_batch(inputs) (arrays, nested, all with the same rows), computed on rows padded to
    `padded_rows` and cut back: on JAX, where predict_on_batch compiles for each new shape, a decoder's
    shrinking rows compile a few programs, not one per row count."""
    import keras

    rows = len(keras.tree.flatten(inputs)[0])
    target = padded_rows(rows)
    if target == rows:
        return model.predict_on_batch(inputs)
    widened = keras.tree.map_structure(lambda array: pad_rows(np.asarray(array), target), inputs)
    return keras.tree.map_structure(lambda array: np.asarray(array)[:rows], model.predict_on_batch(widened))


def _jax_stateless(model, method: Callable[..., Any]) -> Callable[..., Any]:
    import jax
    from keras import StatelessScope

    variables = list(model.variables)

    # Positional tensors only: a keyword such as training=True would be traced as an array.
    @jax.jit
    def pure(values, args):
        call.traces += 1  # runs when JAX traces (once per new shape of the arguments), not at each call
        with StatelessScope(state_mapping=list(zip(variables, values))):
            return method(*args)

    def call(*args):
        return pure([variable.value for variable in variables], args)

    call.traces = 0
    return call
