"""A against B: experiments matched by name (`compare_paths`), then rows joined on their keys and each metric's
difference, B − A and (B − A) / |A|, run by run or per matrix point (`compare_runs`).

Text metrics (a decoded sentence) are equal or different. Rows on one side only
are kept (`only_in_a`, `only_in_b`), never dropped; when the two sides share no
seed (or with `unpaired`), each matrix point's mean over A's seeds is compared
with the mean over B's.
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from seqkeras.errors import SpecError, unknown_choice
from seqkeras.reporting.compare.comparison import Comparison, Report
from seqkeras.reporting.compare.keys import (
    default_keys, is_missing, key_candidates, metric_columns, one_side, seeds_of, with_join_key,
)
from seqkeras.reporting.compare.sides import load_side
from seqkeras.reporting.compare.spec_changes import spec_changes_between
from seqkeras.reporting.compare.statistics import paired_over_seeds, per_point, welch_over_seeds


# Timing metrics (seconds_per_sequence, step_ms, us_per_token, ...): they measure the machine, not the model.
TIMING = re.compile(r"(^|_)(seconds|ms|us)(_|$)")


def compare_paths(
    a: Path, b: Path, *, on: list[str] | None = None, metrics: list[str] | None = None,
    tolerance: float | None = None, unpaired: bool = False, common: bool = False,
    relative: float = 0.0, timings: bool = True,
) -> Report:
    """A against B. With `tolerance`, a number is outside it when |B − A| > tolerance + relative·|A|;
    `timings=False` leaves out timing metrics, which differ between machines and runs (TIMING)."""
    if tolerance is not None and not (tolerance >= 0 and math.isfinite(tolerance)):
        raise SpecError(f"--tolerance must be a finite number ≥ 0, got {tolerance}")
    if not (relative >= 0 and math.isfinite(relative)):
        raise SpecError(f"--relative-tolerance must be a finite number ≥ 0, got {relative}")
    (side_a, root_a), (side_b, root_b) = load_side(a), load_side(b)
    pairs = [(name, side_a[name], side_b[name]) for name in side_a if name in side_b]
    if not pairs:
        if not root_a and not root_b:
            raise SpecError(
                f"A ({a}) holds experiment {next(iter(side_a))!r} and B ({b}) holds {next(iter(side_b))!r}: "
                "compare sets two results of one experiment side by side (a rerun and its reference), "
                "never two different experiments"
            )
        raise SpecError(
            f"no experiment is in both {a} and {b} (A has: {', '.join(side_a)}; B has: {', '.join(side_b)})"
        )
    if metrics:
        everywhere = [set(metric_columns(x.runs, keys)) & set(metric_columns(y.runs, keys))
                      for _, x, y in pairs for keys in [default_keys(x.runs, y.runs)]]
        known = sorted(set().union(*everywhere))
        for metric in metrics:
            if metric not in known:
                raise SpecError(unknown_choice("metric (in both A and B)", metric, known))
    comparisons = []
    for name, side_x, side_y in pairs:
        x, y = side_x.runs, side_y.runs
        chosen = [m for m in metrics if m in x.columns and m in y.columns] if metrics else None
        if metrics and not chosen:
            continue
        comparison = compare_runs(x, y, name=name, on=on, metrics=chosen, tolerance=tolerance,
                                  unpaired=unpaired, common=common, relative=relative, timings=timings)
        comparison.spec_changes = spec_changes_between(side_x.folder, side_y.folder)
        comparisons.append(comparison)
    # Experiments on one side only matter when both sides are whole results roots.
    roots = root_a and root_b
    return Report(
        str(a), str(b), comparisons,
        experiments_only_in_a=[n for n in side_a if n not in side_b] if roots else [],
        experiments_only_in_b=[n for n in side_b if n not in side_a] if roots else [],
        tolerance=tolerance, common=common,
    )


def compare_runs(
    a: pd.DataFrame, b: pd.DataFrame, *, name: str = "", on: list[str] | None = None,
    metrics: list[str] | None = None, tolerance: float | None = None, unpaired: bool = False,
    common: bool = False, relative: float = 0.0, timings: bool = True,
) -> Comparison:
    """One experiment's runs, A against B: rows joined on `on` (default: the matrix keys, decoder and seed) and each
    metric's difference; per matrix point, over each side's seeds, when unpaired or when no seed is shared."""
    notes: list[str] = []
    keys = list(on) if on else default_keys(a, b)
    for key in keys:
        for side, frame in (("A", a), ("B", b)):
            if key not in frame.columns:
                raise SpecError(unknown_choice(f"--on column (in {side})", key, key_candidates(frame)))
    if not on:
        lacking = [k for k in keys if k not in a.columns or k not in b.columns]
        if lacking:
            notes.append(f"matrix key(s) {', '.join(lacking)} exist on one side only; rows differ in them")

    metrics_a, metrics_b = metric_columns(a, keys), metric_columns(b, keys)
    if metrics is None:
        metrics = [m for m in metrics_a if m in metrics_b]
        one_sided = [m for m in metrics_a + metrics_b if m not in metrics]
        if one_sided:
            notes.append(f"metric(s) on one side only, not compared: {', '.join(dict.fromkeys(one_sided))}")
        if not timings and any(TIMING.search(m) for m in metrics):
            notes.append(f"timings left out: {', '.join(m for m in metrics if TIMING.search(m))}")
            metrics = [m for m in metrics if not TIMING.search(m)]
    else:
        for metric in metrics:
            if metric not in metrics_a or metric not in metrics_b:
                both = [m for m in metrics_a if m in metrics_b]
                raise SpecError(unknown_choice("metric (in both A and B)", metric, both))
    kinds = {m: _kind(a[m], b[m]) for m in metrics}

    paired = not unpaired and "seed" in keys
    if paired:
        seeds_a, seeds_b = seeds_of(a), seeds_of(b)
        if seeds_a and seeds_b and not set(seeds_a) & set(seeds_b):
            paired = False
            notes.append(f"A's seeds ({', '.join(seeds_a)}) and B's ({', '.join(seeds_b)}) have none in common: "
                         "runs cannot be paired, so each matrix point's mean over A's seeds is compared with "
                         "the mean over B's (Welch's t-test)")
        elif seeds_a and seeds_b and set(seeds_a) != set(seeds_b):
            notes.append("seeds on one side only are not paired; --unpaired compares every seed of each side")
    samples_a, samples_b = a, b
    if not paired and "seed" in keys:  # one row per matrix point: its means over seeds
        keys = [k for k in keys if k != "seed"]
        a, b = per_point(a, keys, metrics, kinds), per_point(b, keys, metrics, kinds)
    a, b = with_join_key(a, keys, "A"), with_join_key(b, keys, "B")

    merged = a.merge(b, on="_join", how="outer", suffixes=("_a", "_b"), indicator=True)
    # Keep A's row order (then B's rows), not the merge's lexicographic one ("10" before "5").
    merged = merged.sort_values(["_row_a", "_row_b"], na_position="last", kind="stable").reset_index(drop=True)
    key_view = {k: merged[f"_key_{k}_a"].where(merged["_merge"] != "right_only", merged[f"_key_{k}_b"])
                for k in keys}
    keys_frame = pd.DataFrame(key_view, index=merged.index)
    only_a = one_side(keys_frame, merged, "left_only", "_a", keys)
    only_b = one_side(keys_frame, merged, "right_only", "_b", keys)
    both = merged[merged["_merge"] == "both"]

    rows = []
    for index, row in both.iterrows():
        status_a, status_b = row.get("status_a"), row.get("status_b")
        base = {k: keys_frame.at[index, k] for k in keys}
        if status_a != status_b:
            rows.append({**base, **_text_row("status", status_a, status_b, tolerance)})
        for metric in metrics:
            value_a, value_b = row[f"{metric}_a"], row[f"{metric}_b"]
            if kinds[metric] == "text":
                if is_missing(value_a) and is_missing(value_b):
                    continue
                rows.append({**base, **_text_row(metric, value_a, value_b, tolerance)})
            else:
                number_a, number_b = _number(value_a), _number(value_b)
                if math.isnan(number_a) and math.isnan(number_b):
                    continue  # a metric this kind of run does not have, on both sides
                rows.append({**base, **_number_row(metric, number_a, number_b, tolerance, relative)})
    columns = keys + ["metric", "kind", "a", "b", "difference", "relative", "outside"]
    per_run = pd.DataFrame(rows, columns=columns)
    if paired:
        over_seeds = paired_over_seeds(per_run, keys)
    else:
        over_seeds = welch_over_seeds(samples_a, samples_b, keys, [m for m in metrics if kinds[m] == "number"])
    if common and (len(only_a) or len(only_b)):
        notes.append(f"--common: {len(only_a)} row(s) only in A and {len(only_b)} only in B are left out")
    return Comparison(name, keys, metrics, per_run, over_seeds, only_a, only_b, notes, tolerance,
                      paired=paired, common=common, relative=relative)


def _kind(a: pd.Series, b: pd.Series) -> str:
    """'number' when every value on both sides reads as a number, else 'text'."""
    for column in (a, b):
        present = column.dropna()
        if present.empty:
            continue
        if isinstance(present.iloc[0], (bool, np.bool_)):
            return "text"
        if pd.to_numeric(present, errors="coerce").isna().any():
            return "text"
    return "number"


def _number(value: Any) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        return math.nan


def _number_row(metric: str, a: float, b: float, tolerance: float | None, per_unit: float = 0.0) -> dict[str, Any]:
    """One metric of one row; outside the tolerance when |B − A| > tolerance + per_unit·|A|."""
    if math.isnan(a) or math.isnan(b):
        difference = relative = math.nan
        outside = True
    elif a == b:  # also inf == inf, which subtraction would turn into nan
        difference = relative = 0.0
        outside = False
    else:
        difference = b - a
        relative = difference / abs(a) if a != 0 else math.copysign(math.inf, difference)
        outside = tolerance is not None and not abs(difference) <= tolerance + per_unit * abs(a)
    return {"metric": metric, "kind": "number", "a": a, "b": b, "difference": difference,
            "relative": relative, "outside": outside and tolerance is not None}


def _text_row(metric: str, a: Any, b: Any, tolerance: float | None) -> dict[str, Any]:
    text_a = "" if is_missing(a) else str(a)
    text_b = "" if is_missing(b) else str(b)
    same = text_a == text_b
    return {"metric": metric, "kind": "text", "a": text_a, "b": text_b,
            "difference": "equal" if same else "different", "relative": math.nan,
            "outside": (not same) and tolerance is not None}
