"""The torch backend's fast paths: Keras's numbers, a fallback that says why, a benchmark that runs.

The comparisons need Keras on the torch backend, and this process has it on
TensorFlow, so they run once in a subprocess (tests/torch_backend_checks.py)
whose JSON report the tests below read. Without torch they skip.
"""

from __future__ import annotations

import importlib.util
import json
import math
import os
import subprocess
import sys

import keras
import pytest

from seqkeras.backends import runtime
from seqkeras.backends.torch import fused_rnn
from tests.conftest import REPO

needs_torch = pytest.mark.skipif(
    importlib.util.find_spec("torch") is None, reason="torch is not installed (pip install -r requirements-bench.txt)"
)
TOLERANCE = 1e-5


@pytest.fixture(scope="module")
def report():
    environment = {**os.environ, "KERAS_BACKEND": "torch", "KERAS_TORCH_DEVICE": "cpu"}
    result = subprocess.run([sys.executable, str(REPO / "tests" / "torch_backend_checks.py")],
                            env=environment, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


@needs_torch
def test_fused_layers_match_keras_forward_gradients_masks_and_directions(report):
    cases = report["equivalence"]
    for kind in ("simple_rnn", "lstm", "gru"):
        for name in ("masked forwards", "masked backwards", "unmasked backwards",
                     "bidirectional masked return_sequences=True", "dropout, inference", "dropout, training",
                     "masked, initial state given"):
            assert f"{kind} {name}" in cases
    too_far = {name: difference for name, difference in cases.items() if not difference <= TOLERANCE}
    assert not too_far


@needs_torch
def test_suite_models_with_fused_layers_match_keras_layers(report):
    # build_lm and a 2-layer bidirectional build_classifier, on right-padded token ids.
    assert len(report["suite models"]) == 6
    assert all(difference <= TOLERANCE for difference in report["suite models"].values()), report["suite models"]


@needs_torch
def test_fallback_is_taken_and_said_once(report):
    checks = report["fallbacks"]
    assert checks["recurrent_dropout reason"] == "with recurrent_dropout > 0"
    assert checks["recurrent_dropout uses fused kernel"] is False
    assert "lstm layers with recurrent_dropout > 0 step Keras's loop" in checks["recurrent_dropout note"]
    assert checks["recurrent_dropout note again"] == ""
    assert checks["mask with holes uses fused kernel"] is False
    assert "not right padding" in checks["mask with holes note"]
    assert checks["mask with holes difference"] <= TOLERANCE
    assert checks["right padding uses fused kernel"] is True


@needs_torch
def test_dropout_trains_and_layers_round_trip(report):
    assert report["training"]["dropout, training, changes the output"] is True
    assert report["serialization"] == {"FusedGRU": True, "FusedDense": True}  # get_config → from_config


@needs_torch
def test_torch_loss_and_accuracy_match_keras(report):
    checks = report["softmax"]
    assert checks["loss and gradient"] <= TOLERANCE
    assert math.isclose(checks["underflowed loss"], 203.066, rel_tol=1e-4)  # finite: taken from the logits
    assert checks["reused probabilities: loss and gradient"] == 0.0  # the same operations, bit for bit
    assert checks["reused probabilities hold the gradient"]  # no second (tokens, classes) tensor
    assert checks["accuracy"] == checks["keras accuracy"] == [0.0, 1.0, 0.0, 1.0]  # ties go to the first index
    keras_loss, suite_loss = checks["train step loss"]
    assert math.isclose(keras_loss, suite_loss, rel_tol=TOLERANCE)
    assert checks["train step accuracy"][0] == checks["train step accuracy"][1]
    assert checks["train step weights"] <= TOLERANCE


@needs_torch
def test_lean_torch_loop_gives_keras_fit_history_and_weights(report):
    # trainer.fit through Keras's fit and through torch_training.LeanLoop, same initial weights and batches:
    # an LM with padding weights, validation and early stopping (fused Adam), the LM with an L2
    # regularizer (a loss no layer call adds), a tagger with clipnorm (Keras's optimizer.apply),
    # a classifier with SGD (no mask, no sample weights).
    runs = {name: run for name, run in report["lean training"].items() if "history" in run}
    assert len(runs) == 4
    for name, run in runs.items():
        keras_columns, lean_columns = run["columns"]
        assert keras_columns == lean_columns, name
        assert run["lean epochs"] == 2 or (name.startswith("lm") and run["lean epochs"] == 3), name
        assert max(run["history"], run["weights"], run["optimizer"]) <= TOLERANCE, (name, run)
    assert runs["lm, padding weights, validation, early stopping (fused adam)"]["columns"][0] == [
        "epoch", "accuracy", "loss", "val_accuracy", "val_loss"]


@needs_torch
def test_lean_torch_loop_resumes_and_fused_adam_keeps_keras_epsilon(report):
    checks = report["lean training"]
    assert checks["resume"]["said"].startswith("resuming after epoch 1")
    assert checks["resume"]["weights"] <= TOLERANCE  # interrupted + resumed == uninterrupted
    adam = checks["adam steps, tiny gradients"]
    assert adam["fused vs keras"] <= TOLERANCE
    assert adam["pytorch's epsilon vs keras"] > 1.0  # the check can tell the two epsilon placements apart
    assert checks["fused adam unsupported"] == {
        "adamw": "not keras's Adam", "clipnorm": "gradient clipping", "amsgrad": "amsgrad", "adam": None}


@needs_torch
def test_lean_torch_loop_leaves_other_models_to_keras_fit_and_says_so_once(report):
    checks = report["lean training"]["fallbacks"]
    for name, reason in [("crf", "the model computes its own loss"),
                         ("two inputs", "the model has not one input and one output"),
                         ("keras's loss", "the model is not compiled with the suite's loss")]:
        assert checks[f"{name} reason"] == reason
        assert checks[f"{name} lean"] is False
        said = f"note: training on Keras's fit loop, not the suite's lean torch loop: {reason}\n"
        assert checks[f"{name} note"] == said
    assert checks["crf note again"] == ""
    assert checks["suite lm reason"] is None and checks["suite lm lean"] is True and checks["suite lm note"] == ""


@needs_torch
def test_layer_chain_gives_the_models_call_exactly(report):
    # Outputs, output mask and every weight's gradient, in inference and in training (the same dropout draws).
    checks = report["layer chain"]
    tensors = {"tagger, 2 bidirectional gru layers with dropout": 17,  # outputs, 15 gradients, mask
               "lm, 2 lstm layers with dropout": 11, "classifier, simple_rnn": 7,  # a class per row: no mask
               "nplm (conv1d, dropout layer)": 6}
    for name, count in tensors.items():
        assert checks[f"{name} reason"] is None
        assert checks[f"{name} dropout changes the output"] is True
        for training in (False, True):
            assert checks[f"{name}, training={training}"] == {"difference": 0.0, "tensors": [count, count]}
    assert checks["left alone"] == {
        "transformer": "layer 'embedding' is a TokenAndPositionEmbedding",
        "shared layer": "layer 'shared' is called more than once",
        "activity regularizer": "layer 'regularized' has an activity regularizer",
        "sequential": "the model is not a plain Functional model",
    }


@needs_torch
def test_seeding_without_tensorflow_draws_what_keras_seeding_draws(report):
    assert report["seeding"] == {"same draws": True, "draws differ from each other": True}


def test_tensorflow_backend_keeps_keras_fit():
    from seqkeras.training import trainer

    assert keras.backend.backend() == "tensorflow"
    assert trainer.lean_loop(keras.Sequential()) is None  # the lean loop is the torch backend's only


def test_tensorflow_backend_keeps_keras_layers_and_says_so(capsys):
    assert keras.backend.backend() == "tensorflow"
    runtime.NOTED.clear()
    assert fused_rnn.layer_class(keras.layers.LSTM) is keras.layers.LSTM
    assert fused_rnn.layer_class(keras.layers.GRU) is keras.layers.GRU
    said = capsys.readouterr().out
    assert said.count("note: recurrent layers step Keras's loop on the tensorflow backend") == 1
    # A fused layer deserialized here still works: it takes Keras's loop and names the backend.
    layer = fused_rnn.FusedLSTM(3)
    assert layer.fused_blocker() == "on the tensorflow backend"


@pytest.mark.slow
def test_recurrent_benchmark_runs_end_to_end_at_tiny_size():
    sys.path.insert(0, str(REPO / "benchmarks"))
    import recurrent_throughput

    rows = recurrent_throughput.measure(tiny=True)
    keys = {"benchmark", "figure", "value", "unit", "baseline", "ratio", "goal", "met"}
    assert rows and all(set(row) == keys for row in rows)
    assert all(isinstance(row["met"], bool) for row in rows)
    cpu_rows = [row for row in rows if not row["figure"].startswith("GPU")]
    assert len(cpu_rows) == 3
    if importlib.util.find_spec("torch") is not None:
        assert all(row["value"] > 0 and row["baseline"] > 0 for row in cpu_rows)
