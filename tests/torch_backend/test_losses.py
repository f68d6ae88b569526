"""seqkeras/training/losses.py on the torch backend against Keras's own loss and accuracy."""

from __future__ import annotations

import math

import pytest

pytest.importorskip("torch", reason="torch is not installed (pip install -r requirements.txt)")

import keras
import numpy as np
import torch

from seqkeras.training import losses
from tests.torch_backend.common import (
    FEATURES,
    TOLERANCE,
    UNITS,
    padded_lm_data,
    scaled_difference,
)

WEIGHTS = torch.arange(12.0).reshape(3, 4)  # a different weight for each (row, step) of the loss


def logits_and_target():
    generator = torch.Generator().manual_seed(0)
    logits = torch.randn(3, 4, 7, generator=generator) * 3
    logits[0, 0, 2] = -200.0  # its probability underflows to 0: the loss must come from the logits
    target = torch.randint(0, 7, (3, 4), generator=generator)
    target[0, 0] = 2
    return logits, target


def loss_and_gradient(loss_of):
    """loss_of(logits) and the gradient of its weighted sum with respect to the logits."""
    logits, _ = logits_and_target()
    z = logits.clone().requires_grad_(True)
    loss = loss_of(z)
    (gradient,) = torch.autograd.grad((loss * WEIGHTS).sum(), [z])
    return [loss.detach().numpy(), gradient.numpy()]


def suite_softmax_crossentropy(z):
    """softmax_training: the suite's loss on probabilities that carry their logits."""
    _, target = logits_and_target()
    return losses.softmax_crossentropy(target, keras.activations.softmax(z))


def keras_crossentropy_from_logits(z):
    _, target = logits_and_target()
    return keras.losses.sparse_categorical_crossentropy(target, z, from_logits=True)


def test_softmax_crossentropy_loss_and_gradient_match_keras_from_logits():
    suite, keras_own = loss_and_gradient(suite_softmax_crossentropy), loss_and_gradient(keras_crossentropy_from_logits)
    assert scaled_difference(keras_own, suite) <= TOLERANCE


def test_an_underflowed_probability_gives_a_finite_loss_from_the_logits():
    loss, _ = loss_and_gradient(suite_softmax_crossentropy)
    assert math.isclose(float(loss[0, 0]), 203.066, rel_tol=1e-4)


def reused_probabilities():
    """The lean loop's variant: the same loss and gradient, the gradient written over the probabilities."""
    logits, target = logits_and_target()
    z = logits.clone().requires_grad_(True)
    probabilities = keras.activations.softmax(z)
    loss = losses.softmax_crossentropy(target, probabilities, reuse_probabilities=True)
    (gradient,) = torch.autograd.grad((loss * WEIGHTS).sum(), [z])
    return probabilities, loss, gradient


def test_reused_probabilities_give_the_same_loss_and_gradient_bit_for_bit():
    _, loss, gradient = reused_probabilities()
    found = [loss.detach().numpy(), gradient.numpy()]
    assert scaled_difference(loss_and_gradient(suite_softmax_crossentropy), found) == 0.0  # the same operations


def test_reused_probabilities_hold_the_gradient():
    probabilities, _, gradient = reused_probabilities()
    assert torch.equal(probabilities.detach(), gradient)  # no second (tokens, classes) tensor


def test_sparse_accuracy_matches_keras_and_ties_go_to_the_first_index():
    probabilities = torch.tensor([[0.2, 0.4, 0.4], [0.4, 0.4, 0.2], [0.1, 0.2, 0.7], [0.5, 0.3, 0.2]])
    labels = torch.tensor([2, 0, 1, 0])  # a tie lost to an earlier index, a tie won, a miss, a hit
    ours = losses.sparse_accuracy(labels, probabilities).numpy().tolist()
    keras_own = keras.metrics.sparse_categorical_accuracy(labels, probabilities).numpy().tolist()
    assert ours == keras_own == [0.0, 1.0, 0.0, 1.0]


@pytest.fixture(scope="module")
def train_step():
    """One training step of an LM with padding: Keras's loss and metric, then the suite's, from the same weights."""
    from seqkeras.models.recurrent import LanguageModelParams, build_lm
    from seqkeras.problems.language_modeling import PROBLEM
    from seqkeras.training.trainer import loss_and_metrics

    tokens, data = padded_lm_data(1)
    models, initial = [], None
    for compiled in ({"loss": "sparse_categorical_crossentropy", "weighted_metrics": ["accuracy"]}, loss_and_metrics()):
        model = build_lm(LanguageModelParams(cell="gru", units=UNITS, embedding_dim=FEATURES), data)
        model.compile(optimizer=keras.optimizers.Adam(1e-2), **compiled)
        initial = initial or model.get_weights()
        model.set_weights(initial)
        weights = PROBLEM.loss_weights(tokens, None)
        logs = model.train_on_batch(tokens, np.roll(tokens, -1, axis=1), sample_weight=weights, return_dict=True)
        models.append((model, logs))
    return models


def test_train_step_loss_matches_keras(train_step):
    (_, keras_logs), (_, suite_logs) = train_step
    assert math.isclose(keras_logs["loss"], suite_logs["loss"], rel_tol=TOLERANCE)


def test_train_step_accuracy_matches_keras(train_step):
    (_, keras_logs), (_, suite_logs) = train_step
    assert keras_logs["accuracy"] == suite_logs["accuracy"]


def test_train_step_weights_match_keras(train_step):
    (keras_model, _), (suite_model, _) = train_step
    assert scaled_difference(keras_model.get_weights(), suite_model.get_weights()) <= TOLERANCE
