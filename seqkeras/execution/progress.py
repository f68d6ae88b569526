"""What a command says as runs finish: the progress line's counts and time left (from measured run times), each
run's label for the epoch lines of runs side by side, and each record logged to the tracker."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any


def track(tracker, record: dict[str, Any], run_folder: Path, echo: Callable[[str], None],
          experiment_folder: Path | None = None) -> None:
    """Log one record; a tracking error is said, and the run stays recorded as it is. experiment_folder: where the
    run folder is not directly in it (a tuning trial's)."""
    problem = tracker.log(record, run_folder, experiment_folder)
    if problem:
        echo(f"{record['run_id']}: not logged to the tracker ({problem}); its folder and runs.csv have it")


class Progress:
    """Runs done of those this command runs, failures, time elapsed and time left.

    The time left is estimated from measured run times: the mean duration of the runs that finished here (each
    run's own seconds, measured where it ran), times the runs left, over the runs that go at once. Not from the
    time elapsed: that counts the workers' start-up, and with N runs at once it counts the runs still in flight
    as if none of them had begun (the first estimate of a 2-worker sweep was then 5 times too long).
    """

    def __init__(self, total: int, slots: int = 1, clock: Callable[[], float] = time.monotonic):
        self.total, self.done, self.failed = total, 0, 0
        self.slots = max(1, slots)  # runs at once (the executor's workers)
        self.durations: list[float] = []  # seconds of each run that finished ok here
        self.clock = clock
        self.started = clock()

    def finished(self, failed: bool, seconds: float | None = None) -> None:
        """seconds: the run's measured duration; None for a run not trained here (another process finished it).
        A failed run's duration is left out of the estimate: one that failed at its start took no time."""
        self.done += 1
        self.failed += failed
        if seconds is not None and not failed:
            self.durations.append(seconds)

    def seconds_left(self) -> float | None:
        """The estimate, or None when nothing is left or no run has finished ok yet."""
        left = self.total - self.done
        if left <= 0 or not self.durations:  # below 0: more finished than planned (a tuning trial drawn again)
            return None
        mean = sum(self.durations) / len(self.durations)
        return mean * left / min(self.slots, left)

    def __str__(self) -> str:
        left = self.seconds_left()
        pace = f", about {duration(left)} left" if left is not None else ""
        failures = f", {self.failed} failed" if self.failed else ""
        return f"{self.done} of {self.total} done{failures}, {duration(self.clock() - self.started)} elapsed{pace}"


def matrix_label(values: Mapping[str, Any]) -> str:
    """`cell=lstm, lag=50`: matrix values by the last part of their keys (the whole key where two share it), those
    left at None out."""
    names = [key.split(".")[-1] for key in values]
    return ", ".join(f"{name if names.count(name) == 1 else key}={value}"
                     for (key, value), name in zip(values.items(), names) if value is not None)


def run_label(run) -> str:
    """`cell=lstm, lag=50, seed=0`: what names a run in the epoch lines of runs side by side (a RunSpec)."""
    point = matrix_label(run.matrix_values)
    return f"{point}, seed={run.seed}" if point else f"seed={run.seed}"


def duration(seconds: float) -> str:
    """'42 s', '3 min 05 s', '1 h 02 min'."""
    seconds = round(seconds)
    if seconds < 60:
        return f"{seconds} s"
    if seconds < 3600:
        return f"{seconds // 60} min {seconds % 60:02d} s"
    return f"{seconds // 3600} h {seconds % 3600 // 60:02d} min"
