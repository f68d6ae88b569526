"""The curves runs write beside their records (`<run>/<curve>.csv`, history.csv), read for plotting, and the
one table of their natural plots (`CURVE_PLOTS`).

A new kind of curve is one drawing in `curve_drawings` and one `CurvePlot` here:
which file it is, the plot's title, whether the plot pools a matrix point's
seeds (one line, mean ± std) or draws one line per run, and, where a drawing
needs a shape of file (the confusion counts), the check that leaves out a file
without it. Each file is read as `results.files` reads (a regular file inside
the folder, bounded, never blocking).
"""

from __future__ import annotations

import io
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd

from seqkeras.errors import SpecError
from seqkeras.reporting.curve_drawings import (
    Curve, confusion_problem, draw_attention, draw_by_length, draw_confusion, draw_gradient_flow, draw_gradient_norms,
    draw_influence, draw_learning_curves, draw_memory, draw_next_word, draw_states,
)
from seqkeras.reporting.figures import value_text
from seqkeras.results import files
from seqkeras.results.folder import OK, one_row_per_run, print_warning

if TYPE_CHECKING:
    from matplotlib.figure import Figure


@dataclass(frozen=True)
class CurvePlot:
    """The natural plot of one kind of curve file: a run folder holding `<curve>.csv` gets it."""

    curve: str  # the file's name without .csv; also the plot's `source` in plots.json
    title: str
    draw: Callable[[list[Curve]], Figure]
    pooled_over_seeds: bool = False  # one line per matrix point (mean ± std over seeds), not one per run
    file: str = ""  # the PNG's name without .png, when it is not the curve's
    # Why a file cannot be drawn ("" when it can): such a file is named in a warning and left out of the plot.
    problem: Callable[[pd.DataFrame], str] | None = None
    # Its cells are read as text, as written: labels such as `01` (not the number 1, which would merge it with the
    # label `1`) or `NA` (not a missing value); its drawing converts the counts itself.
    text: bool = False

    @property
    def png_name(self) -> str:
        return self.file or self.curve


# Every curve kind and its plot, in the order the plots are drawn (after the declared ones).
CURVE_PLOTS: tuple[CurvePlot, ...] = (
    CurvePlot("gradient_norms", "Gradient norm against steps back (log scale)", draw_gradient_norms),
    CurvePlot("gradient_flow", "Gradient flow through the first recurrent layer, at initialization and after training",
              draw_gradient_flow, pooled_over_seeds=True),
    CurvePlot("memory", "Memory of one signal against steps", draw_memory),
    CurvePlot("states", "The unrolled state as a heatmap", draw_states),
    CurvePlot("influence", "The first token's influence on the state", draw_influence),
    CurvePlot("next_word", "Next-word probabilities", draw_next_word),
    CurvePlot("attention", "Attention weights for one test pair", draw_attention),
    CurvePlot("by_length", "Quality against source length", draw_by_length, pooled_over_seeds=True),
    CurvePlot("history", "Learning curves (mean ± std over seeds)", draw_learning_curves, pooled_over_seeds=True,
              file="learning_curves"),
    CurvePlot("confusion", "Confusion matrix per configuration (test set, summed over seeds)", draw_confusion,
              pooled_over_seeds=True, problem=confusion_problem, text=True),
)


def finished_runs(folder: Path, runs: pd.DataFrame) -> pd.DataFrame:
    """The runs whose curves are drawn: those that finished, one row each."""
    if runs.empty or "run_id" not in runs:
        return runs
    # Several evaluation rows (e.g. one per decoder) share one run folder and one curve.
    return one_row_per_run(runs[runs["status"] == OK])


def axis_groups(matrix_columns: list[str], axes: list[str] | None) -> list[list[str]]:
    """The matrix columns of each axis: `task` → task.name, task.lag, …; without axes, one group per section."""
    if axes is None:
        axes = list(dict.fromkeys(column.split(".", 1)[0] for column in matrix_columns))
    groups = [[c for c in matrix_columns if c == axis or c.startswith(f"{axis}.")] for axis in axes]
    return [group for group in groups if group]


def read_curves(folder: Path, runs: pd.DataFrame, name: str, matrix_columns: list[str],
                groups: list[list[str]] = ()) -> list[Curve]:
    """Each run's `<name>.csv` as a Curve labelled by the matrix values that vary (and its seed, unless the curve's
    plot pools seeds); a file that is missing is skipped, one that cannot be read is named in a warning."""
    present = [c for c in matrix_columns if c in runs.columns]
    varying = [c for c in present if runs[c].nunique(dropna=False) > 1]  # a key set on one entry only varies too
    varying_groups = [[c for c in group if c in varying] for group in groups]
    varying_groups = [group for group in varying_groups if group]
    several_seeds = runs["seed"].nunique() > 1 if "seed" in runs else False
    kind = next((plot for plot in CURVE_PLOTS if plot.curve == name), None)
    pooled = kind is not None and kind.pooled_over_seeds
    as_text = {"dtype": str, "keep_default_na": False} if kind is not None and kind.text else {}
    curves = []
    for _, row in runs.iterrows():
        run_id = str(row["run_id"])
        if files.single_name_problem(run_id):  # a run id that is a path: html names it, curves skip it
            continue
        path = folder / run_id / f"{name}.csv"
        if not files.present(folder, f"{run_id}/{name}.csv"):
            continue
        try:
            frame = pd.read_csv(io.StringIO(files.read_text(folder, f"{run_id}/{name}.csv")), **as_text)
        except SpecError as error:  # a link, a FIFO, too big: named, never followed
            print_warning(f"{error}; left out of its plot")
            continue
        except (ValueError, OSError) as error:  # pandas' ParserError and EmptyDataError are ValueErrors
            print_warning(f"{path} cannot be read, left out of its plot: {error}")
            continue
        problem = kind.problem(frame) if kind is not None and kind.problem is not None else ""
        if problem:  # a file edited by hand or written by something else: its plot goes on without it
            print_warning(f"{path} {problem}; left out of its plot")
            continue
        label = run_label(row, varying)
        if not pooled and several_seeds:
            label = f"{label}, seed={row['seed']}" if varying else f"seed={row['seed']}"
        parts = tuple(run_label(row, group) for group in varying_groups)
        curves.append(Curve(label, int(row["seed"]), frame, parts))
    return curves


def run_label(row: pd.Series, keys: list[str]) -> str:
    """'spectral_radius=0.8, draw=0': a run's matrix values, each key without its section."""
    def name(key: str) -> str:
        return key.split(".", 1)[1] if "." in key else key

    # A key this run does not set is left out, unless nothing else tells it from the others.
    parts = [f"{name(key)}={value_text(row[key])}" for key in keys if not pd.isna(row[key])]
    return ", ".join(parts or [f"{name(key)}=-" for key in keys]) or "all runs"
