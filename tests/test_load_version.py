"""`seqkeras.load` of a results folder whose experiment.yaml is of a newer spec format (`version: 2`) says so,
with the very line `seqkeras table` prints: both read the saved spec through
reporting.saved_spec.read_saved_experiment, whose `newer_format` words the warning, and print it on stderr as
every warning of the API and the command line is printed ("warning: ..."). A folder of this version's format
is read without a word.

The folder is written by hand (runs.csv and experiment.yaml); nothing trains. tests/test_failed_reruns.py checks
the same on a trained folder, with an unknown section too.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
import yaml

import seqkeras
from tests.helpers import run_cli


def results(root: Path, version) -> Path:
    folder = root / "exp"
    folder.mkdir(parents=True)
    pd.DataFrame([{"experiment": "exp", "run_id": f"cell={cell}_seed={seed}_0000", "status": "ok",
                   "model.cell": cell, "seed": seed, "accuracy": 0.8 + 0.01 * seed, "params": 100,
                   "train_seconds": 1.0, "backend": "torch", "error": ""}
                  for cell in ("simple_rnn", "lstm") for seed in range(3)]).to_csv(folder / "runs.csv", index=False)
    document = {"version": version, "name": "exp", "task": {"name": "delayed_recall", "lag": 5},
                "model": {"kind": "classifier", "units": 8}, "train": {"epochs": 4},
                "matrix": {"model.cell": ["simple_rnn", "lstm"]}, "seeds": [0, 1, 2],
                "table": {"rows": "model.cell", "value": "accuracy"}}
    (folder / "experiment.yaml").write_text(yaml.safe_dump(document), encoding="utf-8")
    return folder


@pytest.mark.parametrize("version", [2, "2.0"])
def test_load_of_a_newer_spec_format_warns_with_the_line_the_command_line_prints(tmp_path, capsys, version):
    folder = results(tmp_path, version)
    loaded = seqkeras.load(folder)
    err = capsys.readouterr().err.splitlines()
    assert err == [f"warning: {folder / 'experiment.yaml'}: spec format version {version!r}, this seqkeras reads "
                   "version 1: its tables and claims are read as that version's"]
    assert len(loaded.runs) == 6 and list(loaded.tables) == ["accuracy by model.cell"]  # read all the same
    code, out, table_err = run_cli(capsys, "table", folder)
    assert code == 0 and "lstm" in out
    assert table_err.splitlines() == err  # one check, one text: the command line says the same


def test_load_of_this_version_s_format_says_nothing(tmp_path, capsys):
    seqkeras.load(results(tmp_path, 1))
    assert capsys.readouterr().err == ""
