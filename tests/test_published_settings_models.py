"""The model and training options that write published experiments exactly (built, not trained, but one tiny fit).

One-hot inputs (`input_encoding: one_hot`), N(0, σ²) input and recurrent kernels, RMSProp's rho, and the encoder-
decoder whose decoder reads the encoder's final output at every step (`decoder_reads: encoder_vector`: the Keras
addition example's Encoder → RepeatVector → Decoder). Each option left at its default keeps the run ids of the runs
made before it existed.
"""

from __future__ import annotations

import keras
import numpy as np
import pytest

from seqkeras.errors import SpecError
from seqkeras.kept.saving import keras_image
from seqkeras.spec.loader import build_experiment
from seqkeras.training.parameter_count import trained_parameters

TASK = {"name": "copy_memory", "lag": 5, "n_train": 16, "n_test": 4}


def runs_of(task: dict, model: dict, train: dict | None = None):
    raw = {"version": 1, "name": "published-options", "task": task, "model": model, "train": train or {"epochs": 1}}
    return build_experiment(raw, source="spec.yaml", overrides=[]).runs


def built(run):
    keras.utils.set_random_seed(0)
    data = run.task.component.builder(run.task.params, 0)
    return run.model.component.load()(run.model.params, data), data


def test_one_hot_inputs_are_the_fixed_identity_and_not_counted_as_trained_parameters():
    (run,) = runs_of(TASK, {"kind": "tagger", "units": 8, "input_encoding": "one_hot"})
    model, data = built(run)
    table = model.get_layer("embedding")
    vocabulary = len(data.vocabulary)
    assert not table.trainable and np.array_equal(table.get_weights()[0], np.eye(vocabulary))
    ids = np.array([[0, 2, 3]])
    assert np.array_equal(keras.ops.convert_to_numpy(table(ids))[0], np.eye(vocabulary)[[0, 2, 3]])
    assert keras.ops.convert_to_numpy(table.compute_mask(ids)).tolist() == [[False, True, True]]  # padding masked
    # What the run records as params: the LSTM on vocabulary-wide inputs and the softmax, not the V × V table.
    recurrent = 4 * (8 * (vocabulary + 8) + 8)
    assert trained_parameters(model) == recurrent + 8 * data.num_outputs + data.num_outputs
    assert model.count_params() == trained_parameters(model) + vocabulary**2


def test_a_learned_embedding_counts_all_its_weights_as_before():
    (run,) = runs_of(TASK, {"kind": "tagger", "units": 8})
    model, _ = built(run)
    assert trained_parameters(model) == model.count_params()


@pytest.mark.parametrize("cell", ["simple_rnn", "lstm", "gru"])
def test_random_normal_kernels_have_the_given_sigma(cell):
    (run,) = runs_of(TASK, {"kind": "tagger", "cell": cell, "units": 64, "input_encoding": "one_hot",
                            "kernel_initializer": "random_normal", "kernel_stddev": 0.1,
                            "recurrent_initializer": "random_normal", "recurrent_stddev": 0.001})
    model, _ = built(run)
    kernel, recurrent = model.get_layer(f"{cell}_0").get_weights()[:2]
    # Thousands of draws each: their standard deviations are within a few percent of σ, their means near 0.
    assert kernel.std() == pytest.approx(0.1, rel=0.05) and abs(kernel.mean()) < 0.01
    assert recurrent.std() == pytest.approx(0.001, rel=0.05) and abs(recurrent.mean()) < 1e-4


@pytest.mark.parametrize(("model", "train", "path", "words"), [
    ({"recurrent_initializer": "random_normal"}, None, "model", "needs recurrent_stddev"),
    ({"kernel_stddev": 0.1}, None, "model", "kernel_stddev applies only to kernel_initializer random_normal"),
    ({"input_encoding": "one_hot", "embedding_dim": 8}, None, "model", "embedding_dim does not apply"),
    ({"input_encoding": "one-hot"}, None, "model.input_encoding", "one_hot"),
    ({}, {"optimizer": {"name": "adam", "rho": 0.95}}, "train.optimizer", "rho applies only to name rmsprop"),
    ({}, {"optimizer": {"name": "adam", "momentum": 0.9}}, "train.optimizer", "momentum applies only"),
])
def test_a_wrong_combination_is_one_line_naming_the_key(model, train, path, words):
    with pytest.raises(SpecError) as caught:
        runs_of(TASK, {"kind": "tagger", **model}, train)
    assert caught.value.path == path and words in caught.value.message and "\n" not in caught.value.message


def test_a_regressor_refuses_an_input_encoding():
    with pytest.raises(SpecError) as caught:
        runs_of({"name": "adding", "length": 10}, {"kind": "regressor", "input_encoding": "one_hot"})
    assert "input_encoding does not apply to a regressor" in caught.value.message


def test_rho_reaches_keras_rmsprop():
    from seqkeras.training.settings import OptimizerSpec
    from seqkeras.training.trainer import make_optimizer

    optimizer = make_optimizer(OptimizerSpec(name="rmsprop", learning_rate=1e-3, rho=0.5, clipvalue=1.0))
    assert isinstance(optimizer, keras.optimizers.RMSprop)
    assert optimizer.rho == 0.5 and optimizer.clipvalue == 1.0
    assert make_optimizer(OptimizerSpec(name="rmsprop")).rho == 0.9  # unset: Keras's default


@pytest.mark.parametrize(("model", "train"), [
    ({"kind": "tagger"}, {"epochs": 1}),
    ({"kind": "tagger"}, {"epochs": 1, "optimizer": {"name": "rmsprop"}}),
])
def test_the_options_at_their_defaults_keep_the_run_ids(model, train):
    (before,) = runs_of(TASK, model, train)
    spelled = {"input_encoding": "embedding", "kernel_initializer": "glorot_uniform"}
    (after,) = runs_of(TASK, {**model, **spelled}, train)
    assert after.run_id == before.run_id


ADDITION = {"name": "addition", "max_length": 3, "operand_draw": "digit_strings", "pad_with_spaces": True,
            "reverse_source": True, "n_train": 64, "n_test": 16}
REPEAT_VECTOR = {"kind": "seq2seq", "units": 16, "attention": "none", "decoder_reads": "encoder_vector",
                 "input_encoding": "one_hot"}


@pytest.fixture(scope="module")
def repeat_vector():
    (run,) = runs_of(ADDITION, REPEAT_VECTOR)
    return built(run)


def test_the_encoder_vector_decoder_has_the_keras_example_s_weights(repeat_vector):
    """Its trained weights are exactly those of the example's Sequential model on the same vocabularies."""
    model, data = repeat_vector
    source, target, units = len(data.vocabulary), len(data.target_vocabulary), 16
    example = keras.Sequential([
        keras.Input((7, source)), keras.layers.LSTM(units), keras.layers.RepeatVector(4),
        keras.layers.LSTM(units, return_sequences=True), keras.layers.Dense(target, activation="softmax"),
    ])
    assert trained_parameters(model) == example.count_params()


def test_the_encoder_vector_decoder_reads_no_token_and_starts_from_zeros(repeat_vector):
    model, data = repeat_vector
    sources = data.x_test["source"][:3]
    encoded = model.encode(keras.ops.convert_to_tensor(sources))
    assert all(not np.any(keras.ops.convert_to_numpy(state)) for states in encoded["carry"]["states"]
               for state in states)
    steps = model.step_model(sources, data.start_id, data.end_id)
    fed_start, _ = steps.step(np.full(3, data.start_id), steps.start(3))
    fed_other, _ = steps.step(np.array([3, 4, 5]), steps.start(3))
    np.testing.assert_array_equal(fed_start, fed_other)


def test_teacher_forcing_and_free_running_compute_the_same_outputs(repeat_vector):
    """No output depends on another: the teacher-forced probabilities are the step model's, position by position."""
    model, data = repeat_vector
    inputs = {name: array[:2] for name, array in data.x_test.items()}
    forced = keras.ops.convert_to_numpy(model(inputs))
    steps = model.step_model(inputs["source"], data.start_id, data.end_id)
    state, rows = steps.start(2), []
    for _ in range(forced.shape[1]):
        log_probs, state = steps.step(np.full(2, 7), state)  # any token: it is not read
        rows.append(np.exp(log_probs))
    np.testing.assert_allclose(np.stack(rows, axis=1), forced, rtol=1e-5, atol=1e-6)


def test_encoder_vector_needs_attention_none():
    with pytest.raises(SpecError) as caught:
        runs_of(ADDITION, {**REPEAT_VECTOR, "attention": "bahdanau"})
    assert "decoder_reads encoder_vector needs attention none" in caught.value.message


def test_the_encoder_vector_model_is_kept_and_read_back(repeat_vector, tmp_path):
    model, data = repeat_vector
    path = tmp_path / "model.keras"
    path.write_bytes(keras_image(model))  # as a run keeps it: Keras's own classes named (on torch, not the fused)
    loaded = keras.saving.load_model(path)
    inputs = {name: array[:2] for name, array in data.x_test.items()}
    np.testing.assert_allclose(keras.ops.convert_to_numpy(loaded(inputs)),
                               keras.ops.convert_to_numpy(model(inputs)), rtol=1e-6)
    assert loaded.config["decoder_reads"] == "encoder_vector" and loaded.config["input_encoding"] == "one_hot"


@pytest.mark.parametrize("params_class", ["RegressorParams", "TaggerParams"])
def test_params_as_a_run_saves_them_validate_again(params_class):
    """A kept model's spec.yaml spells every key out (embedding_dim included): reading it back refuses nothing."""
    from seqkeras.models import recurrent, seq2seq_params

    for params in (getattr(recurrent, params_class)(units=8),
                   seq2seq_params.Seq2SeqParams(**{k: v for k, v in REPEAT_VECTOR.items() if k != "kind"})):
        assert type(params).model_validate(params.model_dump(mode="json")) == params
