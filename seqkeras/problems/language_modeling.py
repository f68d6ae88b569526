"""Language modelling: a prefix → the next token, at every position; decoded by continuing prompts."""

from __future__ import annotations

from typing import Any

import numpy as np

from seqkeras.problems.base import Predicting, Problem

NAME = "language_modeling"


class LanguageModeling(Problem):
    name = NAME
    summary = "a prefix → the next token, at every position; decoders continue prompts"
    output_kind = "next_token"
    decodes = True
    continues_prompts = True
    default_metrics = ("perplexity", "token_accuracy")
    metrics_in_run_ids = ("perplexity", "token_accuracy")
    predict_columns = ("input", "decoder", "output", "log_prob", "unknown")

    def output_fields(self, data: Any) -> dict[str, Any]:
        # The window a step reads (its training sequences' length), and the token that ends a text, where the
        # task has one.
        return {"end": getattr(data, "end_token", None), "context": int(data.x_train.shape[1])}

    def rows(self, predicting: Predicting) -> dict[str, Any]:
        outputs, log_probs = predicting.continued()
        return {"input": predicting.texts, "decoder": predicting.decoder_label(), "output": outputs,
                "log_prob": np.asarray(log_probs, dtype=float), "unknown": predicting.unknown()}


PROBLEM = LanguageModeling()
