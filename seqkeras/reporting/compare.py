"""`seqkeras compare A B`: two results of one experiment side by side, run by run and over seeds.

A and B are an experiment's results folder (or its runs.csv), or a results root
holding several experiment folders; experiments are matched by name, and two
different experiments are never compared. When both sides have their
experiment.yaml, the comparison opens with what differs between the two specs
(dotted key: A value → B value).

Rows are joined on the matrix keys and the seed (or on `--on KEY...`); for every
metric the comparison gives A, B, the difference B − A and the relative
difference (B − A) / |A|. Text metrics (a decoded sentence) are equal or different.

Over seeds, each matrix point gets the mean difference ± its standard
deviation; with three or more paired seeds a paired t-test (and its 95%
interval for the mean difference) says whether the difference is larger than
what reseeding alone produces. When the runs cannot be paired (the two sides
share no seed, or `--unpaired`), each matrix point's mean over A's seeds is
compared with the mean over B's, and Welch's t-test (unequal variances, from
three seeds a side) replaces the paired test.

A row present on one side only is listed, never dropped. With a tolerance,
`outside_tolerance` lists every numeric difference larger than it, every text
that differs, every value present on one side only and every unmatched row: a
rerun that lost a row does not reproduce its reference. With `common`, rows and
experiments on one side only are counted in a note instead (a partial rerun).
"""

from __future__ import annotations

import json
import math
import os
import re
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from seqkeras.errors import SpecError, unknown_choice
from seqkeras.reporting.formatting import format_number
from seqkeras.reporting.tables import NON_METRIC_COLUMNS
from seqkeras.results.folder import (
    FAILED, OK, experiment_folders_in, flat_keys, print_warning, read_runs, read_saved_spec,
)
from seqkeras.spec.sections import ExperimentSpec

# Timing metrics (seconds_per_sequence, step_ms, us_per_token, ...): they measure the machine, not the model.
TIMING = re.compile(r"(^|_)(seconds|ms|us)(_|$)")
ALPHA = 0.05  # two-sided level of the tests over seeds
PAIRED, WELCH = "paired t", "Welch t"
MIN_SEEDS_FOR_TEST = 3
MISSING = "-"


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


# --------------------------------------------------------------------------- #
# Loading
# --------------------------------------------------------------------------- #


@dataclass
class Side:
    """One side's results of one experiment, and the folder that holds them (with its experiment.yaml)."""

    runs: pd.DataFrame
    folder: Path


def load_side(path: Path) -> tuple[dict[str, Side], bool]:
    """({experiment name: its results}, whether `path` is a results root) from a results folder, a runs.csv or a
    root."""
    if not path.exists():
        raise SpecError(f"{path}: no such file or folder")
    if path.is_file() or os.path.lexists(path / "runs.csv"):  # read_runs names one that is no file
        runs = read_runs(path)
        folder = path.parent if path.is_file() else path
        return {_experiment_name(runs, folder): Side(runs, folder)}, False
    found = experiment_folders_in(path)
    if not found:
        raise SpecError(f"{path} holds no runs.csv, neither itself nor in its experiment folders")
    return {_experiment_name(runs, folder): Side(runs, folder)
            for folder in found for runs in [read_runs(folder)]}, True


def _experiment_name(runs: pd.DataFrame, folder: Path) -> str:
    names = runs["experiment"].dropna().unique() if "experiment" in runs else []
    return str(names[0]) if len(names) == 1 else folder.name


def spec_changes(a: dict[str, Any], b: dict[str, Any]) -> list[str]:
    """What differs between two experiment.yaml, as resolved dotted keys: `train.epochs: 5 → 10`.

    Both are read through today's schema first, so that a key a newer seqkeras writes with
    its default (a reference recorded before it existed) is no change.
    """
    flat_a, flat_b = flat_keys(_as_today(a)), flat_keys(_as_today(b))
    changes = []
    for key in [*flat_a, *(k for k in flat_b if k not in flat_a)]:
        if key not in flat_b:
            changes.append(f"{key}: {_spec_value(flat_a[key])} → (absent)")
        elif key not in flat_a:
            changes.append(f"{key}: (absent) → {_spec_value(flat_b[key])}")
        elif flat_a[key] != flat_b[key]:
            changes.append(f"{key}: {_spec_value(flat_a[key])} → {_spec_value(flat_b[key])}")
    return changes


def _as_today(spec: dict[str, Any]) -> dict[str, Any]:
    try:
        return ExperimentSpec.model_validate(spec).model_dump(mode="json", exclude_none=True)
    except ValueError:  # written by another version, or edited: compared as it is
        return spec


def _spec_value(value: Any, limit: int = 60) -> str:
    text = json.dumps(value, ensure_ascii=False, default=str) if isinstance(value, (list, dict)) else str(value)
    text = " ".join(text.split())  # a multi-line description on one line
    return text if len(text) <= limit else text[:limit - 1] + "…"


# --------------------------------------------------------------------------- #
# Comparing
# --------------------------------------------------------------------------- #


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
        everywhere = [set(_metric_columns(x.runs, keys)) & set(_metric_columns(y.runs, keys))
                      for _, x, y in pairs for keys in [_default_keys(x.runs, y.runs)]]
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
        comparison.spec_changes = _spec_changes_between(side_x.folder, side_y.folder)
        comparisons.append(comparison)
    # Experiments on one side only matter when both sides are whole results roots.
    roots = root_a and root_b
    return Report(
        str(a), str(b), comparisons,
        experiments_only_in_a=[n for n in side_a if n not in side_b] if roots else [],
        experiments_only_in_b=[n for n in side_b if n not in side_a] if roots else [],
        tolerance=tolerance, common=common,
    )


def _spec_changes_between(a: Path, b: Path) -> list[str] | None:
    spec_a, spec_b = read_saved_spec(a, warn=print_warning), read_saved_spec(b, warn=print_warning)
    return spec_changes(spec_a, spec_b) if spec_a and spec_b else None


def compare_runs(
    a: pd.DataFrame, b: pd.DataFrame, *, name: str = "", on: list[str] | None = None,
    metrics: list[str] | None = None, tolerance: float | None = None, unpaired: bool = False,
    common: bool = False, relative: float = 0.0, timings: bool = True,
) -> Comparison:
    notes: list[str] = []
    keys = list(on) if on else _default_keys(a, b)
    for key in keys:
        for side, frame in (("A", a), ("B", b)):
            if key not in frame.columns:
                raise SpecError(unknown_choice(f"--on column (in {side})", key, _key_candidates(frame)))
    if not on:
        lacking = [k for k in keys if k not in a.columns or k not in b.columns]
        if lacking:
            notes.append(f"matrix key(s) {', '.join(lacking)} exist on one side only; rows differ in them")

    metrics_a, metrics_b = _metric_columns(a, keys), _metric_columns(b, keys)
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
        seeds_a, seeds_b = _seeds(a), _seeds(b)
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
        a, b = _per_point(a, keys, metrics, kinds), _per_point(b, keys, metrics, kinds)
    a, b = _with_join_key(a, keys, "A"), _with_join_key(b, keys, "B")

    merged = a.merge(b, on="_join", how="outer", suffixes=("_a", "_b"), indicator=True)
    # Keep A's row order (then B's rows), not the merge's lexicographic one ("10" before "5").
    merged = merged.sort_values(["_row_a", "_row_b"], na_position="last", kind="stable").reset_index(drop=True)
    key_view = {k: merged[f"_key_{k}_a"].where(merged["_merge"] != "right_only", merged[f"_key_{k}_b"])
                for k in keys}
    keys_frame = pd.DataFrame(key_view, index=merged.index)
    only_a = _one_side(keys_frame, merged, "left_only", "_a", keys)
    only_b = _one_side(keys_frame, merged, "right_only", "_b", keys)
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
                if _missing(value_a) and _missing(value_b):
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
        over_seeds = _over_seeds(per_run, keys)
    else:
        over_seeds = _welch_over_seeds(samples_a, samples_b, keys, [m for m in metrics if kinds[m] == "number"])
    if common and (len(only_a) or len(only_b)):
        notes.append(f"--common: {len(only_a)} row(s) only in A and {len(only_b)} only in B are left out")
    return Comparison(name, keys, metrics, per_run, over_seeds, only_a, only_b, notes, tolerance,
                      paired=paired, common=common, relative=relative)


def _seeds(frame: pd.DataFrame) -> list[str]:
    return sorted(set(frame["seed"].map(key_text)), key=lambda s: (len(s), s)) if "seed" in frame else []


def _point_labels(frame: pd.DataFrame, keys: list[str]) -> pd.Series:
    """Each row's matrix point as one text (the same rule as the join), for grouping seeds."""
    texts = pd.DataFrame({k: frame[k].map(key_text) if k in frame else MISSING for k in keys}, index=frame.index)
    return pd.Series(["\x1f".join(row) for row in texts.itertuples(index=False)], index=frame.index, dtype=object)


def _per_point(frame: pd.DataFrame, keys: list[str], metrics: list[str], kinds: dict[str, str]) -> pd.DataFrame:
    """One row per matrix point: each number's mean over the finished seeds, each text's distinct values."""
    rows = []
    for _, part in frame.groupby(_point_labels(frame, keys), sort=False):
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
                row[metric] = " / ".join(sorted({str(v) for v in finished[metric] if not _missing(v)}))
        rows.append(row)
    return pd.DataFrame(rows, columns=[*(k for k in keys if k in frame), "run_id", "status", *metrics])


def seed_spread(frame: pd.DataFrame, keys: list[str], metrics: list[str]) -> dict[tuple[str, str], float]:
    """{(matrix point, metric): standard deviation over the point's finished seeds} (0 with one seed).

    The point is labelled as `compare_runs` labels the rows of its unpaired comparison
    (`point_label`), so that a row's spread is found by its keys."""
    spread = {}
    for label, part in frame.groupby(_point_labels(frame, keys), sort=False):
        finished = part[part["status"] == OK]
        for metric in metrics:
            numbers = pd.to_numeric(finished[metric], errors="coerce").dropna() if metric in finished else []
            spread[label, metric] = float(numbers.std(ddof=1)) if len(numbers) > 1 else 0.0
    return spread


def point_label(row: pd.Series, keys: list[str]) -> str:
    """One row's matrix point as `seed_spread` labels it."""
    return "\x1f".join(key_text(row[k]) if k in row else MISSING for k in keys)


def _default_keys(a: pd.DataFrame, b: pd.DataFrame) -> list[str]:
    """Matrix keys (dotted names), decoder columns and the seed, in the order they appear in A, then B."""
    keys: list[str] = []
    for frame in (a, b):
        keys += [c for c in frame.columns if _is_key_column(c) and c not in keys]
    return keys + ["seed"]


def _is_key_column(column: str) -> bool:
    return "." in column or column == "decoder"


def _key_candidates(frame: pd.DataFrame) -> list[str]:
    return [c for c in frame.columns if c not in ("experiment", "run_id", "status", "error")]


def _metric_columns(frame: pd.DataFrame, keys: list[str]) -> list[str]:
    return [c for c in frame.columns
            if c not in NON_METRIC_COLUMNS and c not in keys and not _is_key_column(c) and not c.startswith("_")]


def _with_join_key(frame: pd.DataFrame, keys: list[str], side: str) -> pd.DataFrame:
    frame = frame.copy()
    texts = pd.DataFrame({k: frame[k].map(key_text) if k in frame else MISSING for k in keys}, index=frame.index)
    for key in keys:
        frame[f"_key_{key}"] = texts[key]
    frame["_row"] = range(len(frame))
    frame["_join"] = _point_labels(frame, keys)
    duplicated = frame["_join"].duplicated(keep=False)
    if duplicated.any():
        example = {k: frame.loc[duplicated, f"_key_{k}"].iloc[0] for k in keys}
        raise SpecError(
            f"rows of {side} are not unique on {', '.join(keys)} (e.g. {example}); "
            "join on more keys with --on (usually the seed and every matrix key)"
        )
    return frame


def key_text(value: Any) -> str:
    """A key value as text, so that 1, 1.0 and '1' (written by different runs.csv) join."""
    if _missing(value):
        return MISSING
    if isinstance(value, (bool, np.bool_)):
        return str(bool(value))
    if isinstance(value, (int, float, np.number)):
        number = float(value)
        return str(int(number)) if number.is_integer() and abs(number) < 1e15 else repr(number)
    return str(value)


def _one_side(keys_frame: pd.DataFrame, merged: pd.DataFrame, which: str, suffix: str, keys: list[str]) -> pd.DataFrame:
    chosen = merged["_merge"] == which
    frame = keys_frame[chosen].copy()
    frame["run_id"] = merged.loc[chosen, f"run_id{suffix}"] if f"run_id{suffix}" in merged else ""
    frame["status"] = merged.loc[chosen, f"status{suffix}"] if f"status{suffix}" in merged else ""
    return frame.reset_index(drop=True)


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


def _missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value)) or value is pd.NA or value == ""


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
    text_a = "" if _missing(a) else str(a)
    text_b = "" if _missing(b) else str(b)
    same = text_a == text_b
    return {"metric": metric, "kind": "text", "a": text_a, "b": text_b,
            "difference": "equal" if same else "different", "relative": math.nan,
            "outside": (not same) and tolerance is not None}


OVER_SEEDS_COLUMNS = ["metric", "test", "seeds", "mean_a", "mean_b", "mean_difference", "std_difference",
                      "p_value", "ci_low", "ci_high", "beyond_seed_noise"]


def _over_seeds(per_run: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
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


def paired_test(differences: np.ndarray) -> tuple[float, float, float]:
    """Two-sided paired t-test of mean difference 0, and the 95% t interval of the mean difference.

    Identical differences on every seed (no spread at all) are either exactly zero
    (p = 1) or a systematic shift (p = 0); the t statistic is undefined there.
    """
    from scipy import stats

    n = len(differences)
    mean = float(differences.mean())
    spread = float(differences.std(ddof=1))
    if spread == 0 or not math.isfinite(spread):
        return (1.0 if mean == 0 else 0.0), mean, mean
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        p_value = float(stats.ttest_1samp(differences, 0.0).pvalue)
    half_width = float(stats.t.ppf(1 - ALPHA / 2, n - 1)) * spread / math.sqrt(n)
    return p_value, mean - half_width, mean + half_width


def _welch_over_seeds(a: pd.DataFrame, b: pd.DataFrame, keys: list[str], metrics: list[str]) -> pd.DataFrame:
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
    return dict(tuple(finished.groupby(_point_labels(finished, keys), sort=False)))


def _finite(values: pd.Series) -> np.ndarray:
    numbers = pd.to_numeric(values, errors="coerce").to_numpy(dtype=float)
    return numbers[np.isfinite(numbers)]


def welch_test(a: np.ndarray, b: np.ndarray) -> tuple[float, float, float]:
    """Two-sided Welch's t-test of equal means (variances may differ), and the 95% interval of mean(B) − mean(A).

    As in the paired test, no spread on either side makes the difference either
    exactly zero (p = 1) or a systematic shift (p = 0).
    """
    from scipy import stats

    difference = float(b.mean() - a.mean())
    share_a, share_b = a.var(ddof=1) / len(a), b.var(ddof=1) / len(b)  # each mean's squared standard error
    error_squared = float(share_a + share_b)
    if error_squared == 0 or not math.isfinite(error_squared):
        return (1.0 if difference == 0 else 0.0), difference, difference
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        p_value = float(stats.ttest_ind(b, a, equal_var=False).pvalue)
    # Welch–Satterthwaite degrees of freedom, as ttest_ind uses.
    freedom = error_squared**2 / (share_a**2 / (len(a) - 1) + share_b**2 / (len(b) - 1))
    half_width = float(stats.t.ppf(1 - ALPHA / 2, freedom)) * math.sqrt(error_squared)
    return p_value, difference - half_width, difference + half_width


# --------------------------------------------------------------------------- #
# Output
# --------------------------------------------------------------------------- #


def render_markdown(report: Report) -> str:
    lines = [f"# compare A = {report.a}  vs  B = {report.b}", ""]
    for comparison in report.comparisons:
        if len(report.comparisons) > 1 or report.experiments_only_in_a or report.experiments_only_in_b:
            lines += [f"## {comparison.name}", ""]
        lines += _markdown_comparison(comparison)
    for side, names in (("A", report.experiments_only_in_a), ("B", report.experiments_only_in_b)):
        if names:
            left_out = " (left out: --common)" if report.common else ""
            lines += [f"Experiments only in {side}{left_out}: {', '.join(names)}", ""]
    lines += [tolerance_summary(report), ""]
    return "\n".join(lines).rstrip() + "\n"


def tolerance_summary(report: Report) -> str:
    if report.tolerance is None:
        return "No tolerance given (--tolerance T checks |B − A| ≤ T)."
    reasons = report.outside_tolerance()
    if not reasons:
        return f"Within tolerance {report.tolerance:g}: every difference, every text and every row match."
    shown = reasons[:20] + ([f"... and {len(reasons) - 20} more"] if len(reasons) > 20 else [])
    return f"OUTSIDE tolerance {report.tolerance:g} ({len(reasons)}):\n" + "\n".join(f"- {r}" for r in shown)


def spec_change_lines(c: Comparison) -> list[str]:
    """What differs between the two experiment.yaml, for the top of a comparison."""
    if c.spec_changes is None:
        return []
    if not c.spec_changes:
        return ["Spec: the same experiment.yaml on both sides.", ""]
    return [f"Spec changes, A → B (experiment.yaml, {len(c.spec_changes)}):", "",
            *(f"- {change}" for change in c.spec_changes), ""]


def _markdown_comparison(c: Comparison) -> list[str]:
    lines = spec_change_lines(c)
    lines += [f"Joined on: {', '.join(c.keys) or '(nothing: one row each)'}. "
              f"Metrics: {', '.join(c.metrics) or 'none'}. Difference = B − A, relative = (B − A) / |A|.", ""]
    lines += [f"Note: {note}" for note in c.notes]
    if c.notes:
        lines.append("")
    if c.paired:
        lines += ["### Per run", "", _md(_display_per_run(c)), ""]
    else:
        lines += ["### Per matrix point (mean over each side's seeds; runs not paired)", "",
                  _md(_display_per_run(c)), ""]
    if not c.over_seeds.empty:
        if c.paired:
            heading = (f"### Over seeds (mean difference ± std; paired t-test from {MIN_SEEDS_FOR_TEST} seeds, "
                       "95% interval of the mean difference)")
        else:
            heading = (f"### Over seeds (unpaired: Welch's t-test of A's seeds against B's, from "
                       f"{MIN_SEEDS_FOR_TEST} seeds a side; 95% interval of the difference of means)")
        lines += [heading, "", _md(_display_over_seeds(c)), ""]
    if not c.common:
        for side, frame in (("A", c.only_in_a), ("B", c.only_in_b)):
            if not frame.empty:
                lines += [f"### Only in {side} ({len(frame)} row(s))", "", _md(frame), ""]
    return lines


def _display_per_run(c: Comparison) -> pd.DataFrame:
    frame = c.per_run.copy()
    numbers = frame["kind"] == "number"
    for column in ("a", "b"):
        frame[column] = [_fmt(v) if is_number else v for v, is_number in zip(frame[column], numbers)]
    frame["difference"] = [_signed(v) if is_number else v for v, is_number in zip(frame["difference"], numbers)]
    frame["relative"] = [_percent(v) if is_number else "" for v, is_number in zip(frame["relative"], numbers)]
    if c.tolerance is not None:
        frame["check"] = frame["outside"].map({True: "OUTSIDE", False: "ok"})
    return frame.drop(columns=["kind", "outside"]).rename(
        columns={"a": "A", "b": "B", "relative": "relative difference"})


def _display_over_seeds(c: Comparison) -> pd.DataFrame:
    frame = c.over_seeds.copy()
    shown = []
    for _, row in frame.iterrows():
        if isinstance(row["mean_difference"], str):
            difference = row["mean_difference"]
        elif pd.isna(row["mean_difference"]):
            difference = ""
        elif pd.isna(row["std_difference"]):
            difference = _signed(row["mean_difference"])
        else:
            difference = f"{_signed(row['mean_difference'])} ± {row['std_difference']:.2g}"
        shown.append({
            **{k: row[k] for k in c.keys if k != "seed"},
            "metric": row["metric"],
            "seeds": row["seeds"],
            "test": row["test"] if isinstance(row["test"], str) else "",
            "A (mean)": _fmt(row["mean_a"]),
            "B (mean)": _fmt(row["mean_b"]),
            "difference": difference,
            "p": "" if pd.isna(row["p_value"]) else f"{row['p_value']:.3g}",
            "95% interval": "" if pd.isna(row["ci_low"]) else f"[{_signed(row['ci_low'])}, {_signed(row['ci_high'])}]",
            "beyond seed noise": row["beyond_seed_noise"],
        })
    return pd.DataFrame(shown)


def render_csv(report: Report) -> str:
    """One CSV: per-run rows (level=run, or point when unpaired) and over-seed rows (level=over_seeds)."""
    frames = []
    for c in report.comparisons:
        per_run = c.per_run.drop(columns=["kind"]).rename(columns={"outside": "outside_tolerance"})
        per_run.insert(0, "level", "run" if c.paired else "point")  # unpaired: means over each side's seeds
        over = c.over_seeds.copy()
        over.insert(0, "level", "over_seeds")
        only = [frame.assign(level=f"only_in_{side}") for side, frame in (("a", c.only_in_a), ("b", c.only_in_b))
                if not frame.empty]
        frame = pd.concat([per_run, over, *only], ignore_index=True)
        frame.insert(0, "experiment", c.name)
        frames.append(frame)
    if not frames:
        return ""
    return pd.concat(frames, ignore_index=True).to_csv(index=False)


def _md(frame: pd.DataFrame) -> str:
    if frame.empty:
        return "_nothing to compare_"
    return frame.astype(object).where(frame.notna(), "").to_markdown(index=False, disable_numparse=True)


def _fmt(value: Any) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    if isinstance(value, float) and math.isinf(value):
        return "inf" if value > 0 else "-inf"
    return format_number(float(value))


def _signed(value: Any) -> str:
    text = _fmt(value)
    if not text:
        return ""
    return text if text.startswith("-") or float(value) == 0 else f"+{text}"


def _percent(value: Any) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    if math.isinf(value):
        return "+inf %" if value > 0 else "-inf %"
    return "0 %" if value == 0 else f"{value * 100:+.3g} %"
