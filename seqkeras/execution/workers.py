"""Worker processes: each one's backend, its share of the cores, its end with its parent, and which run it runs
(so that the parent knows whose run a worker that dies was running).

Defined apart from the executors, in a module that imports no TensorFlow,
because a worker unpickles its initializer by importing the module that holds
it: from seqkeras.execution.executors that would import Keras before stderr is
quieted."""

from __future__ import annotations

import contextlib
import multiprocessing.context
import multiprocessing.popen_spawn_posix
import os
import signal
import socket
import sys
import threading
import time
import types
from collections.abc import Iterator
from pathlib import Path

from seqkeras.backends.runtime import claim_this_process, select_backend
from seqkeras.backends import compile_cache, threads
from seqkeras.backends.threads import configure_process


def setup_worker(backend: str, threads: int, cache: Path | None = None) -> None:
    """Each worker process: its own Keras backend, a quiet TensorFlow start, its share of the cores, and on JAX the
    command's compilation cache folder (`cache`: backends.compile_cache).

    Defined here, in a module that imports no TensorFlow, because a worker
    unpickles its initializer by importing the module that holds it: from
    seqkeras.execution.executors that would import Keras before stderr is quieted.
    """
    claim_this_process()  # its imports are frozen: each run's clear_session then walks only what runs made
    if backend == "jax":  # XLA reads its thread flags when jax is imported
        configure_process(backend, threads)
    select_backend(backend)
    if backend != "jax":  # else each of N workers starts one thread per core
        configure_process(backend, threads)
    compile_cache.use(cache)


def configure_this_process(backend: str) -> None:
    """Threads for runs in the command's own process (one at a time: all the cores), once its backend is imported.

    Once per process: a later command in the same process (a notebook calling the API again) keeps them.
    Torch's runs then choose their own (seqkeras.backends.threads.for_run)."""
    if threads.current() is None and backend != "jax":  # XLA's flags count only before jax is imported
        configure_process(backend, threads.share(1))


def worker_place() -> dict[str, str | int]:
    """Where this process runs, for a run's record: its host and process id, and inside a Ray task the
    Ray node (on a cluster, which machine trained the run; two nodes may share a host)."""
    place: dict[str, str | int] = {"host": socket.gethostname(), "pid": os.getpid()}
    ray = sys.modules.get("ray")  # imported only by Ray's own workers and the Ray executor's parent
    if ray is not None and ray.is_initialized():
        place["ray_node"] = ray.get_runtime_context().get_node_id()
    return place


def setup_pool_worker(backend: str, threads: int, slots_taken=None, cache: Path | None = None) -> None:
    """A `--jobs N` worker: `setup_worker`, and an end with its parent.

    slots_taken: the pool's shared table (ProcessExecutor) where this worker writes its process id as it
    takes a run (`claim_slot`), so that the parent knows whose run a worker that dies was running."""
    global _slots_taken
    _slots_taken = slots_taken
    setup_worker(backend, threads, cache)
    exit_with_parent()


_slots_taken = None  # in a pool worker: the pool's table of which worker runs which job


def claim_slot(slot: int) -> None:
    """Say in the pool's table that this process runs the job of `slot` (nothing outside a pool worker)."""
    if _slots_taken is not None:
        _slots_taken[slot] = os.getpid()


def stopped_by_parent(process) -> bool:
    """Whether a pool worker ended because the parent stopped it (`WorkerProcess.terminate`: the pool stops every
    worker once one has died), not on its own. SIGKILL is never the parent's: the kernel's out-of-memory killer
    may have come first."""
    return getattr(process, "stopped_by_parent", False) and process.exitcode != -signal.SIGKILL


def worker_ready() -> None:
    """A pool worker's first task: none, its initializer did the work (see ProcessExecutor.start)."""


def exit_with_parent(poll_seconds: float = 1.0) -> None:
    """End this process once its parent has gone (killed by SIGKILL, crashed).

    A pool worker otherwise waits for its next run forever: its siblings still
    hold the task pipe open, so it never reads an end of file. A watcher thread
    is portable where Linux's PR_SET_PDEATHSIG is not.
    """
    parent = os.getppid()

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(poll_seconds)
        os._exit(1)  # a run in progress resumes from its last epoch next time

    threading.Thread(target=watch, name="exit-with-parent", daemon=True).start()


# --------------------------------------------------------------------------- #
# Starting pool workers without the caller's main module
# --------------------------------------------------------------------------- #
#
# A spawned worker normally runs the parent's main module again (as __mp_main__) before
# its first task, so that functions defined there can be unpickled. A pool worker needs
# none of it: its tasks are seqkeras's functions and a run's spec. Running it again is
# harmful: a script that calls seqkeras.run at its top level, with no
# `if __name__ == "__main__":` guard, would start the whole experiment again in every
# worker (multiprocessing refuses, and each run fails with BrokenProcessPool), and a
# main module with no file on disk (`python -`, whose __file__ is "<stdin>") cannot be
# run again at all. So the workers are started with the main module hidden: they begin
# with seqkeras's own modules only, whatever the caller's script, notebook or shell is.


@contextlib.contextmanager
def main_module_hidden() -> Iterator[None]:
    """While a worker is launched: `__main__` is a module with no file and no import name, which
    multiprocessing's spawn leaves alone (as it does a notebook's or `python -c`'s)."""
    modules = sys.modules
    main = modules.get("__main__")
    modules["__main__"] = types.ModuleType("__main__", "a stand-in: seqkeras's workers do not run the caller's main")
    try:
        yield
    finally:
        if main is None:
            modules.pop("__main__", None)
        else:
            modules["__main__"] = main


class WorkerPopen(multiprocessing.popen_spawn_posix.Popen):  # POSIX only, as the run folders' locks (fcntl)
    def _launch(self, process_obj) -> None:
        with main_module_hidden():
            super()._launch(process_obj)


class WorkerProcess(multiprocessing.context.SpawnProcess):
    """A spawned process (a fresh interpreter) that does not run the parent's main module again, and that
    remembers when its parent stopped it (`stopped_by_parent`)."""

    _start_method = "spawn"
    _Popen = staticmethod(WorkerPopen)

    def terminate(self) -> None:
        if self.is_alive():  # a worker that already died ended on its own, whatever is called on it after
            self.stopped_by_parent = True
        super().terminate()


class WorkerContext(multiprocessing.context.SpawnContext):
    """The multiprocessing context of the `--jobs N` pool: spawn, without re-running `__main__` (see above)."""

    Process = WorkerProcess
