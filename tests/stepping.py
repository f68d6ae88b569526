"""What the step-model tests share (TensorFlow and torch processes): step two step models side by side."""

from __future__ import annotations

import numpy as np

from seqkeras.tasks.base import LANGUAGE_MODELING, SequenceData, Vocabulary

VOCABULARY = 13
STEPS = 20
# Beam-style reorderings after these steps: a row repeated and one dropped, then a row dropped.
SELECTIONS = {8: [2, 2, 0], 14: [1, 0]}


def lm_data(length: int = 24) -> SequenceData:
    """Random token ids as a language-modelling data set; `length` sizes a learned position table."""
    x = np.random.default_rng(0).integers(1, VOCABULARY, size=(3, length)).astype("int32")
    return SequenceData(LANGUAGE_MODELING, x, x, x, x, Vocabulary([f"t{i}" for i in range(VOCABULARY)]))


def stepped_tokens(padding_at: int | None = 5) -> np.ndarray:
    """[3, STEPS] random ids, with one padding id (0) in the middle row at step `padding_at`."""
    tokens = np.random.default_rng(1).integers(1, VOCABULARY, size=(3, STEPS)).astype("int32")
    if padding_at is not None:
        tokens[1, padding_at] = 0
    return tokens


def largest_difference(reference, cached, tokens: np.ndarray, selections=SELECTIONS) -> float:
    """The largest |difference| of the two step models' log-probabilities over every step of `tokens`.

    Both are started for len(tokens) rows; after step t in `selections`, both states
    (and the rows of tokens still to feed) are gathered by the same indices, as beam search does.
    """
    states = [reference.start(len(tokens)), cached.start(len(tokens))]
    worst = 0.0
    for t in range(tokens.shape[1]):
        (expected, states[0]), (found, states[1]) = (model.step(tokens[:, t], state)
                                                     for model, state in zip((reference, cached), states))
        assert expected.shape == found.shape == (len(tokens), reference.vocab_size)
        worst = max(worst, float(np.max(np.abs(expected - found))))
        if t in selections:
            indices = np.asarray(selections[t])
            states = [reference.select(states[0], indices), cached.select(states[1], indices)]
            tokens = tokens[indices]
    return worst
