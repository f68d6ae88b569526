"""Whether a run was trained to convergence: what its record says of its training (`training` in metrics.json).

A comparison of under-trained models ranks how far each got in its budget, not what each can do. So every
trained run records its epochs, its best epoch and value of the value it is judged by (early stopping's monitor,
else val_loss where there is validation data, else the training loss), what ended it, and whether it was still
improving when it ended, by two stated rules, either of which says so:

- stopped by its budget, its best epoch is its last;
- its validation loss fell at each of its last `TREND` evaluations, whatever ended it: early stopping on another
  value (val_bleu) may stop a run whose loss is still falling. (The training loss alone says nothing of it: it
  falls in nearly every run.)

A run stopped early on a task's score (val_bleu, val_macro_f1: not a loss) that never rose above its own noise is
`stopped_at_noise`: its best is no better than its first evaluation by more than twice the median change between
two evaluations, or it is a BLEU or chrF below `NOISE_POINTS`; the weights restored from its best epoch are a noise
peak. runs.csv has epochs, best epoch and still_improving as columns (results.folder.TRAINING_COLUMNS); table.md,
the report and the terminal name the runs that were still improving and those stopped at noise
(reporting.training_notes).
"""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from seqkeras.registry import higher_is_better
from seqkeras.training.settings import TrainSpec

BUDGET, EARLY_STOPPING, STOPPED = "budget", "early_stopping", "stopped"  # what ended its training
TREND = 3  # the last evaluations over which a falling validation loss says a run was still improving
NOISE_POINTS = 5.0  # a BLEU or chrF (0 to 100) below this is noise: a few n-grams matched by chance
SCORES_IN_POINTS = ("bleu", "chrf")


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
    falling = "val_loss" in history.columns and still_falling(history["val_loss"])
    summary = {"epochs": epochs, "best_epoch": best_epoch, **steps, "monitor": monitor, "best": best,
               "stopped_by": stopped_by, "still_improving": (stopped_by == BUDGET and best_index == last) or falling}
    if "val_loss" in history.columns:
        summary["val_loss_falling"] = falling
    if stopped_by == EARLY_STOPPING and "loss" not in monitor:
        summary["stopped_at_noise"] = at_noise(monitor, [value for _, value in finite])
    return summary


def still_falling(losses) -> bool:
    """Whether a loss fell at each of its last TREND evaluations (its unmeasured rows left out)."""
    measured = [float(value) for value in losses if evaluated(float(value))]
    tail = measured[-(TREND + 1):]
    return len(tail) == TREND + 1 and all(later < earlier for earlier, later in zip(tail, tail[1:]))


def at_noise(monitor: str, values: list[float]) -> bool:
    """Whether a score (measured at each of its evaluations, in order) never rose above its own noise (module
    docstring): a BLEU or chrF below NOISE_POINTS, or a best no further from the first evaluation than twice the
    median change between two evaluations."""
    sign = 1.0 if higher_is_better(monitor) else -1.0
    best = max(sign * value for value in values) * sign
    if any(score in monitor for score in SCORES_IN_POINTS) and best < NOISE_POINTS:
        return True
    changes = [abs(later - earlier) for earlier, later in zip(values, values[1:])]
    if not changes:
        return False
    noise = sorted(changes)[len(changes) // 2]
    return sign * (best - values[0]) <= 2 * noise

