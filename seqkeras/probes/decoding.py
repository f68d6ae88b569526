"""Probe `decoding`: greedy, beam and sampled outputs of a next-word table.

The lesson's toy model gives P(next word | previous word) as a table and
prints, with max_len = 6:

    greedy:       the dog </s>       p = 0.140
    beam width 1: the dog </s>       p = 0.140
    beam width 2: a small cat </s>   p = 0.292
    beam width 3: a small cat </s>   p = 0.292

This probe builds the table into a Keras model (`TableLanguageModel`) and runs
the shared decoders of `seqkeras.decoding` on it, the same code that decodes
trained language models and seq2seq models, so the table's numbers check the
decoders rather than a separate re-implementation.
"""

from __future__ import annotations

from collections import Counter

import numpy as np
import pandas as pd
from pydantic import Field, ValidationInfo, field_validator

from seqkeras.decoding.decoders import DecoderChoice, GreedyChoice, build_decoder, seeded
from seqkeras.decoding.table_model import LESSON_TABLE, TableLanguageModel, check_table
from seqkeras.errors import SpecError
from seqkeras.probes.base import ProbeResult
from seqkeras.registry import Params as BaseParams


class Params(BaseParams):
    start: str = Field("<s>", description="The start token: the row of the table the output begins from.")
    end: str = Field("</s>", description="The end token: emitting it finishes the output.")
    table: dict[str, dict[str, float]] = Field(
        default_factory=lambda: {word: dict(row) for word, row in LESSON_TABLE.items()},
        description=(
            "P(next word | previous word): one row per word, each row's probabilities summing "
            "to 1; every next word needs its own row unless it is the end token. "
            "Defaults to the lesson's toy table."
        ),
    )
    decoder: DecoderChoice = Field(
        default_factory=GreedyChoice,
        description=(
            "The decoding strategy: {name: greedy}, {name: beam, width, length_penalty} or "
            "{name: sample, temperature, top_k, top_p, seed}."
        ),
    )
    max_length: int = Field(
        6, ge=1, description="Most tokens generated (the end token included). The lesson uses 6."
    )
    samples: int = Field(
        1,
        ge=1,
        description="Sampling only: how many outputs to draw. The metrics describe the most probable "
        "of them; the `hypotheses` curve lists them all.",
    )

    @field_validator("table")
    @classmethod
    def _valid_table(cls, table, info: ValidationInfo):
        try:
            check_table(table, info.data.get("start", "<s>"), info.data.get("end", "</s>"))
        except SpecError as error:
            raise ValueError(f"{error.path}: {error.message}") from None
        return table


def metric_names(params: Params) -> list[str]:
    """The metrics `run` reports for these parameters, known before it runs (tables and claims are checked
    against them)."""
    names = ["output", "probability", "log_probability", "length"]
    return names + (["samples", "distinct_outputs", "mean_log_probability"] if params.decoder.name == "sample" else [])


def run(params: Params, seed: int = 0) -> ProbeResult:
    """Decode the table once (or `samples` times) and report the output and its probability.

    For sampling, the run's `seed` is added to the decoder's own seed, so the
    seeds of an experiment draw different streams while each run stays reproducible.
    """
    try:
        language_model = TableLanguageModel(params.table, params.start, params.end)
    except SpecError as error:
        raise error.located(path_prefix="probe") from None

    choice = seeded(params.decoder, seed)
    decoder = build_decoder(choice.name, choice)
    batch_size = params.samples if choice.name == "sample" else 1
    result = decoder.decode(language_model.step_model, batch_size=batch_size, max_length=params.max_length)

    def text(ids: list[int]) -> str:
        return " ".join(language_model.words(ids))

    best = int(np.argmax(result.log_probs))
    metrics: dict[str, float | int | str] = {
        "output": text(result.tokens[best]),
        "probability": float(np.exp(result.log_probs[best])),
        "log_probability": float(result.log_probs[best]),
        "length": int(result.lengths[best]),
    }

    if result.hypotheses is not None:
        rows = [
            {
                "rank": rank,
                "output": text(hypothesis.tokens),
                "probability": float(np.exp(hypothesis.log_prob)),
                "log_probability": hypothesis.log_prob,
                "score": hypothesis.score,
                "length": len(hypothesis.tokens),
                "finished": hypothesis.finished,
            }
            for rank, hypothesis in enumerate(result.hypotheses[0], start=1)
        ]
    else:
        counts = Counter(text(tokens) for tokens in result.tokens)
        first = {}
        for tokens, log_prob in zip(result.tokens, result.log_probs):
            first.setdefault(text(tokens), (len(tokens), float(log_prob), tokens[-1:] == [language_model.end_id]))
        ordered = sorted(first.items(), key=lambda item: -item[1][1])
        rows = [
            {
                "rank": rank,
                "output": output,
                "probability": float(np.exp(log_prob)),
                "log_probability": log_prob,
                "length": length,
                "finished": finished,
                "count": counts[output],
            }
            for rank, (output, (length, log_prob, finished)) in enumerate(ordered, start=1)
        ]
    if choice.name == "sample":
        metrics["samples"] = params.samples
        metrics["distinct_outputs"] = len(set(text(tokens) for tokens in result.tokens))
        metrics["mean_log_probability"] = float(np.mean(result.log_probs))
    return ProbeResult(metrics=metrics, curves={"hypotheses": pd.DataFrame(rows)})
