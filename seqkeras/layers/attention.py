"""Attention over the encoder's outputs: Bahdanau (additive) and Luong (multiplicative).

Both layers map a query (the decoder's state) and the encoder's outputs
(`values`, [B, S, d]) to attention weights over the S source positions and the
context vector they average. Padded source positions (`source_mask` False) get
a weight of exactly 0: their scores are replaced by a very negative number whose
exponential underflows to 0 before the softmax.

The query may be one step ([B, dq]) or every decoder step at once ([B, T, dq]);
the outputs then have shapes [B, d] and [B, S], or [B, T, d] and [B, T, S].

Scoring a source position needs a projection of the encoder outputs that does not
depend on the query (Bahdanau's W_k h_j, Luong-general's W h_j). `keys(values)`
computes it once per source sentence; passing it as `keys=` to every decoding
step avoids recomputing it at each step.
"""

from __future__ import annotations

from typing import Literal

import keras
from keras import ops

from seqkeras.backends.serializable import keras_serializable

# A score that exp() turns into exactly 0 in float32, so masked positions get no weight.
MASKED_SCORE = -1.0e9


def masked_softmax(scores, source_mask):
    """Softmax over the last axis (source positions); positions where the mask is False get 0."""
    if source_mask is not None:
        mask = ops.cast(source_mask, "bool")
        while len(mask.shape) < len(scores.shape):  # [B, S] → [B, 1, S] for many queries
            mask = ops.expand_dims(mask, axis=-2)
        scores = ops.where(mask, scores, ops.cast(MASKED_SCORE, scores.dtype))
    return ops.softmax(scores, axis=-1)


class _SourceAttention(keras.layers.Layer):
    """Shared call: scores from `score(query, keys)`, masked softmax, weighted average of `values`."""

    def keys(self, values):
        raise NotImplementedError

    def score(self, query, keys):
        """query [B, T, dq], keys [B, S, dk] → scores [B, T, S]."""
        raise NotImplementedError

    def call(self, query, values, keys=None, source_mask=None):
        """(context, weights) for `query` [B, dq] or [B, T, dq] over `values` [B, S, d]."""
        single_step = len(query.shape) == 2
        if single_step:
            query = ops.expand_dims(query, axis=1)
        if keys is None:
            keys = self.keys(values)
        weights = masked_softmax(self.score(query, keys), source_mask)
        context = ops.matmul(weights, values)  # [B, T, S] @ [B, S, d] → [B, T, d]
        if single_step:
            context, weights = ops.squeeze(context, axis=1), ops.squeeze(weights, axis=1)
        return context, weights

    def compute_output_spec(self, query, values, keys=None, source_mask=None):
        leading = tuple(query.shape[:-1])
        source_length = values.shape[1]
        return (
            keras.KerasTensor(leading + (values.shape[-1],), dtype=self.compute_dtype),
            keras.KerasTensor(leading + (source_length,), dtype=self.compute_dtype),
        )


@keras_serializable
class BahdanauAttention(_SourceAttention):
    """Additive attention (Bahdanau, Cho and Bengio, 2014): score(s, h_j) = vᵀ tanh(W_q s + W_k h_j).

    `units` is the width of the hidden layer inside the score.
    """

    def __init__(self, units: int, **kwargs):
        super().__init__(**kwargs)
        if int(units) < 1:
            raise ValueError(f"units must be at least 1, received {units}")
        self.units = int(units)
        self.query_projection = keras.layers.Dense(self.units, use_bias=False, name="query_projection")
        self.key_projection = keras.layers.Dense(self.units, use_bias=True, name="key_projection")
        self.energy = keras.layers.Dense(1, use_bias=False, name="energy")

    def build(self, query_shape, values_shape, keys_shape=None, source_mask_shape=None):
        # keys() may have run (and built the key projection) before the first call.
        for layer, shape in (
            (self.query_projection, query_shape),
            (self.key_projection, values_shape),
            (self.energy, tuple(values_shape[:-1]) + (self.units,)),
        ):
            if not layer.built:
                layer.build(tuple(shape))

    def keys(self, values):
        return self.key_projection(values)

    def score(self, query, keys):
        # [B, T, 1, u] + [B, 1, S, u] → [B, T, S, u] → [B, T, S]
        hidden = ops.tanh(ops.expand_dims(self.query_projection(query), 2) + ops.expand_dims(keys, 1))
        return ops.squeeze(self.energy(hidden), axis=-1)

    def get_config(self):
        return {**super().get_config(), "units": self.units}


@keras_serializable
class LuongAttention(_SourceAttention):
    """Multiplicative attention (Luong, Pham and Manning, 2015).

    `dot`: score(h_t, h_j) = h_tᵀ h_j (query and values must have the same width);
    `general`: score(h_t, h_j) = h_tᵀ W h_j. `units` is the query's width, which
    W maps the values to; without it, the query's width is read when the layer
    is first called (call it, or build it, before using `keys()` alone).
    """

    def __init__(self, score: Literal["dot", "general"] = "general", units: int | None = None, **kwargs):
        super().__init__(**kwargs)
        if score not in ("dot", "general"):
            raise ValueError(f"score must be 'dot' or 'general', received {score!r}")
        if units is not None and int(units) < 1:
            raise ValueError(f"units must be at least 1, received {units}")
        self.score_kind = score
        self.units = None if units is None else int(units)
        self.key_projection = None
        if score == "general" and self.units is not None:
            self.key_projection = keras.layers.Dense(self.units, use_bias=False, name="key_projection")

    def build(self, query_shape, values_shape, keys_shape=None, source_mask_shape=None):
        query_width, value_width = query_shape[-1], values_shape[-1]
        if self.score_kind == "dot" and query_width != value_width:
            raise ValueError(
                f"Luong dot attention needs queries and values of the same width, received "
                f"{query_width} and {value_width}; use score='general'"
            )
        if self.units is not None and query_width != self.units:
            raise ValueError(f"this layer scores queries of width {self.units}, received width {query_width}")
        if self.score_kind == "general" and self.key_projection is None:
            self.key_projection = keras.layers.Dense(query_width, use_bias=False, name="key_projection")
        if self.key_projection is not None and not self.key_projection.built:
            self.key_projection.build(tuple(values_shape))

    def keys(self, values):
        if self.score_kind == "general" and self.key_projection is None:
            raise ValueError("LuongAttention('general') without units learns its width at the first call; "
                             "call it first")
        return values if self.key_projection is None else self.key_projection(values)

    def score(self, query, keys):
        return ops.matmul(query, ops.transpose(keys, (0, 2, 1)))  # [B, T, d] @ [B, d, S]

    def get_config(self):
        return {**super().get_config(), "score": self.score_kind, "units": self.units}
