"""The catalog of subword levels: one line per level, each defined in its own module (tasks.subword_models says what
a level is). The `level` key's choices, a kept model's `input.split`, the kept model's reading, export and the
data card all read this list; a new level is its module and its line here (docs/contributing.md).
"""

from __future__ import annotations

from seqkeras.tasks import level_bpe, level_sentencepiece, level_wordpiece
from seqkeras.tasks.subword_models import SubwordLevel

LEVELS: tuple[SubwordLevel, ...] = (
    level_wordpiece.LEVEL,
    level_bpe.LEVEL,
    level_sentencepiece.UNIGRAM,
    level_sentencepiece.BPE,
)
BY_NAME: dict[str, SubwordLevel] = {level.name: level for level in LEVELS}
NAMES: tuple[str, ...] = tuple(BY_NAME)
