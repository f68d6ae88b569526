"""The data every task hands to the models, the vocabulary that indexes it.

A task is one module with its Params (what a spec may set; the files it reads
are its `input_files()`, registry.Params; how a text becomes its tokens, its
`input_rule(data)`, tasks.input_rules) and a `build(params, seed)` giving
`SequenceData` (or `Seq2SeqData`) of one of the problem kinds (`seqkeras.problems`, named
by `data.problem`); its entry in the catalog (`registry.Task`) names its problem.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import Field, model_validator

from seqkeras import registry
from seqkeras.problems import (  # noqa: F401  (the names tasks declare their data's problem by)
    CLASSIFICATION, LANGUAGE_MODELING, PROBLEMS, REGRESSION, SEQ2SEQ, TAGGING, ProblemName, problem_named)
from seqkeras.registry import Params

PAD, UNK = "<pad>", "<unk>"



# Each bound alone can be in range while their product is not: 5e6 examples × 1e5 steps
# is 2 TB of token ids. The data a generator builds (ids, padded, for train and test)
# stays under this many tokens, a few GB with the model's copies.
MAX_DATA_TOKENS = 500_000_000


class SizeParams(Params):
    n_train: int = Field(2000, ge=1, le=5_000_000, description="Training examples.")
    n_test: int = Field(500, ge=1, le=5_000_000, description="Test examples (drawn separately).")

    def tokens_per_example(self) -> int:
        """The longest example the generator can draw, in tokens (inputs and targets)."""
        return 1

    @model_validator(mode="after")
    def _data_fits(self) -> "SizeParams":
        tokens = (self.n_train + self.n_test) * self.tokens_per_example()
        if tokens > MAX_DATA_TOKENS:
            raise ValueError(
                f"(n_train + n_test) × {self.tokens_per_example():,} tokens per example = {tokens:.3g} tokens "
                f"(~{tokens * 4 / 1e9:,.0f} GB as int32), more than the {MAX_DATA_TOKENS:.0e} seqkeras allows; "
                "reduce n_train, n_test or the sequence length"
            )
        return self


def named_files(params: Params, *keys: str) -> dict[str, Path]:
    """The files that these fields of `params` name (those set), by key, `~` expanded as the readers open them.

    A task's files are what its Params' `input_files()` lists (registry.Params: by default its `path` and
    `*_path` fields, through this): the run's identity (execution.identity) hashes each one, so an edited
    file means the run is run again.
    """
    return registry.named_files(params, *keys)


@dataclass
class Vocabulary:
    """Token ↔ id. Id 0 is padding (masked everywhere), id 1 stands for unknown tokens."""

    tokens: list[str]

    @classmethod
    def build(cls, sequences, reserved: tuple[str, ...] = (PAD, UNK)) -> "Vocabulary":
        seen: dict[str, None] = {}
        for sequence in sequences:
            for token in sequence:
                seen.setdefault(token, None)
        return cls(list(reserved) + sorted(t for t in seen if t not in reserved))

    def __post_init__(self):
        self.index = {token: i for i, token in enumerate(self.tokens)}

    def __len__(self) -> int:
        return len(self.tokens)

    def encode(self, tokens) -> list[int]:
        unknown = self.index.get(UNK, 0)
        return [self.index.get(token, unknown) for token in tokens]

    def decode(self, ids) -> list[str]:
        return [self.tokens[i] for i in ids if i != 0]

    def to_json(self) -> str:
        """The tokens by id, as a run folder's vocabulary.json holds them."""
        return json.dumps(self.tokens, ensure_ascii=False, indent=0)


@dataclass
class SequenceData:
    """Padded integer arrays (0 = padding) and the vocabularies that name them.

    classification: x [N, L], y [N]
    tagging:        x [N, L], y [N, L] (0 = padding label)
    language_modeling: x [N, L], y [N, L] (next token; 0 = padding)
    seq2seq:        x {"source": [N, S], "decoder_input": [N, T]}, y [N, T] (`Seq2SeqData`)
    regression:     x [N, L, F] float features, y [N, 1] float (no padding, but adding's hochreiter_1997
                    left-pads its shorter sequences with all-zero steps)
    """

    problem: str
    x_train: np.ndarray
    y_train: np.ndarray
    x_test: np.ndarray
    y_test: np.ndarray
    vocabulary: Vocabulary
    labels: Vocabulary | None = None  # classes or tags; None for language modelling
    # A file task's own validation data (tasks.validation), shaped as the training arrays; the trainer's
    # validation_data when present, else train.validation_split's last share of the training set.
    x_validation: np.ndarray | dict[str, np.ndarray] | None = None
    y_validation: np.ndarray | None = None
    # What a run's record says about the data beyond its arrays (metrics.json's "data"): counts of the
    # examples in each part, of those left out and why.
    notes: dict[str, int] = field(default_factory=dict)
    # A task at a subword level (tasks.subwords.Subwords): the model its inputs were split with, which the run
    # folder keeps, and its counts on the test split, which the data card shows; None at any other level.
    subwords: Any = None

    @property
    def has_validation(self) -> bool:
        return self.y_validation is not None

    @property
    def num_outputs(self) -> int:
        if not problem_named(self.problem).reads_tokens:  # one number
            return 1
        return len(self.labels) if self.labels is not None else len(self.vocabulary)


def pad(sequences: list[list[int]], length: int | None = None) -> np.ndarray:
    """Right-pad with 0 to the longest sequence (or `length`)."""
    length = length or max((len(s) for s in sequences), default=0)
    array = np.zeros((len(sequences), length), dtype=np.int32)
    for row, sequence in enumerate(sequences):
        array[row, : len(sequence)] = sequence[:length]
    return array


def classification_data(train, test, label_names: list[str]) -> SequenceData:
    """From (tokens, label) pairs to padded arrays; the vocabulary comes from training only."""
    vocabulary = Vocabulary.build(tokens for tokens, _ in train)
    labels = Vocabulary(label_names)
    return SequenceData(
        problem=CLASSIFICATION,
        x_train=pad([vocabulary.encode(t) for t, _ in train]),
        y_train=np.array([labels.index[label] for _, label in train], dtype=np.int32),
        x_test=pad([vocabulary.encode(t) for t, _ in test]),
        y_test=np.array([labels.index[label] for _, label in test], dtype=np.int32),
        vocabulary=vocabulary,
        labels=labels,
    )


def tagging_data(train, test) -> SequenceData:
    """From (tokens, tags) pairs; tag id 0 is reserved for padding."""
    vocabulary = Vocabulary.build(tokens for tokens, _ in train)
    labels = Vocabulary.build((tags for _, tags in train), reserved=(PAD,))
    length = max(len(t) for t, _ in train + test)

    def encode_tags(tags):
        return [labels.index.get(tag, labels.index.get("O", 0)) for tag in tags]

    return SequenceData(
        problem=TAGGING,
        x_train=pad([vocabulary.encode(t) for t, _ in train], length),
        y_train=pad([encode_tags(tags) for _, tags in train], length),
        x_test=pad([vocabulary.encode(t) for t, _ in test], length),
        y_test=pad([encode_tags(tags) for _, tags in test], length),
        vocabulary=vocabulary,
        labels=labels,
    )
