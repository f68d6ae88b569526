"""agreement: "the keys to the cabinet in the hallway ... are" — subject–verb number.

A subject noun (singular or plural) opens the sentence, then a distractor
phrase of exactly `distance` tokens made of prepositional phrases whose nouns
("attractors") have the other number, and the label is the verb's number
(is / are). Copying the number of the nearest noun is always wrong, so a model
that forgets the subject falls to or below chance (50%).
"""

from __future__ import annotations

import numpy as np
from pydantic import Field

from seqkeras.tasks.base import SequenceData, SizeParams, classification_data

NOUNS = [
    ("key", "keys"), ("cabinet", "cabinets"), ("hallway", "hallways"), ("dog", "dogs"),
    ("table", "tables"), ("author", "authors"), ("book", "books"), ("garden", "gardens"),
    ("teacher", "teachers"), ("window", "windows"), ("city", "cities"), ("song", "songs"),
]
PREPOSITIONS = ["to", "in", "near", "of", "by", "behind", "with", "under"]


class Params(SizeParams):
    distance: int = Field(7, ge=3, le=100_000, description="Tokens between the subject noun and the verb.")
    attractor_rate: float = Field(
        1.0, ge=0, le=1, description="Share of distractor nouns with the other number than the subject."
    )


def build(params: Params, seed: int) -> SequenceData:
    rng = np.random.default_rng(seed)

    def sentence():
        plural = bool(rng.integers(2))
        noun = NOUNS[rng.integers(len(NOUNS))][int(plural)]
        tokens = ["the", noun]
        distractor: list[str] = []
        while len(distractor) < params.distance:
            # A prepositional phrase "in the hallway" (3 tokens); a shorter tail
            # is padded with adverb-like filler so the distance is exact.
            attractor_plural = (not plural) if rng.random() < params.attractor_rate else plural
            phrase = [
                PREPOSITIONS[rng.integers(len(PREPOSITIONS))],
                "the",
                NOUNS[rng.integers(len(NOUNS))][int(attractor_plural)],
            ]
            remaining = params.distance - len(distractor)
            distractor.extend(phrase if remaining >= 3 else ["really", "quite"][:remaining])
        return tokens + distractor, "are" if plural else "is"

    train = [sentence() for _ in range(params.n_train)]
    test = [sentence() for _ in range(params.n_test)]
    return classification_data(train, test, ["is", "are"])
