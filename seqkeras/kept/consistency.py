"""Does a kept model fit its preprocessing? Checked when a run folder's model is loaded (`saving.load_model`).

A run folder may come from someone else, or be put together from several runs: a model.keras from another run
beside this run's preprocessing.json, a vocabulary file longer than the model's embedding, fewer labels than the
model has outputs. Read as they are, such files load, and a prediction then fails in the middle (an index past
the labels, an id past the embedding). So the model's sizes, as its kind reads them off the model
(`ModelKind.model_shape` → `registry.ModelShape`: the ids its embedding takes, its outputs, one per input or per
token, the features a step has, the longest input it reads, the most output positions it writes), are compared
with what the preprocessing names, and a mismatch is one line naming the model file and what does not fit:

    results/x/run/model.keras: the model has 5 outputs but preprocessing.json names 3 labels

A length limit is compared with the model's own tables too: an input.max_length or output.context past a learned
position table, an output.max_output_length past an encoder-decoder's target positions (its position table and
key/value caches), which a decoder would otherwise reach in the middle of a prediction.

(The preprocessing file is checked on its own first: `Preprocessing.inconsistency`.) The check knows no model kind:
each kind reads its own models' shape, and a model that is not one of its kind's is refused by it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from seqkeras.errors import SpecError
from seqkeras.kept.preprocessing import FILE, TARGET_VOCABULARY_FILE, Preprocessing, named
from seqkeras.registry import Abilities, ModelKind, ModelShape

# What each ability of a kind (`registry.Abilities`) has the kept model call: a model from another kind's run lacks
# them, and `predict` would fail calling them.
ABILITY_METHODS = {"tags": ("predict_tags",), "scores": ("score", "next_log_probabilities")}


def checked_shape(kind: ModelKind, model: Any, preprocessing: Preprocessing, model_path: Path) -> ModelShape:
    """The shape of `model` (read from `model_path`, of model kind `kind`), once it fits `preprocessing`; a SpecError
    naming `model_path` when it does not, or when the model is not one of its kind's."""
    try:
        shape = kind.shape_of(model)
    except (ValueError, AttributeError, TypeError, IndexError) as error:  # a model of another kind
        raise SpecError(f"{model_path}: not a {kind.name} model as {FILE} says ({one_line(error)})") from None
    problem = misfit(shape, preprocessing)
    if problem:
        raise SpecError(f"{model_path}: {problem}")
    return shape


def misfit(shape: ModelShape, preprocessing: Preprocessing) -> str:
    """What of the model's `shape` does not fit `preprocessing` ("" when it fits)."""
    document, rule, output = preprocessing.document, preprocessing.document.input, preprocessing.document.output
    problem = document.problem
    if rule.split == "features":
        features = rule.features or 1  # as `predict` reads a step
        if shape.vocabulary is not None:
            return f"the model reads token ids, but {FILE} says a {problem} model's input is real-valued features"
        if shape.features != features:
            return f"the model reads {shape.features} features per step but {FILE}'s input.features is {features}"
    else:
        if shape.vocabulary is None:
            return f"the model reads real-valued features, but {FILE} says its input is text ({rule.split})"
        if shape.vocabulary != len(preprocessing.vocabulary):
            return (f"the model takes {shape.vocabulary} token ids but {named(rule.vocabulary)} has "
                    f"{len(preprocessing.vocabulary)} tokens")
    per_token = output.kind in ("tags", "next_token", "target")
    if shape.per_token != per_token:
        given, expected = ("one output per token", "one per input") if shape.per_token else \
            ("one output per input", "one per token")
        return f"the model gives {given}, but {FILE} says it is a {problem} model, which gives {expected}"
    expected, said = {
        "label": (len(output.labels or ()), f"{FILE} names {len(output.labels or ())} labels"),
        "tags": (len(output.labels or ()), f"{FILE} names {len(output.labels or ())} tags (output.labels)"),
        "next_token": (len(preprocessing.vocabulary),
                       f"{named(rule.vocabulary)} has {len(preprocessing.vocabulary)} tokens"),
        "target": (len(preprocessing.outputs or ()), f"{named(output.vocabulary or TARGET_VOCABULARY_FILE)} has "
                   f"{len(preprocessing.outputs or ())} tokens"),
        "value": (1, f"{FILE} says it gives one value"),
    }[output.kind]
    if shape.outputs != expected:
        return f"the model has {shape.outputs} outputs but {said}"
    if shape.positions is not None:
        for name, length in (("input.max_length", rule.max_length), ("output.context", output.context)):
            if length is not None and length > shape.positions:
                return (f"the model reads at most {shape.positions} tokens (its position table) but {FILE}'s "
                        f"{name} is {length}")
    if shape.output_positions is not None and output.max_output_length is not None \
            and output.max_output_length > shape.output_positions:
        return (f"the model writes at most {shape.output_positions} output positions (its target position table and "
                f"caches) but {FILE}'s output.max_output_length is {output.max_output_length}")
    return ""


def missing_ability(abilities: Abilities, model: Any, model_path: Path, kind: str) -> str:
    """That `model` lacks a method its kind's `abilities` (for the run's parameters) have it called by ("")."""
    for ability, methods in ABILITY_METHODS.items():
        if getattr(abilities, ability):
            for method in methods:
                if not callable(getattr(model, method, None)):
                    return (f"{model_path}: the model has no {method}(), which a {kind} model of these parameters "
                            f"has (spec.yaml's model section): it is another run's model")
    return ""


def one_line(error: BaseException) -> str:
    """An error's first line, at most 200 characters, its control characters escaped as repr writes them: a loader's
    error may quote the file it read (someone else's)."""
    text = str(error).strip()
    if not text:
        return type(error).__name__
    line = text.splitlines()[0][:200]
    return line if line.isprintable() else repr(line)[1:-1]
