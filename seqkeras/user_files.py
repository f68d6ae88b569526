"""Files a user names (a spec, a data file): checked before they are opened, and read within bounds.

A FIFO would block an open for reading, /dev/zero never ends, and a 5 GB file
must not be read into memory to find out it is too large. So a path is `stat`ed
first, opened non-blocking, checked again on what was opened, and read up to a
limit. Both the spec stage and the data stage open users' files: this module,
like `errors`, is a foundation either may import.
"""

from __future__ import annotations

import os
import stat
from typing import BinaryIO

from seqkeras.errors import SpecError

# open users' files, and errors is the one module both may import.

MISSING = "does not exist"


def non_regular(mode: int) -> str | None:
    """What a non-regular file is, in words; None for a regular file."""
    if stat.S_ISREG(mode):
        return None
    if stat.S_ISDIR(mode):
        return "is a folder, not a file"
    if stat.S_ISFIFO(mode):
        return "is a FIFO (named pipe), not a regular file"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "is a device, not a regular file"
    if stat.S_ISSOCK(mode):
        return "is a socket, not a regular file"
    return "is not a regular file"


def file_problem(path: str | os.PathLike) -> str | None:
    """Why `path` cannot be read as a regular file, as the end of a sentence about it; None if it can.

    Only `stat`s (through symlinks): it never opens, so a FIFO cannot block it.
    """
    try:
        return non_regular(os.stat(path).st_mode)
    except (FileNotFoundError, NotADirectoryError):
        return MISSING
    except ValueError:  # os.stat refuses a NUL character
        return "is not a usable path (it holds a NUL character)"
    except OSError as error:
        return f"cannot be read ({error.strerror})"


def open_regular_file(path: str | os.PathLike, *, limit: int) -> BinaryIO:
    """`path` opened for binary reading, if it is a regular file of at most `limit` bytes.

    Otherwise a `SpecError` whose message ends a sentence about the file
    ("is a FIFO (named pipe), not a regular file"): the caller names the file.
    The open is non-blocking, since opening a FIFO for reading waits for a
    writer forever, and the kind is checked again on what was opened, so a
    file swapped after the first check cannot slip through. Readers must
    still read at most `limit` + 1 bytes: /proc files claim size 0.
    """
    problem = file_problem(path)
    if problem:
        raise SpecError(problem)
    return os.fdopen(open_descriptor(path, limit=limit), "rb")


def open_descriptor(path: str | os.PathLike, *, limit: int, follow_links: bool = True) -> int:
    """A descriptor of `path` open for reading: non-blocking (a FIFO never waits for a writer), not through
    a final symlink unless `follow_links`, and checked on what was opened to be a regular file of at most
    `limit` bytes. Otherwise a `SpecError` whose message ends a sentence about the file."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    if not follow_links:
        flags |= getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(path, flags)
    except OSError as error:  # ELOOP: a link where none may be
        raise SpecError(f"cannot be read ({error.strerror})") from None
    info = os.fstat(fd)
    problem = non_regular(info.st_mode)
    if problem is None and info.st_size > limit:
        problem = f"is {size_in_words(info.st_size)}; the limit is {size_in_words(limit)}"
    if problem:
        os.close(fd)
        raise SpecError(problem)
    return fd


def size_in_words(size: int) -> str:
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if size >= scale:
            return f"{size / scale:.1f} {unit}".replace(".0 ", " ")
    return f"{size} bytes"
