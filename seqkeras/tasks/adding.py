"""adding: the sum of the two marked numbers in a long sequence (Hochreiter & Schmidhuber 1997; Le et al. 2015).

Each step holds two features: a number drawn from U[0, 1] and a marker, 1 at
exactly two steps (one in the first half of the sequence, one in the second) and
0 elsewhere. The target is the sum of the two marked numbers: the first marked
number must be carried across up to `length` steps of distractors.

The memoryless baseline always predicts 1 (the sum's mean): its mean squared
error is the sum's variance, 2/12 ≈ 0.167 (the `baseline_mse` metric measures it
on the test set, against the training targets' mean).
"""

from __future__ import annotations

import numpy as np
from pydantic import Field

from seqkeras.tasks.base import REGRESSION, SequenceData, SizeParams, Vocabulary
from seqkeras.tasks.input_rules import InputRule

FEATURES = 2  # the number and its marker


class Params(SizeParams):
    length: int = Field(100, ge=2, le=100_000, description="T: steps per sequence.")

    def tokens_per_example(self) -> int:
        return FEATURES * self.length

    def input_rule(self, data: SequenceData) -> InputRule:
        # No text: a kept model reads each step's real-valued features, as many as the data has per step.
        return InputRule(vocabulary=None, split="features", features=int(data.x_train.shape[-1]))


def build(params: Params, seed: int) -> SequenceData:
    rng = np.random.default_rng(seed)
    half = params.length // 2

    def examples(count: int) -> tuple[np.ndarray, np.ndarray]:
        x = np.zeros((count, params.length, FEATURES), dtype="float32")
        x[:, :, 0] = rng.uniform(0.0, 1.0, size=(count, params.length))
        first = rng.integers(0, half, size=count)
        second = rng.integers(half, params.length, size=count)
        rows = np.arange(count)
        x[rows, first, 1] = x[rows, second, 1] = 1.0
        y = (x[rows, first, 0] + x[rows, second, 0]).astype("float32")[:, None]
        return x, y

    x_train, y_train = examples(params.n_train)
    x_test, y_test = examples(params.n_test)
    return SequenceData(REGRESSION, x_train, y_train, x_test, y_test, Vocabulary([]))
