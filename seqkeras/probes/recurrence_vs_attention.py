"""Probe `recurrence_vs_attention`: lesson 001's table, measured on an LSTM and a Transformer.

The lesson contrasts recurrence and self-attention in four rows. Each row is a
`measure` here, run on the suite's own layers at a matched size (width 64:
an LSTM layer of 64 units on 64-wide inputs has 33,024 weights, a keras-hub
`TransformerDecoder` block of width 64 with 4 heads and a 128-wide
feed-forward layer has 33,472):

    computation order   step_time: milliseconds per training step (forward,
                        backward, Adam update) of the suite's `lm` (LSTM) and
                        `transformer` model kinds on a batch of random tokens,
                        as the sequence grows. Recurrence takes T steps one
                        after another; attention takes one step whose cost has
                        a T² term.
    path length         gradient_path: ‖∂ o_T / ∂ x_{T−k}‖ (Frobenius norm of
                        the Jacobian) of the last output with respect to the
                        input k positions back, for random inputs and freshly
                        initialized layers. Through a recurrence the gradient
                        crosses k steps and shrinks with k; through attention
                        every input is one hop away.
    order information   order: how much the last output changes when the two
                        inputs just before it trade places, relative to its
                        size. Recurrence is order-sensitive by construction;
                        attention only through its position encodings
                        (`positions: none` gives exactly 0, up to rounding).
    long-range deps     agreement: test accuracy on the `agreement` task (the
                        verb's number depends on the subject `distance` tokens
                        back) after training the suite's `classifier` (LSTM)
                        or `transformer_classifier` with the suite's training loop.

And the lesson's last paragraph, the cost of generating a token:

    memory per token    generation: the `lm` and `transformer` models of
                        step_time (fresh weights: neither the state's size nor
                        the time depends on training) generate one token at a
                        time through the suite's own step models
                        (`decoding.cached_step_models`) after `context_length`
                        tokens of context. state_bytes: the bytes of the
                        arrays the step model carries (the LSTM's h and c, the
                        Transformer's key/value cache); ms_per_token: the median
                        time of one step. A recurrence carries the same state
                        after any context; attention's cache grows with it.

Every run reports `body_parameters`: the weights of the recurrent or attention
layers alone (embeddings, position tables and softmax depend on the task).
"""

from __future__ import annotations

import time
from typing import Annotated, Literal, Union

import numpy as np
import pandas as pd
from pydantic import Field, model_validator

from seqkeras.backends.autodiff import gradients
from seqkeras.decoding.cached_step_models import CachedTransformerStepModel, RecurrentStepModel, state_size
from seqkeras.errors import UnionOf
from seqkeras.evaluation import metrics
from seqkeras.models import recurrent, transformer
from seqkeras.models.transformer import TransformerParams
from seqkeras.probes.base import ProbeResult
from seqkeras.registry import Params as BaseParams
from seqkeras.training.settings import OptimizerSpec, TrainSpec
from seqkeras.tasks import agreement
from seqkeras.tasks.base import LANGUAGE_MODELING, SequenceData, Vocabulary


class StepTime(BaseParams):
    name: Literal["step_time"] = "step_time"
    seq_length: int = Field(256, ge=2, le=65_536, description="Tokens per training sequence.")
    batch_size: int = Field(16, ge=1, le=4096, description="Sequences per training step.")
    steps: int = Field(
        5, ge=1, le=1000, description="Timed steps (after two untimed warm-up steps); the median is reported."
    )
    vocabulary: int = Field(
        100, ge=3, le=1_000_000, description="Token ids drawn at random; small so the layers dominate."
    )


class GradientPath(BaseParams):
    name: Literal["gradient_path"] = "gradient_path"
    seq_length: int = Field(256, ge=2, le=65_536, description="Length T of the random input sequence.")
    steps_back: int = Field(1, ge=0, description="k: the input k positions before the last one.")

    @model_validator(mode="after")
    def _inside(self) -> "GradientPath":
        if self.steps_back >= self.seq_length:
            raise ValueError(f"steps_back {self.steps_back} must be below seq_length {self.seq_length}")
        return self


class Order(BaseParams):
    name: Literal["order"] = "order"
    seq_length: int = Field(64, ge=3, le=65_536, description="Length of the random input sequence.")


class Agreement(BaseParams):
    name: Literal["agreement"] = "agreement"
    distance: int = Field(32, ge=3, le=100_000, description="Tokens between the subject and its verb.")
    n_train: int = Field(2000, ge=1, le=5_000_000, description="Training sentences.")
    n_test: int = Field(500, ge=1, le=5_000_000, description="Test sentences.")
    epochs: int = Field(10, ge=1, le=10_000, description="Passes over the training sentences.")
    batch_size: int = Field(32, ge=1, le=1_000_000, description="Sentences per step.")
    learning_rate: float = Field(1e-3, gt=0, le=10, description="Adam's step size (gradients clipped to norm 1).")


class Generation(BaseParams):
    name: Literal["generation"] = "generation"
    context_length: int = Field(
        256, ge=1, le=65_536, description="Tokens already in the context when the timed tokens are generated."
    )
    new_tokens: int = Field(
        16, ge=1, le=10_000, description="Timed steps (after two untimed warm-up steps); the median is reported."
    )
    batch_size: int = Field(
        1, ge=1, le=4096, description="Sequences generated together (each step adds one token to each)."
    )
    reference_length: int = Field(
        64, ge=1, le=65_536,
        description="The context that state_growth and time_growth compare with, measured in the same run.",
    )
    vocabulary: int = Field(
        100, ge=3, le=1_000_000, description="Token ids drawn at random; small so the layers dominate."
    )


Measure = Annotated[
    Union[StepTime, GradientPath, Order, Agreement, Generation], Field(discriminator="name"), UnionOf("measure")
]


class Params(BaseParams):
    model: Literal["lstm", "transformer"] = Field(description="Recurrence (an LSTM) or self-attention (a Transformer).")
    positions: Literal["learned", "sine", "none"] | None = Field(
        None, description="Transformer only: position information (default learned); none makes attention order-blind."
    )
    width: int = Field(64, ge=1, le=65_536, description="LSTM units and inputs; Transformer model width.")
    num_heads: int = Field(4, ge=1, le=1024, description="Transformer attention heads.")
    intermediate_dim: int = Field(128, ge=1, le=262_144, description="Transformer feed-forward width.")
    layers: int = Field(1, ge=1, le=64, description="Stacked LSTM layers or Transformer blocks.")
    measure: Measure = Field(
        default_factory=StepTime,
        description="What to measure: {name: step_time, seq_length}, {name: gradient_path, seq_length, steps_back}, "
        "{name: order, seq_length}, {name: agreement, distance, n_train, n_test, epochs} or "
        "{name: generation, context_length, new_tokens}.",
    )

    @model_validator(mode="after")
    def _positions_are_the_transformers(self) -> "Params":
        self.only_with("positions", "model", "transformer")
        if self.model == "transformer" and self.width % self.num_heads:
            raise ValueError(f"width {self.width} must be divisible by num_heads {self.num_heads}")
        return self


def transformer_params(params: Params, max_length: int | None = None):
    return TransformerParams(
        embedding_dim=params.width,
        num_heads=params.num_heads,
        intermediate_dim=params.intermediate_dim,
        layers=params.layers,
        positions=params.positions or "learned",
        max_length=max_length,
    )


def body(params: Params, seq_length: int):
    """Vectors [B, T, width] → outputs [B, T, width]: the recurrent or attention layers alone, causal."""
    import keras
    import keras_hub

    inputs = keras.Input(shape=(seq_length, params.width), name="vectors")
    x = inputs
    if params.model == "lstm":
        for index in range(params.layers):
            x = keras.layers.LSTM(params.width, return_sequences=True, name=f"lstm_{index}")(x)
        return keras.Model(inputs, x, name="lstm_body")
    positions = params.positions or "learned"
    if positions == "learned":
        x = keras.layers.Add(name="add_positions")(
            [x, keras_hub.layers.PositionEmbedding(seq_length, name="positions")(x)]
        )
    elif positions == "sine":
        x = keras.layers.Add(name="add_positions")([x, keras_hub.layers.SinePositionEncoding(name="positions")(x)])
    for index in range(params.layers):
        x = keras_hub.layers.TransformerDecoder(params.intermediate_dim, params.num_heads, name=f"decoder_{index}")(x)
    return keras.Model(inputs, x, name="transformer_body")


def body_parameters(model) -> int:
    """Weights of the LSTM layers or Transformer blocks (not embeddings, positions or softmax)."""
    return sum(
        layer.count_params() for layer in model.layers if layer.name.startswith(("lstm_", "decoder_", "encoder_"))
    )


def gradient_path(model, inputs: np.ndarray) -> np.ndarray:
    """norms[k] = ‖∂ o_T / ∂ x_{T−k}‖_F: the last output's Jacobian with respect to each earlier input.

    One backward pass gives the whole Jacobian: the sequence is copied once per
    output unit j, and the sum of o_T[j] of copy j is differentiated, so row j
    of the gradient holds ∂ o_T[j] / ∂ x. (Copies never interact: neither an
    LSTM nor a Transformer block mixes the rows of a batch.)
    """
    from keras import ops

    inputs = np.asarray(inputs, dtype="float32")
    if inputs.ndim == 2:
        inputs = inputs[None]
    width_out = int(model.output_shape[-1])
    copies = ops.convert_to_tensor(np.repeat(inputs[:1], width_out, axis=0))

    def picked(tensors):
        last = model(tensors[0], training=False)[:, -1, :]
        return ops.sum(ops.diagonal(last))  # copy j's o_T[j]

    (gradient,) = gradients(picked, [copies])
    jacobian = ops.convert_to_numpy(gradient)  # [width_out, T, width_in]
    norms = np.sqrt(np.sum(jacobian.astype("float64") ** 2, axis=(0, 2)))
    return norms[::-1]  # index k = positions back from the last


def order_sensitivity(model, inputs: np.ndarray) -> float:
    """‖o_T(x) − o_T(x with x_{T−2} and x_{T−3} swapped)‖ / ‖o_T(x)‖."""
    import keras

    swapped = inputs.copy()
    swapped[:, [-2, -3]] = inputs[:, [-3, -2]]
    original = keras.ops.convert_to_numpy(model(inputs, training=False))[:, -1]
    changed = keras.ops.convert_to_numpy(model(swapped, training=False))[:, -1]
    return float(np.linalg.norm(original - changed) / np.linalg.norm(original))


# The step model of each model the probe builds: its kind's (`lm`, `transformer`: ModelKind.step_model).
STEP_MODELS = {"lstm": RecurrentStepModel, "transformer": CachedTransformerStepModel}


def language_model(params: Params, data: SequenceData, max_length: int):
    """The suite's `lm` (LSTM) or `transformer` model kind at the probe's size; positions up to max_length."""
    if params.model == "lstm":
        return recurrent.build_lm(
            recurrent.LanguageModelParams(
                cell="lstm", units=params.width, embedding_dim=params.width, layers=params.layers
            ),
            data,
        )
    return transformer.build_lm(transformer_params(params, max_length), data)


def random_tokens(rng: np.random.Generator, vocabulary: int, shape) -> np.ndarray:
    """Token ids drawn uniformly, never padding (0)."""
    return rng.integers(1, vocabulary, size=shape).astype("int32")


def step_time(params: Params, measure: StepTime, seed: int) -> dict[str, float]:
    import keras

    rng = np.random.default_rng(seed)
    shape = (measure.batch_size, measure.seq_length)
    x = random_tokens(rng, measure.vocabulary, shape)
    y = random_tokens(rng, measure.vocabulary, shape)
    data = SequenceData(LANGUAGE_MODELING, x, y, x, y, Vocabulary([f"t{i}" for i in range(measure.vocabulary)]))
    model = language_model(params, data, measure.seq_length)
    model.compile(optimizer=keras.optimizers.Adam(1e-3), loss="sparse_categorical_crossentropy")
    for _ in range(2):  # the first steps build the graph
        model.train_on_batch(x, y)
    times = []
    for _ in range(measure.steps):
        started = time.perf_counter()
        model.train_on_batch(x, y)
        times.append(time.perf_counter() - started)
    step_ms = 1000 * float(np.median(times))
    return {
        "step_ms": step_ms,
        "us_per_token": 1000 * step_ms / (measure.batch_size * measure.seq_length),
        "body_parameters": body_parameters(model),
    }


WARM_UP_STEPS = 2  # the first steps of a step model build and trace what later steps reuse


def generation(params: Params, measure: Generation, seed: int) -> dict[str, float]:
    """The step model's state size and time per token after context_length tokens, and relative to reference_length.

    Two step models share the model: one continues a random context of
    context_length tokens, the other one of reference_length. Their steps
    alternate, so that both see the machine under the same load, and the
    ratios (state_growth, time_growth) compare within one run. The tokens fed
    are random: neither the state's size nor the step's time depends on which.
    """
    rng = np.random.default_rng(seed)
    steps = WARM_UP_STEPS + measure.new_tokens
    longest = max(measure.context_length, measure.reference_length) + steps
    x = random_tokens(rng, measure.vocabulary, (1, longest))
    data = SequenceData(LANGUAGE_MODELING, x, x, x, x, Vocabulary([f"t{i}" for i in range(measure.vocabulary)]))
    model = language_model(params, data, longest)  # a position table long enough for every step
    lengths = {"measured": measure.context_length, "reference": measure.reference_length}
    step_models, states, sizes, times = {}, {}, {}, {key: [] for key in lengths}
    for key, length in lengths.items():
        context = random_tokens(rng, measure.vocabulary, length)
        step_models[key] = STEP_MODELS[params.model](model, start_id=1, end_id=0, context=context, window=longest)
        states[key] = step_models[key].start(measure.batch_size)
        sizes[key] = state_size(states[key])
    for step in range(steps):
        for key in lengths:
            tokens = random_tokens(rng, measure.vocabulary, measure.batch_size)
            started = time.perf_counter()
            _, states[key] = step_models[key].step(tokens, states[key])
            if step >= WARM_UP_STEPS:
                times[key].append(time.perf_counter() - started)
    ms = {key: 1000 * float(np.median(values)) for key, values in times.items()}
    return {
        "state_bytes": sizes["measured"],
        "state_bytes_per_context_token": sizes["measured"] / measure.context_length,
        "state_growth": sizes["measured"] / sizes["reference"],
        "ms_per_token": ms["measured"],
        "time_growth": ms["measured"] / ms["reference"],
        "body_parameters": body_parameters(model),
    }


def agreement_accuracy(params: Params, measure: Agreement, seed: int) -> dict[str, float]:
    from seqkeras.training import trainer

    data = agreement.build(
        agreement.Params(distance=measure.distance, n_train=measure.n_train, n_test=measure.n_test), seed
    )
    if params.model == "lstm":
        model = recurrent.build_classifier(
            recurrent.ClassifierParams(
                cell="lstm", units=params.width, embedding_dim=params.width, layers=params.layers
            ),
            data,
        )
    else:
        model = transformer.build_classifier(transformer_params(params), data)
    train = TrainSpec(
        epochs=measure.epochs,
        batch_size=measure.batch_size,
        optimizer=OptimizerSpec(learning_rate=measure.learning_rate, clipnorm=1.0),
        verbose=0,
    )
    history, seconds = trainer.fit(model, data, train, seed=seed)
    predictions = trainer.predict(model, data, measure.batch_size)
    return {
        "accuracy": metrics.accuracy(predictions),
        "final_train_loss": float(history["loss"].iloc[-1]),
        "body_parameters": body_parameters(model),
    }


def metric_names(params: Params) -> list[str]:
    """The metrics `run` reports for these parameters, known before it runs (tables and claims are checked
    against them)."""
    measured = {
        StepTime: ["step_ms", "us_per_token"],
        Agreement: ["accuracy", "final_train_loss"],
        Order: ["order_sensitivity"],
        GradientPath: ["grad_norm", "grad_norm_relative"],
        Generation: ["state_bytes", "state_bytes_per_context_token", "state_growth", "ms_per_token", "time_growth"],
    }[type(params.measure)]
    return measured + ["body_parameters"]


def run(params: Params, seed: int) -> ProbeResult:
    measure = params.measure
    if isinstance(measure, StepTime):
        return ProbeResult(step_time(params, measure, seed))
    if isinstance(measure, Agreement):
        return ProbeResult(agreement_accuracy(params, measure, seed))
    if isinstance(measure, Generation):
        return ProbeResult(generation(params, measure, seed))

    model = body(params, measure.seq_length)
    inputs = np.random.default_rng(seed).normal(size=(1, measure.seq_length, params.width)).astype("float32")
    if isinstance(measure, Order):
        return ProbeResult(
            {"order_sensitivity": order_sensitivity(model, inputs), "body_parameters": body_parameters(model)}
        )

    norms = gradient_path(model, inputs)
    k = measure.steps_back
    metrics = {
        "grad_norm": float(norms[k]),
        # Relative to one step back: the scale of the two architectures' outputs differs.
        "grad_norm_relative": float(norms[k] / norms[1]) if measure.seq_length > 1 and norms[1] > 0 else float("nan"),
        "body_parameters": body_parameters(model),
    }
    curve = pd.DataFrame({"steps_back": np.arange(len(norms)), "grad_norm": norms})
    return ProbeResult(metrics, curves={"gradient_path": curve})
