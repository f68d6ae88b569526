"""Runs logged to an MLflow tracking store: `seqkeras run … --track mlflow[=URI]` and `seqkeras export`.

Each finished run (reused ones too) becomes one MLflow run, in the MLflow experiment
named as the seqkeras experiment:

- params: the run's resolved spec (its spec.yaml), one per key path (`model.units`);
- metrics: each epoch's history values (history.csv, step = epoch), and the run's
  final metrics as in runs.csv (a run with several evaluation rows, one per decoder,
  gets `<decoder …>/<metric>`), with `params`, `train_seconds` and `seconds`;
- artifacts: the files of the run's folder;
- tags: `seqkeras.experiment`, `seqkeras.run_id`, `seqkeras.status`, the seed and the
  backend; `mlflow.runName` is the run id.

The default store is a SQLite database in the results root, `<out>/mlflow.db`, with
the artifacts beside it in `<out>/mlflow-artifacts/` (`mlflow ui --backend-store-uri
sqlite:///results/mlflow.db` opens it); `--track mlflow=URI` names any other store.
A record is logged once: logging it again (a rerun that reuses it, an export) finds
it by its `seqkeras.record` tag and leaves it. Tracking never fails a run: what
cannot be logged is said, and the run's folder and runs.csv have everything.
"""

from __future__ import annotations

import importlib.util
import logging
import math
from pathlib import Path
from typing import Any

import yaml

from seqkeras.errors import SpecError
from seqkeras.results.folder import flat_keys

STORE_FILE = "mlflow.db"
ARTIFACTS_FOLDER = "mlflow-artifacts"
SKIPPED_FILES = {".lock", ".resume"}


def missing() -> str | None:
    if importlib.util.find_spec("mlflow") is None:
        return "--track mlflow needs MLflow: .venv/bin/pip install -r requirements-tracking.txt"
    return None


def parse_track(option: str, out_root: Path) -> str:
    """`mlflow` → the default SQLite store in `out_root`; `mlflow=URI` → URI. Anything else is a SpecError."""
    name, _, uri = option.partition("=")
    if name != "mlflow":
        raise SpecError(f"--track {option!r}: the tracker is mlflow (--track mlflow, or --track mlflow=URI)")
    if _ and not uri:
        raise SpecError("--track mlflow=: give the tracking URI after '=', or leave '=' out for the default store")
    reason = missing()
    if reason:
        raise SpecError(reason)
    return uri or f"sqlite:///{(out_root / STORE_FILE).resolve()}"


class MlflowTracker:
    """Logs seqkeras records to one tracking store; `log` returns what went wrong, never raises."""

    def __init__(self, uri: str, out_root: Path):
        self.uri = uri
        self.artifacts = (out_root / ARTIFACTS_FOLDER).resolve()
        self._client = None
        self._experiments: dict[str, str] = {}

    def describe(self) -> str:
        return f"tracking: each run is logged to MLflow at {self.uri}"

    def log(self, record: dict[str, Any], run_folder: Path) -> str | None:
        """Log one record (and its folder's files); None when logged or already there, else the error."""
        try:
            self._log(record, run_folder)
        except Exception as error:  # a tracking failure must not cost the run: it is said, not raised
            first = str(error).strip().splitlines()[0][:300] if str(error).strip() else ""
            return f"{type(error).__name__}: {first}"
        return None

    def _connect(self):
        if self._client is None:
            from mlflow.tracking import MlflowClient

            # MLflow's store set-up logs its database migrations at INFO on the first connection.
            for name in ("mlflow", "alembic"):
                logging.getLogger(name).setLevel(logging.WARNING)
            self._client = MlflowClient(tracking_uri=self.uri)
        return self._client

    def _experiment_id(self, name: str) -> str:
        if name not in self._experiments:
            client = self._connect()
            found = client.get_experiment_by_name(name)
            if found is not None:
                self._experiments[name] = found.experiment_id
            else:
                location = (self.artifacts / name).as_uri() if self.uri.startswith("sqlite:") else None
                self._experiments[name] = client.create_experiment(name, artifact_location=location)
        return self._experiments[name]

    def _log(self, record: dict[str, Any], run_folder: Path) -> None:
        from mlflow.entities import Metric, Param, RunTag

        client = self._connect()
        experiment = self._experiment_id(record["experiment"])
        key = f"{record['run_id']}@{record.get('started', '')}"  # this record, not another run of the same spec
        if client.search_runs([experiment], filter_string=f"tags.`seqkeras.record` = '{_quoted(key)}'",
                              max_results=1):
            return
        tags = {"seqkeras.experiment": record["experiment"], "seqkeras.run_id": record["run_id"],
                "seqkeras.record": key, "seqkeras.status": record["status"], "seqkeras.seed": str(record["seed"]),
                "seqkeras.backend": str(record.get("backend", "")), "mlflow.runName": record["run_id"]}
        run = client.create_run(experiment, run_name=record["run_id"], tags=tags)
        run_id = run.info.run_id
        try:
            params = [Param(key, value) for key, value in spec_params(run_folder)]
            metrics = [Metric(name, value, 0, step) for name, value, step in record_metrics(record, run_folder)]
            for start in range(0, len(params), 100):  # MLflow's limits per batch
                client.log_batch(run_id, params=params[start:start + 100])
            for start in range(0, len(metrics), 1000):
                client.log_batch(run_id, metrics=metrics[start:start + 1000])
            client.log_batch(run_id, tags=[RunTag("seqkeras.folder", str(run_folder.resolve()))])
            for path in sorted(run_folder.iterdir()):
                if path.name in SKIPPED_FILES:
                    continue
                if path.is_dir():
                    client.log_artifacts(run_id, str(path), artifact_path=path.name)
                else:
                    client.log_artifact(run_id, str(path))
        except BaseException:
            client.set_terminated(run_id, status="FAILED")
            raise
        client.set_terminated(run_id, status="FINISHED" if record["status"] == "ok" else "FAILED")


def _quoted(text: str) -> str:
    return text.replace("\\", "\\\\").replace("'", "\\'")


def spec_params(run_folder: Path) -> list[tuple[str, str]]:
    """The run's resolved spec as (key path, value text) pairs: `model.units` → '32'."""
    path = run_folder / "spec.yaml"
    if not path.is_file():
        return []
    spec = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    return [(key, str(value)[:6000]) for key, value in flat_keys(spec).items()]  # MLflow's limit on a param


def metric_name(text: str) -> str:
    """An MLflow metric name: letters, digits and _ - . space / only."""
    return "".join(c if c.isalnum() or c in "_-. /" else "_" for c in text)


def record_metrics(record: dict[str, Any], run_folder: Path) -> list[tuple[str, float, int]]:
    """(name, value, step) for each number of the record and of history.csv (step = epoch)."""
    import pandas as pd

    found: list[tuple[str, float, int]] = []
    history = run_folder / "history.csv"
    if history.is_file():
        frame = pd.read_csv(history)
        steps = frame["epoch"] if "epoch" in frame else range(1, len(frame) + 1)
        for column in frame.columns:
            if column != "epoch" and pd.api.types.is_numeric_dtype(frame[column]):
                found += [(metric_name(f"epoch/{column}"), float(v), int(s)) for s, v in zip(steps, frame[column])
                          if math.isfinite(v)]
    last = int(found[-1][2]) if found else 0
    rows = record.get("rows") or [{"keys": {}, "metrics": record.get("metrics") or {}}]
    for row in rows:
        label = "/".join(f"{k}={v}" for k, v in row["keys"].items())
        for name, value in row["metrics"].items():
            if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
                found.append((metric_name(f"{label}/{name}" if label else name), float(value), last))
    for name in ("params", "train_seconds", "seconds"):
        value = record.get(name)
        if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
            found.append((name, float(value), last))
    return found
