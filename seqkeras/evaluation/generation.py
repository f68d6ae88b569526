"""Generation from a trained language model: continue prompts with a decoder, and measure the samples.

`evaluate.generate` in a spec asks for it:

    evaluate:
      generate: {prompts: ["and it came to pass", "the lord is my"], length: 30}
      decoders: [{name: greedy}, {name: beam, width: 4}, {name: sample, temperature: 0.7}]

Every decoder continues every prompt by `length` tokens (one continuation per
prompt, so every decoder writes the same number of tokens and the diversity
numbers compare fairly). The decoders are the suite's own (`seqkeras.decoding`).
The prompt's last token is the decoder's start token and the tokens before it
are fed first. The model kind says how its models are stepped
(`ModelKind.step_model`): a recurrent LM (`lm`) carries its layers' state from
token to token and a Transformer LM its key/value cache
(`decoding.cached_step_models`), one position of work per token. A kind that
declares no step model (n-gram counts, the NPLM) is seen through
`PromptStepModel`, which reruns the model on the prefix at each step. On JAX and
TensorFlow the greedy and beam continuations of a recurrent LM, and of a
Transformer LM whose window holds the prompt and the continuation, run as one
compiled loop from the state after the prompt (`decoding.compiled_search`), with
the step model's tokens. Like
the training windows, a prefix model and the Transformer see at most the last
`window` tokens (the task's context), which is also what a
Transformer's position table allows; a recurrent state has no window and
summarizes the whole prompt and continuation. Padding (id 0) is never
generated, and no token stops a sample early: the end-of-verse marker is an
ordinary token here, so all samples have the same length.

Measured over the samples of one decoder:

    distinct_1, distinct_2   distinct unigrams (bigrams) / all of them, pooled over
                             the samples (Li et al., 2016): higher is more varied
    repetition_rate          share of each sample's n-grams (n = repetition_n) that
                             already occurred earlier in the same sample: a
                             looping text repeats every n-gram
    sample_perplexity        the model's own perplexity on its samples,
                             exp(−mean log P(token | prefix)): low for the
                             model's most likely text (greedy), high for samples
                             from a flattened distribution
    greedy_prefix            share of each continuation that is greedy's
                             continuation of the same prompt, from the start up
                             to the first different token (1 for greedy itself):
                             how close a decoder stays to greedy decoding

This module imports no deep-learning framework at import time (the spec reads
its metric names).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from seqkeras.decoding import compiled_search
from seqkeras.decoding.decoders import build_decoder, seeded
from seqkeras.decoding.step_model import PrefixStepModel, StepModel
from seqkeras.errors import SpecError
from seqkeras.evaluation.metrics import perplexity_of
from seqkeras.evaluation.settings import GenerateSpec

# Log-probability given to padding so a decoder never picks it (exp underflows to 0).
NEVER = -1e9


class NextTokenLogProbabilities:
    """A language model as PrefixStepModel wants it: ids [B, L] → log-probabilities [B, 1, V] of the next token.

    The model's own probabilities (softmax outputs, or an n-gram model's
    distribution) become log-probabilities, with padding impossible; the
    step model's log-softmax then renormalizes over the real tokens.
    `scores_itself`: the model kind declares it gives them itself (`Abilities.scores`:
    `next_log_probabilities`); otherwise it is a Keras model, read through its softmax.
    """

    def __init__(self, model, window: int, scores_itself: bool = False):
        self.model = model
        self.window = window
        self.scores_itself = scores_itself

    def __call__(self, prefix: np.ndarray, training: bool = False) -> np.ndarray:
        prefix = np.asarray(prefix)[:, -self.window :]
        if self.scores_itself:  # count-based (n-gram) models
            log_probs = without_padding(self.model.next_log_probabilities(prefix))
        else:
            # predict_on_batch runs a compiled function (retraced for new prefix lengths
            # only until Keras relaxes the shape), far faster than an eager call per token.
            log_probs = log_probabilities(np.asarray(self.model.predict_on_batch(prefix))[:, -1, :])
        return log_probs[:, None, :]


def without_padding(log_probs: np.ndarray) -> np.ndarray:
    """Log-probabilities [B, V] with padding (id 0) impossible, and nothing below NEVER."""
    log_probs = np.maximum(log_probs, NEVER)
    log_probs[:, 0] = NEVER
    return log_probs


def log_probabilities(probabilities: np.ndarray) -> np.ndarray:
    """A softmax model's probabilities of the next token [B, V] as log-probabilities, padding impossible."""
    with np.errstate(divide="ignore"):
        return without_padding(np.log(np.asarray(probabilities).astype("float64")))


class PromptStepModel(PrefixStepModel):
    """Continue one prompt: the state starts as the prompt minus its last token, which is the start token."""

    def __init__(self, model, prompt_ids: Sequence[int], vocab_size: int, window: int, scores_itself: bool = False):
        if not prompt_ids:
            raise ValueError("a prompt needs at least one token")
        # No id ends a sample (padding is never chosen), so every sample has the full length.
        super().__init__(NextTokenLogProbabilities(model, window, scores_itself), start_id=prompt_ids[-1], end_id=0,
                         vocab_size=vocab_size)
        self.context = np.asarray(prompt_ids[:-1], dtype="int32")

    def start(self, batch_size: int) -> np.ndarray:
        return np.tile(self.context, (batch_size, 1))


def prompt_step_model(model, prompt_ids: Sequence[int], vocab_size: int, window: int,
                      scores_itself: bool = False, own_step_model: Callable[..., StepModel] | None = None) -> StepModel:
    """The step model continuing one prompt: the model kind's own (`own_step_model`, its `ModelKind.step_model`,
    carrying the model's state), or for a kind that declares none the prefix (`PromptStepModel`).

    The kinds' step models see the model's probabilities as PromptStepModel does
    (`log_probabilities`, then the same log-softmax), so either gives the same
    continuations to float rounding, but for a recurrent LM past `window` tokens:
    its state keeps what a prefix model's window would cut.
    """
    if not prompt_ids:
        raise ValueError("a prompt needs at least one token")
    if own_step_model is None:
        return PromptStepModel(model, prompt_ids, vocab_size, window, scores_itself)
    return own_step_model(model, prompt_ids[-1], 0, context=prompt_ids[:-1], window=window, scores=log_probabilities)


@dataclass
class Sample:
    prompt: str
    tokens: list[int]  # generated ids, after the prompt
    log_prob: float  # the model's log-probability of those tokens given the prompt


def prompt_ids(data, prompt: str) -> list[int]:
    """A prompt as ids, tokenized like the task's text; an empty one is the end-of-unit marker."""
    tokenize = getattr(data, "tokenize", None) or list
    tokens = tokenize(prompt)
    if not tokens:
        end = getattr(data, "end_token", None)
        if end is None:
            raise SpecError("an empty prompt needs a task with an end-of-unit marker", path="evaluate.generate.prompts")
        tokens = [end]
    return data.vocabulary.encode(tokens)


def text_of(data, ids: Sequence[int]) -> str:
    tokens = data.vocabulary.decode(ids)
    detokenize = getattr(data, "detokenize", None)
    return detokenize(tokens) if detokenize else "".join(tokens)


def generate(model, data, decoder, spec: GenerateSpec, window: int, run_seed: int = 0,
             scores_itself: bool = False, own_step_model: Callable[..., StepModel] | None = None) -> list[Sample]:
    """Continue every prompt with `decoder`, a decoder choice as a spec gives it ({name: sample, ...}).

    A sampling decoder draws each prompt's continuation with its own seed
    (`decoders.seeded`: the run's seed and the prompt's index), so prompts do not share random draws.
    `scores_itself`: the model kind's `Abilities.scores`; `own_step_model`: its `ModelKind.step_model`.
    """
    samples = []
    for index, prompt in enumerate(spec.prompts):
        choice = seeded(decoder, run_seed, index)
        step_model = prompt_step_model(model, prompt_ids(data, prompt), len(data.vocabulary), window, scores_itself,
                                       own_step_model)
        if compiled_search.continues_compiled(step_model, choice, spec.length):
            tokens, log_prob = compiled_search.continue_prompt(step_model, choice, spec.length, NEVER)
        else:
            result = build_decoder(choice.name, choice).decode(step_model, 1, spec.length)
            tokens, log_prob = result.tokens[0], float(result.log_probs[0])
        samples.append(Sample(prompt, [int(t) for t in tokens], log_prob))
    return samples


def ngrams(tokens: Sequence[int], n: int) -> list[tuple[int, ...]]:
    return [tuple(tokens[i : i + n]) for i in range(len(tokens) - n + 1)]


def distinct(samples: Sequence[Sequence[int]], n: int) -> float:
    """Distinct n-grams / all n-grams, pooled over the samples (NaN when there are none)."""
    grams = [gram for sample in samples for gram in ngrams(sample, n)]
    return len(set(grams)) / len(grams) if grams else math.nan


def repetition_rate(samples: Sequence[Sequence[int]], n: int) -> float:
    """Share of n-grams that already occurred earlier in the same sample, pooled over the samples."""
    repeated = total = 0
    for sample in samples:
        seen: set[tuple[int, ...]] = set()
        for gram in ngrams(sample, n):
            repeated += gram in seen
            seen.add(gram)
            total += 1
    return repeated / total if total else math.nan


def shared_prefix(tokens: Sequence[int], reference: Sequence[int]) -> int:
    """How many tokens `tokens` and `reference` share from the start."""
    count = 0
    for a, b in zip(tokens, reference):
        if a != b:
            break
        count += 1
    return count


# The columns a generating run adds to its rows: sample_metrics's, and the time per sample.
SAMPLE_METRICS = ("distinct_1", "distinct_2", "repetition_rate", "sample_perplexity", "greedy_prefix")
SECONDS_PER_SAMPLE = "seconds_per_sample"
GENERATION_METRICS = (*SAMPLE_METRICS, SECONDS_PER_SAMPLE)


def sample_metrics(samples: Sequence[Sample], spec: GenerateSpec, greedy: Sequence[Sample]) -> dict[str, float]:
    """The samples' metrics; `greedy` holds greedy decoding's continuations of the same prompts."""
    tokens = [sample.tokens for sample in samples]
    count = sum(len(t) for t in tokens)
    log_prob = sum(sample.log_prob for sample in samples)
    prefixes = [shared_prefix(s.tokens, g.tokens) / max(len(s.tokens), 1) for s, g in zip(samples, greedy)]
    return {
        "distinct_1": distinct(tokens, 1),
        "distinct_2": distinct(tokens, 2),
        "repetition_rate": repetition_rate(tokens, spec.repetition_n),
        "sample_perplexity": perplexity_of(-log_prob / count) if count else math.nan,
        "greedy_prefix": float(np.mean(prefixes)) if prefixes else math.nan,
    }
