"""delayed_recall: name the signal token seen `lag` steps earlier.

Each sequence starts with one of `n_classes` signal tokens, followed by `lag`
distractor tokens; the label is the first token. A model reading the sequence
left to right must carry the signal across all `lag` distractors — the lesson's
long-range memory problem in its purest form. Chance accuracy is 1 / n_classes.

By default the distractors include the signal tokens themselves, so a model
cannot just ignore them: it must keep what it stored first and refuse to
overwrite it, which a plain RNN can only do by saturating (the lesson's w = 1.5
unit "cannot forget") and rarely learns through 100 steps of vanishing gradient.
With `distractors: noise` they come from a separate vocabulary that a model can
learn to ignore outright.
"""

from __future__ import annotations

from typing import Literal

import numpy as np
from pydantic import Field

from seqkeras.tasks.base import SequenceData, SizeParams, classification_data
from seqkeras.tasks.input_rules import WHITESPACE_TOKENS, InputRule


class Params(SizeParams):
    lag: int = Field(20, ge=1, le=100_000, description="Distractor steps between the signal and the end.")
    n_classes: int = Field(4, ge=2, le=26, description="Distinct signal tokens (chance = 1/n_classes).")
    noise_tokens: int = Field(8, ge=1, le=10_000, description="Distinct noise tokens (besides the signals).")
    distractors: Literal["signals_and_noise", "noise"] = Field(
        "signals_and_noise",
        description="What fills the gap: signal and noise tokens (the first one must be protected), or noise only.",
    )

    def tokens_per_example(self) -> int:
        return self.lag + 1  # the signal, then the gap

    def input_rule(self, data: SequenceData) -> InputRule:
        return WHITESPACE_TOKENS  # a text is its tokens, separated by spaces, as generated


def build(params: Params, seed: int) -> SequenceData:
    rng = np.random.default_rng(seed)
    signals = [f"S{chr(ord('A') + i)}" for i in range(params.n_classes)]
    fillers = [f"n{i}" for i in range(params.noise_tokens)]
    if params.distractors == "signals_and_noise":
        fillers = signals + fillers

    def examples(count):
        labels = rng.integers(params.n_classes, size=count)
        gaps = rng.integers(len(fillers), size=(count, params.lag))
        return [([signals[c]] + [fillers[i] for i in gap], signals[c]) for c, gap in zip(labels, gaps)]

    train = examples(params.n_train)
    test = examples(params.n_test)
    return classification_data(train, test, signals)
