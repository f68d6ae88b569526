"""The tokenizer choice `level`: words, characters or WordPiece subwords (text classification, sentence_pairs,
lm_corpus).

`level: word` (the default) is tasks.text's Keras TextVectorization, unchanged.
`level: char` makes each character of the standardized text a token; `level:
wordpiece` splits the standardized text into keras-hub WordPiece pieces
(`runn ##ing`) from a vocabulary of `vocabulary_size` pieces learnt from the
training texts alone (keras-hub's WordPiece trainer, given the texts in their
training order: the same texts give the same vocabulary, on every backend). Test
and validation texts are split with that vocabulary; a word none of its pieces
spell is `<unk>`, id 1, as an unknown word is at `level: word`.

Standardization here is plain Python, character for character TextVectorization's
(`lower`: A–Z only; `strip_punctuation`: its ASCII marks), and the splitting is
one function (`pieces`) that the task and a kept model (kept.preprocessing, split
`wordpiece`) share, so `seqkeras predict` splits new text into the pieces the
model was trained on. The vocabulary is the run's `vocabulary.json`.

sentence_pairs and lm_corpus cut words into pieces the same way (their words are
their `level: word` tokens, joined by spaces before WordPiece splits them), with
`vocabulary_size_field` and `check_vocabulary_size` for their keys; `join_pieces`
puts the pieces a model writes back into words, for BLEU and chrF, samples and
`seqkeras predict`.

Tagging tasks have no `level`: their tags are per word, and a word cut into
pieces would need its tag on one piece and the others left out of the loss and
of every metric; the tagging evaluator scores one tag per token.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from typing import Any, ClassVar, Literal

import numpy as np
from pydantic import Field, model_validator

from seqkeras.errors import SpecError
from seqkeras.registry import Params
from seqkeras.tasks.base import PAD, UNK, Vocabulary, pad
from seqkeras.tasks.limits import check_padded_size, check_vocabulary_entries

Level = Literal["word", "char", "wordpiece"]

DEFAULT_VOCABULARY_SIZE = 1000
# Fewer pieces than this cannot hold <pad>, <unk> and a Latin alphabet alone and as ##suffixes: below it
# every text would be mostly <unk>, which is a mistake to point at, not a model to train.
MIN_VOCABULARY_SIZE = 32
SUFFIX = "##"  # keras-hub's (and BERT's) mark of a piece that continues a word

ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")
# Keras's TextVectorization's `strip_punctuation`, character for character.
PUNCTUATION = re.compile(r'[!"#$%&()\*\+,-\./:;<=>?@\[\\\]^_`{|}~\']')


class TokenizerParams(Params):
    """The `level` and `vocabulary_size` keys of a text classification task."""

    level: Level = Field(
        "word",
        description="Tokens: words (TextVectorization's whitespace split), characters, or WordPiece subwords "
                    "learnt from the training texts alone (vocabulary_size pieces).",
    )
    vocabulary_size: int | None = Field(
        None, ge=MIN_VOCABULARY_SIZE, le=1_000_000,
        description=f"level wordpiece: pieces in the learnt vocabulary, <pad> and <unk> included "
                    f"(default {DEFAULT_VOCABULARY_SIZE}).",
    )

    # Added after results existed: a spec without them keeps its runs' ids (registry.Params.hashed).
    hashed_only_when_set: ClassVar[tuple[str, ...]] = ("level", "vocabulary_size")

    @model_validator(mode="after")
    def _size_only_for_wordpiece(self):
        # SpecError, which pydantic passes through, so the message names the key itself, not just `task`.
        if self.vocabulary_size is not None and self.level != "wordpiece":
            raise SpecError(f"vocabulary_size applies only to level wordpiece, not {self.level!r}",
                            path="task.vocabulary_size")
        # min_count and max_tokens shape a vocabulary of counted tokens; a WordPiece vocabulary is learnt to a size.
        if self.level == "wordpiece" and getattr(self, "max_tokens", None) is not None:
            raise SpecError("max_tokens applies to level word and char; level wordpiece's size is vocabulary_size",
                            path="task.max_tokens")
        return self

    @property
    def wordpiece_size(self) -> int:
        return self.vocabulary_size or DEFAULT_VOCABULARY_SIZE


def vocabulary_size_field(description: str) -> Any:
    """The `vocabulary_size` key of a task whose `level` may be wordpiece (a default of its own, none set)."""
    return Field(None, ge=MIN_VOCABULARY_SIZE, le=1_000_000,
                 description=f"{description} (default {DEFAULT_VOCABULARY_SIZE}).")


def check_vocabulary_size(params: Any, *word_level_keys: str) -> None:
    """Refuse `vocabulary_size` without level wordpiece, and `word_level_keys` (the counted vocabulary's own
    keys, away from their defaults) with it: a WordPiece vocabulary is learnt to a size, not counted."""
    if params.vocabulary_size is not None and params.level != "wordpiece":
        raise SpecError(f"vocabulary_size applies only to level wordpiece, not {params.level!r}",
                        path="task.vocabulary_size")
    if params.level == "wordpiece":
        for key in word_level_keys:
            # Compared with the default, not looked up among the keys set: a run's resolved spec (spec.yaml,
            # read back to evaluate a run again) names every key, at its default too.
            if getattr(params, key) != type(params).model_fields[key].default:
                raise SpecError(f"{key} applies to level word and char; level wordpiece's size is vocabulary_size",
                                path=f"task.{key}")


def standardized(text: str, standardize: str) -> str:
    """TextVectorization's standardization of one text (`standardize` as ClassificationTextParams names it)."""
    if "lower" in standardize:
        text = text.translate(ASCII_LOWER)
    if "strip_punctuation" in standardize:
        text = PUNCTUATION.sub("", text)
    return text


def learn_wordpiece_vocabulary(train_texts: Sequence[str], size: int,
                               reserved: Sequence[str] = (PAD, UNK)) -> Vocabulary:
    """A WordPiece vocabulary of at most `size` pieces (`reserved` first: <pad>, <unk>, and any marker the
    task adds itself, such as a target's <s> and </s>) learnt from these texts only.

    What keras-hub's `compute_word_piece_vocabulary` does (count the words, TensorFlow Text's learner, cut to
    `size`), with the words split by keras-hub's Python pretokenizer, the one its WordPieceTokenizer splits with
    outside a tf.function: training and tokenizing see the same words, and the vocabulary is the same on every
    backend (on torch and JAX keras-hub is loaded without TensorFlow, and its trainer refuses to run).
    """
    import keras_hub  # noqa: F401  (before TensorFlow Text: the backends' import hook loads keras-hub their way)
    from keras_hub.src.tokenizers.word_piece_tokenizer import pretokenize_python
    from tensorflow_text.tools.wordpiece_vocab import wordpiece_tokenizer_learner_lib as learner

    # A Counter fills in text order and the learner reads it in that order: the same texts, the same vocabulary.
    counts = Counter(word for text in train_texts for word in pretokenize_python(
        text, lowercase=False, strip_accents=False, split=True, split_on_cjk=True))
    if not counts:
        return Vocabulary(list(reserved))
    learnt = learner.learn(counts, vocab_size=size, reserved_tokens=list(reserved), include_joiner_token=True,
                           joiner=SUFFIX)
    return Vocabulary([str(piece) for piece in learnt[:size]])


def wordpiece_tokenizer(vocabulary: Sequence[str]) -> Any:
    """keras-hub's WordPieceTokenizer over these pieces, splitting as the vocabulary was learnt; <unk> for the rest."""
    import keras_hub

    return keras_hub.tokenizers.WordPieceTokenizer(
        vocabulary=list(vocabulary), lowercase=False, strip_accents=False, split=True, suffix_indicator=SUFFIX,
        oov_token=UNK, dtype="string",
    )


def pieces(tokenizer: Any, texts: Sequence[str]) -> list[list[str]]:
    """Standardized texts → their WordPiece pieces, one list per text."""
    if not texts:
        return []
    output = tokenizer(list(texts))
    # A ragged string tensor on TensorFlow; nested lists of bytes wherever keras-hub hands back Python.
    rows = output.to_list() if hasattr(output, "to_list") else output
    return [[piece.decode("utf-8") if isinstance(piece, bytes) else str(piece) for piece in row] for row in rows]


def join_pieces(tokens: Sequence[str]) -> list[str]:
    """Pieces → the words they spell: a `##` piece continues the word before it (`runn ##ing` → `running`).

    What BLEU, chrF, samples and `seqkeras predict` read: text is scored and shown as words, never as pieces.
    A `##` piece with no word before it (a model may write one first) is a word of its own, without the mark.
    """
    words: list[str] = []
    for token in tokens:
        continues = token.startswith(SUFFIX) and len(token) > len(SUFFIX)
        if continues and words:
            words[-1] += token[len(SUFFIX):]
        else:
            words.append(token[len(SUFFIX):] if continues else token)
    return words


def word_pieces(tokenizer: Any, sequences: Sequence[Sequence[str]]) -> list[list[str]]:
    """Already-split words (a task's `level: word` tokens), one list per text → their pieces, one list per text.

    The words are joined by spaces and split again by WordPiece's own pretokenizer, which keeps them apart
    (it splits on whitespace and on each punctuation mark, as the tasks' word patterns do).
    """
    return pieces(tokenizer, [" ".join(words) for words in sequences])


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
) -> tuple[np.ndarray, np.ndarray, Vocabulary]:
    """Raw texts → padded ids [N, longest] at `params.level` char or wordpiece, at most `max_length` columns (cut
    as they are padded, never padded to the longest first); the vocabulary from `train` only, whole texts.

    `params` is a ClassificationTextParams (its level, vocabulary_size, min_count, max_tokens).
    """
    train = [standardized(text, standardize) for text in train]
    rest = [standardized(text, standardize) for text in rest]
    if params.level == "char":
        train_tokens, rest_tokens = [list(text) for text in train], [list(text) for text in rest]
        vocabulary = counted_vocabulary(train_tokens, params.min_count, params.max_tokens)
        check_vocabulary_entries(len(vocabulary), "the vocabulary", "task.max_tokens")
    else:
        vocabulary = learn_wordpiece_vocabulary(train, params.wordpiece_size)
        tokenizer = wordpiece_tokenizer(vocabulary.tokens)
        train_tokens, rest_tokens = pieces(tokenizer, train), pieces(tokenizer, rest)

    def ids(tokens: list[list[str]]) -> np.ndarray:
        # Padded to the part's longest text, as TextVectorization pads at level word; at least one column.
        longest = max([1, *(len(t) for t in tokens)])
        width = min(longest, max_length or longest)
        check_padded_size("the task's texts", len(tokens), width, "task.max_length",
                          "set max_length to keep fewer tokens per text")
        return pad([vocabulary.encode(sequence) for sequence in tokens], width)

    return ids(train_tokens), ids(rest_tokens), vocabulary
