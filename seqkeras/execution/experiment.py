"""One experiment: every run of it, each recorded as it finishes, then the summary (tables, verdicts, plots).

A run that raises is recorded as failed (with its error) and the sweep goes on,
unless it found no space left on the disk: then the sweep stops (DiskFullStop),
as every run after it would fail the same way;
a run whose folder already holds a finished record of the same resolved spec
is skipped unless `force` is set. runs.csv is rewritten after every run, so an
interrupted sweep keeps everything it finished. A rerun never takes a finished
record out of runs.csv before it has finished itself: until then, and when it
fails, the run's earlier finished record stands there, as its files stand in its
folder (results.rerun); the failure is still counted and said.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import pandas as pd

from seqkeras.execution.executors import Job, SerialExecutor, adopt_recorded_folders, reusable_record
from seqkeras.execution.identity import reused_under
from seqkeras.execution.progress import Progress, run_label, track
from seqkeras.execution.tuning import tune, untuned_failure
from seqkeras.results.locks import file_lock
from seqkeras.reporting.data_card import write_experiment_card
from seqkeras.reporting.expectations import Verdict, check
from seqkeras.reporting.plots import import_matplotlib, write_plots
from seqkeras.reporting.spec_rows import own_rows
from seqkeras.reporting.tables import render_page, summary_tables
from seqkeras.reporting import training_notes
from seqkeras.reporting.tuning import write_tuning_report
from seqkeras.results.folder import DISK_FULL, FAILED, OK, run_counts, runs_frame, write_atomic, write_csv, write_yaml
from seqkeras.results import files
from seqkeras.results.record import read_record
from seqkeras.spec.runs import Experiment, own_decoder_labels
from seqkeras.tracking import tensorboard


@dataclass
class Outcome:
    runs: pd.DataFrame
    verdicts: list[Verdict]
    failed_reruns: int = 0  # reruns that failed where an earlier finished record stands in runs.csv

    @property
    def failed_runs(self) -> int:
        return run_counts(self.runs)[2] + self.failed_reruns

    @property
    def failed_claims(self) -> int:
        return sum(not v.holds for v in self.verdicts)

    @property
    def ok(self) -> bool:
        return self.failed_runs == 0 and self.failed_claims == 0


def run_experiment(
    experiment: Experiment,
    out_root: Path,
    *,
    force: bool = False,
    executor=None,
    echo: Callable[[str], None] = print,
    tracker=None,
) -> Outcome:
    """tracker: an `MlflowTracker` (run --track): each run is logged to it while it runs, by the process that runs
    it, and every finished record (reused ones too) is then handed to it, which logs what is not there yet."""
    executor = executor or SerialExecutor()
    folder = out_root / experiment.spec.name
    folder.mkdir(parents=True, exist_ok=True)
    write_yaml(folder / "experiment.yaml", experiment.spec.model_dump(mode="json", exclude_none=True))
    for note in experiment.notes:
        echo(f"{experiment.spec.name}: {note}")
    if experiment.spec.tune is not None:  # each point's trials first; its runs are then those of its best setting
        experiment = tune(experiment, folder, executor, echo=echo, tracker=tracker)
    experiment = adopt_recorded_folders(experiment, folder)  # a run recorded at another train.verbose is reused
    total = len(experiment.runs)
    records: dict[int, dict[str, Any]] = {}
    standing: dict[int, dict[str, Any]] = {}  # finished records that stand in runs.csv until their rerun finishes
    pending: list[Job] = []
    # Runs left out by --only keep their finished records in runs.csv: a subset never erases the rest.
    kept = [record for run in experiment.unselected
            if (record := reusable_record(folder / run.run_id, run).record) is not None]
    for index, run in enumerate(experiment.runs):
        run_folder = folder / run.run_id
        previous, why_not = reusable_record(run_folder, run, force=force)
        untuned = untuned_failure(run) if experiment.spec.tune is not None else None
        if untuned:  # its point has no setting to train: a failed run, with no folder
            records[index] = failed_record(run, untuned)
        elif previous is not None:
            records[index] = previous
        else:
            if why_not:
                echo(f"{run.run_id}: {why_not}; running it again")
            if (earlier := finished_record(run_folder, run)) is not None:
                standing[index] = earlier
            pending.append(Job(index, run, run_folder, f"run {index + 1} of {total}: {run.run_id}", run_label(run),
                               tracker.live(folder) if tracker is not None else None))
    set_aside = finished_elsewhere(folder, experiment)
    if set_aside:
        echo(f"{experiment.spec.name}: {len(set_aside)} finished run folder(s) in {folder} are not runs of this "
             f"spec (another version of it: the first, {set_aside[0]}) and are left out of runs.csv; their folders "
             "stay, and running that version again puts them back without training")
    if records:
        echo(f"{experiment.spec.name}: {len(records)} of {total} runs done before, reused: {reused_under()} "
             "(--force reruns them)")
        no_events = [experiment.runs[i].run_id for i, record in records.items() if record["status"] == OK
                     and experiment.runs[i].train is not None and experiment.runs[i].train.tensorboard
                     and not (folder / experiment.runs[i].run_id / tensorboard.FOLDER).is_dir()]
        if no_events:
            echo(f"{experiment.spec.name}: {len(no_events)} reused run(s) were trained without TensorBoard "
                 f"events (the first: {no_events[0]}); --force trains them again with events")
    if tracker is not None:
        echo(f"{experiment.spec.name}: {tracker.describe()}")
        for index, record in records.items():
            track(tracker, record, folder / experiment.runs[index].run_id, echo)
    if pending:
        echo(f"{experiment.spec.name}: {len(pending)} run(s) {executor.describe()}")

    failed_reruns: set[int] = set()

    def write_runs() -> pd.DataFrame:
        shown = {**standing, **{i: r for i, r in records.items() if r["status"] == OK or i not in standing}}
        ordered = [shown[i] for i in sorted(shown)] + kept
        frame = runs_frame(ordered, experiment.matrix_columns)
        with file_lock(folder / ".runs.lock"):
            write_csv(folder / "runs.csv", frame)
        return frame

    progress = Progress(len(pending), executor.slots)
    try:
        for done, (job, record) in enumerate(executor.map(pending, force), start=1):
            records[job.index] = record
            status = "ok" if record["status"] == OK else f"FAILED: {record['error']}"
            if record["status"] != OK and job.index in standing:
                if (earlier := finished_record(job.folder, job.run)) is not None:  # as the rerun left it
                    standing[job.index] = earlier
                    failed_reruns.add(job.index)
                    status += f" (its finished record of {earlier.get('started') or 'before'} is kept)"
                else:
                    del standing[job.index]
            if record.get("reused"):
                status = "finished by another process, reused"
            # A record another process finished took this sweep no time: its seconds are not this sweep's pace.
            progress.finished(record["status"] != OK, None if record.get("reused") else record.get("seconds"))
            echo(f"[{len(records)}/{total}] {job.run.run_id}: {status} ({record.get('seconds', 0):.1f} s); {progress}")
            if tracker is not None:
                track(tracker, record, job.folder, echo)
            if record.get(DISK_FULL):  # the runs after it would fail the same way: stop (runs.csv is written below)
                raise DiskFullStop(f"run {job.index + 1} of {total}",
                                   sum(r["status"] != OK for r in records.values()), len(pending) - done)
            write_runs()
            if len(pending) - done < executor.slots:  # a worker has no run left: use its core to
                import_matplotlib()  # get the plots' imports done before the last run ends
    finally:
        # Also on Ctrl-C: what finished is summarized, nothing is lost.
        runs = write_runs()
    outcome = summarize(folder, experiment, runs, echo=echo)
    outcome.failed_reruns = len(failed_reruns)
    return outcome



def finished_elsewhere(folder: Path, experiment: Experiment) -> list[str]:
    """The run folders of `folder` holding a finished record of this experiment that none of its runs is (an
    earlier version of the spec): runs.csv, rewritten with this spec's runs, leaves them out."""
    own = {run.run_id for run in experiment.runs + experiment.unselected}
    others = []
    for path in files.subfolders_with(folder, "metrics.json"):
        if path.name in own:
            continue
        record = read_record(path / "metrics.json").record
        if record is not None and record.get("status") == OK and record.get("experiment") == experiment.spec.name \
                and record.get("run_id") == path.name:
            others.append(path.name)
    return others


def finished_record(run_folder: Path, run) -> dict[str, Any] | None:
    """The finished record in the run's folder, of this run (whatever code or backend made it), or None."""
    record = read_record(run_folder / "metrics.json").record
    if record is None or record.get("status") != OK:
        return None
    if record.get("experiment") != run.experiment or record.get("run_id") != run.run_id:
        return None
    return record


def failed_record(run, why: str) -> dict[str, Any]:
    """The record of a run that could not be started, and why."""
    from seqkeras.execution.single_run import new_record

    return {**new_record(run), "status": FAILED, "error": why, "traceback": None, "seconds": 0.0}


class DiskFullStop(Exception):
    """A run found the disk full (its record says where), so its experiment stopped after recording it."""

    def __init__(self, where: str, failed_runs: int, left: int):
        super().__init__(where)
        self.where = where  # "run 3 of 18"
        self.failed_runs = failed_runs  # of the experiment, that one included
        self.left = left  # its runs not run (not started, or stopped in another worker: they resume)


def summarize(folder: Path, experiment: Experiment, runs: pd.DataFrame, *,
              echo: Callable[[str], None] = print) -> Outcome:
    """table.md (tables and verdicts) and the plots, all computed from runs.csv and the run folders."""
    own = own_decoder_labels(experiment.spec)  # rows of decoders `seqkeras evaluate` added are shown, not claimed
    verdicts = [check(expect, own_rows(runs, own)) for expect in experiment.spec.expect]
    tables = summary_tables(runs, experiment.spec.tables(), experiment.matrix_columns, own_decoders=own)
    notes = training_notes.notes(folder, runs)
    page = render_page(experiment.spec.name, experiment.spec.description, runs, tables, verdicts, notes)
    write_atomic(folder / "table.md", page)
    for note in notes:  # said on the terminal too, where a comparison's ranks are read
        echo(f"{experiment.spec.name}: {note}")
    write_plots(folder, experiment, runs, echo=echo)  # never raises: a failed plot is a warning
    write_experiment_card(folder, experiment.spec.name, task_runs(experiment), echo=echo)  # a bad card: a warning
    write_tuning_report(folder, experiment.spec, echo)  # a tuned experiment's tuning.md; never raises
    return Outcome(runs, verdicts)


def task_runs(experiment: Experiment) -> list[tuple[str, list[str]]]:
    """Each task configuration the experiment trains on (its label), with its runs' ids, lowest seed first: the data
    card shows the first one's data."""
    groups: dict[str, tuple[str, list[str]]] = {}
    # A stable sort: within a seed, the matrix's order; the runs --only left out count too (their folders stay).
    for run in sorted(experiment.runs + experiment.unselected, key=lambda run: run.seed):
        if run.task is None:  # a probe: no data
            continue
        key = json.dumps(run.resolved.get("task"), sort_keys=True, default=str)
        varying = [f"{column.removeprefix('task.')}={value}" for column, value in run.matrix_values.items()
                   if column.startswith("task.") and column != "task.name" and value is not None]
        label = run.task.name + (f" ({', '.join(varying)})" if varying else "")
        groups.setdefault(key, (label, []))[1].append(run.run_id)
    return list(groups.values())
