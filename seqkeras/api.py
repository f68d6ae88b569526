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
(in the spec or in an argument: `jobs=0`, `overrides="k=v"`) raises `SpecError`
naming the file (or "<dict>"), the key path or argument and the value; nothing
runs then. Runs that fail are not exceptions: `run` returns what finished, says
so on stderr ("warning: ...") and `Results.ok` is False. It works from a script
with no `if __name__ == "__main__":` guard, `python -c`, stdin and a notebook:
its worker processes never run the caller's main module (workers.WorkerContext).
The command line's `run` is this module's `run_paths`, given a `RunOptions`.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import numbers
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
from pydantic import ValidationError

from seqkeras.backends import compile_cache
from seqkeras.backends.runtime import AUTO, BACKEND_PACKAGES, select_backend
from seqkeras.errors import SpecError, shown, translate_validation_error, unknown_choice
from seqkeras.execution import sweep
from seqkeras.execution.executors import make_executor
from seqkeras.reporting.baseline import Baseline, parse_baseline
from seqkeras.reporting.expectations import check
from seqkeras.reporting.spec_rows import own_rows
from seqkeras.reporting.tuning import read_found
from seqkeras.reporting.tables import declared_tables, pivot, summary_tables, verdict_frame
from seqkeras.reporting.saved_spec import read_saved_experiment
from seqkeras.results.folder import is_matrix_column, print_warning, read_runs, run_counts
from seqkeras.spec.loader import build_experiment
from seqkeras.spec.runs import saved_decoder_labels
from seqkeras.spec.sections import ExpectSpec, TableSpec
from seqkeras.spec.selection import parse_only, select_runs
from seqkeras.tracking.mlflow_store import parse_track
from seqkeras.tracking.mlflow_tracking import MlflowTracker

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
              pool: Iterable[str] = (), baseline: str | Mapping[str, Any] | None = None) -> pd.DataFrame:
        """A pivot of the runs over seeds (`seqkeras table --rows … --value … --format csv`): mean, std and n
        columns. baseline ("model.cell=lstm" or {"model.cell": "lstm"}, as `--baseline`): each cell tested against
        its baseline cell over seeds, in p_value, test and verdict columns."""
        return pivot(self.runs, TableSpec(rows=rows, columns=columns, value=value, pool=list(pool)), statistics=True,
                     baseline=baseline_of(baseline))

    def tuning(self) -> tuple[pd.DataFrame | None, pd.DataFrame | None]:
        """A tuned experiment's trials (`tuning/trials.csv`: every trial of every matrix point, its values, state and
        objective) and each point's chosen setting (`tuning/best.csv`), each with a `point` label column; None for
        a file the folder does not have (an experiment without `tune:`) or that cannot be read (a warning)."""
        found = read_found(self.folder, None, print_warning, expected=False)
        return found.trials, found.best

    def __repr__(self) -> str:
        held = int(self.verdicts["holds"].sum())
        return (f"Results({str(self.folder)!r}: {len(self.runs)} row(s), {len(self.tables)} table(s), "
                f"{held} of {len(self.verdicts)} claim(s) reproduced)")


def baseline_of(value: str | Mapping[str, Any] | None) -> Baseline | None:
    """`table()`'s baseline: a "KEY=VALUE" text as `--baseline` takes it, or a mapping of one key to its value."""
    if value is None:
        return None
    if isinstance(value, str):
        return parse_baseline(value)
    if (isinstance(value, Mapping) and len(value) == 1 and isinstance(key := next(iter(value)), str)
            and isinstance(value[key], (str, int, float, bool))):
        return Baseline(key, value[key])
    raise SpecError(f"baseline: expected a \"KEY=VALUE\" text or a mapping of one key to a value, such as "
                    f"{{\"model.cell\": \"lstm\"}}; got {shown(value)}")


def load(folder: str | Path) -> Results:
    """The results folder of one experiment (results/<name>, as `run` writes it), read back.

    Only the folder is read, each file through `results.files` (regular files, bounded, no links: the
    folder may be someone else's): its saved experiment.yaml is not validated as a spec to run (its data
    files need not be on this machine); only its tables and claims are read, and one that cannot be
    read is a warning, not an error.
    """
    folder = Path(checked_path(folder, "folder"))
    if not folder.is_dir():
        raise SpecError(f"{folder}: not a results folder (expected results/<name>, which `run` writes)")
    runs = read_runs(folder)
    saved = folder / "experiment.yaml"
    spec = read_saved_experiment(folder, warn=print_warning)
    matrix_columns = [column for column in runs.columns if is_matrix_column(column)]
    own = saved_decoder_labels(spec)  # the rows its claims are about (reporting.spec_rows)
    tables = dict(summary_tables(runs, declared_tables(spec, saved), matrix_columns, statistics=True, own_decoders=own))
    claims = saved_claims(spec, saved)
    return Results(folder, runs, tables, verdict_rows([check(claim, own_rows(runs, own)) for claim in claims]))


def evaluate(folder: str | Path, *, decoders: list[Any] = (), metrics: list[str] = (),
             backend: str | None = None, where: Mapping[str, Any] | None = None, seed: int | None = None,
             best: str | None = None) -> Results:
    """`seqkeras evaluate`'s twin for one experiment's results folder: its kept models evaluated again with more
    `decoders` (["beam(width=5)", {"name": "sample", "temperature": 0.7}]) and `metrics`, without training; the
    folder's `Results` after. `where` (matrix key → value), `seed` and `best` (a metric) evaluate only the runs
    they select, as `evaluate --where/--seed/--best`. Runs that could not be evaluated are said on stderr, as `run`
    says failed runs."""
    from seqkeras.execution.reevaluation import additions, choose_backend, reevaluate, selected_runs, selection

    path = Path(checked_path(folder, "folder"))
    wanted = additions(list(decoders) if isinstance(decoders, tuple) else decoders,
                       list(metrics) if isinstance(metrics, tuple) else metrics, names=("decoders", "metrics"))
    chosen = selection(dict(where) if isinstance(where, Mapping) else where, seed, best,
                       names=("where", "seed", "best"))
    if not (path / "runs.csv").is_file():
        raise SpecError(f"{path}: not an experiment's results folder (expected results/<name>, with its runs.csv)")
    if backend is not None and backend not in (AUTO, *BACKEND_PACKAGES):
        raise SpecError(unknown_choice("backend", backend, [AUTO, *BACKEND_PACKAGES]))
    runs = selected_runs([path], chosen)
    select_backend(choose_backend(backend, [path]), load=True)
    (outcome,) = reevaluate([path], wanted, runs=runs, echo=lambda line: None)
    for run_id, why in outcome.failed.items():
        print_warning(f"{run_id}: could not be evaluated again: {why}")
    if not outcome.added and not outcome.unchanged:
        print_warning(f"{path}: no run kept its model; nothing was evaluated")
    return load(path)


def export_model(run_folder: str | Path, format: str, output: str | Path, *, overwrite: bool = False,
                 where: Mapping[str, Any] | None = None, seed: int | None = None, best: str | None = None):
    """`seqkeras export-model`'s twin: a run's kept model exported for serving as `format` ("onnx", "savedmodel")
    into the folder `output`, beside its preprocessing (kept/export.py). `run_folder` is a run's folder, or an
    experiment's results folder whose run `where`, `seed` and `best` select, as `load_model`'s do. On the
    TensorFlow backend, which it selects (a process that imported Keras on another backend is refused). Returns
    `kept.export.Exported`: the folder, its graphs, and whether it replaced what the folder held (only with
    `overwrite`)."""
    from seqkeras.kept.export import export_model as export
    from seqkeras.kept.selection import chosen_run, selection

    folder = Path(checked_path(run_folder, "run_folder", "a run folder's path (str or Path)"))
    if where is not None or seed is not None or best is not None or (folder / "runs.csv").exists():
        folder = chosen_run(folder, selection(where, seed, best, names=("where", "seed", "best")))
    select_backend("tensorflow", load=True)
    return export(folder, format, checked_path(output, "output"), overwrite=bool(overwrite))


def saved_claims(spec: Mapping[str, Any], source: Path, warn=print_warning) -> list[ExpectSpec]:
    """The claims (`expect`) of a saved experiment.yaml, each read on its own: one that no longer reads as a
    claim (written by another version of the suite, edited by hand) is a warning and is left out."""
    declared = spec.get("expect")
    if declared is None:
        return []
    if not isinstance(declared, list):
        warn(f"{source}: its expect section is {shown(declared, 60)}, not a list of claims; no claim is checked")
        return []
    claims = []
    for index, raw in enumerate(declared):
        try:
            claims.append(ExpectSpec.model_validate(raw))
        except ValidationError as error:
            problem = translate_validation_error(error, ExpectSpec, raw, path_prefix=f"expect[{index}]")
            warn(f"{source}: {problem}; this claim is not checked")
    return claims


def verdict_rows(verdicts) -> pd.DataFrame:
    """The verdicts as table.md shows them, with `holds` as a boolean column to filter on."""
    frame = verdict_frame(verdicts)
    frame["holds"] = [verdict.holds for verdict in verdicts]
    return frame


@dataclass(frozen=True)
class RunOptions:
    """How `run_paths` runs the specs: the options of `seqkeras run`, each field named as its option's `dest`
    (the command line builds one from its arguments; `seqkeras.run` from its keywords)."""

    overrides: Sequence[str] = ()  # --set KEY=VALUE texts
    only: Sequence[str] = ()  # --only KEY=VALUE texts
    out: str | Path = "results"  # the results root
    backend: str | None = None  # None: $KERAS_BACKEND, else auto
    jobs: int | None = None  # worker processes; None: as many as fit
    force: bool = False  # rerun finished runs
    dry_run: bool = False  # plan only: nothing is trained or written
    reference: str | Path | None = None  # check each experiment against <reference>/<name> afterwards
    executor: str = "local"  # "local" processes or "ray"
    address: str | None = None  # Ray's cluster address; None: a local Ray
    cpus_per_run: float = 1.0  # Ray: CPUs reserved per run
    gpus_per_run: float = 0.0  # Ray: GPUs reserved per run
    tensorboard: bool = False  # event files in each run's folder
    track: str | None = None  # "mlflow" or "mlflow=URI"


def run(spec: str | Path | Mapping[str, Any], *, overrides: Mapping[str, Any] | list[str] | None = None,
        only: list[str] | None = None, out: str | Path = "results", backend: str | None = None,
        jobs: int | None = None, force: bool = False, tensorboard: bool = False,
        track: str | None = None) -> Results:
    """Run one experiment (a YAML file, or the spec as a mapping) and return its results.

    overrides: {"model.units": 32} or ["model.units=32"], as `--set`; only: ["seed=0"], as
    `--only` (one text alone, "seed=0", is refused); out: the results root; backend: auto
    (default), tensorflow, torch or jax; jobs: worker processes, a whole number ≥ 1 (default
    as the command line's); tensorboard: event files in each run's folder; track: "mlflow"
    or "mlflow=URI", as `--track`. Finished runs of the same spec in `out` are reused unless
    `force`. A wrong argument raises SpecError before anything runs; failed runs do not
    raise: they are a warning on stderr, rows with status "failed" and `ok` False.
    """
    overrides, only = check_arguments(spec, overrides=overrides, only=only, out=out, backend=backend, jobs=jobs,
                                      force=force, tensorboard=tensorboard, track=track)
    options = RunOptions(out=out, backend=backend, jobs=None if jobs is None else int(jobs), force=force,
                         tensorboard=tensorboard, track=track)
    if isinstance(spec, Mapping):
        experiment = sweep.with_tensorboard(lambda texts: experiment_from_mapping(spec, texts, only),
                                            override_texts(overrides), tensorboard)
        outcome, experiments = run_paths([], options, experiments=[experiment])
    elif Path(spec).is_dir():
        raise SpecError(f"{spec} is a folder: seqkeras.run takes one spec file (`seqkeras run` takes folders)")
    else:
        options = dataclasses.replace(options, overrides=override_texts(overrides), only=only)
        outcome, experiments = run_paths([os.fspath(spec)], options)
    results = load(Path(out) / experiments[0].spec.name)
    warn_of_failures(outcome, results)
    return results


def warn_of_failures(outcome, results: Results, warn=print_warning) -> None:
    """What the command line says before it exits with status 1, as a warning: a script or a notebook goes on
    with the results, but never without being told (`results.ok` is False)."""
    if not outcome.failed_runs and not outcome.failed_claims:
        return
    problems = []
    if outcome.failed_runs:
        runs = results.runs
        errors = runs.loc[runs["status"] != "ok", "error"].dropna().astype(str) if "error" in runs else []
        first = f" (the first: {shown(errors.iloc[0], 160)})" if len(errors) else ""
        problems.append(f"{outcome.failed_runs} failed run(s){first}")
    if outcome.failed_claims:
        problems.append(f"{outcome.failed_claims} claim(s) not reproduced")
    warn(f"{results.folder}: {', '.join(problems)}; results.ok is False (see results.runs['error'] and "
         "results.verdicts)")


KEY_VALUE_EXAMPLES = {"overrides": "model.units=32", "only": "seed=0"}
BACKEND_CHOICES = [AUTO, *BACKEND_PACKAGES]


def check_arguments(spec: Any, *, overrides: Any, only: Any, out: Any, backend: Any, jobs: Any, force: Any,
                    tensorboard: Any, track: Any) -> tuple[Mapping[str, Any] | list[str] | None, list[str]]:
    """`run`'s arguments checked as the command line's parser checks its options, before anything is read or
    run: a wrong one is a SpecError naming it. Returns (overrides, only) as `run` goes on with them."""
    if not isinstance(spec, Mapping):
        checked_path(spec, "spec", what="a spec file's path (str or Path) or the spec as a dict")
    if isinstance(overrides, Mapping):
        for key, value in overrides.items():
            if not isinstance(key, str) or not key:
                raise SpecError(f"overrides: the key {shown(key)} is not a dotted key path like model.units")
            value_text(key, value)
    elif overrides is not None:
        overrides = key_value_texts(overrides, "overrides", also="or a mapping {\"model.units\": 32}")
    only = key_value_texts(only, "only") if only is not None else []
    checked_path(out, "out", what="a folder's path (str or Path)")
    if backend is not None and backend not in BACKEND_CHOICES:
        raise SpecError(unknown_choice("backend", backend, BACKEND_CHOICES))
    if jobs is not None and (isinstance(jobs, bool) or not isinstance(jobs, numbers.Integral) or jobs < 1):
        raise SpecError(f"jobs: expected a whole number of at least 1 (worker processes, as --jobs N) or None "
                        f"(the default), got {shown(jobs)}")
    for name, value in (("force", force), ("tensorboard", tensorboard)):
        if not isinstance(value, bool):
            raise SpecError(f"{name}: expected True or False, got {shown(value)}")
    if track is not None and not isinstance(track, str):
        raise SpecError(f"track: expected a text, \"mlflow\" or \"mlflow=URI\" (as --track), got {shown(track)}")
    return overrides, only


def key_value_texts(value: Any, name: str, also: str = "") -> list[str]:
    """A list (or tuple) of "KEY=VALUE" texts, as the repeated `--set`/`--only` give; one text alone is refused,
    not read letter by letter: which of its "=" and "," separate values would be a guess."""
    example = KEY_VALUE_EXAMPLES[name]
    wanted = f"a list of KEY=VALUE texts, [\"{example}\"]" + (f", {also}" if also else "")
    if isinstance(value, str):
        raise SpecError(f"{name}: {shown(value)} is one text; {name} takes {wanted}")
    if not isinstance(value, (list, tuple)):
        raise SpecError(f"{name}: expected {wanted}, got {shown(value)}")
    for index, item in enumerate(value):
        if not isinstance(item, str) or "=" not in item:
            raise SpecError(f"{name}[{index}]: expected a KEY=VALUE text such as \"{example}\", got {shown(item)}")
    return list(value)


def checked_path(value: Any, name: str, what: str = "a folder's path (str or Path)") -> str:
    """`value` as a path's text, if it is one (str or os.PathLike, not empty); else a SpecError naming `name`."""
    try:
        text = os.fspath(value)
    except TypeError:
        raise SpecError(f"{name}: expected {what}, got {shown(value)}") from None
    if isinstance(text, bytes):
        raise SpecError(f"{name}: expected {what}, got bytes {shown(value)}")
    if not text.strip():
        raise SpecError(f"{name}: expected {what}, got an empty text")
    return text


def override_texts(overrides: Mapping[str, Any] | list[str] | None) -> list[str]:
    """`--set` texts: a mapping's values written as JSON, which the YAML reader reads back as the same value."""
    if overrides is None:
        return []
    if isinstance(overrides, Mapping):
        return [f"{key}={value_text(key, value)}" for key, value in overrides.items()]
    return list(overrides)


def value_text(key: str, value: Any) -> str:
    """An override's value as JSON (a numpy number as the number it holds); else a SpecError naming it."""
    def plain(item: Any) -> Any:
        if hasattr(item, "item") and hasattr(item, "dtype") and getattr(item, "ndim", None) == 0:
            return item.item()  # a numpy scalar: np.arange's values in a notebook's loop
        raise TypeError
    try:
        return json.dumps(value, allow_nan=False, default=plain)
    except (TypeError, ValueError):
        raise SpecError(f"overrides[{key!r}]: {shown(value)} is not a spec value (a number, a text, true/false, "
                        "None, or a list or dict of them)") from None


def experiment_from_mapping(spec: Mapping[str, Any], overrides: list[str], only: list[str] | None):
    """A spec given as a mapping, validated as a file's would be (errors name "<dict>")."""
    try:
        experiment = build_experiment(copy.deepcopy(dict(spec)), source=DICT_SOURCE, overrides=overrides)
        return select_runs(experiment, parse_only(only or []))
    except SpecError as error:
        raise error.located(file=DICT_SOURCE) from None


def run_paths(paths: list[str], options: RunOptions, experiments=None):
    """What `seqkeras run` does: every spec validated first, then the runs; returns (outcome, experiments),
    outcome None for a dry run.

    `experiments`: already loaded ones (a mapping given to `run`) instead of `paths`.
    """
    out_root = Path(options.out)
    # The specs are read first (a second, and no backend): the backend and how many workers to start
    # depend on them.
    if experiments is None:
        experiments = sweep.load_all(paths, list(options.overrides), list(options.only),
                                     tensorboard=options.tensorboard)
    sweep.check_out_root(options.out, paths, experiments)
    reference = (None if options.reference is None
                 else sweep.check_reference_root(options.reference, out_root, experiments))
    chosen, why = sweep.choose_backend(options.backend, experiments)
    select_backend(chosen, load=False)
    for run in (run for experiment in experiments for run in experiment.runs):
        run.backend_choice = why or "as asked (--backend or $KERAS_BACKEND)"
    if why:  # the suite chose it: said first, a dry run included
        print(f"backend: {chosen} ({why})")
    if options.dry_run:
        sweep.plan(experiments, out_root, force=options.force)
        return None, experiments
    tracker = None
    if options.track is not None:
        tracker = MlflowTracker(parse_track(options.track, out_root), out_root)
    # Removed once the workers have stopped: the runs' compiled programs are for this command only.
    with compile_cache.for_command(out_root, chosen, options.executor) as cache:
        runner = make_executor(options.executor, chosen, max((len(e.runs) for e in experiments), default=1),
                               jobs=options.jobs, address=options.address, cpus_per_run=options.cpus_per_run,
                               gpus_per_run=options.gpus_per_run, compile_cache=cache)
        try:
            runner.start()
            outcome = sweep.run_all(experiments, out_root, runner, force=options.force, reference=reference,
                                    tracker=tracker)
        finally:
            runner.close()  # worker processes serve every experiment, then stop
    return outcome, experiments
