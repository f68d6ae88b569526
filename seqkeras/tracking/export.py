"""`seqkeras export`: results that already exist, logged to a tracker as `run --track` would have logged them."""

from __future__ import annotations

from pathlib import Path

from seqkeras.results.folder import read_record, read_runs
from seqkeras.tracking.mlflow_tracking import MlflowTracker, parse_track


def export_results(paths: list[Path], track: str) -> int:
    """Log every finished record of each experiment folder; returns how many could not be logged."""
    from seqkeras.reporting.html import experiment_folders

    folders = experiment_folders(paths)
    root = folders[0].parent  # the default store goes into the results root, as `run --track mlflow` puts it
    tracker = MlflowTracker(parse_track(track, root), root)
    print(tracker.describe())
    failed = 0
    for folder in folders:
        run_ids = list(dict.fromkeys(read_runs(folder)["run_id"]))
        before = failed
        for run_id in run_ids:
            record = read_record(folder / run_id / "metrics.json")
            if record is None:
                print(f"{folder.name}/{run_id}: no readable metrics.json, not logged")
                failed += 1
                continue
            problem = tracker.log(record, folder / run_id)
            if problem:
                print(f"{folder.name}/{run_id}: not logged ({problem})")
                failed += 1
        print(f"{folder.name}: {len(run_ids) - (failed - before)} of {len(run_ids)} run(s) in {tracker.uri}")
    return failed
