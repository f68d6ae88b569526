"""Run every run of an experiment, record each as it finishes, then summarize.

A run that raises is recorded as failed (with its error) and the sweep goes on;
a run whose folder already holds a finished record of the same resolved spec
is skipped unless `force` is set. runs.csv is rewritten after every run, so an
interrupted sweep keeps everything it finished.
"""

from __future__ import annotations

import functools
import hashlib
import platform
import time
import traceback
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable

import pandas as pd

from seqkeras import runtime
from seqkeras.expectations import Verdict, check
from seqkeras.plotting import import_matplotlib, write_plots
from seqkeras.report import render_page, summary_tables
from seqkeras.results import (
    FAILED,
    OK,
    read_record,
    run_counts,
    runs_frame,
    write_atomic,
    write_csv,
    write_json,
    write_yaml,
)
from seqkeras.spec import Experiment, RunSpec


@dataclass
class Outcome:
    runs: pd.DataFrame
    verdicts: list[Verdict]

    @property
    def failed_runs(self) -> int:
        return run_counts(self.runs)[2]

    @property
    def failed_expectations(self) -> int:
        return sum(not v.holds for v in self.verdicts)

    @property
    def ok(self) -> bool:
        return self.failed_runs == 0 and self.failed_expectations == 0


def run_experiment(
    experiment: Experiment,
    out_root: Path,
    *,
    force: bool = False,
    executor=None,
    echo: Callable[[str], None] = print,
) -> Outcome:
    from seqkeras.executors import Job, SerialExecutor, file_lock, finished_record

    executor = executor or SerialExecutor()
    folder = out_root / experiment.spec.name
    folder.mkdir(parents=True, exist_ok=True)
    write_yaml(folder / "experiment.yaml", experiment.spec.model_dump(mode="json", exclude_none=True))
    total = len(experiment.runs)
    records: dict[int, dict[str, Any]] = {}
    pending: list[Job] = []
    for index, run in enumerate(experiment.runs):
        run_folder = folder / run.run_id
        previous = None if force else finished_record(run_folder)
        if previous is not None:
            records[index] = previous
        else:
            if (run_folder / "metrics.json").exists() and read_record(run_folder / "metrics.json") is None:
                echo(f"{run.run_id}: damaged metrics.json, running it again")
            pending.append(Job(index, run, run_folder))
    if records:
        echo(f"{experiment.spec.name}: {len(records)} of {total} runs done before, reused (--force reruns them)")
    if pending:
        echo(f"{experiment.spec.name}: {len(pending)} run(s) {executor.describe()}")

    def write_runs() -> pd.DataFrame:
        ordered = [records[i] for i in sorted(records)]
        frame = runs_frame(ordered, experiment.matrix_columns)
        with file_lock(folder / ".runs.lock"):
            write_csv(folder / "runs.csv", frame)
        return frame

    try:
        for done, (job, record) in enumerate(executor.map(pending, force), start=1):
            records[job.index] = record
            status = "ok" if record["status"] == OK else f"FAILED: {record['error']}"
            if record.get("reused"):
                status = "finished by another process, reused"
            echo(f"[{len(records)}/{total}] {job.run.run_id}: {status} ({record.get('seconds', 0):.1f} s)")
            write_runs()
            if len(pending) - done < executor.slots:  # a worker has no run left: use its core to
                import_matplotlib()  # get the plots' imports done before the last run ends
    finally:
        # Also on Ctrl-C: what finished is summarized, nothing is lost.
        runs = write_runs()
    return summarize(folder, experiment, runs, echo=echo)


def summarize(folder: Path, experiment: Experiment, runs: pd.DataFrame, *,
              echo: Callable[[str], None] = print) -> Outcome:
    """table.md (tables and verdicts) and the plots, all computed from runs.csv and the run folders."""
    verdicts = [check(expect, runs) for expect in experiment.spec.expect]
    tables = summary_tables(runs, experiment.spec.tables(), experiment.matrix_columns)
    page = render_page(experiment.spec.name, experiment.spec.description, runs, tables, verdicts)
    write_atomic(folder / "table.md", page)
    write_plots(folder, experiment, runs, echo=echo)  # never raises: a failed plot is a warning
    return Outcome(runs, verdicts)


def execute(run: RunSpec, folder: Path) -> dict[str, Any]:
    """Run one run and write its folder; never raises for a failing run."""
    import keras

    folder.mkdir(parents=True, exist_ok=True)
    write_yaml(folder / "spec.yaml", run.resolved)
    record = new_record(run)
    started = time.perf_counter()
    try:
        keras.backend.clear_session()
        runtime.set_random_seed(run.seed)
        if run.is_probe:
            run_probe(run, folder, record)
        else:
            run_training(run, folder, record)
    except Exception as error:  # a failing run is a result, not a crash of the sweep
        record.update(failure(error))
    record["seconds"] = time.perf_counter() - started
    write_json(folder / "metrics.json", record)
    return record


def failure(error: BaseException) -> dict[str, Any]:
    return {
        "status": FAILED,
        "error": f"{type(error).__name__}: {error}",
        "traceback": "".join(traceback.format_exception(error)),
    }


def new_record(run: RunSpec) -> dict[str, Any]:
    import keras

    return {
        "experiment": run.experiment,
        "run_id": run.run_id,
        "status": OK,
        "seed": run.seed,
        "matrix": run.matrix_values,
        "metrics": {},
        "params": None,
        "train_seconds": None,
        "backend": keras.backend.backend(),
        "started": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "versions": versions(),
    }


def run_probe(run: RunSpec, folder: Path, record: dict[str, Any]) -> None:
    started = time.perf_counter()
    result = run.probe.component.load()(run.probe.params, run.seed)
    record["train_seconds"] = time.perf_counter() - started
    record["metrics"] = dict(result.metrics)
    for name, curve in result.curves.items():
        write_csv(folder / f"{name}.csv", curve)


def run_training(run: RunSpec, folder: Path, record: dict[str, Any]) -> None:
    from seqkeras import training

    from seqkeras.spec import check_model_size

    data = run.task.component.load()(run.task.params, run.seed)
    data.vocabulary.save(folder / "vocabulary.json")
    check_model_size(run.model.params, vocabulary=len(data.vocabulary), outputs=data.num_outputs)
    # Variables, compile and fit all belong inside the strategy's scope.
    with training.distribution_scope(run.train.distribution) as devices:
        if devices:
            record["devices"] = devices
        model = run.model.component.load()(run.model.params, data)
        history, seconds = training.fit(model, data, run.train, seed=run.seed, checkpoint_dir=folder / ".resume")
    # After fitting: a count-based model (n-gram) has its parameters (counts) only then.
    record["params"] = int(model.count_params())
    record["train_seconds"] = seconds
    write_csv(folder / "history.csv", history)
    rows = run.model.component.load_evaluator()(model, data, run, folder)
    if len(rows) == 1 and not rows[0].keys:
        record["metrics"] = rows[0].metrics
    else:  # one trained model, several evaluations (e.g. one per decoder)
        record["rows"] = [{"keys": row.keys, "metrics": row.metrics} for row in rows]


@functools.cache
def code_version() -> str:
    """The package version plus a hash of its source: any code change means rerun, not reuse."""
    from seqkeras import __version__

    digest = hashlib.sha256()
    for path in sorted(Path(__file__).parent.rglob("*.py")):
        digest.update(path.read_bytes())
    return f"{__version__}+{digest.hexdigest()[:10]}"


def versions() -> dict[str, str]:
    import keras
    import numpy

    found = {
        "seqkeras": code_version(),
        "python": platform.python_version(),
        "keras": keras.__version__,
        "numpy": numpy.__version__,
    }
    if keras.backend.backend() == "tensorflow":
        import tensorflow

        found["tensorflow"] = tensorflow.__version__
    return found
