"""Under-training made visible: each trained run's record says how its training went, and `run` says how many
runs were still improving when their budget ended (training.convergence)."""

from __future__ import annotations

import json
import math

import keras
import pandas as pd

from seqkeras.training.convergence import training_summary
from seqkeras.training.settings import TrainSpec
from tests.conftest import TINY_TRAINING_SPEC
from tests.helpers import run_cli


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


def test_each_run_records_its_training_and_run_says_how_many_were_still_improving(trained_runs, tmp_path, capsys):
    experiment = trained_runs.copied_experiment(TINY_TRAINING_SPEC, tmp_path)
    records = [json.loads(path.read_text()) for path in sorted(experiment.glob("*/metrics.json"))]
    assert [record["training"]["epochs"] for record in records] == [1] * 4  # one epoch each: improving by the rule
    assert all(record["training"]["still_improving"] for record in records)
    code, out, err = run_cli(capsys, "run", experiment / "experiment.yaml", "--out", experiment.parent,
                             "--backend", keras.backend.backend())
    assert code == 0, out + err
    ours = out[out.index(f"→ {experiment.parent}"):]  # the session's first test also trains the tiny runs here
    (line,) = [line for line in ours.splitlines() if "still improving" in line]
    assert line.startswith("tiny: 4 of 4 finished run(s) were still improving when their budget ended "
                           "(its best epoch, by loss, was its last one of the budget; the first: ")
    assert line.endswith("epoch 1): more epochs, or early_stopping, before comparing them")
