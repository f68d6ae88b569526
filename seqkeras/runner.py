"""Run every run of an experiment, record each as it finishes, then summarize.

A run that raises is recorded as failed (with its error) and the sweep goes on;
a run whose folder already holds a finished record of the same resolved spec
is skipped unless `force` is set. runs.csv is rewritten after every run, so an
interrupted sweep keeps everything it finished.
"""

from __future__ import annotations

import platform
import time
import traceback
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable

import pandas as pd

from seqkeras.expectations import Verdict, check
from seqkeras.report import render_page, summary_tables
from seqkeras.results import (
    FAILED,
    OK,
    read_record,
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
        return int((self.runs["status"] == FAILED).sum())

    @property
    def failed_expectations(self) -> int:
        return sum(not v.holds for v in self.verdicts)

    @property
    def ok(self) -> bool:
        return self.failed_runs == 0 and self.failed_expectations == 0


def run_experiment(
    experiment: Experiment, out_root: Path, *, force: bool = False, echo: Callable[[str], None] = print
) -> Outcome:
    folder = out_root / experiment.spec.name
    folder.mkdir(parents=True, exist_ok=True)
    write_yaml(folder / "experiment.yaml", experiment.spec.model_dump(mode="json", exclude_none=True))
    records: list[dict[str, Any]] = []
    total = len(experiment.runs)
    try:
        for number, run in enumerate(experiment.runs, start=1):
            run_folder = folder / run.run_id
            previous = read_record(run_folder / "metrics.json")
            if previous is not None and previous["status"] == OK and not force:
                echo(f"[{number}/{total}] {experiment.spec.name}: {run.run_id} — done before, skipped (--force reruns)")
                records.append(previous)
                continue
            echo(f"[{number}/{total}] {experiment.spec.name}: {run.run_id}")
            record = execute(run, run_folder)
            records.append(record)
            status = record["status"] if record["status"] == OK else f"FAILED: {record['error']}"
            echo(f"[{number}/{total}] {status} ({record['seconds']:.1f} s)")
            write_csv(folder / "runs.csv", runs_frame(records, experiment.matrix_columns))
    finally:
        # Also on Ctrl-C: what finished is summarized, nothing is lost.
        runs = runs_frame(records, experiment.matrix_columns)
        write_csv(folder / "runs.csv", runs)
    verdicts = [check(expect, runs) for expect in experiment.spec.expect]
    tables = summary_tables(runs, experiment.spec.tables(), experiment.matrix_columns)
    page = render_page(experiment.spec.name, experiment.spec.description, runs, tables, verdicts)
    write_atomic(folder / "table.md", page)
    return Outcome(runs, verdicts)


def execute(run: RunSpec, folder: Path) -> dict[str, Any]:
    """Run one run and write its folder; never raises for a failing run."""
    import keras

    folder.mkdir(parents=True, exist_ok=True)
    write_yaml(folder / "spec.yaml", run.resolved)
    record: dict[str, Any] = {
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
    started = time.perf_counter()
    try:
        keras.backend.clear_session()
        keras.utils.set_random_seed(run.seed)
        if run.is_probe:
            run_probe(run, folder, record)
        else:
            run_training(run, folder, record)
    except Exception as error:  # a failing run is a result, not a crash of the sweep
        record["status"] = FAILED
        record["error"] = f"{type(error).__name__}: {error}"
        record["traceback"] = traceback.format_exc()
    record["seconds"] = time.perf_counter() - started
    write_json(folder / "metrics.json", record)
    return record


def run_probe(run: RunSpec, folder: Path, record: dict[str, Any]) -> None:
    started = time.perf_counter()
    result = run.probe.component.load()(run.probe.params, run.seed)
    record["train_seconds"] = time.perf_counter() - started
    record["metrics"] = dict(result.metrics)
    for name, curve in result.curves.items():
        write_csv(folder / f"{name}.csv", curve)


def run_training(run: RunSpec, folder: Path, record: dict[str, Any]) -> None:
    from seqkeras import training

    data = run.task.component.load()(run.task.params, run.seed)
    data.vocabulary.save(folder / "vocabulary.json")
    model = run.model.component.load()(run.model.params, data)
    record["params"] = int(model.count_params())
    history, seconds = training.fit(model, data, run.train)
    record["train_seconds"] = seconds
    write_csv(folder / "history.csv", history)
    rows = run.model.component.load_evaluator()(model, data, run, folder)
    if len(rows) == 1 and not rows[0].keys:
        record["metrics"] = rows[0].metrics
    else:  # one trained model, several evaluations (e.g. one per decoder)
        record["rows"] = [{"keys": row.keys, "metrics": row.metrics} for row in rows]


def versions() -> dict[str, str]:
    import keras
    import numpy

    found = {"python": platform.python_version(), "keras": keras.__version__, "numpy": numpy.__version__}
    if keras.backend.backend() == "tensorflow":
        import tensorflow

        found["tensorflow"] = tensorflow.__version__
    return found
