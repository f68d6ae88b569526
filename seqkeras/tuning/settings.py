"""The `tune:` section's schema: which keys to search, how many trials each matrix point gets, and what to optimize.

Tuning owns it, as training owns `train:`; `spec.sections` composes it into an
experiment file and `spec.checks.check_tune` checks it against the runs (a key
that exists, a range of its type, an objective measured on validation data).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, model_validator

from seqkeras.errors import SpecError, shown
from seqkeras.registry import Params, higher_is_better

# The objective is read from the training history: what each epoch measured on the validation data.
VALIDATION_PREFIX = "val_"
KINDS = ("log_uniform", "uniform", "integer", "choice")
# Where the studies are by default: an SQLite file in the experiment's results folder.
STUDIES_FOLDER = "tuning"
STUDIES_FILE = "studies.db"


class SearchRange(Params):
    """One tuned key's values: exactly one of the four kinds."""

    log_uniform: list[float] | None = Field(
        None, description="[low, high], low > 0: sampled evenly in log space (learning rates, weight decay).")
    uniform: list[float] | None = Field(None, description="[low, high]: any number in between, evenly.")
    integer: list[int] | None = Field(None, description="[low, high]: a whole number in between, both included.")
    choice: list[Any] | None = Field(
        None, description="The values to choose from (numbers, text or true/false), at least two.")

    @model_validator(mode="after")
    def _one_kind_a_real_range(self) -> "SearchRange":
        given = [kind for kind in KINDS if getattr(self, kind) is not None]
        if len(given) != 1:
            raise ValueError(f"give exactly one of {', '.join(KINDS)} (got {', '.join(given) or 'none'})")
        kind = given[0]
        values = getattr(self, kind)
        if kind == "choice":
            if len(values) < 2:
                raise ValueError(f"choice needs at least two values to choose from, got {shown(values)}")
            if any(not isinstance(value, (str, int, float, bool)) for value in values):
                raise ValueError(f"choice values are numbers, text or true/false, got {shown(values)}")
            if len({repr(value) for value in values}) != len(values):
                raise ValueError(f"choice values must not repeat, got {shown(values)}")
            return self
        if len(values) != 2:
            raise ValueError(f"{kind} takes [low, high], got {shown(values)}")
        low, high = values
        if not low < high:
            raise ValueError(f"{kind} [{low}, {high}] is empty: low must be below high")
        if kind == "log_uniform" and low <= 0:
            raise ValueError(f"log_uniform needs low > 0 (its logarithm), got {low}")
        return self

    @property
    def kind(self) -> str:
        return next(kind for kind in KINDS if getattr(self, kind) is not None)

    @property
    def values(self) -> list[Any]:
        return list(getattr(self, self.kind))

    def describe(self) -> str:
        return f"{self.kind} {self.values}"


class TuneSpec(Params):
    search: dict[str, SearchRange] = Field(
        min_length=1,
        description="Dotted keys of task, model or train (e.g. train.optimizer.learning_rate, model.units) and "
        "the values each trial draws them from. Not a matrix key: the matrix says what is compared, tuning "
        "finds each point's best setting.",
    )
    trials: int = Field(
        ge=1, le=10_000,
        description="Trials per matrix point: the same budget for every point, so the comparison is fair by "
        "construction. Raising it and running again continues each study.",
    )
    objective: str = Field(
        "val_loss",
        description="What a trial is judged by: a value of the training history measured on validation data "
        "(val_loss, val_accuracy, or a score train.validation_metrics lists: val_bleu, val_chrf, val_macro_f1, "
        "val_entity_f1, ...), its best epoch. Never a test metric.",
    )
    direction: Literal["minimize", "maximize"] | None = Field(
        None, description="Default: maximize an accuracy or a task's score (val_bleu, val_macro_f1), minimize "
        "a loss, a cross-entropy or a perplexity.")
    sampler: Literal["tpe", "random"] = Field(
        "tpe", description="tpe: Optuna's Tree-structured Parzen Estimator (after startup_trials random ones); "
        "random: independent draws.")
    pruner: Literal["median", "none"] = Field(
        "median", description="median: stop a trial whose objective at an epoch is worse than the median of "
        "earlier trials at that epoch (Optuna's MedianPruner); none: every trial trains all its epochs.")
    startup_trials: int = Field(
        3, ge=0, le=10_000,
        description="Trials of each point drawn at random, and never pruned, before the sampler and the pruner "
        "learn from the finished ones.")
    warmup_epochs: int = Field(1, ge=0, description="Epochs every trial trains before it can be pruned.")
    seed: int | None = Field(
        None, ge=0,
        description="The seed every trial trains with and the sampler draws from; default the experiment's first "
        "seed. The best setting is then trained on every seed.")
    storage: str | None = Field(
        None, min_length=1, max_length=2000,
        description="A database URL for the studies (e.g. postgresql://host/db, for workers on several machines); "
        "default an SQLite file in the results folder, tuning/studies.db.")

    @model_validator(mode="after")
    def _objective_on_validation_data(self) -> "TuneSpec":
        if not self.objective.startswith(VALIDATION_PREFIX):
            raise SpecError(
                f"objective {shown(self.objective)} is not measured on validation data: a trial is judged by a "
                f"{VALIDATION_PREFIX}* value of its training history (val_loss, val_accuracy), never by the test set",
                path="tune.objective")
        return self

    @property
    def goal(self) -> Literal["minimize", "maximize"]:
        if self.direction:
            return self.direction
        return "maximize" if higher_is_better(self.objective) else "minimize"

    def study_document(self) -> dict[str, Any]:
        """What a study is of: changing any of these starts a new study. The budget is not in it (raising it
        continues the study), nor where the study is stored."""
        return self.model_dump(mode="json", exclude={"trials", "storage"})
