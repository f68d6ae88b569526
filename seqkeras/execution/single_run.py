"""One run: train and evaluate (or probe), and write its folder; a failing run is a record, not a crash.

The executors call `execute` in whichever process runs the run; nothing here
knows about the other runs of the sweep. With `run --track mlflow` the run is logged
to MLflow while it runs, from this process (`tracking.mlflow_live`): opened as it
starts, each epoch as it ends, the kept model, then the record and its end.
"""

from __future__ import annotations

import platform
import sys
import time
import traceback
from datetime import datetime, timezone
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy

from seqkeras.backends import runtime, threads
from seqkeras.evaluation import gradient_flow
from seqkeras.execution import machine
from seqkeras.execution.identity import code_version, run_identity
from seqkeras.execution.workers import worker_place
from seqkeras.results import left_out, rerun
from seqkeras.results.folder import (
    DATA_CARD, DISK_FULL, FAILED, OK, DiskFull, disk_full, write_atomic, write_csv, write_json,
    write_yaml,
)
from seqkeras.spec.checks import check_model_size
from seqkeras.spec.runs import RunSpec
from seqkeras.tasks import data_card, word_vectors
from seqkeras.problems import problem_named
from seqkeras.training import batching, convergence
from seqkeras.training.parameter_count import trained_parameters
from seqkeras.training.progress import ProgressOutput
from seqkeras.tracking import tensorboard
from seqkeras.tuning.pruning import TrialReporter, best_epoch_value

if TYPE_CHECKING:
    from seqkeras.tracking.mlflow_live import LiveRun, LiveTracking


def execute(run: RunSpec, folder: Path, progress: ProgressOutput | None = None,
            tracking: LiveTracking | None = None) -> dict[str, Any]:
    """Run one run and write its folder; never raises for a failing run. progress: how its training names it on
    stderr (training.progress; None: by nothing, as a run alone on its output); tracking: where to log it while
    it runs (`run --track`), from this process."""
    folder.mkdir(parents=True, exist_ok=True)
    rerun.recover(folder)
    if not rerun.holds_finished_run(folder):
        return execute_into(run, folder, progress, tracking)
    # A finished run's files stay until its rerun has finished too (results.rerun).
    staging = rerun.staging_folder(folder)
    # Ctrl-C or SIGTERM inside it: the finished files stay, and the staged checkpoint resumes the next rerun.
    record = execute_into(run, staging, progress, tracking)
    if record["status"] != OK or not (staging / "metrics.json").is_file():
        rerun.discard(staging)
        return record
    try:
        rerun.replace_with_rerun(folder)
    except OSError as error:  # e.g. a folder made read-only meanwhile: the finished files are put back
        rerun.recover(folder)
        rerun.discard(staging)
        return {**record, **failure(error, folder)}
    return record


def execute_into(run: RunSpec, folder: Path, progress: ProgressOutput | None = None,
                 tracking: LiveTracking | None = None) -> dict[str, Any]:
    """`execute`, writing every file of the run into `folder`."""
    import keras

    write_yaml(folder / "spec.yaml", run.resolved)  # before the MLflow run opens: its params
    if tracking is not None:
        tracking.prepare()  # MLflow's import, in a fresh worker, before the run's start is taken
    started = time.perf_counter()  # from the record's start: its seconds and the MLflow run's duration agree
    record = new_record(run)
    live = tracking.open(record, folder) if tracking is not None else None
    try:
        keras.backend.clear_session()
        runtime.set_random_seed(run.seed)
        if run.is_probe:
            run_probe(run, folder, record)
        else:
            run_training(run, folder, record, progress, live)
    except Exception as error:  # a failing run is a result, not a crash of the sweep
        record.update(failure(error, folder))
    record["seconds"] = time.perf_counter() - started
    try:
        write_json(folder / "metrics.json", record)
    except DiskFull as error:  # no record on the disk: the sweep still has this one, and says it
        if not record.get(DISK_FULL):  # a run that failed on a full disk keeps the file it failed on
            record.update(failure(error, folder))
    if live is not None:
        live.close(record)  # after metrics.json: it is among the files uploaded
    return record


def failure(error: BaseException, folder: Path | None = None) -> dict[str, Any]:
    """A failed record's status, error and traceback. No space left (ENOSPC, EDQUOT, also under another
    error) is one line naming the file, or else the run folder, and no traceback: nothing is wrong with the code."""
    full = disk_full(error)
    if full is not None:
        if full.filename is None and folder is not None:
            full = DiskFull(f"a file in {folder}")
        return {"status": FAILED, "error": str(full), "traceback": None, DISK_FULL: True}
    return {
        "status": FAILED,
        "error": f"{type(error).__name__}: {error}",
        "traceback": "".join(traceback.format_exception(error)),
    }


def new_record(run: RunSpec) -> dict[str, Any]:
    return {
        "experiment": run.experiment,
        "run_id": run.run_id,
        "status": OK,
        "seed": run.seed,
        "matrix": run.matrix_values,
        "metrics": {},
        "params": None,
        "train_seconds": None,
        "backend": runtime.running_backend(),
        **({"backend_choice": run.backend_choice} if run.backend_choice else {}),
        "identity": run_identity(run),  # what a rerun must match to reuse this record (execution.identity)
        "started": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "worker": worker_place(),
        "versions": versions(),
        "machine": machine.describe(threads.current()),  # which CPU computed it: kernels differ by instruction set
        **({"tuned": dict(run.tuned)} if run.tuned else {}),  # the values tuning chose (or a trial tries)
    }


def run_probe(run: RunSpec, folder: Path, record: dict[str, Any]) -> None:
    started = time.perf_counter()
    result = run.probe.component.load()(run.probe.params, run.seed)
    record["train_seconds"] = time.perf_counter() - started
    record["metrics"] = dict(result.metrics)
    for name, curve in result.curves.items():
        write_csv(folder / f"{name}.csv", curve)


def run_training(run: RunSpec, folder: Path, record: dict[str, Any], progress: ProgressOutput | None = None,
                 live: LiveRun | None = None) -> None:
    import keras

    from seqkeras.backends import fitting
    from seqkeras.training import trainer

    data = run.task.component.load()(run.task.params, run.seed)
    callbacks = live_callbacks(live)
    if run.trial is not None:  # a tuning trial: trained and judged on validation data, never tested or kept
        return run_trial(run, data, folder, record, progress, callbacks)
    write_atomic(folder / "vocabulary.json", data.vocabulary.to_json())
    if data.notes:  # what the task says of its data: the pairs in each part, those left out as too long, ...
        record["data"] = dict(data.notes)
        if left_out.counts(record["data"]):  # said as the run starts, not only in its record
            print(f"{run.run_id}: left out as too long: {left_out.said(record['data'])}", file=sys.stderr)
    write_data_card(folder, data, run)
    longest = data.x_train.shape[1] if hasattr(data.x_train, "shape") else 0  # a Transformer's position table
    check_model_size(run.model, vocabulary=len(data.vocabulary), outputs=data.num_outputs, max_length=longest)
    measures_gradient_flow = gradient_flow.NAME in run.diagnostics
    with tensorboard.events(folder, run.train.tensorboard) as events:  # None unless train.tensorboard
        # Variables, compile and fit all belong inside the strategy's scope.
        with fitting.distribution_scope(run.train.distribution) as devices:
            if devices:
                record["devices"] = devices
            model = run.model.component.load()(run.model.params, data)
            record["machine"]["threads"] = threads.for_run(model, run.train.batch_size)
            # Measured before fit and without drawing a random number, so training runs as it would without it.
            at_init = gradient_flow.measure(model, data) if measures_gradient_flow else None
            history, seconds = trainer.fit(model, data, run.train, seed=run.seed, checkpoint_dir=folder / ".resume",
                                           events=events, abilities=run.model.component.abilities_for(run.model.params),
                                           progress=progress, callbacks=callbacks,
                                           score_validation=validation_scorer(run, model, data))
            trained = gradient_flow.measure(model, data) if measures_gradient_flow else None
        # After fitting: a count-based model (n-gram) has its parameters (counts) only then.
        record["params"] = trained_parameters(model)
        summary = convergence.training_summary(history, run.train)
        if summary is not None:  # a counted model has no epochs to judge
            record["training"] = summary
        record["train_seconds"] = seconds
        write_csv(folder / "history.csv", history)
        if run.train.keep_model:  # before evaluating: a run whose evaluation fails still keeps what it trained
            from seqkeras.kept import saving

            saving.keep(model, data, run, folder)
            if live is not None and isinstance(model, keras.Model):  # MLflow's Keras flavor (not a counted n-gram)
                live.log_model(model, requirements=requirements(record), step=len(history))
        rows = run.model.component.load_evaluator()(model, data, run, folder)
        curve = gradient_flow.curve(at_init, trained) if measures_gradient_flow else None
        if curve is not None:
            write_csv(folder / f"{gradient_flow.CURVE}.csv", curve)
            for row in rows:  # one measurement of the one trained model, in each of its rows
                row.metrics.update(gradient_flow.summary(at_init, trained))
        if events is not None:
            tensorboard.write_results(events, len(history), rows, curve)
    if len(rows) == 1 and not rows[0].keys:
        record["metrics"] = rows[0].metrics
    else:  # one trained model, several evaluations (e.g. one per decoder)
        record["rows"] = [{"keys": row.keys, "metrics": row.metrics} for row in rows]


def live_callbacks(live: LiveRun | None) -> list:
    """The Keras callbacks that log each epoch to the live MLflow run: none without one."""
    if live is None:
        return []
    from seqkeras.tracking.mlflow_epochs import EpochLogger

    return [EpochLogger(live)]


def requirements(record: dict[str, Any]) -> list[str]:
    """The pip requirements of a kept model logged to MLflow: Keras and the backend that trained it, as the record
    names them (seqkeras itself where it is installed under that name: its layers may be in the model)."""
    pinned = [f"{package}=={number}" for package, number in record["versions"].items()
              if package in ("keras", *runtime.BACKEND_PACKAGES.values())]
    try:
        pinned.append(f"seqkeras=={version('seqkeras')}")
    except PackageNotFoundError:
        pass
    return pinned


def run_trial(run: RunSpec, data, folder: Path, record: dict[str, Any], progress: ProgressOutput | None = None,
              callbacks: list | None = None) -> None:
    """One tuning trial: fit with each epoch reported to its study (which may stop it), and record its objective,
    the best epoch's value on validation data. Its test set is never read."""
    from seqkeras.backends import fitting
    from seqkeras.training import trainer

    link = run.trial
    reporter = TrialReporter(link)
    with tensorboard.events(folder, run.train.tensorboard) as events, \
            fitting.distribution_scope(run.train.distribution):
        model = run.model.component.load()(run.model.params, data)
        record["machine"]["threads"] = threads.for_run(model, run.train.batch_size)
        # No checkpoint: a trial cut short is drawn again as a new trial (execution.tuning), never resumed.
        history, seconds = trainer.fit(model, data, run.train, seed=run.seed, events=events,
                                       abilities=run.model.component.abilities_for(run.model.params),
                                       after_epoch=reporter, progress=progress, callbacks=callbacks or (),
                                       score_validation=validation_scorer(run, model, data))
    record["params"] = trained_parameters(model)
    record["train_seconds"] = seconds
    write_csv(folder / "history.csv", history)
    value = best_epoch_value(history.to_dict("records"), link.objective, link.goal)
    record["metrics"] = {link.objective: value, "epochs": len(history)}
    record["trial"] = {"number": link.number, "study": link.study, "value": value, "pruned_at": reporter.pruned_at}


def validation_scorer(run: RunSpec, model, data):
    """The model kind's scorer of validation data that train.validation_metrics asks for (the spec's checks refuse
    it for a kind without one), else None."""
    if run.train.validation_metrics is None:
        return None
    return run.model.component.load_validation_scorer()(model, data, run)


def write_data_card(folder: Path, data, run: RunSpec) -> None:
    """The run's data described (tasks.data_card), for the experiment's data_card.md. A card that cannot be
    computed (a plug-in task's arrays of an unforeseen shape) is a warning: the data trains all the same."""
    try:
        card = data_card.describe(data)
    except Exception as error:
        print(f"warning: {run.run_id}: no data card ({type(error).__name__}: {error})", file=sys.stderr)
        return
    padding = padding_shares(data, run)
    if padding is not None:
        card["padding"] = padding
    # Outside the try: a vectors file that cannot be read fails the run in one line (as building its model would).
    embedding = getattr(run.model.params, "embedding", None)  # model.embedding: pretrained vectors
    if embedding is not None:
        card["embedding"] = word_vectors.data_coverage(embedding, data)
    write_json(folder / DATA_CARD, {**card, "task": run.task.name, "seed": run.seed, "run_id": run.run_id})


def padding_shares(data, run: RunSpec) -> dict[str, float] | None:
    """The share of the training batches' token slots that is padding, shuffled and by length (batching.padding),
    for the data card: whenever the run trains on token sequences that have any (a shuffled run's card says what
    `train.batches: by_length` would leave out, a by_length run's what it left out); None for other inputs (a
    regression's real-valued steps, a plug-in task's arrays of another shape) and sequences of one length."""
    if run.train is None or not problem_named(data.problem).reads_tokens or not batching.token_sequences(data.x_train):
        return None
    shares = batching.padding(data.x_train, run.train.batch_size, run.seed)
    return shares if run.train.batches == batching.BY_LENGTH or shares["shuffled"] > 0 else None


def versions() -> dict[str, str]:
    import keras

    return {
        "seqkeras": code_version(),
        "python": platform.python_version(),
        "keras": keras.__version__,
        "numpy": numpy.__version__,
        **runtime.backend_version(),
    }
