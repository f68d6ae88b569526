"""copy_memory: remember 10 symbols across a gap of `lag` blanks, then write them out (Arjovsky, Shah & Bengio 2016).

Each input is 10 symbols drawn from 8, then `lag` − 1 blanks, a delimiter, and 10
more blanks: `lag` + 20 steps. The target is a blank at every step but the last 10,
which must repeat the 10 symbols in order. A per-step classification: a tagger
reads it, with metrics cross_entropy and token_accuracy.

The memoryless baseline predicts blanks, then each of the 8 symbols with
probability 1/8 over the last 10 steps: a cross-entropy of 10·log 8 / (lag + 20)
nats per step (`baseline_cross_entropy`). A model below it has remembered something.
"""

from __future__ import annotations

import math

import numpy as np
from pydantic import Field

from seqkeras.tasks.base import SequenceData, SizeParams, tagging_data
from seqkeras.tasks.input_rules import WHITESPACE_TOKENS, InputRule

SYMBOLS = [f"a{i}" for i in range(1, 9)]
COPIED = 10  # symbols to remember
BLANK, DELIMITER = "_", ":"


class Params(SizeParams):
    lag: int = Field(100, ge=1, le=100_000, description="T: steps between the last symbol and the delimiter's answer.")

    def tokens_per_example(self) -> int:
        return 2 * (self.lag + 2 * COPIED)  # inputs and targets

    def input_rule(self, data: SequenceData) -> InputRule:
        return WHITESPACE_TOKENS  # a text is its tokens, separated by spaces, as generated


def baseline_cross_entropy(lag: int) -> float:
    """The memoryless strategy's cross-entropy per step, in nats (Arjovsky et al. 2016)."""
    return COPIED * math.log(len(SYMBOLS)) / (lag + 2 * COPIED)


def build(params: Params, seed: int) -> SequenceData:
    rng = np.random.default_rng(seed)

    def examples(count):
        drawn = rng.integers(len(SYMBOLS), size=(count, COPIED))
        pairs = []
        for row in drawn:
            symbols = [SYMBOLS[i] for i in row]
            tokens = symbols + [BLANK] * (params.lag - 1) + [DELIMITER] + [BLANK] * COPIED
            tags = [BLANK] * (params.lag + COPIED) + symbols
            pairs.append((tokens, tags))
        return pairs

    return tagging_data(examples(params.n_train), examples(params.n_test))
