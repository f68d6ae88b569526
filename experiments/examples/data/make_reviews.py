"""Writes reviews.csv beside this script: short made-up product reviews and their polarity, one a row.

    text,label
    the battery was not good,negative
    the screen was fine,neutral

A CSV with a header row, as `text_classification_file` reads it, made here so the
example downloads nothing. Three classes of unequal size (about 45% positive, 35%
negative, 20% neutral), so macro-averaged F1 and accuracy tell different stories;
a tenth of the labels are replaced by a random class, as reviewers disagree.
The polarity is the adjective's, flipped by a "not" before it ("not bad" is
positive), so a model must read the words in order; a "but" clause, when present,
decides the review ("good but slow" is negative). Run it again to get the same
file: `python experiments/examples/data/make_reviews.py`.
"""

from __future__ import annotations

import csv
import random
from pathlib import Path

NOUNS = ["battery", "screen", "keyboard", "camera", "speaker", "case", "charger", "price", "delivery", "manual",
         "cable", "lens", "strap", "button", "fan", "stand", "remote", "mouse", "display", "box"]
ADVERBS = ["", "", "really ", "quite ", "very ", "rather "]
ADJECTIVES = {
    "positive": ["good", "great", "excellent", "solid", "bright", "fast", "sturdy"],
    "negative": ["bad", "poor", "awful", "flimsy", "dim", "slow", "noisy"],
    "neutral": ["fine", "okay", "average", "standard", "usual"],
}
FLIPPED = {"positive": "negative", "negative": "positive"}
SHARES = {"positive": 0.45, "negative": 0.35, "neutral": 0.20}
ROWS = 900
NOISE = 0.1  # a tenth of the labels replaced by a random class: reviewers disagree, and no model scores 1


def review(rng: random.Random, label: str) -> str:
    """A review whose polarity is `label`."""
    noun = rng.choice(NOUNS)
    if label == "neutral":
        return f"the {noun} was {rng.choice(ADVERBS)}{rng.choice(ADJECTIVES['neutral'])}"
    if rng.random() < 0.3:  # said through its opposite, negated
        opening = f"the {noun} was not {rng.choice(ADVERBS)}{rng.choice(ADJECTIVES[FLIPPED[label]])}"
    else:
        opening = f"the {noun} was {rng.choice(ADVERBS)}{rng.choice(ADJECTIVES[label])}"
    if rng.random() < 0.3:  # a first clause of the other polarity, overruled by "but"
        other = rng.choice([n for n in NOUNS if n != noun])
        return f"the {other} was {rng.choice(ADJECTIVES[FLIPPED[label]])} but {opening[4:]}"
    return opening


def main() -> None:
    rng = random.Random(0)
    labels = rng.choices(list(SHARES), weights=list(SHARES.values()), k=ROWS)
    with open(Path(__file__).parent / "reviews.csv", "w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["text", "label"])
        for label in labels:
            text = review(rng, label)
            writer.writerow([text, rng.choice(list(SHARES)) if rng.random() < NOISE else label])


if __name__ == "__main__":
    main()
