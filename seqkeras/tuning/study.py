"""Each matrix point's Optuna study: where it is stored, its sampler and pruner, and its trials read back.

One study per matrix point, all in one database: by default the SQLite file
`tuning/studies.db` in the experiment's results folder (`optuna-dashboard
sqlite:///…/studies.db` opens it), else the URL `tune.storage` names, which
workers on several machines share. A study's name is the point's readable
values and a digest of what the study is of (the point's resolved spec and the
tune section less its budget): a changed search space starts a new study, a
raised budget continues the old one.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import os
from pathlib import Path
from typing import Any

import optuna
from optuna.distributions import CategoricalDistribution, FloatDistribution, IntDistribution
from optuna.trial import TrialState

from seqkeras.tuning.settings import STUDIES_FILE, STUDIES_FOLDER, SearchRange, TuneSpec

# A trial that a killed command left running is marked failed with this user attribute, and its values are
# drawn again: it does not count against the budget.
INTERRUPTED = "interrupted"
# A database shared by several processes: a writer waits this long for another's lock instead of failing.
SQLITE_TIMEOUT_SECONDS = 120

# Optuna logs each trial at INFO; the suite prints its own progress lines.
optuna.logging.set_verbosity(logging.WARNING)


def storage_url(tune: TuneSpec, folder: Path) -> str:
    """tune.storage, or the SQLite file in the results folder (an absolute path: workers may run elsewhere)."""
    if tune.storage:
        return tune.storage
    return f"sqlite:///{(folder / STUDIES_FOLDER / STUDIES_FILE).resolve()}"


def storage(url: str) -> optuna.storages.RDBStorage:
    """The database behind the studies; SQLite waits for another process's write instead of failing.

    One per process and database: connecting (SQLAlchemy's engine, Optuna's schema check) costs a tenth of a
    second, which every trial would pay again where a worker reports its epochs. An SQLite file replaced since
    (tuning/ deleted between two commands of one Python session) gets a new one: the old connection would write
    into the deleted file."""
    sqlite = url.startswith("sqlite")
    options = {"connect_args": {"timeout": SQLITE_TIMEOUT_SECONDS}} if sqlite else {}
    identity = _file_identity(url) if sqlite else None
    if sqlite and identity is None:  # no file yet (this makes it) or not a file: nothing to reuse
        return optuna.storages.RDBStorage(url, engine_kwargs=options)
    key = (os.getpid(), url, identity)
    if key not in _STORAGES:
        _STORAGES[key] = optuna.storages.RDBStorage(url, engine_kwargs=options)
    return _STORAGES[key]


_STORAGES: dict[tuple[int, str, tuple[int, int] | None], optuna.storages.RDBStorage] = {}


def _file_identity(url: str) -> tuple[int, int] | None:
    """An SQLite file's device and inode; None when there is no such file."""
    try:
        found = os.stat(url.removeprefix("sqlite:///"))
    except OSError:
        return None
    return found.st_dev, found.st_ino


def study_name(point_label: str, point_document: dict[str, Any], tune: TuneSpec) -> str:
    """`cell=lstm_lag=100_1a2b3c4d`: the point, and a digest of what its study searches."""
    text = json.dumps({"point": point_document, "tune": tune.study_document()}, sort_keys=True, default=str)
    digest = hashlib.sha256(text.encode()).hexdigest()[:8]
    return f"{point_label}_{digest}" if point_label else digest


def distributions(tune: TuneSpec) -> dict[str, Any]:
    """Each searched key's Optuna distribution, named by the dotted key."""
    return {key: distribution(search) for key, search in tune.search.items()}


def distribution(search: SearchRange):
    kind, values = search.kind, search.values
    if kind == "choice":
        return CategoricalDistribution(values)
    if kind == "integer":
        return IntDistribution(values[0], values[1])
    return FloatDistribution(float(values[0]), float(values[1]), log=kind == "log_uniform")


def sampler(tune: TuneSpec, seed: int, drawn: int) -> optuna.samplers.BaseSampler:
    """A sampler seeded by the tuning seed and how many trials the study has: the same history draws the same
    next values, so a study resumed after a kill goes on as it would have, and a serial run is reproducible."""
    stream = int.from_bytes(hashlib.sha256(f"{seed}:{drawn}".encode()).digest()[:4], "big")
    if tune.sampler == "random":
        return optuna.samplers.RandomSampler(seed=stream)
    return optuna.samplers.TPESampler(seed=stream, n_startup_trials=tune.startup_trials)


def pruner(tune: TuneSpec) -> optuna.pruners.BasePruner:
    if tune.pruner == "none":
        return optuna.pruners.NopPruner()
    # Epochs are reported from 1: a trial can be stopped after an epoch beyond the warm-up ones.
    return optuna.pruners.MedianPruner(n_startup_trials=tune.startup_trials, n_warmup_steps=tune.warmup_epochs + 1)


def open_study(url: str, name: str, tune: TuneSpec, seed: int) -> optuna.Study:
    """The study, created the first time."""
    study = optuna.create_study(storage=storage(url), study_name=name, direction=tune.goal, load_if_exists=True,
                                sampler=sampler(tune, seed, 0), pruner=pruner(tune))
    if study.direction.name.lower() != tune.goal:
        raise ValueError(f"study {name} in {url} {study.direction.name.lower()}s; this spec {tune.goal}s")
    return study


def counted(trial: optuna.trial.FrozenTrial) -> bool:
    """Whether a trial spends the budget: finished (complete, pruned, or failed on its own), or running; not one
    queued to be drawn again (waiting) nor the interrupted one it replaces."""
    if trial.state == TrialState.WAITING:
        return False
    return not (trial.state == TrialState.FAIL and trial.user_attrs.get(INTERRUPTED))


def spent(study: optuna.Study) -> int:
    return sum(counted(trial) for trial in study.get_trials(deepcopy=False))


def finished(study: optuna.Study) -> int:
    """Trials that ended and count against the budget."""
    return sum(counted(trial) and trial.state.is_finished() for trial in study.get_trials(deepcopy=False))


def running(study: optuna.Study) -> list[optuna.trial.FrozenTrial]:
    return study.get_trials(deepcopy=False, states=(TrialState.RUNNING,))


def mark_interrupted(study: optuna.Study, trial: optuna.trial.FrozenTrial) -> None:
    """A trial a killed command left running: failed, and its values queued to be trained again."""
    study._storage.set_trial_user_attr(trial._trial_id, INTERRUPTED, True)
    study.tell(trial.number, state=TrialState.FAIL)
    study.enqueue_trial(dict(trial.params), skip_if_exists=False)


def best_trial(study: optuna.Study) -> optuna.trial.FrozenTrial | None:
    """The complete trial with the best objective; None when no trial completed."""
    complete = study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))
    finite = [trial for trial in complete if trial.value is not None and math.isfinite(trial.value)]
    if not finite:
        return None
    sign = 1 if study.direction.name.lower() == "minimize" else -1
    return min(finite, key=lambda trial: (sign * trial.value, trial.number))
