"""Kept models (issue 31): what keeping a run's model costs a small run, and how fast a kept model answers.

1. Saving: a sweep of small runs (an LSTM classifier on 300 sequences, 3 epochs, three seeds) with
   `train.keep_model` true against false, side by side: the variants take turns for three rounds, each a
   `seqkeras run` process on a fresh results folder, and the figure is the median over rounds of the mean
   run time (the records' `seconds`: data, training, keeping the model, evaluation) kept over not kept.
   Goal: at most 5% more. The figure's text also gives the ratio of the commands' wall times.
2. Loading: in a fresh process, after `import seqkeras` and `import keras`, `seqkeras.load_model` of one of
   those run folders, then encoding one sentence and predicting its class. Goal: under 1 s.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

from seqkeras_command import environment, timed_run

SAVE_GOAL = 1.05  # kept / not kept, mean seconds of a run
LOAD_GOAL = 1.0  # seconds to load and predict one sentence, after the imports
ROUNDS = 3

SPEC = """
version: 1
name: kept-models
task: {{name: delayed_recall, lag: 10, n_train: {n_train}, n_test: 64}}
model: {{kind: classifier, cell: lstm, units: 16, embedding_dim: 8}}
train: {{epochs: {epochs}, batch_size: 32, verbose: 0, keep_model: {keep}}}
seeds: [0, 1, 2]
"""

LOAD = """
import json, sys, time
started = time.perf_counter()
import seqkeras, keras
imported = time.perf_counter()
kept = seqkeras.load_model(sys.argv[1])
loaded = time.perf_counter()
encoded = kept.encode("SA n1 n2 n3 n4 n5 SB n6 n7 n8 n9")
label = kept.preprocessing.labels_of(kept.model.predict(encoded.ids, verbose=0).argmax(-1))[0]
done = time.perf_counter()
print(json.dumps({"import": imported - started, "load": loaded - imported, "predict": done - loaded,
                  "label": label, "backend": keras.backend.backend()}))
"""


def sweep(scratch: Path, keep: bool, n_train: int, epochs: int) -> tuple[float, list[dict]]:
    """The wall seconds and the records of one `seqkeras run` of SPEC on a fresh folder."""
    spec = scratch / f"kept_{keep}.yaml"
    spec.write_text(SPEC.format(n_train=n_train, epochs=epochs, keep=str(keep).lower()))
    out = Path(tempfile.mkdtemp(dir=scratch))
    wall = timed_run(spec, out)
    return wall, [json.loads(p.read_text()) for p in sorted((out / "kept-models").glob("*/metrics.json"))]


def measure(tiny: bool = False) -> list[dict]:
    n_train, epochs, rounds = (32, 1, 1) if tiny else (300, 3, ROUNDS)
    with tempfile.TemporaryDirectory() as folder:
        scratch = Path(folder)
        ratios, kept_means, plain_means, walls, last = [], [], [], [], None
        for _ in range(rounds):
            means, wall = {}, {}
            for keep in (True, False):
                wall[keep], records = sweep(scratch, keep, n_train, epochs)
                means[keep] = statistics.fmean(r["seconds"] for r in records)
                if keep:
                    last = records
            ratios.append(means[True] / means[False])
            walls.append(wall[True] / wall[False])
            kept_means.append(means[True])
            plain_means.append(means[False])
        run_folder = next(scratch.glob("*/kept-models/*/model.keras")).parent
        size = (run_folder / "model.keras").stat().st_size
        result = subprocess.run([sys.executable, "-c", textwrap.dedent(LOAD), str(run_folder)], env=environment(),
                                capture_output=True, text=True)
        if result.returncode != 0:
            raise RuntimeError(f"loading failed:\n{result.stderr[-2000:]}")
        timing = json.loads(result.stdout.strip().splitlines()[-1])
    ratio = statistics.median(ratios)
    backend = last[0]["backend"]
    answer = timing["load"] + timing["predict"]
    return [
        {
            "benchmark": "kept models",
            "figure": f"a run of {n_train} sequences × {epochs} epochs on {backend} (LSTM 16 units), keeping its model "
                      f"({size / 1024:.0f} KiB model.keras) against not: mean run seconds, median of {rounds} "
                      f"round(s) of 3 runs (the whole command's wall time: {statistics.median(walls):.3f}×)",
            "value": round(statistics.median(kept_means), 3), "unit": "s",
            "baseline": round(statistics.median(plain_means), 3), "ratio": round(ratio, 3),
            "goal": f"ratio <= {SAVE_GOAL:g}", "met": ratio <= SAVE_GOAL,
        },
        {
            "benchmark": "kept models",
            "figure": f"load_model and predict one sentence's class on {timing['backend']}, after the imports "
                      f"(import seqkeras and keras: {timing['import']:.1f} s; load {timing['load']:.2f} s, "
                      f"predict {timing['predict']:.2f} s)",
            "value": round(answer, 3), "unit": "s", "baseline": None, "ratio": None,
            "goal": f"value <= {LOAD_GOAL:g}", "met": answer <= LOAD_GOAL,
        },
    ]


if __name__ == "__main__":
    for row in measure(tiny="--tiny" in sys.argv):
        print(row["figure"], "→", row["value"], row["unit"], f"(ratio {row['ratio']})")
