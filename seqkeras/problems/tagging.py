"""Tagging: a sequence → one tag per token (id 0 of the tags is padding)."""

from __future__ import annotations

from typing import Any

from seqkeras.problems.base import Predicting, Problem

NAME = "tagging"


class Tagging(Problem):
    name = NAME
    summary = "a sequence → one tag per token"
    output_kind = "tags"
    labelled = True
    first_label = 1  # tag id 0 is padding
    default_metrics = ("entity_f1", "token_accuracy", "invalid_transitions")
    metrics_in_run_ids = ("entity_f1", "token_accuracy", "invalid_transitions")
    predict_columns = ("input", "tokens", "tags", "unknown")

    def output_fields(self, data: Any) -> dict[str, Any]:
        return {"labels": list(data.labels.tokens)}

    def rows(self, predicting: Predicting) -> dict[str, Any]:
        tokens, ids = predicting.tokens(), predicting.decided_ids()
        return {"input": predicting.texts, "tokens": [" ".join(words) for words in tokens],
                "tags": [" ".join(predicting.labels_of(ids[row][: len(words)])) for row, words in enumerate(tokens)],
                "unknown": predicting.unknown()}


PROBLEM = Tagging()
