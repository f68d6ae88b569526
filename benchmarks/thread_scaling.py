"""Where a second intra-op thread starts to pay for a recurrent model, per backend, idle and with one core busy.

One LSTM training step (forward, backward, Adam) over sequences of 100 steps, at
growing sizes, in a fresh process per backend and thread count (TensorFlow and
XLA fix their thread pools at start): PyTorch's own LSTM (the fused kernel the
suite's torch layers call), Keras's LSTM on TensorFlow and on JAX. Each figure is
the step time with all threads over the step time with one (below 1: more threads
pay), measured on an idle machine and again with one core kept busy by another
process (benchmarks/background_load.py). The suite's thread rule
(seqkeras/backends/threads.py) is read off these figures, and each row checks it:
the thread count the rule picks for that size, under that load (it counts the idle
cores), is at most 1.2× slower than the faster of the two.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from background_load import busy_cores

HERE = Path(__file__).resolve().parent
STEPS, FEATURES = 100, 16
SIZES = [(32, 32), (32, 128), (32, 512), (256, 128)]  # (batch, units)
TINY_SIZES = [(8, 8)]
BACKENDS = ("torch", "tensorflow", "jax")


def child(backend: str, threads: int, batch: int, units: int, repeats: int) -> float:
    """Median milliseconds of one training step, in this process (set up for `backend` and `threads`)."""
    import statistics
    import time

    import numpy as np

    x = np.random.default_rng(0).normal(size=(batch, STEPS, FEATURES)).astype("float32")
    y = np.random.default_rng(1).normal(size=(batch, units)).astype("float32")
    if backend == "torch":
        import torch

        torch.set_num_threads(threads)
        lstm = torch.nn.LSTM(FEATURES, units, batch_first=True)
        optimizer = torch.optim.Adam(lstm.parameters())
        xs, ys = torch.from_numpy(x), torch.from_numpy(y)

        def step():
            optimizer.zero_grad()
            out, _ = lstm(xs)
            loss = ((out[:, -1] - ys) ** 2).mean()
            loss.backward()
            optimizer.step()
    else:
        import keras

        model = keras.Sequential([keras.Input((STEPS, FEATURES)), keras.layers.LSTM(units)])
        model.compile(optimizer="adam", loss="mse")

        def step():
            model.train_on_batch(x, y)
    for _ in range(3):  # warm-up: tracing, first allocations
        step()
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        step()
        times.append(time.perf_counter() - started)
    return 1000 * statistics.median(times)


def environment(backend: str, threads: int) -> dict[str, str]:
    env = {**os.environ, "KERAS_BACKEND": backend, "CUDA_VISIBLE_DEVICES": "", "TF_CPP_MIN_LOG_LEVEL": "3"}
    if backend == "tensorflow":
        env["TF_NUM_INTRAOP_THREADS"] = env["TF_NUM_INTEROP_THREADS"] = str(threads)
    if backend == "jax":
        single = "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"
        env["XLA_FLAGS"] = single if threads == 1 else ""
    return env


def step_ms(backend: str, threads: int, batch: int, units: int, repeats: int) -> float:
    command = [sys.executable, str(Path(__file__).resolve()), "--child", backend, str(threads), str(batch), str(units),
               str(repeats)]
    out = subprocess.run(command, env=environment(backend, threads), capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


GOAL = 1.2  # the thread count the suite's rule picks is at most this much slower than the faster of the two


def rule_threads(backend: str, batch: int, units: int, cores: int) -> int:
    """What seqkeras/backends/threads.py gives a run of this LSTM in a process with all the cores, under the
    load there is now (call it where the load is on)."""
    from seqkeras.backends.threads import TORCH_THREADS_PAY_AT, idle_cores

    if backend == "jax":
        return cores  # XLA keeps the process's share
    if backend == "tensorflow":
        return min(cores, idle_cores())  # its pools, sized when the process starts
    weights = 4 * units * (FEATURES + units + 1)  # the LSTM's kernel, recurrent kernel and bias
    return min(cores, idle_cores()) if batch * weights >= TORCH_THREADS_PAY_AT else 1


def installed(backend: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(backend) is not None


def measure(tiny: bool = False) -> list[dict]:
    cores = os.cpu_count() or 1
    sizes, repeats = (TINY_SIZES, 3) if tiny else (SIZES, 20)
    # Tiny checks that every backend's child runs: idle only (each child is a fresh process, half the wait;
    # benchmarks/busy_machine.py's tiny run keeps a core busy with the same spinner).
    loads = (0,) if tiny else (0, 1)
    rows = []
    for backend in [b for b in BACKENDS if installed(b)]:
        for batch, units in sizes:
            for busy in loads:
                with busy_cores(busy):
                    one = step_ms(backend, 1, batch, units, repeats)
                    many = step_ms(backend, cores, batch, units, repeats)
                    chosen = rule_threads(backend, batch, units, cores)
                picked = one if chosen == 1 else many
                rows.append({
                    "benchmark": "thread scaling",
                    "figure": f"{backend}: an LSTM training step, batch {batch}, {units} units, {STEPS} steps, "
                              f"{cores} threads vs 1 ({'one core busy' if busy else 'idle'}; {one:.1f} ms on 1 thread; "
                              f"the rule picks {chosen}, goal: at most {GOAL:g}× the faster)",
                    "value": round(many, 2), "unit": "ms", "baseline": round(one, 2),
                    "ratio": round(many / one, 2), "goal": f"picked <= {GOAL:g} × faster",
                    "met": picked <= GOAL * min(one, many),
                })
    return rows


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        name, threads, batch, units, repeats = sys.argv[2], *map(int, sys.argv[3:7])
        print(json.dumps(child(name, threads, batch, units, repeats)))
    else:
        for row in measure(tiny="--tiny" in sys.argv):
            print(row["figure"], "→", row["ratio"])
