"""`evaluate: {diagnostics: [gradient_flow]}`: the lesson's vanishing-gradient curve for a run's own recurrent layer.

What is checked: on the lesson's tanh RNN the diagnostic gives the probe's numbers;
its Python unroll is the layer's own computation (every cell, with padding); it
finds the first recurrent layer of every recurrent model kind (stacked,
bidirectional, the CRF tagger, the regressor); a run writes gradient_flow.csv,
the metrics and the plot, and trains exactly as it would without the diagnostic;
and validate refuses it on a model without a recurrent layer.
"""

from __future__ import annotations

import functools

import keras
import numpy as np
import pandas as pd
import pytest

from seqkeras.backends.precision import float64_computation
from seqkeras.errors import SpecError
from seqkeras.evaluation import gradient_flow
from seqkeras.models import recurrent
from seqkeras.probes import gradient_flow as probe
from seqkeras.spec.loader import build_experiment
from seqkeras.tasks import adding, bio_toy, delayed_recall
from tests.helpers import run_cli, run_with_and_without_gradient_flow

CELLS = {"simple_rnn": keras.layers.SimpleRNN, "lstm": keras.layers.LSTM, "gru": keras.layers.GRU}


def lesson_layer(W: np.ndarray) -> tuple[keras.Model, keras.layers.SimpleRNN]:
    """The lesson's h_t = tanh(W h_{t-1} + x_t) as the first (only) layer of a model fed the x_t directly."""
    d = W.shape[0]
    inputs = keras.Input(shape=(None, d), dtype="float64")
    layer = keras.layers.SimpleRNN(d, use_bias=False, dtype="float64")
    model = keras.Model(inputs, layer(inputs))
    layer.set_weights([np.eye(d), W.T])  # as the probe maps the lesson onto a Keras cell
    return model, layer


@pytest.mark.parametrize("radius, draw", [(0.8, 0), (1.0, 1), (1.2, 2)])
def test_on_the_lessons_rnn_the_diagnostic_gives_the_probes_numbers(radius, draw):
    params = probe.Params(spectral_radius=radius, draw=draw)
    W, x = probe.draw_weights(params, seed=0)
    expected = probe.gradient_norms(W, x, "tanh")
    model, layer = lesson_layer(W)

    np.testing.assert_allclose(gradient_flow.gradient_norms(layer, x[None]), expected, rtol=1e-6)
    np.testing.assert_allclose(gradient_flow.model_gradient_norms(model, x[None]), expected, rtol=1e-6)
    assert len(expected) == params.steps and expected[0] == pytest.approx(1.0)


@functools.cache
def embedded_recurrent_layer(cell: str) -> tuple[keras.Model, keras.layers.RNN]:
    """Token ids → Embedding (masking padding) → the cell's layer, seeded: one per cell, read by both of its tests
    below (which compile its predict once)."""
    keras.utils.set_random_seed(0)
    ids = keras.Input(shape=(None,), dtype="int32")
    layer = CELLS[cell](6)
    return keras.Model(ids, layer(keras.layers.Embedding(10, 5, mask_zero=True)(ids))), layer


@pytest.mark.parametrize("padded", [False, True], ids=["full", "padded"])
@pytest.mark.parametrize("cell", sorted(CELLS))
def test_the_unroll_is_the_layers_own_computation(cell, padded):
    tokens = np.array([[3, 1, 4, 1, 5, 9, 2], [2, 7, 1, 8, 2, 8, 1], [1, 6, 1, 8, 0, 0, 0]], dtype="int32")
    if not padded:
        tokens[2, 4:] = [3, 3, 9]
    model, layer = embedded_recurrent_layer(cell)

    inputs, mask = gradient_flow.layer_inputs(model, tokens)
    unrolled = keras.ops.convert_to_numpy(gradient_flow.unroll(layer, inputs, mask))
    np.testing.assert_allclose(unrolled, model.predict(tokens, verbose=0), atol=1e-5)
    np.testing.assert_allclose(
        unrolled, keras.ops.convert_to_numpy(layer(inputs, mask=mask)), atol=1e-5)


@pytest.mark.parametrize("cell", sorted(CELLS))
def test_the_gradient_is_the_whole_states_as_finite_differences_measure_it(cell):
    """For an LSTM the norm covers (h, c): the cell c is the path the lesson's gradient highway takes."""
    keras.utils.set_random_seed(1)
    layer = CELLS[cell](3, dtype="float64")
    inputs = np.random.default_rng(0).normal(size=(1, 5, 2))
    layer.build(inputs.shape)
    states = 2 if cell == "lstm" else 1
    g0 = np.ones(3) / np.sqrt(3)

    # Every perturbation at once, one per row of a batch: (step, column, ±epsilon) for each step and column of
    # the state, each row the same input sequence, so that one unroll gives every loss g0·h_T below.
    epsilon = 1e-6
    cases = [(step, column, sign) for step in range(5) for column in range(3 * states) for sign in (1, -1)]
    perturbations = [np.zeros((len(cases), 3 * states)) for _ in range(5)]
    for row, (step, column, sign) in enumerate(cases):
        perturbations[step][row, column] = sign * epsilon
    batch = np.repeat(inputs, len(cases), axis=0)
    with float64_computation():  # the layer's float64 on every backend (Keras on torch computes some in float32)
        losses = keras.ops.convert_to_numpy(gradient_flow.unroll(layer, batch, None, perturbations)) @ g0
    loss = {case: losses[row] for row, case in enumerate(cases)}
    by_differences = [
        np.linalg.norm([(loss[step, c, 1] - loss[step, c, -1]) / (2 * epsilon) for c in range(3 * states)])
        for step in range(5)
    ][::-1]
    np.testing.assert_allclose(gradient_flow.gradient_norms(layer, inputs), by_differences, rtol=1e-6)


def tiny_data(task, **options):
    return task.build(task.Params(n_train=8, n_test=40, **options), seed=0)


def test_it_follows_the_bottom_layer_of_a_stack_and_the_forward_direction_of_a_bidirectional_one():
    data = tiny_data(delayed_recall, lag=6)
    params = recurrent.ClassifierParams(cell="lstm", units=4, embedding_dim=3, layers=2, bidirectional=True)
    model = recurrent.build_classifier(params, data)

    layer, owner = gradient_flow.first_recurrent_layer(model)
    assert layer.name == "lstm_0" and owner is model
    inputs, mask = gradient_flow.layer_inputs(model, data.x_test[:5])
    embedded = model.get_layer("embedding")(data.x_test[:5])
    np.testing.assert_allclose(keras.ops.convert_to_numpy(inputs), keras.ops.convert_to_numpy(embedded))
    norms = gradient_flow.measure(model, data)
    assert norms.shape == (data.x_test.shape[1],) and np.all(np.isfinite(norms)) and np.all(norms > 0)
    forward = gradient_flow.forward_direction(layer)
    assert forward is layer.forward_layer and not forward.go_backwards
    np.testing.assert_allclose(norms, gradient_flow.gradient_norms(forward, *gradient_flow.layer_inputs(
        model, data.x_test[:gradient_flow.BATCH])), rtol=1e-6)


@pytest.mark.parametrize("kind", ["crf_tagger", "regressor"])
def test_it_finds_the_recurrent_layer_of_every_recurrent_kind(kind):
    if kind == "crf_tagger":
        data = tiny_data(bio_toy)
        model = recurrent.build_tagger(recurrent.TaggerParams(cell="gru", units=4, embedding_dim=3, output="crf"), data)
        assert (data.x_test == 0).any()  # sentences of different lengths: padded, and masked
    else:
        data = tiny_data(adding, length=9)
        model = recurrent.build_regressor(recurrent.RegressorParams(cell="simple_rnn", units=4), data)
    layer, _ = gradient_flow.first_recurrent_layer(model)
    assert isinstance(layer, keras.layers.RNN)
    norms = gradient_flow.measure(model, data)
    assert norms.shape == (data.x_test.shape[1],) and np.all(np.isfinite(norms)) and np.all(norms > 0)
    assert norms[0] == pytest.approx(1.0, rel=1e-5)


def test_the_metrics_are_the_fall_in_orders_of_magnitude_and_the_gradient_at_the_start():
    found = gradient_flow.summary(np.array([1.0, 0.1, 1e-3]), np.array([1.0, 0.5, 0.25]))
    assert list(found) == list(gradient_flow.METRICS)
    assert found["gradient_drop_init"] == pytest.approx(3.0)
    assert found["gradient_drop_trained"] == pytest.approx(np.log10(4))
    assert found["gradient_at_start_init"] == 1e-3 and found["gradient_at_start_trained"] == 0.25
    assert gradient_flow.drop(np.array([1.0, 0.0])) == np.inf  # vanished below what a float holds


def test_a_run_writes_the_curve_and_the_metrics_and_trains_as_without_it(write_spec, tmp_path, capsys):
    plain_run, run = run_with_and_without_gradient_flow(write_spec, capsys, tmp_path / "r", cell="gru", lag=5,
                                                        n_train=64)
    assert (run / "history.csv").read_text() == (plain_run / "history.csv").read_text()
    assert not (plain_run / "gradient_flow.csv").exists()

    curve = pd.read_csv(run / "gradient_flow.csv")
    assert list(curve.columns) == ["steps_back", "at_init", "trained"]
    assert list(curve["steps_back"]) == list(range(6))  # T = the signal and 5 distractors
    values = curve[["at_init", "trained"]].to_numpy()
    assert np.all(np.isfinite(values)) and np.all(values > 0)
    assert curve.loc[0, "at_init"] == pytest.approx(1.0, rel=1e-5)

    runs = pd.read_csv(tmp_path / "r" / "diagnosed" / "runs.csv")
    for name in gradient_flow.METRICS:
        assert np.isfinite(runs.loc[0, name]), name
    assert runs.loc[0, "gradient_drop_init"] == pytest.approx(
        np.log10(curve["at_init"].iloc[0] / curve["at_init"].iloc[-1])
    )
    assert runs.loc[0, "gradient_at_start_trained"] == pytest.approx(curve["trained"].iloc[-1])
    assert "gradient_flow.png" in (tmp_path / "r" / "diagnosed" / "plots.json").read_text()


def test_validate_knows_the_metrics_the_diagnostic_adds():
    raw = {"version": 1, "name": "x", "task": {"name": "delayed_recall", "lag": 3},
           "model": {"kind": "classifier", "cell": "lstm"}, "table": {"rows": "seed", "value": "gradient_drop_trained"}}
    with pytest.raises(SpecError, match="do not report 'gradient_drop_trained'"):
        build_experiment(raw, source="x.yaml", overrides=[])
    experiment = build_experiment({**raw, "evaluate": {"diagnostics": ["gradient_flow"]}}, source="x.yaml",
                                  overrides=[])
    assert experiment.runs[0].diagnostics == ["gradient_flow"]
    without = build_experiment({**raw, "table": {"rows": "seed", "value": "accuracy"}}, source="x.yaml", overrides=[])
    assert "diagnostics" not in without.runs[0].resolved["evaluate"]  # runs that do not ask keep their ids


@pytest.mark.parametrize("task, model", [
    ({"name": "char_lm"}, {"kind": "transformer"}),
    ({"name": "delayed_recall"}, {"kind": "transformer_classifier"}),
    ({"name": "char_lm"}, {"kind": "nplm"}),
    ({"name": "char_lm"}, {"kind": "ngram"}),
    ({"name": "reverse"}, {"kind": "seq2seq"}),
])
def test_a_model_without_a_recurrent_layer_is_refused(task, model):
    raw = {"version": 1, "name": "x", "task": task, "model": model, "evaluate": {"diagnostics": ["gradient_flow"]}}
    with pytest.raises(SpecError) as error:
        build_experiment(raw, source="x.yaml", overrides=[])
    assert error.value.path == "evaluate.diagnostics[0]"
    assert f"model kind {model['kind']!r} has none" in error.value.message


def test_validate_refuses_it_on_a_transformer_naming_the_key(write_spec, capsys):
    spec = write_spec("""
        version: 1
        name: transformer-gradients
        task: {name: char_lm}
        model: {kind: transformer}
        evaluate: {diagnostics: [gradient_flow]}
    """)
    code, out, err = run_cli(capsys, "validate", spec)
    assert code == 2
    assert "evaluate.diagnostics" in out + err and "recurrent layer" in out + err


@pytest.mark.parametrize("diagnostics, phrase", [
    (["gradient_flows"], "Did you mean 'gradient_flow'?"),
    (["gradient_flow", "gradient_flow"], "diagnostics must not repeat"),
])
def test_diagnostic_mistakes_are_clear(diagnostics, phrase):
    raw = {"version": 1, "name": "x", "task": {"name": "delayed_recall"}, "model": {"kind": "classifier"},
           "evaluate": {"diagnostics": diagnostics}}
    with pytest.raises(SpecError, match=phrase) as error:
        build_experiment(raw, source="x.yaml", overrides=[])
    assert error.value.path.startswith("evaluate.diagnostics")
