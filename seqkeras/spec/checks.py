"""Named cross-section rules: what one section's schema alone cannot check.

Each rule raises one `SpecError` sentence naming the key path. They run after
the structure is validated and before anything trains.
"""

from __future__ import annotations

from pydantic import BaseModel

from seqkeras import catalog
from seqkeras.errors import SpecError, unknown_choice
from seqkeras.models.recurrent import RecurrentParams, estimated_parameters
from seqkeras.spec.runs import ResolvedComponent, decoder_columns
from seqkeras.spec.sections import EvaluateSpec, ExperimentSpec


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


def check_sections(spec: ExperimentSpec) -> None:
    if spec.probe is None and (spec.task is None or spec.model is None):
        raise SpecError("an experiment needs either a probe section, or task and model sections")
    if spec.probe is not None and (spec.task is not None or spec.model is not None or spec.train is not None):
        raise SpecError("a probe experiment has no task, model or train section; use one or the other")


def check_references(spec: ExperimentSpec, matrix_columns: list[str]) -> None:
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

