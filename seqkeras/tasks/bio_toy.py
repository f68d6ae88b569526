"""bio_toy: sentences with BIO-tagged person and location spans.

Built from templates such as "{PER} visited {LOC}" (the lesson's
"Ada Lovelace visited London" → B-PER I-PER O B-LOC is one of them), with
one- and two-token names. With `ambiguity` > 0, a share of the sentences use a
word that is a person or a place depending on the word AFTER it
("Washington said ..." → B-PER, "Washington state ..." → B-LOC): a
left-to-right tagger cannot know, a bidirectional one can.
"""

from __future__ import annotations

import numpy as np
from pydantic import Field

from seqkeras.tasks.base import SequenceData, SizeParams, tagging_data
from seqkeras.tasks.input_rules import WHITESPACE_TOKENS, InputRule

PEOPLE = [
    ["Ada", "Lovelace"], ["Alan", "Turing"], ["Grace", "Hopper"], ["Marie", "Curie"],
    ["Ada"], ["Alan"], ["Grace"], ["Claude", "Shannon"], ["Karen", "Jones"], ["Noam"],
]
PLACES = [
    ["London"], ["Paris"], ["New", "York"], ["Berlin"], ["Cambridge"], ["San", "Francisco"],
    ["Vienna"], ["Rome"], ["Hong", "Kong"], ["Oslo"],
]
TEMPLATES = [
    "{PER} visited {LOC}",
    "{PER} lives in {LOC}",
    "{PER} met {PER} in {LOC}",
    "yesterday {PER} flew from {LOC} to {LOC}",
    "the letter from {PER} arrived in {LOC}",
    "{PER} wrote about {LOC}",
]
LESSON_EXAMPLE = (["Ada", "Lovelace", "visited", "London"], ["B-PER", "I-PER", "O", "B-LOC"])
# Words whose entity type only the following word reveals.
AMBIGUOUS = ["Washington", "Jordan", "Georgia", "Lincoln", "Florence", "Victoria"]
PERSON_CUES = ["said {X} that it rained", "said {X} yesterday", "smiled at {X}"]
PLACE_CUES = ["state is large", "state has rivers", "state borders {X}"]


class Params(SizeParams):
    ambiguity: float = Field(
        0.0, ge=0, le=1,
        description="Share of sentences whose first word is a person or a place depending on the NEXT word.",
    )

    def input_rule(self, data: SequenceData) -> InputRule:
        return WHITESPACE_TOKENS  # a text is its tokens, separated by spaces, as generated


def tag_span(words: list[str], kind: str) -> list[str]:
    return [f"B-{kind}"] + [f"I-{kind}"] * (len(words) - 1)


def build(params: Params, seed: int) -> SequenceData:
    rng = np.random.default_rng(seed)

    def pick(options):
        return options[rng.integers(len(options))]

    def fill(template: str) -> tuple[list[str], list[str]]:
        tokens, tags = [], []
        for word in template.split():
            if word in ("{PER}", "{LOC}"):
                kind = word[1:4]
                span = pick(PEOPLE if kind == "PER" else PLACES)
                tokens += span
                tags += tag_span(span, kind)
            elif word == "{X}":
                tokens.append("them")
                tags.append("O")
            else:
                tokens.append(word)
                tags.append("O")
        return tokens, tags

    def ambiguous_sentence() -> tuple[list[str], list[str]]:
        as_person = bool(rng.integers(2))
        cue_tokens, cue_tags = fill(pick(PERSON_CUES if as_person else PLACE_CUES))
        return [pick(AMBIGUOUS)] + cue_tokens, ["B-PER" if as_person else "B-LOC"] + cue_tags

    def sentence():
        if rng.random() < params.ambiguity:
            return ambiguous_sentence()
        return fill(pick(TEMPLATES))

    # The lesson's own example opens the training set, so it is always one of them.
    train = [LESSON_EXAMPLE] + [sentence() for _ in range(params.n_train - 1)]
    test = [sentence() for _ in range(params.n_test)]
    return tagging_data(train, test)
