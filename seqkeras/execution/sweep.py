"""A command's experiments: the spec files it names, each validated before any runs, then run in turn.

`seqkeras run`, `validate` and `table --rebuild` all go through here; the
command line only parses arguments and maps outcomes to exit codes.
"""

from __future__ import annotations

import os
import sys
import tempfile
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from seqkeras.backends.runtime import (
    AUTO,
    BACKEND_PACKAGES,
    installed_backends,
    loaded_keras_backend,
    resolve_backend,
    select_backend,
)
from seqkeras.errors import SpecError, listed, shown
from seqkeras.execution.executors import SerialExecutor, adopt_recorded_folders, reusable_record
from seqkeras.execution.workers import configure_this_process


def spec_files(paths: list[str]) -> list[Path]:
    """The spec files named, folders searched for *.yaml.

    Anything that exists but is not a regular file (a FIFO, a device, a folder
    named x.yaml) is kept, so that the loader, which never opens such a file,
    refuses it by name alongside every other invalid spec.
    """
    files: list[Path] = []
    for text in paths:
        path = Path(text)
        if path.is_dir():
            found = sorted(path.rglob("*.yaml"))
            if not found:
                raise SpecError(f"{path} holds no *.yaml files")
            files.extend(found)
        elif path.exists():
            files.append(path)
        else:
            raise SpecError(f"{path}: no such file or folder")
    return files


def load_all(paths: list[str], overrides: list[str], only: list[str] = (), tensorboard: bool = False):
    """Validate every spec first: one bad file means nothing runs.

    tensorboard: `run --tensorboard`, i.e. `--set train.tensorboard=true` for each experiment that trains
    (a probe has no train section).
    """
    from seqkeras.spec.loader import load_experiment

    experiments, errors = [], []
    for file in spec_files(paths):
        try:
            experiments.append(with_tensorboard(lambda texts, file=file: load_experiment(file, texts, list(only)),
                                                overrides, tensorboard))
        except SpecError as error:
            errors.append(str(error))
    if errors:
        raise SpecError("\n".join(errors) if len(errors) == 1
                        else f"{len(errors)} invalid specs:\n" + "\n".join(errors))
    names = [e.spec.name for e in experiments]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise SpecError(f"two specs share the experiment name {duplicates[0]!r}; names decide results folders")
    return experiments


TENSORBOARD_ON = "train.tensorboard=true"


def with_tensorboard(load: Callable[[list[str]], Any], overrides: list[str], tensorboard: bool):
    """`load(overrides)`, again with train.tensorboard=true when `tensorboard` and the experiment trains
    (a probe has no train section to set it in): what `run --tensorboard` and the API's `tensorboard=True` mean."""
    experiment = load(list(overrides))
    if tensorboard and experiment.spec.probe is None:
        experiment = load([*overrides, TENSORBOARD_ON])
    return experiment


def given_path(text: str | Path, option: str) -> Path:
    """A path the user named, refused when empty or blank: `Path("")` is the current folder, which nobody
    means by typing nothing (`--out ''`, `--out "$UNSET_VARIABLE"`)."""
    if isinstance(text, str) and not text.strip():
        raise SpecError(f"{option} is empty ({shown(text)}): name a file or folder (the current folder is '.')")
    return Path(text)


def check_out_root(out_root: str | Path, paths: list[str], experiments) -> None:
    """Refuse a results root that is empty text, that the command would read back as specs, or whose folders
    are files. Give it as the user wrote it: `Path("")` is already `.`, which this cannot tell from `--out .`."""
    out_root = given_path(out_root, "--out")
    root = out_root.resolve()
    for text in paths:
        folder = Path(text).resolve()
        if Path(text).is_dir() and (root == folder or folder in root.parents):
            raise SpecError(
                f"--out {out_root} is inside the spec folder {text}: the spec.yaml files of its runs would be "
                "read as experiments next time; write results elsewhere (default: results/)"
            )
    if out_root.exists() and not out_root.is_dir():
        raise SpecError(f"--out {out_root} is a file, not a folder")
    for experiment in experiments:
        folder = out_root / experiment.spec.name
        if folder.exists() and not folder.is_dir():
            raise SpecError(f"cannot write the results of {experiment.spec.name}: {folder} is a file, not a folder")
        # A results folder may hold someone else's files: a link in it would send this run's writes
        # (records, checkpoints, event files) into a folder of the machine outside --out.
        link = next(linked_folders(folder), None)
        if link is not None:
            raise SpecError(f"cannot write the results of {experiment.spec.name}: {link} is a symbolic link "
                            f"to a folder; results are written only into real folders inside --out {out_root}")


def linked_folders(folder: Path):
    """The links to folders at or below `folder` (itself included), without following any."""
    if folder.is_symlink():
        yield folder
        return
    for root, dirs, _ in os.walk(folder, followlinks=False):
        yield from (Path(root) / name for name in dirs if (Path(root) / name).is_symlink())


def choose_backend(requested: str | None, experiments) -> tuple[str, str | None]:
    """The backend a run command uses, and why when the suite chose it (None when the user did).

    `--backend` (or $KERAS_BACKEND) is the user's choice, refused for an experiment that
    names another in its `backend:`. Under auto the experiments' `backend:` decides, else
    the fastest installed.
    """
    named = {experiment.spec.backend: experiment for experiment in experiments if experiment.spec.backend}
    chosen = requested if requested != AUTO else None
    if requested is None:
        chosen = os.environ.get("KERAS_BACKEND") or None
    if chosen:
        for wanted, experiment in named.items():
            if wanted != chosen:
                raise SpecError(f"this experiment is computed on {wanted!r}, not on {chosen!r}: run it with "
                                f"--backend {wanted} or --backend auto", file=experiment.source, path="backend")
        return resolve_backend(chosen), None
    if len(named) > 1:
        first, second = list(named.values())[:2]
        raise SpecError(f"{first.source} is computed on {first.spec.backend!r} and {second.source} on "
                        f"{second.spec.backend!r} (their backend:): run them in separate commands")
    if named:
        backend = next(iter(named))
        asking = [e.spec.name for e in experiments if e.spec.backend]
        return backend, f"backend: {backend} in the spec{'s' if len(asking) > 1 else ''} of {', '.join(asking[:3])}" + (
            f" and {len(asking) - 3} more" if len(asking) > 3 else "")
    return auto_backend(experiments)


def auto_backend(experiments) -> tuple[str, str]:
    """`--backend auto` for these experiments, and why: the installed backend that the most of their runs train
    fastest on, by what each run's model kind declares (`ModelKind.fastest_on`, from `make bench`; the suite's
    own order, `AUTO_PREFERENCE`, for a kind that declares none, and between backends as many runs prefer)."""
    general = resolve_backend(AUTO)
    # A process that has imported Keras already (the Python API's caller's) can run only on that backend.
    elsewhere = [] if loaded_keras_backend() else [name for name in installed_backends() if name != general]
    installed = [general, *elsewhere]
    votes: Counter[str] = Counter()
    kinds: dict[str, set[str]] = {}
    for run in (run for experiment in experiments for run in experiment.runs):
        order = run.model.component.fastest_backends(run.model.params) if run.model is not None else ()
        preferred = next((name for name in order if name in installed), general)
        votes[preferred] += 1
        if run.model is not None:
            kinds.setdefault(preferred, set()).add(run.model.name)
    backend = max(installed, key=lambda name: (votes[name], -installed.index(name)))
    others = ", ".join(f"--backend {name}" for name in BACKEND_PACKAGES if name != backend)
    if backend == general:
        return backend, f"auto: the fastest installed here; {others} to choose"
    return backend, (f"auto: the fastest installed here for {votes[backend]} of {sum(votes.values())} runs "
                     f"({', '.join(sorted(kinds[backend]))}, as make bench measured); {others} to choose")


def headline(experiments, out_root: Path) -> str:
    """The line that opens a run command's output: how much work, and where it goes."""
    return f"{len(experiments)} experiment(s), {sum(len(e.runs) for e in experiments)} run(s) → {out_root}/"


@dataclass
class SweepOutcome:
    verdicts: list  # (experiment name, Verdict) pairs
    failed_runs: int
    differing: list[str]  # experiments whose results differ from the reference (run --reference)
    stopped: str = ""  # why the sweep stopped before its end (a full disk), as it was said; "" when it ran to the end

    @property
    def failed_claims(self) -> int:
        return sum(not verdict.holds for _, verdict in self.verdicts)


def run_all(experiments, out_root: Path, executor, *, force: bool, reference: Path | None = None,
            tracker=None) -> SweepOutcome:
    """Every experiment of the command, in turn, then (with a reference) each checked against it.

    tracker: an MlflowTracker (run --track) that each finished record is logged to."""
    if isinstance(executor, SerialExecutor):  # runs here: import the backend (chosen above) now, quietly
        configure_this_process(select_backend())
    from seqkeras.execution.experiment import DiskFullStop, run_experiment
    from seqkeras.reporting.expectations import held_said
    from seqkeras.reporting.tables import to_markdown, verdict_frame
    from seqkeras.results.folder import DiskFull

    try:
        out_root.mkdir(parents=True, exist_ok=True)
        handle, probe = tempfile.mkstemp(dir=out_root, prefix=".seqkeras-write-test-")  # a new name: no link to follow
        os.close(handle)
        os.unlink(probe)
    except OSError as error:
        raise SpecError(f"cannot write results to {out_root}: {error.strerror}") from None

    print(headline(experiments, out_root))
    all_verdicts, failed_runs = [], 0
    for position, experiment in enumerate(experiments):
        try:
            outcome = run_experiment(experiment, out_root, force=force, executor=executor, tracker=tracker)
        except (DiskFull, DiskFullStop) as error:  # every run after would fail the same way: stop, resumably
            stopped, failed = disk_full_stop(error, experiment.spec.name, len(experiments) - position - 1)
            print(f"\n{stopped}", file=sys.stderr, flush=True)
            return SweepOutcome(all_verdicts, failed_runs + failed, [], stopped)
        page = (out_root / experiment.spec.name / "table.md").read_text(encoding="utf-8")
        print("\n" + page)
        failed_runs += outcome.failed_runs
        all_verdicts += [(experiment.spec.name, v) for v in outcome.verdicts]
    differing = []
    if reference is not None:
        from seqkeras.reporting.reproduction import check_against

        differing = check_against(experiments, out_root, reference)
    if len(experiments) > 1 and all_verdicts:
        frame = verdict_frame([v for _, v in all_verdicts])
        frame.insert(0, "experiment", [name for name, _ in all_verdicts])
        print(f"# All expectations: {held_said([v for _, v in all_verdicts])}\n")
        print(to_markdown(frame))
    return SweepOutcome(all_verdicts, failed_runs, differing)


def disk_full_stop(error: BaseException, name: str, not_started: int) -> tuple[str, int]:
    """The line that ends a sweep stopped by a full disk (where it stopped, and how to go on), and the
    experiment's failed runs (at least one: the sweep's exit status says it did not finish).

    error: the DiskFullStop of a run that found no space (its own line has already named the file), or
    the DiskFull of a write of the experiment's own files (runs.csv, table.md), named here."""
    from seqkeras.execution.experiment import DiskFullStop

    stop = error
    while stop is not None and not isinstance(stop, DiskFullStop):  # runs.csv could not take the failed run either
        stop = stop.__context__
    where = f"at {stop.where} of {name}" if isinstance(stop, DiskFullStop) else f"in {name}"
    notes = [] if isinstance(error, DiskFullStop) else [str(error)]
    if isinstance(stop, DiskFullStop) and stop.left:
        notes.append(f"{stop.left} run(s) of it not run")
    if not_started:
        notes.append(f"{not_started} experiment(s) after it not started")
    what = f" ({'; '.join(notes)})" if notes else ""
    line = (f"disk full: stopped {where}{what}; free space and run the same command again — "
            "finished runs are reused")
    return line, max(1, stop.failed_runs if isinstance(stop, DiskFullStop) else 1)


def check_reference_root(reference: str | Path, out_root: Path, experiments=()) -> Path:
    """The `--reference` results root, checked before anything runs: a folder, not the --out folder, holding a
    readable results folder with runs for each of `experiments` (else training would end in "not compared")."""
    from seqkeras.results.folder import read_runs

    reference = given_path(reference, "--reference")
    if not reference.is_dir():
        what = "it is a file" if reference.is_file() else (
            "no such folder" if not reference.exists() else "it is not a folder")
        raise SpecError(f"--reference {reference} is not a folder of results: {what} (give a results root, "
                        "such as results/, holding <name>/runs.csv for each experiment)")
    if reference.resolve() == Path(out_root).resolve():
        raise SpecError(f"--reference {reference} is the --out folder itself: the runs would be compared with "
                        "themselves; write them elsewhere (--out) and compare with this one")
    names = [experiment.spec.name for experiment in experiments]
    missing = [name for name in names if not (reference / name / "runs.csv").is_file()]
    if missing:
        hint = ""
        if (reference / "runs.csv").is_file():  # results/<name> given for results/
            hint = (f"; {reference} is one experiment's results folder: give the results root that holds it "
                    f"(--reference {reference.parent})")
        elif not any(reference.glob("*/runs.csv")):
            hint = f"; {reference} holds no experiment's results at all"
        raise SpecError(f"--reference {reference} holds no results of {listed(repr(n) for n in missing)} "
                        f"(no {reference / missing[0] / 'runs.csv'}){hint}")
    for name in names:
        try:
            runs = read_runs(reference / name, warn=lambda message: None)  # warned again when compared
        except SpecError as error:
            raise SpecError(f"--reference {reference}: {error}") from None
        if runs.empty:
            raise SpecError(f"--reference {reference}: {reference / name / 'runs.csv'} has no runs")
    return reference


def plan(experiments, out_root: Path, *, force: bool, echo: Callable[[str], None] = print) -> None:
    """What `run` would do, run by run, without training or writing anything (`run --dry-run`)."""
    echo(headline(experiments, out_root) + " (dry run: nothing is trained or written)")
    for experiment in experiments:
        folder = out_root / experiment.spec.name
        reused = 0
        echo(f"{experiment.spec.name} ({experiment.source}):")
        for note in experiment.notes:
            echo(f"  {note}")
        if experiment.spec.tune is not None:
            from seqkeras.execution.tuning import tuning_plan

            echo(f"  {tuning_plan(experiment, folder)}")
        for run in adopt_recorded_folders(experiment, folder).runs:
            record, why_not = reusable_record(folder / run.run_id, run, force=force)
            reused += record is not None
            echo(f"  {'reuse' if record is not None else 'run  '}  {run.run_id}"
                 + (f"  ({why_not})" if why_not else ""))
        echo(f"  {len(experiment.runs) - reused} to run, {reused} reused")


def rebuild(folder: Path, *, echo: Callable[[str], None] = print):
    """runs.csv from the run folders' metrics.json, then table.md and the plots, under the saved spec; the
    summary's `Outcome` (the claims' verdicts), or None without a saved spec."""
    from seqkeras.execution.experiment import summarize
    from seqkeras.results.folder import read_runs, rebuild_runs
    from seqkeras.spec.loader import load_experiment

    saved = folder / "experiment.yaml"
    if saved.is_symlink():  # a shared folder's link is never followed (results.files)
        print(f"warning: {saved} is a symbolic link; links inside a results folder are not followed", file=sys.stderr)
    experiment = load_experiment(saved) if saved.is_file() and not saved.is_symlink() else None
    if experiment is not None:
        if experiment.spec.tune is not None:  # the runs of each point's chosen setting
            from seqkeras.execution.tuning import tuned_experiment

            experiment = tuned_experiment(experiment, folder)
        experiment = adopt_recorded_folders(experiment, folder)  # a run recorded at another train.verbose
    if experiment is None:
        rebuilt, skipped = rebuild_runs(folder)
    else:  # the spec decides which runs belong here and which matrix columns runs.csv has
        rebuilt, skipped = rebuild_runs(folder, [run.run_id for run in experiment.runs],
                                        experiment=experiment.spec.name, matrix_columns=experiment.matrix_columns)
    echo(f"rebuilt {folder / 'runs.csv'} from {rebuilt} run folder(s)")
    for skip in skipped:
        print(f"skipped {skip.kind}: {skip.path}: {skip.why}", file=sys.stderr)
    if experiment is None:
        print(f"no {saved}: table.md and the plots left as they were", file=sys.stderr)
        return None
    outcome = summarize(folder, experiment, read_runs(folder), echo=echo)
    echo(f"rewrote {folder / 'table.md'} and the plots")
    return outcome
