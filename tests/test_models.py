"""Model builders: textbook parameter counts, bidirectional width, masking, forget bias."""

from __future__ import annotations

import keras
import numpy as np
import pytest

from seqkeras.training.predictions import Predictions
from seqkeras.evaluation.metrics import perplexity, token_accuracy
from seqkeras.layers.initializers import BlockIdentity, GateBias, SpectralNormal
from seqkeras.models.cells import textbook_parameter_count
from seqkeras.models.recurrent import (
    ClassifierParams,
    LanguageModelParams,
    TaggerParams,
    build_classifier,
    build_lm,
    build_tagger,
)
from seqkeras.tasks import bio_toy, delayed_recall
from seqkeras.tasks.base import SequenceData, Vocabulary
from tests.helpers import assert_config_round_trip


def tiny_data(problem="classification", vocabulary=20, classes=3) -> SequenceData:
    x = np.ones((4, 6), dtype=np.int32)
    y = np.zeros((4,), dtype=np.int32)
    labels = None if problem == "language_modeling" else Vocabulary([f"c{i}" for i in range(classes)])
    return SequenceData(problem, x, y, x, y, Vocabulary([f"t{i}" for i in range(vocabulary)]), labels)


@pytest.mark.parametrize("cell", ["simple_rnn", "lstm", "gru"])
@pytest.mark.parametrize(("embedding", "units"), [(8, 5), (3, 16)])
def test_parameter_counts_match_textbook_formulas(cell, embedding, units):
    model = build_classifier(ClassifierParams(cell=cell, units=units, embedding_dim=embedding), tiny_data())
    recurrent = model.get_layer(f"{cell}_0")
    assert recurrent.count_params() == textbook_parameter_count(cell, embedding, units)


def test_lstm_formula_is_four_gates():
    assert textbook_parameter_count("lstm", 10, 7) == 4 * (7 * (10 + 7) + 7)


def test_stacked_layers_take_the_previous_width():
    model = build_classifier(ClassifierParams(cell="gru", units=6, embedding_dim=4, layers=3), tiny_data())
    counts = [model.get_layer(f"gru_{i}").count_params() for i in range(3)]
    assert counts == [textbook_parameter_count("gru", 4, 6)] + [textbook_parameter_count("gru", 6, 6)] * 2


@pytest.mark.parametrize("merge_mode,factor", [("concat", 2), ("sum", 1)])
def test_bidirectional_width(merge_mode, factor):
    params = TaggerParams(cell="lstm", units=5, bidirectional=True, merge_mode=merge_mode)
    model = build_tagger(params, tiny_data("tagging"))
    assert model.get_layer("lstm_0").output.shape[-1] == 5 * factor
    single = build_tagger(TaggerParams(cell="lstm", units=5), tiny_data("tagging"))
    assert single.get_layer("lstm_0").output.shape[-1] == 5
    assert model.get_layer("lstm_0").count_params() == 2 * single.get_layer("lstm_0").count_params()


def test_tagger_outputs_ignore_padding():
    keras.utils.set_random_seed(0)
    model = build_tagger(TaggerParams(cell="gru", units=4, bidirectional=True), tiny_data("tagging"))
    short = np.array([[3, 4, 5]], dtype=np.int32)
    padded = np.array([[3, 4, 5, 0, 0, 0, 0]], dtype=np.int32)
    # The backward direction starts at the last REAL token, so padding changes nothing.
    np.testing.assert_allclose(model.predict(short, verbose=0)[0], model.predict(padded, verbose=0)[0, :3], atol=1e-6)


def test_token_metrics_count_only_real_tokens():
    probabilities = np.zeros((1, 4, 3))
    probabilities[0, :, 1] = 1.0  # always predicts class 1
    targets = np.array([[1, 1, 0, 0]])
    mask = np.array([[True, True, False, False]])
    assert token_accuracy(Predictions(probabilities, targets, mask)) == 1.0
    assert token_accuracy(Predictions(probabilities, targets, None)) == 0.5


def test_perplexity_of_a_uniform_model_is_the_vocabulary_size():
    vocabulary = 37
    probabilities = np.full((5, 8, vocabulary), 1 / vocabulary)
    targets = np.random.default_rng(0).integers(vocabulary, size=(5, 8))
    assert perplexity(Predictions(probabilities, targets, np.ones((5, 8), bool))) == pytest.approx(vocabulary)


def test_language_model_cannot_be_bidirectional():
    with pytest.raises(ValueError, match="cannot be bidirectional"):
        LanguageModelParams(bidirectional=True)


def test_lm_predicts_a_distribution_per_position():
    data = tiny_data("language_modeling", vocabulary=11)
    model = build_lm(LanguageModelParams(cell="simple_rnn", units=4), data)
    out = model.predict(np.ones((2, 5), np.int32), verbose=0)
    assert out.shape == (2, 5, 11)
    np.testing.assert_allclose(out.sum(-1), 1.0, atol=1e-5)


def test_forget_bias_sets_only_the_forget_slice_and_serializes():
    model = build_classifier(ClassifierParams(cell="lstm", units=3, forget_bias=5.0), tiny_data())
    bias = model.get_layer("lstm_0").get_weights()[2]
    np.testing.assert_array_equal(bias, [0, 0, 0, 5, 5, 5, 0, 0, 0, 0, 0, 0])
    for initializer in (GateBias(4, {1: 2.5}), GateBias(3, {0: "chrono"}, max_lag=50, seed=1),
                        SpectralNormal(0.9, seed=3), BlockIdentity(0.5)):
        _, restored = assert_config_round_trip(initializer)
        assert restored.get_config() == initializer.get_config()


def spectral_radius(matrix) -> float:
    return float(np.max(np.abs(np.linalg.eigvals(matrix))))


@pytest.mark.parametrize("cell, gates", [("simple_rnn", 1), ("lstm", 4), ("gru", 3)])
def test_recurrent_initializers_give_each_gate_the_stated_matrix(cell, gates):
    units = 6
    for options, check in (
        ({"recurrent_initializer": "normal", "spectral_radius": 0.9},
         lambda block: spectral_radius(block) == pytest.approx(0.9)),
        ({"recurrent_initializer": "normal"}, lambda block: spectral_radius(block) == pytest.approx(1.0)),
        ({"recurrent_initializer": "identity", "identity_scale": 0.5},
         lambda block: np.allclose(block, 0.5 * np.eye(units))),
    ):
        model = build_classifier(ClassifierParams(cell=cell, units=units, **options), tiny_data())
        kernel = model.get_layer(f"{cell}_0").get_weights()[1]
        assert kernel.shape == (units, gates * units)
        for gate in range(gates):
            assert check(kernel[:, gate * units:(gate + 1) * units]), (cell, options, gate)
    # Keras's default: the whole (units, gates·units) kernel has orthonormal rows
    kernel = (build_classifier(ClassifierParams(cell=cell, units=units), tiny_data())
              .get_layer(f"{cell}_0").get_weights()[1])
    np.testing.assert_allclose(kernel @ kernel.T, np.eye(units), atol=1e-5)


def test_gate_biases_decide_the_memory_at_the_start():
    data = tiny_data()
    gru = build_classifier(ClassifierParams(cell="gru", units=3, update_bias=3.0), data).get_layer("gru_0")
    bias = gru.get_weights()[2]  # (2, 3·units): input and recurrent bias; update, reset, candidate
    np.testing.assert_array_equal(bias, [[3, 3, 3, 0, 0, 0, 0, 0, 0], [0] * 9])
    keras.utils.set_random_seed(0)
    lstm = build_classifier(ClassifierParams(cell="lstm", units=400, chrono=100), data).get_layer("lstm_0")
    bias = lstm.get_weights()[2]
    forget, input_gate = bias[400:800], bias[:400]
    assert np.all(forget >= 0) and np.all(forget <= np.log(99) + 1e-6) and forget.std() > 0.5
    np.testing.assert_allclose(input_gate, -forget)
    np.testing.assert_array_equal(bias[800:], 0)
    keras.utils.set_random_seed(0)
    again = build_classifier(ClassifierParams(cell="lstm", units=400, chrono=100), data).get_layer("lstm_0")
    np.testing.assert_array_equal(again.get_weights()[2], bias)  # the run's seed decides the draw
    gru = build_classifier(ClassifierParams(cell="gru", units=50, chrono=20), data).get_layer("gru_0")
    update = gru.get_weights()[2][0, :50]
    assert np.all(update >= 0) and np.all(update <= np.log(19) + 1e-6)


def test_irnn_is_a_relu_simple_rnn_with_identity_recurrence():
    layer = build_classifier(ClassifierParams(cell="simple_rnn", units=4, activation="relu",
                                              recurrent_initializer="identity"), tiny_data()).get_layer("simple_rnn_0")
    assert layer.cell.activation.__name__ == "relu"
    np.testing.assert_array_equal(layer.get_weights()[1], np.eye(4))


@pytest.mark.parametrize("options, message", [
    ({"cell": "lstm", "update_bias": 1.0}, "update_bias applies only to cell gru"),
    ({"cell": "gru", "forget_bias": 1.0}, "forget_bias applies only to cell lstm"),
    ({"cell": "simple_rnn", "chrono": 10}, "chrono applies only to cells lstm and gru"),
    ({"cell": "lstm", "chrono": 10, "forget_bias": 2.0}, "not both"),
    ({"cell": "lstm", "activation": "relu"}, "activation applies only to cell simple_rnn"),
    ({"cell": "gru", "spectral_radius": 0.9}, "spectral_radius applies only to recurrent_initializer normal"),
    ({"cell": "gru", "recurrent_initializer": "normal", "identity_scale": 2.0}, "identity_scale applies only"),
])
def test_init_options_belong_to_their_cell(options, message):
    with pytest.raises(ValueError, match=message):
        ClassifierParams(**options)


def test_task_generators_are_seeded():
    params = delayed_recall.Params(lag=4, n_train=10, n_test=5)
    a, b = delayed_recall.build(params, 3), delayed_recall.build(params, 3)
    np.testing.assert_array_equal(a.x_train, b.x_train)
    assert not np.array_equal(a.x_train, delayed_recall.build(params, 4).x_train)
    # the label is the first token
    first_tokens = [a.vocabulary.tokens[i] for i in a.x_train[:, 0]]
    assert first_tokens == [a.labels.tokens[i] for i in a.y_train]


def test_bio_toy_contains_the_lessons_sentence_pattern():
    data = bio_toy.build(bio_toy.Params(n_train=400, n_test=10), 0)
    tags = data.labels.tokens
    sentences = {
        " ".join(data.vocabulary.decode(x)): [tags[t] for t in y if t]
        for x, y in zip(data.x_train, data.y_train)
    }
    assert sentences.get("Ada Lovelace visited London") == ["B-PER", "I-PER", "O", "B-LOC"]
