"""Each matrix point's Optuna study: where it is stored, its sampler and pruner, and its trials read back.

One study per matrix point, all in one database: by default the SQLite file
`tuning/studies.db` in the experiment's results folder (`optuna-dashboard
sqlite:///…/studies.db` opens it), else the URL `tune.storage` names, which
workers on several machines share.

A study is named `<experiment>/<point key>`; the point key is the point's
readable values and a digest of what the study is of (the point's resolved spec
and the tune section less its budget), `cell=lstm_1a2b3c4d`: a changed search
space starts a new study, a raised budget continues the old one. The study
names its objective (`set_metric_names`: the dashboard plots `val_loss`, not
"Objective 0") and says in its user attributes what it is of, for whoever opens
the database with Optuna or its dashboard: `experiment`, `point` (its matrix
values), `spec_identity` (the sha256 its name's digest starts), `metric`,
`direction` and `first_trial_folder`.

The database is opened as `tuning.database` says (an SQLite file checked first;
what is created, created by one process at a time), and a study's trials are
checked against the spec's search (`tuning.trial_checks`) when it is opened or
read back, before any is used.

A trial's number is Optuna's, from 0, everywhere the suite shows one: its
folder `tuning/trial-000_<point key>`, trials.csv, best.csv, the progress lines.
A study made before studies were named (seqkeras 0.1.0's: named by its point
key alone, its folders numbered from `trial-001`) is still found under that
former name and continued as it was numbered: its user attribute
`first_trial_folder` says 1 (`Named.first_number`).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import math
import os
import warnings
from pathlib import Path
from typing import Any

import optuna
from optuna.distributions import CategoricalDistribution, FloatDistribution, IntDistribution
from optuna.trial import TrialState

from seqkeras.tuning.database import (
    SQLITE_TIMEOUT_SECONDS, check_sqlite_file, creating, retried, shown_database, sqlite_file,
)
from seqkeras.tuning.settings import STUDIES_FILE, STUDIES_FOLDER, SearchRange, TuneSpec
from seqkeras.tuning.trial_checks import check_study

# A trial that a killed command left running is marked failed with this user attribute, and its values are
# drawn again: it does not count against the budget.
INTERRUPTED = "interrupted"

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
    into the deleted file. A new connection is made safely (tuning.database): the file checked, Optuna's tables
    made by one process at a time."""
    sqlite = url.startswith("sqlite")
    identity = _file_identity(url) if sqlite else None
    key = (os.getpid(), url, identity)
    if key in _STORAGES and (identity is not None or not sqlite):
        return _STORAGES[key]
    path = sqlite_file(url)
    if path is not None and check_sqlite_file(path):  # Optuna's tables are all there: connecting only reads
        return retried(lambda: _connected(url))
    with creating(url):
        return retried(lambda: _connected(url))


def _connected(url: str) -> optuna.storages.RDBStorage:
    """A new connection to the database, kept for the process once it is a file."""
    sqlite = url.startswith("sqlite")
    options = {"connect_args": {"timeout": SQLITE_TIMEOUT_SECONDS}} if sqlite else {}
    connected = optuna.storages.RDBStorage(url, engine_kwargs=options)
    identity = _file_identity(url) if sqlite else None
    if identity is not None or not sqlite:  # a file (made now or before) or a server; in-memory SQLite: not kept
        _STORAGES[(os.getpid(), url, identity)] = connected
    return connected


_STORAGES: dict[tuple[int, str, tuple[int, int] | None], optuna.storages.RDBStorage] = {}


def _file_identity(url: str) -> tuple[int, int] | None:
    """An SQLite file's device and inode; None when there is no such file."""
    try:
        found = os.stat(url.removeprefix("sqlite:///"))
    except OSError:
        return None
    return found.st_dev, found.st_ino


def spec_identity(point_document: dict[str, Any], tune: TuneSpec) -> str:
    """The sha256 of what a study is of: the point's resolved spec (less its seed) and the tune section less its
    budget and storage."""
    text = json.dumps({"point": point_document, "tune": tune.study_document()}, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()


def point_key(point_label: str, identity: str) -> str:
    """`cell=lstm_lag=100_1a2b3c4d`: the point, and the start of its study's identity; the study's name after its
    experiment's, and its trial folders' suffix (the whole name, before studies were named)."""
    return f"{point_label}_{identity[:8]}" if point_label else identity[:8]


def study_name(experiment: str, key: str) -> str:
    """`cells-long-range/cell=lstm_lag=100_1a2b3c4d`: the experiment, then the point key."""
    return f"{experiment}/{key}"


@dataclasses.dataclass(frozen=True)
class Named:
    """A study as this suite names it: its name in the database, and the number its first trial's folder has (0:
    Optuna's own numbers; 1: a study from before studies were named)."""

    name: str
    first_number: int = 0


def found_study(names: list[str], experiment: str, key: str) -> Named | None:
    """The point's study among the database's study names: under its name, else under its former one (its key
    alone); None when there is neither."""
    if study_name(experiment, key) in names:
        return Named(study_name(experiment, key))
    if key in names:
        return Named(key, first_number=1)
    return None


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


def open_study(url: str, experiment: str, key: str, point: dict[str, Any], identity: str, tune: TuneSpec,
               seed: int) -> tuple[optuna.Study, Named]:
    """The point's study, created the first time (or found under its former name), with its objective's name and
    its user attributes (module docstring) set, its trials checked against the spec's search (tuning.trial_checks).
    What is written is written by one process at a time, tried again after a lost race (tuning.database); a study
    that has it all already is only read."""
    storage(url)  # Optuna's tables, made (under the database's lock) if they are not there yet
    opened = retried(lambda: _set_up(url, experiment, key, point, identity, tune, seed))
    if opened is None:
        with creating(url):
            opened = retried(lambda: _made_study(url, experiment, key, point, identity, tune, seed))
    study, named = opened
    check_study(study, tune.search, distributions(tune), shown_database(url), named.first_number)
    return study, named


def _attributes(experiment: str, point: dict[str, Any], identity: str, tune: TuneSpec,
                named: Named) -> dict[str, Any]:
    return {"experiment": experiment, "point": point, "spec_identity": identity, "metric": tune.objective,
            "direction": tune.goal, "first_trial_folder": named.first_number}


def _set_up(url: str, experiment: str, key: str, point: dict[str, Any], identity: str, tune: TuneSpec,
            seed: int) -> tuple[optuna.Study, Named] | None:
    """The point's study when it exists with its objective's name and attributes set (nothing to write); None
    when it is to be made or completed."""
    named = found_study(optuna.get_all_study_names(storage(url)), experiment, key)
    if named is None:
        return None
    study = optuna.load_study(study_name=named.name, storage=storage(url), sampler=sampler(tune, seed, 0),
                              pruner=pruner(tune))
    if len(study.directions) != 1 or study.direction.name.lower() != tune.goal:
        return None  # said (or refused) by `_made_study`
    if study.metric_names != [tune.objective]:
        return None
    attributes = _attributes(experiment, point, identity, tune, named)
    if any(study.user_attrs.get(name) != value for name, value in attributes.items()):
        return None
    return study, named


def _made_study(url: str, experiment: str, key: str, point: dict[str, Any], identity: str, tune: TuneSpec,
                seed: int) -> tuple[optuna.Study, Named]:
    named = found_study(optuna.get_all_study_names(storage(url)), experiment, key) or Named(study_name(experiment,
                                                                                                      key))
    study = optuna.create_study(storage=storage(url), study_name=named.name, direction=tune.goal,
                                load_if_exists=True, sampler=sampler(tune, seed, 0), pruner=pruner(tune))
    if len(study.directions) == 1 and study.direction.name.lower() != tune.goal:
        raise ValueError(f"study {named.name} in {url} {study.direction.name.lower()}s; this spec {tune.goal}s")
    if len(study.directions) == 1 and study.metric_names != [tune.objective]:
        with warnings.catch_warnings():  # experimental since Optuna 3.2, and what its dashboard reads
            warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
            study.set_metric_names([tune.objective])
    for name, value in _attributes(experiment, point, identity, tune, named).items():
        if study.user_attrs.get(name) != value:  # each write is a transaction another process may wait for
            study.set_user_attr(name, value)
    return study, named


def load_study(url: str, named: Named, tune: TuneSpec) -> optuna.Study:
    """A study that exists (read only: nothing is created), its trials checked against the spec's search."""
    study = optuna.load_study(study_name=named.name, storage=storage(url))
    check_study(study, tune.search, distributions(tune), shown_database(url), named.first_number)
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
