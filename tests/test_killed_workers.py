"""A worker process of `--jobs 2` killed for real (SIGKILL, as the out-of-memory killer sends) while it trains: only
its own run fails, saying so, the runs queued behind it go on in a new pool, and the command ends with its summary
and exit status; a killed tuning trial is trained again and does not count against the budget."""

from __future__ import annotations

import json
import os
import signal
import threading
import time
from pathlib import Path

import pandas as pd
import pytest

from tests.helpers import run_cli

# Long enough (a second or two of training) that a worker is still training when it is killed. One trial in
# flight at a time (its budget is 1), then the chosen setting's one run: each new worker imports a backend
# (5-10 s of CPU), and this way the command starts three, not five.
TUNED = """
    version: 1
    name: killed
    task: {name: delayed_recall, lag: 3, n_train: 64, n_test: 16}
    model: {kind: classifier, cell: gru, units: 4, embedding_dim: 4}
    train: {epochs: 20, batch_size: 16, verbose: 0, validation_split: 0.25}
    seeds: [0]
    tune:
      search:
        train.optimizer.learning_rate: {log_uniform: [1.0e-3, 1.0e-1]}
      trials: 1
      pruner: none
    table: {rows: seed, value: accuracy}
"""


def lock_holder(lock: Path) -> int | None:
    """The process that holds a run folder's lock (an flock, listed in /proc/locks by its file's inode)."""
    try:
        inode = lock.stat().st_ino
        lines = Path("/proc/locks").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        parts = line.split()
        if len(parts) > 5 and parts[1] == "FLOCK" and int(parts[5].split(":")[2]) == inode:
            return int(parts[4])
    return None


def is_my_child(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return int(stat.rsplit(")", 1)[1].split()[1]) == os.getpid()


class Killer(threading.Thread):
    """Kills (SIGKILL) the first worker of this process seen training a run whose folder matches `pattern`, once it
    has trained a moment; `killed` is that run's folder."""

    def __init__(self, root: Path, pattern: str):
        super().__init__(daemon=True)
        self.root, self.pattern = root, pattern
        self.killed: Path | None = None
        self.done = threading.Event()

    def run(self) -> None:
        deadline = time.monotonic() + 120
        while not self.done.is_set() and time.monotonic() < deadline:
            for lock in sorted(self.root.glob(f"{self.pattern}/.lock")):
                pid = lock_holder(lock)
                if pid is None or not is_my_child(pid):  # never this process (it writes records), never another's
                    continue
                time.sleep(0.2)  # into its training
                if lock_holder(lock) == pid:
                    os.kill(pid, signal.SIGKILL)
                    self.killed = lock.parent
                    return
            time.sleep(0.05)

    def __enter__(self) -> Killer:
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.done.set()
        self.join()


pytestmark = pytest.mark.skipif(not Path("/proc/locks").exists(), reason="finds a run's worker in /proc/locks")


@pytest.mark.slow
def test_a_killed_worker_costs_only_its_own_trial_or_run(write_spec, tmp_path, capsys):
    """One command kills a trial's worker, then a run's: the killed trial's values are trained again in a new
    worker, out of the budget; the killed run fails alone, with the usual summary and exit status."""
    out = tmp_path / "r"
    spec = write_spec(TUNED)
    with Killer(out / "killed" / "tuning", "trial-*") as trial_killer, Killer(out / "killed", "seed=*") as run_killer:
        code, stdout, stderr = run_cli(capsys, "run", spec, "--out", out, "--jobs", "2")
    assert trial_killer.killed is not None and run_killer.killed is not None, stdout + stderr
    assert "Traceback" not in stdout + stderr and "BrokenProcessPool" not in stdout + stderr
    assert "new worker processes take the runs left" in stderr

    # The killed trial is left out of the budget and its values trained again: a rerun draws no trial in its place.
    assert "its values are trained again (it does not count against the budget)" in stdout
    trials = pd.read_csv(out / "killed" / "tuning" / "trials.csv")
    killed = trials[trials.run_id == trial_killer.killed.name]
    assert list(killed.state) == ["fail (interrupted)"] and "SIGKILL" in killed.error.iloc[0]
    assert list(trials.state).count("complete") == 1

    # The killed run fails, saying how its worker ended; the usual summary and exit status.
    assert code == 1, stdout + stderr
    assert "1 runs: 0 ok, 1 failed." in stdout and "1 failed run(s)" in stdout + stderr
    runs = pd.read_csv(out / "killed" / "runs.csv")
    assert list(runs[runs.status == "failed"].run_id) == [run_killer.killed.name]
    assert "was killed by SIGKILL (signal 9: out of memory?)" in runs[runs.status == "failed"].error.iloc[0]
    record = json.loads((run_killer.killed / "metrics.json").read_text())
    assert record["status"] == "failed" and record["worker_died"] is True

    code, stdout, _ = run_cli(capsys, "run", spec, "--out", out, "--dry-run")
    assert code == 0 and "(1 of 1 done" in stdout


def test_a_trial_whose_values_kill_their_worker_again_counts_as_failed(tmp_path):
    """The values of a killed trial are trained once more; when their worker dies again, they are what kills it
    (too large a model), and the trial counts: tuning ends instead of drawing them forever."""
    import optuna

    from seqkeras.execution.executors import WORKER_DIED
    from seqkeras.execution.tuning import Trials
    from seqkeras.tuning.study import spent

    study = optuna.create_study(storage=f"sqlite:///{tmp_path / 'studies.db'}", study_name="s")
    distributions = {"x": optuna.distributions.FloatDistribution(0.0, 1.0)}
    first = study.ask(distributions)
    point = type("Point", (), {"study": study})()
    trials = Trials.__new__(Trials)  # train_again reads only the point's study
    died = {"status": "failed", "error": "its worker process 1 was killed by SIGKILL", WORKER_DIED: True}
    assert trials.train_again(point, first.number, died) is True
    assert spent(study) == 0  # queued again, not counted
    again = study.ask(distributions)
    assert again.params == first.params
    assert trials.train_again(point, again.number, died) is False  # told as failed by the caller, and counted
