"""Does a kept subword model reproduce its run's pieces? The checks on a run folder's `bpe.json` and
`sentencepiece.model` when a kept model is loaded (tasks.subword_models reads the files, kept.preprocessing the
record).

A run folder may be someone else's, so its tokenizer file is read as carefully as a spec, and it must cut words
into the pieces the run trained on. A file that parses, holds vocabulary.json's pieces and is of its level can
still cut them otherwise: a `sentencepiece.model` relabelled from unigram to BPE (its trainer_spec.model_type),
or a `bpe.json` whose merges were emptied (every word then falls into characters, though vocabulary.json holds
pieces only merges make). Each would load and segment differently, silently. What a tokenizer does is fixed by
a few things, each compared here with what the run recorded or what the suite's own training always writes,
exactly, in one pass over the file (about 10 µs a piece: a 32,000-piece model in a third of a second). No text is
segmented to check: a piece's own text need not come back as that piece (a unigram model may prefer two pieces
to it, BPE's merge order another split), so such a check would refuse good files, or, on a sample, miss bad ones.

- the type: preprocessing.json's `input.split` records the level, and so the model type (`bpe`: byte-pair
  merges applied by the `tokenizers` package, `bpe.json`'s own `level`; `sentencepiece_unigram` and
  `sentencepiece_bpe`: SentencePiece's UNIGRAM and BPE model types). A SentencePiece proto's
  `trainer_spec.model_type` must be the level's.
- the pieces: vocabulary.json's, by id (SentencePiece: the proto's own pieces, `subword_models.check_pieces`;
  bpe: the tokenizer is built from vocabulary.json).
- how the pieces are made:
  - bpe: a piece of more than one character exists only as a merge's result, and the `tokenizers` trainer
    gives the pieces it makes their ids in the order of its merges. So the merges, in their order, must make
    exactly vocabulary.json's multi-character pieces in the order of their ids (the reserved pieces first,
    `<pad>`, `<unk>` and the task's markers, apart): an empty, cut or reordered list of merges is refused,
    naming the first piece no merge makes, or the first made out of order.
  - SentencePiece: the rest of what its encoder reads is what the suite always trains with
    (`SentencePieceModel.learn`): the identity normalization (no character map, no rules; a dummy `▁`
    prefix, extra whitespace removed, spaces escaped as `▁`), `▁` starting a word (not ending it), no
    whitespace-only pieces, no byte fallback; `<pad>` a control piece, `<unk>` the unknown one, the task's
    markers after them control pieces (a marker's text may head a vocabulary that reserves none: then it is a
    normal piece, and no control piece follows), every other piece a normal one (a user-defined piece is
    matched before segmenting, and cuts words otherwise), its score a finite float32.
- the bytes: preprocessing.json records the SHA-256 of the file the run kept (`input.tokenizer_sha256`, recorded
  since it was added; a folder kept before has none, and loads on the checks above). A file changed in any
  other way (a unigram piece's score, which decides between two segmentations) no longer has it. It is checked
  last: the checks above say what disagrees, the digest only that something does.

Each disagreement is one SpecError naming the file and what disagrees, e.g.

    results/x/run/sentencepiece.model: a BPE model, but preprocessing.json's input.split is
    'sentencepiece_unigram', a UNIGRAM model's level: it would cut words into other pieces than the run's

A piece or a value from the file is quoted as a short, escaped excerpt (`errors.excerpt`, as repr writes it).
Reading SentencePiece's proto needs no protobuf package: its wire format (varints, length-delimited fields,
fixed32 floats) is read here, for the few fields checked.
"""

from __future__ import annotations

import hashlib
import math
import struct
from collections.abc import Iterator, Sequence

from seqkeras.errors import SpecError, excerpt
from seqkeras.tasks.base import PAD, UNK, Vocabulary

# The pieces a task reserves (tasks.subwords.MARKERS and <unk>): first in every subword vocabulary, made by no merge.
RESERVED = frozenset({PAD, UNK, "<s>", "</s>"})

# SentencePiece's ModelProto, TrainerSpec, NormalizerSpec and SentencePiece fields (sentencepiece_model.proto).
MODEL_PIECES, MODEL_TRAINER_SPEC, MODEL_NORMALIZER_SPEC = 1, 2, 3
PIECE_SCORE, PIECE_TYPE = 2, 3
MODEL_TYPE = 3  # TrainerSpec.model_type
NORMAL, UNKNOWN, CONTROL = 1, 2, 3
PIECE_TYPES = {1: "normal", 2: "unknown", 3: "control", 4: "user-defined", 5: "unused", 6: "byte"}
MODEL_TYPES = {1: "UNIGRAM", 2: "BPE", 3: "WORD", 4: "CHAR"}
MODEL_TYPE_NUMBERS = {"unigram": 1, "bpe": 2}  # the trainer's `model_type` → TrainerSpec.model_type
# (field, name, the value the suite trains with, the proto's default): the settings SentencePiece's encoder reads,
# besides the model type (the level's: tasks.level_sentencepiece).
TRAINER_SETTINGS = (
    (24, "trainer_spec.treat_whitespace_as_suffix", 0, 0),
    (26, "trainer_spec.allow_whitespace_only_pieces", 0, 0),
    (35, "trainer_spec.byte_fallback", 0, 0),
)
NORMALIZER_SETTINGS = (
    (1, "normalizer_spec.name", b"identity", b""),
    (2, "normalizer_spec.precompiled_charsmap", b"", b""),
    (3, "normalizer_spec.add_dummy_prefix", 1, 1),
    (4, "normalizer_spec.remove_extra_whitespaces", 1, 1),
    (5, "normalizer_spec.escape_whitespaces", 1, 1),
    (6, "normalizer_spec.normalization_rule_tsv", b"", b""),
)


def sha256(data: bytes) -> str:
    """The hex SHA-256 of a tokenizer file's bytes: what preprocessing.json records of it."""
    return hashlib.sha256(data).hexdigest()


def check_digest(data: bytes, recorded: str | None, where: str, record: str) -> None:
    """Refuse a file whose bytes are not those whose digest `record` (preprocessing.json, field and all) holds."""
    if recorded is None:  # kept before the digest was recorded: the other checks are all there is
        return
    actual = sha256(data)
    if actual != recorded:
        raise SpecError(f"{where}: its SHA-256 is {actual[:16]}…, but {record} records {recorded[:16]}…: it is not "
                        "the file the run kept, and may cut words into other pieces than the run's")


# --------------------------------------------------------------------------- bpe.json


def reserved_count(tokens: Sequence[str]) -> int:
    """How many of the vocabulary's first pieces are reserved ones (<pad>, <unk>, the task's markers)."""
    count = 0
    while count < len(tokens) and tokens[count] in RESERVED:
        count += 1
    return count


def check_merges(merges: Sequence[tuple[str, str]], vocabulary: Vocabulary, where: str) -> None:
    """Refuse merges that do not make vocabulary.json's multi-character pieces, in the order of their ids (module
    docstring). Each merge is known to join two pieces of the vocabulary into a third."""
    tokens = vocabulary.tokens
    reserved = set(tokens[: reserved_count(tokens)])
    expected = [token for token in tokens[len(reserved):] if len(token) > 1]
    made: list[str] = []
    seen: set[str] = set()
    first_merge: dict[str, int] = {}
    for number, (left, right) in enumerate(merges, start=1):
        piece = left + right
        if piece not in seen and piece not in reserved:
            seen.add(piece)
            made.append(piece)
            first_merge[piece] = number
    if made == expected:
        return
    # Every piece made is a multi-character piece of the vocabulary, so `made` is short of `expected`, or out of
    # its order.
    at = next((i for i, (a, b) in enumerate(zip(made, expected)) if a != b), min(len(made), len(expected)))
    wanted = expected[at] if at < len(expected) else None
    if wanted is not None and wanted not in seen:
        raise SpecError(f"{where}: no merge makes {excerpt(wanted)}, piece {vocabulary.index[wanted]} of the run's "
                        f"vocabulary.json ({len(merges)} merges make {len(made)} of its {len(expected)} pieces of "
                        "more than one character): words would fall into other pieces than the run's; the two "
                        "files are not of one run")
    piece = made[at]
    raise SpecError(f"{where}: merge {first_merge[piece]} makes {excerpt(piece)}, piece {vocabulary.index[piece]} of "
                    f"the run's vocabulary.json, before any merge makes {excerpt(wanted)}, piece "
                    f"{vocabulary.index[wanted]}: the merges are not in the order the run learnt them, and would cut "
                    "words into other pieces")


# --------------------------------------------------------------------------- sentencepiece.model


def read_varint(data: bytes | memoryview, at: int) -> tuple[int, int]:
    """The varint at `at` of a protobuf's bytes and the position after it (a ValueError past the end)."""
    value, shift = 0, 0
    while True:
        if at >= len(data) or shift > 63:
            raise ValueError("a varint runs past its end")
        byte = data[at]
        at += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, at
        shift += 7


def proto_fields(data: bytes | memoryview) -> Iterator[tuple[int, int | bytes | memoryview]]:
    """(field number, value) of each field of a protobuf message, in order: an int for a varint, the bytes of a
    length-delimited or fixed-width field. A ValueError for bytes that are no message."""
    data = memoryview(data)
    at = 0
    while at < len(data):
        key, at = read_varint(data, at)
        field, wire = key >> 3, key & 7
        if wire == 0:
            value, at = read_varint(data, at)
        elif wire in (1, 5):
            width = 8 if wire == 1 else 4
            value, at = data[at : at + width], at + width
        elif wire == 2:
            length, at = read_varint(data, at)
            value, at = data[at : at + length], at + length
        else:
            raise ValueError(f"wire type {wire}")
        if at > len(data):
            raise ValueError("a field runs past the message's end")
        yield field, value


def _last(fields: list[tuple[int, object]], number: int, default: object) -> object:
    """A singular field's value (the last one, as protobuf reads it), or its default."""
    values = [value for field, value in fields if field == number]
    if not values:
        return default
    value = values[-1]
    return bytes(value) if isinstance(value, memoryview) else value


def _message(fields: list[tuple[int, object]], number: int, name: str) -> list[tuple[int, object]]:
    """The fields of a singular message field (none when it is absent). Written more than once, its occurrences
    merge, as protobuf reads them: their fields in order, a later value of a singular field winning (`_last`)."""
    values = [value for field, value in fields if field == number]
    if any(isinstance(value, int) for value in values):
        raise ValueError(f"its {name} is not a message")
    return [item for value in values for item in proto_fields(value)]


def _shown_setting(value: object, trained: object) -> str:
    """A setting's value as a message shows it: a text (cut short, escaped) or true/false."""
    if isinstance(trained, bytes):
        return excerpt(value.decode("utf-8", "replace")) if isinstance(value, bytes) else "not a text"
    return str(bool(value)).lower() if isinstance(value, int) else "not a flag"


def check_sentencepiece(level: str, trained_type: str, proto: bytes, vocabulary: Vocabulary, where: str) -> None:
    """Refuse a SentencePiece model proto (already parsed by SentencePiece itself, its pieces vocabulary.json's)
    that would not segment as the run did: another model type than the level's (`trained_type`, the trainer's
    model_type), other normalization or
    whitespace settings than the suite trains with, a piece of another type or with a score that is no finite
    float32 (module docstring)."""
    try:
        model = list(proto_fields(proto))
        trainer = _message(model, MODEL_TRAINER_SPEC, "trainer_spec")
        normalizer = _message(model, MODEL_NORMALIZER_SPEC, "normalizer_spec")
    except ValueError as error:
        raise SpecError(f"{where} is not a SentencePiece model proto ({error})") from None
    model_type = _last(trainer, MODEL_TYPE, 1)
    if model_type != MODEL_TYPE_NUMBERS[trained_type]:
        raise SpecError(f"{where}: a {MODEL_TYPES.get(model_type, 'other')} model, but "
                        f"preprocessing.json's input.split is {level!r}, a {trained_type.upper()} "
                        "model's level: it would cut words into other pieces than the run's")
    for fields, settings in ((trainer, TRAINER_SETTINGS), (normalizer, NORMALIZER_SETTINGS)):
        for number, name, trained, default in settings:
            value = _last(fields, number, default)
            if isinstance(trained, bytes) and value == trained or \
                    isinstance(trained, int) and isinstance(value, int) and bool(value) == bool(trained):
                continue
            raise SpecError(f"{where}: its {name} is {_shown_setting(value, trained)}, but a {level} run's model has "
                            f"{_shown_setting(trained, trained)}: it would cut words into other pieces than the run's")
    index, markers = 0, True  # markers: still among the task's markers after <pad> and <unk>
    for field, piece in model:
        if field != MODEL_PIECES:
            continue
        try:
            fields = list(proto_fields(piece))
        except ValueError as error:
            raise SpecError(f"{where}: piece {index} is not a SentencePiece piece ({error})") from None
        text = vocabulary.tokens[index] if index < len(vocabulary) else ""
        kind = _last(fields, PIECE_TYPE, NORMAL)
        # A task's marker after <unk> is a control piece (never cut from a text); one of a vocabulary that
        # reserves none is a normal piece whose text happens to be a marker's, and no control piece follows it.
        if index >= 2:
            markers = markers and text in RESERVED and kind == CONTROL
        expected = CONTROL if index == 0 else UNKNOWN if index == 1 else CONTROL if markers else NORMAL
        if kind != expected:
            raise SpecError(f"{where}: piece {index} ({excerpt(text)}) is a {PIECE_TYPES.get(kind, 'other')} piece, "
                            f"but a {level} run's is a {PIECE_TYPES[expected]} one: it would cut words into other "
                            "pieces than the run's")
        score = _last(fields, PIECE_SCORE, b"\0\0\0\0")
        value = struct.unpack("<f", score)[0] if isinstance(score, bytes) and len(score) == 4 else None
        if value is None or not math.isfinite(value):
            raise SpecError(f"{where}: piece {index} ({excerpt(text)}) has the score "
                            f"{'of another wire type' if value is None else value}, not a finite float32")
        index += 1
