"""The MLflow store a run is logged to: which one (`parse_track`), and checking it before anything trains.

`--track mlflow` is a SQLite database in the results root, `<out>/mlflow.db`, with
the artifacts beside it in `<out>/mlflow-artifacts/`; `--track mlflow=URI` names any
other store. `check_store` checks it when the tracker is made: a scheme MLflow knows,
a folder that exists or can be made and can be written, and for SQLite a database
that opens and is created and migrated. A bad one is a SpecError
(`--track mlflow=URI: why`).

Several processes may log to one SQLite (or folder) store: the store is created and
migrated once, and each record logged, under an inter-process lock on a file beside
the database (`mlflow.db.lock`, `results.locks.file_lock`), so MLflow's first migration never
races and no write meets `database is locked`. MLflow is imported only when a store
is opened.
"""

from __future__ import annotations

import contextlib
import importlib.util
import logging
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

from seqkeras.errors import SpecError
from seqkeras.results.locks import file_lock

STORE_FILE = "mlflow.db"
ARTIFACTS_FOLDER = "mlflow-artifacts"
LOCK_SUFFIX = ".lock"             # mlflow.db.lock, beside the database
FOLDER_STORE_LOCK = ".seqkeras.lock"  # inside a folder (file://) store
LOCK_WAIT = 300.0                 # seconds a record waits for another process's logging
ENGINE_TRIES = 3                  # MLflow retries a failing SQLite connection 10 times, 100 s; checked before, 3 do
BUSY_TRIES = 4                    # a write that meets `database is locked` (a reader outside seqkeras: mlflow ui)

# MLflow's own store schemes (mlflow.tracking._tracking_service.utils); plugins add theirs by entry point.
SERVER_SCHEMES = {"http", "https", "databricks", "postgresql", "mysql", "mssql"}
FOLDER_SCHEMES = {"", "file"}
KNOWN_SCHEMES = SERVER_SCHEMES | FOLDER_SCHEMES | {"sqlite"}

SQLITE_HEADER = b"SQLite format 3\x00"

# MLflow's logger of its database sessions, and the starts of the messages it logs there for an error it then
# raises (a session's: an ERROR and its traceback) or tries again (an engine's: a WARNING).
MLFLOW_DATABASE_LOGGER = "mlflow.store.db.utils"
HANDLED_HERE = ("SQLAlchemy database error", "SQLAlchemy engine could not be created")


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
def few_engine_retries() -> Iterator[None]:
    """MLflow retries a database it cannot open 10 times with growing sleeps (100 s); a checked SQLite file needs 3."""
    import mlflow.store.db.utils as db_utils

    saved = db_utils.MAX_RETRY_COUNT
    db_utils.MAX_RETRY_COUNT = min(saved, ENGINE_TRIES)
    try:
        yield
    finally:
        db_utils.MAX_RETRY_COUNT = saved


def first_line(error: BaseException) -> str:
    """An error's first line, at most 300 characters: one line of a message, however long the error."""
    text = str(error).strip()
    return text.splitlines()[0][:300] if text else type(error).__name__


class HandledHere(logging.Filter):
    """Leaves out MLflow's own report of a database error that it raises to seqkeras or tries again itself (an
    ERROR line and two tracebacks for a store another process holds): `store_write` tries the write again, and what
    is not logged in the end is said in one line."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not (isinstance(record.msg, str) and record.msg.startswith(HANDLED_HERE))


def _quiet_mlflow() -> None:
    # MLflow's store set-up logs its database migrations at INFO on the first connection.
    for name in ("mlflow", "alembic"):
        logging.getLogger(name).setLevel(logging.WARNING)
    database_logger = logging.getLogger(MLFLOW_DATABASE_LOGGER)
    if not any(isinstance(present, HandledHere) for present in database_logger.filters):
        database_logger.addFilter(HandledHere())


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
        raise refused(first_line(error)) from None
    from mlflow.tracking import MlflowClient

    _quiet_mlflow()
    try:
        # A server's store (no lock of ours) is created by the server.
        with file_lock(lock, timeout=120) if lock else contextlib.nullcontext():
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
        raise refused(f"the store cannot be opened: {first_line(error)}") from None



def is_busy(error: BaseException) -> bool:
    text = str(error).lower()
    return "database is locked" in text or "database table is locked" in text or "database is busy" in text


def store_write(lock: Path | None, write: Callable[[], None]) -> None:
    """`write` to the store under its inter-process lock (None: a server's store, which has its own), tried again
    a few times when SQLite says it is busy (a reader outside seqkeras: mlflow ui); raises what the last try did."""
    for attempt in range(BUSY_TRIES):
        try:
            with file_lock(lock, timeout=LOCK_WAIT) if lock else contextlib.nullcontext():
                write()
            return
        except Exception as error:
            if is_busy(error) and attempt + 1 < BUSY_TRIES:
                time.sleep(0.5 * 2 ** attempt)
                continue
            raise


def open_client(uri: str, lock: Path | None = None):
    """An MlflowClient on a store that `check_store` checked (in another process: a worker that logs live), made
    under the store's lock (MLflow reads the store and may write its default experiment: not while another process
    creates it), tried again while SQLite says the store is busy."""
    from mlflow.tracking import MlflowClient

    _quiet_mlflow()
    attempt = 0
    while True:
        try:
            with file_lock(lock, timeout=LOCK_WAIT) if lock else contextlib.nullcontext(), few_engine_retries():
                return MlflowClient(tracking_uri=uri)
        except Exception as error:
            if not is_busy(error) or attempt + 1 == BUSY_TRIES:
                raise
        time.sleep(0.5 * 2 ** attempt)
        attempt += 1
