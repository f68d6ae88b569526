"""Evaluate a trained regressor: its test predictions become `RegressionOutputs`, scored by the run's metrics."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from seqkeras.evaluation import regression_metrics
from seqkeras.evaluation.metric_catalog import compute
from seqkeras.evaluation.regression_metrics import RegressionOutputs
from seqkeras.evaluation.rows import EvaluationRow
from seqkeras.tasks.base import REGRESSION, SequenceData


def outputs(predicted: np.ndarray, data: SequenceData) -> RegressionOutputs:
    """Predictions on the test set of `data`, as the regression metrics read them."""
    return RegressionOutputs(predicted=predicted, targets=data.y_test, train_targets=data.y_train)


def mse(predicted: np.ndarray, data: SequenceData) -> float:
    """The metric `mse` of predictions on the test set of `data`."""
    return regression_metrics.mse(outputs(predicted, data))


def baseline_mse(predicted: np.ndarray, data: SequenceData) -> float:
    """The metric `baseline_mse` for the test set of `data` (it does not depend on the predictions)."""
    return regression_metrics.baseline_mse(outputs(predicted, data))


def evaluate(model, data: SequenceData, run, folder: Path) -> list[EvaluationRow]:
    predicted = np.asarray(model.predict(data.x_test, batch_size=run.train.batch_size, verbose=0))
    return [EvaluationRow(compute(run.metrics, REGRESSION, outputs(predicted, data)))]
