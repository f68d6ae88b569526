"""A run's identity covers every file its task reads: an edited file is run again, and the sweep names it."""

from __future__ import annotations

import json

from seqkeras.catalog import TASKS
from tests.helpers import run_cli

TRAIN = "text,label\n" + "".join(f"good film {i},pos\nbad film {i},neg\n" for i in range(12))
TEST = "text,label\n" + "".join(f"good show {i},pos\nbad show {i},neg\n" for i in range(4))


def file_spec(path: str, test_path: str) -> str:
    return f"""
        version: 1
        name: reviews
        task: {{name: text_classification_file, path: '{path}', test_path: '{test_path}'}}
        model: {{kind: classifier, cell: gru, units: 4, embedding_dim: 4}}
        train: {{epochs: 1, batch_size: 16, verbose: 0}}
        seeds: [0]
    """


def data_files(folder):
    train, test = folder / "train.csv", folder / "test.csv"
    train.write_text(TRAIN)
    test.write_text(TEST)
    return train, test


def recorded_identity(out):
    (record,) = (out / "reviews").glob("*/metrics.json")
    return json.loads(record.read_text())["identity"]


def test_an_edited_test_file_is_run_again_and_named(write_spec, tmp_path, capsys):
    train, test = data_files(tmp_path)
    spec, out = write_spec(file_spec(str(train), str(test))), tmp_path / "out"
    assert run_cli(capsys, "run", spec, "--out", out).code == 0
    test.write_text(TEST.replace("good show 2,pos", "good show 2,neg"))  # same size: only the contents tell
    code, stdout, _ = run_cli(capsys, "run", spec, "--out", out)
    assert code == 0
    assert f"recorded under a different task.test_path file ({test} changed); running it again" in stdout
    assert "done before, reused" not in stdout
    assert run_cli(capsys, "run", spec, "--out", out, "--dry-run").out.endswith("0 to run, 1 reused\n")


def test_a_home_relative_path_is_hashed_and_its_edit_noticed(write_spec, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    train, _ = data_files(tmp_path)
    spec, out = write_spec(file_spec("~/train.csv", "~/test.csv")), tmp_path / "out"
    assert run_cli(capsys, "run", spec, "--out", out).code == 0
    identity = recorded_identity(out)
    assert identity["task.path"].startswith("sha256:") and identity["task.test_path"].startswith("sha256:")
    train.write_text(TRAIN + "fine film,pos\n")
    stdout = run_cli(capsys, "run", spec, "--out", out, "--dry-run").out
    assert f"task.path file ({train} changed)" in stdout and "1 to run, 0 reused" in stdout
    assert "test_path" not in stdout  # the file that did not change is not named


def test_unchanged_files_are_reused_even_when_rewritten(write_spec, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    train, test = data_files(tmp_path)
    spec, out = write_spec(file_spec("~/train.csv", str(test))), tmp_path / "out"
    assert run_cli(capsys, "run", spec, "--out", out).code == 0
    assert {"task.path", "task.test_path"} <= set(recorded_identity(out))
    train.write_text(TRAIN)  # new time stamps, the same contents
    test.write_text(TEST)
    code, stdout, _ = run_cli(capsys, "run", spec, "--out", out)
    assert code == 0 and "1 of 1 runs done before, reused" in stdout and "running it again" not in stdout


def test_every_task_with_a_file_key_lists_its_files():
    # The identity hashes what a task's Params.input_files() lists: a new file key must be listed there.
    for task in TASKS:
        keys = [name for name in task.params.model_fields if name == "path" or name.endswith("_path")]
        if keys:
            assert hasattr(task.params, "input_files"), f"{task.name} reads {keys} but lists no input_files"
