"""TensorBoard event files from the lean torch loop, read back with TensorBoard's reader, without TensorFlow."""

from __future__ import annotations

import sys

import pandas as pd
import pytest

pytest.importorskip("torch", reason="torch is not installed (pip install -r requirements.txt)")
pytest.importorskip("tensorboard", reason="pip install -r requirements-tracking.txt")

import seqkeras
from tests.conftest import TINY_TRAINING_SPEC


def test_the_lean_loop_logs_each_epoch_to_tensorboard(write_spec, tmp_path):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    results = seqkeras.run(write_spec(TINY_TRAINING_SPEC), out=tmp_path / "out", only=["seed=0"],
                           overrides={"train.epochs": 2, "train.validation_split": 0.25}, tensorboard=True)
    for _, run in results.runs.iterrows():
        folder = results.folder / run["run_id"]
        events = EventAccumulator(str(folder / "tensorboard"))
        events.Reload()
        history = pd.read_csv(folder / "history.csv")
        for column in ("loss", "accuracy", "val_loss", "val_accuracy"):
            logged = events.Scalars(column)
            assert [e.step for e in logged] == [1, 2]
            assert [e.value for e in logged] == pytest.approx(list(history[column]), rel=1e-6)
        assert events.Scalars("test/accuracy")[0].value == pytest.approx(run["accuracy"], rel=1e-6)
    assert "tensorflow" not in sys.modules  # TensorBoard's writer and reader ran on their TensorFlow stub
