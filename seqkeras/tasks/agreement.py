"""agreement: "the keys to the cabinet in the hallway ... are" — subject–verb number.

A subject noun (singular or plural) opens the sentence, then a distractor
phrase of exactly `distance` tokens made of prepositional phrases, and the
label is the verb's number (is / are). Each distractor noun is an attractor
(the other number than the subject) with probability `attractor_rate`. At 0.5
the distractor nouns carry no information about the answer — neither the
nearest noun nor a count of nouns helps — so a model that forgets the subject
falls to chance (50%). (Making the nearest noun always an attractor would leak
the answer: flipping its number would always be right.)
"""

from __future__ import annotations

import numpy as np
from pydantic import Field

from seqkeras.tasks.base import SequenceData, SizeParams, classification_data
from seqkeras.tasks.input_rules import WHITESPACE_TOKENS, InputRule

NOUNS = [
    ("key", "keys"), ("cabinet", "cabinets"), ("hallway", "hallways"), ("dog", "dogs"),
    ("table", "tables"), ("author", "authors"), ("book", "books"), ("garden", "gardens"),
    ("teacher", "teachers"), ("window", "windows"), ("city", "cities"), ("song", "songs"),
]
PREPOSITIONS = ["to", "in", "near", "of", "by", "behind", "with", "under"]


class Params(SizeParams):
    distance: int = Field(7, ge=3, le=100_000, description="Tokens between the subject noun and the verb.")
    attractor_rate: float = Field(
        0.5, ge=0, le=1,
        description="Chance that a distractor noun has the other number than the subject (0.5: no information).",
    )

    def tokens_per_example(self) -> int:
        return self.distance + 2  # subject, the phrase between, verb

    def input_rule(self, data: SequenceData) -> InputRule:
        return WHITESPACE_TOKENS  # a text is its tokens, separated by spaces, as generated


def build(params: Params, seed: int) -> SequenceData:
    rng = np.random.default_rng(seed)

    def sentence():
        plural = bool(rng.integers(2))
        noun = NOUNS[rng.integers(len(NOUNS))][int(plural)]
        tokens = ["the", noun]
        # Prepositional phrases "in the hallway" (3 tokens each); a shorter
        # remainder is filled with adverbs first, so the distance is exact.
        distractor = ["really", "quite"][: params.distance % 3]
        for _ in range(params.distance // 3):
            other_number = rng.random() < params.attractor_rate
            noun = NOUNS[rng.integers(len(NOUNS))][int(plural != other_number)]
            distractor += [PREPOSITIONS[rng.integers(len(PREPOSITIONS))], "the", noun]
        return tokens + distractor, "are" if plural else "is"

    train = [sentence() for _ in range(params.n_train)]
    test = [sentence() for _ in range(params.n_test)]
    return classification_data(train, test, ["is", "are"])
