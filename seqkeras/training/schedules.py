"""Learning-rate schedules (`train.optimizer.schedule`) and reduce-on-plateau (`train.reduce_on_plateau`).

A schedule is a function of the optimizer's step, so it is one Keras
`LearningRateSchedule` handed to the optimizer: every loop (Keras's fit, the lean
torch loop, which falls back from its fused Adam to `optimizer.apply` for it) and
every backend reads it the same way, a checkpoint resumes it (the step is the
optimizer's `iterations`), and a kept model saves it in its optimizer's config.

`WarmupDecay`: the rate rises linearly from 0 to `learning_rate` over
`warmup_steps`, then stays (`constant`) or decays over `decay_steps` to
`final_learning_rate` (`linear`, `cosine`; kept there after), or falls by
`decay_rate` every `decay_steps` (`exponential`, continuously).

Reduce-on-plateau watches an epoch's history value, as early stopping does
(training.trainer), and multiplies the rate by `factor` after `patience` epochs
without improvement; its count survives a resume with the training state.
"""

from __future__ import annotations

import math

import keras
from keras import ops

from seqkeras.backends.serializable import keras_serializable
from seqkeras.training.convergence import evaluated, higher_is_better
from seqkeras.training.settings import ScheduleSpec


@keras_serializable
class WarmupDecay(keras.optimizers.schedules.LearningRateSchedule):
    def __init__(self, learning_rate: float, decay: str = "constant", warmup_steps: int = 0,
                 decay_steps: int = 1, final_learning_rate: float = 0.0, decay_rate: float = 0.5):
        self.learning_rate = float(learning_rate)
        self.decay = decay
        self.warmup_steps = int(warmup_steps)
        self.decay_steps = max(1, int(decay_steps))
        self.final_learning_rate = float(final_learning_rate)
        self.decay_rate = float(decay_rate)

    def __call__(self, step):
        step = ops.cast(step, "float32")
        peak, final = self.learning_rate, self.final_learning_rate
        after = ops.maximum(step - self.warmup_steps, 0.0)  # steps since the warmup ended
        progress = ops.minimum(after / self.decay_steps, 1.0)
        if self.decay == "linear":
            decayed = final + (peak - final) * (1.0 - progress)
        elif self.decay == "cosine":
            decayed = final + (peak - final) * 0.5 * (1.0 + ops.cos(math.pi * progress))
        elif self.decay == "exponential":
            decayed = peak * ops.power(self.decay_rate, after / self.decay_steps)
        else:
            decayed = ops.ones_like(step) * peak
        if self.warmup_steps == 0:
            return decayed
        # Step t of training (t = 1, 2, ...) takes the rate of Keras's iterations = t − 1: the first step moves.
        warming = peak * (step + 1.0) / self.warmup_steps
        return ops.where(step < self.warmup_steps, warming, decayed)

    def get_config(self) -> dict:
        return {"learning_rate": self.learning_rate, "decay": self.decay, "warmup_steps": self.warmup_steps,
                "decay_steps": self.decay_steps, "final_learning_rate": self.final_learning_rate,
                "decay_rate": self.decay_rate}


def learning_rate(peak: float, schedule: ScheduleSpec | None, total_steps: int):
    """The optimizer's learning rate: `peak` itself without a schedule; a schedule without a warmup as Keras's own
    class that computes the same rates (`keras_schedule`), so that a kept model names nothing of the suite; else its
    WarmupDecay. `total_steps`: the run's optimizer steps (epochs × batches per epoch), whose part after the warmup
    is the default decay_steps."""
    if schedule is None:
        return peak
    decay_steps = schedule.decay_steps or max(1, total_steps - schedule.warmup_steps)
    suites = WarmupDecay(peak, schedule.decay, schedule.warmup_steps, decay_steps, schedule.final_learning_rate,
                         schedule.decay_rate)
    return keras_schedule(suites) or suites


def keras_schedule(schedule: WarmupDecay):
    """Keras's own schedule (or a constant rate) that gives `schedule`'s rate at every step, or None where Keras has
    none: a warmup (Keras's CosineDecay warms up from its step 0, the suite's first step already moves)."""
    if schedule.warmup_steps:
        return None
    peak, final, steps = schedule.learning_rate, schedule.final_learning_rate, schedule.decay_steps
    schedules = keras.optimizers.schedules
    if schedule.decay == "linear":  # (peak − final)·(1 − min(t, T)/T) + final
        return schedules.PolynomialDecay(peak, steps, end_learning_rate=final, power=1.0)
    if schedule.decay == "cosine":  # peak·((1 − α)·½(1 + cos(π·min(t, T)/T)) + α), α = final / peak
        return schedules.CosineDecay(peak, steps, alpha=final / peak)
    if schedule.decay == "exponential":  # peak·rate^(t/T)
        return schedules.ExponentialDecay(peak, steps, schedule.decay_rate)
    return peak


class PlateauReducer:
    """Keras's ReduceLROnPlateau, kept outside fit() as the early stopper is, so its count survives a resume
    (`state.plateau_best`, `state.plateau_wait`; the rate itself is the optimizer's variable, in the checkpoint)."""

    def __init__(self, spec, state):
        self.spec, self.state = spec, state

    def update(self, row: dict[str, float], model: keras.Model) -> None:
        if self.spec is None:
            return
        if self.spec.monitor not in row:
            raise KeyError(f"reduce_on_plateau.monitor {self.spec.monitor!r} is not one of {sorted(row)}")
        value, best = row[self.spec.monitor], self.state.plateau_best
        if not evaluated(value):  # between two scorings of a task metric (validation_metrics): nothing to judge
            return
        sign = 1.0 if higher_is_better(self.spec.monitor) else -1.0
        if best is None or sign * value > sign * best:
            self.state.plateau_best, self.state.plateau_wait = value, 0
            return
        self.state.plateau_wait += 1
        if self.state.plateau_wait >= self.spec.patience:
            rate = float(ops.convert_to_numpy(model.optimizer.learning_rate))
            model.optimizer.learning_rate = max(self.spec.min_learning_rate, rate * self.spec.factor)
            self.state.plateau_wait = 0
