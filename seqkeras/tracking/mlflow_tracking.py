"""Runs logged to an MLflow tracking store: `seqkeras run … --track mlflow[=URI]` and `seqkeras export`.

Each finished run (reused ones too) becomes one MLflow run, in the MLflow experiment
named as the seqkeras experiment's folder:

- params and metrics: the record's, as `mlflow_records` makes them;
- artifacts: the regular files of the run's folder (links and special files are left
  out with a warning: a link must not upload a file of this machine);
- tags: `seqkeras.experiment`, `seqkeras.run_id`, `seqkeras.status`, the seed and the
  backend; `mlflow.runName` is the run id.

The store is the one `mlflow_store` names and checks when the tracker is made,
before anything trains; each record is logged under the store's inter-process lock.

A record is logged once: logging it again (a rerun that reuses it, an export) finds
it by its `seqkeras.record` tag, set last, and leaves it. Names come from the folders,
not from the record's text: a record whose `experiment` or `run_id` is not its
folder's name is not logged. Tracking never fails a run: what cannot be logged is
said, and the run's folder and runs.csv have everything.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import stat
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from seqkeras.errors import SpecError, shown
from seqkeras.results.files import FILE_LIMIT, read_bytes, regular_files, single_name_problem
from seqkeras.results.folder import print_warning
from seqkeras.results.locks import file_lock
from seqkeras.tracking.mlflow_records import record_metrics, spec_params
from seqkeras.tracking.mlflow_store import ARTIFACTS_FOLDER, LOCK_WAIT, check_store, first_line

SKIPPED_FILES = {".lock", ".resume"}
DIGEST_TAG = "seqkeras.record_digest"
BUSY_TRIES = 4                    # a write that meets `database is locked` (a reader outside seqkeras: mlflow ui)


def _is_busy(error: BaseException) -> bool:
    text = str(error).lower()
    return "database is locked" in text or "database table is locked" in text or "database is busy" in text


class MlflowTracker:
    """Logs seqkeras records to one tracking store; `log` returns what went wrong, never raises.

    Made only for a store that works (`check_store`, a SpecError otherwise)."""

    def __init__(self, uri: str, out_root: Path, *, warn: Callable[[str], None] = print_warning):
        self.uri = uri
        self.artifacts = (out_root / ARTIFACTS_FOLDER).resolve()
        self.warn = warn
        self._lock, self._client = check_store(uri, out_root)
        self._experiments: dict[str, str] = {}

    def describe(self) -> str:
        return f"tracking: each run is logged to MLflow at {self.uri}"

    def log(self, record: dict[str, Any], run_folder: Path, experiment_folder: Path | None = None) -> str | None:
        """Log one record (and its folder's files); None when logged or already there, else the error.

        experiment_folder: the experiment's results folder, when it is not the run folder's parent (a tuning
        trial's folder is in its tuning/): it names the MLflow experiment."""
        run_folder = Path(os.path.abspath(run_folder))
        experiment_name = (experiment_folder or run_folder.parent).name
        problem = record_name_problem(record, run_folder, experiment_name)
        if problem:
            return problem
        for attempt in range(BUSY_TRIES):
            try:
                with file_lock(self._lock, timeout=LOCK_WAIT) if self._lock else contextlib.nullcontext():
                    self._log(record, run_folder, experiment_name)
                return None
            except Exception as error:  # a tracking failure must not cost the run: it is said, not raised
                if _is_busy(error) and attempt + 1 < BUSY_TRIES:
                    time.sleep(0.5 * 2 ** attempt)
                    continue
                return f"{type(error).__name__}: {first_line(error)}"
        return None

    def _experiment_id(self, name: str) -> str:
        if name not in self._experiments:
            client = self._client
            found = client.get_experiment_by_name(name)
            if found is None:
                location = (self.artifacts / name).as_uri() if self.uri.startswith("sqlite:") else None
                try:
                    client.create_experiment(name, artifact_location=location)
                except Exception:  # made meanwhile by another process (a server store has no lock of ours)
                    if client.get_experiment_by_name(name) is None:
                        raise
                found = client.get_experiment_by_name(name)
            self._experiments[name] = found.experiment_id
        return self._experiments[name]

    def _log(self, record: dict[str, Any], run_folder: Path, experiment_name: str) -> None:
        from mlflow.entities import Metric, Param, RunTag

        client = self._client
        run_name = run_folder.name  # checked, as the experiment's name: the record agrees
        experiment = self._experiment_id(experiment_name)
        key = f"{run_name}@{str(record.get('started', ''))[:200]}"  # this record, not another run of the same spec
        if logged_before(client, experiment, key):
            return
        label = f"{experiment_name}/{run_name}"
        tags = {"seqkeras.experiment": experiment_name, "seqkeras.run_id": run_name,
                "seqkeras.status": str(record["status"]), "seqkeras.seed": str(record["seed"]),
                "seqkeras.backend": str(record.get("backend", ""))[:1000], "mlflow.runName": run_name,
                **({"seqkeras.tuning_trial": "true"} if record.get("trial") else {})}
        run = client.create_run(experiment, run_name=run_name, tags=tags)
        run_id = run.info.run_id
        try:
            params = [Param(name, value) for name, value in spec_params(run_folder, warn=self.warn)]
            metrics = [Metric(name, value, 0, step)
                       for name, value, step in record_metrics(record, run_folder, warn=self.warn)]
            for start in range(0, len(params), 100):  # MLflow's limits per batch
                client.log_batch(run_id, params=params[start:start + 100])
            for start in range(0, len(metrics), 1000):
                client.log_batch(run_id, metrics=metrics[start:start + 1000])
            client.log_batch(run_id, tags=[RunTag("seqkeras.folder", str(run_folder))])
            self._log_files(client, run_id, run_folder, label)
            client.set_terminated(run_id, status="FINISHED" if record["status"] == "ok" else "FAILED")
            # Last: a run cut short by an error (or a kill) is not taken for the logged record.
            client.log_batch(run_id, tags=[RunTag("seqkeras.record", key), RunTag(DIGEST_TAG, record_digest(key))])
        except BaseException:
            with contextlib.suppress(Exception):
                client.delete_run(run_id)  # what was logged of it is hidden: the record is logged whole next time
            raise

    def _log_files(self, client, run_id: str, run_folder: Path, label: str) -> None:
        """Upload the regular files of the run folder, each read without following a link (results.files)."""
        left_out = [f"{name} ({why})" for name, why in non_regular_entries(run_folder)]
        with tempfile.TemporaryDirectory(prefix="seqkeras-artifacts-") as staging:
            count = 0
            for name, _ in regular_files(run_folder):
                if name in SKIPPED_FILES:
                    continue
                try:
                    data = read_bytes(run_folder, name, limit=FILE_LIMIT)
                except SpecError as error:
                    left_out.append(f"{name} ({error.message})")
                    continue
                target = Path(staging, name)
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(data)
                count += 1
            if count:
                client.log_artifacts(run_id, staging)
        if left_out:
            self.warn(f"{label}: not uploaded to the tracker: {', '.join(left_out)}; only the regular files of a "
                      "run folder are")


def record_name_problem(record: dict[str, Any], run_folder: Path, experiment: str) -> str:
    """Why `record` is not logged under its folder's names ('' when it is): the folders name the MLflow
    experiment and run and the artifacts' place; the record's own text must agree with them."""
    run_name = run_folder.name
    problem = single_name_problem(experiment)
    if problem:
        return f"the experiment folder's name is not a plain name ({problem})"
    problem = single_name_problem(run_name)
    if problem:
        return f"the run folder's name is not a plain name ({problem})"
    if record.get("experiment") != experiment:
        return (f"its metrics.json names the experiment {shown(record.get('experiment'))}, "
                f"not {experiment!r}, the folder it is in")
    if record.get("run_id") != run_name:
        return f"its metrics.json names the run {shown(record.get('run_id'))}, not {run_name!r}, its folder"
    return ""


def non_regular_entries(folder: Path) -> list[tuple[str, str]]:
    """(relative name, what it is) of each link or special file below `folder`: what `regular_files` leaves out."""
    found: list[tuple[str, str]] = []
    for root, dirs, files in os.walk(folder, followlinks=False):
        base = Path(root)
        for name in sorted(dirs + files):
            path = base / name
            try:
                mode = os.lstat(path).st_mode
            except OSError:
                continue
            if stat.S_ISLNK(mode):
                found.append((path.relative_to(folder).as_posix(), "a symbolic link"))
            elif not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
                found.append((path.relative_to(folder).as_posix(), "not a regular file"))
        dirs[:] = [d for d in dirs if not (base / d).is_symlink()]
    return found


def record_digest(key: str) -> str:
    """A hex digest of a record's key: searched for, where the key itself (text from the record) cannot be.

    MLflow's filter strings have no reliable escape: `'a\\'b'` finds a run tagged a\\'b as well as a'b."""
    return hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()[:32]


def logged_before(client, experiment: str, key: str) -> bool:
    """Whether a run of `experiment` holds the record `key` (by its digest tag, or, as logged before the digest
    was, by the key itself when it needs no quoting), compared in full."""
    filters = [f"tags.`{DIGEST_TAG}` = '{record_digest(key)}'"]
    if not any(c in key for c in "'\"\\`"):
        filters.append(f"tags.`seqkeras.record` = '{key}'")
    for text in filters:
        if any(run.data.tags.get("seqkeras.record") == key
               for run in client.search_runs([experiment], filter_string=text, max_results=50)):
            return True
    return False
