"""A task's input rule: how a text becomes the tokens its data was made of, for a kept model to read new text.

Every task declares it, as a method of its Params: `input_rule(self, data) -> InputRule`, given the data its
`build` made (a regression task reads its feature count from it). A kept model's `preprocessing.json` holds
the rule as its `input` (seqkeras.kept.preprocessing, which documents each field), and `seqkeras predict`
tokenizes as it says. A task entry whose Params declare none is refused when it is made (`registry.Task`),
so no task falls back to a rule it never stated.

Plain pydantic, no Keras and nothing of seqkeras.kept: every task module imports it (the subword levels' catalog
imports each level's library only when it learns or splits).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

from seqkeras.tasks import subword_levels

if TYPE_CHECKING:
    from seqkeras.tasks.base import SequenceData

VOCABULARY_FILE = "vocabulary.json"  # the run folder's input vocabulary, which a kept model's ids index
# The subword levels (tasks.subword_levels), each a split of its own: a kept model cuts words into that level's pieces.
SUBWORD_SPLITS = subword_levels.NAMES
# The name of a file of the run folder, as preprocessing.json names one: a file name's length at most, on one line
# (where it is read, results.files refuses one that leaves the folder or crosses a link).
FileName = Annotated[str, StringConstraints(max_length=255, pattern=r"^[^\x00-\x1f\x7f]*$")]


class InputRule(BaseModel):
    """preprocessing.json's `input` (its fields are told in seqkeras.kept.preprocessing); the field order is the
    file's, so the files written stay byte for byte what they were."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    vocabulary: FileName | None = VOCABULARY_FILE
    split: Literal[("whitespace", "characters", "pattern", *SUBWORD_SPLITS, "features")]
    lowercase: Literal["none", "ascii", "unicode"] = "none"
    strip_punctuation: bool = False
    pattern: str | None = None
    max_length: int | None = None
    features: int | None = None
    # Added with the bpe and sentencepiece levels: the run folder's file of the learnt subword model. Last, and
    # written only when set (kept.preprocessing), so the files of the other levels stay byte for byte what they were.
    tokenizer: FileName | None = None
    # Added after them: the hex SHA-256 of that file as the run kept it (tasks.tokenizer_checks), written only when
    # set; a folder kept before has none.
    tokenizer_sha256: str | None = Field(None, pattern=r"^[0-9a-f]{64}$")


class DeclaresInputRule(Protocol):
    """What a task's Params provide: the rule for the data `build` made from them."""

    def input_rule(self, data: SequenceData) -> InputRule: ...


# The synthetic tasks' texts are their generated tokens separated by spaces (Keras TextVectorization's split).
WHITESPACE_TOKENS = InputRule(split="whitespace")
# One token per character, as written (char_lm; the synthetic seq2seq tasks).
CHARACTER_TOKENS = InputRule(split="characters")


def words_pieces_or_characters(level: str, word_pattern: str, lowercase: bool,
                               tokenizer: str | None = None) -> InputRule:
    """The rule of a task whose `level` tokens are the matches of `word_pattern` (`word`), subword pieces of
    those words (a level of SUBWORD_SPLITS, whose learnt model is the run folder's file `tokenizer`, if it keeps
    one) or characters (`char`), after Python's str.lower when `lowercase` (lm_corpus, sentence_pairs)."""
    case = "unicode" if lowercase else "none"
    if level == "word":
        return InputRule(split="pattern", pattern=word_pattern, lowercase=case)
    if level in SUBWORD_SPLITS:  # the words first, then their pieces
        return InputRule(split=level, pattern=word_pattern, lowercase=case, tokenizer=tokenizer)
    return InputRule(split="characters", lowercase=case)
