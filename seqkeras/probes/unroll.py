"""Probe `unroll`: step a small RNN through a sentence and watch the first word fade.

Lesson 001's interactive demo reads "the keys to the cabinet are on the table"
one token at a time into a 4-cell state, h_t = tanh(W_x x_t + W_h h_{t-1}),
with small fixed weights, and points out that an early word still tints the
state several steps later but slowly fades because W_h has magnitude below 1.

This probe builds the same thing from a Keras `Embedding` and `SimpleRNN`
with seeded weights, records the state table (token x cell), and measures the
fading directly: the influence of the first token on the state at step t is
the Frobenius norm of the Jacobian d h_t / d x_1 (float64, from the running
backend's autodiff, `seqkeras.backends.autodiff`), where x_1 is the first
token's embedding *at position 1* (later occurrences of the same word are
separate inputs). Because tanh' <= 1 and W_h is scaled to spectral norm
`recurrent_scale`, each step multiplies that norm by at most `recurrent_scale`,
so with a scale below 1 the influence can only shrink.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from pydantic import Field, field_validator

from seqkeras.backends.autodiff import gradients
from seqkeras.backends.precision import float64_computation
from seqkeras.probes.base import ProbeResult
from seqkeras.registry import Params as BaseParams


def tokenize(sentence: str) -> list[str]:
    """Lower-cased, whitespace-separated words: the demo's tokens."""
    return sentence.lower().split()


class Params(BaseParams):
    sentence: str = Field(
        "the keys to the cabinet are on the table",
        description="The sentence read one word per step (lower-cased, split on spaces). The "
        "lesson's example: the verb 'are' must still carry 'keys' from four words back.",
    )
    units: int = Field(
        4,
        ge=1,
        description="Number of cells in the hidden state. The lesson's demo shows 4.",
    )
    embedding_dim: int = Field(
        4,
        ge=1,
        description="Length of each word's embedding vector x_t.",
    )
    recurrent_scale: float = Field(
        0.8,
        ge=0,
        description="Spectral norm (largest singular value) of W_h; the random W_h is rescaled to "
        "it. Below 1 every step shrinks the first word's influence, which is the lesson's "
        "'slowly fades because W_h has magnitude below 1'; above 1 it may grow.",
    )
    input_scale: float = Field(
        1.0,
        gt=0,
        description="Spectral norm of W_x, the input weights; the random W_x is rescaled to it. "
        "Larger values push the cells towards tanh saturation.",
    )

    @field_validator("sentence")
    @classmethod
    def _has_words(cls, sentence: str) -> str:
        if not tokenize(sentence):
            raise ValueError("the sentence has no words; give at least one word to read")
        return sentence


def _with_spectral_norm(matrix: np.ndarray, norm: float) -> np.ndarray:
    largest = np.linalg.norm(matrix, ord=2)
    return matrix * (norm / largest) if largest > 0 else matrix


def draw_weights(params: Params, seed: int, vocabulary: list[str]):
    """Embeddings (one row per distinct word, in order of first appearance), W_x, W_h.

    All from one numpy default_rng(seed), drawn in that order, standard normal,
    then W_x and W_h rescaled to their spectral norms.
    """
    rng = np.random.default_rng(seed)
    embeddings = rng.normal(0, 1, (len(vocabulary), params.embedding_dim))
    W_x = rng.normal(0, 1, (params.units, params.embedding_dim))
    W_h = rng.normal(0, 1, (params.units, params.units))
    W_x = _with_spectral_norm(W_x, params.input_scale)
    W_h = _with_spectral_norm(W_h, params.recurrent_scale)
    return embeddings, W_x, W_h


def metric_names(params: Params) -> list[str]:
    """The metrics `run` reports for these parameters, known before it runs (tables and claims are checked
    against them)."""
    influence = [f"first_token_influence_{t}" for t in range(1, len(tokenize(params.sentence)) + 1)]
    return influence + ["influence_ratio_last_first", "influence_monotone", "final_state_norm"]


def run(params: Params, seed: int) -> ProbeResult:
    with float64_computation():
        return _measure(params, seed)


def _measure(params: Params, seed: int) -> ProbeResult:
    import keras
    from keras import ops

    tokens = tokenize(params.sentence)
    vocabulary = list(dict.fromkeys(tokens))  # distinct words, first appearance first
    ids = np.array([[vocabulary.index(token) for token in tokens]])
    embeddings, W_x, W_h = draw_weights(params, seed, vocabulary)

    embed = keras.layers.Embedding(len(vocabulary), params.embedding_dim, dtype="float64")
    embed.build((None, len(tokens)))
    embed.set_weights([embeddings])
    rnn = keras.layers.SimpleRNN(
        params.units, use_bias=False, return_sequences=True, dtype="float64"
    )
    rnn.build((None, len(tokens), params.embedding_dim))
    # Keras computes x @ kernel + h @ recurrent_kernel, i.e. the lesson's W_x x + W_h h transposed.
    rnn.set_weights([W_x.T, W_h.T])

    # (1, n, embedding_dim); position 0 is the first token's own input.
    x = ops.convert_to_numpy(embed(ops.convert_to_tensor(ids)))
    states = ops.convert_to_numpy(rnn(ops.convert_to_tensor(x, dtype="float64")))[0]  # (n, units)
    jacobian = first_input_jacobian(rnn, x)
    influence = np.linalg.norm(jacobian.reshape(len(tokens), -1), axis=1)

    metrics: dict[str, float | int | str] = {
        f"first_token_influence_{t}": float(value) for t, value in enumerate(influence, start=1)
    }
    metrics["influence_ratio_last_first"] = (
        float(influence[-1] / influence[0]) if influence[0] > 0 else float("nan")
    )
    metrics["influence_monotone"] = int(bool(np.all(np.diff(influence) <= 0)))
    metrics["final_state_norm"] = float(np.linalg.norm(states[-1]))

    steps = np.arange(1, len(tokens) + 1)
    state_table = pd.DataFrame({"step": steps, "token": tokens})
    for cell in range(params.units):
        state_table[f"cell_{cell}"] = states[:, cell]
    influence_table = pd.DataFrame({"step": steps, "token": tokens, "influence": influence})
    return ProbeResult(
        metrics=metrics, curves={"states": state_table, "influence": influence_table}
    )


def first_input_jacobian(rnn, x: np.ndarray) -> np.ndarray:
    """jacobian[t, i] = d h_t[i] / d x_1 for the states h of `rnn` over one sequence x (1, n, features).

    One backward pass gives every row: the sequence is copied once per state cell (t, i), and the
    sum over copies of copy (t, i)'s own cell is differentiated, so copy (t, i) of the gradient holds
    d h_t[i] / d x. (The copies never interact: an RNN does not mix the rows of a batch.)
    """
    from keras import ops

    _, steps, features = x.shape
    units = rnn.units
    copies = ops.convert_to_tensor(np.repeat(x, steps * units, axis=0), dtype="float64")
    # own[t * units + i] is 1 at step t, cell i and 0 elsewhere: each copy's one picked state cell.
    own = ops.convert_to_tensor(np.eye(steps * units).reshape(steps * units, steps, units), dtype="float64")

    def picked(tensors):
        return ops.sum(rnn(tensors[0]) * own)

    (gradient,) = gradients(picked, [copies])
    # Position 0 only: x_1 is the first token's input there (a later occurrence of the word is another input).
    return ops.convert_to_numpy(gradient)[:, 0].reshape(steps, units, features)
