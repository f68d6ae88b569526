"""`where: {key: null}` selects the runs where the key is unset, in validation and in the results alike.

A matrix entry may leave a key out (the adding experiment's SimpleRNN has no `model.chrono`): its runs have no
value there in the spec's rows and an empty cell in runs.csv. `null` asks for exactly those runs, so a claim
about them is checked, never reported as "no finished run"; a value no run has is an error at validation.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import yaml

from seqkeras.reporting.expectations import check
from seqkeras.spec.outputs import same_value
from seqkeras.spec.sections import ExpectSpec
from tests.helpers import run_cli

ROOT = Path(__file__).resolve().parents[1]
ADDING_RUNS = ROOT / "results" / "adding" / "runs.csv"


def test_null_matches_an_unset_value_and_only_that():
    assert same_value(None, None) and same_value(float("nan"), None) and same_value(pd.NA, None)
    assert not same_value(0, None) and not same_value("None", None) and not same_value("", None)
    assert not same_value(None, 200) and not same_value(float("nan"), "nan") and not same_value(None, "None")
    assert same_value(200.0, 200) and same_value("lstm", "lstm")  # values as before


def test_a_claim_about_the_runs_without_a_key_selects_them_in_runs_csv():
    runs = pd.read_csv(ADDING_RUNS)
    unset = runs[runs["model.chrono"].isna() & (runs["task.length"] == 200)]
    assert len(unset) and set(unset["model.cell"]) == {"simple_rnn"}
    claim = ExpectSpec(claim="the runs without chrono", where={"task.length": 200, "model.chrono": None},
                       metric="mse", at_least=0.0)
    verdict = check(claim, runs)
    assert verdict.holds, verdict
    assert verdict.measured == f"{unset['mse'].mean():.4g}"  # the mean over exactly those runs


def test_validation_takes_null_for_runs_without_the_key_and_names_a_value_no_run_has(tmp_path, capsys):
    spec = yaml.safe_load((ROOT / "experiments" / "compare" / "adding.yaml").read_text())
    spec["expect"] = [{"claim": "unset", "where": {"model.chrono": None}, "metric": "mse", "at_least": 0.0}]
    path = tmp_path / "adding.yaml"
    path.write_text(yaml.safe_dump(spec))
    code, out, err = run_cli(capsys, "validate", path)
    assert code == 0, out + err
    spec["expect"][0]["where"] = {"model.chrono": 7}
    path.write_text(yaml.safe_dump(spec))
    code, out, err = run_cli(capsys, "validate", path)
    assert code == 2
    assert "expect[0].where.model.chrono" in err and "no run has model.chrono = 7; its values are: 200" in err
