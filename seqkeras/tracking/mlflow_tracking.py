"""Runs logged to an MLflow tracking store: `seqkeras run … --track mlflow[=URI]` and `seqkeras export`.

Each finished run (reused ones too) becomes one MLflow run, in the MLflow experiment
named as the seqkeras experiment's folder:

- params: the run's resolved spec (its spec.yaml), one per key path (`model.units`);
- metrics: each epoch's history values (history.csv, step = epoch), and the run's
  final metrics as in runs.csv (a run with several evaluation rows, one per decoder,
  gets `<decoder …>/<metric>`), with `params`, `train_seconds` and `seconds`;
- artifacts: the regular files of the run's folder (links and special files are left
  out with a warning: a link must not upload a file of this machine);
- tags: `seqkeras.experiment`, `seqkeras.run_id`, `seqkeras.status`, the seed and the
  backend; `mlflow.runName` is the run id.

The default store is a SQLite database in the results root, `<out>/mlflow.db`, with
the artifacts beside it in `<out>/mlflow-artifacts/` (`mlflow ui --backend-store-uri
sqlite:///results/mlflow.db` opens it); `--track mlflow=URI` names any other store.

The store is checked when the tracker is made, before anything trains (`check_store`):
a scheme MLflow knows, a folder that exists or can be made and can be written, and for
SQLite a database that opens and is created and migrated. A bad one is a SpecError
(`--track mlflow=URI: why`). Several processes may log to one SQLite (or folder)
store: the store is created and migrated once, and each record logged, under an
inter-process lock on a file beside the database (`mlflow.db.lock`), so MLflow's
first migration never races and no write meets `database is locked`.

A record is logged once: logging it again (a rerun that reuses it, an export) finds
it by its `seqkeras.record` tag, set last, and leaves it. Names come from the folders,
not from the record's text: a record whose `experiment` or `run_id` is not its
folder's name is not logged. Tracking never fails a run: what cannot be logged is
said, and the run's folder and runs.csv have everything.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import importlib.util
import io
import logging
import math
import os
import sqlite3
import stat
import tempfile
import time
from collections.abc import Callable, Iterator
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit
from urllib.request import url2pathname

import yaml

from seqkeras.errors import SpecError, shown
from seqkeras.results.files import FILE_LIMIT, read_bytes, read_text, regular_files, single_name_problem
from seqkeras.results.folder import flat_keys, print_warning

STORE_FILE = "mlflow.db"
ARTIFACTS_FOLDER = "mlflow-artifacts"
SKIPPED_FILES = {".lock", ".resume"}
DIGEST_TAG = "seqkeras.record_digest"
LOCK_SUFFIX = ".lock"             # mlflow.db.lock, beside the database
FOLDER_STORE_LOCK = ".seqkeras.lock"  # inside a folder (file://) store
LOCK_WAIT = 300.0                 # seconds a record waits for another process's logging
BUSY_TRIES = 4                    # a write that meets `database is locked` (a reader outside seqkeras: mlflow ui)
ENGINE_TRIES = 3                  # MLflow retries a failing SQLite connection 10 times, 100 s; checked before, 3 do

# MLflow's own store schemes (mlflow.tracking._tracking_service.utils); plugins add theirs by entry point.
SERVER_SCHEMES = {"http", "https", "databricks", "postgresql", "mysql", "mssql"}
FOLDER_SCHEMES = {"", "file"}
KNOWN_SCHEMES = SERVER_SCHEMES | FOLDER_SCHEMES | {"sqlite"}

SQLITE_HEADER = b"SQLite format 3\x00"
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)


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


# --------------------------------------------------------------------------- #
# The store, checked before anything trains
# --------------------------------------------------------------------------- #


def uri_scheme(uri: str) -> str:
    """The store kind of a tracking URI: 'sqlite', 'http', '' (a folder path), 'postgresql' (+driver left out)."""

    if uri == "databricks" or uri.startswith("databricks://"):
        return "databricks"
    try:
        scheme = urlsplit(uri).scheme.lower()
    except ValueError:
        return "?"
    return scheme.partition("+")[0]


def plugin_schemes() -> set[str]:
    """Store schemes that installed MLflow plugins add (entry point group `mlflow.tracking_store`)."""

    try:
        return {entry.name for entry in entry_points(group="mlflow.tracking_store")}
    except Exception:  # a broken distribution's metadata must not break the check
        return set()


def sqlite_path(uri: str) -> Path:
    """The database file of `sqlite:///relative.db` or `sqlite:////absolute.db`; SpecError when it names none."""
    rest = uri.split("://", 1)[1] if "://" in uri else ""
    rest = rest.split("?", 1)[0]
    if not rest.startswith("/"):
        if rest:
            raise SpecError("an SQLite URI has no host: sqlite:///relative/path.db or sqlite:////absolute/path.db")
        raise SpecError("an in-memory SQLite store keeps nothing after the command; name a file: sqlite:///path.db")
    path = rest[1:]
    if path in ("", ":memory:"):
        raise SpecError("an in-memory SQLite store keeps nothing after the command; name a file: sqlite:///path.db")
    return Path(os.path.abspath(path))


def folder_path(uri: str) -> Path:
    """The folder of a folder store: a plain path or file:///path."""
    if uri_scheme(uri) == "":
        return Path(os.path.abspath(uri))

    parts = urlsplit(uri)
    if parts.netloc not in ("", "localhost"):
        raise SpecError(f"a file: store is on this machine; {parts.netloc!r} is another host")
    return Path(os.path.abspath(url2pathname(unquote(parts.path))))


def writable_folder(folder: Path) -> str:
    """'' once `folder` exists (made if need be) and this process can create a file in it; else why not.

    Created and removed for real, not judged from the mode bits: root ignores those, a read-only
    file system does not."""
    existing = folder
    while not os.path.lexists(existing) and existing.parent != existing:
        existing = existing.parent
    if not existing.is_dir():
        if existing == folder:
            return f"{folder} is not a folder"
        return f"{existing} is not a folder, so the folder {folder} cannot be made"
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        return f"the folder {folder} cannot be made ({error.strerror or error})"
    try:
        handle, probe = tempfile.mkstemp(dir=folder, prefix=".seqkeras-write-check-")
        os.close(handle)
        os.unlink(probe)
    except OSError as error:
        return f"the folder {folder} is not writable ({error.strerror or error})"
    return ""


@contextlib.contextmanager
def store_lock(path: Path | None, wait: float = LOCK_WAIT) -> Iterator[None]:
    """An exclusive inter-process lock on `path` (flock; released by the OS if the process dies); no-op for None."""
    if path is None:
        yield
        return

    handle = os.open(path, os.O_RDWR | os.O_CREAT | _NOFOLLOW | _CLOEXEC, 0o644)
    try:
        deadline = time.monotonic() + wait
        while True:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise TimeoutError(f"{path} is held by another process for over {wait:.0f} s") from None
                time.sleep(0.05)
        yield
    finally:
        os.close(handle)  # releases the lock


@contextlib.contextmanager
def few_engine_retries() -> Iterator[None]:
    """MLflow retries a database it cannot open 10 times with growing sleeps (100 s); a checked SQLite file needs 3."""
    import mlflow.store.db.utils as db_utils

    saved = db_utils.MAX_RETRY_COUNT
    db_utils.MAX_RETRY_COUNT = min(saved, ENGINE_TRIES)
    try:
        yield
    finally:
        db_utils.MAX_RETRY_COUNT = saved


def _first_line(error: BaseException) -> str:
    text = str(error).strip()
    return text.splitlines()[0][:300] if text else type(error).__name__


def _quiet_mlflow() -> None:
    # MLflow's store set-up logs its database migrations at INFO on the first connection.
    for name in ("mlflow", "alembic"):
        logging.getLogger(name).setLevel(logging.WARNING)


def check_sqlite(database: Path) -> str:
    """'' when `database` can be opened for writing as an SQLite file (created if need be); else why not."""

    if os.path.lexists(database):
        mode = os.lstat(database).st_mode
        if stat.S_ISDIR(mode):
            return f"{database} is a folder, not a database file"
        if not stat.S_ISREG(os.stat(database).st_mode):
            return f"{database} is not a regular file"
        if not os.access(database, os.R_OK | os.W_OK):
            return f"{database} is read-only"
        try:
            with open(database, "rb") as handle:
                header = handle.read(16)
        except OSError as error:
            return f"{database} cannot be read ({error.strerror or error})"
        if header and header != SQLITE_HEADER:  # SQLite would take a short file for an empty one, and write over it
            return f"{database} is not an SQLite database"
    try:
        connection = sqlite3.connect(str(database), timeout=30)
    except sqlite3.Error as error:
        return f"{database} cannot be opened ({error})"
    try:
        connection.execute("BEGIN IMMEDIATE")  # a write lock: the file and its folder take writes
        connection.rollback()
    except sqlite3.Error as error:
        return f"{database} cannot be written as an SQLite database ({error})"
    finally:
        connection.close()
    return ""


def check_store(uri: str, out_root: Path) -> tuple[Path | None, Any]:
    """Check the store before anything trains; returns (its lock file or None, an MlflowClient on it).

    A bad store is a SpecError `--track mlflow=URI: why`. An SQLite store is created and
    migrated here, once, under its lock (two sweeps starting together on a new store
    would otherwise both run MLflow's migrations and break it)."""

    def refused(why: str) -> SpecError:
        return SpecError(f"--track mlflow={uri}: {why}")

    scheme = uri_scheme(uri)
    if scheme not in KNOWN_SCHEMES and scheme not in plugin_schemes():
        known = ", ".join(f"{s}://" for s in sorted(KNOWN_SCHEMES - FOLDER_SCHEMES - {"databricks"}))
        raise refused(f"unknown store scheme {scheme!r}; MLflow stores are a folder path, file://, {known} "
                      "or databricks")
    lock: Path | None = None
    database: Path | None = None
    try:
        if scheme == "sqlite":
            database = sqlite_path(uri)
            problem = writable_folder(database.parent) or writable_folder(out_root.absolute() / ARTIFACTS_FOLDER)
            if problem:
                raise refused(problem)
            lock = database.with_name(database.name + LOCK_SUFFIX)
        elif scheme in FOLDER_SCHEMES:
            folder = folder_path(uri)
            if os.path.lexists(folder) and not folder.is_dir():
                raise refused(f"{folder} is a file, not a folder for an MLflow store")
            problem = writable_folder(folder)
            if problem:
                raise refused(problem)
            lock = folder / FOLDER_STORE_LOCK
    except SpecError as error:
        if error.message.startswith("--track "):
            raise
        raise refused(error.message) from None
    except (OSError, TimeoutError) as error:
        raise refused(_first_line(error)) from None
    from mlflow.tracking import MlflowClient

    _quiet_mlflow()
    try:
        with store_lock(lock, wait=120):
            if database is not None:
                problem = check_sqlite(database)
                if problem:
                    raise refused(problem)
            # MlflowClient makes the store: MLflow connects (a database server too) and creates and migrates it.
            with few_engine_retries():
                return lock, MlflowClient(tracking_uri=uri)
    except SpecError:
        raise
    except Exception as error:
        raise refused(f"the store cannot be opened: {_first_line(error)}") from None


# --------------------------------------------------------------------------- #
# Logging
# --------------------------------------------------------------------------- #


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

    def log(self, record: dict[str, Any], run_folder: Path) -> str | None:
        """Log one record (and its folder's files); None when logged or already there, else the error."""
        run_folder = Path(os.path.abspath(run_folder))
        problem = record_name_problem(record, run_folder)
        if problem:
            return problem
        for attempt in range(BUSY_TRIES):
            try:
                with store_lock(self._lock):
                    self._log(record, run_folder)
                return None
            except Exception as error:  # a tracking failure must not cost the run: it is said, not raised
                if _is_busy(error) and attempt + 1 < BUSY_TRIES:
                    time.sleep(0.5 * 2 ** attempt)
                    continue
                return f"{type(error).__name__}: {_first_line(error)}"
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

    def _log(self, record: dict[str, Any], run_folder: Path) -> None:
        from mlflow.entities import Metric, Param, RunTag

        client = self._client
        experiment_name, run_name = run_folder.parent.name, run_folder.name  # checked: the record agrees
        experiment = self._experiment_id(experiment_name)
        key = f"{run_name}@{str(record.get('started', ''))[:200]}"  # this record, not another run of the same spec
        if logged_before(client, experiment, key):
            return
        label = f"{experiment_name}/{run_name}"
        tags = {"seqkeras.experiment": experiment_name, "seqkeras.run_id": run_name,
                "seqkeras.status": str(record["status"]), "seqkeras.seed": str(record["seed"]),
                "seqkeras.backend": str(record.get("backend", ""))[:1000], "mlflow.runName": run_name}
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


def record_name_problem(record: dict[str, Any], run_folder: Path) -> str:
    """Why `record` is not logged under its folder's names ('' when it is): the folders name the MLflow
    experiment and run and the artifacts' place; the record's own text must agree with them."""
    experiment, run_name = run_folder.parent.name, run_folder.name
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
            warn(f"{run_folder / 'spec.yaml'} is not YAML ({_first_line(error)}); its params are not logged")
        return []
    if not isinstance(spec, dict):
        return []
    return [(key, str(value)[:6000]) for key, value in flat_keys(spec).items()]  # MLflow's limit on a param


def metric_name(text: str) -> str:
    """An MLflow metric name: letters, digits and _ - . space / only."""
    return "".join(c if c.isalnum() or c in "_-. /" else "_" for c in text)


def history_metrics(run_folder: Path, warn: Callable[[str], None] | None = None) -> list[tuple[str, float, int]]:
    """(epoch/<column>, value, epoch) for each number of the run's history.csv."""
    import pandas as pd

    text = _read_run_file(run_folder, "history.csv", warn)
    if text is None:
        return []
    found: list[tuple[str, float, int]] = []
    try:
        frame = pd.read_csv(io.StringIO(text))
        steps = frame["epoch"] if "epoch" in frame else range(1, len(frame) + 1)
        for column in frame.columns:
            if column != "epoch" and pd.api.types.is_numeric_dtype(frame[column]):
                found += [(metric_name(f"epoch/{column}"), float(v), int(s)) for s, v in zip(steps, frame[column])
                          if math.isfinite(v)]
    except (ValueError, TypeError, OverflowError, pd.errors.ParserError, pd.errors.EmptyDataError) as error:
        if warn is not None:
            warn(f"{run_folder / 'history.csv'} cannot be read as a table ({_first_line(error)}); "
                 "its epochs are not logged")
        return []
    return found


def record_metrics(record: dict[str, Any], run_folder: Path, *,
                   warn: Callable[[str], None] | None = None) -> list[tuple[str, float, int]]:
    """(name, value, step) for each number of the record and of history.csv (step = epoch)."""
    found = history_metrics(run_folder, warn)
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
