"""What every plot draws with: matplotlib figures of panels, distinct colours, values as labels, saved PNGs.

matplotlib is imported only when drawing, and only through `Figure` (never
pyplot), so no display and no global backend state are involved.
"""

from __future__ import annotations

import io
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from seqkeras.results.folder import write_atomic

if TYPE_CHECKING:
    from matplotlib.figure import Figure

DPI = 100


def panels(count: int, *, columns: int = 3, height: float = 3.6, sharey: bool = False, width: float = 4.2):
    """A figure of `count` panels, up to `columns` a row; returns (figure, the panels)."""
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


def panel_grid(rows: int, columns: int):
    """A rows × columns grid of panels sharing the epoch axis, sized for the count."""
    from matplotlib.figure import Figure

    rows, columns = max(rows, 1), max(columns, 1)
    figure = Figure(figsize=(3.4 * columns + 3.6, 2.3 * rows + 0.8), layout="constrained")
    grid = figure.subplots(rows, columns, squeeze=False, sharex=True)
    return figure, grid


def color_for(index: int, count: int = 10):
    """Distinct colours: tab10, or tab20 for up to 20 lines."""
    from matplotlib import colormaps

    if count > 10:
        return colormaps["tab20"](index % 20)
    return colormaps["tab10"](index % 10)


def matrix_cells(values):
    """((row, column), value) for each cell of a 2-D array, for a heatmap's labels."""
    for row in range(values.shape[0]):
        for column in range(values.shape[1]):
            yield (row, column), values[row, column]


def ordered_values(values: pd.Series) -> list[Any]:
    """Distinct values: numerically sorted when all are numbers, else in order of appearance."""
    distinct = list(dict.fromkeys(values.tolist()))
    if all_numeric(distinct):
        return sorted(distinct, key=float)
    return distinct


def all_numeric(values: list[Any]) -> bool:
    """Whether every value reads as a number (true/false do not: they are categories)."""
    try:
        [float(v) for v in values if not isinstance(v, bool)]
    except (TypeError, ValueError):
        return False
    return not any(isinstance(v, bool) for v in values)


def value_text(value: Any) -> str:
    """A value as a label: a whole float without its .0 (a matrix value read back from runs.csv as 5.0)."""
    if isinstance(value, float) and value.is_integer():
        return str(int(value)) if abs(value) < 1e15 else f"{value:g}"
    return str(value)


def natural_order(label: str) -> list:
    """A sort key that orders "lag=5" before "lag=25" before "lag=100" (numbers by value, the rest as text)."""
    return [(0, float(part), "") if re.fullmatch(r"\d+(\.\d+)?", part) else (1, 0.0, part)
            for part in re.split(r"(\d+(?:\.\d+)?)", label)]


def save_png(figure: "Figure", path: Path, *, tight: bool = False) -> None:
    """Write the PNG atomically; no version or date metadata, so unchanged plots keep the same bytes.

    tight: the image is cut to what is drawn, so that a legend placed outside the axes is kept whole."""
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=DPI, metadata={"Software": None},
                   **({"bbox_inches": "tight"} if tight else {}))
    write_atomic(path, buffer.getvalue())
