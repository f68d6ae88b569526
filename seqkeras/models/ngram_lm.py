"""Model kind `ngram`: a count-based language model on the language-modelling tasks.

The counts are `seqkeras.models.ngram_counts.NgramCounts` (order 1–5; add-k or interpolated
Kneser–Ney smoothing); this module makes them a model kind that sits in the
same table as the neural language models:

* It is estimated in one pass over the training text — no epochs, optimizer or
  checkpoints. Its kind declares so in the catalog (`Abilities(estimated=True,
  scores=True)`), so `seqkeras.training.trainer.fit` calls `estimate(data)`, and the
  run records the seconds it took as its training time, like any other run; the
  evaluator and the decoders ask it for probabilities (`score`, `next_log_probabilities`).
* It is scored on the same test windows as the neural models: the probability
  of each target token given the tokens before it in its window, of which it
  uses the last n − 1 (a window's first tokens are preceded by start markers,
  as every n-gram model treats the start of a text).
* It gives a whole next-token distribution over the task's vocabulary, so
  accuracy (the argmax) and generation with any decoder work as for the
  neural models. The distribution is the Kneser–Ney (or add-k) formula of
  `NgramCounts.probability`, evaluated for every word at once with numpy; the
  tests check that both agree word by word.

Tokens are the task's ids, written as strings ("17"), so the markers <s> and
</s> never collide with a token of the text. The training text is the task's
training stream, counted as one sequence (`LanguageModelData.train_stream`);
for a task without one (char_lm) each training window is a sentence. A text
without any <unk> (nothing rare enough) would leave unseen test words with
probability 0, so then one sentence holding only <unk> is counted: unseen
words get the small share of mass a word seen once gets.

"Parameters" of an n-gram model are its stored counts: the number of distinct
(context, word) pairs over all orders.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from functools import lru_cache
from typing import BinaryIO, Literal

import numpy as np
import pandas as pd
from pydantic import Field, ValidationError, model_validator

from seqkeras.errors import translate_validation_error
from seqkeras.models.ngram_counts import NgramCounts
from seqkeras.registry import ModelFile, ModelShape, Params
from seqkeras.tasks.base import UNK, SequenceData

BOS, EOS = "<s>", "</s>"
# Distributions kept for the most recent contexts: contexts repeat a lot in text
# (every "of the ..."), and each vector is the vocabulary's size.
CACHED_CONTEXTS = 2048


class NgramParams(Params):
    order: int = Field(3, ge=1, le=5, description="n: the model sees the previous n − 1 tokens (1 = unigram).")
    smoothing: Literal["kneser_ney", "add_k", "none"] = Field(
        "kneser_ney",
        description="kneser_ney: interpolated Kneser–Ney; add_k: add k to every count; none: raw ratios "
        "(an unseen n-gram gets probability 0, so perplexity explodes).",
    )
    k: float | None = Field(None, gt=0, le=1e9, description="add_k only: the pseudo-count (default 1, Laplace).")
    discount: float | None = Field(
        None, gt=0, le=1, description="kneser_ney only: the absolute discount D (default 0.75)."
    )

    @model_validator(mode="after")
    def _options_match_smoothing(self) -> "NgramParams":
        self.only_with("k", "smoothing", "add_k")
        self.only_with("discount", "smoothing", "kneser_ney")
        return self


def build(params: NgramParams, data: SequenceData) -> "NgramLanguageModel":
    return NgramLanguageModel(params, vocab_size=len(data.vocabulary))


def training_sequences(data: SequenceData) -> list[list[int]]:
    """The training text as id sequences: the task's stream, or each window (x0, y...) without padding."""
    stream = getattr(data, "train_stream", None)
    if stream is not None:
        return [np.asarray(stream).tolist()]
    return [[int(x[0])] + [int(t) for t in y if t != 0] for x, y in zip(data.x_train, data.y_train)]


class NgramLanguageModel:
    """Counts plus the vectorized smoothing formula; see the module docstring."""

    def __init__(self, params: NgramParams, vocab_size: int):
        self.params = params
        self.vocab_size = vocab_size
        self.counts: NgramCounts | None = None
        self._vector = lru_cache(maxsize=CACHED_CONTEXTS)(self._vector_uncached)

    # ------------------------------------------------------------- estimation

    def estimate(self, data: SequenceData) -> pd.DataFrame:
        """Count the training text; returns the one-row 'history' of this training."""
        sequences = training_sequences(data)
        unknown = data.vocabulary.index.get(UNK)
        if unknown is not None and not any(unknown in sequence for sequence in sequences):
            sequences.append([unknown])
        p = self.params
        self._use(NgramCounts(
            p.order,
            [[str(token) for token in sequence] for sequence in sequences],
            BOS,
            EOS,
            smoothing=p.smoothing,
            k=1.0 if p.k is None else p.k,
            discount=0.75 if p.discount is None else p.discount,
        ))
        tokens = sum(len(sequence) for sequence in sequences)
        return pd.DataFrame([{"epoch": 1, "tokens_counted": tokens, "ngrams": self.count_params()}])

    def _use(self, counts: NgramCounts) -> None:
        self.counts = counts
        words = self.counts.vocabulary  # every predicted string, EOS included
        self._column = {word: index for index, word in enumerate(words)}
        ids = np.array([-1 if word == EOS else int(word) for word in words])
        if ((ids >= self.vocab_size) | (ids < -1)).any():
            raise ValueError(f"the counts name token ids outside the vocabulary of {self.vocab_size}")
        self._known_columns = np.flatnonzero(ids >= 0)
        self._known_ids = ids[self._known_columns]
        self._sparse: dict[tuple[bool, tuple[str, ...]], tuple[np.ndarray, np.ndarray]] = {}
        self._vector.cache_clear()

    # ------------------------------------------------------------- kept (model.ngram.json)

    def to_json(self) -> str:
        """The estimated model as model.ngram.json: its parameters, vocabulary size and counts."""
        if self.counts is None:
            raise RuntimeError("the n-gram model is saved before estimate()")
        document = {"format": "seqkeras-ngram", "version": 1, "params": self.params.model_dump(mode="json"),
                    "vocab_size": self.vocab_size, "counts": self.counts.to_document()}
        return json.dumps(document, ensure_ascii=False, separators=(",", ":")) + "\n"

    @classmethod
    def from_json(cls, text: str) -> NgramLanguageModel:
        """The model `to_json` wrote; ValueError saying what is wrong with a text that is not one."""
        try:
            document = json.loads(text)
        except ValueError as error:
            raise ValueError(f"not JSON ({error})") from None
        if not isinstance(document, dict) or document.get("format") != "seqkeras-ngram" \
                or document.get("version") != 1:
            raise ValueError("not a seqkeras n-gram model (format seqkeras-ngram, version 1)")
        raw = document.get("params")
        try:
            params = NgramParams.model_validate(raw)
        except ValidationError as error:
            raise ValueError(str(translate_validation_error(error, NgramParams, raw, path_prefix="params"))) from None
        size = document.get("vocab_size")
        if not isinstance(size, int) or isinstance(size, bool) or size < 1:
            raise ValueError(f"vocab_size is {size!r}, not a vocabulary size")
        counts = NgramCounts.from_document(document.get("counts"))
        if counts.order != params.order:
            raise ValueError(f"the counts are of order {counts.order}, the params say {params.order}")
        model = cls(params, vocab_size=size)
        model._use(counts)
        return model

    def count_params(self) -> int:
        """Stored counts: distinct (context, word) pairs over every order."""
        if self.counts is None:
            return 0
        return sum(len(followers) for table in self.counts.counts.values() for followers in table.values())

    # ---------------------------------------------------------- distributions

    def context_of(self, history: Sequence[int]) -> tuple[str, ...]:
        """The last n − 1 tokens of `history` (ids), start markers in front of a short one."""
        needed = self.params.order - 1
        if needed == 0:
            return ()
        padded = [BOS] * needed + [str(int(token)) for token in history[-needed:]]
        return tuple(padded[-needed:])

    def distribution(self, history: Sequence[int]) -> np.ndarray:
        """P(next | history) over the task's vocabulary ids, [V].

        Ids the training text never held get 0; so does the end-of-text marker
        (never a target), so the vector sums to 1 − P(</s>), which is tiny.
        """
        if self.counts is None:
            raise RuntimeError("the n-gram model is used before estimate()")
        probabilities = self._vector(self.context_of(history), True)
        out = np.zeros(self.vocab_size, dtype=np.float64)
        out[self._known_ids] = probabilities[self._known_columns]
        return out

    def _followers(self, context: tuple[str, ...], highest: bool) -> tuple[np.ndarray, np.ndarray]:
        """(columns, counts) of the words seen after `context`: raw counts at the top order, continuation counts
        below."""
        key = (highest, context)
        if key not in self._sparse:
            if highest:
                followers = self.counts.counts[self.counts.order].get(context)
            else:
                followers = self.counts.continuation[len(context) + 1].get(context)
            followers = followers or {}
            columns = np.array([self._column[word] for word in followers], dtype=np.int64)
            values = np.array(list(followers.values()), dtype=np.float64)
            self._sparse[key] = (columns, values)
        return self._sparse[key]

    def _vector_uncached(self, context: tuple[str, ...], highest: bool) -> np.ndarray:
        """NgramCounts.probability(word, context) for every word at once (same formulas, same order of terms)."""
        size = len(self.counts.vocabulary)
        columns, counts = self._followers(context, highest)
        total = counts.sum()
        smoothing = self.params.smoothing
        if smoothing == "none":
            out = np.zeros(size)
            if total:
                out[columns] = counts / total
            return out
        if smoothing == "add_k":
            k = self.counts.k
            out = np.full(size, k / (total + k * size))
            out[columns] = (counts + k) / (total + k * size)
            return out
        lower = self._vector(context[1:], False) if context else np.full(size, 1.0 / size)
        if total == 0:
            return lower
        discount = self.counts.discount
        out = discount * len(columns) / total * lower
        out[columns] += np.maximum(counts - discount, 0.0) / total
        return out

    # ------------------------------------------------------------- scoring

    def score(self, x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Per target: P(y[i, t] | x[i, :t + 1]) and the most probable id, both [N, L]."""
        probabilities = np.zeros(y.shape, dtype=np.float64)
        predicted = np.zeros(y.shape, dtype=np.int64)
        for row in range(len(x)):
            for t in range(y.shape[1]):
                if y[row, t] == 0:
                    continue  # padding: not a target
                distribution = self.distribution(x[row, : t + 1])
                probabilities[row, t] = distribution[y[row, t]]
                predicted[row, t] = int(distribution.argmax())
        return probabilities, predicted

    def next_log_probabilities(self, prefixes: np.ndarray) -> np.ndarray:
        """log P(next | prefix) for each row of [B, L] ids: [B, V] (for decoders)."""
        with np.errstate(divide="ignore"):
            return np.log(np.stack([self.distribution(prefix) for prefix in np.asarray(prefixes)]))


def model_shape(model) -> ModelShape:
    """What an `ngram` model reads and writes (the kind's `model_shape`): the task's token ids, and a distribution over
    them after each."""
    if not isinstance(model, NgramLanguageModel):
        raise ValueError(f"a {type(model).__name__}, not a counted n-gram model")
    return ModelShape(model.vocab_size, model.vocab_size, per_token=True)


def read_kept(file: BinaryIO) -> NgramLanguageModel:
    """The model of a kept model.ngram.json, from the open file (`NgramLanguageModel.from_json`)."""
    return NgramLanguageModel.from_json(file.read().decode("utf-8"))


# How the kind keeps its models (its catalog entry's `model_file`): the counts as JSON, no Keras model.
MODEL_FILE = ModelFile("model.ngram.json", "an n-gram model", save=NgramLanguageModel.to_json, load=read_kept)
