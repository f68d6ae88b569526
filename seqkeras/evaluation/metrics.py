"""Test-set metrics, computed from the model's predictions in numpy.

Computing them here (instead of with Keras metric objects during evaluate)
makes padding explicit: every per-token metric uses the mask of real tokens,
so padding never counts, whatever the model kind.
"""

from __future__ import annotations

import numpy as np

from seqkeras.evaluation.tagging import entity_scores
from seqkeras.evaluation.tagging import invalid_transitions as count_invalid_transitions
from seqkeras.training.predictions import Predictions

# Probabilities are clipped before the log so a confident wrong prediction
# gives a large but finite loss instead of inf.
EPSILON = 1e-12


def accuracy(p: Predictions) -> float:
    return float(np.mean(p.predicted_ids() == p.targets))


def token_accuracy(p: Predictions) -> float:
    valid = p.valid()
    return float(np.sum((p.predicted_ids() == p.targets) & valid) / max(valid.sum(), 1))


def cross_entropy(p: Predictions) -> float:
    """Mean negative log-likelihood per (real) target, in nats."""
    chosen = np.take_along_axis(p.probabilities, p.targets[..., None], axis=-1)[..., 0]
    nll = -np.log(np.clip(chosen, EPSILON, 1.0))
    valid = p.valid()
    return float(np.sum(nll * valid) / max(valid.sum(), 1))


def perplexity(p: Predictions) -> float:
    """exp(cross-entropy): a uniform model over V tokens scores exactly V."""
    return perplexity_of(cross_entropy(p))


def perplexity_of(nats_per_token: float) -> float:
    """Perplexity from a cross-entropy in nats per token: the one definition every evaluator uses."""
    return float(np.exp(nats_per_token))


def tag_sequences(p: Predictions) -> tuple[list[list[str]], list[list[str]]]:
    """True and predicted tag names per sentence, padding removed."""
    valid = p.valid()
    predicted = p.predicted_ids()
    true, guess = [], []
    for row in range(len(p.targets)):
        keep = valid[row]
        true.append([p.labels[i] for i in p.targets[row][keep]])
        guess.append([p.labels[i] for i in predicted[row][keep]])
    return true, guess


# Entity-level scores (seqeval, conlleval's rules) of the predicted BIO tags; see seqkeras.evaluation.tagging.


def _entity_scores(p: Predictions) -> dict[str, float]:
    return entity_scores(*tag_sequences(p))


def entity_precision(p: Predictions) -> float:
    return _entity_scores(p)["entity_precision"]


def entity_recall(p: Predictions) -> float:
    return _entity_scores(p)["entity_recall"]


def entity_f1(p: Predictions) -> float:
    return _entity_scores(p)["entity_f1"]


def invalid_transitions(p: Predictions) -> float:
    """How many predicted I-X tags BIO forbids (after O, after another type, or first), over the test set."""

    return float(count_invalid_transitions(tag_sequences(p)[1]))
