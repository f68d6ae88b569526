"""The suite against the scripts a user would write instead (issue 49, goal 6): on the sentiment file, on a
sentence-pair file and on the Keras addition example.

Every contender trains the same model on the same data for the same epochs, each a process of its own whose wall
time is measured whole (start, imports, reading, training, testing), as a user meets it:

- the suite: `seqkeras run`, with its defaults (the backend and workers it chooses);
- plain Keras (benchmarks/plain_scripts/keras_*.py, as Keras's examples write them) on each installed backend,
  with Keras's defaults;
- plain PyTorch (benchmarks/plain_scripts/pytorch_*.py, as PyTorch's tutorials write them), with its defaults.

The workloads:

- sentiment: the sentiment experiment's sentences (Rotten Tomatoes, `experiments/compare/sentiment.yaml`), seed
  0's split, written as two files with a header, `text<TAB>label` (train.tsv: 10,202 sentences; test.tsv: 2,550);
  an LSTM of 64 units over 64-wide embeddings that mask the padding, batch 64, Adam 1e-3, 3 epochs. The suite
  reads the files (`text_classification_file`), as shuffled batches and with `train.batches: by_length`, the
  option that cuts the padding; the figure is the latter. Tiny: 600 and 200 sentences, 1 epoch.
- pairs: the sentence-pair file of the examples (`experiments/examples/data/numbers.tsv`: numbers in digits →
  in English words, 999 pairs), seed 0's split written as two files of `source<TAB>target` (train.tsv: 799
  pairs; test.tsv: 200); an encoder-decoder without attention, GRU 64 over 32-wide embeddings, the encoder's
  last state starting the decoder, Adam 0.005 with gradients clipped to norm 1, batch 32, 20 epochs; greedy
  decoding, scored by exact match (the output's words are the target's). Tiny: 200 and 50 pairs, 1 epoch.
- addition: `experiments/published/keras_addition.yaml`'s reversed questions at seed 0 (45,000 to train, 5,000
  to test; LSTM 128 encoder and decoder, one-hot characters, batch 32), 3 epochs; the scripts make the example's
  questions themselves (plain_scripts/addition_data.py). The accuracy is per character, the example's. Tiny:
  500 and 100 questions, 1 epoch.

Each is measured on the idle machine and (not at the tiny size) with one core kept busy
(benchmarks/background_load.py). A script that
runs past `STOP_AFTER` × the suite's slower time is stopped and shown as "> N s": it is not the fastest. The
ratio is the fastest script's seconds over the suite's. Goal: ≥ 1.5. The comparison holds only at the same
accuracy: the figure gives each one's test accuracy, and a row is met only when the fastest script's is within
`ACCURACY_SPREAD` of the suite's (one seed).

    .venv/bin/python benchmarks/plain_scripts.py [--tiny] [--only sentiment|pairs|addition]

`--tiny` runs the sentences only (the addition's tiny path is `gpu_check.sh --tiny`'s, on the CPU here).
"""

from __future__ import annotations

import csv
import importlib.util
import json
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from background_load import busy_cores  # noqa: E402
from seqkeras_command import QUIET_TENSORFLOW, environment, finished_run, spec_without_backend  # noqa: E402

GOAL = 1.5  # the fastest script's seconds / the suite's
ACCURACY_SPREAD = 0.03
STOP_AFTER = 4.0  # a script still running at this many times the suite's slower time is stopped
SCRIPTS = HERE / "plain_scripts"
KERAS_BACKENDS = ("jax", "tensorflow", "torch")

SENTIMENT_SPEC = """
version: 1
name: sentiment-file
task: {{name: text_classification_file, path: {train}, test_path: {test}}}
model: {{kind: classifier, cell: lstm, units: 64, embedding_dim: 64}}
train: {{epochs: {epochs}, batch_size: 64, verbose: 0}}
seeds: [0]
"""
PAIRS_SPEC = """
version: 1
name: pairs-file
task: {{name: sentence_pairs, path: {train}, test_path: {test}}}
model: {{kind: seq2seq, cell: gru, units: 64, embedding_dim: 32, attention: none}}
train: {{epochs: {epochs}, batch_size: 32, optimizer: {{name: adam, learning_rate: 0.005, clipnorm: 1.0}}, verbose: 0}}
evaluate: {{metrics: [exact_match], decoders: [{{name: greedy}}]}}
seeds: [0]
"""
PAIRS_FILE = HERE.parent / "experiments" / "examples" / "data" / "numbers.tsv"
ADDITION_SPEC = HERE.parent / "experiments" / "published" / "keras_addition.yaml"


@dataclass
class Workload:
    """One comparison: the suite's spec and its variants (name → options; the last is the one compared), the
    runs.csv column of its accuracy, and the scripts' arguments."""

    name: str
    spec: Path
    variants: dict[str, list[str]]
    accuracy_column: str
    script_arguments: list[str]
    what: str


def sentiment(folder: Path, tiny: bool) -> Workload:
    """Seed 0's split of the sentiment sentences as train.tsv and test.tsv (tiny: 600 and 200 of them, 1 epoch)."""
    from seqkeras.tasks.rotten_tomatoes import NAME, load_sentences
    from seqkeras.tasks.text import split_examples

    train, test = split_examples(load_sentences(), 0.2, 0, what=NAME)
    epochs = 1 if tiny else 3
    if tiny:
        train, test = train[:600], test[:200]
    paths = folder / "train.tsv", folder / "test.tsv"
    for path, rows in zip(paths, (train, test)):
        with open(path, "w", encoding="utf-8", newline="") as handle:
            writer = csv.writer(handle, delimiter="\t", lineterminator="\n")
            writer.writerow(["text", "label"])
            writer.writerows((" ".join(text.split()), label) for text, label in rows)
    spec = folder / "sentiment-file.yaml"
    spec.write_text(SENTIMENT_SPEC.format(train=paths[0], test=paths[1], epochs=epochs), encoding="utf-8")
    return Workload("sentiment", spec,
                    {batches: ["--set", f"train.batches={batches}"] for batches in ("shuffled", "by_length")},
                    "accuracy", [str(paths[0]), str(paths[1]), "--epochs", str(epochs)],
                    f"sentiment file (LSTM 64, {len(train):,} sentences × {epochs} epoch(s), seed 0)")


def pairs(folder: Path, tiny: bool) -> Workload:
    """Seed 0's split of the numbers pairs as train.tsv and test.tsv, `digits<TAB>words` (tiny: 200 and 50, 1 epoch)."""
    from seqkeras.tasks.text import split_examples

    lines = [line.split("\t") for line in PAIRS_FILE.read_text(encoding="utf-8").splitlines() if line.strip()]
    train, test = split_examples([(fields[1], fields[0]) for fields in lines], 0.2, 0, what=PAIRS_FILE.name)
    epochs = 1 if tiny else 20
    if tiny:
        train, test = train[:200], test[:50]
    paths = folder / "pairs-train.tsv", folder / "pairs-test.tsv"
    for path, rows in zip(paths, (train, test)):
        path.write_text("".join(f"{source}\t{target}\n" for source, target in rows), encoding="utf-8")
    spec = folder / "pairs-file.yaml"
    spec.write_text(PAIRS_SPEC.format(train=paths[0], test=paths[1], epochs=epochs), encoding="utf-8")
    return Workload("pairs", spec, {"default": []}, "exact_match",
                    [str(paths[0]), str(paths[1]), "--epochs", str(epochs)],
                    f"numbers sentence pairs (GRU 64 encoder-decoder, {len(train):,} pairs × {epochs} epoch(s), "
                    "greedy exact match, seed 0)")


def addition(folder: Path, tiny: bool) -> Workload:
    """The Keras addition example's reversed questions (tiny: 500 and 100 of them, 1 epoch)."""
    n_train, n_test, epochs = (500, 100, 1) if tiny else (45_000, 5_000, 3)
    size = ["--set", f"task.n_train={n_train}", "--set", f"task.n_test={n_test}", "--set", f"train.epochs={epochs}"]
    return Workload("addition", spec_without_backend(ADDITION_SPEC, folder),
                    {"default": ["--only", "task.reverse_source=true", "--only", "seed=0", *size]},
                    "position_accuracy",
                    ["--train", str(n_train), "--test", str(n_test), "--epochs", str(epochs)],
                    f"the Keras addition example (LSTM 128, {n_train:,} questions × {epochs} epoch(s), seed 0)")


WORKLOADS = {"sentiment": sentiment, "pairs": pairs, "addition": addition}


def script(command: list[str], backend: str | None, stop_after: float) -> tuple[float, float | None]:
    """(wall seconds, test accuracy) of a plain script; (stop_after, None) when it was stopped at that time."""
    env = environment(**QUIET_TENSORFLOW, **({"KERAS_BACKEND": backend} if backend else {}))
    started = time.perf_counter()
    try:
        result = subprocess.run([sys.executable, *command], env=env, capture_output=True, text=True,
                                timeout=stop_after)
    except subprocess.TimeoutExpired:
        return stop_after, None
    wall = time.perf_counter() - started
    if result.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed:\n{result.stdout[-2000:]}{result.stderr[-2000:]}")
    return wall, json.loads(result.stdout.strip().splitlines()[-1])["accuracy"]


def contenders(workload: Workload) -> dict[str, tuple[list[str], str | None]]:
    """Each plain script to compare with: (its command, its KERAS_BACKEND), for what is installed here."""
    keras_script = str(SCRIPTS / f"keras_{workload.name}.py")
    found = {f"plain Keras on {backend}": ([keras_script, *workload.script_arguments], backend)
             for backend in KERAS_BACKENDS if importlib.util.find_spec(backend) is not None}
    if importlib.util.find_spec("torch") is not None:
        found["plain PyTorch"] = ([str(SCRIPTS / f"pytorch_{workload.name}.py"), *workload.script_arguments], None)
    return found


def one_condition(workload: Workload, folder: Path, label: str) -> tuple[dict, dict]:
    """(seconds, accuracy) by contender, each once: the suite's variants first (they set when a script stops)."""
    times, accuracy = {}, {}
    for variant, options in workload.variants.items():
        name = f"the suite ({variant})"
        times[name], runs = finished_run(workload.spec, folder / f"{workload.name}-{label}-{variant}", options)
        accuracy[name] = float(runs[workload.accuracy_column][0])
    stop_after = max(60.0, STOP_AFTER * max(times.values()))
    for name, (command, backend) in contenders(workload).items():
        times[name], accuracy[name] = script(command, backend, stop_after)
    return times, accuracy


def row(workload: Workload, label: str, times: dict, accuracy: dict) -> dict:
    ours = f"the suite ({list(workload.variants)[-1]})"
    finished = {name: seconds for name, seconds in times.items()
                if not name.startswith("the suite") and accuracy[name] is not None}
    fastest = min(finished, key=finished.get) if finished else None
    shown = "; ".join(f"{name} {seconds:.1f} s (accuracy {accuracy[name]:.3f})" if accuracy[name] is not None
                      else f"{name} > {seconds:.0f} s (stopped)" for name, seconds in times.items())
    same_accuracy = fastest is not None and abs(accuracy[fastest] - accuracy[ours]) <= ACCURACY_SPREAD
    ratio = times[fastest] / times[ours] if fastest else None
    return {
        "benchmark": "plain scripts",
        "figure": f"{workload.what}, {label}, whole-process seconds: {ours} vs the fastest plain script "
                  f"({fastest}); {shown}",
        "value": round(times[ours], 1), "unit": "s",
        "baseline": round(times[fastest], 1) if fastest else None,
        "ratio": round(ratio, 2) if ratio else None,
        "goal": f"ratio >= {GOAL:g} at accuracy within {ACCURACY_SPREAD:g}",
        "met": bool(ratio is not None and ratio >= GOAL and same_accuracy),
    }


def measure(tiny: bool = False, only: tuple[str, ...] | None = None, busy: bool = True) -> list[dict]:
    # Tiny (`make test-system`'s check that it runs): the sentences only; `gpu_check.sh --tiny` runs the addition.
    only = only or (("sentiment",) if tiny else tuple(WORKLOADS))
    rows = []
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        for name in only:
            workload = WORKLOADS[name](folder, tiny)
            rows.append(row(workload, "idle", *one_condition(workload, folder, "idle")))
            if busy and not tiny:  # the same code path, under load: only its figures would differ
                with busy_cores(1):
                    rows.append(row(workload, "one core busy", *one_condition(workload, folder, "busy")))
    return rows


def measure_gpu(tiny: bool = False) -> list[dict]:
    """benchmarks/gpu_check.sh: the addition workload, idle, with the GPU (the GPU machine has no TensorFlow, which
    the plain Keras sentiment script's TextVectorization needs on every backend); without CUDA, the same code on
    the CPU at the tiny size, not a figure."""
    cuda = importlib.util.find_spec("torch") is not None and __import__("torch").cuda.is_available()
    rows = measure(tiny or not cuda, ("addition",), busy=False)
    if not cuda:
        rows = [{**row, "figure": f"no GPU here, run on the CPU at a tiny size: {row['figure']}", "met": False}
                for row in rows]
    return rows


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tiny", action="store_true", help="small data, 1 epoch, idle only: checks the benchmark runs")
    parser.add_argument("--only", nargs="+", choices=list(WORKLOADS))
    args = parser.parse_args()
    for measured in measure(args.tiny, tuple(args.only or ())):
        print(measured["figure"], "→", measured["value"], measured["baseline"], measured["ratio"], measured["met"])
