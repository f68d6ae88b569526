"""Language-modelling metrics: what a language model's scores of the test targets are worth.

Their input is `TargetScores`, the probability the model gives each test target
and its most probable token, [N, L] each: the language-model evaluator scores
the test windows batch by batch, so the full [N, L, V] distribution over a word
vocabulary is never held at once. The numbers are those of
`seqkeras.evaluation.metrics` on whole distributions: the same clipping, the
same mask (real input tokens), the same perplexity (`perplexity_of`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from seqkeras.evaluation.metrics import EPSILON, perplexity_of


@dataclass
class TargetScores:
    """A language model's scores of the test targets; `mask` marks the positions that count (real inputs)."""

    probabilities: np.ndarray  # [N, L] P(target) at every position
    predicted: np.ndarray  # [N, L] the most probable id at every position
    targets: np.ndarray  # [N, L]
    mask: np.ndarray  # [N, L] bool

    def real(self) -> int:
        """How many positions count (at least 1, so an empty test set divides by 1)."""
        return max(int(self.mask.sum()), 1)


def cross_entropy(scores: TargetScores) -> float:
    """Mean negative log-likelihood per real token, in nats."""
    nll = -np.log(np.clip(scores.probabilities, EPSILON, 1.0))
    return float(np.sum(nll * scores.mask) / scores.real())


def perplexity(scores: TargetScores) -> float:
    """exp(cross-entropy): a uniform model over V tokens scores exactly V."""
    return perplexity_of(cross_entropy(scores))


def token_accuracy(scores: TargetScores) -> float:
    """Share of real tokens whose most probable id is the target."""
    return float(np.sum((scores.predicted == scores.targets) & scores.mask) / scores.real())
