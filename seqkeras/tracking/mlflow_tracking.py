"""Runs logged to an MLflow tracking store after the fact: `seqkeras track`, and `run --track` for what was not
logged while it ran.

A run that `run --track mlflow` trains is logged while it trains, by the process that trains it
(`mlflow_live`); this module logs each finished record that is not in the store yet (a reused
run, results that exist, a run whose live logging failed), and completes a live MLflow run that
its process left open (a worker killed mid-run). Each seqkeras run becomes one MLflow run, in
the MLflow experiment named as the seqkeras experiment's folder:

- params and metrics: the record's, as `mlflow_records` makes them;
- artifacts: the regular files of the run's folder (links and special files are left
  out with a warning: a link must not upload a file of this machine);
- tags: `seqkeras.experiment`, `seqkeras.run_id`, `seqkeras.status`, the seed and the
  backend; `mlflow.runName` is the run id;
- start and end: the record's own (`started`, and `seconds` after it), not the time of logging.

The store is the one `mlflow_store` names and checks when the tracker is made,
before anything trains; each record is logged under the store's inter-process lock, its
paths below the results root checked again first (`mlflow_store.StoreGuard`). The store's
URI is shown without its password (`mlflow_store.hidden_credentials`).

A record is logged once: logging it again (a rerun that reuses it, `track`, a run logged
live) finds it by its `seqkeras.record` tag, set last, and leaves it. Names come from the folders,
not from the record's text: a record whose `experiment` or `run_id` is not its
folder's name is not logged. Tracking never fails a run: what cannot be logged is
said, and the run's folder and runs.csv have everything.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from seqkeras.results.folder import print_warning
from seqkeras.results.locks import try_file_lock
from seqkeras.tracking.mlflow_live import LiveTracking
from seqkeras.tracking.mlflow_records import record_metrics
from seqkeras.tracking.mlflow_runs import (
    DIGEST_TAG, FOLDER_TAG, close_run, digest, experiment_id, log_metrics, log_params, opening_tags, record_key,
    record_name_problem, started_ms, upload_run_files,
)
from seqkeras.tracking.mlflow_store import check_store, first_line, hidden_credentials, store_write

INTERRUPTED = "interrupted"            # seqkeras.status of a live run whose process ended before the run did


class MlflowTracker:
    """Logs seqkeras records to one tracking store; `log` returns what went wrong, never raises.

    Made only for a store that works (`check_store`, a SpecError otherwise). `live(folder)` is what a
    process that trains a run of that experiment needs to log it while it trains (`mlflow_live`)."""

    def __init__(self, uri: str, out_root: Path, *, warn: Callable[[str], None] = print_warning):
        store = check_store(uri, out_root)
        self.uri = store.uri  # a store inside the results root: by its path below the root, resolved once
        self.artifacts = store.artifacts
        self.warn = warn
        self._lock, self._guard, self._client = store.lock, store.guard, store.client
        self._experiments: dict[str, str] = {}

    @property
    def shown_uri(self) -> str:
        """The store's URI as it is shown: without its password."""
        return hidden_credentials(self.uri)

    def describe(self) -> str:
        return f"tracking: each run is logged to MLflow at {self.shown_uri}"

    def live(self, experiment_folder: Path):
        """The picklable address of this store and experiment, handed to the process that trains a run."""
        return LiveTracking(self.uri, self._lock, self.artifacts, Path(os.path.abspath(experiment_folder)).name,
                            self._guard)

    def log(self, record: dict[str, Any], run_folder: Path, experiment_folder: Path | None = None) -> str | None:
        """Log one record (and its folder's files); None when logged or already there, else the error.

        experiment_folder: the experiment's results folder, when it is not the run folder's parent (a tuning
        trial's folder is in its tuning/): it names the MLflow experiment."""
        run_folder = Path(os.path.abspath(run_folder))
        experiment_name = (experiment_folder or run_folder.parent).name
        problem = record_name_problem(record, run_folder, experiment_name)
        if problem:
            return problem
        try:
            store_write(self._lock, lambda: self._log(record, run_folder, experiment_name), self._guard)
        except Exception as error:  # a tracking failure must not cost the run: it is said, not raised
            return f"{type(error).__name__}: {first_line(error)}"
        return None

    def _experiment_id(self, name: str) -> str:
        if name not in self._experiments:
            self._experiments[name] = experiment_id(self._client, name, self.uri, self.artifacts)
        return self._experiments[name]

    def _log(self, record: dict[str, Any], run_folder: Path, experiment_name: str) -> None:
        client = self._client
        run_name = run_folder.name  # checked, as the experiment's name: the record agrees
        experiment = self._experiment_id(experiment_name)
        close_interrupted_runs(client, experiment, run_folder)
        key = record_key(record, run_name)
        if logged_before(client, experiment, key):
            return
        label = f"{experiment_name}/{run_name}"
        started = started_ms(record)
        run = client.create_run(experiment, run_name=run_name, start_time=started,
                                tags=opening_tags(record, run_folder, experiment_name))
        run_id = run.info.run_id
        try:
            log_params(client, run_id, run_folder, self.warn)
            log_metrics(client, run_id, record_metrics(record, run_folder, warn=self.warn))
            upload_run_files(client, run_id, run_folder, label, self.warn)
            seconds = record.get("seconds")
            ended = started + round(seconds * 1000) if started and isinstance(seconds, (int, float)) else None
            close_run(client, run_id, record, key, ended)
        except BaseException:
            with contextlib.suppress(Exception):
                client.delete_run(run_id)  # what was logged of it is hidden: the record is logged whole next time
            raise


def close_interrupted_runs(client, experiment: str, run_folder: Path) -> None:
    """Mark FAILED each live MLflow run of this folder that its process left open: still RUNNING, not logged
    whole, and no process holds the folder's run lock (so none trains it now)."""
    runs = client.search_runs([experiment], max_results=50, filter_string=(
        f"tags.`{FOLDER_TAG}` = '{digest(str(run_folder))}' and attributes.status = 'RUNNING'"))
    open_runs = [run for run in runs if "seqkeras.record" not in run.data.tags]
    if not open_runs:
        return
    with try_file_lock(run_folder / ".lock") as free:
        if not free:
            return
        for run in open_runs:
            # Its end: when it last logged (an epoch's numbers), as near as the store tells when its process died.
            stamps = [metric.timestamp for name in run.data.metrics
                      for metric in client.get_metric_history(run.info.run_id, name)]
            last = max(stamps, default=None)
            client.set_tag(run.info.run_id, "seqkeras.status", INTERRUPTED)
            client.set_terminated(run.info.run_id, status="FAILED", end_time=last)


def logged_before(client, experiment: str, key: str) -> bool:
    """Whether a run of `experiment` holds the record `key` (by its digest tag, or, as logged before the digest
    was, by the key itself when it needs no quoting), compared in full."""
    filters = [f"tags.`{DIGEST_TAG}` = '{digest(key)}'"]
    if not any(c in key for c in "'\"\\`"):
        filters.append(f"tags.`seqkeras.record` = '{key}'")
    for text in filters:
        if any(run.data.tags.get("seqkeras.record") == key
               for run in client.search_runs([experiment], filter_string=text, max_results=50)):
            return True
    return False
