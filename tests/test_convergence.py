"""Under-training made visible: each trained run's record says how its training went, and `run` says how many
runs were still improving when their budget ended (training.convergence)."""

from __future__ import annotations

import json
import math

import pandas as pd

from seqkeras.training.convergence import training_summary
from seqkeras.training.settings import TrainSpec
from tests.conftest import TINY_TRAINING_SPEC


def test_the_summary_names_the_best_epoch_of_the_judged_value_and_what_ended_training():
    falling = pd.DataFrame({"epoch": [1, 2, 3], "loss": [0.9, 0.7, 0.6], "val_loss": [1.0, 0.8, 0.75]})
    assert training_summary(falling, TrainSpec(epochs=3)) == {
        "epochs": 3, "best_epoch": 3, "monitor": "val_loss", "best": 0.75, "stopped_by": "budget",
        "still_improving": True}
    turned = falling.assign(val_loss=[1.0, 0.7, 0.75])
    assert training_summary(turned, TrainSpec(epochs=3))["still_improving"] is False
    stopped = training_summary(turned.iloc[:2], TrainSpec(epochs=10, early_stopping={"monitor": "val_loss"}))
    assert stopped["stopped_by"] == "early_stopping" and stopped["still_improving"] is False
    rising = pd.DataFrame({"loss": [0.5, 0.4], "val_accuracy": [0.6, math.nan]})
    by_accuracy = training_summary(rising, TrainSpec(epochs=2, early_stopping={"monitor": "val_accuracy"}))
    assert by_accuracy["monitor"] == "val_accuracy" and by_accuracy["best_epoch"] == 1  # NaN is no value
    assert training_summary(pd.DataFrame({"loss": [0.5]}), TrainSpec(epochs=1))["monitor"] == "loss"


def test_each_run_records_its_training_and_runs_csv_and_table_md_say_which_were_still_improving(
        trained_runs, tmp_path):
    experiment = trained_runs.copied_experiment(TINY_TRAINING_SPEC, tmp_path)
    records = [json.loads(path.read_text()) for path in sorted(experiment.glob("*/metrics.json"))]
    assert [record["training"]["epochs"] for record in records] == [1] * 4  # one epoch each: improving by the rule
    assert all(record["training"]["still_improving"] for record in records)
    runs = pd.read_csv(experiment / "runs.csv")
    assert list(runs.columns[-7:]) == ["epochs_trained", "best_epoch", "still_improving", "params", "train_seconds",
                                       "backend", "error"]
    assert runs[["epochs_trained", "best_epoch", "still_improving"]].values.tolist() == [[1, 1, True]] * 4
    page = (experiment / "table.md").read_text()
    assert ("Still improving when their budget ended: 4 of 4 finished runs (their best epoch was their last; "
            "`still_improving` in runs.csv): more epochs, or early_stopping, before comparing them.") in page


def test_runs_csv_without_training_records_keeps_its_columns_and_says_nothing():
    from seqkeras.reporting.tables import still_improving_note
    from seqkeras.results.folder import runs_frame

    probe = {"experiment": "p", "run_id": "seed=0_x", "status": "ok", "seed": 0, "matrix": {}, "metrics": {"m": 1.0}}
    frame = runs_frame([probe], [])
    assert "still_improving" not in frame.columns and still_improving_note(frame) == ""
    assert list(frame.columns) == ["experiment", "run_id", "status", "seed", "m", "params", "train_seconds",
                                   "backend", "error"]
