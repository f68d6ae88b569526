"""Deleting and replacing folders: the only module of the package that removes a tree.

A delete that names the wrong folder loses a user's work for good: `export-model --output sub/.. --overwrite`
once removed the current folder, and `--output <the experiment folder>` replaced runs.csv and the run being
exported. So every removal of a tree goes through here, and two rules hold for each:

- **Resolved first, then checked, then used.** A destination is resolved once (`destination`): every folder
  above it with its links and `..` followed, its last name kept as written (a link there is itself replaced,
  never what it points to; `.` and `..` are resolved whole). The checks and the removal use that path only.
- **Never what it must not hit** (`refusal`): the filesystem's root, the home folder, the current folder or any
  folder above it, a folder that holds a results folder of the suite (a results root, an experiment's folder, a
  run's folder: anything with runs.csv or metrics.json in it or up to two folders below), and any folder that
  holds a path the command reads (the run being exported).

A replacement is written beside its destination first and swapped in at the end (`swap_in`): the old folder is
moved aside, the new one renamed into place, and only then is the old one removed, so a failure at any point
leaves either the old folder or the new one whole. `remove_tree` removes a folder the suite made itself, and
only inside the folder it names as its container.

tests/test_removal.py walks every call of the package that removes or replaces a path and checks that each is
here or one of the listed in-folder moves.
"""

from __future__ import annotations

import os
import shutil
import stat
import tempfile
from collections.abc import Iterable
from pathlib import Path

from seqkeras.errors import SpecError

# What marks a folder as a results folder of the suite (results.folder writes runs.csv, a run writes metrics.json).
RESULTS_MARKS = ("runs.csv", "metrics.json")
MARK_DEPTH = 3  # a results root → an experiment's folder → a run's folder


def destination(path: str | Path) -> Path:
    """`path` as an absolute path whose folders above are resolved (links and `..` followed) and whose last name
    is kept as written, so a link there is the thing replaced; a path ending in `.` or `..` is resolved whole."""
    raw = Path(path)  # pathlib drops a trailing `/.`; `..` it keeps, and "." becomes a name of ""
    if raw.name in ("", ".."):
        return raw.resolve()
    return raw.absolute().parent.resolve() / raw.name


def refusal(target: Path, *, reads: Iterable[Path] = (), what: str = "it", results: bool = True) -> str:
    """Why the resolved `target` must not be removed or replaced; "" when it may be. `reads`: paths the command
    reads (the run it exports), which the target must not hold. `what` names the target in the sentence.
    `results`: whether a folder holding results of the suite is refused too (not for the suite's own scratch,
    a rerun's staging folder, which holds a run's record)."""
    target = Path(target)
    if stat.S_ISLNK(_mode(target)):
        return ""  # a link is replaced as a link: nothing it points to is touched
    real = target.resolve()
    if real == Path(real.anchor):
        return f"{what} is the filesystem's root"
    home = Path.home().resolve()
    if real == home:
        return f"{what} is the home folder"
    here = Path.cwd().resolve()
    if real == here or real in here.parents:
        return f"{what} is the current folder" if real == here else f"{what} holds the current folder ({here})"
    for path in reads:
        source = Path(path).resolve()
        if source == real:
            return f"{what} is {source}, which this command reads"
        if real in source.parents:
            return f"{what} holds {source}, which this command reads"
    marked = _results_mark(real) if results else None
    if marked is not None:
        return f"{what} holds results of the suite ({marked})"
    return ""


def _mode(path: Path) -> int:
    try:
        return os.lstat(path).st_mode
    except OSError:
        return 0


def _results_mark(folder: Path) -> Path | None:
    """The first runs.csv or metrics.json in `folder` or up to MARK_DEPTH - 1 folders below it (links not
    followed), or None."""
    level = [folder]
    for _ in range(MARK_DEPTH):
        below = []
        for each in level:
            for mark in RESULTS_MARKS:
                if os.path.lexists(each / mark):
                    return each / mark
            try:
                below += [Path(entry.path) for entry in os.scandir(each) if entry.is_dir(follow_symlinks=False)]
            except OSError:
                continue
        level = below
    return None


def check_replaceable(target: Path, *, reads: Iterable[Path] = (), option: str = "--output") -> None:
    """A SpecError in one line when `refusal` names a reason."""
    why = refusal(target, reads=reads, what=f"{option} {target}")
    if why:
        raise SpecError(f"{why}: it is never removed or replaced; choose another folder")


def staging_beside(target: Path) -> Path:
    """A new empty folder beside `target` (same filesystem, so the swap is a rename), this user's only."""
    target.parent.mkdir(parents=True, exist_ok=True)
    return Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))


def swap_in(staging: Path, target: Path, *, reads: Iterable[Path] = ()) -> bool:
    """Put the finished folder `staging` in the place of `target` (resolved by `destination`); whether something
    was replaced. What `target` held is moved aside first and removed only once `staging` is in place; `target` is
    checked again here (`refusal`), so nothing that became protected since is hit."""
    check_replaceable(target, reads=reads)
    if not os.path.lexists(target):
        staging.rename(target)
        return False
    aside = Path(tempfile.mkdtemp(prefix=f".{target.name}.replaced.", dir=target.parent))
    old = aside / "old"
    os.rename(target, old)  # a link moves as a link
    try:
        staging.rename(target)
    except BaseException:
        os.rename(old, target)  # the old folder back where it was
        aside.rmdir()
        raise
    remove_tree(aside, inside=target.parent)
    return True


def remove_tree(path: Path, *, inside: Path) -> None:
    """Remove the folder `path`, which the suite made, strictly inside the folder `inside`; a link is removed as
    a link. Refuses (ValueError: a bug, not a user's mistake) a path outside `inside` or that `refusal` protects.
    Errors while removing are ignored: what is left is the suite's own scratch."""
    container = Path(inside).resolve()
    place = Path(path).absolute().parent.resolve()
    if place != container and container not in place.parents:
        raise ValueError(f"refusing to remove {path}: it is not inside {container}")
    target = place / Path(path).name
    if not os.path.lexists(target):
        return
    if stat.S_ISLNK(_mode(target)) or not stat.S_ISDIR(_mode(target)):
        target.unlink(missing_ok=True)
        return
    why = refusal(target, what=str(target), results=False)
    if why:
        raise ValueError(f"refusing to remove {target}: {why}")
    shutil.rmtree(target, ignore_errors=True)
