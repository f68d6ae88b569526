"""An MLflow run of a seqkeras record: what logging after the fact (`mlflow_tracking`) and logging while the
run trains (`mlflow_live`) share.

Names come from the folders, not from the record's text (`record_name_problem`); the
params are the run's spec.yaml and the metrics its record and history.csv
(`mlflow_records`); only the regular files of a run folder are uploaded; the tags that
say a record is logged whole are set last (`close_run`), so a run cut short is never
taken for a logged record.
"""

from __future__ import annotations

import hashlib
import os
import stat
import tempfile
import time
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

from seqkeras.errors import SpecError, shown
from seqkeras.results.files import FILE_LIMIT, read_bytes, regular_files, single_name_problem
from seqkeras.tracking.mlflow_records import spec_params
from seqkeras.tracking.mlflow_store import artifact_location_problem

SKIPPED_FILES = {".lock", ".resume"}
DIGEST_TAG = "seqkeras.record_digest"
FOLDER_TAG = "seqkeras.folder_digest"  # which run folder a live MLflow run belongs to (searched for: a digest)


def experiment_id(client, name: str, uri: str, artifacts: Path) -> str:
    """The MLflow experiment `name`, made when missing (a SQLite store's artifacts go into `artifacts/<name>`).

    A SpecError when its runs' files would go where the store must not write (`artifact_location_problem`: a link
    below the results root, or, for a store inside the root, which may be someone else's, a place outside it)."""
    found = client.get_experiment_by_name(name)
    if found is None:
        location = (artifacts / name).as_uri() if uri.startswith("sqlite:") else None
        problem = artifact_location_problem(uri, location, artifacts) if location else ""
        if problem:
            raise SpecError(f"the MLflow experiment {name!r}: {problem}")
        try:
            client.create_experiment(name, artifact_location=location)
        except Exception:  # made meanwhile by another process (a server store has no lock of ours)
            if client.get_experiment_by_name(name) is None:
                raise
        found = client.get_experiment_by_name(name)
    if uri.startswith("sqlite:"):
        problem = artifact_location_problem(uri, found.artifact_location, artifacts)
        if problem:
            raise SpecError(f"the MLflow experiment {name!r}: {problem}")
    return found.experiment_id


def record_key(record: dict[str, Any], run_name: str) -> str:
    """What tells this record from another run of the same spec: its run id and start."""
    return f"{run_name}@{str(record.get('started', ''))[:200]}"


def started_ms(record: dict[str, Any]) -> int | None:
    """The record's `started` as MLflow's milliseconds since the epoch; None when it has none."""
    try:
        return round(datetime.fromisoformat(str(record["started"])).timestamp() * 1000)
    except (KeyError, ValueError, OverflowError, OSError):
        return None


def opening_tags(record: dict[str, Any], run_folder: Path, experiment_name: str) -> dict[str, str]:
    """The tags an MLflow run of `record` opens with (its status, and whether it is a tuning trial, are said when
    it closes)."""
    run_name = run_folder.name
    return {"seqkeras.experiment": experiment_name, "seqkeras.run_id": run_name,
            "seqkeras.seed": str(record["seed"]), "seqkeras.backend": str(record.get("backend", ""))[:1000],
            "mlflow.runName": run_name, "seqkeras.folder": str(run_folder), FOLDER_TAG: digest(str(run_folder))}


def log_params(client, run_id: str, run_folder: Path, warn: Callable[[str], None]) -> None:
    from mlflow.entities import Param

    params = [Param(name, value) for name, value in spec_params(run_folder, warn=warn)]
    for start in range(0, len(params), 100):  # MLflow's limit per batch
        client.log_batch(run_id, params=params[start:start + 100])


def log_metrics(client, run_id: str, metrics: list[tuple[str, float, int]]) -> None:
    from mlflow.entities import Metric

    stamp = int(time.time() * 1000)
    batch = [Metric(name, value, stamp, step) for name, value, step in metrics]
    for start in range(0, len(batch), 1000):  # MLflow's limit per batch
        client.log_batch(run_id, metrics=batch[start:start + 1000])


def close_run(client, run_id: str, record: dict[str, Any], key: str, end_time: int | None = None) -> None:
    """The run's status, then the tags that say the record is logged whole: set last, so that a run cut short
    by an error (or a kill) is not taken for the logged record."""
    from mlflow.entities import RunTag

    client.set_tag(run_id, "seqkeras.status", str(record["status"]))
    if record.get("trial"):  # a tuning trial's record says so once it has run
        client.set_tag(run_id, "seqkeras.tuning_trial", "true")
    client.set_terminated(run_id, status="FINISHED" if record["status"] == "ok" else "FAILED", end_time=end_time)
    client.log_batch(run_id, tags=[RunTag("seqkeras.record", key), RunTag(DIGEST_TAG, digest(key))])


def upload_run_files(client, run_id: str, run_folder: Path, label: str, warn: Callable[[str], None]) -> None:
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
        warn(f"{label}: not uploaded to the tracker: {', '.join(left_out)}; only the regular files of a "
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


def digest(key: str) -> str:
    """A hex digest of a record's key or a folder: searched for, where the text itself cannot be.

    MLflow's filter strings have no reliable escape: `'a\\'b'` finds a run tagged a\\'b as well as a'b."""
    return hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()[:32]


