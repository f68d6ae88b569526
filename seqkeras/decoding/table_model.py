"""A next-word table (a bigram language model) as a real Keras model.

The lesson's toy model gives P(next word | previous word) as a table. Here it
becomes an `Embedding(V, V)` whose row for word w holds log P(· | w), so the
model maps token ids [B, L] to next-token logits [B, L, V] like any causal LM,
and the decoders reach it through the same `PrefixStepModel` as a trained one.

`check_table` is plain Python (no TensorFlow), so a spec can be validated
without building anything.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np

from seqkeras.decoding.step_model import PrefixStepModel
from seqkeras.errors import SpecError

# The logit of a next word the table does not list (probability 0). Finite so
# that sums and softmaxes stay NaN-free; exp of it is exactly 0 in float32.
IMPOSSIBLE_LOGIT = -1.0e9

SUM_TOLERANCE = 1e-6

# The lesson's toy next-word model ("Decoding: generating text").
LESSON_TABLE: dict[str, dict[str, float]] = {
    "<s>": {"the": 0.5, "a": 0.4, "</s>": 0.1},
    "the": {"dog": 0.4, "cat": 0.35, "</s>": 0.25},
    "a": {"small": 0.9, "</s>": 0.1},
    "small": {"cat": 0.9, "</s>": 0.1},
    "dog": {"barked": 0.3, "</s>": 0.7},
    "cat": {"</s>": 0.9, "sat": 0.1},
    "barked": {"</s>": 1.0},
    "sat": {"</s>": 1.0},
}


def check_table(
    table: Mapping[str, Mapping[str, float]], start: str = "<s>", end: str = "</s>", path: str = "table"
) -> None:
    """Raise `SpecError` (with the dotted path of the offending entry) unless `table` is a valid next-word table."""
    if start == end:
        raise SpecError(f"the start and end tokens must differ, both are {start!r}.", path=path)
    if start not in table:
        raise SpecError(f"the table has no row for the start token {start!r}; add one.", path=path)
    if end in table:
        raise SpecError(
            f"the end token {end!r} has a row, but nothing follows the end of a sentence; remove it.",
            path=f"{path}.{end}",
        )
    for word, row in table.items():
        total = 0.0
        for next_word, probability in row.items():
            if isinstance(probability, bool) or not isinstance(probability, (int, float)):
                raise SpecError(
                    f"P({next_word!r} | {word!r}) must be a number, received {probability!r}.",
                    path=f"{path}.{word}.{next_word}",
                )
            if not 0.0 <= probability <= 1.0:
                raise SpecError(
                    f"P({next_word!r} | {word!r}) must lie between 0 and 1, received {probability!r}.",
                    path=f"{path}.{word}.{next_word}",
                )
            if next_word != end and next_word not in table:
                raise SpecError(
                    f"{next_word!r} can follow {word!r} but has no row of its own; "
                    f"add a row for {next_word!r} (what can follow it) or remove it.",
                    path=f"{path}.{word}",
                )
            total += probability
        if abs(total - 1.0) > SUM_TOLERANCE:
            raise SpecError(
                f"the probabilities of the words after {word!r} sum to {total:.6g}, not 1.",
                path=f"{path}.{word}",
            )


class TableLanguageModel:
    """A next-word table turned into a vocabulary, a Keras model and a step model.

    vocab: the words, in order of first appearance in the table (so ids are stable
        for a given table); `start_id`, `end_id` index it.
    model: a Keras model, token ids [B, L] → logits [B, L, V], where the logits at
        position i are log P(next | token i) (IMPOSSIBLE_LOGIT where P is 0). The
        end token's row makes the end absorbing: P(end | end) = 1.
    step_model: `PrefixStepModel` over `model`, for the decoders.
    """

    def __init__(
        self,
        table: Mapping[str, Mapping[str, float]],
        start: str = "<s>",
        end: str = "</s>",
        path: str = "table",
    ):
        check_table(table, start, end, path)
        vocab = [start]
        for word, row in table.items():
            for token in (word, *row):
                if token not in vocab:
                    vocab.append(token)
        if end not in vocab:
            vocab.append(end)
        self.vocab = vocab
        self.index = {word: position for position, word in enumerate(vocab)}
        self.start_id = self.index[start]
        self.end_id = self.index[end]

        log_probs = np.full((len(vocab), len(vocab)), IMPOSSIBLE_LOGIT, dtype="float32")
        for word, row in table.items():
            for next_word, probability in row.items():
                if probability > 0:
                    log_probs[self.index[word], self.index[next_word]] = math.log(probability)
        log_probs[self.end_id, self.end_id] = 0.0
        self.log_prob_table = log_probs
        self.model = self._build_model(log_probs)
        self.step_model = PrefixStepModel(self.model, self.start_id, self.end_id, len(vocab))

    @property
    def vocab_size(self) -> int:
        return len(self.vocab)

    @staticmethod
    def _build_model(log_probs: np.ndarray):
        import keras

        size = log_probs.shape[0]
        model = keras.Sequential(
            [
                keras.Input(shape=(None,), dtype="int32"),
                keras.layers.Embedding(size, size, trainable=False, name="next_word_log_probs"),
            ],
            name="table_language_model",
        )
        model.get_layer("next_word_log_probs").set_weights([log_probs])
        return model

    def encode(self, words: list[str]) -> list[int]:
        return [self.index[word] for word in words]

    def words(self, ids: list[int]) -> list[str]:
        return [self.vocab[int(token)] for token in ids]
