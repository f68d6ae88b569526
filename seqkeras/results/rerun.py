"""A rerun of a finished run (`--force`, or a record of another version) writes beside its files, never over them.

A run folder that holds a finished record keeps every file of it until the rerun
has finished too: the rerun writes into `<run>/.rerun/` and only then are its
files moved into the run folder. A rerun that fails (a full disk, an error, a
Ctrl-C) leaves the finished run's files as they were; the sweep keeps that run's
record in runs.csv (execution.experiment) and reports the failure.

The move takes the old record out first and puts the new one in last, so the
folder never holds a finished record beside another run's files. If the process
dies inside the move, the next run into the folder puts the old files back
(`recover`): what was finished before is never lost.
"""

from __future__ import annotations

import os
from pathlib import Path

from seqkeras.results.record import OK, read_record
from seqkeras.results.removal import remove_tree

RECORD = "metrics.json"
STAGING = ".rerun"  # the rerun's files, until it has finished
REPLACED = ".replaced"  # the finished run's files, while the rerun's are moved in
# What belongs to the folder, not to one run of it: its lock (held by the process that moves the files).
FOLDER_OWN = frozenset({".lock", STAGING, REPLACED})


def holds_finished_run(folder: Path) -> bool:
    record = read_record(folder / RECORD).record
    return record is not None and record.get("status") == OK


def recover(folder: Path) -> None:
    """Finish or undo a move that a dead process left half done."""
    replaced = folder / REPLACED
    if not replaced.is_dir() or replaced.is_symlink():
        return
    if not os.path.lexists(folder / RECORD):  # died before the new record was in: the old files go back
        for entry in _entries(replaced):
            target = folder / entry.name
            if os.path.lexists(target):
                remove_tree(target, inside=folder)
            os.replace(entry, target)
    remove_tree(replaced, inside=folder)


def staging_folder(folder: Path) -> Path:
    """Where a rerun of the finished run in `folder` writes: an empty folder, or the one a killed rerun left (its
    checkpoint resumes, as a killed run's does in its own folder)."""
    staging = folder / STAGING
    if staging.is_symlink() or (os.path.lexists(staging) and not staging.is_dir()):
        remove_tree(staging, inside=folder)
    staging.mkdir(exist_ok=True)
    return staging


def discard(staging: Path) -> None:
    """A failed rerun's files: gone, the finished run's stay."""
    remove_tree(staging, inside=staging.parent)


def replace_with_rerun(folder: Path) -> None:
    """Move the finished rerun's files from `<folder>/.rerun` into `folder`, the old ones out (then deleted)."""
    staging, replaced = folder / STAGING, folder / REPLACED
    if os.path.lexists(replaced):
        remove_tree(replaced, inside=folder)
    replaced.mkdir()
    old = _entries(folder, skip=FOLDER_OWN)
    for entry in sorted(old, key=lambda entry: entry.name != RECORD):  # the old record out first
        os.replace(entry, replaced / entry.name)
    new = _entries(staging)
    for entry in sorted(new, key=lambda entry: entry.name == RECORD):  # the new record in last
        os.replace(entry, folder / entry.name)
    remove_tree(replaced, inside=folder)
    remove_tree(staging, inside=folder)


def _entries(folder: Path, skip: frozenset[str] = frozenset()) -> list[Path]:
    return [folder / entry.name for entry in os.scandir(folder) if entry.name not in skip]

