"""Regression: a sequence of real-valued steps → one number (the adding problem)."""

from __future__ import annotations

from typing import Any

from seqkeras.problems.base import Predicting, Problem

NAME = "regression"


class Regression(Problem):
    name = NAME
    summary = "a sequence of real-valued steps → one number"
    output_kind = "value"
    reads_tokens = False
    one_target_per_sequence = True
    keras_loss = "mse"
    default_metrics = ("mse", "baseline_mse")
    metrics_in_run_ids = ("mse", "baseline_mse")
    predict_columns = ("input", "value")

    def rows(self, predicting: Predicting) -> dict[str, Any]:
        return {"input": predicting.texts, "value": predicting.values().astype(float)}


PROBLEM = Regression()
