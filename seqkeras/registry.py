"""Registries: one per kind of component, each entry holding its schema and builder.

An entry couples the parameter schema (a pydantic model, used for validation,
`seqkeras list` and the JSON schema) with the code that builds or runs the
component: the function itself, or `Lazy(module, name)` where importing its
module would load Keras (or TensorFlow, torch, JAX), so that validating a spec
or listing components never imports one of them.

Registries are filled explicitly in `seqkeras.catalog`, never as a side effect
of importing a module.

Each kind of plug-in has one contract, its entry class here: a `Task` declares
its problem kind (and, through its Params' `input_rule(data)` and
`input_files()`, how a text becomes its tokens and the files it
reads); a `ModelKind` declares its problem, its size estimate (or, deliberately,
`NoSizeEstimate`), its evaluator, what its models can do beyond a Keras
softmax model trained by fit (`Abilities`), how they are kept and read back
(`ModelFile`; Keras's native format by default), what they read and write
(`ModelShape`, which a kept model's preprocessing must fit) and the step model a decoder
drives (by default the prefix, rerun at each step); a `Metric` declares one function per
problem kind it applies to, each of that problem's input type; a `Probe`
declares the metric names it reports. The trainer, the evaluators and the spec
checks read these declarations, never a model's type. docs/contributing.md shows
each with a worked example.
"""

from __future__ import annotations

import importlib
import types
import typing
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, model_validator
from pydantic_core import PydanticCustomError

from seqkeras.errors import SpecError, unknown_choice


# Parts of a history value's name that improve upwards: accuracies, decoded scores, F1, precision, recall and a
# success rate (as the metric catalog's directions, which training and tuning may not import;
# tests/test_validation_metrics.py checks they agree). Early stopping, reduce-on-plateau and a study's default
# direction all read it.
HIGHER_IS_BETTER = ("acc", "bleu", "chrf", "exact_match", "f1", "precision", "recall", "success_rate")


def higher_is_better(name: str) -> bool:
    """Losses, cross-entropy and perplexity improve downwards, accuracies and the task's scores (val_bleu,
    val_macro_f1) upwards (as Keras's mode="auto")."""
    return any(part in name for part in HIGHER_IS_BETTER)


class Params(BaseModel):
    """Base of every component's parameters: strict, immutable, no unknown keys."""

    # strict: `units: true` or `units: "5"` is a mistake to point at, not 1 or 5 units
    # (an int still fills a float field: `learning_rate: 1`); allow_inf_nan: no
    # hyperparameter is meant to be .inf or .nan. defer_build: each class's validator is built when it first
    # validates, not when the catalog is imported: a process uses a few of the ~70 (a kept model's load, a command).
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, allow_inf_nan=False, defer_build=True)

    # Parameters added after results existed: in a run's resolved spec, and so its id, only when set to another
    # value than their default, so the runs of specs without them keep their ids (spec.loader).
    hashed_only_when_set: ClassVar[tuple[str, ...]] = ()

    def hashed(self) -> dict[str, Any]:
        """The parameters as a run's resolved spec holds them: every one, less `hashed_only_when_set` at default."""
        fields = type(self).model_fields
        # Each class's own declaration counts: Params mixed from several bases (a task's text and validation
        # keys) would otherwise keep only the first base's tuple and hash the others' defaults.
        declared = {name for klass in type(self).__mro__ for name in vars(klass).get("hashed_only_when_set", ())}
        left_out = {name for name in declared
                    if getattr(self, name) == fields[name].get_default(call_default_factory=True)}
        return self.model_dump(mode="json", exclude=left_out or None)

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

    def changed(self, name: str) -> bool:
        """Whether parameter `name` holds another value than its default. Not whether it was given: the spec a run
        saves (and a kept model is read back by) spells every parameter out."""
        return getattr(self, name) != type(self).model_fields[name].get_default(call_default_factory=True)

    def only_with(self, option: str, field: str, value: str) -> None:
        """Refuse `option`, when it is set, unless `field` is `value`: an option of that variant alone.

        For a `model_validator`; the message reads e.g. "k applies only to smoothing add_k, not 'laplace'".
        """
        if getattr(self, option) is not None and getattr(self, field) != value:
            raise ValueError(f"{option} applies only to {field} {value}, not {getattr(self, field)!r}")

    def input_files(self) -> dict[str, Path]:
        """The files the component reads, by key: each is part of a run's identity (execution.identity), so an
        edited file means the run is run again.

        By default the fields named `path` or ending in `_path` that are set (`named_files`): a task that reads
        its data from a file names the field so. A component that reads another file (an installed corpus)
        overrides this to list it.
        """
        return named_files(self, *(name for name in type(self).model_fields if is_file_field(name)))


def is_file_field(name: str) -> bool:
    """A parameter that names a file the component reads: `path`, `test_path`, ..."""
    return name == "path" or name.endswith("_path")


def named_files(params: BaseModel, *keys: str) -> dict[str, Path]:
    """The files that these fields of `params` name (those set), by key, `~` expanded as the readers open them."""
    return {key: Path(value).expanduser() for key in keys if isinstance(value := getattr(params, key), str)}


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
class Lazy:
    """A catalog entry's function whose module would load Keras (or TensorFlow, torch, JAX) when imported:
    named by module and attribute, imported on first use.

    The one lazy reference of the catalogs: every other entry names its function directly, as its module is
    imported by the catalog anyway. Called, it calls the function; `load()` gives the function itself.
    A plain dataclass, so a component holding one is pickled to worker processes by its names.
    """

    module: str
    name: str

    def load(self) -> Any:
        return getattr(importlib.import_module(self.module), self.name)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.load()(*args, **kwargs)

    def __str__(self) -> str:
        return f"{self.module}:{self.name}"


@dataclass(frozen=True)
class Component:
    """A named component: its parameter schema, and the code that builds or runs it.

    Cells and decoders are plain components; tasks, model kinds, metrics and
    probes are the plug-in kinds below, each with the fields its users read.
    """

    name: str
    summary: str
    params: type[BaseModel]
    builder: Callable[..., Any]  # the function, or `Lazy` where its module loads Keras

    def load(self) -> Callable[..., Any]:
        """The builder itself (a `Lazy` one imported now)."""
        return loaded(self.builder)

    @property
    def described(self) -> str:
        """What `seqkeras list` and docs/components.md say of it: its summary (a kind may add a fact of its own)."""
        return self.summary


@dataclass(frozen=True, kw_only=True)
class Task(Component):
    """A task: `builder(params, seed)` returns the data (`tasks.base.SequenceData` or `Seq2SeqData`).

    It reads the files its Params' `input_files()` lists (by default its `path` and `*_path` fields). Its Params
    declare `input_rule(data)`, how a text becomes its tokens (tasks.input_rules), which a kept model reads new
    text by; an entry whose Params do not is refused when it is made.
    """

    # The problem it poses ("classification", "tagging", ...: tasks.base): a spec pairing it with a model kind
    # that solves another problem is refused before anything runs, and its metrics are that problem's.
    problem: str
    # Its examples are texts of their own varied lengths (sentences, reviews), not a generator's at one width:
    # `train.batches: auto` batches a classification task's by length (spec.loader.concrete_batches).
    varied_lengths: bool = False

    def __post_init__(self) -> None:
        # How a text becomes the task's tokens is the task's own to say (tasks.input_rules): a kept model reads
        # new text by it, and a task that says nothing must not be read by a guess.
        if not callable(getattr(self.params, "input_rule", None)):
            raise TypeError(f"task {self.name!r}: its Params {self.params.__name__} declare no input_rule(data), "
                            "how a text becomes its tokens (seqkeras.tasks.input_rules)")


@dataclass(frozen=True)
class Abilities:
    """What a model kind's models do beyond a Keras model with a softmax output, trained by fit.

    The trainer and the evaluators read these from the model kind's entry (`ModelKind.abilities_for`)
    and call the methods they name; nothing looks at a model's type.
    """

    # Counted, not trained: `model.estimate(data)` reads the training data once and returns the
    # one-row history; no optimizer, epochs or checkpoints. The model has `count_params()`.
    estimated: bool = False
    # Computes its own loss (a CRF's sequence likelihood): compiled with the optimizer only, and given no
    # per-token sample weights (it masks padding itself).
    own_loss: bool = False
    # Gives probabilities itself, not through a Keras predict: `model.score(x, y)` → P(target) and the most
    # probable id, both [N, L], and `model.next_log_probabilities(prefixes [B, L])` → [B, V] for the decoders.
    scores: bool = False
    # Decides otherwise than the argmax of its probabilities: `model.predict_tags(x, batch_size)` → ids
    # [N, T] (a CRF's Viterbi path), which the per-token and entity metrics score.
    tags: bool = False


# A model kind that declares no abilities: a Keras model with a softmax (or one-number) output, trained by fit.
KERAS_MODEL = Abilities()


@dataclass(frozen=True)
class ModelFile:
    """How a model kind's trained models are kept in a run folder and read back (`kept.saving`).

    `save(model)` gives the file's content: bytes, or a str written as UTF-8. `load(file)` reads the model
    back from that file, opened for binary reading (it may seek in it: a .keras file is a zip); for content
    that is not such a model it raises, and the reader says so in one line naming the file. Each is a
    function, or a `Lazy` one where its module imports Keras (Keras's own, below).
    """

    name: str  # the file in the run folder
    holds: str  # what it holds, for messages: "a Keras model"
    save: Callable[[Any], bytes | str] | Lazy
    load: Callable[[BinaryIO], Any] | Lazy

    def saver(self) -> Callable[[Any], bytes | str]:
        return loaded(self.save)

    def loader(self) -> Callable[[BinaryIO], Any]:
        return loaded(self.load)


# The default: Keras's native format (config and weights, without the optimizer's state).
KERAS_NATIVE = ModelFile("model.keras", "a Keras model", save=Lazy("seqkeras.kept.saving", "keras_image"),
                         load=Lazy("seqkeras.kept.saving", "keras_model"))


@dataclass(frozen=True)
class ModelShape:
    """What a trained model reads and writes, read off the model by its kind (`ModelKind.model_shape`): what a kept
    model's preprocessing.json must fit (`kept.consistency`), so that a model from another run, or a preprocessing
    file edited by hand, is refused when it is loaded rather than failing in the middle of a prediction."""

    # The token ids its input embedding takes (ids 0 to vocabulary − 1); None for a model that reads real-valued
    # features (`features` of them per step).
    vocabulary: int | None
    # The width of its output: classes, tags, next tokens or target tokens; 1 for a value.
    outputs: int
    # One output per input position (tagging, language modelling, seq2seq's decoder) rather than one per input.
    per_token: bool = False
    features: int | None = None
    # The longest input it reads (a learned position table's length); None: any length.
    positions: int | None = None
    # The most output positions it writes (an encoder-decoder's target position table and key/value caches: the
    # start token and up to preprocessing.json's output.max_output_length tokens after it); None: any number.
    output_positions: int | None = None


def keras_model_shape(model: Any, embedding: Any = None) -> ModelShape:
    """The shape of a Keras functional model with one input, token ids through an embedding (`embedding`, by default
    the first layer with an `input_dim`) or real-valued features, and one output: the default `ModelKind.model_shape`.
    A ValueError saying what the model is not, when it is no such model."""
    inputs, outputs = getattr(model, "inputs", None), getattr(model, "outputs", None)
    if not inputs or not outputs or len(inputs) != 1 or len(outputs) != 1:
        raise ValueError(f"a {type(model).__name__}, not a Keras model of one input and one output")
    output_shape = tuple(outputs[0].shape)
    if len(output_shape) not in (2, 3) or not isinstance(output_shape[-1], int):
        raise ValueError(f"its output has shape {output_shape}, neither one per input nor one per token")
    per_token = len(output_shape) == 3
    if "float" in str(inputs[0].dtype):
        return ModelShape(None, output_shape[-1], per_token, features=tuple(inputs[0].shape)[-1])
    embeddings = [embedding] if embedding is not None else \
        [layer for layer in model.layers if isinstance(getattr(layer, "input_dim", None), int)]
    if not embeddings:
        raise ValueError("it reads token ids but has no embedding of them")
    return ModelShape(int(embeddings[0].input_dim), output_shape[-1], per_token)


@dataclass(frozen=True)
class NoSizeEstimate:
    """A model kind's declaration that it has no size estimate, and why: its runs are not refused for size."""

    reason: str


@dataclass(frozen=True)
class ValidationScorer:
    """A model kind's scorer of validation data (`ModelKind.validation_scorer`): the function making it (Lazy: it
    imports Keras), and the metrics it scores (None: every metric of the problem that has a direction)."""

    scorer: Callable[..., Any] | Lazy
    metrics: tuple[str, ...] | None = None


@dataclass(frozen=True, kw_only=True)
class ModelKind(Component):
    """A model kind: `builder(params, data)` returns a model for the task's data.

    Unless its `abilities` say otherwise, that is a Keras model whose output is a softmax
    (classification [N, C]; tagging and language modelling [N, L, V]) or one number (regression
    [N, 1]), which the trainer compiles with the suite's loss and fits epoch by epoch.
    """

    # The problem it solves (tasks.base): only tasks of that problem take it.
    problem: str
    # The function giving the parameter count before anything is built,
    # `function(params, vocabulary, outputs, max_length) -> int`, so a model too large to train is refused;
    # or `NoSizeEstimate(reason)`: the one way to leave a kind without the check, said in its entry.
    size: Callable[..., int] | NoSizeEstimate
    # The function that evaluates a trained model on the test set, `function(model, data, run, folder)`, and
    # returns one or more `seqkeras.evaluation.rows.EvaluationRow`: it makes the problem's metric input
    # (evaluation.metric_catalog.INPUTS) and computes the run's metrics through the metric registry.
    # Evaluators import Keras, so they are `Lazy`.
    evaluator: Callable[..., Any] = Lazy("seqkeras.evaluation.rows", "evaluate_predictions")
    # What its models do beyond a Keras softmax model: `Abilities`, or the function giving them for the
    # parameters (`function(params) -> Abilities`) when they depend on them (a tagger's CRF output).
    abilities: Abilities | Callable[[Any], Abilities] = KERAS_MODEL
    # The `evaluate.diagnostics` its models support (gradient_flow: they have a recurrent layer).
    diagnostics: tuple[str, ...] = ()
    # How its trained models are kept in the run folder and read back: Keras's native format unless it declares
    # another `ModelFile` (the `ngram` kind's counts are no Keras model).
    model_file: ModelFile = KERAS_NATIVE
    # The step model a decoder drives over its language models, carrying their own state from token to token:
    # `step_model(model, start_id, end_id, *, context=(), window=None, scores=None)` → a `decoding.StepModel`
    # (the `lm` kind's recurrent state, the `transformer` kind's key/value cache). None: the decoders rerun the
    # model on the prefix at every step (`PrefixStepModel`).
    step_model: Callable[..., Any] | None = None
    # What its trained models read and write, `model_shape(model)` → `ModelShape` (a ValueError saying what the model
    # is not, for a model of another kind): a kept model is checked against its preprocessing.json by it when it is
    # loaded. Keras functional models of one input and one output are read by the default, `keras_model_shape`.
    model_shape: Callable[[Any], ModelShape] | Lazy = keras_model_shape
    # How its trained models are scored on validation data by the task's metrics while they train
    # (train.validation_metrics): `scorer(model, data, run)` → `score(validation inputs, targets)` → {metric: value},
    # and the metrics it can score (None: every metric of the problem that has a direction). The default scores a
    # softmax model's predictions; None: the kind's models cannot be scored so (a language model, a counted one).
    validation_scorer: ValidationScorer | None = None
    # The backends its models train fastest on, fastest first, as `make bench` measured them: `--backend auto`
    # follows it (execution.sweep.auto_backend), or `function(params) -> tuple` where it depends on the parameters.
    # (): the suite's own order (backends.runtime.AUTO_PREFERENCE).
    fastest_on: tuple[str, ...] | Callable[[Any], tuple[str, ...]] = ()

    def load_evaluator(self) -> Callable[..., Any]:
        return loaded(self.evaluator)

    def load_validation_scorer(self) -> Callable[..., Any]:
        """`validation_scorer`'s function (the spec's checks refuse train.validation_metrics for a kind without)."""
        if self.validation_scorer is None:
            raise ValueError(f"model kind {self.name!r} has no scorer of validation data")
        return loaded(self.validation_scorer.scorer)

    def abilities_for(self, params: BaseModel) -> Abilities:
        """What this kind's model with these parameters can do."""
        if isinstance(self.abilities, Abilities):
            return self.abilities
        return self.abilities(params)

    def fastest_backends(self, params: BaseModel) -> tuple[str, ...]:
        """The backends this kind's model with these parameters trains fastest on, fastest first (`fastest_on`)."""
        return self.fastest_on if isinstance(self.fastest_on, tuple) else tuple(self.fastest_on(params))

    def shape_of(self, model: Any) -> ModelShape:
        """What `model`, one of this kind's, reads and writes (`model_shape`)."""
        return loaded(self.model_shape)(model)

    def estimated_size(self, params: BaseModel, *, vocabulary: int, outputs: int, max_length: int = 0) -> int | None:
        """The parameter count the model will have, or None for a kind that declares `NoSizeEstimate`."""
        if isinstance(self.size, NoSizeEstimate):
            return None
        return int(self.size(params, vocabulary, outputs, max_length))


@dataclass(frozen=True, kw_only=True)
class Metric(Component):
    """A metric: for each problem kind it applies to, one function of that problem's input type
    (evaluation.metric_catalog.INPUTS) that returns one number.

    A metric takes no parameters and is built by no builder: its functions are `computes`.
    """

    params: type[BaseModel] = Params
    builder: Callable[..., Any] | None = None
    # problem → its function, `function(inputs) -> float`; the problems in the order they are listed.
    computes: Mapping[str, Callable[[Any], Any]]
    # Which way is better: "maximize" or "minimize" (`predict --best`, `evaluate --best` read it), or None for a
    # number that is no score of the model (a ratio, the data's own baseline, a diversity).
    direction: Literal["maximize", "minimize"] | None = None

    @property
    def problems(self) -> tuple[str, ...]:
        return tuple(self.computes)

    @property
    def described(self) -> str:
        better = {"maximize": "Higher is better.", "minimize": "Lower is better."}.get(self.direction)
        return f"{self.summary} {better}" if better else self.summary

    def function(self, problem: str) -> Callable[[Any], Any]:
        """The function computing this metric from `problem`'s input."""
        if problem not in self.computes:
            raise ValueError(f"metric {self.name!r} does not apply to {problem} "
                             f"(it applies to {', '.join(self.problems)})")
        return loaded(self.computes[problem])


@dataclass(frozen=True, kw_only=True)
class Probe(Component):
    """A probe: `builder(params, seed)` measures something without a task or a trained model."""

    # The function giving the metric names a run reports for its parameters, `function(params) -> list`
    # (`*` matches data-dependent parts), so tables and claims are checked before it runs.
    metric_names: Callable[[Any], list[str]]


def loaded(reference: Any) -> Any:
    """A catalog reference as the object it names: a `Lazy` one imported now, any other as it is."""
    return reference.load() if isinstance(reference, Lazy) else reference


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

    def add(self, component: Component) -> None:
        """Register one more component, after the others. The suite's own are listed in the catalog; this is
        for components defined elsewhere (a test, a notebook), which `remove` takes out again."""
        if component.name in self._components:
            raise ValueError(f"a {self.kind} named {component.name!r} is already registered")
        self._components[component.name] = component

    def remove(self, name: str) -> None:
        self._components.pop(name)

    def __iter__(self) -> Iterator[Component]:
        return iter(self._components.values())

    def __contains__(self, name: object) -> bool:
        return name in self._components
