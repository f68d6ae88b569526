"""What a seq2seq task hands to the model: source/target pairs as padded arrays.

For teacher forcing the decoder reads the target shifted right behind a start
token and predicts it followed by an end token:

    target          2 0 2 4 - 0 1 - 3 1
    decoder_input   <s> 2 0 2 4 - 0 1 - 3 1
    y (predicted)   2 0 2 4 - 0 1 - 3 1 </s>

Source and target have vocabularies of their own (the source needs no start or
end token). The test pairs are also kept as token lists, so BLEU and exact match
compare with the real reference even where the target vocabulary maps a word to
<unk>. A task whose tokens are subword pieces (sentence_pairs' subword levels)
also keeps each test target's words, and its outputs are scored as the words their
pieces spell (`Seq2SeqData.words`: the level's `tasks.subwords.join_pieces`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pydantic import Field, model_validator

from seqkeras.problems.seq2seq import END, START  # noqa: F401  (the target vocabulary reserves them)
from seqkeras.tasks.base import PAD, SEQ2SEQ, UNK, SequenceData, SizeParams, Vocabulary, pad
from seqkeras.tasks.input_rules import CHARACTER_TOKENS, InputRule
from seqkeras.tasks.limits import check_vocabulary_entries
from seqkeras.tasks.subwords import join_pieces

Pair = tuple[list[str], list[str]]  # (source tokens, target tokens)


BUCKET_WIDTH_HELP = (
    "Source lengths per bucket of the per-length breakdown (by_length.csv and the "
    "<metric>_len_<lo>_<hi> metrics): buckets are 1..w, w+1..2w, ..."
)


class LengthRangeParams(SizeParams):
    """The parameters every synthetic seq2seq task shares: sizes, a source length range, buckets."""

    min_length: int = Field(1, ge=1, le=10_000, description="Shortest source sequence.")
    max_length: int = Field(20, ge=1, le=10_000, description="Longest source sequence.")
    bucket_width: int = Field(10, ge=1, le=10_000, description=BUCKET_WIDTH_HELP)

    def tokens_per_example(self) -> int:
        return 3 * (self.max_length + 1)  # source, decoder input and target, each with its end token

    @model_validator(mode="after")
    def _range_not_empty(self):
        if self.min_length > self.max_length:
            raise ValueError(f"min_length {self.min_length} is larger than max_length {self.max_length}")
        return self

    def input_rule(self, data: SequenceData) -> InputRule:
        return CHARACTER_TOKENS  # a source is its characters, one token each, as generated


@dataclass
class Seq2SeqData(SequenceData):
    """Seq2seq arrays; `labels` is the target vocabulary (with <s> and </s>), so `num_outputs` is its size.

    x_*: {"source": [N, S], "decoder_input": [N, T]}; y_*: [N, T] (0 = padding).
    """

    test_pairs: list[Pair] = field(default_factory=list)
    bucket_width: int = 10
    # Tokens that are subword pieces: their level (tasks.subwords, which joins them into words), and each test
    # target's words, which the outputs' words are scored against; None for tokens that are words or characters.
    subword_level: str | None = None
    reference_words: list[list[str]] | None = None

    def words(self, tokens: list[str]) -> list[str]:
        """Target tokens as the metrics and outputs.csv read them: the words that pieces spell, else the tokens."""
        return join_pieces(tokens, self.subword_level) if self.subword_level else list(tokens)

    @property
    def references(self) -> list[list[str]]:
        """Each test target as its output is scored against: its words at a subword level, else its tokens."""
        if self.reference_words is not None:
            return [list(words) for words in self.reference_words]
        return [list(target) for _, target in self.test_pairs]

    @property
    def target_vocabulary(self) -> Vocabulary:
        return self.labels

    @property
    def start_id(self) -> int:
        return self.labels.index[START]

    @property
    def end_id(self) -> int:
        return self.labels.index[END]

    @property
    def longest_train_target(self) -> int:
        """Tokens of the longest training target, the end token included."""
        return int((self.y_train != 0).sum(axis=1).max())


def seq2seq_data(
    train: list[Pair], test: list[Pair], *, bucket_width: int = 10, max_vocabulary: int | None = None,
    validation: list[Pair] = (), vocabularies: tuple[Vocabulary, Vocabulary] | None = None,
) -> Seq2SeqData:
    """From (source tokens, target tokens) pairs; vocabularies come from the training pairs only.

    `max_vocabulary` keeps that many of the most frequent tokens per side (the
    rest become <unk>); None keeps every token seen in training. `validation` (a
    file task's own, tasks.validation) becomes x_validation / y_validation, encoded
    as the test pairs are. `vocabularies` (source, target) are a task's own, learnt
    from its training pairs (a subword level's; one object for both sides when they
    share it); the target's holds <s> and </s>.
    """
    validation = list(validation)
    if vocabularies is not None:
        source_vocabulary, target_vocabulary = vocabularies
    else:
        source_vocabulary = _vocabulary((source for source, _ in train), (PAD, UNK), max_vocabulary)
        target_vocabulary = _vocabulary((target for _, target in train), (PAD, UNK, START, END), max_vocabulary)
        check_vocabulary_entries(len(source_vocabulary), "the source vocabulary", "task.max_vocabulary")
        check_vocabulary_entries(len(target_vocabulary), "the target vocabulary", "task.max_vocabulary",
                                 predicted=True)
    start, end = target_vocabulary.index[START], target_vocabulary.index[END]

    def arrays(pairs: list[Pair], source_length: int, target_length: int):
        targets = [target_vocabulary.encode(target) for _, target in pairs]
        x = {
            "source": pad([source_vocabulary.encode(source) for source, _ in pairs], source_length),
            "decoder_input": pad([[start] + target for target in targets], target_length),
        }
        return x, pad([target + [end] for target in targets], target_length)

    source_length = max(len(source) for source, _ in train + test + validation)
    target_length = max(len(target) for _, target in train + test + validation) + 1
    x_train, y_train = arrays(train, source_length, target_length)
    x_test, y_test = arrays(test, source_length, target_length)
    x_validation, y_validation = arrays(validation, source_length, target_length) if validation else (None, None)
    return Seq2SeqData(
        problem=SEQ2SEQ,
        x_train=x_train,
        y_train=y_train,
        x_test=x_test,
        y_test=y_test,
        vocabulary=source_vocabulary,
        labels=target_vocabulary,
        test_pairs=[(list(source), list(target)) for source, target in test],
        bucket_width=bucket_width,
        x_validation=x_validation,
        y_validation=y_validation,
    )


def _vocabulary(sequences, reserved: tuple[str, ...], limit: int | None) -> Vocabulary:
    if limit is None:
        return Vocabulary.build(sequences, reserved=reserved)
    counts: dict[str, int] = {}
    for sequence in sequences:
        for token in sequence:
            counts[token] = counts.get(token, 0) + 1
    # Most frequent first; ties broken alphabetically so the vocabulary is stable.
    kept = sorted((t for t in counts if t not in reserved), key=lambda t: (-counts[t], t))[:limit]
    return Vocabulary(list(reserved) + sorted(kept))
