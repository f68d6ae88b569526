"""The encoder-decoders' parameters (kinds `seq2seq` and `transformer_seq2seq`), apart from their Keras models.

Spec validation, `seqkeras list` and the JSON schema read these; keeping them
out of `seqkeras.models.seq2seq` and `seqkeras.models.transformer_seq2seq` (which
subclass keras.Model) lets them do so without importing Keras and TensorFlow,
e.g. in the parent of `run --jobs N`.
"""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field, model_validator

from seqkeras.models.cells import CellName
from seqkeras.models.pretrained_embedding import PretrainedEmbeddingParams
from seqkeras.models.transformer import TransformerParams


MAX_OUTPUT_LENGTH = 10_000


def output_length_field():
    """Both encoder-decoders' `max_output_length` field."""
    # Bounded, because a decoder allocates its slots (and the Transformer its position table and caches) for this
    # many tokens up front: 10**9 passed once and allocated 32 GB. 10,000 tokens is far above any sentence.
    return Field(None, ge=1, le=MAX_OUTPUT_LENGTH, description="Most tokens a decoder generates (the end token "
                 f"included; at most {MAX_OUTPUT_LENGTH:,}); default: 1.5 × the longest training target + 2.")


def output_limit(params, data) -> int:
    """The longest output a decoder may write (the end token included): the model's `max_output_length`, else
    1.5 × the longest training target + 2. The evaluator's, a kept model's and the Transformer's position table's."""
    return params.max_output_length or int(1.5 * data.longest_train_target) + 2


class ModelArchitecture:
    """The parameters an encoder-decoder's Keras model is made of: its Params' fields less those read only when it
    is built or decoded (`outside_the_model`). The model's config holds each, so Keras gives them back when it
    loads the model: one list of names, its Params' own."""

    outside_the_model: ClassVar[tuple[str, ...]] = ("embedding", "max_output_length")

    @classmethod
    def architecture_names(cls) -> tuple[str, ...]:
        return tuple(name for name in cls.model_fields if name not in cls.outside_the_model)

    def architecture(self) -> dict:
        """What `build` hands the model."""
        return {name: getattr(self, name) for name in self.architecture_names()}

    @classmethod
    def architecture_of(cls, config: dict) -> dict:
        """The model's settings, each taken out of `config` (its `__init__`'s keyword arguments: a kept model's
        config, or `architecture()`), or its Params' default where a config written before it lacks it."""
        return {name: config.pop(name) if name in config else cls.model_fields[name].default
                for name in cls.architecture_names()}


class Seq2SeqParams(ModelArchitecture, PretrainedEmbeddingParams):
    # Added after results existed: in a run's id only when set (registry.Params).
    hashed_only_when_set: ClassVar[tuple[str, ...]] = ("input_encoding", "decoder_reads")

    cell: CellName = Field("lstm", description="Encoder cell: simple_rnn, lstm or gru.")
    decoder_cell: CellName | None = Field(
        None,
        description="Decoder cell; default: the encoder's. An LSTM decoder after another encoder starts "
        "with a zero cell state; after an LSTM encoder another decoder takes only its hidden state.",
    )
    units: int = Field(
        64, ge=1, le=65_536, description="Encoder units per direction (the decoder has units × directions)."
    )
    layers: int = Field(1, ge=1, le=16, description="Stacked recurrent layers, in the encoder and in the decoder.")
    bidirectional: bool = Field(
        False, description="Encoder reads the source both ways (outputs and states concatenated)."
    )
    embedding_dim: int = Field(32, ge=1, le=65_536, description="Width of the source and target embeddings.")
    input_encoding: Literal["embedding", "one_hot"] = Field(
        "embedding", description="How source and target tokens enter the network: learned embeddings of "
        "embedding_dim, or fixed one-hot vectors as wide as each vocabulary (the Keras addition example)."
    )
    decoder_reads: Literal["previous_token", "encoder_vector"] = Field(
        "previous_token", description="What the decoder reads at each step: previous_token (the true one in "
        "training, teacher forcing; its own output when decoding), or encoder_vector: the encoder's final output, "
        "the same vector at every step, from a zero state, so no output depends on another (Keras's addition_rnn "
        "example: RepeatVector → LSTM; needs attention none). Both write an end token after the target."
    )
    attention: Literal["none", "bahdanau", "luong"] = Field(
        "bahdanau", description="none (the decoder sees only the encoder's final state), bahdanau (additive) or luong."
    )
    luong_score: Literal["dot", "general"] | None = Field(
        None, description="Luong attention's score: dot (h_tᵀ h_j) or general (h_tᵀ W h_j, the default)."
    )
    luong_layer_norm: bool | None = Field(
        None,
        description="Luong attention: layer-normalize W_c [context; state] before its tanh, so the attentional "
        "state cannot saturate (default false, as in Luong et al.).",
    )
    attention_units: int | None = Field(
        None, ge=1, le=65_536, description="Bahdanau attention's hidden width; default: the decoder's width."
    )
    dropout: float = Field(
        0.0, ge=0, lt=1, description="Dropout on the embeddings and on the decoder's output features."
    )
    max_output_length: int | None = output_length_field()

    @model_validator(mode="after")
    def _attention_options(self) -> "Seq2SeqParams":
        self.only_with("luong_score", "attention", "luong")
        self.only_with("luong_layer_norm", "attention", "luong")
        self.only_with("attention_units", "attention", "bahdanau")
        if self.decoder_reads == "encoder_vector" and self.attention != "none":
            raise ValueError(f"decoder_reads encoder_vector needs attention none, not {self.attention!r}: the "
                             "decoder reads one vector of the source, repeated")
        if self.input_encoding == "one_hot" and self.changed("embedding_dim"):
            raise ValueError("embedding_dim does not apply with input_encoding one_hot: a one-hot vector is as wide "
                             "as its vocabulary")
        return self


class TransformerSeq2SeqParams(ModelArchitecture, TransformerParams):
    """The Transformer encoder-decoder's: the `transformer` kind's sizes, for `layers` encoder and `layers` decoder
    blocks."""

    # The source's position table is sized when the model is built (`source_positions`), from max_length or the data.
    outside_the_model: ClassVar[tuple[str, ...]] = ("embedding", "max_length", "max_output_length")

    max_length: int | None = Field(
        None, ge=1, le=1_000_000,
        description="Longest source the learned position table covers; default: the task's longest source.",
    )
    max_output_length: int | None = output_length_field()
