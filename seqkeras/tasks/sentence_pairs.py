"""sentence_pairs: the user's parallel text, `source<TAB>target[<TAB>…]` per line → a seq2seq task.

The format of the Keras translation examples and of the Tatoeba / Anki
downloads (`Go.<TAB>Va !<TAB>CC-BY 2.0 (France) Attribution: …`): UTF-8, one
pair a line, fields separated by tabs. `source_column` and `target_column`
(0-based) choose the two fields; any other field (Tatoeba's attribution) is
ignored. A blank line is skipped.

Each side is tokenized as de_en tokenizes: words and single punctuation marks
(`level: word`, the pattern `\\w+|[^\\w\\s]`), or one token per character
(`level: char`, as the synthetic tasks); lowercased with `lowercase`. A pair
whose source is longer than `max_source_length` tokens or whose target is longer
than `max_target_length` is left out, in every file; the run's record counts
them (metrics.json, `data`), and above `max_left_out` of a file's pairs the run is
refused, naming the lengths that keep 99% of them (tasks.left_out).

A subword level (`wordpiece`, `bpe`, `sentencepiece_unigram`, `sentencepiece_bpe`:
tasks.subwords) cuts those words into pieces, with one vocabulary per side of
`vocabulary_size` pieces, the source's learnt from the training sources and the
target's from the training targets, never from test or validation pairs; with
`shared_vocabulary`, one model and one vocabulary learnt from both sides' training
texts serve both sides (the target's `<s>` and `</s>` are in it; the run folder
keeps it once, vocabulary.json, which preprocessing.json names for both sides).
`shared_vocabulary` is refused at `level: word` and `char`: sharing is what a
subword model learnt on both languages is for (names, numbers and cognates cut
alike on both sides), while two counted word lists merged would only be larger. The
split into training, validation and test pairs is made on the words, as at `level:
word`; the length limits then count pieces, part by part (the record's
`pairs_too_long.train`, `.validation`, `.test`), once the vocabularies are learnt.
The model reads and writes pieces; BLEU, chrF and exact match score the words its
pieces spell (`runn ##ing`, `▁runn ing` are `running`) against the reference's
words, the `level: word` tokens, so they compare with a word-level run's. The
per-length breakdown (`by_length`) counts source pieces; the data card gives each
side's pieces per word and `<unk>` rate on the test pairs.

The test pairs are `test_path` when given, else a seeded `test_share` of `path`;
validation pairs (tasks.validation) come from what is left to train on, or from
`validation_path`. BLEU and chrF are sacrebleu's, on the space-joined tokens (words
at a subword level), as for every seq2seq task (evaluation.seq2seq_metrics).

Every file is read when the spec is validated (streamed; no TensorFlow): a line
with too few fields, an empty source or target, bytes that are not UTF-8, a file
without pairs is one `SpecError` naming the file, the line and the field; so is a
source or target over tasks.limits.MAX_TEXT_CHARACTERS, and pairs that padded
would make more than MAX_DATA_TOKENS token ids (counted again in pieces at a
subword level, once the vocabularies are learnt).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import ClassVar

from pydantic import Field, ValidationInfo, field_validator, model_validator

from seqkeras.errors import SpecError, shown
from seqkeras.tasks import left_out, subwords
from seqkeras.tasks.base import PAD, UNK, named_files
from seqkeras.tasks.files import check_data_file, utf8_pieces
from seqkeras.tasks.input_rules import InputRule, words_pieces_or_characters
from seqkeras.tasks.limits import check_padded_size, check_text_length
from seqkeras.tasks.seq2seq_data import BUCKET_WIDTH_HELP, END, START, Pair, Seq2SeqData, seq2seq_data
from seqkeras.tasks.text import split_examples
from seqkeras.tasks.validation import (
    ValidationParams, validation_examples, validation_path_field, validation_share_field,
)

NAME = "sentence_pairs"
WORD = re.compile(r"\w+|[^\w\s]")  # de_en's tokens: words, and each punctuation mark on its own
FILE_KEYS = ("path", "test_path", "validation_path")
TARGET_RESERVED = (PAD, UNK, START, END)  # a target vocabulary's: the decoder starts at <s> and stops at </s>


def pair_vocabulary_size_field():
    """A pair task's `vocabulary_size` (sentence_pairs', de_en's)."""
    return subwords.vocabulary_size_field(
        f"{subwords.LEVELS_SAID}: pieces in each side's learnt vocabulary (or the shared one), <pad> and <unk> "
        "(and the target's <s> and </s>) included")


def shared_vocabulary_field():
    """A pair task's `shared_vocabulary` (sentence_pairs', de_en's; `check_shared_vocabulary` refuses it where it
    does not apply)."""
    return Field(False, description=f"{subwords.LEVELS_SAID}: one subword model and vocabulary learnt from both "
                                    "sides' training texts, for source and target alike (not at level word or char).")


class Params(ValidationParams):
    path: str = Field(description="UTF-8 file of sentence pairs: source<TAB>target[<TAB>…] per line "
                                  "(Tatoeba/Anki, the Keras translation examples).")
    test_path: str | None = Field(None, description="A test file of the same format; default: hold out "
                                                    "test_share of path.")
    test_share: float = Field(0.2, gt=0, lt=1, description="Share of path's pairs held out for testing (seeded), "
                                                            "without test_path.")
    validation_path: str | None = validation_path_field()
    validation_share: float | None = validation_share_field()
    source_column: int = Field(0, ge=0, le=1000, description="The field (0-based, tab-separated) holding the source.")
    target_column: int = Field(1, ge=0, le=1000, description="The field (0-based, tab-separated) holding the target.")
    level: subwords.Level = Field(
        "word",
        description=f"Tokens: words and punctuation marks (as de_en), characters, or {subwords.LEVEL_HELP}, cutting "
                    "those words; one vocabulary per side, or one for both with shared_vocabulary. BLEU, chrF and "
                    "`seqkeras predict` read the words the pieces spell.")
    vocabulary_size: int | None = pair_vocabulary_size_field()
    shared_vocabulary: bool = shared_vocabulary_field()
    lowercase: bool = Field(True, description="Lowercase both sides before tokenizing.")
    max_source_length: int | None = Field(
        None, ge=1, le=100_000,
        description="Leave out pairs whose source has more tokens (pieces at a subword level; default: keep all).")
    max_target_length: int | None = Field(
        None, ge=1, le=100_000,
        description="Leave out pairs whose target has more tokens (pieces at a subword level; default: keep all).")
    max_vocabulary: int | None = Field(
        None, ge=1, le=10_000_000,
        description="Level word and char: most frequent training tokens kept per side; the rest become <unk> "
                    "(default: all).")
    bucket_width: int = Field(5, ge=1, le=10_000, description=BUCKET_WIDTH_HELP)
    max_left_out: float = left_out.max_left_out_field()

    # Added after results existed: a spec without them keeps its runs' ids (registry.Params.hashed).
    hashed_only_when_set: ClassVar[tuple[str, ...]] = ("vocabulary_size", "shared_vocabulary", "max_left_out")

    @field_validator(*FILE_KEYS)
    @classmethod
    def _readable(cls, value: str | None, info: ValidationInfo) -> str | None:
        return check_data_file(value, info)  # missing, a folder, a FIFO: refused before the lines are read

    @model_validator(mode="after")
    def _pairs_readable(self) -> Params:
        # Every line of every file is read now (streamed, plain Python), after the columns are known (they
        # may be defaults, which field validators skip): a bad line is refused before a sweep starts.
        if self.source_column == self.target_column:
            raise SpecError(f"source_column and target_column are both {self.source_column}; a pair needs two "
                            "fields", path="task.target_column")
        subwords.check_vocabulary_size(self, "max_vocabulary")
        check_shared_vocabulary(self)
        pairs = [pair for key in FILE_KEYS if getattr(self, key) is not None for pair in read_pairs(self, key)[0]]
        check_pairs_size(self, pairs)
        return self

    def input_files(self) -> dict[str, Path]:
        """The files this task reads, by key: each is part of the run's identity (execution.identity)."""
        return named_files(self, *FILE_KEYS)

    @property
    def subword_size(self) -> int:
        return self.vocabulary_size or subwords.DEFAULT_VOCABULARY_SIZE

    def input_rule(self, data: Seq2SeqData) -> InputRule:
        # As `tokenize` reads a side; at a subword level the source's model is the run folder's file it names.
        return words_pieces_or_characters(self.level, WORD.pattern, self.lowercase, subwords.model_file(self.level))


def tokenize(text: str, level: str, lowercase: bool) -> list[str]:
    """One side's tokens: words and marks (de_en's pattern) or characters (runs of whitespace as one space).
    At a subword level, the words (`subword_data` cuts them into pieces once the vocabularies are learnt)."""
    if lowercase:
        text = text.lower()
    if level != "char":
        return WORD.findall(text)
    return list(" ".join(text.split()))


def lines_of(path: str | Path, key: str) -> Iterator[tuple[int, str]]:
    """(line number, line without its end) of a UTF-8 file, streamed; `utf8_pieces` names bad bytes by line."""
    number = 0
    for piece in utf8_pieces(path, key):
        for line in piece.splitlines():
            number += 1
            yield number, line


def pair_fields(params: Params, path: str | Path, key: str) -> Iterator[tuple[int, str, str]]:
    """(line number, source text, target text) of each non-blank line: the two chosen tab-separated fields."""
    needed = max(params.source_column, params.target_column) + 1
    sides = (("source", "task.source_column", params.source_column),
             ("target", "task.target_column", params.target_column))
    for number, line in lines_of(path, key):
        if not line.strip():
            continue
        fields = line.split("\t")
        if len(fields) < needed:
            raise SpecError(
                f"{path}, line {number}: {len(fields)} tab-separated field(s), but "
                + " and ".join(f"the {side} is field {column} ({setting})" for side, setting, column in sides)
                + f" (counting from 0): expected source<TAB>target, got {shown(line.strip(), 60)}",
                path=key,
            )
        texts = []
        for side, setting, column in sides:
            text = fields[column].strip()
            if not text:
                raise SpecError(f"{path}, line {number}: the {side} (field {column}, {setting}) is empty",
                                path=key)
            check_text_length(path, number, f"the {side} (field {column}, {setting})", text, key)
            texts.append(text)
        yield number, texts[0], texts[1]


def read_pairs(params: Params, key: str = "path") -> tuple[list[Pair], dict[str, int]]:
    """The tokenized pairs of the file at `params.<key>`, in file order, and the record's counts of it: the pairs
    read, and those left out as too long (refused above max_left_out of them: tasks.left_out).

    At a subword level the pairs are words and none is left out here: the limits count pieces (`subword_data`).
    """
    path = Path(getattr(params, key)).expanduser()
    setting = f"task.{key}"
    pairs: list[Pair] = []
    lengths: tuple[list[int], list[int]] = ([], [])
    too_long = 0
    limited = params.level not in subwords.SUBWORD_LEVELS
    for _, source_text, target_text in pair_fields(params, path, setting):
        source = tokenize(source_text, params.level, params.lowercase)
        target = tokenize(target_text, params.level, params.lowercase)
        lengths[0].append(len(source))
        lengths[1].append(len(target))
        if limited and left_out.too_long(params, source, target):
            too_long += 1
            continue
        pairs.append((source, target))
    read = len(lengths[0])
    if not read:
        raise SpecError(f"{path} holds no sentence pairs (expected source<TAB>target per line)", path=setting)
    if not pairs:
        raise_all_too_long(params, f"the {read} pairs of {path}")
    left_out.check_share(params, str(path), *lengths, too_long, "tokens")
    return pairs, {left_out.READ + key: read, left_out.TOO_LONG + key: too_long}


def check_shared_vocabulary(params) -> None:
    """Refuse `shared_vocabulary` without a subword level (sentence_pairs' and de_en's)."""
    if params.shared_vocabulary and params.level not in subwords.SUBWORD_LEVELS:
        raise SpecError(f"shared_vocabulary applies only to {subwords.LEVELS_SAID} (one subword model learnt "
                        f"from both sides), not {params.level!r}", path="task.shared_vocabulary")


def check_pairs_size(params: Params, pairs: list[Pair]) -> None:
    """The pairs of every file, padded (a source, a decoder input and a target each, every one to its longest), stay
    within tasks.limits.MAX_DATA_TOKENS. Counted in words at a subword level when the files are validated, in
    pieces once they are cut (`subword_data`)."""
    width = max(len(source) for source, _ in pairs) + 2 * (max(len(target) for _, target in pairs) + 1)
    files = " and ".join(str(getattr(params, key)) for key in FILE_KEYS if getattr(params, key, None) is not None)
    check_padded_size(files, len(pairs), width, "task.max_source_length",
                      "set max_source_length and max_target_length to leave the longest pairs out")


def raise_all_too_long(params: Params, what: str) -> None:
    raise SpecError(f"every one of {what} is longer than max_source_length ({params.max_source_length}) or "
                    f"max_target_length ({params.max_target_length}) tokens",
                    path="task.max_source_length" if params.max_source_length is not None
                    else "task.max_target_length")


def build(params: Params, seed: int) -> Seq2SeqData:
    train, notes = read_pairs(params, "path")
    if params.test_path is not None:
        test, counted = read_pairs(params, "test_path")
        notes.update(counted)
    else:
        split = split_examples(train, params.test_share, seed, what=str(params.path))
        train, test = split
        notes.update(split.notes)  # the duplicate sources collapsed before the split (tasks.duplicates)

    def read_validation(_path: str) -> list[Pair]:
        pairs, counted = read_pairs(params, "validation_path")
        notes.update(counted)
        return pairs

    train, validation = validation_examples(params, train, seed, read_validation, what=str(params.path))
    if params.level in subwords.SUBWORD_LEVELS:
        return subword_data(params, train, validation, test, notes)
    data = seq2seq_data(train, test, bucket_width=params.bucket_width, max_vocabulary=params.max_vocabulary,
                        validation=validation)
    data.notes = {"train_pairs": len(train), "validation_pairs": len(validation), "test_pairs": len(test), **notes}
    return data


def learnt_models(params: Params, train: list[Pair]) -> tuple[subwords.SubwordModel, subwords.SubwordModel]:
    """The source's and the target's models, learnt from the training pairs' words only: one per side, or one model
    (the same object twice) from the sources then the targets with `shared_vocabulary`."""
    sources = [" ".join(source) for source, _ in train]
    targets = [" ".join(target) for _, target in train]
    if params.shared_vocabulary:
        shared = subwords.learn(params.level, sources + targets, params.subword_size, TARGET_RESERVED)
        return shared, shared
    return (subwords.learn(params.level, sources, params.subword_size),
            subwords.learn(params.level, targets, params.subword_size, TARGET_RESERVED))


def subword_data(params: Params, train: list[Pair], validation: list[Pair], test: list[Pair],
                 notes: dict[str, int]) -> Seq2SeqData:
    """A subword level: the word pairs of each part cut into pieces by the models the training pairs give, the
    pairs too long in pieces left out part by part; the test targets' words kept to score the outputs with, and
    each side's counts on the test pairs for the data card.

    `params`: sentence_pairs', or another pair task's with `level`, `subword_size`, `shared_vocabulary` and
    `bucket_width` (de_en's), whose pairs are words."""
    source_model, target_model = learnt_models(params, train)
    notes = {key: count for key, count in notes.items()  # the files' words: none left out at read
             if not key.startswith((left_out.TOO_LONG, left_out.READ))}
    parts: dict[str, tuple[list[Pair], list[Pair]]] = {}  # each part's pairs in pieces, and in words
    for name, pairs in (("train", train), ("validation", validation), ("test", test)):
        sources = subwords.word_pieces(source_model, [source for source, _ in pairs])
        targets = subwords.word_pieces(target_model, [target for _, target in pairs])
        kept = [index for index in range(len(pairs)) if not left_out.too_long(params, sources[index], targets[index])]
        notes[left_out.READ + name], notes[left_out.TOO_LONG + name] = len(pairs), len(pairs) - len(kept)
        if pairs and not kept:
            raise_all_too_long(params, f"the {len(pairs)} {name} pairs, counted in pieces,")
        where = f"{params.path}: " if getattr(params, "path", None) else ""
        left_out.check_share(params, f"{where}the {name} pairs", [len(s) for s in sources],
                             [len(t) for t in targets], len(pairs) - len(kept), "pieces")
        parts[name] = ([(sources[i], targets[i]) for i in kept], [pairs[i] for i in kept])
    (train, _), (validation, _), (test, test_words) = parts["train"], parts["validation"], parts["test"]
    check_pairs_size(params, train + validation + test)
    data = seq2seq_data(train, test, bucket_width=params.bucket_width, validation=validation,
                        vocabularies=(source_model.vocabulary, target_model.vocabulary))
    data.reference_words = [target for _, target in test_words]
    data.subword_level = params.level
    data.subwords = subwords.Subwords(source_model, [
        subwords.counted(side, model, [len(pair[column]) for pair in test_words], [pair[column] for pair in test])
        for side, model, column in (("source", source_model, 0), ("target", target_model, 1))
    ], shared=params.shared_vocabulary)
    data.notes = {"train_pairs": len(train), "validation_pairs": len(validation), "test_pairs": len(test), **notes}
    return data
