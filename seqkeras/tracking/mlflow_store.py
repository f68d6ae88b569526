"""The MLflow store a run is logged to: which one (`parse_track`), and checking it before anything trains.

`--track mlflow` is a SQLite database in the results root, `<out>/mlflow.db`, with
the artifacts beside it in `<out>/mlflow-artifacts/`; `--track mlflow=URI` names any
other store. `check_store` checks it when the tracker is made: a scheme MLflow knows,
a folder that exists or can be made and can be written, and for SQLite a database
that opens and is created and migrated; for a tracking server (`http(s)://`), one
that answers MLflow's API within seconds (`reach_server`). A bad one is a SpecError
(`--track mlflow=URI: why`), the URI shown without its password (`hidden_credentials`).

The results root may hold someone else's files: a store's files below it (`mlflow.db`,
its lock and journals, `mlflow-artifacts/`, an explicit store inside the root) are made
from the root resolved once (`results_root`) and must be real files and folders, no
link in their path below the root (`StoreGuard`): checked when the tracker is made, and
again under the store's lock before each use, so nothing is written through a link.

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
import re
import socket
import sqlite3
import stat
import tempfile
import time
import urllib.request
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
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
SQLITE_COMPANIONS = ("-journal", "-wal", "-shm")  # the files SQLite writes beside a database
MLFLOW_FOLDERS = ("models", "traces")  # in an experiment's artifact folder (SqlAlchemyStore.MODELS_FOLDER_NAME, …)

# MLflow's HTTP settings (mlflow.environment_variables), read at each request: by default a refused connection is
# tried 7 times with growing sleeps, minutes. Set only around the suite's own calls, and put back after. The check
# of a tracking server tries once; the writes a few times, unless the user set them.
PROBE_SECONDS = 10
PROBE_HTTP = {"MLFLOW_HTTP_REQUEST_MAX_RETRIES": "0", "MLFLOW_HTTP_REQUEST_TIMEOUT": str(PROBE_SECONDS)}
WRITE_HTTP = {"MLFLOW_HTTP_REQUEST_MAX_RETRIES": "3", "MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR": "1"}

# The password of a URI in a text: `scheme://user:password@`, up to the last @ before a space or a quote.
URI_PASSWORD = re.compile(r"(?P<head>\b[A-Za-z][A-Za-z0-9+.-]*://[^/?#@\s:'\"]*):[^\s'\"]*@")

# MLflow's logger of its database sessions, and the starts of the messages it logs there for an error it then
# raises (a session's: an ERROR and its traceback) or tries again (an engine's: a WARNING).
MLFLOW_DATABASE_LOGGER = "mlflow.store.db.utils"
HANDLED_HERE = ("SQLAlchemy database error", "SQLAlchemy engine could not be created")


def missing() -> str | None:
    if importlib.util.find_spec("mlflow") is None:
        return "--track mlflow needs MLflow: .venv/bin/pip install -r requirements-tracking.txt"
    return None


def hidden_credentials(text: str) -> str:
    """`text` (a tracking URI, or a message that names one) with the password of every URI in it replaced, as it
    may be shown or written anywhere: `http://user:password@host:5000` → `http://user:***@host:5000`."""
    return URI_PASSWORD.sub(r"\g<head>:***@", text)


def results_root(out_root: Path) -> Path:
    """The results root the store's paths are made from: resolved once (the root the user named may be a link), and
    only this path used afterwards, so that a link re-pointed meanwhile cannot move the store."""
    return Path(os.path.realpath(out_root))


def below(path: Path, root: Path) -> bool:
    """Whether the absolute `path` is `root` or inside it, by their text (no link followed)."""
    return path == root or root in path.parents


def outside_the_rule(why: str, root: Path) -> str:
    return f"{why}; the store writes only into real files and folders inside the results root {root}"


def in_results_root(path: Path, out_root: Path, root: Path) -> Path | None:
    """`path` (absolute) as a path under the resolved root `root` when it is inside the results root, named through
    the root as the user named it or as resolved; None when it is outside (a store the user chose there)."""
    for base in (root, Path(os.path.abspath(out_root))):
        if below(path, base):
            return root / path.relative_to(base)
    return None


def linked_part(root: Path, path: Path) -> str:
    """'' when no part of `path` below `root` is a symbolic link and each folder above `path` that exists is a
    folder (what does not exist yet is made by the store, as a real folder); else why not."""
    current = root
    for part in path.relative_to(root).parts:
        current = current / part
        try:
            mode = os.lstat(current).st_mode
        except FileNotFoundError:
            return ""
        except OSError as error:
            return f"{current} cannot be checked ({error.strerror or error})"
        if stat.S_ISLNK(mode):
            return f"{current} is a symbolic link"
        if current != path and not stat.S_ISDIR(mode):
            return f"{current} is not a folder"
    return ""


def plain_file_problem(path: Path) -> str:
    """'' when `path` does not exist or is a regular file with no other name (no symbolic or hard link); else why."""
    try:
        status = os.lstat(path)
    except FileNotFoundError:
        return ""
    except OSError as error:
        return f"{path} cannot be checked ({error.strerror or error})"
    if stat.S_ISLNK(status.st_mode):
        return f"{path} is a symbolic link"
    if stat.S_ISDIR(status.st_mode):
        return f"{path} is a folder, not a file"
    if not stat.S_ISREG(status.st_mode):
        return f"{path} is not a regular file"
    if status.st_nlink > 1:
        return f"{path} is a hard link: the file has {status.st_nlink} names"
    return ""


@dataclass(frozen=True)
class StoreGuard:
    """The paths a store writes below the (resolved) results root: no link in them below the root, and each file a
    regular file of its own. Checked when the tracker is made, then again under the store's lock before MLflow uses
    them (the command's writes, and each worker's); picklable, as `mlflow_live.LiveTracking` that carries it."""

    root: Path
    folders: tuple[Path, ...] = ()   # below `root`: folders the store writes into (each made when missing)
    files: tuple[Path, ...] = ()     # below `root`: files the store writes (the database, its lock and journals)
    trees: tuple[Path, ...] = ()     # below `root`: a folder store, which holds no link anywhere

    def problem(self, *, walk: bool = True) -> str:
        """'' when every path is as it must be; else why not, naming the path. walk: also every entry of the trees
        (when the tracker is made; a write checks their own paths only, a walk of a whole store each epoch is not)."""
        why = ""
        for path in (*self.folders, *self.trees, *self.files):
            why = linked_part(self.root, path)
            if why:
                break
        for path in self.files:
            why = why or plain_file_problem(path)
        for tree in self.trees if walk else ():
            why = why or linked_entry(tree)
        return outside_the_rule(why, self.root) if why else ""

    def check(self) -> None:
        """`problem` as a SpecError, before a write (no walk of the trees)."""
        problem = self.problem(walk=False)
        if problem:
            raise SpecError(problem)


def linked_entry(folder: Path) -> str:
    """'' when nothing below `folder` is a symbolic link or a special file; else the first one, and what it is."""
    for current, dirs, files in os.walk(folder, followlinks=False):
        for name in sorted(dirs + files):
            path = Path(current, name)
            try:
                mode = os.lstat(path).st_mode
            except OSError:  # gone meanwhile
                continue
            if stat.S_ISLNK(mode):
                return f"{path} is a symbolic link"
            if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
                return f"{path} is not a regular file"
    return ""


def made_folders(guard: StoreGuard) -> str:
    """'' once the root and each of the guard's folders (a folder store too) exist as real folders, their missing
    parts made one by one below the root (os.mkdir makes a folder, never follows a link in its place); else why."""
    try:
        guard.root.mkdir(parents=True, exist_ok=True)  # resolved: the root the user named, no link left in it
    except OSError as error:
        return f"the folder {guard.root} cannot be made ({error.strerror or error})"
    for folder in (*guard.folders, *guard.trees):
        current = guard.root
        for part in folder.relative_to(guard.root).parts:
            current = current / part
            try:
                os.mkdir(current)
            except FileExistsError:
                pass
            except OSError as error:
                return f"the folder {current} cannot be made ({error.strerror or error})"
        problem = linked_part(guard.root, folder)
        if problem:
            return outside_the_rule(problem, guard.root)
    return ""


@contextlib.contextmanager
def http_settings(values: Mapping[str, str], *, over_users: bool) -> Iterator[None]:
    """MLflow's HTTP settings `values` (environment variables) while the block runs, put back as they were after;
    over_users: also where the user set one (else the user's is kept)."""
    saved = {name: os.environ.get(name) for name in values}
    for name, value in values.items():
        if over_users or saved[name] is None:
            os.environ[name] = value
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def reach_server(uri: str) -> str:
    """'' when the host of an http(s):// store takes a connection within seconds (tried directly unless a proxy is
    set for it); else why not. Before any MLflow call: MLflow would try a refused connection for minutes."""
    try:
        parts = urlsplit(uri)
        host, port = parts.hostname, parts.port or (443 if parts.scheme.lower() == "https" else 80)
    except ValueError as error:
        return f"the URI names no host and port ({error})"
    if not host:
        return "the URI names no host"
    proxies = urllib.request.getproxies()
    if (parts.scheme.lower() in proxies or "all" in proxies) and not urllib.request.proxy_bypass(host):
        return ""  # requests connects through the proxy: MLflow's own call below tells
    try:
        with socket.create_connection((host, port), timeout=PROBE_SECONDS):
            return ""
    except OSError as error:
        return f"nothing answers at {host}:{port} ({error.strerror or error})"


def parse_track(option: str, out_root: Path) -> str:
    """`mlflow` → the default SQLite store in `out_root` (resolved once; `mlflow.db` itself is not: a link there is
    refused by `check_store`); `mlflow=URI` → URI. Anything else is a SpecError."""
    name, _, uri = option.partition("=")
    if name != "mlflow":
        raise SpecError(f"--track {hidden_credentials(option)!r}: the tracker is mlflow (--track mlflow, or --track "
                        "mlflow=URI)")
    if _ and not uri:
        raise SpecError("--track mlflow=: give the tracking URI after '=', or leave '=' out for the default store")
    reason = missing()
    if reason:
        raise SpecError(reason)
    return uri or f"sqlite:///{results_root(out_root) / STORE_FILE}"


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
    """An error's first line, without the password of a URI in it (MLflow's errors name the server's URL as given,
    `http://user:password@host/...`): the suite's own SpecError whole (it names paths, which a cut would break), any
    other error's at most 300 characters, however long the error."""
    text = str(error).strip()
    if not text:
        return type(error).__name__
    line = hidden_credentials(text.splitlines()[0])
    return line if isinstance(error, SpecError) else line[:300]


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


def check_sqlite(database: Path, *, follow: bool = True) -> str:
    """'' when `database` can be opened for writing as an SQLite file (created if need be); else why not.
    follow: False for a database inside the results root, whose header is read without following a link (a link
    that leads nowhere, which a store outside the root may be, is a file SQLite creates)."""

    if os.path.exists(database) if follow else os.path.lexists(database):
        mode = os.lstat(database).st_mode
        if stat.S_ISDIR(mode):
            return f"{database} is a folder, not a database file"
        if not stat.S_ISREG(os.stat(database).st_mode):
            return f"{database} is not a regular file"
        if not os.access(database, os.R_OK | os.W_OK):
            return f"{database} is read-only"
        try:
            fd = os.open(database, os.O_RDONLY | os.O_NONBLOCK | (0 if follow else getattr(os, "O_NOFOLLOW", 0)))
            with os.fdopen(fd, "rb") as handle:
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


@dataclass(frozen=True)
class CheckedStore:
    """A store `check_store` checked, and what the tracker uses of it."""

    uri: str = field(repr=False)  # what MLflow is given (a store inside the results root: by its path below the
                                  # resolved root); may hold a password
    lock: Path | None       # the store's inter-process lock (an SQLite or folder store); None for a server
    guard: StoreGuard       # its paths below the results root, checked again before each use
    artifacts: Path         # <resolved results root>/mlflow-artifacts: an SQLite store's artifact root
    client: Any             # an MlflowClient on it


def with_sqlite_path(uri: str, database: Path) -> str:
    """`uri` (sqlite:///…, its driver and query kept) naming `database` instead."""
    scheme, _, rest = uri.partition("://")
    query = rest.partition("?")[2]
    return f"{scheme}:///{database}" + (f"?{query}" if query else "")


def check_store(uri: str, out_root: Path) -> CheckedStore:
    """Check the store before anything trains, and make an MlflowClient on it.

    A bad store is a SpecError `--track mlflow=URI: why` (the URI without its password). A
    store inside the results root (the default `mlflow.db`, an explicit one there) is used by
    its path below the root resolved once, and refused when a part of that path is a link or
    its files are not regular files; the artifacts' folder, always in the root, too. One the
    user named outside the root is the user's choice. An SQLite store is created and
    migrated here, once, under its lock (two sweeps starting together on a new store would
    otherwise both run MLflow's migrations and break it). A tracking server must take a
    connection and answer MLflow's API at once, tried once (not MLflow's minutes of retries)."""

    def refused(why: str) -> SpecError:
        return SpecError(f"--track mlflow={hidden_credentials(uri)}: {hidden_credentials(why)}")

    scheme = uri_scheme(uri)
    if scheme not in KNOWN_SCHEMES and scheme not in plugin_schemes():
        known = ", ".join(f"{s}://" for s in sorted(KNOWN_SCHEMES - FOLDER_SCHEMES - {"databricks"}))
        raise refused(f"unknown store scheme {scheme!r}; MLflow stores are a folder path, file://, {known} "
                      "or databricks")
    root = results_root(out_root)
    artifacts = root / ARTIFACTS_FOLDER
    used, lock, database, inside = uri, None, None, False
    guard = StoreGuard(root)
    try:
        if scheme == "sqlite":
            database = sqlite_path(uri)
            placed = in_results_root(database, out_root, root)
            inside = placed is not None
            if placed is not None:
                database, used = placed, with_sqlite_path(uri, placed)
            lock = database.with_name(database.name + LOCK_SUFFIX)
            files = (database, lock, *(database.with_name(database.name + end) for end in SQLITE_COMPANIONS))
            guard = StoreGuard(root, folders=(artifacts, *((database.parent,) if inside else ())),
                               files=files if inside else ())
            problem = (guard.problem() or made_folders(guard) or writable_folder(database.parent)
                       or writable_folder(artifacts))
            if problem:
                raise refused(problem)
        elif scheme in FOLDER_SCHEMES:
            folder = folder_path(uri)
            placed = in_results_root(folder, out_root, root)
            if placed is not None:
                folder, used = placed, (str(placed) if scheme == "" else placed.as_uri())
                guard = StoreGuard(root, trees=(folder,), files=(folder / FOLDER_STORE_LOCK,))
            problem = guard.problem()
            if problem:
                raise refused(problem)
            if os.path.lexists(folder) and not folder.is_dir():
                raise refused(f"{folder} is a file, not a folder for an MLflow store")
            problem = made_folders(guard) or writable_folder(folder)
            if problem:
                raise refused(problem)
            lock = folder / FOLDER_STORE_LOCK
        elif scheme in ("http", "https"):
            problem = reach_server(uri)
            if problem:
                raise refused(problem)
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
            problem = guard.problem()  # again, under the lock, just before MLflow opens the store
            if problem:
                raise refused(problem)
            if database is not None:
                problem = check_sqlite(database, follow=not inside)
                if problem:
                    raise refused(problem)
            # MlflowClient makes the store: MLflow connects (a database server too) and creates and migrates it.
            with few_engine_retries():
                client = MlflowClient(tracking_uri=used)
        if scheme in ("http", "https"):  # MLflow reaches a server only at its first call: made here, tried once
            with http_settings(PROBE_HTTP, over_users=True):
                client.search_experiments(max_results=1)
    except SpecError:
        raise
    except Exception as error:
        raise refused(f"the store cannot be opened: {first_line(error)}") from None
    return CheckedStore(used, lock, guard, artifacts, client)


def artifact_location_problem(uri: str, location: str | None, artifacts: Path) -> str:
    """Why MLflow must not write the files of an experiment's runs at its artifact `location` ('' when it may).

    Inside the results root (`artifacts.parent`), only into real folders: no link in its path, nor in the folders
    MLflow writes new entries into (a run's folder is new, a logged model's `models/<id>/` and a trace's too).
    Outside it, only for a store the user named outside the root: a store inside the root may be someone else's,
    and its experiments may name any folder of this machine, or a remote one."""
    root = artifacts.parent
    store_inside = uri_scheme(uri) == "sqlite" and below(sqlite_path(uri), root)
    path = local_path(location or "")
    if path is not None and below(path, root):
        for folder in (path, *(path / name for name in MLFLOW_FOLDERS)):
            problem = linked_part(root, folder)
            if problem:
                return outside_the_rule(problem, root)
        return ""
    if store_inside:
        return (f"its artifact location {hidden_credentials(str(location))} is not inside the results root {root}, "
                "where the store is")
    return ""


def local_path(location: str) -> Path | None:
    """The folder of a local artifact location (a path, or file:///path); None for any other (s3://, http://…)."""
    try:
        parts = urlsplit(location)
    except ValueError:
        return None
    if parts.scheme == "" and location:
        return Path(os.path.abspath(location))
    if parts.scheme.lower() == "file" and parts.netloc in ("", "localhost"):
        return Path(os.path.abspath(url2pathname(unquote(parts.path))))
    return None


def is_busy(error: BaseException) -> bool:
    text = str(error).lower()
    return "database is locked" in text or "database table is locked" in text or "database is busy" in text


def store_write(lock: Path | None, write: Callable[[], None], guard: StoreGuard | None = None) -> None:
    """`write` to the store under its inter-process lock (None: a server's store, which has its own), tried again
    a few times when SQLite says it is busy (a reader outside seqkeras: mlflow ui); raises what the last try did.
    guard: the store's paths below the results root, checked again under the lock first (a SpecError)."""
    for attempt in range(BUSY_TRIES):
        try:
            with file_lock(lock, timeout=LOCK_WAIT) if lock else contextlib.nullcontext(), \
                    http_settings(WRITE_HTTP, over_users=False):
                if guard is not None:
                    guard.check()
                write()
            return
        except Exception as error:
            if is_busy(error) and attempt + 1 < BUSY_TRIES:
                time.sleep(0.5 * 2 ** attempt)
                continue
            raise


def open_client(uri: str, lock: Path | None = None, guard: StoreGuard | None = None):
    """An MlflowClient on a store that `check_store` checked (in another process: a worker that logs live), made
    under the store's lock (MLflow reads the store and may write its default experiment: not while another process
    creates it), its paths below the results root checked again (`guard`), tried again while SQLite says the store
    is busy."""
    from mlflow.tracking import MlflowClient

    _quiet_mlflow()
    attempt = 0
    while True:
        try:
            with file_lock(lock, timeout=LOCK_WAIT) if lock else contextlib.nullcontext(), few_engine_retries(), \
                    http_settings(WRITE_HTTP, over_users=False):
                if guard is not None:
                    guard.check()
                return MlflowClient(tracking_uri=uri)
        except Exception as error:
            if not is_busy(error) or attempt + 1 == BUSY_TRIES:
                raise
        time.sleep(0.5 * 2 ** attempt)
        attempt += 1
