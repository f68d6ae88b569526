"""`level: bpe`: classic byte-pair encoding (Sennrich et al., 2016) with the `tokenizers` package's BPE model and
trainer, its pieces marked `▁` where a word starts (`▁runn ing`), kept as the run folder's `bpe.json`: the merges
in the order they were learnt (`{"format": 1, "level": "bpe", "word_start": "▁", "merges": [["▁", "t"], ...]}`;
the ids are vocabulary.json's).

The mark is a choice: the `tokenizers` trainer's end-of-word suffix (`</w>`) numbers the suffixed characters in the
order of a hash map, so the same texts gave other ids and other merges from one process to the next; with the mark
prepended to each word (its Metaspace pre-tokenizer) every initial piece is a character of the alphabet, whose ids
it sorts, and the merges and ids are the same on every run. The trainer runs on one thread unless the user set
TOKENIZERS_PARALLELISM (which also keeps it quiet in a process forked after it trained). A run folder's bpe.json
is refused unless its merges make vocabulary.json's pieces in their order (tasks.tokenizer_checks).

An export holds the very tokenizer the run splits with in the package's own file, tokenizer.json.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from seqkeras.errors import SpecError, excerpt
from seqkeras.tasks.base import PAD, UNK, Vocabulary
from seqkeras.tasks.subword_models import WORD_START, SubwordLevel, check_size, join_word_starts, spaced
from seqkeras.tasks.tokenizer_checks import check_merges

BPE_FILE = "bpe.json"
BPE_TOKENIZER_FILE = "tokenizer.json"  # an export's: the `tokenizers` package's own file (Tokenizer.save)


class BpeFile(BaseModel):
    """bpe.json: the merges in the order they were learnt (the ids are vocabulary.json's)."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    format: Literal[1]
    level: Literal["bpe"]
    word_start: Literal[WORD_START]
    merges: list[tuple[str, str]]


class BpeModel:
    """A byte-pair encoding: its vocabulary and merges, applied by the `tokenizers` package's BPE model to each
    word with `▁` prepended. Built from the two alone, the same way after training and from a run folder's file:
    the tokenizer the trainer leaves would also match its reserved pieces (`<s>`) written in a text."""

    level = "bpe"

    def __init__(self, vocabulary: Vocabulary, merges: list[tuple[str, str]]):
        from tokenizers import Tokenizer, models

        self.vocabulary, self.merges = vocabulary, merges
        self.tokenizer = Tokenizer(models.BPE(vocab=dict(vocabulary.index), merges=merges, unk_token=UNK))
        self.tokenizer.pre_tokenizer = word_start_splitter()

    @classmethod
    def learn(cls, texts: Sequence[str], size: int, reserved: Sequence[str]) -> BpeModel:
        from tokenizers import Tokenizer, models, trainers

        check_size(cls.level, Counter(word for text in texts for word in text.split()), size, reserved)
        os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")  # one thread, and no warning in a forked worker
        tokenizer = Tokenizer(models.BPE(unk_token=UNK))
        tokenizer.pre_tokenizer = word_start_splitter()
        trainer = trainers.BpeTrainer(vocab_size=size, special_tokens=list(reserved), show_progress=False)
        tokenizer.train_from_iterator((spaced(text) for text in texts), trainer)
        learnt = json.loads(tokenizer.to_str())["model"]
        ids = learnt["vocab"]
        vocabulary = Vocabulary(sorted(ids, key=ids.get))
        return cls(vocabulary, [tuple(merge) for merge in learnt["merges"]])

    @classmethod
    def read(cls, data: bytes, vocabulary: Vocabulary, where: str) -> BpeModel:
        """The model of a run folder's bpe.json (`where` names it), refused unless each merge joins two pieces of
        vocabulary.json into a third, `<pad>` and `<unk>` first, and the merges make vocabulary.json's pieces of more
        than one character in the order of their ids (tasks.tokenizer_checks)."""
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as error:
            raise SpecError(f"{where} is not UTF-8 text (byte {error.start})") from None
        try:  # JSON mode: strict, and a merge is a JSON array of two texts
            merges = BpeFile.model_validate_json(text).merges
        except ValidationError as error:
            problem = error.errors(include_url=False)[0]
            if problem["type"] == "json_invalid":
                raise SpecError(f"{where} is not JSON ({problem['msg']})") from None
            at = ".".join(str(part) for part in problem["loc"]) or "the file"
            raise SpecError(f"{where} is not a bpe.json this version of seqkeras wrote ({at}: {problem['msg']})") \
                from None
        if vocabulary.tokens[:2] != [PAD, UNK]:
            raise SpecError(f"{where}: its vocabulary does not begin with {PAD} and {UNK}")
        for number, (left, right) in enumerate(merges, start=1):
            missing = [piece for piece in (left, right, left + right) if piece not in vocabulary.index]
            if missing:
                raise SpecError(f"{where}: merge {number} ({excerpt(left)} + {excerpt(right)}) makes or uses "
                                f"{excerpt(missing[0])}, which the run's vocabulary.json lacks: the two files are not "
                                "of one run")
        check_merges(merges, vocabulary, where)
        try:
            return cls(vocabulary, merges)
        except Exception as error:  # the Rust model's own refusal, should a file pass the checks above
            first = (str(error).strip().splitlines() or [""])[0]
            raise SpecError(f"{where} is not a byte-pair encoding ({type(error).__name__}: {excerpt(first)})") \
                from None

    def pieces(self, texts: Sequence[str]) -> list[list[str]]:
        return [encoding.tokens for encoding in self.tokenizer.encode_batch([spaced(text) for text in texts])]

    def saved(self) -> bytes:
        merges = [list(merge) for merge in self.merges]
        return json.dumps({"format": 1, "level": self.level, "word_start": WORD_START, "merges": merges},
                          ensure_ascii=False).encode("utf-8")


def word_start_splitter():
    """Each space-separated word on its own, `▁` prepended (the `tokenizers` package's Metaspace)."""
    from tokenizers import pre_tokenizers

    return pre_tokenizers.Metaspace(replacement=WORD_START, prepend_scheme="always", split=True)


def exported(model: BpeModel, folder: Path) -> dict:
    model.tokenizer.save(str(folder / BPE_TOKENIZER_FILE))
    return {"file": BPE_TOKENIZER_FILE, "library": "tokenizers",
            "read": f"tokenizers.Tokenizer.from_file('{BPE_TOKENIZER_FILE}').encode(text).ids"}


LEVEL = SubwordLevel("bpe", "byte-pair encoding, Sennrich et al., with the tokenizers package, `▁runn ing`",
                     BpeModel.learn, join_word_starts, WORD_START, BPE_FILE, BpeModel.read, export=exported)
