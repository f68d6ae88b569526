"""Files inside a results folder, read as carefully as a spec: the folder may be someone else's.

A shared results folder (a colleague's sweep, a course's reference results) is
input the suite did not write on this machine. Every reader of a results folder
(table, compare, report, export, load, the sweep's reuse check) goes through
this module, which gives three guarantees on top of `user_files`:

- **Inside the folder.** A name taken from a file (a plot's file, a run id) is a
  relative path of plain names: no `..`, no absolute path, no NUL. Every
  component below the folder is checked with `lstat`, so a symlink anywhere in
  it (a plot linked to /etc/passwd, a run folder linked to a home folder) is
  refused and never followed, copied, inlined or listed. The folder the user
  named may itself be a link: that is the user's choice, not the file's.
- **Never blocks.** Only regular files are opened, non-blocking and with
  O_NOFOLLOW, and checked again on the descriptor (a FIFO or a device never is).
- **Bounded.** At most `limit` bytes are read; /dev/zero or a 5 GB file cannot
  exhaust memory.

Problems are `SpecError`s whose message names the file: callers that can go on
without the file warn with it and skip the file.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path, PurePosixPath
from typing import BinaryIO

from seqkeras.errors import SpecError
from seqkeras.user_files import non_regular, open_descriptor, size_in_words

# Upper bounds for what a results folder holds; far above what the suite writes (runs.csv of a
# 10,000-run sweep is a few MiB), far below what would hurt a laptop.
TEXT_LIMIT = 64 << 20     # runs.csv, metrics.json, experiment.yaml, history and outputs tables
FILE_LIMIT = 256 << 20    # files copied or uploaded as they are (plots, weights)


def name_problem(name: object) -> str:
    """Why `name` (taken from a record: a run id, a plot file) is not a relative path inside a folder; "" if it is."""
    if not isinstance(name, str) or not name:
        return f"{name!r} is not a file name"
    if "\x00" in name:
        return f"{name!r} holds a NUL character"
    if "\\" in name:
        return f"{name!r} holds a backslash"
    path = PurePosixPath(name)
    if path.is_absolute():
        return f"{name!r} is an absolute path"
    if any(part in ("..", ".") for part in name.split("/")) or "" in name.split("/"):
        return f"{name!r} leaves its folder or is not a plain relative path"
    return ""


def single_name_problem(name: object) -> str:
    """Why `name` (a run id, an experiment's folder) is not one plain name of an entry of a folder; "" if it is."""
    problem = name_problem(name)
    if not problem and "/" in name:
        problem = f"{name!r} holds a '/': it is one name, not a path"
    return problem


def inside(folder: Path, name: str) -> Path:
    """`folder / name`, after checking that `name` stays in `folder` and crosses no symlink; else SpecError."""
    problem = name_problem(name)
    if problem:
        raise SpecError(f"{folder}: {problem}; it is not read")
    path = folder
    for part in PurePosixPath(name).parts:
        path = path / part
        try:
            mode = os.lstat(path).st_mode
        except FileNotFoundError:
            raise SpecError(f"{path} does not exist") from None
        except OSError as error:
            raise SpecError(f"{path} cannot be read ({error.strerror})") from None
        if stat.S_ISLNK(mode):
            raise SpecError(f"{path} is a symbolic link; links inside a results folder are not followed")
    return path


def _open(folder: Path, name: str, limit: int) -> tuple[int, Path]:
    path = inside(folder, name)
    try:  # not through a link either, should one be swapped in after the check
        return open_descriptor(path, limit=limit, follow_links=False), path
    except SpecError as error:
        raise SpecError(f"{path} {error}") from None


def read_bytes(folder: Path, name: str, *, limit: int = FILE_LIMIT) -> bytes:
    """The bytes of the regular file `folder/name`, read within `limit` (see the module's guarantees)."""
    fd, path = _open(folder, name, limit)
    return _read_within(fd, path, limit)


def open_binary(folder: Path, name: str, *, limit: int = FILE_LIMIT) -> BinaryIO:
    """The regular file `folder/name` opened for binary reading, with `read_bytes`'s checks (its size within
    `limit`), for a reader that seeks in it (a zip: a kept model.keras) rather than reading it whole. The caller
    closes it."""
    fd, _ = _open(folder, name, limit)
    return os.fdopen(fd, "rb")


def read_named_text(path: Path, *, limit: int = TEXT_LIMIT) -> str:
    """The UTF-8 text of a file the user named (a runs.csv given itself): a link is followed, the user chose
    it; the file is still regular, opened without blocking and read within `limit`."""
    try:
        fd = open_descriptor(path, limit=limit)
    except SpecError as error:
        raise SpecError(f"{path} {error}") from None
    return _utf8(_read_within(fd, path, limit), path)


def _read_within(fd: int, path: Path, limit: int) -> bytes:
    with os.fdopen(fd, "rb") as handle:
        data = handle.read(limit + 1)  # /proc-like files claim size 0: the bound is on what is read
    if len(data) > limit:
        raise SpecError(f"{path} is over {size_in_words(limit)}; it is not read")
    return data


def _utf8(data: bytes, path: Path) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise SpecError(f"{path} is not UTF-8 text (byte {error.start})") from None


def read_text(folder: Path, name: str, *, limit: int = TEXT_LIMIT) -> str:
    """The UTF-8 text of `folder/name` (see `read_bytes`); a file that is not UTF-8 is a SpecError naming it."""
    return _utf8(read_bytes(folder, name, limit=limit), folder / name)


def is_file(folder: Path, name: str) -> bool:
    """Whether `folder/name` is a regular file inside the folder, reached without a link (no open, no block)."""
    try:
        return stat.S_ISREG(os.lstat(inside(folder, name)).st_mode)
    except (SpecError, OSError):
        return False


def is_folder(folder: Path, name: str) -> bool:
    """Whether `folder/name` is a real folder inside `folder` (not a link to one)."""
    try:
        return stat.S_ISDIR(os.lstat(inside(folder, name)).st_mode)
    except (SpecError, OSError):
        return False


def subfolders_with(folder: Path, file_name: str) -> Iterator[Path]:
    """The real subfolders of `folder` that hold a regular `file_name` (as `folder.glob('*/file_name')`,
    without following links), sorted by name."""
    try:
        entries = sorted(os.scandir(folder), key=lambda entry: entry.name)
    except OSError:
        return
    for entry in entries:
        if entry.is_dir(follow_symlinks=False) and is_file(folder, f"{entry.name}/{file_name}"):
            yield folder / entry.name


def regular_files(folder: Path) -> Iterator[tuple[str, Path]]:
    """(relative name, path) of every regular file below `folder`, links and special files left out: what may be
    copied or uploaded from a run folder without leaking a file of this machine."""
    for root, dirs, files in os.walk(folder, followlinks=False):
        base = Path(root)
        dirs[:] = sorted(d for d in dirs if not (base / d).is_symlink())
        for name in sorted(files):
            path = base / name
            try:
                if stat.S_ISREG(os.lstat(path).st_mode):
                    yield path.relative_to(folder).as_posix(), path
            except OSError:
                continue


def present(folder: Path, name: str) -> bool:
    """Whether anything at all (a file, a link, a FIFO) has the name `folder/name`: a `read_*` of it that
    fails is then a file refused, not a file missing. Never opens; False for a name that leaves the folder."""
    if name_problem(name):
        return False
    return os.path.lexists(folder / name)


def refused_subfolders(folder: Path, file_name: str) -> Iterator[tuple[Path, str]]:
    """(path, why) for each subfolder of `folder` that has a `file_name` which `subfolders_with` leaves out:
    a link to a folder, or a `file_name` that is a link, a FIFO, a device (for the warning that names it)."""
    try:
        entries = sorted(os.scandir(folder), key=lambda entry: entry.name)
    except OSError:
        return
    for entry in entries:
        path = folder / entry.name
        if entry.is_symlink():
            if os.path.lexists(path / file_name):  # through the link: only a stat, to say what is left out
                yield path, "is a symbolic link; links inside a results folder are not followed"
        elif entry.is_dir(follow_symlinks=False) and os.path.lexists(path / file_name) \
                and not is_file(folder, f"{entry.name}/{file_name}"):
            try:
                inside(folder, f"{entry.name}/{file_name}")
                why = non_regular(os.lstat(path / file_name).st_mode) or "cannot be read"
            except SpecError as error:
                why = str(error).removeprefix(f"{path / file_name} ")
            except OSError as error:
                why = f"cannot be read ({error.strerror})"
            yield path / file_name, why
