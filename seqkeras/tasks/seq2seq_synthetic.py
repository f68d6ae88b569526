"""Synthetic seq2seq tasks, one token per character, seeded.

- reverse:  "dbca" → "acbd"        the first target token depends on the last source token
- copy:     "dbca" → "dbca"        the first target token depends on the first source token,
                                   the hardest case for a bottleneck read left to right
- sort:     "dbca" → "abcd"        needs the whole source before the first output
- addition: "123+45" → "168"       operands of min_length..max_length digits
- dates:    "Tuesday, 3 March 1998", "03/03/1998", "3rd of March 1998", ... → "1998-03-03"

Each draws the source length uniformly from [min_length, max_length] (addition:
the digits of each operand; dates: only formats whose text fits the range), the
test pairs separately from the training pairs.

addition's options write the Keras `addition_rnn` example's data exactly (all
off by default, so runs from before them keep their data and ids):

- operand_draw digit_strings: each operand is a string of k random digits, k
  uniform in [1, max_length], read as a number ("007" is 7: small numbers come
  up more often than under by_digits, which draws a digit count, then a value
  with exactly that many digits);
- distinct: every question once across the training and test pairs together,
  a+b and b+a being one question (the example's `tuple(sorted((a, b)))`); the
  questions are drawn until n_train + n_test distinct ones are found, shuffled
  (later draws, the ones not rejected, lean to rare large numbers, which the
  example's shuffle evens out too), then the first n_train train and the rest
  test, so no test question was seen in training;
- pad_with_spaces: the source padded on the right with spaces to
  2·max_length + 1 characters, the target to max_length + 1: the space is a
  token the model reads and writes (outputs.csv shows it as ␣);
- reverse_source: the source's characters reversed, after the padding
  (`query[::-1]`: the padding spaces come first).

A kept model (`seqkeras predict`) reads a text as given, one token per
character: with these options, give it the question as the data holds it
(padded and reversed: " 54+321" for 123+45 at max_length 3). BLEU and chrF
read the space-joined tokens, so they do not see space tokens; exact_match and
position_accuracy do.
"""

from __future__ import annotations

import datetime as dt
import string
from collections.abc import Callable
from typing import ClassVar, Literal

import numpy as np
from pydantic import Field, model_validator

from seqkeras.errors import SpecError
from seqkeras.tasks.seq2seq_data import LengthRangeParams, Pair, Seq2SeqData, seq2seq_data


class SymbolParams(LengthRangeParams):
    symbols: int = Field(
        10, ge=2, le=26, description="Alphabet size: the source uses the first `symbols` letters a, b, c, ..."
    )


OperandDraw = Literal["by_digits", "digit_strings"]


class AdditionParams(LengthRangeParams):
    min_length: int = Field(1, ge=1, le=18, description="Fewest digits of each operand (operand_draw "
                                                        "digit_strings: must be 1).")
    max_length: int = Field(3, ge=1, le=18, description="Most digits of each operand.")
    operand_draw: OperandDraw = Field(
        "by_digits",
        description="How an operand is drawn: by_digits, a digit count uniform in [min_length, max_length], then a "
                    "value with exactly that many digits; digit_strings (the Keras addition_rnn example's), a string "
                    "of k random digits, k uniform in [1, max_length], read as a number ('007' is 7).")
    distinct: bool = Field(
        False,
        description="Every question once across the training and test pairs together (a+b and b+a are one "
                    "question, as the Keras example's sorted key), so no test question was seen in training; "
                    "n_train + n_test must not exceed the distinct questions the draw can make.")
    pad_with_spaces: bool = Field(
        False,
        description="Pad the source on the right with spaces to 2·max_length + 1 characters and the target to "
                    "max_length + 1 (the Keras example's fixed width): the space is a token read and written.")
    reverse_source: bool = Field(
        False,
        description="The source's characters in reverse order, after padding (the Keras example's REVERSE: "
                    "the padding spaces come first).")

    # Added after results existed: a spec without them keeps its runs' ids (registry.Params.hashed).
    hashed_only_when_set: ClassVar[tuple[str, ...]] = ("operand_draw", "distinct", "pad_with_spaces",
                                                       "reverse_source")

    def tokens_per_example(self) -> int:
        # The source is two operands and '+' (2·max_length + 1 characters), not the one length range of the
        # other synthetic tasks; the decoder input and the target hold the sum (max_length + 1) and <s> or </s>.
        return (2 * self.max_length + 1) + 2 * (self.max_length + 2)

    @model_validator(mode="after")
    def _digit_strings_start_at_one_digit(self) -> "AdditionParams":
        if self.operand_draw == "digit_strings" and self.min_length != 1:
            raise ValueError(f"operand_draw digit_strings draws 1 to max_length digits, as the Keras example: "
                             f"min_length must be 1, not {self.min_length}")
        return self

    @model_validator(mode="after")
    def _enough_distinct_questions(self) -> "AdditionParams":
        # Checked here, not in build: drawing until n_train + n_test distinct questions are found would never end.
        if self.distinct and self.n_train + self.n_test > (available := distinct_questions(self)):
            raise SpecError(
                f"distinct: n_train + n_test = {self.n_train + self.n_test:,} questions, but operands of "
                f"{self.min_length} to {self.max_length} digits ({self.operand_draw}) make only {available:,} "
                "distinct ones (a+b and b+a counted once): lower n_train or n_test, or raise max_length",
                path="task.n_train",
            )
        return self


def distinct_operands(params: AdditionParams) -> int:
    """How many different operands the draw can give: every value of min_length to max_length digits
    (by_digits, 0 counting as a one-digit value), or 0 to 10**max_length − 1 (digit_strings)."""
    lowest = 0 if params.operand_draw == "digit_strings" or params.min_length == 1 else 10 ** (params.min_length - 1)
    return 10**params.max_length - lowest


def distinct_questions(params: AdditionParams) -> int:
    """The questions a+b the draw can give, a+b and b+a counted once: unordered pairs of operands, a = b included."""
    values = distinct_operands(params)
    return values * (values + 1) // 2


class DatesParams(LengthRangeParams):
    min_length: int = Field(1, ge=1, le=10_000, description="Shortest source text (characters).")
    max_length: int = Field(40, ge=1, le=10_000, description="Longest source text (characters).")
    first_year: int = Field(1900, ge=1, le=9999, description="Earliest year drawn.")
    last_year: int = Field(2099, ge=1, le=9999, description="Latest year drawn.")

    @model_validator(mode="after")
    def _years_in_order(self) -> "DatesParams":
        if self.first_year > self.last_year:
            raise ValueError(f"first_year {self.first_year} is after last_year {self.last_year}")
        return self


def _symbol_data(params: SymbolParams, seed: int, transform: Callable[[list[str]], list[str]]) -> Seq2SeqData:
    rng = np.random.default_rng(seed)
    alphabet = list(string.ascii_lowercase[: params.symbols])

    def pairs(count: int) -> list[Pair]:
        lengths = rng.integers(params.min_length, params.max_length + 1, size=count)
        sources = [list(rng.choice(alphabet, size=length)) for length in lengths]
        return [(source, transform(source)) for source in sources]

    train = pairs(params.n_train)
    return seq2seq_data(train, pairs(params.n_test), bucket_width=params.bucket_width)


# Module-level functions, not closures: the catalog names them directly, and a run sent to a worker process
# (--jobs) is pickled with its task's builder, which pickles by its qualified name.
def build_reverse(params: SymbolParams, seed: int) -> Seq2SeqData:
    return _symbol_data(params, seed, lambda source: source[::-1])


def build_copy(params: SymbolParams, seed: int) -> Seq2SeqData:
    return _symbol_data(params, seed, lambda source: list(source))


def build_sort(params: SymbolParams, seed: int) -> Seq2SeqData:
    return _symbol_data(params, seed, sorted)


def build_addition(params: AdditionParams, seed: int) -> Seq2SeqData:
    rng = np.random.default_rng(seed)
    if params.distinct:
        questions = distinct_operand_pairs(params, rng, params.n_train + params.n_test)
        train_questions, test_questions = questions[: params.n_train], questions[params.n_train :]
    else:
        # Train first, then test, from one stream: the order the draws had before the options existed.
        train_questions = operand_pairs(params, rng, params.n_train)
        test_questions = operand_pairs(params, rng, params.n_test)
    train = [addition_pair(params, a, b) for a, b in train_questions]
    test = [addition_pair(params, a, b) for a, b in test_questions]
    return seq2seq_data(train, test, bucket_width=params.bucket_width)


def draw_operands(params: AdditionParams, rng: np.random.Generator, count: int) -> list[int]:
    """`count` operands, one after another from `rng`, as `operand_draw` says."""
    if params.operand_draw == "digit_strings":
        return digit_string_operands(rng, count, params.max_length)
    return by_digits_operands(rng, count, params.min_length, params.max_length)


def by_digits_operands(rng: np.random.Generator, count: int, min_digits: int, max_digits: int) -> list[int]:
    """A digit count uniform in [min_digits, max_digits], then a value with exactly that many digits (0 is a
    one-digit value). Two draws per operand, one at a time: the stream of the runs made before digit_strings."""
    values = []
    for _ in range(count):
        digits = int(rng.integers(min_digits, max_digits + 1))
        low = 0 if digits == 1 else 10 ** (digits - 1)
        values.append(int(rng.integers(low, 10**digits)))
    return values


def digit_string_operands(rng: np.random.Generator, count: int, max_digits: int) -> list[int]:
    """The Keras example's operand: k random digits, k uniform in [1, max_digits], read as a number (leading
    zeros allowed). Drawn as max_digits digits, of which the first k are read: the number they spell,
    integer-divided by 10**(max_digits − k)."""
    lengths = rng.integers(1, max_digits + 1, size=count)
    digits = rng.integers(0, 10, size=(count, max_digits), dtype=np.int64)
    whole = digits @ (10 ** np.arange(max_digits - 1, -1, -1, dtype=np.int64))  # < 10**18: fits int64
    return (whole // 10 ** (max_digits - lengths)).tolist()


def operand_pairs(params: AdditionParams, rng: np.random.Generator, count: int) -> list[tuple[int, int]]:
    """`count` questions (a, b), drawn a, b, a, b, ..."""
    operands = draw_operands(params, rng, 2 * count)
    return list(zip(operands[0::2], operands[1::2]))


def distinct_operand_pairs(params: AdditionParams, rng: np.random.Generator, count: int) -> list[tuple[int, int]]:
    """`count` questions, no two alike under the Keras example's key `tuple(sorted((a, b)))`, in random order.

    Drawing questions and keeping each key's first is the example's loop (`if key in seen: continue`), done a
    batch at a time. Kept in draw order, the late questions would be the rare ones (large numbers, once the
    common ones are seen): the shuffle, as the example's before its split, gives the test pairs the
    training pairs' mix. The params' validator has checked that `count` distinct questions exist.
    """
    seen: set[tuple[int, int]] = set()
    questions: list[tuple[int, int]] = []
    while len(questions) < count:
        for a, b in operand_pairs(params, rng, max(count - len(questions), 1_000)):
            key = (min(a, b), max(a, b))
            if key not in seen and len(questions) < count:
                seen.add(key)
                questions.append((a, b))
    return [questions[i] for i in rng.permutation(count)]


def addition_pair(params: AdditionParams, a: int, b: int) -> Pair:
    """The question "a+b" and its answer, as characters: padded with spaces to the example's fixed widths and
    the source reversed, when the params say so."""
    source, target = f"{a}+{b}", str(a + b)
    if params.pad_with_spaces:
        source = source.ljust(2 * params.max_length + 1)
        target = target.ljust(params.max_length + 1)
    if params.reverse_source:
        source = source[::-1]
    return list(source), list(target)


# English names, not strftime's %B/%A, which follow the process locale.
MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September",
          "October", "November", "December"]
WEEKDAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]


def ordinal(day: int) -> str:
    suffix = "th" if 11 <= day % 100 <= 13 else {1: "st", 2: "nd", 3: "rd"}.get(day % 10, "th")
    return f"{day}{suffix}"


DATE_FORMATS: list[Callable[[dt.date], str]] = [
    lambda d: f"{d.day} {MONTHS[d.month - 1]} {d.year}",
    lambda d: f"{MONTHS[d.month - 1]} {d.day}, {d.year}",
    lambda d: f"{d.day} {MONTHS[d.month - 1][:3]} {d.year}",
    lambda d: f"{MONTHS[d.month - 1][:3]} {d.day} {d.year}",
    lambda d: f"{WEEKDAYS[d.weekday()]}, {d.day} {MONTHS[d.month - 1]} {d.year}",
    lambda d: f"{WEEKDAYS[d.weekday()][:3]} {MONTHS[d.month - 1][:3]} {d.day} {d.year}",
    lambda d: f"{ordinal(d.day)} of {MONTHS[d.month - 1]} {d.year}",
    lambda d: f"{MONTHS[d.month - 1]} {ordinal(d.day)}, {d.year}",
    lambda d: f"{d.day:02d}.{d.month:02d}.{d.year}",
    lambda d: f"{d.day}.{d.month}.{d.year}",
    lambda d: f"{d.month:02d}/{d.day:02d}/{d.year}",
    lambda d: f"{d.year}/{d.month:02d}/{d.day:02d}",
    lambda d: f"{d.day:02d}-{MONTHS[d.month - 1][:3].upper()}-{d.year}",
    lambda d: f"{MONTHS[d.month - 1].lower()} {d.day} {d.year}",
]


def build_dates(params: DatesParams, seed: int) -> Seq2SeqData:
    rng = np.random.default_rng(seed)
    first = dt.date(params.first_year, 1, 1).toordinal()
    last = dt.date(params.last_year, 12, 31).toordinal()
    # Every day of the first and last year shows every length a format can give.
    sample_days = [dt.date.fromordinal(day) for year in {params.first_year, params.last_year}
                   for day in range(dt.date(year, 1, 1).toordinal(), dt.date(year, 12, 31).toordinal() + 1)]
    lengths = {len(text(day)) for text in DATE_FORMATS for day in sample_days}
    if not any(params.min_length <= length <= params.max_length for length in lengths):
        raise SpecError(
            f"no date format gives a text of {params.min_length} to {params.max_length} characters "
            f"(they have {min(lengths)} to {max(lengths)})",
            path="task.max_length",
        )

    def pairs(count: int) -> list[Pair]:
        result: list[Pair] = []
        while len(result) < count:
            date = dt.date.fromordinal(int(rng.integers(first, last + 1)))
            text = DATE_FORMATS[int(rng.integers(len(DATE_FORMATS)))](date)
            if params.min_length <= len(text) <= params.max_length:
                result.append((list(text), list(date.isoformat())))
        return result

    train = pairs(params.n_train)
    return seq2seq_data(train, pairs(params.n_test), bucket_width=params.bucket_width)
