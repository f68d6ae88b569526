"""What a command says as runs finish: the progress line's counts and pace, and each record logged to the tracker."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Callable


def track(tracker, record: dict[str, Any], run_folder: Path, echo: Callable[[str], None],
          experiment_folder: Path | None = None) -> None:
    """Log one record; a tracking error is said, and the run stays recorded as it is. experiment_folder: where the
    run folder is not directly in it (a tuning trial's)."""
    problem = tracker.log(record, run_folder, experiment_folder)
    if problem:
        echo(f"{record['run_id']}: not logged to the tracker ({problem}); its folder and runs.csv have it")


class Progress:
    """Runs done of those this command runs, failures, time elapsed and, from the pace so far, time left."""

    def __init__(self, total: int):
        self.total, self.done, self.failed = total, 0, 0
        self.started = time.monotonic()

    def finished(self, failed: bool) -> None:
        self.done += 1
        self.failed += failed

    def __str__(self) -> str:
        elapsed = time.monotonic() - self.started
        left = self.total - self.done
        pace = f", about {duration(elapsed / self.done * left)} left" if left and self.done else ""
        failures = f", {self.failed} failed" if self.failed else ""
        return f"{self.done} of {self.total} done{failures}, {duration(elapsed)} elapsed{pace}"


def duration(seconds: float) -> str:
    """'42 s', '3 min 05 s', '1 h 02 min'."""
    seconds = round(seconds)
    if seconds < 60:
        return f"{seconds} s"
    if seconds < 3600:
        return f"{seconds // 60} min {seconds % 60:02d} s"
    return f"{seconds // 3600} h {seconds % 3600 // 60:02d} min"
