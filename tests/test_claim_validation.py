"""A claim, table or plot whose `where` selects no run is an error before anything trains, and a claim may require
that its runs converged.

Validation knows every run a spec will make: a `where` key that is no column of runs.csv (fixed in the spec, tuned,
or no key at all) or a value no run has is one line naming the file, the key path and the value, from `validate`
and from `run` alike. `converged: true` makes a claim not hold while one of its runs was still improving when its
epochs ran out (runs.csv's still_improving), saying how many and naming one.
"""

from __future__ import annotations

import copy
import textwrap
from pathlib import Path

import pandas as pd
import pytest
import yaml

import seqkeras
from seqkeras.errors import SpecError
from seqkeras.reporting.expectations import check
from seqkeras.spec.loader import build_experiment
from seqkeras.spec.sections import ExpectSpec
from tests.conftest import TINY_TRAINING_SPEC
from tests.helpers import run_cli

ROOT = Path(__file__).resolve().parents[1]
ADDING = yaml.safe_load((ROOT / "experiments" / "compare" / "adding.yaml").read_text())
TUNED = yaml.safe_load((ROOT / "experiments" / "tuned" / "cells_long_range_tuned.yaml").read_text())
DECODERS = yaml.safe_load((ROOT / "experiments" / "compare" / "decoders.yaml").read_text())
MATRIX_KEYS = "task.length, model.cell, model.recurrent_initializer, model.chrono, seed"


def with_claim(spec: dict, where: dict, metric: str = "mse", **more) -> dict:
    spec = copy.deepcopy(spec)
    spec["expect"] = [{"claim": "c", "where": where, "metric": metric, "at_least": 0.0, **more}]
    return spec


def validation_error(spec: dict) -> str:
    with pytest.raises(SpecError) as raised:
        build_experiment(spec, source="s", overrides=[])
    return str(raised.value)


@pytest.mark.parametrize("where, message", [
    ({"model.chrono": 7}, "expect[0].where.model.chrono: no run has model.chrono = 7; its values are: 200, "
                          "null (the runs without it)"),
    ({"model.cell": "LSTM"}, "expect[0].where.model.cell: no run has model.cell = 'LSTM'; its values are: "
                             "simple_rnn, lstm"),
    ({"seed": 9}, "expect[0].where.seed: no run has seed = 9; its values are: 0, 1, 2"),
    ({"task.length": 50, "model.cell": "lstm", "model.chrono": None},
     "expect[0].where: no run has all of task.length=50, model.cell='lstm', model.chrono=None (each value exists, "
     "but not together)"),
    ({"model.units": 32}, "expect[0].where.model.units: no run has model.units = 32: it is 64 in every run, not a "
                          f"matrix key; select by a key that varies ({MATRIX_KEYS})"),
    ({"model.units": 64}, "expect[0].where.model.units: model.units is 64 in every run, not a matrix key: runs.csv "
                          "has no column for it, and selecting by it would keep every run; leave it out of where, "
                          f"or select by a key that varies ({MATRIX_KEYS})"),
    ({"train.optimizer.name": "sgd"}, "expect[0].where.train.optimizer.name: no run has train.optimizer.name = "
                                      "'sgd': it is 'adam' in every run, not a matrix key"),
    ({"model.nothing": 1}, "expect[0].where.model.nothing: unknown matrix key 'model.nothing'. Did you mean "
                           "'model.chrono'? Allowed: model.cell, model.chrono, model.recurrent_initializer, seed, "
                           "task.length."),
])
def test_a_where_that_selects_no_run_is_one_line_naming_key_path_and_value(where, message):
    error = validation_error(with_claim(ADDING, where))
    assert error.startswith(f"{message}"), error
    assert "\n" not in error


@pytest.mark.parametrize("where", [
    {"model.chrono": None}, {"model.chrono": 200}, {"task.length": "50"}, {"task.length": 200.0},
    {"task.length": 50, "model.cell": "simple_rnn", "model.chrono": None}, {"seed": 2},
])
def test_a_where_that_selects_runs_is_valid(where):
    experiment = build_experiment(with_claim(ADDING, where), source="s", overrides=[])
    assert experiment.spec.expect[0].where == where


def test_every_selection_of_a_spec_is_checked_the_same_way():
    spec = copy.deepcopy(ADDING)
    spec["expect"] = [{"claim": "c", "where": {"task.length": 200}, "metric": "mse",
                       "less_than": {"where": {"model.chrono": 20}}}]
    assert "expect[0].less_than.where.model.chrono: no run has model.chrono = 20" in validation_error(spec)
    spec = copy.deepcopy(ADDING)
    spec["table"][1]["where"] = {"model.units": 16}
    assert "table[1].where.model.units: no run has model.units = 16: it is 64 in every run" in \
        validation_error(spec)
    spec = copy.deepcopy(ADDING)
    spec["table"][0]["columns"] = "model.units"
    assert validation_error(spec) == ("table[0].columns: model.units is 64 in every run, not a matrix key: nothing to "
                                      f"lay out by it; use a key that varies ({MATRIX_KEYS})")
    spec = copy.deepcopy(ADDING)
    spec["plots"] = [{"x": "task.length", "y": "mse", "hue": "model.cell", "where": {"seed": 5}}]
    assert "plots[0].where.seed: no run has seed = 5" in validation_error(spec)


def test_a_tuned_key_is_no_selection():
    error = validation_error(with_claim(TUNED, {"train.optimizer.learning_rate": 0.001}, metric="accuracy"))
    assert error.startswith("expect[0].where.train.optimizer.learning_rate: train.optimizer.learning_rate is "
                            "tuned (tune.search): tuning finds each matrix point's value, unknown before training, "
                            "so no spec can select by it; select by a key that varies ("), error
    # runs.csv's column of it is named the same way
    error = validation_error(with_claim(TUNED, {"tuned.train.optimizer.learning_rate": 0.001}, metric="accuracy"))
    assert "expect[0].where.tuned.train.optimizer.learning_rate: train.optimizer.learning_rate is tuned" in error


def test_decoder_keys_select_the_rows_of_the_decoders_given():
    build_experiment(with_claim(DECODERS, {"decoder": "beam(width=5)"}, metric="bleu"), source="s", overrides=[])
    build_experiment(with_claim(DECODERS, {"decoder.width": 10}, metric="bleu"), source="s", overrides=[])
    assert "expect[0].where.decoder: no run has decoder = 'beam(width=3)'; its values are: greedy, " in \
        validation_error(with_claim(DECODERS, {"decoder": "beam(width=3)"}, metric="bleu"))
    assert ("expect[0].where.decoder.width: no run has decoder.width = 3; its values are: 2, 5, 10, null (the "
            "runs without it)") in validation_error(with_claim(DECODERS, {"decoder.width": 3}, metric="bleu"))


@pytest.mark.parametrize("command", ["validate", "run"])
def test_validate_and_run_refuse_it_before_anything_trains(command, tmp_path, capsys):
    spec = yaml.safe_load(textwrap.dedent(TINY_TRAINING_SPEC))
    spec["expect"][0]["where"] = {"model.units": 8}
    path = tmp_path / "tiny.yaml"
    path.write_text(yaml.safe_dump(spec))
    code, out, err = run_cli(capsys, command, path, *(["--out", tmp_path / "results"] if command == "run" else []))
    assert code == 2
    assert err.strip() == (f"error: {path}: expect[0].where.model.units: no run has model.units = 8: it is 4 in "
                           "every run, not a matrix key; select by a key that varies (model.cell, seed)")
    assert not (tmp_path / "results").exists()


# --------------------------------------------------------------------------- #
# converged: true
# --------------------------------------------------------------------------- #


def runs_frame(still_improving: list) -> pd.DataFrame:
    """runs.csv of four finished runs, two cells × two seeds, with their still_improving as given."""
    cells = ["lstm", "lstm", "gru", "gru"]
    return pd.DataFrame({
        "experiment": "e", "run_id": [f"cell={cell}_seed={i % 2}_0a1b2c3d" for i, cell in enumerate(cells)],
        "status": "ok", "model.cell": cells, "seed": [0, 1, 0, 1], "accuracy": [0.9, 0.8, 0.6, 0.5],
        "epochs_trained": [20, 20, 20, 20], "best_epoch": [12, 20, 20, 9], "still_improving": still_improving,
    })


def claim(converged: bool = True) -> ExpectSpec:
    return ExpectSpec(claim="the LSTM is accurate", where={"model.cell": "lstm"}, metric="accuracy",
                      at_least=0.8, converged=converged)


def test_a_converged_claim_holds_on_converged_runs():
    verdict = check(claim(), runs_frame([False, False, True, True]))  # only the GRU runs were still improving
    assert verdict.holds, verdict
    assert (verdict.expected, verdict.measured) == ("≥ 0.8, converged runs", "0.85")


def test_a_converged_claim_does_not_hold_while_a_run_was_still_improving():
    runs = runs_frame([False, True, False, False])
    assert check(claim(converged=False), runs).holds  # without converged, the same numbers hold
    verdict = check(claim(), runs)
    assert not verdict.holds
    assert verdict.measured == ("0.85; 1 of its 2 runs were still improving when their epochs ran out "
                                "(e.g. cell=lstm_seed=1_0a1b2c3d)")


def test_a_comparison_needs_both_sides_converged():
    comparison = {"greater_than": {"where": {"model.cell": "gru"}, "by": 0.1}}
    lstm_better = ExpectSpec(claim="c", where={"model.cell": "lstm"}, metric="accuracy", converged=True, **comparison)
    assert check(lstm_better, runs_frame([False, False, False, False])).holds
    verdict = check(lstm_better, runs_frame([False, False, True, True]))
    assert not verdict.holds
    assert verdict.measured.endswith("; 2 of its 4 runs were still improving when their epochs ran out "
                                     "(e.g. cell=gru_seed=0_0a1b2c3d)")


def test_a_run_that_does_not_say_counts_as_not_converged():
    verdict = check(claim(), runs_frame([False, None, True, True]))
    assert not verdict.holds
    assert verdict.measured.endswith("; 1 of its 2 runs do not record whether they converged "
                                     "(e.g. cell=lstm_seed=1_0a1b2c3d)")
    older = runs_frame([False] * 4).drop(columns=["epochs_trained", "best_epoch", "still_improving"])
    verdict = check(claim(), older)
    assert not verdict.holds
    assert verdict.measured == ("0.85; the runs do not record whether they converged (no still_improving column): "
                                "run them again")


def test_converged_on_runs_without_epochs_is_an_error_at_validation():
    spec = yaml.safe_load((ROOT / "experiments" / "lesson" / "ngram_counts.yaml").read_text())
    metric = spec["expect"][0]["metric"]
    spec["expect"] = [{"claim": "c", "metric": metric, "at_least": 0.0, "converged": True}]
    error = validation_error(spec)
    assert error.startswith("expect[0].converged: converged judges runs trained over epochs, and 1 of the 1 rows "
                            "selected here have none (a probe, or a model estimated by counting; e.g. seed="), error
    build_experiment(with_claim(ADDING, {"task.length": 50}, converged=True), source="s", overrides=[])


def test_tiny_runs_trained_one_epoch_do_not_make_a_converged_claim_hold(trained_runs, tmp_path):
    folder = trained_runs.copied_experiment(TINY_TRAINING_SPEC, tmp_path)
    saved = yaml.safe_load((folder / "experiment.yaml").read_text())
    saved["expect"] = [
        {"claim": "plain", "where": {"model.cell": "lstm"}, "metric": "accuracy", "at_least": 0.0},
        {"claim": "converged", "where": {"model.cell": "lstm"}, "metric": "accuracy", "at_least": 0.0,
         "converged": True},
    ]
    (folder / "experiment.yaml").write_text(yaml.safe_dump(saved))
    runs = pd.read_csv(folder / "runs.csv")
    assert runs["still_improving"].tolist() == [True] * 4  # one epoch: its best epoch is its last
    verdicts = seqkeras.load(folder).verdicts.set_index("claim")
    assert verdicts.loc["plain", "holds"]
    assert not verdicts.loc["converged", "holds"]
    assert verdicts.loc["converged", "verdict"] == "NOT reproduced"
    lstm = runs[runs["model.cell"] == "lstm"]["run_id"].iloc[0]
    assert verdicts.loc["converged", "measured"].endswith(
        f"; 2 of its 2 runs were still improving when their epochs ran out (e.g. {lstm})")
