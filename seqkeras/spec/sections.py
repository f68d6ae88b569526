"""The sections of an experiment file, as pydantic schemas: its fixed structure.

Reporting and execution read these classes. The sections a stage below the
spec also builds for itself are that stage's own schema, composed here: `train`
(`training.settings`, which a probe fills to train a model) and
`evaluate.generate` (`evaluation.settings`). The components inside `task`, `model` and
`probe` stay raw mappings here; `seqkeras.spec.loader` resolves them against the
catalog.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from seqkeras.backends.runtime import Backend
from seqkeras.decoding.decoders import MAX_RUN_SEED, DecoderChoice
from seqkeras.evaluation.settings import GenerateSpec
from seqkeras.registry import Params
from seqkeras.training.settings import TrainSpec
from seqkeras.tuning.settings import TuneSpec

SECTIONS_WITH_COMPONENTS = {"task": "name", "model": "kind", "probe": "name"}


NAME_PATTERN = r"^[a-z0-9][a-z0-9._-]*$"


# Measurements of a trained model besides its metrics (seqkeras.evaluation.<name>); more can join the list.
DiagnosticName = Literal["gradient_flow"]


class EvaluateSpec(Params):
    metrics: list[str] = Field(
        default_factory=list,
        description="Metrics to compute on the test set; empty means the model kind's defaults.",
    )
    decoders: list[DecoderChoice] = Field(
        default_factory=list,
        description="Decoders applied to one trained model (seq2seq, generation): each gives its own row, "
        "labelled in the `decoder` column; the model is trained once.",
    )
    generate: GenerateSpec | None = Field(
        None,
        description="Language models: continue these prompts with each decoder (greedy when none is given) and "
        "measure the samples (distinct-1/2, repetition rate, their perplexity); samples.csv lists them.",
    )
    diagnostics: list[DiagnosticName] = Field(
        default_factory=list,
        description="Measurements of the model itself, at initialization and after training. gradient_flow: the "
        "gradient norm ‖∂(g0·h_T)/∂h_(T−k)‖ (g0 = ones/√d) k steps back through the first recurrent layer's cell "
        "(a bidirectional layer's forward direction), mean over the first 32 test sequences; writes "
        "gradient_flow.csv (steps_back, at_init, trained) and its plot, and reports gradient_drop_init/_trained "
        "(log10 of the fall across the sequence) and gradient_at_start_init/_trained. Recurrent model kinds only.",
    )

    @field_validator("diagnostics")
    @classmethod
    def _diagnostics_unique(cls, diagnostics: list[str]) -> list[str]:
        if len(set(diagnostics)) != len(diagnostics):
            raise ValueError("diagnostics must not repeat")
        return diagnostics


class TableSpec(Params):
    rows: str | list[str] = Field(description="Matrix key(s) (or 'seed') along the rows.")
    columns: str | list[str] | None = Field(None, description="Matrix key(s) along the columns.")
    value: str = Field(description="The metric shown in the cells (mean ± std over seeds).")
    where: dict[str, Any] = Field(default_factory=dict, description="Only runs with these matrix values.")
    pool: list[str] = Field(
        default_factory=list,
        description="Matrix or decoder keys that may vary within a cell and are averaged over, like the seed; "
                    "any other key that varies and is not a row, column or where key is an error.",
    )
    title: str | None = None


class CompareTo(Params):
    where: dict[str, Any] = Field(description="The other selection of runs.")
    by: float = Field(0.0, ge=0, description="Required margin.")
    beyond_spread: bool = Field(
        False,
        description="greater_than / less_than: the difference must also exceed the two selections' seed standard "
        "deviations added together, so that the claim is not decided by which seeds were drawn (needs 2 or more "
        "runs on each side).",
    )


# Checks that compare the selected runs with another selection of runs.
COMPARISONS = ("greater_than", "less_than", "close_to")


class ExpectSpec(Params):
    claim: str = Field(description="The lesson's claim, in words.")
    where: dict[str, Any] = Field(default_factory=dict, description="Matrix values selecting the runs.")
    metric: str = Field(description="Metric compared (mean over the selected runs).")
    relative_to: str | None = Field(
        None,
        description="Another metric of the same runs: each run's metric is divided by it before the mean "
        "(e.g. BLEU on long sources relative to BLEU on short ones: how much of its quality a model keeps).",
    )
    value: float | None = Field(None, description="Expected value (with abs_tol / rel_tol / sig_digits / decimals).")
    abs_tol: float | None = Field(None, ge=0)
    rel_tol: float | None = Field(None, ge=0)
    sig_digits: int | None = Field(
        None, ge=1, le=17,
        description="Holds when the measured value prints like `value` with this many significant digits "
        "(e.g. 2 for 6.5e-01).",
    )
    decimals: int | None = Field(
        None, ge=0, le=17,
        description="Holds when the measured value rounds to `value` at this many decimals (e.g. 3 for 0.487).",
    )
    equals: str | None = Field(None, description="Expected text (e.g. a decoded sequence).")
    at_least: float | None = None
    at_most: float | None = None
    greater_than: CompareTo | None = Field(None, description="Measured > the other selection's mean + by.")
    less_than: CompareTo | None = Field(None, description="Measured < the other selection's mean − by.")
    close_to: CompareTo | None = Field(
        None, description="|measured − the other selection's mean| ≤ by (e.g. 'similar accuracy')."
    )
    converged: bool = Field(
        False,
        description="The claim holds only if every run it selects (on both sides of a comparison) converged: none "
        "was still improving when its epochs ran out (runs.csv's still_improving). Runs trained over epochs only.",
    )
    min_seeds: int | None = Field(
        None, ge=2, le=1000,
        description="Judge the claim over at least this many runs (seeds) with the 95% t-interval of their mean (of "
        "the differences paired by seed, for greater_than, less_than and close_to): reproduced when the interval "
        "lies on the claim's side of its bound, NOT reproduced when it lies on the other side, undecided when it "
        "straddles the bound or fewer runs finished (the verdict says about how many more seeds would decide). "
        "For claims on trained models, whose last epochs vary from seed to seed and machine to machine.",
    )

    @model_validator(mode="after")
    def _one_kind_of_check(self) -> "ExpectSpec":
        kinds = [k for k in ("value", "equals", *COMPARISONS) if getattr(self, k) is not None]
        has_bounds = self.at_least is not None or self.at_most is not None
        if len(kinds) + has_bounds != 1:
            raise ValueError(
                "give exactly one of: value (with a tolerance), equals, at_least/at_most, greater_than, less_than, "
                "close_to"
            )
        if self.close_to is not None and self.close_to.by <= 0:
            raise ValueError("close_to needs by > 0: how far apart the two may be")
        if self.relative_to is not None and self.equals is not None:
            raise ValueError("relative_to divides numbers; it does not apply to equals")
        if self.close_to is not None and self.close_to.beyond_spread:
            raise ValueError("beyond_spread applies to greater_than and less_than, not close_to")
        tolerances = [t for t in ("abs_tol", "rel_tol", "sig_digits", "decimals") if getattr(self, t) is not None]
        if self.value is None and tolerances:
            raise ValueError(f"{tolerances[0]} only applies to value")
        if self.value is not None and not tolerances:
            raise ValueError("value needs a tolerance: abs_tol, rel_tol, sig_digits or decimals")
        if self.min_seeds is not None and (self.equals is not None or self.sig_digits is not None
                                           or self.decimals is not None):
            raise ValueError("min_seeds judges a mean with its interval: it applies to at_least/at_most, value with "
                             "abs_tol or rel_tol, and the comparisons, not to equals, sig_digits or decimals")
        if self.min_seeds is not None and self.comparison is not None and self.comparison[1].beyond_spread:
            raise ValueError("min_seeds judges the difference with its interval; beyond_spread is the rougher rule "
                             "it replaces: give one of the two")
        return self

    @property
    def comparison(self) -> tuple[str, CompareTo] | None:
        """(kind, the other selection) for greater_than / less_than / close_to, else None."""
        for kind in COMPARISONS:
            other = getattr(self, kind)
            if other is not None:
                return kind, other
        return None


FILE_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_-]*$"


class PlotSpec(Params):
    """One declared plot: a metric of runs.csv against a matrix key."""

    x: str = Field(description="Matrix key (or 'seed') along the x axis.")
    y: str | list[str] = Field(description="Metric(s) on the y axis; several metrics give one series each.")
    hue: str | None = Field(None, description="Matrix key: one series (colour) per value.")
    facet: str | None = Field(None, description="Matrix key: one panel per value.")
    kind: Literal["line", "bar", "scatter"] = Field(
        "line", description="line: mean over seeds joined by lines; bar: grouped bars; scatter: every run as a point."
    )
    logx: bool = Field(False, description="Logarithmic x axis (numeric x only).")
    logy: bool = Field(False, description="Logarithmic y axis.")
    errorbars: bool = Field(True, description="Error bars of ± one standard deviation over seeds (line and bar).")
    where: dict[str, Any] = Field(default_factory=dict, description="Only runs with these matrix values.")
    title: str | None = Field(None, description="Figure title; default '<y> by <x>'.")
    file: str | None = Field(
        None, pattern=FILE_PATTERN, max_length=100,
        description="PNG file name in the results folder, without .png; default from y, x and hue.",
    )

    @model_validator(mode="after")
    def _consistent(self) -> "PlotSpec":
        if isinstance(self.y, list) and not self.y:
            raise ValueError("y needs at least one metric")
        if self.kind == "bar" and self.logx:
            raise ValueError("logx does not apply to bar plots (their x axis is categorical)")
        return self

    def metrics(self) -> list[str]:
        return [self.y] if isinstance(self.y, str) else list(self.y)

    def default_title(self) -> str:
        return self.title or f"{', '.join(self.metrics())} by {self.x}" + (f" and {self.hue}" if self.hue else "")

    def default_file(self) -> str:
        name = f"{'-'.join(self.metrics())}_by_{self.x}" + (f"_by_{self.hue}" if self.hue else "")
        return self.file or _file_slug(name + ("" if self.kind == "line" else f"_{self.kind}"))


def _file_slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_-]+", "-", text).strip("-")[:100] or "plot"


class ExperimentSpec(Params):
    """The top level of an experiment file (components still raw)."""

    version: Literal[1] = Field(description="Spec format version; only 1 exists.")
    name: str = Field(pattern=NAME_PATTERN, max_length=100, description="Results go to results/<name>/.")
    description: str = ""
    task: dict[str, Any] | None = None
    model: dict[str, Any] | None = None
    train: TrainSpec | None = None
    evaluate: EvaluateSpec | None = None
    probe: dict[str, Any] | None = None
    matrix: dict[str, list[Any]] = Field(default_factory=dict)
    seeds: list[int] = Field(default_factory=lambda: [0], min_length=1)
    tune: TuneSpec | None = Field(
        None,
        description="Tune each matrix point before comparing: the same number of trials for every point, judged "
        "on validation data; then each point's best setting is trained on every seed and evaluated on the test "
        "set, and the tables and claims read those runs.",
    )
    table: TableSpec | list[TableSpec] | None = None
    expect: list[ExpectSpec] = Field(default_factory=list)
    plots: list[PlotSpec] = Field(
        default_factory=list, description="Figures drawn from runs.csv into the results folder."
    )
    backend: Backend | None = Field(
        None,
        description="The Keras backend this experiment is computed on, e.g. where its committed results were made "
        "(where its committed results were computed): `run` takes it under the default --backend auto "
        "and refuses another.",
    )
    reference_tolerance: float | None = Field(
        None, ge=0, allow_inf_nan=False,
        description="For an experiment that trains: how far each metric's mean over seeds may move from a reference's "
        "(`run --reference`) on another machine, when that is more than 3 times the reference's own spread over "
        "seeds. Probes are held to float rounding.",
    )

    @field_validator("seeds")
    @classmethod
    def _seeds_unique_and_natural(cls, seeds: list[int]) -> list[int]:
        if any(s < 0 or s > MAX_RUN_SEED for s in seeds):
            raise ValueError(f"seeds must be between 0 and {MAX_RUN_SEED:,} (so that every backend accepts the "
                             "seeds derived from them)")
        if len(set(seeds)) != len(seeds):
            raise ValueError("seeds must not repeat")
        return seeds

    @field_validator("matrix")
    @classmethod
    def _axes_not_empty(cls, matrix: dict[str, list[Any]]) -> dict[str, list[Any]]:
        for key, values in matrix.items():
            if not values:
                raise ValueError(f"matrix axis {key!r} has no values")
        return matrix

    def tables(self) -> list[TableSpec]:
        if self.table is None:
            return []
        return self.table if isinstance(self.table, list) else [self.table]

