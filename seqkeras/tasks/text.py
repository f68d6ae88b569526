"""Real text → token ids and vocabularies, with Keras's own preprocessing.

`keras.layers.TextVectorization` standardizes (lowercase, optionally strip
punctuation), splits on whitespace and maps tokens to ids, with id 0 for
padding and id 1 for unknown tokens — the layout of `Vocabulary`, so the
vocabulary it learns is saved beside each run (`vocabulary.json`) like every
other task's. A tagging corpus is already tokenized and its tags are aligned
with its tokens, so it is not split again: each token is standardized and
looked up on its own.

The vocabulary comes from the training text only. Tokens seen fewer than
`min_count` times there share the unknown id: test text always has words the
training text lacks, and the rare training words are what teaches the model an
embedding for them.
"""

from __future__ import annotations

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


def _vectorizer(standardize: str | None, split: str | None, params: VocabularyParams):
    import keras

    return keras.layers.TextVectorization(
        max_tokens=params.max_tokens, standardize=standardize, split=split, output_mode="int"
    )


# Texts (or tokens) go to TextVectorization this many at a time, never all in one call: each call is one step of
# TensorFlow's C++ that holds off Ctrl-C and SIGTERM until it returns (a million texts take seconds), and each
# returns its texts padded to their own longest, which is cut to `max_length` before the next call (not every
# text padded to the file's longest first). The ids, the vocabulary and its counts are those of one call.
VECTORIZE_CHUNK = 1024


def _chunks(items: Sequence) -> list:
    items = list(items)
    return [items[start:start + VECTORIZE_CHUNK] for start in range(0, len(items), VECTORIZE_CHUNK)]


def _adapt(layer, items: Sequence[str]) -> None:
    """`layer.adapt(items)`, a chunk at a time (adapt's counts add up over batches: the same vocabulary)."""
    layer.adapt(np.array(chunk, dtype=object)[:, None] for chunk in _chunks(items))


def _kept_ids(counts: np.ndarray, min_count: int) -> int:
    """How many ids to keep, from each id's training count: TextVectorization orders its vocabulary by falling
    training frequency, so the tokens seen at least `min_count` times are a prefix of it."""
    frequent = np.flatnonzero(counts[2:] >= min_count)
    return 2 + (int(frequent[-1]) + 1 if frequent.size else 0)


def _count(counts: np.ndarray | None, ids: np.ndarray) -> None:
    """Add each token id's occurrences in `ids` to `counts` (padding and <unk> left out)."""
    if counts is not None:
        counts += np.bincount(ids[ids > 1].ravel(), minlength=len(counts))


def _vocabulary(layer, keep: int) -> Vocabulary:
    tokens = [str(token) for token in layer.get_vocabulary()[2:keep]]
    return Vocabulary([PAD, UNK] + tokens)


def _to_numpy(tensor) -> np.ndarray:
    import keras

    return np.asarray(keras.ops.convert_to_numpy(tensor), dtype=np.int32)


def vectorize_tokens(
    train: Sequence[Sequence[str]], test: Sequence[Sequence[str]], *, lowercase: bool, params: VocabularyParams
) -> tuple[list[list[int]], list[list[int]], Vocabulary]:
    """Already-tokenized sentences → one id per token (no splitting, so tags stay aligned)."""
    layer = _vectorizer("lower" if lowercase else None, None, params)
    _adapt(layer, [token for sentence in train for token in sentence])

    def flat_ids(sentences, counts: np.ndarray | None = None) -> np.ndarray:
        parts = [_to_numpy(layer(chunk)) for chunk in _chunks(token for sentence in sentences for token in sentence)]
        for part in parts:
            _count(counts, part)
        return np.concatenate(parts) if parts else np.zeros(0, np.int32)

    def regroup(ids: np.ndarray, sentences) -> list[list[int]]:
        ids[(ids == 0) | (ids >= keep)] = 1  # rare tokens; an empty token would read as padding
        ends = np.cumsum([len(sentence) for sentence in sentences])
        return [part.tolist() for part in np.split(ids, ends[:-1])] if len(sentences) else []

    counts = np.zeros(layer.vocabulary_size(), np.int64)
    train_ids = flat_ids(train, counts)
    keep = _kept_ids(counts, params.min_count)
    check_vocabulary_entries(keep, "the vocabulary", "task.max_tokens")
    return regroup(train_ids, train), regroup(flat_ids(test), test), _vocabulary(layer, keep)


def _padded_ids(layer, texts: Sequence[str], max_length: int | None, counts: np.ndarray | None = None) -> np.ndarray:
    """The texts' ids [N, longest], cut to `max_length` columns, a chunk at a time; `counts` gets the ids' counts
    over the whole texts (before the cut), as the vocabulary's `min_count` reads them."""
    parts = []
    for chunk in _chunks(texts):
        ids = _to_numpy(layer(chunk))
        _count(counts, ids)
        parts.append(ids[:, :max_length])
    array = np.zeros((len(texts), max((part.shape[1] for part in parts), default=0)), np.int32)
    row = 0
    for part in parts:
        array[row:row + len(part), :part.shape[1]] = part
        row += len(part)
    return array


def vectorize_texts(
    train: Sequence[str], test: Sequence[str], *, standardize: Standardize, params: VocabularyParams,
    max_length: int | None = None,
) -> tuple[np.ndarray, np.ndarray, Vocabulary]:
    """Raw texts → standardized, split on whitespace, padded ids [N, longest], at most `max_length` columns.

    The vocabulary and its `min_count` read the whole training texts, past `max_length` too."""
    layer = _vectorizer(None if standardize == "none" else standardize, "whitespace", params)
    _adapt(layer, train)
    counts = np.zeros(layer.vocabulary_size(), np.int64)
    x_train = _padded_ids(layer, train, max_length, counts)
    keep = _kept_ids(counts, params.min_count)
    check_vocabulary_entries(keep, "the vocabulary", "task.max_tokens")
    x_test = _padded_ids(layer, test, max_length)
    for x in (x_train, x_test):
        x[x >= keep] = 1
    return x_train, x_test, _vocabulary(layer, keep)


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
