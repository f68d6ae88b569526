"""How numbers are written in tables and verdicts.

`format_number` writes one number (verdicts, compare, tuning). A table's cells
follow `cell_texts`, one rule per table (per metric, where a table's columns are
metrics), so that a column of cells reads at one precision:

- a cell with a spread (two or more seeds that differ): the standard deviation
  to `SPREAD_DIGITS` significant digits and the mean to the same decimal place,
  `0.738 ± 0.012`: the last digit of the mean is the one its spread supports;
- a cell without a spread (one seed, or seeds that agree) in a table where other
  cells have one: the finest decimal place of those cells, so that it reads on
  their scale;
- a table where no cell has a spread: `SIGNIFICANT` significant digits for every
  cell, trailing zeros kept (`0.88080`), whole numbers whole (`15268`, a count
  of parameters);
- scientific notation where fixed decimals would be unreadable: a magnitude
  under `SMALL` or from `LARGE` on (`3.3029e-06`, `(mean) ± 1.2e-07`).

Seeds that agree (to float rounding) show `± 0`, so that a cell over seeds stays told apart from a
cell of one seed. A cell of text values shows the distinct texts.

How many runs a cell holds (`runs_per_cell`): when its table's cells hold different
numbers (a decoder added to one run beside a mean over two seeds), each cell says its
own after its text, `0.83 ± 0.02 (n=2)`, `0.80 (n=1)` (`counted`); when they hold the
same number, the table says it once, below it (`tables.runs_note`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import pandas as pd

SIGNIFICANT = 5  # a table without any spread: enough for the lesson's 0.99995
SPREAD_DIGITS = 2  # a standard deviation over a few seeds is itself uncertain to about a digit
SMALL, LARGE = 1e-3, 1e6  # fixed decimals between these magnitudes, scientific notation outside
WHOLE_UP_TO = 1e15  # a whole number is written whole below this (a float holds every integer up to 2**53)
FLOAT_NOISE = 1e-9  # seeds whose values differ by less than this share of the mean agree, to float rounding


def format_number(value: float) -> str:
    """Five significant digits: enough for the lesson's 0.99995, short for everything else."""
    if value == 0 or (1e-3 <= abs(value) < 1e5):
        return f"{value:.5g}"
    return f"{value:.2e}"


@dataclass(frozen=True)
class CellNumbers:
    """One cell's values over seeds: their mean, standard deviation (ddof 1) and count; or its texts."""

    mean: float = math.nan
    std: float = math.nan
    n: int = 0
    texts: str = ""

    @property
    def has_spread(self) -> bool:
        return self.n >= 2 and math.isfinite(self.std) and self.std > abs(self.mean) * FLOAT_NOISE


def cell_numbers(values: pd.Series) -> CellNumbers:
    """A cell's numbers; a text value counts as missing, and a cell of texts only keeps them."""
    numbers = pd.to_numeric(values, errors="coerce").dropna()
    if numbers.empty:
        texts = sorted(set(values.dropna().astype(str)))
        return CellNumbers(texts=" / ".join(texts))
    std = float(numbers.std(ddof=1)) if len(numbers) > 1 else math.nan
    return CellNumbers(float(numbers.mean()), std, len(numbers))


def cell_texts(cells: list[CellNumbers]) -> list[str]:
    """The cells of one table (or one metric's column of it) as texts, by the module's rule."""
    spread = [_spread_decimals(cell.std) for cell in cells if cell.has_spread and not _scientific(cell)]
    finest = max(spread) if spread else None
    return [_text(cell, finest) for cell in cells]


def runs_per_cell(cells: list[CellNumbers]) -> int | None:
    """The number of values (runs) that every cell of a table holds, or None when they differ; cells without a
    number (empty, or texts) are left out, and a table of none is None too."""
    counts = {cell.n for cell in cells if cell.n > 0}
    return counts.pop() if len(counts) == 1 else None


def counted(text: str, cell: CellNumbers) -> str:
    """A cell's text with how many values it holds, `0.80 (n=1)`, in a table whose cells hold different numbers."""
    return f"{text} (n={cell.n})" if cell.n > 0 else text


def mean_std(values: pd.Series) -> str:
    """One cell alone, as a table of one cell writes it: '0.973 ± 0.0040' over seeds, one value by itself."""
    return cell_texts([cell_numbers(values)])[0]


def _text(cell: CellNumbers, finest: int | None) -> str:
    if cell.n == 0:
        return cell.texts
    if cell.has_spread:
        return _with_spread(cell.mean, cell.std)
    value = _fixed(cell.mean, finest) if finest is not None and not _scientific(cell) else significant(cell.mean)
    return f"{value} ± 0" if cell.n >= 2 else value


def _scientific(cell: CellNumbers) -> bool:
    magnitude = max(abs(cell.mean), cell.std if cell.has_spread else 0.0)
    return not math.isfinite(magnitude) or (magnitude != 0 and not SMALL <= magnitude < LARGE)


def _spread_decimals(std: float) -> int:
    """The decimal place of `std`'s last significant digit, once rounded to SPREAD_DIGITS digits (may be ≤ 0)."""
    decimals = SPREAD_DIGITS - 1 - math.floor(math.log10(std))
    rounded = round(std, decimals)
    return SPREAD_DIGITS - 1 - math.floor(math.log10(rounded))  # 0.0996 rounds to 0.10: one place fewer


def _fixed(value: float, decimals: int) -> str:
    """`value` rounded to `decimals` places (to tens, hundreds … when negative), without a '-0'."""
    rounded = round(value, decimals)
    text = f"{rounded:.{max(decimals, 0)}f}"
    return text[1:] if text.startswith("-") and float(text) == 0 else text


def _with_spread(mean: float, std: float) -> str:
    """'0.738 ± 0.012': the std to SPREAD_DIGITS significant digits, the mean to its last decimal place."""
    decimals = _spread_decimals(std)
    cell = CellNumbers(mean, std, 2)
    if not _scientific(cell):
        return f"{_fixed(mean, decimals)} ± {_fixed(std, decimals)}"
    # Scientific: the mean's significant digits reach down to the spread's last digit.
    shown = f"{std:.{SPREAD_DIGITS - 1}e}"
    exponent = math.floor(math.log10(abs(mean))) if mean != 0 else -decimals
    digits = max(exponent + decimals + 1, 1)
    return f"{mean:.{digits - 1}e} ± {shown}"


def significant(value: float) -> str:
    """SIGNIFICANT significant digits, trailing zeros kept; a whole number whole; scientific outside SMALL–LARGE."""
    if not math.isfinite(value):
        return str(value)
    if value.is_integer() and abs(value) < WHOLE_UP_TO:
        return str(int(value))
    if value != 0 and not SMALL <= abs(value) < LARGE:
        return f"{value:.{SIGNIFICANT - 1}e}"
    decimals = SIGNIFICANT - 1 - math.floor(math.log10(abs(value)))
    return _fixed(value, max(decimals, 0))
