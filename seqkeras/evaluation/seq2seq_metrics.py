"""Seq2seq metrics: what one decoder's outputs score on the test set.

Every metric is a function of `DecodedOutputs` and returns one number, so the
same function scores the whole test set and each source-length bucket of it
(`length_buckets`). Text metrics (BLEU, chrF, exact match, position accuracy,
distinct-n) compare tokens with the real references; the token accuracies compare
target ids position by position, the end token included (stopping at the right
place counts).

BLEU and chrF are sacrebleu's corpus-level scores (0–100) on the
space-joined tokens, so they are comparable with published numbers for the
same tokenization. For a task whose tokens are WordPiece pieces the evaluator
hands over words (the words the output's pieces spell, and the reference's
words: evaluation.seq2seq), so every text metric here reads words, never
pieces. Nothing here imports TensorFlow.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

import numpy as np


@dataclass
class DecodedOutputs:
    """One decoder's outputs for N test pairs, and what the metrics compare them with.

    hypotheses / references: output and reference tokens, without the end token (words, for pieces).
    source_lengths: [N] source tokens, for the per-length breakdown.
    log_probs: [N] the model's log-probability of each output (its end token included when emitted).
    output_lengths: [N] the tokens that log-probability covers.
    free_running_hits: [N] reference positions (end included) where the decoder's own output, fed back
        step by step, has the reference token.
    teacher_forced_hits: [N] reference positions where the model's most probable next token, reading the
        true previous tokens (teacher forcing), is the reference token.
    reference_positions: [N] reference tokens + 1 (the end).
    seconds: time spent decoding these N outputs.
    """

    hypotheses: list[list[str]]
    references: list[list[str]]
    source_lengths: np.ndarray = field(default=None)
    log_probs: np.ndarray = field(default=None)
    output_lengths: np.ndarray = field(default=None)
    free_running_hits: np.ndarray = field(default=None)
    teacher_forced_hits: np.ndarray = field(default=None)
    reference_positions: np.ndarray = field(default=None)
    seconds: float = 0.0

    def __post_init__(self):
        if len(self.hypotheses) != len(self.references):
            raise ValueError(f"{len(self.hypotheses)} hypotheses for {len(self.references)} references")
        count = len(self.references)
        reference_lengths = np.array([len(r) for r in self.references], dtype="int64")
        output_lengths = np.array([len(h) for h in self.hypotheses], dtype="int64")
        defaults = {
            "source_lengths": reference_lengths,
            "log_probs": np.full(count, np.nan),
            "output_lengths": output_lengths,
            "free_running_hits": np.array(
                [position_hits(h, r) for h, r in zip(self.hypotheses, self.references)], dtype="int64"
            ),
            "teacher_forced_hits": np.zeros(count, dtype="int64"),
            "reference_positions": reference_lengths + 1,
        }
        for name, default in defaults.items():
            value = getattr(self, name)
            setattr(self, name, default if value is None else np.asarray(value))

    def __len__(self) -> int:
        return len(self.references)

    def subset(self, rows: Sequence[int] | np.ndarray) -> "DecodedOutputs":
        """The outputs of `rows`; decoding time is shared out evenly (decoding is batched)."""
        rows = np.asarray(rows, dtype="int64")
        share = self.seconds * len(rows) / max(len(self), 1)
        return replace(
            self,
            hypotheses=[self.hypotheses[i] for i in rows],
            references=[self.references[i] for i in rows],
            **{name: getattr(self, name)[rows] for name in PER_SEQUENCE_ARRAYS},
            seconds=share,
        )


PER_SEQUENCE_ARRAYS = ("source_lengths", "log_probs", "output_lengths", "free_running_hits",
                       "teacher_forced_hits", "reference_positions")


def position_hits(output: Sequence, reference: Sequence, end: object = "</s>") -> int:
    """Positions of `reference` + end where `output` + end has the same token.

    An output that stops early misses the rest (and the end); one that runs on
    misses the end.
    """
    return matching_positions(list(output) + [end], list(reference) + [end])


def matching_positions(output: Sequence, reference: Sequence) -> int:
    """Positions of `reference` where `output` has the same token (positions either lacks count nothing)."""
    return sum(a == b for a, b in zip(output, reference))


def _joined(sequences: list[list[str]]) -> list[str]:
    return [" ".join(tokens) for tokens in sequences]


def bleu(outputs: DecodedOutputs) -> float:
    """sacrebleu corpus BLEU (0–100) of the outputs against the references."""
    if not len(outputs):
        return math.nan
    import sacrebleu

    # The tasks' tokens are already split (punctuation apart), which sacrebleu's
    # default 13a tokenizer leaves as they are; force=True stops it warning about it.
    score = sacrebleu.corpus_bleu(_joined(outputs.hypotheses), [_joined(outputs.references)], force=True)
    return float(score.score)


def chrf(outputs: DecodedOutputs) -> float:
    """sacrebleu corpus chrF (0–100): character n-gram F-score, kinder to near misses than BLEU."""
    if not len(outputs):
        return math.nan
    import sacrebleu

    return float(sacrebleu.corpus_chrf(_joined(outputs.hypotheses), [_joined(outputs.references)]).score)


def position_accuracy(outputs: DecodedOutputs) -> float:
    """Share of reference positions (the end not counted) where the output has the same token at the same position.

    An output that stops early misses the positions it does not reach; tokens past the reference's end count
    nothing. Over targets padded to one width (addition's pad_with_spaces) it is Keras's per-position
    `accuracy` of a model that writes that many tokens: the Keras addition_rnn example's.
    """
    positions = sum(len(r) for r in outputs.references)
    if not positions:
        return math.nan
    return sum(matching_positions(h, r) for h, r in zip(outputs.hypotheses, outputs.references)) / positions


def exact_match(outputs: DecodedOutputs) -> float:
    """Share of outputs identical to their reference."""
    if not len(outputs):
        return math.nan
    return float(np.mean([h == r for h, r in zip(outputs.hypotheses, outputs.references)]))


def _share(hits: np.ndarray, positions: np.ndarray) -> float:
    total = int(np.sum(positions))
    return float(np.sum(hits) / total) if total else math.nan


def teacher_forced_token_accuracy(outputs: DecodedOutputs) -> float:
    """Share of reference tokens (and ends) predicted correctly when the decoder reads the true previous tokens."""
    return _share(outputs.teacher_forced_hits, outputs.reference_positions)


def free_running_token_accuracy(outputs: DecodedOutputs) -> float:
    """Share of reference tokens (and ends) the decoder's own output matches, position by position."""
    return _share(outputs.free_running_hits, outputs.reference_positions)


def exposure_gap(outputs: DecodedOutputs) -> float:
    """Teacher-forced minus free-running token accuracy: what the decoder loses reading its own outputs."""
    return teacher_forced_token_accuracy(outputs) - free_running_token_accuracy(outputs)


def mean_log_prob(outputs: DecodedOutputs) -> float:
    """Mean over outputs of log P(output | source) under the model, in nats (higher: more probable)."""
    return float(np.mean(outputs.log_probs)) if len(outputs) else math.nan


def log_prob_per_token(outputs: DecodedOutputs) -> float:
    """Total log-probability of the outputs divided by their tokens (end tokens included)."""
    total = int(np.sum(outputs.output_lengths))
    return float(np.sum(outputs.log_probs) / total) if total else math.nan


def length_ratio(outputs: DecodedOutputs) -> float:
    """Output tokens / reference tokens over the whole set (below 1: outputs too short)."""
    reference_tokens = sum(len(r) for r in outputs.references)
    return sum(len(h) for h in outputs.hypotheses) / reference_tokens if reference_tokens else math.nan


def distinct(outputs: DecodedOutputs, n: int) -> float:
    """Distinct n-grams / all n-grams over every output (Li et al., 2016): the outputs' diversity."""
    ngrams = [tuple(h[i : i + n]) for h in outputs.hypotheses for i in range(len(h) - n + 1)]
    return len(set(ngrams)) / len(ngrams) if ngrams else math.nan


def distinct_1(outputs: DecodedOutputs) -> float:
    return distinct(outputs, 1)


def distinct_2(outputs: DecodedOutputs) -> float:
    return distinct(outputs, 2)


def seconds_per_sequence(outputs: DecodedOutputs) -> float:
    """Decoding time per test sequence (batched decoding: the average)."""
    return outputs.seconds / len(outputs) if len(outputs) else math.nan


def length_buckets(
    outputs: DecodedOutputs, metrics: dict[str, Callable[[DecodedOutputs], float]], width: int
) -> list[dict[str, object]]:
    """Every metric per source-length bucket [k·width + 1, (k+1)·width] that holds test pairs, shortest first.

    Each row: bucket ("41-60"), length_min, length_max, sequences, then one column per metric.
    """
    buckets = (np.asarray(outputs.source_lengths) - 1) // width  # sources have at least one token
    rows = []
    for bucket in np.unique(buckets):
        low, high = int(bucket) * width + 1, (int(bucket) + 1) * width
        part = outputs.subset(np.flatnonzero(buckets == bucket))
        row: dict[str, object] = {"bucket": f"{low}-{high}", "length_min": low, "length_max": high,
                                  "sequences": len(part)}
        row.update({name: function(part) for name, function in metrics.items()})
        rows.append(row)
    return rows


def bucket_metric_name(metric: str, row: dict[str, object]) -> str:
    """'bleu_len_41_60': a bucket's metric as a column of runs.csv."""
    return f"{metric}_len_{row['length_min']}_{row['length_max']}"


def bucket_metric_pattern(metric: str) -> str:
    """Every bucket's column of `metric` (which buckets exist depends on the test set's lengths)."""
    return f"{metric}_len_*"
