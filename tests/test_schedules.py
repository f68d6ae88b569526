"""Learning-rate schedules and reduce-on-plateau: the rates they give, in training, in history.csv, in validation.

`train.optimizer.schedule` is a function of the optimizer's step (training.schedules.WarmupDecay): checked here
against its formulas, then in a tiny run, whose history.csv records the rate after each epoch, which must be the
schedule's at that epoch's last step. `train.reduce_on_plateau` halves the rate after `patience` epochs without
improvement: a tiny run's history must follow that rule epoch by epoch, and reduce at least once.
"""

from __future__ import annotations

import math

import keras
import pandas as pd
import pytest

import seqkeras
from seqkeras.errors import SpecError
from seqkeras.spec.loader import build_experiment
from seqkeras.training.schedules import WarmupDecay, keras_schedule

PEAK, FINAL, WARMUP, DECAY = 0.1, 0.01, 4, 10


def rate(schedule, step: int) -> float:
    return float(keras.ops.convert_to_numpy(schedule(step)))


@pytest.mark.parametrize("decay", ["constant", "linear", "cosine", "exponential"])
def test_each_schedule_warms_up_linearly_then_follows_its_formula(decay):
    schedule = WarmupDecay(PEAK, decay, WARMUP, DECAY, FINAL, decay_rate=0.5)
    for step in range(WARMUP):  # step t of training takes iterations = t - 1: the first step already moves
        assert rate(schedule, step) == pytest.approx(PEAK * (step + 1) / WARMUP)
    for after in (0, 3, 5, 10, 17):
        progress = min(after / DECAY, 1.0)
        expected = {"constant": PEAK,
                    "linear": FINAL + (PEAK - FINAL) * (1 - progress),
                    "cosine": FINAL + (PEAK - FINAL) * 0.5 * (1 + math.cos(math.pi * progress)),
                    "exponential": PEAK * 0.5 ** (after / DECAY)}[decay]
        assert rate(schedule, WARMUP + after) == pytest.approx(expected, rel=1e-5)
    assert WarmupDecay.from_config(schedule.get_config()).get_config() == schedule.get_config()


@pytest.mark.parametrize("decay", ["constant", "linear", "cosine", "exponential"])
def test_without_a_warmup_a_schedule_is_keras_own_with_the_same_rates(decay):
    suites = WarmupDecay(PEAK, decay, 0, DECAY, FINAL, decay_rate=0.5)
    keras_own = keras_schedule(suites)
    assert type(keras_own).__module__.startswith("keras.") or isinstance(keras_own, float)
    for step in (0, 1, 3, 5, 9, 10, 11, 40):
        own = keras_own if isinstance(keras_own, float) else rate(keras_own, step)
        assert own == pytest.approx(rate(suites, step), rel=1e-6, abs=1e-9), step
    assert keras_schedule(WarmupDecay(PEAK, decay, WARMUP, DECAY, FINAL)) is None  # Keras has no such warmup


def spec(train: dict) -> dict:
    return {"version": 1, "name": "scheduled",
            "task": {"name": "delayed_recall", "lag": 3, "n_train": 80, "n_test": 32},
            "model": {"kind": "classifier", "cell": "gru", "units": 4, "embedding_dim": 4},
            "train": {"epochs": 4, "batch_size": 16, "verbose": 0, "validation_split": 0.2, **train},
            "seeds": [0]}


def history(results) -> pd.DataFrame:
    (run_id,) = results.runs["run_id"]
    assert results.runs["status"].tolist() == ["ok"], results.runs.get("error")
    return pd.read_csv(results.folder / run_id / "history.csv")


def test_a_scheduled_run_records_the_rate_its_schedule_gives_after_each_epoch(tmp_path):
    schedule = {"decay": "cosine", "warmup_steps": 3, "final_learning_rate": 0.001}
    results = seqkeras.run(spec({"optimizer": {"learning_rate": 0.02, "schedule": schedule}}), out=tmp_path,
                           backend=keras.backend.backend())
    steps_per_epoch = math.ceil(64 / 16)  # 80 pairs, the last fifth held out for validation
    total = 4 * steps_per_epoch
    expected = WarmupDecay(0.02, "cosine", 3, total - 3, 0.001)
    rates = history(results)["learning_rate"].tolist()
    assert rates == pytest.approx([rate(expected, epoch * steps_per_epoch) for epoch in (1, 2, 3, 4)], rel=1e-5)
    assert rates[-1] == pytest.approx(0.001, rel=1e-5)  # the decay ends at the last step


def test_reduce_on_plateau_lowers_the_rate_after_patience_epochs_without_improvement(tmp_path):
    plateau = {"monitor": "val_loss", "factor": 0.5, "patience": 1}
    results = seqkeras.run(spec({"epochs": 6, "optimizer": {"learning_rate": 0.5}, "reduce_on_plateau": plateau}),
                           out=tmp_path, backend=keras.backend.backend())
    rows = history(results)
    best, wait, current = math.inf, 0, 0.5
    for value, recorded in zip(rows["val_loss"], rows["learning_rate"]):
        if value < best:
            best, wait = value, 0
        else:
            wait += 1
            if wait >= 1:
                current, wait = current * 0.5, 0
        assert recorded == pytest.approx(current, rel=1e-6)
    assert rows["learning_rate"].iloc[-1] < 0.5, "no plateau in 6 epochs at rate 0.5: the rule went unexercised"


def test_validation_refuses_a_schedule_with_reduce_on_plateau_and_a_val_monitor_without_validation_data():
    both = spec({"optimizer": {"schedule": {"decay": "linear"}}, "reduce_on_plateau": {"monitor": "val_loss"}})
    with pytest.raises(SpecError, match="train.reduce_on_plateau.*sets the learning rate at every step"):
        build_experiment(both, source="<dict>", overrides=[])
    blind = spec({"reduce_on_plateau": {"monitor": "val_loss"}, "validation_split": 0.0})
    with pytest.raises(SpecError, match="train.reduce_on_plateau.monitor.*needs validation data"):
        build_experiment(blind, source="<dict>", overrides=[])


def test_runs_without_a_schedule_or_plateau_keep_their_run_ids():
    # The keys came after results existed: left at their defaults they are not in the resolved spec, so every
    # recorded run keeps its id; set, they are.
    plain = build_experiment(spec({"optimizer": {"learning_rate": 0.01}}), source="<dict>", overrides=[])
    (run,) = plain.runs
    assert "schedule" not in run.resolved["train"]["optimizer"] and "reduce_on_plateau" not in run.resolved["train"]
    scheduled = build_experiment(spec({"optimizer": {"learning_rate": 0.01, "schedule": {"decay": "cosine"}}}),
                                 source="<dict>", overrides=[])
    assert scheduled.runs[0].resolved["train"]["optimizer"]["schedule"]["decay"] == "cosine"
    assert scheduled.runs[0].run_id != run.run_id
