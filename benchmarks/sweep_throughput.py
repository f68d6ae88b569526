"""Sweep throughput: a 3 cells × 3 seeds matrix of small runs, a plain loop against side by side.

Issue 9, goal 2: the nine runs complete at least 1.5× faster side by side
(`--jobs 2`: two worker processes, each with its own TensorFlow and one core's
threads) than one after another in a plain loop (`--jobs 1`: the runs in turn,
in one process). With Ray installed, Ray (one CPU per run) is measured too.

Each variant is a separate `seqkeras run` process on a fresh results folder,
so process start-up (importing TensorFlow) is included: it is part of what a
user waits for. The variants take turns (plain loop, side by side, ...), for
`rounds` rounds (three by default), so that a change in the machine's load hits
both sides alike: a variant's ratio is the median over the rounds of the plain
loop's time over its own in the same round, and its seconds are the median of
its rounds'. (Two rounds, compared as medians of each side's times, gave 1.42×
to 1.84× for the small size from one `make bench` to the next.)

Two sizes: 512 and 4,096 training sequences per run (about 2 s and 4 s a run
in the plain loop; the figure gives the measured mean). Most of a small run is
TensorFlow tracing its train and predict functions. Side by side pays some
costs twice that a plain loop pays once, on the critical path: each worker
imports TensorFlow (3-5 s), and nine runs on two workers end when the one with
five has finished. The shorter the runs, the larger these fixed costs are
against the sweep, so both sizes are reported.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

GOAL = 1.5  # plain-loop seconds / side-by-side seconds

SPEC = """
version: 1
name: sweep-bench
task: {{name: delayed_recall, lag: 10, n_train: {n_train}, n_test: 64}}
model: {{kind: classifier, units: 8, embedding_dim: 8}}
train: {{epochs: {epochs}, batch_size: 32, verbose: 0}}
matrix:
  model.cell: [simple_rnn, lstm, gru]
seeds: {seeds}
"""

PLAIN_LOOP = ("plain loop (--jobs 1)", ["--jobs", "1"])
SIDE_BY_SIDE = [("side by side (--jobs 2)", ["--jobs", "2"])]
RAY = ("Ray, 1 CPU per run", ["--executor", "ray", "--cpus-per-run", "1"])


def timed_run(spec: Path, out: Path, *extra: str) -> float:
    environment = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"}
    started = time.perf_counter()
    result = subprocess.run(
        # On TensorFlow, as measured since issue 9 (benchmarks/default_path.py measures the default backend).
        [sys.executable, "-m", "seqkeras", "run", str(spec), "--out", str(out), "--backend", "tensorflow", *extra],
        env=environment, capture_output=True, text=True,
    )
    if result.returncode != 0:
        raise RuntimeError(f"seqkeras run {' '.join(extra)} failed:\n{result.stdout[-2000:]}{result.stderr[-2000:]}")
    return time.perf_counter() - started


# (training sequences, epochs, whether Ray is measured too: its start-up is the same at both sizes)
SIZES = [(512, 3, True), (4096, 3, False)]
TINY_SIZES = [(32, 1, False)]


def measure(tiny: bool = False, rounds: int | None = None, ray: bool | None = None) -> list[dict]:
    """3 cells × 3 seeds at each size (tiny: × 1 seed, one tiny size); Ray only when installed and not tiny."""
    seeds = [0] if tiny else [0, 1, 2]
    rounds = rounds or (1 if tiny else 3)
    if ray is None:
        ray = not tiny and importlib.util.find_spec("ray") is not None
    rows = []
    for n_train, epochs, with_ray in TINY_SIZES if tiny else SIZES:
        variants = [PLAIN_LOOP, *SIDE_BY_SIDE, *([RAY] if ray and with_ray else [])]
        rows += measure_size(seeds, n_train, epochs, variants, rounds)
    return rows


def mean_run_seconds(out: Path) -> float:
    """How long the runs of one `seqkeras run` took on average, from their records."""
    records = [json.loads(path.read_text()) for path in out.glob("*/*/metrics.json")]
    return statistics.mean(record["seconds"] for record in records)


def measure_size(seeds: list[int], n_train: int, epochs: int, variants, rounds: int) -> list[dict]:
    runs = 3 * len(seeds)
    seconds: dict[str, list[float]] = {name: [] for name, _ in variants}
    run_seconds: list[float] = []  # a run's own time, in the plain loop
    with tempfile.TemporaryDirectory() as folder:
        spec = Path(folder) / "sweep.yaml"
        spec.write_text(SPEC.format(n_train=n_train, epochs=epochs, seeds=seeds))
        for round_ in range(rounds):
            for index, (name, extra) in enumerate(variants):
                out = Path(folder) / f"round{round_}-variant{index}"
                seconds[name].append(timed_run(spec, out, *extra))
                if (name, extra) == PLAIN_LOOP:
                    run_seconds.append(mean_run_seconds(out))
    baseline = statistics.median(seconds[PLAIN_LOOP[0]])
    rows = []
    for name, _ in variants[1:]:
        # Each round's plain loop against this variant in the same round, then the median.
        ratios = sorted(plain / own for plain, own in zip(seconds[PLAIN_LOOP[0]], seconds[name]))
        ratio = statistics.median(ratios)
        spread = f" (ratios {ratios[0]:.2f}-{ratios[-1]:.2f})" if rounds > 1 else ""
        rows.append({
            "benchmark": "sweep throughput",
            "figure": f"3 cells × {len(seeds)} seeds ({runs} runs of {n_train} sequences × {epochs} epochs, "
                      f"{statistics.median(run_seconds):.1f} s each), {name} vs a plain loop (--jobs 1), "
                      f"median of {rounds} rounds{spread}",
            "value": round(statistics.median(seconds[name]), 1),
            "unit": "s",
            "baseline": round(baseline, 1),
            "ratio": round(ratio, 2),
            "goal": f"ratio >= {GOAL}",
            "met": bool(ratio >= GOAL),
        })
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tiny", action="store_true", help="smallest sizes: checks the benchmark runs, not speed")
    parser.add_argument("--rounds", type=int, default=None, help="rounds of every variant (default 3; tiny 1)")
    parser.add_argument("--no-ray", action="store_true", help="skip the Ray variant even when Ray is installed")
    args = parser.parse_args()
    for row in measure(args.tiny, args.rounds, ray=False if args.no_ray else None):
        print(row)


if __name__ == "__main__":
    main()
