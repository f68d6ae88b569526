"""Where runs execute: in this process, in N worker processes, or as Ray tasks.

Every executor calls the same `execute_once(run, folder, force, label, progress)`, which holds
the run's lock while it runs, so two sweeps sharing a results folder never run
the same run twice or interleave its files. Executors yield finished records
as they come; the runner records each one immediately.

`map` runs a list of jobs; `stream` draws each job only when a worker is free and
the result before it has been taken, so that what is drawn next can depend on the
results so far (tuning asks its studies for a trial that way, and no worker waits
for a batch to end).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

# Only light imports at the top: the parent of `--jobs N` imports this module to
# start its workers, and pandas or the spec models (0.7 s) would delay that.
from seqkeras.backends.threads import share as thread_share
from seqkeras.backends.runtime import QUIET_TF_LOG_LEVEL, TF_LOG_LEVEL_VARIABLE
from seqkeras.errors import SpecError
from seqkeras.execution.identity import identity_changes
from seqkeras.execution.workers import WorkerContext, setup_pool_worker, setup_worker, worker_ready
from seqkeras.results.locks import file_lock
from seqkeras.results.record import OK, read_record  # pydantic, not pandas: every job reads a record first
from seqkeras.training.progress import ProgressOutput  # light: Keras is imported where a run trains

if TYPE_CHECKING:
    from seqkeras.spec.runs import RunSpec
    from seqkeras.tracking.mlflow_live import LiveTracking


class Reuse(NamedTuple):
    """Whether a run's folder already holds what running it would give: (its finished record, None), or (None,
    why it is run again: None when there is nothing to say — no record, a failed run, --force)."""

    record: dict[str, Any] | None
    why_not: str | None


def reusable_record(folder: Path, run: RunSpec, *, force: bool = False) -> Reuse:
    """The run's finished record, when it may be reused instead of running the run (never under --force)."""
    if force:
        return Reuse(None, None)
    path = folder / "metrics.json"
    record = read_record(path).record
    if record is None:
        return Reuse(None, "its metrics.json is damaged" if path.exists() else None)
    if record.get("status") != OK:
        return Reuse(None, None)  # a failed run is simply run again
    changes = identity_changes(record, run)
    if changes:
        return Reuse(None, "recorded under a different " + "; ".join(changes))
    return Reuse(record, None)


def execute_once(run: RunSpec, folder: Path, force: bool, label: str = "",
                 progress: ProgressOutput | None = None, tracking: LiveTracking | None = None) -> dict[str, Any]:
    """The run, under its folder's lock; `label` ("run 3 of 18: <run id>") is said when it starts, in
    the process that runs it, so that the training lines that follow can be told apart; `progress`: how
    its training names it in those lines (training.progress); `tracking`: the MLflow store it is logged to
    while it runs (`run --track`), from that process."""
    from seqkeras.execution.single_run import execute, failure, new_record
    from seqkeras.results.folder import disk_full

    try:
        with file_lock(folder / ".lock"):
            previous = reusable_record(folder, run, force=force).record
            if previous is not None:  # another process finished it while we waited
                return {**previous, "reused": True}
            if label:
                print(f"started {label}", flush=True)  # flushed: a worker's output is a pipe's, not a terminal's
            return execute(run, folder, progress, tracking)
    except OSError as error:  # its folder cannot be written (read-only, a file in the way, disk full)
        if disk_full(error) is None:
            error = OSError(f"cannot write the run folder {folder}: {error.strerror or error}")
        return {**new_record(run), **failure(error, folder), "seconds": 0.0}


# A worker's peak resident memory, rounded up: its backend (0.5-0.8 GB) plus a model, its data
# and the freed memory torch keeps for reuse (1.5 GB measured for a 1.2-million-parameter
# encoder-decoder on de_en). More workers than the available memory holds at this size would
# swap or be killed, so neither the default nor --jobs starts more.
WORKER_MEMORY_BYTES = 2 << 30

# The --jobs default when it is set (a whole number): for a shell, a CI job or a test suite.
JOBS_VARIABLE = "SEQKERAS_JOBS"


def available_memory() -> int | None:
    """Bytes the kernel says can be allocated without swapping (Linux's MemAvailable); None elsewhere."""
    try:
        with open("/proc/meminfo", encoding="ascii") as meminfo:
            for line in meminfo:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def choose_jobs(requested: int | None, runs: int) -> tuple[int, str]:
    """How many runs go at once for `--jobs requested` (None: the default), and why, for the plan line.

    The default is one worker per core: small recurrent models use a second thread
    poorly, so runs side by side on one thread each finish sooner than one after
    another on all of them (on 2 cores: the sweep benchmark's 9 small runs 1.5×
    sooner; an epoch of the de_en encoder-decoder takes 42 s alone on 2 threads, 44-47 s
    each for two side by side). Never more workers than runs (each would hold a
    backend and do nothing), nor than the memory holds.
    """
    cores = os.cpu_count() or 1
    memory = available_memory()
    by_memory = max(1, memory // WORKER_MEMORY_BYTES) if memory else None
    if requested is None:
        jobs = min(cores, max(runs, 1))
        reason = "the default: one per core" if runs >= cores else "the default: one per run"
    else:
        # More workers than cores only slows every run. (Two stay allowed, so that a small machine
        # can still check that runs go in parallel.)
        jobs = min(requested, max(cores, 2))
        reason = f"--jobs {requested}" if jobs == requested else (
            f"--jobs {requested}, capped at this machine's {cores} cores")
    if by_memory is not None and jobs > by_memory:
        jobs = by_memory
        reason = (f"{reason}, capped at {by_memory}: {memory / 2**30:.1f} GiB of memory available, "
                  f"about {WORKER_MEMORY_BYTES / 2**30:g} GiB per worker")
    return jobs, reason


def make_executor(kind: str, backend: str, runs: int, *, jobs: int | None = None, address: str | None = None,
                  cpus_per_run: float = 1.0, gpus_per_run: float = 0.0):
    """The executor `run` asked for: "local" (this process, or `jobs` worker processes) or "ray".

    runs: the most runs any one experiment of the command has (no more workers than that).
    jobs None: $SEQKERAS_JOBS, else `choose_jobs`'s default.
    """
    if kind == "ray":
        return RayExecutor(address, backend, cpus_per_run, gpus_per_run)
    if kind != "local":
        raise SpecError(f"unknown executor {kind!r}. Allowed: local, ray.")
    if address:
        raise SpecError("--address only applies to --executor ray")
    jobs, reason = choose_jobs(jobs if jobs is not None else jobs_from_environment(), runs)
    return ProcessExecutor(jobs, backend, reason) if jobs > 1 else SerialExecutor(reason)


def jobs_from_environment() -> int | None:
    """$SEQKERAS_JOBS as a number of workers, or None when it is not set."""
    text = os.environ.get(JOBS_VARIABLE)
    if not text:
        return None
    if not text.strip().isdigit() or int(text) < 1:
        raise SpecError(f"${JOBS_VARIABLE}={text!r}: expected a whole number of at least 1")
    return int(text)


@dataclass
class Job:
    index: int
    run: RunSpec
    folder: Path
    label: str = ""  # said when the run starts (execute_once)
    short_label: str = ""  # names the run in its epoch lines where runs share the output (progress.run_label)
    tracking: LiveTracking | None = None  # the MLflow store it is logged to while it runs (run --track)

    def progress(self, shared: bool) -> ProgressOutput:
        """How the run's training names it; shared: other runs write to the same output at the same time."""
        return ProgressOutput(self.short_label, shared)


# Draws the next job, or None when there is none left (Executor.stream).
NextJob = Callable[[], "Job | None"]


def drawn_from(jobs: list[Job]) -> NextJob:
    """A list's jobs one after another, then None: `map` is `stream` over a list."""
    remaining = iter(jobs)
    return lambda: next(remaining, None)


class SerialExecutor:
    slots = 1  # runs at once

    def __init__(self, reason: str = ""):
        self.reason = reason  # why one at a time, for the plan line

    def start(self) -> None:
        pass  # runs in this process, which imports its backend once the specs are read

    def map(self, jobs: list[Job], force: bool) -> Iterator[tuple[Job, dict[str, Any]]]:
        return self.stream(drawn_from(jobs), force)

    def stream(self, next_job: NextJob, force: bool) -> Iterator[tuple[Job, dict[str, Any]]]:
        while (job := next_job()) is not None:
            yield job, execute_once(job.run, job.folder, force, job.label, job.progress(shared=False), job.tracking)

    def describe(self) -> str:
        return f"in this process ({self.reason})" if self.reason else "in this process"

    def close(self) -> None:
        pass


class ProcessExecutor:
    """N runs at once, each in its own process with its own TensorFlow and thread settings.

    The workers are started once and serve every experiment of the command: each
    start costs a TensorFlow import (3-5 s), which a folder of experiments would
    otherwise pay again for each one.
    """

    def __init__(self, jobs: int, backend: str, reason: str = ""):
        self.jobs = jobs
        self.backend = backend
        self.reason = reason  # why this many, for the plan line
        self.threads = thread_share(jobs)  # the cores / N each worker may use ($SEQKERAS_THREADS when set)
        self.pool: ProcessPoolExecutor | None = None

    @property
    def slots(self) -> int:  # runs at once
        return self.jobs

    def describe(self) -> str:
        why = f"; {self.reason}" if self.reason else ""
        return f"in {self.jobs} worker processes ({self.threads} thread(s) each{why})"

    def start(self) -> None:
        """Start every worker now, so that their backend imports overlap the parent's own start-up.

        A pool starts a worker at a submit that finds none idle; each `worker_ready`
        submitted here finds none, so all of them start at once.
        """
        if self.pool is not None:
            return
        self.pool = ProcessPoolExecutor(
            max_workers=self.jobs,
            # Spawn (a fresh interpreter: no TensorFlow state is shared) without running the caller's
            # main module again: a script with no __main__ guard, stdin, a notebook (workers.WorkerContext).
            mp_context=WorkerContext(),
            initializer=setup_pool_worker,  # lives in runtime: unpickling it must not import TensorFlow
            initargs=(self.backend, self.threads),
        )
        for _ in range(self.jobs):
            self.pool.submit(worker_ready)

    def map(self, jobs: list[Job], force: bool) -> Iterator[tuple[Job, dict[str, Any]]]:
        return self.stream(drawn_from(jobs), force)

    def stream(self, next_job: NextJob, force: bool) -> Iterator[tuple[Job, dict[str, Any]]]:
        self.start()
        futures: dict[Any, Job] = {}
        try:
            while True:
                while len(futures) < self.jobs and (job := next_job()) is not None:
                    # Every worker writes to this process's stderr: each epoch line says whose it is.
                    futures[self.pool.submit(execute_once, job.run, job.folder, force, job.label,
                                             job.progress(shared=True), job.tracking)] = job
                if not futures:
                    return
                done, _ = wait(futures, return_when=FIRST_COMPLETED)
                for future in sorted(done, key=lambda future: futures[future].index):
                    job = futures.pop(future)
                    yield job, _result_or_failure(future.result, job)
        except BaseException:  # Ctrl-C, SIGTERM: stop the runs in flight too (a rerun resumes them)
            for future in futures:
                future.cancel()
            self.close()
            raise

    def close(self) -> None:
        """Stop the workers. Called when no run is in flight (all done, or interrupted), so
        nothing is lost: terminating spares the wait for TensorFlow's teardown (1.4 s)."""
        if self.pool is None:
            return
        for process in list(self.pool._processes.values()):  # no public API lists a pool's workers
            process.terminate()
        self.pool.shutdown(wait=True, cancel_futures=True)
        self.pool = None


class RayExecutor:
    """Each run is a Ray task with its own resources; results land in the same folders.

    Without an address a local Ray instance is started. The results folder must
    be reachable from every node (a shared file system) for multi-node clusters.
    """

    slots = 1  # a cluster's runs at once are Ray's to decide: count on none (see `width` for streams)

    def __init__(self, address: str | None, backend: str, num_cpus: float, num_gpus: float):
        try:
            import ray
        except ImportError:
            raise SpecError(
                "the ray executor needs Ray: .venv/bin/pip install -r requirements-ray.txt"
            ) from None
        self.ray = ray
        self.address = address
        self.backend = backend
        self.num_cpus = num_cpus
        self.num_gpus = num_gpus

    def start(self) -> None:
        pass  # Ray starts at the first map: its start-up blocks, and a spec error should not wait for it

    def close(self) -> None:
        pass  # Ray shuts down its local instance itself when this process exits

    def describe(self) -> str:
        where = self.address or "a local Ray instance"
        return f"as Ray tasks on {where} ({self.num_cpus:g} CPU, {self.num_gpus:g} GPU each)"

    def connect(self) -> None:
        ray = self.ray
        if not ray.is_initialized():
            options: dict[str, Any] = {
                "runtime_env": {"env_vars": {"KERAS_BACKEND": self.backend,
                                             TF_LOG_LEVEL_VARIABLE: os.environ.get(TF_LOG_LEVEL_VARIABLE,
                                                                                   QUIET_TF_LOG_LEVEL)}},
                "logging_level": "ERROR",
                "log_to_driver": False,
            }
            if self.address:
                options["address"] = self.address
            else:
                options["include_dashboard"] = False
            ray.init(**options)

    def width(self) -> int:
        """Tasks a stream keeps in flight: as many as the cluster's CPUs (and GPUs, when asked for) hold now."""
        resources = self.ray.cluster_resources()
        fits = [resources.get("CPU", 0.0) / self.num_cpus] if self.num_cpus > 0 else []
        if self.num_gpus > 0:
            fits.append(resources.get("GPU", 0.0) / self.num_gpus)
        return max(1, int(min(fits))) if fits else 1

    def map(self, jobs: list[Job], force: bool) -> Iterator[tuple[Job, dict[str, Any]]]:
        # Every job is handed to Ray at once: it queues what the cluster cannot run yet.
        return self.stream(drawn_from(jobs), force, width=len(jobs))

    def stream(self, next_job: NextJob, force: bool, *, width: int | None = None
               ) -> Iterator[tuple[Job, dict[str, Any]]]:
        self.connect()
        ray = self.ray
        width = width or self.width()
        threads = max(1, int(self.num_cpus))
        remote = ray.remote(num_cpus=self.num_cpus, num_gpus=self.num_gpus)(_ray_task)
        pending: dict[Any, Job] = {}
        while True:
            while len(pending) < width and (job := next_job()) is not None:
                pending[remote.remote(job.run, str(job.folder), force, self.backend, threads,
                                      job.progress(shared=True), job.tracking)] = job
            if not pending:
                return
            done, _ = ray.wait(list(pending), num_returns=1)
            for reference in done:
                job = pending.pop(reference)
                yield job, _result_or_failure(lambda reference=reference: ray.get(reference), job)


def _result_or_failure(get, job: Job) -> dict[str, Any]:
    """A worker that died (out of memory, killed) is a failed run, not a failed sweep."""
    try:
        return get()
    except Exception as error:
        # Imported only here: single_run imports Keras and the backend (seconds, holding the GIL that the
        # pool's result thread needs), which the parent of `--jobs N` otherwise never imports.
        from seqkeras.execution.single_run import failure, new_record
        from seqkeras.results.folder import write_json

        record = {**new_record(job.run), **failure(error), "seconds": 0.0}
        try:
            write_json(job.folder / "metrics.json", record)
        except OSError:
            pass  # the folder cannot be written: the record still reaches runs.csv
        return record


def _ray_task(run: RunSpec, folder: str, force: bool, backend: str, threads: int,
              progress: ProgressOutput | None = None, tracking: LiveTracking | None = None) -> dict[str, Any]:
    setup_worker(backend, threads)  # its lines go to the Ray worker's log, which many tasks share: labelled
    return execute_once(run, Path(folder), force, progress=progress, tracking=tracking)
