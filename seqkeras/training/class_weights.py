"""Class weights (`train.class_weights`): each training example's, or token's, share of the loss by its label.

`balanced` weighs a class by n / (classes × its count) over the training part (scikit-learn's rule: each class
then carries the same total weight); a mapping names a weight per label (labels it leaves out weigh 1). The
weights become sample weights of the training part only, as Keras's `class_weight` does, so every loop and
backend applies them alike; for tagging they multiply each real token's weight (padding stays at 0).
Validation and test data are never weighted: their metrics stay comparable between runs.
"""

from __future__ import annotations

from typing import Literal

import numpy as np

from seqkeras.problems import problem_named
from seqkeras.tasks.base import SequenceData

BALANCED = "balanced"

ClassWeights = Literal["balanced"] | dict[str, float]


def per_class(setting: ClassWeights, data: SequenceData, y: np.ndarray) -> np.ndarray:
    """The weight of each label id (padding's, id 0 of tags, included as 0), from the training targets `y`. A label
    the mapping names that the data does not have is a ValueError naming the labels there are."""
    labels = data.labels.tokens
    problem = problem_named(data.problem)
    first = problem.first_label  # tags reserve id 0 for padding
    weights = np.ones(len(labels), dtype="float64")
    if setting == BALANCED:
        counts = np.bincount(problem.label_ids(y), minlength=len(labels))[first:]
        seen = counts > 0
        total, classes = counts.sum(), int(seen.sum())
        weights[first:][seen] = total / (classes * counts[seen])
    else:
        unknown = [label for label in setting if label not in labels[first:]]
        if unknown:
            shown = ", ".join(labels[first:][:20]) + (" ..." if len(labels) > first + 20 else "")
            raise ValueError(f"train.class_weights names {unknown[0]!r}, which is no label of the data "
                             f"(its labels: {shown})")
        for label, weight in setting.items():
            weights[labels.index(label)] = weight
    if first:
        weights[0] = 0.0
    return weights


def sample_weights(setting: ClassWeights | None, data: SequenceData, y: np.ndarray,
                   base: np.ndarray | None) -> np.ndarray | None:
    """The training part's sample weights: `base` (tagging's padding mask, or None) times each target's class
    weight; `base` itself without class weights."""
    if setting is None:
        return base
    weights = per_class(setting, data, y)[y].astype("float32")
    return weights if base is None else weights * base
