"""Budgets in optimizer steps and evaluations every N steps (train.steps, train.evaluate_every; training.budget).

A period of N steps may cross the end of an epoch; step s is batch s mod B of epoch s div B whichever period
takes it, so a run evaluated every 5 steps takes the steps of one evaluated every epoch, and ends with the same
model: the same test metrics, to the last digit. Its history has a row per evaluation, at its step.
"""

from __future__ import annotations

import json

import keras
import pandas as pd
import pytest

import seqkeras
from seqkeras.training.budget import Budget, Segment
from seqkeras.training.settings import TrainSpec


def test_periods_cut_the_steps_into_evaluations_across_epoch_ends():
    budget = Budget.of(TrainSpec(steps=12, evaluate_every=5), per_epoch=4)
    assert (budget.total_steps, budget.periods) == (12, 3)
    assert [budget.period(i).segments for i in range(3)] == [
        (Segment(0, 0, 4), Segment(1, 0, 1)),
        (Segment(1, 1, 4), Segment(2, 0, 2)),
        (Segment(2, 2, 4),),
    ]
    assert [budget.row_position(budget.period(i)) for i in range(3)] == [
        {"epoch": 1.25, "step": 5}, {"epoch": 2.5, "step": 10}, {"epoch": 3.0, "step": 12}]
    by_epochs = Budget.of(TrainSpec(epochs=3), per_epoch=4)
    assert by_epochs.periods == 3 and by_epochs.row_position(by_epochs.period(1)) == {"epoch": 2}
    assert by_epochs.period(1).segments == (Segment(1, 0, 4),)
    cut = Budget.of(TrainSpec(steps=10), per_epoch=4)  # a step budget: epochs, the last one cut short
    assert [cut.period(i).steps for i in range(cut.periods)] == [4, 4, 2]
    assert cut.row_position(cut.period(2)) == {"epoch": 2.5, "step": 10}


def spec(train: dict) -> dict:
    return {"version": 1, "name": "stepped",
            "task": {"name": "delayed_recall", "lag": 3, "n_train": 80, "n_test": 32},
            "model": {"kind": "classifier", "cell": "gru", "units": 4, "embedding_dim": 4},
            "train": {"batch_size": 16, "verbose": 0, "validation_split": 0.2, **train},
            "evaluate": {"metrics": ["accuracy", "cross_entropy"]},
            "seeds": [0]}


def trained(train: dict, out) -> tuple[pd.DataFrame, dict]:
    results = seqkeras.run(spec(train), out=out, backend=keras.backend.backend())
    assert results.runs["status"].tolist() == ["ok"], results.runs.get("error")
    (run_id,) = results.runs["run_id"]
    folder = results.folder / run_id
    return pd.read_csv(folder / "history.csv"), json.loads((folder / "metrics.json").read_text())


def test_evaluating_every_five_steps_trains_the_same_model_as_every_epoch(tmp_path):
    # 64 training examples (80, the last fifth held out) in batches of 16: 4 steps an epoch, 12 in 3 epochs.
    by_epoch, epoch_record = trained({"epochs": 3}, tmp_path / "epochs")
    by_steps, step_record = trained({"steps": 12, "evaluate_every": 5}, tmp_path / "steps")
    assert step_record["metrics"] == epoch_record["metrics"]  # the same 12 steps, in the same order
    assert by_steps["step"].tolist() == [5, 10, 12] and by_steps["epoch"].tolist() == [1.25, 2.5, 3.0]
    assert by_steps["val_loss"].notna().all() and "step" not in by_epoch.columns
    # The last period is the epoch's last two steps: validated on the same weights as the third epoch.
    assert by_steps["val_loss"].iloc[-1] == pytest.approx(by_epoch["val_loss"].iloc[-1], rel=1e-5)
    summary = step_record["training"]
    assert (summary["steps"], summary["epochs"], summary["stopped_by"]) == (12, 3.0, "budget")
    assert summary["best_step"] in (5, 10, 12) and summary["monitor"] == "val_loss"


def test_a_budget_of_steps_cuts_the_last_epoch_short(tmp_path):
    history, record = trained({"steps": 10, "early_stopping": {"monitor": "val_loss", "patience": 5}}, tmp_path)
    assert history["step"].tolist() == [4, 8, 10] and history["epoch"].tolist() == [1.0, 2.0, 2.5]
    assert record["training"]["steps"] == 10 and record["training"]["stopped_by"] == "budget"


def test_learning_curves_are_drawn_against_steps_with_a_decoded_score_panel():
    from seqkeras.reporting.curve_drawings import Curve, draw_learning_curves

    frame = pd.DataFrame({"epoch": [1.25, 2.5, 3.0], "step": [5, 10, 12], "loss": [1.2, 1.0, 0.9],
                          "val_loss": [1.3, 1.1, 1.0], "val_bleu": [float("nan"), 4.0, 7.0]})
    figure = draw_learning_curves([Curve(label="gru", seed=0, frame=frame, parts=("gru",))])
    panels = {ax.get_ylabel(): ax for ax in figure.axes if ax.get_ylabel()}
    assert set(panels) == {"loss", "val_bleu"}  # step and epoch are the axis, not quantities
    assert {ax.get_xlabel() for ax in panels.values()} == {"step"}
    (bleu,) = panels["val_bleu"].get_lines()
    assert list(bleu.get_xdata()) == [10, 12] and bleu.get_linestyle() == "--"  # the decoded points, joined
