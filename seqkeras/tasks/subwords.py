"""The tokenizer choice `level`: words, characters or subword pieces (text classification, sentence_pairs,
lm_corpus).

`level: word` (the default) is tasks.text's: Keras TextVectorization's words, in plain Python.
`level: char` makes each character of the standardized text a token. The subword
levels (tasks.subword_levels lists them: wordpiece, bpe, sentencepiece_unigram,
sentencepiece_bpe, each defined in its own module) cut words into pieces from a
vocabulary of `vocabulary_size` pieces learnt from the training texts alone; test
and validation texts are split with it, and a stretch that none of its pieces
spell is `<unk>`, id 1, as an unknown word is at `level: word`. They learn from
the text's words (its whitespace-separated tokens: at text classification those of
`level: word`, at sentence_pairs and lm_corpus their `level: word` tokens), and the
run folder keeps the model they learnt beside the vocabulary where the vocabulary
is not all of it. The same texts give the same vocabulary on every backend.

Each level is one `SubwordLevel` (tasks.subword_models): how it learns, how its
model is read back, its file, how its pieces spell words (`join_pieces(tokens,
level)`, for BLEU and chrF, samples and `seqkeras predict`: text is scored and
shown as words, never as pieces) and how an export holds it. Every task and a kept
model (kept.preprocessing, split = the level) go through `learn`, `pieces` and
`join_pieces`, so `seqkeras predict` splits new text into the pieces the model was
trained on.

Standardization here is plain Python, character for character TextVectorization's
(`lower`: A–Z only; `strip_punctuation`: its ASCII marks).

sentence_pairs and lm_corpus cut words into pieces the same way (their words are
their `level: word` tokens, joined by spaces before a level splits them), with
`vocabulary_size_field` and `check_vocabulary_size` for their keys. `Subwords` is
what a task hands over with its data (`SequenceData.subwords`): the model a kept
model splits its input with, and what each learnt model did to the test split
(pieces per word, the `<unk>` rate), which the data card shows.

Tagging tasks have no `level`: their tags are per word, and a word cut into
pieces would need its tag on one piece and the others left out of the loss and
of every metric; the tagging evaluator scores one tag per token.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Literal

import numpy as np
from pydantic import Field, model_validator

from seqkeras.errors import SpecError
from seqkeras.registry import Params
from seqkeras.tasks.base import PAD, UNK, Vocabulary, pad
from seqkeras.tasks.limits import check_padded_size, check_vocabulary_entries
from seqkeras.tasks.subword_levels import BY_NAME, LEVELS, NAMES
from seqkeras.tasks.subword_models import MARKERS, SubwordModel, join_word_starts  # noqa: F401 (tasks read them here)

SUBWORD_LEVELS = NAMES  # each subword level is a split of a kept model's input rule of its own
Level = Literal[("word", "char", *SUBWORD_LEVELS)]
LEVELS_SAID = f"level {', '.join(SUBWORD_LEVELS[:-1])} or {SUBWORD_LEVELS[-1]}"

DEFAULT_VOCABULARY_SIZE = 1000
# Fewer pieces than this cannot hold <pad>, <unk> and a Latin alphabet alone and as ##suffixes: below it
# every text would be mostly <unk>, which is a mistake to point at, not a model to train.
MIN_VOCABULARY_SIZE = 32
# Texts go to a tokenizer's C++ or Rust this many at a time: a signal is answered between two calls.
PIECES_CHUNK = 1024

ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")
# TensorFlow's whitespace split, which TextVectorization's `split="whitespace"` is: ASCII whitespace only (not
# U+00A0 or U+3000, which Python's str.split would also cut at), a run of it one separator.
ASCII_WHITESPACE = re.compile(r"[ \t\n\v\f\r]+")
# Keras's TextVectorization's `strip_punctuation`, character for character.
PUNCTUATION = re.compile(r'[!"#$%&()\*\+,-\./:;<=>?@\[\\\]^_`{|}~\']')

LEVEL_HELP = ("subword pieces learnt from the training texts alone (vocabulary_size pieces): "
              + ", ".join(f"{level.name} ({level.summary})" for level in LEVELS[:-1])
              + f" or {LEVELS[-1].name} ({LEVELS[-1].summary})")


def learn(level: str, texts: Sequence[str], size: int, reserved: Sequence[str] = (PAD, UNK)) -> SubwordModel:
    """The `level`'s model of at most `size` pieces learnt from these texts only (`reserved` first: <pad>, <unk>,
    and any marker the task adds itself, such as a target's <s> and </s>)."""
    return BY_NAME[level].learn(texts, size, tuple(reserved))


def read_model(level: str, data: bytes, vocabulary: Vocabulary, where: str) -> SubwordModel:
    """The `level`'s model of a run folder's file (`where` names it in errors); a SpecError in one line for a file
    that is not one, or not of this vocabulary."""
    return BY_NAME[level].read(data, vocabulary, where)


def model_file(level: str) -> str | None:
    """The run folder's file of a `level` model (preprocessing.json's input.tokenizer); None: vocabulary.json is
    all of it (wordpiece), or the level learns nothing."""
    return BY_NAME[level].file if level in BY_NAME else None


def vocabulary_model(level: str, vocabulary: Vocabulary) -> SubwordModel:
    """The `level`'s model where its vocabulary is all of it (wordpiece: the run folder keeps no other file)."""
    return BY_NAME[level].of_vocabulary(vocabulary)


def exported(level: str, model: SubwordModel, folder: Path) -> dict | None:
    """Write the level's model in its library's own format into an export `folder`; export.json's `tokenizer`
    entry (None: a level without a library's format)."""
    export = BY_NAME[level].export
    return export(model, folder) if export is not None else None


def join_pieces(tokens: Sequence[str], level: str) -> list[str]:
    """Pieces of `level` → the words they spell: what BLEU, chrF, samples and `seqkeras predict` read."""
    return BY_NAME[level].join(tokens)


class TokenizerParams(Params):
    """The `level` and `vocabulary_size` keys of a text classification task."""

    level: Level = Field(
        "word",
        description=f"Tokens: words (TextVectorization's whitespace split), characters, or {LEVEL_HELP}.",
    )
    vocabulary_size: int | None = Field(
        None, ge=MIN_VOCABULARY_SIZE, le=1_000_000,
        description=f"{LEVELS_SAID}: pieces in the learnt vocabulary, <pad> and <unk> included "
                    f"(default {DEFAULT_VOCABULARY_SIZE}).",
    )

    # Added after results existed: a spec without them keeps its runs' ids (registry.Params.hashed).
    hashed_only_when_set: ClassVar[tuple[str, ...]] = ("level", "vocabulary_size")

    @model_validator(mode="after")
    def _size_only_for_subwords(self):
        # SpecError, which pydantic passes through, so the message names the key itself, not just `task`.
        # min_count and max_tokens shape a vocabulary of counted tokens; a subword vocabulary is learnt to a size.
        check_vocabulary_size(self, *(key for key in ("max_tokens",) if key in type(self).model_fields))
        return self

    @property
    def subword_size(self) -> int:
        return self.vocabulary_size or DEFAULT_VOCABULARY_SIZE


def vocabulary_size_field(description: str) -> Any:
    """The `vocabulary_size` key of a task whose `level` may be a subword level (a default of its own, none set)."""
    return Field(None, ge=MIN_VOCABULARY_SIZE, le=1_000_000,
                 description=f"{description} (default {DEFAULT_VOCABULARY_SIZE}).")


def check_vocabulary_size(params: Any, *word_level_keys: str) -> None:
    """Refuse `vocabulary_size` without a subword level, and `word_level_keys` (the counted vocabulary's own
    keys, away from their defaults) with one: a subword vocabulary is learnt to a size, not counted."""
    if params.vocabulary_size is not None and params.level not in SUBWORD_LEVELS:
        raise SpecError(f"vocabulary_size applies only to {LEVELS_SAID}, not {params.level!r}",
                        path="task.vocabulary_size")
    if params.level in SUBWORD_LEVELS:
        for key in word_level_keys:
            # Compared with the default, not looked up among the keys set: a run's resolved spec (spec.yaml,
            # read back to evaluate a run again) names every key, at its default too.
            if getattr(params, key) != type(params).model_fields[key].default:
                raise SpecError(f"{key} applies to level word and char; level {params.level}'s size is "
                                "vocabulary_size", path=f"task.{key}")


def standardized(text: str, standardize: str) -> str:
    """TextVectorization's standardization of one text (`standardize` as ClassificationTextParams names it)."""
    if "lower" in standardize:
        text = text.translate(ASCII_LOWER)
    if "strip_punctuation" in standardize:
        text = PUNCTUATION.sub("", text)
    return text


def pieces(model: SubwordModel, texts: Sequence[str]) -> list[list[str]]:
    """Standardized texts → their pieces, one list per text, PIECES_CHUNK texts per call into the model."""
    texts = list(texts)
    chunks = (texts[start:start + PIECES_CHUNK] for start in range(0, len(texts), PIECES_CHUNK))
    return [row for chunk in chunks for row in model.pieces(chunk)]


def word_pieces(model: SubwordModel, sequences: Sequence[Sequence[str]]) -> list[list[str]]:
    """Already-split words (a task's `level: word` tokens), one list per text → their pieces, one list per text.

    The words are joined by spaces and split again by the level's own pretokenizer, which keeps them apart
    (WordPiece's splits on whitespace and on each punctuation mark, as the tasks' word patterns do; the others on
    whitespace)."""
    return pieces(model, [" ".join(words) for words in sequences])


@dataclass
class SubwordCounts:
    """What one learnt model did to a part's texts (the test split's, for the data card): their words, the pieces
    those became, and how many pieces are <unk>."""

    side: str  # "input" (a classifier's or language model's text), "source" or "target"
    level: str
    vocabulary: int
    words: int = 0
    pieces: int = 0
    unknown: int = 0

    def add(self, words: int, split: Sequence[str]) -> None:
        """One text of `words` words, `split` into these pieces."""
        self.words += words
        self.pieces += len(split)
        self.unknown += sum(piece == UNK for piece in split)

    def card(self) -> dict[str, Any]:
        return {"side": self.side, "level": self.level, "vocabulary": self.vocabulary, "test_words": self.words,
                "test_pieces": self.pieces,
                "pieces_per_word": round(self.pieces / self.words, 4) if self.words else None,
                "unknown_rate": round(self.unknown / self.pieces, 4) if self.pieces else None}


@dataclass
class Subwords:
    """What a task at a subword level hands over with its data (`SequenceData.subwords`): the model its inputs
    were split with (a seq2seq source's), kept in the run folder for `seqkeras predict`; whether a seq2seq task's
    two sides share it (one vocabulary, vocabulary.json); and the test split's counts, per learnt model and side."""

    input: SubwordModel
    counts: list[SubwordCounts] = field(default_factory=list)
    shared: bool = False


def counted(side: str, model: SubwordModel, words: Sequence[int], split: Sequence[Sequence[str]]) -> SubwordCounts:
    """The counts of `model` over texts of `words` words each, split into `split`."""
    counts = SubwordCounts(side, model.level, len(model.vocabulary))
    for count, row in zip(words, split):
        counts.add(count, row)
    return counts


def counted_vocabulary(sequences: Sequence[Sequence[str]], min_count: int, max_tokens: int | None) -> Vocabulary:
    """<pad>, <unk>, then the tokens seen at least `min_count` times, most frequent first (ties in code point
    order, so the vocabulary never depends on dict order), at most `max_tokens` in all."""
    counts = Counter(token for sequence in sequences for token in sequence)
    kept = sorted((t for t, n in counts.items() if n >= min_count and t not in (PAD, UNK)),
                  key=lambda t: (-counts[t], t))
    if max_tokens is not None:
        kept = kept[: max_tokens - 2]
    return Vocabulary([PAD, UNK] + kept)


def vectorize_texts(
    train: Sequence[str], rest: Sequence[str], *, standardize: str, params: Any, max_length: int | None = None,
    test_count: int | None = None,
) -> tuple[np.ndarray, np.ndarray, Vocabulary, Subwords | None]:
    """Raw texts → padded ids [N, longest] at `params.level` char or a subword level, at most `max_length` columns
    (cut as they are padded, never padded to the longest first); the vocabulary from `train` only, whole texts.
    At a subword level also its `Subwords`, counted over the first `test_count` texts of `rest` (the test's).

    `params` is a ClassificationTextParams (its level, vocabulary_size, min_count, max_tokens).
    """
    train = [standardized(text, standardize) for text in train]
    rest = [standardized(text, standardize) for text in rest]
    subwords = None
    if params.level == "char":
        train_tokens, rest_tokens = [list(text) for text in train], [list(text) for text in rest]
        vocabulary = counted_vocabulary(train_tokens, params.min_count, params.max_tokens)
        check_vocabulary_entries(len(vocabulary), "the vocabulary", "task.max_tokens")
    else:
        model = learn(params.level, train, params.subword_size)
        vocabulary = model.vocabulary
        train_tokens, rest_tokens = pieces(model, train), pieces(model, rest)
        test = slice(0, len(rest) if test_count is None else test_count)
        # A text's words as level word reads them (whitespace-separated), the pieces before max_length cuts them.
        subwords = Subwords(model, [counted("input", model, [len(text.split()) for text in rest[test]],
                                            rest_tokens[test])])

    def ids(tokens: list[list[str]]) -> np.ndarray:
        # Padded to the part's longest text, as TextVectorization pads at level word; at least one column.
        longest = max([1, *(len(t) for t in tokens)])
        width = min(longest, max_length or longest)
        check_padded_size("the task's texts", len(tokens), width, "task.max_length",
                          "set max_length to keep fewer tokens per text")
        return pad([vocabulary.encode(sequence) for sequence in tokens], width)

    return ids(train_tokens), ids(rest_tokens), vocabulary, subwords
