"""TensorBoard event files and MLflow tracking, read back with TensorBoard's and MLflow's own readers."""

from __future__ import annotations

import json
import math
import time
import warnings
from datetime import datetime

import pandas as pd
import pytest
import yaml

import seqkeras
from seqkeras.cli import main
from seqkeras.errors import SpecError
from tests.conftest import TINY_TRAINING_SPEC

pytest.importorskip("tensorboard", reason="pip install -r requirements-tracking.txt")


def scalars(run_folder) -> dict[str, list[tuple[int, float]]]:
    """Every scalar of the run's event files, by tag, as (step, value), through TensorBoard's reader."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    events = EventAccumulator(str(run_folder / "tensorboard"))
    events.Reload()
    return {tag: [(event.step, event.value) for event in events.Scalars(tag)] for tag in events.Tags()["scalars"]}


def test_tensorboard_logs_each_epoch_and_the_test_metrics(tiny_spec, tmp_path):
    results = seqkeras.run(tiny_spec, out=tmp_path, overrides={"train.epochs": 3}, only=["seed=0"], tensorboard=True)
    assert len(results.runs) == 2
    for _, run in results.runs.iterrows():
        folder = results.folder / run["run_id"]
        logged = scalars(folder)
        history = pd.read_csv(folder / "history.csv")
        for column in ("loss", "accuracy"):
            assert [step for step, _ in logged[column]] == [1, 2, 3]
            assert [value for _, value in logged[column]] == pytest.approx(list(history[column]), rel=1e-6)
        assert logged["test/accuracy"] == [(3, pytest.approx(run["accuracy"], rel=1e-6))]
        assert "tensorboard: true" in (folder / "spec.yaml").read_text()


def test_tensorboard_logs_the_gradient_flow_curve(write_spec, tmp_path):
    spec = yaml.safe_load(TINY_TRAINING_SPEC)
    spec.update(matrix={}, seeds=[0], expect=[], table=None)
    spec["model"]["cell"] = "lstm"
    spec["evaluate"] = {"diagnostics": ["gradient_flow"]}
    spec["train"]["tensorboard"] = True
    results = seqkeras.run(spec, out=tmp_path)
    folder = results.folder / results.runs["run_id"][0]
    curve = pd.read_csv(folder / "gradient_flow.csv")
    logged = scalars(folder)
    assert [step for step, _ in logged["gradient_flow/at_init"]] == list(curve["steps_back"])
    assert [value for _, value in logged["gradient_flow/trained"]] == pytest.approx(list(curve["trained"]), rel=1e-6)


def test_a_missing_tensorboard_package_is_refused_before_anything_runs(tiny_spec, tmp_path, monkeypatch, capsys):
    from seqkeras.spec import checks

    monkeypatch.setattr(checks, "tensorboard_missing", lambda: "train.tensorboard needs the tensorboard package")
    assert main(["run", str(tiny_spec), "--out", str(tmp_path / "out"), "--tensorboard"]) == 2
    assert "train.tensorboard: train.tensorboard needs the tensorboard package" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


# --------------------------------------------------------------------------- #
# MLflow
# --------------------------------------------------------------------------- #


def mlflow_runs(uri: str, experiment: str):
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=uri)
    found = client.get_experiment_by_name(experiment)
    return client, ([] if found is None else client.search_runs([found.experiment_id]))


def test_every_run_and_every_metric_of_runs_csv_reaches_mlflow(tiny_spec, tmp_path, capsys):
    pytest.importorskip("mlflow")
    # Both cells, one seed: two runs, each logged while it trains (the seeds' runs would log the same way).
    assert main(["run", str(tiny_spec), "--out", str(tmp_path), "--only", "seed=0", "--track", "mlflow"]) == 0
    assert (tmp_path / "mlflow.db").is_file()  # the default store: a SQLite file in the results root
    runs = pd.read_csv(tmp_path / "tiny" / "runs.csv")
    assert sorted(runs["model.cell"]) == ["lstm", "simple_rnn"]
    client, logged = mlflow_runs(f"sqlite:///{tmp_path / 'mlflow.db'}", "tiny")
    by_id = {run.data.tags["seqkeras.run_id"]: run for run in logged}
    assert sorted(by_id) == sorted(runs["run_id"])
    for _, row in runs.iterrows():
        run = by_id[row["run_id"]]
        assert run.info.status == "FINISHED" and run.data.tags["seqkeras.experiment"] == "tiny"
        assert run.data.params["model.cell"] == row["model.cell"] and run.data.params["seed"] == str(row["seed"])
        # Every number of the run's row in runs.csv that is not its identity (matrix values, seed).
        numbers = [c for c in runs.columns if pd.api.types.is_numeric_dtype(runs[c]) and c not in ("seed", "error")
                   and not c.startswith(("task.", "model.", "train.", "evaluate."))]
        assert {"accuracy", "params", "train_seconds"} <= set(numbers)
        for metric in numbers:  # still_improving, a bool, as MLflow's 1 or 0
            assert run.data.metrics[metric] == pytest.approx(float(row[metric]), rel=1e-9), metric
        history = pd.read_csv(tmp_path / "tiny" / row["run_id"] / "history.csv")
        epochs = client.get_metric_history(run.info.run_id, "epoch/loss")
        assert [(m.step, m.value) for m in epochs] == [(e, pytest.approx(v)) for e, v in zip(history["epoch"],
                                                                                            history["loss"])]
        artifacts = {a.path for a in client.list_artifacts(run.info.run_id)}
        assert {"metrics.json", "spec.yaml", "history.csv"} <= artifacts
    # A rerun that reuses the records logs nothing twice.
    assert main(["run", str(tiny_spec), "--out", str(tmp_path), "--only", "seed=0", "--track", "mlflow"]) == 0
    assert len(mlflow_runs(f"sqlite:///{tmp_path / 'mlflow.db'}", "tiny")[1]) == len(runs)


def test_track_logs_results_that_exist_with_their_own_times(tmp_path, capsys, trained_runs):
    pytest.importorskip("mlflow")
    trained = trained_runs.copied_experiment(TINY_TRAINING_SPEC, tmp_path / "results")  # results written earlier
    count = len(pd.read_csv(trained / "runs.csv"))
    assert count == 4  # two cells, two seeds
    uri = f"sqlite:///{tmp_path / 'elsewhere.db'}"
    assert main(["track", str(tmp_path / "results"), "--track", f"mlflow={uri}"]) == 0
    captured = capsys.readouterr()
    assert f"tiny: {count} of {count} run(s)" in captured.out and "old name" not in captured.err
    _, logged = mlflow_runs(uri, "tiny")
    assert len(logged) == count and not (tmp_path / "results" / "mlflow.db").exists()
    for run in logged:  # the run's start and duration, from its record, not the moment it was logged
        record = json.loads((tmp_path / "results" / "tiny" / run.data.tags["seqkeras.run_id"] / "metrics.json")
                            .read_text())
        started = datetime.fromisoformat(record["started"]).timestamp() * 1000
        assert run.info.start_time == pytest.approx(started, abs=1)
        assert run.info.end_time - run.info.start_time == pytest.approx(record["seconds"] * 1000, abs=1)


def test_export_is_the_old_name_of_track_and_says_so_once(tmp_path, capsys):
    pytest.importorskip("mlflow")
    code = main(["export", str(tmp_path / "missing"), "--track", f"mlflow=sqlite:///{tmp_path / 'store.db'}"])
    err = capsys.readouterr().err
    assert code == 2  # the same command: the same check of its input
    assert err.count("note: `seqkeras export` is the old name of `seqkeras track`") == 1, err


def test_metric_names_of_evaluation_rows():
    from seqkeras.tracking.mlflow_records import record_metrics

    record = {"rows": [{"keys": {"decoder": "beam", "decoder.width": 5}, "metrics": {"bleu": 12.5, "note": "x"}}],
              "params": 10, "train_seconds": 1.5, "seconds": float("nan")}
    from pathlib import Path

    assert record_metrics(record, Path("/nonexistent")) == [
        ("decoder_beam/decoder.width_5/bleu", 12.5, 0), ("params", 10.0, 0), ("train_seconds", 1.5, 0)]
    assert not any(math.isnan(value) for _, value, _ in record_metrics(record, Path("/nonexistent")))


def test_a_tracking_failure_is_said_and_the_run_is_still_recorded(tiny_spec, tmp_path, capsys, monkeypatch):
    pytest.importorskip("mlflow")
    from seqkeras.tracking import mlflow_live, mlflow_tracking

    def fails(*_):  # a store that worked when checked (a bad one is refused before training) fails later
        raise RuntimeError("the store went away")

    for module in (mlflow_live, mlflow_tracking):  # while the run trains, and when the command logs its record
        monkeypatch.setattr(module, "store_write", fails)
    code = main(["run", str(tiny_spec), "--out", str(tmp_path), "--only", "seed=0", "--only", "model.cell=lstm",
                 "--track", "mlflow"])
    captured = capsys.readouterr()
    assert code == 0, captured
    assert "live logging to the tracker stopped (RuntimeError: the store went away)" in captured.err
    assert "not logged to the tracker" in captured.out and "its folder and runs.csv have it" in captured.out
    assert list(pd.read_csv(tmp_path / "tiny" / "runs.csv")["status"]) == ["ok"]


def test_a_run_whose_live_logging_failed_is_logged_whole_when_it_ends(tiny_spec, tmp_path, capsys, monkeypatch):
    pytest.importorskip("mlflow")
    from seqkeras.tracking import mlflow_live

    def fails(*_):
        raise RuntimeError("the server hiccuped")

    monkeypatch.setattr(mlflow_live, "log_metrics", fails)  # the first epoch's write fails, in the live run only
    code = main(["run", str(tiny_spec), "--out", str(tmp_path), "--only", "seed=0", "--only", "model.cell=lstm",
                 "--set", "train.epochs=2", "--track", "mlflow"])
    captured = capsys.readouterr()
    assert code == 0, captured
    assert captured.err.count("live logging to the tracker stopped (RuntimeError: the server hiccuped)") == 1
    client, (run,) = mlflow_runs(f"sqlite:///{tmp_path / 'mlflow.db'}", "tiny")  # the half-logged one is gone
    assert run.info.status == "FINISHED"
    assert [m.step for m in client.get_metric_history(run.info.run_id, "epoch/loss")] == [1, 2]


@pytest.mark.parametrize("option, message", [
    ("wandb", "the tracker is mlflow"),
    ("mlflow=", "give the tracking URI after '='"),
])
def test_a_bad_track_option_is_refused(tiny_spec, tmp_path, capsys, option, message):
    assert main(["run", str(tiny_spec), "--out", str(tmp_path / "out"), "--track", option]) == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_track_in_the_api_is_validated_as_on_the_command_line(tiny_spec, tmp_path):
    with pytest.raises(SpecError, match="the tracker is mlflow"):
        seqkeras.run(tiny_spec, out=tmp_path, track="comet")


# --------------------------------------------------------------------------- #
# MLflow, while the run trains (the store a file: the real server's test is tests/test_tracking_server.py)
# --------------------------------------------------------------------------- #


def test_a_run_is_logged_while_it_trains_and_its_model_is_an_mlflow_logged_model(tiny_spec, tmp_path, capsys,
                                                                                  monkeypatch):
    pytest.importorskip("mlflow")
    import mlflow
    import numpy as np

    from mlflow.entities import LoggedModelStatus

    from seqkeras.tracking.mlflow_live import LiveRun

    uri = f"sqlite:///{tmp_path / 'store.db'}"
    seen = []  # what the store holds once each epoch is logged: the run is open, its epochs so far are in

    def epoch_and_look(self, epoch, logs):
        logged(self, epoch, logs)
        run = self.client.get_run(self.run_id)
        seen.append((epoch, run.info.status, len(self.client.get_metric_history(self.run_id, "epoch/loss")),
                     time.time() * 1000))

    logged = LiveRun.epoch
    monkeypatch.setattr(LiveRun, "epoch", epoch_and_look)
    (tmp_path / "cwd").mkdir()
    monkeypatch.chdir(tmp_path / "cwd")
    code = main(["run", str(tiny_spec), "--out", str(tmp_path / "results"), "--only", "seed=0",
                 "--only", "model.cell=lstm", "--set", "train.epochs=3", "--set", "train.keep_model=true",
                 "--track", f"mlflow={uri}"])
    assert code == 0, capsys.readouterr()
    assert list((tmp_path / "cwd").iterdir()) == []  # nothing written where the command was started
    assert [(epoch, status, count) for epoch, status, count, _ in seen] == [(1, "RUNNING", 1), (2, "RUNNING", 2),
                                                                           (3, "RUNNING", 3)]
    client, (run,) = mlflow_runs(uri, "tiny")  # one MLflow run: the command found it logged and left it
    folder = tmp_path / "results" / "tiny" / run.data.tags["seqkeras.run_id"]
    record = json.loads((folder / "metrics.json").read_text())
    assert run.info.status == "FINISHED" and run.data.tags["seqkeras.status"] == "ok"
    # Opened as the run started, closed as it ended: its duration is the run's, and each epoch came before the end.
    started = datetime.fromisoformat(record["started"]).timestamp() * 1000
    assert run.info.start_time == pytest.approx(started, abs=1)
    assert record["seconds"] * 1000 - 100 <= run.info.end_time - run.info.start_time  # the record's start: whole
    assert run.info.end_time - run.info.start_time <= record["seconds"] * 1000 + 1500  # seconds, up to one more
    epochs = client.get_metric_history(run.info.run_id, "epoch/loss")
    history = pd.read_csv(folder / "history.csv")
    assert [(m.step, m.value) for m in epochs] == [(e, pytest.approx(v)) for e, v in zip(history["epoch"],
                                                                                        history["loss"])]
    assert [m.timestamp for m in epochs] == sorted(m.timestamp for m in epochs) < [run.info.end_time] * 3
    assert run.data.metrics["accuracy"] == pytest.approx(record["metrics"]["accuracy"])
    assert "metrics.json" in {a.path for a in client.list_artifacts(run.info.run_id)}
    # The kept model: an MLflow logged model of the run, found by MLflow's search and read by its loaders.
    mlflow.set_tracking_uri(uri)
    try:
        (model,) = mlflow.search_logged_models(experiment_ids=[run.info.experiment_id], output_format="list")
        assert model.source_run_id == run.info.run_id and model.status == LoggedModelStatus.READY
        assert model.tags["seqkeras.run_id"] == folder.name
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            loaded = mlflow.keras.load_model(f"models:/{model.model_id}")
            as_pyfunc = mlflow.pyfunc.load_model(f"models:/{model.model_id}")
        assert [str(w.message) for w in caught if "keras" in w.filename] == []  # e.g. skipped optimizer variables
    finally:
        mlflow.set_tracking_uri(None)
    kept = seqkeras.load_model(folder)
    ids = kept.encode(["1 2 3 4 5"]).ids.astype("int32")
    expected = kept.model.predict(ids, verbose=0)
    np.testing.assert_allclose(loaded.predict(ids, verbose=0), expected, atol=1e-6)
    np.testing.assert_allclose(np.asarray(as_pyfunc.predict(ids)), expected, atol=1e-6)


def test_a_failed_run_is_marked_failed_with_the_epochs_it_reached(tiny_spec, tmp_path, capsys, monkeypatch):
    pytest.importorskip("mlflow")
    from seqkeras.training import trainer

    def fails_in_epoch_two(self, row, model):
        if row["epoch"] == 2:
            raise RuntimeError("the run broke in epoch 2")
        return False

    monkeypatch.setattr(trainer.EarlyStopper, "update", fails_in_epoch_two)
    uri = f"sqlite:///{tmp_path / 'store.db'}"
    code = main(["run", str(tiny_spec), "--out", str(tmp_path / "results"), "--only", "seed=0",
                 "--only", "model.cell=lstm", "--set", "train.epochs=3", "--track", f"mlflow={uri}"])
    assert code == 1, capsys.readouterr()
    client, (run,) = mlflow_runs(uri, "tiny")
    assert run.info.status == "FAILED" and run.data.tags["seqkeras.status"] == "failed"
    assert run.info.end_time > run.info.start_time
    assert [m.step for m in client.get_metric_history(run.info.run_id, "epoch/loss")] == [1, 2]
    assert "metrics.json" in {a.path for a in client.list_artifacts(run.info.run_id)}


def test_a_live_run_its_process_left_open_is_marked_failed_when_the_record_is_logged(tmp_path, trained_runs):
    """A worker killed mid-run leaves its MLflow run RUNNING; the command's logging of that folder ends it."""
    pytest.importorskip("mlflow")
    from seqkeras.tracking.mlflow_store import parse_track
    from seqkeras.tracking.mlflow_tracking import MlflowTracker

    experiment = trained_runs.copied_experiment(TINY_TRAINING_SPEC, tmp_path / "results")  # a finished run of it
    runs = pd.read_csv(experiment / "runs.csv")
    (run_id,) = runs[(runs["seed"] == 0) & (runs["model.cell"] == "lstm")]["run_id"]
    folder = experiment / run_id
    record = json.loads((folder / "metrics.json").read_text())
    tracker = MlflowTracker(parse_track(f"mlflow=sqlite:///{tmp_path / 'store.db'}", tmp_path), tmp_path)
    left_open = tracker.live(experiment).open({**record, "started": "2026-01-01T00:00:00+00:00"}, folder)
    left_open.epoch(1, {"loss": 1.5})
    assert tracker.log(record, folder) is None
    client, runs = mlflow_runs(tracker.uri, "tiny")
    by_status = {run.data.tags["seqkeras.status"]: run for run in runs}
    assert sorted(by_status) == ["interrupted", "ok"]
    assert by_status["interrupted"].info.status == "FAILED" and by_status["ok"].info.status == "FINISHED"
    interrupted = by_status["interrupted"].info
    assert interrupted.end_time == client.get_metric_history(interrupted.run_id, "epoch/loss")[0].timestamp
