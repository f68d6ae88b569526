"""A seqkeras record as an MLflow run's params and metrics.

- params: the run's resolved spec (its spec.yaml), one per key path (`model.units`);
- metrics: each epoch's history values (history.csv, step = epoch), and the run's
  final metrics as in runs.csv (a run with several evaluation rows, one per decoder,
  gets `<decoder …>/<metric>`), with `params`, `train_seconds` and `seconds`.

Every file of the run folder is read through `results.files` (regular, bounded, no
link followed); one that cannot be read is said through `warn` and left out, never
raised: tracking never fails a run.
"""

from __future__ import annotations

import io
import math
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd
import yaml

from seqkeras.errors import SpecError
from seqkeras.results.files import read_text
from seqkeras.results.folder import TRAINING_COLUMNS
from seqkeras.spec.runs import flat_keys
from seqkeras.tracking.mlflow_store import first_line


def _read_run_file(run_folder: Path, name: str, warn: Callable[[str], None] | None) -> str | None:
    """The text of the run folder's `name` through `results.files` (no link, bounded); None when absent or unusable."""
    if not os.path.lexists(run_folder / name):
        return None
    try:
        return read_text(run_folder, name)
    except SpecError as error:
        if warn is not None:
            warn(f"{error}; not logged to the tracker")
        return None


def spec_params(run_folder: Path, *, warn: Callable[[str], None] | None = None) -> list[tuple[str, str]]:
    """The run's resolved spec as (key path, value text) pairs: `model.units` → '32'."""
    text = _read_run_file(run_folder, "spec.yaml", warn)
    if text is None:
        return []
    try:
        spec = yaml.safe_load(text) or {}
    except yaml.YAMLError as error:
        if warn is not None:
            warn(f"{run_folder / 'spec.yaml'} is not YAML ({first_line(error)}); its params are not logged")
        return []
    if not isinstance(spec, dict):
        return []
    return [(key, str(value)[:6000]) for key, value in flat_keys(spec).items()]  # MLflow's limit on a param


def metric_name(text: str) -> str:
    """An MLflow metric name: letters, digits and _ - . space / only."""
    return "".join(c if c.isalnum() or c in "_-. /" else "_" for c in text)


def history_metrics(run_folder: Path, warn: Callable[[str], None] | None = None) -> list[tuple[str, float, int]]:
    """(epoch/<column>, value, epoch) for each number of the run's history.csv (with evaluations every N steps,
    the evaluation's number for the epoch)."""
    text = _read_run_file(run_folder, "history.csv", warn)
    if text is None:
        return []
    found: list[tuple[str, float, int]] = []
    try:
        frame = pd.read_csv(io.StringIO(text))
        # A row per evaluation every N steps (a `step` column, epochs as fractions): step = the evaluation's
        # number, as the live run and TensorBoard count them.
        by_rows = "epoch" not in frame or "step" in frame
        steps = range(1, len(frame) + 1) if by_rows else frame["epoch"]
        for column in frame.columns:
            if column not in ("epoch", "step") and pd.api.types.is_numeric_dtype(frame[column]):
                found += [(metric_name(f"epoch/{column}"), float(v), int(s)) for s, v in zip(steps, frame[column])
                          if math.isfinite(v)]
    except (ValueError, TypeError, OverflowError, pd.errors.ParserError, pd.errors.EmptyDataError) as error:
        if warn is not None:
            warn(f"{run_folder / 'history.csv'} cannot be read as a table ({first_line(error)}); "
                 "its epochs are not logged")
        return []
    return found


def record_metrics(record: dict[str, Any], run_folder: Path, *,
                   warn: Callable[[str], None] | None = None) -> list[tuple[str, float, int]]:
    """(name, value, step) for each number of the record and of history.csv (step = epoch)."""
    history = history_metrics(run_folder, warn)
    return history + final_metrics(record, int(history[-1][2]) if history else 0)


def final_metrics(record: dict[str, Any], last_epoch: int) -> list[tuple[str, float, int]]:
    """(name, value, last_epoch) for each number of the record: its metrics (of each evaluation row), its
    parameter count and its times, and runs.csv's columns of its training (epochs_trained, best_epoch, and
    still_improving as 1 or 0)."""
    found: list[tuple[str, float, int]] = []
    rows = record.get("rows") or [{"keys": {}, "metrics": record.get("metrics") or {}}]
    for row in rows:
        label = "/".join(f"{k}={v}" for k, v in row["keys"].items())
        for name, value in row["metrics"].items():
            if is_number(value):
                found.append((metric_name(f"{label}/{name}" if label else name), float(value), last_epoch))
    for name in ("params", "train_seconds", "seconds"):
        value = record.get(name)
        if is_number(value):
            found.append((name, float(value), last_epoch))
    training = record.get("training") if isinstance(record.get("training"), dict) else {}
    for column, key in TRAINING_COLUMNS.items():
        value = training.get(key)
        if isinstance(value, bool) or is_number(value):
            found.append((column, float(value), last_epoch))
    return found


def is_number(value: Any) -> bool:
    """A finite int or float, not a bool: what MLflow takes as a metric."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
