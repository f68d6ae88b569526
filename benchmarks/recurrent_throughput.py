"""Recurrent training throughput: the suite's language model versus the plain PyTorch script (issue 9).

The model of the issue: Embedding(2000, 128) → one recurrent layer (SimpleRNN,
LSTM or GRU) over the whole sequence → Dense(2000), Adam, length 64, at batch 32
with 256 units ("full") and at batch 16 with 32 units ("small"). Tokens per
second of training, in process, on random token ids.

- The suite's side is its own path: `build_lm` and `training.fit` (one Keras
  fit per round, as `seqkeras run` trains one epoch per fit), on its best CPU
  path: `--backend torch`, where the recurrent layers run on PyTorch's fused
  kernels (seqkeras/layers/fused_rnn.py), the output layer's bias add is part
  of its matmul (fused_dense.py), the loss and accuracy pass over the softmax
  fewer times (seqkeras/softmax_training.py), and `training.fit` trains each
  epoch on a lean loop with a fused Adam (seqkeras/torch_training.py,
  torch_adam.py). It runs in a worker subprocess with KERAS_BACKEND=torch: the
  calling process may hold Keras on TensorFlow.
- The baseline is benchmarks/pytorch_reference.py, in the same worker, with the
  same thread count.
- The two alternate, A B A B …, so that whatever else loads the machine loads
  both; each side's figure is its best round (the round least disturbed).
- Both sides use torch's default thread count (one per core) unless `--threads`
  says otherwise. On a machine that other jobs keep busy, two threads per side
  fight them for the cores and the figures swing by 2× from run to run:
  `--threads 1 --clock cpu` (CPU time of the one thread) is the steadier measure.

On a machine with a GPU, workers also compare the suite on the GPU, on the
TensorFlow backend (Keras's cuDNN LSTM/GRU) and on the torch backend (the fused
layers, cuDNN through PyTorch), with PyTorch's cuDNN path, at the full size
(goal ≥ 0.9); without a GPU that row says "no GPU".

    .venv/bin/python benchmarks/recurrent_throughput.py [--tiny] [--threads 1 --clock cpu]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import os
import subprocess
import sys
import time
from dataclasses import asdict, replace
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

from pytorch_reference import LMConfig, ReferenceLM, random_batches  # noqa: E402

CELLS = ["simple_rnn", "lstm", "gru"]
CONFIGS = {"full": LMConfig(batch=32, units=256), "small": LMConfig(batch=16, units=32)}
TINY = LMConfig(batch=4, units=8, embedding=8, vocabulary=50, length=8)
# Steps per timed round, rounds per side: a round of the full LSTM takes 1-4 s on 2 shared cores.
# A small round takes 0.25 s, and how many of its pages the allocator takes fresh from the OS
# varies from round to round (0 to 3,700 page faults a step, each side, up to a quarter of its
# time): more rounds, so that each side's best round is one without them.
PLAN = {"full": (6, 5), "small": (15, 10), "tiny": (2, 1), "gpu": (20, 5)}
CPU_GOAL, GPU_GOAL = 1.0, 0.9
BENCHMARK = "recurrent training"
TIMERS = {"wall": time.perf_counter, "cpu": time.process_time}
CLOCKS = {"wall": "", "cpu": ", CPU time"}


def measure(tiny: bool = False, threads: int | None = None, clock: str = "wall") -> list[dict]:
    """One row per cell and configuration (and one for the GPU comparison), each with its ratio to PyTorch.

    threads: torch.set_num_threads for both sides (default: torch's, one per core).
    clock: "wall" (what a user waits), or "cpu" (the process's CPU time: with threads=1,
    a figure that other jobs on a shared machine disturb much less).
    """
    if importlib.util.find_spec("torch") is None:
        return [_row(f"{cell}, {name}: torch is not installed (pip install -r requirements-bench.txt)",
                     math.nan, math.nan, CPU_GOAL) for name in CONFIGS for cell in CELLS]
    options = ["--threads", str(threads)] * bool(threads) + ["--clock", clock] + ["--tiny"] * tiny
    results = _run_worker("torch", "cpu", options)
    rows = [_cpu_row(result) for result in results]
    if not any(result["cuda_available"] for result in results):
        figure = "GPU: no GPU here, TensorFlow cuDNN vs PyTorch cuDNN not measured"
        rows.append(_row(figure, math.nan, math.nan, GPU_GOAL))
    elif not tiny:
        for backend in ("tensorflow", "torch"):
            rows += [_gpu_row(result) for result in _run_worker(backend, "cuda", options)]
    return rows


def _cpu_row(result: dict) -> dict:
    config = result["config"]
    figure = (f"{result['cell']}, batch {config['batch']}, units {config['units']}: "
              f"suite (torch backend, fused) vs plain PyTorch, {result['threads']} thread(s){CLOCKS[result['clock']]}")
    return _row(figure, result["suite"], result["reference"], CPU_GOAL)


def _gpu_row(result: dict) -> dict:
    config = result["config"]
    figure = (f"{result['cell']}, batch {config['batch']}, units {config['units']}, GPU: "
              f"suite ({result['backend']} backend, GPU) vs PyTorch (cuDNN)")
    return _row(figure, result["suite"], result["reference"], GPU_GOAL)


def _row(figure: str, value: float, baseline: float, goal: float) -> dict:
    ratio = value / baseline if baseline and not math.isnan(baseline) else math.nan
    return {
        "benchmark": BENCHMARK,
        "figure": figure,
        "value": round(value) if not math.isnan(value) else value,
        "unit": "tokens/s",
        "baseline": round(baseline) if not math.isnan(baseline) else baseline,
        "ratio": round(ratio, 2) if not math.isnan(ratio) else ratio,
        "goal": f">= {goal}",
        "met": bool(ratio >= goal),
    }


def _run_worker(backend: str, device: str, options: list[str]) -> list[dict]:
    environment = {
        **os.environ,
        "KERAS_BACKEND": backend,
        "KERAS_TORCH_DEVICE": device,  # else Keras's torch backend takes a GPU whenever there is one
        "TF_FORCE_GPU_ALLOW_GROWTH": "true",  # else TensorFlow takes all GPU memory, none left for PyTorch
        "TF_CPP_MIN_LOG_LEVEL": "2",
    }
    command = [sys.executable, str(Path(__file__).resolve()), "--worker", device, *options]
    result = subprocess.run(command, env=environment, capture_output=True, text=True)
    if result.returncode != 0:
        raise RuntimeError(f"the {backend} benchmark worker failed:\n{result.stdout[-3000:]}{result.stderr[-3000:]}")
    return [json.loads(line[len("RESULT "):]) for line in result.stdout.splitlines() if line.startswith("RESULT ")]


# ---------------------------------------------------------------- in the worker


class SuiteLM:
    """The suite's language model and training path on `steps` batches of random token ids."""

    def __init__(self, config: LMConfig, steps: int):
        from seqkeras.models.recurrent import LanguageModelParams, build_lm
        from seqkeras.spec import TrainSpec
        from seqkeras.tasks.base import LANGUAGE_MODELING, SequenceData, Vocabulary
        from seqkeras.training import fit

        tokens = random_batches(config, steps, seed=1).reshape(steps * config.batch, config.length + 1)
        tokens = tokens.astype("int32")
        vocabulary = Vocabulary([f"w{i}" for i in range(config.vocabulary)])
        x, y = tokens[:, :-1], tokens[:, 1:]
        self.data = SequenceData(LANGUAGE_MODELING, x, y, x[:1], y[:1], vocabulary)
        params = LanguageModelParams(cell=config.cell, units=config.units, embedding_dim=config.embedding)
        self.model = build_lm(params, self.data)
        self.spec = TrainSpec(epochs=1, batch_size=config.batch, verbose=0)  # Adam 1e-3, as the reference
        self.fit = fit

    def run(self) -> None:
        self.fit(self.model, self.data, self.spec)


def interleaved(config: LMConfig, steps: int, rounds: int, device: str, clock) -> tuple[float, float]:
    """Best tokens/s of the suite and of the reference, measured A B A B …"""
    suite = SuiteLM(config, steps)
    reference = ReferenceLM(config, device)
    batches = random_batches(config, steps)

    def run_reference():
        for batch in batches:
            reference.step(batch)

    suite.run()  # warm-up: builds the train function, the optimizer's slots, caches
    run_reference()
    best = {"suite": math.inf, "reference": math.inf}
    for _ in range(rounds):
        for side, run in (("suite", suite.run), ("reference", run_reference)):
            started = clock()
            run()
            best[side] = min(best[side], clock() - started)
    tokens = steps * config.tokens_per_step
    return tokens / best["suite"], tokens / best["reference"]


def worker(device: str, tiny: bool, threads: int | None, clock: str) -> None:
    """Print one RESULT line (JSON) per cell and configuration."""
    import keras
    import torch

    if threads:
        torch.set_num_threads(threads)
    if device == "cuda":
        clock = "wall"  # the process's CPU time does not count the GPU's

    configs = {"tiny": TINY} if tiny else ({"gpu": CONFIGS["full"]} if device == "cuda" else CONFIGS)
    for name, base in configs.items():
        steps, rounds = PLAN[name]
        for cell in CELLS:
            config = replace(base, cell=cell)
            keras.utils.set_random_seed(0)
            suite, reference = interleaved(config, steps, rounds, device, TIMERS[clock])
            result = {"cell": cell, "config": asdict(config), "suite": suite, "reference": reference,
                      "threads": torch.get_num_threads(), "device": device, "backend": keras.backend.backend(),
                      "cuda_available": torch.cuda.is_available(), "clock": clock}
            print("RESULT " + json.dumps(result), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tiny", action="store_true", help="tiny sizes, one round: checks that it runs, not speed")
    parser.add_argument("--threads", type=int, help="torch threads, both sides (default: torch's own)")
    parser.add_argument("--clock", choices=sorted(TIMERS), default="wall",
                        help="wall: elapsed time; cpu: the process's CPU time (use with --threads 1 on a busy machine)")
    parser.add_argument("--worker", choices=["cpu", "cuda"], help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args.worker, args.tiny, args.threads, args.clock)
        return
    import pandas as pd

    print(pd.DataFrame(measure(args.tiny, args.threads, args.clock)).to_markdown(index=False))


if __name__ == "__main__":
    main()
