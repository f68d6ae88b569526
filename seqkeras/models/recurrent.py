"""Recurrent model kinds: classifier (sequence → label), tagger (label per token), lm (next token).

All three share one body: Embedding (id 0 = padding, masked) → a stack of
recurrent layers (optionally bidirectional) → a softmax. They differ only in
whether the last recurrent layer returns every step or the final state.

Keras is imported inside the builders: the parameter classes are read by spec
validation, which must not import TensorFlow (see seqkeras.registry).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from pydantic import Field, model_validator

from seqkeras.models.cells import CELLS, CellName, textbook_parameter_count
from seqkeras.registry import Params
from seqkeras.tasks.base import SequenceData

if TYPE_CHECKING:
    import keras


class RecurrentParams(Params):
    cell: CellName = Field("lstm", description="Recurrent cell: simple_rnn, lstm or gru.")
    units: int = Field(64, ge=1, le=65_536, description="Hidden units per layer and direction.")
    layers: int = Field(1, ge=1, le=32, description="Stacked recurrent layers.")
    bidirectional: bool = Field(False, description="Run a second RNN right-to-left and merge the two.")
    merge_mode: Literal["concat", "sum", "ave", "mul"] = Field(
        "concat", description="How a bidirectional layer merges its directions (concat doubles the width)."
    )
    embedding_dim: int = Field(32, ge=1, le=65_536, description="Width of the token embeddings.")
    dropout: float = Field(0.0, ge=0, lt=1, description="Dropout on each recurrent layer's inputs.")
    recurrent_dropout: float = Field(0.0, ge=0, lt=1, description="Dropout on the recurrent state.")
    forget_bias: float | None = Field(
        None, ge=-100, le=100,
        description="LSTM forget-gate bias b (keeps sigmoid(b) of the cell per step); default Keras's 1.0.",
    )

    @model_validator(mode="after")
    def _forget_bias_is_lstm_only(self) -> "RecurrentParams":
        self.only_with("forget_bias", "cell", "lstm")
        return self


class ClassifierParams(RecurrentParams):
    pass


class TaggerParams(RecurrentParams):
    output: Literal["softmax", "crf"] = Field(
        "softmax", description="Per-token softmax, or a linear-chain CRF scoring whole tag sequences."
    )
    constrain_transitions: bool = Field(
        False, description="CRF only: never predict a transition BIO forbids (O → I-X, B-X → I-Y, start → I-X)."
    )

    @model_validator(mode="after")
    def _constraints_need_crf(self) -> "TaggerParams":
        if self.constrain_transitions and self.output != "crf":
            raise ValueError("constrain_transitions applies only to output crf (a softmax has no transitions)")
        return self


class LanguageModelParams(RecurrentParams):
    @model_validator(mode="after")
    def _causal(self) -> "LanguageModelParams":
        if self.bidirectional:
            raise ValueError("a language model cannot be bidirectional: the backward pass would see the token it predicts")
        return self


def estimated_parameters(params: RecurrentParams, vocabulary: int, outputs: int) -> int:
    """The parameter count the model will have (textbook formulas), before building it."""
    directions = 2 if params.bidirectional else 1
    width_out = params.units * (directions if params.merge_mode == "concat" else 1)
    total = vocabulary * params.embedding_dim
    width_in = params.embedding_dim
    for _ in range(params.layers):
        total += directions * textbook_parameter_count(params.cell, width_in, params.units)
        width_in = width_out
    return total + width_out * outputs + outputs


def recurrent_layer(params: RecurrentParams, *, return_sequences: bool, name: str) -> keras.layers.Layer:
    import keras

    from seqkeras.backends.torch import fused_rnn
    from seqkeras.layers.initializers import ForgetGateBias

    # Keras's own layer, or on the torch backend its subclass on PyTorch's fused kernels.
    layer_class = fused_rnn.layer_class(CELLS.get(params.cell).load())
    options = dict(
        units=params.units,
        return_sequences=return_sequences,
        dropout=params.dropout,
        recurrent_dropout=params.recurrent_dropout,
    )
    if params.cell == "lstm" and params.forget_bias is not None:
        options.update(unit_forget_bias=False, bias_initializer=ForgetGateBias(params.forget_bias))
    if params.bidirectional:
        return keras.layers.Bidirectional(layer_class(**options), merge_mode=params.merge_mode, name=name)
    return layer_class(**options, name=name)


def recurrent_body(params: RecurrentParams, data: SequenceData, *, every_step: bool):
    """Token ids → embeddings → stacked RNN; returns (inputs, features)."""
    import keras

    inputs = keras.Input(shape=(None,), dtype="int32", name="tokens")
    x = keras.layers.Embedding(len(data.vocabulary), params.embedding_dim, mask_zero=True, name="embedding")(inputs)
    for index in range(params.layers):
        last = index == params.layers - 1
        x = recurrent_layer(params, return_sequences=every_step or not last, name=f"{params.cell}_{index}")(x)
    return inputs, x


def softmax_output(classes: int, *, name: str) -> keras.layers.Layer:
    """The softmax over classes (tags, next tokens); its bias add is folded into the matmul on torch."""
    from seqkeras.backends.torch import fused_dense

    return fused_dense.layer_class()(classes, activation="softmax", name=name)


def build_classifier(params: ClassifierParams, data: SequenceData) -> keras.Model:
    import keras

    inputs, features = recurrent_body(params, data, every_step=False)
    outputs = softmax_output(data.num_outputs, name="classes")(features)
    return keras.Model(inputs, outputs, name="classifier")


def build_tagger(params: TaggerParams, data: SequenceData) -> keras.Model:
    import keras

    inputs, features = recurrent_body(params, data, every_step=True)
    if params.output == "crf":
        from seqkeras.models.crf_tagger import build_crf_tagger

        return build_crf_tagger(inputs, features, data, constrain_transitions=params.constrain_transitions)
    outputs = softmax_output(data.num_outputs, name="tags")(features)
    return keras.Model(inputs, outputs, name="tagger")


def build_lm(params: LanguageModelParams, data: SequenceData) -> keras.Model:
    import keras

    inputs, features = recurrent_body(params, data, every_step=True)
    outputs = softmax_output(data.num_outputs, name="next_token")(features)
    return keras.Model(inputs, outputs, name="language_model")
