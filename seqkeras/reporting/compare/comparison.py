"""What `compare` found: a `Comparison` per experiment (long tables of differences) and the `Report` over them.

Each knows which of its differences fail the tolerance (`outside_tolerance`):
every number farther apart than allowed, every text that differs, every value
on one side only, and every row or experiment on one side only unless `--common`
(a partial rerun) makes those a note.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd


@dataclass
class Comparison:
    """One experiment's comparison; `per_run` and `over_seeds` are long tables (one row per key × metric)."""

    name: str
    keys: list[str]
    metrics: list[str]
    per_run: pd.DataFrame
    over_seeds: pd.DataFrame
    only_in_a: pd.DataFrame
    only_in_b: pd.DataFrame
    notes: list[str] = field(default_factory=list)
    tolerance: float | None = None
    paired: bool = True  # False: per matrix point, means over each side's seeds (Welch's t-test)
    common: bool = False  # rows on one side only are a note, not a failure
    spec_changes: list[str] | None = None  # "train.epochs: 5 → 10"; None when a side has no experiment.yaml
    relative: float = 0.0  # with the tolerance: |B − A| may be up to tolerance + relative·|A|

    def outside_tolerance(self) -> list[str]:
        """Every reason this comparison fails the tolerance (empty without a tolerance)."""
        if self.tolerance is None:
            return []
        reasons = []
        for _, row in self.per_run[self.per_run["outside"]].iterrows():
            where = ", ".join(f"{k}={row[k]}" for k in self.keys)
            if row["kind"] == "text":
                reasons.append(f"{row['metric']} at {where}: {row['a']!r} ≠ {row['b']!r}")
            elif pd.isna(row["difference"]):
                reasons.append(f"{row['metric']} at {where}: a value on one side only")
            else:
                allowed = f"{self.tolerance:g}" + (f" + {self.relative:g}·|A|" if self.relative else "")
                reasons.append(f"{row['metric']} at {where}: {row['a']:.6g} → {row['b']:.6g}, "
                               f"|difference| {abs(row['difference']):.3g} > {allowed}")
        if self.common:
            return reasons
        for side, frame in (("A", self.only_in_a), ("B", self.only_in_b)):
            for _, row in frame.iterrows():
                reasons.append(f"row only in {side}: " + ", ".join(f"{k}={row[k]}" for k in self.keys))
        return reasons


@dataclass
class Report:
    """Everything `compare` found: one Comparison per experiment present on both sides."""

    a: str
    b: str
    comparisons: list[Comparison]
    experiments_only_in_a: list[str] = field(default_factory=list)
    experiments_only_in_b: list[str] = field(default_factory=list)
    tolerance: float | None = None
    common: bool = False  # experiments on one side only are a note, not a failure

    def outside_tolerance(self) -> list[str]:
        if self.tolerance is None:
            return []
        reasons = [f"{c.name}: {reason}" if len(self.comparisons) > 1 else reason
                   for c in self.comparisons for reason in c.outside_tolerance()]
        if self.common:
            return reasons
        reasons += [f"experiment only in A: {name}" for name in self.experiments_only_in_a]
        reasons += [f"experiment only in B: {name}" for name in self.experiments_only_in_b]
        return reasons
