"""Plots of an experiment's results: the ones a spec declares, and each curve's natural plot.

Declared plots (`plots:` in a spec) draw a metric of runs.csv against a matrix
key, one series per `hue` value and one panel per `facet` value, with the mean
over seeds and an error bar of ± one standard deviation. Natural plots come
from the curves runs write beside them (`curves.CURVE_PLOTS`: a probe's
`<curve>.csv`, a seq2seq run's attention weights and quality by source length,
a training run's `history.csv` and `gradient_flow.csv`, a classifier's
`confusion.csv`, summed over seeds), drawn by
`curve_drawings`; `figures` holds what every plot draws with.

Every PNG lands in the experiment's results folder, listed with its title in
`plots.json`, which the HTML report reads. Plotting happens after the results
are written: a plot that cannot be drawn is a warning, never a lost result.

matplotlib is imported only when drawing, and only through `Figure` (never
pyplot), so no display and no global backend state are involved.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from seqkeras.errors import SpecError
from seqkeras.reporting.curves import CURVE_PLOTS, axis_groups, finished_runs, read_curves
from seqkeras.reporting.figures import all_numeric, color_for, ordered_values, panels, save_png, value_text
from seqkeras.reporting.selection import select
from seqkeras.results import files
from seqkeras.results.folder import print_warning, write_atomic
from seqkeras.spec.sections import PlotSpec

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from seqkeras.spec.runs import Experiment

MANIFEST = "plots.json"


class PlotError(Exception):
    """A plot that cannot be drawn from these results (a missing column, no finished run)."""


@dataclass
class PlannedPlot:
    file: str  # without .png
    title: str
    source: str  # "spec", or the curve it draws (CurvePlot.curve: gradient_norms, history, ...)
    draw: Callable[[], "Figure"]


def import_matplotlib() -> None:
    """Import what drawing takes (0.4 s in a process without Keras), ahead of the first plot.

    The parent of `--jobs N` calls it once a worker has no run left, on the core
    that worker frees, instead of after the last run, when everyone waits for it.
    """
    import matplotlib.backends.backend_agg  # noqa: F401  (what Figure.savefig draws with)
    import matplotlib.figure  # noqa: F401
    import matplotlib.ticker  # noqa: F401


def write_plots(
    folder: Path, experiment: "Experiment", runs: pd.DataFrame, *, echo: Callable[[str], None] | None = None
) -> list[Path]:
    """Every plot of an experiment into its results folder; never raises (a failed plot is a warning)."""
    try:
        return plot_folder(folder, experiment.spec.plots, experiment.matrix_columns, runs, echo=echo,
                           axes=list(experiment.spec.matrix))
    except Exception as error:  # plots are a view of the results; losing them must not lose the results
        print_warning(f"no plots written for {folder}: {type(error).__name__}: {error}")
        return []


def plot_folder(
    folder: Path,
    plots: list[PlotSpec],
    matrix_columns: list[str],
    runs: pd.DataFrame,
    *,
    echo: Callable[[str], None] | None = None,
    axes: list[str] | None = None,
    into: Path | None = None,
) -> list[Path]:
    """Draw and save every planned plot; returns the PNGs written. Rewrites plots.json.

    axes: the spec's matrix axes (`task`, `model.cell`, …), which lay out the learning
    curves' panels; without them each section (`task.*`, `model.*`) counts as one axis.
    into: where the PNGs and plots.json go (default: `folder`, whose runs they draw); a
    report with --out draws into its own folder, never into results that may be someone else's.
    """
    into = folder if into is None else into
    written: list[dict[str, str]] = []
    paths: list[Path] = []
    for plan in plan_plots(folder, plots, matrix_columns, runs, axes):
        try:
            figure = plan.draw()
            save_png(figure, into / f"{plan.file}.png")
        except Exception as error:
            print_warning(f"plot {plan.file}.png ({plan.title}) not written: {type(error).__name__}: {error}")
            continue
        written.append({"file": f"{plan.file}.png", "title": plan.title, "source": plan.source})
        paths.append(into / f"{plan.file}.png")
    _remove_stale(into, {entry["file"] for entry in written})
    _write_text(into / MANIFEST, json.dumps(written, indent=2, ensure_ascii=False) + "\n")
    if echo and written:
        echo(f"plots: {', '.join(entry['file'] for entry in written)}")
    return paths


def read_manifest(folder: Path) -> list[dict[str, str]] | None:
    """plots.json of a results folder: [{file, title, source}], or None when there is none.

    It is read as `results.files` reads (a regular file inside the folder, bounded, never blocking): one
    that is a link, a FIFO or too big is named in a warning and lists no plot ([], so nothing is redrawn
    into a folder that may be someone else's); an entry whose file is not a plain relative name inside
    the folder (`../x.png`, `/etc/passwd`) is named in a warning and left out.
    """
    if not files.present(folder, MANIFEST):
        return None
    try:
        entries = json.loads(files.read_text(folder, MANIFEST))
    except SpecError as error:
        print_warning(f"{error}; no plot is listed from it")
        return []
    except (ValueError, RecursionError):
        return None
    if not isinstance(entries, list):
        return None
    listed = []
    for entry in entries:
        if not isinstance(entry, dict) or not isinstance(entry.get("file"), str):
            continue
        problem = files.name_problem(entry["file"])
        if problem:
            print_warning(f"{folder / MANIFEST}: plot file {problem}; it is left out")
            continue
        listed.append(entry)
    return listed


def plan_plots(folder: Path, plots: list[PlotSpec], matrix_columns: list[str], runs: pd.DataFrame,
               axes: list[str] | None = None) -> list[PlannedPlot]:
    """Declared plots first (the author chose them), then each curve's natural plot, in CURVE_PLOTS' order."""
    plans: list[PlannedPlot] = []
    used: set[str] = set()

    def add(file: str, title: str, source: str, draw: Callable[[], "Figure"]) -> None:
        name, number = file, 2
        while name in used:
            name, number = f"{file}_{number}", number + 1
        used.add(name)
        plans.append(PlannedPlot(name, title, source, draw))

    for plot in plots:
        add(plot.default_file(), plot.default_title(), "spec",
            lambda plot=plot: draw_declared(plot, runs, matrix_columns))
    finished = finished_runs(folder, runs)
    groups = axis_groups(matrix_columns, axes)
    for kind in CURVE_PLOTS:
        curves = read_curves(folder, finished, kind.curve, matrix_columns, groups)
        if curves:
            add(kind.png_name, kind.title, kind.curve, lambda draw=kind.draw, curves=curves: draw(curves))
    return plans


def draw_declared(plot: PlotSpec, runs: pd.DataFrame, matrix_columns: list[str]) -> "Figure":
    """A plot the spec declares: its metrics against `x` over the runs its `where` selects, mean ± std over seeds."""
    metrics = plot.metrics()
    keys = [k for k in (plot.x, plot.hue, plot.facet) if k]
    for column in keys + metrics + list(plot.where):
        if column not in runs.columns:
            available = [c for c in runs.columns if c not in ("experiment", "run_id", "status", "error")]
            raise PlotError(f"no column {column!r} in runs.csv (columns: {', '.join(available)})")
    chosen = select(runs, plot.where).copy()
    if chosen.empty:
        raise PlotError("no finished run matches the plot's where")
    for key in keys:  # a key that one kind of run lacks shows as "-", as in the tables
        chosen[key] = chosen[key].astype(object).where(chosen[key].notna(), "-")
    numbers = {m: pd.to_numeric(chosen[m], errors="coerce") for m in metrics}
    for metric, values in numbers.items():
        if values.isna().all():
            raise PlotError(f"metric {metric!r} has no numeric values (text metrics cannot be plotted)")

    facets = ordered_values(chosen[plot.facet]) if plot.facet else [None]
    hues = ordered_values(chosen[plot.hue]) if plot.hue else [None]
    series = [(hue, metric) for hue in hues for metric in metrics]
    x_values = ordered_values(chosen[plot.x])
    categorical = plot.kind == "bar" or not all_numeric(x_values)
    position = {value: index for index, value in enumerate(x_values)}

    figure, axes = panels(len(facets), sharey=True)
    for ax, facet in zip(axes, facets):
        panel = chosen if facet is None else chosen[chosen[plot.facet] == facet]
        for index, (hue, metric) in enumerate(series):
            part = panel if hue is None else panel[panel[plot.hue] == hue]
            values = numbers[metric].loc[part.index]
            if values.notna().sum() == 0:
                continue
            label = _series_label(plot, hue, metric, len(metrics))
            color = color_for(index)
            xs = part[plot.x].map(lambda v: position[v] if categorical else float(v))
            if plot.kind == "scatter":
                ax.scatter(xs, values, color=color, label=label, alpha=0.8, s=20)
                continue
            stats = pd.DataFrame({"x": xs, "y": values}).dropna().groupby("x")["y"].agg(["mean", "std"]).sort_index()
            error = stats["std"].fillna(0.0) if plot.errorbars else None
            if plot.kind == "line":
                ax.errorbar(stats.index, stats["mean"], yerr=error, color=color, label=label,
                            marker="o", markersize=4, capsize=3)
            else:
                width = 0.8 / len(series)
                offset = (index - (len(series) - 1) / 2) * width
                ax.bar(stats.index + offset, stats["mean"], width, yerr=error, color=color, label=label, capsize=3)
        if categorical:
            ax.set_xticks(range(len(x_values)), [value_text(v) for v in x_values])
        if plot.logx:
            ax.set_xscale("log")
            if len(x_values) <= 12:  # label the values that ran, not powers of ten
                from matplotlib.ticker import NullFormatter

                ax.set_xticks([float(v) for v in x_values], [value_text(v) for v in x_values])
                ax.xaxis.set_minor_formatter(NullFormatter())
        if plot.logy:
            ax.set_yscale("log")
        ax.set_xlabel(plot.x)
        if facet is not None:
            ax.set_title(f"{plot.facet} = {value_text(facet)}", fontsize=10)
        ax.grid(True, alpha=0.3)
    axes[0].set_ylabel(metrics[0] if len(metrics) == 1 else "value")
    if len(series) > 1:
        axes[-1].legend(title=plot.hue, fontsize=8, title_fontsize=8)
    figure.suptitle(plot.default_title())
    return figure


def _series_label(plot: PlotSpec, hue: Any, metric: str, n_metrics: int) -> str:
    parts = []
    if hue is not None:
        parts.append(value_text(hue))
    if n_metrics > 1:
        parts.append(metric)
    return ", ".join(parts) or metric


def _write_text(path: Path, text: str) -> None:
    write_atomic(path, text)


def _remove_stale(folder: Path, keep: set[str]) -> None:
    """PNGs this module wrote last time (listed in plots.json) that it no longer draws."""
    for entry in read_manifest(folder) or []:
        name = entry["file"]
        if name not in keep and re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_-]*\.png", name):
            (folder / name).unlink(missing_ok=True)
