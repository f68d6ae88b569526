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
        "still_improving": True, "val_loss_falling": False}  # 3 evaluations: too few for a trend
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
    assert ("Still improving when they ended: 4 of 4 finished runs (their best epoch was their last, or their "
            "validation loss was still falling; `still_improving` in runs.csv): ") in page
    assert all(run_id in page for run_id in runs["run_id"])  # each named


def test_a_falling_validation_loss_says_still_improving_whatever_stopped_the_run():
    """Early stopping on val_bleu stops a run whose validation loss still falls at every epoch: under-trained all
    the same. The training loss alone says nothing (it falls in nearly every run)."""
    history = pd.DataFrame({"epoch": range(1, 11), "loss": [1.0 - i / 20 for i in range(10)],
                            "val_loss": [3.0 - i / 10 for i in range(10)],
                            "val_bleu": [0.0, 0.14, 0.66, 0.49, 0.48, 0.3, 0.2, 0.4, 0.5, 0.6]})
    stopped = training_summary(history, TrainSpec(epochs=30, early_stopping={"monitor": "val_bleu", "patience": 4},
                                                  validation_split=0.2,
                                                  validation_metrics={"metrics": ["bleu"]}))
    assert stopped["stopped_by"] == "early_stopping" and stopped["best_epoch"] == 3
    assert stopped["still_improving"] is True and stopped["val_loss_falling"] is True
    turned = history.assign(val_loss=[3.0, 2.0, 1.5, 1.4, 1.45, 1.5, 1.44, 1.3, 1.35, 1.36])
    assert training_summary(turned, TrainSpec(epochs=10))["still_improving"] is False  # its best is not its last
    without_validation = history.drop(columns=["val_loss", "val_bleu"])
    assert training_summary(without_validation, TrainSpec(epochs=30))["still_improving"] is False  # stopped, loss
    assert "val_loss_falling" not in training_summary(without_validation, TrainSpec(epochs=30))


def test_early_stopping_on_a_score_at_noise_level_is_named():
    from seqkeras.training.convergence import at_noise

    assert at_noise("val_bleu", [0.0, 0.14, 0.66, 0.49, 0.48])  # a BLEU below 5 points is chance n-grams
    assert not at_noise("val_bleu", [2.0, 9.0, 20.0, 31.0, 30.5])
    assert at_noise("val_macro_f1", [0.50, 0.52, 0.49, 0.51, 0.50])  # never above its own epoch-to-epoch changes
    assert not at_noise("val_macro_f1", [0.50, 0.60, 0.70, 0.72, 0.71])
    assert at_noise("val_perplexity", [40.0, 39.0, 41.0, 40.0])  # a score that improves downwards, likewise
    history = pd.DataFrame({"epoch": [1, 2, 3, 4], "loss": [1.0, 0.9, 0.8, 0.7], "val_loss": [2.0, 2.1, 2.2, 2.3],
                            "val_bleu": [0.1, 0.7, 0.2, 0.3]})
    spec = TrainSpec(epochs=20, early_stopping={"monitor": "val_bleu", "patience": 2}, validation_split=0.2,
                     validation_metrics={"metrics": ["bleu"]})
    assert training_summary(history, spec)["stopped_at_noise"] is True
    by_loss = TrainSpec(epochs=20, early_stopping={"monitor": "val_loss", "patience": 2}, validation_split=0.2)
    assert "stopped_at_noise" not in training_summary(history, by_loss)  # a loss is what training lowers


def test_table_md_and_the_report_name_the_runs_stopped_at_noise(tmp_path):
    from seqkeras.reporting.training_notes import finished_records, noise_stop_note

    runs = pd.DataFrame({"run_id": ["seed=0_a", "seed=1_b"], "status": ["ok", "ok"]})
    for run_id, noise in (("seed=0_a", True), ("seed=1_b", False)):
        (tmp_path / run_id).mkdir()
        record = {"experiment": "x", "run_id": run_id, "status": "ok", "seed": 0, "matrix": {}, "metrics": {},
                  "training": {"monitor": "val_bleu", "best": 0.66, "best_epoch": 6, "stopped_at_noise": noise}}
        (tmp_path / run_id / "metrics.json").write_text(json.dumps(record))
    note = noise_stop_note(finished_records(tmp_path, runs))
    assert note.startswith("Stopped early at noise level: 1 run(s)")
    assert "seed=0_a (val_bleu best 0.66 at epoch 6)" in note
    assert "seed=1_b" not in note


def test_runs_csv_without_training_records_keeps_its_columns_and_says_nothing():
    from seqkeras.reporting.training_notes import still_improving_note
    from seqkeras.results.folder import runs_frame

    probe = {"experiment": "p", "run_id": "seed=0_x", "status": "ok", "seed": 0, "matrix": {}, "metrics": {"m": 1.0}}
    frame = runs_frame([probe], [])
    assert "still_improving" not in frame.columns and still_improving_note(frame) == ""
    assert list(frame.columns) == ["experiment", "run_id", "status", "seed", "m", "params", "train_seconds",
                                   "backend", "error"]
