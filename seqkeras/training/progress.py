"""What a run says while it trains, on stderr: a bar within each epoch on a terminal, else one line per epoch.

`train.verbose` (docs/spec.md says the same):

- 0: nothing.
- 1: on a terminal that the run has to itself, a bar within each epoch (steps done, their rate, the epoch's time
  left), replaced at the epoch's end by the epoch's line; anywhere else (a pipe, a log file, a terminal that
  several runs share) the epoch's line only, as 2: a bar redrawn in place is unreadable there.
- 2: one line per epoch: its number, seconds, loss and metrics.

An epoch's line names its run (`ProgressOutput.label`: its matrix point and seed) when the output is not a terminal
(a log read after the fact has no "started run" line beside each epoch) or several runs write to it at once
(`--jobs N`: their epochs interleave). Everything goes to stderr, so that stdout keeps the command's results.

Light on purpose: the executors build a `ProgressOutput` in a `--jobs N` parent that never imports Keras; tqdm
(which draws the bar) is imported only when a bar is drawn.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import TextIO

SILENT, BAR, LINES = "silent", "bar", "lines"

# The bar is redrawn at most this often: a terminal redrawn on every step of a small model would cost more than
# the step itself.
BAR_REFRESH_SECONDS = 0.1
FALLBACK_SIZE = os.terminal_size((80, 24))  # for a terminal that tells none


@dataclass(frozen=True)
class ProgressOutput:
    """Who a run's progress names and whether it has its output to itself; sent by the executor to the process
    that trains the run."""

    label: str = ""  # the run's matrix point and seed: "cell=lstm, lag=50, seed=0"
    shared: bool = False  # other runs write to the same stderr at the same time (--jobs N workers)


def is_terminal(stream: TextIO) -> bool:
    """Whether the stream is a terminal: a closed or unusual stream (a notebook's, a test's) counts as none."""
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError, OSError):  # no isatty, a closed file, a detached stream
        return False


def terminal_size(stream: TextIO) -> os.terminal_size:
    """The terminal's columns and lines, 0 where it tells none or is no terminal."""
    try:
        return os.get_terminal_size(stream.fileno())
    except (AttributeError, ValueError, OSError):  # no file descriptor (a test's stream), not a terminal
        return os.terminal_size((0, 0))


def choose_mode(verbose: int, terminal: bool, shared: bool) -> str:
    """SILENT, BAR or LINES, as `train.verbose` says for this output."""
    if verbose == 0:
        return SILENT
    if verbose == 1 and terminal and not shared:
        return BAR
    return LINES


def epoch_line(epoch: int, epochs: int, seconds: float, logs: Mapping[str, float], label: str = "",
               unit: str = "Epoch") -> str:
    """`[cell=lstm, seed=0] Epoch 2/5 - 3s - loss: 0.4121 - accuracy: 0.8750` (no label: from `Epoch`; with
    train.evaluate_every, `Evaluation 2/5`)."""
    summary = "".join(f" - {name}: {value:.4f}" for name, value in logs.items())
    prefix = f"[{label}] " if label else ""
    return f"{prefix}{unit} {epoch}/{epochs} - {seconds:.0f}s{summary}"


class EpochProgress:
    """One run's training progress: each epoch inside `bar(epoch, steps)`, with `step_done` after each training step
    (wanted only while `shows_steps`), then `epoch_ended`."""

    def __init__(self, verbose: int, epochs: int, output: ProgressOutput, stream: TextIO | None = None,
                 unit: str = "Epoch"):
        # Read when training starts, not when the module is imported: a test's capture or a notebook replaces it.
        self.stream = stream if stream is not None else sys.stderr
        terminal = is_terminal(self.stream)
        self.mode = choose_mode(verbose, terminal, output.shared)
        self.epochs, self.unit = epochs, unit  # unit: what is counted, Epoch or Evaluation (every N steps)
        self.label = output.label if output.shared or not terminal else ""
        self._bar = None

    @property
    def shows_steps(self) -> bool:
        """Whether the trainer should report each step: only a bar shows them (anywhere else a per-step hook would
        only slow the loop)."""
        return self.mode == BAR

    @contextlib.contextmanager
    def bar(self, epoch: int, steps: int) -> Iterator[None]:
        """While an epoch trains: its bar, in BAR mode, erased when the epoch ends or raises (a NaN loss, Ctrl-C),
        so that nothing is left half drawn. epoch: counted from 1; steps: its training steps (batches)."""
        if self.mode != BAR:
            yield
            return
        from tqdm import tqdm  # comes with optuna and keras-hub; it writes to the stream it is given, where
        # Keras's Progbar writes to stdout only

        sized = min(terminal_size(self.stream)) > 0
        self._bar = tqdm(
            total=steps, desc=f"{self.unit} {epoch}/{self.epochs}", unit="step", file=self.stream,
            leave=False,  # the epoch's line replaces the finished bar: one line per epoch stays on the screen
            # As wide as the terminal, as it is resized. tqdm draws nothing on one that says it has 0 columns or
            # 0 lines (a bare pseudo-terminal, as `script` makes): a usual size there.
            dynamic_ncols=sized, ncols=None if sized else FALLBACK_SIZE.columns,
            nrows=None if sized else FALLBACK_SIZE.lines, mininterval=BAR_REFRESH_SECONDS, miniters=1,
        )
        try:
            yield
        finally:
            self._bar.close()
            self._bar = None

    def step_done(self) -> None:
        if self._bar is not None:
            self._bar.update(1)

    def epoch_ended(self, epoch: int, seconds: float, logs: Mapping[str, float]) -> None:
        if self.mode != SILENT:
            print(epoch_line(epoch, self.epochs, seconds, logs, self.label, self.unit), file=self.stream, flush=True)
