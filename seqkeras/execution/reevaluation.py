"""`seqkeras evaluate`: the kept models of results folders evaluated again with more decoders or metrics.

Training is what costs; a decoder or metric added later needs only the trained
model. Each run folder is evaluated again under its lock (`kept.reevaluation`:
what a run gains and how its record and files grow), then runs.csv, table.md
(tables and claims) and the plots are rebuilt from the records (`sweep.rebuild`);
the experiment's claims keep reading its own decoders' rows (reporting.spec_rows).
Runs without a kept model (trained before models were kept, with
train.keep_model: false, a probe, a failed run) are named, not failures.
"""

from __future__ import annotations

import importlib.util
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from seqkeras.backends import runtime
from seqkeras.backends.runtime import BACKEND_PACKAGES
from seqkeras.errors import SpecError
from seqkeras.execution.identity import code_version
from seqkeras.execution.sweep import rebuild
from seqkeras.kept.reevaluation import RECORD, Additions, additions, reevaluate_run
from seqkeras.kept.selection import Selection, is_run_folder, selected_run_ids, selection
from seqkeras.results import files
from seqkeras.results.folder import named_experiment_folders
from seqkeras.results.locks import file_lock
from seqkeras.results.record import read_record

# `additions` and `selection` are kept's; the API reads them here, the stage it may import.
__all__ = ["FolderOutcome", "additions", "choose_backend", "recorded_backend", "reevaluate", "selected_runs",
           "selection"]


@dataclass
class FolderOutcome:
    """One experiment folder re-evaluated: which runs gained what, and which could not."""

    folder: Path
    added: dict[str, str] = field(default_factory=dict)  # run id → what it gained ("beam(width=5); metric bleu")
    unchanged: dict[str, str] = field(default_factory=dict)  # run id → why nothing was added
    without_model: dict[str, str] = field(default_factory=dict)  # run id → why it has no kept model
    failed: dict[str, str] = field(default_factory=dict)  # run id → the error
    summary: Any = None  # execution.experiment.Outcome: runs.csv and the claims' verdicts, rebuilt


def recorded_backend(folders: list[Path]) -> str | None:
    """The one backend the folders' runs were trained on, or None when they name several or none: the
    default for evaluating them again, so that the added numbers come from the kernels the rest did."""
    backends = set()
    for folder in folders:
        for run_folder in files.subfolders_with(folder, RECORD):
            record = read_record(run_folder / RECORD).record
            if record is not None and isinstance(record.get("backend"), str):
                backends.add(record["backend"])
    backend = backends.pop() if len(backends) == 1 else None
    installed = backend in BACKEND_PACKAGES and importlib.util.find_spec(BACKEND_PACKAGES[backend]) is not None
    return backend if installed else None


def choose_backend(requested: str | None, folders: list[Path]) -> str | None:
    """The backend to evaluate on: the one asked for, else $KERAS_BACKEND, else the one the runs were trained on
    (when they agree and it is installed), else None (auto)."""
    return requested or os.environ.get("KERAS_BACKEND") or recorded_backend(folders)


def selected_runs(paths: list[Path], wanted: Selection) -> dict[Path, list[str] | None]:
    """The experiment folders the command names, each with the run ids `wanted` selects in it (None: all of them).
    A run folder named on its own stands for its experiment folder and that one run."""
    chosen: dict[Path, list[str] | None] = {}
    for path in paths:
        if is_run_folder(path):
            if wanted:
                raise SpecError(f"{path} is one run's folder: {wanted.describe()} selects among an experiment's "
                                f"runs; give its results folder ({path.parent})")
            if not files.present(path.parent, "runs.csv"):
                raise SpecError(f"{path}: a run folder outside an experiment's results folder (no runs.csv beside it)")
            ids = chosen.get(path.parent, [])
            chosen[path.parent] = None if ids is None else [*ids, path.name]
            continue
        for folder in named_experiment_folders([path]):
            chosen[folder] = selected_run_ids(folder, wanted) if wanted else None
    return chosen


def reevaluate(folders: list[Path], additions: Additions, *, runs: dict[Path, list[str] | None] | None = None,
               echo: Callable[[str], None] = print) -> list[FolderOutcome]:
    """Each experiment folder's kept models evaluated again with `additions` (module docstring); `runs`: the run ids
    to evaluate in each folder (`selected_runs`), every run of a folder it leaves out or maps to None."""
    stamp = {"backend": runtime.running_backend(), "seqkeras": code_version()}
    outcomes = []
    for folder in folders:
        outcome = FolderOutcome(folder)
        run_folders = list(files.subfolders_with(folder, RECORD))
        only = (runs or {}).get(folder)
        if only is not None:
            run_folders = [run_folder for run_folder in run_folders if run_folder.name in only]
        for refused, why in files.refused_subfolders(folder, RECORD):  # said with its reason, never read
            if only is None or refused.name in only:
                outcome.without_model[refused.name] = f"its folder {why}"
        echo(f"{folder}: {len(run_folders)} run folder(s)")
        for index, run_folder in enumerate(run_folders, start=1):
            started = time.perf_counter()
            try:
                with file_lock(run_folder / ".lock"):
                    kind, what = reevaluate_run(run_folder, additions, stamp)
            except SpecError as error:
                kind, what = "failed", str(error)
            except Exception as error:  # an evaluation that fails is said, and the next run goes on
                kind, what = "failed", f"{type(error).__name__}: {error}"
            getattr(outcome, kind)[run_folder.name] = what
            echo(f"[{index}/{len(run_folders)}] {run_folder.name}: {_said(kind, what)} "
                 f"({time.perf_counter() - started:.1f} s)")
        outcome.summary = rebuild(folder, echo=echo)
        outcomes.append(outcome)
    return outcomes


def _said(kind: str, what: str) -> str:
    return {"added": f"added {what}", "unchanged": f"nothing to add ({what})",
            "without_model": f"no kept model ({what})", "failed": f"FAILED: {what}"}[kind]


