"""An experiment's `tune:` section carried out: each matrix point's trials, then its best setting on every seed.

Every matrix point gets its own Optuna study (tuning.study) and the same budget
of trials. A trial is a run like any other (its folder, record, lock, progress
line, tracker), kept under `tuning/` in the results folder and trained with the
tuning seed on validation data only: it is never evaluated on the test set. The
command asks a study for a trial whenever a worker is free (the point with the
fewest trials so far), hands it to the executor and tells the study the trial's
objective when it finishes, before asking for the next: a worker whose trial was
pruned early starts another at once, and each ask sees every result told before
it. The worker reports each epoch to the study itself, so the pruner can stop it
(tuning.pruning).

A trial that a killed command left running is found again: its record, when it
finished, is told to the study; otherwise it is marked interrupted and its values
queued to be trained again, and it does not count against the budget. So is a
trial whose worker process died while it trained (out of memory, a `kill`), once:
its values trained again die with their worker a second time only when they are
what kills it (too large a model for the memory), and that trial then counts as failed.

Then each point's best trial gives the point's runs: the spec's seeds, trained
with the chosen values and evaluated as any run. `runs.csv`, the tables and the
claims read those runs; each record's `tuned` names the values chosen.
"""

from __future__ import annotations

import dataclasses
import json
import math
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd

from seqkeras.errors import SpecError
from seqkeras.execution.executors import WORKER_DIED, Job
from seqkeras.execution.progress import Progress, duration, matrix_label, track
from seqkeras.results.folder import write_csv
from seqkeras.results.locks import file_lock, try_file_lock
from seqkeras.results.record import OK, read_record
from seqkeras.spec.loader import configured_run
from seqkeras.spec.runs import Experiment, RunSpec, point_label
from seqkeras.tuning.pruning import TrialLink
from seqkeras.tuning.settings import STUDIES_FILE, STUDIES_FOLDER, TuneSpec

TRIALS_CSV = "trials.csv"
BEST_CSV = "best.csv"
# How often a command whose studies still have trials running in another process looks again.
WAIT_SECONDS = 5.0
# A trial's user attribute: the number of the trial whose worker died, whose values it trains again.
RETRIES_KILLED = "retries_killed"


@dataclasses.dataclass
class Point:
    """One matrix point: its runs (one per seed), its study, and the trials this command started."""

    runs: list[RunSpec]
    key: str  # `cell=lstm_1a2b3c4d` (tuning.study.point_key): its study's name after the experiment's, its folders'
    identity: str  # what its study is of (tuning.study.spec_identity)
    study_name: str  # its study's name in the database (a study from before studies were named: the key alone)
    study: Any = None  # optuna.Study, opened in `tune`
    first_number: int = 0  # the folder number of the study's trial 0 (tuning.study.Named)

    @property
    def first(self) -> RunSpec:
        return self.runs[0]

    def shown(self, number: int) -> int:
        """Optuna's trial number as the suite shows it: the same, but in a study from before studies were named,
        whose folders were numbered from 1."""
        return number + self.first_number

    def found(self, study, named) -> Point:
        self.study, self.study_name, self.first_number = study, named.name, named.first_number
        return self

    @property
    def label(self) -> str:
        """`lag=100, cell=lstm`: the point's matrix values, as the progress lines name it."""
        return matrix_label(self.first.matrix_values or self.first.point) or "the experiment"


def tuning_seed(experiment: Experiment) -> int:
    tune = experiment.spec.tune
    return tune.seed if tune.seed is not None else experiment.spec.seeds[0]


def points_of(experiment: Experiment, runs: list[RunSpec]) -> list[Point]:
    """The matrix points of these runs, in matrix order, each named by its study."""
    grouped: dict[str, list[RunSpec]] = {}
    for run in runs:
        grouped.setdefault(json.dumps(run.point, sort_keys=True, default=str), []).append(run)
    from seqkeras.tuning.study import point_key, spec_identity, study_name

    points = []
    for members in grouped.values():
        document = {key: value for key, value in members[0].hashed.items() if key != "seed"}
        identity = spec_identity(document, experiment.spec.tune)
        key = point_key(point_label(members[0].point), identity)
        points.append(Point(members, key, identity, study_name(experiment.spec.name, key)))
    return points


def tune(experiment: Experiment, folder: Path, executor, *, echo: Callable[[str], None] = print,
         tracker=None) -> Experiment:
    """Run what is left of every point's trials, write tuning/trials.csv and best.csv, and return the experiment
    with each point's runs replaced by the runs of its best setting."""
    from seqkeras.tuning.study import open_study, storage_url

    spec_tune: TuneSpec = experiment.spec.tune
    seed = tuning_seed(experiment)
    url = storage_url(spec_tune, folder)
    (folder / STUDIES_FOLDER).mkdir(parents=True, exist_ok=True)
    points = points_of(experiment, experiment.runs)
    check_studies_file(spec_tune, folder)
    for point in points:
        point.found(*study_or_error(lambda point=point: open_study(
            url, experiment.spec.name, point.key, point_values(point), point.identity, spec_tune, seed), url))
    trials = Trials(experiment, folder, points, url, seed, echo, tracker)
    trials.recover()
    trials.run(executor)
    trials.wait_for_others()
    trials.write()
    runs = [run for point in points for run in best_runs(experiment, point)]
    return dataclasses.replace(experiment, runs=runs, unselected=chosen_runs(experiment, experiment.unselected, url))


def check_studies_file(tune_spec: TuneSpec, folder: Path) -> None:
    """The default database is a file of the results folder, which may come from someone else: a regular file or
    none, never a link (Optuna would write wherever it points)."""
    if tune_spec.storage:
        return
    path = folder / STUDIES_FOLDER / STUDIES_FILE
    if path.is_symlink() or (path.exists() and not path.is_file()):
        raise SpecError(f"{path} is a symbolic link or not a regular file; the studies are written only into a "
                        "regular file inside the results folder")


def study_or_error(open_it: Callable[[], Any], url: str):
    """A study of the database, or one line naming the database when it cannot be read as Optuna's."""
    try:
        return open_it()
    except SpecError:  # a file or study that tuning.database or tuning.trial_checks refused, said in one line
        raise
    except Exception as error:  # SQLAlchemy, sqlite3 and Optuna each raise their own types for a bad database
        raise SpecError(f"cannot use the tuning database {url}: {type(error).__name__}: "
                        f"{str(error).splitlines()[0][:300] if str(error) else ''} (a results folder's "
                        f"{STUDIES_FOLDER}/{STUDIES_FILE} is Optuna's SQLite file; move a damaged one away to tune "
                        "again)") from None


def trial_outcome(record: dict[str, Any], number: int) -> dict[str, Any] | None:
    """A trial record's `trial` entry, when it is one of this trial: its number, and a finite number or none as
    its value (a record from someone else's folder is read as carefully as a spec)."""
    outcome = record.get("trial")
    if not isinstance(outcome, dict) or outcome.get("number") != number:
        return None
    value = outcome.get("value")
    if value is not None and (not isinstance(value, (int, float)) or isinstance(value, bool)
                              or not math.isfinite(value)):
        return None
    pruned_at = outcome.get("pruned_at")
    if pruned_at is not None and (not isinstance(pruned_at, int) or isinstance(pruned_at, bool)):
        return None
    return {"value": value, "pruned_at": pruned_at}


def tuned_experiment(experiment: Experiment, folder: Path) -> Experiment:
    """The experiment's runs as its studies chose them, without training anything (`table --rebuild`, `--only`'s
    other points); a point without a finished study keeps its untuned runs, which have no folders."""
    from seqkeras.tuning.study import storage_url

    url = storage_url(experiment.spec.tune, folder)
    return dataclasses.replace(experiment, runs=chosen_runs(experiment, experiment.runs, url),
                               unselected=chosen_runs(experiment, experiment.unselected, url))


def chosen_runs(experiment: Experiment, runs: list[RunSpec], url: str) -> list[RunSpec]:
    """These runs' points, each as its study (in the database at `url`) chose it, without training anything."""
    return [run for point in points_of(experiment, runs)
            for run in best_runs(experiment, reopened(point, url, experiment.spec.tune, experiment.spec.name))]


def tuning_plan(experiment: Experiment, folder: Path) -> str:
    """What tuning will do (`run --dry-run`): the trials left of each point's budget; the runs listed after it are
    those of the spec's own values, which the chosen ones replace."""
    from seqkeras.tuning.study import spent, storage_url

    tune_spec = experiment.spec.tune
    url = storage_url(tune_spec, folder)
    seed = tuning_seed(experiment)
    points = [reopened(point, url, tune_spec, experiment.spec.name) for point in points_of(experiment, experiment.runs)]
    done = sum(min(spent(point.study), tune_spec.trials) for point in points if point.study is not None)
    total = tune_spec.trials * len(points)
    return (f"tune: {len(points)} matrix point(s) × {tune_spec.trials} trials on seed {seed} ({done} of {total} done; "
            f"studies in {url}); then each point's best setting on every seed (run ids below are the spec's own "
            "values', which tuning replaces)")


def reopened(point: Point, url: str, tune_spec: TuneSpec, experiment: str) -> Point:
    """The point with its study, when the database has it under its name or its former one (read only: nothing is
    created)."""
    import optuna

    from seqkeras.tuning.study import found_study, load_study, storage

    if url.startswith("sqlite:///") and not Path(url.removeprefix("sqlite:///")).is_file():
        return point
    check_studies_file(tune_spec, Path(url.removeprefix("sqlite:///")).parent.parent)
    names = study_or_error(lambda: optuna.get_all_study_names(storage(url)), url)
    named = found_study(names, experiment, point.key)
    if named is not None:
        point.found(study_or_error(lambda: load_study(url, named, tune_spec), url), named)
    return point


def point_values(point: Point) -> dict[str, Any]:
    """The point's matrix values (dotted key → value), as its study's `point` attribute names them."""
    return dict(point.first.matrix_values or point.first.point)


def best_runs(experiment: Experiment, point: Point) -> list[RunSpec]:
    """The point's runs with its best trial's values, one per seed; its untuned runs when no trial completed (they
    are then recorded as failed: see `untuned_failure`)."""
    from seqkeras.tuning.study import best_trial

    best = best_trial(point.study) if point.study is not None else None
    if best is None:
        return point.runs
    runs = []
    for run in point.runs:
        tuned = configured_run(experiment.spec, experiment.base, run.point, dict(best.params), run.seed,
                               experiment.matrix_columns)
        tuned.tuned = {key: best.params[key] for key in experiment.spec.tune.search}
        runs.append(tuned)
    return runs


def untuned_failure(run: RunSpec) -> str | None:
    """Why a run of a tuned experiment cannot be trained: its point has no completed trial (None when it has)."""
    return None if run.tuned else ("tuning found no setting for this matrix point: none of its trials completed "
                                   "(tuning/trials.csv says why)")


class Trials:
    """The trials of one command: asked of the studies one at a time as workers free up, run by the executor,
    told back."""

    def __init__(self, experiment: Experiment, folder: Path, points: list[Point], url: str, seed: int,
                 echo: Callable[[str], None], tracker):
        self.experiment, self.folder, self.points = experiment, folder, points
        self.url, self.seed, self.echo, self.tracker = url, seed, echo, tracker
        self.tune: TuneSpec = experiment.spec.tune
        self.total = self.tune.trials * len(points)
        self.by_study = {point.study_name: point for point in points}
        self.started = time.monotonic()
        self.progress = Progress(self.total)  # `run` sets it to the trials this command trains, for their time left

    def trial_folder(self, point: Point, number: int) -> Path:
        return self.folder / STUDIES_FOLDER / f"trial-{point.shown(number):03d}_{point.key}"

    def recover(self) -> None:
        """Trials left running by a killed command (their folder's lock is free): told from their record when they
        finished, else marked interrupted and drawn again."""
        from seqkeras.tuning.study import mark_interrupted, running

        for point in self.points:
            for trial in running(point.study):
                folder = self.trial_folder(point, trial.number)
                with try_file_lock(folder / ".lock") as free:
                    if not free:
                        continue  # another process trains it now
                    record = read_record(folder / "metrics.json").record
                    if record is not None and trial_outcome(record, trial.number) is not None:
                        self.tell(point, trial.number, record)
                    else:
                        mark_interrupted(point.study, trial)
                        self.echo(f"{point.label}: trial {point.shown(trial.number)} was interrupted; its values are "
                                  "trained again")

    def run(self, executor) -> None:
        from seqkeras.tuning.study import spent

        done_before = sum(min(spent(point.study), self.tune.trials) for point in self.points)
        if done_before:
            then = ("a raised tune.trials continues each study" if done_before >= self.total
                    else "the rest are trained now")
            self.echo(f"{self.experiment.spec.name}: tuning: {done_before} of {self.total} trials done before, "
                      f"reused ({then})")
        self.progress = Progress(self.total - done_before, executor.slots)
        if done_before < self.total:
            self.echo(f"{self.experiment.spec.name}: tuning {len(self.points)} matrix point(s), {self.tune.trials} "
                      f"trials each ({self.tune.sampler} sampler, pruner {self.tune.pruner}, objective "
                      f"{self.tune.objective} on validation data), {executor.describe()}")
        for job, record in executor.stream(self.ask, False):
            point = self.by_study[job.run.trial.study]
            number = job.run.trial.number
            if record.get(WORKER_DIED) and self.train_again(point, number, record):
                self.echo(f"{point.label}: trial {point.shown(number)}: {record.get('error')}; its values are trained "
                          "again (it does not count against the budget)")
            else:
                self.tell(point, number, record)
                self.say(point, job, record)
            if self.tracker is not None:
                track(self.tracker, record, job.folder, self.echo, experiment_folder=self.folder)

    def ask(self) -> Job | None:
        """A new trial of the point with the fewest trials spent (the first in matrix order among equals), or None
        when every point's budget is spent (those in flight count)."""
        from seqkeras.tuning.study import distributions, sampler, spent

        left = [(spent(point.study), index) for index, point in enumerate(self.points)]
        left = [entry for entry in left if entry[0] < self.tune.trials]
        if not left:
            return None
        point = self.points[min(left)[1]]
        drawn = len(point.study.get_trials(deepcopy=False))
        point.study.sampler = sampler(self.tune, self.seed, drawn)
        trial = point.study.ask(distributions(self.tune))
        return self.job(point, trial.number, dict(trial.params))

    def job(self, point: Point, number: int, values: dict[str, Any]) -> Job:
        run = configured_run(self.experiment.spec, self.experiment.base, point.first.point, values, self.seed,
                             self.experiment.matrix_columns)
        folder = self.trial_folder(point, number)
        run.run_id = folder.name
        run.trial = TrialLink(self.url, point.study_name, number, self.tune.objective, self.tune.goal,
                              self.tune.model_dump(mode="json"))
        run.tuned = dict(values)
        label = f"trial {point.shown(number)} of {point.label}: {folder.name}"
        tracking = self.tracker.live(self.folder) if self.tracker is not None else None
        # its point: by_study[run.trial.study]
        return Job(number, run, folder, label, f"trial {point.shown(number)} of {point.label}", tracking)

    def train_again(self, point: Point, number: int, record: dict[str, Any]) -> bool:
        """A trial whose worker process died: marked interrupted (it does not count against the budget) and its
        values queued to be trained again, unless it already trained again the values of a trial whose worker died
        (then False: it is told as failed, and counts)."""
        from optuna.trial import TrialState

        from seqkeras.tuning.study import INTERRUPTED

        study = point.study
        trial_id = study._storage.get_trial_id_from_study_id_trial_number(study._study_id, number)
        trial = study._storage.get_trial(trial_id)
        if trial.state.is_finished() or trial.user_attrs.get(RETRIES_KILLED) is not None:
            return False
        study._storage.set_trial_user_attr(trial_id, "run_id", record.get("run_id"))
        study._storage.set_trial_user_attr(trial_id, "error", str(record.get("error"))[:500])
        study._storage.set_trial_user_attr(trial_id, INTERRUPTED, True)
        study.tell(number, state=TrialState.FAIL)
        study.enqueue_trial(dict(trial.params), user_attrs={RETRIES_KILLED: number}, skip_if_exists=False)
        return True

    def tell(self, point: Point, number: int, record: dict[str, Any]) -> None:
        from optuna.trial import TrialState

        outcome = trial_outcome(record, number) or {}
        study = point.study
        trial_id = study._storage.get_trial_id_from_study_id_trial_number(study._study_id, number)
        if study._storage.get_trial(trial_id).state.is_finished():
            # Another command sharing the database took it for interrupted before this one had locked its folder,
            # and queued its values again: the study keeps that verdict (at worst, one trial trained twice).
            self.echo(f"{point.label}: trial {point.shown(number)} was already marked finished in the study; its "
                      "result is kept in its folder only")
            return
        study._storage.set_trial_user_attr(trial_id, "run_id", record.get("run_id"))
        study._storage.set_trial_user_attr(trial_id, "seconds", record.get("seconds"))
        if record.get("status") != OK:
            study._storage.set_trial_user_attr(trial_id, "error", str(record.get("error"))[:500])
            study.tell(number, state=TrialState.FAIL)
        elif outcome.get("pruned_at") is not None:
            study.tell(number, state=TrialState.PRUNED)
        elif outcome.get("value") is None:  # no finite value in any epoch, or not a record of this trial
            study._storage.set_trial_user_attr(trial_id, "error", "no finite objective in any epoch")
            study.tell(number, state=TrialState.FAIL)
        else:
            study.tell(number, outcome["value"])

    def say(self, point: Point, job: Job, record: dict[str, Any]) -> None:
        from seqkeras.tuning.study import best_trial, finished

        done = sum(min(finished(p.study), self.tune.trials) for p in self.points)
        outcome = trial_outcome(record, job.run.trial.number) or {}
        if record.get("status") != OK:
            status = f"FAILED: {record.get('error')}"
        elif outcome.get("pruned_at") is not None:
            status = f"pruned after epoch {outcome['pruned_at']}"
        else:
            status = f"{self.tune.objective} {outcome.get('value'):.4g}"
        best = best_trial(point.study)
        best_text = f"; best {best.value:.4g} (trial {point.shown(best.number)})" if best is not None else ""
        elapsed = time.monotonic() - self.started
        # A pruned trial's time counts as it was: the mix of pruned and whole trials is what the rest will be.
        self.progress.finished(record.get("status") != OK, None if record.get("reused") else record.get("seconds"))
        left = self.progress.seconds_left()
        left_text = f", about {duration(left)} left" if left is not None and done < self.total else ""
        self.echo(f"[tune {done}/{self.total}] {point.label}, trial {point.shown(job.run.trial.number)}: {status} "
                  f"({record.get('seconds', 0):.1f} s){best_text}; {duration(elapsed)} elapsed{left_text}")

    def wait_for_others(self) -> None:
        """Trials another process still trains (a shared folder or database): the best setting waits for them."""
        from seqkeras.tuning.study import running

        said = False
        while True:
            self.recover()
            busy = sum(len(running(point.study)) for point in self.points)
            if not busy:
                return
            if not said:
                self.echo(f"{self.experiment.spec.name}: waiting for {busy} trial(s) that another process trains")
                said = True
            time.sleep(WAIT_SECONDS)

    def write(self) -> None:
        """tuning/trials.csv (every trial of every point) and tuning/best.csv (each point's chosen values)."""
        trials, best = [], []
        for point in self.points:
            trials += trial_rows(point, self.experiment)
            best.append(best_row(point, self.experiment, self.tune))
        with file_lock(self.folder / STUDIES_FOLDER / ".write.lock"):
            write_csv(self.folder / STUDIES_FOLDER / TRIALS_CSV, pd.DataFrame(trials))
            write_csv(self.folder / STUDIES_FOLDER / BEST_CSV, pd.DataFrame(best))


def point_columns(point: Point, experiment: Experiment) -> dict[str, Any]:
    return {key: point.first.matrix_values.get(key) for key in experiment.matrix_columns}


def trial_rows(point: Point, experiment: Experiment) -> list[dict[str, Any]]:
    rows = []
    for trial in point.study.get_trials(deepcopy=False):
        epochs = max(trial.intermediate_values, default=None)
        rows.append({
            **point_columns(point, experiment),
            "study": point.study_name,
            "trial": point.shown(trial.number),
            "state": trial.state.name.lower() + (" (interrupted)" if trial.user_attrs.get("interrupted") else ""),
            "objective": trial.value if trial.value is not None else (
                trial.intermediate_values[epochs] if epochs is not None else None),
            **{f"value.{key}": trial.params.get(key) for key in experiment.spec.tune.search},
            "epochs": epochs,
            "seconds": trial.user_attrs.get("seconds"),
            "run_id": trial.user_attrs.get("run_id"),
            "error": trial.user_attrs.get("error", ""),
        })
    return rows


def best_row(point: Point, experiment: Experiment, tune_spec: TuneSpec) -> dict[str, Any]:
    """The point's chosen values, its best objective, the median of its completed trials and the spread between."""
    from optuna.trial import TrialState

    from seqkeras.tuning.study import best_trial

    best = best_trial(point.study)
    trials = point.study.get_trials(deepcopy=False)
    values = [t.value for t in trials if t.state == TrialState.COMPLETE and t.value is not None]
    median = statistics.median(values) if values else None
    return {
        **point_columns(point, experiment),
        "study": point.study_name,
        "objective": tune_spec.objective,
        "direction": tune_spec.goal,
        "best": best.value if best else None,
        "best_trial": point.shown(best.number) if best else None,
        **{f"best.{key}": (best.params.get(key) if best else None) for key in tune_spec.search},
        "median": median,
        "best_minus_median": (best.value - median) if best and median is not None else None,
        "complete": sum(t.state == TrialState.COMPLETE for t in trials),
        "pruned": sum(t.state == TrialState.PRUNED for t in trials),
        "failed": sum(t.state == TrialState.FAIL and not t.user_attrs.get("interrupted") for t in trials),
    }
