"""Named cross-section rules: what one section's schema alone cannot check.

Each rule raises one `SpecError` sentence naming the key path. They run after
the structure is validated and before anything trains.
"""

from __future__ import annotations

import importlib.util
import json

from seqkeras import catalog
from seqkeras.evaluation import metric_catalog
from seqkeras.errors import SpecError, did_you_mean, shown, unknown_choice
from seqkeras.spec.outputs import RUN_COLUMNS, OutputRow, matching
from seqkeras.spec.runs import ResolvedComponent, decoder_columns
from seqkeras.spec.sections import EvaluateSpec, ExperimentSpec
from seqkeras.problems import problem_named
from seqkeras.tasks.validation import validation_key
from seqkeras.training.batching import BY_LENGTH
from seqkeras.training.settings import TrainSpec


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
    check_model_size(model, vocabulary=2, outputs=2)
    check_diagnostics(model, evaluate)
    metrics = list(evaluate.metrics) if evaluate and evaluate.metrics else list(catalog.DEFAULT_METRICS[problem])
    for index, name in enumerate(metrics):
        metric = catalog.METRICS.get(name, path=f"evaluate.metrics[{index}]")
        if problem not in metric.problems:
            raise SpecError(
                f"metric {name!r} does not apply to {problem} (it applies to {', '.join(metric.problems)})",
                path=f"evaluate.metrics[{index}]",
            )
    return metrics


def has_validation_data(task: ResolvedComponent, train: TrainSpec) -> bool:
    return train.validation_split > 0 or bool(validation_key(task.params))


def validation_sources(task: ResolvedComponent) -> str:
    """Where this task's runs may get validation data from, for a message that asks for some."""
    return "train.validation_split > 0" + (", or the task's task.validation_path or task.validation_share"
                                           if "validation_path" in type(task.params).model_fields else "")


def check_validation(task: ResolvedComponent, train: TrainSpec) -> None:
    """Validation data comes from one place, and a `val_*` monitor has some.

    One place: `train.validation_split` (the last share of the training set) and a file task's own validation
    data (task.validation_path or task.validation_share) would each claim to be what `val_*` measures.
    """
    own = validation_key(task.params)
    if own and train.validation_split > 0:
        raise SpecError(
            f"{own} and train.validation_split ({train.validation_split}) both give validation data; keep one: "
            f"{own} (the task's own, from the training part) or train.validation_split (the last share of the "
            "training set)",
            path=own,
        )
    for key in ("early_stopping", "reduce_on_plateau"):
        watching = getattr(train, key)
        if watching and watching.monitor.startswith("val_") and not has_validation_data(task, train):
            raise SpecError(f"{key} monitors {watching.monitor!r}, which needs validation data: "
                            f"{validation_sources(task)}", path=f"train.{key}.monitor")
    if train.reduce_on_plateau and train.optimizer.schedule:
        raise SpecError("train.optimizer.schedule sets the learning rate at every step, so reduce_on_plateau "
                        "cannot lower it: keep one", path="train.reduce_on_plateau")


def validation_metric_names(model: ResolvedComponent) -> list[str]:
    """The metrics train.validation_metrics may name for this model kind: its scorer's, else every metric of its
    problem with a direction (one early stopping can watch) but accuracy, which the history has already."""
    scorer = model.component.validation_scorer
    if scorer is None:
        return []
    if scorer.metrics is not None:
        return list(scorer.metrics)
    return [metric.name for metric in metric_catalog.applying_to(model.component.problem)
            if metric.direction is not None and metric.name != "accuracy"]


def check_validation_metrics(task: ResolvedComponent, model: ResolvedComponent | None, train: TrainSpec) -> None:
    """Validation scores by the task's metrics (val_bleu, val_macro_f1, ...) come from validation data, through the
    model kind's scorer; a monitor of one needs train.validation_metrics to measure it."""
    settings = train.validation_metrics
    allowed = validation_metric_names(model) if model is not None else []
    if settings is not None and model is not None:
        if not allowed:
            raise SpecError(f"model kind {model.name!r} cannot be scored on validation data by the task's metrics "
                            "(the kinds that train epoch by epoch can; a counted model has no epochs); watch val_loss "
                            "instead",
                            path="train.validation_metrics")
        for index, name in enumerate(settings.metrics):
            if name not in allowed:
                raise SpecError(f"{name!r} cannot be scored on validation data here: {', '.join(allowed)}"
                                + (" (val_accuracy is in the history already)" if name == "accuracy" else ""),
                                path=f"train.validation_metrics.metrics[{index}]")
        if not has_validation_data(task, train):
            raise SpecError(f"validation_metrics scores validation data: {validation_sources(task)}",
                            path="train.validation_metrics")
    measured = {f"val_{name}" for name in settings.metrics} if settings else set()
    scorable = {f"val_{name}" for name in allowed}
    for key in ("early_stopping", "reduce_on_plateau"):
        watching = getattr(train, key)
        if watching and watching.monitor in scorable and watching.monitor not in measured:
            raise SpecError(f"{key} monitors {watching.monitor!r}, a score of the validation data by the task's "
                            f"metric: train.validation_metrics.metrics must list "
                            f"{watching.monitor.removeprefix('val_')!r}", path=f"train.{key}.monitor")
    if model is None:
        return
    history = history_values(task, model, train)
    for key in ("early_stopping", "reduce_on_plateau"):
        watching = getattr(train, key)
        if watching and watching.monitor not in history and history:
            raise SpecError(f"{key} monitors {shown(watching.monitor)}, which this run never computes: model kind "
                            f"{model.name!r} on task {task.name!r} records {', '.join(history)} in its training "
                            "history", path=f"train.{key}.monitor")


def history_values(task: ResolvedComponent, model: ResolvedComponent, train: TrainSpec) -> list[str]:
    """What the run's training history will hold, each epoch (or evaluation): the loss, the accuracy where the model
    reports it, the same on validation data where there is some, and the validation_metrics' scores. Empty for a
    kind estimated by counting (no history)."""
    abilities = model.component.abilities_for(model.params)
    if abilities.estimated:
        return []
    values = ["loss"]
    if problem_named(task.component.problem).reports_accuracy and not abilities.own_loss:
        values.append("accuracy")
    if has_validation_data(task, train):
        values += [f"val_{name}" for name in values]
        if train.validation_metrics is not None:
            values += [f"val_{name}" for name in train.validation_metrics.metrics]
    return values


def check_class_weights(task: ResolvedComponent, model: ResolvedComponent | None, train: TrainSpec) -> None:
    """Class weights weigh the labels of classification and tagging, through per-example (per-token) weights of the
    loss, which a model with a loss of its own (a CRF's sequence likelihood) does not take."""
    if train.class_weights is None:
        return
    problem = task.component.problem
    if not problem_named(problem).labelled:
        raise SpecError(f"class weights weigh labels, which a {problem} task has not: classification and tagging "
                        "tasks only", path="train.class_weights")
    if model is not None and model.component.abilities_for(model.params).own_loss:
        raise SpecError(f"model kind {model.name!r} here has a loss of its own (a CRF's sequence likelihood), "
                        "which takes no class weights", path="train.class_weights")


def check_batches(task: ResolvedComponent, train: TrainSpec) -> None:
    """Batches by length cut token sequences at their padding: a regression task's real-valued steps have none."""
    if train.batches == BY_LENGTH and not problem_named(task.component.problem).reads_tokens:
        raise SpecError("batches by_length cut token sequences to their longest, and a regression task's inputs are "
                        "real-valued steps without padding: shuffled only", path="train.batches")


def check_diagnostics(model: ResolvedComponent, evaluate: EvaluateSpec | None) -> None:
    """A diagnostic needs a model kind that declares it (gradient_flow: the kinds with a recurrent layer)."""
    for index, name in enumerate(evaluate.diagnostics if evaluate else []):
        if name not in model.component.diagnostics:
            kinds = [c.name for c in catalog.MODELS if name in c.diagnostics]
            raise SpecError(
                f"diagnostic {name!r} follows the gradient through a model's first recurrent layer, and model "
                f"kind {model.name!r} has none. Model kinds with one: {', '.join(kinds)}.",
                path=f"evaluate.diagnostics[{index}]",
            )


# A run whose weights (with gradients and Adam's two moments: ×4, float32)
# would not fit comfortably in a workstation's memory is refused before
# anything is allocated.
MAX_PARAMETERS = 500_000_000


def tensorboard_missing() -> str | None:
    """Why `train.tensorboard` cannot be honoured here (None when it can): the event files are written by the
    tensorboard package's own writer (tracking.tensorboard), an optional dependency."""
    if importlib.util.find_spec("tensorboard") is None:
        return "train.tensorboard needs the tensorboard package: .venv/bin/pip install -r requirements-tracking.txt"
    return None


def check_model_size(model: ResolvedComponent, *, vocabulary: int, outputs: int, max_length: int = 0) -> None:
    """Refuse a model too large to train, by its kind's size estimate (none for a kind declaring NoSizeEstimate)."""
    count = model.component.estimated_size(model.params, vocabulary=vocabulary, outputs=outputs,
                                           max_length=max_length)
    if count is not None and count > MAX_PARAMETERS:
        gigabytes = count * 4 * 4 / 1e9
        raise SpecError(
            f"the model would have about {count:.3g} parameters (~{gigabytes:,.0f} GB to train in float32), "
            f"more than the {MAX_PARAMETERS:.0e} seqkeras allows; "
            "reduce its widths (units, embedding_dim, intermediate_dim) or layers",
            path="model",
        )


def check_sections(spec: ExperimentSpec) -> None:
    if spec.probe is None and (spec.task is None or spec.model is None):
        raise SpecError("an experiment needs either a probe section, or task and model sections")
    if spec.probe is not None and (spec.task is not None or spec.model is not None or spec.train is not None):
        raise SpecError("a probe experiment has no task, model or train section; use one or the other")
    if spec.probe is not None and spec.evaluate is not None:  # a probe measures itself: it would be ignored
        raise SpecError("a probe experiment has no evaluate section: a probe reports its own measurements "
                        "(seqkeras list: PROBES)", path="evaluate")
    if spec.probe is not None and spec.reference_tolerance is not None:
        raise SpecError("reference_tolerance is for experiments that train: a probe computes its numbers exactly, "
                        "and `run --reference` holds them to float rounding", path="reference_tolerance")
    if spec.train is not None and spec.train.tensorboard and tensorboard_missing():
        raise SpecError(tensorboard_missing(), path="train.tensorboard")


def check_references(spec: ExperimentSpec, matrix_columns: list[str], runs: list | None = None,
                     value_of=None) -> None:
    """Tables and expectations may only select by what varies (matrix keys, decoders) or by seed: runs.csv has a
    column for those only, so a key fixed in the spec, or found by tuning, would select nothing when reported.

    runs and value_of(run, key) (spec.loader.matrix_value): what each run has for a key, to say why a key that
    is not a column is refused (fixed at one value, tuned) rather than only that it is unknown."""
    allowed = matrix_columns + ["seed"] + decoder_columns(spec)

    def check(key: str, path: str, wanted: object = _NOTHING) -> None:
        if key not in allowed:
            raise SpecError(_not_a_column(spec, key, allowed, runs or [], value_of, wanted), path=path)

    for index, table in enumerate(spec.tables()):
        prefix = f"table[{index}]" if isinstance(spec.table, list) else "table"
        for attribute in ("rows", "columns"):
            keys = getattr(table, attribute)
            for key in [keys] if isinstance(keys, str) else keys or []:
                check(key, f"{prefix}.{attribute}")
        for key, wanted in table.where.items():
            check(key, f"{prefix}.where.{key}", wanted)
        for key in table.pool:
            check(key, f"{prefix}.pool")
    for index, plot in enumerate(spec.plots):
        for attribute in ("x", "hue", "facet"):
            if getattr(plot, attribute) is not None:
                check(getattr(plot, attribute), f"plots[{index}].{attribute}")
        for key, wanted in plot.where.items():
            check(key, f"plots[{index}].where.{key}", wanted)
    for index, expect in enumerate(spec.expect):
        for key, wanted in expect.where.items():
            check(key, f"expect[{index}].where.{key}", wanted)
        if expect.comparison:
            kind, other = expect.comparison
            for key, wanted in other.where.items():
                check(key, f"expect[{index}].{kind}.where.{key}", wanted)


_NOTHING = object()  # a key given as rows, columns, x...: no value asked for


def _not_a_column(spec: ExperimentSpec, key: str, allowed: list[str], runs: list, value_of, wanted: object) -> str:
    """Why `key` selects nothing in runs.csv: tuned, fixed at one value in every run, or no key of the spec."""
    choices = f"select by a key that varies ({', '.join(allowed)})"
    tuned = key.removeprefix("tuned.")  # runs.csv's column of a tuned key
    if spec.tune is not None and tuned in spec.tune.search:
        return (f"{tuned} is tuned (tune.search): tuning finds each matrix point's value, unknown before training, "
                f"so no spec can select by it; {choices}")
    values = [value_of(run, key) for run in runs] if value_of else []
    if values and all(value is not None and not isinstance(value, (dict, list)) for value in values):
        distinct = list(dict.fromkeys(shown(value, 40) for value in values))
        if len(distinct) == 1:
            own = distinct[0]
            if wanted is _NOTHING:
                return (f"{key} is {own} in every run, not a matrix key: nothing to lay out by it; use a key that "
                        f"varies ({', '.join(allowed)})")
            if matching([OutputRow({key: values[0]}, ())], {key: wanted}):
                return (f"{key} is {own} in every run, not a matrix key: runs.csv has no column for it, and selecting "
                        f"by it would keep every run; leave it out of where, or {choices}")
            return (f"no run has {key} = {shown(wanted)}: it is {own} in every run, not a matrix key; {choices}")
        return (f"{key} is not a matrix key (its value follows from the matrix's: {_listed(distinct)}), so runs.csv "
                f"has no column for it; {choices}")
    return unknown_choice("matrix key", key, allowed)


def check_outputs(spec: ExperimentSpec, rows: list[OutputRow]) -> None:
    """Every table, plot and claim selects rows that some run will write (`rows`: spec.outputs.output_rows
    of every run), and reads metrics they will have.

    Without this a misspelt metric trains everything and then reports "NOT reproduced".
    """
    for index, table in enumerate(spec.tables()):
        prefix = f"table[{index}]" if isinstance(spec.table, list) else "table"
        chosen = _selected(rows, table.where, f"{prefix}.where")
        _check_metric(chosen, table.value, f"{prefix}.value", every_row=False, in_table=True)
        _check_pooling(chosen, table, prefix)
    for index, plot in enumerate(spec.plots):
        chosen = _selected(rows, plot.where, f"plots[{index}].where")
        for metric in plot.metrics():
            _check_metric(chosen, metric, f"plots[{index}].y", every_row=False)
        _check_plot_pooling(chosen, plot, f"plots[{index}]")
    for index, expect in enumerate(spec.expect):
        # A claim is a mean over its runs: each of them must report the metric.
        selections = [_selected(rows, expect.where, f"expect[{index}].where")]
        if expect.comparison:
            kind, other = expect.comparison
            selections.append(_selected(rows, other.where, f"expect[{index}].{kind}.where"))
        for chosen in selections:
            for field in ("metric", "relative_to"):
                if getattr(expect, field) is not None:
                    _check_metric(chosen, getattr(expect, field), f"expect[{index}].{field}", every_row=True)
            if expect.converged:
                _check_converges(chosen, f"expect[{index}].converged")
            if expect.min_seeds is not None:
                _check_seeds(chosen, expect.min_seeds, f"expect[{index}].min_seeds")


def _check_seeds(rows: list[OutputRow], needed: int, path: str) -> None:
    """A claim judged over `needed` seeds selects runs of that many seeds, or it could only be undecided."""
    seeds = sorted({row.keys.get("seed") for row in rows}, key=str)
    if len(seeds) < needed:
        raise SpecError(f"min_seeds is {needed}, but the runs selected here have {len(seeds)} seed(s) "
                        f"({_listed([str(seed) for seed in seeds])}): add seeds to the spec, or lower min_seeds",
                        path=path)


def _check_converges(rows: list[OutputRow], path: str) -> None:
    """`converged` asks whether each run was still improving as its epochs ran out, which a run without epochs
    (a probe, a model estimated by counting) never records: its claim could only fail."""
    without = [row for row in rows if not row.trained_over_epochs]
    if without:
        example = ", ".join(f"{key}={shown(value, 40)}" for key, value in without[0].keys.items())
        raise SpecError(f"converged judges runs trained over epochs, and {len(without)} of the {len(rows)} rows "
                        f"selected here have none (a probe, or a model estimated by counting; e.g. {example}); "
                        "narrow `where` to the runs that train, or leave converged out", path=path)


def _selected(rows: list[OutputRow], where: dict, path: str) -> list[OutputRow]:
    for key, wanted in where.items():
        if not matching(rows, {key: wanted}):
            values = list(dict.fromkeys(str(v) for row in rows if (v := row.keys.get(key)) is not None))
            # A matrix entry may leave the key out: null selects those runs, so the message offers it.
            if any(row.keys.get(key) is None for row in rows):
                values.append("null (the runs without it)")
            raise SpecError(
                f"no run has {key} = {shown(wanted)}; its values are: {_listed(values)}", path=f"{path}.{key}"
            )
    chosen = matching(rows, where)
    if not chosen:
        together = ", ".join(f"{key}={shown(value)}" for key, value in where.items())
        raise SpecError(f"no run has all of {together} (each value exists, but not together)", path=path)
    return chosen


def _check_metric(rows: list[OutputRow], metric: str, path: str, *, every_row: bool, in_table: bool = False) -> None:
    """in_table: a table's value, which may also be a number runs.csv has per run (OutputRow.columns)."""
    having = [row for row in rows if row.has(metric, in_table=in_table)]
    if not having:
        reported = list(dict.fromkeys(name for row in rows for name in (row.columns if in_table else row.metrics)))
        raise SpecError(
            f"the runs selected here do not report {shown(metric)}.{did_you_mean(metric, reported)} "
            f"They report: {_listed(reported)}.",
            path=path,
        )
    if every_row and len(having) < len(rows):
        raise SpecError(
            f"only {len(having)} of the {len(rows)} rows selected here report {shown(metric)}; "
            "narrow `where` to the runs that do",
            path=path,
        )


def _check_pooling(rows: list[OutputRow], table, path: str) -> None:
    """A cell averages seeds only, unless the table pools a key: refuse a table that would mix runs silently."""
    shown_keys = [*_as_list(table.rows), *_as_list(table.columns)]
    fixed = {*table.where, *table.pool}
    if table.value in RUN_COLUMNS and not any(_is_decoder_key(key) for key in shown_keys):
        # One value per run, the same in each of its decoders' rows: the table takes each run once (reporting.tables).
        fixed |= {key for row in rows for key in row.keys if _is_decoder_key(key)}
    varying = _varying_within(rows, shown_keys, fixed)
    if varying:
        them = "it" if len(varying) == 1 else "them"
        raise SpecError(
            f"{', '.join(varying)} {'varies' if len(varying) == 1 else 'vary'} within the table's cells, which "
            f"average seeds only; add {them} to rows or columns, select with where, or pool: [{', '.join(varying)}]",
            path=path,
        )


def _check_plot_pooling(rows: list[OutputRow], plot, path: str) -> None:
    """A line or bar is a mean over seeds: refuse one that would average other runs in too."""
    if plot.kind == "scatter":  # every run is its own point
        return
    shown_keys = [key for key in (plot.x, plot.hue, plot.facet) if key is not None]
    varying = _varying_within(rows, shown_keys, set(plot.where))
    if varying:
        raise SpecError(
            f"{', '.join(varying)} {'varies' if len(varying) == 1 else 'vary'} within the plot's points, which "
            "average seeds only; give it as hue or facet, select with where, or draw kind: scatter",
            path=path,
        )


def _varying_within(rows: list[OutputRow], shown_keys: list[str], fixed: set[str]) -> list[str]:
    """The run keys (not seed) that take several values among rows sharing their `shown_keys`."""
    groups: dict[tuple, list[OutputRow]] = {}
    for row in rows:
        groups.setdefault(tuple(str(row.keys.get(key)) for key in shown_keys), []).append(row)
    ignored = {*shown_keys, *fixed, "seed"}
    return [key for key in dict.fromkeys(k for row in rows for k in row.keys) if key not in ignored and any(
        len({str(row.keys.get(key)) for row in group}) > 1 for group in groups.values())]


def _is_decoder_key(key: str) -> bool:
    """A key of a run's evaluation rows (`decoder`, `decoder.width`), not of the run (as results.folder's
    is_evaluation_key, which spec/ may not import)."""
    return key == "decoder" or key.startswith("decoder.")


def _as_list(keys: str | list[str] | None) -> list[str]:
    return [] if keys is None else [keys] if isinstance(keys, str) else list(keys)


def _listed(names: list[str], limit: int = 20) -> str:
    more = f", … ({len(names) - limit} more)" if len(names) > limit else ""
    return ", ".join(name if len(name) <= 40 else shown(name, 40) for name in names[:limit]) + more


# The keys a trial may set: what a run is made of. The matrix and the seeds say which runs there are; evaluate what
# is measured once the run is trained, which tuning on validation data never reads.
TUNABLE_SECTIONS = ("task", "model", "train")


def check_tune(spec: ExperimentSpec, runs: list, configured) -> None:
    """The `tune:` section against the runs it tunes: each searched key exists and takes every value its range
    gives, in every matrix point; the objective is one the training history reports on validation data, which
    the runs have.

    configured(run, values): the run with `values` set (spec.loader.configured_run), raising SpecError."""
    tune = spec.tune
    if tune is None:
        return
    if spec.probe is not None:
        raise SpecError("tune applies to experiments that train; a probe has no training to tune", path="tune")
    points = list({json.dumps(run.point, sort_keys=True, default=str): run for run in runs}.values())
    for key, search in tune.search.items():
        check_tuned_key(key, spec)
        for run in points:
            for value in search.values:
                try:
                    configured(run, {key: value})
                except SpecError as error:
                    where = f" at the matrix point {_point_text(run.point)}" if run.point else ""
                    raise SpecError(f"{search.describe()} cannot be tried{where}: with {key} = {shown(value)}, "
                                    f"{error.message}", path=f"tune.search.{key}") from None
    for run in points:
        check_objective(tune.objective, run)


def check_tuned_key(key: str, spec: ExperimentSpec) -> None:
    path = f"tune.search.{key}"
    if key.split(".")[0] not in TUNABLE_SECTIONS or "." not in key:
        raise SpecError(f"a tuned key is a dotted key of {', '.join(TUNABLE_SECTIONS)} (e.g. "
                        "train.optimizer.learning_rate, model.units)", path=path)
    for axis in spec.matrix:
        if key == axis or key.startswith(axis + ".") or axis.startswith(key + "."):
            raise SpecError(f"{key} is set by the matrix axis {axis}: the matrix says what is compared, tuning finds "
                            "each point's best setting of the other keys; tune another key or take it out of the "
                            "matrix", path=path)


def check_objective(objective: str, run) -> None:
    """The objective is in the run's training history: val_loss, val_accuracy where the model reports accuracy."""
    where = f" at the matrix point {_point_text(run.point)}" if run.point else ""
    abilities = run.model.component.abilities_for(run.model.params)
    if abilities.estimated:
        raise SpecError(f"model kind {run.model.name!r}{where} is estimated by counting, in one pass: it has no "
                        "training history to tune on", path="tune")
    history = history_values(run.task, run.model, run.train)
    # Without validation data, what it would measure there (the check below then asks for some).
    measured = [name for name in history if name.startswith("val_")] or [f"val_{name}" for name in history]
    scorable = [f"val_{name}" for name in validation_metric_names(run.model)]
    if objective in scorable and objective not in measured:
        raise SpecError(f"{shown(objective)} is a score of the validation data by the task's metric{where}: "
                        f"train.validation_metrics.metrics must list {objective.removeprefix('val_')!r} for each "
                        "trial to measure it", path="tune.objective")
    if objective not in measured:
        raise SpecError(f"{shown(objective)} is not in the training history of model kind {run.model.name!r} on "
                        f"task {run.task.name!r}{where}: it measures {', '.join(measured)} on validation data"
                        + (f" (and, listed in train.validation_metrics, {', '.join(scorable)})" if scorable else ""),
                        path="tune.objective")
    if run.train.validation_split == 0 and not validation_key(run.task.params):
        own = (", or the task's task.validation_path or task.validation_share"
               if "validation_path" in type(run.task.params).model_fields else "")
        raise SpecError(f"tuning judges each trial by {objective} on validation data, and{where} there is none: "
                        f"set train.validation_split > 0{own} (never the test set)", path="tune.objective")


def _point_text(point: dict) -> str:
    return ", ".join(f"{key}={shown(value, 40)}" for key, value in point.items())
