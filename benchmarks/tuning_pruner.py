"""Tuning's pruner (issue 33, item 5): what the median pruner saves a small study, and what it costs its best trial.

A fixed study, run with `tune.pruner: median` and with `pruner: none`, side by side: an LSTM classifier on
`delayed_recall` whose learning rate is searched over four decades (log-uniform 1e-4 to 1), wide enough that
many trials are hopeless (too small a rate has not left chance when the epochs run out, too large a one
diverges), each trial a fair number of epochs on a small data set. Each variant is a `seqkeras run` process of
its own on a fresh results folder, and the two take turns over several tuning seeds (`tune.seed`: the
sampler's draws and the seed each trial trains with).

1. Trial time: the sum of the study's trials' `seconds` (tuning/trials.csv: each trial's wall time, data and
   model build included) with the pruner over without, all tuning seeds together. Goal: at most 0.5.
2. Best objective: the study's best validation loss (tuning/best.csv), mean over tuning seeds, with the pruner
   against without. Met when the difference of the two means is within the seed spread, taken as the larger of
   the two sample standard deviations over tuning seeds (a difference smaller than what one variant varies by
   from seed to seed cannot be told from the choice of seed).

The sampler is `random`, not the default TPE, because it makes the comparison paired: the suite seeds a
study's sampler from the tuning seed and the number of trials drawn so far, so with the random sampler trial k
draws the same learning rate in both studies, and it trains with the same seed. The two studies then differ
only where the pruner stopped a trial: the pruned study's best can only be worse by the trial the pruner
stopped that would have been best, and the time saved is that of the same trials. With TPE the studies part
after the startup trials (pruned trials enter the sampler's history as such), so the difference of the bests
would mix the pruner's cost with which values each sampler happened to try, and telling them apart would take
many more seeds. The figure's text counts the trials drawn alike in both studies, which checks the pairing.

The study's size and pruner settings, the same with and without the pruner, were chosen so that the pruner
has something to prune and a trial's early epochs tell: at lag 5 nearly every rate in the middle decades
reaches a validation loss of about 0, so every study's best is the same whatever is pruned; at lag 10 the loss
sits at chance (ln 4 = 1.39) for a varying number of epochs before it falls, so the epoch a trial is judged at
says little about where it ends and the pruner stops trials that would have been best. At lag 8 too small a
rate is still at chance after two epochs and too large one above it, while the rates that learn have left it.
`warmup_epochs: 2` judges a trial from its third epoch, past the first two where a rate that ends best may
still sit at chance; `startup_trials: 1` lets the pruner compare with the first completed trial, since the
median is over completed trials only and a trial that is not pruned completes and joins it.

What bounds the saving: with a share p of the trials pruned, each at a share c of an unpruned trial's time,
the ratio is (1 - p) + p·c. A pruned trial still pays a trial's fixed cost (data, model, the study's
database: the first figure's text gives it, from the records' `seconds` less `train_seconds`) and its
warm-up epochs, so c is that fixed share plus (warmup_epochs + 1) / epochs of the rest; and p stays near a
half or two thirds, because the startup trials and every trial that keeps up with the completed ones'
median complete, and on this search a good part of the rates learn. The other settings tried, judged by the
same two figures, did not do better: judging from the first or second epoch stops, on some tuning seed, the
trial that would have been best; more epochs (20) or a shorter lag (5) bring every study's best to a loss of
about 0, where the second figure tells nothing; more trials (16) lower it only a little, as the trials
that learn keep completing.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd

TIME_GOAL = 0.5  # pruned / unpruned trial seconds
TUNING_SEEDS = (0, 1, 2)

SPEC = """
version: 1
name: tuning-pruner
task: {{name: delayed_recall, lag: {lag}, n_train: {n_train}, n_test: 64}}
model: {{kind: classifier, cell: lstm, units: 16, embedding_dim: 8}}
train: {{epochs: {epochs}, batch_size: 32, validation_split: 0.2, verbose: 0}}
seeds: [0]
tune:
  search:
    train.optimizer.learning_rate: {{log_uniform: [1.0e-4, 1.0]}}
  trials: {trials}
  sampler: random
  pruner: {pruner}
  startup_trials: {startup}
  warmup_epochs: {warmup}
  seed: {seed}
"""
FULL = {"lag": 8, "n_train": 800, "epochs": 12, "trials": 12, "startup": 1, "warmup": 2}
TINY = {"lag": 5, "n_train": 48, "epochs": 3, "trials": 3, "startup": 1, "warmup": 0}


def environment() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k not in ("KERAS_BACKEND", "SEQKERAS_JOBS")}


def study(scratch: Path, pruner: str, seed: int, sizes: dict) -> tuple[pd.DataFrame, pd.Series, float]:
    """tuning/trials.csv (with each trial record's `train_seconds`), tuning/best.csv's one row and the wall seconds
    of one `seqkeras run` of SPEC."""
    spec = scratch / f"pruner_{pruner}_{seed}.yaml"
    spec.write_text(SPEC.format(pruner=pruner, seed=seed, **sizes))
    out = Path(tempfile.mkdtemp(dir=scratch))
    started = time.perf_counter()
    # One trial at a time: each is judged against every trial before it, in the same order in both studies, and its
    # seconds are its own, not shared with a trial beside it.
    result = subprocess.run([sys.executable, "-m", "seqkeras", "run", str(spec), "--out", str(out), "--jobs", "1"],
                            env=environment(), capture_output=True, text=True)
    wall = time.perf_counter() - started
    if result.returncode != 0:
        raise RuntimeError(f"seqkeras run failed:\n{result.stdout[-2000:]}{result.stderr[-2000:]}")
    tuning = out / "tuning-pruner" / "tuning"
    [best] = pd.read_csv(tuning / "best.csv").to_dict("records")
    trials = pd.read_csv(tuning / "trials.csv")
    # The records split a trial's seconds: what trained, and the fixed cost a pruned trial pays all the same.
    trials["train_seconds"] = [json.loads((tuning / run_id / "metrics.json").read_text())["train_seconds"]
                               for run_id in trials["run_id"]]
    return trials, pd.Series(best), wall


def spread(values: list[float]) -> float:
    """The sample standard deviation over tuning seeds (none with one seed: the tiny run)."""
    return statistics.stdev(values) if len(values) > 1 else 0.0


def measure(tiny: bool = False, **changed: int) -> list[dict]:
    """The two figures; `changed` sizes replace FULL's (the command line's `key=value`, to try other studies)."""
    sizes, seeds = (TINY, TUNING_SEEDS[:1]) if tiny else ({**FULL, **changed}, TUNING_SEEDS)
    seconds = {"median": [], "none": []}
    bests = {"median": [], "none": []}
    walls = {"median": [], "none": []}
    alike, per_seed, tables = 0, [], {"median": [], "none": []}
    with tempfile.TemporaryDirectory() as folder:
        for seed in seeds:
            # Turns within a seed: a slower spell of the shared machine falls on both variants.
            for pruner in ("median", "none"):
                table, best, wall = study(Path(folder), pruner, seed, sizes)
                seconds[pruner].append(float(table["seconds"].sum()))
                bests[pruner].append(float(best["best"]))
                walls[pruner].append(wall)
                tables[pruner].append(table)
            drawn = "value.train.optimizer.learning_rate"
            alike += int((tables["median"][-1][drawn] == tables["none"][-1][drawn]).sum())
            per_seed.append(seconds["median"][-1] / seconds["none"][-1])
    total = sizes["trials"] * len(seeds)
    everything = pd.concat(tables["median"] + tables["none"])
    fixed = float((everything["seconds"] - everything["train_seconds"]).mean())
    with_median = pd.concat(tables["median"])
    stopped = with_median[with_median["state"] == "pruned"]
    pruned = len(stopped)
    stopped_text = (f"a pruned trial {stopped['seconds'].mean():.2f} s (at epoch {stopped['epochs'].mean():.1f} on "
                    "average)" if pruned else "no trial pruned")
    time_ratio = sum(seconds["median"]) / sum(seconds["none"])
    with_pruner, without = statistics.fmean(bests["median"]), statistics.fmean(bests["none"])
    allowed = max(spread(bests["median"]), spread(bests["none"]))
    difference = with_pruner - without
    study_text = (f"{sizes['trials']} trials (random sampler) × {sizes['epochs']} epochs of an LSTM on delayed_recall "
                  f"lag {sizes['lag']}, {sizes['n_train']} sequences, learning rate log-uniform 1e-4..1, "
                  f"startup_trials {sizes['startup']}, warmup_epochs {sizes['warmup']}, {len(seeds)} tuning seed(s)")
    return [
        {
            "benchmark": "tuning pruner",
            "figure": f"{study_text}: trial seconds of a study with the median pruner vs without, all seeds "
                      f"({pruned} of {total} trials pruned: {stopped_text}, an unpruned one "
                      f"{pd.concat(tables['none'])['seconds'].mean():.2f} s, {fixed:.2f} s of any trial outside "
                      f"training; per-seed ratios "
                      f"{min(per_seed):.2f}-{max(per_seed):.2f}; {alike} of {total} learning rates drawn alike; "
                      f"the commands' wall time {sum(walls['median']) / sum(walls['none']):.2f}×)",
            "value": round(statistics.fmean(seconds["median"]), 2), "unit": "s",
            "baseline": round(statistics.fmean(seconds["none"]), 2), "ratio": round(time_ratio, 3),
            "goal": f"ratio <= {TIME_GOAL:g}", "met": time_ratio <= TIME_GOAL,
        },
        {
            "benchmark": "tuning pruner",
            "figure": f"the same studies' best val_loss, mean over tuning seeds, with the median pruner "
                      f"({with_pruner:.4f} ± {spread(bests['median']):.4f}) vs without "
                      f"({without:.4f} ± {spread(bests['none']):.4f}): difference {difference:+.4f}, "
                      f"the seed spread (the larger standard deviation) {allowed:.4f}",
            "value": round(with_pruner, 4), "unit": "val_loss", "baseline": round(without, 4),
            "ratio": round(with_pruner / without, 3) if without else None,
            "goal": "|difference| <= seed spread", "met": abs(difference) <= allowed,
        },
    ]


if __name__ == "__main__":
    changes = dict(arg.split("=") for arg in sys.argv[1:] if "=" in arg)
    for row in measure(tiny="--tiny" in sys.argv, **{key: int(value) for key, value in changes.items()}):
        print(row["figure"], "→", row["value"], row["unit"], f"(ratio {row['ratio']})")
