"""A studies database opened safely: an SQLite file checked before Optuna touches it, and its creation serialised.

Optuna makes its tables on a process's first connection to a database, and the
suite then makes a point's study and sets its attributes; two processes doing so
at once on a new database (two commands, or two machines sharing `tune.storage`)
fail with `table studies already exists` or `UNIQUE constraint failed`. So:

- an SQLite file is connected to, and a study made in it, under an exclusive lock
  on a file beside it, `studies.db.lock` (`results.locks.file_lock`; a lock a
  process holds is taken again by it at once, not waited for): processes on one
  machine take turns. Where that lock file cannot be made (a read-only folder:
  nothing can be created there either), the database is opened without it;
- whatever the database (a server has no file to lock), a step that meets what such
  a race leaves (`already exists`, a unique or duplicate key, `database is
  locked`) is tried again after a short random pause, a few times: the next try
  finds what the other process made;
- an SQLite file that exists is read before Optuna opens it (a file of a results
  folder may be anyone's): an SQLite database that SQLite finds intact, whose
  tables, if it has any, are Optuna's. Anything else is a SpecError naming the
  file: no traceback, and Optuna never writes its tables into another program's
  database.
"""

from __future__ import annotations

import contextlib
import errno
import os
import random
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

from seqkeras.errors import SpecError, listed, shown
from seqkeras.results.locks import file_lock

LOCK_SUFFIX = ".lock"  # studies.db.lock, beside the database
# A database shared by several processes: a writer waits this long for another's lock instead of failing.
SQLITE_TIMEOUT_SECONDS = 120
RACE_TRIES = 6
RACE_PAUSE_SECONDS = 0.1  # the pause before try n is up to n times this, at random: racing processes spread out
# What a lost race of creation looks like, in SQLite's, PostgreSQL's and MySQL's words.
RACE_WORDS = ("already exists", "unique constraint", "duplicate", "database is locked", "deadlock")
SQLITE_HEADER = b"SQLite format 3\x00"
# A database holding either of these tables is Optuna's (perhaps made halfway by a process that was killed).
OPTUNA_TABLES = {"studies", "version_info"}
# Optuna writes a row into each when it makes its schema: the last step of making it.
VERSION_TABLES = ("version_info", "alembic_version")
# Errors a lock file that cannot be made gives: a folder that takes no new file.
CANNOT_CREATE = {errno.EACCES, errno.EPERM, errno.EROFS}

Result = TypeVar("Result")

_held = threading.local()  # the lock files this thread holds, with how many times each is taken


def sqlite_file(url: str) -> Path | None:
    """The file of an `sqlite:///path` URL (relative or absolute); None for another database or in-memory SQLite."""
    if not url.startswith("sqlite:///"):
        return None
    path = url.removeprefix("sqlite:///").split("?", 1)[0]
    return Path(path) if path and path != ":memory:" else None


def shown_database(url: str) -> str:
    """The database as a message names it: an SQLite file's path, else its URL."""
    path = sqlite_file(url)
    return str(path) if path is not None else url


@contextlib.contextmanager
def creating(url: str) -> Iterator[None]:
    """Held while a process connects to the database or makes a study in it: an SQLite file's lock (module
    docstring); nothing for a database server."""
    path = sqlite_file(url)
    lock = Path(os.path.abspath(path.with_name(path.name + LOCK_SUFFIX))) if path is not None else None
    if lock is None or not lock.parent.is_dir():  # no folder: SQLite says it cannot open the file, none is made
        yield
        return
    held: dict[Path, int] = _held.__dict__.setdefault("locks", {})
    if held.get(lock):  # this thread holds it already (a connection made while a study is made)
        held[lock] += 1
        try:
            yield
        finally:
            held[lock] -= 1
        return
    with contextlib.ExitStack() as stack:
        try:
            stack.enter_context(file_lock(lock, timeout=SQLITE_TIMEOUT_SECONDS))
        except OSError as error:
            if error.errno not in CANNOT_CREATE:
                raise
        else:
            held[lock] = 1
            stack.callback(held.pop, lock, None)
        yield


def retried(step: Callable[[], Result]) -> Result:
    """`step()`, tried again after an error that a race of creation gives (module docstring); any other error, or
    the last try's, is raised."""
    attempt = 1
    while True:
        try:
            return step()
        except Exception as error:
            if attempt >= RACE_TRIES or not lost_race(error):
                raise
        time.sleep(random.uniform(0, RACE_PAUSE_SECONDS * attempt))
        attempt += 1


def lost_race(error: BaseException) -> bool:
    """Whether `error` (or the error it was raised from: Optuna wraps SQLAlchemy's) is what a lost race of creation
    gives."""
    seen = 0
    while error is not None and seen < 5:
        text = str(error).lower()
        if any(words in text for words in RACE_WORDS):
            return True
        error, seen = error.__cause__ or error.__context__, seen + 1
    return False


def check_sqlite_file(path: Path) -> bool:
    """Whether `path` holds Optuna's tables, all made (connecting to it then only reads it). False when it does not
    exist, is empty (SQLite makes a database of it) or has none or some of them: Optuna makes them. A file that is
    not an intact SQLite database, or holds another program's tables, is a SpecError naming it."""
    try:
        with open(path, "rb") as handle:
            header = handle.read(len(SQLITE_HEADER))
    except FileNotFoundError:
        return False
    except OSError as error:
        raise refused(path, f"cannot be read ({error.strerror or error})") from None
    if not header:
        return False
    if header != SQLITE_HEADER:
        raise refused(path, "is not an SQLite database")
    try:
        connection = sqlite3.connect(f"{Path(os.path.abspath(path)).as_uri()}?mode=ro", uri=True,
                                     timeout=SQLITE_TIMEOUT_SECONDS)
    except sqlite3.Error as error:
        raise refused(path, f"cannot be opened ({error})") from None
    try:
        damage = connection.execute("PRAGMA quick_check(1)").fetchone()[0]
        tables = {row[0] for row in connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        expected = optuna_columns()
        versioned = {table for table in VERSION_TABLES if table in tables
                     and connection.execute(f"SELECT 1 FROM {table} LIMIT 1").fetchone()}
        # Optuna checks the schema of a database it versioned (an older one: `optuna storage upgrade`); one it did
        # not is Optuna's only if its tables have Optuna's columns.
        lacking = {} if "version_info" in versioned else {
            table: expected[table] - {row[1] for row in connection.execute(f"PRAGMA table_info('{table}')")}
            for table in tables & set(expected)}
        made = set(expected) <= tables and versioned == set(VERSION_TABLES)
    except sqlite3.Error as error:
        raise refused(path, f"is damaged ({error})") from None
    finally:
        connection.close()
    if damage != "ok":
        raise refused(path, f"is damaged (SQLite's check: {shown(damage, 200)})")
    if tables and not tables & OPTUNA_TABLES:
        raise refused(path, f"is an SQLite database of another program (its tables: {listed(sorted(tables), 200)}), "
                      "not Optuna's")
    for table, columns in sorted(lacking.items()):
        if columns:
            raise refused(path, f"has a table {table} without Optuna's columns {listed(sorted(columns), 200)}")
    return made


def optuna_columns() -> dict[str, set[str]]:
    """The tables of Optuna's schema (its SQLAlchemy models', and alembic's, which records its version), each with
    its columns."""
    from optuna.storages._rdb import models

    tables = models.BaseModel.metadata.tables
    return {"alembic_version": {"version_num"}, **{name: {column.name for column in table.columns}
                                                   for name, table in tables.items()}}


def refused(path: Path, why: str) -> SpecError:
    return SpecError(f"the tuning database {path} {why}; move it away (or delete it) to tune again")
