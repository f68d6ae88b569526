"""Exclusive locks between processes on a file of a results folder or a tracking store.

flock: the OS releases the lock when its process dies, so a killed command never
leaves a folder locked. The lock file may sit in a folder that holds someone
else's files: a link there is not followed (no file of the machine is created or
touched), and a FIFO does not block.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import stat
import time
from collections.abc import Iterator
from pathlib import Path

# How often a lock with a time limit is tried again.
RETRY_SECONDS = 0.05


@contextlib.contextmanager
def file_lock(path: Path, timeout: float | None = None) -> Iterator[None]:
    """Held until the block ends; waits for another process's hold, without end or for at most `timeout` seconds
    (then TimeoutError naming the file)."""
    if timeout is None:
        with _locked(path, wait=True):
            yield
        return
    deadline = time.monotonic() + timeout
    while True:
        with _locked(path, wait=False) as held:
            if held:
                yield
                return
        if time.monotonic() > deadline:
            raise TimeoutError(f"{path} is held by another process for over {timeout:.0f} s")
        time.sleep(RETRY_SECONDS)


@contextlib.contextmanager
def try_file_lock(path: Path) -> Iterator[bool]:
    """`file_lock` when no other process holds it: True, held until the block ends; False (not held) when one
    does. For telling a run that another process is running from one that a killed process left."""
    with _locked(path, wait=False) as held:
        yield held


@contextlib.contextmanager
def _locked(path: Path, wait: bool) -> Iterator[bool]:
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, 0o666)
    except OSError as error:
        if error.errno in (errno.ELOOP, errno.ENXIO):  # a link; a FIFO with no reader
            raise OSError(error.errno, "the lock file is a symbolic link or a FIFO, not a regular file") from None
        raise
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, "the lock file is not a regular file")
        try:
            fcntl.flock(fd, fcntl.LOCK_EX if wait else fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield False
            return
        try:
            yield True
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)
