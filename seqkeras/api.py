"""The Python API: run a spec and read results as pandas DataFrames, from a notebook or a script.

    import seqkeras

    results = seqkeras.run("experiments/compare/cells_long_range.yaml",
                           overrides={"task.n_train": 200, "train.epochs": 2}, only=["seed=0"])
    results.runs           # one row per run (and decoder): what runs.csv holds
    results.tables         # the spec's tables, {title: DataFrame}: mean, std and n columns over seeds
    results.verdicts       # one row per claim: claim, expected, measured, verdict
    results.table(rows="task.lag", columns="model.cell", value="accuracy")

    seqkeras.load("results/cells-long-range")  # the same object for a folder that exists

`run` takes what `seqkeras run` takes, validated the same way: a user's mistake
raises `SpecError` naming the file (or "<dict>"), the key path and the value;
nothing runs then. The command line's `run` is this module's `run_paths`.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from seqkeras.backends.runtime import select_backend
from seqkeras.errors import SpecError
from seqkeras.execution import sweep
from seqkeras.execution.executors import make_executor
from seqkeras.reporting.expectations import check
from seqkeras.reporting.tables import declared_tables, pivot, summary_tables, verdict_frame
from seqkeras.results.folder import is_matrix_column, read_runs, read_saved_spec, run_counts
from seqkeras.spec.loader import build_experiment, load_experiment
from seqkeras.spec.sections import TableSpec
from seqkeras.spec.selection import parse_only, select_runs
from seqkeras.tracking.mlflow_tracking import MlflowTracker, parse_track

DICT_SOURCE = "<dict>"  # where errors in a spec given as a mapping say they are


@dataclass(frozen=True)
class Results:
    """An experiment's results folder, read: its runs, its tables (numbers: a mean, std and n column for each
    of table.md's cells) and its claims' verdicts."""

    folder: Path
    runs: pd.DataFrame
    tables: dict[str, pd.DataFrame]
    verdicts: pd.DataFrame

    @property
    def name(self) -> str:
        return self.folder.name

    @property
    def ok(self) -> bool:
        """Every run finished and every claim held."""
        return run_counts(self.runs)[2] == 0 and bool(self.verdicts["holds"].all())

    def table(self, rows: str | list[str], value: str, columns: str | list[str] | None = None,
              pool: Iterable[str] = ()) -> pd.DataFrame:
        """A pivot of the runs over seeds (`seqkeras table --rows … --value … --format csv`): mean, std and n columns."""
        return pivot(self.runs, TableSpec(rows=rows, columns=columns, value=value, pool=list(pool)), statistics=True)

    def __repr__(self) -> str:
        held = int(self.verdicts["holds"].sum())
        return (f"Results({str(self.folder)!r}: {len(self.runs)} row(s), {len(self.tables)} table(s), "
                f"{held} of {len(self.verdicts)} claim(s) reproduced)")


def load(folder: str | Path) -> Results:
    """The results folder of one experiment (results/<name>, as `run` writes it), read back."""
    folder = Path(folder)
    if not folder.is_dir():
        raise SpecError(f"{folder}: not a results folder (expected results/<name>, which `run` writes)")
    runs = read_runs(folder)
    saved = folder / "experiment.yaml"
    spec = read_saved_spec(folder)
    matrix_columns = [column for column in runs.columns if is_matrix_column(column)]
    tables = dict(summary_tables(runs, declared_tables(spec, saved), matrix_columns, statistics=True))
    claims = load_experiment(saved).spec.expect if saved.is_file() else []
    return Results(folder, runs, tables, verdict_rows([check(expect, runs) for expect in claims]))


def verdict_rows(verdicts) -> pd.DataFrame:
    """The verdicts as table.md shows them, with `holds` as a boolean column to filter on."""
    frame = verdict_frame(verdicts)
    frame["holds"] = [verdict.holds for verdict in verdicts]
    return frame


def run(spec: str | Path | Mapping[str, Any], *, overrides: Mapping[str, Any] | list[str] | None = None,
        only: list[str] | None = None, out: str | Path = "results", backend: str | None = None,
        jobs: int | None = None, force: bool = False, tensorboard: bool = False,
        track: str | None = None) -> Results:
    """Run one experiment (a YAML file, or the spec as a mapping) and return its results.

    overrides: {"model.units": 32} or ["model.units=32"], as `--set`; only: ["seed=0"], as
    `--only`; out: the results root; backend: auto (default), tensorflow, torch or jax;
    jobs: worker processes (default as the command line's); tensorboard: event files in
    each run's folder; track: "mlflow" or "mlflow=URI", as `--track`. Finished runs of
    the same spec in `out` are reused unless `force`.
    """
    options = dict(out=out, backend=backend, jobs=jobs, force=force, track=track)
    if isinstance(spec, Mapping):
        experiment = sweep.with_tensorboard(lambda texts: experiment_from_mapping(spec, texts, only),
                                            override_texts(overrides), tensorboard)
        _, experiments = run_paths([], experiments=[experiment], **options)
    elif Path(spec).is_dir():
        raise SpecError(f"{spec} is a folder: seqkeras.run takes one spec file (`seqkeras run` takes folders)")
    else:
        _, experiments = run_paths([str(spec)], overrides=override_texts(overrides), only=only,
                                   tensorboard=tensorboard, **options)
    return load(Path(out) / experiments[0].spec.name)


def override_texts(overrides: Mapping[str, Any] | list[str] | None) -> list[str]:
    """`--set` texts: a mapping's values written as JSON, which the YAML reader reads back as the same value."""
    if overrides is None:
        return []
    if isinstance(overrides, Mapping):
        return [f"{key}={json.dumps(value)}" for key, value in overrides.items()]
    return list(overrides)


def experiment_from_mapping(spec: Mapping[str, Any], overrides: list[str], only: list[str] | None):
    """A spec given as a mapping, validated as a file's would be (errors name "<dict>")."""
    try:
        experiment = build_experiment(copy.deepcopy(dict(spec)), source=DICT_SOURCE, overrides=overrides)
        return select_runs(experiment, parse_only(only or []))
    except SpecError as error:
        raise error.located(file=DICT_SOURCE) from None


def run_paths(paths: list[str], *, overrides: list[str] = (), only: list[str] | None = None,
              out: str | Path = "results", backend: str | None = None, jobs: int | None = None,
              force: bool = False, reference: str | Path | None = None, executor: str = "local",
              address: str | None = None, cpus_per_run: float = 1.0, gpus_per_run: float = 0.0,
              dry_run: bool = False, tensorboard: bool = False, track: str | None = None, experiments=None):
    """What `seqkeras run` does: every spec validated first, then the runs; returns (outcome, experiments).

    `experiments`: already loaded ones (a mapping given to `run`) instead of `paths`.
    """
    out_root = Path(out)
    # The specs are read first (a second, and no backend): the backend and how many workers to start
    # depend on them.
    if experiments is None:
        experiments = sweep.load_all(paths, list(overrides), only or [], tensorboard=tensorboard)
    sweep.check_out_root(out_root, paths, experiments)
    chosen, why = sweep.choose_backend(backend, experiments)
    select_backend(chosen, load=False)
    if dry_run:
        sweep.plan(experiments, out_root, force=force)
        return None, experiments
    reference = Path(reference) if reference else None
    if reference is not None:
        sweep.check_reference_root(reference, out_root)
    tracker = None
    if track is not None:
        tracker = MlflowTracker(parse_track(track, out_root), out_root)
    if why:
        print(f"backend: {chosen} ({why})")
    runner = make_executor(executor, chosen, max((len(e.runs) for e in experiments), default=1), jobs=jobs,
                           address=address, cpus_per_run=cpus_per_run, gpus_per_run=gpus_per_run)
    try:
        runner.start()
        outcome = sweep.run_all(experiments, out_root, runner, force=force, reference=reference, tracker=tracker)
    finally:
        runner.close()  # worker processes serve every experiment, then stop
    return outcome, experiments
