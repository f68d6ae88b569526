"""`table --untuned DIR`: a tuned experiment's tables with the untuned experiment's runs beside them.

A tuned experiment (a spec with `tune:`) trains each matrix point's best setting;
the same experiment without `tune:` trains the spec's own values. With
`--untuned` the two folders' runs become one frame with a `tuning` column
(`tuned` / `untuned`), which every table takes as its last column key: each cell
gets the untuned cell of the same matrix values beside it (`lstm / tuned`,
`lstm / untuned`). The table of every run (no `table:` section) gets two
columns per metric (`accuracy / tuned`, `accuracy / untuned`). `--baseline
tuning=untuned` then tests each tuned cell against its untuned one over seeds.

The `tuned.*` columns (the values tuning chose) are left out of the frame: they
are not what tells the two sides apart, and tuning.md shows them.

What is refused (a SpecError naming the folder): untuned results that are
missing or damaged, that are the tuned results themselves, that are tuned too,
whose matrix columns are not the tuned results' (another experiment), or that
share no matrix point with them; tuned results that are not tuned. Runs of the
untuned results at points the tuned results lack are left out, and a note
names those points.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from seqkeras.errors import SpecError
from seqkeras.reporting.baseline import Baseline
from seqkeras.reporting.figures import value_text
from seqkeras.reporting.selection import key_list
from seqkeras.reporting.tables import corner, defaultkey_list, pivot, summary_tables
from seqkeras.results.folder import TUNED_PREFIX, is_matrix_column, read_runs, read_saved_spec
from seqkeras.spec.sections import TableSpec

OPTION = "--untuned"
TUNING = "tuning"  # the column that tells the two sides apart, and its values
TUNED, UNTUNED = "tuned", "untuned"


@dataclass
class Beside:
    """The runs of both sides in one frame (a `tuning` column), and what the command says about them."""

    runs: pd.DataFrame
    point_columns: list[str]
    notes: list[str]


def beside_untuned(tuned: pd.DataFrame, tuned_path: Path, untuned_path: Path) -> Beside:
    """The tuned runs (read from `tuned_path`) and the untuned runs of `untuned_path` at the same matrix points,
    one frame; a SpecError naming what is wrong when the two are not one experiment tuned and untuned."""
    tuned_folder, untuned_folder = _folder(tuned_path), _folder(untuned_path)
    if not os.path.exists(untuned_path):
        raise SpecError(f"{OPTION} {untuned_path}: no such results folder or runs.csv")
    if tuned_folder.resolve() == untuned_folder.resolve():
        raise SpecError(f"{OPTION} {untuned_path} names the tuned results themselves; give the results of the "
                        "same experiment without tune:")
    if not _is_tuned(tuned, tuned_folder):
        raise SpecError(f"{tuned_path} holds no tuned runs (no tuned.* column in its runs.csv, no tune: in its "
                        f"experiment.yaml); {OPTION} sets a tuned experiment beside its untuned one")
    try:
        untuned = read_runs(untuned_path)
    except SpecError as error:
        raise SpecError(f"{OPTION}: {error}") from None
    if _is_tuned(untuned, untuned_folder):
        raise SpecError(f"{OPTION} {untuned_path}: its runs are tuned too (tuned.* columns in its runs.csv, or "
                        "tune: in its experiment.yaml); give the results of the experiment without tune:")
    for side in (tuned, untuned):
        if TUNING in side.columns:
            raise SpecError(f"a runs.csv has a column {TUNING!r}, the name {OPTION} gives the two sides' column")
    points = point_columns(tuned)
    theirs = point_columns(untuned)
    if sorted(points) != sorted(theirs):
        raise SpecError(f"{OPTION} {untuned_path}: its matrix columns ({', '.join(theirs) or 'none'}) are not the "
                        f"tuned results' ({', '.join(points) or 'none'}): the results of another experiment")
    ours, theirs_points = _points(tuned, points), _points(untuned, points)
    shared = theirs_points.isin(set(ours))
    if len(untuned) and not shared.any():
        raise SpecError(f"{OPTION} {untuned_path}: none of its runs is at a matrix point of {tuned_path} "
                        f"(its points: {_listed(theirs_points)}); the results of another experiment")
    notes = []
    if not shared.all():
        left_out = theirs_points[~shared]
        notes.append(f"{int((~shared).sum())} run(s) of {untuned_path} left out: the tuned results have no "
                     f"matrix point {_listed(left_out)}")
    without = ~ours.isin(set(theirs_points))
    if without.any():
        notes.append(f"no untuned run at {_listed(ours[without])}: the untuned cells there are empty")
    runs = pd.concat([_side(tuned, TUNED), _side(untuned[shared.to_numpy()], UNTUNED)], ignore_index=True)
    return Beside(runs, points, notes)


def point_columns(runs: pd.DataFrame) -> list[str]:
    """The matrix columns of runs.csv, without the values tuning chose (`tuned.*`)."""
    return [c for c in runs.columns if is_matrix_column(c) and not c.startswith(TUNED_PREFIX)]


def with_tuning_column(table: TableSpec) -> TableSpec:
    """The table with `tuning` as its last column key (unless the user put it along the rows or columns)."""
    if TUNING in key_list(table.rows) + key_list(table.columns):
        return table
    return table.model_copy(update={"columns": [*key_list(table.columns), TUNING]})


def pivot_beside(beside: Beside, table: TableSpec, statistics: bool = False,
                 baseline: Baseline | None = None) -> pd.DataFrame:
    """`table --rows … --value … --untuned`: the pivot with a tuned and an untuned column per cell."""
    return pivot(beside.runs, with_tuning_column(table), statistics, baseline, best=False)


def summary_tables_beside(beside: Beside, tables: list[TableSpec], pool: list[str] = (), statistics: bool = False,
                          baseline: Baseline | None = None,
                          own_decoders: list[str] | None = None) -> list[tuple[str, pd.DataFrame]]:
    """The tuned experiment's tables (or the table of every run), each with the untuned runs beside its cells."""
    if tables:
        return summary_tables(beside.runs, [with_tuning_column(t) for t in tables], beside.point_columns,
                              pool=pool, statistics=statistics, baseline=baseline, own_decoders=own_decoders,
                              best=False)
    keys = defaultkey_list(beside.runs, [*beside.point_columns, TUNING], list(pool))
    frames = summary_tables(beside.runs, [], [*beside.point_columns, TUNING], pool=pool, statistics=statistics,
                            baseline=baseline, own_decoders=own_decoders, best=False)
    return [(title, tuning_in_columns(frame, [k for k in keys if k != TUNING], statistics)) for title, frame in frames]


METRIC = "metric"  # what the table of every run has along its columns, before `tuning`


def tuning_in_columns(frame: pd.DataFrame, row_keys: list[str], statistics: bool = False) -> pd.DataFrame:
    """The table of every run, `tuning` moved from its rows into its columns: `accuracy / tuned`,
    `accuracy / untuned` per metric, the rows in their order. Without other row keys, `tuning` stays the rows.
    Its column keys are then `metric / tuning`: the texts' corner header says so (`tables.corner`), and the
    numbers' attrs, for the CSV."""
    if frame.empty or not row_keys or TUNING not in frame.columns:
        return frame
    attrs = {**frame.attrs, "rows": list(row_keys), "columns": [METRIC, TUNING]}
    order = list(dict.fromkeys(frame[row_keys].itertuples(index=False, name=None)))
    wide = frame.set_index([*row_keys, TUNING]).unstack(TUNING)
    wide = wide.reindex(pd.MultiIndex.from_tuples(order, names=row_keys) if len(row_keys) > 1
                        else pd.Index([values[0] for values in order], name=row_keys[0]))
    sides = [side for side in (TUNED, UNTUNED) if side in wide.columns.get_level_values(TUNING)]
    metrics = [c for c in frame.columns if c not in (*row_keys, TUNING)]
    wide = wide[[(metric, side) for metric in metrics for side in sides]]
    wide.columns = [f"{metric} / {side}" for metric, side in wide.columns]
    wide = wide.fillna("").reset_index()
    if not statistics:
        wide = wide.rename(columns={row_keys[-1]: corner(row_keys, [METRIC, TUNING])})
    wide.attrs = attrs
    return wide


def legend(tuned_path: Path, untuned_path: Path) -> str:
    return (f"{TUNING}: {TUNED} = {tuned_path} (each matrix point's best setting, tuning.md says which); "
            f"{UNTUNED} = {untuned_path} (the spec's own values).")


def _folder(path: Path) -> Path:
    return path if path.is_dir() else path.parent


def _is_tuned(runs: pd.DataFrame, folder: Path) -> bool:
    return any(c.startswith(TUNED_PREFIX) for c in runs.columns) or bool(read_saved_spec(folder).get("tune"))


def _side(runs: pd.DataFrame, side: str) -> pd.DataFrame:
    kept = runs.drop(columns=[c for c in runs.columns if c.startswith(TUNED_PREFIX)])
    return kept.assign(**{TUNING: side})


def _points(runs: pd.DataFrame, columns: list[str]) -> pd.Series:
    """Each run's matrix point as text, `model.cell=lstm, task.lag=5`, numbers as tables write them (5.0 is 5)."""
    return pd.Series([", ".join(f"{key}={_value(value)}" for key, value in zip(columns, values)) or "the experiment"
                      for values in runs[columns].itertuples(index=False)], index=runs.index, dtype=object)


def _value(value: Any) -> str:
    return "-" if value is None or (isinstance(value, float) and pd.isna(value)) else value_text(value)


def _listed(points: pd.Series, limit: int = 5) -> str:
    distinct = list(dict.fromkeys(points))
    shown = "; ".join(distinct[:limit])
    return shown + (f"; … ({len(distinct)} points)" if len(distinct) > limit else "")
