"""How a kept model's inputs are made from text, and its outputs named: `preprocessing.json`. Plain Python, no Keras.

A run folder keeps the vocabularies (`vocabulary.json`; `target_vocabulary.json`
for seq2seq) and the spec (`spec.yaml`). `preprocessing.json` holds the rest of
what turns a text into the ids the model was trained on, and its output back
into words, so that a model is usable without rebuilding its task's data:

    {"format": 1, "task": "text_classification_file", "problem": "classification",
     "model_kind": "classifier", "model_file": "model.keras", "backend": "tensorflow",
     "input":  {"vocabulary": "vocabulary.json", "split": "whitespace", "lowercase": "ascii",
                "strip_punctuation": true, "pattern": null, "max_length": null, "features": null},
     "output": {"kind": "label", "labels": ["neg", "pos"], "vocabulary": null, "join": " ",
                "start": null, "end": null, "context": null, "max_output_length": null,
                "continuation": null}}

`input` is the rule the run's task declares (its Params' `input_rule(data)`, an
`InputRule` of seqkeras.tasks.input_rules): this module knows no task. `output`
follows from the problem the data poses (classification, tagging, ...: the problem
decides what a model's outputs are: its `output_fields`), and `problem` is one of seqkeras.problems.PROBLEMS.

input.split: `whitespace` (runs of ASCII whitespace, as Keras's TextVectorization and
the synthetic tasks split), `characters`, `pattern` (every match of input.pattern, a
Python regular expression: lm_corpus's words, de_en's words and marks), a subword
level, `wordpiece`, `bpe`, `sentencepiece_unigram` or `sentencepiece_bpe` (that level's
pieces over the vocabulary file, which the run learnt from its training texts:
tasks.subwords; with input.pattern, the text's words are its matches, cut into pieces:
sentence_pairs' and lm_corpus's words) or `features` (regression: real-valued features
per step, input.features of them; no text). input.tokenizer, written only at the levels
whose learnt model is more than its vocabulary (bpe: `bpe.json`, its merges;
sentencepiece_*: `sentencepiece.model`, SentencePiece's model proto), names that file of
the run folder, and input.tokenizer_sha256 its SHA-256 as the run kept it (recorded since
the field was added: a folder kept before has none, and loads). Read back, it is checked as a spec is
(tasks.subword_models): a file that is missing, a link, outside the folder, over
TOKENIZER_LIMIT, not UTF-8 or not JSON (bpe.json), not a model of its level, or not of the
vocabulary file's pieces is refused in one line naming it; so is one that would cut words
into other pieces than the run's (tasks.tokenizer_checks: the model type input.split
records, merges that make vocabulary.json's pieces in their order, SentencePiece's
normalization and piece types as the suite trains them, and the recorded SHA-256).
input.lowercase: `none`, `ascii` (A–Z only, as TextVectorization's `lower`) or
`unicode` (Python's str.lower). input.strip_punctuation removes TextVectorization's
ASCII punctuation before splitting. input.max_length keeps that many tokens per text.
A token outside the vocabulary is `<unk>` (id 1); id 0 is padding. (At a subword level, a
word, or a stretch of one, that no pieces spell is the piece `<unk>`, and is counted
unknown.)

output.kind: `label` (classification: output.labels by class id), `tags` (tagging:
output.labels by tag id, `<pad>` first), `next_token` (language models: the input's
vocabulary; output.context is the window the model was trained on, output.end the
marker after each unit), `target` (seq2seq: output.vocabulary, with output.start and
output.end; output.max_output_length, what the run's decoders allowed) or `value`
(regression). Each length (input.max_length, input.features, output.context,
output.max_output_length) is read as the int32 the model's ids, shapes and decoding loops
hold: from 1 to 2,147,483,647 (INT32_MAX); kept.consistency then compares them with the
model's own tables. output.join puts tokens back together into a text; output.continuation, when
set, is the mark by which the subword level of input.split says where words meet (`##`,
WordPiece's, continues the word before; `▁` starts one): the pieces are first joined into
the words they spell (`runn ##ing`, `▁runn ing` → `running`; tasks.subwords.join_pieces,
one function of the level). A seq2seq run whose sides share one subword vocabulary names
vocabulary.json as output.vocabulary too.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, ValidationError

from seqkeras.errors import SpecError, excerpt, shown, translate_validation_error
from seqkeras.registry import KERAS_NATIVE
from seqkeras.tasks import subwords
from seqkeras.problems import ProblemName, problem_named
from seqkeras.tasks.base import UNK, SequenceData, Vocabulary
from seqkeras.tasks.input_rules import SUBWORD_SPLITS, VOCABULARY_FILE, DeclaresInputRule, FileName, InputRule
from seqkeras.tasks.seq2seq_data import END, START
from seqkeras.tasks.subword_models import SubwordModel
from seqkeras.tasks.tokenizer_checks import check_digest, sha256

FORMAT = 1
FILE = "preprocessing.json"
KERAS_FILE = KERAS_NATIVE.name  # the default; a model kind may keep its models in another file (ModelKind.model_file)
TARGET_VOCABULARY_FILE = "target_vocabulary.json"
# The largest learnt subword model file read back: a 1,000,000-piece vocabulary's (the most a task learns) takes
# some 30 MB as SentencePiece's proto or as bpe.json's merges.
TOKENIZER_LIMIT = 64 << 20
# The largest length preprocessing.json may hold: lengths become int32 (ids, shapes, a decoder's step count).
INT32_MAX = 2**31 - 1
# A file name that messages show as it is; any other (someone else's file may name anything) is quoted, cut short.
PLAIN_NAME = re.compile(r"[A-Za-z0-9_.-]{1,60}")

# TextVectorization's whitespace split, `lower` and `strip_punctuation`, in one place (tasks.subwords).
ASCII_WHITESPACE = subwords.ASCII_WHITESPACE
ASCII_LOWER = subwords.ASCII_LOWER
PUNCTUATION = subwords.PUNCTUATION


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class OutputRule(_Strict):
    kind: Literal["label", "tags", "next_token", "target", "value"]
    labels: list[str] | None = None
    vocabulary: FileName | None = None
    join: str = " "
    start: str | None = None
    end: str | None = None
    context: int | None = None
    max_output_length: int | None = None
    continuation: str | None = None


class Document(_Strict):
    format: Literal[1]
    task: str
    problem: ProblemName
    model_kind: str
    model_file: FileName  # the file its model kind keeps its models in (ModelKind.model_file)
    backend: str
    input: InputRule
    output: OutputRule


@dataclass
class Encoded:
    """Texts as the model reads them: `ids` [N, L] int32 (0 = padding, right-padded to the longest),
    the `tokens` of each text after standardization (before the vocabulary), and `unknown`: per text, the
    tokens that are not in the vocabulary and became `<unk>`."""

    ids: np.ndarray
    tokens: list[list[str]]
    unknown: list[list[str]] = field(default_factory=list)

    @property
    def unknown_count(self) -> int:
        return sum(len(words) for words in self.unknown)


@dataclass
class Preprocessing:
    """`preprocessing.json` with its vocabularies: text → ids → the model → ids → tokens, labels or text.

    It also serves where the suite's evaluation and generation read a task's data for these (`vocabulary`,
    `tokenize`, `detokenize`, `end_token`), so a kept language model continues a prompt as its run did.
    """

    document: Document
    vocabulary: Vocabulary
    outputs: Vocabulary | None = None  # labels, tags, or seq2seq's target vocabulary; None otherwise
    # A subword split's model (tasks.subwords): the run's, read back from its file, or (wordpiece) built over the
    # vocabulary on first use (it loads TensorFlow).
    subword_model: Any = field(default=None, repr=False, compare=False)

    # ------------------------------------------------------------------ built from a run

    @classmethod
    def of_run(cls, task: str, params: DeclaresInputRule, data: SequenceData, model_kind: str, *, backend: str,
               max_output_length: int | None = None, model_file: str = KERAS_FILE) -> Preprocessing:
        """What `task` (its name and params) did to make `data`, for the model kind that was trained on it, whose
        models are kept in `model_file` (its kind's `ModelFile`: kept.saving passes it).

        The input rule is the task's own (its Params' `input_rule`, tasks.input_rules); the output rule follows
        from the problem the data poses, which is what decides what a model's outputs are."""
        inputs = params.input_rule(data)
        joined = "" if inputs.split == "characters" else " "
        # The pieces a language model or a seq2seq decoder writes are shown as the words they spell.
        continuation = subwords.BY_NAME[inputs.split].mark if inputs.split in SUBWORD_SPLITS else None
        learnt = data.subwords
        if inputs.tokenizer is not None and learnt is not None:  # the learnt model's file, recorded by its digest
            inputs = inputs.model_copy(update={"tokenizer_sha256": sha256(learnt.input.saved())})
        problem = problem_named(data.problem)
        outputs = {"kind": problem.output_kind, "join": joined, **problem.output_fields(data)}
        if problem.decodes:  # its outputs are pieces of a vocabulary, shown as the words they spell
            shared = learnt is not None and learnt.shared  # one vocabulary file for both sides
            outputs.update(vocabulary=TARGET_VOCABULARY_FILE if problem.source_to_target and not shared
                           else VOCABULARY_FILE, continuation=continuation, max_output_length=max_output_length)
        outputs = OutputRule(**outputs)
        document = Document(format=FORMAT, task=task, problem=data.problem, model_kind=model_kind,
                            model_file=model_file, backend=backend,
                            input=inputs, output=outputs)
        labels = data.labels if problem.labelled or problem.source_to_target else None
        return cls(document, data.vocabulary, labels, learnt.input if learnt is not None else None)

    def to_json(self) -> str:
        raw = self.document.model_dump(mode="json")
        for key in ("tokenizer", "tokenizer_sha256"):  # fields added later: the other levels' files stay as they were
            if raw["input"][key] is None:
                del raw["input"][key]
        return json.dumps(raw, indent=2, ensure_ascii=False) + "\n"

    def tokenizer_files(self) -> dict[str, bytes]:
        """The run folder's files of a learnt subword model, by name (input.tokenizer), for kept.saving to write
        beside preprocessing.json; none at the other levels."""
        name = self.document.input.tokenizer
        return {name: self.subword_model.saved()} if name else {}

    # ------------------------------------------------------------------ read back

    @classmethod
    def from_json(cls, text: str, where: str, read_vocabulary, read_file=None) -> Preprocessing:
        """From preprocessing.json's text (`where` names the file in errors); `read_vocabulary(name)` gives the
        tokens of a vocabulary file of the same folder, `read_file(name, limit)` the bytes of another (the learnt
        subword model that input.tokenizer names), both as carefully as results.files reads a results folder."""
        try:
            raw = json.loads(text)
        except ValueError as error:
            raise SpecError(f"{where} is not JSON ({error})") from None
        try:  # strict: a number written as a text, or true for 1, is a file this version did not write
            document = Document.model_validate(raw, strict=True)
        except ValidationError as error:
            problem = translate_validation_error(error, Document, raw, path_prefix=None)
            raise SpecError(f"{problem.message.rstrip('.')}; not a preprocessing.json this version of seqkeras "
                            "wrote", file=where, path=problem.path) from None
        if document.input.split in ("pattern", *SUBWORD_SPLITS) and document.input.pattern is not None:
            try:
                re.compile(document.input.pattern or "")
            except re.error as error:
                raise SpecError(f"{where}: input.pattern is not a regular expression ({error})") from None
        vocabulary = Vocabulary(read_vocabulary(document.input.vocabulary)) if document.input.vocabulary \
            else Vocabulary([])
        outputs = None
        if document.output.labels is not None:
            outputs = Vocabulary(list(document.output.labels))
        elif document.output.kind == "target":
            outputs = Vocabulary(read_vocabulary(document.output.vocabulary or TARGET_VOCABULARY_FILE))
        preprocessing = cls(document, vocabulary, outputs)
        problem = preprocessing.inconsistency()
        if problem:
            raise SpecError(f"{where}: {problem}")
        name = document.input.tokenizer
        if name is not None:  # read now, so a damaged file is refused when the model is loaded, in one line
            if read_file is None:
                raise SpecError(f"{where}: input.tokenizer names {name}, but there is no run folder to read it from")
            data = read_file(name, TOKENIZER_LIMIT)  # a name that leaves the folder or crosses a link is refused
            path = str(Path(where).parent / name)
            preprocessing.subword_model = subwords.read_model(document.input.split, data, vocabulary, path)
            # Last: the checks above say what disagrees; a digest only that something does.
            check_digest(data, document.input.tokenizer_sha256, path, f"{FILE}'s input.tokenizer_sha256")
        return preprocessing

    def inconsistency(self) -> str:
        """What in the file does not fit the rest of it ("" when nothing): an output rule of another problem, no
        labels, a special token its vocabulary lacks, a length or count below 1. Read back, a
        preprocessing.json is checked by it, so that a file edited by hand, or put together from several runs, is
        refused when loaded rather than failing in the middle of a prediction; the model is checked against it
        after (`kept.consistency`)."""
        document, rule, output = self.document, self.document.input, self.document.output
        posed = problem_named(document.problem)  # (`problem` below is a message: the subword rule's)
        expected = posed.output_kind
        if output.kind != expected:
            return f"output.kind is {output.kind!r}, but a {document.problem} model's outputs are {expected!r}"
        for name, value in (("input.max_length", rule.max_length), ("input.features", rule.features),
                            ("output.context", output.context), ("output.max_output_length", output.max_output_length)):
            if value is not None and value < 1:
                return f"{name} is {shown(value, 24)}, not a length (1 or more)"
            if value is not None and value > INT32_MAX:
                return (f"{name} is {shown(value, 24)}, past the largest int32 ({INT32_MAX:,}), which lengths are "
                        "read as")
        if (rule.split == "features") == posed.reads_tokens:
            return (f"input.split is {rule.split!r}: a {document.problem} model reads "
                    f"{'text' if posed.reads_tokens else 'real-valued features'}")
        if rule.split == "features":
            return ""
        problem = self._subword_inconsistency()
        if problem:
            return problem
        if not rule.vocabulary:
            return "input.vocabulary names no vocabulary file: a text model's ids index one"
        if output.labels is not None and output.kind not in ("label", "tags"):
            return f"output.labels is set, but a {document.problem} model's outputs are no labels"
        if output.kind in ("label", "tags") and not output.labels:
            return f"output.labels names no {'labels' if output.kind == 'label' else 'tags'}"
        if output.kind == "target":
            target = output.vocabulary or TARGET_VOCABULARY_FILE
            for name, token in (("start", output.start), ("end", output.end)):
                if token is None:
                    return f"output.{name} is missing: a seq2seq model's decoder needs its {name} token"
                if token not in self.outputs.index:
                    return f"{named(target)} has no {name} token {excerpt(token)} (output.{name})"
        if output.kind == "next_token" and output.end is not None and output.end not in self.vocabulary.index:
            return f"{named(rule.vocabulary)} has no end token {excerpt(output.end)} (output.end)"
        return ""

    def _subword_inconsistency(self) -> str:
        """What in the subword fields does not fit the split ("" when nothing): a tokenizer file named at a level
        that keeps none or missing at one that does, a continuation mark that is not the level's."""
        rule, output = self.document.input, self.document.output
        expected = subwords.model_file(rule.split)
        if rule.tokenizer is None and expected is not None:
            return (f"input.tokenizer names no file, but input.split {rule.split!r} reads its learnt model from one "
                    f"({expected})")
        if rule.tokenizer is not None and expected is None:
            return (f"input.tokenizer names {excerpt(rule.tokenizer)}, but input.split {rule.split!r} keeps no model "
                    "file")
        if rule.tokenizer_sha256 is not None and rule.tokenizer is None:
            return "input.tokenizer_sha256 is set, but input.tokenizer names no file it would be the digest of"
        mark = subwords.BY_NAME[rule.split].mark if rule.split in SUBWORD_SPLITS else None
        if output.continuation is not None and output.continuation != mark:
            return f"output.continuation is {excerpt(output.continuation)}, but input.split {rule.split!r} marks " + (
                f"its pieces with {mark!r}" if mark else "no pieces")
        return ""

    # ------------------------------------------------------------------ text → ids

    @property
    def problem(self) -> str:
        return self.document.problem

    @property
    def end_token(self) -> str | None:
        return self.document.output.end if self.document.output.kind == "next_token" else None

    def standardize(self, text: str) -> str:
        rule = self.document.input
        if rule.lowercase == "ascii":
            text = text.translate(ASCII_LOWER)
        elif rule.lowercase == "unicode":
            text = text.lower()
        if rule.strip_punctuation:
            text = PUNCTUATION.sub("", text)
        return text

    def tokenize(self, text: str) -> list[str]:
        """One text's tokens, standardized and split as the task did (at most input.max_length of them)."""
        rule = self.document.input
        if rule.split == "features":
            raise SpecError(f"a {self.document.task} model reads real-valued features, not text")
        if rule.split in SUBWORD_SPLITS:
            return self._tokens([text])[0]
        text = self.standardize(text)
        if rule.split == "characters":
            tokens = list(text)
        elif rule.split == "pattern":
            tokens = re.findall(rule.pattern, text)
        else:
            tokens = [token for token in ASCII_WHITESPACE.split(text) if token]
        return tokens[: rule.max_length] if rule.max_length is not None else tokens

    def encode(self, texts: Iterable[str] | str) -> Encoded:
        """Texts (or one) → ids [N, L], padded with 0 to the longest; tokens outside the vocabulary are <unk>."""
        texts = [texts] if isinstance(texts, str) else list(texts)
        for index, text in enumerate(texts):
            if not isinstance(text, str):
                raise SpecError(f"text {index + 1} is a {type(text).__name__}, not a text")
        tokens = self._tokens(texts)
        ids = np.zeros((len(tokens), max((len(t) for t in tokens), default=0)), dtype=np.int32)
        unknown = []
        # A subword vocabulary holds <unk> as a piece: a word (or a stretch of one) it cannot spell is that piece.
        unknowable = UNK if self.document.input.split in SUBWORD_SPLITS else None
        for row, sequence in enumerate(tokens):
            ids[row, : len(sequence)] = self.vocabulary.encode(sequence)
            unknown.append([token for token in sequence
                            if token not in self.vocabulary.index or token == unknowable])
        return Encoded(ids, tokens, unknown)

    @property
    def subword_level_model(self) -> SubwordModel:
        """The subword level's model: read with the folder, or made from the vocabulary where that is all of it."""
        if self.subword_model is None:
            self.subword_model = subwords.vocabulary_model(self.document.input.split, self.vocabulary)
        return self.subword_model

    def _tokens(self, texts: list[str]) -> list[list[str]]:
        """Each text's tokens; a subword level splits them all through its model (built or read once)."""
        rule = self.document.input
        if rule.split not in SUBWORD_SPLITS:
            return [self.tokenize(text) for text in texts]
        texts = [self.standardize(text) for text in texts]
        if rule.pattern is not None:  # the task's words first (its `level: word` tokens), then their pieces
            texts = [" ".join(re.findall(rule.pattern, text)) for text in texts]
        tokens = subwords.pieces(self.subword_level_model, texts)
        return [t[: rule.max_length] for t in tokens] if rule.max_length is not None else tokens

    # ------------------------------------------------------------------ ids → names and text

    def labels_of(self, ids: Sequence[int]) -> list[str]:
        """Class or tag ids → their names (classification, tagging)."""
        if self.document.output.kind not in ("label", "tags"):
            raise SpecError(f"a {self.problem} model's outputs are not labels")
        return [self.outputs.tokens[int(i)] for i in ids]

    def tokens_of(self, ids: Sequence[int]) -> list[str]:
        """Output ids → tokens, leaving out padding, and for seq2seq the start token and what follows the end."""
        vocabulary = self.outputs if self.document.output.kind == "target" else self.vocabulary
        tokens = vocabulary.decode([int(i) for i in ids])
        if self.document.output.kind == "target":
            tokens = [t for t in tokens if t != START]
            if END in tokens:
                tokens = tokens[: tokens.index(END)]
        return tokens

    def detokenize(self, tokens: Sequence[str]) -> str:
        """Tokens → a text, as the run wrote its samples and outputs."""
        if self.document.output.continuation is not None:
            tokens = subwords.join_pieces(tokens, self.document.input.split)
        join = self.document.output.join
        text = join.join(tokens)
        end = self.end_token
        if end is not None and join == " ":  # a language model's unit ends on a line of their own
            text = text.replace(f" {end} ", f" {end}\n")
        return text


def named(name: str | None) -> str:
    """A file name read from preprocessing.json, as a message shows it: as it is when plain, else quoted and cut
    short (`excerpt`); None (a kind that reads no vocabulary) as None."""
    return name if isinstance(name, str) and PLAIN_NAME.fullmatch(name) else excerpt(name)
