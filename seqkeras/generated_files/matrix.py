"""The matrix that proves everything composes: every model kind × every training option × every way out of a run.

docs/matrix.md is rendered from it (`matrix_markdown`, `make generate`); tests/test_matrix.py checks every cell
cheaply (validation only) and, in the system tier, trains each accepted cell and takes it out every way the
matrix says works.

- **Rows** are the catalog's model kinds (`catalog.MODELS`), each as its parameters' defaults, and a variant of a
  kind for each parameter value that changes what its models can do (`ModelKind.abilities_for`: a tagger's
  `output: crf` decides its tags by Viterbi decoding), since that changes which ways out work. Nothing lists the
  kinds here: a new kind is a new row.
- **Options** (`OPTIONS`) are the training controls and input options, each written as a spec spells it and laid
  over a row's tiny spec (`cell_spec`). A subword level needs a task that reads text: the first task of the kind's
  problem that has a `level` and reads a file the matrix writes (`FILE_TASKS`), else such a task without a
  `level` (a tagging file: its own refusal says why), else the row's own task, which refuses the key.
- **Whether a cell's spec is accepted** is the suite's own validation, the function `seqkeras validate` runs
  (`spec.loader.build_experiment`); a refusal is its one-line message.
- **Ways out** are decided without training, each by the rule of the code that carries it out: a kept model for
  every accepted spec (`train.keep_model` is on by default); `keras.saving.load_model` and Keras's export for a
  kind kept as a Keras file (`ModelKind.model_file`), export not for a model that decides by Viterbi decoding
  outside its forward pass (`Abilities.tags`): kept/export.py's `_check_exportable`, which tests/test_matrix.py
  holds these to; `seqkeras evaluate` with a metric of the problem the run did not report (and, for an
  encoder-decoder, a decoder it did not use); tuning on each history value the suite's validation accepts as
  `tune.objective` (`TUNING`).
- `KNOWN_FAILURES` names the cells that the matrix's rules say work but that fail for a bug of the suite, each
  with what happens: such a cell reads "fails", and the system tier expects it to fail until it is fixed.

The data files a spec may name (a subword task's text, a file of word vectors) are written by `DataFiles` into a
folder of the caller's; the generated page says DATA for that folder.
"""

from __future__ import annotations

import copy
import re
import tempfile
import typing
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from seqkeras import catalog
from seqkeras.problems import problem_named
from seqkeras.spec import loader

# --------------------------------------------------------------------------- verdicts


@dataclass(frozen=True)
class Verdict:
    """Whether a cell works; if not, why, in one line: the suite's own words (`message`)."""

    works: bool
    message: str = ""
    short: str = ""  # the reason cut to what a table's cell holds; derived from `message` when not given
    failure: bool = False  # a bug of the suite (KNOWN_FAILURES), not a refusal

    @property
    def reason(self) -> str:
        return self.short or short_reason(self.message)


YES = Verdict(True)
# A cell left empty: its spec is refused, so no run exists to take anywhere; or an objective of another problem.
NOT_APPLICABLE = Verdict(False, "", "–")

# Where a refusal's sentence says why: the first clause after the key path.
CLAUSE_END = re.compile(r": |; | \(|\. |, not |, which ")
SHORT_REASON = 60


def short_reason(message: str) -> str:
    """A one-line refusal cut to its first clause, at most SHORT_REASON characters (on a word's end)."""
    clause = CLAUSE_END.split(message, maxsplit=1)[0].strip().rstrip(".")
    if len(clause) <= SHORT_REASON:
        return clause
    return clause[:SHORT_REASON].rsplit(" ", 1)[0] + "…"


def refused(error: Exception, data: DataFiles) -> Verdict:
    """A refusal of the suite's validation: its one line (data files named by their folder, DATA), and the reason
    without the key path that starts it."""
    message = data.hide(str(error))
    return Verdict(False, message, short_reason(data.hide(getattr(error, "message", message))))


def validated(spec: dict[str, Any], data: DataFiles) -> Verdict:
    """What `seqkeras validate` says of `spec`: YES, or its one-line refusal. Any other exception is a bug of the
    validation itself and is raised."""
    try:
        loader.build_experiment(copy.deepcopy(spec), source="<matrix>", overrides=[])
    except loader.SpecError as error:  # errors.SpecError, as spec.loader raises it: the user's mistake, said
        return refused(error, data)
    return YES


# --------------------------------------------------------------------------- rows: model kinds and their variants


@dataclass(frozen=True)
class Row:
    """A model kind, with the parameters (`variant`) that make it a variant of its defaults, or none."""

    kind: str
    variant: tuple[tuple[str, Any], ...] = ()

    @property
    def model_kind(self):
        return catalog.MODELS.get(self.kind)

    @property
    def problem(self) -> str:
        return self.model_kind.problem

    @property
    def abilities(self):
        return self.model_kind.abilities_for(self.model_kind.params.model_validate(dict(self.variant)))

    @property
    def id(self) -> str:
        return "-".join([self.kind, *(f"{name}-{value}" for name, value in self.variant)])

    @property
    def label(self) -> str:
        spelled = ", ".join(f"{name}: {value}" for name, value in self.variant)
        return f"{self.kind} ({spelled})" if spelled else self.kind


def literal_choices(annotation: Any) -> list[Any]:
    """The values a Literal (or optional Literal) parameter may take; [] for any other."""
    if typing.get_origin(annotation) is typing.Literal:
        return list(typing.get_args(annotation))
    members = [member for member in typing.get_args(annotation) if member is not type(None)]
    return [value for member in members if typing.get_origin(member) is typing.Literal
            for value in typing.get_args(member)]


def rows() -> list[Row]:
    """Every model kind of the catalog at its defaults, then a variant for each parameter value that gives its
    models other abilities than every row of the kind before it."""
    found = []
    for kind in catalog.MODELS:
        found.append(Row(kind.name))
        seen = [found[-1].abilities]
        for name, declared in kind.params.model_fields.items():
            for value in literal_choices(declared.annotation):
                try:
                    variant = Row(kind.name, ((name, value),))
                    abilities = variant.abilities
                except ValidationError:  # a value that needs other parameters set: no variant of one key
                    continue
                if abilities not in seen:
                    seen.append(abilities)
                    found.append(variant)
    return found


# --------------------------------------------------------------------------- data files a spec may name


def number_words(n: int) -> str:
    """1–999 in English words: texts whose words share pieces (##ty, ▁hundred), for the subword levels to learn."""
    ones = "one two three four five six seven eight nine".split()
    teens = "ten eleven twelve thirteen fourteen fifteen sixteen seventeen eighteen nineteen".split()
    tens = "twenty thirty forty fifty sixty seventy eighty ninety".split()
    words = [ones[n // 100 - 1], "hundred"] if n >= 100 else []
    n %= 100
    if 10 <= n < 20:
        words.append(teens[n - 10])
    else:
        words += ([tens[n // 10 - 2]] if n >= 20 else []) + ([ones[n % 10 - 1]] if n % 10 else [])
    return " ".join(words)


# A few dozen texts: about as few as a subword level's smallest vocabulary (SUBWORD_VOCABULARY pieces) is learnt from.
NUMBERS = range(101, 197)


def conll_sentence(n: int) -> str:
    words = ["number", *number_words(n).split()]
    tags = ["O", "B-NUM", *["I-NUM"] * (len(words) - 2)]
    return "".join(f"{word} {tag}\n" for word, tag in zip(words, tags)) + "\n"


@dataclass(frozen=True)
class FileTask:
    """A task that reads a file of ours: the file's name and text, and the task's keys besides `path`."""

    file: str
    text: Callable[[], str]
    keys: dict[str, Any] = field(default_factory=dict)


# The tasks whose file the matrix can write, each in its format; a subword level is laid over the first of them
# (in the catalog's order) that has a `level` for the kind's problem (`subword_task`).
FILE_TASKS = {
    "text_classification_file": FileTask("texts.csv", lambda: "text,label\n" + "".join(
        f"{number_words(n)},{('even', 'odd')[n % 2]}\n" for n in NUMBERS)),
    "lm_corpus": FileTask("corpus.txt", lambda: "".join(f"{number_words(n)}\n" for n in NUMBERS),
                          {"corpus": "path", "context": 8}),
    "conll_file": FileTask("tags.conll", lambda: "".join(conll_sentence(n) for n in NUMBERS)),
    "sentence_pairs": FileTask("pairs.tsv", lambda: "".join(f"{number_words(n)}\t{number_words(n + 1)}\n"
                                                            for n in NUMBERS)),
}
WORDS_WITH_VECTORS = sorted({word for n in NUMBERS for word in number_words(n).split()} | set("abcdefghij"))
HIDDEN = "DATA"  # what the generated page says for the folder of the data files


class DataFiles:
    """The data files cells' specs name, written into `folder` when first asked for."""

    def __init__(self, folder: Path):
        self.folder = Path(folder)

    def _written(self, name: str, text: Callable[[], str]) -> str:
        path = self.folder / name
        if not path.exists():
            path.write_text(text(), encoding="utf-8")
        return str(path)

    def task(self, name: str) -> dict[str, Any]:
        """The `task:` section of a file task (FILE_TASKS), its file written."""
        file_task = FILE_TASKS[name]
        return {"name": name, "path": self._written(file_task.file, file_task.text), **file_task.keys}

    def word_vectors(self, dimension: int) -> str:
        """A GloVe-style file of `dimension`-wide vectors for a few dozen words; its path."""
        def text() -> str:
            return "".join(f"{word} " + " ".join(f"{((index * 7 + axis) % 11 - 5) / 10:.1f}"
                                                 for axis in range(dimension)) + "\n"
                           for index, word in enumerate(WORDS_WITH_VECTORS))
        return self._written(f"vectors-{dimension}d.txt", text)

    def hide(self, text: str) -> str:
        """`text` with this folder named DATA: a message that names a data file reads the same on any machine."""
        return text.replace(str(self.folder), HIDDEN)


# --------------------------------------------------------------------------- specs and options


def first_generated_task(problem: str) -> str:
    """The first task of the catalog posing `problem` that makes its own data: it validates at its defaults and
    reads no file (no user's file, no installed corpus)."""
    for task in catalog.TASKS:
        if task.problem != problem:
            continue
        try:
            params = task.params.model_validate({})
        except (ValidationError, loader.SpecError):
            continue
        if not params.input_files():
            return task.name
    raise LookupError(f"no task of problem {problem!r} makes its own data")


def base_spec(row: Row) -> dict[str, Any]:
    """A row's spec as the matrix validates it: the first task of its problem that makes its own data and the kind
    at its defaults (its variant's parameters set), one epoch."""
    return {"version": 1, "name": f"matrix-{row.id}",
            "task": {"name": first_generated_task(row.problem)},
            "model": {"kind": row.kind, **dict(row.variant)},
            "train": {"epochs": 1, "batch_size": 16, "verbose": 0},
            "seeds": [0]}


def subword_task(problem: str) -> str | None:
    """The task a subword level is laid over: the first of the catalog posing `problem` whose file the matrix
    writes and which has a `level`, else the first such file task without one (whose own refusal says why), else
    None (the row's own task, which has no `level` either)."""
    file_tasks = [task for task in catalog.TASKS if task.problem == problem and task.name in FILE_TASKS]
    with_level = [task for task in file_tasks if "level" in task.params.model_fields]
    chosen = (with_level or file_tasks or [None])[0]
    return chosen.name if chosen is not None else None


VALIDATION_SPLIT = 0.25  # the validation data an option or tuning asks for: a quarter of the training set


def with_validation_data(spec: dict[str, Any]) -> dict[str, Any]:
    """`spec` with validation data: its own (a task's validation file or share, a validation split) or a split."""
    if not ({"validation_path", "validation_share"} & set(spec["task"]) or "validation_split" in spec["train"]):
        spec["train"]["validation_split"] = VALIDATION_SPLIT
    return spec


@dataclass(frozen=True)
class Option:
    """A training control or input option: its name, how the spec spells it, and the spec laid over with it."""

    name: str
    spelled: str
    lay_over: Callable[[dict[str, Any], Row, DataFiles], None] = lambda spec, row, data: None


def schedule(spec: dict[str, Any], row: Row, data: DataFiles) -> None:
    spec["train"]["optimizer"] = {**spec["train"].get("optimizer", {}),
                                  "schedule": {"warmup_steps": 2, "decay": "cosine", "final_learning_rate": 1e-4}}


def early_stopping(spec: dict[str, Any], row: Row, data: DataFiles) -> None:
    with_validation_data(spec)["train"]["early_stopping"] = {"monitor": "val_loss", "patience": 1}


def class_weights(spec: dict[str, Any], row: Row, data: DataFiles) -> None:
    spec["train"]["class_weights"] = "balanced"


SUBWORD_VOCABULARY = 32  # the smallest a subword level takes: pieces a few dozen texts teach


def subword_level(level: str) -> Callable[[dict[str, Any], Row, DataFiles], None]:
    def lay_over(spec: dict[str, Any], row: Row, data: DataFiles) -> None:
        task = subword_task(row.problem)
        spec["task"] = {**(data.task(task) if task else spec["task"]), "level": level,
                        "vocabulary_size": SUBWORD_VOCABULARY}
    return lay_over


def word_vectors(spec: dict[str, Any], row: Row, data: DataFiles) -> None:
    """A file of vectors as wide as the model's embedding (its `embedding_dim`, or the kind's default)."""
    declared = row.model_kind.params.model_fields.get("embedding_dim")
    dimension = spec["model"].get("embedding_dim", declared.default if declared is not None else 8)
    spec["model"]["embedding"] = {"path": data.word_vectors(dimension)}


def one_hot(spec: dict[str, Any], row: Row, data: DataFiles) -> None:
    """One-hot inputs, as wide as the vocabulary: an embedding's width no longer applies."""
    spec["model"].pop("embedding_dim", None)
    spec["model"]["input_encoding"] = "one_hot"


OPTIONS = (
    Option("none", "the row's spec as it is"),
    Option("schedule", "`train.optimizer.schedule: {warmup_steps: 2, decay: cosine, final_learning_rate: 1.0e-4}`",
           schedule),
    Option("early_stopping", "`train.early_stopping: {monitor: val_loss, patience: 1}`, `train.validation_split: "
           f"{VALIDATION_SPLIT}`", early_stopping),
    Option("class_weights", "`train.class_weights: balanced`", class_weights),
    # Each subword level of the catalog: a new level has its cells.
    *(Option(level.name, f"`task.level: {level.name}`, `task.vocabulary_size: {SUBWORD_VOCABULARY}` (a task of the "
             "kind's problem that reads a file)", subword_level(level.name)) for level in catalog.SUBWORD_LEVELS),
    Option("word_vectors", "`model.embedding: {path: vectors.txt}`, a file of vectors as wide as `embedding_dim`",
           word_vectors),
    Option("one_hot", "`model.input_encoding: one_hot` (`embedding_dim` left out)", one_hot),
)


def cell_spec(row: Row, option: Option, data: DataFiles, base: dict[str, Any] | None = None) -> dict[str, Any]:
    """The spec of one cell: `base` (a row's tiny spec; by default `base_spec(row)`) with the option laid over it."""
    spec = copy.deepcopy(base if base is not None else base_spec(row))
    spec["name"] = f"{spec['name']}-{option.name}".replace("_", "-")
    spec.setdefault("train", {})
    option.lay_over(spec, row, data)
    return spec


# --------------------------------------------------------------------------- tuning objectives


TUNING = {"search": {"train.optimizer.learning_rate": {"log_uniform": [1.0e-3, 1.0e-2]}}, "trials": 2}
HISTORY_OBJECTIVES = ("val_loss", "val_accuracy")  # what Keras's history holds, with validation data


def scored_metric(objective: str, problem: str) -> str | None:
    """The metric of `problem` an objective `val_<metric>` names (scored on validation data when listed in
    train.validation_metrics), or None."""
    name = objective.removeprefix("val_")
    return name if any(metric.name == name and problem in metric.problems for metric in catalog.METRICS) else None


def objective_candidates(problem: str) -> list[str]:
    """Every history value that could be a tuning objective of a run of `problem`: Keras's, and `val_<metric>` for
    each metric of the problem that has a direction."""
    scored = [f"val_{metric.name}" for metric in catalog.METRICS
              if problem in metric.problems and metric.direction is not None]
    return list(dict.fromkeys([*HISTORY_OBJECTIVES, *scored]))


def tuned_spec(spec: dict[str, Any], objective: str, problem: str, scored: bool) -> dict[str, Any]:
    """`spec` tuned on `objective` (2 trials), with validation data; with `scored`, the objective's metric listed in
    train.validation_metrics, which scores the validation data by it."""
    tuned = with_validation_data(copy.deepcopy(spec))
    tuned["name"] = f"{spec['name']}-tune-{objective}".replace("_", "-")
    if scored:
        tuned["train"]["validation_metrics"] = {"metrics": [scored_metric(objective, problem)]}
    tuned["tune"] = {**copy.deepcopy(TUNING), "objective": objective}
    return tuned


def tuning_spec(spec: dict[str, Any], objective: str, problem: str, data: DataFiles) -> dict[str, Any] | None:
    """The spec that tunes `spec` on `objective` as the suite accepts it: the history's value as it is, or scored
    by train.validation_metrics; None when neither is accepted."""
    for scored in (False, True):
        if scored and scored_metric(objective, problem) is None:
            continue
        tuned = tuned_spec(spec, objective, problem, scored)
        if validated(tuned, data).works:
            return tuned
    return None


def objective_verdict(spec: dict[str, Any], objective: str, problem: str, data: DataFiles) -> Verdict:
    """Whether `spec` may be tuned on `objective`; a refusal is the last way tried (scored, where the problem has
    the metric: the sharper message)."""
    if tuning_spec(spec, objective, problem, data) is not None:
        return YES
    return validated(tuned_spec(spec, objective, problem, scored_metric(objective, problem) is not None), data)


# --------------------------------------------------------------------------- ways out


@dataclass(frozen=True)
class WayOut:
    name: str
    title: str
    means: str


WAYS_OUT = (
    WayOut("keep", "keep", "the run keeps its model (`model.keras`, or the kind's own file) and preprocessing.json, "
           "and `seqkeras.load_model` reads them back"),
    WayOut("plain_keras", "plain Keras", "`keras.saving.load_model` reads model.keras in a fresh process on "
           "tensorflow, jax and torch without a warning and predicts as the kept model does: with Keras alone "
           "where the file names none of the suite's classes, else after `import seqkeras` (the CRF, attention, "
           "the encoder-decoders), which also keeps another backend's framework out of the process"),
    WayOut("predict", "predict", "`seqkeras predict RUN --text ...` gives a row per input"),
    WayOut("evaluate", "evaluate", "`seqkeras evaluate` adds a metric the run did not report (and an "
           "encoder-decoder a decoder it did not use) to its record"),
    WayOut("onnx", "ONNX", "`seqkeras export-model --format onnx`, run by ONNX Runtime as the kept model predicts "
           "(a classifier: the label `seqkeras predict` gives)"),
    WayOut("savedmodel", "SavedModel", "`seqkeras export-model --format savedmodel`, loaded and called by "
           "TensorFlow as the kept model predicts"),
    WayOut("tune", "tune", "a `tune:` study of 2 trials on each objective of [the table below](#tuning-objectives) "
           "that the cell accepts, then its best setting's run"),
)
KERAS_FILE_SUFFIX = ".keras"  # Keras's native format: the file `keras.saving.load_model` and Keras's export read


def keras_file_verdict(row: Row, refusal: str, short: str) -> Verdict:
    """YES for a kind kept as a Keras file (ModelKind.model_file), else why not as `refusal` and `short` say."""
    model_file = row.model_kind.model_file
    if model_file.name.endswith(KERAS_FILE_SUFFIX):
        return YES
    return Verdict(False, refusal.format(kind=row.kind, holds=model_file.holds, file=model_file.name),
                   short.format(file=model_file.name))


def export_verdict(row: Row) -> Verdict:
    """kept/export.py's `_check_exportable`, decided from the catalog: a kind kept as a Keras file, whose model
    decides within its forward pass (tests/test_matrix.py checks the two agree, message for message)."""
    verdict = keras_file_verdict(row, "model kind {kind!r} cannot be exported: its model is {holds} ({file}), "
                                      "not a Keras graph", "{file} is not a Keras graph")
    if verdict.works and row.abilities.tags:
        return Verdict(False, f"model kind {row.kind!r} cannot be exported: its tags come from the CRF's Viterbi "
                              "decoding, outside the forward pass that Keras's export writes (use `seqkeras predict`)",
                       "Viterbi decoding is outside the forward pass")
    return verdict


DECODER_ADDED = {"name": "beam", "width": 3}  # a decoder no tiny spec of the suite's tests names


def evaluation_additions(spec: dict[str, Any], problem: str) -> dict[str, list]:
    """What `seqkeras evaluate` adds to a run of `spec`: the first metric of its problem with a direction that it
    did not report, and, for an encoder-decoder (which decodes every test input), a beam search."""
    reported = (spec.get("evaluate") or {}).get("metrics") or catalog.DEFAULT_METRICS[problem]
    metrics = [metric.name for metric in catalog.METRICS
               if problem in metric.problems and metric.direction is not None and metric.name not in reported][:1]
    decoders = [DECODER_ADDED] if problem_named(problem).source_to_target else []
    return {"metrics": metrics, "decoders": decoders}


def evaluate_verdict(spec: dict[str, Any], problem: str) -> Verdict:
    if any(evaluation_additions(spec, problem).values()):
        return YES
    return Verdict(False, f"the run reports every metric of {problem} already", "nothing left to add")


@dataclass(frozen=True)
class KnownFailure:
    """A cell the rules say works that fails for a bug of the suite: where, and what happens (one line)."""

    where: str
    happens: str


# (row id, option name, way out) → the bug. None today: the system tier found two (a Transformer's frozen word
# vectors forgotten by a plain-Keras load), fixed in models/transformer.py.
KNOWN_FAILURES: dict[tuple[str, str, str], KnownFailure] = {}


def ways_out(row: Row, spec: dict[str, Any], objectives: dict[str, Verdict], option: Option) -> dict[str, Verdict]:
    """Each way out of an accepted cell."""
    tuned = [verdict for verdict in objectives.values() if verdict.works]
    verdicts = {
        "keep": YES,
        "plain_keras": keras_file_verdict(row, "model kind {kind!r} keeps {holds} in {file}, not a Keras file: "
                                               "keras.saving.load_model does not read it",
                                          "{file} is not a Keras file"),
        "predict": YES,
        "evaluate": evaluate_verdict(spec, row.problem),
        "onnx": export_verdict(row),
        "savedmodel": export_verdict(row),
        "tune": YES if tuned else objectives[HISTORY_OBJECTIVES[0]],
    }
    for way, verdict in verdicts.items():
        failure = KNOWN_FAILURES.get((row.id, option.name, way))
        if verdict.works and failure is not None:
            verdicts[way] = Verdict(False, f"{failure.where}: {failure.happens}", "fails", failure=True)
    return verdicts


# --------------------------------------------------------------------------- the matrix


@dataclass(frozen=True)
class Cell:
    row: Row
    option: Option
    spec: dict[str, Any]
    accepted: Verdict
    ways: dict[str, Verdict]  # by WayOut.name; empty when the spec is refused
    objectives: dict[str, Verdict]  # by objective; empty when the spec is refused


def cell(row: Row, option: Option, data: DataFiles, base: dict[str, Any] | None = None) -> Cell:
    spec = cell_spec(row, option, data, base)
    accepted = validated(spec, data)
    if not accepted.works:
        return Cell(row, option, spec, accepted, {}, {})
    objectives = {objective: objective_verdict(spec, objective, row.problem, data)
                  for objective in objective_candidates(row.problem)}
    return Cell(row, option, spec, accepted, ways_out(row, spec, objectives, option), objectives)


def cells(data: DataFiles, base_of: Callable[[Row], dict[str, Any] | None] = lambda row: None) -> list[Cell]:
    """Every row × every option, its data files written into `data`'s folder; `base_of(row)` gives a row's base
    spec (None: `base_spec(row)`)."""
    return [cell(row, option, data, base_of(row)) for row in rows() for option in OPTIONS]


# --------------------------------------------------------------------------- docs/matrix.md


class Footnotes:
    """Each distinct message once, numbered in order of first use."""

    def __init__(self):
        self.numbers: dict[str, int] = {}

    def reference(self, message: str) -> str:
        return f"[^{self.numbers.setdefault(message, len(self.numbers) + 1)}]"

    def cell(self, verdict: Verdict) -> str:
        """yes; or the short reason and the footnote of its message."""
        if verdict.works:
            return "yes"
        if not verdict.message:
            return verdict.reason
        return f"{'**fails**' if verdict.failure else escaped(verdict.reason)}{self.reference(verdict.message)}"

    def lines(self) -> Iterator[str]:
        for message, number in self.numbers.items():
            yield f"[^{number}]: {escaped(message)}"


def escaped(text: str) -> str:
    """Text for a Markdown table's cell: pipes escaped, and a `<` that would open a tag."""
    return text.replace("|", "\\|").replace("<", "\\<")


def table(header: list[str], body: list[list[str]]) -> list[str]:
    return ["| " + " | ".join(header) + " |", "|" + "|".join([":--"] * len(header)) + "|",
            *("| " + " | ".join(line) + " |" for line in body)]


def by_row(found: list[Cell]) -> dict[Row, list[Cell]]:
    grouped: dict[Row, list[Cell]] = {}
    for item in found:
        grouped.setdefault(item.row, []).append(item)
    return grouped


def objectives_of(row_cells: list[Cell]) -> dict[str, Verdict]:
    """A row's tuning objectives, as the first accepted option's (tests/test_matrix.py checks every accepted
    option of the row has the same)."""
    accepted = [item for item in row_cells if item.accepted.works]
    return accepted[0].objectives if accepted else {}


def objective_lists(objectives: dict[str, Verdict], notes: Footnotes) -> list[str]:
    """A row's accepted objectives, and its refused ones each with its footnote: two cells."""
    accepted = [f"`{objective}`" for objective, verdict in objectives.items() if verdict.works]
    refused = [f"`{objective}`{notes.reference(verdict.message)}"
               for objective, verdict in objectives.items() if not verdict.works]
    return [", ".join(accepted) or "–", ", ".join(refused) or "–"]


INTRODUCTION = """\
# What composes: every model kind × every option × every way out

Generated by `make generate` from `seqkeras/generated_files/matrix.py`; do not edit. Each row is a model kind of
the catalog at its defaults (or a variant whose parameters change what its models do), with one training or input
option laid over its spec; each column is a way out of the trained run. A cell says `yes`, or why not in a few words,
with the suite's own one-line message as its footnote, or **fails**: a bug of the suite that the system tier found,
its footnote saying where and what happens. Nothing here is trained: whether a spec is accepted is what
`seqkeras validate` says of it, and each way out is decided by the rule of the code that carries it out.
`tests/test_matrix.py` checks every cell on each `make test`, and `make test-system` trains each accepted cell
(one epoch, a few dozen sequences) and takes it out every way that says `yes`: a `yes` that fails there fails the
tests."""


def matrix_markdown(found: list[Cell] | None = None) -> str:
    """docs/matrix.md: the options, the ways out, the matrix, each row's tuning objectives, the footnotes."""
    if found is None:
        with tempfile.TemporaryDirectory() as folder:
            found = cells(DataFiles(Path(folder)))
    notes = Footnotes()
    lines = [INTRODUCTION, "", "## Options", ""]
    lines += table(["option", "laid over the row's spec"], [[option.name, option.spelled] for option in OPTIONS])
    lines += ["", "## Ways out", ""]
    lines += table(["way out", "works when"], [[way.title, way.means] for way in WAYS_OUT])
    lines += ["", "## The matrix", "",
              "`spec`: whether `seqkeras validate` accepts the row's spec with the option (when it does not, no run "
              "exists to take anywhere: –).", ""]
    lines += table(["model kind", "option", "spec", *(way.title for way in WAYS_OUT)],
                   [[f"`{item.row.label}`", item.option.name, notes.cell(item.accepted),
                     *(notes.cell(item.ways.get(way.name, NOT_APPLICABLE)) for way in WAYS_OUT)] for item in found])
    lines += ["", "## Tuning objectives", "",
              "What `tune.objective` each row accepts, the same for each of its options the spec accepts: a value "
              "of the training history on validation data, `val_loss` and `val_accuracy` as Keras's history has "
              "them, `val_<metric>` for a metric of the kind's problem, scored by `train.validation_metrics`.", ""]
    lines += table(["model kind", "accepted", "refused"],
                   [[f"`{row.label}`", *objective_lists(objectives_of(row_cells), notes)]
                    for row, row_cells in by_row(found).items()])
    lines += ["", *notes.lines()]
    return "\n".join(lines) + "\n"
