"""The encoder-decoder's parameters, apart from its Keras model.

Spec validation, `seqkeras list` and the JSON schema read these; keeping them
out of `seqkeras.models.seq2seq` (which subclasses keras.Model) lets them do so
without importing Keras and TensorFlow, e.g. in the parent of `run --jobs N`.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from seqkeras.models.cells import CellName
from seqkeras.registry import Params


class Seq2SeqParams(Params):
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
    max_output_length: int | None = Field(
        None,
        ge=1,
        description="Most tokens a decoder generates (the end token included); "
        "default: 1.5 × the longest training target + 2.",
    )

    @model_validator(mode="after")
    def _attention_options(self) -> "Seq2SeqParams":
        self.only_with("luong_score", "attention", "luong")
        self.only_with("luong_layer_norm", "attention", "luong")
        self.only_with("attention_units", "attention", "bahdanau")
        return self
