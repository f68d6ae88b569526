"""`seqkeras run` as a benchmark runs it: a process of its own, on a fresh results folder, its wall time measured."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path


# TensorFlow's C++ log lines, left out of a command whose output is read, not shown.
QUIET_TENSORFLOW = {"TF_CPP_MIN_LOG_LEVEL": "2"}


def environment(**settings: str) -> dict[str, str]:
    """This environment less what would choose the backend or the workers for the command: it runs with the
    defaults a user gets; then `settings`."""
    return {**{k: v for k, v in os.environ.items() if k not in ("KERAS_BACKEND", "SEQKERAS_JOBS")}, **settings}


def timed_run(spec: Path, out: Path) -> float:
    """`seqkeras run SPEC --out OUT --jobs 1`, its wall seconds; a failed command raises with the end of its
    output. One run at a time: each run's seconds are its own, not shared with a run beside it."""
    started = time.perf_counter()
    result = subprocess.run([sys.executable, "-m", "seqkeras", "run", str(spec), "--out", str(out), "--jobs", "1"],
                            env=environment(), capture_output=True, text=True)
    wall = time.perf_counter() - started
    if result.returncode != 0:
        raise RuntimeError(f"seqkeras run failed:\n{result.stdout[-2000:]}{result.stderr[-2000:]}")
    return wall


def spec_without_backend(spec: Path, folder: Path) -> Path:
    """A copy of `spec` in `folder` without its `backend:` (the backend its committed results were computed on),
    which would otherwise decide the backend for the command."""
    import yaml

    document = yaml.safe_load(spec.read_text(encoding="utf-8"))
    document.pop("backend", None)
    path = folder / spec.name
    path.write_text(yaml.safe_dump(document, sort_keys=False), encoding="utf-8")
    return path


def finished_run(spec: Path, out: Path, options: list[str], **settings: str):
    """`seqkeras run SPEC --out OUT OPTIONS`: its wall seconds and its runs.csv (pandas), every run finished (exit
    status 1 is a claim not reproduced, expected at a benchmark's short budget); a failed run raises. `settings`:
    environment variables for the command (`environment`)."""
    import pandas as pd
    import yaml

    started = time.perf_counter()
    result = subprocess.run([sys.executable, "-m", "seqkeras", "run", str(spec), "--out", str(out), *options],
                            env=environment(**QUIET_TENSORFLOW, **settings), capture_output=True, text=True)
    wall = time.perf_counter() - started
    runs_csv = out / yaml.safe_load(spec.read_text(encoding="utf-8"))["name"] / "runs.csv"
    runs = pd.read_csv(runs_csv) if runs_csv.exists() else None
    if result.returncode not in (0, 1) or runs is None or set(runs["status"]) != {"ok"}:
        raise RuntimeError(f"seqkeras run {' '.join(options)} failed:\n{result.stdout[-2000:]}{result.stderr[-2000:]}")
    return wall, runs


def taking_turns(spec: Path, variants: dict[str, list[str]], rounds: int, read) -> dict[str, list]:
    """Each variant's `seqkeras run` (`finished_run` with its options) of a copy of `spec` without its backend, the
    variants taking turns for `rounds` rounds, so that whatever else loads the machine loads them all; each on a
    fresh results folder. Per variant, each round's `read(wall seconds, runs.csv, the results folder)`."""
    import tempfile

    measured: dict[str, list] = {name: [] for name in variants}
    with tempfile.TemporaryDirectory() as folder:
        copy = spec_without_backend(spec, Path(folder))
        for round_ in range(rounds):
            for name, options in variants.items():
                out = Path(folder) / f"{name}-{round_}"
                measured[name].append(read(*finished_run(copy, out, options), out))
    return measured
