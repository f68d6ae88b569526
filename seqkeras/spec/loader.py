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
import itertools
import json
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from seqkeras import catalog
from seqkeras.errors import SpecError, shown, translate_validation_error, unknown_choice
from seqkeras.evaluation import metric_catalog
from seqkeras.spec.checks import (
    check_batches, check_class_weights, check_outputs, check_references, check_run, check_sections, check_tune,
    check_validation, check_validation_metrics,
)
from seqkeras.spec.runs import Experiment, ResolvedComponent, RunSpec, make_run_id, spec_digest
from seqkeras.spec.outputs import output_rows
from seqkeras.spec.selection import parse_only, select_runs, without_set_away
from seqkeras.spec.sections import SECTIONS_WITH_COMPONENTS, EvaluateSpec, ExperimentSpec
from seqkeras.problems import problem_named
from seqkeras.training import batching
from seqkeras.training.settings import TrainSpec
from seqkeras.yaml_reader import load_spec_yaml, parse_yaml

# --------------------------------------------------------------------------- #
# Loading
# --------------------------------------------------------------------------- #


def load_yaml(path: Path) -> Any:
    """The spec file's data; `yaml_reader` refuses what is not a spec's kind of data."""
    return load_spec_yaml(path)


def load_experiment(path: Path | str, overrides: list[str] | None = None, only: list[str] | None = None) -> Experiment:
    """The experiment in `path`, after `--set` overrides, with only the runs `--only` names (see spec.selection)."""
    path = Path(path)
    wanted = parse_only(only or [])
    raw = load_yaml(path)
    try:
        experiment = build_experiment(raw, source=str(path), overrides=overrides or [])
        return select_runs(experiment, wanted)
    except SpecError as error:
        raise error.located(file=str(path)) from None


def build_experiment(raw: Any, *, source: str, overrides: list[str]) -> Experiment:
    if raw is None:
        raise SpecError("the file is empty; an experiment needs at least version, name and a task/model or probe")
    if not isinstance(raw, dict):
        raise SpecError(f"an experiment is a mapping of keys (version, name, ...), not a {type(raw).__name__}")
    raw = copy.deepcopy(raw)
    override_notes: list[str] = []
    set_keys = apply_overrides(raw, overrides, override_notes)
    spec = _validate(ExperimentSpec, raw, path=None)
    check_sections(spec)
    runs = list(_expand_runs(spec, raw, set_keys))
    _check_distinct(runs)
    matrix_columns = _matrix_columns(spec.matrix)
    try:
        check_references(spec, matrix_columns, runs, matrix_value)
    except SpecError as error:
        if "matrix" not in set_keys or spec.matrix:
            raise
        raise SpecError(f"{error.message} (--set matrix={{}} removed the matrix this names; keep one value of each "
                        "axis instead, --set KEY=VALUE, or run some of the matrix with --only KEY=VALUE)",
                        path=error.path) from None
    for run in runs:
        run.matrix_values = {key: matrix_value(run, key) for key in matrix_columns}
    rows = [row for run in runs for row in output_rows(run)]
    spec, notes = without_set_away(spec, rows, set_keys)
    check_outputs(spec, rows)
    check_tune(spec, runs, lambda run, values: configured_run(spec, raw_base(raw), run.point, values, run.seed))
    return Experiment(spec=spec, source=source, runs=runs, matrix_columns=matrix_columns,
                      notes=override_notes + notes, base=raw_base(raw))


def _validate(model: type[BaseModel], raw: Any, *, path: str | None) -> Any:
    try:
        return model.model_validate(raw)
    except ValidationError as error:
        raise translate_validation_error(error, model, raw, path_prefix=path) from None


# --------------------------------------------------------------------------- #
# --set overrides and dotted keys
# --------------------------------------------------------------------------- #


def apply_overrides(raw: dict[str, Any], overrides: list[str], notes: list[str] | None = None) -> set[str]:
    """Apply `KEY=VALUE` overrides; return the keys that were set.

    Setting a key that is a matrix axis replaces the axis with that single value
    (or with the list given); `matrix.AXIS=[...]` sets the axis itself. A mapping
    value is merged into the mapping there, except an empty one, which replaces it:
    `--set matrix={}` means no matrix, `--set train={}` the defaults. An override
    that changes nothing, or that empties a mapping or list, is said in `notes`
    (which `validate` and `run` print).
    """
    set_keys = set()
    notes = [] if notes is None else notes
    for item in overrides:
        key, sep, text = item.partition("=")
        key = key.strip()
        if not sep or not key:
            raise SpecError(f"--set expects KEY=VALUE, got {shown(item)}")
        if len(key) > 200 or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*", key):
            raise SpecError(f"--set key {shown(key)} is not a dotted key path like model.units")
        value = parse_yaml(text, path=f"--set {key}") if text.strip() else None
        before = copy.deepcopy(raw)
        matrix = raw.get("matrix")
        axis = key.removeprefix("matrix.")
        if key.startswith("matrix.") and (matrix is None or isinstance(matrix, dict)):
            # Matrix keys are dotted themselves: matrix.task.lag is the axis task.lag, never matrix → task → lag.
            raw["matrix"] = {**(matrix or {}), axis: copy.deepcopy(value if isinstance(value, list) else [value])}
            set_keys.add(axis)
        elif isinstance(matrix, dict) and key in matrix:
            matrix[key] = value if isinstance(value, list) else [value]
        else:
            _check_override_target(raw, key)
            if value == {} and isinstance(lookup(raw, key), dict):
                set_dotted(raw, key, None)  # an empty mapping replaces; merged, it would change nothing
            set_dotted(raw, key, value)
        set_keys.add(key)
        notes += _override_notes(key, text.strip(), before, raw)
    return set_keys


def _override_notes(key: str, text: str, before: dict[str, Any], after: dict[str, Any]) -> list[str]:
    """What to say about one --set: that it changed nothing, or emptied a mapping or list."""
    given = f"--set {key}={text if len(text) <= 60 else text[:60] + '…'}"
    if after == before:
        return [f"{given} changes nothing: the spec already has this value"]
    old, new = lookup(before, key), lookup(after, key)
    if key == "matrix" and old and not new:
        return [f"--set matrix={{}}: no matrix (it varied {', '.join(map(str, old))}): one run per seed"]
    if isinstance(old, (dict, list)) and old and isinstance(new, (dict, list)) and not new:
        return [f"{given} empties {key} (it was {shown(old, 80)})"]
    return []


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


def matrix_value(run: RunSpec, key: str) -> Any:
    """The value a run has for a matrix key: its resolved spec's, or, for a key the resolved spec leaves out at its
    default (`Params.hashed_only_when_set`, `UNHASHED_DEFAULTS`: keys added after results existed), the value its
    component or train section runs with — a matrix point `{level: word}` is `word` in runs.csv, not blank."""
    value = lookup(run.resolved, key)
    if value is None:
        section, _, name = key.partition(".")
        params = run.train if section == "train" else getattr(getattr(run, section, None), "params", None)
        if params is not None and name in type(params).model_fields:
            value = getattr(params, name)
    return value


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


# Expanding a matrix builds every run before anything trains: 20 axes of two values would
# be a million runs. Refuse before expanding.
MAX_RUNS = 10_000


def _check_axes(matrix: dict[str, list[Any]], seeds: list[int]) -> None:
    """Each key varies along one axis only, and the matrix has a number of runs one can make."""
    sets = {axis: _matrix_columns({axis: values}) for axis, values in matrix.items()}
    for (axis, keys), (other, other_keys) in itertools.combinations(sets.items(), 2):
        for key in keys:
            clash = next((o for o in other_keys if o == key or key.startswith(o + ".") or o.startswith(key + ".")),
                         None)
            if clash is not None:
                raise SpecError(
                    f"matrix axes {axis!r} and {other!r} both set {min(key, clash, key=len)}: the later one "
                    "would overwrite the earlier in every run while run ids show both; vary each key along one axis",
                    path=f"matrix.{other}",
                )
    count = math.prod(len(values) for values in matrix.values()) * len(seeds)
    if count > MAX_RUNS:
        raise SpecError(f"the matrix expands to {count:,} runs (axes × seeds), more than the {MAX_RUNS:,} "
                        "seqkeras makes in one experiment; split it", path="matrix")


def _check_distinct(runs: list[RunSpec]) -> None:
    """Two matrix points that resolve to one spec would be one run counted twice ("± 0" over a single model)."""
    first: dict[str, RunSpec] = {}
    for run in runs:
        document = json.dumps(run.resolved, sort_keys=True, default=str)
        if document in first:
            raise SpecError(
                f"runs {first[document].run_id} and {run.run_id} resolve to the same spec (a value equal to a "
                "default, or written twice); remove one of the matrix values",
                path="matrix",
            )
        first[document] = run


def raw_base(raw: dict[str, Any]) -> dict[str, Any]:
    """What every run of the spec starts from: its mapping less the keys that say which runs there are and what
    is made of them."""
    return {k: v for k, v in raw.items() if k not in ("matrix", "seeds", "table", "expect", "tune")}


def configured_run(spec: ExperimentSpec, base: dict[str, Any], point: dict[str, Any], values: dict[str, Any],
                   seed: int, matrix_columns: list[str] | None = None) -> RunSpec:
    """The run of one matrix point and seed with `values` (dotted key → value) set on top: a tuning trial, or a
    point's best setting trained on a seed. Its id is the point's, with the digest of what it resolves to."""
    run_raw = copy.deepcopy(base)
    for key, value in {**point, **values}.items():
        set_dotted(run_raw, key, value)
    run = _make_run(spec, resolve_run(spec, run_raw), point, seed)
    run.matrix_values = {key: matrix_value(run, key) for key in matrix_columns or []}
    return run


def _expand_runs(spec: ExperimentSpec, raw: dict[str, Any], set_keys: set[str]):
    _check_axes(spec.matrix, spec.seeds)
    axes = list(spec.matrix.items())
    base = raw_base(raw)
    for point in itertools.product(*(values for _, values in axes)):
        run_raw = copy.deepcopy(base)
        for (key, _), value in zip(axes, point):
            if key.split(".")[0] not in ("task", "model", "train", "evaluate", "probe"):
                raise SpecError(
                    "a matrix key must start with task, model, train, evaluate or probe",
                    path=f"matrix.{key}",
                )
            if (key.split(".")[0] == "probe") != (spec.probe is not None):
                raise SpecError(  # the run would ignore it: every value the same run under another id
                    "a probe experiment varies only probe keys" if spec.probe is not None else
                    "an experiment that trains varies task, model, train or evaluate keys, not probe ones",
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
    """Say when an invalid value came from --set or from a matrix axis (--set first: the user just typed it)."""
    path = error.path or ""
    for key in set_keys:
        if path == key or path.startswith(key + "."):
            under_axis = any(key.startswith(axis + ".") for axis in point)
            hint = (f"; --set changes every run of the matrix, --only {key}=VALUE runs only those that have it"
                    if under_axis else "")
            return SpecError(f"{error.message} (from --set {key}{hint})", path=path)
    for key, value in point.items():
        if path == key or path.startswith(key + "."):
            return SpecError(f"{error.message} (from matrix value {shown(value)})", path=f"matrix.{key}")
    return error


def concrete_batches(task: ResolvedComponent, train: TrainSpec) -> str:
    """train.batches as the run trains: `auto` becomes by_length for a classification task of texts of varied
    lengths, shuffled for any other. A classifier's loss is one per example and every classification model kind
    masks the padding, so batches by length change only which texts share a batch (and save the padding's
    compute); a per-token loss averages over a batch's token slots, padding included, which by length would
    change. The choice is what the run's spec records and its id hashes: runs that shuffle keep their ids."""
    if train.batches != batching.AUTO:
        return train.batches
    component = task.component
    return batching.BY_LENGTH if problem_named(component.problem).by_length_by_default and component.varied_lengths \
        else batching.SHUFFLED


# Train keys that are in a run's resolved spec (and so its id) only when set to another value than these:
# added after results existed, whose run ids must not change.
UNHASHED_DEFAULTS = {"tensorboard": False, "keep_model": True, "reduce_on_plateau": None, "class_weights": None,
                     "validation_metrics": None, "steps": None, "evaluate_every": None, "batches": "shuffled"}
# The same for the optimizer's keys added after results existed.
UNHASHED_OPTIMIZER_DEFAULTS = {"schedule": None, "rho": None}


@dataclass
class _Resolved:
    resolved: dict[str, Any]
    hashed: dict[str, Any]  # `resolved` as the run id hashes it (`hashed_spec`)
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
        resolved[section] = {key: component.name, **component.params.hashed()}
    train = evaluate = None
    if "task" in components:
        train = _validate(TrainSpec, run_raw.get("train") or {}, path="train")
        train = train.model_copy(update={"batches": concrete_batches(components["task"], train)})
        evaluate = _validate(EvaluateSpec, run_raw.get("evaluate") or {}, path="evaluate")
        # tensorboard and keep_model only when not their defaults, as diagnostics below: the runs of specs
        # without them keep their ids.
        left_out = {key for key, default in UNHASHED_DEFAULTS.items() if getattr(train, key) == default}
        if "verbose" not in train.model_fields_set:
            left_out.add("verbose")  # hashed as VERBOSE_IN_RUN_IDS (hashed_spec)
        exclude: dict[str, Any] = dict.fromkeys(left_out, True)
        optimizer_left_out = {key: True for key, default in UNHASHED_OPTIMIZER_DEFAULTS.items()
                              if getattr(train.optimizer, key) == default}
        if optimizer_left_out:
            exclude["optimizer"] = optimizer_left_out
        resolved["train"] = train.model_dump(mode="json", exclude=exclude or None)
        check_validation(components["task"], train)
        check_validation_metrics(components["task"], components.get("model"), train)
        check_class_weights(components["task"], components.get("model"), train)
        check_batches(components["task"], train)
    metrics = check_run(components, evaluate)
    decoders = list(evaluate.decoders) if evaluate else []
    if "task" in components:
        resolved["evaluate"] = {"metrics": metrics}
        if decoders:
            resolved["evaluate"]["decoders"] = [d.model_dump(mode="json") for d in decoders]
        if evaluate.diagnostics:  # only when asked for: the runs of specs without it keep their ids
            resolved["evaluate"]["diagnostics"] = list(evaluate.diagnostics)
        if evaluate.generate is not None:
            if not problem_named(components["task"].component.problem).continues_prompts:
                raise SpecError("generate applies only to language-modelling tasks", path="evaluate.generate")
            resolved["evaluate"]["generate"] = evaluate.generate.model_dump(mode="json")
    defaulted = "task" in components and not evaluate.metrics
    hashed = hashed_spec(resolved, components["task"].component.problem if defaulted else None)
    return _Resolved(resolved, hashed, components, train, metrics, decoders)


# train.verbose's default when run ids were first hashed. It became 1 (a bar on a terminal) later; a run that
# leaves it unset is hashed with this value, so that change renamed no run.
VERBOSE_IN_RUN_IDS = 2
# Training options that change no number, left out of the run id. (train.verbose changes none either, but
# recorded results name it in their ids: it stays, and a run finds its folder recorded at another verbosity,
# execution.executors.adopt_recorded_folders.)
NOT_IN_RUN_IDS = frozenset({"tensorboard"})


def hashed_spec(resolved: dict[str, Any], default_metrics_of: str | None) -> dict[str, Any]:
    """The resolved spec as its run id hashes it: the same, but that a run naming no metrics (`default_metrics_of`:
    its problem) is hashed with `metric_catalog.DEFAULTS_IN_RUN_IDS`, not the DEFAULT_METRICS it computes, so a
    metric added to a problem's defaults changes no run id; and a run that leaves train.verbose unset (its
    spec.yaml leaves it out too) is hashed with VERBOSE_IN_RUN_IDS, whatever today's default. What changes no
    number is not hashed: train.tensorboard (event files beside the same results), so `run --tensorboard` reuses
    the runs already recorded, and says which have no events."""
    hashed = dict(resolved)
    if default_metrics_of is not None:
        hashed["evaluate"] = {**resolved["evaluate"],
                              "metrics": list(metric_catalog.DEFAULTS_IN_RUN_IDS[default_metrics_of])}
    if "train" in resolved:
        train = {key: value for key, value in resolved["train"].items() if key not in NOT_IN_RUN_IDS}
        hashed["train"] = {**train, "verbose": train.get("verbose", VERBOSE_IN_RUN_IDS)}
    return hashed


def resolve_component(section: str, raw: Any, key: str) -> ResolvedComponent:
    registry = catalog.REGISTRY_OF_SECTION[section]
    if not isinstance(raw, dict):
        raise SpecError(f"expected a mapping with a {key!r} key, got {shown(raw)}", path=section)
    if key not in raw:
        raise SpecError(
            f"missing {key!r}. Allowed: {', '.join(registry.names())}.", path=section
        )
    component = registry.get(raw[key], path=f"{section}.{key}")
    params_raw = {k: v for k, v in raw.items() if k != key}
    params = _validate(component.params, params_raw, path=section)
    return ResolvedComponent(component, params)


def _make_run(spec: ExperimentSpec, resolved: _Resolved, point: dict[str, Any], seed: int) -> RunSpec:
    document = {**resolved.resolved, "seed": seed}
    hashed = {**resolved.hashed, "seed": seed}
    return RunSpec(
        experiment=spec.name,
        run_id=make_run_id(point, seed, spec_digest(hashed)),
        seed=seed,
        matrix_values={},
        resolved=document,
        hashed=hashed,
        task=resolved.components.get("task"),
        model=resolved.components.get("model"),
        probe=resolved.components.get("probe"),
        train=resolved.train,
        metrics=resolved.metrics,
        decoders=resolved.decoders,
        point=dict(point),
    )


