"""Regression metrics: what a regressor's test predictions are worth, and what remembering nothing scores.

Their input is `RegressionOutputs`: the predicted numbers, the true ones, and
the training targets (the memoryless baseline predicts their mean).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

# Hochreiter & Schmidhuber 1997's criterion for the adding problem: a sequence is processed correctly when the
# absolute error at its end is below this (on the target scaled to [0, 1]: the adding task's hochreiter_1997).
SUCCESS_ERROR = 0.04


@dataclass
class RegressionOutputs:
    predicted: np.ndarray  # [N, 1] (any shape with N numbers)
    targets: np.ndarray  # [N, 1] the test targets
    train_targets: np.ndarray  # the training targets


def mse(outputs: RegressionOutputs) -> float:
    return float(np.mean((np.ravel(outputs.predicted) - np.ravel(outputs.targets)) ** 2))


def baseline_mse(outputs: RegressionOutputs) -> float:
    """Always predicting the training targets' mean: what a model that remembers nothing can reach."""
    return float(np.mean((np.mean(outputs.train_targets) - np.ravel(outputs.targets)) ** 2))


def success_rate(outputs: RegressionOutputs) -> float:
    """Share of test sequences whose absolute error is below 0.04 (Hochreiter & Schmidhuber 1997's criterion)."""
    errors = np.abs(np.ravel(outputs.predicted) - np.ravel(outputs.targets))
    return float(np.mean(errors < SUCCESS_ERROR)) if len(errors) else float("nan")
