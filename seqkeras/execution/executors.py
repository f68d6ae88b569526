"""Where runs execute: in this process, in N worker processes, or as Ray tasks.

Every executor calls the same `execute_once(run, folder, force, label, progress)`, which holds
the run's lock while it runs, so two sweeps sharing a results folder never run
the same run twice or interleave its files. Executors yield finished records
as they come; the runner records each one immediately.

`map` runs a list of jobs; `stream` draws each job only when a worker is free and
the result before it has been taken, so that what is drawn next can depend on the
results so far (tuning asks its studies for a trial that way, and no worker waits
for a batch to end).

A worker process that dies (out of memory, a user's `kill`) costs only the run it
was running: that run is recorded as failed, saying how its worker ended, with
`worker_died` set in its record (tuning trains such a trial's values again instead
of counting it against the budget); the pool, which a dead worker breaks, is
replaced, and the runs that the other workers had in flight, stopped with it,
run again from their last checkpoint.
"""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Callable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

# Only light imports at the top: the parent of `--jobs N` imports this module to
# start its workers, and pandas or the spec models (0.7 s) would delay that.
from seqkeras.backends import compile_cache
from seqkeras.backends.threads import share as thread_share
from seqkeras.backends.runtime import QUIET_TF_LOG_LEVEL, TF_LOG_LEVEL_VARIABLE
from seqkeras.errors import SpecError
from seqkeras.execution.identity import identity_changes
from seqkeras.execution.workers import (
    WorkerContext, claim_slot, setup_pool_worker, setup_worker, stopped_by_parent, worker_ready,
)
from seqkeras.results.locks import file_lock, try_file_lock
from seqkeras.results.record import FAILED, OK, read_record  # pydantic, not pandas: every job reads a record first
from seqkeras.spec.runs import Experiment, RunSpec, make_run_id, spec_digest
from seqkeras.training.progress import ProgressOutput  # light: Keras is imported where a run trains

if TYPE_CHECKING:
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


# train.verbose changes no number, but recorded run ids name it (spec.loader.VERBOSE_IN_RUN_IDS): every value it takes.
VERBOSITIES = (0, 1, 2)


def ids_at_other_verbosity(run: RunSpec) -> list[str]:
    """The ids this run has with another train.verbose: folders that hold its very results, if finished."""
    train = run.hashed.get("train")
    if not isinstance(train, dict) or "verbose" not in train:
        return []
    return [make_run_id(run.point, run.seed, spec_digest({**run.hashed, "train": {**train, "verbose": verbose}}))
            for verbose in VERBOSITIES if verbose != train["verbose"]]


def adopt_recorded_folders(experiment: Experiment, folder: Path) -> Experiment:
    """The experiment with each run that has no finished record in its own folder, but has one (of the same
    identity) in its folder at another train.verbose, named by that folder's id: how loud a run trains changes no
    number, so changing it trains nothing again. (New runs' ids keep naming the verbosity, as recorded ones do.)"""

    def adopted(run: RunSpec) -> RunSpec:
        if (folder / run.run_id).exists():  # its own folder, finished or not, is where it runs
            return run
        for run_id in ids_at_other_verbosity(run):
            if reusable_record(folder / run_id, run).record is not None:
                return replace(run, run_id=run_id)
        return run

    return replace(experiment, runs=[adopted(run) for run in experiment.runs],
                               unselected=[adopted(run) for run in experiment.unselected])


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
                  cpus_per_run: float = 1.0, gpus_per_run: float = 0.0, compile_cache: Path | None = None):
    """The executor `run` asked for: "local" (this process, or `jobs` worker processes) or "ray".

    runs: the most runs any one experiment of the command has (no more workers than that).
    jobs None: $SEQKERAS_JOBS, else `choose_jobs`'s default.
    compile_cache: the command's compilation cache folder, which the local executor's runs compile into and read
    (backends.compile_cache.for_command); None: none.
    """
    if kind == "ray":
        return RayExecutor(address, backend, cpus_per_run, gpus_per_run)
    if kind != "local":
        raise SpecError(f"unknown executor {kind!r}. Allowed: local, ray.")
    if address:
        raise SpecError("--address only applies to --executor ray")
    jobs, reason = choose_jobs(jobs if jobs is not None else jobs_from_environment(), runs)
    if jobs > 1:
        return ProcessExecutor(jobs, backend, reason, compile_cache)
    return SerialExecutor(reason, compile_cache)


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

    def __init__(self, reason: str = "", compile_cache: Path | None = None):
        self.reason = reason  # why one at a time, for the plan line
        self.compile_cache = compile_cache
        self.cache_asked = False  # whether this process was given compile_cache (at the first run it trains)
        self.caching = False  # whether it compiles into it now (not when it has a cache of its own)

    def start(self) -> None:
        pass  # runs in this process, which imports its backend once the specs are read

    def map(self, jobs: list[Job], force: bool) -> Iterator[tuple[Job, dict[str, Any]]]:
        return self.stream(drawn_from(jobs), force)

    def stream(self, next_job: NextJob, force: bool) -> Iterator[tuple[Job, dict[str, Any]]]:
        while (job := next_job()) is not None:
            if not self.cache_asked:  # imports JAX: only once a run trains here
                self.caching = compile_cache.use(self.compile_cache)
                self.cache_asked = True
            yield job, execute_once(job.run, job.folder, force, job.label, job.progress(shared=False), job.tracking)

    def describe(self) -> str:
        return f"in this process ({self.reason})" if self.reason else "in this process"

    def close(self) -> None:
        if self.caching:  # the folder goes with the command; a later command in this process compiles as before
            compile_cache.stop_using()
        self.caching = self.cache_asked = False


# A failed record's key, true when the run's worker process died while it ran (killed, out of memory): the run
# itself raised nothing, so tuning trains a trial's values again rather than count it against the budget.
WORKER_DIED = "worker_died"
# How often a run may be stopped because another worker died (each time, the pool is replaced and it runs
# again) before it is recorded as failed: a bound for workers that keep dying, whoever's run is to blame.
MOST_STOPS = 3


@dataclass
class Flight:
    """A job handed to the pool: its slot in the table where the worker that takes it writes its process id."""

    job: Job
    slot: int


class ProcessExecutor:
    """N runs at once, each in its own process with its own TensorFlow and thread settings.

    The workers are started once and serve every experiment of the command: each
    start costs a TensorFlow import (3-5 s), which a folder of experiments would
    otherwise pay again for each one. A worker that dies breaks the pool, which
    stops the others too; which run was whose is known from a table that each
    worker writes its process id into as it takes a run (`claim_slot`), so only
    the dead worker's run fails, and the others run again in a new pool.
    """

    def __init__(self, jobs: int, backend: str, reason: str = "", compile_cache: Path | None = None):
        self.jobs = jobs
        self.backend = backend
        self.reason = reason  # why this many, for the plan line
        self.compile_cache = compile_cache  # shared by the workers (backends.compile_cache)
        self.threads = thread_share(jobs)  # the cores / N each worker may use ($SEQKERAS_THREADS when set)
        self.pool: ProcessPoolExecutor | None = None
        # slot -> process id of the worker running its job (0: not taken yet); shared with the workers
        self.slots_taken = None
        self.fruitless = 0  # pools in a row whose workers died before taking any run

    @property
    def slots(self) -> int:  # runs at once
        return self.jobs

    def describe(self) -> str:
        why = f"; {self.reason}" if self.reason else ""
        return f"in {self.jobs} worker processes ({self.threads} thread(s) each{why})"

    def start(self, eager: bool = True) -> None:
        """Start every worker now, so that their backend imports overlap the parent's own start-up.

        A pool starts a worker at a submit that finds none idle; each `worker_ready`
        submitted here finds none, so all of them start at once. Not eager (a pool that
        replaces a broken one): each worker starts with the first run that needs it.
        """
        if self.pool is not None:
            return
        context = WorkerContext()
        # No lock: one writer per slot at a time, and a worker killed while it writes cannot leave one held.
        self.slots_taken = context.RawArray("q", self.jobs)
        self.pool = ProcessPoolExecutor(
            max_workers=self.jobs,
            # Spawn (a fresh interpreter: no TensorFlow state is shared) without running the caller's
            # main module again: a script with no __main__ guard, stdin, a notebook (workers.WorkerContext).
            mp_context=context,
            initializer=setup_pool_worker,  # lives in runtime: unpickling it must not import TensorFlow
            initargs=(self.backend, self.threads, self.slots_taken, self.compile_cache),
        )
        for _ in range(self.jobs if eager else 0):
            self.pool.submit(worker_ready)

    def map(self, jobs: list[Job], force: bool) -> Iterator[tuple[Job, dict[str, Any]]]:
        return self.stream(drawn_from(jobs), force)

    def stream(self, next_job: NextJob, force: bool) -> Iterator[tuple[Job, dict[str, Any]]]:
        self.start()
        flights: dict[Future, Flight] = {}
        stopped: list[Job] = []  # stopped when another worker died: they run again before any new job is drawn
        stops: dict[int, int] = {}  # id(job) -> how often so
        try:
            while True:
                while len(flights) < self.jobs and (job := stopped.pop(0) if stopped else next_job()) is not None:
                    submitted = self._submit(job, force, flights)
                    if submitted is None:  # the pool broke since the last result: the job waits for the next pool
                        stopped.insert(0, job)
                        break
                    flights[submitted[0]] = submitted[1]
                if not flights:
                    if not stopped:
                        return
                    self._new_pool(self._ended())  # a worker died while no run was in flight
                    continue
                done, _ = wait(flights, return_when=FIRST_COMPLETED)
                if any(_broke(future) for future in done):
                    wait(flights)  # a broken pool fails every future it holds at once
                    yield from self._after_a_death(flights, stopped, stops)
                    continue
                for future in sorted(done, key=lambda future: flights[future].job.index):
                    job = flights.pop(future).job
                    yield job, _result_or_failure(future.result, job)
        except BaseException:  # Ctrl-C, SIGTERM: stop the runs in flight too (a rerun resumes them)
            for future in flights:
                future.cancel()
            self.close()
            raise

    def _submit(self, job: Job, force: bool, flights: dict[Future, Flight]) -> tuple[Future, Flight] | None:
        """The job handed to the pool in a free slot; None when the pool is broken."""
        slot = min(set(range(self.jobs)) - {flight.slot for flight in flights.values()})
        if self.slots_taken is not None:
            self.slots_taken[slot] = 0  # until a worker takes it
        try:
            # Every worker writes to this process's stderr: each epoch line says whose it is.
            future = self.pool.submit(execute_in_slot, slot, job.run, job.folder, force, job.label,
                                      job.progress(shared=True), job.tracking)
        except BrokenProcessPool:
            return None
        return future, Flight(job, slot)

    def _after_a_death(self, flights: dict[Future, Flight], stopped: list[Job], stops: dict[int, int]
                       ) -> Iterator[tuple[Job, dict[str, Any]]]:
        """Once a worker died: the runs that finished before are yielded as they are, the dead worker's run as
        failed (saying how its worker ended), and the runs the pool stopped with it are queued to run again, in a
        new pool."""
        ran_anything = self._ran_anything()
        pids = {flight.slot: self.slots_taken[flight.slot] if self.slots_taken is not None else 0
                for flight in flights.values()}
        died = self._ended()  # the old pool is gone now: every worker's end is known
        by_pid = {process.pid: process for process in died}
        finished: list[tuple[Job, dict[str, Any]]] = []
        again: list[Job] = []
        for future, flight in sorted(flights.items(), key=lambda item: item[1].job.index):
            job = flight.job
            if not _broke(future):  # it finished before the pool broke
                finished.append((job, _result_or_failure(future.result, job)))
            elif pids[flight.slot] in by_pid:
                finished.append((job, _worker_died(job, worker_end(by_pid[pids[flight.slot]]))))
            else:
                stops[id(job)] = stops.get(id(job), 0) + 1
                if stops[id(job)] < MOST_STOPS:
                    again.append(job)
                    continue
                how = "; ".join(worker_end(process) for process in died) or "it is not known how"
                finished.append((job, _worker_died(job, f"worker process was stopped {stops[id(job)]} times "
                                                        f"because another worker died ({how})")))
        flights.clear()
        stopped[:0] = again
        self.fruitless = 0 if ran_anything or finished else self.fruitless + 1
        if self.fruitless >= 2:  # workers that die before any run: a machine problem, not a run's
            raise OSError("the worker processes of --jobs end before their first run ("
                          + ("; ".join(worker_end(process) for process in died) or "it is not known how")
                          + "); --jobs 1 runs in this process and shows why")
        self._new_pool(died)
        yield from finished

    def _ran_anything(self) -> bool:
        """Whether a worker of the present pool took a run (its process id is in the table)."""
        return self.slots_taken is not None and any(self.slots_taken[slot] for slot in range(self.jobs))

    def _workers(self) -> list:
        return list(self.pool._processes.values()) if self.pool is not None and self.pool._processes else []

    def _ended(self) -> list:
        """Close the broken pool, and the workers of it that died on their own: not those it stopped itself
        (`stopped_by_parent`). Closed first: its workers are then all joined, and their ends known."""
        workers = self._workers()
        self.close()
        return [process for process in workers if process.exitcode is not None and not stopped_by_parent(process)]

    def _new_pool(self, died: list) -> None:
        what = "; ".join(worker_end(process) for process in died) or "a worker process died"
        print(f"warning: {what}; new worker processes take the runs left", file=sys.stderr, flush=True)
        self.start(eager=False)

    def close(self) -> None:
        """Stop the workers. Called when no run is in flight (all done, or interrupted), so
        nothing is lost: terminating spares the wait for TensorFlow's teardown (1.4 s)."""
        if self.pool is None:
            return
        for process in self._workers():  # no public API lists a pool's workers
            process.terminate()
        self.pool.shutdown(wait=True, cancel_futures=True)
        self.pool = None


def execute_in_slot(slot: int, *arguments) -> dict[str, Any]:
    """`execute_once(*arguments)` in a pool worker, which first says in the pool's table (slot) that it runs it."""
    claim_slot(slot)
    return execute_once(*arguments)


def _broke(future: Future) -> bool:
    """Whether the future failed because its pool broke (a worker died)."""
    return future.done() and not future.cancelled() and isinstance(future.exception(), BrokenProcessPool)


def worker_end(process) -> str:
    """How a worker process ended, for the record of the run it was running: `worker process 4242 was killed by
    SIGKILL (signal 9: out of memory?)`."""
    code = process.exitcode
    if code is None:
        return f"worker process {process.pid} died"
    if code >= 0:
        return f"worker process {process.pid} exited with status {code}"
    try:
        name = signal.Signals(-code).name
    except ValueError:
        name = "a signal"
    # The kernel's out-of-memory killer sends SIGKILL; so does `kill -9`.
    hint = ": out of memory?" if -code == signal.SIGKILL else ""
    return f"worker process {process.pid} was killed by {name} (signal {-code}{hint})"


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
    """The run's record; a failed one when its worker could not give one (a Ray task whose worker died, a
    result that could not be sent back), not a failed sweep."""
    try:
        return get()
    except Exception as error:
        # Imported only here: single_run imports Keras and the backend (seconds, holding the GIL that the
        # pool's result thread needs), which the parent of `--jobs N` otherwise never imports.
        from seqkeras.execution.single_run import failure, new_record

        # A Ray task whose worker died was already run again by Ray itself (its max_retries): what still fails
        # is a failed run, and a trial counts against the budget.
        record = {**new_record(job.run), **failure(error), "seconds": 0.0}
        _write_failure(job, record)
        return record


def _worker_died(job: Job, why: str) -> dict[str, Any]:
    """The failed record of a run whose worker process died while it ran, written to its folder."""
    from seqkeras.execution.single_run import new_record

    record = {**new_record(job.run), "status": FAILED, "error": f"its {why}", "traceback": None, "seconds": 0.0,
              WORKER_DIED: True}
    _write_failure(job, record)
    return record


def _write_failure(job: Job, record: dict[str, Any]) -> None:
    """A failed record into the run's folder, unless another process runs it now (it holds the folder's lock)."""
    from seqkeras.results.folder import write_json

    try:
        with try_file_lock(job.folder / ".lock") as free:
            if free:
                write_json(job.folder / "metrics.json", record)
    except OSError:
        pass  # the folder cannot be written: the record still reaches runs.csv


def _ray_task(run: RunSpec, folder: str, force: bool, backend: str, threads: int,
              progress: ProgressOutput | None = None, tracking: LiveTracking | None = None) -> dict[str, Any]:
    setup_worker(backend, threads)  # its lines go to the Ray worker's log, which many tasks share: labelled
    return execute_once(run, Path(folder), force, progress=progress, tracking=tracking)
