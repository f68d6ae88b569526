"""A model seen one decoding step at a time.

Every decoder in `seqkeras.decoding` talks to a model through `StepModel`: feed
one token per row, get the log-probabilities of the next token and a new state.
The state is whatever the model needs to continue (nothing for a bigram table,
the prefix for a causal LM, encoder outputs plus recurrent state for a
seq2seq decoder); decoders never look inside it, they only reorder its rows with
`select()` when beams are expanded, reranked or dropped.

This module imports no deep-learning framework at import time, so the spec and
registry code can import the decoders' parameter classes cheaply.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

import numpy as np

State = Any


@runtime_checkable
class StepModel(Protocol):
    """A model that predicts the next token, one step at a time, with a state cache."""

    vocab_size: int
    start_id: int
    end_id: int

    def start(self, batch_size: int) -> State:
        """The state before the first step, for `batch_size` independent rows."""
        ...

    def step(self, tokens: np.ndarray, state: State) -> tuple[np.ndarray, State]:
        """Feed `tokens` [B] (ints); return log-probabilities [B, V] of the next token and the new state.

        The log-probabilities are normalized (a log-softmax): `exp` of each row sums to 1.
        float32 or float64: decoders add them up in float64.
        """
        ...

    def select(self, state: State, indices: np.ndarray) -> State:
        """The state of rows `indices` (a gather: rows may repeat or disappear)."""
        ...


def log_softmax_rows(scores) -> np.ndarray:
    """log_softmax over the last axis of scores [B, V], computed in float32, returned as float64.

    Every step model that reads a Keras model ends with this, so that they agree to float rounding.
    """
    from keras import ops

    return ops.convert_to_numpy(ops.log_softmax(ops.cast(scores, "float32"), axis=-1)).astype("float64")


class PrefixStepModel:
    """Adapter for a Keras model mapping token ids [B, L] to next-token logits [B, L, V].

    Any causal language model fits (the table model, an RNN LM, a Transformer
    LM). The state is the prefix fed so far, [B, L] int32; every step reruns the
    model on the whole prefix and keeps the last position. That is O(L²) work
    for L steps, which is fine for the short outputs decoded here and needs
    nothing from the model beyond its ordinary call. The suite's recurrent and
    Transformer LMs decode instead through `cached_step_models`, which carry
    the recurrent state or the key/value cache; this stays for every other
    model (the table model, the NPLM, n-gram counts).
    """

    def __init__(self, model, start_id: int, end_id: int, vocab_size: int | None = None):
        self.model = model
        self.start_id = int(start_id)
        self.end_id = int(end_id)
        if vocab_size is None:
            vocab_size = int(model.output_shape[-1])
        self.vocab_size = int(vocab_size)

    def start(self, batch_size: int) -> np.ndarray:
        return np.zeros((batch_size, 0), dtype="int32")

    def step(self, tokens: np.ndarray, state: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        tokens = np.asarray(tokens, dtype="int32").reshape(-1, 1)
        prefix = np.concatenate([state, tokens], axis=1)
        logits = self.model(prefix, training=False)
        return log_softmax_rows(logits[:, -1, :]), prefix

    def select(self, state: np.ndarray, indices: np.ndarray) -> np.ndarray:
        return state[np.asarray(indices, dtype="int64")]
