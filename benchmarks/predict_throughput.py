"""Predictions on many inputs (issue 44): `KeptModel.predict` of a file's worth of texts, batched, against one call
per input.

A small LSTM classifier is trained once (`seqkeras run`, on the default backend); then, in a fresh process,
after loading it, the same inputs are predicted twice, side by side: all at once (`kept.predict(texts)`: one
model call per batch of `kept.predict.PREDICT_BATCH`, shortest inputs first) and one at a time
(`kept.predict([text])` for each, what predicting each input on its own costs). The figure is inputs per
second batched; the baseline is inputs per second one at a time. Goal: batched at least 10× as fast. A
warm-up call before each is left out, so neither pays for building the prediction function.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

from seqkeras_command import environment, timed_run

GOAL = 10.0  # batched / one at a time, inputs per second

SPEC = """
version: 1
name: predict-throughput
task: {name: delayed_recall, lag: 10, n_train: 128, n_test: 32}
model: {kind: classifier, cell: lstm, units: 16, embedding_dim: 8}
train: {epochs: 1, batch_size: 32, verbose: 0}
seeds: [0]
"""

PREDICT = """
import json, random, sys, time
import keras, seqkeras

kept = seqkeras.load_model(sys.argv[1])
count, alone_count = int(sys.argv[2]), int(sys.argv[3])
rng = random.Random(0)
words = kept.preprocessing.vocabulary.tokens[2:]
texts = [" ".join(rng.choice(words) for _ in range(rng.randint(5, 40))) for _ in range(count)]
kept.predict(texts[:2])  # warm-up: the prediction function is built once
started = time.perf_counter()
batched = kept.predict(texts)
batched_seconds = time.perf_counter() - started
started = time.perf_counter()
alone = [kept.predict([text]).iloc[0]["label"] for text in texts[:alone_count]]
alone_seconds = time.perf_counter() - started
print(json.dumps({"batched": batched_seconds, "alone": alone_seconds, "backend": keras.backend.backend(),
                  "same": batched["label"].tolist()[:alone_count] == alone}))
"""


def measure(tiny: bool = False) -> list[dict]:
    count, alone_count = (40, 4) if tiny else (20_000, 300)
    with tempfile.TemporaryDirectory() as folder:
        scratch = Path(folder)
        spec = scratch / "predict.yaml"
        spec.write_text(SPEC)
        timed_run(spec, scratch / "out")
        (run_folder,) = [path.parent for path in (scratch / "out" / "predict-throughput").glob("*/model.keras")]
        result = subprocess.run([sys.executable, "-c", textwrap.dedent(PREDICT), str(run_folder), str(count),
                                 str(alone_count)], env=environment(), capture_output=True, text=True)
        if result.returncode != 0:
            raise RuntimeError(f"predicting failed:\n{result.stderr[-2000:]}")
        timing = json.loads(result.stdout.strip().splitlines()[-1])
    if not timing["same"]:
        raise RuntimeError("batched predictions differ from those one input at a time")
    batched = count / timing["batched"]
    alone = alone_count / timing["alone"]
    ratio = batched / alone
    return [{
        "benchmark": "predict throughput",
        "figure": f"kept.predict of {count} texts (5 to 40 words) with an LSTM classifier (16 units) on "
                  f"{timing['backend']}: inputs per second batched against one call per input ({alone_count} "
                  "inputs), same labels",
        "value": round(batched, 1), "unit": "inputs/s", "baseline": round(alone, 1), "ratio": round(ratio, 2),
        "goal": f"ratio >= {GOAL:g}", "met": ratio >= GOAL,
    }]


if __name__ == "__main__":
    for row in measure(tiny="--tiny" in sys.argv):
        print(row["figure"], "→", row["value"], row["unit"], f"(ratio {row['ratio']})")
