"""One side of a comparison: each experiment's runs.csv, from a results folder, a runs.csv or a results root.

Experiments are named by their runs.csv's `experiment` column (the folder's name
when it has none), so that two sides are matched by experiment, never by folder.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from seqkeras.errors import SpecError
from seqkeras.results.folder import experiment_folders_in, read_runs


@dataclass
class Side:
    """One side's results of one experiment, and the folder that holds them (with its experiment.yaml)."""

    runs: pd.DataFrame
    folder: Path


def load_side(path: Path) -> tuple[dict[str, Side], bool]:
    """({experiment name: its results}, whether `path` is a results root) from a results folder, a runs.csv or a
    root."""
    if not path.exists():
        raise SpecError(f"{path}: no such file or folder")
    if path.is_file() or os.path.lexists(path / "runs.csv"):  # read_runs names one that is no file
        runs = read_runs(path)
        folder = path.parent if path.is_file() else path
        return {_experiment_name(runs, folder): Side(runs, folder)}, False
    found = experiment_folders_in(path)
    if not found:
        raise SpecError(f"{path} holds no runs.csv, neither itself nor in its experiment folders")
    return {_experiment_name(runs, folder): Side(runs, folder)
            for folder in found for runs in [read_runs(folder)]}, True


def _experiment_name(runs: pd.DataFrame, folder: Path) -> str:
    names = runs["experiment"].dropna().unique() if "experiment" in runs else []
    return str(names[0]) if len(names) == 1 else folder.name
