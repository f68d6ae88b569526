"""adding: the sum of the two marked numbers in a long sequence (Hochreiter & Schmidhuber 1997; Le et al. 2015).

Each step holds two features, a number and a marker; the target is a function of
the two marked numbers, the first of which must be carried across the
distractors after it. Two variants:

halves (Le et al. 2015, the default): every sequence has `length` steps. The
number is drawn from U[0, 1]; the marker is 1 at exactly two steps (one in the
first half of the sequence, one in the second) and 0 elsewhere. The target is
the sum of the two marked numbers. The memoryless baseline always predicts 1
(the sum's mean): its mean squared error is the sum's variance, 2/12 ≈ 0.167.

hochreiter_1997 (Hochreiter & Schmidhuber 1997, section 5.4, experiment 4), with
T = `length`: a sequence has a random length in [T, T + T//10]. The number is
drawn from U[−1, 1]. Exactly two steps are marked 1: first one of the first ten
(its number is X1), then one of the first T//2 − 1 steps still unmarked (X2).
The first and the last step are marked −1 unless marked 1; every other step 0.
When the first step is the one marked first, X1 is set to 0 (the paper's "rare
case"; its number in the input is 0 too, so the input holds what the target
sums). The target is 0.5 + (X1 + X2)/4, the sum scaled to [0, 1]; the paper
counts a sequence as processed correctly when the absolute error is below 0.04
(the `success_rate` metric). The sequences, of different lengths, share one
array of T + T//10 steps: each is LEFT-padded with all-zero steps (number 0,
marker 0), so every sequence ends at the array's last step, where the regressor
reads its output. A pad step is all zeros; a real first step has marker −1 (or 1).
The memoryless baseline predicts 0.5: its mean squared error is
Var((X1 + X2)/4) = (Var X1 + Var X2)/16, with Var X2 = 1/3 and Var X1 = 9/10 · 1/3
(X1 is 0 with probability 1/10), that is (3/10 + 1/3)/16 = 19/480 ≈ 0.0396.

The `baseline_mse` metric measures either baseline on the test set, against the
training targets' mean.
"""

from __future__ import annotations

from typing import ClassVar, Literal

import numpy as np
from pydantic import Field, model_validator

from seqkeras.tasks.base import REGRESSION, SequenceData, SizeParams, Vocabulary
from seqkeras.tasks.input_rules import InputRule

FEATURES = 2  # the number and its marker
HOCHREITER_MIN_LENGTH = 20  # the first ten steps and the first T//2 − 1 unmarked ones must fit well inside T
FIRST_MARK_WITHIN = 10  # X1 is one of the first ten steps

Variant = Literal["halves", "hochreiter_1997"]


class Params(SizeParams):
    length: int = Field(100, ge=2, le=100_000, description="T: steps per sequence (hochreiter_1997: the fewest, "
                                                           "at least 20).")
    variant: Variant = Field(
        "halves",
        description="halves (Le et al. 2015): numbers from U[0, 1], one marked in each half, target their sum. "
                    "hochreiter_1997 (Hochreiter & Schmidhuber 1997, experiment 4): T to T + T//10 steps, "
                    "left-padded with zero steps; numbers from U[−1, 1], one marked among the first ten steps and "
                    "one among the first T//2 − 1 others, first and last step marked −1; target "
                    "0.5 + (X1 + X2)/4.")

    # Added after results existed: a spec without it keeps its runs' ids (registry.Params.hashed).
    hashed_only_when_set: ClassVar[tuple[str, ...]] = ("variant",)

    @model_validator(mode="after")
    def _long_enough_for_hochreiter(self) -> "Params":
        if self.variant == "hochreiter_1997" and self.length < HOCHREITER_MIN_LENGTH:
            raise ValueError(f"variant hochreiter_1997 marks one of the first ten steps and one of the first "
                             f"length//2 − 1 others: length must be at least {HOCHREITER_MIN_LENGTH}, "
                             f"not {self.length}")
        return self

    @property
    def steps(self) -> int:
        """The width of the data's arrays: T, or T + T//10 for hochreiter_1997's longest sequences."""
        return self.length + self.length // 10 if self.variant == "hochreiter_1997" else self.length

    def tokens_per_example(self) -> int:
        return FEATURES * self.steps

    def input_rule(self, data: SequenceData) -> InputRule:
        # No text: a kept model reads each step's real-valued features, as many as the data has per step.
        return InputRule(vocabulary=None, split="features", features=int(data.x_train.shape[-1]))


def build(params: Params, seed: int) -> SequenceData:
    rng = np.random.default_rng(seed)
    examples = hochreiter_examples if params.variant == "hochreiter_1997" else halves_examples
    x_train, y_train = examples(params, rng, params.n_train)
    x_test, y_test = examples(params, rng, params.n_test)
    return SequenceData(REGRESSION, x_train, y_train, x_test, y_test, Vocabulary([]))


def halves_examples(params: Params, rng: np.random.Generator, count: int) -> tuple[np.ndarray, np.ndarray]:
    """Le et al. 2015's sequences: `length` numbers from U[0, 1], one marked in each half; the target their sum."""
    half = params.length // 2
    x = np.zeros((count, params.length, FEATURES), dtype="float32")
    x[:, :, 0] = rng.uniform(0.0, 1.0, size=(count, params.length))
    first = rng.integers(0, half, size=count)
    second = rng.integers(half, params.length, size=count)
    rows = np.arange(count)
    x[rows, first, 1] = x[rows, second, 1] = 1.0
    y = (x[rows, first, 0] + x[rows, second, 0]).astype("float32")[:, None]
    return x, y


def hochreiter_examples(params: Params, rng: np.random.Generator, count: int) -> tuple[np.ndarray, np.ndarray]:
    """Hochreiter & Schmidhuber 1997's sequences (module docstring), left-padded to `params.steps` steps."""
    steps, rows = params.steps, np.arange(count)
    lengths = rng.integers(params.length, steps + 1, size=count)
    start = steps - lengths  # the first real step of each row: every sequence ends at the last step
    first = rng.integers(0, FIRST_MARK_WITHIN, size=count)
    # The r-th still unmarked step, r among the first T//2 − 1: r itself before the first mark, r + 1 from it on.
    rank = rng.integers(0, params.length // 2 - 1, size=count)
    second = rank + (rank >= first)
    x = np.zeros((count, steps, FEATURES), dtype="float32")
    x[:, :, 0] = rng.uniform(-1.0, 1.0, size=(count, steps))
    x[np.arange(steps)[None, :] < start[:, None]] = 0.0  # the padding: all-zero steps
    x[rows, start, 1] = x[rows, steps - 1, 1] = -1.0  # the first and last step, unless marked below
    x[rows, start + first, 1] = x[rows, start + second, 1] = 1.0
    x[rows[first == 0], start[first == 0], 0] = 0.0  # the paper's rare case: X1 at the first step is 0
    y = 0.5 + (x[rows, start + first, 0] + x[rows, start + second, 0]) / 4.0
    return x, y.astype("float32")[:, None]
