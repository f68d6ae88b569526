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
import textwrap
import zipfile
from pathlib import Path

import pytest

pytest.importorskip("torch", reason="torch is not installed (pip install -r requirements.txt)")

import numpy as np

import seqkeras
from seqkeras.backends.torch.fused_rnn import FusedLSTM
from tests.plain_keras_loading import first_test_inputs, load_in_fresh_process, predictions, save_inputs

REPOSITORY = Path(__file__).resolve().parents[2]
SPEC = {
    "version": 1, "name": "kept-torch",
    "task": {"name": "delayed_recall", "lag": 3, "n_train": 48, "n_test": 16},
    "model": {"kind": "classifier", "cell": "lstm", "units": 4, "embedding_dim": 4, "bidirectional": True},
    "train": {"epochs": 1, "batch_size": 16, "verbose": 0},
    "evaluate": {"metrics": ["accuracy", "cross_entropy"]},
    "seeds": [0],
}


def trained(tmp_path) -> Path:
    seqkeras.run(SPEC, out=tmp_path, backend="torch")
    (folder,) = [p for p in (tmp_path / "kept-torch").iterdir() if p.is_dir()]
    return folder


def test_a_recurrent_model_kept_on_torch_loads_on_torch_and_with_plain_keras_on_tensorflow(tmp_path):
    folder = trained(tmp_path)
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
    job = {"file": str(folder / "model.keras"), "inputs": str(save_inputs(x, tmp_path / "x.npz"))}
    loaded = load_in_fresh_process("tensorflow", [job], tmp_path, import_seqkeras=False)  # Keras alone
    assert loaded["frameworks_added"] == [], loaded["frameworks_added"]
    (result,) = loaded["models"].values()
    assert result["warnings"] == [] and result["optimizer"].startswith("keras.src.optimizers"), result
    np.testing.assert_allclose(result["predictions"], predictions(kept.model, x), rtol=1e-4, atol=1e-6)


def test_a_model_kept_the_old_way_on_torch_still_loads_on_torch_and_on_tensorflow(tmp_path):
    """Before kept models were plain Keras, a torch run's file named `seqkeras>FusedLSTM`, torch's optimizer
    class and the suite's loss, without the optimizer's state: `seqkeras.load_model` reads it on both."""
    folder = trained(tmp_path)
    kept = seqkeras.load_model(folder)
    model = kept.model
    model.optimizer = None  # as it was kept: `model.save` without the optimizer, the fused classes named
    model.save(folder / "model.keras")
    assert "seqkeras>FusedLSTM" in zipfile.ZipFile(folder / "model.keras").read("config.json").decode()
    x = first_test_inputs(kept, 16)
    on_torch = predictions(seqkeras.load_model(folder).model, x)
    np.save(tmp_path / "x.npy", x)
    script = textwrap.dedent(f"""
        import json, numpy as np, seqkeras, keras
        assert keras.backend.backend() == "tensorflow"
        kept = seqkeras.load_model({str(folder)!r})
        print(json.dumps(np.asarray(kept.model.predict(np.load({str(tmp_path / "x.npy")!r}), verbose=0)).tolist()))
    """)
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300,
                            cwd=REPOSITORY, env={**os.environ, "KERAS_BACKEND": "tensorflow"})
    assert result.returncode == 0, result.stderr[-3000:]
    np.testing.assert_allclose(json.loads(result.stdout.strip().splitlines()[-1]), on_torch, rtol=1e-4, atol=1e-6)
