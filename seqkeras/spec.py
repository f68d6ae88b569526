"""YAML experiment files → validated experiment and run objects.

The pipeline, in order:
  1. read the YAML with a safe loader (no tag is ever turned into code);
  2. apply `--set` overrides to the raw mapping;
  3. validate the experiment's fixed structure (pydantic, unknown keys forbidden);
  4. expand `matrix` × `seeds` into raw run mappings;
  5. validate each run's components (task, model, probe) against the registries
     and run the cross-field checks.
Every failure is a `SpecError` naming the file, the dotted key path, the value
received, and what is allowed.
"""

from __future__ import annotations

import copy
import hashlib
import itertools
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, Field, ValidationError, field_validator, model_validator

from seqkeras import catalog
from seqkeras.decoding.decoders import DecoderChoice, decoder_label
from seqkeras.errors import SpecError, unknown_choice
from seqkeras.generation import GenerateSpec
from seqkeras.plotting import PlotSpec
from seqkeras.registry import Component, Params
from seqkeras.validation import translate_validation_error

SECTIONS_WITH_COMPONENTS = {"task": "name", "model": "kind", "probe": "name"}
NAME_PATTERN = r"^[a-z0-9][a-z0-9._-]*$"


# --------------------------------------------------------------------------- #
# The fixed structure of an experiment file
# --------------------------------------------------------------------------- #


class OptimizerSpec(Params):
    name: Literal["adam", "adamw", "sgd", "rmsprop", "adagrad"] = Field(
        "adam", description="Keras optimizer by name."
    )
    learning_rate: float = Field(1e-3, gt=0, le=10, description="Step size.")
    clipnorm: float | None = Field(
        None, gt=0, description="Rescale each gradient whose norm exceeds this (tames exploding gradients)."
    )
    clipvalue: float | None = Field(None, gt=0, description="Clip each gradient element to ±this.")
    momentum: float | None = Field(None, ge=0, lt=1, description="Momentum for sgd and rmsprop.")


class EarlyStoppingSpec(Params):
    monitor: str = Field("val_loss", description="Quantity Keras watches, e.g. val_loss or val_accuracy.")
    patience: int = Field(2, ge=1, description="Epochs without improvement before stopping.")
    restore_best_weights: bool = Field(True, description="Evaluate the best epoch's weights, not the last.")


class TrainSpec(Params):
    epochs: int = Field(5, ge=1, le=10_000, description="Passes over the training set.")
    batch_size: int = Field(32, ge=1, le=1_000_000, description="Examples per gradient step.")
    optimizer: OptimizerSpec = Field(default_factory=OptimizerSpec)
    validation_split: float = Field(
        0.0, ge=0, lt=0.5, description="Share of the training set held out for val_* curves and early stopping."
    )
    early_stopping: EarlyStoppingSpec | None = Field(None, description="Stop when the monitored value stalls.")
    verbose: Literal[0, 1, 2] = Field(2, description="Keras progress: 0 silent, 1 bar, 2 one line per epoch.")
    distribution: Literal["none", "mirrored"] = Field(
        "none",
        description="mirrored: data-parallel over all local GPUs (tf.distribute.MirroredStrategy); "
        "on a machine without GPUs it runs on the CPU and says so.",
    )

    @model_validator(mode="after")
    def _early_stopping_needs_validation(self) -> "TrainSpec":
        if self.early_stopping and self.early_stopping.monitor.startswith("val_") and self.validation_split == 0:
            raise ValueError(
                f"early_stopping monitors {self.early_stopping.monitor!r}, which needs "
                "train.validation_split > 0"
            )
        return self


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


class TableSpec(Params):
    rows: str | list[str] = Field(description="Matrix key(s) (or 'seed') along the rows.")
    columns: str | list[str] | None = Field(None, description="Matrix key(s) along the columns.")
    value: str = Field(description="The metric shown in the cells (mean ± std over seeds).")
    where: dict[str, Any] = Field(default_factory=dict, description="Only runs with these matrix values.")
    title: str | None = None


class CompareTo(Params):
    where: dict[str, Any] = Field(description="The other selection of runs.")
    by: float = Field(0.0, ge=0, description="Required margin.")


# Checks that compare the selected runs with another selection of runs.
COMPARISONS = ("greater_than", "less_than", "close_to")


class ExpectSpec(Params):
    claim: str = Field(description="The lesson's claim, in words.")
    where: dict[str, Any] = Field(default_factory=dict, description="Matrix values selecting the runs.")
    metric: str = Field(description="Metric compared (mean over the selected runs).")
    value: float | None = Field(None, description="Expected value (with abs_tol / rel_tol / sig_digits / decimals).")
    abs_tol: float | None = Field(None, ge=0)
    rel_tol: float | None = Field(None, ge=0)
    sig_digits: int | None = Field(
        None, ge=1, le=17, description="Holds when the measured value prints like `value` with this many significant digits (e.g. 2 for 6.5e-01)."
    )
    decimals: int | None = Field(
        None, ge=0, le=17, description="Holds when the measured value rounds to `value` at this many decimals (e.g. 3 for 0.487)."
    )
    equals: str | None = Field(None, description="Expected text (e.g. a decoded sequence).")
    at_least: float | None = None
    at_most: float | None = None
    greater_than: CompareTo | None = Field(None, description="Measured > the other selection's mean + by.")
    less_than: CompareTo | None = Field(None, description="Measured < the other selection's mean − by.")
    close_to: CompareTo | None = Field(
        None, description="|measured − the other selection's mean| ≤ by (e.g. 'similar accuracy')."
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
        tolerances = [t for t in ("abs_tol", "rel_tol", "sig_digits", "decimals") if getattr(self, t) is not None]
        if self.value is None and tolerances:
            raise ValueError(f"{tolerances[0]} only applies to value")
        if self.value is not None and not tolerances:
            raise ValueError("value needs a tolerance: abs_tol, rel_tol, sig_digits or decimals")
        return self

    @property
    def comparison(self) -> tuple[str, CompareTo] | None:
        """(kind, the other selection) for greater_than / less_than / close_to, else None."""
        for kind in COMPARISONS:
            other = getattr(self, kind)
            if other is not None:
                return kind, other
        return None


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
    table: TableSpec | list[TableSpec] | None = None
    expect: list[ExpectSpec] = Field(default_factory=list)
    plots: list[PlotSpec] = Field(default_factory=list, description="Figures drawn from runs.csv into the results folder.")

    @field_validator("seeds")
    @classmethod
    def _seeds_unique_and_natural(cls, seeds: list[int]) -> list[int]:
        if any(s < 0 for s in seeds):
            raise ValueError("seeds must be ≥ 0")
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


# --------------------------------------------------------------------------- #
# Runs
# --------------------------------------------------------------------------- #


@dataclass(frozen=True)
class ResolvedComponent:
    component: Component
    params: BaseModel

    @property
    def name(self) -> str:
        return self.component.name


@dataclass
class RunSpec:
    """One run: a matrix point and a seed, fully validated."""

    experiment: str
    run_id: str
    seed: int
    matrix_values: dict[str, Any]  # dotted key → value, for runs.csv
    resolved: dict[str, Any]  # the whole resolved spec, written as spec.yaml
    task: ResolvedComponent | None = None
    model: ResolvedComponent | None = None
    probe: ResolvedComponent | None = None
    train: TrainSpec | None = None
    metrics: list[str] = field(default_factory=list)
    decoders: list[Any] = field(default_factory=list)  # DecoderChoice objects

    @property
    def is_probe(self) -> bool:
        return self.probe is not None


@dataclass
class Experiment:
    spec: ExperimentSpec
    source: str  # the file it came from, for messages
    runs: list[RunSpec]
    matrix_columns: list[str]  # leaf keys that vary, in order


# --------------------------------------------------------------------------- #
# Loading
# --------------------------------------------------------------------------- #


def load_yaml(path: Path) -> Any:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as error:
        raise SpecError(f"cannot read the file: {error.strerror}", file=str(path)) from None
    try:
        return yaml.safe_load(text)
    except yaml.MarkedYAMLError as error:
        mark = error.problem_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""
        raise SpecError(f"{where}malformed YAML: {error.problem}", file=str(path)) from None
    except yaml.YAMLError as error:
        raise SpecError(f"malformed YAML: {error}", file=str(path)) from None


def load_experiment(path: Path | str, overrides: list[str] | None = None) -> Experiment:
    path = Path(path)
    raw = load_yaml(path)
    try:
        return build_experiment(raw, source=str(path), overrides=overrides or [])
    except SpecError as error:
        raise error.located(file=str(path)) from None


def build_experiment(raw: Any, *, source: str, overrides: list[str]) -> Experiment:
    if raw is None:
        raise SpecError("the file is empty; an experiment needs at least version, name and a task/model or probe")
    if not isinstance(raw, dict):
        raise SpecError(f"an experiment is a mapping of keys (version, name, ...), not a {type(raw).__name__}")
    raw = copy.deepcopy(raw)
    set_keys = apply_overrides(raw, overrides)
    spec = _validate(ExperimentSpec, raw, path=None)
    _check_sections(spec)
    runs = list(_expand_runs(spec, raw, set_keys))
    matrix_columns = _matrix_columns(spec.matrix)
    _check_references(spec, matrix_columns)
    for run in runs:
        run.matrix_values = {key: lookup(run.resolved, key) for key in matrix_columns}
    return Experiment(spec=spec, source=source, runs=runs, matrix_columns=matrix_columns)


def _validate(model: type[BaseModel], raw: Any, *, path: str | None) -> Any:
    try:
        return model.model_validate(raw)
    except ValidationError as error:
        raise translate_validation_error(error, model, raw, path_prefix=path) from None


# --------------------------------------------------------------------------- #
# --set overrides and dotted keys
# --------------------------------------------------------------------------- #


def apply_overrides(raw: dict[str, Any], overrides: list[str]) -> set[str]:
    """Apply `KEY=VALUE` overrides; return the keys that were set.

    Setting a key that is a matrix axis replaces the axis with that single value
    (or with the list given).
    """
    set_keys = set()
    for item in overrides:
        key, sep, text = item.partition("=")
        key = key.strip()
        if not sep or not key:
            raise SpecError(f"--set expects KEY=VALUE, got {item!r}")
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*", key):
            raise SpecError(f"--set key {key!r} is not a dotted key path like model.units")
        try:
            value = yaml.safe_load(text) if text.strip() else None
        except yaml.YAMLError:
            raise SpecError(f"--set {key}: cannot read {text!r} as a YAML value") from None
        matrix = raw.get("matrix")
        if isinstance(matrix, dict) and key in matrix:
            matrix[key] = value if isinstance(value, list) else [value]
        else:
            _check_override_target(raw, key)
            set_dotted(raw, key, value)
        set_keys.add(key)
    return set_keys


def _check_override_target(raw: dict[str, Any], key: str) -> None:
    """Refuse --set paths into sections the spec does not have (a typo would create one)."""
    head = key.split(".")[0]
    top_level = set(ExperimentSpec.model_fields)
    if head not in top_level:
        raise SpecError(unknown_choice("top-level key", head, top_level), path=f"--set {key}")
    if "." in key and head in SECTIONS_WITH_COMPONENTS and not isinstance(raw.get(head), dict):
        present = [s for s in SECTIONS_WITH_COMPONENTS if isinstance(raw.get(s), dict)]
        raise SpecError(
            f"this experiment has no {head!r} section (it has: {', '.join(present) or 'none'})",
            path=f"--set {key}",
        )


def set_dotted(target: dict[str, Any], key: str, value: Any) -> None:
    """Set `a.b.c` in nested mappings; a mapping value is merged into a mapping."""
    parts = key.split(".")
    node = target
    for part in parts[:-1]:
        child = node.get(part)
        if not isinstance(child, dict):
            child = {}
            node[part] = child
        node = child
    last = parts[-1]
    if isinstance(value, dict) and isinstance(node.get(last), dict):
        node[last] = {**node[last], **copy.deepcopy(value)}
    else:
        node[last] = copy.deepcopy(value)


def lookup(mapping: dict[str, Any], key: str, default: Any = None) -> Any:
    node: Any = mapping
    for part in key.split("."):
        if not isinstance(node, dict) or part not in node:
            return default
        node = node[part]
    return node


# --------------------------------------------------------------------------- #
# Matrix expansion
# --------------------------------------------------------------------------- #


def _matrix_columns(matrix: dict[str, list[Any]]) -> list[str]:
    """The dotted leaf keys a matrix varies; a mapping-valued axis contributes each of its keys."""
    columns: list[str] = []
    for key, values in matrix.items():
        for value in values:
            leaves = _leaf_keys(value, key) if isinstance(value, dict) else [key]
            columns.extend(leaf for leaf in leaves if leaf not in columns)
    return columns


def _leaf_keys(value: dict[str, Any], prefix: str) -> list[str]:
    keys = []
    for name, item in value.items():
        dotted = f"{prefix}.{name}"
        keys.extend(_leaf_keys(item, dotted) if isinstance(item, dict) else [dotted])
    return keys


def _expand_runs(spec: ExperimentSpec, raw: dict[str, Any], set_keys: set[str]):
    axes = list(spec.matrix.items())
    base = {k: v for k, v in raw.items() if k not in ("matrix", "seeds", "table", "expect")}
    for point in itertools.product(*(values for _, values in axes)):
        run_raw = copy.deepcopy(base)
        for (key, _), value in zip(axes, point):
            if key.split(".")[0] not in ("task", "model", "train", "evaluate", "probe"):
                raise SpecError(
                    "a matrix key must start with task, model, train, evaluate or probe",
                    path=f"matrix.{key}",
                )
            set_dotted(run_raw, key, value)
        label_values = dict(zip((key for key, _ in axes), point))
        try:
            resolved = resolve_run(spec, run_raw)
        except SpecError as error:
            raise _attribute_error(error, label_values, set_keys) from None
        for seed in spec.seeds:
            yield _make_run(spec, resolved, label_values, seed)


def _attribute_error(error: SpecError, point: dict[str, Any], set_keys: set[str]) -> SpecError:
    """Say when an invalid value came from a matrix axis or from --set."""
    path = error.path or ""
    for key, value in point.items():
        if path == key or path.startswith(key + "."):
            return SpecError(f"{error.message} (from matrix value {value!r})", path=f"matrix.{key}")
    for key in set_keys:
        if path == key or path.startswith(key + "."):
            return SpecError(f"{error.message} (from --set {key})", path=path)
    return error


@dataclass
class _Resolved:
    resolved: dict[str, Any]
    components: dict[str, ResolvedComponent]
    train: TrainSpec | None
    metrics: list[str]
    decoders: list[Any]


def resolve_run(spec: ExperimentSpec, run_raw: dict[str, Any]) -> _Resolved:
    components = {}
    resolved: dict[str, Any] = {"version": spec.version, "name": spec.name}
    for section, key in SECTIONS_WITH_COMPONENTS.items():
        section_raw = run_raw.get(section)
        if section_raw is None:
            continue
        component = resolve_component(section, section_raw, key)
        components[section] = component
        resolved[section] = {key: component.name, **component.params.model_dump(mode="json")}
    train = evaluate = None
    if "task" in components:
        train = _validate(TrainSpec, run_raw.get("train") or {}, path="train")
        evaluate = _validate(EvaluateSpec, run_raw.get("evaluate") or {}, path="evaluate")
        resolved["train"] = train.model_dump(mode="json")
    metrics = check_run(components, evaluate)
    decoders = list(evaluate.decoders) if evaluate else []
    if "task" in components:
        resolved["evaluate"] = {"metrics": metrics}
        if decoders:
            resolved["evaluate"]["decoders"] = [d.model_dump(mode="json") for d in decoders]
        if evaluate.generate is not None:
            if components["task"].component.problem != "language_modeling":
                raise SpecError("generate applies only to language-modelling tasks", path="evaluate.generate")
            resolved["evaluate"]["generate"] = evaluate.generate.model_dump(mode="json")
    return _Resolved(resolved, components, train, metrics, decoders)


def resolve_component(section: str, raw: Any, key: str) -> ResolvedComponent:
    registry = catalog.REGISTRY_OF_SECTION[section]
    if not isinstance(raw, dict):
        raise SpecError(f"expected a mapping with a {key!r} key, got {raw!r}", path=section)
    if key not in raw:
        raise SpecError(
            f"missing {key!r}. Allowed: {', '.join(registry.names())}.", path=section
        )
    component = registry.get(raw[key], path=f"{section}.{key}")
    params_raw = {k: v for k, v in raw.items() if k != key}
    params = _validate(component.params, params_raw, path=section)
    return ResolvedComponent(component, params)


def check_run(components: dict[str, ResolvedComponent], evaluate: EvaluateSpec | None) -> list[str]:
    """Cross-field checks; returns the metrics this run will compute."""
    task, model, probe = (components.get(s) for s in ("task", "model", "probe"))
    if probe and (task or model):
        raise SpecError("a probe experiment has no task or model section; use one or the other")
    if probe:
        return []
    if not task or not model:
        missing = "task" if not task else "model"
        raise SpecError(f"missing the {missing!r} section (a training experiment needs task and model)", path=missing)
    problem = task.component.problem
    if model.component.problem != problem:
        fitting = [c.name for c in catalog.MODELS if c.problem == problem]
        raise SpecError(
            f"model kind {model.name!r} solves {model.component.problem}, but task {task.name!r} is "
            f"{problem}. Model kinds for this task: {', '.join(fitting)}.",
            path="model.kind",
        )
    check_model_size(model.params, vocabulary=2, outputs=2)
    metrics = list(evaluate.metrics) if evaluate and evaluate.metrics else list(catalog.DEFAULT_METRICS[problem])
    for index, name in enumerate(metrics):
        metric = catalog.METRICS.get(name, path=f"evaluate.metrics[{index}]")
        if problem not in metric.problems:
            raise SpecError(
                f"metric {name!r} does not apply to {problem} (it applies to {', '.join(metric.problems)})",
                path=f"evaluate.metrics[{index}]",
            )
    return metrics


# A run whose weights (with gradients and Adam's two moments: ×4, float32)
# would not fit comfortably in a workstation's memory is refused before
# anything is allocated.
MAX_PARAMETERS = 500_000_000


def check_model_size(params: BaseModel, *, vocabulary: int, outputs: int) -> None:
    from seqkeras.models.recurrent import RecurrentParams, estimated_parameters

    if not isinstance(params, RecurrentParams):
        return
    count = estimated_parameters(params, vocabulary, outputs)
    if count > MAX_PARAMETERS:
        gigabytes = count * 4 * 4 / 1e9
        raise SpecError(
            f"the model would have about {count:.3g} parameters (~{gigabytes:,.0f} GB to train in float32), "
            f"more than the {MAX_PARAMETERS:.0e} seqkeras allows; reduce units, layers or embedding_dim",
            path="model",
        )


def _make_run(spec: ExperimentSpec, resolved: _Resolved, point: dict[str, Any], seed: int) -> RunSpec:
    document = {**resolved.resolved, "seed": seed}
    digest = hashlib.sha256(json.dumps(document, sort_keys=True, default=str).encode()).hexdigest()[:8]
    return RunSpec(
        experiment=spec.name,
        run_id=make_run_id(point, seed, digest),
        seed=seed,
        matrix_values={},
        resolved=document,
        task=resolved.components.get("task"),
        model=resolved.components.get("model"),
        probe=resolved.components.get("probe"),
        train=resolved.train,
        metrics=resolved.metrics,
        decoders=resolved.decoders,
    )


def make_run_id(point: dict[str, Any], seed: int, digest: str) -> str:
    """Readable and stable: `cell=lstm_lag=50_seed=0_1a2b3c4d`."""
    parts = []
    for key, value in point.items():
        if isinstance(value, dict):
            parts.extend(f"{k}={_slug(v)}" for k, v in value.items())
        else:
            parts.append(f"{key.split('.')[-1]}={_slug(value)}")
    parts += [f"seed={seed}", digest]
    return "_".join(parts)


def _slug(value: Any) -> str:
    text = json.dumps(value, sort_keys=True) if isinstance(value, (dict, list)) else str(value)
    text = re.sub(r"[^A-Za-z0-9_.+-]+", "-", text).strip("-")
    return text[:40] or "none"


# --------------------------------------------------------------------------- #
# Cross-section checks
# --------------------------------------------------------------------------- #


def _check_sections(spec: ExperimentSpec) -> None:
    if spec.probe is None and (spec.task is None or spec.model is None):
        raise SpecError("an experiment needs either a probe section, or task and model sections")
    if spec.probe is not None and (spec.task is not None or spec.model is not None or spec.train is not None):
        raise SpecError("a probe experiment has no task, model or train section; use one or the other")


def _check_references(spec: ExperimentSpec, matrix_columns: list[str]) -> None:
    """Tables and expectations may only select by what varies (matrix keys, decoders) or by seed."""
    allowed = matrix_columns + ["seed"] + decoder_columns(spec)

    def check(key: str, path: str) -> None:
        if key not in allowed:
            raise SpecError(unknown_choice("matrix key", key, allowed), path=path)

    for index, table in enumerate(spec.tables()):
        prefix = f"table[{index}]" if isinstance(spec.table, list) else "table"
        for attribute in ("rows", "columns"):
            keys = getattr(table, attribute)
            for key in [keys] if isinstance(keys, str) else keys or []:
                check(key, f"{prefix}.{attribute}")
        for key in table.where:
            check(key, f"{prefix}.where")
    for index, plot in enumerate(spec.plots):
        for attribute in ("x", "hue", "facet"):
            if getattr(plot, attribute) is not None:
                check(getattr(plot, attribute), f"plots[{index}].{attribute}")
        for key in plot.where:
            check(key, f"plots[{index}].where")
    for index, expect in enumerate(spec.expect):
        for key in expect.where:
            check(key, f"expect[{index}].where")
        if expect.comparison:
            kind, other = expect.comparison
            for key in other.where:
                check(key, f"expect[{index}].{kind}.where")


def decoder_columns(spec: ExperimentSpec) -> list[str]:
    """`decoder` (a label such as 'beam(width=5)') and `decoder.<parameter>` for each decoder given."""
    decoders = spec.evaluate.decoders if spec.evaluate else []
    if not decoders:
        return []
    columns = ["decoder"]
    for choice in decoders:
        columns += [f"decoder.{key}" for key in choice.model_dump() if f"decoder.{key}" not in columns]
    return columns


def decoder_keys(choice: Any) -> dict[str, Any]:
    """The row-identifying columns of one decoder's results."""
    return {"decoder": decoder_label(choice), **{f"decoder.{k}": v for k, v in choice.model_dump().items()}}
