"""Predictions of a kept model on new inputs: what `seqkeras predict` prints and `KeptModel.predict` returns.

One row per input, as a pandas DataFrame, per problem:

    classification  input, label, probability (of that label), unknown
    tagging         input, tokens, tags (one tag per token, both space-joined; a CRF tagger: its Viterbi path),
                    unknown
    seq2seq         input, decoder, output, log_prob, unknown   (any decoder of the catalog; greedy by default)
    language model  input, decoder, output, log_prob, unknown   (the prompt continued by `length` tokens)
    regression      input, value                               (real-valued features, no words)

`unknown` counts the input's words outside the vocabulary: each became `<unk>`.

Many inputs are predicted in batches (`PREDICT_BATCH`, shortest first, each padded to its own longest): one model
call per batch. A seq2seq model decodes a batch at a time too (the evaluator's `decode_sources`); a language model
continues one prompt at a time, as its run's generation did, each with its own sampling seed.

Decoding reuses the suite's own paths: the seq2seq evaluator's `decode_sources` and the language models'
`generation.generate`, with the run's seed for sampling (`decoders.seeded`), so a sampled output is the same
every time. A decoder is written as a spec writes it (`{name: beam, width: 5}`, in YAML or JSON), as a name
(`beam`), or as its table label (`beam(width=5, length_penalty=0.6)`): `decoding.decoders.parse_decoder`, the one
reader of decoders, reads them all (`seqkeras predict --decoder` through this module).

A regression input is a text of steps: whitespace between steps, commas between one step's features
("0.3,0 0.9,1 0.1,0"), or a JSON list of steps ([[0.3, 0], [0.9, 1], [0.1, 0]]).
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pandas as pd
from pydantic import BaseModel, ValidationError

from seqkeras.decoding.decoders import MAX_RUN_SEED, GreedyChoice, decoder_label, parse_decoder, seeded
from seqkeras.errors import SpecError, shown, translate_validation_error
from seqkeras.evaluation.generation import generate, text_of
from seqkeras.evaluation.settings import GenerateSpec
from seqkeras.user_files import open_regular_file
from seqkeras.yaml_reader import decode_utf8
DEFAULT_LENGTH = 30  # tokens a language model adds to a prompt (evaluate.generate's default)
# Inputs per model call: one call per batch, not per input (Keras's `predict` costs a few milliseconds a call
# before any arithmetic); big enough that a file of inputs is a few calls, small enough for any model's memory.
PREDICT_BATCH = 256


# --------------------------------------------------------------------------- inputs


def checked_texts(texts: Any) -> list[str]:
    """The inputs as a list of texts: one text or a list of them, none empty."""
    texts = [texts] if isinstance(texts, str) else list(texts)
    if not texts:
        raise SpecError("no input to predict: give at least one text")
    for index, text in enumerate(texts):
        if not isinstance(text, str):
            raise SpecError(f"input {index + 1} is a {type(text).__name__}, not a text")
        if not text.strip():
            raise SpecError(f"input {index + 1} is empty: give a text to predict from")
    return texts


INPUT_FILE_LIMIT = 64 << 20  # 64 MiB of inputs, one a line


def read_inputs(path: str) -> list[str]:
    """A user's file of inputs, one per line (UTF-8; blank lines left out), read through the checked readers."""
    try:
        with open_regular_file(path, limit=INPUT_FILE_LIMIT) as handle:
            data = handle.read(INPUT_FILE_LIMIT + 1)
    except SpecError as error:
        raise SpecError(f"--file {path}: {error}") from None
    if len(data) > INPUT_FILE_LIMIT:
        raise SpecError(f"--file {path}: is larger than {INPUT_FILE_LIMIT >> 20} MiB")
    lines = [line for line in decode_utf8(data, source=f"--file {path}").splitlines() if line.strip()]
    if not lines:
        raise SpecError(f"--file {path}: has no inputs (one a line)")
    return lines


def features_of(text: str, features: int, index: int) -> np.ndarray:
    """A regression input's steps [L, features] from its text (module docstring)."""
    where = f"input {index + 1} ({shown(text)})"
    stripped = text.strip()
    try:
        if stripped.startswith("["):
            steps = json.loads(stripped)
        else:
            steps = [[float(value) for value in step.split(",")] for step in stripped.split()]
        array = np.asarray(steps, dtype="float32")
    except (ValueError, TypeError):
        raise SpecError(f"{where}: a regression input is steps of {features} finite number(s) each, e.g. "
                        "'0.3,0 0.9,1' or [[0.3, 0], [0.9, 1]]") from None
    if array.ndim == 1 and features == 1:
        array = array[:, None]
    if array.ndim != 2 or array.shape[1] != features or not np.isfinite(array).all():
        raise SpecError(f"{where}: each step needs {features} finite number(s) (the model's features), e.g. "
                        "'0.3,0 0.9,1' or [[0.3, 0], [0.9, 1]]")
    return array


# --------------------------------------------------------------------------- predicting


def predict(kept, texts, decoder: Any = None, length: int | None = None) -> pd.DataFrame:
    """One row per input (module docstring), the columns its problem's (`Problem.rows`). `decoder` (seq2seq,
    language models): a decoder as `parse_decoder` reads it, greedy by default; `length`: the tokens a language
    model adds to each prompt."""
    texts = checked_texts(texts)
    problem = kept.poses
    if decoder is not None and not problem.decodes:
        raise SpecError(f"a decoder is for seq2seq and language models; this is a {problem.name} model "
                        f"({kept.kind}): leave the decoder out")
    if length is not None and not problem.continues_prompts:
        raise SpecError(f"a length is for language models; this is a {problem.name} model ({kept.kind})")
    return pd.DataFrame(problem.rows(KeptPredicting(kept, texts, decoder, length)))


class KeptPredicting:
    """`problems.Predicting` of a kept model: each answer computed when its problem's rows first ask for it."""

    def __init__(self, kept, texts: list[str], decoder: Any, length: int | None):
        self.kept, self.texts, self.length = kept, texts, length
        self.choice = GreedyChoice() if decoder is None else parse_decoder(decoder)
        self._encoded = None

    def encoded(self):
        if self._encoded is None:
            encoded = self.kept.encode(self.texts)
            for index, tokens in enumerate(encoded.tokens):
                if not tokens:
                    raise SpecError(f"input {index + 1} ({shown(self.texts[index])}) has no tokens once "
                                    "standardized as the task did: give a text with words in it")
            self._encoded = encoded
        return self._encoded

    def unknown(self) -> list[int]:
        return [len(words) for words in self.encoded().unknown]

    def tokens(self) -> list[list[str]]:
        return self.encoded().tokens

    def lengths(self) -> list[int]:
        """Each input's tokens, once checked against the positions the model reads."""
        lengths = [len(tokens) for tokens in self.encoded().tokens]
        within_positions(self.kept, self.texts, lengths)
        return lengths

    def outputs(self) -> list[np.ndarray]:
        return per_input(self.kept.model.predict_on_batch, self.encoded().ids, self.lengths())

    def decided_ids(self) -> list[np.ndarray]:
        if self.kept.abilities.tags:  # a CRF: the Viterbi path, as the trainer decides
            return per_input(self.kept.model.predict_tags, self.encoded().ids, self.lengths())
        return [row.argmax(-1) for row in self.outputs()]

    def labels_of(self, ids) -> list[str]:
        return self.kept.preprocessing.labels_of(ids)

    def decoder_label(self) -> str:
        return decoder_label(self.choice)

    def decoded(self) -> tuple[list[str], np.ndarray]:
        self.lengths()
        return seq2seq(self.kept, self.encoded().ids, seeded(self.choice, run_seed(self.kept)))

    def continued(self) -> tuple[list[str], list[float]]:
        self.encoded()  # a prompt without tokens is refused before generating
        return continuation(self.kept, self.texts, self.choice, run_seed(self.kept), self.length)

    def values(self) -> np.ndarray:
        return regression_values(self.kept, self.texts)


def within_positions(kept, texts: list[str], lengths: list[int]) -> None:
    """Refuse an input longer than the model reads (a learned position table: `ModelShape.positions`)."""
    positions = kept.shape.positions if kept.shape is not None else None
    if positions is None:
        return
    for index, length in enumerate(lengths):
        if length > positions:
            raise SpecError(f"input {index + 1} ({shown(texts[index])}) has {length} tokens; this model reads at "
                            f"most {positions} (its position table: the run's longest input, or model.max_length)")


def run_seed(kept) -> int:
    """The run's seed, from its spec.yaml (a file of someone else's folder, maybe): the whole number, within
    every backend's seeds (`MAX_RUN_SEED`), that a run's spec allows; else a SpecError naming the file."""
    seed = kept.spec.get("seed", 0)
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed <= MAX_RUN_SEED:
        raise SpecError(f"{kept.folder / 'spec.yaml'}: seed is {shown(seed, 24)}, not a run's seed (a whole number "
                        f"from 0 to {MAX_RUN_SEED:,})")
    return seed


def seq2seq(kept, sources: np.ndarray, choice: BaseModel) -> tuple[list[str], np.ndarray]:
    tokens, log_probs = decoded_ids(kept, sources, choice)
    texts = [kept.preprocessing.detokenize(kept.preprocessing.tokens_of(ids)) for ids in tokens]
    return texts, log_probs


def decoded_ids(kept, sources: np.ndarray, choice: BaseModel) -> tuple[list[list[int]], np.ndarray]:
    """Each source's output ids (the end token included where reached) and log-probability, as the evaluator
    decodes."""
    from seqkeras.evaluation.seq2seq import decode_sources

    target = kept.preprocessing.outputs
    rule = kept.preprocessing.document.output
    max_length = rule.max_output_length or 2 * sources.shape[1] + 2
    positions = kept.shape.output_positions if kept.shape is not None else None
    if rule.max_output_length is None and positions is not None:  # recorded, it was checked when the model loaded
        max_length = min(max_length, positions)
    tokens, log_probs, _ = decode_sources(kept.model, sources, target.index[rule.start], target.index[rule.end],
                                          choice, max_length)
    return tokens, log_probs


def attention_maps(kept, texts, decoder: Any = None) -> list[pd.DataFrame]:
    """Per input, the attention of a seq2seq model with attention over its own decoded output (greedy by default):
    the long table the run's attention.csv is (output_position, output_token, source_position, source_token,
    weight), the decoder teacher-forced on the output it chose, so each output token's row is the attention that
    produced it."""
    texts = checked_texts(texts)
    encoder_decoder = kept.poses.source_to_target  # its model is a decoding.protocol.EncoderDecoder
    if not encoder_decoder or not kept.model.attends:
        raise SpecError(f"an attention map needs an encoder-decoder with attention; this is a {kept.problem} model "
                        f"({kept.kind}{', attention: none' if encoder_decoder else ''})")
    choice = GreedyChoice() if decoder is None else parse_decoder(decoder)
    encoded = kept.encode(texts)
    within_positions(kept, texts, [len(tokens) for tokens in encoded.tokens])
    rule = kept.preprocessing.document.output
    start, end = kept.preprocessing.outputs.index[rule.start], kept.preprocessing.outputs.index[rule.end]
    tokens, _ = decoded_ids(kept, encoded.ids, seeded(choice, run_seed(kept)))
    maps = []
    for row, ids in enumerate(tokens):
        ids = [int(i) for i in ids if int(i) != end]
        weights = kept.model.attention_weights(encoded.ids[row : row + 1], np.asarray([[start, *ids]]))[0]
        output = [*kept.preprocessing.outputs.decode(ids), rule.end]  # one token per row of the weights
        source = encoded.tokens[row][: weights.shape[1]]
        maps.append(pd.DataFrame([
            {"output_position": t, "output_token": output[t], "source_position": s, "source_token": source[s],
             "weight": float(weights[t, s])}
            for t in range(len(output)) for s in range(len(source))
        ]))
    return maps


def continuation(kept, prompts: list[str], choice: BaseModel, seed: int,
                 length: int | None) -> tuple[list[str], list[float]]:
    if length is None:
        evaluate = kept.spec.get("evaluate")
        generate_spec = (evaluate.get("generate") if isinstance(evaluate, dict) else None) or {}
        length = generate_spec.get("length", DEFAULT_LENGTH) if isinstance(generate_spec, dict) else DEFAULT_LENGTH
        try:  # spec.yaml's (a file of someone else's folder, maybe): a length as a spec's, or refused naming it
            GenerateSpec(length=length)
        except ValidationError as error:
            raise translate_validation_error(error, GenerateSpec, {"length": length},
                                             path_prefix="evaluate.generate").located(
                file=str(kept.folder / "spec.yaml")) from None
    raw = {"prompts": prompts, "length": length}
    try:
        spec = GenerateSpec(**raw)
    except ValidationError as error:
        raise translate_validation_error(error, GenerateSpec, raw, path_prefix=None) from None
    window = kept.preprocessing.document.output.context
    samples = generate(kept.model, kept.preprocessing, choice, spec, window, run_seed=seed,
                       scores_itself=kept.abilities.scores,
                       own_step_model=kept.model_kind.step_model)
    return [text_of(kept.preprocessing, sample.tokens) for sample in samples], [s.log_prob for s in samples]


def regression_values(kept, texts: list[str]) -> np.ndarray:
    features = kept.preprocessing.document.input.features or 1
    steps = [features_of(text, features, index) for index, text in enumerate(texts)]
    # A regressor reads every step (no padding mask: padding would be read as steps), so a batch holds inputs of
    # one length only: the batches of each length in turn.
    values = np.zeros(len(steps))
    for length in sorted({len(array) for array in steps}):
        same = np.asarray([index for index, array in enumerate(steps) if len(array) == length])
        for start in range(0, len(same), PREDICT_BATCH):
            chunk = same[start : start + PREDICT_BATCH]
            predicted = np.asarray(kept.model.predict_on_batch(np.stack([steps[i] for i in chunk])))
            values[chunk] = predicted.reshape(len(chunk), -1)[:, 0]
    return values


# --------------------------------------------------------------------------- batches


def batches(lengths: list[int], size: int = PREDICT_BATCH) -> list[np.ndarray]:
    """The inputs' indices in batches of `size`, shortest inputs first, so that a batch pads little beyond its own
    longest input."""
    order = np.argsort(np.asarray(lengths), kind="stable")
    return [order[start : start + size] for start in range(0, len(order), size)]


def per_input(call, ids: np.ndarray, lengths: list[int]) -> list[np.ndarray]:
    """`call` (the model, one batch of ids → one output per row) over every input, one call per batch, each batch
    cut to its longest input; the outputs back in the inputs' order. The models mask id 0, so how much padding a
    batch has does not change an input's output."""
    outputs: list[Any] = [None] * len(lengths)
    for chunk in batches(lengths):
        predicted = np.asarray(call(ids[chunk, : max(lengths[index] for index in chunk)]))
        for position, index in enumerate(chunk):
            outputs[index] = predicted[position]
    return outputs
