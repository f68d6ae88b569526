"""Which runs of a results folder a user means: `predict` and `evaluate` by matrix values, a seed or the best run by a
metric, instead of a run folder's hashed name.

A selection reads the experiment's runs.csv (results.folder.read_runs, which checks it) and keeps the finished
runs (status ok) that match all of:

- `where`: matrix values, KEY=VALUE, as `--only` reads them (`model.cell=gru`; the same key twice means either
  value); a key is a column of runs.csv (`model.cell`, `seed`, `tuned.…`) or the last part of exactly one matrix
  key (`cell`);
- `seed`: the run's seed;
- `best`: a metric of the catalog that says which way is better (`Metric.direction`): of the runs left, the one
  with the best value (of its rows, when it was evaluated with several decoders).

`predict` needs one run: a selection that leaves several, or several tied at the best value, is refused with each
candidate on a line of its own, so that the user can narrow it. `evaluate` takes every run a selection leaves.
"""

from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from seqkeras.errors import SpecError, listed, shown, unknown_choice
from seqkeras.evaluation.metric_catalog import METRICS
from seqkeras.results import files
from seqkeras.results.folder import OK, is_matrix_column, one_row_per_run, read_runs
from seqkeras.spec.outputs import same_value
from seqkeras.spec.selection import KEY, parse_only

RUNS_CSV = "runs.csv"
RECORD = "metrics.json"
# An ambiguous selection lists at most this many candidates (and says how many more there are).
SHOWN_CANDIDATES = 20


@dataclass(frozen=True)
class Selection:
    """What a user asked for, checked: matrix values (key → accepted values), a seed, a metric to take the best by."""

    where: dict[str, list[Any]] = field(default_factory=dict)
    seed: int | None = None
    best: str | None = None

    def __bool__(self) -> bool:
        return bool(self.where) or self.seed is not None or self.best is not None

    def describe(self) -> str:
        """`model.cell=gru, seed 0, best by accuracy`: the selection as the messages name it."""
        parts = [f"{key}={'|'.join(map(str, values))}" for key, values in self.where.items()]
        parts += [f"seed {self.seed}"] if self.seed is not None else []
        parts += [f"the best by {self.best}"] if self.best is not None else []
        return ", ".join(parts)


def selection(where: Any = None, seed: Any = None, best: Any = None,
              names: tuple[str, str, str] = ("--where", "--seed", "--best")) -> Selection:
    """A Selection from the command's options or the API's arguments; a SpecError naming the option (`names`) and
    the value. `where`: KEY=VALUE texts (each value read as YAML, as `--only` reads it), or (from Python) a mapping
    of key → value or list of values."""
    if where is None:
        values: dict[str, list[Any]] = {}
    elif isinstance(where, dict):  # from Python: the values as given (a list: any of them), not read as YAML
        values = {str(key): list(value) if isinstance(value, (list, tuple)) else [value]
                  for key, value in where.items()}
        for key in values:
            if not re.fullmatch(KEY, key):
                raise SpecError(f"{names[0]} {shown(key)}: not a matrix key such as task.lag or model.cell")
    elif isinstance(where, (list, tuple)):
        values = parse_only(list(where), names[0])
    else:
        raise SpecError(f"{names[0]} takes KEY=VALUE texts or a mapping, not {shown(where)}")
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int) or seed < 0):
        raise SpecError(f"{names[1]} takes a seed (a whole number, 0 or more), not {shown(seed)}")
    if best is not None:
        ranked = [metric.name for metric in METRICS if metric.direction is not None]
        if isinstance(best, str) and best in METRICS.names() and best not in ranked:
            raise SpecError(f"{names[2]} {shown(best)}: {best} is no score of a model (neither higher nor lower is "
                            f"better), so it ranks no runs; metrics that do: {listed(sorted(ranked))}")
        if not isinstance(best, str) or best not in ranked:
            raise SpecError(f"{names[2]} {shown(best)}: {unknown_choice('metric', best, ranked)}")
    return Selection(values, seed, best)


def is_run_folder(path: Path) -> bool:
    """A run folder (it has metrics.json, and no runs.csv of its own), as against an experiment's results folder."""
    return path.is_dir() and files.present(path, RECORD) and not files.present(path, RUNS_CSV)


def chosen_run(path: Path, wanted: Selection, *, echo=None) -> Path:
    """The one run folder `path` and `wanted` mean: `path` itself when it is a run folder (and nothing is selected),
    else the run of the experiment folder `path` that the selection leaves; a SpecError listing the candidates when
    it leaves several or none. `echo` (when given) is told which run was chosen and why."""
    if is_run_folder(path):
        if wanted:
            raise SpecError(f"{path} is one run's folder: {wanted.describe()} selects among an experiment's runs; "
                            f"give its results folder ({path.parent})")
        return path
    if not path.is_dir() or not files.present(path, RUNS_CSV):
        raise SpecError(f"{path}: not a run folder nor an experiment's results folder (expected "
                        "results/<name>/<run_id> or results/<name>, which `run` writes)")
    candidates = selected(path, wanted)
    if len(candidates) != 1:
        raise SpecError(ambiguous(path, wanted, candidates))
    row = candidates.iloc[0]
    if echo is not None:
        echo(f"run: {path / row['run_id']} ({describe_run(row, candidates.attrs['shown'])})")
    return path / str(row["run_id"])


def selected_run_ids(path: Path, wanted: Selection) -> list[str]:
    """The run ids of the experiment folder `path` that `wanted` leaves (`evaluate`); a SpecError when none, or
    when `best` leaves a tie."""
    candidates = selected(path, wanted)
    if wanted.best is not None and len(candidates) > 1:
        raise SpecError(ambiguous(path, wanted, candidates))
    if candidates.empty:
        raise SpecError(ambiguous(path, wanted, candidates))
    return [str(run_id) for run_id in candidates["run_id"]]


def selected(path: Path, wanted: Selection) -> pd.DataFrame:
    """The finished runs of `path` that `wanted` leaves, one row each (with --best: those tied at the best value);
    `attrs['shown']` names the columns that tell them apart."""
    runs = read_runs(path)
    if runs.empty:
        raise SpecError(f"{path}/{RUNS_CSV} has no runs yet")
    where = {resolved_key(runs, key, path): values for key, values in wanted.where.items()}
    chosen = runs[runs["status"] == OK]
    for key, values in where.items():
        chosen = chosen[chosen[key].map(lambda value, values=values: any(same_value(value, v) for v in values))]
    if wanted.seed is not None:
        chosen = chosen[chosen["seed"].map(lambda value: same_value(value, wanted.seed))]
    # A run is told apart by the matrix keys that vary in its experiment (each run of cells-long-range has a dozen
    # matrix columns, most of them the same for every run).
    shown_columns = [column for column in runs.columns if is_matrix_column(column) and varies(runs[column])]
    shown_columns.append("seed")
    if wanted.best is not None:
        chosen = best_of(chosen, wanted.best, path)
        shown_columns.append(wanted.best)
    chosen = one_row_per_run(chosen).reset_index(drop=True)
    for run_id in chosen["run_id"]:
        if not isinstance(run_id, str) or "/" in run_id or files.name_problem(run_id):
            raise SpecError(f"{path}/{RUNS_CSV} names run {shown(run_id)}, which is no folder name inside it")
        if os.path.lexists(path / run_id) and not files.is_folder(path, run_id):  # a model is never read through it
            what = "a symbolic link; links inside a results folder are not followed" \
                if os.path.islink(path / run_id) else "not a folder"
            raise SpecError(f"{path / run_id}: the run {wanted.describe() or 'selected'} chose is {what}")
    chosen.attrs["shown"] = shown_columns
    return chosen


def resolved_key(runs: pd.DataFrame, key: str, path: Path) -> str:
    """A --where key as runs.csv's column: itself, or the one matrix column it ends."""
    if key in runs.columns and key not in ("experiment", "run_id", "status", "error"):
        return key
    matrix = [column for column in runs.columns if is_matrix_column(column)]
    ending = [column for column in matrix if column.rsplit(".", 1)[-1] == key]
    if len(ending) == 1:
        return ending[0]
    if len(ending) > 1:
        raise SpecError(f"--where {key}: several matrix keys end so ({', '.join(ending)}); write the whole key")
    raise SpecError(f"--where {key}: {unknown_choice('matrix key', key, [*matrix, 'seed'])} (the columns of "
                    f"{path}/{RUNS_CSV})")


def best_of(runs: pd.DataFrame, metric: str, path: Path) -> pd.DataFrame:
    """The rows of the runs with the best `metric` value (several when tied); each run's best row counts."""
    if metric not in runs.columns:
        measured = [m.name for m in METRICS if m.direction is not None and m.name in runs.columns]
        raise SpecError(f"--best {metric}: the runs of {path} measured no {metric} (they measured: "
                        f"{listed(measured) if measured else 'no metric that ranks runs'})")
    values = pd.to_numeric(runs[metric], errors="coerce")
    finite = runs[values.map(lambda value: isinstance(value, float) and math.isfinite(value))]
    if finite.empty:
        return finite
    numbers = pd.to_numeric(finite[metric])
    best = numbers.max() if METRICS.get(metric).direction == "maximize" else numbers.min()
    return finite[numbers == best]


def ambiguous(path: Path, wanted: Selection, candidates: pd.DataFrame) -> str:
    """Why a selection names no single run: none, or several, each on a line of its own."""
    what = f" with {wanted.describe()}" if wanted else ""
    if candidates.empty:
        return f"{path}: no finished run{what}; `seqkeras table {path}` shows its runs"
    if wanted.best is not None:
        narrowed = Selection(wanted.where, wanted.seed)
        what = (f"{f' with {narrowed.describe()}' if narrowed else ''} tied at the best {wanted.best} "
                f"({candidates[wanted.best].iloc[0]:.6g})")
    narrow = "narrow it with --where KEY=VALUE, --seed N or --best METRIC, or give one run's folder"
    lines = [f"{path}: {len(candidates)} finished runs{what}; {narrow}:"]
    shown_columns = [column for column in candidates.attrs.get("shown", ["seed"])
                     if column in ("seed", wanted.best) or varies(candidates[column])]
    for _, row in candidates.head(SHOWN_CANDIDATES).iterrows():
        lines.append(f"  {row['run_id']}  ({describe_run(row, shown_columns)})")
    if len(candidates) > SHOWN_CANDIDATES:
        lines.append(f"  … and {len(candidates) - SHOWN_CANDIDATES} more")
    return "\n".join(lines)


def varies(column: pd.Series) -> bool:
    return column.nunique(dropna=False) > 1


def describe_run(row: pd.Series, columns: list[str]) -> str:
    """`model.cell=lstm, seed=0, accuracy=0.53`: what tells a run apart from its experiment's others."""
    return ", ".join(f"{column}={row[column]:.4g}" if isinstance(row[column], float) and column not in ("seed",)
                     else f"{column}={row[column]}" for column in columns if column in row.index
                     and not (isinstance(row[column], float) and math.isnan(row[column])))
