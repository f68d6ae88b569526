"""de_en: German → English sentence pairs from the Ding dictionary (Debian package trans-de-en).

`apt-get install trans-de-en` installs the dictionary (GPL) at
/usr/share/trans/de-en. Each line is `German :: English`; both sides hold
sub-entries separated by ` | ` that correspond one to one, each a list of
variants separated by `; `, with labels in `{}` (gender, part of speech) and
`[]` (domain, register):

    Das ist mir egal. [ugs.]; Das ist mir wurscht. [ugs.] :: I don't care.; I couldn't care less.

We take every aligned sub-entry, pair its variants in order (or the first
variants, when the two sides list different numbers), remove the labels, and
keep the pairs where both sides are full sentences: at least `min_words` words
and a final `.`, `?` or `!`. That gives about 18,600 pairs averaging 8 words.
Words and punctuation are separate, lower-cased tokens (`level: word`); `level`
also takes characters and the subword levels of sentence_pairs (wordpiece, bpe,
sentencepiece_unigram, sentencepiece_bpe, with `vocabulary_size` and
`shared_vocabulary`), cut from those words as sentence_pairs cuts them
(tasks.sentence_pairs.subword_data). `max_length` counts tokens: words at a
subword level, characters at `char`.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import ClassVar

import numpy as np
from pydantic import Field, field_validator, model_validator

from seqkeras.errors import SpecError
from seqkeras.registry import Params as BaseParams
from seqkeras.tasks import sentence_pairs, subwords
from seqkeras.tasks.base import named_files
from seqkeras.tasks.files import check_data_file
from seqkeras.tasks.input_rules import InputRule, words_pieces_or_characters
from seqkeras.tasks.seq2seq_data import BUCKET_WIDTH_HELP, Pair, Seq2SeqData, seq2seq_data

DEFAULT_PATH = "/usr/share/trans/de-en"
INSTALL_HINT = "install it with `sudo apt-get install trans-de-en` (Debian/Ubuntu), or give task.path"
LABEL = re.compile(r"\s*(\{[^}]*\}|\[[^\]]*\])")
TOKEN = re.compile(r"\w+|[^\w\s]")


class Params(BaseParams):
    path: str = Field(DEFAULT_PATH, description="The Ding dictionary file (Debian package trans-de-en).")
    n_train: int | None = Field(None, ge=1, description="Training pairs; default: every pair not held out for testing.")
    n_test: int = Field(1000, ge=1, description="Test pairs, drawn at random (seeded) before the training pairs.")
    min_words: int = Field(4, ge=1, description="Fewest words on each side for a pair to count as a sentence.")
    max_length: int = Field(
        25, ge=1, description="Longest sentence kept, in tokens (punctuation included), on either side."
    )
    max_vocabulary: int | None = Field(
        8000, ge=1, description="Level word and char: most frequent training tokens kept per language; the rest "
        "become <unk>."
    )
    level: subwords.Level = Field(
        "word", description=f"Tokens: words and punctuation marks, characters, or {subwords.LEVEL_HELP}, cutting "
        "those words, as sentence_pairs does (one vocabulary per side, or one with shared_vocabulary).")
    vocabulary_size: int | None = sentence_pairs.pair_vocabulary_size_field()
    shared_vocabulary: bool = sentence_pairs.shared_vocabulary_field()
    bucket_width: int = Field(5, ge=1, le=10_000, description=BUCKET_WIDTH_HELP)

    # Added after results existed: a spec without them keeps its runs' ids (registry.Params.hashed).
    hashed_only_when_set: ClassVar[tuple[str, ...]] = ("level", "vocabulary_size", "shared_vocabulary")

    # A path the spec gives is checked now. The default (pydantic leaves defaults unchecked) is
    # the Debian dictionary: where it is not installed the task says so when it is built, with
    # how to install it, so that specs using it still validate on any machine.
    check_file = field_validator("path")(check_data_file)

    @model_validator(mode="after")
    def _long_enough(self) -> "Params":
        if self.max_length < self.min_words:
            raise ValueError(f"max_length {self.max_length} is shorter than min_words {self.min_words}")
        subwords.check_vocabulary_size(self, "max_vocabulary")
        sentence_pairs.check_shared_vocabulary(self)
        return self

    @property
    def subword_size(self) -> int:
        return self.vocabulary_size or subwords.DEFAULT_VOCABULARY_SIZE

    def input_rule(self, data: Seq2SeqData) -> InputRule:
        # As `tokenize` reads a side; at a subword level the source's model is the run folder's file it names.
        return words_pieces_or_characters(self.level, TOKEN.pattern, True, subwords.model_file(self.level))

    def input_files(self) -> dict[str, Path]:
        """The files this task reads, by key: each is part of the run's identity (execution.identity)."""
        return named_files(self, "path")  # the default dictionary too: its edits (an upgrade) count


def clean(text: str) -> str:
    return re.sub(r"\s+", " ", LABEL.sub("", text)).strip()


def is_sentence(text: str, min_words: int) -> bool:
    return len(text.split()) >= min_words and text[-1:] in ".?!"


def tokenize(text: str, level: str = "word") -> list[str]:
    """One side's tokens at `level`: lowercased words and marks (their pieces come later), or characters."""
    return sentence_pairs.tokenize(text, level, lowercase=True)


def read_pairs(path: str | Path, min_words: int = 4) -> list[tuple[str, str]]:
    """The (German, English) sentence pairs of a Ding dictionary file, in file order, without repeats."""
    file = Path(path).expanduser()
    if not file.exists():
        raise SpecError(f"the German–English dictionary {file} is missing; {INSTALL_HINT}", path="task.path")
    pairs: dict[tuple[str, str], None] = {}
    try:
        lines = file.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as error:
        raise SpecError(f"cannot read {file}: {error}", path="task.path") from None
    for line in lines:
        if line.startswith("#"):
            continue
        sides = line.split(" :: ")
        if len(sides) != 2:
            continue
        german_entries, english_entries = (side.split(" | ") for side in sides)
        if len(german_entries) != len(english_entries):
            continue  # sub-entries that do not line up cannot be paired
        for german, english in zip(german_entries, english_entries):
            german_variants = [clean(v) for v in german.split("; ")]
            english_variants = [clean(v) for v in english.split("; ")]
            if len(german_variants) == len(english_variants):
                candidates = zip(german_variants, english_variants)
            else:
                candidates = [(german_variants[0], english_variants[0])]
            for pair in candidates:
                if is_sentence(pair[0], min_words) and is_sentence(pair[1], min_words):
                    pairs.setdefault(pair, None)
    return list(pairs)


def build(params: Params, seed: int) -> Seq2SeqData:
    pairs: list[Pair] = [
        (tokenize(german, params.level), tokenize(english, params.level))
        for german, english in read_pairs(params.path, params.min_words)
    ]
    # A few very long sentences would make every padded batch as long as they are.
    pairs = [pair for pair in pairs if max(len(pair[0]), len(pair[1])) <= params.max_length]
    if len(pairs) <= params.n_test:
        raise SpecError(
            f"{params.path} gives {len(pairs)} sentence pairs, not more than n_test = {params.n_test}",
            path="task.n_test",
        )
    order = np.random.default_rng(seed).permutation(len(pairs))
    test = [pairs[i] for i in order[: params.n_test]]
    train = [pairs[i] for i in order[params.n_test :]]
    if params.n_train is not None:
        train = train[: params.n_train]
    if params.level in subwords.SUBWORD_LEVELS:
        return sentence_pairs.subword_data(params, train, [], test, {})
    return seq2seq_data(train, test, bucket_width=params.bucket_width, max_vocabulary=params.max_vocabulary)
