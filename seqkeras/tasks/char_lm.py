"""char_lm: predict the next character of a text.

The text is the user's file (`path`) or, by default, sentences the package
generates from a small seeded grammar (so nothing is downloaded). Training and
test windows come from disjoint parts of the text (the last `test_share` of it
is the test text), so test perplexity measures generalization, not recall.
Validation text, when asked for (tasks.validation), is `validation_path` or the
last `validation_share` of the training text (never the test text), and gives
n_test windows drawn after the others.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from pydantic import Field, field_validator

from seqkeras.errors import SpecError
from seqkeras.tasks.agreement import NOUNS, PREPOSITIONS
from seqkeras.tasks.base import LANGUAGE_MODELING, SequenceData, SizeParams, Vocabulary, named_files
from seqkeras.tasks.files import check_data_file
from seqkeras.tasks.files import read_text as read_file_text
from seqkeras.tasks.input_rules import CHARACTER_TOKENS, InputRule
from seqkeras.tasks.limits import check_vocabulary_entries
from seqkeras.tasks.validation import ValidationParams, validation_path_field, validation_share_field

VERBS = [("sleeps", "sleep"), ("is red", "are red"), ("waits", "wait"), ("shines", "shine")]


class Params(SizeParams, ValidationParams):
    path: str | None = Field(None, description="A UTF-8 text file to model; default: generated sentences.")
    seq_length: int = Field(64, ge=2, le=100_000, description="Characters per training window.")
    test_share: float = Field(0.1, gt=0, lt=1, description="Share of the text held out (its end) for testing.")
    validation_path: str | None = validation_path_field()
    validation_share: float | None = validation_share_field()

    # A missing, unreadable or non-regular file is refused before anything trains.
    check_file = field_validator("path", "validation_path")(check_data_file)

    def tokens_per_example(self) -> int:
        return 2 * self.seq_length  # a window and its shifted targets

    def input_files(self) -> dict[str, Path]:
        """The files this task reads, by key: each is part of the run's identity (execution.identity)."""
        return named_files(self, "path", "validation_path")

    def input_rule(self, data: SequenceData) -> InputRule:
        return CHARACTER_TOKENS  # its tokens are the text's characters, as written


def generated_text(rng: np.random.Generator, sentences: int) -> str:
    lines = []
    for _ in range(sentences):
        plural = int(rng.integers(2))
        subject = NOUNS[rng.integers(len(NOUNS))][plural]
        attractor = NOUNS[rng.integers(len(NOUNS))][1 - plural]
        preposition = PREPOSITIONS[rng.integers(len(PREPOSITIONS))]
        verb = VERBS[rng.integers(len(VERBS))][plural]
        lines.append(f"the {subject} {preposition} the {attractor} {verb}.")
    return " ".join(lines)


def read_text(path: str, key: str = "task.path") -> str:
    text = read_file_text(path, key)
    if not text.strip():
        raise SpecError(f"{Path(path).expanduser()} is empty", path=key)
    return text


def build(params: Params, seed: int) -> SequenceData:
    rng = np.random.default_rng(seed)
    needed = (params.n_train + params.n_test) * params.seq_length
    text = read_text(params.path) if params.path else generated_text(rng, needed // 30 + 10)
    split = int(len(text) * (1 - params.test_share))
    train_text, test_text = text[:split], text[split:]
    if min(len(train_text), len(test_text)) <= params.seq_length:
        raise SpecError(
            f"the text has {len(text)} characters, too few for windows of {params.seq_length}",
            path="task.seq_length",
        )
    validation_text = ""
    if params.validation_path is not None:
        validation_text = read_text(params.validation_path, "task.validation_path")
    elif params.validation_share is not None:  # the end of the training text: the test text is never touched
        cut = int(len(train_text) * (1 - params.validation_share))
        train_text, validation_text = train_text[:cut], train_text[cut:]
    if params.validation_key() and min(len(train_text), len(validation_text)) <= params.seq_length:
        raise SpecError(f"the training and validation texts have {len(train_text)} and {len(validation_text)} "
                        f"characters, too few for windows of {params.seq_length}", path=params.validation_key())
    vocabulary = Vocabulary.build([train_text])
    check_vocabulary_entries(len(vocabulary), "the vocabulary of characters", "task.path", predicted=True,
                             advice="is it a text file? (real text has a few thousand characters at most)")

    def windows(part: str, count: int):
        ids = np.array(vocabulary.encode(part), dtype=np.int32)
        starts = rng.integers(0, len(ids) - params.seq_length, size=count)
        x = np.stack([ids[s : s + params.seq_length] for s in starts])
        y = np.stack([ids[s + 1 : s + params.seq_length + 1] for s in starts])
        return x, y

    x_train, y_train = windows(train_text, params.n_train)
    x_test, y_test = windows(test_text, params.n_test)
    # Drawn last: the training and test windows are those of a run without validation data.
    x_validation, y_validation = windows(validation_text, params.n_test) if validation_text else (None, None)
    return SequenceData(LANGUAGE_MODELING, x_train, y_train, x_test, y_test, vocabulary,
                        x_validation=x_validation, y_validation=y_validation)
