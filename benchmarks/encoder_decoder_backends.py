"""Encoder-decoders on the default path against each installed backend (issue 49).

The workload is the Keras addition example's setting
(`experiments/published/keras_addition.yaml`: 45,000 questions, one-hot characters,
LSTM(128) encoder and decoder, batch 32), the question reversed, seed 0, for `epochs`
epochs (29 in the example; 3 by default here: the per-epoch cost at the full data, with
JAX's compile once). The spec's `backend: tensorflow` (the backend its committed results
were computed on) is left out of a copy, so that the default command chooses for itself.

Variants, taking turns for three rounds, each a fresh `seqkeras run` process on a fresh results
folder, process start-up included: the command with its defaults (`--backend auto`: execution.sweep.auto_backend),
and `--backend <name>` for each installed backend. The figure is the default's wall time (its best
round); the ratio, the fastest backend's best over the default's. Goal: ≥ 0.95 (the default is within 5% of
the fastest). The figure's text gives each backend's time and the training seconds runs.csv records.

    .venv/bin/python benchmarks/encoder_decoder_backends.py [--epochs 29] [--tiny]
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from seqkeras_command import taking_turns  # noqa: E402

SPEC = HERE.parent / "experiments" / "published" / "keras_addition.yaml"
GOAL = 0.95  # fastest backend's seconds / the default's
BACKENDS = ("torch", "jax", "tensorflow")
EPOCHS = 3
ROUNDS = 3
ONE_RUN = ["--only", "task.reverse_source=true", "--only", "seed=0"]
# Tiny: 500 questions, 1 epoch, one round: checks that the benchmark runs, not speed.
TINY = ["--set", "task.n_train=500", "--set", "task.n_test=100", "--set", "train.epochs=1"]


def measure(tiny: bool = False, epochs: int = EPOCHS, rounds: int = ROUNDS) -> list[dict]:
    size = TINY if tiny else ["--set", f"train.epochs={epochs}"]
    rounds = 1 if tiny else rounds
    installed = [name for name in BACKENDS if importlib.util.find_spec(name)]
    variants = {name: [*ONE_RUN, *size, *options]
                for name, options in {"default": [], **{name: ["--backend", name] for name in installed}}.items()}
    # Per variant and round: (wall seconds, training seconds, the backend it ran on).
    measured = taking_turns(SPEC, variants, rounds, lambda wall, runs, _: (
        wall, float(runs["train_seconds"][0]), str(runs["backend"][0])))
    walls = {name: [wall for wall, _, _ in rounds_] for name, rounds_ in measured.items()}
    training = {name: [seconds for _, seconds, _ in rounds_] for name, rounds_ in measured.items()}
    ran_on = measured["default"][0][2]
    best = {name: min(seconds) for name, seconds in walls.items()}  # each variant's least disturbed round
    fastest = min(installed, key=best.get)
    ratio = best[fastest] / best["default"]
    each = ", ".join(f"{name} {best[name]:.1f} s (training {min(training[name]):.1f} s)" for name in installed)
    setting = "500 questions × 1 epoch" if tiny else f"45,000 questions × {epochs} epochs"
    return [{
        "benchmark": "encoder-decoder backends",
        "figure": f"the Keras addition example's setting ({setting}, LSTM 128, one run): the default (ran on "
                  f"{ran_on}) vs the fastest installed backend, {fastest}, best of {rounds} round(s) each; whole "
                  f"commands: {each}",
        "value": round(best["default"], 1),
        "unit": "s",
        "baseline": round(best[fastest], 1),
        "ratio": round(ratio, 2),
        "goal": f"ratio >= {GOAL:g}",
        "met": bool(ratio >= GOAL),
    }]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tiny", action="store_true", help="500 questions × 1 epoch: checks the benchmark runs")
    parser.add_argument("--epochs", type=int, default=EPOCHS, help=f"epochs per run (default {EPOCHS}; 29 published)")
    parser.add_argument("--rounds", type=int, default=ROUNDS, help=f"rounds of every variant (default {ROUNDS})")
    args = parser.parse_args()
    for row in measure(args.tiny, args.epochs, args.rounds):
        print(row)


if __name__ == "__main__":
    main()
