"""Model kinds `transformer` (causal language model) and `transformer_classifier`.

Both are built from keras-hub's layers:

    tokens → TokenAndPositionEmbedding (learned positions; or an Embedding plus
             SinePositionEncoding, or no positions at all; or, with frozen
             word vectors, an Embedding plus PositionEmbedding: below)
           → `layers` × block (post-LN as in the 2017 paper; or pre-LN plus a final
             LayerNorm, as GPT-2) → softmax

`transformer` stacks `TransformerDecoder` blocks called without an encoder
sequence, so they have no cross-attention, and with their default causal mask:
position t attends to positions ≤ t only, which makes it a language model
(`tests/test_language_models.py` checks that changing a later token leaves every
earlier output unchanged). `transformer_classifier` stacks `TransformerEncoder`
blocks (every token sees every other) and averages the non-padding positions.

Self-attention alone is blind to order: without positions (`positions: none`)
permuting the tokens before a position does not change its output, which the
recurrence-versus-attention probe measures. Padding (id 0) is masked: the
mask is computed from the ids and handed to each block (and to the pooling)
explicitly, rather than carried by the embedding, whose mask keras-hub's inner
layers would drop with a warning each.

Frozen word vectors (`model.embedding` with `trainable: false`) and learned
positions are built as a frozen Keras `Embedding` beside keras-hub's
`PositionEmbedding`, added: TokenAndPositionEmbedding's config does not carry
its token table's `trainable`, so a model loaded by Keras alone would train the
table again and skip its saved optimizer state. Both layouts start from the
same initializers, and `decoding.step_graphs` reads either.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Literal

from pydantic import Field, model_validator

from seqkeras.models.pretrained_embedding import PretrainedEmbeddingParams, frozen, start_from_file
from seqkeras.registry import ModelShape, keras_model_shape
from seqkeras.tasks.base import SequenceData

if TYPE_CHECKING:
    import keras

Positions = Literal["learned", "sine", "none"]


class TransformerParams(PretrainedEmbeddingParams):
    embedding_dim: int = Field(64, ge=1, le=65_536, description="Model width d (token embeddings and every block).")
    num_heads: int = Field(4, ge=1, le=1024, description="Attention heads; each has width embedding_dim / num_heads.")
    intermediate_dim: int = Field(128, ge=1, le=262_144, description="Width of each block's feed-forward layer.")
    layers: int = Field(2, ge=1, le=64, description="Stacked Transformer blocks.")
    dropout: float = Field(0.0, ge=0, lt=1, description="Dropout inside each block.")
    positions: Positions = Field(
        "learned",
        description="Order information: learned position embeddings, fixed sinusoids, or none (order-blind).",
    )
    normalize_first: bool = Field(
        False,
        description="Layer normalization after attention and feed-forward, as in the 2017 paper (false), or "
        "before them (GPT-2's pre-LN, then one final normalization).",
    )
    max_length: int | None = Field(
        None, ge=1, le=1_000_000,
        description="Longest input the learned position table covers; default: the task's longest sequence.",
    )

    @model_validator(mode="after")
    def _heads_divide_width(self) -> "TransformerParams":
        if self.embedding_dim % self.num_heads:
            raise ValueError(
                f"embedding_dim {self.embedding_dim} must be divisible by num_heads {self.num_heads}"
            )
        return self


def estimated_parameters(params: TransformerParams, vocabulary: int, outputs: int, max_length: int = 0) -> int:
    """The parameter count the model will have, before building it: embeddings, blocks, output layer.

    Each block: attention's query, key, value and output projections (4·(d² + d)),
    the feed-forward layer (2·d·f + f + d) and two layer normalizations (4·d).
    """
    d, f = params.embedding_dim, params.intermediate_dim
    block = 4 * (d * d + d) + 2 * d * f + f + d + 4 * d
    positions = d * (params.max_length or max_length) if params.positions == "learned" else 0
    final_norm = 2 * d if params.normalize_first else 0
    return vocabulary * d + positions + params.layers * block + final_norm + d * outputs + outputs


def embed(params: TransformerParams, vocabulary: int, max_length: int, inputs):
    """Token ids → vectors with (or without) position information; and the layer's `Embedding` of the ids."""
    import keras

    if params.positions == "learned" and not frozen(params.embedding):
        layer = keras_hub().layers.TokenAndPositionEmbedding(vocabulary, max_length, params.embedding_dim,
                                                             name="embedding")
        return layer(inputs), token_embedding(layer)
    # TokenAndPositionEmbedding's initializer for both tables.
    layer = keras.layers.Embedding(vocabulary, params.embedding_dim, embeddings_initializer="uniform",
                                   name="embedding")
    x = layer(inputs)
    if params.positions == "learned":
        positions = keras_hub().layers.PositionEmbedding(max_length, initializer="uniform", name="positions")
    elif params.positions == "sine":
        positions = keras_hub().layers.SinePositionEncoding(name="positions")
    else:
        return x, layer
    return keras.layers.Add(name="add_positions")([x, positions(x)]), layer


def model_shape(model) -> ModelShape:
    """What a `transformer` or `transformer_classifier` model reads and writes (its kinds' `model_shape`): the
    default reading, and with learned positions the length of the position table, the longest input it reads."""
    layers = {layer.name: layer for layer in getattr(model, "layers", [])}
    embedding, positions = layers.get("embedding"), layers.get("positions")
    if isinstance(embedding, keras_hub().layers.TokenAndPositionEmbedding):
        embedding, positions = embedding.token_embedding, embedding.position_embedding
    if not isinstance(positions, keras_hub().layers.PositionEmbedding):  # sinusoids, or none: any length
        return keras_model_shape(model)
    shape = keras_model_shape(model, embedding=embedding)
    return dataclasses.replace(shape, positions=int(positions.sequence_length))


def final_normalization(params: TransformerParams, x):
    """Pre-LN blocks leave their residual stream unnormalized; GPT-2 normalizes it once at the end."""
    import keras

    if not params.normalize_first:
        return x
    return keras.layers.LayerNormalization(epsilon=1e-5, name="final_normalization")(x)


def keras_hub():
    import keras_hub

    return keras_hub


def longest(data: SequenceData) -> int:
    return max(data.x_train.shape[1], data.x_test.shape[1])


def embedded_tokens(params: TransformerParams, data: SequenceData):
    """The token-id input, its embeddings (with positions) and the mask of real (non-padding) tokens."""
    import keras

    inputs = keras.Input(shape=(None,), dtype="int32", name="tokens")
    x, embedding = embed(params, len(data.vocabulary), params.max_length or longest(data), inputs)
    start_from_file(embedding, params.embedding, data.vocabulary.tokens)
    return inputs, x, keras.ops.not_equal(inputs, 0)


def token_embedding(layer):
    """The Keras `Embedding` of token ids inside an embedding layer: keras-hub's TokenAndPositionEmbedding's
    token table, or the layer itself."""
    return getattr(layer, "token_embedding", layer)


def build_lm(params: TransformerParams, data: SequenceData) -> keras.Model:
    import keras

    inputs, x, real = embedded_tokens(params, data)
    for index in range(params.layers):
        # No encoder sequence: self-attention only, with the causal mask.
        x = keras_hub().layers.TransformerDecoder(
            params.intermediate_dim, params.num_heads, dropout=params.dropout,
            normalize_first=params.normalize_first, name=f"decoder_{index}",
        )(x, decoder_padding_mask=real)
    x = final_normalization(params, x)
    outputs = keras.layers.Dense(data.num_outputs, activation="softmax", name="next_token")(x)
    return keras.Model(inputs, outputs, name="transformer_lm")


def build_classifier(params: TransformerParams, data: SequenceData) -> keras.Model:
    import keras

    inputs, x, real = embedded_tokens(params, data)
    for index in range(params.layers):
        x = keras_hub().layers.TransformerEncoder(
            params.intermediate_dim, params.num_heads, dropout=params.dropout,
            normalize_first=params.normalize_first, name=f"encoder_{index}",
        )(x, padding_mask=real)
    x = final_normalization(params, x)
    x = keras.layers.GlobalAveragePooling1D(name="mean_over_tokens")(x, mask=real)
    outputs = keras.layers.Dense(data.num_outputs, activation="softmax", name="classes")(x)
    return keras.Model(inputs, outputs, name="transformer_classifier")
