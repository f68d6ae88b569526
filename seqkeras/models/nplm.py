"""Model kind `nplm`: Bengio et al.'s (2003) fixed-window neural language model.

Each next token is predicted from the previous n − 1 tokens only:

    x = [C(w_{t−n+2}); …; C(w_t)]     the n − 1 embeddings, concatenated
    h = tanh(H x + d)                 one hidden layer
    P(w_{t+1} | …) = softmax(U h + b)

A dense layer applied to the concatenation of the last n − 1 embeddings is
exactly a causal 1-D convolution of width n − 1 over the embedded sequence
(the kernel's slices are H's blocks), so the model is written with `Conv1D`:
it scores every position of a window in one call, like the recurrent and
Transformer LMs, and positions at a window's start see zero vectors for the
tokens before it (as an n-gram model sees start markers). Bengio's optional
direct input-to-output connections are left out. Parameters:

    V·m  +  (n − 1)·m·h + h  +  h·V + V
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import Field

from seqkeras.registry import Params
from seqkeras.tasks.base import SequenceData

if TYPE_CHECKING:
    import keras


class NplmParams(Params):
    order: int = Field(5, ge=2, le=64, description="n: the model sees the previous n − 1 tokens, like an n-gram model.")
    embedding_dim: int = Field(64, ge=1, le=65_536, description="m: width of each token's embedding.")
    units: int = Field(128, ge=1, le=65_536, description="h: width of the tanh hidden layer.")
    dropout: float = Field(0.0, ge=0, lt=1, description="Dropout on the hidden layer.")


def parameter_count(params: NplmParams, vocabulary: int) -> int:
    m, h, context = params.embedding_dim, params.units, params.order - 1
    return vocabulary * m + context * m * h + h + h * vocabulary + vocabulary


def build(params: NplmParams, data: SequenceData) -> keras.Model:
    import keras

    vocabulary = len(data.vocabulary)
    inputs = keras.Input(shape=(None,), dtype="int32", name="tokens")
    x = keras.layers.Embedding(vocabulary, params.embedding_dim, name="embedding")(inputs)
    x = keras.layers.Conv1D(
        params.units, kernel_size=params.order - 1, padding="causal", activation="tanh", name="hidden"
    )(x)
    if params.dropout:
        x = keras.layers.Dropout(params.dropout, name="dropout")(x)
    outputs = keras.layers.Dense(data.num_outputs, activation="softmax", name="next_token")(x)
    return keras.Model(inputs, outputs, name="nplm")
