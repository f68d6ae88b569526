"""Compile, fit and predict — the only module that drives Keras training."""

from __future__ import annotations

import io
import json
import math
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import keras
import numpy as np
import pandas as pd

from seqkeras.backends.fitting import build_before_tracing, given_batches, lean_loop
from seqkeras.registry import KERAS_MODEL, Abilities
from seqkeras.training.predictions import Predictions
from seqkeras.training.progress import EpochProgress, ProgressOutput
from seqkeras.results.folder import write_atomic
from seqkeras.results.removal import remove_tree
from seqkeras.training import batching, class_weights, convergence, schedules
from seqkeras.training.budget import Budget, Period, Segment
from seqkeras.training.settings import EarlyStoppingSpec, OptimizerSpec, TrainSpec
from seqkeras.problems import problem_named
from seqkeras.tasks.base import SequenceData
from seqkeras.training.losses import loss_and_metrics

if TYPE_CHECKING:  # the caller (execution.single_run) makes the writer; training only calls it
    from seqkeras.tracking.tensorboard import EventWriter

OPTIMIZERS = {
    "adam": keras.optimizers.Adam,
    "adamw": keras.optimizers.AdamW,
    "sgd": keras.optimizers.SGD,
    "rmsprop": keras.optimizers.RMSprop,
    "adagrad": keras.optimizers.Adagrad,
}


def make_optimizer(spec: OptimizerSpec, total_steps: int = 1) -> keras.optimizers.Optimizer:
    """The optimizer `spec` names; `total_steps` (the run's optimizer steps) sets a schedule's default decay."""
    options = {"learning_rate": schedules.learning_rate(spec.learning_rate, spec.schedule, total_steps)}
    if spec.clipnorm is not None:
        options["clipnorm"] = spec.clipnorm
    if spec.clipvalue is not None:
        options["clipvalue"] = spec.clipvalue
    if spec.momentum is not None:
        options["momentum"] = spec.momentum
    if spec.rho is not None:
        options["rho"] = spec.rho
    return OPTIMIZERS[spec.name](**options)


def take_rows(x, rows):
    """Rows of the inputs: an array, or each array of a dict of them (seq2seq's source and decoder input)."""
    return keras.tree.map_structure(lambda array: array[rows], x)


def fit(
    model: keras.Model,
    data: SequenceData,
    train: TrainSpec,
    *,
    seed: int = 0,
    checkpoint_dir: Path | None = None,
    events: EventWriter | None = None,
    abilities: Abilities = KERAS_MODEL,
    after_epoch: Callable[[int, dict[str, float]], bool] | None = None,
    progress: ProgressOutput | None = None,
    callbacks: Sequence[keras.callbacks.Callback] = (),
    score_validation: Callable[[object, np.ndarray], dict[str, float]] | None = None,
) -> tuple[pd.DataFrame, float]:
    """Train one epoch at a time; returns the per-epoch history and the training seconds.

    With `events` (tracking.tensorboard), each epoch's history values are written as
    TensorBoard scalars at step = epoch.

    With `checkpoint_dir`, the weights, optimizer state and history are saved after
    every epoch, and a later call resumes after the last completed one. Shuffling
    is a fixed permutation per (seed, epoch), so an interrupted and resumed run
    sees exactly the batches an uninterrupted one would, and ends with the same weights.

    `abilities` are what the model's kind declares (`registry.Abilities`; the default: a
    Keras model with a softmax output). A counted model (the n-gram LM) has no
    epochs, optimizer or checkpoints: it is estimated by its `estimate(data)` in
    one pass, which returns its one-row history.

    `after_epoch(epoch, history row)` is called after each epoch; True stops training there (a tuning trial
    that its pruner stopped, tuning.pruning).

    `train.verbose` and `progress` (the run's label, whether other runs share stderr; None: neither) decide what
    is said on stderr while it trains: a bar within each epoch, a line per epoch, or nothing (training.progress).

    `callbacks` are Keras callbacks told of the training by this loop, not by Keras's fit (each epoch is a fit
    of its own, and the lean loop has none): `set_model`, `on_train_begin`, `on_epoch_end(epoch, logs)` with
    Keras's 0-based epoch and the epoch's history values, and `on_train_end` (a live MLflow run's epochs,
    tracking.mlflow_epochs). A counted model has no epochs: they are not called.

    With `train.validation_metrics`, `score_validation(validation inputs, validation targets)` (the model kind's
    `validation_scorer`: greedy outputs scored for seq2seq, predictions for classification and tagging) scores the
    model on the validation data after every N evaluations; its scores join the history as val_<metric>, NaN in
    the evaluations between, before early stopping and reduce_on_plateau read it.
    """
    if abilities.estimated:
        started = time.perf_counter()
        history = model.estimate(data)
        return history, time.perf_counter() - started
    # A model with its own loss (a CRF's sequence likelihood) is compiled with the
    # optimizer only and masks padding itself, without per-token sample weights.
    own_loss = abilities.own_loss
    problem = problem_named(data.problem)
    x, y = data.x_train, data.y_train
    weights = None if own_loss else problem.loss_weights(x, y)
    validation = None
    if data.has_validation:  # the task's own (a file, or a share it drew from the training part): never test data
        val_weights = None if own_loss else problem.loss_weights(data.x_validation, data.y_validation)
        validation = (data.x_validation, data.y_validation) + ((val_weights,) if val_weights is not None else ())
    # Like Keras's validation_split: the last share of the training set, taken before shuffling. (The spec
    # refuses both at once: spec.checks.check_validation.)
    held_out = 0 if data.has_validation else int(len(y) * train.validation_split)
    if held_out:
        validation = ((take_rows(x, slice(-held_out, None)), y[-held_out:])
                      + ((weights[-held_out:],) if weights is not None else ()))
        x, y = take_rows(x, slice(None, -held_out)), y[:-held_out]
        weights = weights[:-held_out] if weights is not None else None
    weights = class_weights.sample_weights(train.class_weights, data, y, weights)  # the training part's only
    per_epoch = math.ceil(len(y) / train.batch_size)  # batches per epoch, the last one partial, as both loops cut
    budget = Budget.of(train, per_epoch)
    if not getattr(model, "compiled", False):
        if own_loss:
            objective = {}
        elif problem.keras_loss is not None:
            objective = {"loss": problem.keras_loss}
        else:
            objective = loss_and_metrics()
        model.compile(optimizer=make_optimizer(train.optimizer, budget.total_steps), **objective)

    first = slice(0, train.batch_size)
    build_before_tracing(model, (take_rows(x, first), y[first], None if weights is None else weights[first]))
    checkpoint = Checkpoint(checkpoint_dir) if checkpoint_dir else None
    state = checkpoint.restore(model) if checkpoint else None
    state = state or TrainingState()
    stopper = EarlyStopper(train.early_stopping, state)
    reducer = schedules.PlateauReducer(train.reduce_on_plateau, state)
    started = time.perf_counter() - state.seconds
    loop = PeriodLoop(model, lean_loop(model), (x, y, weights), validation, train, seed, budget)
    shown = EpochProgress(train.verbose, budget.periods, progress or ProgressOutput(),
                          unit="Evaluation" if budget.by_steps else "Epoch")
    on_step = shown.step_done if shown.shows_steps else None
    for callback in callbacks:
        callback.set_model(model)
        callback.on_train_begin()
    for index in range(state.epoch, budget.periods):  # state.epoch: the periods completed (epochs by default)
        period = budget.period(index)
        period_started = time.perf_counter()
        with shown.bar(period.number, period.steps):  # verbose 1 on a terminal; gone when it ends, or fails
            logs = loop.train(period, on_step)
        if train.validation_metrics is not None:
            logs.update(scored_validation(train, score_validation, validation, period.number, budget.periods))
        reducer.update(logs, model)  # before the checkpoint: a resumed run goes on with the reduced rate
        if train.optimizer.schedule or train.reduce_on_plateau:  # the rate the next step takes, in history.csv
            logs["learning_rate"] = float(keras.ops.convert_to_numpy(model.optimizer.learning_rate))
        measured = {name: value for name, value in logs.items() if convergence.evaluated(value)}
        shown.epoch_ended(period.number, time.perf_counter() - period_started, measured)
        if events is not None:
            events.scalars(period.number, measured)
        row = {**budget.row_position(period), **logs}
        if not math.isfinite(row["loss"]):
            where = f"epoch {period.number}" if not budget.by_steps else f"the steps up to {period.end_step}"
            raise FloatingPointError(
                f"the training loss became {row['loss']} in {where} (try a lower learning rate or clipnorm)"
            )
        state.history.append(row)
        state.epoch = period.number
        for callback in callbacks:
            callback.on_epoch_end(index, dict(measured))
        stop = stopper.update(row, model)
        if after_epoch is not None and after_epoch(period.number, row):
            stop = True
        state.seconds = time.perf_counter() - started
        if checkpoint:
            checkpoint.save(model, state)
        if stop:
            break
    stopper.restore_best(model)
    for callback in callbacks:
        callback.on_train_end()
    seconds = time.perf_counter() - started
    if checkpoint:
        checkpoint.clear()
    return pd.DataFrame(state.history), seconds


class PeriodLoop:
    """Trains one period (budget.Period: an epoch, or N steps across epochs) on Keras's fit or the lean loop, and
    validates after it: its history values (loss, accuracy, val_*)."""

    def __init__(self, model: keras.Model, lean, training: tuple, validation: tuple | None, train: TrainSpec,
                 seed: int, budget: Budget):
        self.model, self.lean, self.training, self.validation = model, lean, training, validation
        self.spec, self.seed, self.budget = train, seed, budget
        # train.batches by_length: the training rows' lengths, and the last epoch's batches (epoch, batches).
        self.lengths: list[np.ndarray] | None = None
        self.epoch_batches: tuple[int | None, list[np.ndarray]] = (None, [])

    def rows(self, segment: Segment) -> tuple:
        """A segment's (x, y, weights): its epoch's seeded permutation, batches [first, end)."""
        x, y, weights = self.training
        order = np.random.default_rng([self.seed, segment.epoch]).permutation(len(y))
        order = order[segment.first * self.spec.batch_size : segment.end * self.spec.batch_size]
        return take_rows(x, order), y[order], weights[order] if weights is not None else None

    def train(self, period: Period, on_step: Callable[[], None] | None) -> dict[str, float]:
        (first, *more) = period.segments
        if not more and self.budget.whole_epoch(first):  # an epoch: validated inside Keras's fit, as always
            return self.segment(first, self.validation, on_step)
        parts = [(segment.end - segment.first, self.segment(segment, None, on_step)) for segment in period.segments]
        # The period's training values: its segments' means, weighed by their steps.
        logs = {name: sum(steps * values[name] for steps, values in parts) / period.steps for name in parts[0][1]}
        if self.validation is not None:
            logs.update(self.validate())
        return logs

    def length_batches(self, segment: Segment) -> list[tuple]:
        """A segment's batches by length (train.batches: by_length): each (x, y, weights) of its own width. The
        rows' lengths are read once, and each epoch's batches made once for all its segments (a step budget
        evaluated every few steps cuts an epoch into many)."""
        x, y, weights = self.training
        if self.lengths is None:
            self.lengths = batching.row_lengths(x)
        if self.epoch_batches[0] != segment.epoch:
            self.epoch_batches = (segment.epoch, batching.epoch_batches(self.lengths, self.spec.batch_size, self.seed,
                                                                        segment.epoch))
        return [batching.cut(x, y, weights, rows, self.lengths)
                for rows in self.epoch_batches[1][segment.first:segment.end]]

    def segment(self, segment: Segment, validation: tuple | None, on_step) -> dict[str, float]:
        by_length = self.spec.batches == batching.BY_LENGTH
        epoch_data = self.length_batches(segment) if by_length else self.rows(segment)
        if self.lean is not None:
            return lean_epoch(self.lean, epoch_data, validation, self.spec, on_step)
        return keras_epoch(self.model, given_batches(epoch_data) if by_length else epoch_data, validation, self.spec,
                           segment.epoch, on_step)

    def validate(self) -> dict[str, float]:
        if self.lean is not None:
            return lean_validation(self.lean, self.validation, self.spec.batch_size)
        val_x, val_y, *val_weights = self.validation
        scores = self.model.evaluate(val_x, val_y, sample_weight=val_weights[0] if val_weights else None,
                                     batch_size=self.spec.batch_size, verbose=0, return_dict=True)
        return {f"val_{name}": float(value) for name, value in scores.items()}


def scored_validation(train: TrainSpec, score_validation, validation: tuple | None, number: int,
                      periods: int) -> dict[str, float]:
    """Period `number`'s validation scores by the task's metrics (val_bleu, val_macro_f1, ...): measured every
    `every` periods (epochs) and at the budget's last, NaN between."""
    settings = train.validation_metrics
    if score_validation is None or validation is None:  # the spec's checks refuse both; a caller's mistake
        raise ValueError("train.validation_metrics needs validation data and the model kind's validation scorer")
    if number % settings.every and number != periods:
        return {f"val_{name}": math.nan for name in settings.metrics}
    return {f"val_{name}": float(value) for name, value in score_validation(validation[0], validation[1]).items()}


def keras_epoch(model: keras.Model, epoch_data, validation: tuple | None, train: TrainSpec, epoch: int,
                on_step: Callable[[], None] | None = None) -> dict[str, float]:
    """One epoch on Keras's fit, then validation: its history row. `epoch_data`: the epoch's (x, y, weights), in
    batches of train.batch_size, or its batches made beforehand (`given_batches`). on_step: called after each
    training step."""
    given = not isinstance(epoch_data, tuple)
    result = model.fit(
        *((epoch_data,) if given else epoch_data[:2]),
        sample_weight=None if given else epoch_data[2],
        batch_size=None if given else train.batch_size,
        validation_batch_size=train.batch_size if given else None,
        epochs=epoch + 1,
        initial_epoch=epoch,
        validation_data=validation,
        shuffle=False,
        # Each epoch is a fit of its own (for the checkpoint and the early stopping between), so Keras's own bar
        # and lines would count "Epoch 2/2", "Epoch 3/3", leave out the first header and go to stdout: the
        # trainer's EpochProgress draws the bar and writes the line instead, as for the lean loop.
        verbose=0,
        callbacks=[StepCallback(on_step)] if on_step is not None else None,
    )
    return {name: float(values[-1]) for name, values in result.history.items()}


class StepCallback(keras.callbacks.Callback):
    """Calls `on_step()` after each training step of Keras's fit (a progress bar's step)."""

    # It reads none of the step's values, so Keras may call it from its callback thread without waiting for
    # the step's results: a bar costs the training loop no synchronization.
    async_safe = True

    def __init__(self, on_step: Callable[[], None]):
        super().__init__()
        self.on_step = on_step

    def on_train_batch_end(self, batch, logs=None):
        self.on_step()


def lean_epoch(lean, epoch_data: tuple | list[tuple], validation: tuple | None, train: TrainSpec,
               on_step: Callable[[], None] | None = None) -> dict[str, float]:
    """One epoch on the lean loop, then validation: the history row Keras's fit would give (loss, accuracy, val_*).
    `epoch_data`: the epoch's (x, y, weights), in batches of train.batch_size, or its batches made beforehand (a
    list). on_step: called after each training step."""
    if isinstance(epoch_data, tuple):
        logs = lean.train_epoch(*epoch_data, batch_size=train.batch_size, on_step=on_step)
    else:
        logs = lean.train_batches(epoch_data, on_step=on_step)
    if validation is not None:
        logs.update(lean_validation(lean, validation, train.batch_size))
    return logs


def lean_validation(lean, validation: tuple, batch_size: int) -> dict[str, float]:
    """The lean loop's evaluation of (inputs, targets[, weights]) as the history's val_* values."""
    val_x, val_y, *val_weights = validation
    scores = lean.evaluate(val_x, val_y, val_weights[0] if val_weights else None, batch_size=batch_size)
    return {f"val_{name}": value for name, value in scores.items()}


@dataclass
class TrainingState:
    epoch: int = 0  # completed epochs
    history: list[dict[str, float]] = field(default_factory=list)
    seconds: float = 0.0  # training time so far, across interruptions
    best: float | None = None  # early stopping: best monitored value and epochs since
    wait: int = 0
    plateau_best: float | None = None  # reduce-on-plateau: the same, for its own monitor
    plateau_wait: int = 0


class EarlyStopper:
    """Keras's EarlyStopping, kept outside fit() so its state survives a resume."""

    def __init__(self, spec: EarlyStoppingSpec | None, state: TrainingState):
        self.spec, self.state = spec, state
        self.best_weights = None

    def update(self, row: dict[str, float], model: keras.Model) -> bool:
        if self.spec is None:
            return False
        if self.spec.monitor not in row:
            raise KeyError(f"early_stopping.monitor {self.spec.monitor!r} is not one of {sorted(row)}")
        value = row[self.spec.monitor]
        if not convergence.evaluated(value):  # an evaluation between two scorings of a task metric
            return False
        sign = 1.0 if convergence.higher_is_better(self.spec.monitor) else -1.0
        if self.state.best is None or sign * value > sign * self.state.best:
            self.state.best, self.state.wait = value, 0
            self.best_weights = model.get_weights()
            return False
        self.state.wait += 1
        return self.state.wait >= self.spec.patience

    def restore_best(self, model: keras.Model) -> None:
        if self.spec and self.spec.restore_best_weights and self.best_weights is not None:
            model.set_weights(self.best_weights)


class Checkpoint:
    """Weights + optimizer state + history after each epoch, for resuming.

    state.json is written last and names the weights file it belongs to, so a
    process killed at any instant leaves either the previous or the new epoch's
    checkpoint, never a mix.
    """

    def __init__(self, folder: Path):
        self.folder = folder

    def save(self, model: keras.Model, state: TrainingState) -> None:
        """Both files through write_atomic (a temporary name, then a rename): a full disk (DiskFull) leaves the
        previous epoch's checkpoint as it was, and no part of this one."""
        weights_file = self.folder / f"epoch{state.epoch}.weights.h5"
        write_atomic(weights_file, weights_image(model))
        document = {"weights": weights_file.name, **asdict(state)}
        try:
            write_atomic(self.folder / "state.json", json.dumps(document))
        except BaseException:
            weights_file.unlink(missing_ok=True)  # named by no state.json: the previous checkpoint stands
            raise
        for old in self.folder.glob("epoch*.weights.h5"):
            if old != weights_file:
                old.unlink(missing_ok=True)

    def restore(self, model: keras.Model) -> TrainingState | None:
        """The state to resume from, or None: start from scratch (with a warning when a checkpoint was unusable)."""
        path = self.folder / "state.json"
        if not path.exists():
            return None
        try:
            document = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as error:
            return self._unusable(f"not JSON ({error})")
        state, weights_file, problem = self._parse(document)
        if problem:
            return self._unusable(problem)
        if not model.optimizer.built:
            model.optimizer.build(model.trainable_variables)
        # A file that fails half-way through loading must not leave a mix of old and fresh weights behind.
        variables = [*model.weights, *model.optimizer.variables]
        fresh = [keras.ops.convert_to_numpy(v) for v in variables]
        try:
            model.load_weights(weights_file)
        except Exception as error:  # h5py and Keras raise many types for a damaged or mismatched file
            for variable, value in zip(variables, fresh):
                variable.assign(value)
            return self._unusable(f"{weights_file.name} cannot be loaded ({type(error).__name__}: {error})")
        print(f"resuming after epoch {state.epoch} from {self.folder}")
        return state

    def _parse(self, document: object) -> tuple[TrainingState | None, Path | None, str]:
        """(state, weights file, "") from state.json's content, or (None, None, what is wrong with it)."""
        if not isinstance(document, dict):
            return None, None, f"not a JSON object (a {type(document).__name__})"
        name = document.get("weights")
        # Only a file name inside .resume/: a checkpoint never points elsewhere.
        if not isinstance(name, str) or Path(name).name != name or not name:
            return None, None, f"'weights' is {name!r}, not a file name"
        weights_file = self.folder / name
        if not weights_file.is_file():
            return None, None, f"the weights file it names, {name}, is missing"
        fields = {k: v for k, v in document.items() if k != "weights"}
        try:
            state = TrainingState(**fields)
        except TypeError as error:
            return None, None, f"unexpected content ({error})"
        number = (int, float)
        checks = [
            (isinstance(state.epoch, int) and not isinstance(state.epoch, bool) and state.epoch >= 0,
             f"'epoch' is {state.epoch!r}, not a count of epochs"),
            (isinstance(state.history, list) and len(state.history) == state.epoch
             and all(isinstance(row, dict) for row in state.history),
             "'history' does not hold one row per completed epoch"),
            (isinstance(state.seconds, number), f"'seconds' is {state.seconds!r}, not a number"),
            (state.best is None or isinstance(state.best, number), f"'best' is {state.best!r}, not a number"),
            (isinstance(state.wait, int), f"'wait' is {state.wait!r}, not a count"),
            (state.plateau_best is None or isinstance(state.plateau_best, number),
             f"'plateau_best' is {state.plateau_best!r}, not a number"),
            (isinstance(state.plateau_wait, int), f"'plateau_wait' is {state.plateau_wait!r}, not a count"),
        ]
        for holds, problem in checks:
            if not holds:
                return None, None, problem
        return state, weights_file, ""

    def _unusable(self, problem: str) -> None:
        print(f"warning: ignoring the checkpoint {self.folder / 'state.json'}: {problem}; training starts from scratch",
              file=sys.stderr)
        return None

    def clear(self) -> None:
        remove_tree(self.folder, inside=self.folder.parent)  # a link there is removed as a link


class _WeightsImage(io.BytesIO):
    """An in-memory .weights.h5 file: Keras's HDF5 store writes into an io.BytesIO, and save_weights asks only
    that the name end in .weights.h5."""

    def __str__(self) -> str:
        return "checkpoint.weights.h5"


def weights_image(model: keras.Model) -> bytes:
    """The model's weights and optimizer state as the bytes of a .weights.h5 file, for `load_weights`.

    HDF5 writes into memory, never to the disk: h5py writing a file on a full disk leaves it open, and
    its clean-up then fails at garbage collection (tracebacks, then a segmentation fault at exit).
    """
    image = _WeightsImage()
    model.save_weights(image)
    return image.getvalue()


def predict(model: keras.Model, data: SequenceData, batch_size: int, abilities: Abilities = KERAS_MODEL,
            x: np.ndarray | None = None, y: np.ndarray | None = None) -> Predictions:
    """The test predictions (or those of other inputs `x` with their targets `y`: validation data); the decided ids
    are the model's own (`predict_tags`) where its kind declares them."""
    x, y = (data.x_test, data.y_test) if x is None else (x, y)
    probabilities = model.predict(x, batch_size=batch_size, verbose=0)
    predicted = model.predict_tags(x, batch_size=batch_size) if abilities.tags else None
    mask = problem_named(data.problem).metric_mask(x)
    labels = data.labels.tokens if data.labels is not None else None
    return Predictions(np.asarray(probabilities), y, mask, predicted, labels)
