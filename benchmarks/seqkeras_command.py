"""`seqkeras run` as a benchmark runs it: a process of its own, on a fresh results folder, its wall time measured."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path


def environment() -> dict[str, str]:
    """This environment less what would choose the backend or the workers for the command: it runs with the
    defaults a user gets."""
    return {k: v for k, v in os.environ.items() if k not in ("KERAS_BACKEND", "SEQKERAS_JOBS")}


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
