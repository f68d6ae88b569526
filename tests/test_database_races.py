"""Processes that open one new database at once, as two commands (or two machines sharing `tune.storage`) do: a
studies database and an MLflow store are made once and used by all, with no error and nothing printed of MLflow's
own. Real processes (the race is between them), started from a fork server that imported the libraries once, each
meeting the others at a barrier before every round; nothing trains."""

from __future__ import annotations

import multiprocessing
import queue
import sqlite3
import threading
from pathlib import Path

import pytest

PROCESSES = 4
ROUNDS = 3
WAIT_SECONDS = 120  # for the others at the barrier, and for a process's results: only a hung test waits this long
# What the processes import before the first round: once, in the fork server that starts them (Optuna imports
# alembic and SQLAlchemy's dialect on its first connection: each process would, in turn, under the lock).
PRELOAD = ["seqkeras.tuning.study", "alembic.command", "alembic.config", "alembic.migration", "alembic.script",
           "sqlalchemy.orm", "sqlalchemy.dialects.sqlite", "seqkeras.tracking.mlflow_tracking",
           "mlflow.store.tracking.sqlalchemy_store"]


def in_processes(target, rounds: list, capfd) -> tuple[list[str], str]:
    """`target(rounds, index, barrier, results)` in PROCESSES processes at once: what they put in `results`, and
    what they all wrote to stderr."""
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(PRELOAD)  # an import error there leaves that module to each process
    barrier, results = context.Barrier(PROCESSES, timeout=WAIT_SECONDS), context.Queue()
    processes = [context.Process(target=target, args=(rounds, index, barrier, results)) for index in range(PROCESSES)]
    for process in processes:
        process.start()
    said = []
    try:
        for _ in range(PROCESSES * len(rounds)):
            said.append(results.get(timeout=WAIT_SECONDS))
    except queue.Empty:
        pass
    for process in processes:
        process.join(WAIT_SECONDS)
        if process.exitcode is None:
            process.kill()
    return said, capfd.readouterr().err


def outcome(action) -> str:
    try:
        action()
    except Exception as error:
        return f"{type(error).__name__}: {str(error).splitlines()[0][:300] if str(error) else ''}"
    return "ok"


# --------------------------------------------------------------------------- #
# A studies database
# --------------------------------------------------------------------------- #

TUNE = {"search": {"model.units": {"integer": [2, 8]}}, "trials": 2}


def open_the_study(urls: list[str], index: int, barrier, results) -> None:
    """Each round: wait for the others, then open (make) the one study of a new database, as `run` does."""
    from seqkeras.tuning.settings import TuneSpec
    from seqkeras.tuning.study import open_study

    tune = TuneSpec.model_validate(TUNE)
    for url in urls:
        barrier.wait()
        results.put(outcome(lambda url=url: open_study(url, "raced", "cell=gru_00000000", {"model.cell": "gru"},
                                                       "0" * 64, tune, seed=0)))


@pytest.mark.slow  # processes that start and import Optuna (MLflow), a database made
def test_processes_making_one_new_studies_database_at_once_all_open_its_one_study(tmp_path, capfd):
    import optuna

    urls = [f"sqlite:///{tmp_path / f'round{number}' / 'studies.db'}" for number in range(ROUNDS)]
    for url in urls:
        Path(url.removeprefix("sqlite:///")).parent.mkdir()
    said, err = in_processes(open_the_study, urls, capfd)
    assert said == ["ok"] * (PROCESSES * ROUNDS), said
    assert "Traceback" not in err and "Error" not in err, err
    for url in urls:
        assert optuna.get_all_study_names(url) == ["raced/cell=gru_00000000"]
        study = optuna.load_study(study_name="raced/cell=gru_00000000", storage=url)
        assert study.metric_names == ["val_loss"] and study.user_attrs["point"] == {"model.cell": "gru"}


def test_only_the_errors_of_a_lost_race_are_tried_again():
    from sqlalchemy.exc import IntegrityError

    from seqkeras.tuning.database import retried

    tries = []

    def made_on_the_third_try():
        tries.append(1)
        if len(tries) < 3:
            raise IntegrityError("INSERT INTO alembic_version", {}, Exception("UNIQUE constraint failed: "
                                                                              "alembic_version.version_num"))
        return "made"

    assert retried(made_on_the_third_try) == "made" and len(tries) == 3

    def damaged():
        tries.append(1)
        raise sqlite3.DatabaseError("file is not a database")

    tries.clear()
    with pytest.raises(sqlite3.DatabaseError):
        retried(damaged)
    assert len(tries) == 1


# --------------------------------------------------------------------------- #
# An MLflow store
# --------------------------------------------------------------------------- #


def log_to_the_store(roots: list[Path], index: int, barrier, results) -> None:
    """Each round: wait for the others, then make the tracker of the results root's new store (`run --track
    mlflow`) and log this process's own experiment's run."""
    import json

    from seqkeras.tracking.mlflow_store import parse_track
    from seqkeras.tracking.mlflow_tracking import MlflowTracker

    for root in roots:
        barrier.wait()
        run = root / f"process{index}" / "seed=0_00000000"

        def track(root=root, run=run):
            problem = MlflowTracker(parse_track("mlflow", root), root).log(
                json.loads((run / "metrics.json").read_text(encoding="utf-8")), run)
            if problem:
                raise RuntimeError(problem)

        results.put(outcome(track))


@pytest.mark.slow  # processes that start and import Optuna (MLflow), a database made
def test_processes_making_one_new_mlflow_store_at_once_all_log_to_it_quietly(tmp_path, capfd):
    pytest.importorskip("mlflow", reason="pip install -r requirements-tracking.txt")
    from tests.test_tracking_stores import fake_results, store_runs

    roots = [tmp_path / "round0"]  # one round: making an MLflow store runs its ~50 migrations, seconds
    for root in roots:
        for index in range(PROCESSES):
            fake_results(root, f"process{index}", 1)
    said, err = in_processes(log_to_the_store, roots, capfd)
    assert said == ["ok"] * (PROCESSES * len(roots)), said
    assert "Traceback" not in err and "ERROR" not in err, err
    for root in roots:
        for index in range(PROCESSES):
            _, logged = store_runs(f"sqlite:///{root / 'mlflow.db'}", f"process{index}")
            assert [run.data.tags["seqkeras.run_id"] for run in logged] == ["seed=0_00000000"]


def test_a_store_another_reader_holds_gets_its_record_without_mlflow_printing_a_traceback(tmp_path, capfd):
    """A reader (mlflow ui, a script) holds a read transaction: MLflow's write waits for it and then fails with
    `database is locked` (its session logs an ERROR and two tracebacks); the write is tried again and logged."""
    pytest.importorskip("mlflow", reason="pip install -r requirements-tracking.txt")
    import json

    import sqlalchemy
    from mlflow.store.tracking.sqlalchemy_store import SqlAlchemyStore

    from seqkeras.tracking.mlflow_store import parse_track
    from seqkeras.tracking.mlflow_tracking import MlflowTracker
    from tests.test_tracking_stores import fake_results, store_runs

    root = tmp_path / "results"
    run = fake_results(root, "held", 1) / "seed=0_00000000"
    tracker = MlflowTracker(parse_track("mlflow", root), root)
    uri = f"sqlite:///{root / 'mlflow.db'}"
    (engine,) = [engine for key, engine in SqlAlchemyStore._engine_map.items() if key == uri]

    def shorter_wait(connection, cursor, statement, parameters, context, executemany):
        # MLflow waits 20 s for a lock; 0.1 s makes the same failure in a test's time.
        return statement.replace("busy_timeout = 20000", "busy_timeout = 100"), parameters

    sqlalchemy.event.listen(engine, "before_cursor_execute", shorter_wait, retval=True)
    reader = sqlite3.connect(root / "mlflow.db", isolation_level=None, check_same_thread=False)
    try:
        reader.execute("BEGIN")
        reader.execute("SELECT count(*) FROM runs").fetchall()  # held: no write can commit until it ends
        release = threading.Timer(1.0, reader.execute, ["ROLLBACK"])
        release.start()
        capfd.readouterr()
        problem = tracker.log(json.loads((run / "metrics.json").read_text(encoding="utf-8")), run)
        release.join()
    finally:
        sqlalchemy.event.remove(engine, "before_cursor_execute", shorter_wait)
        reader.close()
    out, err = capfd.readouterr()
    assert problem is None
    assert "Traceback" not in out + err and "ERROR" not in out + err, out + err
    _, logged = store_runs(uri, "held")
    assert [found.data.tags["seqkeras.run_id"] for found in logged] == ["seed=0_00000000"]
