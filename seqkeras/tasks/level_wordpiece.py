"""`level: wordpiece`: keras-hub WordPiece (`runn ##ing`), keras-hub's WordPiece trainer given the texts in their
training order, its words split by keras-hub's pretokenizer (whitespace and each punctuation mark); a word none of
its pieces spell is one `<unk>`. The vocabulary is the model (vocabulary.json): the run folder keeps no other file.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from seqkeras.tasks.base import PAD, UNK, Vocabulary
from seqkeras.tasks.subword_models import SubwordLevel

SUFFIX = "##"  # keras-hub's (and BERT's) mark of a piece that continues a word


class WordPieceModel:
    """keras-hub's WordPieceTokenizer over a vocabulary, built on first use (it loads TensorFlow)."""

    level = "wordpiece"

    def __init__(self, vocabulary: Vocabulary):
        self.vocabulary = vocabulary
        self._tokenizer = None

    def pieces(self, texts: Sequence[str]) -> list[list[str]]:
        if self._tokenizer is None:
            self._tokenizer = wordpiece_tokenizer(self.vocabulary.tokens)
        output = self._tokenizer(list(texts))
        # A ragged string tensor on TensorFlow; nested lists of bytes wherever keras-hub hands back Python.
        rows = output.to_list() if hasattr(output, "to_list") else output
        return [[piece.decode("utf-8") if isinstance(piece, bytes) else str(piece) for piece in row] for row in rows]

    def saved(self) -> bytes:
        raise TypeError("a WordPiece model is its vocabulary (vocabulary.json); it keeps no file of its own")


def learn_wordpiece(texts: Sequence[str], size: int, reserved: Sequence[str]) -> WordPieceModel:
    return WordPieceModel(learn_wordpiece_vocabulary(texts, size, reserved))


def join_suffixed(tokens: Sequence[str]) -> list[str]:
    """WordPiece pieces → the words they spell: a `##` piece continues the word before it (`runn ##ing` →
    `running`). A `##` piece with no word before it (a model may write one first) is a word of its own, without
    the mark."""
    words: list[str] = []
    for token in tokens:
        continues = token.startswith(SUFFIX) and len(token) > len(SUFFIX)
        if continues and words:
            words[-1] += token[len(SUFFIX):]
        else:
            words.append(token[len(SUFFIX):] if continues else token)
    return words


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


def exported(model: WordPieceModel, folder: Path) -> dict:
    """A WordPiece export's tokenizer is its vocabulary (vocabulary.json, already in the folder)."""
    return {"file": "vocabulary.json", "library": "keras_hub",
            "read": "keras_hub.tokenizers.WordPieceTokenizer(vocabulary=<the file's list>, lowercase=False, "
                    f"strip_accents=False, split=True, suffix_indicator='{SUFFIX}', oov_token='<unk>')"}


LEVEL = SubwordLevel("wordpiece", "keras-hub WordPiece, `runn ##ing`", learn_wordpiece, join_suffixed, SUFFIX,
                     of_vocabulary=WordPieceModel, export=exported)
