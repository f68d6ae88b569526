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


def validation_scorer(model, data: SequenceData, run):
    """`score(validation steps, their targets)`: run.train.validation_metrics' metrics (mse, success_rate, ...) of
    the predictions on the (first max_examples) validation sequences, as the test's are computed, for the trainer
    to watch and a study to tune on."""
    settings = run.train.validation_metrics

    def score(x: np.ndarray, y: np.ndarray) -> dict[str, float]:
        x, y = x[: settings.max_examples], y[: settings.max_examples]
        predicted = np.asarray(model.predict(x, batch_size=run.train.batch_size, verbose=0))
        return compute(settings.metrics, REGRESSION,
                       RegressionOutputs(predicted=predicted, targets=y, train_targets=data.y_train))

    return score
