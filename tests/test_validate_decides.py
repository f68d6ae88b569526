"""What `validate` decides before any training: a monitor the run will never compute, an output length past the
bound that decoders allocate for (docs/spec.md's list)."""

from __future__ import annotations

import pytest

from seqkeras.errors import SpecError
from seqkeras.spec.loader import build_experiment
from tests.helpers import run_cli

CLASSIFIER = {"version": 1, "name": "monitors", "task": {"name": "delayed_recall", "lag": 3, "n_train": 48,
                                                           "n_test": 16},
              "model": {"kind": "classifier", "cell": "gru", "units": 4},
              "train": {"epochs": 1, "validation_split": 0.25}, "seeds": [0]}
REGRESSOR = {**CLASSIFIER, "task": {"name": "adding", "length": 8, "n_train": 48, "n_test": 16},
             "model": {"kind": "regressor", "cell": "lstm", "units": 4}}


def refusal(spec: dict, *overrides: str) -> SpecError:
    with pytest.raises(SpecError) as caught:
        build_experiment(spec, source="spec.yaml", overrides=list(overrides))
    return caught.value


@pytest.mark.parametrize("spec, override, path, computed", [
    (CLASSIFIER, "train.early_stopping={monitor: val_bleu}", "train.early_stopping.monitor",
     "loss, accuracy, val_loss, val_accuracy"),
    (CLASSIFIER, "train.reduce_on_plateau={monitor: perplexity}", "train.reduce_on_plateau.monitor",
     "loss, accuracy, val_loss, val_accuracy"),
    (REGRESSOR, "train.early_stopping={monitor: val_accuracy}", "train.early_stopping.monitor", "loss, val_loss"),
])
def test_a_monitor_the_run_never_computes_is_refused_before_training(spec, override, path, computed):
    error = refusal(spec, override)
    assert error.path == path and "which this run never computes" in error.message
    assert f"records {computed} in its training history" in error.message


@pytest.mark.parametrize("override", ["train.early_stopping={monitor: val_accuracy}",
                                      "train.reduce_on_plateau={monitor: loss}",
                                      "train.early_stopping={monitor: accuracy}"])
def test_a_monitor_the_run_computes_passes(override):
    assert build_experiment(CLASSIFIER, source="spec.yaml", overrides=[override]).runs


def test_a_validation_score_is_a_monitor_once_validation_metrics_lists_it():
    spec = {**CLASSIFIER, "train": {**CLASSIFIER["train"], "validation_metrics": {"metrics": ["macro_f1"]},
                                    "early_stopping": {"monitor": "val_macro_f1"}}}
    assert build_experiment(spec, source="spec.yaml", overrides=[]).runs


def test_an_output_length_past_the_bound_is_refused_by_validate(tmp_path, capsys):
    path = tmp_path / "long.yaml"
    path.write_text("version: 1\nname: long\ntask: {name: reverse, n_train: 48, n_test: 8}\n"
                    "model: {kind: transformer_seq2seq, max_output_length: 1000000000}\nseeds: [0]\n")
    code, out, err = run_cli(capsys, "validate", path)
    assert code == 2 and err.count("\n") == 1
    assert "model.max_output_length" in err and "less than or equal to 10000" in err and "1000000000" in err
