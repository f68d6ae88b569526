"""The fused recurrent layers (seqkeras/backends/torch/fused_rnn.py) against Keras's, with the same weights.

Outputs, final states, gradients with respect to the inputs and every weight:
the largest difference, relative to each tensor's scale where that exceeds 1.
Also when they fall back to Keras's loop and what they say, and their config.
"""

from __future__ import annotations

import pytest

pytest.importorskip("torch", reason="torch is not installed (pip install -r requirements.txt)")

import keras
import numpy as np
import torch

from seqkeras.backends import runtime
from seqkeras.backends.torch import fused_dense, fused_rnn
from tests.helpers import assert_config_round_trip
from tests.torch_backend.common import (
    BATCH,
    FEATURES,
    KERAS,
    STEPS,
    TOLERANCE,
    UNITS,
    largest_difference,
    outputs_and_gradients,
    padded_lm_data,
    padded_mask,
    said,
    scaled_difference,
    twins,
)


def initial_states(kind: str) -> list[torch.Tensor]:
    return [torch.tensor(np.random.default_rng(2).normal(size=(BATCH, UNITS)).astype("float32"))
            for _ in range(2 if kind == "lstm" else 1)]


def sequences_and_states(backwards: bool, masked: bool):
    def compare(kind):
        pair = twins(kind, return_sequences=True, return_state=True, go_backwards=backwards)
        return largest_difference(*pair, mask=padded_mask() if masked else None)

    return compare


def bidirectional(sequences: bool):
    def compare(kind):
        pair = twins(kind, wrap=keras.layers.Bidirectional, return_sequences=sequences)
        return largest_difference(*pair, mask=padded_mask())

    return compare


CASES = {
    **{f"{'masked' if masked else 'unmasked'} {'backwards' if backwards else 'forwards'}":
       sequences_and_states(backwards, masked) for masked in (False, True) for backwards in (False, True)},
    "masked zero_output_for_mask": lambda kind: largest_difference(
        *twins(kind, return_sequences=True, zero_output_for_mask=True), mask=padded_mask()),
    **{f"bidirectional masked return_sequences={sequences}": bidirectional(sequences) for sequences in (True, False)},
    "dropout, inference": lambda kind: largest_difference(
        *twins(kind, return_sequences=True, dropout=0.5), mask=padded_mask()),
    # Seeded layers draw the same dropout mask: the fused layer draws it as Keras's RNN.call does.
    "dropout, training": lambda kind: largest_difference(
        *twins(kind, return_sequences=True, dropout=0.5, seed=3), mask=padded_mask(), training=True),
    # A given initial state: the layer takes Keras's RNN.call, then the fused kernel from that state.
    "masked, initial state given": lambda kind: largest_difference(
        *twins(kind, return_sequences=True, return_state=True), mask=padded_mask(), initial_state=initial_states(kind)),
}


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("kind", KERAS)
def test_fused_layer_matches_keras_forward_and_gradients(kind, case):
    assert CASES[case](kind) <= TOLERANCE


def keras_layers_only(build, params, data):
    """The same model built on Keras's own recurrent and Dense layers."""
    originals = fused_rnn.layer_class, fused_dense.layer_class
    fused_rnn.layer_class = lambda cell_class: cell_class
    fused_dense.layer_class = lambda: keras.layers.Dense
    try:
        return build(params, data)
    finally:
        fused_rnn.layer_class, fused_dense.layer_class = originals


def all_layers(model):
    for layer in model.layers:
        yield layer
        yield from (getattr(layer, name) for name in ("forward_layer", "backward_layer") if hasattr(layer, name))


def model_difference(generic, fused, tokens) -> float:
    found = []
    for model in (generic, fused):
        probabilities = model(torch.tensor(tokens))
        loss = -torch.log(probabilities).mean()
        gradients = torch.autograd.grad(loss, [w.value for w in model.trainable_weights])
        found.append([probabilities.detach().numpy(), *(g.numpy() for g in gradients)])
    # Probabilities ~1/20 and gradients ~1e-3: relative to each tensor's own scale, however small.
    return scaled_difference(*found, floor=1e-12)


@pytest.mark.parametrize("model", ["lm", "bidirectional classifier"])
@pytest.mark.parametrize("kind", KERAS)
def test_suite_model_with_fused_layers_matches_keras_layers(kind, model):
    """The suite's builders, 2 stacked layers, right-padded token ids: fast versus Keras's layers (RNNs, Dense)."""
    from seqkeras.models.recurrent import (
        ClassifierParams,
        LanguageModelParams,
        build_classifier,
        build_lm,
    )

    tokens, data = padded_lm_data(0)
    build, params = {
        "lm": (build_lm, LanguageModelParams(cell=kind, units=UNITS, layers=2, embedding_dim=FEATURES)),
        "bidirectional classifier": (build_classifier, ClassifierParams(
            cell=kind, units=UNITS, layers=2, embedding_dim=FEATURES, bidirectional=True)),
    }[model]
    keras.utils.set_random_seed(0)
    fused = build(params, data)
    generic = keras_layers_only(build, params, data)
    generic.set_weights(fused.get_weights())
    fast = (fused_rnn.FusedRNNMixin, fused_dense.FusedDense)
    assert sum(isinstance(layer, fast) for layer in all_layers(fused)) >= 3
    assert not any(isinstance(layer, fast) for layer in all_layers(generic))
    assert model_difference(generic, fused, tokens) <= TOLERANCE


def uses_fused_kernel(layer, mask) -> bool:
    """Whether the layer's call reaches PyTorch's kernel (the generic loop never calls fused_rnn)."""
    from seqkeras.backends.torch import rnn_kernels

    calls = []
    original = rnn_kernels.fused_rnn
    rnn_kernels.fused_rnn = lambda *args, **kwargs: calls.append(1) or original(*args, **kwargs)
    try:
        layer(torch.zeros(BATCH, STEPS, FEATURES), mask=mask)
    finally:
        rnn_kernels.fused_rnn = original
    return bool(calls)


# Where the fused path cannot apply, the layer takes Keras's loop (same numbers) and says why, once.


def test_recurrent_dropout_takes_keras_loop_and_says_so_once():
    runtime.NOTED.clear()
    _, fused = twins("lstm", return_sequences=True, recurrent_dropout=0.3)
    assert fused.fused_blocker() == "with recurrent_dropout > 0"
    uses_fused, note = said(lambda: uses_fused_kernel(fused, padded_mask()))
    assert uses_fused is False
    assert "lstm layers with recurrent_dropout > 0 step Keras's loop" in note
    _, note_again = said(lambda: uses_fused_kernel(fused, padded_mask()))
    assert note_again == ""


def test_mask_with_holes_takes_keras_loop_says_so_and_gives_keras_numbers():
    runtime.NOTED.clear()
    generic, fused = twins("gru", return_sequences=True)
    holes = torch.tensor([[True, False, True, True, False, False]] * BATCH)  # a masked step between real ones
    uses_fused, note = said(lambda: uses_fused_kernel(fused, holes))
    assert uses_fused is False
    assert "not right padding" in note
    assert largest_difference(generic, fused, mask=holes) <= TOLERANCE


def test_right_padding_takes_the_fused_kernel():
    _, fused = twins("gru", return_sequences=True)
    assert uses_fused_kernel(fused, padded_mask()) is True


@pytest.mark.parametrize("kind, return_state, packs", [("lstm", False, False), ("lstm", True, True),
                                                       ("simple_rnn", True, False)])
def test_on_a_cpu_only_an_lstms_final_c_over_padding_needs_packing(kind, return_state, packs, monkeypatch):
    """PyTorch's packed CPU kernels are unfused: the kernel runs over the padding unless an LSTM must return its
    final c, which is not an output (the numbers: test_fused_layer_matches_keras_forward_and_gradients)."""
    from seqkeras.backends.torch import rnn_kernels

    packed = []
    original = rnn_kernels.pack_padded_sequence
    monkeypatch.setattr(rnn_kernels, "pack_padded_sequence", lambda *a, **k: packed.append(1) or original(*a, **k))
    _, fused = twins(kind, return_sequences=True, return_state=return_state)
    fused(torch.zeros(BATCH, STEPS, FEATURES), mask=padded_mask())
    assert bool(packed) is packs


def test_dropout_in_training_changes_the_output():
    # The draws themselves are compared with Keras's in test_fused_layer_matches_keras_forward_and_gradients.
    _, fused = twins("lstm", return_sequences=True, dropout=0.5, seed=3)
    x = np.random.default_rng(0).normal(size=(BATCH, STEPS, FEATURES)).astype("float32")
    inference, training = (outputs_and_gradients(fused, x, padded_mask(), mode) for mode in (False, True))
    assert scaled_difference(inference, training) > 0.01


@pytest.mark.parametrize("make", [
    lambda: fused_rnn.FusedGRU(UNITS, return_sequences=True, go_backwards=True, name="g"),
    lambda: fused_dense.FusedDense(UNITS, activation="softmax", name="d"),
], ids=["FusedGRU", "FusedDense"])
def test_fused_layer_config_round_trip(make):
    assert_config_round_trip(make())


INITIAL_WEIGHTS = {
    "simple_rnn": [{"recurrent_initializer": "normal", "spectral_radius": 0.9},
                   {"recurrent_initializer": "identity", "identity_scale": 0.5}],
    "lstm": [{"chrono": 50}, {"forget_bias": 5.0, "recurrent_initializer": "glorot_uniform"}],
    "gru": [{"update_bias": 3.0}, {"chrono": 50, "recurrent_initializer": "normal", "spectral_radius": 1.2}],
}


@pytest.mark.parametrize("kind", KERAS)
def test_a_fused_model_starts_from_the_weights_keras_layers_start_from(kind):
    """The spec's initialization knobs give the fused path and Keras's layers the same starting weights."""
    from seqkeras.models.recurrent import ClassifierParams, build_classifier

    _, data = padded_lm_data(0)
    data = type(data)("classification", data.x_train, data.y_train[:, 0], data.x_test, data.y_test[:, 0],
                      data.vocabulary)
    for options in INITIAL_WEIGHTS[kind]:
        params = ClassifierParams(cell=kind, units=UNITS, embedding_dim=FEATURES, **options)
        keras.utils.set_random_seed(3)
        fused = build_classifier(params, data)
        keras.utils.set_random_seed(3)
        generic = keras_layers_only(build_classifier, params, data)
        assert isinstance(fused.get_layer(f"{kind}_0"), fused_rnn.FusedRNNMixin)
        assert not isinstance(generic.get_layer(f"{kind}_0"), fused_rnn.FusedRNNMixin)
        for a, b in zip(fused.get_layer(f"{kind}_0").get_weights(), generic.get_layer(f"{kind}_0").get_weights()):
            np.testing.assert_array_equal(a, b)


# An encoder-decoder's decoder without Bahdanau attention: each layer over the whole target in one kernel call.

SEQ2SEQ_CASES = {
    "lstm, 2 layers, no attention": dict(cell="lstm", layers=2, attention="none"),
    "gru, luong attention": dict(cell="gru", attention="luong"),
    "gru encoder, lstm decoder, luong with layer norm": dict(cell="gru", decoder_cell="lstm", attention="luong",
                                                             luong_layer_norm=True),
    "simple_rnn, bidirectional, reads the encoder's vector": dict(cell="simple_rnn", bidirectional=True,
                                                                   attention="none", decoder_reads="encoder_vector"),
}


@pytest.mark.parametrize("case", SEQ2SEQ_CASES)
def test_an_encoder_decoder_decodes_the_target_in_one_fused_pass_with_the_step_loops_numbers(case, monkeypatch):
    from seqkeras.backends import layer_classes
    from seqkeras.models.seq2seq import Seq2SeqModel

    keras.utils.set_random_seed(0)
    # No dropout: torch draws a mask in the memory order of the tensor it drops, and the step loop's outputs are a
    # transposed view, so the same draws would fall on other positions.
    model = Seq2SeqModel(9, 11, units=UNITS, embedding_dim=FEATURES, **SEQ2SEQ_CASES[case])
    rng = np.random.default_rng(0)
    source = torch.tensor([[3, 4, 5, 6, 2], [7, 8, 0, 0, 0], [5, 0, 0, 0, 0]])  # right padding, as tasks give it
    target = torch.tensor(rng.integers(2, 11, size=(3, 4)))
    model({"source": source, "decoder_input": target})  # built by the step loop

    def logits_weights_and_gradients():
        logits, weights = model.teacher_forced(source, target, training=True)
        loss = (logits * torch.randn(logits.shape, generator=torch.Generator().manual_seed(2))).sum()
        gradients = torch.autograd.grad(loss, [w.value for w in model.trainable_weights], allow_unused=True)
        values = [logits, *(g for g in gradients if g is not None)] + ([weights] if weights is not None else [])
        return [value.detach().numpy() for value in values]

    calls = []
    original = layer_classes.cell_over_sequence
    monkeypatch.setattr(layer_classes, "cell_over_sequence",
                        lambda cell, inputs: calls.append(cell) or original(cell, inputs))
    fused = logits_weights_and_gradients()
    assert len(calls) == model.config["layers"] and all(  # every decoder layer took the kernel
        original(cell, torch.zeros(1, 1, cell.kernel.shape[0])) is not None for cell in calls)
    monkeypatch.setattr(layer_classes, "cell_over_sequence", lambda cell, inputs: None)
    stepped = logits_weights_and_gradients()
    assert scaled_difference(stepped, fused, floor=1e-12) <= TOLERANCE


def test_bahdanau_attention_and_cells_with_input_dropout_keep_the_step_loop():
    from seqkeras.backends import layer_classes
    from seqkeras.models.seq2seq import Seq2SeqModel

    model = Seq2SeqModel(9, 11, units=UNITS, embedding_dim=FEATURES, attention="bahdanau")
    source, target = torch.tensor([[3, 4, 0]]), torch.tensor([[2, 5]])
    model({"source": source, "decoder_input": target})
    assert model.decoded_in_one_pass(torch.zeros(1, 2, FEATURES), model.encode(source)) is None
    cell = keras.layers.LSTMCell(UNITS, dropout=0.5)
    cell.build((1, FEATURES))
    assert layer_classes.cell_over_sequence(cell, torch.zeros(1, 2, FEATURES)) is None
    unbuilt = keras.layers.LSTMCell(UNITS)
    assert layer_classes.cell_over_sequence(unbuilt, torch.zeros(1, 2, FEATURES)) is None
