"""`seqkeras track` (formerly `export`): results that already exist, logged to a tracker as `run --track` would
have logged them.

The results may be someone else's: the tracking store is checked before anything is read
(a bad one is a SpecError, exit 2), every file is read through `results.files`, and the
names used in the store (the MLflow experiment, its artifact folder, the run) are the
folders', never taken from a record's text (`record_name_problem`).
"""

from __future__ import annotations

import os
from pathlib import Path

from seqkeras.errors import shown
from seqkeras.results.files import single_name_problem
from seqkeras.results.folder import named_experiment_folders, read_runs
from seqkeras.results.record import read_record
from seqkeras.tracking.mlflow_store import parse_track
from seqkeras.tracking.mlflow_tracking import MlflowTracker


def log_results(paths: list[Path], track: str) -> int:
    """Log every finished record of each experiment folder; returns how many could not be logged."""
    # As named (`track .` inside an experiment folder is that folder), without following links.
    folders = [Path(os.path.abspath(folder)) for folder in named_experiment_folders(paths)]
    root = folders[0].parent  # the default store goes into the results root, as `run --track mlflow` puts it
    tracker = MlflowTracker(parse_track(track, root), root)
    print(tracker.describe())
    failed = 0
    for folder in folders:
        run_ids = list(dict.fromkeys(read_runs(folder)["run_id"]))
        before = failed
        for run_id in run_ids:
            problem = single_name_problem(run_id)
            if problem:
                print(f"{folder.name}/{shown(run_id)}: not logged (its run id in runs.csv is not a plain name: "
                      f"{problem})")
                failed += 1
                continue
            record, why = read_record(folder / run_id / "metrics.json")
            if record is None:
                print(f"{folder.name}/{run_id}: metrics.json {why}, not logged")
                failed += 1
                continue
            problem = tracker.log(record, folder / run_id)
            if problem:
                print(f"{folder.name}/{run_id}: not logged ({problem})")
                failed += 1
        print(f"{folder.name}: {len(run_ids) - (failed - before)} of {len(run_ids)} run(s) in {tracker.shown_uri}")
    return failed
