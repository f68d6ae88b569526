"""`Problem`: what a problem kind owns, and `Predicting`: what a kept model gives a problem to make predict's rows.

A problem kind (classification, tagging, ...) decides what a target is, and so the loss's per-token weights, the
mask its metrics read, which labels a class weight or the data card counts, the layout of a kept model's outputs
and the rows `seqkeras predict` writes. Each is one module of this package, a subclass of `Problem` with one
instance, listed once in `seqkeras.problems.ALL`; the stages ask it, never compare its name.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal, Protocol

import numpy as np

# What a kept model's output rule reads (kept.preprocessing.OutputRule.kind): one per problem.
OutputKind = Literal["label", "tags", "next_token", "target", "value"]


class Predicting(Protocol):
    """The inputs of one `seqkeras predict` call and the kept model's answers to them, computed when first asked
    (kept.predict implements it): a problem's `rows` asks for what its rows hold."""

    texts: list[str]

    def unknown(self) -> list[int]: ...  # per input, its tokens not in the vocabulary

    def tokens(self) -> list[list[str]]: ...  # per input, its tokens as the task standardized them

    def outputs(self) -> list[np.ndarray]: ...  # per input, the model's output (probabilities)

    def decided_ids(self) -> list[np.ndarray]: ...  # per input, the ids the model kind decides (argmax, or Viterbi)

    def labels_of(self, ids: Any) -> list[str]: ...

    def decoder_label(self) -> str: ...

    def decoded(self) -> tuple[list[str], np.ndarray]: ...  # an encoder-decoder's output texts, log-probabilities

    def continued(self) -> tuple[list[str], list[float]]: ...  # a language model's continuations of the prompts

    def values(self) -> np.ndarray: ...  # a regressor's one number per input


class Problem:
    """One problem kind. The class attributes declare it; the methods compute what differs between problems."""

    name: ClassVar[str]
    summary: ClassVar[str]  # one line, for the docs
    output_kind: ClassVar[OutputKind]
    # Reads token ids (and so has a vocabulary, padding id 0, lengths), or real-valued steps (regression).
    reads_tokens: ClassVar[bool] = True
    # One target per sequence (a label, a number): no padding in the targets to weigh out of the loss.
    one_target_per_sequence: ClassVar[bool] = False
    # Its targets are class labels (data.labels): class weights weigh them, the data card counts them; the first
    # label id that is a class (tags keep id 0 for padding).
    labelled: ClassVar[bool] = False
    first_label: ClassVar[int] = 0
    # Its outputs are decoded token by token: decoders (greedy, beam, sampling) apply, and decoder rows are keyed.
    decodes: ClassVar[bool] = False
    # Continues prompts (evaluate.generate, predict's length).
    continues_prompts: ClassVar[bool] = False
    # The Keras loss when the model kind has no loss of its own: None for the suite's softmax cross-entropy (with
    # its accuracy); a Keras loss name otherwise (and no accuracy).
    keras_loss: ClassVar[str | None] = None
    # Shuffled batches are cut by length by default when its examples' lengths vary (spec.loader's `auto`):
    # only where the loss is per sequence, so batching by length leaves every example's loss as it was.
    by_length_by_default: ClassVar[bool] = False
    # Reads a source and decodes a target of the task's target vocabulary (an encoder-decoder): the data has a
    # target vocabulary, the decoded output a longest length, a model may attend to the source.
    source_to_target: ClassVar[bool] = False
    # Its run folder gets the confusion matrix and per-class scores (confusion.csv, per_class.csv).
    confusion_tables: ClassVar[bool] = False
    # The metrics (evaluation.metric_catalog's names) a run that names none computes.
    default_metrics: ClassVar[tuple[str, ...]]
    # What a run that names no metrics is hashed with (its run id: spec.loader), in place of `default_metrics`:
    # the defaults as they were when run ids began. Never edited: a metric added to (or taken from)
    # `default_metrics` is computed by the runs that name none, and listed in their spec.yaml, while their ids
    # stay what they were; otherwise every run of the problem would be a new run, its finished record never found
    # again. A new problem sets its first defaults here.
    metrics_in_run_ids: ClassVar[tuple[str, ...]]
    # The columns of predict's rows, in order (docs, and the rows' check).
    predict_columns: ClassVar[tuple[str, ...]]

    @property
    def reports_accuracy(self) -> bool:
        return self.keras_loss is None

    def loss_weights(self, x: np.ndarray, y: np.ndarray | None) -> np.ndarray | None:
        """Per-token sample weights: padding (id 0) counts for nothing in loss and metrics; None where each
        sequence has one target. Default: the inputs' padding (a token's target sits at its input's place)."""
        if self.one_target_per_sequence:
            return None
        return (x != 0).astype("float32")

    def metric_mask(self, x: np.ndarray) -> np.ndarray | None:
        """Which predictions the metrics read: every one where a sequence has one target, else the non-padding."""
        return None if self.one_target_per_sequence else x != 0

    def label_ids(self, y: np.ndarray) -> np.ndarray:
        """The class label ids among targets `y`, padding left out (labelled problems)."""
        y = np.asarray(y)
        return y.ravel() if self.first_label == 0 else y[y >= self.first_label]

    def output_fields(self, data: Any) -> dict[str, Any]:
        """What its kept model's output rule holds beyond the fields every rule has (kept.preprocessing)."""
        return {}

    def rows(self, predicting: Predicting) -> dict[str, Any]:
        """The columns of `seqkeras predict`'s rows, one row per input."""
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"<problem {self.name}>"
