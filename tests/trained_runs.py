"""Tiny trained runs shared by a whole pytest session: each trained once, then handed out read-only or copied.

Training is most of a test's time. A model kind's tiny run (tests/model_kind_specs.py) or a small sweep is
the same for every test that starts from it, so `TrainedRuns` trains each the first time a test asks for it,
into the session's temporary folder, and later tests of the session reuse it:

    folder = trained_runs.run_folder(case)                 # read-only: the run folder itself
    folder = trained_runs.copied_run_folder(case, tmp_path)  # a test that writes into it gets its own copy

A test that checks training itself (what `run` writes, skips, resumes) still trains; this is for tests that
start from a finished run.

A model kind's one-run experiment is trained without its experiment's plots (`plots=False`): drawing and saving
the PNGs is a fifth of such a tiny run's CPU time, and the tests that start from a kind's run read its run
folder (the kept model, metrics.json, outputs), never its experiment's figures. Plots are the subject of their own
tests (tests/test_plots_report.py, and every test that runs a spec itself draws them); a spec given to
`experiment` (as the tiny sweep of tests/conftest.py) is trained with them, as `seqkeras.run` writes it.

Under pytest-xdist each worker is its own session: the workers share one root (tests/conftest.py) and a lock per
experiment, so the first worker that asks trains it and the others wait for it and read the same folder.
"""

from __future__ import annotations

import contextlib
import fcntl
import shutil
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any
from unittest import mock

import yaml

import seqkeras
from tests.model_kind_specs import KindCase


def only_run_folder(experiment: Path) -> Path:
    (folder,) = [path for path in experiment.iterdir() if path.is_dir()]
    return folder


class TrainedRuns:
    def __init__(self, root: Path, backend: str):
        self.root = root
        self.backend = backend
        self._experiments: dict[str, Path] = {}

    def experiment(self, spec: dict[str, Any] | str, *, plots: bool = True) -> Path:
        """The results folder of `spec` (a mapping, as `seqkeras.run` takes it, or a spec file's text, as
        tests/conftest.py's TINY_TRAINING_SPEC), trained on first use; without the experiment's plots where
        `plots` is false (a kind's one run: see above)."""
        if isinstance(spec, str):
            spec = yaml.safe_load(textwrap.dedent(spec))
        name = spec["name"]
        if name not in self._experiments:
            def train() -> None:
                with contextlib.nullcontext() if plots else mock.patch(
                        "seqkeras.execution.experiment.write_plots", lambda *args, **kwargs: []):
                    seqkeras.run(spec, out=self.root, backend=self.backend)

            self.once(name, train)
            self._experiments[name] = self.root / name
        return self._experiments[name]

    def once(self, name: str, make: Callable[[], None]) -> None:
        """Call `make` (which writes under `self.root`) the first time any worker of the session asks for `name`;
        a later call, in any worker, waits for that one to finish and returns."""
        done = self.root / f"{name}.trained"
        with open(self.root / f"{name}.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # another worker may be making it: wait, then reuse
            if not done.exists():
                make()
                done.touch()

    def run_folder(self, case: KindCase) -> Path:
        """The run folder of a model kind's one-run case. Shared: a test must not write into it."""
        return only_run_folder(self.experiment(case.spec(), plots=False))

    def copied_experiment(self, spec: dict[str, Any] | str, destination: Path, *, plots: bool = True) -> Path:
        """A copy of the experiment's results folder as `destination/<name>`, for a test that writes into it."""
        trained = self.experiment(spec, plots=plots)
        copy = destination / trained.name
        shutil.copytree(trained, copy)
        return copy

    def copied_run_folder(self, case: KindCase, destination: Path) -> Path:
        """A copy of the case's results folder under `destination`, and the run folder inside it."""
        return only_run_folder(self.copied_experiment(case.spec(), destination, plots=False))
