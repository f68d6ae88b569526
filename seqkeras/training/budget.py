"""How long a run trains and when it is evaluated: epochs, or optimizer steps (`train.steps`), cut into periods.

A period is what the trainer does between two evaluations (the history's rows, early stopping's and the
checkpoint's unit): one epoch by default, or `train.evaluate_every` optimizer steps, which may cross the end of an
epoch. Step s of training (counted from 0) is batch s mod B of epoch s div B (B batches per epoch, the last one
partial), and an epoch's batches are its seeded permutation's, whichever period takes them: so a run evaluated
every N steps takes exactly the steps of one evaluated every epoch, and a resumed run the steps of an uninterrupted
one. Papers plot test error against steps: `evaluate_every` gives that curve (history.csv's `step` column).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from seqkeras.training.settings import TrainSpec


@dataclass(frozen=True)
class Segment:
    """Batches [first, end) of epoch `epoch` (0-based): part of one period, inside one epoch."""

    epoch: int
    first: int
    end: int


@dataclass(frozen=True)
class Period:
    number: int  # counted from 1
    segments: tuple[Segment, ...]
    end_step: int  # optimizer steps done when it ends

    @property
    def steps(self) -> int:
        return sum(segment.end - segment.first for segment in self.segments)


@dataclass(frozen=True)
class Budget:
    """A run's training budget: `total_steps` optimizer steps of `per_epoch` batches an epoch, in `periods`
    evaluations of `every` steps (an epoch's batches when `train.evaluate_every` is unset)."""

    per_epoch: int
    total_steps: int
    every: int
    by_steps: bool  # evaluated every N steps: rows carry their step and fractional epoch

    @classmethod
    def of(cls, train: TrainSpec, per_epoch: int) -> Budget:
        total = train.steps if train.steps is not None else train.epochs * per_epoch
        by_steps = train.steps is not None or train.evaluate_every is not None
        return cls(per_epoch, total, train.evaluate_every or per_epoch, by_steps)

    @property
    def periods(self) -> int:
        return math.ceil(self.total_steps / self.every)

    def period(self, index: int) -> Period:
        """Period `index` (0-based): its batches, epoch by epoch."""
        start, end = index * self.every, min((index + 1) * self.every, self.total_steps)
        segments, step = [], start
        while step < end:
            epoch, first = divmod(step, self.per_epoch)
            last = min(self.per_epoch, first + end - step)
            segments.append(Segment(epoch, first, last))
            step += last - first
        return Period(index + 1, tuple(segments), end)

    def whole_epoch(self, segment: Segment) -> bool:
        return segment.first == 0 and segment.end == self.per_epoch

    def row_position(self, period: Period) -> dict[str, float]:
        """What a history row says of where it stands: its epoch (1-based), and with a step budget or evaluations
        every N steps its step too, and the epochs done as a fraction (steps done / batches per epoch)."""
        if not self.by_steps:
            return {"epoch": period.number}
        return {"epoch": round(period.end_step / self.per_epoch, 4), "step": period.end_step}
