"""Real text → token ids and vocabularies, as Keras's `TextVectorization` makes them, in plain Python.

Texts are standardized (lowercase, optionally strip punctuation), split on
whitespace and mapped to ids, with id 0 for padding and id 1 for unknown tokens —
the layout of `Vocabulary`, so the vocabulary learnt is saved beside each run
(`vocabulary.json`) like every other task's. Every step is TextVectorization's,
character for character: its standardization (tasks.subwords.standardized), its
whitespace split (ASCII whitespace only) and its vocabulary's order (falling
count, then falling UTF-8 bytes); tests/test_text_vectorization.py checks the
ids and vocabularies against the layer itself. The layer runs TensorFlow
whatever Keras's backend: in plain Python a text task on torch or JAX starts no
TensorFlow (seconds a process), and runs where TensorFlow is not installed.

A tagging corpus is already tokenized and its tags are aligned
with its tokens, so it is not split again: each token is standardized and
looked up on its own.

The vocabulary comes from the training text only. Tokens seen fewer than
`min_count` times there share the unknown id: test text always has words the
training text lacks, and the rare training words are what teaches the model an
embedding for them.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Literal

import numpy as np
from pydantic import Field, model_validator

from seqkeras.errors import SpecError
from seqkeras.registry import Params
from seqkeras.tasks import duplicates, subwords
from seqkeras.tasks.base import CLASSIFICATION, PAD, TAGGING, UNK, SequenceData, Vocabulary, pad
from seqkeras.tasks.duplicates import Split
from seqkeras.tasks.input_rules import InputRule
from seqkeras.tasks.limits import check_vocabulary_entries

Standardize = Literal["lower_and_strip_punctuation", "lower", "strip_punctuation", "none"]

TaggedSentence = tuple[list[str], list[str]]  # tokens and their tags
LabelledText = tuple[str, str]  # a text and its class


class VocabularyParams(Params):
    min_count: int = Field(
        2, ge=1, le=1_000_000,
        description="Training-set occurrences a token needs for its own id; rarer tokens share <unk>.",
    )
    max_tokens: int | None = Field(
        None, ge=3, le=10_000_000,
        description="Cap on the vocabulary size, most frequent tokens first (<pad> and <unk> included).",
    )


class TextSplitParams(VocabularyParams):
    test_share: float = Field(0.2, gt=0, lt=1, description="Share of the examples held out for testing (seeded).")


class TaggingTextParams(TextSplitParams):
    lowercase: bool = Field(True, description="Lowercase tokens before looking them up.")

    def input_rule(self, data: SequenceData) -> InputRule:
        # Already tokens, separated by spaces; each lowercased as TextVectorization's `lower` does.
        return InputRule(split="whitespace", lowercase="ascii" if self.lowercase else "none")

    @model_validator(mode="before")
    @classmethod
    def _words_only(cls, data):
        # Said before pydantic's "unknown key": a tagging task asked for subwords (as its classification and
        # seq2seq neighbours allow) is told why not. Tags are per word; pieces would need the tag on each word's
        # first piece and the other pieces kept out of the loss and of every metric, which the taggers and
        # the tagging evaluation (one tag per token) do not do.
        for key in ("level", "vocabulary_size"):
            if isinstance(data, dict) and key in data:
                raise SpecError(f"a tagging task tokenizes by word only (its tags are per word; tagging subwords "
                                f"would need each tag on its word's first piece), so it has no {key} "
                                f"(got {data[key]!r})", path=f"task.{key}")
        return data


class ClassificationTextParams(subwords.TokenizerParams, TextSplitParams):
    standardize: Standardize = Field(
        "lower_and_strip_punctuation", description="TextVectorization's standardization before splitting on whitespace."
    )
    max_length: int | None = Field(
        None, ge=1, le=1_000_000, description="Keep at most this many tokens per text (default: all)."
    )

    def input_rule(self, data: SequenceData) -> InputRule:
        # TextVectorization's standardization (subwords: the same, in plain Python), then the level's split (a
        # subword level is a split of its own, with the run folder's file of its learnt model, if it keeps one).
        split = {"word": "whitespace", "char": "characters"}.get(self.level, self.level)
        return InputRule(split=split, lowercase="ascii" if "lower" in self.standardize else "none",
                         strip_punctuation="strip_punctuation" in self.standardize, max_length=self.max_length,
                         tokenizer=subwords.model_file(self.level))


def split_examples(examples: Sequence, test_share: float, seed: int, *, what: str) -> Split:
    """Exact duplicates collapsed (tasks.duplicates: no input on both sides), then a seeded shuffle, and the last
    `test_share` of it is the test set. Unpacks as `train, test`; its `notes` count what the collapse removed."""
    examples, notes = duplicates.collapse(examples)
    if len(examples) < 2:
        raise SpecError(f"{what} has {len(examples)} example(s) (once duplicates are collapsed); "
                        "a train/test split needs at least 2")
    order = np.random.default_rng(seed).permutation(len(examples))
    n_test = min(max(1, round(len(examples) * test_share)), len(examples) - 1)
    shuffled = [examples[i] for i in order]
    return Split(shuffled[:-n_test], shuffled[-n_test:], notes)


# TextVectorization's vocabulary begins with its mask token (padding, id 0) and its OOV token (id 1): neither is
# counted as a word of the text, and a text holding either reads that id.
MASK_TOKEN, OOV_TOKEN = "", "[UNK]"


def words(text: str, standardize: Standardize) -> list[str]:
    """A text's words as TextVectorization(standardize, split="whitespace") reads them (subwords.standardized:
    A–Z lowered, its ASCII punctuation stripped)."""
    return [word for word in subwords.ASCII_WHITESPACE.split(subwords.standardized(text, standardize)) if word]


def learned_vocabulary(token_lists: Sequence[Sequence[str]], max_tokens: int | None) -> tuple[list[str], Counter]:
    """What TextVectorization.adapt learns from these tokens: its vocabulary ("", "[UNK]", then every token by
    falling count, equal counts by falling UTF-8 bytes, as Keras's IndexLookup sorts them, cut to `max_tokens` in
    all), and each token's count."""
    counts = Counter(token for tokens in token_lists for token in tokens)
    counts.pop(MASK_TOKEN, None)
    counts.pop(OOV_TOKEN, None)
    ordered = sorted(counts, key=lambda token: (counts[token], token.encode("utf-8")), reverse=True)
    if max_tokens is not None:
        ordered = ordered[: max_tokens - 2]
    return [MASK_TOKEN, OOV_TOKEN, *ordered], counts


def _kept_ids(vocabulary: list[str], counts: Counter, min_count: int) -> int:
    """How many ids to keep, from each token's training count: the vocabulary is ordered by falling training
    frequency, so the tokens seen at least `min_count` times are a prefix of it."""
    frequent = [i for i, token in enumerate(vocabulary[2:]) if counts[token] >= min_count]
    return 2 + (frequent[-1] + 1 if frequent else 0)


def _looked_up(token_lists: Sequence[Sequence[str]], vocabulary: list[str], keep: int) -> list[list[int]]:
    """Each token's id: a kept word its own, the mask token 0, anything else <unk> (1)."""
    index = {token: i for i, token in enumerate(vocabulary[:keep])}
    return [[index.get(token, 1) for token in tokens] for tokens in token_lists]


def vectorize_tokens(
    train: Sequence[Sequence[str]], test: Sequence[Sequence[str]], *, lowercase: bool, params: VocabularyParams
) -> tuple[list[list[int]], list[list[int]], Vocabulary]:
    """Already-tokenized sentences → one id per token (no splitting, so tags stay aligned): each token as
    TextVectorization(standardize="lower" or None, split=None) looks it up."""
    standardize = "lower" if lowercase else "none"
    train, test = ([[subwords.standardized(token, standardize) for token in sentence] for sentence in part]
                   for part in (train, test))
    vocabulary, counts = learned_vocabulary(train, params.max_tokens)
    keep = _kept_ids(vocabulary, counts, params.min_count)
    check_vocabulary_entries(keep, "the vocabulary", "task.max_tokens")
    # An empty token reads as the mask (padding) in TextVectorization: here it is unknown, as a rare one is.
    train_ids, test_ids = ([[token_id or 1 for token_id in ids] for ids in _looked_up(part, vocabulary, keep)]
                           for part in (train, test))
    return train_ids, test_ids, Vocabulary([PAD, UNK, *vocabulary[2:keep]])


def _padded(ids: list[list[int]], max_length: int | None) -> np.ndarray:
    """[N, longest] ids, cut to `max_length` columns."""
    longest = max((len(row) for row in ids), default=0)
    return pad(ids, min(longest, max_length or longest))


def vectorize_texts(
    train: Sequence[str], test: Sequence[str], *, standardize: Standardize, params: VocabularyParams,
    max_length: int | None = None,
) -> tuple[np.ndarray, np.ndarray, Vocabulary]:
    """Raw texts → standardized, split on whitespace, padded ids [N, longest], at most `max_length` columns.

    The vocabulary and its `min_count` read the whole training texts, past `max_length` too."""
    train, test = [words(text, standardize) for text in train], [words(text, standardize) for text in test]
    vocabulary, counts = learned_vocabulary(train, params.max_tokens)
    keep = _kept_ids(vocabulary, counts, params.min_count)
    check_vocabulary_entries(keep, "the vocabulary", "task.max_tokens")
    x_train, x_test = (_padded(_looked_up(part, vocabulary, keep), max_length) for part in (train, test))
    return x_train, x_test, Vocabulary([PAD, UNK, *vocabulary[2:keep]])


def text_tagging_data(
    train: list[TaggedSentence], test: list[TaggedSentence], params: TaggingTextParams,
    validation: list[TaggedSentence] = (),
) -> SequenceData:
    """Tagged sentences → SequenceData; tag id 0 is padding, the tag set comes from all sentences.

    `validation` (a file task's own, tasks.validation) is encoded with the training vocabulary, as the test is.
    """
    validation = list(validation)
    x_train, x_rest, vocabulary = vectorize_tokens(
        [tokens for tokens, _ in train], [tokens for tokens, _ in test + validation],
        lowercase=params.lowercase, params=params,
    )
    x_test, x_validation = x_rest[: len(test)], x_rest[len(test):]
    # The tag set is a closed list: a tag only the test split happens to hold is still a tag.
    labels = Vocabulary.build((tags for _, tags in train + test + validation), reserved=(PAD,))
    length = max(len(tokens) for tokens, _ in train + test + validation)

    def tag_ids(part):
        return pad([[labels.index[tag] for tag in tags] for _, tags in part], length)

    return SequenceData(
        problem=TAGGING,
        x_train=pad(x_train, length),
        y_train=tag_ids(train),
        x_test=pad(x_test, length),
        y_test=tag_ids(test),
        vocabulary=vocabulary,
        labels=labels,
        x_validation=pad(x_validation, length) if validation else None,
        y_validation=tag_ids(validation) if validation else None,
    )


def text_classification_data(
    train: list[LabelledText], test: list[LabelledText], label_names: list[str], params: ClassificationTextParams,
    validation: list[LabelledText] = (),
) -> SequenceData:
    """(text, label) pairs → SequenceData with labels numbered in the order of `label_names`.

    `validation` (a file task's own, tasks.validation) is vectorized with the training vocabulary, as the test is.
    """
    validation = list(validation)
    texts = [text for text, _ in train], [text for text, _ in test + validation]
    # level word is TextVectorization's; char and the subword levels are tasks.subwords'.
    if params.level == "word":
        x_train, x_rest, vocabulary = vectorize_texts(*texts, standardize=params.standardize, params=params,
                                                      max_length=params.max_length)
        learnt = None
    else:
        x_train, x_rest, vocabulary, learnt = subwords.vectorize_texts(
            *texts, standardize=params.standardize, params=params, max_length=params.max_length,
            test_count=len(test))
    # Without validation x_rest is the test alone, padded as before; with it the two share one padded width.
    x_test, x_validation = x_rest[: len(test)], x_rest[len(test):]
    labels = Vocabulary(list(label_names))

    def label_ids(part):
        return np.array([labels.index[label] for _, label in part], dtype=np.int32)

    return SequenceData(
        problem=CLASSIFICATION,
        x_train=x_train,
        y_train=label_ids(train),
        x_test=x_test,
        y_test=label_ids(test),
        vocabulary=vocabulary,
        labels=labels,
        x_validation=x_validation if validation else None,
        y_validation=label_ids(validation) if validation else None,
        subwords=learnt,
    )
