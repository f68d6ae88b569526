"""tasks.text's words and ids, in plain Python, are Keras TextVectorization's, token for token.

The reference below is the code that vectorized every text task's data until TextVectorization was replaced
(the layer itself, a chunk of texts at a time): the committed results were computed with it, so the plain
Python path must give the same ids and the same vocabulary on the real corpora the suite ships and on texts
chosen to find where Python and TensorFlow differ (Unicode whitespace and case, the layer's own mask and OOV
tokens, empty texts and tokens, ties in counts, a capped vocabulary, a cut length).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest

from seqkeras.tasks import text
from seqkeras.tasks.base import PAD, UNK, Vocabulary
from seqkeras.tasks.limits import check_vocabulary_entries

HOSTILE = [
    "The CAT sat.", "ÉCOLE école École", "İstanbul ß STRASSE straße", "a\u00a0b c\u3000d e\u2003f g\u2028h",
    "tab\tsep\nnew\rline\x0bvt\x0cff", "\x1cfs\x1dgs\x1e\x1f\x85nel", "[UNK] [unk] UNK [UNK]", "", "   ",
    "emoji 😀 😀 👍🏽", "e\u0301 é", "x-y_z a.b,c don't «quoted» “curly”", "MiXeD CaSe mixed case",
    "tie1 tie2 tie3 tie1 tie2 tie3 Tie1", "ﬁ ligature Ⅻ ⅻ", "\u200bzero width\u200b", "数字 数字 漢字",
    "the the the cat cat dog", "a  b   c", "\t leading and trailing \n",
]
STANDARDIZE = ["lower_and_strip_punctuation", "lower", "strip_punctuation", "none"]


# The reference: tasks/text.py as it was, TextVectorization itself.

def _layer(standardize: str | None, split: str | None, params):
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


def keras_vectorize_tokens(
    train: Sequence[Sequence[str]], test: Sequence[Sequence[str]], *, lowercase: bool, params
) -> tuple[list[list[int]], list[list[int]], Vocabulary]:
    """Already-tokenized sentences → one id per token (no splitting, so tags stay aligned)."""
    layer = _layer("lower" if lowercase else None, None, params)
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


def keras_vectorize_texts(
    train: Sequence[str], test: Sequence[str], *, standardize, params,
    max_length: int | None = None,
) -> tuple[np.ndarray, np.ndarray, Vocabulary]:
    """Raw texts → standardized, split on whitespace, padded ids [N, longest], at most `max_length` columns.

    The vocabulary and its `min_count` read the whole training texts, past `max_length` too."""
    layer = _layer(None if standardize == "none" else standardize, "whitespace", params)
    _adapt(layer, train)
    counts = np.zeros(layer.vocabulary_size(), np.int64)
    x_train = _padded_ids(layer, train, max_length, counts)
    keep = _kept_ids(counts, params.min_count)
    check_vocabulary_entries(keep, "the vocabulary", "task.max_tokens")
    x_test = _padded_ids(layer, test, max_length)
    for x in (x_train, x_test):
        x[x >= keep] = 1
    return x_train, x_test, _vocabulary(layer, keep)


@pytest.mark.parametrize("standardize", STANDARDIZE)
@pytest.mark.parametrize("max_tokens, min_count, max_length", [(None, 1, None), (None, 2, 3), (6, 1, None)])
def test_texts_read_as_textvectorization_reads_them(standardize, max_tokens, min_count, max_length):
    params = text.VocabularyParams(min_count=min_count, max_tokens=max_tokens)
    train, test = HOSTILE, [*HOSTILE[::-1], "words never seen", "THE Cat"]
    expected = keras_vectorize_texts(train, test, standardize=standardize, params=params, max_length=max_length)
    got = text.vectorize_texts(train, test, standardize=standardize, params=params, max_length=max_length)
    for want, have in zip(expected[:2], got[:2]):
        np.testing.assert_array_equal(have, want)
    assert got[2].tokens == expected[2].tokens


@pytest.mark.parametrize("lowercase", [True, False])
@pytest.mark.parametrize("min_count", [1, 2])
def test_tokens_look_up_as_textvectorization_looks_them_up(lowercase, min_count):
    """A tagging corpus's tokens, each looked up whole: an empty token, the layer's "[UNK]", Unicode case."""
    sentences = [sentence.split(" ") for sentence in HOSTILE]  # split(" "): empty tokens and whitespace kept
    params = text.VocabularyParams(min_count=min_count)
    expected = keras_vectorize_tokens(sentences, sentences[::-1], lowercase=lowercase, params=params)
    got = text.vectorize_tokens(sentences, sentences[::-1], lowercase=lowercase, params=params)
    assert got[:2] == tuple(expected[:2]) and got[2].tokens == expected[2].tokens


def test_the_sentiment_corpus_and_the_tweets_read_as_before():
    """The real corpora the suite ships: the Rotten Tomatoes sentences (classification) and the WNUT-2016
    tweets (tagging), at their tasks' defaults and seed 0's split."""
    from seqkeras.tasks import rotten_tomatoes, wnut
    from seqkeras.tasks.text import split_examples

    train, test = split_examples(rotten_tomatoes.load_sentences(), 0.2, 0, what="rotten_tomatoes")
    texts = [sentence for sentence, _ in train], [sentence for sentence, _ in test]
    params = rotten_tomatoes.Params()
    expected = keras_vectorize_texts(*texts, standardize=params.standardize, params=params)
    got = text.vectorize_texts(*texts, standardize=params.standardize, params=params)
    np.testing.assert_array_equal(got[0], expected[0])
    np.testing.assert_array_equal(got[1], expected[1])
    assert got[2].tokens == expected[2].tokens and len(got[2].tokens) > 5000

    tweets = [tokens for tokens, _ in wnut.load_sentences()]
    params = wnut.Params()
    expected = keras_vectorize_tokens(tweets[:2000], tweets[2000:], lowercase=params.lowercase, params=params)
    got = text.vectorize_tokens(tweets[:2000], tweets[2000:], lowercase=params.lowercase, params=params)
    assert got[:2] == tuple(expected[:2]) and got[2].tokens == expected[2].tokens and len(got[2].tokens) > 1000
