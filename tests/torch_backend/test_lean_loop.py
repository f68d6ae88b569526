"""The lean training loop (seqkeras/backends/torch/lean_loop.py, with adam.py) against Keras's fit.

trainer.fit through Keras's fit and through the lean loop, from the same initial
weights and batches: history, weights and optimizer state after the same epochs;
resuming; fused Adam's epsilon; and the models it leaves to Keras's fit.
"""

from __future__ import annotations

import dataclasses
import functools
import re
import tempfile
from pathlib import Path

import pytest

pytest.importorskip("torch", reason="torch is not installed (pip install -r requirements.txt)")

import keras
import numpy as np
import torch

from seqkeras.backends import runtime
from seqkeras.backends.torch import adam, lean_loop
from seqkeras.models.recurrent import (
    ClassifierParams,
    LanguageModelParams,
    TaggerParams,
    build_classifier,
    build_lm,
    build_tagger,
)
from seqkeras.models.seq2seq import build as build_seq2seq
from seqkeras.models.seq2seq_params import Seq2SeqParams
from seqkeras.tasks.seq2seq_synthetic import SymbolParams, build_reverse
from seqkeras.training.settings import EarlyStoppingSpec, OptimizerSpec, TrainSpec
from seqkeras.tasks.base import CLASSIFICATION, LANGUAGE_MODELING, TAGGING
from seqkeras.training import progress as training_progress
from seqkeras.training import trainer
from tests.helpers import FakeTerminal
from tests.torch_backend.common import (
    FEATURES,
    TOLERANCE,
    UNITS,
    said,
    scaled_difference,
    token_data,
)

LM_PARAMS = LanguageModelParams(cell="lstm", units=UNITS, embedding_dim=FEATURES)
# 11 rows: 2 held out for validation, 9 trained in batches of 4, 4 and 1.
LM_TRAIN = TrainSpec(epochs=3, batch_size=4, validation_split=0.2, verbose=0,
                     optimizer=OptimizerSpec(learning_rate=0.05),
                     early_stopping=EarlyStoppingSpec(monitor="val_loss", patience=1))


def fit(path: str, build, params, data, train):
    """trainer.fit on Keras's fit (path "keras") or as it chooses ("lean"): history, model, lean epochs run."""
    keras.utils.set_random_seed(0)
    model = build(params, data)
    epochs = []
    original_loop, original_epoch = trainer.lean_loop, lean_loop.LeanLoop.train_batches
    if path == "keras":
        trainer.lean_loop = lambda model: None
    lean_loop.LeanLoop.train_batches = lambda self, *a, **k: epochs.append(1) or original_epoch(self, *a, **k)
    try:
        history, _ = trainer.fit(model, data, train, seed=3)
    finally:
        trainer.lean_loop, lean_loop.LeanLoop.train_batches = original_loop, original_epoch
    return history, model, len(epochs)


def fit_both_ways(build, params, data, train) -> dict[str, object]:
    """trainer.fit through Keras's fit and through the lean loop, from the same initial weights."""
    keras_history, keras_model, _ = fit("keras", build, params, data, train)
    lean_history, lean_model, lean_epochs = fit("lean", build, params, data, train)
    return {
        "columns": [list(keras_history.columns), list(lean_history.columns)],
        "lean epochs": lean_epochs,
        "history": scaled_difference([keras_history.to_numpy()], [lean_history.to_numpy()]),
        "weights": scaled_difference(keras_model.get_weights(), lean_model.get_weights()),
        "optimizer": scaled_difference([np.asarray(v) for v in keras_model.optimizer.variables],
                                       [np.asarray(v) for v in lean_model.optimizer.variables]),
    }


def with_validation(data):
    """The data with validation arrays of its own, as a file task gives them (tasks.validation)."""
    return dataclasses.replace(data, x_train=data.x_train[:-3], y_train=data.y_train[:-3],
                               x_validation=data.x_train[-3:], y_validation=data.y_train[-3:])


def widened(data, columns: int = 14):
    """The data with `columns` more padding after every row, as a task padding to a larger maximum gives it."""
    def pad(array):
        return np.pad(array, [(0, 0), (0, columns)]) if array.ndim == 2 else array

    return dataclasses.replace(data, x_train=pad(data.x_train), y_train=pad(data.y_train), x_test=pad(data.x_test),
                               y_test=pad(data.y_test))


def regularized_lm(params, data):
    model = build_lm(params, data)
    model.layers[-1].kernel.regularizer = keras.regularizers.L2(0.1)  # a loss the layer chain's calls don't add
    return model


RUNS = {
    # Padding weights, validation and early stopping (fused Adam).
    "lm, padding weights, validation, early stopping (fused adam)": lambda: fit_both_ways(
        build_lm, LM_PARAMS, token_data(LANGUAGE_MODELING), LM_TRAIN),
    # The task's own validation data (a file task's validation_path or validation_share), not validation_split.
    "lm, the task's validation data, early stopping (fused adam)": lambda: fit_both_ways(
        build_lm, LM_PARAMS, with_validation(token_data(LANGUAGE_MODELING)),
        LM_TRAIN.model_copy(update={"validation_split": 0.0})),
    # An L2 regularizer: a loss no layer call adds.
    "lm, l2 on the output kernel (fused adam)": lambda: fit_both_ways(
        regularized_lm, LM_PARAMS, token_data(LANGUAGE_MODELING), LM_TRAIN.model_copy(update={"early_stopping": None})),
    # clipnorm: Keras's optimizer.apply.
    "tagger, adam with clipnorm (keras's apply)": lambda: fit_both_ways(
        build_tagger, TaggerParams(cell="gru", units=UNITS, embedding_dim=FEATURES), token_data(TAGGING),
        TrainSpec(epochs=2, batch_size=4, verbose=0, optimizer=OptimizerSpec(learning_rate=0.05, clipnorm=0.1))),
    # An encoder-decoder: a dict of inputs (source, decoder input), the targets' padding weighted out.
    "seq2seq, luong attention, the source and decoder input (fused adam)": lambda: fit_both_ways(
        build_seq2seq, Seq2SeqParams(cell="gru", units=UNITS, embedding_dim=FEATURES, attention="luong"),
        build_reverse(SymbolParams(n_train=11, n_test=2, max_length=5, symbols=4), seed=0),
        TrainSpec(epochs=2, batch_size=4, validation_split=0.2, verbose=0,
                  optimizer=OptimizerSpec(learning_rate=0.05))),
    # Batches by length: each cut to its own width (rows of at most 6 tokens padded to 20, cut to 8).
    "tagger, batches by length (fused adam)": lambda: fit_both_ways(
        build_tagger, TaggerParams(cell="lstm", units=UNITS, embedding_dim=FEATURES), widened(token_data(TAGGING)),
        TrainSpec(epochs=2, batch_size=4, validation_split=0.2, verbose=0, batches="by_length",
                  optimizer=OptimizerSpec(learning_rate=0.05))),
    # SGD, no mask, no sample weights.
    "classifier, sgd with momentum": lambda: fit_both_ways(
        build_classifier, ClassifierParams(cell="simple_rnn", units=UNITS, embedding_dim=FEATURES),
        token_data(CLASSIFICATION),
        TrainSpec(epochs=2, batch_size=4, verbose=0,
                  optimizer=OptimizerSpec(name="sgd", learning_rate=0.1, momentum=0.9))),
}


@pytest.mark.parametrize("name", RUNS)
def test_lean_loop_gives_keras_fit_history_and_weights(name):
    run = RUNS[name]()
    keras_columns, lean_columns = run["columns"]
    assert keras_columns == lean_columns
    assert run["lean epochs"] == 2 or (name.startswith("lm") and run["lean epochs"] == 3)
    assert max(run["history"], run["weights"], run["optimizer"]) <= TOLERANCE, run
    if "validation" in name:
        assert keras_columns == ["epoch", "accuracy", "loss", "val_accuracy", "val_loss"]


def test_lean_loop_resumes_to_the_weights_of_an_uninterrupted_run():
    # Interrupted after epoch 1 (the checkpoint kept), resumed for epoch 2: the weights of an uninterrupted run.
    lm_data = token_data(LANGUAGE_MODELING)
    two_epochs = LM_TRAIN.model_copy(update={"epochs": 2, "early_stopping": None})
    final = {}
    with tempfile.TemporaryDirectory() as folder:
        for name, epochs in [("uninterrupted", [2]), ("resumed", [1, 2])]:
            keras.utils.set_random_seed(0)
            model = build_lm(LM_PARAMS, lm_data)
            clear = trainer.Checkpoint.clear
            trainer.Checkpoint.clear = lambda self: None  # as if the process had been killed after the epoch
            try:
                for count in epochs:
                    if count == 2 and name == "resumed":
                        keras.utils.set_random_seed(0)
                        model = build_lm(LM_PARAMS, lm_data)  # a new process: fresh model, state from the checkpoint
                    spec = two_epochs.model_copy(update={"epochs": count})
                    _, printed = said(functools.partial(trainer.fit, model, lm_data, spec, seed=3,
                                                        checkpoint_dir=Path(folder) / name))
            finally:
                trainer.Checkpoint.clear = clear
            final[name] = (model.get_weights(), printed)
    assert final["resumed"][1].strip().startswith("resuming after epoch 1")
    assert scaled_difference(final["uninterrupted"][0], final["resumed"][0]) <= TOLERANCE


def test_lean_loop_steps_the_bar_once_per_batch(monkeypatch):
    """verbose 1 on a terminal: the lean loop reports each of its batches (4, 4 and 1 rows: 3 steps) to the bar."""
    lm_data = token_data(LANGUAGE_MODELING)
    monkeypatch.setattr(training_progress, "BAR_REFRESH_SECONDS", 0)  # every step drawn, whatever the clock
    terminal = FakeTerminal()
    monkeypatch.setattr("sys.stderr", terminal)
    lean_epochs = []
    original = lean_loop.LeanLoop.train_epoch
    monkeypatch.setattr(lean_loop.LeanLoop, "train_epoch",
                        lambda self, *a, **k: lean_epochs.append(1) or original(self, *a, **k))
    keras.utils.set_random_seed(0)
    trainer.fit(build_lm(LM_PARAMS, lm_data), lm_data,
                LM_TRAIN.model_copy(update={"epochs": 2, "early_stopping": None, "verbose": 1}), seed=3)
    drawn = terminal.getvalue()
    assert len(lean_epochs) == 2
    for epoch in (1, 2):
        assert [f"{step}/3" for step in range(4)] == re.findall(rf"Epoch {epoch}/2:.*?\| (\d/3) \[", drawn), drawn
        assert f"\rEpoch {epoch}/2 - " in drawn


def test_fused_adam_keeps_keras_epsilon_placement():
    # Keras's epsilon placement, where it matters: gradients far below epsilon.
    gradients = [torch.full((3, 2), 1e-9), torch.full((2,), -1e-10)]
    found = []
    for kind in ("keras", "fused", "pytorch"):
        variables = [keras.Variable(np.zeros((3, 2), "float32")), keras.Variable(np.zeros(2, "float32"))]
        optimizer = keras.optimizers.Adam(0.1)
        optimizer.build(variables)
        update = adam.fused_update(optimizer, variables)
        torch_optimizer = torch.optim.Adam([v.value for v in variables], lr=0.1, eps=optimizer.epsilon)
        for _ in range(3):
            with torch.no_grad():
                if kind == "keras":
                    optimizer.apply([g.clone() for g in gradients], variables)
                elif kind == "fused":
                    update([g.clone() for g in gradients])
            if kind == "pytorch":
                for variable, gradient in zip(variables, gradients):
                    variable.value.grad = gradient.clone()
                torch_optimizer.step()
        found.append([np.asarray(v) for v in variables])
    assert scaled_difference(found[0], found[1], floor=1e-12) <= TOLERANCE
    assert scaled_difference(found[0], found[2], floor=1e-12) > 1.0  # the check tells the two placements apart


@pytest.mark.parametrize(("make", "reason"), [
    (lambda: keras.optimizers.AdamW(), "not keras's Adam"),
    (lambda: keras.optimizers.Adam(clipnorm=1.0), "gradient clipping"),
    (lambda: keras.optimizers.Adam(amsgrad=True), "amsgrad"),
    (lambda: keras.optimizers.Adam(), None),
], ids=["adamw", "clipnorm", "amsgrad", "adam"])
def test_fused_adam_says_what_it_cannot_do(make, reason):
    assert adam.unsupported(make(), []) == reason


# Models the lean loop leaves to Keras's fit, and what it says (once).


def crf_tagger():
    model = build_tagger(TaggerParams(cell="gru", units=UNITS, embedding_dim=FEATURES, output="crf"),
                         token_data(TAGGING))
    model.compile(optimizer="adam")
    return model


def two_outputs():
    embedded = keras.layers.Embedding(20, 4)(tokens := keras.Input((None,), dtype="int32"))
    model = keras.Model(tokens, [keras.layers.Dense(3, activation="softmax")(embedded),
                                 keras.layers.Dense(2, activation="softmax")(embedded)])
    model.compile(optimizer="adam", **trainer.loss_and_metrics())
    return model


def lm_on_keras_loss():
    model = build_lm(LM_PARAMS, token_data(LANGUAGE_MODELING))
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy", weighted_metrics=["accuracy"])
    return model


def lm_on_suite_loss():
    model = build_lm(LM_PARAMS, token_data(LANGUAGE_MODELING))
    model.compile(optimizer="adam", **trainer.loss_and_metrics())
    return model


@pytest.mark.parametrize(("make", "reason"), [
    (crf_tagger, "the model has its own training step, loss or metrics"),
    (two_outputs, "the model has not one output"),
    (lm_on_keras_loss, "the model is not compiled with the suite's loss"),
], ids=["crf", "two outputs", "keras's loss"])
def test_lean_loop_leaves_the_model_to_keras_fit_and_says_why(make, reason):
    runtime.NOTED.clear()
    model = make()
    assert lean_loop.unsupported(model) == reason
    loop, note = said(lambda: trainer.lean_loop(model))
    assert note == f"note: training on Keras's fit loop, not the suite's lean torch loop: {reason}\n"
    assert loop is None


def test_lean_loop_says_so_once():
    runtime.NOTED.clear()
    crf = crf_tagger()
    _, note = said(lambda: trainer.lean_loop(crf))
    assert note != ""
    _, note_again = said(lambda: trainer.lean_loop(crf))
    assert note_again == ""


def test_lean_loop_takes_the_suite_lm_silently():
    runtime.NOTED.clear()
    model = lm_on_suite_loss()
    assert lean_loop.unsupported(model) is None
    loop, note = said(lambda: trainer.lean_loop(model))
    assert loop is not None
    assert note == ""
