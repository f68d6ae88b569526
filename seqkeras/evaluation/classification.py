"""Classification by class: counts of true × predicted labels, each class's precision, recall and F1, their macro means.

A class counts in a macro mean when it is in the test labels or in the
predictions (scikit-learn's default `labels`). A class with no prediction has
precision 0, one with no test example recall 0, and F1 is 2·TP / (2·TP + FP + FN),
0 without a true positive (scikit-learn's `zero_division=0`): a model that never
predicts a class is not rewarded for it. Every number is a share of test
sequences (a classifier predicts one label per sequence).

The evaluator (`rows`) writes the counts and the per-class scores into the run
folder (`confusion.csv`, `per_class.csv`), whichever metrics the run reports.
The confusion counts are classes × classes: a task's files may hold at most
tasks.limits.MAX_CLASSES (1,000) classes, checked when the spec is validated, so
confusion.csv holds at most a million counts (a few MB).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from seqkeras.training.predictions import Predictions

CONFUSION_FILE, PER_CLASS_FILE = "confusion.csv", "per_class.csv"
PER_CLASS_COLUMNS = ["class", "precision", "recall", "f1", "support"]


def confusion_counts(p: Predictions, classes: int | None = None) -> np.ndarray:
    """[classes, classes] counts: row = true label id, column = predicted label id."""
    true, predicted = p.targets.ravel().astype(int), p.predicted_ids().ravel().astype(int)
    size = classes or max(int(p.probabilities.shape[-1]), int(true.max(initial=-1)) + 1,
                          int(predicted.max(initial=-1)) + 1)
    counts = np.zeros((size, size), dtype=np.int64)
    np.add.at(counts, (true, predicted), 1)
    return counts


def class_scores(counts: np.ndarray) -> pd.DataFrame:
    """Per class id: precision, recall, F1 (zero_division=0), support, and whether it takes part in a macro mean."""
    hits = np.diag(counts).astype(float)
    predicted, support = counts.sum(axis=0).astype(float), counts.sum(axis=1).astype(float)
    with np.errstate(divide="ignore", invalid="ignore"):
        precision = np.where(predicted > 0, hits / predicted, 0.0)
        recall = np.where(support > 0, hits / support, 0.0)
        # 2·TP / (2·TP + FP + FN), where 2·TP + FP + FN = predicted + support
        f1 = np.where(predicted + support > 0, 2 * hits / (predicted + support), 0.0)
    return pd.DataFrame({"precision": precision, "recall": recall, "f1": f1, "support": support.astype(np.int64),
                         "present": (support > 0) | (predicted > 0)})


def _macro(p: Predictions, column: str) -> float:
    scores = class_scores(confusion_counts(p))
    present = scores[scores["present"]]
    return float(present[column].mean()) if len(present) else 0.0


def macro_precision(p: Predictions) -> float:
    return _macro(p, "precision")


def macro_recall(p: Predictions) -> float:
    return _macro(p, "recall")


def macro_f1(p: Predictions) -> float:
    return _macro(p, "f1")


def class_names(p: Predictions, size: int) -> list[str]:
    """The task's label names by id (Predictions.labels), else the ids as text."""
    names = list(p.labels or [])
    return [names[i] if i < len(names) else str(i) for i in range(size)]


def confusion_table(p: Predictions) -> pd.DataFrame:
    """confusion.csv: a `true` column of label names, then one column of counts per predicted label."""
    counts = confusion_counts(p, len(p.labels) if p.labels else None)
    names = class_names(p, len(counts))
    table = pd.DataFrame(counts, columns=names)
    table.insert(0, "true", names)
    return table


def per_class_table(p: Predictions) -> pd.DataFrame:
    """per_class.csv: every class of the task; a class neither in the test labels nor predicted has empty scores."""
    counts = confusion_counts(p, len(p.labels) if p.labels else None)
    scores = class_scores(counts)
    scores.loc[~scores["present"], ["precision", "recall", "f1"]] = np.nan
    scores.insert(0, "class", class_names(p, len(counts)))
    return scores[PER_CLASS_COLUMNS]
