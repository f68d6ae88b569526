"""MLflow stores that cannot work, several sweeps on one store, and results folders that are not to be trusted.

The store is checked before anything trains (a bad one is exit 2 with one line); two
processes logging to one new SQLite store at the same moment lose nothing; the names
used in the store come from the folders, not from a record's text; a link inside a
run folder is never uploaded. Read back with MLflow's own client.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

import seqkeras
from seqkeras.errors import SpecError, shown
from tests.conftest import REPO
from tests.helpers import run_cli

pytest.importorskip("mlflow", reason="pip install -r requirements-tracking.txt")

AS_ROOT = hasattr(os, "geteuid") and os.geteuid() == 0


def fake_results(root: Path, experiment: str, n: int, *, record_changes=None) -> Path:
    """An experiment folder as `seqkeras run` leaves it (runs.csv, and per run metrics.json, spec.yaml,
    history.csv), made without training; `record_changes[i]` is merged into run i's metrics.json."""
    folder = root / experiment
    folder.mkdir(parents=True, exist_ok=True)
    rows = ["run_id,status,seed,accuracy"]
    for i in range(n):
        run_id = f"seed={i}_{i:08x}"
        run = folder / run_id
        run.mkdir()
        record = {"experiment": experiment, "run_id": run_id, "status": "ok", "seed": i, "matrix": {},
                  "metrics": {"accuracy": 0.5 + i / 100}, "params": 10, "train_seconds": 1.0, "seconds": 1.5,
                  "backend": "tensorflow", "started": f"2026-01-01T00:00:{i:02d}+00:00"}
        record.update((record_changes or {}).get(i, {}))
        (run / "metrics.json").write_text(json.dumps(record), encoding="utf-8")
        (run / "spec.yaml").write_text(f"name: {experiment}\nseed: {i}\nmodel: {{units: 4}}\n", encoding="utf-8")
        (run / "history.csv").write_text("epoch,loss,accuracy\n1,1.0,0.4\n2,0.8,0.5\n", encoding="utf-8")
        rows.append(f"{run_id},ok,{i},{0.5 + i / 100}")
    (folder / "runs.csv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    return folder


def store_runs(uri: str, experiment: str):
    """(client, every active MLflow run of `experiment`) in the store at `uri`."""
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=uri)
    found = client.get_experiment_by_name(experiment)
    return client, ([] if found is None else client.search_runs([found.experiment_id], max_results=1000))


# --------------------------------------------------------------------------- #
# The store is checked before anything trains
# --------------------------------------------------------------------------- #


def test_an_unknown_store_scheme_is_refused_before_anything_trains(tiny_spec, tmp_path, capsys):
    out = tmp_path / "out"
    code, _, err = run_cli(capsys, "run", tiny_spec, "--out", out, "--track", "mlflow=bogus-scheme://nowhere")
    assert code == 2, err
    assert err.strip().splitlines() == [
        "error: --track mlflow=bogus-scheme://nowhere: unknown store scheme 'bogus-scheme'; MLflow stores are a "
        "folder path, file://, http://, https://, mssql://, mysql://, postgresql://, sqlite:// or databricks"]
    assert not (out / "tiny").exists()  # no run folder: nothing trained
    with pytest.raises(SpecError, match="unknown store scheme 'bogus-scheme'"):
        seqkeras.run(tiny_spec, out=out, track="mlflow=bogus-scheme://nowhere")
    assert not (out / "tiny").exists()


def test_a_store_under_a_file_is_refused_before_anything_trains(tiny_spec, tmp_path, capsys):
    (tmp_path / "a-file").write_text("not a folder")
    uri = f"sqlite:///{tmp_path / 'a-file' / 'mlflow.db'}"
    started = time.monotonic()
    code, _, err = run_cli(capsys, "run", tiny_spec, "--out", tmp_path / "out", "--track", f"mlflow={uri}")
    assert code == 2, err
    assert err.strip() == f"error: --track mlflow={uri}: {tmp_path / 'a-file'} is not a folder"
    assert not (tmp_path / "out" / "tiny").exists() and time.monotonic() - started < 20


@pytest.mark.parametrize("make, message", [
    (lambda d: (d / "mlflow.db").mkdir(), "mlflow.db is a folder, not a database file"),
    (lambda d: (d / "mlflow.db").write_text("my notes, not a database\n"), "mlflow.db is not an SQLite database"),
    (lambda d: None, None),  # the store's own name for an in-memory database
])
def test_track_refuses_a_store_that_cannot_hold_a_database(tmp_path, capsys, make, message):
    fake_results(tmp_path / "results", "exp", 1)
    make(tmp_path)
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}" if message else "sqlite:///:memory:"
    code, out, err = run_cli(capsys, "track", tmp_path / "results", "--track", f"mlflow={uri}")
    assert code == 2, out + err
    assert err.startswith(f"error: --track mlflow={uri}: ") and len(err.strip().splitlines()) == 1
    assert (message or "an in-memory SQLite store keeps nothing") in err
    if message and "notes" in message:
        assert (tmp_path / "mlflow.db").read_text() == "my notes, not a database\n"  # not written over


@pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="needs Linux's /proc, where no one may create a file")
def test_an_unwritable_store_folder_fails_in_seconds_even_as_root(tmp_path, capsys):
    """MLflow retries a database it cannot open for about 100 s; the store's folder is tried first."""
    fake_results(tmp_path / "results", "exp", 1)
    uri = "sqlite:////proc/mlflow.db"  # no one, root neither, can create a file in /proc
    started = time.monotonic()
    code, out, err = run_cli(capsys, "track", tmp_path / "results", "--track", f"mlflow={uri}")
    assert code == 2, out + err
    assert err.strip().startswith(f"error: --track mlflow={uri}: the folder /proc is not writable")
    assert time.monotonic() - started < 20


@pytest.mark.skipif(AS_ROOT, reason="root writes into a folder of mode 0o555: the /proc test covers root")
def test_a_read_only_store_folder_fails_in_seconds(tiny_spec, tmp_path, capsys):
    store = tmp_path / "store"
    store.mkdir()
    store.chmod(0o555)
    try:
        uri = f"sqlite:///{store / 'mlflow.db'}"
        started = time.monotonic()
        code, _, err = run_cli(capsys, "run", tiny_spec, "--out", tmp_path / "out", "--track", f"mlflow={uri}")
        assert code == 2, err
        assert f"error: --track mlflow={uri}: the folder {store} is not writable" in err
        assert not (tmp_path / "out" / "tiny").exists() and time.monotonic() - started < 20
    finally:
        store.chmod(0o755)


# --------------------------------------------------------------------------- #
# Two sweeps, one new store
# --------------------------------------------------------------------------- #

WORKER = """
import json, sys, time
from pathlib import Path
from seqkeras.tracking.mlflow_store import parse_track
from seqkeras.tracking.mlflow_tracking import MlflowTracker
import mlflow.store.tracking.sqlalchemy_store  # the slow imports before the start line

root, ready, go = Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3])
ready.touch()
deadline = time.monotonic() + 120
while not go.exists() and time.monotonic() < deadline:
    time.sleep(0.001)
tracker = MlflowTracker(parse_track("mlflow", root), root)
problems = 0
for experiment in sys.argv[4:]:
    for run in sorted(p for p in (root / experiment).iterdir() if p.is_dir()):
        problem = tracker.log(json.loads((run / "metrics.json").read_text()), run)
        if problem:
            print(f"{experiment}/{run.name}: {problem}")
            problems += 1
print(f"{problems} problem(s)")
"""


def test_two_processes_logging_to_one_new_store_lose_nothing(tmp_path, capsys):
    """Each its own experiment and both the same one, starting together on a store that does not exist yet."""
    n = 6
    root = tmp_path / "results"
    for name in ("first", "second", "shared"):
        fake_results(root, name, n)
    go = tmp_path / "go"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    workers = [subprocess.Popen([sys.executable, "-c", WORKER, str(root), str(tmp_path / f"ready{i}"), str(go),
                                 own, "shared"], cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                text=True)
               for i, own in enumerate(("first", "second"))]
    deadline = time.monotonic() + 180
    while not all((tmp_path / f"ready{i}").exists() for i in range(2)) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not (root / "mlflow.db").exists()
    go.touch()  # both at once
    outputs = [worker.communicate(timeout=300)[0] for worker in workers]
    for worker, output in zip(workers, outputs):
        assert worker.returncode == 0 and output.strip().splitlines()[-1] == "0 problem(s)", output
    uri = f"sqlite:///{root / 'mlflow.db'}"
    for name in ("first", "second", "shared"):
        _, logged = store_runs(uri, name)
        assert sorted(run.data.tags["seqkeras.run_id"] for run in logged) == [f"seed={i}_{i:08x}" for i in range(n)]
        assert all(run.info.status == "FINISHED" and run.data.metrics["accuracy"] > 0 for run in logged)
    # The store is whole: `track` finds every record there and logs nothing twice.
    code, out, err = run_cli(capsys, "track", root, "--track", "mlflow")
    assert code == 0, out + err
    assert all(f"{name}: {n} of {n} run(s)" in out for name in ("first", "second", "shared")), out
    assert all(len(store_runs(uri, name)[1]) == n for name in ("first", "second", "shared"))


# --------------------------------------------------------------------------- #
# Names and files from a results folder that is not to be trusted
# --------------------------------------------------------------------------- #


def test_names_in_a_record_do_not_choose_the_experiment_or_where_its_artifacts_go(tmp_path, capsys):
    results = tmp_path / "results"
    fake_results(results, "exp", 5, record_changes={
        1: {"experiment": "../../escaped"},
        2: {"experiment": str(tmp_path / "absolute")},
        3: {"run_id": "../other/seed=0_00000000"},
        # Text that is no name but is only a value: it is quoted, and found again by a second `track`.
        4: {"started": "x' OR tags.`a` = 'b\\\\"},
    })
    uri = f"sqlite:///{tmp_path / 'store.db'}"
    code, out, err = run_cli(capsys, "track", results, "--track", f"mlflow={uri}")
    assert code == 1, out + err
    assert ("exp/seed=1_00000001: not logged (its metrics.json names the experiment '../../escaped', not 'exp', "
            "the folder it is in)") in out
    # A name from someone else's record is cut to 80 characters (errors.shown), as any value from such a file.
    planted = shown(str(tmp_path / "absolute"))
    assert f"exp/seed=2_00000002: not logged (its metrics.json names the experiment {planted}" in out
    assert ("exp/seed=3_00000003: not logged (its metrics.json names the run '../other/seed=0_00000000', "
            "not 'seed=3_00000003', its folder)") in out
    assert "exp: 2 of 5 run(s)" in out
    assert not (tmp_path / "escaped").exists() and not (tmp_path / "absolute").exists()
    client, logged = store_runs(uri, "exp")
    assert sorted(run.data.tags["seqkeras.run_id"] for run in logged) == ["seed=0_00000000", "seed=4_00000004"]
    assert [e.name for e in client.search_experiments() if e.name != "Default"] == ["exp"]
    for run in logged:
        assert run.info.artifact_uri.startswith((tmp_path / "results" / "mlflow-artifacts" / "exp").as_uri())
    assert run_cli(capsys, "track", results, "--track", f"mlflow={uri}").code == 1
    assert len(store_runs(uri, "exp")[1]) == 2  # logged once


def test_a_run_id_in_runs_csv_that_leaves_its_folder_is_not_read(tmp_path, capsys):
    results = tmp_path / "results"
    folder = fake_results(results, "exp", 1)
    fake_results(tmp_path / "elsewhere", "exp", 1)
    with open(folder / "runs.csv", "a", encoding="utf-8") as handle:
        handle.write("../../elsewhere/exp/seed=0_00000000,ok,7,0.9\n")
    code, out, err = run_cli(capsys, "track", results, "--track", f"mlflow=sqlite:///{tmp_path / 'store.db'}")
    assert code == 1, out + err
    assert ("exp/'../../elsewhere/exp/seed=0_00000000': not logged (its run id in runs.csv is not a plain name: "
            "'../../elsewhere/exp/seed=0_00000000' leaves its folder or is not a plain relative path)") in out
    assert len(store_runs(f"sqlite:///{tmp_path / 'store.db'}", "exp")[1]) == 1


def test_a_link_in_a_run_folder_is_not_uploaded_by_track(tmp_path, capsys):
    secret = tmp_path / "secret.txt"
    secret.write_text("a file of this machine\n")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "key").write_text("another\n")
    (outside / "history.csv").write_text("epoch,loss\n1,123.0\n")
    folder = fake_results(tmp_path / "results", "exp", 1)
    run = folder / "seed=0_00000000"
    (run / "plots").mkdir()
    (run / "plots" / "loss.png").write_bytes(b"\x89PNG not really")
    (run / "plots" / "linked.png").symlink_to(secret)
    (run / "secret.txt").symlink_to(secret)
    (run / "linked_folder").symlink_to(outside, target_is_directory=True)
    (run / "history.csv").unlink()
    (run / "history.csv").symlink_to(outside / "history.csv")
    os.mkfifo(run / "a_fifo")
    uri = f"sqlite:///{tmp_path / 'store.db'}"
    code, out, err = run_cli(capsys, "track", tmp_path / "results", "--track", f"mlflow={uri}")
    assert code == 0, out + err
    client, (logged,) = store_runs(uri, "exp")
    assert {a.path for a in client.list_artifacts(logged.info.run_id)} == {"metrics.json", "spec.yaml", "plots"}
    assert [a.path for a in client.list_artifacts(logged.info.run_id, "plots")] == ["plots/loss.png"]
    assert "epoch/loss" not in logged.data.metrics  # the linked history.csv was not read
    assert "a_fifo (not a regular file)" in err and "linked_folder (a symbolic link)" in err
    assert "plots/linked.png (a symbolic link)" in err and "secret.txt (a symbolic link)" in err
    assert "history.csv is a symbolic link" in err
    stored = list((tmp_path / "results" / "mlflow-artifacts").rglob("*"))
    assert not any(p.name in ("secret.txt", "linked.png", "key") for p in stored)
    assert not any(p.is_file() and p.read_bytes() == b"a file of this machine\n" for p in stored)


def test_a_link_in_a_run_folder_is_not_uploaded_by_run_track(tiny_spec, tmp_path, capsys):
    secret = tmp_path / "secret.txt"
    secret.write_text("a file of this machine\n")
    out = tmp_path / "out"
    args = ["run", tiny_spec, "--out", out, "--only", "seed=0", "--only", "model.cell=lstm"]
    assert run_cli(capsys, *args).code == 0
    (run,) = [p for p in (out / "tiny").iterdir() if p.is_dir()]
    (run / "notes.txt").symlink_to(secret)
    code, _, err = run_cli(capsys, *args, "--track", "mlflow")  # the reused record is logged
    assert code == 0, err
    client, (logged,) = store_runs(f"sqlite:///{out / 'mlflow.db'}", "tiny")
    artifacts = {a.path for a in client.list_artifacts(logged.info.run_id)}
    assert {"metrics.json", "spec.yaml", "history.csv"} <= artifacts and "notes.txt" not in artifacts
    assert f"tiny/{run.name}: not uploaded to the tracker: notes.txt (a symbolic link)" in err
