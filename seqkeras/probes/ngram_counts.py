"""Probe `ngram_counts`: a bigram model is just counting, and most bigrams are never seen.

Lesson 001 estimates P(next | "the") by counting which words follow "the" in a
corpus, P(w_t | w_{t-1}) = count(w_{t-1}, w_t) / count(w_{t-1}), and warns that
"most n-grams are never observed, so the model assigns them zero probability".
This probe counts a small corpus with `seqkeras.models.ngram_counts.NgramCounts` (order 2,
no smoothing), reports the next-word distribution after a context word, and
measures the sparsity problem on held-out sentences.

Sentences are lower-cased and split into words (punctuation dropped); each is
padded with <s> in front and </s> at the end, so a sentence's first word and
its ending are bigrams too, and "</s>" can be a next word (reported as `eos`).
"""

from __future__ import annotations

import math
import re

import pandas as pd
from pydantic import Field, field_validator, model_validator

from seqkeras.models.ngram_counts import NgramCounts, tokenize
from seqkeras.probes.base import ProbeResult
from seqkeras.registry import Params as BaseParams

DEFAULT_CORPUS = [
    "the cat sat on the mat",
    "the dog sat on the rug",
    "the cat chased the dog",
    "the dog chased the ball",
    "a cat slept on the sofa",
    "the dog barked at the cat",
    "the cat ate the fish",
    "a dog ate the bone",
    "the small cat sat by the door",
    "the dog likes the park",
]

DEFAULT_TEST = [
    "the cat sat on the rug",
    "the kitten sat on the mat",
    "a dog chased the fish",
    "the dog slept by the sofa",
]

BOS, EOS = "<s>", "</s>"


class Params(BaseParams):
    corpus: list[str] = Field(
        default_factory=lambda: list(DEFAULT_CORPUS),
        min_length=1,
        description="Training sentences, one string each, that the bigram counts come from. "
        "The default is ten short sentences about cats and dogs, so 'the' has several followers.",
    )
    test: list[str] = Field(
        default_factory=lambda: list(DEFAULT_TEST),
        description="Held-out sentences used to measure sparsity: how many of their bigrams were "
        "never seen in training, and how many sentences therefore get probability 0.",
    )
    context: str = Field(
        "the",
        description="The word whose next-word distribution is reported, as in the lesson's "
        "P(next | 'the'). It must occur in the corpus.",
    )
    top: int = Field(
        5,
        ge=1,
        description="How many of the most frequent next words to report as p_next_<word> metrics "
        "(ties broken alphabetically).",
    )

    @field_validator("corpus")
    @classmethod
    def _corpus_has_words(cls, corpus: list[str]) -> list[str]:
        if not any(tokenize(sentence) for sentence in corpus):
            raise ValueError("the corpus has no words; give at least one sentence with words")
        return corpus

    @model_validator(mode="after")
    def _context_is_counted(self) -> "Params":
        words = tokenize(self.context)
        if len(words) != 1:
            raise ValueError(
                f"context must be a single word for a bigram model, got {self.context!r}"
            )
        if not any(words[0] in tokenize(sentence) for sentence in self.corpus):
            raise ValueError(
                f"context {words[0]!r} never occurs in the corpus, so there is nothing to count "
                "after it; pick a word from the corpus"
            )
        return self


def metric_word(word: str) -> str:
    """A word as it appears in a snake_case metric name (</s> becomes eos)."""
    if word == EOS:
        return "eos"
    return re.sub(r"\W", "_", word)


def metric_names(params: Params) -> list[str]:
    """The metrics `run` reports; which words follow the context is known only from the counts (`p_next_*`)."""
    return ["p_next_*", "next_word_1", "distinct_next", "unseen_test_bigrams", "zero_probability_sentences",
            "vocabulary_size"]


def run(params: Params, seed: int) -> ProbeResult:
    del seed  # counting is deterministic
    training = [tokenize(sentence) for sentence in params.corpus]
    test = [tokenize(sentence) for sentence in params.test]
    model = NgramCounts(2, training, bos=BOS, eos=EOS, smoothing="none")

    context = (tokenize(params.context)[0],)
    followers = model.next_word_counts(context)
    total = sum(followers.values())  # = count(context) as a history, the lesson's denominator
    ranked = sorted(followers.items(), key=lambda item: (-item[1], item[0]))

    metrics: dict[str, float | int | str] = {}
    for word, count in ranked[: params.top]:
        metrics[f"p_next_{metric_word(word)}"] = count / total
    metrics["next_word_1"] = ranked[0][0]
    metrics["distinct_next"] = len(followers)

    bigrams = [bigram for sentence in test for bigram in model.ngrams(sentence)]
    metrics["unseen_test_bigrams"] = (
        sum(not model.seen(bigram) for bigram in bigrams) / len(bigrams) if bigrams else math.nan
    )
    metrics["zero_probability_sentences"] = (
        sum(model.sentence_probability(sentence) == 0.0 for sentence in test) / len(test)
        if test
        else math.nan
    )
    # Distinct words of the corpus, without the <s> and </s> markers.
    metrics["vocabulary_size"] = len({word for sentence in training for word in sentence})

    curve = pd.DataFrame(
        {
            "word": [word for word, _ in ranked],
            "count": [count for _, count in ranked],
            "probability": [count / total for _, count in ranked],
        }
    )
    return ProbeResult(metrics=metrics, curves={"next_word": curve})
