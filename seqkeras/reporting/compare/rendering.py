"""A compare report as the command prints it: Markdown (`render_markdown`) or one CSV (`render_csv`), and the
lines said beside them (`spec_change_lines`, `tolerance_summary`).
"""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from seqkeras.reporting.compare.comparison import Comparison, Report
from seqkeras.reporting.compare.statistics import MIN_SEEDS_FOR_TEST
from seqkeras.reporting.formatting import format_number


def render_markdown(report: Report) -> str:
    """The whole report as Markdown: per experiment its spec changes, its rows and its tests over seeds; then the
    experiments on one side only and the tolerance's verdict."""
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
    """The tolerance's verdict: none given, everything within it, or the reasons it fails (the first 20)."""
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
