"""A trial seen from the process that trains it: each epoch's objective reported to its study, and whether to stop.

The command that runs the sweep asks the study for the trial (execution.tuning)
and hands the worker a `TrialLink`; the worker reports through the same
database, so a trial on another machine is pruned by the same rule.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from seqkeras.tuning.settings import TuneSpec


@dataclass(frozen=True)
class TrialLink:
    """What a worker needs to report a trial: picklable, for worker processes and Ray tasks."""

    url: str
    study: str
    number: int
    objective: str
    goal: str  # minimize or maximize
    tune: dict[str, Any]  # the tune section (its pruner), as the spec resolved it


class TrialReporter:
    """`after_epoch(epoch, row)` for the trainer: reports row[objective] at that epoch; True means stop (pruned)."""

    def __init__(self, link: TrialLink):
        self.link = link
        self.pruned_at: int | None = None
        self._trial = None

    def __call__(self, epoch: int, row: dict[str, float]) -> bool:
        objective = self.link.objective
        if objective not in row:
            measured = ", ".join(sorted(name for name in row if name.startswith("val_"))) or "none"
            raise KeyError(f"tune.objective {objective!r} is not in the training history (measured on validation "
                           f"data: {measured})")
        value = row[objective]
        if not math.isfinite(value):
            return False  # nothing to compare; a diverged loss stops the run by itself
        trial = self._open()
        trial.report(value, epoch)
        if trial.should_prune():
            self.pruned_at = epoch
            return True
        return False

    def _open(self):
        if self._trial is None:
            import optuna

            from seqkeras.tuning.study import pruner, storage

            tune = TuneSpec.model_validate(self.link.tune)
            study = optuna.load_study(study_name=self.link.study, storage=storage(self.link.url),
                                      pruner=pruner(tune))
            trial_id = study._storage.get_trial_id_from_study_id_trial_number(study._study_id, self.link.number)
            self._trial = optuna.trial.Trial(study, trial_id)
        return self._trial


def best_epoch_value(history: list[dict[str, float]], objective: str, goal: str) -> float | None:
    """The trial's objective: its best epoch's value (a finite one), as the tuners of Keras and Optuna judge."""
    values = [row[objective] for row in history if objective in row and math.isfinite(row[objective])]
    if not values:
        return None
    return min(values) if goal == "minimize" else max(values)
