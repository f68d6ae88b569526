"""Validation data for every file task (tasks.validation): a file or a seeded share of the training part.

The test split never gives validation examples; the trainer uses the task's validation data as Keras's
validation_data (val_* in the history, early stopping on it); one source of validation data per spec; and
runs that set none of the new keys keep their resolved spec, so their run ids.
"""

from __future__ import annotations

import json

import pandas as pd
import pytest

from seqkeras.errors import SpecError
from seqkeras.spec.loader import build_experiment
from seqkeras.tasks import char_lm, files, lm_corpus
from seqkeras.tasks.validation import hold_out
from tests.helpers import process_backend, run_cli

ROWS = [(f"text number {i} is {'good' if i % 2 else 'bad'}", "pos" if i % 2 else "neg") for i in range(30)]
CONLL = "".join(f"w{i} B-X\nsaw O\nit O\n\n" for i in range(20))
LINES = "".join(f"line {i} of the text, more or less.\n" for i in range(40))


def csv_file(path, rows=ROWS):
    path.write_text("text,label\n" + "".join(f"{text},{label}\n" for text, label in rows), encoding="utf-8")
    return path


def test_a_share_is_seeded_keeps_at_least_one_example_on_each_side_and_the_order():
    examples = list(range(10))
    train, validation = hold_out(examples, 0.3, seed=4, what="x")
    assert (train, validation) == hold_out(examples, 0.3, seed=4, what="x")
    assert len(validation) == 3 and sorted(train + validation) == examples and train == sorted(train)
    assert len(hold_out(examples, 0.01, seed=0, what="x")[1]) == 1
    assert len(hold_out(examples, 0.99, seed=0, what="x")[0]) == 1
    with pytest.raises(SpecError, match="x has 1 training example"):
        hold_out([1], 0.5, seed=0, what="x")


@pytest.mark.parametrize("read, content", [
    (lambda p: files.read_labelled_texts(p, "text", "label"), None),
    (files.read_conll, CONLL),
])
def test_a_validation_share_comes_from_the_training_part_and_leaves_the_test_split_as_it_was(tmp_path, read,
                                                                                             content):
    path = tmp_path / "data.txt"
    csv_file(path) if content is None else path.write_text(content, encoding="utf-8")
    params_class = files.TextClassificationParams if content is None else files.ConllParams
    plain = params_class(path=str(path), test_share=0.3)
    shared = params_class(path=str(path), test_share=0.3, validation_share=0.25)
    train, test, validation = files._train_test(plain, 7, read, str(path))
    train_v, test_v, validation_v = files._train_test(shared, 7, read, str(path))
    assert validation == [] and test_v == test  # the test split does not move when validation is asked for
    assert len(validation_v) == round(len(train) * 0.25)
    assert sorted(map(repr, train_v + validation_v)) == sorted(map(repr, train))  # taken from training only
    assert not {repr(e) for e in validation_v} & {repr(e) for e in test_v}


def test_file_tasks_build_validation_arrays_from_a_file_or_a_share(tmp_path):
    data_file, validation_file = csv_file(tmp_path / "data.csv"), csv_file(tmp_path / "valid.csv", ROWS[:4])
    data = files.build_text_classification(
        files.TextClassificationParams(path=str(data_file), validation_path=str(validation_file)), seed=0)
    labels = [data.labels.index[label] for _, label in ROWS[:4]]
    assert data.x_validation.shape[0] == 4 and list(data.y_validation) == labels
    conll = tmp_path / "train.conll"
    conll.write_text(CONLL, encoding="utf-8")
    tagged = files.build_conll(files.ConllParams(path=str(conll), validation_share=0.25), seed=0)
    assert tagged.x_validation.shape == (4, tagged.x_train.shape[1]) and tagged.y_validation.shape == (4, 3)
    assert tagged.x_train.shape[0] == 12 and tagged.x_test.shape[0] == 4


def test_language_model_files_give_validation_windows_without_moving_the_test_windows(tmp_path):
    text = tmp_path / "text.txt"
    text.write_text(LINES, encoding="utf-8")
    plain = lm_corpus.build(lm_corpus.Params(corpus="path", path=str(text), context=4), seed=0)
    shared = lm_corpus.build(lm_corpus.Params(corpus="path", path=str(text), context=4, validation_share=0.2),
                             seed=0)
    assert plain.x_validation is None and shared.x_validation.shape[1] == 4
    assert (shared.test_stream == plain.test_stream).all()  # the same test text, read the same way
    assert len(shared.train_stream) < len(plain.train_stream)
    chars = char_lm.build(char_lm.Params(path=str(text), seq_length=8, n_train=20, n_test=5,
                                         validation_path=str(text)), seed=0)
    assert chars.x_validation.shape == (5, 8) and chars.y_validation.shape == (5, 8)
    same = char_lm.build(char_lm.Params(path=str(text), seq_length=8, n_train=20, n_test=5), seed=0)
    assert (same.x_test == chars.x_test).all() and (same.x_train == chars.x_train).all()


def spec(task: dict, train: dict | None = None) -> dict:
    return {"version": 1, "name": "mine", "task": task, "model": {"kind": "classifier"},
            **({"train": train} if train is not None else {})}


def test_one_source_of_validation_data(tmp_path):
    path = str(csv_file(tmp_path / "data.csv"))
    with pytest.raises(SpecError, match="either task.validation_path .* or task.validation_share") as caught:
        build_experiment(spec({"name": "text_classification_file", "path": path, "validation_path": path,
                               "validation_share": 0.1}), source="s.yaml", overrides=[])
    assert caught.value.path == "task.validation_share"
    with pytest.raises(SpecError, match=r"task.validation_path and train.validation_split \(0.1\) both give") as caught:
        build_experiment(spec({"name": "text_classification_file", "path": path, "validation_path": path},
                              {"validation_split": 0.1}), source="s.yaml", overrides=[])
    assert caught.value.path == "task.validation_path"


def test_early_stopping_on_val_needs_validation_data_from_the_train_section_or_the_task(tmp_path):
    path = str(csv_file(tmp_path / "data.csv"))
    stopping = {"early_stopping": {"monitor": "val_loss"}}
    with pytest.raises(SpecError, match=r"monitors 'val_loss', which needs validation data: "
                                        r"train.validation_split > 0, or the task's task.validation_path") as caught:
        build_experiment(spec({"name": "text_classification_file", "path": path}, stopping), source="s.yaml",
                         overrides=[])
    assert caught.value.path == "train.early_stopping.monitor"
    with pytest.raises(SpecError, match=r"train.validation_split > 0$"):  # a task without: no task keys offered
        build_experiment(spec({"name": "delayed_recall"}, stopping), source="s.yaml", overrides=[])
    for task, train in [({"name": "text_classification_file", "path": path, "validation_share": 0.2}, stopping),
                        ({"name": "delayed_recall"}, {**stopping, "validation_split": 0.2})]:
        assert build_experiment(spec(task, train), source="s.yaml", overrides=[]).runs


def test_runs_without_the_new_keys_keep_their_resolved_spec_and_run_id(tmp_path):
    path = str(csv_file(tmp_path / "data.csv"))
    (plain,) = build_experiment(spec({"name": "text_classification_file", "path": path}), source="s.yaml",
                                overrides=[]).runs
    assert not {"validation_path", "validation_share"} & set(plain.resolved["task"])
    (shared,) = build_experiment(spec({"name": "text_classification_file", "path": path, "validation_share": 0.2}),
                                 source="s.yaml", overrides=[]).runs
    assert shared.resolved["task"]["validation_share"] == 0.2 and shared.run_id != plain.run_id
    assert {key: value for key, value in shared.resolved["task"].items() if key != "validation_share"} \
        == plain.resolved["task"]


def test_early_stopping_watches_the_validation_file_of_a_run(tmp_path, write_spec, capsys):
    data_file, validation_file = csv_file(tmp_path / "data.csv"), csv_file(tmp_path / "valid.csv", ROWS[:6])
    path = write_spec(f"""
        version: 1
        name: validated
        task: {{name: text_classification_file, path: {json.dumps(str(data_file))},
                validation_path: {json.dumps(str(validation_file))}, min_count: 1}}
        model: {{kind: classifier, cell: gru, units: 4, embedding_dim: 4}}
        train: {{epochs: 3, batch_size: 8, verbose: 0, optimizer: {{learning_rate: 1.0e-9}},
                 early_stopping: {{monitor: val_loss, patience: 1}}}}
    """)
    code, out, err = run_cli(capsys, "run", path, "--out", tmp_path / "out", "--backend", process_backend())
    assert code == 0, out + err
    (folder,) = [p for p in (tmp_path / "out" / "validated").iterdir() if p.is_dir()]
    history = pd.read_csv(folder / "history.csv")
    assert "val_loss" in history.columns and history["val_loss"].notna().all()
    # A learning rate of 1e-9 changes nothing a float32 loss can show: the first epoch stays the best, and the
    # second without improvement stops the run (patience 1), before its third epoch.
    assert len(history) == 2
    identity = json.loads((folder / "metrics.json").read_text(encoding="utf-8"))["identity"]
    assert "task.validation_path" in json.dumps(identity)  # the validation file is part of the run's identity
