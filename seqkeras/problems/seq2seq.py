"""Sequence to sequence: a source sequence → a target sequence, decoded from a start token to an end token."""

from __future__ import annotations

from typing import Any

import numpy as np

from seqkeras.problems.base import Predicting, Problem

NAME = "seq2seq"
START, END = "<s>", "</s>"  # the target vocabulary's marks: the decoder starts from START and stops at END


class Seq2Seq(Problem):
    name = NAME
    summary = "a source sequence → a target sequence"
    output_kind = "target"
    decodes = True
    source_to_target = True
    default_metrics = ("bleu", "chrf", "exact_match", "teacher_forced_token_accuracy",
                       "free_running_token_accuracy", "mean_log_prob", "length_ratio", "seconds_per_sequence")
    metrics_in_run_ids = ("bleu", "chrf", "exact_match", "teacher_forced_token_accuracy",
                          "free_running_token_accuracy", "mean_log_prob", "length_ratio", "seconds_per_sequence")
    predict_columns = ("input", "decoder", "output", "log_prob", "unknown")

    def loss_weights(self, x: Any, y: np.ndarray | None) -> np.ndarray | None:
        # The inputs are a dict (source, decoder input); the weights follow the targets' padding.
        return (y != 0).astype("float32")

    def output_fields(self, data: Any) -> dict[str, Any]:
        return {"start": START, "end": END}

    def rows(self, predicting: Predicting) -> dict[str, Any]:
        outputs, log_probs = predicting.decoded()
        return {"input": predicting.texts, "decoder": predicting.decoder_label(), "output": outputs,
                "log_prob": np.asarray(log_probs, dtype=float), "unknown": predicting.unknown()}


PROBLEM = Seq2Seq()
