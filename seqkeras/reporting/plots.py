"""Plots of an experiment's results: the ones a spec declares, and each curve's natural plot.

Declared plots (`plots:` in a spec) draw a metric of runs.csv against a matrix
key, one series per `hue` value and one panel per `facet` value, with the mean
over seeds and an error bar of ± one standard deviation. Natural plots come
from the curves runs write beside them: a probe's `<curve>.csv` (gradient norm
against steps back, memory against step, the unrolled state as a heatmap, a seq2seq
run's attention weights and its quality by source length, ...),
a training run's `history.csv` (learning curves) and `gradient_flow.csv` (the
`gradient_flow` diagnostic, at initialization and after training).

Every PNG lands in the experiment's results folder, listed with its title in
`plots.json`, which the HTML report reads. Plotting happens after the results
are written: a plot that cannot be drawn is a warning, never a lost result.

matplotlib is imported only when drawing, and only through `Figure` (never
pyplot), so no display and no global backend state are involved.
"""

from __future__ import annotations

import io
import json
import re
import sys
import textwrap
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from seqkeras.errors import SpecError
from seqkeras.results import files
from seqkeras.results.folder import OK, one_row_per_run, write_atomic
from seqkeras.spec.sections import PlotSpec

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from seqkeras.spec.runs import Experiment

MANIFEST = "plots.json"
DPI = 100
class PlotError(Exception):
    """A plot that cannot be drawn from these results (a missing column, no finished run)."""


@dataclass
class PlannedPlot:
    file: str  # without .png
    title: str
    source: str  # "spec", a curve name, or "history"
    draw: Callable[[], "Figure"]


# --------------------------------------------------------------------------- #
# Entry points
# --------------------------------------------------------------------------- #


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
        _warn(f"no plots written for {folder}: {type(error).__name__}: {error}")
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
            _warn(f"plot {plan.file}.png ({plan.title}) not written: {type(error).__name__}: {error}")
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
        _warn(f"{error}; no plot is listed from it")
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
            _warn(f"{folder / MANIFEST}: plot file {problem}; it is left out")
            continue
        listed.append(entry)
    return listed


def plan_plots(folder: Path, plots: list[PlotSpec], matrix_columns: list[str], runs: pd.DataFrame,
               axes: list[str] | None = None) -> list[PlannedPlot]:
    """Declared plots first (the author chose them), then each curve's natural plot, then learning curves."""
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
    finished = _finished_runs(folder, runs)
    groups = axis_groups(matrix_columns, axes)
    for curve, (title, draw) in CURVE_PLOTS.items():
        curves = _read_curves(folder, finished, curve, matrix_columns, groups)
        if curves:
            add(curve, title, curve, lambda draw=draw, curves=curves: draw(curves))
    histories = _read_curves(folder, finished, "history", matrix_columns, groups)
    if histories:
        add("learning_curves", "Learning curves (mean ± std over seeds)", "history",
            lambda: draw_learning_curves(histories))
    return plans


# --------------------------------------------------------------------------- #
# Declared plots
# --------------------------------------------------------------------------- #


def draw_declared(plot: PlotSpec, runs: pd.DataFrame, matrix_columns: list[str]) -> "Figure":
    from seqkeras.reporting.selection import select

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

    facets = _ordered(chosen[plot.facet]) if plot.facet else [None]
    hues = _ordered(chosen[plot.hue]) if plot.hue else [None]
    series = [(hue, metric) for hue in hues for metric in metrics]
    x_values = _ordered(chosen[plot.x])
    categorical = plot.kind == "bar" or not _all_numeric(x_values)
    position = {value: index for index, value in enumerate(x_values)}

    figure, axes = _panels(len(facets), sharey=True)
    for ax, facet in zip(axes, facets):
        panel = chosen if facet is None else chosen[chosen[plot.facet] == facet]
        for index, (hue, metric) in enumerate(series):
            part = panel if hue is None else panel[panel[plot.hue] == hue]
            values = numbers[metric].loc[part.index]
            if values.notna().sum() == 0:
                continue
            label = _series_label(plot, hue, metric, len(metrics))
            color = _color(index)
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
            ax.set_xticks(range(len(x_values)), [_text(v) for v in x_values])
        if plot.logx:
            ax.set_xscale("log")
            if len(x_values) <= 12:  # label the values that ran, not powers of ten
                from matplotlib.ticker import NullFormatter

                ax.set_xticks([float(v) for v in x_values], [_text(v) for v in x_values])
                ax.xaxis.set_minor_formatter(NullFormatter())
        if plot.logy:
            ax.set_yscale("log")
        ax.set_xlabel(plot.x)
        if facet is not None:
            ax.set_title(f"{plot.facet} = {_text(facet)}", fontsize=10)
        ax.grid(True, alpha=0.3)
    axes[0].set_ylabel(metrics[0] if len(metrics) == 1 else "value")
    if len(series) > 1:
        axes[-1].legend(title=plot.hue, fontsize=8, title_fontsize=8)
    figure.suptitle(plot.default_title())
    return figure


def _series_label(plot: PlotSpec, hue: Any, metric: str, n_metrics: int) -> str:
    parts = []
    if hue is not None:
        parts.append(_text(hue))
    if n_metrics > 1:
        parts.append(metric)
    return ", ".join(parts) or metric


# --------------------------------------------------------------------------- #
# Natural plots of the curves runs write
# --------------------------------------------------------------------------- #


@dataclass
class Curve:
    """One run's curve file, with the label of its matrix point (and that label along each matrix axis)."""

    label: str
    seed: int
    frame: pd.DataFrame
    parts: tuple[str, ...] = ()  # one label per matrix axis that varies, in the spec's order


def draw_gradient_norms(curves: list[Curve]) -> "Figure":
    figure, (ax,) = _panels(1)
    for index, curve in enumerate(curves):
        frame = curve.frame
        ax.plot(frame["steps_back"], frame["grad_norm"], color=_color(index), label=curve.label)
        if "linear_grad_norm" in frame:
            ax.plot(frame["steps_back"], frame["linear_grad_norm"], color=_color(index), linestyle="--",
                    alpha=0.7, label=f"{curve.label} (linear RNN)")
    ax.set_yscale("log")
    ax.set_xlabel("steps back k")
    ax.set_ylabel("gradient norm ‖∂L/∂h(T−k)‖")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    figure.suptitle("Gradient norm against steps back")
    return figure


def draw_gradient_flow(curves: list[Curve]) -> "Figure":
    """A training run's gradient_flow.csv: one colour per matrix point, solid after training, dashed at initialization.

    Over seeds, the geometric mean (the mean of log10, as the log axis shows it) with a
    band of ± one standard deviation of log10.
    """
    from matplotlib.lines import Line2D
    from matplotlib.ticker import MaxNLocator

    figure, (ax,) = _panels(1, height=4.2)
    figure.set_size_inches(8.4, 4.8)  # room for the legend beside the axes
    labels = list(dict.fromkeys(curve.label for curve in curves))
    for index, label in enumerate(labels):
        group = [c.frame.set_index("steps_back") for c in curves if c.label == label]
        for column, style in (("trained", "-"), ("at_init", "--")):
            series = [np.log10(frame[column].where(frame[column] > 0)) for frame in group if column in frame]
            if not series:
                continue
            logs = pd.concat(series, axis=1)
            mean, std = logs.mean(axis=1), logs.std(axis=1, ddof=1).fillna(0.0)
            ax.plot(mean.index, 10 ** mean, color=_color(index), linestyle=style)
            if len(series) > 1:
                ax.fill_between(mean.index, 10 ** (mean - std), 10 ** (mean + std), color=_color(index), alpha=0.12)
    ax.set_yscale("log")
    ax.set_xlabel("steps back k")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_ylabel("‖∂(g0·h_T)/∂s_(T−k)‖, first recurrent layer")
    ax.grid(True, which="both", alpha=0.3)
    handles = [Line2D([], [], color=_color(index), label=label) for index, label in enumerate(labels)]
    handles += [Line2D([], [], color="grey", linestyle="-", label="after training"),
                Line2D([], [], color="grey", linestyle="--", label="at initialization")]
    figure.legend(handles=handles, loc="outside right upper", fontsize=8)
    several = any(sum(c.label == label for c in curves) > 1 for label in labels)
    # The axes' own title: a figure title would be centred over the legend as well and run into it.
    ax.set_title("Gradient flow back through the first recurrent layer"
                 + ("\n(geometric mean ± std over seeds)" if several else ""), fontsize=10)
    return figure


def draw_memory(curves: list[Curve]) -> "Figure":
    figure, axes = _panels(2)
    for ax, log in zip(axes, (False, True)):
        for index, curve in enumerate(curves):
            frame = curve.frame
            columns = [c for c in frame.columns if c != "step"]
            for number, column in enumerate(columns):
                # An LSTM writes its cell c (the memory) and its output h; a SimpleRNN its one value.
                name = "" if column == "value" else f" ({column})"
                ax.plot(frame["step"], frame[column].abs() if log else frame[column], color=_color(index),
                        linestyle="-" if number == 0 else ":", label=f"{curve.label}{name}")
        ax.set_xlabel("step after the signal")
        ax.grid(True, which="both", alpha=0.3)
        if log:
            ax.set_yscale("log")
            ax.set_ylabel("|state| (log scale)")
        else:
            ax.set_ylabel("state")
    axes[0].legend(fontsize=8)
    figure.suptitle("Memory of one signal against steps")
    return figure


def draw_states(curves: list[Curve]) -> "Figure":
    shown = curves[:4]
    figure, axes = _panels(len(shown), columns=1, height=2.6)
    image = None
    for ax, curve in zip(axes, shown):
        frame = curve.frame
        cells = [c for c in frame.columns if c.startswith("cell_")]
        values = frame[cells].to_numpy(dtype=float).T  # cells × steps
        image = ax.imshow(values, cmap="RdBu_r", vmin=-1, vmax=1, aspect="auto")
        labels = frame["token"].astype(str) if "token" in frame else frame["step"].astype(str)
        ax.set_xticks(range(len(frame)), list(labels), rotation=0, fontsize=8)
        ax.set_yticks(range(len(cells)), [c.replace("_", " ") for c in cells], fontsize=8)
        for (row, column), value in _cells(values):
            ax.text(column, row, f"{value:.2f}", ha="center", va="center", fontsize=7,
                    color="white" if abs(value) > 0.6 else "black")
        if len(curves) > 1:
            ax.set_title(curve.label, fontsize=9)
    figure.colorbar(image, ax=list(axes), label="state h_t")
    figure.suptitle("The unrolled state, token by token")
    return figure


def draw_influence(curves: list[Curve]) -> "Figure":
    figure, (ax,) = _panels(1)
    for index, curve in enumerate(curves):
        frame = curve.frame
        ax.plot(frame["step"], frame["influence"], marker="o", color=_color(index), label=curve.label)
    first = curves[0].frame
    if "token" in first:
        ax.set_xticks(first["step"], list(first["token"].astype(str)), fontsize=8)
    ax.set_yscale("log")
    ax.set_xlabel("token read at step t")
    ax.set_ylabel("influence of the first token ‖∂h_t/∂x_1‖")
    ax.grid(True, which="both", alpha=0.3)
    if len(curves) > 1:
        ax.legend(fontsize=8)
    figure.suptitle("The first token's influence fades")
    return figure


def draw_next_word(curves: list[Curve]) -> "Figure":
    figure, (ax,) = _panels(1)
    width = 0.8 / len(curves)
    words = _ordered(pd.concat([c.frame["word"] for c in curves]))
    for index, curve in enumerate(curves):
        frame = curve.frame.set_index("word")["probability"]
        positions = [i + (index - (len(curves) - 1) / 2) * width for i in range(len(words))]
        ax.bar(positions, [frame.get(w, 0.0) for w in words], width, color=_color(index), label=curve.label)
    ax.set_xticks(range(len(words)), [str(w) for w in words], fontsize=8)
    ax.set_ylabel("P(next word)")
    ax.grid(True, axis="y", alpha=0.3)
    if len(curves) > 1:
        ax.legend(fontsize=8)
    figure.suptitle("Next-word probabilities from counts")
    return figure


def draw_attention(curves: list[Curve]) -> "Figure":
    """One heatmap per run: output step (rows) × source position (columns) → attention weight.

    Up to four: the first seed of each configuration first, then further seeds."""
    firsts: dict[tuple, Curve] = {}
    for curve in curves:
        firsts.setdefault(curve.parts or (curve.label,), curve)
    chosen = {id(curve) for curve in firsts.values()}
    shown = (list(firsts.values()) + [curve for curve in curves if id(curve) not in chosen])[:4]
    figure, axes = _panels(len(shown), columns=2, height=5.2, width=6.0)
    image = None
    for ax, curve in zip(axes, shown):
        frame = curve.frame
        weights = frame.pivot(index="output_position", columns="source_position", values="weight")
        image = ax.imshow(weights.to_numpy(dtype=float), cmap="viridis", vmin=0, vmax=1, aspect="auto",
                          interpolation="nearest")
        # Readable at the figure's size: a label per token up to 30 of them, rotated under the columns.
        size = 9 if max(weights.shape) <= 15 else 7
        ax.set_xticks(range(weights.shape[1]), _tokens(frame, "source_position", "source_token"), fontsize=size,
                      rotation=60, ha="right", rotation_mode="anchor")
        ax.set_yticks(range(weights.shape[0]), _tokens(frame, "output_position", "output_token"), fontsize=size)
        ax.set_xlabel("source token")
        ax.set_ylabel("output token")
        ax.set_title(curve.label, fontsize=9)
    figure.colorbar(image, ax=list(axes), label="attention weight")
    figure.suptitle("Attention weights for the first test pair (teacher-forced)")
    return figure


def _tokens(frame: pd.DataFrame, position: str, token: str) -> list[str]:
    """The token at each position, in position order (each appears once per pair of positions)."""
    return [str(t) for t in frame.drop_duplicates(position).sort_values(position)[token]]


def draw_by_length(curves: list[Curve]) -> "Figure":
    """BLEU (and exact match) against the source length: a line per matrix point and decoder, the mean over
    seeds with a ± std band; the legend outside the panels."""
    metrics = [m for m in ("bleu", "exact_match") if all(m in c.frame for c in curves)]
    figure, axes = _panels(len(metrics), columns=2)
    labels = list(dict.fromkeys(curve.label for curve in curves))
    several = any("decoder" in c.frame and c.frame["decoder"].nunique() > 1 for c in curves)
    lines = [(label, decoder) for label in labels
             for decoder in dict.fromkeys(d for c in curves if c.label == label
                                         for d in (c.frame["decoder"] if "decoder" in c.frame else [None]))]
    seeds = max(sum(1 for c in curves if c.label == label) for label in labels)
    for ax, metric in zip(axes, metrics):
        for index, (label, decoder) in enumerate(lines):
            frames = [c.frame if decoder is None else c.frame[c.frame["decoder"] == decoder]
                      for c in curves if c.label == label]
            table = pd.concat([f.set_index(["length_min", "length_max"])[metric] for f in frames], axis=1)
            middle = [(low + high) / 2 for low, high in table.index]
            mean, std = table.mean(axis=1), table.std(axis=1, ddof=1).fillna(0.0)
            colour = _color(index, len(lines))
            ax.plot(middle, mean, marker="o", markersize=3, color=colour,
                    label=f"{label}, {decoder}" if several and decoder is not None else label)
            if len(frames) > 1:
                ax.fill_between(middle, mean - std, mean + std, color=colour, alpha=0.15, linewidth=0)
        ax.set_xlabel("source length (middle of the bucket)")
        ax.set_ylabel(f"{metric.replace('_', ' ')} on the test set")
        ax.grid(True, alpha=0.3)
    handles, names = axes[0].get_legend_handles_labels()
    figure.legend(handles, names, loc="outside lower center", ncols=min(len(names), 2), fontsize=8, frameon=False)
    spread = f"mean ± std over {seeds} seeds" if seeds > 1 else "one seed"
    figure.suptitle(f"Quality against source length ({spread})")
    return figure


def draw_learning_curves(curves: list[Curve]) -> "Figure":
    """Small multiples: a column per quantity (loss, accuracy, …), a row per point of the matrix's other axes,
    a line per value of its last axis, each the mean over seeds with a ± std band; validation dashed.

    At the scale of a sweep (cells_long_range: 6 tasks × 6 models × 3 seeds) one panel with a line per
    run and a legend inside cannot be read: here each panel holds the models compared on one task, and
    the legend sits outside the panels, once.
    """
    from matplotlib.lines import Line2D
    from matplotlib.ticker import MaxNLocator

    quantities: list[str] = []
    for curve in curves:
        quantities += [c for c in curve.frame.columns
                       if c != "epoch" and not c.startswith("val_") and c not in quantities]

    def hue(curve: Curve) -> str:
        return curve.parts[-1] if curve.parts else curve.label

    def row(curve: Curve) -> str:
        return ", ".join(curve.parts[:-1]) if len(curve.parts) > 1 else ""

    rows = sorted(dict.fromkeys(row(curve) for curve in curves), key=_natural)
    hues = sorted(dict.fromkeys(hue(curve) for curve in curves), key=_natural)
    seeds = max(sum(1 for c in curves if hue(c) == hue(first) and row(c) == row(first)) for first in curves)
    figure, grid = _grid(len(rows), len(quantities))
    validation = any(validation_in(curves, quantity) for quantity in quantities)
    for r, row_label in enumerate(rows):
        for q, quantity in enumerate(quantities):
            ax = grid[r][q]
            for index, hue_label in enumerate(hues):
                group = [c.frame.set_index("epoch") for c in curves if row(c) == row_label and hue(c) == hue_label]
                for name, style in ((quantity, "-"), (f"val_{quantity}", "--")):
                    series = [frame[name] for frame in group if name in frame]
                    if not series:
                        continue
                    table = pd.concat(series, axis=1)
                    mean, std = table.mean(axis=1), table.std(axis=1, ddof=1).fillna(0.0)
                    # Markers too: a count-based model's one-row history is a point, not a line.
                    ax.plot(mean.index, mean, color=_color(index, len(hues)), linestyle=style, linewidth=1.2,
                            marker="o", markersize=2.5)
                    if len(series) > 1:
                        ax.fill_between(mean.index, mean - std, mean + std, color=_color(index, len(hues)),
                                        alpha=0.15, linewidth=0)
            ax.xaxis.set_major_locator(MaxNLocator(integer=True))
            ax.grid(True, alpha=0.3)
            ax.tick_params(labelsize=7)
            if r == len(rows) - 1:
                ax.set_xlabel("epoch", fontsize=8)
            ax.set_ylabel(quantity if validation_in(curves, quantity) else f"{quantity}, training set", fontsize=8)
            if row_label:  # wrapped to the panel's width, so that neighbouring titles never overlap
                ax.set_title(textwrap.fill(row_label, 50), fontsize=8)
    handles = [Line2D([], [], color=_color(index, len(hues)), label=label) for index, label in enumerate(hues)]
    if validation:
        handles += [Line2D([], [], color="0.3", label="training set"),
                    Line2D([], [], color="0.3", linestyle="--", label="validation (held-out share of training)")]
    if len(hues) > 1 or validation:
        figure.legend(handles=handles, loc="outside right center", fontsize=7, frameon=False)
    spread = f"mean ± std over {seeds} seeds" if seeds > 1 else "one seed"
    where = "solid: training set, dashed: validation" if validation else "on the training set"
    figure.suptitle(f"Learning curves ({spread}; {where})", fontsize=10)
    return figure


def validation_in(curves: list[Curve], quantity: str) -> bool:
    return any(f"val_{quantity}" in curve.frame for curve in curves)


def _natural(label: str) -> list:
    """A sort key that orders "lag=5" before "lag=25" before "lag=100" (numbers by value, the rest as text)."""
    return [(0, float(part), "") if re.fullmatch(r"\d+(\.\d+)?", part) else (1, 0.0, part)
            for part in re.split(r"(\d+(?:\.\d+)?)", label)]


def _grid(rows: int, columns: int):
    """A rows × columns grid of panels sharing the epoch axis, sized for the count."""
    from matplotlib.figure import Figure

    rows, columns = max(rows, 1), max(columns, 1)
    figure = Figure(figsize=(3.4 * columns + 3.6, 2.3 * rows + 0.8), layout="constrained")
    grid = figure.subplots(rows, columns, squeeze=False, sharex=True)
    return figure, grid


# curve file name → (title, drawing function); a run folder holding the file gets the plot.
CURVE_PLOTS: dict[str, tuple[str, Callable[[list[Curve]], "Figure"]]] = {
    "gradient_norms": ("Gradient norm against steps back (log scale)", draw_gradient_norms),
    "gradient_flow": ("Gradient flow through the first recurrent layer, at initialization and after training",
                      draw_gradient_flow),
    "memory": ("Memory of one signal against steps", draw_memory),
    "states": ("The unrolled state as a heatmap", draw_states),
    "influence": ("The first token's influence on the state", draw_influence),
    "next_word": ("Next-word probabilities", draw_next_word),
    "attention": ("Attention weights for one test pair", draw_attention),
    "by_length": ("Quality against source length", draw_by_length),
}


# --------------------------------------------------------------------------- #
# Reading runs and curves
# --------------------------------------------------------------------------- #


def _finished_runs(folder: Path, runs: pd.DataFrame) -> pd.DataFrame:
    if runs.empty or "run_id" not in runs:
        return runs
    # Several evaluation rows (e.g. one per decoder) share one run folder and one curve.
    return one_row_per_run(runs[runs["status"] == OK])


# Curves whose plot pools a matrix point's seeds (the others draw one line per run).
POOLED_OVER_SEEDS = ("history", "gradient_flow", "by_length")


def axis_groups(matrix_columns: list[str], axes: list[str] | None) -> list[list[str]]:
    """The matrix columns of each axis: `task` → task.name, task.lag, …; without axes, one group per section."""
    if axes is None:
        axes = list(dict.fromkeys(column.split(".", 1)[0] for column in matrix_columns))
    groups = [[c for c in matrix_columns if c == axis or c.startswith(f"{axis}.")] for axis in axes]
    return [group for group in groups if group]


def _read_curves(folder: Path, runs: pd.DataFrame, name: str, matrix_columns: list[str],
                 groups: list[list[str]] = ()) -> list[Curve]:
    present = [c for c in matrix_columns if c in runs.columns]
    varying = [c for c in present if runs[c].nunique(dropna=False) > 1]  # a key set on one entry only varies too
    varying_groups = [[c for c in group if c in varying] for group in groups]
    varying_groups = [group for group in varying_groups if group]
    several_seeds = runs["seed"].nunique() > 1 if "seed" in runs else False
    curves = []
    for _, row in runs.iterrows():
        run_id = str(row["run_id"])
        if files.single_name_problem(run_id):  # a run id that is a path: html names it, curves skip it
            continue
        path = folder / run_id / f"{name}.csv"
        if not files.present(folder, f"{run_id}/{name}.csv"):
            continue
        try:
            frame = pd.read_csv(io.StringIO(files.read_text(folder, f"{run_id}/{name}.csv")))
        except SpecError as error:  # a link, a FIFO, too big: named, never followed
            _warn(f"{error}; left out of its plot")
            continue
        except (ValueError, OSError) as error:  # pandas' ParserError and EmptyDataError are ValueErrors
            _warn(f"{path} cannot be read, left out of its plot: {error}")
            continue
        label = run_label(row, varying)
        if name not in POOLED_OVER_SEEDS and several_seeds:
            label = f"{label}, seed={row['seed']}" if varying else f"seed={row['seed']}"
        parts = tuple(run_label(row, group) for group in varying_groups)
        curves.append(Curve(label, int(row["seed"]), frame, parts))
    return curves


def run_label(row: pd.Series, keys: list[str]) -> str:
    """'spectral_radius=0.8, draw=0': a run's matrix values, each key without its section."""
    def name(key: str) -> str:
        return key.split(".", 1)[1] if "." in key else key

    # A key this run does not set is left out, unless nothing else tells it from the others.
    parts = [f"{name(key)}={_text(row[key])}" for key in keys if not pd.isna(row[key])]
    return ", ".join(parts or [f"{name(key)}=-" for key in keys]) or "all runs"


# --------------------------------------------------------------------------- #
# Small helpers
# --------------------------------------------------------------------------- #


def _panels(count: int, *, columns: int = 3, height: float = 3.6, sharey: bool = False, width: float = 4.2):
    from matplotlib.figure import Figure

    count = max(count, 1)
    ncols = min(count, columns)
    nrows = -(-count // ncols)
    width = max(6.4, width) if ncols == 1 else width * ncols
    figure = Figure(figsize=(width, height * nrows + 0.6), layout="constrained")
    axes = figure.subplots(nrows, ncols, squeeze=False, sharey=sharey).ravel()
    for extra in axes[count:]:
        extra.set_visible(False)
    return figure, list(axes[:count])


def _color(index: int, count: int = 10):
    """Distinct colours: tab10, or tab20 for up to 20 lines."""
    from matplotlib import colormaps

    if count > 10:
        return colormaps["tab20"](index % 20)
    return colormaps["tab10"](index % 10)


def _cells(values):
    for row in range(values.shape[0]):
        for column in range(values.shape[1]):
            yield (row, column), values[row, column]


def _ordered(values: pd.Series) -> list[Any]:
    """Distinct values: numerically sorted when all are numbers, else in order of appearance."""
    distinct = list(dict.fromkeys(values.tolist()))
    if _all_numeric(distinct):
        return sorted(distinct, key=float)
    return distinct


def _all_numeric(values: list[Any]) -> bool:
    try:
        [float(v) for v in values if not isinstance(v, bool)]
    except (TypeError, ValueError):
        return False
    return not any(isinstance(v, bool) for v in values)


def _text(value: Any) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value)) if abs(value) < 1e15 else f"{value:g}"
    return str(value)


def save_png(figure: "Figure", path: Path) -> None:
    """Write the PNG atomically; no version or date metadata, so unchanged plots keep the same bytes."""
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=DPI, metadata={"Software": None})
    write_atomic(path, buffer.getvalue())


def _write_text(path: Path, text: str) -> None:
    write_atomic(path, text)


def _remove_stale(folder: Path, keep: set[str]) -> None:
    """PNGs this module wrote last time (listed in plots.json) that it no longer draws."""
    for entry in read_manifest(folder) or []:
        name = entry["file"]
        if name not in keep and re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_-]*\.png", name):
            (folder / name).unlink(missing_ok=True)


def _warn(message: str) -> None:
    print(f"warning: {message}", file=sys.stderr)
