"""The command's compilation cache on JAX (seqkeras.backends.compile_cache): a seeds sweep with it and without it.

Issue 49 (fixed costs): on JAX a run's compiles are most of what a small run costs besides training, and every
new model compiled its programs again, a sweep's seeds too. The workload: the numbers sentence pairs
(plain_scripts' pairs file: a GRU encoder-decoder, 799 pairs) for 5 epochs at 3 seeds, `--backend jax --jobs 1`
(one process: each seed after the first can read what the one before compiled). The command with its cache
(the default) and with `$SEQKERAS_COMPILE_CACHE=off` take turns, 2 rounds (tiny: 2 seeds, 1 epoch, 1 round); the
figure is each one's median wall time, beside the mean seconds of the runs after the first. The runs' numbers
must be the same both ways.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from plain_scripts import pairs  # noqa: E402
from seqkeras_command import finished_run  # noqa: E402

GOAL = 1.2  # the sweep's wall time without the cache over with it
ROUNDS = 2


def sweep(spec: Path, out: Path, seeds: int, epochs: int, cache: str):
    """(wall seconds, runs.csv) of the seeds sweep on JAX, `$SEQKERAS_COMPILE_CACHE=cache`."""
    options = ["--backend", "jax", "--jobs", "1", "--set", f"seeds={list(range(seeds))}", "--set",
               f"train.epochs={epochs}"]
    return finished_run(spec, out, options, SEQKERAS_COMPILE_CACHE=cache)


def measure(tiny: bool = False) -> list[dict]:
    seeds, epochs, rounds = (2, 1, 1) if tiny else (3, 5, ROUNDS)
    walls: dict[str, list[float]] = {"on": [], "off": []}
    later: dict[str, list[float]] = {"on": [], "off": []}  # seconds of the runs after the first, each round
    results = {}
    with tempfile.TemporaryDirectory() as scratch:
        workload = pairs(Path(scratch), tiny)
        for round_ in range(rounds):
            for cache in walls:
                wall, runs = sweep(workload.spec, Path(scratch) / f"{cache}-{round_}", seeds, epochs, cache)
                walls[cache].append(wall)
                later[cache] += list(runs.sort_values("seed")["train_seconds"].iloc[1:])
                results[cache] = runs.sort_values("seed")["exact_match"].round(6).tolist()
    if results["on"] != results["off"]:
        raise RuntimeError(f"the cache changed the runs' exact match: {results['on']} against {results['off']}")
    on, off = statistics.median(walls["on"]), statistics.median(walls["off"])
    ratio = off / on
    return [{
        "benchmark": "compile cache",
        "figure": f"{seeds} seeds of the pairs file's GRU encoder-decoder × {epochs} epoch(s) on jax, --jobs 1, whole "
                  f"command: with the command's compilation cache vs $SEQKERAS_COMPILE_CACHE=off (median of "
                  f"{rounds} round(s), taking turns; the runs after the first trained in "
                  f"{statistics.mean(later['on']):.2f} s against {statistics.mean(later['off']):.2f} s; "
                  f"exact match {results['on']} both ways)",
        "value": round(on, 2), "unit": "s", "baseline": round(off, 2), "ratio": round(ratio, 2),
        "goal": f"ratio >= {GOAL:g}", "met": ratio >= GOAL,
    }]


if __name__ == "__main__":
    for row in measure(tiny="--tiny" in sys.argv):
        print(row["figure"], "→", row["value"], row["unit"], "ratio", row["ratio"])
