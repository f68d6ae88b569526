"""`seqkeras compare A B`: two results tables side by side, run by run and over seeds.

A and B are an experiment's results folder (or its runs.csv), or a results root
holding several experiment folders, which are then matched by name. Rows are
joined on the matrix keys and the seed (or on `--on KEY...`); for every metric
the comparison gives A, B, the difference B − A and the relative difference
(B − A) / |A|. Text metrics (a decoded sentence) are equal or different.

Over seeds, each matrix point gets the mean difference ± its standard
deviation; with three or more paired seeds a paired t-test (and its 95%
interval for the mean difference) says whether the difference is larger than
what reseeding alone produces.

A row present on one side only is listed, never dropped. With a tolerance,
`outside_tolerance` lists every numeric difference larger than it, every text
that differs, every value present on one side only and every unmatched row: a
rerun that lost a row does not reproduce its reference.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from seqkeras.errors import SpecError, unknown_choice
from seqkeras.reporting.formatting import format_number
from seqkeras.reporting.tables import NON_METRIC_COLUMNS
from seqkeras.results.folder import read_runs

ALPHA = 0.05  # two-sided level of the paired test over seeds
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
                reasons.append(f"{row['metric']} at {where}: |difference| {abs(row['difference']):.3g} > {self.tolerance:g}")
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

    def outside_tolerance(self) -> list[str]:
        if self.tolerance is None:
            return []
        reasons = [f"{c.name}: {reason}" if len(self.comparisons) > 1 else reason
                   for c in self.comparisons for reason in c.outside_tolerance()]
        reasons += [f"experiment only in A: {name}" for name in self.experiments_only_in_a]
        reasons += [f"experiment only in B: {name}" for name in self.experiments_only_in_b]
        return reasons


# --------------------------------------------------------------------------- #
# Loading
# --------------------------------------------------------------------------- #


def load_side(path: Path) -> dict[str, pd.DataFrame]:
    """{experiment name: runs} from a results folder, a runs.csv, or a root of results folders."""
    if not path.exists():
        raise SpecError(f"{path}: no such file or folder")
    if path.is_file() or (path / "runs.csv").is_file():
        runs = read_runs(path)
        folder = path.parent if path.is_file() else path
        return {_experiment_name(runs, folder): runs}
    found = sorted(p.parent for p in path.glob("*/runs.csv"))
    if not found:
        raise SpecError(f"{path} holds no runs.csv, neither itself nor in its experiment folders")
    return {_experiment_name(runs, folder): runs for folder in found for runs in [read_runs(folder)]}


def _experiment_name(runs: pd.DataFrame, folder: Path) -> str:
    names = runs["experiment"].dropna().unique() if "experiment" in runs else []
    return str(names[0]) if len(names) == 1 else folder.name


# --------------------------------------------------------------------------- #
# Comparing
# --------------------------------------------------------------------------- #


def compare_paths(
    a: Path, b: Path, *, on: list[str] | None = None, metrics: list[str] | None = None,
    tolerance: float | None = None,
) -> Report:
    if tolerance is not None and not (tolerance >= 0 and math.isfinite(tolerance)):
        raise SpecError(f"--tolerance must be a finite number ≥ 0, got {tolerance}")
    side_a, side_b = load_side(a), load_side(b)
    if len(side_a) == 1 and len(side_b) == 1:
        pairs = [(next(iter(side_a)), next(iter(side_a.values())), next(iter(side_b.values())))]
    else:
        pairs = [(name, side_a[name], side_b[name]) for name in side_a if name in side_b]
        if not pairs:
            raise SpecError(
                f"no experiment is in both {a} and {b} (A has: {', '.join(side_a)}; B has: {', '.join(side_b)})"
            )
    if metrics:
        everywhere = [set(_metric_columns(x, _default_keys(x, y))) & set(_metric_columns(y, _default_keys(x, y)))
                      for _, x, y in pairs]
        known = sorted(set().union(*everywhere))
        for metric in metrics:
            if metric not in known:
                raise SpecError(unknown_choice("metric (in both A and B)", metric, known))
    comparisons = []
    for name, runs_a, runs_b in pairs:
        chosen = [m for m in metrics if m in runs_a.columns and m in runs_b.columns] if metrics else None
        if metrics and not chosen:
            continue
        comparisons.append(compare_runs(runs_a, runs_b, name=name, on=on, metrics=chosen, tolerance=tolerance))
    many = len(side_a) > 1 or len(side_b) > 1
    return Report(
        str(a), str(b), comparisons,
        experiments_only_in_a=[n for n in side_a if n not in side_b] if many else [],
        experiments_only_in_b=[n for n in side_b if n not in side_a] if many else [],
        tolerance=tolerance,
    )


def compare_runs(
    a: pd.DataFrame, b: pd.DataFrame, *, name: str = "", on: list[str] | None = None,
    metrics: list[str] | None = None, tolerance: float | None = None,
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
    a, b = _with_join_key(a, keys, "A"), _with_join_key(b, keys, "B")

    metrics_a, metrics_b = _metric_columns(a, keys), _metric_columns(b, keys)
    if metrics is None:
        metrics = [m for m in metrics_a if m in metrics_b]
        one_sided = [m for m in metrics_a + metrics_b if m not in metrics]
        if one_sided:
            notes.append(f"metric(s) on one side only, not compared: {', '.join(dict.fromkeys(one_sided))}")
    else:
        for metric in metrics:
            if metric not in metrics_a or metric not in metrics_b:
                both = [m for m in metrics_a if m in metrics_b]
                raise SpecError(unknown_choice("metric (in both A and B)", metric, both))

    merged = a.merge(b, on="_join", how="outer", suffixes=("_a", "_b"), indicator=True)
    # Keep A's row order (then B's rows), not the merge's lexicographic one ("10" before "5").
    merged = merged.sort_values(["_row_a", "_row_b"], na_position="last", kind="stable").reset_index(drop=True)
    key_view = {k: merged[f"_key_{k}_a"].where(merged["_merge"] != "right_only", merged[f"_key_{k}_b"])
                for k in keys}
    keys_frame = pd.DataFrame(key_view)
    only_a = _one_side(keys_frame, merged, "left_only", "_a", keys)
    only_b = _one_side(keys_frame, merged, "right_only", "_b", keys)
    both = merged[merged["_merge"] == "both"]

    kinds = {m: _kind(a[m], b[m]) for m in metrics}
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
                rows.append({**base, **_number_row(metric, number_a, number_b, tolerance)})
    columns = keys + ["metric", "kind", "a", "b", "difference", "relative", "outside"]
    per_run = pd.DataFrame(rows, columns=columns)
    over_seeds = _over_seeds(per_run, keys)
    return Comparison(name, keys, metrics, per_run, over_seeds, only_a, only_b, notes, tolerance)


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
    frame["_join"] = texts.apply(lambda row: "\x1f".join(row), axis=1) if keys else ""
    duplicated = frame["_join"].duplicated(keep=False)
    if duplicated.any():
        example = frame.loc[duplicated, keys].iloc[0].to_dict()
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


def _number_row(metric: str, a: float, b: float, tolerance: float | None) -> dict[str, Any]:
    if math.isnan(a) or math.isnan(b):
        difference = relative = math.nan
        outside = True
    elif a == b:  # also inf == inf, which subtraction would turn into nan
        difference = relative = 0.0
        outside = False
    else:
        difference = b - a
        relative = difference / abs(a) if a != 0 else math.copysign(math.inf, difference)
        outside = tolerance is not None and not abs(difference) <= tolerance
    return {"metric": metric, "kind": "number", "a": a, "b": b, "difference": difference,
            "relative": relative, "outside": outside and tolerance is not None}


def _text_row(metric: str, a: Any, b: Any, tolerance: float | None) -> dict[str, Any]:
    text_a = "" if _missing(a) else str(a)
    text_b = "" if _missing(b) else str(b)
    same = text_a == text_b
    return {"metric": metric, "kind": "text", "a": text_a, "b": text_b,
            "difference": "equal" if same else "different", "relative": math.nan,
            "outside": (not same) and tolerance is not None}


def _over_seeds(per_run: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """Per matrix point and metric: mean difference ± std over seeds, and a paired t-test from 3 seeds on."""
    columns = [k for k in keys if k != "seed"] + [
        "metric", "seeds", "mean_a", "mean_b", "mean_difference", "std_difference",
        "p_value", "ci_low", "ci_high", "beyond_seed_noise",
    ]
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
            row.update(p_value=p_value, ci_low=low, ci_high=high,
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
            lines += [f"Experiments only in {side}: {', '.join(names)}", ""]
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


def _markdown_comparison(c: Comparison) -> list[str]:
    lines = [f"Joined on: {', '.join(c.keys) or '(nothing: one row each)'}. "
             f"Metrics: {', '.join(c.metrics) or 'none'}. Difference = B − A, relative = (B − A) / |A|.", ""]
    lines += [f"Note: {note}" for note in c.notes]
    if c.notes:
        lines.append("")
    lines += ["### Per run", "", _md(_display_per_run(c)), ""]
    if not c.over_seeds.empty:
        lines += [f"### Over seeds (mean difference ± std; paired t-test from {MIN_SEEDS_FOR_TEST} seeds, "
                  f"95% interval of the mean difference)", "", _md(_display_over_seeds(c)), ""]
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
            "A (mean)": _fmt(row["mean_a"]),
            "B (mean)": _fmt(row["mean_b"]),
            "difference": difference,
            "p": "" if pd.isna(row["p_value"]) else f"{row['p_value']:.3g}",
            "95% interval": "" if pd.isna(row["ci_low"]) else f"[{_signed(row['ci_low'])}, {_signed(row['ci_high'])}]",
            "beyond seed noise": row["beyond_seed_noise"],
        })
    return pd.DataFrame(shown)


def render_csv(report: Report) -> str:
    """One CSV: per-run rows (level=run) and over-seed rows (level=over_seeds), every experiment."""
    frames = []
    for c in report.comparisons:
        per_run = c.per_run.drop(columns=["kind"]).rename(columns={"outside": "outside_tolerance"})
        per_run.insert(0, "level", "run")
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
