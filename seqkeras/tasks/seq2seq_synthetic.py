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
"""

from __future__ import annotations

import datetime as dt
import string
from collections.abc import Callable

import numpy as np
from pydantic import Field, model_validator

from seqkeras.errors import SpecError
from seqkeras.tasks.seq2seq_data import LengthRangeParams, Pair, Seq2SeqData, seq2seq_data


class SymbolParams(LengthRangeParams):
    symbols: int = Field(
        10, ge=2, le=26, description="Alphabet size: the source uses the first `symbols` letters a, b, c, ..."
    )


class AdditionParams(LengthRangeParams):
    min_length: int = Field(1, ge=1, le=18, description="Fewest digits of each operand.")
    max_length: int = Field(3, ge=1, le=18, description="Most digits of each operand.")


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

    def operand() -> int:
        digits = int(rng.integers(params.min_length, params.max_length + 1))
        low = 0 if digits == 1 else 10 ** (digits - 1)
        return int(rng.integers(low, 10**digits))

    def pairs(count: int) -> list[Pair]:
        result = []
        for _ in range(count):
            a, b = operand(), operand()
            result.append((list(f"{a}+{b}"), list(str(a + b))))
        return result

    train = pairs(params.n_train)
    return seq2seq_data(train, pairs(params.n_test), bucket_width=params.bucket_width)


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
