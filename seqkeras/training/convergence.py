"""Whether a run was trained to convergence: what its record says of its training (`training` in metrics.json).

A comparison of under-trained models ranks how far each got in its budget, not what each can do. So every
trained run records its epochs, its best epoch and value of the value it is judged by (early stopping's monitor,
else val_loss where there is validation data, else the training loss), what ended it, and whether it was still
improving when its budget ended, by one stated rule: stopped by its budget, its best epoch is its last. runs.csv
has them as columns (results.folder.TRAINING_COLUMNS), and table.md and the report say how many runs were still
improving (reporting.tables.still_improving_note).
"""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from seqkeras.registry import higher_is_better
from seqkeras.training.settings import TrainSpec

BUDGET, EARLY_STOPPING, STOPPED = "budget", "early_stopping", "stopped"  # what ended its training


def evaluated(value: float) -> bool:
    """A history value that was measured: a task metric (validation_metrics) has none (NaN) between its scorings."""
    return value is not None and math.isfinite(value)


def monitored(history: pd.DataFrame, train: TrainSpec) -> str | None:
    """The history value a run is judged by: early stopping's monitor, else val_loss, else loss."""
    for name in (train.early_stopping.monitor if train.early_stopping else None, "val_loss", "loss"):
        if name is not None and name in history.columns:
            return name
    return None


def training_summary(history: pd.DataFrame, train: TrainSpec) -> dict[str, Any] | None:
    """The record's `training`: epochs, best_epoch (with steps: steps, best_step, and epochs as fractions), monitor,
    best, stopped_by, still_improving (best at the last evaluation); None without epochs (a model estimated by
    counting)."""
    monitor = monitored(history, train)
    if monitor is None or history.empty:
        return None
    values = [float(v) for v in history[monitor]]
    finite = [(i, v) for i, v in enumerate(values) if evaluated(v)]
    if not finite:
        return None
    sign = 1.0 if higher_is_better(monitor) else -1.0
    best_index, best = max(finite, key=lambda item: (sign * item[1], -item[0]))  # the first of equal bests
    last = len(values) - 1
    if "step" in history.columns:  # a budget of steps, or evaluations every N steps: rows at steps, epochs fractional
        epochs, best_epoch = float(history["epoch"].iloc[last]), float(history["epoch"].iloc[best_index])
        steps = {"steps": int(history["step"].iloc[last]), "best_step": int(history["step"].iloc[best_index])}
        spent = steps["steps"] >= train.steps if train.steps is not None else epochs >= train.epochs
    else:
        epochs, best_epoch, steps = len(values), best_index + 1, {}
        spent = epochs >= train.epochs
    stopped_by = BUDGET if spent else EARLY_STOPPING if train.early_stopping else STOPPED
    return {"epochs": epochs, "best_epoch": best_epoch, **steps, "monitor": monitor, "best": best,
            "stopped_by": stopped_by, "still_improving": stopped_by == BUDGET and best_index == last}

