"""The learnt subword models of `level: bpe`, `sentencepiece_unigram` and `sentencepiece_bpe`: learnt from a task's
training words, cutting words into pieces, kept as a file of the run folder and read back from it.

Each is learnt from the words of the training texts alone (the texts handed in are their words joined by single
spaces: tasks.subwords prepares them) to at most `size` pieces, the task's reserved pieces first: `<pad>` id 0,
`<unk>` id 1, then any marker the task adds (a seq2seq target's `<s>` and `</s>`, a language model's `</s>`). The
pieces by id are the run's vocabulary (vocabulary.json), the suite's `Vocabulary` layout.

`bpe` is classic byte-pair encoding (Sennrich et al., 2016) with the `tokenizers` package's BPE model and
trainer; `sentencepiece_unigram` and `sentencepiece_bpe` are the `sentencepiece` package's unigram language
model and BPE trainers. All three mark a piece that starts a word with `▁` (U+2581, SentencePiece's own mark),
so one function puts any of them back into words (tasks.subwords.join_word_starts). For `bpe` the mark is a
choice: the `tokenizers` trainer's end-of-word suffix (`</w>`) numbers the suffixed characters in the order of
a hash map, so the same texts gave other ids and other merges from one process to the next; with the mark
prepended to each word (its Metaspace pre-tokenizer) every initial piece is a character of the alphabet, whose
ids it sorts, and the merges and ids are the same on every run.

The same texts give the same vocabulary on every run and machine (tests/test_subword_levels.py trains twice):
SentencePiece trains on one thread (`num_threads=1`: its EM step sums floats per thread), from the word counts in
the texts' order, without sampling or shuffling sentences, with the identity normalization (no NFKC: a piece is
spelt as the text is) and every training character kept (`character_coverage` 1); the `tokenizers` trainer is
deterministic with the word-start mark, and runs on one thread unless the user set TOKENIZERS_PARALLELISM (which
also keeps it quiet in a process forked after it trained). Nothing is downloaded.

`size` is a bound: the BPE trainers stop when no pair is left to merge, and the unigram model keeps only the
pieces its segmentations use (the King James Bible's 12,827 distinct words give 6,845 pieces of 8,000 asked).
Learning is one call into C++ or Rust over the word counts (under a second for that Bible: a signal is answered
when it returns); splitting goes a chunk of texts at a time (tasks.subwords.pieces).

A run folder keeps the learnt model beside its vocabulary (preprocessing.json's `input.tokenizer` names the
file): `sentencepiece.model`, SentencePiece's model proto as it wrote it, or `bpe.json`, the merges in the order
they were learnt (`{"format": 1, "level": "bpe", "word_start": "▁", "merges": [["▁", "t"], ...]}`; the ids are
vocabulary.json's). The file may be someone else's: `read_model` refuses one that does not parse, is not of its
level or does not fit vocabulary.json, in one line naming it (kept.preprocessing reads its bytes through
results.files: inside the folder, no link, bounded). Fitting means cutting words into the run's pieces: the
model type its level records, merges that make vocabulary.json's pieces in their order, SentencePiece's
normalization and piece types as the suite trains them (tasks.tokenizer_checks, which says why these suffice).
"""

from __future__ import annotations

import io
import json
import os
from collections import Counter
from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from seqkeras.errors import SpecError, excerpt
from seqkeras.tasks.base import PAD, UNK, Vocabulary
from seqkeras.tasks.input_rules import SENTENCEPIECE_TYPES
from seqkeras.tasks.tokenizer_checks import check_merges, check_sentencepiece

WORD_START = "\u2581"  # ▁: SentencePiece's mark of a piece that starts a word, and the bpe level's
SENTENCEPIECE_FILE, BPE_FILE = "sentencepiece.model", "bpe.json"
# SentencePiece skips a training line longer than this many bytes (its default); a word that long is kept.
SENTENCEPIECE_LINE_BYTES = 4192


def spaced(text: str) -> str:
    """A text's words joined by single spaces: the only separator both libraries split on alike."""
    return " ".join(text.split())


def check_size(level: str, counts: Counter, size: int, reserved: Sequence[str]) -> None:
    """Refuse a `size` that cannot hold every character of the training words, `▁` and the reserved pieces: both
    libraries keep each training character as a piece (SentencePiece refuses to train otherwise, the `tokenizers`
    trainer goes over the size), so a smaller size is a mistake to point at."""
    if not counts:
        raise SpecError(f"level {level} learns its pieces from the training texts' words, and they hold none",
                        path="task.level")
    characters = {character for word in counts for character in word} | {WORD_START}
    needed = len(characters) + len(reserved)
    if size < needed:
        raise SpecError(f"vocabulary_size {size} cannot hold the {len(characters)} distinct characters of the "
                        f"training words (▁ included) and the {len(reserved)} reserved pieces that level {level} "
                        f"keeps; set it to {needed} or more", path="task.vocabulary_size")


class SentencePieceModel:
    """A SentencePiece model (unigram or BPE): its processor, the proto it was read from, its pieces by id."""

    def __init__(self, level: str, proto: bytes):
        import sentencepiece  # imported where used: `seqkeras validate` and a worker's start need neither tokenizer

        self.level, self.proto = level, proto
        self.processor = sentencepiece.SentencePieceProcessor(model_proto=proto)
        self.vocabulary = Vocabulary([self.processor.id_to_piece(i) for i in range(self.processor.get_piece_size())])

    @classmethod
    def learn(cls, level: str, texts: Sequence[str], size: int, reserved: Sequence[str]) -> SentencePieceModel:
        # The word counts in the texts' order (SentencePiece's `tsv` input: word<TAB>count): words are what it
        # learns from either way (it splits on whitespace), and a text longer than a line it accepts is no matter.
        import sentencepiece

        counts = Counter(word for text in texts for word in text.split())
        check_size(level, counts, size, reserved)
        longest = max(len(word.encode("utf-8")) for word in counts)
        proto = io.BytesIO()
        sentencepiece.SentencePieceTrainer.train(
            sentence_iterator=iter(f"{word}\t{count}" for word, count in counts.items()), input_format="tsv",
            model_writer=proto, model_type=SENTENCEPIECE_TYPES[level], vocab_size=size, hard_vocab_limit=False,
            pad_id=0, unk_id=1, bos_id=-1, eos_id=-1, pad_piece=PAD, unk_piece=UNK, control_symbols=list(reserved[2:]),
            num_threads=1, character_coverage=1.0, normalization_rule_name="identity", input_sentence_size=0,
            shuffle_input_sentence=False, max_sentence_length=max(SENTENCEPIECE_LINE_BYTES, longest + 1),
            minloglevel=2,  # errors only: its INFO lines would fill a run's log
        )
        return cls(level, proto.getvalue())

    @classmethod
    def read(cls, level: str, data: bytes, vocabulary: Vocabulary, where: str) -> SentencePieceModel:
        """The model of a run folder's file (`where` names it), refused unless it is a SentencePiece model whose
        pieces are vocabulary.json's, `<pad>` and `<unk>` first, of the level's model type and segmenting as the
        suite's training makes it segment (tasks.tokenizer_checks)."""
        try:
            model = cls(level, data)
        except Exception as error:  # the C++ parser's RuntimeError (or OSError) for a damaged or foreign file
            first = (str(error).strip().splitlines() or [""])[0][:200]
            raise SpecError(f"{where} is not a SentencePiece model ({type(error).__name__}: {first})") from None
        if model.processor.pad_id() != 0 or model.processor.unk_id() != 1:
            raise SpecError(f"{where}: its <pad> and <unk> are ids {model.processor.pad_id()} and "
                            f"{model.processor.unk_id()}, not 0 and 1 as the suite's vocabularies hold them")
        check_pieces(model.vocabulary, vocabulary, where)
        check_sentencepiece(level, data, vocabulary, where)
        return model

    def pieces(self, texts: Sequence[str]) -> list[list[str]]:
        tokens = self.vocabulary.tokens  # ids, then pieces: a stretch it does not know is the piece <unk>
        rows = self.processor.encode([spaced(text) for text in texts], out_type=int, num_threads=1)
        return [[tokens[i] for i in row] for row in rows]

    def saved(self) -> bytes:
        return self.proto


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


def check_pieces(pieces: Vocabulary, vocabulary: Vocabulary, where: str) -> None:
    """Refuse a model file whose pieces by id are not vocabulary.json's: the two are of one run."""
    if pieces.tokens == vocabulary.tokens:
        return
    if len(pieces) != len(vocabulary):
        raise SpecError(f"{where} holds {len(pieces)} pieces, but the run's vocabulary.json {len(vocabulary)}: the "
                        "two files are not of one run")
    index = next(i for i, (a, b) in enumerate(zip(pieces.tokens, vocabulary.tokens)) if a != b)
    raise SpecError(f"{where}: piece {index} is {excerpt(pieces.tokens[index])}, but the run's vocabulary.json has "
                    f"{excerpt(vocabulary.tokens[index])}: the two files are not of one run")
