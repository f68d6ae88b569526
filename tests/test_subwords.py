"""A text classification task's `level`: characters and WordPiece subwords learnt from the training split alone
(tasks.subwords), recorded with the run and kept with its model (kept.preprocessing, split `wordpiece`)."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
import yaml

import seqkeras
from seqkeras.spec.loader import build_experiment
from seqkeras.tasks import files
from seqkeras.tasks.base import UNK
from tests.helpers import run_cli

# Words that share pieces (play, ##ing, ##ed), so the learnt vocabulary has subwords and whole words.
TRAIN = [("playing games is great fun", "pos"), ("played well, great game", "pos"), ("a great player", "pos"),
         ("boring games are dull", "neg"), ("dull and boring play", "neg"), ("a boring, dull player", "neg")] * 3
TEST = [("zyzzyva zyzzyva zyzzyva great", "pos"), ("zyzzyva dull", "neg")] * 4
VALIDATION = [("quokka quokka playing", "pos"), ("quokka boring", "neg")]
# What keras-hub's trainer learns from TRAIN with 64 pieces: the letters alone and as ##suffixes, the frequent
# words whole. Written out so that every backend's process checks it learns this one (tests/torch_backend).
WORDPIECE_VOCABULARY_64 = ["<pad>", "<unk>", *"abdefgilmnoprstuwy", "##s", "boring", "dull", "great",
                           *(f"##{letter}" for letter in "abdefgilmnoprtuwy")]


def write_csv(path, rows):
    path.write_text("text,label\n" + "".join(f'"{text}",{label}\n' for text, label in rows), encoding="utf-8")
    return str(path)


@pytest.fixture
def data_files(tmp_path):
    return {"path": write_csv(tmp_path / "train.csv", TRAIN), "test_path": write_csv(tmp_path / "test.csv", TEST),
            "validation_path": write_csv(tmp_path / "validation.csv", VALIDATION)}


def wordpiece_data(data_files, vocabulary_size=64):
    return files.build_text_classification(
        files.TextClassificationParams(level="wordpiece", vocabulary_size=vocabulary_size, **data_files), seed=0)


def test_the_wordpiece_vocabulary_comes_from_the_training_split_only(data_files):
    data = wordpiece_data(data_files)
    tokens = data.vocabulary.tokens
    assert tokens[:2] == ["<pad>", UNK] and len(tokens) <= 64
    assert {"great", "dull", "boring"} <= set(tokens)  # frequent training words are whole pieces
    assert any(token.startswith("##") for token in tokens)  # and there are subword pieces
    # Words only the test or validation file holds never become pieces; their characters are not all
    # training characters, so each such word is <unk>.
    assert not {"zyzzyva", "quokka"} & set(tokens)
    test_row = data.x_test[0][data.x_test[0] != 0]
    assert test_row.tolist() == [1, 1, 1, data.vocabulary.index["great"]]
    assert data.x_validation is not None and 1 in data.x_validation[0]


def test_the_same_training_texts_give_the_same_vocabulary_and_ids(data_files):
    first, second = wordpiece_data(data_files), wordpiece_data(data_files)
    assert first.vocabulary.tokens == second.vocabulary.tokens == WORDPIECE_VOCABULARY_64
    np.testing.assert_array_equal(first.x_train, second.x_train)
    np.testing.assert_array_equal(first.x_test, second.x_test)
    # A smaller budget is honoured.
    assert len(wordpiece_data(data_files, vocabulary_size=32).vocabulary) <= 32


def test_level_char_makes_each_standardized_character_a_token(data_files):
    data = files.build_text_classification(files.TextClassificationParams(level="char", **data_files), seed=0)
    assert all(len(token) == 1 for token in data.vocabulary.tokens[2:]) and "," not in data.vocabulary.tokens
    first = data.vocabulary.decode(data.x_train[0].tolist())
    assert "".join(first) == "playing games is great fun"


def test_defaults_keep_the_resolved_spec_and_run_ids(data_files):
    params = files.TextClassificationParams(path=data_files["path"])
    # Neither the tokenizer keys nor the validation keys (a second base's) are hashed at their defaults.
    assert not {"level", "vocabulary_size", "validation_path", "validation_share"} & set(params.hashed())

    def run_ids(task):
        raw = {"version": 1, "name": "ids", "task": task, "model": {"kind": "classifier"}, "seeds": [0]}
        return [run.run_id for run in build_experiment(raw, source="spec.yaml", overrides=[]).runs]

    default = run_ids({"name": "text_classification_file", "path": data_files["path"]})
    assert run_ids({"name": "text_classification_file", "path": data_files["path"], "level": "word"}) == default
    assert run_ids({"name": "text_classification_file", "path": data_files["path"], "level": "wordpiece"}) != default


def test_a_matrix_value_at_its_default_is_its_value_in_the_runs(data_files):
    # `level: word` is left out of the resolved spec (the run ids of specs without it stand), yet a matrix point
    # that names it is `word` in runs.csv, not blank; a key the point does not set stays blank.
    raw = {"version": 1, "name": "levels", "task": {"name": "text_classification_file", "path": data_files["path"]},
           "model": {"kind": "classifier"}, "seeds": [0],
           "matrix": {"task": [{"level": "word"}, {"level": "wordpiece", "vocabulary_size": 64}]}}
    runs = build_experiment(raw, source="spec.yaml", overrides=[]).runs
    assert [run.matrix_values for run in runs] == [{"task.level": "word", "task.vocabulary_size": None},
                                                   {"task.level": "wordpiece", "task.vocabulary_size": 64}]
    assert "level" not in runs[0].resolved["task"]


@pytest.mark.parametrize(("task", "message"), [
    ({"level": "wordpiece", "vocabulary_size": 5}, "task.vocabulary_size: .*greater than or equal to 32"),
    ({"level": "wordpiece", "vocabulary_size": 100.5}, "task.vocabulary_size: .*integer"),
    ({"vocabulary_size": 100}, "task.vocabulary_size: vocabulary_size applies only to level wordpiece, .*, not 'word'"),
    ({"level": "wordpiece", "max_tokens": 100}, "task.max_tokens: max_tokens applies to level word and char"),
    ({"level": "subword"}, "task.level: .*word.*char.*wordpiece"),
])
def test_bad_tokenizer_keys_exit_2_at_validate_with_one_line(tmp_path, capsys, data_files, task, message):
    spec = tmp_path / "spec.yaml"
    spec.write_text(yaml.safe_dump({"version": 1, "name": "bad", "model": {"kind": "classifier"},
                                    "task": {"name": "text_classification_file", "path": data_files["path"], **task}}))
    code, out, err = run_cli(capsys, "validate", spec)
    assert code == 2
    assert len(err.strip().splitlines()) == 1, err
    assert re.search(message, err), err


def test_wordpiece_for_a_tagging_task_exits_2_saying_why(tmp_path, capsys):
    # Tags are per word: a tagging corpus is read as its words (tests/test_subwords_tasks.py has the other keys).
    data = tmp_path / "data.txt"
    data.write_text("a O\n", encoding="utf-8")
    spec = tmp_path / "spec.yaml"
    spec.write_text(yaml.safe_dump({"version": 1, "name": "bad", "model": {"kind": "tagger"},
                                    "task": {"name": "conll_file", "level": "wordpiece", "path": str(data)}}))
    code, out, err = run_cli(capsys, "validate", spec)
    assert code == 2
    assert re.search(r"task.level: a tagging task tokenizes by word only", err), err


def test_a_wordpiece_run_keeps_its_vocabulary_and_predicts_as_its_model(tmp_path, capsys, data_files):
    spec = tmp_path / "spec.yaml"
    spec.write_text(yaml.safe_dump({
        "version": 1, "name": "pieces",
        "task": {"name": "text_classification_file", "path": data_files["path"], "test_path": data_files["test_path"],
                 "level": "wordpiece", "vocabulary_size": 48},
        "model": {"kind": "classifier", "cell": "gru", "units": 4, "embedding_dim": 4},
        "train": {"epochs": 1, "batch_size": 8, "verbose": 0},
        "evaluate": {"metrics": ["accuracy"]}, "seeds": [0],
    }))
    out = tmp_path / "results"
    code, _, err = run_cli(capsys, "run", spec, "--out", out)
    assert code == 0, err
    (folder,) = [p for p in (out / "pieces").iterdir() if p.is_dir()]
    # Recorded: the resolved spec names the tokenizer, vocabulary.json is the learnt vocabulary.
    assert yaml.safe_load((folder / "spec.yaml").read_text())["task"]["level"] == "wordpiece"
    vocabulary = json.loads((folder / "vocabulary.json").read_text())
    assert any(token.startswith("##") for token in vocabulary)
    assert json.loads((folder / "preprocessing.json").read_text())["input"]["split"] == "wordpiece"

    kept = seqkeras.load_model(folder)
    assert kept.preprocessing.vocabulary.tokens == vocabulary
    texts = ["Playing great games!", "dull, boring zyzzyva"]
    encoded = kept.encode(texts)
    # Standardized, then split into pieces that spell each word; a word no pieces spell is <unk>.
    assert "great" in encoded.tokens[0] and any(piece.startswith("##") for piece in encoded.tokens[0])
    assert "".join(piece.removeprefix("##") for piece in encoded.tokens[0]) == "playinggreatgames"
    assert encoded.tokens[1] == ["dull", "boring", UNK] and encoded.unknown == [[], [UNK]]
    # The kept model splits the test texts into the ids the run trained and tested on.
    rebuilt = files.build_text_classification(files.TextClassificationParams(
        path=data_files["path"], test_path=data_files["test_path"], level="wordpiece", vocabulary_size=48), seed=0)
    assert rebuilt.vocabulary.tokens == vocabulary
    test_ids = kept.encode([text for text, _ in TEST]).ids
    np.testing.assert_array_equal(test_ids, rebuilt.x_test[:, : test_ids.shape[1]])

    code, stdout, err = run_cli(capsys, "predict", folder, "--text", texts[0], "--text", texts[1], "--format", "jsonl")
    assert code == 0, err
    labels = [json.loads(line)["label"] for line in stdout.splitlines()]
    probabilities = kept.model.predict(encoded.ids, verbose=0)
    assert labels == kept.preprocessing.labels_of(probabilities.argmax(-1))


@pytest.mark.parametrize(("level", "split"), [("char", "characters"), ("wordpiece", "wordpiece")])
def test_a_kept_models_preprocessing_encodes_the_training_texts_as_the_task_did(data_files, level, split):
    from seqkeras.kept.preprocessing import Preprocessing

    params = files.TextClassificationParams(level=level, **data_files)
    data = files.build_text_classification(params, seed=0)
    preprocessing = Preprocessing.of_run("text_classification_file", params, data, "classifier", backend="tensorflow")
    assert preprocessing.document.input.split == split
    ids = preprocessing.encode([text for text, _ in TRAIN]).ids
    np.testing.assert_array_equal(ids, data.x_train[:, : ids.shape[1]])
    assert not data.x_train[:, ids.shape[1]:].any()
