"""The `train:` section's schema: how a model is trained.

Training owns it, as a model kind owns its parameters: the trainer reads it and
a probe that trains a model fills one in itself, so it sits below the spec
stage, which composes it into an experiment file's structure (`spec.sections`).
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, model_validator

from seqkeras.registry import Params


class ScheduleSpec(Params):
    decay: Literal["constant", "linear", "cosine", "exponential"] = Field(
        "constant", description="After the warmup: constant keeps learning_rate; linear and cosine decay it to "
        "final_learning_rate over decay_steps (then keep it); exponential multiplies it by decay_rate every "
        "decay_steps (continuously)."
    )
    warmup_steps: int = Field(
        0, ge=0, le=100_000_000, description="Optimizer steps over which the rate rises linearly from 0 to "
        "learning_rate (0: no warmup)."
    )
    decay_steps: int | None = Field(
        None, ge=1, le=100_000_000, description="Steps of the decay (exponential: of one decay_rate). Default: the "
        "run's steps after the warmup (train.steps, or epochs × batches per epoch, − warmup_steps)."
    )
    final_learning_rate: float = Field(0.0, ge=0, le=10, description="linear, cosine: the rate the decay ends at.")
    decay_rate: float = Field(0.5, gt=0, lt=1, description="exponential: the factor per decay_steps.")


class OptimizerSpec(Params):
    name: Literal["adam", "adamw", "sgd", "rmsprop", "adagrad"] = Field(
        "adam", description="Keras optimizer by name."
    )
    learning_rate: float = Field(1e-3, gt=0, le=10, description="Step size.")
    clipnorm: float | None = Field(
        None, gt=0, description="Rescale each gradient whose norm exceeds this (tames exploding gradients)."
    )
    clipvalue: float | None = Field(None, gt=0, description="Clip each gradient element to ±this.")
    momentum: float | None = Field(None, ge=0, lt=1, description="Momentum for sgd and rmsprop.")
    rho: float | None = Field(
        None, gt=0, lt=1, description="rmsprop: the decay of its moving average of squared gradients (Keras's "
        "default 0.9; papers call it decay or α)."
    )
    schedule: ScheduleSpec | None = Field(
        None, description="How the learning rate changes with the optimizer's steps: a warmup, then constant, "
        "linear, cosine or exponential decay (training.schedules). Default: learning_rate throughout."
    )

    @model_validator(mode="after")
    def _options_of_their_optimizer(self) -> "OptimizerSpec":
        if self.momentum is not None and self.name not in ("sgd", "rmsprop"):
            raise ValueError(f"momentum applies only to optimizers sgd and rmsprop, not {self.name!r}")
        self.only_with("rho", "name", "rmsprop")
        return self


class ValidationMetricsSpec(Params):
    metrics: list[str] = Field(
        ["bleu"], min_length=1, description="The task's metrics to score the validation data by, each a history "
        "value val_<metric> (val_bleu, val_macro_f1, val_entity_f1) for early_stopping, reduce_on_plateau and the "
        "training summary: seq2seq bleu, chrf, exact_match, position_accuracy of greedy outputs; classification "
        "and tagging any of their metrics but accuracy (val_accuracy is in the history already)."
    )
    every: int = Field(1, ge=1, le=10_000, description="Evaluations (epochs, or train.evaluate_every's steps) "
                       "between two scorings (the budget's last is always scored); those between have no value.")
    max_examples: int | None = Field(
        None, ge=1, le=10_000_000, description="Score the first this many validation examples (pairs) only "
        "(decoding costs time at every scoring). Default: all."
    )


class EarlyStoppingSpec(Params):
    monitor: str = Field(
        "val_loss", description="History value watched: loss, accuracy, val_loss, val_accuracy, or a task metric "
        "of train.validation_metrics (val_bleu, val_macro_f1, val_entity_f1)."
    )
    patience: int = Field(2, ge=1, description="Evaluations of the monitor without improvement before stopping "
                          "(epochs, or train.evaluate_every's steps; for a validation_metrics score, its "
                          "scorings).")
    restore_best_weights: bool = Field(True, description="Evaluate the best epoch's weights, not the last.")


class ReduceOnPlateauSpec(Params):
    monitor: str = Field("val_loss", description="History value watched, e.g. val_loss, val_accuracy or val_bleu "
                         "(train.validation_metrics).")
    factor: float = Field(0.5, gt=0, lt=1, description="The learning rate is multiplied by this on a plateau.")
    patience: int = Field(2, ge=1, description="Evaluations of the monitor without improvement that make a plateau "
                          "(epochs, or train.evaluate_every's steps; for a validation_metrics score, its "
                          "scorings).")
    min_learning_rate: float = Field(0.0, ge=0, description="The rate is never reduced below this.")


class TrainSpec(Params):
    epochs: int = Field(5, ge=1, le=10_000, description="Passes over the training set.")
    steps: int | None = Field(
        None, ge=1, le=1_000_000_000, description="A budget in optimizer steps instead of epochs: training stops "
        "after this many steps, its last epoch cut short; train.epochs is then not read."
    )
    evaluate_every: int | None = Field(
        None, ge=1, le=1_000_000_000, description="Evaluate every this many optimizer steps instead of every epoch: "
        "history.csv gets a row per evaluation, with its step (validation values and scores, early stopping, "
        "reduce_on_plateau and checkpoints all go by these evaluations). Default: every epoch."
    )
    batch_size: int = Field(32, ge=1, le=1_000_000, description="Examples per gradient step.")
    batches: Literal["auto", "shuffled", "by_length"] = Field(
        "auto", description="How an epoch's examples are batched: shuffled (a fresh random order each epoch, "
        "every batch at the task's width) or by_length (shuffled, then sorted by length within pools of 100 "
        "batches, the batches shuffled, each cut to its longest example rounded up to a multiple of 8: less "
        "padding to compute, so faster on texts of varied length, with other numbers than shuffled's). Token "
        "sequences only; the data card gives the share of padding both ways (for any run on token sequences "
        "with padding: what by_length would leave out). auto (the default): by_length "
        "for a classification task of texts (rotten_tomatoes, text_classification_file), where every model "
        "kind masks the padding and the loss is one per example, so only which texts share a batch changes; "
        "shuffled elsewhere (a per-token loss averages over a batch's token slots, padding included, so by "
        "length would weigh the tokens of short batches more)."
    )
    optimizer: OptimizerSpec = Field(default_factory=OptimizerSpec)
    validation_split: float = Field(
        0.0, ge=0, lt=0.5, description="Share of the training set held out for val_* curves and early stopping "
        "(its last share; a file task's own task.validation_path or task.validation_share instead)."
    )
    # A val_* monitor needs validation data, from validation_split or from the task: spec.checks.check_validation,
    # which sees both sections, checks it.
    early_stopping: EarlyStoppingSpec | None = Field(None, description="Stop when the monitored value stalls.")
    validation_metrics: ValidationMetricsSpec | None = Field(
        None, description="Score the validation data by the task's own metrics every N evaluations (val_bleu of "
        "greedy outputs, val_macro_f1, val_entity_f1 in the history), so that early stopping and reduce_on_plateau "
        "can watch what the test reports rather than the loss."
    )
    reduce_on_plateau: ReduceOnPlateauSpec | None = Field(
        None, description="Lower the learning rate when the monitored value stalls (not with optimizer.schedule, "
        "which sets the rate at every step)."
    )
    class_weights: Literal["balanced"] | dict[str, Annotated[float, Field(gt=0, le=1_000_000)]] | None = Field(
        None, description="Classification and tagging: each training example's (token's) weight in the loss by its "
        "label: balanced (n / (classes × the class's count), so every class weighs the same in all) or a weight per "
        "label ({pos: 1, neg: 4}; labels left out weigh 1). Validation and test data are not weighted."
    )
    verbose: Literal[0, 1, 2] = Field(
        1, description="Progress while the run trains, on stderr: 0 nothing; 1 a bar within each epoch (steps, rate, "
        "time left) on a terminal the run has to itself, else one line per epoch, as 2; 2 one line per epoch "
        "(seconds, loss, metrics). A line names its run (matrix point and seed) where the output is not a terminal "
        "or --jobs N workers share it."
    )
    tensorboard: bool = Field(
        False,
        description="Write TensorBoard event files into the run's folder (<run>/tensorboard/): each epoch's "
        "history values, the test metrics, the gradient-flow curve where measured. Needs the tensorboard package "
        "(requirements-tracking.txt).",
    )
    keep_model: bool = Field(
        True,
        description="Keep the trained model in the run's folder: model.keras (Keras's native format; "
        "model.ngram.json for an n-gram model) and preprocessing.json, read by seqkeras.load_model. "
        "false for huge sweeps whose models are not wanted.",
    )
    distribution: Literal["none", "mirrored"] = Field(
        "none",
        description="mirrored: data-parallel over all local GPUs (tf.distribute.MirroredStrategy); "
        "on a machine without GPUs it runs on the CPU and says so.",
    )

