"""Each epoch's history values to a live MLflow run, as a Keras callback (`mlflow_live`).

A Keras callback, so that it is what Keras users expect to hand a fit; the suite's own epoch
loop calls its `on_epoch_end` after every epoch (`training.trainer.fit`'s `callbacks`), on
Keras's fit and on the torch backend's lean loop alike. Keras counts epochs from 0; the
run's history.csv, TensorBoard and MLflow from 1.
"""

from __future__ import annotations

import keras


class EpochLogger(keras.callbacks.Callback):
    """Logs each epoch's `logs` to `live` (a `mlflow_live.LiveRun`) at step = epoch + 1."""

    def __init__(self, live):
        super().__init__()
        self.live = live

    def on_epoch_end(self, epoch: int, logs: dict[str, float] | None = None) -> None:
        self.live.epoch(epoch + 1, dict(logs or {}))
