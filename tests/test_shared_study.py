"""A studies database from someone else: every trial checked against the spec's search before any is used, and a
file that is not Optuna's intact SQLite database refused in one line naming it. Nothing here trains: the studies are
planted with Optuna's own API in the results folder of a tiny spec, and a check that let one through would train
(and the test would fail on what it trained)."""

from __future__ import annotations

import math
import shutil
import textwrap

import optuna
import pytest
from optuna.distributions import CategoricalDistribution, FloatDistribution, IntDistribution
from optuna.trial import TrialState, create_trial

from seqkeras.errors import SpecError
from seqkeras.execution.tuning import point_values, points_of, tuned_experiment
from seqkeras.spec.loader import load_experiment
from seqkeras.tuning.study import open_study, storage, storage_url
from tests.helpers import run_cli

SPEC = """
    version: 1
    name: shared
    task: {name: delayed_recall, lag: 3, n_train: 64, n_test: 32}
    model: {kind: classifier, units: 4, embedding_dim: 4}
    train: {epochs: 1, batch_size: 16, verbose: 0, validation_split: 0.25}
    seeds: [0]
    tune:
      search:
        train.optimizer.learning_rate: {log_uniform: [1.0e-3, 1.0e-1]}
        model.units: {integer: [2, 6]}
        train.batch_size: {choice: [8, 16]}
      trials: 1
"""
RATE, UNITS, BATCH = "train.optimizer.learning_rate", "model.units", "train.batch_size"
SEARCHED = {RATE: FloatDistribution(1e-3, 1e-1, log=True), UNITS: IntDistribution(2, 6),
            BATCH: CategoricalDistribution([8, 16])}
GOOD = {RATE: 0.01, UNITS: 4, BATCH: 8}


def complete(params: dict, value: float = 0.5, distributions: dict | None = None) -> optuna.trial.FrozenTrial:
    chosen = {key: (distributions or {}).get(key, SEARCHED.get(key, IntDistribution(1, 1000))) for key in params}
    return create_trial(params=params, distributions=chosen, value=value)


def nan_objective(study: optuna.Study) -> None:
    """A complete trial whose objective is NaN: Optuna's API refuses one, so it is written through its storage."""
    trial_id = study._storage.create_new_trial(study._study_id)
    for key, value in GOOD.items():
        study._storage.set_trial_param(trial_id, key, SEARCHED[key].to_internal_repr(value), SEARCHED[key])
    study._storage.set_trial_state_values(trial_id, TrialState.COMPLETE, [math.nan])


PLANTED = {  # what a trial holds → the words of its refusal
    "a key the spec does not search": (lambda s: s.add_trial(complete({**GOOD, UNITS: 4, "model.embedding_dim": 777})),
                                       "'model.embedding_dim' = 777, a key tune.search does not search"),
    "a value outside the range": (lambda s: s.add_trial(complete({**GOOD, RATE: 5.0}, distributions={
        RATE: FloatDistribution(1e-3, 10.0, log=True)})), f"{RATE} = 5.0, outside the searched range"),
    "an integer outside the range": (lambda s: s.add_trial(complete({**GOOD, UNITS: 777}, distributions={
        UNITS: IntDistribution(1, 1000)})), f"{UNITS} = 777, outside the searched range"),
    "a value not among the choices": (lambda s: s.add_trial(complete({**GOOD, BATCH: 4096}, distributions={
        BATCH: CategoricalDistribution([8, 16, 4096])})), f"{BATCH} = 4096, not one of the choices"),
    "another kind of distribution": (lambda s: s.add_trial(complete(GOOD, distributions={
        RATE: FloatDistribution(1e-3, 1e-1)})), f"draws {RATE} from FloatDistribution"),
    "no params": (lambda s: s.add_trial(complete({})), "has no value for"),
    "a NaN objective": (nan_objective, "cannot be read (AssertionError"),
    "an infinite objective": (lambda s: s.add_trial(complete(GOOD, value=math.inf)), "has no finite objective"),
    "queued values outside the range": (lambda s: s.enqueue_trial({**GOOD, RATE: 5.0}),
                                        f"(waiting) that has {RATE} = 5.0, outside the searched range"),
    "queued values of another key": (lambda s: s.enqueue_trial({"model.units_x": 3}),
                                     "'model.units_x' = 3, a key tune.search does not search"),
}


@pytest.fixture(scope="module")
def template(tmp_path_factory):
    """The tiny spec's experiment and a results folder with its one point's study, made once (as `run` makes it):
    making an Optuna database takes a second or two."""
    root = tmp_path_factory.mktemp("shared-study")
    (root / "spec.yaml").write_text(textwrap.dedent(SPEC), encoding="utf-8")
    experiment = load_experiment(root / "spec.yaml")
    folder = root / "r" / "shared"
    (folder / "tuning").mkdir(parents=True)
    study, _ = opener(experiment, folder)()
    study.set_user_attr("padding", "x" * 60_000)  # pages enough that a cut file loses some
    return experiment, folder


def opener(experiment, folder):
    (point,) = points_of(experiment, experiment.runs)

    def opened(where=folder):
        return open_study(storage_url(experiment.spec.tune, where), experiment.spec.name, point.key,
                          point_values(point), point.identity, experiment.spec.tune, seed=0)

    return opened


@pytest.fixture
def shared(template, tmp_path):
    """The experiment, a copy of the template's results folder in tmp_path, its study, and `opened(folder)`: the
    study opened as `run` opens it."""
    experiment, folder = template
    copy = tmp_path / "r" / folder.name
    shutil.copytree(folder, copy, ignore=shutil.ignore_patterns("*.lock"))
    opened = opener(experiment, copy)
    study, _ = opened()
    return experiment, copy, study, opened


@pytest.mark.parametrize("case", sorted(PLANTED))
def test_a_planted_trial_is_refused_in_one_line_before_any_trial_is_used(shared, case):
    experiment, folder, study, opened = shared
    plant, words = PLANTED[case]
    plant(study)
    database = folder / "tuning" / "studies.db"
    with pytest.raises(SpecError) as by_run:
        opened()  # what `run` does first: as the best trial, history or budget, nothing of the study is used
    with pytest.raises(SpecError) as by_rebuild:
        tuned_experiment(experiment, folder)  # table --rebuild, --dry-run: the study read back
    for refused in (by_run.value, by_rebuild.value):
        message = str(refused)
        assert words in message and str(database) in message and "\n" not in message, message


def test_a_study_of_this_search_is_used_with_every_kind_of_trial_the_suite_writes(shared):
    """Complete, pruned, failed, interrupted with values missing (killed between Optuna's ask and its suggestions),
    queued again and running: none is refused, and the best complete one is chosen."""
    experiment, folder, study, opened = shared
    study.add_trial(complete(GOOD, value=0.4))
    study.add_trial(complete({**GOOD, RATE: 0.002, UNITS: 6, BATCH: 16}, value=0.3))
    study.add_trial(create_trial(params=GOOD, distributions=SEARCHED, state=TrialState.PRUNED,
                                 intermediate_values={1: 0.9}))
    study.add_trial(create_trial(params={RATE: 0.05}, distributions={RATE: SEARCHED[RATE]}, state=TrialState.FAIL))
    study.enqueue_trial({RATE: 0.05})
    study.ask({RATE: SEARCHED[RATE]})  # running, with one of its values so far
    opened()
    (run,) = tuned_experiment(experiment, folder).runs
    assert run.tuned == {RATE: 0.002, UNITS: 6, BATCH: 16}


def test_a_planted_best_trial_is_not_trained_by_run(shared, write_spec, tmp_path, capsys):
    """The issue's case from the command line: the budget spent by a planted trial with a key the spec does not
    search; `run` says so in one line naming the file and trains nothing."""
    _, folder, study, _ = shared
    study.add_trial(complete({**GOOD, "model.embedding_dim": 777}, value=0.01))
    code, out, err = run_cli(capsys, "run", write_spec(SPEC), "--out", tmp_path / "r", "--jobs", "1")
    assert code == 2 and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1 and str(folder / "tuning" / "studies.db") in err, err
    assert "model.embedding_dim" in err
    assert not [path for path in folder.iterdir() if path.name not in ("tuning", "experiment.yaml")]
    assert not list((folder / "tuning").glob("trial-*"))


# --------------------------------------------------------------------------- #
# A studies file that is not Optuna's intact database
# --------------------------------------------------------------------------- #


def another_programs_database(path):
    import sqlite3

    with sqlite3.connect(path) as connection:
        connection.execute("CREATE TABLE experiments (experiment_id INTEGER)")
        connection.execute("CREATE TABLE alembic_version (version_num TEXT)")


def other_columns(path):
    import sqlite3

    with sqlite3.connect(path) as connection:
        connection.execute("CREATE TABLE studies (x INTEGER)")


DAMAGED = {  # how the file is made from a whole studies database → the words of its refusal
    "garbage bytes": (lambda path: path.write_bytes(b"\x00\x13garbage" * 500), "is not an SQLite database"),
    "truncated": (lambda path: path.write_bytes(path.read_bytes()[:40_000]), "is damaged"),
    "an SQLite header and nothing else": (lambda path: path.write_bytes(path.read_bytes()[:100]), "is damaged"),
    "another program's tables": (lambda path: (path.unlink(), another_programs_database(path)),
                                 "of another program (its tables: alembic_version, experiments)"),
    "Optuna's table names without its columns": (lambda path: (path.unlink(), other_columns(path)),
                                                 "a table studies without Optuna's columns"),
}


def damaged_copy(study: optuna.Study, folder, root, damage):
    """The results folder copied under `root` (a file this process has not connected to), with a trial, its
    studies database then damaged."""
    study.add_trial(complete(GOOD))
    copy = root / folder.name
    shutil.copytree(folder, copy)
    damage(copy / "tuning" / "studies.db")
    return copy


@pytest.mark.parametrize("case", sorted(DAMAGED))
def test_a_studies_file_that_is_not_an_intact_optuna_database_is_refused_in_one_line(shared, case, tmp_path):
    experiment, folder, study, opened = shared
    copy = damaged_copy(study, folder, tmp_path / "copy", DAMAGED[case][0])
    database, words = copy / "tuning" / "studies.db", DAMAGED[case][1]
    before = database.read_bytes()
    url = f"sqlite:///{database}"
    for attempt in (lambda: storage(url), lambda: opened(copy), lambda: tuned_experiment(experiment, copy)):
        with pytest.raises(SpecError) as refused:
            attempt()
        message = str(refused.value)
        assert words in message and str(database) in message and "\n" not in message, message
    assert database.read_bytes() == before  # Optuna wrote nothing into it


def test_the_command_line_refuses_a_cut_studies_file_in_one_line(shared, write_spec, tmp_path, capsys):
    _, folder, study, _ = shared
    copy = damaged_copy(study, folder, tmp_path / "cut", DAMAGED["truncated"][0])
    database = copy / "tuning" / "studies.db"
    for extra in (["--dry-run"], []):
        code, out, err = run_cli(capsys, "run", write_spec(SPEC), "--out", tmp_path / "cut", "--jobs", "1", *extra)
        assert code == 2 and "Traceback" not in err
        assert len(err.strip().splitlines()) == 1, err
        assert err.startswith(f"error: the tuning database {database} is damaged (") and "to tune again" in err, err
    assert not list((copy / "tuning").glob("trial-*"))


def test_reading_a_whole_studies_file_writes_nothing_beside_it(shared, tmp_path):
    """A read-only command (`table --rebuild`, `--dry-run`) on someone's results: no lock file is made."""
    experiment, folder, study, _ = shared
    study.add_trial(complete(GOOD))
    copy = tmp_path / "copy" / "shared"
    shutil.copytree(folder, copy, ignore=shutil.ignore_patterns("*.lock"))
    tuned_experiment(experiment, copy)
    assert sorted(path.name for path in (copy / "tuning").iterdir()) == ["studies.db"]
