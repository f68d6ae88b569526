"""Tuning's pruner (issue 33, item 5): what the median pruner saves a small study, and what it costs its best trial.

A fixed study, run with `tune.pruner: median` and with `pruner: none`, side by side: an LSTM language model on
`char_lm` (the package's generated sentences, "the dogs near the key sleep.", so nothing is downloaded), judged
by its validation loss per character on the held-out end of the training text (`task.validation_share`), whose
learning rate is searched over four decades (log-uniform 1e-4 to 1), wide enough that many trials are hopeless
(too small a rate is still far above the others when the epochs run out, too large a one stalls or diverges),
each trial a fair number of epochs on a small data set. Each variant is a `seqkeras run` process of its own on a
fresh results folder, and the two take turns over several tuning seeds (`tune.seed`: the sampler's draws, the
seed each trial trains with, and so the generated text).

1. Trial time: the sum of the study's trials' `seconds` (tuning/trials.csv: each trial's wall time, data and
   model build included) with the pruner over without, all tuning seeds together. Goal: at most 0.5.
2. Best objective: the study's best validation loss (tuning/best.csv), mean over tuning seeds, with the pruner
   against without. Met when the difference of the two means is within the seed spread, taken as the larger of
   the two sample standard deviations over tuning seeds (a difference smaller than what one variant varies by
   from seed to seed cannot be told from the choice of seed). The text counts the seeds whose two studies chose
   the same trial: a pruned study that chose another one lost the would-be best to the pruner.

The sampler is `random`, not the default TPE, because it makes the comparison paired: the suite seeds a
study's sampler from the tuning seed and the number of trials drawn so far, so with the random sampler trial k
draws the same learning rate in both studies, and it trains with the same seed. The two studies then differ
only where the pruner stopped a trial: the pruned study's best can only be worse by the trial the pruner
stopped that would have been best, and the time saved is that of the same trials. With TPE the studies part
after the startup trials (pruned trials enter the sampler's history as such), so the difference of the bests
would mix the pruner's cost with which values each sampler happened to try, and telling them apart would take
many more seeds. The figure's text counts the trials drawn alike in both studies, which checks the pairing.

Why this study. The median rule stops a trial whose best loss so far is worse than the median of the completed
trials' at the same epoch: it assumes that a trial behind early stays behind. A character language model's
validation loss falls smoothly from the first epochs, and the rates that end best are those that fall fastest once
the first epochs are past (in a sweep of this model on one seed, 1e-2 to 1e-1 all end near 0.42, the floor this
small model reaches on the grammar's sentences; 3e-3 is near 0.5 after 20 epochs, 1e-3 above 1.2, 3e-1 stalls near
0.55, 1 diverges). The best is then a real loss far from 0, which one can tell apart from a worse one, so the
second figure can fail: it does when the pruner stops every trial of the good decade. The study this benchmark
measured before, an LSTM classifier on `delayed_recall`, did not fit the rule: its loss sits at chance for an
unpredictable number of epochs and then drops suddenly, so an early verdict stops would-be best trials, and where
it waited long enough every study's best was a loss of about 0, where the comparison of bests said nothing (its
last run: ratio 0.68, bench-20261203T082130Z.csv).

The pruner settings, the same with and without the pruner: `warmup_epochs: 2` judges a trial from its third
epoch, since in the first two (about 25 batches each) every rate is still near where it started (a loss near 3) and
a rate that ends best may even be behind a hopeless one; `startup_trials: 1` lets the pruner compare with the
first completed trial, since the median is over completed trials only and a trial that is not pruned completes
and joins it.

What bounds the saving: with a share p of the trials pruned, each at a share c of an unpruned trial's time,
the ratio is (1 - p) + p·c. A pruned trial still pays a trial's fixed cost (data, model, the study's
database: the first figure's text gives it, from the records' `seconds` less `train_seconds`) and its
warm-up epochs, so c is that fixed share plus (warmup_epochs + 1) / epochs of the rest; and p stays well
short of 1, because the startup trials and every trial that keeps up with the completed ones' median
complete, and on this search a quarter of the draws fall in the decade that learns as well as the best. Its
first run (bench-20261203T092359Z.csv) pruned 39 of 48 trials, each at about a third of an unpruned trial's
time, for a ratio of 0.49, but 0.41 to 0.61 from one tuning seed to another: the goal is met over three seeds
with little to spare, and one study of 16 trials may well miss it.
"""

from __future__ import annotations

import json
import statistics
import sys
import tempfile
from pathlib import Path

import pandas as pd

from seqkeras_command import timed_run

TIME_GOAL = 0.5  # pruned / unpruned trial seconds
TUNING_SEEDS = (0, 1, 2)

SPEC = """
version: 1
name: tuning-pruner
task: {{name: char_lm, seq_length: {seq_length}, n_train: {n_train}, n_test: {n_test}, validation_share: 0.2}}
model: {{kind: lm, cell: lstm, units: 32, embedding_dim: 16}}
train: {{epochs: {epochs}, batch_size: 32, verbose: 0}}
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
FULL = {"seq_length": 32, "n_train": 800, "n_test": 128, "epochs": 20, "trials": 16, "startup": 1, "warmup": 2}
TINY = {"seq_length": 8, "n_train": 48, "n_test": 16, "epochs": 3, "trials": 3, "startup": 1, "warmup": 0}


def study(scratch: Path, pruner: str, seed: int, sizes: dict) -> tuple[pd.DataFrame, pd.Series, float]:
    """tuning/trials.csv (with each trial record's `train_seconds`), tuning/best.csv's one row and the wall seconds
    of one `seqkeras run` of SPEC."""
    spec = scratch / f"pruner_{pruner}_{seed}.yaml"
    spec.write_text(SPEC.format(pruner=pruner, seed=seed, **sizes))
    out = Path(tempfile.mkdtemp(dir=scratch))
    # One trial at a time (--jobs 1): each is judged against every trial before it, in the same order in both
    # studies.
    wall = timed_run(spec, out)
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
    chosen = {"median": [], "none": []}  # each study's best trial
    with tempfile.TemporaryDirectory() as folder:
        for seed in seeds:
            # Turns within a seed: a slower spell of the shared machine falls on both variants.
            for pruner in ("median", "none"):
                table, best, wall = study(Path(folder), pruner, seed, sizes)
                seconds[pruner].append(float(table["seconds"].sum()))
                bests[pruner].append(float(best["best"]))
                walls[pruner].append(wall)
                tables[pruner].append(table)
                chosen[pruner].append(int(best["best_trial"]))
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
    same_trial = sum(a == b for a, b in zip(chosen["median"], chosen["none"]))
    study_text = (f"{sizes['trials']} trials (random sampler) × {sizes['epochs']} epochs of an LSTM language model on "
                  f"char_lm, {sizes['n_train']} windows of {sizes['seq_length']} characters, learning rate "
                  "log-uniform 1e-4..1, "
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
                      f"the seed spread (the larger standard deviation) {allowed:.4f}; the same best trial in "
                      f"{same_trial} of {len(seeds)} seed(s)",
            "value": round(with_pruner, 4), "unit": "val_loss", "baseline": round(without, 4),
            "ratio": round(with_pruner / without, 3) if without else None,
            "goal": "|difference| <= seed spread", "met": abs(difference) <= allowed,
        },
    ]


if __name__ == "__main__":
    changes = dict(arg.split("=") for arg in sys.argv[1:] if "=" in arg)
    for row in measure(tiny="--tiny" in sys.argv, **{key: int(value) for key, value in changes.items()}):
        print(row["figure"], "→", row["value"], row["unit"], f"(ratio {row['ratio']})")
