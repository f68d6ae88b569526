"""How large a user's data may grow: the sizes that follow the input, not the spec, each with its limit.

A file task pads every example to its part's longest, so one huge line makes
every row huge (a 1,000,000-character sentence pair made `run` pad and train on
million-token rows, at gigabytes, for minutes); and a classifier's outputs and
its confusion matrix grow with the square of its classes (10,000 classes wrote a
190 MiB confusion.csv). The limits below are far above real data and far below
what breaks a machine. Each but the vocabularies' is checked while the files are
read when the spec is validated (`seqkeras validate`, and `seqkeras run` before any training): a file
over one is refused with one line naming the file, the line (or the count), and
the limit. Nothing is truncated silently: a text over the limit is a mistake to
point at (a missing newline or quote, a file that is not one example per line).

MAX_TEXT_CHARACTERS
    Characters in one text: a text classification row's text, one side of a
    sentence pair. 100,000 characters is some 15,000 words, a long chapter; the
    longest review in IMDB's 50,000 has under 14,000 characters, a Tatoeba
    sentence a few hundred. (`max_length`, `max_source_length` and
    `max_target_length` count tokens and apply after a text is read and
    tokenized: they do not lift this limit.)
MAX_SENTENCE_TOKENS
    Tokens (lines) in one sentence of a CoNLL file: 10,000. Real sentences have
    tens; a file without the blank lines between its sentences is one sentence
    of every token.
MAX_DATA_TOKENS (tasks.base's, the bound on generated data too)
    Token ids in a task's examples once padded: the examples of all its files
    times the longest (at most `max_length` at text classification; sources plus
    decoder inputs plus targets at sentence_pairs, the pairs over
    `max_source_length` or `max_target_length` left out): 5·10⁸, 2 GB as int32.
    A sentence-pair file is counted in its tokens (words at a subword level, whose
    pieces are counted again once learnt, before anything is padded), a text
    classification file in its texts' words (whitespace-separated, at least the
    tokens at level word) or characters (level char), and again in pieces at a
    subword level once the model is learnt; a CoNLL file in its tokens. (The
    language models cut their text into windows of `context` or `seq_length`
    tokens: nothing there is padded to a longest line.)
MAX_VOCABULARY, MAX_OUTPUT_VOCABULARY
    Entries of a vocabulary learnt from the training files, checked once it is
    learnt, before anything is padded or a model built (`seqkeras run`; `validate`
    does not tokenize every file): 1,000,000 for a vocabulary the model reads (its
    embedding), 200,000 for one it predicts (a sentence pair's target, a language
    model's text), whose scores a model computes for every token of every batch
    (32 × 50 tokens × 200,000 is 1.3 GB of float32). Real word vocabularies with
    `min_count` 2 have tens of thousands of words; `max_tokens` (text tasks) and
    `max_vocabulary` (sentence_pairs, lm_corpus) keep the most frequent; char_lm's
    vocabulary is its text's characters (real text has a few thousand).
MAX_CLASSES
    Distinct classes of a text classification task over its files, and distinct
    tags of a tagging file: 1,000. Topic and intent data sets have tens to a few
    hundred; the confusion matrix (confusion.csv) then has at most a million
    cells, a few MB.
"""

from __future__ import annotations

from pathlib import Path

from seqkeras.errors import SpecError
from seqkeras.tasks.base import MAX_DATA_TOKENS

MAX_TEXT_CHARACTERS = 100_000
MAX_SENTENCE_TOKENS = 10_000
MAX_CLASSES = 1_000
MAX_VOCABULARY = 1_000_000
MAX_OUTPUT_VOCABULARY = 200_000


def check_text_length(path: str | Path, line: int, what: str, text: str, key: str) -> None:
    """Refuse a text (`what`: "the text", "the source", ...) of more than MAX_TEXT_CHARACTERS characters."""
    if len(text) > MAX_TEXT_CHARACTERS:
        raise SpecError(f"{path}, line {line}: {what} has {len(text):,} characters, over the limit of "
                        f"{MAX_TEXT_CHARACTERS:,} a text may have (is a newline or a closing quote missing?)",
                        path=key)


def check_sentence_length(path: str | Path, line: int, tokens: int, key: str) -> None:
    """Refuse a CoNLL sentence that reaches `line` with more than MAX_SENTENCE_TOKENS tokens."""
    if tokens > MAX_SENTENCE_TOKENS:
        raise SpecError(f"{path}, line {line}: the sentence has more than {MAX_SENTENCE_TOKENS:,} tokens, the limit "
                        "(is the blank line between sentences missing?)", path=key)


def check_class_count(path: str | Path, count: int, what: str, key: str, line: int | None = None) -> None:
    """Refuse more than MAX_CLASSES distinct classes (`what`: "classes", "tags"); `line`: the line where the
    count passes the limit, when it is counted while a file is read."""
    if count > MAX_CLASSES:
        where, by = (f"{path}, line {line}", " by this line") if line is not None else (str(path), "")
        raise SpecError(f"{where}: {count:,} distinct {what}{by}, over the limit of {MAX_CLASSES:,}", path=key)


def check_padded_size(where: str, rows: int, width: int, key: str, advice: str) -> None:
    """Refuse `rows` examples padded to `width` token ids each when they make more than MAX_DATA_TOKENS; `where`
    names the files, `advice` the setting that would shorten them."""
    if rows * width > MAX_DATA_TOKENS:
        raise SpecError(f"{where}: {rows:,} examples padded to the longest, {width:,} token ids each, make "
                        f"{rows * width:,} token ids, over the limit of {MAX_DATA_TOKENS:,} (2 GB); {advice}",
                        path=key)


def check_vocabulary_entries(size: int, what: str, key: str, *, predicted: bool = False, advice: str = "") -> None:
    """Refuse a learnt vocabulary (`what`: "the source vocabulary", ...) over MAX_VOCABULARY entries, or over
    MAX_OUTPUT_VOCABULARY for one the model `predicted`; `key` is the setting that caps it (`advice`: what to do
    where no setting does)."""
    limit = MAX_OUTPUT_VOCABULARY if predicted else MAX_VOCABULARY
    if size > limit:
        advice = advice or f"set {key} to keep the most frequent"
        raise SpecError(f"{what} learnt from the training data has {size:,} entries, over the limit of {limit:,} for "
                        f"a vocabulary the model {'predicts' if predicted else 'reads'}; {advice}", path=key)
