"""The `evaluate.generate` section's schema: what a language model generates, and how long.

Evaluation owns it (language_model reads it, with its defaults when only
decoders are named); the spec stage composes it into `evaluate` (`spec.sections`).
"""

from __future__ import annotations

from pydantic import Field

from seqkeras.registry import Params

DEFAULT_PROMPTS = [
    "and it came to pass",
    "in the beginning",
    "the lord is my",
    "and he said unto them",
    "blessed are the",
    "and the king",
    "behold",
    "for the",
]


class GenerateSpec(Params):
    prompts: list[str] = Field(
        default_factory=lambda: list(DEFAULT_PROMPTS),
        min_length=1,
        description="Texts to continue, tokenized like the task's text (default: eight openings of KJV verses). "
        "An empty prompt starts after the task's end-of-unit marker.",
    )
    length: int = Field(30, ge=1, le=100_000, description="Tokens generated after each prompt.")
    repetition_n: int = Field(
        4, ge=1, le=1000, description="n of the n-grams counted by repetition_rate (4 words: a loop, not a phrase)."
    )
