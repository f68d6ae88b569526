"""Recurrent model kinds: classifier (sequence → label), tagger (label per token), lm (next token).

All three share one body: Embedding (id 0 = padding, masked) → a stack of
recurrent layers (optionally bidirectional) → a softmax. They differ only in
whether the last recurrent layer returns every step or the final state.

Keras is imported inside the builders: the parameter classes are read by spec
validation, which must not import TensorFlow (see seqkeras.registry).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar, Literal

from pydantic import Field, model_validator

from seqkeras.models.cells import CELLS, CellName, textbook_parameter_count
from seqkeras.models.pretrained_embedding import PretrainedEmbeddingParams, start_from_file
from seqkeras.registry import Abilities, ModelShape, keras_model_shape
from seqkeras.tasks.base import SequenceData

if TYPE_CHECKING:
    import keras


class RecurrentParams(PretrainedEmbeddingParams):
    # Added after results existed: in a run's id only when set (registry.Params).
    hashed_only_when_set: ClassVar[tuple[str, ...]] = (
        "input_encoding", "kernel_initializer", "kernel_stddev", "recurrent_stddev")

    cell: CellName = Field("lstm", description="Recurrent cell: simple_rnn, lstm or gru.")
    units: int = Field(64, ge=1, le=65_536, description="Hidden units per layer and direction.")
    layers: int = Field(1, ge=1, le=32, description="Stacked recurrent layers.")
    bidirectional: bool = Field(False, description="Run a second RNN right-to-left and merge the two.")
    merge_mode: Literal["concat", "sum", "ave", "mul"] = Field(
        "concat", description="How a bidirectional layer merges its directions (concat doubles the width)."
    )
    embedding_dim: int = Field(32, ge=1, le=65_536, description="Width of the token embeddings.")
    input_encoding: Literal["embedding", "one_hot"] = Field(
        "embedding", description="How a token enters the network: a learned embedding of embedding_dim, or its "
        "one-hot vector, as wide as the vocabulary, fixed (papers' and the Keras examples' inputs; not counted "
        "in the run's params)."
    )
    dropout: float = Field(0.0, ge=0, lt=1, description="Dropout on each recurrent layer's inputs.")
    recurrent_dropout: float = Field(0.0, ge=0, lt=1, description="Dropout on the recurrent state.")
    forget_bias: float | None = Field(
        None, ge=-100, le=100,
        description="LSTM forget-gate bias b (keeps sigmoid(b) of the cell per step); default Keras's 1.0.",
    )
    update_bias: float | None = Field(
        None, ge=-100, le=100,
        description="GRU update-gate bias b. Keras's GRU keeps z·h_prev + (1−z)·h̃ with z = sigmoid(… + b): "
        "b > 0 keeps memory at the start; default 0 (z = 0.5, half the memory each step).",
    )
    chrono: int | None = Field(
        None, ge=3, le=1_000_000,
        description="LSTM or GRU: chrono initialization for memories up to this many steps (Tallec & Ollivier "
        "2018): forget (GRU: update) biases log U[1, chrono − 1], the LSTM's input biases their negatives.",
    )
    activation: Literal["tanh", "relu"] = Field(
        "tanh", description="SimpleRNN only: tanh, or relu (with recurrent_initializer identity: the IRNN)."
    )
    recurrent_initializer: Literal["orthogonal", "glorot_uniform", "normal", "identity", "random_normal"] = Field(
        "orthogonal",
        description="Recurrent kernel at the start: orthogonal (Keras's default; a SimpleRNN's eigenvalues all lie on "
        "the unit circle), glorot_uniform, per gate normal (N(0,1) scaled to spectral_radius, the lesson's "
        "construction) or identity (times identity_scale; Le et al. 2015), or random_normal: every entry drawn "
        "from N(0, recurrent_stddev²), as papers state it.",
    )
    recurrent_stddev: float | None = Field(
        None, gt=0, le=100, description="recurrent_initializer random_normal: the entries' standard deviation σ "
        "(required)."
    )
    kernel_initializer: Literal["glorot_uniform", "random_normal"] = Field(
        "glorot_uniform", description="Input kernel (each layer's input weights) at the start: glorot_uniform "
        "(Keras's default) or random_normal, every entry from N(0, kernel_stddev²)."
    )
    kernel_stddev: float | None = Field(
        None, gt=0, le=100, description="kernel_initializer random_normal: the entries' standard deviation σ "
        "(required)."
    )
    spectral_radius: float | None = Field(
        None, gt=0, le=100, description="recurrent_initializer normal: the spectral radius ρ (default 1)."
    )
    identity_scale: float | None = Field(
        None, gt=0, le=100, description="recurrent_initializer identity: the scale of the identity (default 1)."
    )

    @model_validator(mode="after")
    def _options_of_their_cell(self) -> "RecurrentParams":
        self.only_with("forget_bias", "cell", "lstm")
        self.only_with("update_bias", "cell", "gru")
        if self.activation != "tanh" and self.cell != "simple_rnn":
            raise ValueError(f"activation applies only to cell simple_rnn, not {self.cell!r}")
        if self.chrono is not None and self.cell == "simple_rnn":
            raise ValueError("chrono applies only to cells lstm and gru (a SimpleRNN has no gates)")
        if self.chrono is not None and (self.forget_bias is not None or self.update_bias is not None):
            raise ValueError("chrono sets the gate biases itself: give chrono or forget_bias/update_bias, not both")
        self.only_with("spectral_radius", "recurrent_initializer", "normal")
        self.only_with("identity_scale", "recurrent_initializer", "identity")
        self.only_with("recurrent_stddev", "recurrent_initializer", "random_normal")
        self.only_with("kernel_stddev", "kernel_initializer", "random_normal")
        for initializer, stddev in (("recurrent_initializer", "recurrent_stddev"),
                                    ("kernel_initializer", "kernel_stddev")):
            if getattr(self, initializer) == "random_normal" and getattr(self, stddev) is None:
                raise ValueError(f"{initializer} random_normal needs {stddev}, the entries' σ")
        if self.input_encoding == "one_hot" and self.changed("embedding_dim"):
            raise ValueError("embedding_dim does not apply with input_encoding one_hot: a one-hot vector is as wide "
                             "as the vocabulary")
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
            raise ValueError("a language model cannot be bidirectional: "
                             "the backward pass would see the token it predicts")
        return self


class RegressorParams(RecurrentParams):
    @model_validator(mode="after")
    def _no_embedding(self) -> "RegressorParams":
        for key in ("embedding_dim", "input_encoding", "embedding"):
            if self.changed(key):
                raise ValueError(f"{key} does not apply to a regressor: it reads its inputs' features directly")
        return self


def estimated_parameters(params: RecurrentParams, vocabulary: int, outputs: int, max_length: int = 0) -> int:
    """The parameter count the model will have (textbook formulas), before building it.

    The size estimate of the recurrent kinds (catalog); `max_length` is unused: no position table.
    """
    directions = 2 if params.bidirectional else 1
    width_out = params.units * (directions if params.merge_mode == "concat" else 1)
    one_hot = params.input_encoding == "one_hot"
    total = 0 if one_hot else vocabulary * params.embedding_dim  # a one-hot table is fixed, not trained
    width_in = vocabulary if one_hot else params.embedding_dim
    for _ in range(params.layers):
        total += directions * textbook_parameter_count(params.cell, width_in, params.units)
        width_in = width_out
    return total + width_out * outputs + outputs


def recurrent_layer(params: RecurrentParams, *, return_sequences: bool, name: str) -> keras.layers.Layer:
    import keras

    from seqkeras.backends import layer_classes

    # Keras's own layer, or on the torch backend its subclass on PyTorch's fused kernels.
    layer_class = layer_classes.recurrent(CELLS.get(params.cell).load())
    options = dict(
        units=params.units,
        return_sequences=return_sequences,
        dropout=params.dropout,
        recurrent_dropout=params.recurrent_dropout,
        **initial_weights(params),
    )
    if params.bidirectional:
        return keras.layers.Bidirectional(layer_class(**options), merge_mode=params.merge_mode, name=name)
    return layer_class(**options, name=name)


def initial_weights(params: RecurrentParams) -> dict:
    """The Keras layer options that set a cell's starting weights and gate biases from the spec."""
    import keras

    from seqkeras.layers import initializers

    options: dict = {}
    if params.cell == "simple_rnn" and params.activation != "tanh":
        options["activation"] = params.activation
    if params.recurrent_initializer == "normal":
        options["recurrent_initializer"] = initializers.SpectralNormal(params.spectral_radius or 1.0)
    elif params.recurrent_initializer == "identity":
        options["recurrent_initializer"] = initializers.BlockIdentity(params.identity_scale or 1.0)
    elif params.recurrent_initializer == "glorot_uniform":
        options["recurrent_initializer"] = "glorot_uniform"
    elif params.recurrent_initializer == "random_normal":
        options["recurrent_initializer"] = keras.initializers.RandomNormal(stddev=params.recurrent_stddev)
    if params.kernel_initializer == "random_normal":
        options["kernel_initializer"] = keras.initializers.RandomNormal(stddev=params.kernel_stddev)
    gates = initializers.GATES[params.cell]
    if params.cell == "lstm" and (params.forget_bias is not None or params.chrono):
        # Keras's gate order: input, forget, candidate, output.
        values = {0: "-chrono", 1: "chrono"} if params.chrono else {1: params.forget_bias}
        options.update(unit_forget_bias=False,
                       bias_initializer=initializers.GateBias(gates, values, max_lag=params.chrono))
    if params.cell == "gru" and (params.update_bias is not None or params.chrono):
        values = {0: "chrono"} if params.chrono else {0: params.update_bias}  # update, reset, candidate
        options["bias_initializer"] = initializers.GateBias(gates, values, max_lag=params.chrono)
    return options


def recurrent_body(params: RecurrentParams, data: SequenceData, *, every_step: bool):
    """Token ids → embeddings → stacked RNN; returns (inputs, features)."""
    import keras

    from seqkeras.layers.one_hot import token_inputs

    inputs = keras.Input(shape=(None,), dtype="int32", name="tokens")
    embedding = token_inputs(len(data.vocabulary), params.embedding_dim, params.input_encoding)
    x = embedding(inputs)
    start_from_file(embedding, params.embedding, data.vocabulary.tokens)
    for index in range(params.layers):
        last = index == params.layers - 1
        x = recurrent_layer(params, return_sequences=every_step or not last, name=f"{params.cell}_{index}")(x)
    return inputs, x


def softmax_output(classes: int, *, name: str) -> keras.layers.Layer:
    """The softmax over classes (tags, next tokens); its bias add is folded into the matmul on torch."""
    from seqkeras.backends import layer_classes

    return layer_classes.dense()(classes, activation="softmax", name=name)


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


def tagger_abilities(params: TaggerParams) -> Abilities:
    """What the tagger kind declares (catalog): with a CRF output (models.crf_tagger) it computes its own
    loss, the sequence likelihood, and decides by the Viterbi path (`predict_tags`), not the argmax."""
    crf = params.output == "crf"
    return Abilities(own_loss=crf, tags=crf)


def tagger_shape(model) -> ModelShape:
    """What a tagger reads and writes (the tagger kind's `model_shape`): a CRF tagger says it itself
    (`SequenceCRFTagger.model_shape`), a softmax tagger is a Keras functional model (the default reading)."""
    own = getattr(model, "model_shape", None)
    return own() if callable(own) else keras_model_shape(model)


def build_lm(params: LanguageModelParams, data: SequenceData) -> keras.Model:
    import keras

    inputs, features = recurrent_body(params, data, every_step=True)
    outputs = softmax_output(data.num_outputs, name="next_token")(features)
    return keras.Model(inputs, outputs, name="language_model")


def build_regressor(params: RegressorParams, data: SequenceData) -> keras.Model:
    """Real-valued features per step → stacked RNN → one linear output (trained on mean squared error)."""
    import keras

    inputs = keras.Input(shape=(None, data.x_train.shape[-1]), dtype="float32", name="features")
    x = inputs
    for index in range(params.layers):
        last = index == params.layers - 1
        x = recurrent_layer(params, return_sequences=not last, name=f"{params.cell}_{index}")(x)
    outputs = keras.layers.Dense(1, name="value")(x)
    return keras.Model(inputs, outputs, name="regressor")
