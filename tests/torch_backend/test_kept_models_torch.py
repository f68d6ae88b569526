"""A model kept on the torch backend loads there and scores what its run recorded, and loads on TensorFlow too.

    KERAS_BACKEND=torch .venv/bin/python -m pytest -q tests/torch_backend/test_kept_models_torch.py

On torch the recurrent layers and the softmax are the suite's fused subclasses (FusedLSTM, FusedDense); the
file names Keras's LSTM and Dense (kept/plain_keras.py), which plain Keras loads on TensorFlow without the suite
and without importing torch, and `seqkeras.load_model` on torch gives them their fused classes again. A model
kept the old way (naming the fused classes and torch's optimizer) still loads.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from dataclasses import dataclass
from pathlib import Path

import pytest

pytest.importorskip("torch", reason="torch is not installed (pip install -r requirements.txt)")

import numpy as np

import seqkeras
from seqkeras.backends.torch.fused_rnn import FusedLSTM
from tests.plain_keras_loading import first_test_inputs, predictions, save_inputs
from tests.trained_runs import only_run_folder

REPOSITORY = Path(__file__).resolve().parents[2]
SPEC = {
    "version": 1, "name": "kept-torch",
    "task": {"name": "delayed_recall", "lag": 3, "n_train": 48, "n_test": 16},
    "model": {"kind": "classifier", "cell": "lstm", "units": 4, "embedding_dim": 4, "bidirectional": True},
    "train": {"epochs": 1, "batch_size": 16, "verbose": 0},
    "evaluate": {"metrics": ["accuracy", "cross_entropy"]},
    "seeds": [0],
}


def trained(tmp_path, trained_runs) -> Path:
    """SPEC's run folder, in a copy of its results under `tmp_path` (trained once for the session: `trained_runs`)."""
    return only_run_folder(trained_runs.copied_experiment(SPEC, tmp_path))


# One fresh TensorFlow process loads both tests' files: first Keras alone (tests/plain_keras_loading.py's `load`,
# seqkeras not imported: what frameworks loading the file adds), then seqkeras's loader on the file kept the old way.
ON_TENSORFLOW = """
import json, sys
import numpy as np
from tests.plain_keras_loading import load
load(sys.argv[1], sys.argv[2])  # Keras alone
import seqkeras, keras
assert keras.backend.backend() == "tensorflow"
kept = seqkeras.load_model(sys.argv[3])
print(json.dumps(np.asarray(kept.model.predict(np.load(sys.argv[4]), verbose=0)).tolist()))
"""


@dataclass
class OnTensorflow:
    plain_inputs: np.ndarray  # the plain file's inputs, as the TensorFlow process read them
    plain: dict  # `load`'s OUT.json for the plain file
    old_way_config: str  # the old way's config.json
    old_way_on_torch: list  # the old way's predictions, loaded by seqkeras on torch
    old_way_on_tensorflow: list  # and by seqkeras on TensorFlow


@pytest.fixture(scope="module")
def on_tensorflow(trained_runs, tmp_path_factory) -> OnTensorflow:
    """Both files, as each test used to make its own, loaded in one fresh TensorFlow process (not two)."""
    scratch = tmp_path_factory.mktemp("on-tensorflow")
    plain = trained(scratch / "plain", trained_runs)
    x = first_test_inputs(seqkeras.load_model(plain), 16)
    jobs, out = scratch / "jobs.json", scratch / "out.json"
    job = {"file": str(plain / "model.keras"), "inputs": str(save_inputs(x, scratch / "x.npz"))}
    jobs.write_text(json.dumps({"import_seqkeras": False, "models": [job]}))

    folder = trained(scratch / "old-way", trained_runs)
    kept = seqkeras.load_model(folder)
    model = kept.model
    model.optimizer = None  # as it was kept: `model.save` without the optimizer, the fused classes named
    model.save(folder / "model.keras")
    config = zipfile.ZipFile(folder / "model.keras").read("config.json").decode()
    x_old = first_test_inputs(kept, 16)
    on_torch = predictions(seqkeras.load_model(folder).model, x_old)
    np.save(scratch / "x.npy", x_old)

    result = subprocess.run([sys.executable, "-c", ON_TENSORFLOW, str(jobs), str(out), str(folder),
                             str(scratch / "x.npy")], capture_output=True, text=True, timeout=600, cwd=REPOSITORY,
                            env={**os.environ, "KERAS_BACKEND": "tensorflow"})
    assert result.returncode == 0, result.stderr[-3000:]
    loaded = json.loads(out.read_text())
    assert loaded["backend"] == "tensorflow"
    return OnTensorflow(x, loaded, config, on_torch, json.loads(result.stdout.strip().splitlines()[-1]))


def test_a_recurrent_model_kept_on_torch_loads_on_torch_and_with_plain_keras_on_tensorflow(tmp_path, trained_runs,
                                                                                             on_tensorflow):
    folder = trained(tmp_path, trained_runs)
    config = zipfile.ZipFile(folder / "model.keras").read("config.json").decode()
    assert "seqkeras>" not in config and "torch" not in config, "the file names Keras's classes only"

    kept = seqkeras.load_model(folder)
    assert kept.preprocessing.document.backend == "torch"
    assert any(type(layer) is FusedLSTM for layer in kept.model._flatten_layers())  # the fast path, again
    (row,) = kept.evaluate(tmp_path / "again")
    record = json.loads((folder / "metrics.json").read_text())["metrics"]
    for name, value in record.items():
        assert row.metrics[name] == pytest.approx(value, rel=1e-5, abs=1e-7), name
    x = first_test_inputs(kept, 16)
    np.testing.assert_array_equal(x, on_tensorflow.plain_inputs)  # what the TensorFlow process predicted on
    loaded = on_tensorflow.plain  # the same file (a copy of the same run), loaded by Keras alone on TensorFlow
    assert loaded["frameworks_added"] == [], loaded["frameworks_added"]
    (result,) = loaded["models"].values()
    assert result["warnings"] == [] and result["optimizer"].startswith("keras.src.optimizers"), result
    np.testing.assert_allclose(result["predictions"], predictions(kept.model, x), rtol=1e-4, atol=1e-6)


def test_a_model_kept_the_old_way_on_torch_still_loads_on_torch_and_on_tensorflow(on_tensorflow):
    """Before kept models were plain Keras, a torch run's file named `seqkeras>FusedLSTM`, torch's optimizer
    class and the suite's loss, without the optimizer's state: `seqkeras.load_model` reads it on both."""
    # The module's run loaded on torch, saved as it was kept then, loaded again on torch and on TensorFlow
    # (on_tensorflow).
    assert "seqkeras>FusedLSTM" in on_tensorflow.old_way_config
    np.testing.assert_allclose(on_tensorflow.old_way_on_tensorflow, on_tensorflow.old_way_on_torch, rtol=1e-4,
                               atol=1e-6)


@pytest.mark.parametrize("cell", ["gru", "lstm"])
def test_an_encoder_decoder_trains_with_fused_encoder_layers_and_is_kept_and_read_back_with_them(cell):
    """Its file names each layer of the encoder's list by class (Keras's saving of a subclassed model): made with
    Keras's classes, saved as them, read back as them, then given the fused ones again, the weights find their
    places."""
    import io

    from seqkeras.backends.torch.fused_rnn import FusedRNNMixin
    from seqkeras.kept import saving
    from seqkeras.models.seq2seq import build
    from seqkeras.models.seq2seq_params import Seq2SeqParams
    from seqkeras.tasks.seq2seq_synthetic import SymbolParams, build_reverse

    data = build_reverse(SymbolParams(n_train=8, n_test=4, max_length=5), seed=0)
    model = build(Seq2SeqParams(cell=cell, units=4, embedding_dim=4, layers=2, bidirectional=True), data)
    encoders = [layer for layer in model._flatten_layers() if isinstance(layer, FusedRNNMixin)]
    assert len(encoders) == 4  # two bidirectional layers' two directions each: PyTorch's kernels in training
    loaded = saving.keras_model(io.BytesIO(saving.keras_image(model)))
    assert sum(isinstance(layer, FusedRNNMixin) for layer in loaded._flatten_layers()) == 4
    np.testing.assert_allclose(predictions(loaded, data.x_test), predictions(model, data.x_test), rtol=1e-6, atol=1e-7)
