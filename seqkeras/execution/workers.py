"""Worker processes: each one's backend, its share of the cores, and its end with its parent.

Defined apart from the executors, in a module that imports no TensorFlow,
because a worker unpickles its initializer by importing the module that holds
it: from seqkeras.execution.executors that would import Keras before stderr is
quieted."""

from __future__ import annotations

import os
import socket
import sys
import threading
import time

from seqkeras.backends.runtime import select_backend
from seqkeras.backends import threads
from seqkeras.backends.threads import configure_process


def setup_worker(backend: str, threads: int) -> None:
    """Each worker process: its own Keras backend, a quiet TensorFlow start and its share of the cores.

    Defined here, in a module that imports no TensorFlow, because a worker
    unpickles its initializer by importing the module that holds it: from
    seqkeras.execution.executors that would import Keras before stderr is quieted.
    """
    if backend == "jax":  # XLA reads its thread flags when jax is imported
        configure_process(backend, threads)
    select_backend(backend)
    if backend != "jax":  # else each of N workers starts one thread per core
        configure_process(backend, threads)


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


def setup_pool_worker(backend: str, threads: int) -> None:
    """A `--jobs N` worker: `setup_worker`, and an end with its parent."""
    setup_worker(backend, threads)
    exit_with_parent()


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
