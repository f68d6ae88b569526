"""`run --reference DIR`: does a rerun reproduce the reference results, on whatever machine it ran?

Two kinds of result, each with its own allowed difference:

- **Computed exactly**: a probe measures layers with fixed weights, counts n-grams,
  decodes a fixed table. Every machine computes the same numbers up to float
  rounding, so each run's every number must match to |difference| ≤ 1e-12 +
  1e-6·|reference|.
- **Trained**: a trained model's numbers move with the machine. oneDNN (under
  TensorFlow) and PyTorch pick other kernels on other instruction sets (AVX2 and
  AVX-512 sum in other orders), other thread counts split the sums differently, and
  training amplifies the last bits into a slightly different model. At worst each
  seed's run then differs as much as another seed's would, so for such an experiment
  each metric's mean over its n seeds, at each matrix point, may move by
  `SPREAD_FACTOR` standard errors of a difference between two such means,
  `SPREAD_FACTOR`·s·√(2/n), where s is the reference's own standard deviation over its
  seeds there; or by the spec's `reference_tolerance` where that is larger. With one
  seed and no `reference_tolerance` there is no spread to allow for, and the
  experiment is held to float rounding: the line says so.

Each line prints the largest measured difference beside the allowed one. For a
trained experiment, a claim whose value in the reference lies within the allowed
difference of its threshold is fragile: a rerun that matches the reference could
still reach the other verdict. The check names it and fails, so that the experiment
is made robust (more seeds, a clearer margin) rather than its claim loosened. Judged
on the reference, this never depends on the machine that reruns it; and a claim
that is not fragile keeps its verdict on every machine whose rerun matches.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from seqkeras.errors import SpecError
from seqkeras.reporting.compare import compare_paths, point_label, seed_spread
from seqkeras.reporting.expectations import claim_numbers
from seqkeras.results.folder import read_runs

EXACT_ABSOLUTE, EXACT_RELATIVE = 1e-12, 1e-6
# Standard errors of the difference of two n-seed means: 3 leaves room for a spread that a few seeds
# underestimate (measured: the lesson's trained metrics moved by at most a third of this under AVX2 kernels).
SPREAD_FACTOR = 3.0


def spread_allowance(spread: float, seeds: int) -> float:
    """How far a mean over `seeds` seeds may move, for a reference whose seeds have standard deviation `spread`."""
    return SPREAD_FACTOR * spread * math.sqrt(2 / seeds) if seeds > 1 else 0.0


@dataclass
class Largest:
    """The metric whose difference came closest to (or went furthest past) its allowed difference."""

    metric: str
    where: str
    difference: float
    allowed: float


@dataclass
class Reproduction:
    experiment: str
    trained: bool
    rule: str  # how the allowed difference was chosen
    reasons: list[str] = field(default_factory=list)  # empty: reproduced
    largest: Largest | None = None

    @property
    def reproduced(self) -> bool:
        return not self.reasons

    def line(self, reference: Path) -> str:
        kind = "trained" if self.trained else "computed exactly"
        worst = ""
        if self.largest is not None:
            w = self.largest
            worst = (f"; largest difference {w.difference:.3g} ({w.metric}{' at ' + w.where if w.where else ''}), "
                     f"allowed {w.allowed:.3g}")
        if self.reproduced:
            return f"- {self.experiment}: matches the reference {reference} ({kind}: {self.rule}{worst})"
        detail = "; ".join(self.reasons[:3]) + (f"; … ({len(self.reasons) - 3} more)" if len(self.reasons) > 3 else "")
        return f"- {self.experiment}: DIFFERS from the reference {reference} ({kind}: {self.rule}{worst}): {detail}"


def exact_allowance(reference_value: float) -> float:
    return EXACT_ABSOLUTE + EXACT_RELATIVE * abs(reference_value)


def check_experiment(experiment, reference: Path, rerun: Path) -> Reproduction:
    """The rerun's results folder `rerun` against the reference's `reference` folder of the same experiment."""
    spec = experiment.spec
    trained = spec.probe is None
    report = compare_paths(reference, rerun, tolerance=0.0, timings=False, unpaired=trained,
                           common=bool(experiment.unselected))
    comparison = report.comparisons[0]
    changes = comparison.spec_changes or []
    spread = seed_spread(read_runs(reference), comparison.keys, comparison.metrics) if trained else {}
    stated = spec.reference_tolerance if trained else None
    if not trained:
        rule = f"|difference| ≤ {EXACT_ABSOLUTE:g} + {EXACT_RELATIVE:g}·|reference| per run"
    elif len(spec.seeds) > 1:
        rule = (f"means over {len(spec.seeds)} seeds within {SPREAD_FACTOR:g} standard errors of the reference's "
                "seed spread"
                + (f" or reference_tolerance {stated:g}" if stated else ""))
    elif stated:
        rule = f"within reference_tolerance {stated:g}"
    else:
        rule = ("one seed and no reference_tolerance: no spread to allow for, so held to float rounding "
                f"(|difference| ≤ {EXACT_ABSOLUTE:g} + {EXACT_RELATIVE:g}·|reference|)")
    result = Reproduction(spec.name, trained, rule)
    allowed_by_metric: dict[str, float] = {}
    worst_ratio = -1.0
    for _, row in comparison.per_run.iterrows():
        where = ", ".join(f"{k}={row[k]}" for k in comparison.keys)
        if row["kind"] == "text":
            if row["outside"]:
                result.reasons.append(f"{row['metric']} at {where}: {row['a']!r} ≠ {row['b']!r}")
            continue
        if pd.isna(row["difference"]):
            result.reasons.append(f"{row['metric']} at {where}: a value on one side only")
            continue
        allowed = exact_allowance(row["a"])
        if trained:
            point_spread = spread.get((point_label(row, comparison.keys), row["metric"]), 0.0)
            allowed = max(allowed, stated or 0.0, spread_allowance(point_spread, len(spec.seeds)))
        allowed_by_metric[row["metric"]] = max(allowed, allowed_by_metric.get(row["metric"], 0.0))
        difference = abs(row["difference"])
        ratio = difference / allowed
        if ratio > worst_ratio:
            worst_ratio = ratio
            result.largest = Largest(row["metric"], where, difference, allowed)
        if difference > allowed:
            result.reasons.append(f"{row['metric']} at {where}: {row['a']:.6g} → {row['b']:.6g}, "
                                  f"|difference| {difference:.3g} > allowed {allowed:.3g}")
    if not comparison.common:
        for side, frame in (("reference", comparison.only_in_a), ("rerun", comparison.only_in_b)):
            for _, row in frame.iterrows():
                result.reasons.append(f"a row only in the {side}: "
                                      + ", ".join(f"{k}={row[k]}" for k in comparison.keys))
    if trained:
        result.reasons += fragile_claims(spec, read_runs(reference), allowed_by_metric)
    if result.reasons and changes:
        result.reasons.insert(0, f"the spec changed: {'; '.join(changes[:3])}")
    return result


def fragile_claims(spec, runs: pd.DataFrame, allowed_by_metric: dict[str, float]) -> list[str]:
    """Claims with a threshold (at_least / at_most) whose mean in `runs` (the reference's) lies within the
    metric's allowed difference of it: a rerun within the allowance could reach the other verdict."""
    fragile = []
    for expect in spec.expect:
        allowed = allowed_by_metric.get(expect.metric)
        if allowed is None or expect.relative_to is not None or (expect.at_least is None and expect.at_most is None):
            continue
        numbers = claim_numbers(expect, runs)
        if numbers is None or numbers.empty or numbers.isna().any():
            continue
        measured = float(numbers.mean())
        for threshold in (expect.at_least, expect.at_most):
            if threshold is not None and math.isfinite(measured) and abs(measured - threshold) <= allowed:
                fragile.append(f"the claim {expect.claim!r} is fragile: {expect.metric} {measured:.4g} "
                               "in the reference lies within "
                               f"the allowed difference {allowed:.3g} of its threshold {threshold:g}")
    return fragile


def check_against(experiments, out_root: Path, reference: Path) -> list[str]:
    """One line per experiment: it reproduces the reference, or what differs. Returns the experiments that differ."""
    print(f"# Against the reference {reference}/ (results computed exactly: to float rounding; trained results: "
          f"within {SPREAD_FACTOR:g} standard errors of the reference's seed spread; timings left out)\n")
    differing = []
    for experiment in experiments:
        name, theirs = experiment.spec.name, reference / experiment.spec.name
        try:
            outcome = check_experiment(experiment, theirs, out_root / name)
        except SpecError as error:
            outcome = Reproduction(name, experiment.spec.probe is None, "not compared", [str(error)])
        print(outcome.line(theirs))
        if not outcome.reproduced:
            differing.append(name)
    print(f"\n{len(experiments) - len(differing)} of {len(experiments)} experiment(s) match the reference\n")
    return differing
