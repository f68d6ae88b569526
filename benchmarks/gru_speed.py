"""GRU at LSTM speed on the default backend (issue 49, goal 4).

Two figures:

- The lag-100 slice of `experiments/compare/cells_long_range.yaml` (seeds 0 and 1, 1,500 sequences of 101
  tokens × 8 epochs, batch 32, 32 units) with its GRUs (Keras's defaults and chrono) and LSTMs, on the default
  backend, `--jobs 1`: each round one `seqkeras run` process, so a round's runs share the machine's state. A
  round's ratio is the mean training seconds (runs.csv) of its four GRU runs over its two unidirectional LSTM
  runs'; the figure is the median round. Goal: ≤ 1.3.
- The kernels alone, in this process on the torch backend's CPU path: one GRU layer's forward and backward pass
  at the slice's shape and at batch 32 / 256 units (recurrent training's full size), the suite's GRU
  (`seqkeras/backends/torch/cpu_gru.py`) against PyTorch's own GRU kernel (`torch._VF.gru`, what the suite
  called before), taking turns; the text gives PyTorch's LSTM kernel at the same shape. Goal: ≥ 1.0, never
  slower than the kernel it replaced.

    .venv/bin/python benchmarks/gru_speed.py [--tiny]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from seqkeras_command import taking_turns  # noqa: E402

SPEC = HERE.parent / "experiments" / "compare" / "cells_long_range.yaml"
RUN_GOAL, KERNEL_GOAL = 1.3, 1.0
ROUNDS = 3
SLICE = ["--only", "task.lag=100", "--only", "seed=0", "--only", "seed=1", "--only", "model.cell=gru",
         "--only", "model.cell=lstm",
         "--set", "task.n_train=1500", "--set", "train.epochs=8", "--jobs", "1"]
TINY_SLICE = ["--only", "task.lag=5", "--only", "seed=0", "--only", "model.cell=gru", "--only", "model.cell=lstm",
              "--set", "task.n_train=64", "--set", "task.n_test=32", "--set", "train.epochs=1", "--jobs", "1"]
# (batch, steps, features, units): the slice's layer, and recurrent training's full size.
SHAPES = [(32, 101, 16, 32), (32, 64, 128, 256)]
TINY_SHAPES = [(4, 6, 3, 5)]


def slice_rows(tiny: bool) -> list[dict]:
    rounds = 1 if tiny else ROUNDS

    def read(_, runs, __):
        """(GRUs' mean training seconds, the unidirectional LSTM's, the backend)."""
        unidirectional = runs["model.bidirectional"].fillna(False).astype(str).str.lower() != "true"
        gru = runs.loc[runs["model.cell"] == "gru", "train_seconds"].mean()
        lstm = runs.loc[(runs["model.cell"] == "lstm") & unidirectional, "train_seconds"].mean()
        return float(gru), float(lstm), str(runs["backend"][0])

    measured = taking_turns(SPEC, {"slice": TINY_SLICE if tiny else SLICE}, rounds, read)["slice"]
    ratios = [gru / lstm for gru, lstm, _ in measured]
    middle = sorted(range(rounds), key=lambda index: ratios[index])[rounds // 2]
    gru, lstm, backend = measured[middle]
    what = "lag 5, tiny" if tiny else "lag 100, seeds 0 and 1, 1,500 × 8 epochs"
    return [{
        "benchmark": "gru speed",
        "figure": f"cells_long_range's GRUs vs its LSTM ({what}) on {backend}, training seconds, median of "
                  f"{rounds} round(s) (ratios {min(ratios):.2f}-{max(ratios):.2f})",
        "value": round(gru, 2), "unit": "s", "baseline": round(lstm, 2), "ratio": round(ratios[middle], 2),
        "goal": f"ratio <= {RUN_GOAL:g}", "met": bool(ratios[middle] <= RUN_GOAL),
    }]


def layer_steps(batch: int, steps: int, features: int, units: int) -> dict:
    """Forward + backward of one layer at this shape: the suite's CPU GRU, PyTorch's GRU and LSTM kernels."""
    import torch

    from seqkeras.backends.torch import cpu_gru, rnn_kernels

    generator = torch.Generator().manual_seed(0)

    def tensor(*shape):
        return (0.1 * torch.randn(*shape, generator=generator)).requires_grad_()

    inputs, h0 = tensor(batch, steps, features), torch.zeros(batch, units)
    weights = {"gru": [tensor(features, 3 * units), tensor(units, 3 * units), tensor(2, 3 * units)],
               "lstm": [tensor(features, 4 * units), tensor(units, 4 * units), tensor(4 * units)]}

    def suite_gru():
        outputs, last = cpu_gru.gru(inputs, h0, *weights["gru"])
        (outputs.sum() + last.sum()).backward()

    def pytorch(kind):
        states = (h0[None], h0[None]) if kind == "lstm" else h0[None]

        def step():
            outputs, *final = rnn_kernels.KERNELS[kind](
                inputs, states, rnn_kernels.torch_weights(kind, *weights[kind]), True, 1, 0.0, True, False, True)
            (outputs.sum() + final[0].sum()).backward()

        return step

    return {"suite": suite_gru, "pytorch gru": pytorch("gru"), "pytorch lstm": pytorch("lstm")}


def kernel_rows(tiny: bool) -> list[dict]:
    import torch

    rows = []
    repeats, rounds = (1, 1) if tiny else (5, 7)
    for batch, steps, features, units in TINY_SHAPES if tiny else SHAPES:
        variants = layer_steps(batch, steps, features, units)
        for step in variants.values():
            step()  # warm-up
        times = {name: [] for name in variants}
        for _ in range(rounds):
            for name, step in variants.items():
                started = time.perf_counter()
                for _ in range(repeats):
                    step()
                times[name].append((time.perf_counter() - started) / repeats * 1000)
        ms = {name: statistics.median(values) for name, values in times.items()}
        ratio = ms["pytorch gru"] / ms["suite"]
        rows.append({
            "benchmark": "gru speed",
            "figure": f"GRU layer forward + backward, batch {batch}, {steps} steps, {features} inputs, {units} "
                      f"units, {torch.get_num_threads()} thread(s): the suite's CPU GRU vs PyTorch's GRU kernel, "
                      f"ms, median of {rounds}; PyTorch's LSTM kernel {ms['pytorch lstm']:.2f} ms",
            "value": round(ms["suite"], 2), "unit": "ms", "baseline": round(ms["pytorch gru"], 2),
            "ratio": round(ratio, 2), "goal": f"ratio >= {KERNEL_GOAL:g}", "met": bool(ratio >= KERNEL_GOAL),
        })
    return rows


def measure(tiny: bool = False) -> list[dict]:
    return [*slice_rows(tiny), *kernel_rows(tiny)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tiny", action="store_true", help="the smallest sizes: checks the benchmark runs")
    args = parser.parse_args()
    for row in measure(args.tiny):
        print(row)


if __name__ == "__main__":
    main()
