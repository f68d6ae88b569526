"""Sweep throughput: runs per minute for 24 tiny runs, serial vs --jobs 2 vs Ray (2 CPUs).

Each variant is a separate `seqkeras run` process on a fresh results folder, run
one after another in this invocation, so the ratios compare like with like on
the same (possibly busy) machine. Process start-up (importing TensorFlow) is
included: it is part of what a user waits for.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

SPEC = """
version: 1
name: sweep-bench
task: {{name: delayed_recall, lag: 10, n_train: {n_train}, n_test: 64}}
model: {{kind: classifier, units: 8, embedding_dim: 8}}
train: {{epochs: 2, batch_size: 32, verbose: 0}}
matrix:
  model.cell: [simple_rnn, lstm, gru]
  task.lag: [5, 10]
seeds: {seeds}
"""


def timed_run(spec: Path, out: Path, *extra: str) -> float:
    started = time.perf_counter()
    environment = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"}
    result = subprocess.run(
        [sys.executable, "-m", "seqkeras", "run", str(spec), "--out", str(out), *extra],
        env=environment, capture_output=True, text=True,
    )
    if result.returncode != 0:
        raise RuntimeError(f"seqkeras run {' '.join(extra)} failed:\n{result.stdout[-2000:]}{result.stderr[-2000:]}")
    return time.perf_counter() - started


def measure(runs_per_axis_seed: int, n_train: int) -> list[dict]:
    seeds = list(range(runs_per_axis_seed))
    runs = 6 * len(seeds)
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        spec = Path(folder) / "sweep.yaml"
        spec.write_text(SPEC.format(n_train=n_train, seeds=seeds))
        variants = [("serial (--jobs 1)", []), ("--jobs 2", ["--jobs", "2"])]
        if importlib.util.find_spec("ray"):
            variants.append(("ray, 2 CPUs", ["--executor", "ray", "--cpus-per-run", "1"]))
        baseline = None
        for name, extra in variants:
            seconds = timed_run(spec, Path(folder) / name.replace(" ", "_"), *extra)
            baseline = baseline or seconds
            rows.append({
                "benchmark": "sweep throughput",
                "variant": name,
                "runs": runs,
                "seconds": round(seconds, 1),
                "runs_per_minute": round(runs / seconds * 60, 1),
                "ratio_vs_serial": round(baseline / seconds, 2),
            })
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seeds", type=int, default=4, help="seeds per matrix point (6 points; default 4 → 24 runs)")
    parser.add_argument("--n-train", type=int, default=256)
    args = parser.parse_args()
    for row in measure(args.seeds, args.n_train):
        print(row)


if __name__ == "__main__":
    main()
