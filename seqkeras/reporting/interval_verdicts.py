"""A claim judged over seeds with its uncertainty (`expect.min_seeds`): three verdicts, not two.

A claim on trained models is about what a setting does, not what one run did: the last epochs of a run land
anywhere in a swing, which moves with the seed and with the machine (another CPU's kernels round otherwise). So the
claim's runs give the 95% t-interval of their mean (reporting.significance's t quantiles), and for a comparison
the interval of the mean difference, paired by seed when both sides ran the same seeds (a paired t-test; Welch's
otherwise). The claim's bound splits the line into the side where it holds and the other:

- **reproduced**: the interval lies on the claim's side;
- **NOT reproduced**: it lies on the other side;
- **undecided**: it straddles the bound, or fewer than `min_seeds` runs finished. The verdict says about how many
  more seeds would decide it: the interval narrows as 1/√n, so at the same mean and spread n·(half-width /
  distance to the bound)² seeds would put it on one side.

Each verdict shows the interval it was judged on, not only the mean.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from seqkeras.reporting.significance import PAIRED, WELCH, paired_test, welch_test

REPRODUCED, NOT_REPRODUCED, UNDECIDED = "reproduced", "NOT reproduced", "undecided"


@dataclass(frozen=True)
class Region:
    """Where the claim holds: low < x (or ≤, `closed`), x < high; an infinite end is no bound."""

    low: float = -math.inf
    high: float = math.inf
    closed: bool = True  # at_least, at_most, value, close_to: the bound itself holds; greater_than/less_than: not

    def holds_for(self, lo: float, hi: float) -> bool:
        above = lo >= self.low if self.closed else lo > self.low
        below = hi <= self.high if self.closed else hi < self.high
        return above and below

    def fails_for(self, lo: float, hi: float) -> bool:
        outside_low = hi < self.low if self.closed else hi <= self.low
        outside_high = lo > self.high if self.closed else lo >= self.high
        return outside_low or outside_high

    def distance(self, value: float) -> float:
        """How far `value` is from the nearest finite bound."""
        return min(abs(value - bound) for bound in (self.low, self.high) if math.isfinite(bound))


@dataclass(frozen=True)
class Judged:
    outcome: str  # REPRODUCED, NOT_REPRODUCED or UNDECIDED
    measured: str  # the mean (or difference) with its interval, as the verdict table shows it
    more_seeds: int | None = None  # undecided: about how many more would decide it (None: no estimate)

    @property
    def verdict(self) -> str:
        if self.outcome != UNDECIDED:
            return self.outcome
        return f"{UNDECIDED}: needs about {self.more_seeds} more seeds" if self.more_seeds else \
            f"{UNDECIDED}: needs more seeds"


def t_interval(values: np.ndarray) -> tuple[float, float, float]:
    """(mean, low, high): the 95% t-interval of the mean of `values` (2 or more)."""
    _, low, high = paired_test(values)  # the interval of a mean of one sample is the paired test's of differences
    return float(values.mean()), low, high


def decided(region: Region, mean: float, low: float, high: float, n: int, shown: str) -> Judged:
    if region.holds_for(low, high):
        return Judged(REPRODUCED, shown)
    if region.fails_for(low, high):
        return Judged(NOT_REPRODUCED, shown)
    distance, half_width = region.distance(mean), (high - low) / 2
    more = math.ceil(n * (half_width / distance) ** 2) - n if distance > 0 else None
    return Judged(UNDECIDED, shown, max(more, 1) if more is not None else None)


def too_few(n: int, needed: int, shown: str) -> Judged:
    return Judged(UNDECIDED, f"{shown}; {n} of the {needed} seeds it needs", needed - n)


def judge_mean(values: pd.Series, region: Region, min_seeds: int, fmt) -> Judged:
    """A bound on the mean of one selection's runs (at_least, at_most, value ± tolerance)."""
    numbers = values.to_numpy(dtype=float)
    n = len(numbers)
    if n < min_seeds:
        return too_few(n, min_seeds, f"{fmt(float(numbers.mean()))} over {n} run(s)" if n else "no run")
    mean, low, high = t_interval(numbers)
    return decided(region, mean, low, high, n, f"{fmt(mean)} [{fmt(low)}, {fmt(high)}], {n} seeds")


def paired_by_seed(mine: pd.DataFrame, other: pd.DataFrame, values_of) -> tuple[np.ndarray, np.ndarray] | None:
    """Each side's value per seed, in the same seed order, when both sides ran the same seeds once each."""
    if "seed" not in mine.columns or "seed" not in other.columns:
        return None
    a, b = mine.assign(value=values_of(mine)), other.assign(value=values_of(other))
    if a["seed"].duplicated().any() or b["seed"].duplicated().any():
        return None
    if set(a["seed"].astype(str)) != set(b["seed"].astype(str)):
        return None
    a, b = a.set_index(a["seed"].astype(str)), b.set_index(b["seed"].astype(str))
    order = sorted(a.index)
    return a.loc[order, "value"].to_numpy(dtype=float), b.loc[order, "value"].to_numpy(dtype=float)


def judge_difference(mine: pd.DataFrame, other: pd.DataFrame, values_of, region: Region, min_seeds: int,
                     fmt) -> Judged:
    """A bound on mean(mine) − mean(other): paired by seed when both ran the same seeds, else Welch's."""
    counts = min(len(mine), len(other))
    if counts < min_seeds:
        return too_few(counts, min_seeds, f"{len(mine)} and {len(other)} run(s)")
    pairs = paired_by_seed(mine, other, values_of)
    if pairs is not None:
        differences = pairs[0] - pairs[1]
        p_value, low, high = paired_test(differences)
        test, mean = PAIRED, float(differences.mean())
    else:
        a, b = values_of(other).to_numpy(dtype=float), values_of(mine).to_numpy(dtype=float)
        p_value, low, high = welch_test(a, b)
        test, mean = WELCH, float(b.mean() - a.mean())
    shown = (f"{fmt(float(values_of(mine).mean()))} vs {fmt(float(values_of(other).mean()))}: difference "
             f"{mean:+.4g} [{low:+.4g}, {high:+.4g}], {test} p = {p_value:.2g}, {counts} seeds")
    return decided(region, mean, low, high, counts, shown)
