"""Tuning (`tune:`): the section's checks at validate, each matrix point's study with the same budget, trials that
never read the test set, a study that goes on after a kill or a raised budget, and the runs of the chosen setting.

The runs here are tiny (a few dozen sequences, two or three epochs): what is checked is the bookkeeping, not
which learning rate wins.
"""

from __future__ import annotations

import contextlib
import io
import json
import re
import shutil
import textwrap

import optuna
import pandas as pd
import pytest
import yaml

import seqkeras

from seqkeras.cli import main
from seqkeras.errors import SpecError
from seqkeras.spec.loader import load_experiment
from seqkeras.tuning.pruning import best_epoch_value
from seqkeras.tuning.study import INTERRUPTED
from tests.helpers import run_cli

TUNED = """
    version: 1
    name: tuned
    task: {name: delayed_recall, lag: 3, n_train: 64, n_test: 32}
    model: {kind: classifier, units: 4, embedding_dim: 4}
    train: {epochs: 3, batch_size: 16, verbose: 0, validation_split: 0.25}
    matrix:
      model.cell: [simple_rnn, gru]
    seeds: [0, 1]
    tune:
      search:
        train.optimizer.learning_rate: {log_uniform: [1.0e-3, 1.0e-1]}
        model.units: {integer: [2, 6]}
      trials: 3
      startup_trials: 1
      warmup_epochs: 0
    table: {rows: model.cell, value: accuracy}
"""


def refused(write_spec, text: str) -> SpecError:
    with pytest.raises(SpecError) as caught:
        load_experiment(write_spec(text))
    return caught.value


def with_tune(tune: str, train: str = "{epochs: 1, validation_split: 0.2}", extra: str = "") -> str:
    return f"""
        version: 1
        name: t
        task: {{name: delayed_recall, lag: 3, n_train: 64, n_test: 32}}
        model: {{kind: classifier, units: 4}}
        train: {train}
        {extra}
        tune: {tune}
    """


@pytest.mark.parametrize("tune, path, words", [
    ("{search: {model.no_such_key: {uniform: [0, 1]}}, trials: 2}", "tune.search.model.no_such_key",
     "no_such_key"),
    ("{search: {model.units: {uniform: [2, 8]}}, trials: 2}", "tune.search.model.units", "model.units = 2.0"),
    ("{search: {train.optimizer.learning_rate: {log_uniform: [0.0, 1.0]}}, trials: 2}",
     "tune.search.train.optimizer.learning_rate", "low > 0"),
    ("{search: {model.units: {integer: [8, 8]}}, trials: 2}", "tune.search.model.units", "is empty"),
    ("{search: {model.units: {integer: [4, 8], choice: [1, 2]}}, trials: 2}", "tune.search.model.units",
     "exactly one of"),
    ("{search: {model.cell: {choice: [lstm]}}, trials: 2}", "tune.search.model.cell", "at least two"),
    ("{search: {model.units: {integer: [4, 8]}}, trials: 0}", "tune.trials", "0"),
    ("{search: {}, trials: 2}", "tune.search", ""),
    ("{search: {evaluate.metrics: {choice: [a, b]}}, trials: 2}", "tune.search.evaluate.metrics", "dotted key of"),
    ("{search: {model.units: {integer: [4, 8]}}, trials: 2, objective: accuracy}", "tune.objective",
     "never by the test set"),
    ("{search: {model.units: {integer: [4, 8]}}, trials: 2, objective: val_bleu}", "tune.objective",
     "it measures val_loss, val_accuracy on validation data (and, listed in train.validation_metrics, "
     "val_macro_f1"),
    ("{search: {model.units: {integer: [4, 8]}}, trials: 2, objective: val_macro_f1}", "tune.objective",
     "train.validation_metrics.metrics must list 'macro_f1'"),
])
def test_a_bad_tune_section_is_one_message_naming_the_key(write_spec, tune, path, words):
    error = refused(write_spec, with_tune(tune))
    assert error.path == path, str(error)
    assert words in str(error)


def test_a_study_is_judged_by_the_validation_score_it_compares_on(tmp_path):
    """tune.objective val_macro_f1: each trial's objective is its best epoch's macro-F1 on the validation data."""
    spec = yaml.safe_load(textwrap.dedent(with_tune(
        "{search: {train.optimizer.learning_rate: {log_uniform: [1.0e-3, 1.0e-1]}}, trials: 2, startup_trials: 1, "
        "warmup_epochs: 0, objective: val_macro_f1}",
        "{epochs: 2, batch_size: 16, verbose: 0, validation_split: 0.25, "
        "validation_metrics: {metrics: [macro_f1]}}")))
    results = seqkeras.run(spec, out=tmp_path)
    tuning = tmp_path / "t" / "tuning"
    trials = pd.read_csv(tuning / "trials.csv")
    assert trials["state"].tolist() == ["complete", "complete"]
    for row in trials.itertuples():
        history = pd.read_csv(tuning / row.run_id / "history.csv")
        assert row.objective == pytest.approx(history["val_macro_f1"].max())  # higher is better: its best epoch
    assert (results.runs["status"] == "ok").all()


def test_tuning_needs_validation_data_and_is_not_a_matrix_key(write_spec):
    error = refused(write_spec, with_tune("{search: {model.units: {integer: [4, 8]}}, trials: 2}", "{epochs: 1}"))
    assert error.path == "tune.objective" and "train.validation_split > 0" in str(error)
    error = refused(write_spec, with_tune("{search: {model.cell: {choice: [lstm, gru]}}, trials: 2}",
                                          extra="matrix: {model.cell: [lstm, gru]}"))
    assert error.path == "tune.search.model.cell" and "matrix axis model.cell" in str(error)


def test_a_key_that_only_some_matrix_points_take_is_named_with_the_point(write_spec):
    # A classifier has no `attention`: the error says which point cannot take the value.
    error = refused(write_spec, with_tune("{search: {model.forget_bias: {uniform: [0.0, 5.0]}}, trials: 2}",
                                          extra="matrix: {model.cell: [lstm, gru]}"))
    assert error.path == "tune.search.model.forget_bias"
    assert "cell='gru'" in str(error)


def test_a_probe_and_a_counted_model_have_nothing_to_tune(write_spec):
    error = refused(write_spec, """
        version: 1
        name: p
        probe: {name: unroll}
        tune: {search: {probe.steps: {integer: [2, 4]}}, trials: 2}
    """)
    assert error.path == "tune"
    error = refused(write_spec, """
        version: 1
        name: n
        task: {name: char_lm, n_train: 200, n_test: 50}
        model: {kind: ngram, order: 2}
        train: {validation_split: 0.1}
        tune: {search: {model.order: {integer: [2, 3]}}, trials: 2}
    """)
    assert error.path == "tune" and "counting" in str(error)


def test_the_objective_is_the_best_epoch_and_a_non_finite_epoch_counts_for_nothing():
    history = [{"val_loss": 0.9}, {"val_loss": float("nan")}, {"val_loss": 0.4}, {"val_loss": 0.6}]
    assert best_epoch_value(history, "val_loss", "minimize") == 0.4
    assert best_epoch_value(history, "val_loss", "maximize") == 0.9
    assert best_epoch_value([{"val_loss": float("inf")}], "val_loss", "minimize") is None


def trials_of(folder):
    return pd.read_csv(folder / "tuning" / "trials.csv")


@pytest.mark.slow
def test_each_point_gets_the_budget_in_worker_processes_then_its_best_setting_on_every_seed(write_spec, tmp_path,
                                                                                          capsys):
    spec = write_spec(TUNED)
    code, out, err = run_cli(capsys, "run", spec, "--out", tmp_path / "r", "--jobs", "2")
    assert code == 0, out + err
    assert "2 worker processes" in out
    folder = tmp_path / "r" / "tuned"
    trials = trials_of(folder)
    assert trials.groupby("model.cell").size().to_dict() == {"gru": 3, "simple_rnn": 3}
    assert trials.epochs.notna().all()  # each worker reported its epochs to the database
    assert set(trials.state) <= {"complete", "pruned"}
    assert "[tune 6/6]" in out and "trial 2" in out and "trial 3" not in out  # Optuna's numbers, from 0
    said = [line for line in out.splitlines() if line.startswith("[tune ")]  # time left from trials' durations
    assert said[0].endswith(" left") and " elapsed, about " in said[0] and not said[-1].endswith(" left")
    best = pd.read_csv(folder / "tuning" / "best.csv").set_index("model.cell")
    runs = pd.read_csv(folder / "runs.csv")
    assert len(runs) == 4 and set(runs.status) == {"ok"}
    for _, run in runs.iterrows():  # each run trained its point's chosen values, on every seed
        chosen = best.loc[run["model.cell"]]
        assert run["tuned.train.optimizer.learning_rate"] == pytest.approx(chosen["best.train.optimizer.learning_rate"])
        assert run["tuned.model.units"] == chosen["best.model.units"]
        resolved = json.loads((folder / run.run_id / "metrics.json").read_text())
        assert resolved["tuned"]["model.units"] == chosen["best.model.units"]
        assert f"units: {int(chosen['best.model.units'])}" in (folder / run.run_id / "spec.yaml").read_text()
    assert sorted(runs.seed) == [0, 0, 1, 1]
    # The chosen trial is the best complete one of its point.
    for cell, group in trials[trials.state == "complete"].groupby("model.cell"):
        assert best.loc[cell, "best"] == pytest.approx(group.objective.min())
    # Trials never read the test set: no evaluation, no outputs, no kept model; the record has the objective only.
    for trial_folder in (folder / "tuning").glob("trial-*"):
        record = json.loads((trial_folder / "metrics.json").read_text())
        assert set(record["metrics"]) == {"val_loss", "epochs"}
        assert not (trial_folder / "model.keras").exists() and not (trial_folder / "outputs.csv").exists()
        assert record["trial"]["value"] == pytest.approx(
            pd.read_csv(trial_folder / "history.csv").val_loss.min())

    # Again: every trial and run is reused; a raised budget continues each study by one trial.
    code, out, _ = run_cli(capsys, "run", spec, "--out", tmp_path / "r", "--jobs", "1")
    assert code == 0 and "started" not in out
    assert "6 of 6 trials done before, reused (a raised tune.trials continues each study)" in out
    code, out, _ = run_cli(capsys, "run", spec, "--out", tmp_path / "r", "--jobs", "1", "--set", "tune.trials=4")
    assert code == 0, out
    assert trials_of(folder).groupby("model.cell").size().to_dict() == {"gru": 4, "simple_rnn": 4}
    assert out.count("started trial 3 of") == 2

    # table --rebuild reads the chosen runs back (not the untuned ones the spec alone gives).
    before = pd.read_csv(folder / "runs.csv")
    code, out, err = run_cli(capsys, "table", folder, "--rebuild")
    assert code == 0, out + err
    pd.testing.assert_frame_equal(pd.read_csv(folder / "runs.csv"), before)


@pytest.mark.system
def test_a_trial_left_running_by_a_killed_command_is_trained_again_and_not_counted(write_spec, tmp_path, capsys):
    spec = write_spec(TUNED.replace("model.cell: [simple_rnn, gru]", "model.cell: [gru]").replace(
        "trials: 3", "trials: 2"))
    out_root = tmp_path / "r"
    assert run_cli(capsys, "run", spec, "--out", out_root, "--jobs", "1").code == 0
    folder = out_root / "tuned"
    storage = f"sqlite:///{folder / 'tuning' / 'studies.db'}"
    (name,) = optuna.get_all_study_names(storage)
    study = optuna.load_study(study_name=name, storage=storage)
    left = study.ask({"model.units": optuna.distributions.IntDistribution(2, 6),
                      "train.optimizer.learning_rate": optuna.distributions.FloatDistribution(1e-3, 1e-1, log=True)})
    assert left.number == 2  # as a command killed while training its third trial leaves it: running
    code, out, err = run_cli(capsys, "run", spec, "--out", out_root, "--jobs", "1", "--set", "tune.trials=3")
    assert code == 0, out + err
    assert "trial 2 was interrupted; its values are trained again" in out
    assert "2 of 3 trials done before, reused (the rest are trained now)" in out
    trials = optuna.load_study(study_name=name, storage=storage).get_trials()
    assert trials[2].state == optuna.trial.TrialState.FAIL and trials[2].user_attrs[INTERRUPTED]
    assert trials[3].state.is_finished() and trials[3].params == left.params  # the same values, trained
    assert len(trials) == 4  # the interrupted one did not spend the budget of 3


def test_the_pruner_stops_a_trial_worse_than_the_median_at_its_epoch(tmp_path):
    """The worker's side of pruning: each epoch reported to the study through the database, True once the
    median rule says stop."""
    from seqkeras.tuning.pruning import TrialLink, TrialReporter
    from seqkeras.tuning.settings import TuneSpec
    from seqkeras.tuning.study import open_study

    tune = TuneSpec.model_validate({"search": {"model.units": {"integer": [2, 8]}}, "trials": 4,
                                    "startup_trials": 1, "warmup_epochs": 1})
    url = f"sqlite:///{tmp_path / 'studies.db'}"
    study, named = open_study(url, "pruned", "point", {"model.cell": "gru"}, "0" * 64, tune, seed=0)
    good = study.ask({"model.units": optuna.distributions.IntDistribution(2, 8)})
    for epoch, value in enumerate([0.9, 0.5, 0.3], start=1):
        good.report(value, epoch)
    study.tell(good, 0.3)
    trial = study.ask({"model.units": optuna.distributions.IntDistribution(2, 8)})
    reporter = TrialReporter(TrialLink(url, named.name, trial.number, "val_loss", "minimize", tune.model_dump()))
    assert reporter(1, {"loss": 2.0, "val_loss": 2.0}) is False  # a warm-up epoch: never stopped
    assert reporter(2, {"loss": 0.4, "val_loss": 0.4}) is False  # better than the median at epoch 2
    assert reporter(3, {"loss": 1.0, "val_loss": 1.0}) is True and reporter.pruned_at == 3
    assert study.trials[1].intermediate_values == {1: 2.0, 2: 0.4, 3: 1.0}
    with pytest.raises(KeyError, match="val_accuracy.*not in the training history"):
        TrialReporter(TrialLink(url, named.name, trial.number, "val_accuracy", "maximize", tune.model_dump()))(
            4, {"val_loss": 1.0})


def test_the_trainer_stops_where_after_epoch_says_so():
    import keras

    from seqkeras.tasks.delayed_recall import Params, build
    from seqkeras.training import trainer
    from seqkeras.training.settings import TrainSpec

    data = build(Params(lag=3, n_train=32, n_test=8), seed=0)
    model = keras.Sequential([keras.layers.Embedding(len(data.vocabulary), 4), keras.layers.GRU(4),
                              keras.layers.Dense(data.num_outputs, activation="softmax")])
    seen = []
    history, _ = trainer.fit(model, data, TrainSpec(epochs=5, batch_size=16, verbose=0, validation_split=0.25),
                             after_epoch=lambda epoch, row: seen.append(epoch) or epoch == 2)
    assert seen == [1, 2] and list(history.epoch) == [1, 2] and "val_loss" in history


def test_dry_run_says_what_tuning_will_do(write_spec, tmp_path, capsys):
    code, out, _ = run_cli(capsys, "run", write_spec(TUNED), "--out", tmp_path, "--dry-run")
    assert code == 0
    assert "tune: 2 matrix point(s) × 3 trials on seed 0 (0 of 6 done" in out
    assert not (tmp_path / "tuned").exists()


@pytest.mark.slow
def test_trials_go_to_mlflow_and_tensorboard_when_asked(write_spec, tmp_path, capsys):
    pytest.importorskip("mlflow")
    spec = write_spec(TUNED.replace("model.cell: [simple_rnn, gru]", "model.cell: [gru]").replace(
        "trials: 3", "trials: 2").replace("verbose: 0,", "verbose: 0, tensorboard: true,"))
    code, out, err = run_cli(capsys, "run", spec, "--out", tmp_path / "r", "--jobs", "1", "--track", "mlflow")
    assert code == 0, out + err
    assert "not logged" not in out + err
    trial_folders = sorted((tmp_path / "r" / "tuned" / "tuning").glob("trial-*"))
    assert len(trial_folders) == 2 and all(any((f / "tensorboard").rglob("events.*")) for f in trial_folders)
    import mlflow

    client = mlflow.MlflowClient(tracking_uri=f"sqlite:///{tmp_path / 'r' / 'mlflow.db'}")
    (experiment,) = [e for e in client.search_experiments() if e.name == "tuned"]
    runs = client.search_runs([experiment.experiment_id])
    trials = [run for run in runs if run.data.tags.get("seqkeras.tuning_trial") == "true"]
    assert sorted(run.info.run_name for run in trials) == [f.name for f in trial_folders]
    assert len(runs) == 4  # the two trials and the chosen setting on both seeds


@pytest.mark.parametrize("make", ["link", "garbage"])
def test_a_studies_file_that_is_a_link_or_not_a_database_is_one_line(write_spec, tmp_path, capsys, make):
    studies = tmp_path / "r" / "tuned" / "tuning" / "studies.db"
    studies.parent.mkdir(parents=True)
    outside = tmp_path / "outside.db"
    if make == "link":
        outside.write_bytes(b"")
        studies.symlink_to(outside)
    else:
        studies.write_bytes(b"not a database\n" * 100)
    code, out, err = run_cli(capsys, "run", write_spec(TUNED), "--out", tmp_path / "r", "--jobs", "1")
    assert code == 2 and "Traceback" not in err
    assert "studies.db" in err and len(err.strip().splitlines()) == 1, err
    if make == "link":
        assert outside.read_bytes() == b""  # nothing written through the link
    assert not list((tmp_path / "r" / "tuned" / "tuning").glob("trial-*"))  # nothing trained


def test_a_trial_record_is_read_as_carefully_as_a_spec():
    from seqkeras.execution.tuning import trial_outcome

    assert trial_outcome({"trial": {"number": 2, "value": 0.5, "pruned_at": None}}, 2) == {
        "value": 0.5, "pruned_at": None}
    for damaged in [{"trial": 5}, {"trial": {"number": 1, "value": 0.5}}, {"trial": {"number": 2, "value": "0.5"}},
                    {"trial": {"number": 2, "value": float("nan")}}, {"trial": {"number": 2, "pruned_at": True}},
                    {}]:
        assert trial_outcome(damaged, 2) is None, damaged


def test_the_chosen_values_do_not_tell_runs_apart():
    """tuned.* columns describe a matrix point's runs; a table that pools a matrix key pools them with it."""
    from seqkeras.results.folder import identity_columns

    runs = pd.DataFrame({"model.cell": ["lstm", "lstm"], "task.lag": [5, 25], "tuned.model.units": [6, 11],
                         "decoder": ["greedy", "greedy"], "seed": [0, 0], "accuracy": [0.9, 0.8]})
    assert identity_columns(runs) == ["model.cell", "task.lag", "decoder"]


def test_a_process_connects_to_a_studies_file_once_and_again_once_it_is_replaced(tmp_path):
    from seqkeras.tuning.study import storage

    url = f"sqlite:///{tmp_path / 'studies.db'}"
    storage(url)  # makes the file
    assert storage(url) is storage(url)
    first = storage(url)
    optuna.create_study(storage=first, study_name="a")
    (tmp_path / "studies.db").unlink()
    assert storage(url) is not first  # a new file: a new connection, never the deleted file's
    assert optuna.get_all_study_names(storage(url)) == []


def test_a_trial_already_finished_in_the_study_is_not_told_twice(tmp_path):
    """Two commands on one database: a trial the other one took for interrupted is left as the study has it."""
    from seqkeras.execution.tuning import Point, Trials
    from seqkeras.tuning.settings import TuneSpec
    from seqkeras.tuning.study import open_study

    tune = TuneSpec.model_validate({"search": {"model.units": {"integer": [2, 8]}}, "trials": 2})
    study, named = open_study(f"sqlite:///{tmp_path / 'studies.db'}", "tuned", "point", {}, "0" * 64, tune, seed=0)
    trial = study.ask({"model.units": optuna.distributions.IntDistribution(2, 8)})
    study.tell(trial.number, state=optuna.trial.TrialState.FAIL)
    said = []
    trials = Trials.__new__(Trials)
    trials.echo = said.append
    from types import SimpleNamespace

    point = Point([SimpleNamespace(matrix_values={"model.cell": "gru"}, point={})], "point", "0" * 64, named.name,
                  study)
    trials.tell(point, trial.number, {"status": "ok", "trial": {"number": trial.number, "value": 0.5}})
    assert study.trials[0].state == optuna.trial.TrialState.FAIL
    assert said and "already marked finished" in said[0]


@pytest.mark.system
def test_trials_run_as_ray_tasks_as_many_at_once_as_the_cluster_holds(write_spec, tmp_path, capsys):
    pytest.importorskip("ray", reason="Ray is optional: pip install -r requirements-ray.txt")
    import ray

    from seqkeras.execution.executors import RayExecutor

    spec = write_spec(TUNED.replace("trials: 3", "trials: 2"))
    try:
        code, out, err = run_cli(capsys, "run", spec, "--out", tmp_path / "r", "--executor", "ray",
                                 "--cpus-per-run", "1")
        cpus = ray.cluster_resources()["CPU"]  # the local instance this command started
        widths = [RayExecutor(None, "tensorflow", share, 0).width() for share in (1, cpus, 2 * cpus)]
    finally:
        ray.shutdown()
    assert code == 0, out + err
    assert widths == [int(cpus), 1, 1]  # trials in flight: as many as the CPUs hold, and at least one
    trials = trials_of(tmp_path / "r" / "tuned")
    assert trials.groupby("model.cell").size().to_dict() == {"gru": 2, "simple_rnn": 2}
    assert set(trials.state) <= {"complete", "pruned"} and trials.epochs.notna().all()


# --------------------------------------------------------------------------- named studies

ONE_POINT = TUNED.replace("model.cell: [simple_rnn, gru]", "model.cell: [gru]").replace(
    "trials: 3", "trials: 2").replace("epochs: 3", "epochs: 1").replace("seeds: [0, 1]", "seeds: [0]")


def dashboard_get(app, path: str) -> dict:
    """GET `path` of optuna-dashboard's WSGI app, in this process (no server, no browser)."""
    from wsgiref.util import setup_testing_defaults

    environ = {"PATH_INFO": path, "REQUEST_METHOD": "GET"}
    setup_testing_defaults(environ)
    status = []
    body = b"".join(app(environ, lambda code, headers, *rest: status.append(code)))
    assert status[0].startswith("200"), (status, body[:300])
    return json.loads(body)


def tuned_study(folder):
    storage = f"sqlite:///{folder / 'tuning' / 'studies.db'}"
    (name,) = optuna.get_all_study_names(storage)
    return storage, optuna.load_study(study_name=name, storage=storage)


@pytest.fixture(scope="module")
def one_point_tuned(tmp_path_factory):
    """`seqkeras run` of ONE_POINT (one study of two trials, then its chosen setting on one seed), once for the
    named-study tests: its spec, exit code, stdout, stderr and results folder. A test that writes copies it."""
    root = tmp_path_factory.mktemp("one-point-tuned")
    spec = root / "spec.yaml"
    spec.write_text(textwrap.dedent(ONE_POINT), encoding="utf-8")
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["run", str(spec), "--out", str(root / "r"), "--jobs", "1"])
    return spec, code, out.getvalue(), err.getvalue(), root / "r" / "tuned"


def test_a_study_is_named_after_its_experiment_and_point_and_numbers_its_trials_as_optuna(one_point_tuned):
    wsgi = pytest.importorskip("optuna_dashboard", reason="pip install -r requirements-tracking.txt").wsgi
    _, code, out, err, folder = one_point_tuned
    assert code == 0, out + err
    storage, study = tuned_study(folder)
    experiment, _, key = study.study_name.partition("/")
    assert experiment == "tuned" and re.fullmatch(r"cell=gru_[0-9a-f]{8}", key), study.study_name
    assert study.metric_names == ["val_loss"] and study.direction == optuna.study.StudyDirection.MINIMIZE
    attributes = study.user_attrs
    assert {name: attributes[name] for name in ("experiment", "point", "metric", "direction", "first_trial_folder")} \
        == {"experiment": "tuned", "point": {"model.cell": "gru"}, "metric": "val_loss", "direction": "minimize",
            "first_trial_folder": 0}
    assert re.fullmatch(r"[0-9a-f]{64}", attributes["spec_identity"]) and key.endswith(attributes["spec_identity"][:8])

    # One number for a trial: Optuna's, its folder's, its record's, trials.csv's and the progress lines'.
    trials = study.get_trials()
    assert [trial.number for trial in trials] == [0, 1]
    folders = sorted(path.name for path in (folder / "tuning").glob("trial-*"))
    assert folders == [f"trial-000_{key}", f"trial-001_{key}"]
    for trial in trials:
        assert trial.user_attrs["run_id"] == f"trial-{trial.number:03d}_{key}"
        record = json.loads((folder / "tuning" / trial.user_attrs["run_id"] / "metrics.json").read_text())
        assert record["trial"]["number"] == trial.number
    assert trials_of(folder)["trial"].tolist() == [0, 1]
    assert "gru, trial 0:" in out and "gru, trial 1:" in out
    best = pd.read_csv(folder / "tuning" / "best.csv")
    assert best["best_trial"].tolist() == [study.best_trial.number]

    # The dashboard shows the study by its name, its objective by its metric, and the suite's trial numbers.
    app = wsgi(storage)
    (summary,) = dashboard_get(app, "/api/studies")["study_summaries"]
    assert summary["study_name"] == study.study_name
    detail = dashboard_get(app, f"/api/studies/{summary['study_id']}")
    assert detail["name"] == study.study_name and detail["objective_names"] == ["val_loss"]
    assert {"key": "experiment", "value": "tuned"} in detail["user_attrs"]
    assert [trial["number"] for trial in detail["trials"]] == [0, 1]
    assert [next(a["value"] for a in trial["user_attrs"] if a["key"] == "run_id") for trial in detail["trials"]] \
        == folders


def test_a_study_from_before_studies_were_named_is_read_and_continued_as_it_was_numbered(one_point_tuned, tmp_path,
                                                                                          capsys):
    """A results folder of seqkeras 0.1.0: each study named by its point key alone, its folders numbered from 1.
    Made here from a fresh one (the study copied to its former name, the folders renumbered)."""
    spec, code, _, _, fresh = one_point_tuned
    assert code == 0
    folder = tmp_path / "r" / "tuned"
    shutil.copytree(fresh, folder)
    storage, study = tuned_study(folder)
    key = study.study_name.partition("/")[2]
    former = optuna.create_study(storage=storage, study_name=key, direction="minimize")  # no attributes, no metric
    for trial in study.get_trials():
        trial.set_user_attr("run_id", f"trial-{trial.number + 1:03d}_{key}")
        former.add_trial(trial)
    optuna.delete_study(study_name=study.study_name, storage=storage)
    for number in reversed(range(len(former.trials))):
        (folder / "tuning" / f"trial-{number:03d}_{key}").rename(folder / "tuning" / f"trial-{number + 1:03d}_{key}")
    runs_before = pd.read_csv(folder / "runs.csv")

    # Read: table --rebuild finds the chosen runs through the study's former name.
    code, out, err = run_cli(capsys, "table", folder, "--rebuild")
    assert code == 0, out + err
    pd.testing.assert_frame_equal(pd.read_csv(folder / "runs.csv"), runs_before)
    # Continued: a raised budget adds trial 2 to the same study, in folder trial-003 (its numbering), and names it.
    code, out, err = run_cli(capsys, "run", spec, "--out", tmp_path / "r", "--jobs", "1", "--set", "tune.trials=3")
    assert code == 0, out + err
    assert optuna.get_all_study_names(storage) == [key]
    continued = optuna.load_study(study_name=key, storage=storage)
    assert len(continued.trials) == 3 and continued.user_attrs["first_trial_folder"] == 1
    assert continued.metric_names == ["val_loss"] and continued.user_attrs["experiment"] == "tuned"
    assert sorted(path.name for path in (folder / "tuning").glob("trial-*")) == [
        f"trial-{number:03d}_{key}" for number in (1, 2, 3)]
    assert trials_of(folder)["trial"].tolist() == [1, 2, 3]
    assert "gru, trial 3:" in out
