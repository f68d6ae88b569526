"""Intra-op threads: how many each process and each run computes with.

Small recurrent models use a second thread poorly, and threads that wait on each
other thrash as soon as another process holds a core (a laptop, a CI runner, a
shared server): a PyTorch LSTM step of the suite's size took 9 ms on one thread and
10 ms on two when the machine was idle, but 13 ms against 791 ms with other work
running. So a process computes on one thread unless its runs are large enough for
more to pay, which `benchmarks/thread_scaling.py` measures per backend.

- torch can change its thread count between runs, and this is where threads
  thrash: measured on 2 cores with other work running, an LSTM step of batch 32
  and 32 units took 3.5 ms on one thread and 711 ms on two; at 128 units 23 ms
  against 94 ms. At 256 units two threads paid (101 ms against 57 ms), and at
  512 units and at batch 256. So each run gets one thread unless one step of
  one batch through its weights is at least `TORCH_THREADS_PAY_AT` multiply-adds
  (batch 32 × 128 units: 2.4 million, lost; batch 32 × 256 units: 8.9 million,
  paid), and then its process's share of the cores (`for_run`).
- TensorFlow and XLA (JAX) size their thread pools once, when they start. Neither
  thrashed nor gained: an LSTM step took the same time on one and two threads
  at 32 and 512 units, with or without other work. A process keeps its share of
  the cores (`configure_process`).

A second thread pays only when a core is free for it: a large torch model on two
threads took 527 ms a step against 271 ms on one while another process held one of
the two cores (150 ms when both were idle), and TensorFlow's LSTM up to 1.7× longer.
So a large torch run takes no more threads than the cores idle when it starts
(`idle_cores`: the CPU time no process used over a tenth of a second), and a
TensorFlow process no more than those idle when it starts its pools. XLA's threads
did not slow down under load (0.91-0.97 of one thread's time): JAX keeps its share.

`$SEQKERAS_THREADS` fixes every run's threads instead, whatever the rule and the load.

Nothing here imports a backend at its top: the parent of `--jobs N` and the
workers' initializers use it before any backend is imported.
"""

from __future__ import annotations

import math
import os
import time

from seqkeras.errors import SpecError

# Multiply-adds of one time step of one batch (batch size × the model's weights outside its embeddings)
# from which a second torch thread pays: between the 2.4 million that lost and the 8.9 million that paid.
TORCH_THREADS_PAY_AT = 4_000_000

# Every run's intra-op threads, when set (a whole number): the user's choice over the rule above.
THREADS_VARIABLE = "SEQKERAS_THREADS"

_share: int | None = None  # the cores this process may use, once configure_process has set them
_current: int | None = None  # its intra-op threads now (None: the backend's default)


def current() -> int | None:
    return _current


def share(jobs: int) -> int:
    """The cores one of `jobs` processes may use side by side, or $SEQKERAS_THREADS when it is set."""
    return chosen_by_user() or max(1, (os.cpu_count() or 1) // max(1, jobs))


def chosen_by_user() -> int | None:
    """$SEQKERAS_THREADS as a number of threads, or None when it is not set."""
    text = os.environ.get(THREADS_VARIABLE)
    if not text:
        return None
    if not text.strip().isdigit() or int(text) < 1:
        raise SpecError(f"${THREADS_VARIABLE}={text!r}: expected a whole number of at least 1")
    return int(text)


def configure_process(backend: str, threads: int) -> None:
    """This process's intra-op (and inter-op) threads, before its backend starts computing.

    On JAX the flags must be in the environment before jax is imported; on TensorFlow
    the pools are fixed at the first op, so a process that has computed already keeps its own.
    """
    global _current, _share
    _share = threads
    if backend == "jax":
        flags = os.environ.get("XLA_FLAGS", "")
        if threads == 1 and "multi_thread_eigen" not in flags:
            os.environ["XLA_FLAGS"] = (
                f"{flags} --xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1".strip()
            )
    elif backend == "tensorflow":
        import tensorflow as tf

        if chosen_by_user() is None:
            threads = min(threads, idle_cores())  # fixed for the process's life: what is free now

        try:
            tf.config.threading.set_intra_op_parallelism_threads(threads)
            tf.config.threading.set_inter_op_parallelism_threads(threads)
        except RuntimeError:  # TensorFlow has started computing in this process: its pools stay as they are
            threads = tf.config.threading.get_intra_op_parallelism_threads() or (os.cpu_count() or 1)
    elif backend == "torch":
        import torch

        torch.set_num_threads(threads)
    _current = threads


def step_work(model, batch_size: int) -> int:
    """Multiply-adds of one time step of one batch: the batch size times the weights outside embeddings
    (an embedding is a lookup, whatever its size)."""
    import keras

    embedded = {id(w) for layer in model._flatten_layers() if isinstance(layer, keras.layers.Embedding)
                for w in layer.weights}
    weights = sum(math.prod(int(d) for d in w.shape) for w in model.trainable_weights if id(w) not in embedded)
    return batch_size * weights


def for_run(model, batch_size: int) -> int | None:
    """Set and return the intra-op threads of a run that trains `model` (torch only; the others keep
    their process's threads, returned as they are)."""
    global _current
    import keras

    if keras.backend.backend() != "torch" or not isinstance(model, keras.Model):
        return _current
    import torch

    share = _share or (os.cpu_count() or 1)
    threads = chosen_by_user() or (min(share, idle_cores()) if step_work(model, batch_size) >= TORCH_THREADS_PAY_AT
                                   else 1)
    torch.set_num_threads(threads)
    _current = threads
    return threads


# How long idle_cores watches the CPUs: long enough to see a process that holds a core (the kernel counts
# in hundredths of a second), short beside any run large enough to ask.
IDLE_SAMPLE_SECONDS = 0.1


def idle_cores(sample_seconds: float = IDLE_SAMPLE_SECONDS) -> int:
    """How many of the cores this process may run on no process is using now, at least 1.

    On Linux: the idle time of those cores in /proc/stat over `sample_seconds`; elsewhere the
    cores less the load average. Asked between runs, when this process itself computes nothing,
    so what it sees busy is other work: another program, or a sibling worker of `--jobs N`.
    """
    cores = _allowed_cpus()
    first = _cpu_times(cores)
    if first is None:
        try:
            load = os.getloadavg()[0]
        except (AttributeError, OSError):
            return len(cores)
        return max(1, min(len(cores), round(len(cores) - load)))
    time.sleep(sample_seconds)
    second = _cpu_times(cores) or first
    idle = sum(second[cpu][0] - first[cpu][0] for cpu in first)
    total = sum(second[cpu][1] - first[cpu][1] for cpu in first)
    if total <= 0:
        return len(cores)
    return max(1, min(len(cores), round(len(first) * idle / total)))


def _allowed_cpus() -> list[int]:
    try:
        return sorted(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return list(range(os.cpu_count() or 1))


def _cpu_times(cpus: list[int]) -> dict[int, tuple[int, int]] | None:
    """(idle, total) clock ticks of each of `cpus` since boot, from /proc/stat; None where it cannot be read."""
    try:
        with open("/proc/stat", encoding="ascii") as handle:
            lines = handle.read().splitlines()
    except (OSError, UnicodeDecodeError):
        return None
    wanted, times = set(cpus), {}
    for line in lines:
        name, *fields = line.split()
        if not (name.startswith("cpu") and name[3:].isdigit() and int(name[3:]) in wanted) or len(fields) < 4:
            continue
        # user nice system idle iowait irq softirq steal (guest time is inside user already)
        ticks = [int(field) for field in fields[:8]]
        times[int(name[3:])] = (ticks[3] + (ticks[4] if len(ticks) > 4 else 0), sum(ticks))
    return times or None
