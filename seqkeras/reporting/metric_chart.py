"""The report's chart of an experiment's main test metric per configuration: the mean over seeds ± one std.

Every report page shows it, declared plots or not. Its metric is the first
declared table's `value` when that column holds numbers, else the first metric
column of runs.csv that holds numbers (runs.csv lists the metrics in the order
the spec's `evaluate.metrics`, or its problem's defaults, name them). A
configuration is one combination of the matrix keys that vary and the decoder
(one bar each, at most `MAX_CONFIGURATIONS`), its finished seeds pooled; the
bars take a colour per value of the last of those keys.

The PNG is drawn from runs.csv alone, into the folder the page is written to
(never into results the report only reads, with --out).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd

from seqkeras.reporting.figures import color_for, panels, save_png, value_text
from seqkeras.reporting.tables import NON_METRIC_COLUMNS
from seqkeras.results.folder import OK, is_evaluation_key
from seqkeras.spec.sections import TableSpec

if TYPE_CHECKING:
    from matplotlib.figure import Figure

CHART_FILE = "metric_by_configuration"
MAX_CONFIGURATIONS = 60  # beyond it a bar is too thin to read; the title says how many are left out
# Not metrics: what runs.csv says about a run (tables.NON_METRIC_COLUMNS, and the run time the report shows).
NOT_METRICS = NON_METRIC_COLUMNS | {"seconds"}


def main_metric(runs: pd.DataFrame, tables: list[TableSpec], matrix_columns: list[str]) -> str | None:
    """The chart's metric (see the module), or None when no column of finished runs holds a number."""
    finished = runs[runs["status"] == OK] if "status" in runs else runs
    candidates = [t.value for t in tables[:1]] + [
        c for c in runs.columns if c not in NOT_METRICS and c not in matrix_columns and not is_evaluation_key(c)]
    for column in candidates:
        if column in finished and pd.to_numeric(finished[column], errors="coerce").notna().any():
            return column
    return None


def configuration_stats(runs: pd.DataFrame, metric: str, matrix_columns: list[str]) -> pd.DataFrame:
    """One row per configuration: its label, the value of its last varying key (`hue`), mean, std and n."""
    finished = runs[runs["status"] == OK] if "status" in runs else runs
    keys = [c for c in [*matrix_columns, "decoder"] if c in finished and finished[c].nunique(dropna=False) > 1]
    frame = pd.DataFrame({key: [value_text(v) if not pd.isna(v) else "-" for v in finished[key]] for key in keys},
                         index=finished.index)
    frame["value"] = pd.to_numeric(finished[metric], errors="coerce")
    rows = []
    for group, part in (frame.groupby(keys, sort=False) if keys else [((), frame)]):
        group = group if isinstance(group, tuple) else (group,)
        values = part["value"].dropna()
        if values.empty:
            continue
        label = ", ".join(f"{key.split('.', 1)[-1]}={value}" for key, value in zip(keys, group)) or "all runs"
        rows.append({"label": label, "hue": group[-1] if group else "", "mean": float(values.mean()),
                     "std": float(values.std(ddof=1)) if len(values) > 1 else 0.0, "n": len(values)})
    return pd.DataFrame(rows, columns=["label", "hue", "mean", "std", "n"])


def draw_metric_chart(stats: pd.DataFrame, metric: str) -> "Figure":
    """Horizontal bars, the first configuration on top, each with its ± std error bar and its seed count."""
    shown = stats.head(MAX_CONFIGURATIONS)
    figure, (ax,) = panels(1, height=max(2.0, 0.32 * len(shown) + 1.0), width=7.5)
    hues = list(dict.fromkeys(shown["hue"]))
    positions = list(range(len(shown)))[::-1]
    ax.barh(positions, shown["mean"], xerr=shown["std"], capsize=3, height=0.7,
            color=[color_for(hues.index(h), len(hues)) for h in shown["hue"]])
    ax.set_yticks(positions, [f"{label} (n={n})" for label, n in zip(shown["label"], shown["n"])], fontsize=8)
    ax.set_xlabel(f"{metric} on the test set (mean ± std over seeds)")
    ax.grid(True, axis="x", alpha=0.3)
    more = f", the first {len(shown)} of {len(stats)}" if len(stats) > len(shown) else ""
    figure.suptitle(f"{metric} per configuration{more}", fontsize=10)
    return figure


def write_metric_chart(runs: pd.DataFrame, tables: list[TableSpec], matrix_columns: list[str], into: Path,
                       taken: set[str] = frozenset()) -> dict[str, str] | None:
    """Draw the chart into `into`; returns its {file, title}, or None when no metric holds a number.

    taken: PNG names the page already shows (a declared plot's `file` may be anything), never overwritten.
    """
    metric = main_metric(runs, tables, matrix_columns)
    if metric is None:
        return None
    stats = configuration_stats(runs, metric, matrix_columns)
    if stats.empty:
        return None
    name, number = f"{CHART_FILE}.png", 2
    while name in taken:
        name, number = f"{CHART_FILE}_{number}.png", number + 1
    save_png(draw_metric_chart(stats, metric), into / name)
    return {"file": name, "title": f"{metric} per configuration (mean ± std over seeds)"}
