"""A run's model, kept in its folder at the end of training (`keep`) and read back (`load_model` → `KeptModel`).

    <run folder>/model.keras          the trained Keras model, Keras's native format (config, weights and
                                      the optimizer's state) naming Keras's own classes wherever one computes
                                      the same function (`kept.plain_keras`), unless its model kind declares
                                      another file (`ModelKind.model_file`: model.ngram.json for an n-gram model)
    <run folder>/preprocessing.json   text → ids → outputs (seqkeras/kept/preprocessing.py)
    <run folder>/vocabulary.json      the input vocabulary (target_vocabulary.json: seq2seq's output)
    <run folder>/bpe.json, sentencepiece.model
                                      the learnt subword model of level bpe or sentencepiece_* (the file
                                      preprocessing.json's input.tokenizer names; tasks.subword_models)
    <run folder>/spec.yaml            the resolved spec: the task, its seed, the model, the evaluation

Each file is written through `results.folder.write_atomic` (a temporary name, then a rename; a full disk
is `DiskFull`, one line naming the file), the Keras model serialized in memory first (as the resume
checkpoint is: no HDF5 file half written on a full disk). preprocessing.json is written last: a folder
that has it has the whole model.

The model kind's entry says how its models are kept and read back (`registry.ModelFile`): the file's
name, the function that gives its content and the one that reads it; this module only writes and opens
the files. Keras's native format (`keras_image`, `keras_model`) is the default.

Reading goes through `results.files` (a run folder may be someone else's: regular files inside it, no
link followed, bounded), and every problem is one `SpecError` naming the file. A model that does not fit its
preprocessing (another run's, or a vocabulary or labels edited by hand) is refused when loaded (`kept.consistency`).
"""

from __future__ import annotations

import contextlib
import io
import json
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

import keras
from keras.src.backend.common import global_state
from keras.src.saving import saving_lib
from pydantic import ValidationError

from seqkeras import catalog
from seqkeras.backends import layer_classes, serializable
from seqkeras.errors import SpecError, excerpt, translate_validation_error
from seqkeras.kept import plain_keras
from seqkeras.kept.consistency import checked_shape, missing_ability, one_line
from seqkeras.kept.preprocessing import FILE, KERAS_FILE, TARGET_VOCABULARY_FILE, Encoded, Preprocessing
from seqkeras.models.seq2seq_params import output_limit
from seqkeras.registry import Abilities, ModelFile, ModelKind, ModelShape
from seqkeras.results import files
from seqkeras.results.folder import write_atomic
from seqkeras.spec.sections import SECTIONS_WITH_COMPONENTS
from seqkeras.yaml_reader import parse_yaml
from seqkeras.problems import Problem, problem_named
from seqkeras.tasks.base import SequenceData

MODEL_LIMIT = 8 << 30  # 8 GiB: a large model, far below what would exhaust a workstation's memory
SPEC_FILE = "spec.yaml"


# --------------------------------------------------------------------------- keeping


class _KerasImage(io.BytesIO):
    """An in-memory .keras file: Keras's saving writes its zip into an io.BytesIO, and `save` asks only that
    the name end in .keras."""

    def __str__(self) -> str:
        return KERAS_FILE


def keras_image(model: keras.Model) -> bytes:
    """The model as the bytes of a .keras file, made in memory: what Keras's own `model.save` writes (config,
    weights, the optimizer and its state), naming Keras's own classes wherever one computes the same function
    (`plain_keras`), so `keras.saving.load_model` reads it on any backend.

    The optimizer's state (for Adam, two moments per weight: the file is three times the weights) is kept:
    Keras's `load_model` compiles the model and builds its optimizer, and a file without that state makes it
    warn that it skipped the optimizer's variables. A kept model also trains on from where its run stopped.
    """
    image = _KerasImage()
    optimizer = getattr(model, "optimizer", None)
    if optimizer is not None and not optimizer.built:  # a model saved untrained: the state Keras's load builds
        optimizer.build(model.trainable_variables)
    with cached_attribute_skipsets(), plain_keras.written_as_plain_keras(model):
        model.save(image)
    return image.getvalue()


# Keras's saving walks every attribute of every layer, skipping those of a plain reference object of its kind
# (`saving_lib.get_attr_skipset`), which it builds by constructing one. It means to cache that set in its global
# state, but reads it under another key than it writes ("saving_attr_skiplist_" against "saving_attr_skipset_",
# Keras 3.15), so each layer of each save constructs its reference again: 40% of a small model's save. The sets
# depend only on Keras's classes, so they are kept here (clear_session, at each run's start, empties Keras's
# global state) and handed to Keras under the key it reads. Should Keras fix or rename either key, this does
# nothing.
_SKIPSETS: dict[str, Any] = {}
_READ, _WRITTEN = "saving_attr_skiplist_", "saving_attr_skipset_"


@contextlib.contextmanager
def cached_attribute_skipsets():
    for kind, skipset in _SKIPSETS.items():
        global_state.set_global_attribute(f"{_READ}{kind}", skipset)
    try:
        yield
    finally:
        for name, value in list(vars(global_state.GLOBAL_STATE_TRACKER).items()):
            if name.startswith(_WRITTEN) and isinstance(value, set):
                _SKIPSETS[name[len(_WRITTEN):]] = value


def max_output_length(run, data: SequenceData) -> int | None:
    """The longest output the run's seq2seq decoders were allowed (evaluation.seq2seq's rule)."""
    if not problem_named(data.problem).source_to_target:
        return None
    return output_limit(run.model.params, data)


def keep(model, data: SequenceData, run, folder: Path) -> None:
    """Write the trained `model` of `run` into its `folder`, with what is needed to use it (module docstring)."""
    stored = run.model.component.model_file  # how the model kind keeps its models (Keras's format by default)
    preprocessing = Preprocessing.of_run(run.task.name, run.task.params, data, run.model.name,
                                         backend=keras.backend.backend(),
                                         max_output_length=max_output_length(run, data), model_file=stored.name)
    if problem_named(data.problem).source_to_target:
        write_atomic(folder / TARGET_VOCABULARY_FILE, data.target_vocabulary.to_json())
    write_atomic(folder / stored.name, stored.saver()(model))
    for name, content in preprocessing.tokenizer_files().items():  # a learnt subword model (bpe, sentencepiece)
        write_atomic(folder / name, content)
    write_atomic(folder / FILE, preprocessing.to_json())


# --------------------------------------------------------------------------- loading


@dataclass
class KeptModel:
    """A run's trained model and everything needed to use it, read from its folder by `load_model`.

    model          the Keras model (`keras.Model`; a `Seq2SeqModel`, a `SequenceCRFTagger`), or what its model
                   kind's `model_file` reads back (for `ngram`, the counted `NgramLanguageModel`)
    preprocessing  `Preprocessing`: how the task turned a text into ids, and the output names
    spec           the run's resolved spec (spec.yaml) as a mapping
    folder         the run folder
    shape          what the model reads and writes, as its kind reads it (`registry.ModelShape`), checked against
                   the preprocessing when loaded (`kept.consistency`)

    Text → ids → model → names, the way the run did:

        kept = seqkeras.load_model("results/sentiment/cell=lstm_seed=0_1a2b3c4d")
        encoded = kept.encode(["a fine film", "dull"])   # Encoded: ids [N, L], tokens, unknown (→ <unk>)
        probabilities = kept.model.predict(encoded.ids, verbose=0)
        kept.preprocessing.labels_of(probabilities.argmax(-1))   # ['pos', 'neg']

    `predict(texts, decoder)` does all of this (seqkeras/kept/predict.py, `seqkeras predict`); what it builds on,
    per problem (`kept.problem`):

    - classification: `encode` → `model.predict` [N, classes] → `labels_of(argmax)`;
    - tagging: `encode` → `model.predict` [N, L, tags] (a CRF tagger: `model.predict_tags(ids)`, the Viterbi
      path) → `labels_of` per token, one tag per token of `encoded.tokens`;
    - seq2seq: `encode` (the source) → any decoder of the catalog over
      `model.step_model(ids, start_id, end_id)` (`decoding.decoders.build_decoder(name, choice)`;
      `start_id`/`end_id`: `kept.preprocessing.outputs.index["<s>"/"</s>"]`) up to
      `kept.preprocessing.document.output.max_output_length` → `tokens_of` → `detokenize`; the attention
      map of an input: `model.attention_weights(source, decoder_input)`;
    - language modelling: a prompt continues with any sampler through `evaluation.generation.generate(
      kept.model, kept.preprocessing, choice, spec, window=kept.preprocessing.document.output.context)`:
      the preprocessing answers for the task's data there (`vocabulary`, `tokenize`, `detokenize`,
      `end_token`);
    - regression: real-valued features [N, L, input.features] → `model.predict` [N, 1].

    `encoded.unknown` lists the words outside the vocabulary (each became `<unk>`), for the output to count.

    What an `evaluate` command builds on: `run_spec()` re-reads spec.yaml as a run (validated: its task's
    files must exist here), `data()` rebuilds the run's own data (train and test split) from it and the
    run's seed, and `evaluate(out)` scores the model with the run's evaluator, its metrics and decoders,
    as the run did (optionally other decoders and metrics, through a changed run spec), writing the
    evaluator's files into `out`.
    """

    model: Any
    preprocessing: Preprocessing
    spec: dict[str, Any]
    folder: Path
    shape: ModelShape | None = None

    @property
    def problem(self) -> str:
        return self.preprocessing.problem

    @property
    def poses(self) -> Problem:
        """The problem its model answers (`seqkeras.problems`): what its predictions are."""
        return problem_named(self.problem)

    @property
    def kind(self) -> str:
        """The model kind's name."""
        return self.preprocessing.document.model_kind

    @property
    def model_kind(self) -> ModelKind:
        """The model kind's catalog entry: what its models are and do (`registry.ModelKind`)."""
        return catalog.MODELS.get(self.kind)

    @property
    def abilities(self) -> Abilities:
        """What the model does beyond a Keras softmax model, as its kind declares for the run's model parameters
        (spec.yaml's `model:`): a CRF tagger's Viterbi tags, a counted model's own scores."""
        raw, key = self.spec.get("model"), SECTIONS_WITH_COMPONENTS["model"]  # the section's `kind:` names the kind
        params = {name: value for name, value in raw.items() if name != key} if isinstance(raw, dict) else {}
        try:
            validated = self.model_kind.params.model_validate(params)
        except ValidationError as error:
            where = self.folder / SPEC_FILE
            raise translate_validation_error(error, self.model_kind.params, params, path_prefix=f"{where}: model") \
                from None
        return self.model_kind.abilities_for(validated)

    def encode(self, texts) -> Encoded:
        """Texts (or one text) → ids as the run's task made them; see `Preprocessing.encode`."""
        return self.preprocessing.encode(texts)

    def predict(self, texts, decoder=None, length: int | None = None):
        """A pandas DataFrame, one row per text: the label, the tags, the output or the value, and the count of
        `unknown` words (`kept.predict`). `decoder` (seq2seq, language models): a decoder's name, its label
        (`beam(width=5)`) or a spec's mapping ({name: beam, width: 5}), greedy by default; `length`: the tokens a
        language model adds to each prompt."""
        from seqkeras.kept.predict import predict

        return predict(self, texts, decoder, length)

    def attention(self, texts, decoder=None) -> list:
        """Per text, a seq2seq model's attention over the output it decodes (greedy by default): a DataFrame
        each, as the run's attention.csv (`kept.predict.attention_maps`; `seqkeras predict --attention DIR`)."""
        from seqkeras.kept.predict import attention_maps

        return attention_maps(self, texts, decoder)

    def run_spec(self, overrides: list[str] | None = None):
        """The run, from its spec.yaml (a `RunSpec`), `overrides` (`evaluate.metrics=[...]`) applied."""
        from seqkeras.spec.loader import build_experiment

        raw = {key: value for key, value in self.spec.items() if key != "seed"}
        raw["seeds"] = [self.spec.get("seed", 0)]
        for section, key in SECTIONS_WITH_COMPONENTS.items():
            raw[section] = without_defaults(section, key, raw.get(section))
        raw = without_default_metrics(raw)
        try:
            (run,) = build_experiment(raw, source=str(self.folder / SPEC_FILE), overrides=list(overrides or [])).runs
        except SpecError as error:
            raise SpecError(f"{self.folder / SPEC_FILE}: {error}") from None
        return run

    def data(self, run=None) -> SequenceData:
        """The run's own data, rebuilt by its task from spec.yaml and the run's seed."""
        run = run or self.run_spec()
        return run.task.component.load()(run.task.params, run.seed)

    def evaluate(self, out: Path, run=None) -> list:
        """The run's evaluation again, on its rebuilt test set: its `EvaluationRow`s (one per decoder where the run
        has decoders). The evaluator's files (outputs.csv, samples.csv, ...) go into `out`, never the run folder
        unless `out` is it."""
        run = run or self.run_spec()
        data = self.data(run)
        out.mkdir(parents=True, exist_ok=True)
        return run.model.component.load_evaluator()(self.model, data, run, out)


def without_defaults(section: str, key: str, params: Any) -> Any:
    """A component's resolved params, less those at their default: read again, they resolve to the same, and
    a check on what a spec sets (a regressor refuses `embedding_dim`) sees only what was set."""
    if not isinstance(params, dict) or params.get(key) not in catalog.REGISTRY_OF_SECTION[section].names():
        return params  # the spec's validation says what is wrong with it
    fields = catalog.REGISTRY_OF_SECTION[section].get(params[key]).params.model_fields
    return {name: value for name, value in params.items()
            if name == key or name not in fields or fields[name].get_default(call_default_factory=True) != value}


def without_default_metrics(raw: dict[str, Any]) -> dict[str, Any]:
    """A resolved spec less its evaluate.metrics where they are its task's problem's defaults: read again, the run
    names no metrics, and its id hashes them as its own did (`metric_catalog.DEFAULTS_IN_RUN_IDS`), whatever
    defaults were added since."""
    task, evaluate = raw.get("task"), raw.get("evaluate")
    if not isinstance(task, dict) or not isinstance(evaluate, dict) or not isinstance(task.get("name"), str) \
            or task["name"] not in catalog.TASKS:
        return raw  # the spec's validation says what is wrong with it
    if evaluate.get("metrics") != catalog.DEFAULT_METRICS[catalog.TASKS.get(task["name"]).problem]:
        return raw
    return {**raw, "evaluate": {key: value for key, value in evaluate.items() if key != "metrics"}}


def load_model(folder: str | Path, *, where: dict[str, Any] | None = None, seed: int | None = None,
               best: str | None = None) -> KeptModel:
    """The kept model of a run folder (results/<name>/<run_id>), or of the run of an experiment's results folder
    (results/<name>) that `where` (matrix key → value), `seed` and `best` (a metric: the best run by it) select
    (`kept.selection`); a `SpecError` naming the file when there is none, a file is not what it should be or the
    model does not fit its preprocessing (`kept.consistency`), or listing the candidates when the selection leaves
    several runs."""
    if not isinstance(folder, (str, Path)):
        raise SpecError(f"load_model takes a run folder's path (str or Path), not a {type(folder).__name__}")
    folder = Path(folder)
    wanted = where is not None or seed is not None or best is not None
    if wanted or (folder.is_dir() and files.present(folder, "runs.csv")):
        from seqkeras.kept.selection import chosen_run, selection

        folder = chosen_run(folder, selection(where, seed, best, names=("where", "seed", "best")))
    if not folder.is_dir():
        raise SpecError(f"{folder}: not a run folder (expected results/<name>/<run_id>, which `run` writes)")
    if not files.present(folder, FILE):
        if files.present(folder, "metrics.json"):
            raise SpecError(f"{folder / FILE} is missing: this run kept no model (trained before models were "
                            "kept, with train.keep_model: false, a probe, or a run that failed)")
        raise SpecError(f"{folder}: not a run folder (no metrics.json, no {FILE})")
    preprocessing = Preprocessing.from_json(files.read_text(folder, FILE), str(folder / FILE),
                                            lambda name: read_vocabulary(folder, name),
                                            lambda name, limit: files.read_bytes(folder, name, limit=limit))
    spec = parse_yaml(files.read_text(folder, SPEC_FILE), file=str(folder / SPEC_FILE))
    if not isinstance(spec, dict):
        raise SpecError(f"{folder / SPEC_FILE} is not a run's resolved spec (a mapping)")
    document = preprocessing.document
    if document.model_kind not in catalog.MODELS:
        raise SpecError(f"{folder / FILE}: model_kind {excerpt(document.model_kind)} is not a model kind of this "
                        f"seqkeras ({', '.join(catalog.MODELS.names())})")
    kind = catalog.MODELS.get(document.model_kind)
    if kind.problem != document.problem:
        raise SpecError(f"{folder / FILE}: model_kind {document.model_kind!r} solves {kind.problem}, but its problem "
                        f"is {document.problem}")
    stored = kind.model_file
    if document.model_file != stored.name:
        raise SpecError(f"{folder / FILE}: model_file is {excerpt(document.model_file)}, but model kind "
                        f"{document.model_kind!r} keeps its models in {stored.name}")
    if not files.present(folder, stored.name):
        raise SpecError(f"{folder / stored.name} is missing (preprocessing.json names it)")
    model = read_model(folder, stored)
    # The model must fit its preprocessing (a model.keras from another run, a vocabulary edited by hand): refused
    # here, in one line, not in the middle of a prediction (kept.consistency).
    shape = checked_shape(kind, model, preprocessing, folder / stored.name)
    kept = KeptModel(model, preprocessing, spec, folder, shape)
    try:
        abilities = kept.abilities
    except SpecError:  # spec.yaml's model section is read again where it is used, and refused there
        return kept
    problem = missing_ability(abilities, model, folder / stored.name, kind.name)
    if problem:
        raise SpecError(problem)
    return kept


class RefusedModelFile(ValueError):
    """A model file that a loader refuses to read, and why (one line)."""


def read_model(folder: Path, stored: ModelFile) -> Any:
    """The model in `folder/stored.name`, opened through `results.files` (regular, no link, bounded) and read
    from that open file by the kind's loader; a `SpecError` naming the file when it holds no such model."""
    with files.open_binary(folder, stored.name, limit=MODEL_LIMIT) as image:
        try:
            return stored.loader()(image)
        except RefusedModelFile as refused:
            raise SpecError(f"{folder / stored.name} is refused: {refused}") from None
        except Exception as error:  # zipfile, JSON, h5py and Keras raise many types for a damaged or foreign file
            first = one_line(error) if str(error).strip() else ""  # escaped: Keras quotes the config it could not read
            raise SpecError(f"{folder / stored.name} cannot be loaded as {stored.holds} ({type(error).__name__}: "
                            f"{first})") from None


# A .keras file is a zip archive that Keras writes uncompressed (its size is what it unpacks to), and unpacks into
# memory and the temporary folder to load. One from someone else may be a small file that unpacks to gigabytes:
# its members are counted and their unpacked sizes summed before Keras reads it, against these bounds.
UNPACKED_FLOOR = 64 << 20  # any archive may unpack to 64 MiB
UNPACKED_RATIO = 10  # and to 10 times its own size: a recompressed file still loads
MAX_MEMBERS = 10_000  # Keras writes 3 (config, metadata, weights)


def unpacked_size_problem(image: BinaryIO) -> str:
    """Why the .keras archive `image` must not be unpacked ("" when it may); `image` is left at its start."""
    size = image.seek(0, io.SEEK_END)
    image.seek(0)
    try:
        with zipfile.ZipFile(image) as archive:
            members = archive.infolist()
    except (zipfile.BadZipFile, OSError, ValueError):
        return ""  # not an archive: Keras's loader says what it is not, as for any other damaged file
    finally:
        image.seek(0)
    if len(members) > MAX_MEMBERS:
        return f"its archive holds {len(members)} files (a .keras file holds a few; at most {MAX_MEMBERS})"
    unpacked, bound = sum(member.file_size for member in members), max(UNPACKED_FLOOR, UNPACKED_RATIO * size)
    if unpacked > bound:
        return (f"its archive of {size} bytes unpacks to {unpacked} bytes, more than {bound} "
                f"(the larger of {UNPACKED_FLOOR >> 20} MiB and {UNPACKED_RATIO} times its size)")
    return ""


def keras_model(image: BinaryIO) -> keras.Model:
    """The model of an open .keras file (the default kinds' `ModelFile.load`), with Keras's safe_mode on and not
    compiled (no optimizer: a kept model predicts); an archive that would unpack beyond its bounds
    (`unpacked_size_problem`) is refused before Keras reads it.

    Keras's public `keras.saving.load_model` takes a path only, which it would open again itself; its
    saving library loads from an open file (`keras.src.saving.saving_lib.load_model`), as `save` writes to one.
    """
    problem = unpacked_size_problem(image)
    if problem:
        raise RefusedModelFile(problem)
    serializable.register()  # Keras is loaded (this module imports it): the suite's classes are findable
    # On torch, the fused layers it trained with (the file names Keras's: `plain_keras`), to predict as fast.
    return layer_classes.fused(saving_lib.load_model(image, compile=False, safe_mode=True))


def read_vocabulary(folder: Path, name: str) -> list[str]:
    """A vocabulary file of the run folder: a JSON list of tokens, by id."""
    where = folder / name
    try:
        tokens = json.loads(files.read_text(folder, name))
    except ValueError as error:
        raise SpecError(f"{where} is not JSON ({error})") from None
    if not isinstance(tokens, list) or not all(isinstance(token, str) for token in tokens):
        raise SpecError(f"{where} is not a vocabulary (a JSON list of tokens)")
    return tokens

