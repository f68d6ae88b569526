"""`table --baseline KEY=VALUE`: which cells of a table differ from their baseline cell beyond chance.

A cell's baseline cell has the same keys (rows and columns of the table) but
KEY = VALUE: with `--baseline model.cell=lstm` and model.cell along the columns,
it is the lstm column's cell in the same row. The seeds of the two cells are
tested with `reporting.significance` (the tests `compare` uses):

- paired t-test over seeds when both cells hold the same seeds, each once;
- otherwise (different seeds, or a `pool`ed key that puts a seed in a cell more
  than once) Welch's unpaired t-test;
- fewer than `MIN_SEEDS_FOR_TEST` pairs (paired) or seeds a side (Welch): too
  few seeds to tell.

Every cell carries its verdict as a mark (`MARKS`), so that no cell is left to
be read as either the baseline or "not shown to differ": `[base]`, `[better]` /
`[worse]` (a difference beyond chance, two-sided p < ALPHA, in the direction the
metric's catalog entry calls better; `[higher]` / `[lower]` for a number with no
better direction, such as train_seconds), `[n.s.]` (not shown to differ), `[?]`
(too few seeds) and `[no base]`. `legend` is the line under a marked table, and
`title_note` what its title adds: the baseline, and when cells had too few seeds
to test, how many they had and how many a test needs. The CSV carries
`p_value`, `test` and `verdict` columns beside each cell's mean, std and n.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import yaml

from seqkeras.errors import SpecError, shown, unknown_choice
from seqkeras.reporting.significance import ALPHA, MIN_SEEDS_FOR_TEST, PAIRED, WELCH, paired_test, welch_test
from seqkeras.results.folder import OK
from seqkeras.spec.outputs import same_value  # a value matches as `where` and `--only` match it
from seqkeras.spec.selection import KEY

OPTION = "--baseline"
# A cell's verdict, as the CSV's `verdict` column writes it, and its mark in the Markdown, terminal and report.
BETTER, WORSE, HIGHER, LOWER, NOT_SHOWN, TOO_FEW, IS_BASELINE, NO_BASELINE, NO_NUMBERS, BEST = (
    "better", "worse", "higher", "lower", "not shown to differ", "too few seeds", "baseline", "no baseline cell",
    "no numbers", "best")
DIFFERING = (BETTER, WORSE, HIGHER, LOWER)
MARKS = {IS_BASELINE: "[base]", BETTER: "[better]", WORSE: "[worse]", HIGHER: "[higher]", LOWER: "[lower]",
         NOT_SHOWN: "[n.s.]", TOO_FEW: "[?]", NO_BASELINE: "[no base]", BEST: "[best]"}  # no numbers: nothing
COLUMNS = ["p_value", "test", "verdict"]  # what --format csv adds per cell


@dataclass(frozen=True)
class Baseline:
    key: str
    value: Any  # read as YAML reads it: 5 is a number, lstm a text, true a boolean

    def __str__(self) -> str:
        return f"{self.key} = {self.value}"


@dataclass(frozen=True)
class CellTest:
    verdict: str
    p_value: float = math.nan
    test: str = ""
    n: int = 0  # the pairs (paired) or the smaller side's seeds (Welch) the test had

    @property
    def marker(self) -> str:
        return MARKS.get(self.verdict, "")


def parse_baseline(text: str) -> Baseline:
    """`model.cell=lstm` → Baseline("model.cell", "lstm"); anything else is one SpecError naming the option."""
    key, sep, value = text.partition("=")
    key = key.strip()
    if not sep or not re.fullmatch(KEY, key) or not value.strip():
        raise SpecError(f"{OPTION} expects KEY=VALUE with a row or column key, such as model.cell=lstm; "
                        f"got {shown(text)}")
    try:
        parsed = yaml.safe_load(value)
    except yaml.YAMLError:
        parsed = value
    return Baseline(key, parsed if isinstance(parsed, (str, int, float, bool)) else value)


def check_baseline(runs: pd.DataFrame, baseline: Baseline) -> None:
    """The key is a column of runs.csv and some finished run has the value; else one SpecError saying which."""
    if baseline.key not in runs.columns:
        raise SpecError(unknown_choice("column", baseline.key,
                                       [c for c in runs.columns if c not in ("experiment", "error")]), path=OPTION)
    finished = runs[runs["status"] == OK] if "status" in runs else runs
    values = list(dict.fromkeys(finished[baseline.key].dropna().tolist()))
    if not any(same_value(value, baseline.value) for value in values):
        raise SpecError(f"no finished run has {baseline.key} = {shown(baseline.value)}; its values are: "
                        f"{', '.join(map(str, values)) or 'none'}", path=OPTION)


def check_key_in(baseline: Baseline, keys: list[str], table: str) -> None:
    if baseline.key not in keys:
        raise SpecError(f"{baseline.key} is not a row or column of {table} (its keys: {', '.join(keys) or 'none'}); "
                        f"a cell's baseline is the cell with the same keys but {baseline}", path=OPTION)


def cells_of(frame: pd.DataFrame, keys: list[str]) -> dict[tuple, pd.DataFrame]:
    """The table's cells: {its keys, as the table labels them: its runs}."""
    return {(group if isinstance(group, tuple) else (group,)): part
            for group, part in frame.groupby(keys, sort=False, dropna=False)}


def cell_tests(frame: pd.DataFrame, keys: list[str], value: str, baseline: Baseline,
               direction: str | None = None) -> dict[tuple, CellTest]:
    """{cell's keys (as the table labels them): its test against its baseline cell} for every cell of `frame`.

    frame: the table's selected finished runs, keys labelled as the table shows them, with the `seed` column.
    direction: "maximize" or "minimize" when the metric has a better direction (its verdicts are then
    better / worse), else None (higher / lower).
    """
    position = keys.index(baseline.key)
    cells = cells_of(frame, keys)
    tests = {}
    for cell, part in cells.items():
        if same_value(cell[position], baseline.value):
            tests[cell] = CellTest(IS_BASELINE)
            continue
        base = next((other for other in cells if all(same_value(other[i], cell[i]) for i in range(len(keys))
                                                     if i != position)
                     and same_value(other[position], baseline.value)), None)
        tests[cell] = CellTest(NO_BASELINE) if base is None else test_against(part, cells[base], value, direction)
    return tests


def best_tests(frame: pd.DataFrame, keys: list[str], columns: list[str], value: str,
               direction: str) -> dict[tuple, CellTest] | None:
    """Without a baseline, a table that decides: in each column of the table (each value of its `columns` keys;
    the whole table without them), the cell with the best mean in the metric's direction is `[best]`, and each
    other cell is tested against it as against a baseline cell (`test_against`): `[worse]` beyond chance, `[n.s.]`
    not shown to differ, `[?]` too few seeds. None where no column has two cells and a best of
    MIN_SEEDS_FOR_TEST runs or more: a best of one or two runs decides nothing."""
    cells = cells_of(frame, keys)
    at = [keys.index(key) for key in columns]
    by_column: dict[tuple, list[tuple]] = {}
    for cell in cells:
        by_column.setdefault(tuple(cell[i] for i in at), []).append(cell)
    tests: dict[tuple, CellTest] = {}
    decided = False
    for members in by_column.values():
        numbers = {cell: _numbers(cells[cell], value)["value"] for cell in members}
        ranked = [cell for cell in members if np.isfinite(numbers[cell].mean())]
        if len(ranked) < 2:
            continue
        best = (max if direction == "maximize" else min)(ranked, key=lambda cell: numbers[cell].mean())
        if len(numbers[best]) < MIN_SEEDS_FOR_TEST:
            continue
        decided = True
        for cell in ranked:
            tests[cell] = CellTest(BEST) if cell == best else test_against(cells[cell], cells[best], value, direction)
    if not decided:
        return None
    return {cell: tests.get(cell, CellTest(NO_NUMBERS)) for cell in cells}


def best_legend() -> str:
    """The line under a table marked by `best_tests`."""
    m = MARKS
    return (f"{m[BEST]}: the best mean of its column; {m[WORSE]}: worse than it beyond chance (p < {ALPHA:g}; a "
            f"paired t-test over seeds where both cells have the same seeds, else Welch's); {m[NOT_SHOWN]}: not "
            f"shown to differ from it; {m[TOO_FEW]}: too few seeds to test (under {MIN_SEEDS_FOR_TEST}).")


def test_against(cell: pd.DataFrame, base: pd.DataFrame, value: str, direction: str | None = None) -> CellTest:
    """A cell's runs against its baseline cell's: paired over seeds when both hold the same seeds once, else Welch."""
    a, b = _numbers(base, value), _numbers(cell, value)
    if a.empty or b.empty:
        return CellTest(NO_NUMBERS)
    if "seed" in a and a["seed"].is_unique and b["seed"].is_unique and set(a["seed"]) == set(b["seed"]):
        joined = a.merge(b, on="seed", suffixes=("_base", "_cell"))
        if len(joined) < MIN_SEEDS_FOR_TEST:
            return CellTest(TOO_FEW, test=PAIRED, n=len(joined))
        p_value, difference, _ = paired_test((joined["value_cell"] - joined["value_base"]).to_numpy(dtype=float))
        return CellTest(_verdict(p_value, difference, direction), p_value, PAIRED, len(joined))
    n = min(len(a), len(b))
    if n < MIN_SEEDS_FOR_TEST:
        return CellTest(TOO_FEW, test=WELCH, n=n)
    p_value, _, _ = welch_test(a["value"].to_numpy(dtype=float), b["value"].to_numpy(dtype=float))
    difference = float(b["value"].mean() - a["value"].mean())
    return CellTest(_verdict(p_value, difference, direction), p_value, WELCH, n)


def _verdict(p_value: float, difference: float, direction: str | None) -> str:
    """Not shown to differ, or which way the cell differs from its baseline: better / worse where the metric
    has a better direction, else higher / lower."""
    if not p_value < ALPHA:
        return NOT_SHOWN
    higher = difference > 0
    if direction is None:
        return HIGHER if higher else LOWER
    return BETTER if higher == (direction == "maximize") else WORSE


def _numbers(part: pd.DataFrame, value: str) -> pd.DataFrame:
    """The cell's finite numbers, with their seeds where runs.csv has them (a text or empty value is left out)."""
    numbers = pd.to_numeric(part[value], errors="coerce").astype(float)
    keep = np.isfinite(numbers)
    out = pd.DataFrame({"value": numbers[keep]})
    if "seed" in part:
        out["seed"] = part.loc[keep, "seed"].astype(str)
    return out.reset_index(drop=True)


def marked(texts: pd.Series, tests: dict[tuple, CellTest]) -> pd.Series:
    """The cells' "mean ± std" texts (indexed by their keys) with each one's marker appended."""
    def mark(index: Any, text: str) -> str:
        marker = tests[index if isinstance(index, tuple) else (index,)].marker
        return f"{text} {marker}" if marker else text

    return pd.Series([mark(i, t) for i, t in texts.items()], index=texts.index, dtype=object)


def test_columns(index: pd.Index, tests: dict[tuple, CellTest]) -> pd.DataFrame:
    """The CSV's p_value, test and verdict of each cell, aligned with `index` (the cells' keys)."""
    found = [tests[i if isinstance(i, tuple) else (i,)] for i in index]
    return pd.DataFrame({"p_value": [t.p_value for t in found], "test": [t.test for t in found],
                         "verdict": [t.verdict for t in found]}, index=index)


def legend(baseline: Baseline) -> str:
    """The line under a marked table (Markdown, terminal, report)."""
    m = MARKS
    return (f"Each cell against its baseline cell ({baseline}, the same other keys): {m[IS_BASELINE]} the baseline; "
            f"{m[BETTER]} / {m[WORSE]}: differs beyond chance (p < {ALPHA:g}; a paired t-test over seeds where both "
            f"cells have the same seeds, else Welch's), in the metric's better or worse direction ({m[HIGHER]} / "
            f"{m[LOWER]} for a number with no better direction, such as train_seconds); {m[NOT_SHOWN]}: not shown "
            f"to differ; {m[TOO_FEW]}: too few seeds to test (under {MIN_SEEDS_FOR_TEST} pairs, or "
            f"{MIN_SEEDS_FOR_TEST} seeds a side); {m[NO_BASELINE]}: no baseline cell.")


def title_note(baseline: Baseline, tests: list[dict[tuple, CellTest]]) -> str:
    """What a marked table's title adds: "against model.cell = lstm", and with too few seeds to test,
    "too few seeds to test: 2 pairs, 3 needed" (every cell) or "3 of 6 cells with too few seeds to test: …"."""
    found = [test for cells in tests for test in cells.values()]
    compared = [test for test in found if test.verdict not in (IS_BASELINE, NO_BASELINE, NO_NUMBERS)]
    few = [test for test in compared if test.verdict == TOO_FEW]
    if not few:
        return f"against {baseline}"
    most = max(few, key=lambda test: test.n)
    had = f"{most.n} pair{'s' * (most.n != 1)}" if most.test == PAIRED else \
        f"{most.n} seed{'s' * (most.n != 1)} a side"
    counted = "" if len(few) == len(compared) else f"{len(few)} of {len(compared)} cells with "
    return f"against {baseline}; {counted}too few seeds to test: {had}, {MIN_SEEDS_FOR_TEST} needed"
