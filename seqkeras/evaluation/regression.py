"""Evaluate a trained regressor: the mean squared error on the test set, and the memoryless baseline's."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from seqkeras.evaluation.rows import EvaluationRow
from seqkeras.tasks.base import SequenceData


def mse(predicted: np.ndarray, data: SequenceData) -> float:
    return float(np.mean((np.ravel(predicted) - np.ravel(data.y_test)) ** 2))


def baseline_mse(predicted: np.ndarray, data: SequenceData) -> float:
    """Always predicting the training targets' mean: what a model that remembers nothing can reach."""
    return float(np.mean((np.mean(data.y_train) - np.ravel(data.y_test)) ** 2))


METRICS = {"mse": mse, "baseline_mse": baseline_mse}


def evaluate(model, data: SequenceData, run, folder: Path) -> list[EvaluationRow]:
    predicted = np.asarray(model.predict(data.x_test, batch_size=run.train.batch_size, verbose=0))
    return [EvaluationRow({name: METRICS[name](predicted, data) for name in run.metrics})]
