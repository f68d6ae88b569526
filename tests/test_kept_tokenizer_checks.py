"""A kept model's files are read as carefully as a spec: a tokenizer file that would cut words into other pieces
than the run's, a length past the model's own tables or past int32, are refused when the model is loaded, in one
line naming the file and what disagrees; a message quotes a file's text only as a short, escaped excerpt.

Each test copies one of the session's tiny runs (`trained_runs`: the sentence_pairs sweep over the bpe and
sentencepiece levels of tests/test_subword_levels.py, the transformer_seq2seq case of tests/model_kind_specs.py),
changes one file of the copy, and checks the refusal, through `seqkeras.load_model` and `seqkeras predict`, and
that an untouched copy still loads and predicts (tasks.tokenizer_checks, kept.preprocessing, kept.consistency).
"""

from __future__ import annotations

import hashlib
import json
import shutil
import struct
from pathlib import Path

import pytest
import sentencepiece
import yaml

import seqkeras
from seqkeras.errors import SpecError, excerpt
from seqkeras.kept.preprocessing import FILE
from seqkeras.tasks.base import Vocabulary
from seqkeras.tasks.level_bpe import BpeModel
from seqkeras.tasks.tokenizer_checks import read_varint
from tests.helpers import run_cli
from tests.model_kind_specs import CASES
from tests.test_subword_levels import pair_runs  # noqa: F401  (its fixture, which `level_runs` asks for)

TRANSFORMER_SEQ2SEQ = next(case for case in CASES if case.id == "transformer_seq2seq")
TEXT = "seventy one"  # the sentence_pairs runs' words


@pytest.fixture
def level_runs(request) -> dict[str, Path]:
    """{level: run folder} of tests/test_subword_levels.py's sentence_pairs sweep (bpe, sentencepiece_unigram,
    sentencepiece_bpe), trained once per session: read-only, copied before a change."""
    return request.getfixturevalue("pair_runs")


# --------------------------------------------------------------------------- helpers


def copied(folder: Path, tmp_path: Path, name: str = "run") -> Path:
    destination = tmp_path / name
    shutil.copytree(folder, destination, symlinks=True)
    return destination


def refused(folder: Path, capsys, text: str = TEXT) -> str:
    """The one-line refusal of loading `folder`, the same as `seqkeras predict` prints with exit status 2."""
    with pytest.raises(SpecError) as raised:
        seqkeras.load_model(folder)
    message = str(raised.value)
    assert "\n" not in message and "Traceback" not in message, message
    code, _, err = run_cli(capsys, "predict", folder, "--text", text)
    assert code == 2 and err.strip().splitlines() == [f"error: {message}"], err
    return message


def predicted(folder: Path, text: str = TEXT) -> list[str]:
    """What the kept model of `folder` outputs for `text` (it loads and predicts)."""
    return list(seqkeras.load_model(folder).predict([text])["output"])


def edit_json(path: Path, change) -> None:
    document = json.loads(path.read_text(encoding="utf-8"))
    change(document)
    path.write_text(json.dumps(document, ensure_ascii=False), encoding="utf-8")


def varint(number: int) -> bytes:
    out = bytearray()
    while True:
        low, number = number & 0x7F, number >> 7
        out.append(low | (0x80 if number else 0))
        if not number:
            return bytes(out)


def field(number: int, value: int | bytes) -> bytes:
    """A protobuf field: a varint for an int, length-delimited bytes otherwise."""
    if isinstance(value, int):
        return varint(number << 3) + varint(value)
    return varint(number << 3 | 2) + varint(len(value)) + value


def score_field(score: float) -> bytes:
    return varint(2 << 3 | 5) + struct.pack("<f", score)


def appended_to_piece(proto: bytes, index: int, extra: bytes) -> bytes:
    """The model proto with `extra` (fields) appended to its piece `index`: protobuf merges them into the piece,
    a later value of a field winning."""
    out, at, seen = bytearray(), 0, 0
    while at < len(proto):
        start = at
        key, at = read_varint(proto, at)
        wire = key & 7
        if wire == 0:
            _, at = read_varint(proto, at)
        elif wire in (1, 5):
            at += 8 if wire == 1 else 4
        else:
            length, at = read_varint(proto, at)
            if key >> 3 == 1:  # a piece
                if seen == index:
                    out += field(1, proto[at : at + length] + extra)
                    at += length
                    seen += 1
                    continue
                seen += 1
            at += length
        out += proto[start:at]
    return bytes(out)


def vocabulary(folder: Path) -> list[str]:
    return json.loads((folder / "vocabulary.json").read_text(encoding="utf-8"))


# --------------------------------------------------------------------------- sentencepiece.model


@pytest.mark.parametrize(("level", "other", "named"), [("sentencepiece_unigram", 2, "BPE"),
                                                       ("sentencepiece_bpe", 1, "UNIGRAM")])
def test_a_sentencepiece_model_relabelled_to_another_type_is_refused(level_runs, tmp_path, capsys, level, other,
                                                                     named):
    run = level_runs[level]
    assert predicted(copied(run, tmp_path, "untouched"))  # loads and predicts
    folder = copied(run, tmp_path)
    path = folder / "sentencepiece.model"
    # Appended, a trainer_spec holding only model_type merges into the proto's (protobuf's rule): the same pieces,
    # another model.
    proto = path.read_bytes()
    path.write_bytes(proto + field(2, field(3, other)))
    if level == "sentencepiece_unigram":  # what the refusal prevents: SentencePiece reads it and cuts words otherwise
        pieces = [sentencepiece.SentencePieceProcessor(model_proto=data).encode(TEXT, out_type=str)
                  for data in (proto, path.read_bytes())]
        assert pieces[0] != pieces[1], pieces
    kept = {"UNIGRAM": "BPE", "BPE": "UNIGRAM"}[named]
    assert refused(folder, capsys) == (f"{path}: a {named} model, but preprocessing.json's input.split is "
                                       f"{level!r}, a {kept} model's level: it would cut words into other pieces "
                                       "than the run's")


@pytest.mark.parametrize(("how", "expected"), [
    ("normalizer", "its normalizer_spec.name is 'nmt_nfkc', but a sentencepiece_unigram run's model has "
                   "'identity'"),
    ("no dummy prefix", "its normalizer_spec.add_dummy_prefix is false, but a sentencepiece_unigram run's model "
                        "has true"),
    ("word-end mark", "its trainer_spec.treat_whitespace_as_suffix is true, but a sentencepiece_unigram run's "
                      "model has false"),
    ("user-defined piece", "piece {index} ({piece}) is a user-defined piece, but a sentencepiece_unigram run's is "
                           "a normal one"),
])
def test_a_sentencepiece_model_that_segments_otherwise_is_refused(level_runs, tmp_path, capsys, how, expected):
    run = level_runs["sentencepiece_unigram"]
    assert predicted(copied(run, tmp_path, "untouched"))
    folder = copied(run, tmp_path)
    path = folder / "sentencepiece.model"
    proto = path.read_bytes()
    index = max(i for i, piece in enumerate(vocabulary(folder)) if len(piece) > 1)  # a piece of a few characters
    changed = {
        "normalizer": proto + field(3, field(1, b"nmt_nfkc")),
        "no dummy prefix": proto + field(3, field(3, 0)),
        "word-end mark": proto + field(2, field(24, 1)),
        "user-defined piece": appended_to_piece(proto, index, field(3, 4)),
    }[how]
    sentencepiece.SentencePieceProcessor(model_proto=changed)  # SentencePiece reads it
    path.write_bytes(changed)
    said = expected.format(index=index, piece=excerpt(vocabulary(folder)[index]))
    assert refused(folder, capsys) == f"{path}: {said}: it would cut words into other pieces than the run's"


def test_a_score_changed_is_refused_by_the_recorded_digest_and_an_older_folder_loads(level_runs, tmp_path, capsys):
    run = level_runs["sentencepiece_unigram"]
    recorded = json.loads((run / FILE).read_text())["input"]["tokenizer_sha256"]
    assert recorded == hashlib.sha256((run / "sentencepiece.model").read_bytes()).hexdigest()
    # A folder kept before the digest was recorded (no input.tokenizer_sha256) loads and predicts as the run's.
    older = copied(run, tmp_path, "older")
    edit_json(older / FILE, lambda document: document["input"].pop("tokenizer_sha256"))
    assert predicted(older) == predicted(copied(run, tmp_path, "untouched"))
    # A piece's score is all the other checks cannot see: the digest can.
    folder = copied(run, tmp_path)
    path = folder / "sentencepiece.model"
    index = max(i for i, piece in enumerate(vocabulary(folder)) if len(piece) > 1)
    changed = appended_to_piece(path.read_bytes(), index, score_field(-1000.0))
    path.write_bytes(changed)
    actual = hashlib.sha256(changed).hexdigest()
    assert refused(folder, capsys) == (f"{path}: its SHA-256 is {actual[:16]}…, but preprocessing.json's "
                                       f"input.tokenizer_sha256 records {recorded[:16]}…: it is not the file the "
                                       "run kept, and may cut words into other pieces than the run's")


def test_a_digest_that_is_no_digest_is_refused(level_runs, tmp_path, capsys):
    assert predicted(copied(level_runs["bpe"], tmp_path, "untouched"))
    folder = copied(level_runs["bpe"], tmp_path)
    edit_json(folder / FILE, lambda document: document["input"].update(tokenizer_sha256="not a digest"))
    message = refused(folder, capsys)
    assert message.startswith(f"{folder / FILE}: input.tokenizer_sha256: ") and "not a digest" in message, message


# --------------------------------------------------------------------------- bpe.json


def merged_pieces(folder: Path) -> list[str]:
    """vocabulary.json's pieces that merges make (of more than one character, past <pad>, <unk>, <s>, </s>)."""
    return [piece for piece in vocabulary(folder) if len(piece) > 1 and piece not in ("<pad>", "<unk>", "<s>", "</s>")]


def test_a_bpe_json_without_merges_is_refused(level_runs, tmp_path, capsys):
    run = level_runs["bpe"]
    assert predicted(copied(run, tmp_path, "untouched"))
    folder = copied(run, tmp_path)
    edit_json(folder / "bpe.json", lambda document: document.update(merges=[]))
    pieces = merged_pieces(folder)
    # What the refusal prevents: without merges, every word falls into its characters.
    empty = BpeModel(Vocabulary(vocabulary(folder)), [])
    assert all(len(piece) == 1 for piece in empty.pieces([TEXT])[0]), empty.pieces([TEXT])
    assert refused(folder, capsys) == (
        f"{folder / 'bpe.json'}: no merge makes {pieces[0]!r}, piece {vocabulary(folder).index(pieces[0])} of the "
        f"run's vocabulary.json (0 merges make 0 of its {len(pieces)} pieces of more than one character): words "
        "would fall into other pieces than the run's; the two files are not of one run")


def test_bpe_merges_cut_short_or_out_of_order_are_refused(level_runs, tmp_path, capsys):
    run = level_runs["bpe"]
    merges = json.loads((run / "bpe.json").read_text(encoding="utf-8"))["merges"]
    pieces = merged_pieces(run)
    assert [left + right for left, right in merges] == pieces  # the run's: each merge makes the next piece
    assert predicted(copied(run, tmp_path, "untouched"))
    cut = copied(run, tmp_path, "cut")
    edit_json(cut / "bpe.json", lambda document: document.update(merges=merges[:-1]))
    assert refused(cut, capsys) == (
        f"{cut / 'bpe.json'}: no merge makes {pieces[-1]!r}, piece {vocabulary(cut).index(pieces[-1])} of the run's "
        f"vocabulary.json ({len(merges) - 1} merges make {len(pieces) - 1} of its {len(pieces)} pieces of more than "
        "one character): words would fall into other pieces than the run's; the two files are not of one run")
    swapped = copied(run, tmp_path, "swapped")
    edit_json(swapped / "bpe.json", lambda document: document.update(merges=[merges[1], merges[0], *merges[2:]]))
    ids = vocabulary(swapped)
    assert refused(swapped, capsys) == (
        f"{swapped / 'bpe.json'}: merge 1 makes {pieces[1]!r}, piece {ids.index(pieces[1])} of the run's "
        f"vocabulary.json, before any merge makes {pieces[0]!r}, piece {ids.index(pieces[0])}: the merges are not "
        "in the order the run learnt them, and would cut words into other pieces")


def test_a_bpe_json_quotes_a_hostile_piece_as_a_short_escaped_excerpt(level_runs, tmp_path, capsys):
    run = level_runs["bpe"]
    assert predicted(copied(run, tmp_path, "untouched"))
    folder = copied(run, tmp_path)
    hostile = "\x1b[2J\n" + "x" * 100_000  # a terminal escape, a line break, and far too much of it
    edit_json(folder / "bpe.json", lambda document: document.update(merges=[[hostile, "y"], *document["merges"]]))
    message = refused(folder, capsys)
    assert message == (f"{folder / 'bpe.json'}: merge 1 ({excerpt(hostile)} + 'y') makes or uses {excerpt(hostile)}, "
                       "which the run's vocabulary.json lacks: the two files are not of one run")
    assert "\x1b" not in message and len(message) < len(str(folder)) + 200


# --------------------------------------------------------------------------- lengths and numbers


@pytest.fixture
def transformer_seq2seq(trained_runs, tmp_path):
    """(a copy of the session's transformer_seq2seq run to change, an untouched copy's outputs)."""
    run = trained_runs.run_folder(TRANSFORMER_SEQ2SEQ)
    outputs = predicted(copied(run, tmp_path, "untouched"), "abab")
    assert len(outputs) == 1
    return copied(run, tmp_path), outputs


def test_an_output_length_past_the_target_position_table_is_refused(transformer_seq2seq, tmp_path, capsys):
    folder, outputs = transformer_seq2seq
    kept = seqkeras.load_model(folder)
    table = kept.model.config["target_positions"]
    assert kept.shape.output_positions == table
    # At the table's size, it loads and predicts (a decoder writes up to max_output_length positions).
    edit_json(folder / FILE, lambda document: document["output"].update(max_output_length=table))
    assert len(predicted(folder, "abab")) == 1
    edit_json(folder / FILE, lambda document: document["output"].update(max_output_length=table + 1))
    assert refused(folder, capsys, "abab") == (
        f"{folder / 'model.keras'}: the model writes at most {table} output positions (its target position table "
        f"and caches) but preprocessing.json's output.max_output_length is {table + 1}")


def test_a_source_length_past_the_position_table_is_refused(transformer_seq2seq, capsys):
    folder, _ = transformer_seq2seq
    table = seqkeras.load_model(folder).model.config["source_positions"]
    edit_json(folder / FILE, lambda document: document["input"].update(max_length=table + 1))
    assert refused(folder, capsys, "abab") == (
        f"{folder / 'model.keras'}: the model reads at most {table} tokens (its position table) but "
        f"preprocessing.json's input.max_length is {table + 1}")


@pytest.mark.parametrize(("field_name", "value", "shown"), [
    ("output.max_output_length", 2**31, "2147483648"),
    ("input.max_length", 10**30, "100000000000000000000000… (31 characters)"),
    ("output.context", 2**63, "9223372036854775808"),
])
def test_a_length_past_int32_is_refused_naming_the_field(transformer_seq2seq, capsys, field_name, value, shown):
    folder, _ = transformer_seq2seq
    side, key = field_name.split(".")
    edit_json(folder / FILE, lambda document: document[side].update({key: value}))
    assert refused(folder, capsys, "abab") == (f"{folder / FILE}: {field_name} is {shown}, past the largest int32 "
                                               "(2,147,483,647), which lengths are read as")


def test_a_length_that_is_infinite_in_json_is_refused(transformer_seq2seq, capsys):
    folder, _ = transformer_seq2seq
    text = (folder / FILE).read_text(encoding="utf-8")
    document = json.loads(text)
    document["input"]["max_length"] = 0  # a placeholder replaced by a number JSON reads as float infinity
    (folder / FILE).write_text(json.dumps(document).replace('"max_length": 0', '"max_length": 1e400'),
                               encoding="utf-8")
    message = refused(folder, capsys, "abab")
    assert message.startswith(f"{folder / FILE}: input.max_length: ") and "preprocessing.json" in message, message


@pytest.mark.parametrize("seed", [2**40, -1, "zero", True])
def test_a_seed_that_is_no_runs_seed_is_refused_naming_spec_yaml(transformer_seq2seq, capsys, seed):
    folder, _ = transformer_seq2seq
    spec = yaml.safe_load((folder / "spec.yaml").read_text(encoding="utf-8"))
    spec["seed"] = seed
    (folder / "spec.yaml").write_text(yaml.safe_dump(spec), encoding="utf-8")
    kept = seqkeras.load_model(folder)  # spec.yaml's seed is read where it is used
    with pytest.raises(SpecError) as raised:
        kept.predict(["abab"])
    expected = {2**40: "1099511627776", -1: "-1", "zero": "'zero'", True: "True"}[seed]
    assert str(raised.value) == (f"{folder / 'spec.yaml'}: seed is {expected}, not a run's seed (a whole number "
                                 "from 0 to 999,999)")


@pytest.mark.parametrize(("key", "value"), [("model_kind", "\x1b]0;title\x07" + "k" * 10_000),
                                            ("start", "\x1b[31m" + "<" * 10_000)])
def test_a_preprocessing_value_is_quoted_as_a_short_escaped_excerpt(transformer_seq2seq, capsys, key, value):
    folder, _ = transformer_seq2seq
    if key == "model_kind":
        edit_json(folder / FILE, lambda document: document.update(model_kind=value))
        expected = f"{folder / FILE}: model_kind {excerpt(value)} is not a model kind of this seqkeras ("
    else:
        edit_json(folder / FILE, lambda document: document["output"].update(start=value))
        expected = f"{folder / FILE}: target_vocabulary.json has no start token {excerpt(value)} (output.start)"
    message = refused(folder, capsys, "abab")
    assert message.startswith(expected), message
    assert "\x1b" not in message and "\x07" not in message and "k" * 100 not in message and "<" * 100 not in message


def test_a_loaders_error_that_quotes_the_file_is_escaped():
    """A loader's error may quote the file it could not read (Keras names the class it could not find): its first
    line only, at most 200 characters, control characters escaped."""
    from seqkeras.kept.consistency import one_line

    quoted = one_line(ValueError("Could not locate class '\x1b[2J" + "E" * 1000 + "'\nFull object config: {...}"))
    assert quoted == ("Could not locate class '\\x1b[2J" + "E" * 1000)[: len(quoted)] and len(quoted) <= 210
    assert "\x1b" not in quoted and "config" not in quoted
    assert one_line(ValueError("not a seqkeras n-gram model")) == "not a seqkeras n-gram model"
