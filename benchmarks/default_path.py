"""The default path: the README's command with its defaults against TensorFlow with --jobs 2 (issue 20).

The workload is `experiments/compare/cells_long_range.yaml` at a reduced size:
all six models × the six tasks × three seeds (108 runs), each run 200 training
sequences × 2 epochs (`--set task.n_train=200 --set task.n_test=100 --set
train.epochs=2`). Two variants, each a fresh `seqkeras run` process on a fresh
results folder, process start-up included:

- the defaults: `seqkeras run experiments/compare/cells_long_range.yaml` (the
  backend and --jobs the suite chooses; `$KERAS_BACKEND` and `$SEQKERAS_JOBS`
  removed, as in a new shell);
- the same with `--backend tensorflow --jobs 2`, the fastest the suite ran
  before it chose for itself.

The variants take turns for `rounds` rounds; the ratio is the median of each
round's TensorFlow time over the defaults' time. Goal: ≥ 4×.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd
from seqkeras_command import QUIET_TENSORFLOW
from seqkeras_command import environment as users_environment

REPO = Path(__file__).resolve().parents[1]
SPEC = REPO / "experiments" / "compare" / "cells_long_range.yaml"
GOAL = 4.0  # TensorFlow --jobs 2 seconds / default seconds

REDUCED = ["--set", "task.n_train=200", "--set", "task.n_test=100", "--set", "train.epochs=2"]
# Tiny: one task and one seed of the same matrix (6 runs), to check that the benchmark runs.
TINY = [*REDUCED, "--only", "task.lag=5", "--only", "seed=0"]

DEFAULTS = ("the README command with its defaults", [])
TENSORFLOW = ("--backend tensorflow --jobs 2", ["--backend", "tensorflow", "--jobs", "2"])


# Runs the command as its child and says the peak resident memory of the largest process of its tree
# (getrusage's children: each process waited for, workers included) on stderr's last line, in KiB.
PEAK_MEMORY = ("import resource, subprocess, sys; code = subprocess.call(sys.argv[1:]); "
               "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, file=sys.stderr); sys.exit(code)")


def timed_run(out: Path, size: list[str], extra: list[str]) -> tuple[float, str, float]:
    """Seconds of one `seqkeras run`, its plan line (which says the backend and workers), and the
    peak memory of its largest process (MiB): with --jobs, a worker's."""
    environment = users_environment(**QUIET_TENSORFLOW)
    started = time.perf_counter()
    command = [sys.executable, "-m", "seqkeras", "run", str(SPEC), "--out", str(out), *size, *extra]
    result = subprocess.run([sys.executable, "-c", PEAK_MEMORY, *command],
                            cwd=REPO, env=environment, capture_output=True, text=True)
    seconds = time.perf_counter() - started
    # Exit status 1 is also a claim not reproduced, expected at this size: every run must have finished.
    runs = out / "cells-long-range" / "runs.csv"
    statuses = set(pd.read_csv(runs)["status"]) if runs.exists() else set()
    if result.returncode not in (0, 1) or statuses != {"ok"}:
        raise RuntimeError(f"seqkeras run {' '.join(extra)} failed:\n{result.stdout[-2000:]}{result.stderr[-2000:]}")
    plan = next((line for line in result.stdout.splitlines() if line.startswith("cells-long-range: ")), "")
    backend = next((line for line in result.stdout.splitlines() if line.startswith("backend: ")), "")
    peak = int(result.stderr.strip().splitlines()[-1]) / 1024
    return seconds, f"{backend.split(' (')[0]}; {plan.split(': ', 1)[-1]}".strip("; "), peak


def measure(tiny: bool = False, rounds: int | None = None) -> list[dict]:
    size = TINY if tiny else REDUCED
    rounds = rounds or 1
    seconds: dict[str, list[float]] = {DEFAULTS[0]: [], TENSORFLOW[0]: []}
    plans: dict[str, str] = {}
    peaks: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as folder:
        for round_ in range(rounds):
            for index, (name, extra) in enumerate((TENSORFLOW, DEFAULTS)):
                took, plans[name], peak = timed_run(Path(folder) / f"round{round_}-{index}", size, extra)
                peaks[name] = max(peak, peaks.get(name, 0.0))
                seconds[name].append(took)
    ratios = sorted(tf / default for tf, default in zip(seconds[TENSORFLOW[0]], seconds[DEFAULTS[0]]))
    ratio = statistics.median(ratios)
    spread = f", median of {rounds} rounds (ratios {ratios[0]:.2f}-{ratios[-1]:.2f})" if rounds > 1 else ""
    runs = "6 runs (one task, one seed)" if tiny else "108 runs of 200 sequences × 2 epochs"
    return [{
        "benchmark": "default path",
        "figure": f"cells_long_range, {runs}: the defaults ({plans[DEFAULTS[0]]}) vs "
                  f"{TENSORFLOW[0]}{spread}; peak memory of a worker {peaks[DEFAULTS[0]]:.0f} MiB "
                  f"(TensorFlow's {peaks[TENSORFLOW[0]]:.0f} MiB)",
        "value": round(statistics.median(seconds[DEFAULTS[0]]), 1),
        "unit": "s",
        "baseline": round(statistics.median(seconds[TENSORFLOW[0]]), 1),
        "ratio": round(ratio, 2),
        "goal": f"ratio >= {GOAL:g}",
        "met": bool(ratio >= GOAL),
    }]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tiny", action="store_true", help="6 runs: checks the benchmark runs, not speed")
    parser.add_argument("--rounds", type=int, default=None, help="rounds of both variants (default 1)")
    args = parser.parse_args()
    for row in measure(args.tiny, args.rounds):
        print(row)


if __name__ == "__main__":
    main()
