"""Compile, fit and predict — the only module that drives Keras training."""

from __future__ import annotations

import time

import keras
import numpy as np
import pandas as pd

from seqkeras.metrics import Predictions
from seqkeras.spec import OptimizerSpec, TrainSpec
from seqkeras.tasks.base import CLASSIFICATION, SequenceData

OPTIMIZERS = {
    "adam": keras.optimizers.Adam,
    "adamw": keras.optimizers.AdamW,
    "sgd": keras.optimizers.SGD,
    "rmsprop": keras.optimizers.RMSprop,
    "adagrad": keras.optimizers.Adagrad,
}


def make_optimizer(spec: OptimizerSpec) -> keras.optimizers.Optimizer:
    options = {"learning_rate": spec.learning_rate}
    if spec.clipnorm is not None:
        options["clipnorm"] = spec.clipnorm
    if spec.clipvalue is not None:
        options["clipvalue"] = spec.clipvalue
    if spec.momentum is not None:
        options["momentum"] = spec.momentum
    return OPTIMIZERS[spec.name](**options)


def token_weights(data_x: np.ndarray, problem: str) -> np.ndarray | None:
    """Per-token sample weights: padding (id 0) counts for nothing in loss and metrics."""
    return None if problem == CLASSIFICATION else (data_x != 0).astype("float32")


def fit(model: keras.Model, data: SequenceData, train: TrainSpec) -> tuple[pd.DataFrame, float]:
    """Train; returns the per-epoch history and the training time in seconds."""
    if not getattr(model, "compiled", False):
        model.compile(
            optimizer=make_optimizer(train.optimizer),
            loss="sparse_categorical_crossentropy",
            weighted_metrics=["accuracy"],
        )
    callbacks = [keras.callbacks.TerminateOnNaN()]
    if train.early_stopping:
        callbacks.append(keras.callbacks.EarlyStopping(**train.early_stopping.model_dump()))
    started = time.perf_counter()
    history = model.fit(
        data.x_train,
        data.y_train,
        sample_weight=token_weights(data.x_train, data.problem),
        batch_size=train.batch_size,
        epochs=train.epochs,
        validation_split=train.validation_split,
        shuffle=True,
        callbacks=callbacks,
        verbose=train.verbose,
    )
    seconds = time.perf_counter() - started
    frame = pd.DataFrame(history.history)
    frame.insert(0, "epoch", np.arange(1, len(frame) + 1))
    if frame.empty or not np.all(np.isfinite(frame["loss"].to_numpy(dtype=float))):
        raise FloatingPointError("the training loss became NaN or infinite (try a lower learning rate or clipnorm)")
    return frame, seconds


def predict(model: keras.Model, data: SequenceData, batch_size: int) -> Predictions:
    probabilities = model.predict(data.x_test, batch_size=batch_size, verbose=0)
    predicted = model.predict_tags(data.x_test, batch_size=batch_size) if hasattr(model, "predict_tags") else None
    mask = None if data.problem == CLASSIFICATION else data.x_test != 0
    labels = data.labels.tokens if data.labels is not None else None
    return Predictions(np.asarray(probabilities), data.y_test, mask, predicted, labels)
