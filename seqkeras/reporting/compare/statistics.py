"""Differences over seeds: whether a difference is larger than what reseeding alone produces.

Paired runs (one seed on both sides) give each matrix point the mean difference ±
its standard deviation, and from three seeds a paired t-test with the 95% interval
of the mean difference (`paired_over_seeds`, `paired_test`). Runs that cannot be paired
are compared as two samples per matrix point, Welch's t-test from three seeds a
side (`welch_over_seeds`, `welch_test`, on `per_point` means). `seed_spread` is a
reference's spread over seeds, which `run --reference` allows a trained number.
The two tests themselves are `reporting.significance`'s, shared with `table --baseline`.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from seqkeras.reporting.compare.keys import is_missing, point_labels
from seqkeras.reporting.significance import ALPHA, MIN_SEEDS_FOR_TEST, PAIRED, WELCH, paired_test, welch_test
from seqkeras.results.record import FAILED, OK

__all__ = ["ALPHA", "MIN_SEEDS_FOR_TEST", "PAIRED", "WELCH", "paired_over_seeds", "paired_test", "per_point",
           "seed_spread", "welch_over_seeds", "welch_test"]
OVER_SEEDS_COLUMNS = ["metric", "test", "seeds", "mean_a", "mean_b", "mean_difference", "std_difference",
                      "p_value", "ci_low", "ci_high", "beyond_seed_noise"]


def paired_over_seeds(per_run: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """Per matrix point and metric: mean difference ± std over seeds, and a paired t-test from 3 seeds on."""
    columns = [k for k in keys if k != "seed"] + OVER_SEEDS_COLUMNS
    if "seed" not in keys or per_run.empty:
        return pd.DataFrame(columns=columns)
    group_keys = [k for k in keys if k != "seed"] + ["metric"]
    rows = []
    for group, part in per_run.groupby(group_keys, sort=False, dropna=False):
        group = group if isinstance(group, tuple) else (group,)
        base = dict(zip(group_keys, group))
        if len(part) < 2:
            continue
        if (part["kind"] == "text").any():
            differ = int((part["difference"] != "equal").sum())
            rows.append({**base, "seeds": len(part), "mean_difference": f"{differ} of {len(part)} differ",
                         "beyond_seed_noise": ""})
            continue
        paired = part.dropna(subset=["a", "b"])
        finite = paired[np.isfinite(paired["a"].astype(float)) & np.isfinite(paired["b"].astype(float))]
        differences = (finite["b"] - finite["a"]).astype(float).to_numpy()
        row = {**base, "seeds": len(differences), "mean_a": finite["a"].astype(float).mean(),
               "mean_b": finite["b"].astype(float).mean()}
        if len(differences) == 0:
            rows.append({**row, "beyond_seed_noise": "no paired values"})
            continue
        row["mean_difference"] = float(differences.mean())
        row["std_difference"] = float(differences.std(ddof=1)) if len(differences) > 1 else math.nan
        if len(differences) >= MIN_SEEDS_FOR_TEST:
            p_value, low, high = paired_test(differences)
            row.update(test=PAIRED, p_value=p_value, ci_low=low, ci_high=high,
                       beyond_seed_noise="yes" if p_value < ALPHA else "no")
        else:
            row["beyond_seed_noise"] = f"n/a (< {MIN_SEEDS_FOR_TEST} seeds)"
        rows.append(row)
    return pd.DataFrame(rows, columns=columns)


def welch_over_seeds(a: pd.DataFrame, b: pd.DataFrame, keys: list[str], metrics: list[str]) -> pd.DataFrame:
    """Per matrix point and metric: A's seeds against B's as two samples (Welch's t-test from 3 seeds a side)."""
    points_a, points_b = _finished_by_point(a, keys), _finished_by_point(b, keys)
    rows = []
    for point, part_a in points_a.items():
        if point not in points_b:
            continue
        base = dict(zip(keys, point.split("\x1f"))) if keys else {}
        for metric in metrics:
            values_a, values_b = _finite(part_a[metric]), _finite(points_b[point][metric])
            if not len(values_a) or not len(values_b):
                continue
            row = {**base, "metric": metric, "test": "", "seeds": f"{len(values_a)} vs {len(values_b)}",
                   "mean_a": values_a.mean(), "mean_b": values_b.mean(),
                   "mean_difference": values_b.mean() - values_a.mean()}
            if min(len(values_a), len(values_b)) >= MIN_SEEDS_FOR_TEST:
                p_value, low, high = welch_test(values_a, values_b)
                row.update(test=WELCH, p_value=p_value, ci_low=low, ci_high=high,
                           beyond_seed_noise="yes" if p_value < ALPHA else "no")
            else:
                row["beyond_seed_noise"] = f"n/a (< {MIN_SEEDS_FOR_TEST} seeds a side)"
            rows.append(row)
    return pd.DataFrame(rows, columns=keys + OVER_SEEDS_COLUMNS)


def _finished_by_point(frame: pd.DataFrame, keys: list[str]) -> dict[str, pd.DataFrame]:
    finished = frame[frame["status"] == OK]
    return dict(tuple(finished.groupby(point_labels(finished, keys), sort=False)))


def _finite(values: pd.Series) -> np.ndarray:
    numbers = pd.to_numeric(values, errors="coerce").to_numpy(dtype=float)
    return numbers[np.isfinite(numbers)]


def per_point(frame: pd.DataFrame, keys: list[str], metrics: list[str], kinds: dict[str, str]) -> pd.DataFrame:
    """One row per matrix point: each number's mean over the finished seeds, each text's distinct values."""
    rows = []
    for _, part in frame.groupby(point_labels(frame, keys), sort=False):
        finished = part[part["status"] == OK]
        row = {k: part[k].iloc[0] for k in keys if k in part}
        row["run_id"] = " ".join(part["run_id"].astype(str))
        row["status"] = (OK if len(finished) == len(part) else FAILED if finished.empty
                         else f"{len(finished)} of {len(part)} ok")
        for metric in metrics:
            if kinds[metric] == "number":
                numbers = pd.to_numeric(finished[metric], errors="coerce").dropna()
                row[metric] = float(numbers.mean()) if len(numbers) else math.nan
            else:
                row[metric] = " / ".join(sorted({str(v) for v in finished[metric] if not is_missing(v)}))
        rows.append(row)
    return pd.DataFrame(rows, columns=[*(k for k in keys if k in frame), "run_id", "status", *metrics])


def seed_spread(frame: pd.DataFrame, keys: list[str], metrics: list[str]) -> dict[tuple[str, str], float]:
    """{(matrix point, metric): standard deviation over the point's finished seeds} (0 with one seed).

    The point is labelled as `compare_runs` labels the rows of its unpaired comparison
    (`point_label`), so that a row's spread is found by its keys."""
    spread = {}
    for label, part in frame.groupby(point_labels(frame, keys), sort=False):
        finished = part[part["status"] == OK]
        for metric in metrics:
            numbers = pd.to_numeric(finished[metric], errors="coerce").dropna() if metric in finished else []
            spread[label, metric] = float(numbers.std(ddof=1)) if len(numbers) > 1 else 0.0
    return spread
