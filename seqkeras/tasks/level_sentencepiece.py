"""`level: sentencepiece_unigram` and `sentencepiece_bpe`: the `sentencepiece` package's unigram language model and
BPE, their pieces marked `▁` where a word starts (`▁runn ing`), kept as the run folder's `sentencepiece.model`
(SentencePiece's model proto as it wrote it).

The same texts give the same vocabulary on every run and machine: SentencePiece trains on one thread
(`num_threads=1`: its EM step sums floats per thread), from the word counts in the texts' order, without sampling
or shuffling sentences, with the identity normalization (no NFKC: a piece is spelt as the text is) and every
training character kept (`character_coverage` 1). A run folder's file is refused unless it is of the level's
model type and segments as the suite's training makes it segment (tasks.tokenizer_checks).
"""

from __future__ import annotations

import io
from collections import Counter
from collections.abc import Sequence
from functools import partial
from pathlib import Path

from seqkeras.errors import SpecError
from seqkeras.tasks.base import PAD, UNK, Vocabulary
from seqkeras.tasks.subword_models import SubwordLevel, check_pieces, check_size, join_word_starts, spaced, WORD_START
from seqkeras.tasks.tokenizer_checks import check_sentencepiece

SENTENCEPIECE_FILE = "sentencepiece.model"
# SentencePiece skips a training line longer than this many bytes (its default); a word that long is kept.
SENTENCEPIECE_LINE_BYTES = 4192


class SentencePieceModel:
    """A SentencePiece model (unigram or BPE): its processor, the proto it was read from, its pieces by id."""

    def __init__(self, level: str, proto: bytes):
        import sentencepiece  # imported where used: `seqkeras validate` and a worker's start need neither tokenizer

        self.level, self.proto = level, proto
        self.processor = sentencepiece.SentencePieceProcessor(model_proto=proto)
        self.vocabulary = Vocabulary([self.processor.id_to_piece(i) for i in range(self.processor.get_piece_size())])

    @classmethod
    def learn(cls, level: str, model_type: str, texts: Sequence[str], size: int,
              reserved: Sequence[str]) -> SentencePieceModel:
        # The word counts in the texts' order (SentencePiece's `tsv` input: word<TAB>count): words are what it
        # learns from either way (it splits on whitespace), and a text longer than a line it accepts is no matter.
        import sentencepiece

        counts = Counter(word for text in texts for word in text.split())
        check_size(level, counts, size, reserved)
        longest = max(len(word.encode("utf-8")) for word in counts)
        proto = io.BytesIO()
        sentencepiece.SentencePieceTrainer.train(
            sentence_iterator=iter(f"{word}\t{count}" for word, count in counts.items()), input_format="tsv",
            model_writer=proto, model_type=model_type, vocab_size=size, hard_vocab_limit=False,
            pad_id=0, unk_id=1, bos_id=-1, eos_id=-1, pad_piece=PAD, unk_piece=UNK, control_symbols=list(reserved[2:]),
            num_threads=1, character_coverage=1.0, normalization_rule_name="identity", input_sentence_size=0,
            shuffle_input_sentence=False, max_sentence_length=max(SENTENCEPIECE_LINE_BYTES, longest + 1),
            minloglevel=2,  # errors only: its INFO lines would fill a run's log
        )
        return cls(level, proto.getvalue())

    @classmethod
    def read(cls, level: str, model_type: str, data: bytes, vocabulary: Vocabulary, where: str) -> SentencePieceModel:
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
        check_sentencepiece(level, model_type, data, vocabulary, where)
        return model

    def pieces(self, texts: Sequence[str]) -> list[list[str]]:
        tokens = self.vocabulary.tokens  # ids, then pieces: a stretch it does not know is the piece <unk>
        rows = self.processor.encode([spaced(text) for text in texts], out_type=int, num_threads=1)
        return [[tokens[i] for i in row] for row in rows]

    def saved(self) -> bytes:
        return self.proto


def exported(model: SentencePieceModel, folder: Path) -> dict:
    """A SentencePiece export needs no file of its own: sentencepiece.model is the run's, already in the folder."""
    return {"file": SENTENCEPIECE_FILE, "library": "sentencepiece",
            "read": f"sentencepiece.SentencePieceProcessor(model_file='{SENTENCEPIECE_FILE}').encode(text)"}


def level(name: str, model_type: str, summary: str) -> SubwordLevel:
    return SubwordLevel(name, summary, partial(SentencePieceModel.learn, name, model_type), join_word_starts,
                        WORD_START, SENTENCEPIECE_FILE, partial(SentencePieceModel.read, name, model_type),
                        export=exported)


UNIGRAM = level("sentencepiece_unigram", "unigram", "the sentencepiece package's unigram language model, `▁runn ing`")
BPE = level("sentencepiece_bpe", "bpe", "the sentencepiece package's BPE, `▁runn ing`")
