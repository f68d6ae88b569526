"""Plain-text descriptions of every component's parameters and every section's options: `seqkeras list`
and docs/components.md.

Both are generated from the registries in `seqkeras.catalog` and the section
models in `seqkeras.spec.sections`, the same objects that validate specs, so what
is documented is what is accepted.
"""

from __future__ import annotations

import types
import typing

from seqkeras.spec import sections
from seqkeras.training import settings


def type_name(annotation) -> str:
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:  # a discriminated union and the like: the type it annotates
        return type_name(typing.get_args(annotation)[0])
    if origin in (list, dict, tuple, set):
        return f"{origin.__name__}[{', '.join(type_name(a) for a in typing.get_args(annotation))}]"
    if annotation is typing.Any:
        return "any"
    if typing.get_origin(annotation) is typing.Literal:
        return "one of " + "|".join(str(a) for a in typing.get_args(annotation))
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        # Optional[X] reads as 'X | None'; a union of parameter models as their class names.
        return " | ".join(type_name(a) for a in typing.get_args(annotation)).replace("NoneType", "None")
    name = getattr(annotation, "__name__", None)
    return name if name and typing.get_origin(annotation) is None else str(annotation).replace("typing.", "")


def describe_params(model) -> list[str]:
    lines = []
    for name, field in model.model_fields.items():
        annotation = type_name(field.annotation)
        default = "required" if field.is_required() else f"default {field.get_default(call_default_factory=True)!r}"
        bounds = [f"{label} {getattr(m, attr)}" for m in field.metadata
                  for attr, label in (("ge", "≥"), ("gt", ">"), ("le", "≤"), ("lt", "<")) if hasattr(m, attr)]
        detail = ", ".join([annotation, default, *bounds])
        lines.append(f"{name} ({detail}): {field.description or ''}".rstrip(": "))
    return lines


def section_models() -> dict[str, type]:
    """The spec's sections that are not components, by their key path: the options `list` shows under SECTIONS."""
    return {
        "(top level)": sections.ExperimentSpec,
        "train": settings.TrainSpec,
        "train.optimizer": settings.OptimizerSpec,
        "train.optimizer.schedule": settings.ScheduleSpec,
        "train.early_stopping": settings.EarlyStoppingSpec,
        "train.reduce_on_plateau": settings.ReduceOnPlateauSpec,
        "train.validation_metrics": settings.ValidationMetricsSpec,
        "evaluate": sections.EvaluateSpec,
        "table": sections.TableSpec,
        "expect": sections.ExpectSpec,
        "plots": sections.PlotSpec,
    }


def components_markdown(registries: dict) -> str:
    """docs/components.md: every component of every registry, its summary and its parameters.

    `registries` is `catalog.ALL`; the page is regenerated with `make generate`
    (seqkeras.generated_files), and a test fails when the committed page
    differs from what the registries say.
    """
    lines = [
        "# Components",
        "",
        "Every task, model kind, cell, probe, metric and decoder a spec may name, with its parameters",
        "(type, default, bounds). Generated from the registries that validate specs by `make generate`",
        "(`seqkeras list --markdown` prints it). See [the spec reference](spec.md) for the sections",
        "they go in.",
    ]
    lines += ["", "## Sections", "", "The options of the sections that are not components (`task`, `model` and `probe`",
              "take a component's parameters, below)."]
    for path, model in section_models().items():
        lines += ["", f"### `{path}`", ""]
        lines += [f"- {line}" for line in describe_params(model)]
    for kind, registry in registries.items():
        lines += ["", f"## {kind.capitalize()}s", ""]
        for component in registry:
            lines += [f"### `{component.name}`", "", component.described, ""]
            parameters = describe_params(component.params)
            lines += [f"- {line}" for line in parameters] if parameters else ["No parameters."]
            lines.append("")
    return "\n".join(lines).rstrip() + "\n"
