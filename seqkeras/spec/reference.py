"""Plain-text descriptions of every component's parameters: `seqkeras list` and docs/components.md.

Both are generated from the registries in `seqkeras.catalog`, the same objects
that validate specs, so what is documented is what is accepted.
"""

from __future__ import annotations

import types
import typing


def type_name(annotation) -> str:
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


def components_markdown(registries: dict) -> str:
    """docs/components.md: every component of every registry, its summary and its parameters.

    `registries` is `catalog.ALL`; the page is regenerated with
    `seqkeras list --markdown > docs/components.md`, and a test fails when the
    committed page differs from what the registries say.
    """
    lines = [
        "# Components",
        "",
        "Every task, model kind, cell, probe, metric and decoder a spec may name, with its parameters",
        "(type, default, bounds). Generated from the registries that validate specs:",
        "`seqkeras list --markdown > docs/components.md`. See [the spec reference](spec.md) for the",
        "sections they go in.",
    ]
    for kind, registry in registries.items():
        lines += ["", f"## {kind.capitalize()}s", ""]
        for component in registry:
            lines += [f"### `{component.name}`", "", component.summary, ""]
            parameters = describe_params(component.params)
            lines += [f"- {line}" for line in parameters] if parameters else ["No parameters."]
            lines.append("")
    return "\n".join(lines).rstrip() + "\n"
