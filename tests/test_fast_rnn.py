"""The torch backend's fast paths seen from TensorFlow: Keras's own layers and fit there (the tests marked
tensorflow, in the TensorFlow process), and a benchmark that runs.

Their comparisons with Keras's numbers on torch are in tests/torch_backend/.
"""

from __future__ import annotations

import importlib.util
import sys

import keras
import pytest

from seqkeras.backends import runtime
from seqkeras.backends.torch import fused_rnn
from tests.conftest import REPO


@pytest.mark.tensorflow  # TensorFlow's own path
def test_tensorflow_backend_keeps_keras_fit():
    from seqkeras.training import trainer

    assert keras.backend.backend() == "tensorflow"
    assert trainer.lean_loop(keras.Sequential()) is None  # the lean loop is the torch backend's only


@pytest.mark.tensorflow  # TensorFlow's own path
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


@pytest.mark.system  # a benchmark, run at tiny size
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
