"""What every subword level is (`SubwordLevel`, `SubwordModel`) and what the learnt ones share: the `▁` that starts a
word, how training words are spaced and counted, and the check that a model file's pieces are vocabulary.json's.

Each level is one module (tasks.level_wordpiece, tasks.level_bpe, tasks.level_sentencepiece) that defines its
`SubwordLevel`, and one line of tasks.subword_levels.LEVELS; nothing else of the suite names a level (the `level`
key's choices, a kept model's input.split, the data card, export and serve.py read the catalog or the level).

Each learnt model is learnt from the words of the training texts alone (the texts handed in are their words
joined by single spaces: tasks.subwords prepares them) to at most `size` pieces, the task's reserved pieces
first: `<pad>` id 0, `<unk>` id 1, then any marker the task adds (a seq2seq target's `<s>` and `</s>`, a language
model's `</s>`). The pieces by id are the run's vocabulary (vocabulary.json), the suite's `Vocabulary` layout. The
same texts give the same vocabulary on every run and machine (tests/test_subword_levels.py trains twice); nothing
is downloaded. `size` is a bound: the BPE trainers stop when no pair is left to merge, and the unigram model keeps
only the pieces its segmentations use (the King James Bible's 12,827 distinct words give 6,845 pieces of 8,000
asked). Learning is one call into C++ or Rust over the word counts (under a second for that Bible: a signal is
answered when it returns); splitting goes a chunk of texts at a time (tasks.subwords.pieces).

A run folder keeps a learnt model beside its vocabulary (preprocessing.json's `input.tokenizer` names the file).
The file may be someone else's: a level's `read` refuses one that does not parse, is not of its level or does
not fit vocabulary.json, in one line naming it (kept.preprocessing reads its bytes through results.files: inside
the folder, no link, bounded). Fitting means cutting words into the run's pieces (tasks.tokenizer_checks, which
says why its checks suffice).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from seqkeras.errors import SpecError, excerpt
from seqkeras.tasks.base import PAD, Vocabulary

WORD_START = "\u2581"  # ▁: SentencePiece's mark of a piece that starts a word, and the bpe level's
# The markers a task reserves beside <unk> (seq2seq_data's START and END, lm_corpus's WORD_END; tested): never
# part of a word, each is a word of its own when pieces are joined.
MARKERS = frozenset({PAD, "<s>", "</s>"})


class SubwordModel(Protocol):
    """A learnt subword model: its pieces by id (the run's vocabulary), and how it cuts texts into them."""

    level: str
    vocabulary: Vocabulary

    def pieces(self, texts: Sequence[str]) -> list[list[str]]: ...

    def saved(self) -> bytes: ...


@dataclass(frozen=True)
class SubwordLevel:
    """What one subword level is, for every task that offers it, for a kept model and for its export.

    name: the `level` key's value (and a kept model's input.split); summary: how the `level` key's help names it;
    learn(texts, size, reserved) → its model, learnt from the training texts (their words joined by spaces), at
    most `size` pieces with the `reserved` ones first; join(pieces) → the words they spell; mark: how its pieces
    show where words meet (preprocessing.json's output.continuation); file: the run folder's file of its model
    (None where the vocabulary is the whole model) and read(bytes, vocabulary, where) → the model of that file, or
    of_vocabulary(vocabulary) → the model of a level whose vocabulary is the whole model;
    export(model, folder) → writes the model in its library's own format into an export folder and gives
    export.json's `tokenizer` entry ({"file", "library", "read"}: serve.py reads it by `library`), or None."""

    name: str
    summary: str
    learn: Callable[[Sequence[str], int, Sequence[str]], SubwordModel]
    join: Callable[[Sequence[str]], list[str]]
    mark: str
    file: str | None = None
    read: Callable[[bytes, Vocabulary, str], SubwordModel] | None = None
    of_vocabulary: Callable[[Vocabulary], SubwordModel] | None = None
    export: Callable[[SubwordModel, Path], dict | None] | None = None

    def __post_init__(self):
        from_file = self.file is not None and self.read is not None
        if from_file == (self.of_vocabulary is not None) or (self.file is None) != (self.read is None):
            raise TypeError(f"subword level {self.name}: a model file and its reader, or a model of the vocabulary")


def join_word_starts(tokens: Sequence[str]) -> list[str]:
    """`▁`-marked pieces (bpe, sentencepiece_*) → the words they spell: a `▁` piece starts a word, any other
    continues the word before it (`▁runn ing` → `running`; `<unk>`, an unknown stretch of a word, too). A piece
    with no word before it starts one; a reserved marker (`</s>`) is a word of its own."""
    words: list[str] = []
    continuing = False
    for token in tokens:
        if token in MARKERS:
            words.append(token)
            continuing = False
        elif token.startswith(WORD_START) or not continuing:
            words.append(token.removeprefix(WORD_START))
            continuing = True
        else:
            words[-1] += token
    return [word for word in words if word]  # a lone ▁ (a word it could not spell further) is no word


def spaced(text: str) -> str:
    """A text's words joined by single spaces: the only separator both libraries split on alike."""
    return " ".join(text.split())


def check_size(level: str, counts: Counter, size: int, reserved: Sequence[str]) -> None:
    """Refuse a `size` that cannot hold every character of the training words, `▁` and the reserved pieces: both
    libraries keep each training character as a piece (SentencePiece refuses to train otherwise, the `tokenizers`
    trainer goes over the size), so a smaller size is a mistake to point at."""
    if not counts:
        raise SpecError(f"level {level} learns its pieces from the training texts' words, and they hold none",
                        path="task.level")
    characters = {character for word in counts for character in word} | {WORD_START}
    needed = len(characters) + len(reserved)
    if size < needed:
        raise SpecError(f"vocabulary_size {size} cannot hold the {len(characters)} distinct characters of the "
                        f"training words (▁ included) and the {len(reserved)} reserved pieces that level {level} "
                        f"keeps; set it to {needed} or more", path="task.vocabulary_size")


def check_pieces(pieces: Vocabulary, vocabulary: Vocabulary, where: str) -> None:
    """Refuse a model file whose pieces by id are not vocabulary.json's: the two are of one run."""
    if pieces.tokens == vocabulary.tokens:
        return
    if len(pieces) != len(vocabulary):
        raise SpecError(f"{where} holds {len(pieces)} pieces, but the run's vocabulary.json {len(vocabulary)}: the "
                        "two files are not of one run")
    index = next(i for i, (a, b) in enumerate(zip(pieces.tokens, vocabulary.tokens)) if a != b)
    raise SpecError(f"{where}: piece {index} is {excerpt(pieces.tokens[index])}, but the run's vocabulary.json has "
                    f"{excerpt(vocabulary.tokens[index])}: the two files are not of one run")
