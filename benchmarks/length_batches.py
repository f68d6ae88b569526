"""Batches by length against shuffled batches, on real sentences (issue 49).

The workload is `experiments/compare/sentiment.yaml`'s LSTM (Rotten Tomatoes sentences, 64 units, 3 epochs,
batch 64), seed 0, on the default backend (the spec's `backend: tensorflow`, where its committed results were
computed, left out of a copy): `seqkeras run` with `--set train.batches=shuffled` and with `by_length`, each a
fresh process on a fresh results folder, taking turns for two rounds. The figure is the training seconds
runs.csv records with `by_length` (best round); the ratio, `shuffled`'s over it. Goal: ≥ 1.5. The text gives
both runs' test accuracy (one seed: the seeds' spread is about 0.01) and the share of padding the data card gives.

    .venv/bin/python benchmarks/length_batches.py [--tiny]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from seqkeras_command import taking_turns  # noqa: E402

SPEC = HERE.parent / "experiments" / "compare" / "sentiment.yaml"
GOAL = 1.5  # shuffled's training seconds / by_length's
ROUNDS = 2
ONE_RUN = ["--only", "model.cell=lstm", "--only", "model.bidirectional=false", "--only", "seed=0", "--jobs", "1"]
# Tiny: one epoch, one round: checks that the benchmark runs, not speed.
TINY = ["--set", "train.epochs=1"]


def measure(tiny: bool = False, rounds: int = ROUNDS) -> list[dict]:
    rounds = 1 if tiny else rounds
    variants = {batches: [*ONE_RUN, *(TINY if tiny else []), "--set", f"train.batches={batches}"]
                for batches in ("shuffled", "by_length")}

    def read(_, runs, out):
        """(training seconds, test accuracy, backend, the data card's padding shares)."""
        card = json.loads((out / "sentiment" / runs["run_id"][0] / "data_card.json").read_text(encoding="utf-8"))
        return float(runs["train_seconds"][0]), float(runs["accuracy"][0]), str(runs["backend"][0]), card.get("padding")

    measured = taking_turns(SPEC, variants, rounds, read)
    seconds = {batches: [row[0] for row in rows] for batches, rows in measured.items()}
    accuracy = {batches: rows[-1][1] for batches, rows in measured.items()}
    backend, padding = measured["by_length"][-1][2], measured["by_length"][-1][3]
    best = {batches: min(values) for batches, values in seconds.items()}
    ratio = best["shuffled"] / best["by_length"]
    size = "1 epoch" if tiny else "3 epochs"
    return [{
        "benchmark": "length batches",
        "figure": f"sentiment.yaml's LSTM on {backend} ({size}, seed 0), training seconds by_length vs shuffled, "
                  f"best of {rounds} round(s); test accuracy {accuracy['by_length']:.3f} vs "
                  f"{accuracy['shuffled']:.3f}; padding {100 * padding['by_length']:.0f}% of the token slots vs "
                  f"{100 * padding['shuffled']:.0f}%",
        "value": round(best["by_length"], 2),
        "unit": "s",
        "baseline": round(best["shuffled"], 2),
        "ratio": round(ratio, 2),
        "goal": f"ratio >= {GOAL:g}",
        "met": bool(ratio >= GOAL),
    }]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tiny", action="store_true", help="1 epoch, 1 round: checks the benchmark runs")
    parser.add_argument("--rounds", type=int, default=ROUNDS, help=f"rounds of both variants (default {ROUNDS})")
    args = parser.parse_args()
    for row in measure(args.tiny, args.rounds):
        print(row)


if __name__ == "__main__":
    main()
