"""Registries: one per kind of component, each entry holding its schema and builder.

An entry couples the parameter schema (a pydantic model, used for validation,
`seqkeras list` and the JSON schema) with the code that builds or runs the
component. The builder is named by an import path and loaded only when used,
so validating a spec or listing components never imports TensorFlow.

Registries are filled explicitly in `seqkeras.catalog`, never as a side effect
of importing a module.
"""

from __future__ import annotations

import importlib
import types
import typing
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, model_validator
from pydantic_core import PydanticCustomError

from seqkeras.errors import SpecError, unknown_choice


class Params(BaseModel):
    """Base of every component's parameters: strict, immutable, no unknown keys."""

    # strict: `units: true` or `units: "5"` is a mistake to point at, not 1 or 5 units
    # (an int still fills a float field: `learning_rate: 1`); allow_inf_nan: no
    # hyperparameter is meant to be .inf or .nan.
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, allow_inf_nan=False)

    @model_validator(mode="before")
    @classmethod
    def _no_bool_for_a_number_choice(cls, data: Any) -> Any:
        # Strict mode refuses true for int and float fields, but a Literal field compares
        # with ==, and True == 1: `version: true` would read as version 1. (A model
        # validator: a field validator on "*" would also land on union discriminators,
        # which pydantic forbids.) `field` tells translate_validation_error the key.
        if isinstance(data, dict):
            for name, value in data.items():
                if isinstance(value, bool) and name in cls.model_fields:
                    choices = _literal_choices(cls.model_fields[name].annotation)
                    if choices and not any(isinstance(choice, bool) for choice in choices):
                        raise PydanticCustomError(
                            "bool_for_number", "expected one of {choices}, got {value}",
                            {"field": name, "choices": ", ".join(map(str, choices)), "value": str(value).lower()},
                        )
        return data

    def only_with(self, option: str, field: str, value: str) -> None:
        """Refuse `option`, when it is set, unless `field` is `value`: an option of that variant alone.

        For a `model_validator`; the message reads e.g. "k applies only to smoothing add_k, not 'laplace'".
        """
        if getattr(self, option) is not None and getattr(self, field) != value:
            raise ValueError(f"{option} applies only to {field} {value}, not {getattr(self, field)!r}")


def _literal_choices(annotation: Any) -> list[Any]:
    """The values of a Literal (or optional Literal) annotation; [] for any other."""
    if typing.get_origin(annotation) is typing.Literal:
        return list(typing.get_args(annotation))
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        members = [member for member in typing.get_args(annotation) if member is not type(None)]
        if members and all(typing.get_origin(member) is typing.Literal for member in members):
            return [choice for member in members for choice in typing.get_args(member)]
    return []


@dataclass(frozen=True)
class Component:
    name: str
    summary: str
    params: type[BaseModel]
    builder: str  # "module.path:function", imported on first use
    # What kind of problem a task poses or a model kind solves
    # ("classification", "tagging", "language_modeling"), so a spec pairing a
    # tagger with a classification task is refused before anything runs.
    problem: str | None = None
    # For metrics: the problems they apply to.
    problems: tuple[str, ...] = ()
    # For model kinds: "module:function" that evaluates a trained model on the
    # test set and returns one or more `seqkeras.evaluation.rows.EvaluationRow`.
    evaluator: str = "seqkeras.evaluation.rows:evaluate_predictions"
    # For probes: "module:function" giving the metric names a run reports for its parameters
    # (`*` matches data-dependent parts), so tables and claims are checked before it runs.
    metric_names: str | None = None

    def load(self) -> Callable[..., Any]:
        return load_path(self.builder)

    def load_evaluator(self) -> Callable[..., Any]:
        return load_path(self.evaluator)


def load_path(path: str) -> Any:
    """The object named by "module.path:attribute"."""
    module_name, _, attribute = path.partition(":")
    return getattr(importlib.import_module(module_name), attribute)


class Registry:
    def __init__(self, kind: str, components: list[Component]):
        self.kind = kind
        self._components = {component.name: component for component in components}
        if len(self._components) != len(components):
            raise ValueError(f"duplicate {kind} names in registry")

    def get(self, name: object, *, path: str | None = None) -> Component:
        if not isinstance(name, str) or name not in self._components:
            raise SpecError(unknown_choice(self.kind, name, self._components), path=path)
        return self._components[name]

    def names(self) -> list[str]:
        return list(self._components)

    def __iter__(self) -> Iterator[Component]:
        return iter(self._components.values())

    def __contains__(self, name: object) -> bool:
        return name in self._components
