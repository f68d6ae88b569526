"""A point's study checked against the spec's `tune.search` before any of its trials is used.

A studies database may be someone else's: a results folder copied from a
colleague, a `tune.storage` several people share. Before a trial of it is taken
for the best setting, as history for the sampler or the pruner, or counted
against the budget, every trial of the point's study is checked to be one this
spec's tuning could have written:

- its values: only keys that `tune.search` searches, each drawn from a distribution
  of the same kind, inside the searched range or among the choices (a trial queued
  to be drawn again: the values it is queued with);
- a complete or pruned trial has a value for every searched key (one that failed,
  or is running, may lack some: its process can die between Optuna's ask and its
  last suggestion);
- a complete trial has one finite objective; the study has one objective.

A study with any other trial is refused: a SpecError naming the database, the
study, the trial, the key and the value, before anything trains. It is not
trained around by leaving the trial out: a study holding a trial this spec could
not have written was written by something else, so its other trials (the
sampler's history, the budget they spend) are not to be trusted either. Deleting
the study (`optuna delete-study`) or moving the database away tunes again.
"""

from __future__ import annotations

import math
from typing import Any

import optuna
from optuna.distributions import (
    BaseDistribution, CategoricalDistribution, IntDistribution, check_distribution_compatibility,
)
from optuna.trial import FrozenTrial, TrialState

from seqkeras.errors import SpecError, listed, shown
from seqkeras.tuning.settings import SearchRange

# Where Optuna keeps the values a waiting (enqueued) trial will be asked with.
QUEUED_VALUES = "fixed_params"


def check_study(study: optuna.Study, search: dict[str, SearchRange], searched: dict[str, BaseDistribution],
                database: str, first_number: int = 0) -> None:
    """Nothing when every trial of `study` is one the spec's search could have written; else a SpecError naming
    `database`, the study and the first trial that is not (its number as the suite shows it: `first_number` on)."""

    def refused(why: str) -> SpecError:
        return SpecError(f"the tuning database {database}: study {shown(study.study_name, 200)} {why}; it was not "
                         "written by this spec's tuning: delete the study (optuna delete-study) or move the database "
                         "away to tune again")

    if len(study.directions) != 1:
        raise refused(f"has {len(study.directions)} objectives; a tuned point has one")
    try:
        trials = study.get_trials(deepcopy=False)
    except Exception as error:  # Optuna asserts on a value it cannot read back (a NaN objective stored as none)
        reason = str(error).strip().splitlines()[0][:200] if str(error).strip() else (
            "a stored value Optuna cannot read back, such as a missing or NaN objective")
        raise refused(f"has trials that cannot be read ({type(error).__name__}: {reason})") from None
    for trial in trials:
        problem = trial_problem(trial, search, searched)
        if problem:
            raise refused(f"has trial {trial.number + first_number} ({trial.state.name.lower()}) that {problem}")


def trial_problem(trial: FrozenTrial, search: dict[str, SearchRange],
                  searched: dict[str, BaseDistribution]) -> str | None:
    """Why `trial` is not one this search could have written (module docstring); None when it is."""
    waiting = trial.state == TrialState.WAITING
    values = trial.system_attrs.get(QUEUED_VALUES, {}) if waiting else trial.params
    if not isinstance(values, dict):
        return f"is queued with {shown(values)}, not values of keys"
    for key, value in values.items():
        if key not in searched:
            return (f"has {shown(key)} = {shown(value)}, a key tune.search does not search (it searches "
                    f"{listed(search)})")
        problem = value_problem(value, searched[key])
        if problem:
            return f"has {key} = {shown(value)}, {problem} (tune.search: {search[key].describe()})"
        if not waiting:
            try:
                check_distribution_compatibility(trial.distributions[key], searched[key])
            except (KeyError, ValueError):
                return f"draws {key} from {shown(trial.distributions.get(key), 200)}, not tune.search's " \
                       f"{search[key].describe()}"
    if trial.state in (TrialState.COMPLETE, TrialState.PRUNED):
        missing = [key for key in searched if key not in values]
        if missing:
            return f"has no value for {listed(missing)}"
    if trial.state == TrialState.COMPLETE:
        objective = trial.values
        if objective is None or len(objective) != 1 or not _finite(objective[0]):
            return f"has no finite objective ({shown(objective)})"
    return None


def value_problem(value: Any, distribution: BaseDistribution) -> str | None:
    """Why `value` is not one `distribution` draws; None when it is."""
    if isinstance(distribution, CategoricalDistribution):
        try:
            distribution.to_internal_repr(value)
        except (ValueError, TypeError):
            return "not one of the choices"
        return None
    if isinstance(distribution, IntDistribution):
        if not isinstance(value, int) or isinstance(value, bool):
            return "not a whole number"
        inside = distribution.low <= value <= distribution.high and (value - distribution.low) % distribution.step == 0
    else:
        if not _finite(value):
            return "not a finite number"
        inside = distribution._contains(float(value))
    return None if inside else "outside the searched range"


def _finite(value: Any) -> bool:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    try:
        return math.isfinite(value)
    except OverflowError:  # an integer beyond any float
        return False
