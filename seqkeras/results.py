"""The results folder: what each run writes, and the experiment's runs.csv.

results/<name>/runs.csv                one row per run
results/<name>/table.md                pivot tables and verdicts
results/<name>/experiment.yaml         the experiment as run (after --set)
results/<name>/<run_id>/spec.yaml      the run's resolved spec
results/<name>/<run_id>/metrics.json   metrics, status, error, timings, versions
results/<name>/<run_id>/history.csv    per-epoch curves (training runs)
results/<name>/<run_id>/<curve>.csv    probe curves

Every file is written to a temporary name and renamed into place, so an
interrupted run never leaves a half-written file behind.
"""

from __future__ import annotations

import json
import math
import os
import tempfile
from pathlib import Path
from typing import Any

import pandas as pd
import yaml

from seqkeras.errors import SpecError

OK, FAILED = "ok", "failed"
TRAILING_COLUMNS = ["params", "train_seconds", "backend"]


def write_atomic(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as file:
            file.write(text)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def write_yaml(path: Path, data: Any) -> None:
    write_atomic(path, yaml.safe_dump(data, sort_keys=False, allow_unicode=True))


def write_json(path: Path, data: Any) -> None:
    write_atomic(path, json.dumps(_json_safe(data), indent=2, ensure_ascii=False) + "\n")


def write_csv(path: Path, frame: pd.DataFrame) -> None:
    write_atomic(path, frame.to_csv(index=False))


def _json_safe(value: Any) -> Any:
    """NaN and inf are not JSON; write them as null."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_safe(v) for v in value]
    if hasattr(value, "item"):  # numpy scalars
        return _json_safe(value.item())
    return value


def read_record(path: Path) -> dict[str, Any] | None:
    """A run's metrics.json, or None when it is missing or damaged."""
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return record if isinstance(record, dict) and "status" in record else None


def runs_frame(records: list[dict[str, Any]], matrix_columns: list[str]) -> pd.DataFrame:
    """One row per run, columns in DESIGN.md's order."""
    rows, metric_names = [], []
    for record in records:
        for name in record.get("metrics", {}):
            if name not in metric_names:
                metric_names.append(name)
    for record in records:
        row = {"experiment": record["experiment"], "run_id": record["run_id"], "status": record["status"]}
        row.update({key: record.get("matrix", {}).get(key) for key in matrix_columns})
        row["seed"] = record["seed"]
        row.update({name: record.get("metrics", {}).get(name) for name in metric_names})
        row.update({name: record.get(name) for name in TRAILING_COLUMNS})
        row["error"] = record.get("error") or ""
        rows.append(row)
    columns = ["experiment", "run_id", "status", *matrix_columns, "seed", *metric_names, *TRAILING_COLUMNS, "error"]
    return pd.DataFrame(rows, columns=columns)


def read_runs(results_dir: Path) -> pd.DataFrame:
    """An experiment's runs.csv (from its folder or the file itself)."""
    path = results_dir / "runs.csv" if results_dir.is_dir() else results_dir
    if not path.exists():
        raise SpecError(f"no runs.csv in {results_dir} (run the experiment first: seqkeras run SPEC)")
    try:
        frame = pd.read_csv(path, keep_default_na=False, na_values=[""])
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as error:
        raise SpecError(f"{path} is damaged and cannot be read: {error}") from None
    missing = {"run_id", "status", "seed"} - set(frame.columns)
    if missing:
        raise SpecError(f"{path} is not a seqkeras runs.csv (missing columns: {', '.join(sorted(missing))})")
    return frame
