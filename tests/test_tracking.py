"""TensorBoard event files and MLflow tracking, read back with TensorBoard's and MLflow's own readers."""

from __future__ import annotations

import math

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
    assert main(["run", str(tiny_spec), "--out", str(tmp_path), "--track", "mlflow"]) == 0
    assert (tmp_path / "mlflow.db").is_file()  # the default store: a SQLite file in the results root
    runs = pd.read_csv(tmp_path / "tiny" / "runs.csv")
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
        for metric in numbers:
            assert run.data.metrics[metric] == pytest.approx(row[metric], rel=1e-9), metric
        history = pd.read_csv(tmp_path / "tiny" / row["run_id"] / "history.csv")
        epochs = client.get_metric_history(run.info.run_id, "epoch/loss")
        assert [(m.step, m.value) for m in epochs] == [(e, pytest.approx(v)) for e, v in zip(history["epoch"],
                                                                                            history["loss"])]
        artifacts = {a.path for a in client.list_artifacts(run.info.run_id)}
        assert {"metrics.json", "spec.yaml", "history.csv"} <= artifacts
    # A rerun that reuses the records logs nothing twice.
    assert main(["run", str(tiny_spec), "--out", str(tmp_path), "--track", "mlflow"]) == 0
    assert len(mlflow_runs(f"sqlite:///{tmp_path / 'mlflow.db'}", "tiny")[1]) == len(runs)


def test_export_logs_results_that_exist_and_a_run_with_decoder_rows(tiny_spec, tmp_path, capsys):
    pytest.importorskip("mlflow")
    assert main(["run", str(tiny_spec), "--out", str(tmp_path / "results"), "--only", "seed=0"]) == 0
    uri = f"sqlite:///{tmp_path / 'elsewhere.db'}"
    assert main(["export", str(tmp_path / "results"), "--track", f"mlflow={uri}"]) == 0
    assert "tiny: 2 of 2 run(s)" in capsys.readouterr().out
    _, logged = mlflow_runs(uri, "tiny")
    assert len(logged) == 2 and not (tmp_path / "results" / "mlflow.db").exists()


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
    from seqkeras.tracking.mlflow_tracking import MlflowTracker

    def fails(*_):  # a store that worked when checked (a bad one is refused before training) fails later
        raise RuntimeError("the store went away")

    monkeypatch.setattr(MlflowTracker, "_log", fails)
    code = main(["run", str(tiny_spec), "--out", str(tmp_path), "--only", "seed=0", "--only", "model.cell=lstm",
                 "--track", "mlflow"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "not logged to the tracker" in out and "its folder and runs.csv have it" in out
    assert list(pd.read_csv(tmp_path / "tiny" / "runs.csv")["status"]) == ["ok"]


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
