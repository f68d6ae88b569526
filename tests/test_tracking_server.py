"""`run --track` against a real MLflow tracking server (`mlflow server`, started here), with runs in worker
processes: each run logged live by the worker that trains it, its kept model an MLflow logged model that
MLflow's own loader reads back from the server. A system test: it starts a server and two workers.

The same checks on a file store, in one process, are in tests/test_tracking.py (`make test`'s tier).
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path

import pandas as pd
import pytest

import seqkeras
from seqkeras.cli import main

pytest.importorskip("mlflow", reason="pip install -r requirements-tracking.txt")
pytestmark = pytest.mark.system


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture
def mlflow_server(tmp_path):
    """The URI of an `mlflow server` on this machine, its store and artifacts under tmp_path; stopped after."""
    port = free_port()
    store = tmp_path / "server"
    store.mkdir()
    server = subprocess.Popen(
        [sys.executable, "-m", "mlflow", "server", "--host", "127.0.0.1", "--port", str(port), "--workers", "1",
         "--backend-store-uri", f"sqlite:///{store / 'mlflow.db'}", "--artifacts-destination",
         (store / "artifacts").as_uri()],
        cwd=store, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, start_new_session=True)
    uri = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    try:
        while time.monotonic() < deadline:
            if server.poll() is not None:
                pytest.fail(f"mlflow server ended: {server.stderr.read()[-2000:]}")
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1):
                    break
            except OSError:
                time.sleep(0.5)
        else:
            pytest.fail("mlflow server did not start within 120 s")
        yield uri
    finally:
        server.terminate()
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()


def test_runs_in_workers_are_logged_live_to_a_tracking_server_with_their_models(tiny_spec, tmp_path, capsys,
                                                                                monkeypatch, mlflow_server):
    import mlflow
    import numpy as np
    from mlflow.tracking import MlflowClient

    monkeypatch.setenv("SEQKERAS_JOBS", "2")  # two worker processes, each logging the run it trains
    (tmp_path / "cwd").mkdir()
    monkeypatch.chdir(tmp_path / "cwd")
    code = main(["run", str(tiny_spec), "--out", str(tmp_path / "results"), "--only", "seed=0",
                 "--set", "train.epochs=3", "--set", "train.keep_model=true", "--track", f"mlflow={mlflow_server}"])
    out, err = capsys.readouterr()
    assert code == 0, out + err
    assert "in 2 worker processes" in out and "not logged" not in out
    assert list((tmp_path / "cwd").iterdir()) == []  # nothing written where the command was started
    client = MlflowClient(tracking_uri=mlflow_server)
    experiment = client.get_experiment_by_name("tiny")
    runs = client.search_runs([experiment.experiment_id])
    runs_csv = pd.read_csv(tmp_path / "results" / "tiny" / "runs.csv")
    assert sorted(run.data.tags["seqkeras.run_id"] for run in runs) == sorted(runs_csv["run_id"])
    workers = set()
    for run in runs:
        folder = tmp_path / "results" / "tiny" / run.data.tags["seqkeras.run_id"]
        record = json.loads((folder / "metrics.json").read_text())
        workers.add(record["worker"]["pid"])
        assert run.info.status == "FINISHED"
        started = datetime.fromisoformat(record["started"]).timestamp() * 1000
        assert run.info.start_time == pytest.approx(started, abs=1)  # opened as the run started, in its worker
        # Its duration is the run's (the record's start is whole seconds: up to one more).
        assert record["seconds"] * 1000 - 100 <= run.info.end_time - run.info.start_time
        assert run.info.end_time - run.info.start_time <= record["seconds"] * 1000 + 1500
        epochs = client.get_metric_history(run.info.run_id, "epoch/loss")
        assert [m.step for m in epochs] == [1, 2, 3]
        assert all(run.info.start_time <= m.timestamp <= run.info.end_time for m in epochs)
        (model,) = client.search_logged_models([experiment.experiment_id],
                                               filter_string=f"source_run_id = '{run.info.run_id}'")
        mlflow.set_tracking_uri(mlflow_server)
        try:
            loaded = mlflow.keras.load_model(f"models:/{model.model_id}")
        finally:
            mlflow.set_tracking_uri(None)
        kept = seqkeras.load_model(folder)
        ids = kept.encode(["1 2 3 4 5"]).ids.astype("int32")
        np.testing.assert_allclose(loaded.predict(ids, verbose=0), kept.model.predict(ids, verbose=0), atol=1e-6)
    assert len(workers) == 2 and os.getpid() not in workers  # trained, and logged, in the workers
    # Results that exist, logged after the fact to the same server: found there, nothing logged twice.
    assert main(["track", str(tmp_path / "results"), "--track", f"mlflow={mlflow_server}"]) == 0
    assert len(client.search_runs([experiment.experiment_id])) == len(runs)
    assert Path(tmp_path / "results" / "mlflow.db").exists() is False  # the server's store, not a default one
