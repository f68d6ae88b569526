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
_UMASK = os.umask(0)
os.umask(_UMASK)
TRAILING_COLUMNS = ["params", "train_seconds", "backend"]


def write_atomic(path: Path, content: str | bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "wb") as file:
            file.write(content.encode("utf-8") if isinstance(content, str) else content)
        # mkstemp makes the file private (0600); results are meant to be read and served.
        os.chmod(temporary, 0o666 & ~_UMASK)
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
    """One row per run (or per evaluation row of a run, e.g. per decoder), in DESIGN.md's column order."""
    expanded = [(record, row) for record in records for row in _evaluation_rows(record)]
    key_columns: list[str] = []
    metric_names: list[str] = []
    for _, row in expanded:
        key_columns += [k for k in row["keys"] if k not in key_columns]
        metric_names += [m for m in row["metrics"] if m not in metric_names]
    rows = []
    for record, row in expanded:
        line = {"experiment": record["experiment"], "run_id": record["run_id"], "status": record["status"]}
        line.update({key: record.get("matrix", {}).get(key) for key in matrix_columns})
        line.update({key: row["keys"].get(key) for key in key_columns})
        line["seed"] = record["seed"]
        line.update({name: row["metrics"].get(name) for name in metric_names})
        line.update({name: record.get(name) for name in TRAILING_COLUMNS})
        line["error"] = record.get("error") or ""
        rows.append(line)
    columns = ["experiment", "run_id", "status", *matrix_columns, *key_columns, "seed", *metric_names,
               *TRAILING_COLUMNS, "error"]
    return pd.DataFrame(rows, columns=columns)


def one_row_per_run(runs: pd.DataFrame) -> pd.DataFrame:
    """runs.csv with one row per run: a run evaluated with several decoders has a row for each."""
    return runs.drop_duplicates("run_id") if "run_id" in runs else runs


def run_counts(runs: pd.DataFrame) -> tuple[int, int, int]:
    """(runs, finished ok, failed), counting runs, not their evaluation rows."""
    distinct = one_row_per_run(runs)
    return len(distinct), int((distinct["status"] == OK).sum()), int((distinct["status"] == FAILED).sum())


def _evaluation_rows(record: dict[str, Any]) -> list[dict[str, Any]]:
    rows = record.get("rows")
    return rows if rows else [{"keys": {}, "metrics": record.get("metrics", {})}]


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


def rebuild_runs(folder: Path, order: list[str] | None = None) -> tuple[int, list[Path]]:
    """Rewrite runs.csv from every run folder's metrics.json; returns (runs, damaged files).

    Rows follow `order` (the experiment's run ids, matrix order) where given;
    run folders it does not name come after it, by name.
    """
    if not folder.is_dir():
        raise SpecError(f"{folder} is not a results folder")
    position = {run_id: index for index, run_id in enumerate(order or [])}
    paths = sorted(folder.glob("*/metrics.json"), key=lambda p: (position.get(p.parent.name, len(position)), p.parent.name))
    records, damaged = [], []
    for path in paths:
        record = read_record(path)
        if record is None or not {"experiment", "run_id", "seed"} <= set(record):
            damaged.append(path)
        else:
            records.append(record)
    matrix_columns: list[str] = []
    for record in records:
        matrix_columns += [k for k in record.get("matrix", {}) if k not in matrix_columns]
    write_csv(folder / "runs.csv", runs_frame(records, matrix_columns))
    return len(records), damaged
