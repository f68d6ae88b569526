"""The one exception type for user mistakes.

Everything a user can get wrong (a spec, a command-line value, a data file)
raises `SpecError`; the command line prints its message and exits with status 2
instead of a traceback. Bugs in seqkeras itself stay ordinary exceptions.
The helpers here word such errors the same way everywhere: close matches,
allowed choices, a received value shown at a bounded length, and why a file a
user named cannot be read.
"""

from __future__ import annotations

import difflib
import os
import stat
from collections.abc import Iterable
from typing import BinaryIO

MAX_PATH = 200


class SpecError(Exception):
    """A user error, with where it happened and what would have been allowed."""

    def __init__(self, message: str, *, file: str | None = None, path: str | None = None):
        self.message = message
        self.file = file
        # A key path is the user's text too (a 5,000-character key is valid YAML); no real one is this long.
        self.path = path if path is None or len(path) <= MAX_PATH else f"{path[:MAX_PATH]}… ({len(path):,} characters)"
        super().__init__(str(self))

    def __str__(self) -> str:
        where = ": ".join(part for part in (self.file, self.path) if part)
        return f"{where}: {self.message}" if where else self.message

    def located(self, *, file: str | None = None, path_prefix: str | None = None) -> SpecError:
        """The same error, placed in a file and/or under a parent key path."""
        path = self.path
        if path_prefix:
            path = f"{path_prefix}.{path}" if path else path_prefix
        return SpecError(self.message, file=file or self.file, path=path)


def did_you_mean(received: object, choices: Iterable[str]) -> str:
    """' Did you mean 'lstm'?' when a close choice exists, else ''."""
    text = received if isinstance(received, str) else repr(received)
    if len(text) > 200:  # no name is that long, and difflib's cost grows with it
        return ""
    matches = difflib.get_close_matches(text, list(choices), n=1, cutoff=0.6)
    return f" Did you mean '{matches[0]}'?" if matches else ""


def unknown_choice(what: str, received: object, choices: Iterable[str]) -> str:
    """The message for a name that is not one of the allowed choices."""
    choices = sorted(choices)
    return f"unknown {what} {shown(received)}.{did_you_mean(received, choices)} Allowed: {listed(choices)}."


def listed(names: Iterable[object], limit: int = 600) -> str:
    """'a, b, c', cut to about `limit` characters with how many more there are."""
    names = [str(name) for name in names]
    text, count = "", 0
    for name in names:
        if len(text) + len(name) > limit:
            return f"{text}, … ({len(names) - count} more)"
        text, count = f"{text}, {name}" if text else name, count + 1
    return text


def shown(value: object, limit: int = 80) -> str:
    """`repr(value)`, cut to `limit` characters: a 5 MB value must not make a 5 MB message."""
    if isinstance(value, str) and len(value) > limit:  # cut before repr: repr of 5 MB costs 5 MB
        return f"{value[:limit]!r}… ({len(value):,} characters)"
    text = repr(value)
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… ({len(text):,} characters)"


# --------------------------------------------------------------------------- #
# Files a user names (a spec, a data file)
# --------------------------------------------------------------------------- #
# Here rather than in a stage because both the spec stage and the data stage
# open users' files, and errors is the one module both may import.

MISSING = "does not exist"


def _kind(mode: int) -> str | None:
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
        return _kind(os.stat(path).st_mode)
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
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    except OSError as error:
        raise SpecError(f"cannot be read ({error.strerror})") from None
    info = os.fstat(fd)
    problem = _kind(info.st_mode)
    if problem is None and info.st_size > limit:
        problem = f"is {size_in_words(info.st_size)}; the limit is {size_in_words(limit)}"
    if problem:
        os.close(fd)
        raise SpecError(problem)
    return os.fdopen(fd, "rb")


def size_in_words(size: int) -> str:
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if size >= scale:
            return f"{size / scale:.1f} {unit}".replace(".0 ", " ")
    return f"{size} bytes"
