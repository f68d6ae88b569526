"""Decoding strategies: greedy, sampling and beam search over any `StepModel`.

`Decoder` owns the loop for the strategies that pick one token per row per
step (greedy and sampling): it feeds the step model, lets a keras-hub sampler
choose the next token, adds up the model's log-probabilities and drops rows
that emitted the end token. The token choice itself is keras-hub's:
`Sampler.compute_probabilities()` (softmax with temperature) followed by
`Sampler.get_next_token()`. keras-hub's own `Sampler.__call__` loop is not
used because it writes into a fixed-length prompt tensor, knows nothing of our
state's `select()`, and keeps sampling rows that have already ended.

Only beam search overrides the loop (as in keras-hub), because it keeps several
hypotheses per input.

keras and keras-hub are imported inside the methods that need them, so this
module (and its parameter classes) can be imported without TensorFlow.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Annotated, Any, ClassVar, Literal, Union

import numpy as np
from pydantic import BaseModel, Field, TypeAdapter, ValidationError, create_model

from seqkeras.backends.compiled import compiled_function, padded
from seqkeras.decoding.step_model import StepModel
from seqkeras.errors import SpecError, UnionOf, shown, translate_validation_error, unknown_choice
from seqkeras.registry import Params
from seqkeras.yaml_reader import parse_yaml

# (decoder class, its repr, vocabulary size) → its pure sampler's next-token function (Decoder.next_token_function).
PURE_SAMPLERS: dict[tuple[type, str, int], Callable[[Any], Any]] = {}

# A token whose log-probability is below this has probability 0 in float64
# (exp underflows): beam search does not extend a hypothesis by it, as the
# lesson's beam only tries the words listed in the table. Real models' logits
# never come close; the table model's "impossible" entries sit at about -1e9.
IMPOSSIBLE_LOG_PROB = math.log(np.finfo(np.float64).tiny)


# A run's seed moves every sampling decoder's own seed by this much, so that the
# seeds of one experiment draw different samples; the i-th input of a run (a
# prompt) adds i, so that inputs do not share their draws. 1,000 keeps the inputs
# of one run seed from reaching the next one's.
SEED_STRIDE = 1000
# Seeds stay below 2**31, which every backend's seed generator accepts: a decoder's own
# seed plus SEED_STRIDE times the largest run seed plus the input index.
MAX_RUN_SEED = 999_999
MAX_DECODER_SEED = 999_999_999
# A beam's candidates are [inputs, width, min(width, vocabulary)] numbers at each step, and the step model runs on
# inputs × width rows: the evaluator decodes fewer inputs at a time as the beam widens (`hypotheses_per_input`),
# and at 4096 (an exhaustive search of 5 tokens over 5 words, 5**5) one input's step holds a few arrays of
# 4096 × min(4096, vocabulary) 8-byte numbers (scores, tokens, their ranking): a few hundred MB at most. Published
# beams are 4 to 12; a width of millions would ask for terabytes.
MAX_BEAM_WIDTH = 4096


class GreedyParams(Params):
    """Greedy decoding has no parameters: it always takes the most probable token."""


class BeamParams(Params):
    width: int = Field(
        4,
        ge=1,
        le=MAX_BEAM_WIDTH,
        description="Hypotheses kept per step (the beam). Width 1 is greedy decoding.",
    )
    length_penalty: float = Field(
        0.0,
        ge=0.0,
        description=(
            "GNMT length-penalty exponent alpha: hypotheses are ranked by "
            "log P(y) / ((5 + |y|) / 6) ** alpha. 0 ranks by plain log-probability; "
            "larger values favour longer outputs."
        ),
    )


class SampleParams(Params):
    temperature: float = Field(
        1.0,
        gt=0.0,
        description="Logits are divided by this before the softmax: below 1 sharpens towards greedy, above 1 flattens.",
    )
    top_k: int | None = Field(
        None, ge=1, description="Sample only among the k most probable tokens (none: no limit)."
    )
    top_p: float | None = Field(
        None,
        gt=0.0,
        le=1.0,
        description=(
            "Nucleus sampling: sample only among the most probable tokens whose cumulative "
            "probability first exceeds p (none or 1: no limit)."
        ),
    )
    seed: int = Field(0, ge=0, le=MAX_DECODER_SEED,
                      description="Seed of the sampler's random stream; the same seed gives the same tokens.")


@dataclass
class Hypothesis:
    """One candidate output: generated ids (after the start token), its log-probability and its rank score."""

    tokens: list[int]
    log_prob: float
    score: float
    finished: bool


@dataclass
class DecodeResult:
    """What a decoder returns for a batch of B inputs.

    tokens: for each input, the generated ids after the start token, ending with the
        end token when it was emitted (not when `max_length` cut the output short).
    log_probs: [B], the model's log-probability of those tokens (temperature and
        top-k/top-p do not change it: it is the model's, not the sampler's).
    lengths: [B], len(tokens[b]).
    hypotheses: beam search only: per input, every hypothesis that competed at the end
        (finished ones, plus unfinished ones cut at max_length), best first.
    """

    tokens: list[list[int]]
    log_probs: np.ndarray
    lengths: np.ndarray
    hypotheses: list[list[Hypothesis]] | None = field(default=None)


def _check_decode_args(step_model: StepModel, batch_size: int, max_length: int) -> None:
    if int(batch_size) < 1:
        raise ValueError(f"batch_size must be at least 1, received {batch_size}")
    if int(max_length) < 1:
        raise ValueError(f"max_length must be at least 1, received {max_length}")
    if not 0 <= step_model.end_id < step_model.vocab_size:
        raise ValueError(f"end_id {step_model.end_id} is outside the vocabulary of {step_model.vocab_size}")


class Decoder:
    """Base class: one token per row per step, chosen by a keras-hub sampler.

    Subclasses set `params_class` and `name`, and build their sampler in
    `make_sampler()`. A fresh sampler is made for every `decode()` call, so a
    seeded decoder gives the same tokens every time it is called (keras-hub's
    samplers hold a `SeedGenerator` whose state advances with every draw).
    """

    params_class: ClassVar[type[Params]]
    name: ClassVar[str]

    def __init__(self, **params):
        self.params = self.params_class(**params)

    @classmethod
    def from_params(cls, params: BaseModel) -> "Decoder":
        """Build from a params object; extra fields (such as a spec's `name`) are ignored."""
        return cls(**{key: getattr(params, key) for key in cls.params_class.model_fields})

    def __repr__(self) -> str:
        fields = ", ".join(f"{key}={value!r}" for key, value in self.params.model_dump().items())
        return f"{type(self).__name__}({fields})"

    def compiled_search(self) -> tuple[int, float] | None:
        """The setting of `compiled_search`'s loop that gives this decoder's outputs, (beam width, 0 for greedy;
        length penalty), or None where the loop does not search as it does (sampling): then the decoder drives
        the step model itself."""
        return None

    @property
    def hypotheses_per_input(self) -> int:
        """The rows each input takes in a step of the model: one (a beam: its width)."""
        return 1

    def make_sampler(self, vocab_size: int):
        raise NotImplementedError

    def token_chooser(self, vocab_size: int) -> Callable[[np.ndarray], np.ndarray]:
        """A function from log-probabilities [B, V] to the chosen tokens [B]."""
        from keras import ops

        next_token, pure = self.next_token_function(vocab_size)

        def choose(log_probs: np.ndarray) -> np.ndarray:
            rows = len(log_probs)
            if pure:  # rows padded to a few shapes, each compiled once (JAX)
                log_probs = padded(np.asarray(log_probs))
            chosen = next_token(ops.convert_to_tensor(log_probs, "float32"))
            return ops.convert_to_numpy(chosen).astype("int64")[:rows]

        return choose

    def next_token_function(self, vocab_size: int) -> tuple[Callable[[Any], Any], bool]:
        """(log-probabilities [B, V] → tokens [B] by this decoder's keras-hub sampler, whether it is pure).

        A sampler without variables (no seed to advance) is a pure function: compiled where that helps
        (`backends.compiled`), once per process for each setting and vocabulary size, since a decoder is
        built for each batch it decodes. A seeded sampler draws from its seed row by row, run as it is.
        """
        key = (type(self), repr(self), vocab_size)
        if key in PURE_SAMPLERS:
            return PURE_SAMPLERS[key], True
        sampler = self.make_sampler(vocab_size)

        def next_token(log_probs):
            # Normalized log-probabilities are valid logits: softmax(log p / T) is
            # exactly the temperature-scaled distribution.
            return sampler.get_next_token(sampler.compute_probabilities(log_probs))

        if sampler.variables:
            return next_token, False
        PURE_SAMPLERS[key] = compiled_function(next_token)
        return PURE_SAMPLERS[key], True

    def decode(
        self, step_model: StepModel, batch_size: int = 1, max_length: int = 50, all_hypotheses: bool = True
    ) -> DecodeResult:
        """Decode `batch_size` inputs of `step_model`, at most `max_length` tokens each.

        `all_hypotheses=False` says that only each input's output is wanted, not every
        hypothesis that competed: beam search then stops extending hypotheses that can no
        longer win (same outputs, less work). Decoders with one hypothesis per input ignore it.
        """
        _check_decode_args(step_model, batch_size, max_length)
        choose = self.token_chooser(step_model.vocab_size)
        state = step_model.start(batch_size)
        rows = np.arange(batch_size)  # the input each live row belongs to
        inputs = np.full(batch_size, step_model.start_id, dtype="int64")
        tokens: list[list[int]] = [[] for _ in range(batch_size)]
        log_probs = np.zeros(batch_size, dtype="float64")
        for _ in range(max_length):
            step_log_probs, state = step_model.step(inputs, state)
            step_log_probs = np.asarray(step_log_probs)  # float32 or float64, as the step model gives it
            chosen = choose(step_log_probs)
            log_probs[rows] += step_log_probs[np.arange(rows.size), chosen].astype("float64")
            for row, token in zip(rows, chosen):
                tokens[row].append(int(token))
            alive = chosen != step_model.end_id
            if not alive.all():
                # Finished rows leave the batch: nothing more is appended or scored.
                keep = np.flatnonzero(alive)
                if keep.size == 0:
                    break
                state = step_model.select(state, keep)
                rows, chosen = rows[keep], chosen[keep]
            inputs = chosen
        lengths = np.array([len(row) for row in tokens], dtype="int64")
        return DecodeResult(tokens=tokens, log_probs=log_probs, lengths=lengths)


class GreedyDecoder(Decoder):
    """Take the most probable token at every step (keras-hub `GreedySampler`, an argmax)."""

    params_class = GreedyParams
    name = "greedy"
    summary = "The most probable token at each step."

    def make_sampler(self, vocab_size: int):
        import keras_hub

        return keras_hub.samplers.GreedySampler()

    def compiled_search(self) -> tuple[int, float] | None:
        return 0, 0.0  # keras-hub's GreedySampler at each step, in the loop


class SampleDecoder(Decoder):
    """Draw each token from the model's distribution, optionally sharpened or truncated.

    The keras-hub sampler is chosen by which limits are set:
    none → `RandomSampler`; top_k → `TopKSampler`; top_p (with or without
    top_k) → `TopPSampler`, whose own `k` argument applies the top-k cut first.
    Together they keep the tokens that are both among the k most probable and
    inside the nucleus of the whole (temperature-scaled) distribution: keras-hub
    sums the cumulative probability over the unrenormalized top-k
    probabilities, so no subclass is needed for the combination.
    `top_k` larger than the vocabulary means no limit (keras-hub's `top_k` op
    would fail), and `top_p == 1` means no nucleus (it would otherwise risk
    dropping the tail when float32 cumulative sums round above 1).
    """

    params_class = SampleParams
    name = "sample"
    summary = "Draw from the distribution with temperature, top-k and/or top-p (nucleus)."

    def make_sampler(self, vocab_size: int):
        import keras_hub

        params = self.params
        k = params.top_k if params.top_k is not None and params.top_k < vocab_size else None
        p = params.top_p if params.top_p is not None and params.top_p < 1.0 else None
        common = {"seed": params.seed, "temperature": params.temperature}
        if p is not None:
            return keras_hub.samplers.TopPSampler(p=p, k=k, **common)
        if k is not None:
            return keras_hub.samplers.TopKSampler(k=k, **common)
        return keras_hub.samplers.RandomSampler(**common)


def length_penalty(length: int | np.ndarray, alpha: float):
    """GNMT length penalty ((5 + |y|) / 6) ** alpha (Wu et al., 2016); 1 when alpha is 0."""
    return ((5.0 + np.asarray(length, dtype="float64")) / 6.0) ** alpha


def _best_extensions(log_probs: np.ndarray, row_log_prob: np.ndarray, width: int) -> tuple[np.ndarray, np.ndarray]:
    """Each row's `width` best extensions: tokens [R, k] and scores [R, k] (float64), k = min(width, V).

    A candidate's score is its hypothesis's log-probability plus the token's
    (-inf for an impossible or NaN log-probability); the best come first, equal
    scores by token. Only these can enter the beam: a token outside its row's
    best `width` has `width` candidates of the same hypothesis ranked before it.

    Ranking the row's own log-probabilities finds them with `k + 1` passes of
    argmax instead of a sort of the whole vocabulary. Adding the hypothesis's
    log-probability keeps that order, except that rounding can make two
    different log-probabilities equal scores; a row where that (or a true tie)
    happens at the cut is ranked again exactly, by a stable sort of its scores.
    """
    rows, vocab = log_probs.shape
    k = min(width, vocab)
    take = min(k + 1, vocab)  # one more than needed, to see whether the cut falls inside a tie
    work = np.fmax(log_probs, -np.inf)  # a copy, with NaN as -inf; dtype kept (float32 is half the memory)
    index = np.arange(rows)
    tokens = np.empty((rows, take), dtype="int64")
    values = np.empty((rows, take), dtype=work.dtype)
    for rank in range(take):
        tokens[:, rank] = best = work.argmax(axis=1)  # the first of equal maxima: the lower token
        # Read from `work`: once a row has only -inf left, argmax repeats a token, as -inf.
        values[:, rank] = work[index, best]
        if rank + 1 < take:
            work[index, best] = -np.inf
    scores = _extension_scores(values, row_log_prob)
    if take > k:
        tied = np.flatnonzero((scores[:, k - 1] == scores[:, k]) & np.isfinite(scores[:, k]))
        for row in tied:
            all_scores = _extension_scores(log_probs[row][None, :], row_log_prob[row : row + 1])[0]
            exact = np.argsort(-all_scores, kind="stable")[:k]
            tokens[row, :k], scores[row, :k] = exact, all_scores[exact]
    return tokens[:, :k], scores[:, :k]


def _extension_scores(log_probs: np.ndarray, row_log_prob: np.ndarray) -> np.ndarray:
    """row_log_prob + log_probs in float64, -inf where the token's log-probability is impossible (or NaN)."""
    log_probs = np.asarray(log_probs, dtype="float64")
    possible = log_probs >= IMPOSSIBLE_LOG_PROB  # False for NaN
    return np.where(possible, row_log_prob[:, None] + log_probs, -np.inf)


class BeamDecoder(Decoder):
    """Beam search, as in the lesson, batched over inputs and with a length penalty.

    At each step every live hypothesis is extended by every possible token, all
    candidates of an input are ranked, and the top `width` are kept; those
    ending with the end token are put aside as finished (they take their place
    in the top `width`, so the live beam can shrink) and are never extended.
    Decoding stops when no hypothesis is live or after `max_length` steps, when
    the unfinished hypotheses compete too. The best hypothesis by
    log P(y) / ((5 + |y|) / 6) ** length_penalty is returned, |y| counting the
    end token. All candidates of one step have the same length, so the penalty
    only matters when finished hypotheses of different lengths are compared.

    Why not keras-hub's `BeamSampler`: it has no length penalty, and it keeps
    extending and scoring a beam after the beam has emitted the end token
    (unless the model makes the end token absorbing), so a finished hypothesis
    keeps paying for tokens after its end.

    The work is vectorized over all live hypotheses of all inputs; the step
    model's `select()` reorders its state after each step. Each step ranks only
    each hypothesis's `width` best tokens (`_best_extensions`), not all
    width × vocabulary candidates, with the same result. With
    `decode(..., all_hypotheses=False)` (seq2seq evaluation) a hypothesis is
    dropped once it can no longer beat its input's best finished one: the
    outputs stay those of the full search, but `hypotheses` then lacks what the
    full search would have found after that point.
    """

    params_class = BeamParams
    name = "beam"
    summary = "Keep the `width` most probable partial outputs; optional GNMT length penalty."

    @property
    def hypotheses_per_input(self) -> int:
        return self.params.width

    def compiled_search(self) -> tuple[int, float] | None:
        return self.params.width, self.params.length_penalty

    def decode(
        self, step_model: StepModel, batch_size: int = 1, max_length: int = 50, all_hypotheses: bool = True
    ) -> DecodeResult:
        _check_decode_args(step_model, batch_size, max_length)
        width, alpha = self.params.width, self.params.length_penalty
        vocab, end = step_model.vocab_size, step_model.end_id
        slots = min(width, vocab)  # candidates kept per live hypothesis (see `_best_extensions`)
        state = step_model.start(batch_size)
        # One entry per live hypothesis, grouped by input in rank order.
        row_input = np.arange(batch_size)
        row_slot = np.zeros(batch_size, dtype="int64")
        row_log_prob = np.zeros(batch_size, dtype="float64")
        history = np.zeros((batch_size, 0), dtype="int64")
        inputs = np.full(batch_size, step_model.start_id, dtype="int64")
        competing: list[list[Hypothesis]] = [[] for _ in range(batch_size)]
        # Without all_hypotheses: each input's best score so far, and the penalty of the longest output.
        stop_early = not all_hypotheses
        best_score = np.full(batch_size, -np.inf)
        longest_penalty = float(length_penalty(max_length, alpha))

        for step in range(max_length):
            step_log_probs, state = step_model.step(inputs, state)
            extension_token, extension_score = _best_extensions(np.asarray(step_log_probs), row_log_prob, width)
            # The candidates of each input, [B, width beams × slots], ranked: best score
            # first; ties keep beam order, then token order, as the lesson's stable sort does.
            candidate_score = np.full((batch_size, width, slots), -np.inf)
            candidate_score[row_input, row_slot] = extension_score
            candidate_token = np.zeros((batch_size, width, slots), dtype="int64")
            candidate_token[row_input, row_slot] = extension_token
            candidate_score = candidate_score.reshape(batch_size, width * slots)
            candidate_token = candidate_token.reshape(batch_size, width * slots)
            candidate_beam = np.broadcast_to(np.repeat(np.arange(width), slots), candidate_score.shape)
            order = np.lexsort((candidate_token, candidate_beam, -candidate_score), axis=-1)[:, :width]
            best = np.take_along_axis(candidate_score, order, axis=1)

            source_row = np.full((batch_size, width), -1, dtype="int64")
            source_row[row_input, row_slot] = np.arange(row_input.size)
            kept_input, kept_rank = np.nonzero(np.isfinite(best))
            kept_log_prob = best[kept_input, kept_rank]
            kept_order = order[kept_input, kept_rank]
            kept_token = candidate_token[kept_input, kept_order]
            kept_source = source_row[kept_input, kept_order // slots]

            last_step = step == max_length - 1
            ends = kept_token == end
            for index in np.flatnonzero(ends | last_step):
                ids = history[kept_source[index]].tolist() + [int(kept_token[index])]
                log_prob = float(kept_log_prob[index])
                score = log_prob / float(length_penalty(len(ids), alpha))
                competing[kept_input[index]].append(Hypothesis(ids, log_prob, score, bool(ends[index])))
                best_score[kept_input[index]] = max(best_score[kept_input[index]], score)

            going_on = ~ends
            if stop_early:
                # A hypothesis can only lose log-probability, and its length penalty is at
                # most that of max_length, so none of its continuations can score above
                # log P / penalty(max_length). Where that does not beat its input's best
                # score, the search stops following it: what it would have found ranks
                # below that best (on a tie, after it, as it is found later), so the
                # outputs are those of the full search. That needs log-probabilities <= 0
                # (the StepModel protocol); a step model that breaks it is searched in full.
                stop_early = not np.any(extension_score[:, 0] > row_log_prob)
                if stop_early:
                    going_on &= kept_log_prob / longest_penalty > best_score[kept_input]
            live = np.flatnonzero(going_on)
            if live.size == 0 or last_step:
                break
            state = step_model.select(state, kept_source[live])
            history = np.concatenate([history[kept_source[live]], kept_token[live, None]], axis=1)
            row_input = kept_input[live]
            row_slot = np.arange(live.size) - np.searchsorted(row_input, row_input, side="left")
            row_log_prob = kept_log_prob[live]
            inputs = kept_token[live]

        tokens, log_probs, ranked = [], np.full(batch_size, -np.inf), []
        for index, hypotheses in enumerate(competing):
            # Python's sort is stable: equal scores keep the order they were found in.
            hypotheses = sorted(hypotheses, key=lambda hypothesis: -hypothesis.score)
            ranked.append(hypotheses)
            tokens.append(list(hypotheses[0].tokens) if hypotheses else [])
            if hypotheses:
                log_probs[index] = hypotheses[0].log_prob
        lengths = np.array([len(row) for row in tokens], dtype="int64")
        return DecodeResult(tokens=tokens, log_probs=log_probs, lengths=lengths, hypotheses=ranked)


DECODERS: dict[str, type[Decoder]] = {
    decoder.name: decoder for decoder in (GreedyDecoder, BeamDecoder, SampleDecoder)
}


def build_decoder(name: str, params: BaseModel | dict | None = None) -> Decoder:
    """The decoder called `name` ('greedy', 'beam', 'sample') with `params`.

    `params` may be that decoder's params object (or a subclass of it, such as a
    spec's entry carrying a `name`), a plain dict, or None for the defaults.
    """
    if name not in DECODERS:
        raise SpecError(unknown_choice("decoder", name, DECODERS), path="name")
    decoder_class = DECODERS[name]
    if params is None:
        params = decoder_class.params_class()
    elif isinstance(params, dict):
        params = decoder_choice({**params, "name": name})  # the one parser; its SpecError's path is the key
    elif not isinstance(params, decoder_class.params_class):
        raise TypeError(
            f"decoder {name!r} takes {decoder_class.params_class.__name__}, "
            f"received {type(params).__name__}"
        )
    return decoder_class.from_params(params)


def score_sequences(step_model: StepModel, sequences: Sequence[Sequence[int]]) -> np.ndarray:
    """Teacher-forced log-probability of each sequence under the model, [B].

    Each sequence holds the ids after the start token (include the end token to
    score the model's decision to stop). Divide by the lengths for the mean
    log-probability per token. Scoring a decoder's output gives back its
    `log_probs`.
    """
    sequences = [np.asarray(sequence, dtype="int64").reshape(-1) for sequence in sequences]
    if not sequences:
        return np.zeros(0, dtype="float64")
    for index, sequence in enumerate(sequences):
        if sequence.size and (sequence.min() < 0 or sequence.max() >= step_model.vocab_size):
            raise ValueError(f"sequence {index} has ids outside the vocabulary of {step_model.vocab_size}")
    lengths = np.array([sequence.size for sequence in sequences])
    padded = np.full((len(sequences), max(lengths.max(), 1)), step_model.end_id, dtype="int64")
    for index, sequence in enumerate(sequences):
        padded[index, : sequence.size] = sequence

    totals = np.zeros(len(sequences), dtype="float64")
    rows = np.flatnonzero(lengths > 0)
    if rows.size == 0:
        return totals
    state = step_model.select(step_model.start(len(sequences)), rows)
    inputs = np.full(rows.size, step_model.start_id, dtype="int64")
    for position in range(lengths.max()):
        step_log_probs, state = step_model.step(inputs, state)
        targets = padded[rows, position]
        totals[rows] += np.asarray(step_log_probs)[np.arange(rows.size), targets].astype("float64")
        keep = np.flatnonzero(lengths[rows] > position + 1)
        if keep.size == 0:
            break
        if keep.size < rows.size:
            state = step_model.select(state, keep)
        rows, inputs = rows[keep], targets[keep]
    return totals


# A decoder as written in a spec: its name and its parameters in one mapping,
# e.g. {name: beam, width: 5, length_penalty: 0.6}. One choice class per entry
# of DECODERS, derived from it: the spec's union, `seqkeras list` and the catalog
# all read that one dictionary.
CHOICES: dict[str, type[BaseModel]] = {
    name: create_model(f"{name.capitalize()}Choice", __base__=decoder.params_class,
                       name=(Literal[name], name))  # type: ignore[call-overload]
    for name, decoder in DECODERS.items()
}
GreedyChoice, BeamChoice, SampleChoice = CHOICES["greedy"], CHOICES["beam"], CHOICES["sample"]

# The spec's field type (evaluate.decoders, the decoding probe's decoder): pydantic validates a spec's mapping
# with it, and `decoder_choice` validates every other mapping with the same union.
DecoderChoice = Annotated[Union[tuple(CHOICES.values())], Field(discriminator="name"), UnionOf("decoder")]
_DECODER_CHOICE: TypeAdapter[Any] = TypeAdapter(DecoderChoice)
# A decoder's table label, `decoder_label`'s form: beam(width=5, length_penalty=0.6).
LABEL = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_]*)\s*(?:\((.*)\))?\s*$", re.DOTALL)


# --------------------------------------------------------------------------- reading a decoder


def parse_decoder(decoder: Any, what: str = "decoder") -> BaseModel:
    """The decoder choice a user wrote, in any of its forms: a choice (as it is), a mapping
    (`{name: beam, width: 5}`, as a spec writes it), a name (`beam`), a table label (`beam(width=5)`) or a
    mapping's YAML/JSON text. `seqkeras predict --decoder`, `KeptModel.predict` and re-evaluation read decoders
    here; a SpecError names `what` and the value otherwise."""
    if isinstance(decoder, BaseModel) and type(decoder) in CHOICES.values():
        return decoder
    try:
        return decoder_choice(_written_mapping(decoder))
    except SpecError as error:
        raise SpecError(f"{what} {shown(decoder)}: {error}") from None


def decoder_choice(mapping: dict[str, Any]) -> BaseModel:
    """The decoder choice of a mapping with its `name` and parameters, validated by `DecoderChoice` as a spec's
    decoders are; a SpecError whose path is the key within the mapping otherwise."""
    name = mapping.get("name")
    if not isinstance(name, str) or name not in CHOICES:
        raise SpecError(unknown_choice("decoder", name, CHOICES))
    try:
        return _DECODER_CHOICE.validate_python({str(key): value for key, value in mapping.items()})
    except ValidationError as error:
        raise translate_validation_error(error, DecoderChoice, mapping, path_prefix=None) from None


def _written_mapping(decoder: Any) -> dict[str, Any]:
    """A decoder's name and parameters, from a mapping, a name, a table label or a mapping's YAML/JSON text."""
    if isinstance(decoder, dict):
        return dict(decoder)
    if not isinstance(decoder, str):
        raise SpecError(f"a decoder is a name, a label or a mapping, not a value of type {type(decoder).__name__}")
    label = LABEL.match(decoder)
    if label:
        mapping: dict[str, Any] = {"name": label.group(1)}
        for part in (label.group(2) or "").split(","):
            if not part.strip():
                continue
            key, equals, value = part.partition("=")
            if not equals or not key.strip():
                raise SpecError(f"expected name(key=value, ...), got {shown(part.strip())}")
            if key.strip() in mapping:  # `beam(width=2, width=3)`: which one was meant?
                raise SpecError(f"{key.strip()} is given twice: give each parameter once")
            mapping[key.strip()] = parse_yaml(value.strip(), path=key.strip()) if value.strip() else None
        return mapping
    try:
        value = parse_yaml(decoder)
    except SpecError as error:
        raise SpecError(f"neither a decoder's name, its label nor a mapping ({error})") from None
    if not isinstance(value, dict):
        raise SpecError("neither a decoder's name, its label nor a mapping")
    return value


def seeded(choice: BaseModel, run_seed: int, index: int = 0) -> BaseModel:
    """The decoder `choice` as run seed `run_seed` uses it for its `index`-th input.

    Only sampling draws random numbers: its seed becomes
    seed + SEED_STRIDE·run_seed + index. Other decoders come back as they are.
    """
    if "seed" not in type(choice).model_fields:
        return choice
    return choice.model_copy(update={"seed": choice.seed + SEED_STRIDE * run_seed + index})


def decoder_label(choice: BaseModel) -> str:
    """'greedy', 'beam(width=5, length_penalty=0.6)': the decoder as a table row label."""
    values = choice.model_dump(exclude={"name"})
    defaults = type(choice)().model_dump(exclude={"name"})
    changed = [f"{k}={v}" for k, v in values.items() if v != defaults.get(k) or k in ("width", "temperature")]
    return f"{choice.name}({', '.join(changed)})" if changed else choice.name


def decoder_keys(choice: BaseModel) -> dict[str, Any]:
    """The row-identifying columns of one decoder's results: its label and each parameter."""
    return {"decoder": decoder_label(choice), **{f"decoder.{k}": v for k, v in choice.model_dump().items()}}
