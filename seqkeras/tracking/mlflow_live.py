"""A run logged to MLflow while it runs, by the process that trains it (`run --track mlflow`).

The executors hand each job a `LiveTracking` (the store's URI, its lock, the experiment's
name: plain data, so it reaches a `--jobs N` worker or a Ray task as it reaches this
process). The process that runs the run opens the MLflow run when the run starts
(`LiveTracking.open`), so MLflow's start time is the run's; each epoch's history values
are logged as they come (`epoch/<name>`, step = epoch, from the suite's epoch loop through
`mlflow_epochs.EpochLogger`); the kept Keras model becomes an MLflow logged model
(`mlflow_models`); at the end (`LiveRun.close`) the record's metrics and the run folder's
files are logged and the run is ended FINISHED or FAILED, at its real end. The tags that
say the record is logged whole are set last, so the command's after-the-fact logging
(`mlflow_tracking`) finds the run and leaves it.

Tracking never fails a run: the first write that fails is said once, live logging stops,
and at the end the half-logged MLflow run is deleted so that the command logs the
record whole, after the fact, from the run's folder. A process killed mid-run leaves its
MLflow run RUNNING; the command marks it FAILED (`seqkeras.status` interrupted) when it
logs that folder's record (`mlflow_tracking.close_interrupted_runs`).
"""

from __future__ import annotations

import contextlib
import os
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from seqkeras.results.folder import print_warning
from seqkeras.tracking.mlflow_models import save_keras_model, upload_model
from seqkeras.tracking.mlflow_records import final_metrics, history_metrics, is_number, metric_name
from seqkeras.tracking.mlflow_store import StoreGuard, first_line, open_client, store_write
from seqkeras.tracking.mlflow_runs import (
    close_run, experiment_id, log_metrics, log_params, opening_tags, record_key, record_name_problem, started_ms,
    upload_run_files,
)


_CLIENTS: dict[str, Any] = {}  # one MlflowClient per store and process: a worker logs many runs


def client_for(uri: str, lock: Path | None = None, guard: StoreGuard | None = None):
    if uri not in _CLIENTS:
        _CLIENTS[uri] = open_client(uri, lock, guard)
    return _CLIENTS[uri]


@dataclass(frozen=True)
class LiveTracking:
    """Where the runs of one experiment are logged while they run; picklable, for worker processes."""

    uri: str = field(repr=False)  # may hold a password (mlflow_store.hidden_credentials)
    lock: Path | None       # the store's inter-process lock (a SQLite or folder store), None for a server
    artifacts: Path         # a SQLite store's artifact root
    experiment: str         # the MLflow experiment: the seqkeras experiment's folder name
    guard: StoreGuard | None = None  # the store's paths below the results root, checked again before each use

    def prepare(self) -> None:
        """Import MLflow and connect, once per process, before the run's clock starts: seconds in a fresh worker,
        which are not the run's. A store that cannot be reached is said when the run opens."""
        with contextlib.suppress(Exception):
            client_for(self.uri, self.lock, self.guard)

    def open(self, record: dict[str, Any], run_folder: Path, *,
             warn: Callable[[str], None] = print_warning) -> LiveRun | None:
        """The run's MLflow run, opened now with its params; None (said through `warn`) when it cannot be."""
        run_folder = Path(os.path.abspath(run_folder))  # as the command names it (its tags say the folder)
        label = f"{self.experiment}/{run_folder.name}"
        problem = record_name_problem(record, run_folder, self.experiment)
        if problem:
            warn(f"{label}: not logged to the tracker while it runs ({problem})")
            return None
        live = LiveRun(self, run_folder, label, warn)
        try:
            store_write(self.lock, lambda: live.start(record), self.guard)
        except Exception as error:  # the command logs it after the fact
            live.failed(error)
            live.discard()
            return None
        return live


class LiveRun:
    """One run's MLflow run while it trains. Every method but `start` says a failure instead of raising."""

    def __init__(self, target: LiveTracking, run_folder: Path, label: str, warn: Callable[[str], None]):
        self.target, self.run_folder, self.label, self.warn = target, run_folder, label, warn
        self.client = None
        self.run_id: str | None = None
        self.experiment_id: str | None = None
        self.broken = False
        self.logged_epochs: set[int] = set()

    def start(self, record: dict[str, Any]) -> None:
        self.client = client_for(self.target.uri)  # under the store's lock already (store_write)
        self.experiment_id = experiment_id(self.client, self.target.experiment, self.target.uri,
                                           self.target.artifacts)
        # The record's start: the MLflow run and metrics.json say the same moment.
        run = self.client.create_run(self.experiment_id, run_name=self.run_folder.name,
                                     start_time=started_ms(record) or int(time.time() * 1000),
                                     tags=opening_tags(record, self.run_folder, self.target.experiment))
        self.run_id = run.info.run_id
        log_params(self.client, self.run_id, self.run_folder, self.warn)

    def epoch(self, epoch: int, logs: dict[str, float]) -> None:
        """One epoch's history values, as `epoch/<name>` at step = epoch (1 for the first, as history.csv)."""
        numbers = [(metric_name(f"epoch/{name}"), float(value), epoch) for name, value in logs.items()
                   if is_number(value)]
        if self._write(lambda: log_metrics(self.client, self.run_id, numbers)):
            self.logged_epochs.add(epoch)

    def log_model(self, model, *, requirements: list[str], step: int) -> None:
        """The kept Keras model as an MLflow logged model of this run. One that cannot be saved in MLflow's
        format is said, and the run is logged without it."""
        if self.broken:
            return
        with tempfile.TemporaryDirectory(prefix="seqkeras-mlflow-model-") as staging:
            try:  # outside the store's lock: serializing takes a while, and the other workers' epochs go on
                folder = save_keras_model(model, Path(staging), requirements)
            except Exception as error:
                self.warn(f"{self.label}: the kept model is not logged as an MLflow model ({type(error).__name__}: "
                          f"{first_line(error)}); model.keras is among the run's files")
                return
            self._write(lambda: upload_model(self.client, self.experiment_id, self.run_id, folder,
                                             name=self.run_folder.name, step=step))

    def close(self, record: dict[str, Any]) -> None:
        """The record's metrics, the epochs not logged live (those before a resume), the folder's files, the
        status and the end; or, once a write failed, the MLflow run deleted for the command to log it whole."""
        ended = int(time.time() * 1000)  # the run's end, not that of the uploads below
        history = history_metrics(self.run_folder, self.warn)
        missing = [entry for entry in history if entry[2] not in self.logged_epochs]
        final = final_metrics(record, int(history[-1][2]) if history else 0)

        def finish() -> None:
            log_metrics(self.client, self.run_id, missing + final)
            upload_run_files(self.client, self.run_id, self.run_folder, self.label, self.warn)
            close_run(self.client, self.run_id, record, record_key(record, self.run_folder.name), ended)

        if not self._write(finish):
            self.discard()

    def _write(self, write: Callable[[], None]) -> bool:
        if self.broken:
            return False
        try:
            store_write(self.target.lock, write, self.target.guard)
        except Exception as error:  # tracking never fails a run
            self.failed(error)
            return False
        return True

    def failed(self, error: BaseException) -> None:
        self.broken = True
        self.warn(f"{self.label}: live logging to the tracker stopped ({type(error).__name__}: {first_line(error)}); "
                  "the run is logged when it ends")

    def discard(self) -> None:
        """Delete the half-logged MLflow run: the command logs the record whole from the run's folder."""
        if self.client is None or self.run_id is None:
            return
        with contextlib.suppress(Exception):
            store_write(self.target.lock, lambda: self.client.delete_run(self.run_id), self.target.guard)
