"""Classification: a sequence → one of the task's labels."""

from __future__ import annotations

from typing import Any

import numpy as np

from seqkeras.problems.base import Predicting, Problem

NAME = "classification"


class Classification(Problem):
    name = NAME
    summary = "a sequence → one of the task's labels"
    output_kind = "label"
    one_target_per_sequence = True
    labelled = True
    by_length_by_default = True
    confusion_tables = True
    default_metrics = ("accuracy",)
    metrics_in_run_ids = ("accuracy",)
    predict_columns = ("input", "label", "probability", "unknown")

    def output_fields(self, data: Any) -> dict[str, Any]:
        return {"labels": list(data.labels.tokens)}

    def rows(self, predicting: Predicting) -> dict[str, Any]:
        probabilities = np.stack(predicting.outputs())
        best = probabilities.argmax(-1)
        return {"input": predicting.texts, "label": predicting.labels_of(best),
                "probability": probabilities[np.arange(len(best)), best].astype(float),
                "unknown": predicting.unknown()}


PROBLEM = Classification()
