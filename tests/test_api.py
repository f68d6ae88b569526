"""The Python API: seqkeras.run and seqkeras.load give DataFrames, with the command line's validation and errors."""

from __future__ import annotations

import shutil

import pandas as pd
import pytest
import yaml

import seqkeras
from seqkeras.errors import SpecError
from seqkeras.results.folder import read_runs
from tests.conftest import TINY_TRAINING_SPEC


def tiny_mapping() -> dict:
    return yaml.safe_load(TINY_TRAINING_SPEC)


def test_run_a_spec_file_and_read_its_runs_tables_and_verdicts(tiny_spec, tmp_path):
    results = seqkeras.run(tiny_spec, out=tmp_path / "out", overrides={"task.n_train": 48})
    folder = tmp_path / "out" / "tiny"
    assert results.folder == folder and results.name == "tiny"
    # .runs is runs.csv as the suite wrote it, as `load` reads it back; the override reached every run.
    pd.testing.assert_frame_equal(results.runs, read_runs(folder))
    loaded = seqkeras.load(folder)
    pd.testing.assert_frame_equal(loaded.runs, results.runs)
    pd.testing.assert_frame_equal(loaded.verdicts, results.verdicts)
    assert len(results.runs) == 4 and set(results.runs["status"]) == {"ok"}
    assert all("n_train: 48" in (folder / run_id / "spec.yaml").read_text() for run_id in results.runs["run_id"])
    # The spec's table, titled as in table.md, as numbers: each cell's mean, std and n over the two seeds.
    [(title, table)] = results.tables.items()
    assert title in (folder / "table.md").read_text()
    assert list(table.columns) == ["model.cell", "accuracy mean", "accuracy std", "accuracy n"]
    assert list(table["model.cell"]) == ["simple_rnn", "lstm"] and list(table["accuracy n"]) == [2, 2]
    lstm = results.runs[results.runs["model.cell"] == "lstm"]["accuracy"]
    assert (table["accuracy mean"][1] == pytest.approx(lstm.mean())
            and table["accuracy std"][1] == pytest.approx(lstm.std()))
    assert list(results.verdicts["claim"]) == ["accuracy is a share"] and results.verdicts["holds"].tolist() == [True]
    assert results.ok and "1 of 1 claim(s) reproduced" in repr(results)
    # An ad-hoc pivot, as `seqkeras table --rows --value` prints it.
    pivot = results.table(rows="seed", columns="model.cell", value="accuracy")
    assert list(pivot.columns) == ["seed", *(f"{cell} {stat}" for cell in ("simple_rnn", "lstm")
                                             for stat in ("mean", "std", "n"))]


def test_load_reads_what_run_wrote_and_a_rerun_reuses_it(tiny_spec, tmp_path, capsys, trained_runs):
    # The tiny runs as `seqkeras.run` wrote them, trained once per session (tests/trained_runs.py), cut to the
    # seed-0 runs, as a first `only=["seed=0"]` run leaves the folder: that run rewrites runs.csv from their
    # records. (A fresh run's results read back by `load`: test_run_a_spec_file_and_read_its_runs_tables_and_verdicts.)
    folder = trained_runs.copied_experiment(TINY_TRAINING_SPEC, tmp_path)
    for run_folder in folder.glob("*_seed=1_*"):
        shutil.rmtree(run_folder)
    (folder / "runs.csv").unlink()
    first = seqkeras.run(tiny_spec, out=tmp_path, only=["seed=0"])
    assert sorted(first.runs["seed"]) == [0, 0]
    loaded = seqkeras.load(tmp_path / "tiny")
    pd.testing.assert_frame_equal(loaded.runs, first.runs)
    pd.testing.assert_frame_equal(loaded.verdicts, first.verdicts)
    capsys.readouterr()
    again = seqkeras.run(tiny_spec, out=tmp_path, only=["seed=0"])
    assert "2 of 2 runs done before, reused" in capsys.readouterr().out
    pd.testing.assert_frame_equal(again.runs, first.runs)


def test_run_a_spec_given_as_a_mapping(tmp_path):
    spec = tiny_mapping()
    spec["name"] = "from-a-dict"
    results = seqkeras.run(spec, out=tmp_path, only=["seed=1", "model.cell=lstm"])
    assert results.folder == tmp_path / "from-a-dict"
    assert results.runs[["model.cell", "seed", "status"]].values.tolist() == [["lstm", 1, "ok"]]
    assert spec == {**tiny_mapping(), "name": "from-a-dict"}  # the caller's mapping is left as it was


@pytest.mark.parametrize("edit, expected", [
    (lambda s: s["model"].update(unts=4), "<dict>: model.unts: unknown key 'unts'. Did you mean 'units'?"),
    (lambda s: s["train"].update(epochs=0), "<dict>: train.epochs"),
])
def test_a_mistake_in_a_mapping_is_a_spec_error_naming_the_key_and_nothing_runs(tmp_path, edit, expected):
    spec = tiny_mapping()
    edit(spec)
    with pytest.raises(SpecError) as raised:
        seqkeras.run(spec, out=tmp_path)
    assert str(raised.value).startswith(expected)
    assert not any(tmp_path.iterdir())


def test_bad_overrides_paths_and_folders_are_spec_errors(tiny_spec, tmp_path):
    with pytest.raises(SpecError, match=r"spec.yaml: model.unts"):
        seqkeras.run(tiny_spec, out=tmp_path / "out", overrides={"model.unts": 3})
    with pytest.raises(SpecError, match="no such file"):
        seqkeras.run(tmp_path / "missing.yaml", out=tmp_path / "out")
    with pytest.raises(SpecError, match="is a folder"):
        seqkeras.run(tmp_path, out=tmp_path / "out")
    with pytest.raises(SpecError, match="not a results folder"):
        seqkeras.load(tmp_path / "nothing-here")
    assert not (tmp_path / "out").exists()


@pytest.mark.tensorflow  # the lesson's experiment, computed on TensorFlow
def test_the_documented_example_runs(tmp_path, monkeypatch, capsys):
    """docs/python-api.md's example, as written, from a folder holding the spec it names."""
    import re
    import shutil

    from tests.conftest import REPO

    text = (REPO / "docs" / "python-api.md").read_text(encoding="utf-8")
    # The first example runs and loads; the later ones use a kept model of the reader's own runs
    # (tests/test_kept_models.py and tests/test_predict.py run those calls on runs of their own).
    code = re.findall(r"```python\n(.*?)```", text, flags=re.S)[0]
    (tmp_path / "experiments" / "lesson").mkdir(parents=True)
    shutil.copy(REPO / "experiments" / "lesson" / "memory_lstm.yaml", tmp_path / "experiments" / "lesson")
    monkeypatch.chdir(tmp_path)
    names: dict = {}
    exec(compile(code, "docs/python-api.md", "exec"), names)
    results = names["results"]
    assert repr(results) == re.search(r"^results +# (Results\(.*\))$", code, flags=re.M)[1]
    assert list(names["again"].runs["run_id"]) == list(results.runs["run_id"])
    # The claims about the forget biases `only` left out are not checked; the three about bias 5 hold.
    assert names["failed"].empty
