"""The natural plot of each kind of curve a run writes beside its record, drawn from its `Curve`s.

A probe's curves (gradient norm against steps back, memory against step, the
unrolled state as a heatmap, the first token's influence, next-word probabilities),
a seq2seq run's attention weights and its quality by source length, the
`gradient_flow` diagnostic, a training run's learning curves (history.csv) and a
classifier's confusion counts (confusion.csv).
Which curve file each drawing is for is said once, in `curves.CURVE_PLOTS`.
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from seqkeras.reporting.figures import color_for, matrix_cells, natural_order, ordered_values, panel_grid, panels

if TYPE_CHECKING:
    from matplotlib.figure import Figure


@dataclass
class Curve:
    """One run's curve file, with the label of its matrix point (and that label along each matrix axis)."""

    label: str
    seed: int
    frame: pd.DataFrame
    parts: tuple[str, ...] = ()  # one label per matrix axis that varies, in the spec's order


def draw_gradient_norms(curves: list[Curve]) -> "Figure":
    figure, (ax,) = panels(1)
    for index, curve in enumerate(curves):
        frame = curve.frame
        ax.plot(frame["steps_back"], frame["grad_norm"], color=color_for(index), label=curve.label)
        if "linear_grad_norm" in frame:
            ax.plot(frame["steps_back"], frame["linear_grad_norm"], color=color_for(index), linestyle="--",
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

    figure, (ax,) = panels(1, height=4.2)
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
            ax.plot(mean.index, 10 ** mean, color=color_for(index), linestyle=style)
            if len(series) > 1:
                ax.fill_between(mean.index, 10 ** (mean - std), 10 ** (mean + std), color=color_for(index), alpha=0.12)
    ax.set_yscale("log")
    ax.set_xlabel("steps back k")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_ylabel("‖∂(g0·h_T)/∂s_(T−k)‖, first recurrent layer")
    ax.grid(True, which="both", alpha=0.3)
    handles = [Line2D([], [], color=color_for(index), label=label) for index, label in enumerate(labels)]
    handles += [Line2D([], [], color="grey", linestyle="-", label="after training"),
                Line2D([], [], color="grey", linestyle="--", label="at initialization")]
    figure.legend(handles=handles, loc="outside right upper", fontsize=8)
    several = any(sum(c.label == label for c in curves) > 1 for label in labels)
    # The axes' own title: a figure title would be centred over the legend as well and run into it.
    ax.set_title("Gradient flow back through the first recurrent layer"
                 + ("\n(geometric mean ± std over seeds)" if several else ""), fontsize=10)
    return figure


def draw_memory(curves: list[Curve]) -> "Figure":
    figure, axes = panels(2)
    for ax, log in zip(axes, (False, True)):
        for index, curve in enumerate(curves):
            frame = curve.frame
            columns = [c for c in frame.columns if c != "step"]
            for number, column in enumerate(columns):
                # An LSTM writes its cell c (the memory) and its output h; a SimpleRNN its one value.
                name = "" if column == "value" else f" ({column})"
                ax.plot(frame["step"], frame[column].abs() if log else frame[column], color=color_for(index),
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
    figure, axes = panels(len(shown), columns=1, height=2.6)
    image = None
    for ax, curve in zip(axes, shown):
        frame = curve.frame
        cells = [c for c in frame.columns if c.startswith("cell_")]
        values = frame[cells].to_numpy(dtype=float).T  # cells × steps
        image = ax.imshow(values, cmap="RdBu_r", vmin=-1, vmax=1, aspect="auto")
        labels = frame["token"].astype(str) if "token" in frame else frame["step"].astype(str)
        ax.set_xticks(range(len(frame)), list(labels), rotation=0, fontsize=8)
        ax.set_yticks(range(len(cells)), [c.replace("_", " ") for c in cells], fontsize=8)
        for (row, column), value in matrix_cells(values):
            ax.text(column, row, f"{value:.2f}", ha="center", va="center", fontsize=7,
                    color="white" if abs(value) > 0.6 else "black")
        if len(curves) > 1:
            ax.set_title(curve.label, fontsize=9)
    figure.colorbar(image, ax=list(axes), label="state h_t")
    figure.suptitle("The unrolled state, token by token")
    return figure


def draw_influence(curves: list[Curve]) -> "Figure":
    figure, (ax,) = panels(1)
    for index, curve in enumerate(curves):
        frame = curve.frame
        ax.plot(frame["step"], frame["influence"], marker="o", color=color_for(index), label=curve.label)
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
    figure, (ax,) = panels(1)
    width = 0.8 / len(curves)
    words = ordered_values(pd.concat([c.frame["word"] for c in curves]))
    for index, curve in enumerate(curves):
        frame = curve.frame.set_index("word")["probability"]
        positions = [i + (index - (len(curves) - 1) / 2) * width for i in range(len(words))]
        ax.bar(positions, [frame.get(w, 0.0) for w in words], width, color=color_for(index), label=curve.label)
    ax.set_xticks(range(len(words)), [str(w) for w in words], fontsize=8)
    ax.set_ylabel("P(next word)")
    ax.grid(True, axis="y", alpha=0.3)
    if len(curves) > 1:
        ax.legend(fontsize=8)
    figure.suptitle("Next-word probabilities from counts")
    return figure


def draw_attention(curves: list[Curve],
                   title: str = "Attention weights for the first test pair (teacher-forced)") -> "Figure":
    """One heatmap per run (or per input of `seqkeras predict --attention`): output step (rows) × source
    position (columns) → attention weight.

    Up to four: the first seed of each configuration first, then further seeds."""
    firsts: dict[tuple, Curve] = {}
    for curve in curves:
        firsts.setdefault(curve.parts or (curve.label,), curve)
    chosen = {id(curve) for curve in firsts.values()}
    shown = (list(firsts.values()) + [curve for curve in curves if id(curve) not in chosen])[:4]
    figure, axes = panels(len(shown), columns=2, height=5.2, width=6.0)
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
    figure.suptitle(title)
    return figure


def _tokens(frame: pd.DataFrame, position: str, token: str) -> list[str]:
    """The token at each position, in position order (each appears once per pair of positions)."""
    return [str(t) for t in frame.drop_duplicates(position).sort_values(position)[token]]


def draw_by_length(curves: list[Curve]) -> "Figure":
    """BLEU (and exact match) against the source length: a line per matrix point and decoder, the mean over
    seeds with a ± std band; the legend outside the panels."""
    metrics = [m for m in ("bleu", "exact_match") if all(m in c.frame for c in curves)]
    figure, axes = panels(len(metrics), columns=2)
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
            colour = color_for(index, len(lines))
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

    # Runs evaluated every N steps (train.evaluate_every, train.steps) have a step per row: drawn against it.
    x = "step" if all("step" in curve.frame for curve in curves) else "epoch"
    quantities: list[str] = []
    for curve in curves:
        columns = list(curve.frame.columns)
        # A validation value with no training counterpart (a task metric's score, val_bleu) is a panel of its own.
        quantities += [c for c in columns if c not in ("epoch", "step") and c not in quantities
                       and (not c.startswith("val_") or c.removeprefix("val_") not in columns)]

    def hue(curve: Curve) -> str:
        return curve.parts[-1] if curve.parts else curve.label

    def row(curve: Curve) -> str:
        return ", ".join(curve.parts[:-1]) if len(curve.parts) > 1 else ""

    rows = sorted(dict.fromkeys(row(curve) for curve in curves), key=natural_order)
    hues = sorted(dict.fromkeys(hue(curve) for curve in curves), key=natural_order)
    seeds = max(sum(1 for c in curves if hue(c) == hue(first) and row(c) == row(first)) for first in curves)
    figure, grid = panel_grid(len(rows), len(quantities))
    validation = any(validation_in(curves, quantity) for quantity in quantities)
    for r, row_label in enumerate(rows):
        for q, quantity in enumerate(quantities):
            ax = grid[r][q]
            for index, hue_label in enumerate(hues):
                group = [c.frame.set_index(x) for c in curves if row(c) == row_label and hue(c) == hue_label]
                drawn = (((quantity, "--"),) if quantity.startswith("val_")  # validation only: dashed
                         else ((quantity, "-"), (f"val_{quantity}", "--")))
                for name, style in drawn:
                    # Without the evaluations a score skips (train.validation_metrics.every): its points joined.
                    series = [frame[name].dropna() for frame in group if name in frame]
                    if not series:
                        continue
                    table = pd.concat(series, axis=1)
                    mean, std = table.mean(axis=1), table.std(axis=1, ddof=1).fillna(0.0)
                    # Markers too: a count-based model's one-row history is a point, not a line.
                    ax.plot(mean.index, mean, color=color_for(index, len(hues)), linestyle=style, linewidth=1.2,
                            marker="o", markersize=2.5)
                    if len(series) > 1:
                        ax.fill_between(mean.index, mean - std, mean + std, color=color_for(index, len(hues)),
                                        alpha=0.15, linewidth=0)
            ax.xaxis.set_major_locator(MaxNLocator(integer=True))
            ax.grid(True, alpha=0.3)
            ax.tick_params(labelsize=7)
            if r == len(rows) - 1:
                ax.set_xlabel(x, fontsize=8)
            own = quantity.startswith("val_") or validation_in(curves, quantity)
            ax.set_ylabel(quantity if own else f"{quantity}, training set", fontsize=8)
            if row_label:  # wrapped to the panel's width, so that neighbouring titles never overlap
                ax.set_title(textwrap.fill(row_label, 50), fontsize=8)
    handles = [Line2D([], [], color=color_for(index, len(hues)), label=label) for index, label in enumerate(hues)]
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


# confusion.csv (evaluation.classification): a `true` column of label names, a column of counts per predicted label.
TRUE_COLUMN = "true"
MAX_CLASSES = 100  # above it a heat map's cells are too small to read (and a hostile file too big to draw)
MAX_CONFUSION_PANELS = 12
LABELLED_CLASSES = 15  # up to this many classes, each cell shows its count


def confusion_problem(frame: pd.DataFrame) -> str:
    """Why `frame` is not confusion counts ("" when it is): a `true` column of distinct labels, then counts ≥ 0."""
    if TRUE_COLUMN not in frame.columns or len(frame.columns) < 2:
        return f"has no {TRUE_COLUMN!r} column and predicted-label columns"
    if len(frame) > MAX_CLASSES or len(frame.columns) - 1 > MAX_CLASSES:
        return f"has more than {MAX_CLASSES} classes"
    if frame[TRUE_COLUMN].astype(str).duplicated().any():
        return f"names a true label twice in its {TRUE_COLUMN!r} column"
    counts = frame.drop(columns=TRUE_COLUMN).apply(pd.to_numeric, errors="coerce").to_numpy(dtype=float)
    if not np.isfinite(counts).all() or (counts < 0).any():
        return "holds a count that is not a number ≥ 0"
    return ""


def confusion_counts(frame: pd.DataFrame) -> pd.DataFrame:
    """The counts, true labels × predicted labels, both as text."""
    counts = frame.set_index(frame[TRUE_COLUMN].astype(str)).drop(columns=TRUE_COLUMN)
    counts.columns = [str(column) for column in counts.columns]
    return counts.apply(pd.to_numeric).astype(float)


def draw_confusion(curves: list[Curve]) -> "Figure":
    """A heat map per configuration (up to 12): true label (rows) × predicted label (columns), the counts summed
    over its seeds; the colour is each row's share, so that a rare class reads as clearly as a frequent one."""
    labels = list(dict.fromkeys(curve.label for curve in curves))
    shown = labels[:MAX_CONFUSION_PANELS]
    figure, axes = panels(len(shown), columns=3, height=4.0, width=4.4)
    image = None
    for ax, label in zip(axes, shown):
        parts = [confusion_counts(curve.frame) for curve in curves if curve.label == label]
        classes = list(dict.fromkeys([name for part in parts for name in [*part.index, *part.columns]]))
        total = sum(part.reindex(index=classes, columns=classes, fill_value=0.0) for part in parts)
        values = total.to_numpy(dtype=float)
        rows = values.sum(axis=1, keepdims=True)
        shares = np.divide(values, rows, out=np.zeros_like(values), where=rows > 0)
        image = ax.imshow(shares, cmap="Blues", vmin=0, vmax=1, interpolation="nearest")
        size = 8 if len(classes) <= LABELLED_CLASSES else 6
        ax.set_xticks(range(len(classes)), classes, fontsize=size, rotation=45, ha="right", rotation_mode="anchor")
        ax.set_yticks(range(len(classes)), classes, fontsize=size)
        if len(classes) <= LABELLED_CLASSES:
            for (row, column), count in matrix_cells(values):
                ax.text(column, row, f"{count:g}", ha="center", va="center", fontsize=7,
                        color="white" if shares[row, column] > 0.6 else "black")
        ax.set_xlabel("predicted label")
        ax.set_ylabel("true label")
        seeds = len(parts)
        ax.set_title(f"{label} ({seeds} seed{'s' if seeds > 1 else ''})", fontsize=9)
    figure.colorbar(image, ax=list(axes), label="share of the true label's test sequences")
    more = f"; {len(labels) - len(shown)} more configuration(s) not shown" if len(labels) > len(shown) else ""
    figure.suptitle(f"Confusion matrices on the test set (counts summed over seeds{more})")
    return figure
