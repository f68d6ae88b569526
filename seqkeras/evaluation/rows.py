"""Evaluate a trained model on the test set: one or more rows of metrics.

Most model kinds give one row (their metrics on the test predictions). Kinds
that decode (seq2seq, generation) give one row per decoder from the same
trained model; each row carries the keys that tell it apart (`decoder`, ...),
which become columns of runs.csv.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import keras

from seqkeras.evaluation.classification import CONFUSION_FILE, PER_CLASS_FILE, confusion_table, per_class_table
from seqkeras.evaluation.metric_catalog import compute
from seqkeras.results.folder import write_csv
from seqkeras.problems import problem_named
from seqkeras.tasks.base import SequenceData
from seqkeras.training import trainer


@dataclass
class EvaluationRow:
    metrics: dict[str, Any]
    keys: dict[str, Any] = field(default_factory=dict)  # e.g. {"decoder": "beam(width=5)", ...}


def evaluate_predictions(model: keras.Model, data: SequenceData, run, folder: Path) -> list[EvaluationRow]:
    """classifier / tagger: the run's metrics on the model's test predictions (a CRF's decided tags, where
    the model kind declares them). A classifier's run folder also gets confusion.csv and per_class.csv, whatever
    metrics it reports: files beside the record are not part of the run's spec, so its id stays the same."""
    abilities = run.model.component.abilities_for(run.model.params)
    predictions = trainer.predict(model, data, run.train.batch_size, abilities=abilities)
    if problem_named(data.problem).confusion_tables:
        write_csv(folder / CONFUSION_FILE, confusion_table(predictions))
        write_csv(folder / PER_CLASS_FILE, per_class_table(predictions))
    return [EvaluationRow(compute(run.metrics, data.problem, predictions))]


def validation_scorer(model: keras.Model, data: SequenceData, run) -> Callable[[Any, Any], dict[str, float]]:
    """`score(validation inputs, targets)`: run.train.validation_metrics' metrics of the model's predictions on the
    (first max_examples) validation examples, computed as the test's are (training.trainer.fit watches them)."""
    settings = run.train.validation_metrics
    abilities = run.model.component.abilities_for(run.model.params)

    def score(x, y) -> dict[str, float]:
        rows = slice(0, settings.max_examples)
        predictions = trainer.predict(model, data, run.train.batch_size, abilities=abilities, x=x[rows], y=y[rows])
        return compute(settings.metrics, data.problem, predictions)

    return score
